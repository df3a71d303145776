"""spark_exec.rpcs: the Spark Connect requests a thread makes, counted by method."""

import threading
from types import SimpleNamespace

from spark_exec import rpcs


class _Stub:
    def Config(self, req, metadata=None):
        return "config-answer"

    def ExecutePlan(self, req, metadata=None):
        return iter(["batch1", "batch2"])


def _session():
    return SimpleNamespace(client=SimpleNamespace(_internal_stub=_Stub()))


def test_counted_gathers_the_threads_rpcs_by_method_and_passes_answers_through():
    s = _session()
    rpcs.instrument(s)
    rpcs.instrument(s)  # idempotent: counted once
    stub = s.client._internal_stub
    with rpcs.counted() as n:
        assert stub.Config("r") == "config-answer"
        assert list(stub.ExecutePlan("r")) == ["batch1", "batch2"]
        assert list(stub.ExecutePlan("r")) == ["batch1", "batch2"]
    assert n.calls == {"Config": 1, "ExecutePlan": 2}
    assert n.total == 3
    assert [m for m, _, _ in n.each] == ["Config", "ExecutePlan", "ExecutePlan"]
    assert "3 RPCs" in str(n) and "ExecutePlan 2" in str(n)


def test_rpcs_outside_counted_or_on_other_threads_are_not_counted():
    s = _session()
    rpcs.instrument(s)
    stub = s.client._internal_stub
    stub.Config("before")
    with rpcs.counted() as n:
        t = threading.Thread(target=lambda: stub.Config("elsewhere"))
        t.start()
        t.join()
    assert n.total == 0
