"""sqlfront.heap: the maintenance loop's malloc_trim, at most once per interval."""

from __future__ import annotations

from sqlfront import heap


def test_trims_only_after_its_interval(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_malloc_trim", lambda: calls.append)
    now = [100.0]
    monkeypatch.setattr(heap.time, "monotonic", lambda: now[0])
    t = heap.Trimmer(every=30)
    assert not t.maybe()
    now[0] += 31
    assert t.maybe() and calls == [0]
    assert not t.maybe()


def test_malloc_trim_runs_here():
    # glibc on the machines this runs on: the call itself must work
    fn = heap._malloc_trim()
    assert fn is None or fn(0) in (0, 1)
