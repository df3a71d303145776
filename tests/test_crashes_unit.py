"""Peeks and replica crashes (spark_exec.crashes): the crash memory, how a dead replica's
process tells why it died, and the race of ``ClusterCoordinator`` with fake replicas
(issue 33: a result that killed one replica was sent to every replica at once)."""

from __future__ import annotations

import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from catalog.errors import SqlError
from spark_exec.cluster_coordinator import ClusterCoordinator, _ReplicaUnreachable
from spark_exec.crashes import Crash, CrashMemory, crash_error, fingerprint
from spark_exec.orchestrator import ReplicaProcess, ReplicaSpec
from spark_exec.replica import HEALTHY, UNHEALTHY


def test_memory_is_bounded_and_expires():
    now = [0.0]
    m = CrashMemory(capacity=2, ttl_s=10, clock=lambda: now[0])
    c = Crash("c.r1", "exit code 52", True)
    m.remember(1, c)
    m.remember(2, c)
    assert m.recall(1) == c  # 1 is now the most recently used
    m.remember(3, c)
    assert (m.recall(1), m.recall(2), m.recall(3)) == (c, None, c)
    now[0] = 10.0
    assert m.recall(1) is None and len(m) == 1
    m.forget(3)
    assert len(m) == 0


def test_fingerprint_of_equal_plans():
    from catalog.types import SqlType
    from planner.plan import Constant

    cols = (("a", SqlType("int4")),)
    assert fingerprint(Constant(((1,),), cols)) == fingerprint(Constant(((1,),), cols))
    assert fingerprint(Constant(((1,),), cols)) != fingerprint(Constant(((2,),), cols))


def test_crash_errors_name_the_replica():
    oom = crash_error(Crash("two.r1", "exit code 52", True), "two")
    assert (oom.sqlstate, oom.message) == ("53200", 'replica two.r1 of cluster "two" ran out of memory running the query')
    other = crash_error(Crash("two.r1", "killed by signal 9"), "two", streaming=True)
    assert (other.sqlstate, other.message) == (
        "XX000", 'replica two.r1 of cluster "two" crashed sending the query\'s results (killed by signal 9)')


def _process(tmp_path, script: str) -> ReplicaProcess:
    log = tmp_path / "replica.log"
    log.write_text("java.lang.OutOfMemoryError: an earlier run's\n")
    offset = log.stat().st_size
    with open(log, "ab") as f:
        popen = subprocess.Popen(["sh", "-c", script], stdout=f, stderr=subprocess.STDOUT)
    return ReplicaProcess(ReplicaSpec("u1", "c.r1", 1), popen, 0, log, "", offset)


def test_exit_reason(tmp_path):
    assert _process(tmp_path, "exit 52").exit_reason(10) == ("exit code 52", True)
    assert _process(tmp_path, "echo 'java.lang.OutOfMemoryError: Java heap space'; exit 1").exit_reason(10) == (
        "exit code 1", True)
    assert _process(tmp_path, "exit 1").exit_reason(10) == ("exit code 1", False)  # the earlier run's OOM is not its
    p = _process(tmp_path, "sleep 60")
    assert p.exit_reason(0.1) is None
    p.popen.kill()
    assert p.exit_reason(10) == ("killed by signal 9", False)


class FakeReplica:
    """What ``ClusterCoordinator._race`` uses of a ReplicaHandle."""

    def __init__(self, name: str):
        self.id = self.label = name
        self.status = HEALTHY
        self.session = object()
        self.process = None
        self.submitted = 0
        #: alive and using CPU although it misses pings: not ``frozen``
        self.busy = False
        self._pool = ThreadPoolExecutor(2)

    def submit_peek(self, fn):
        self.submitted += 1
        return self._pool.submit(fn)

    def interrupt(self, tag):
        pass

    def mark_suspect(self):
        self.status = UNHEALTHY

    def frozen(self, process=None):
        if process is not None and process is not self.process:
            return False  # as ReplicaHandle.frozen: the peek's process was replaced
        return self.status != HEALTHY and not self.busy



@pytest.fixture
def cluster():
    cc = ClusterCoordinator("u9", "two", orchestrator=None)
    r1, r2 = FakeReplica("two.r1"), FakeReplica("two.r2")
    cc._replicas = {"r1": r1, "r2": r2}
    yield cc, r1, r2
    for r in (r1, r2):
        r._pool.shutdown(wait=False, cancel_futures=True)


def _race(cc, behaviour, alone: str | None, key: int = 7):
    """``cc._race`` of a peek that does ``behaviour[replica label](over)`` on each replica."""
    return cc._race(lambda h, over: behaviour[h.label](over), "tag", 5.0, time.monotonic() + 30.0, None, key=key,
                    alone=alone)


def crashes(crash: Crash, started: threading.Event | None = None, release: threading.Event | None = None):
    def run(over):
        if started is not None:
            started.set()
        if release is not None:
            release.wait(10)
        raise _ReplicaUnreachable("SparkConnectGrpcException", crash)
    return run


def test_a_crash_in_a_race_fails_over_and_is_remembered(cluster):
    cc, _, r2 = cluster
    crash = Crash("two.r1", "killed by signal 9")
    release = threading.Event()
    behaviour = {"two.r1": crashes(crash), "two.r2": lambda over: release.wait(10) and "r2's answer"}
    threading.Timer(0.3, release.set).start()
    h, result = _race(cc, behaviour, alone=None)
    assert (h, result) == (r2, "r2's answer")
    assert cc.crashes.recall(7) == crash
    assert cc._alone(7, (None, False)) and not cc._alone(8, (None, False)) and cc._alone(8, (None, True))


def test_a_lone_peek_whose_replica_dies_fails_and_is_sent_nowhere_else(cluster):
    cc, r1, r2 = cluster
    crash = Crash("two.r1", "exit code 52", out_of_memory=True)
    started, release = threading.Event(), threading.Event()
    behaviour = {"two.r1": crashes(crash, started, release), "two.r2": lambda over: "r2's answer"}
    threading.Thread(target=lambda: (started.wait(10), release.set())).start()
    with pytest.raises(SqlError) as ei:
        _race(cc, behaviour, alone="test")
    assert ei.value.sqlstate == "53200" and "two.r1" in ei.value.message
    assert (r1.submitted, r2.submitted) == (1, 0)
    assert cc.crashes.recall(7) == crash


def test_a_lone_peek_moves_on_from_a_frozen_replica_and_clears_the_memory(cluster):
    cc, r1, r2 = cluster
    cc.crashes.remember(7, Crash("two.r2", "killed by signal 9"))
    started, release = threading.Event(), threading.Event()

    def frozen(over):
        started.set()
        release.wait(10)
        return "r1's late answer"

    def freeze():
        started.wait(10)
        r1.status = UNHEALTHY  # stops answering pings, alive

    threading.Thread(target=freeze).start()
    try:
        h, result = _race(cc, {"two.r1": frozen, "two.r2": lambda over: "r2's answer"}, alone="test")
    finally:
        release.set()
    assert (h, result, r2.submitted) == (r2, "r2's answer", 1)
    assert cc.crashes.recall(7) is None


def test_a_lone_peek_stays_on_a_busy_replica_that_misses_pings(cluster):
    # Busy with the peek, a replica may miss its pings (status UNHEALTHY) while its process
    # works on: the peek stays there, and the other replica never runs it.
    cc, r1, r2 = cluster
    started = threading.Event()

    def busy(over):
        started.set()
        time.sleep(1.0)
        return "r1's answer"

    def miss_pings():
        started.wait(10)
        r1.busy, r1.status = True, UNHEALTHY

    threading.Thread(target=miss_pings).start()
    h, result = _race(cc, {"two.r1": busy, "two.r2": lambda over: "r2's answer"}, alone="test")
    assert (h, result, r2.submitted) == (r1, "r1's answer", 0)


def test_a_lone_peek_fails_when_its_process_dies_while_the_client_still_retries(cluster, tmp_path):
    # SIGKILL under a lone peek: pyspark may retry the lost server for minutes, and the
    # monitor restarts the replica at once (a new, idle JVM). The peek fails with the
    # crash then, and is not moved to the other replica as if the replica were frozen.
    cc, r1, r2 = cluster
    r1.process = _process(tmp_path, "sleep 60")
    started, release = threading.Event(), threading.Event()

    def retrying(over):
        started.set()
        release.wait(10)
        raise RuntimeError("late retry error")

    def kill_and_restart():
        started.wait(10)
        r1.process.popen.kill()
        r1.process.popen.wait()
        r1.status, r1.process = UNHEALTHY, _process(tmp_path, "sleep 60")

    threading.Thread(target=kill_and_restart).start()
    try:
        with pytest.raises(SqlError) as ei:
            _race(cc, {"two.r1": retrying, "two.r2": lambda over: "r2's answer"}, alone="test")
    finally:
        release.set()
        r1.process.popen.kill()
    assert ei.value.sqlstate == "XX000" and "killed by signal 9" in ei.value.message
    assert (r1.submitted, r2.submitted) == (1, 0)
    assert cc.crashes.recall(7) == Crash("two.r1", "killed by signal 9")


def test_errors_of_a_dying_replica_are_its_crash_not_the_querys(tmp_path, monkeypatch):
    from spark_exec import cluster_coordinator
    from spark_exec.cluster_coordinator import _replica_errors

    monkeypatch.setattr(cluster_coordinator, "CRASH_WAIT_S", 0.2)
    h = FakeReplica("two.r1")
    h.process = _process(tmp_path, "exit 52")
    with pytest.raises(_ReplicaUnreachable) as ei, _replica_errors(h, threading.Event()):
        raise RuntimeError("Job 3 cancelled because SparkContext was shut down")
    assert ei.value.crash == Crash("two.r1", "exit code 52", out_of_memory=True)
    # A task's own memory error on a replica that lives on is the query's error.
    h.process = _process(tmp_path, "sleep 30")
    with pytest.raises(SqlError) as ei, _replica_errors(h, threading.Event()):
        raise RuntimeError("SparkOutOfMemoryError: Unable to acquire 64 MiB of memory")
    assert ei.value.sqlstate == "XX000"
    h.process.popen.kill()
    h._pool.shutdown()


def test_loopback_urls_are_told_apart_and_carry_the_token_as_localhost():
    from spark_exec.replica import _is_loopback, connection_url

    assert _is_loopback("sc://127.0.0.1:15002") and _is_loopback("sc://[::1]:15002/;user_id=x")
    assert not _is_loopback("sc://10.0.0.2:15002") and not _is_loopback("sc://spark.example:15002/")
    assert connection_url("sc://127.0.0.1:15002", "t") == "sc://localhost:15002/;token=t"
    assert connection_url("sc://10.0.0.2:15002/;use_ssl=true", "t") == "sc://10.0.0.2:15002/;use_ssl=true;token=t"
    assert connection_url("sc://10.0.0.2:15002", None) == "sc://10.0.0.2:15002"
