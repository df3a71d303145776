"""Cancel stops the work, not only the reply; a hung replica holds only its own share
of its cluster; the Coordinator loop survives errors in side effects."""

from __future__ import annotations

import os
import signal
import threading
import time

import psycopg
import pytest

from catalog.durable import CatalogStore
from catalog.snapshot import Cluster
from catalog import durable
from server import wait_for
from spark_exec.orchestrator import Orchestrator, ReplicaSpec, group_cpu_seconds
from spark_exec.replica import connect_session
from sqlfront.coordinator import Coordinator

#: a query whose Spark tasks never look at their interrupt flag: a hash aggregate over
#: a three-way cross product of 2,000 rows (8e9 combinations, minutes of work)
RUNAWAY = "SELECT count(*) FROM burn a, burn b, burn c WHERE a.x + b.x + c.x = -1"


def _replica(conn, cluster: str, name: str) -> tuple[str, str]:
    return conn.execute(
        "SELECT r.id, r.status FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
        " WHERE c.name = %s AND r.name = %s", (cluster, name)).fetchone()


def _cores(pgid: int, seconds: float = 1.0) -> float:
    """CPU cores used by process group ``pgid`` over the next ``seconds``."""
    before = group_cpu_seconds(pgid)
    time.sleep(seconds)
    return (group_cpu_seconds(pgid) - before) / seconds


@pytest.mark.slow
def test_canceled_query_stops_using_the_replica_cpu(server, conn):
    """statement_timeout cancels a query whose tasks ignore Spark's interrupt: within
    seconds the replica's CPU is free (the replica is restarted as the last resort), the
    session keeps working, and the replica comes back healthy. (A CancelRequest ends a
    peek the same way.)"""
    conn.execute("CREATE CLUSTER burner REPLICAS (r1 (SIZE '1'))")
    conn.execute("CREATE TABLE burn (x int)")
    conn.execute("INSERT INTO burn SELECT * FROM (VALUES " + ",".join(f"({i})" for i in range(2000)) + ") v")
    try:
        assert wait_for(lambda: _replica(conn, "burner", "r1")[1] == "healthy", 180)
        rid = _replica(conn, "burner", "r1")[0]
        pgid = int((server.data_dir / "replicas" / rid / "pid").read_text())
        assert wait_for(lambda: _cores(pgid) < 0.3, 120, 0)  # the JVM's start-up work is done
        conn.execute("SET cluster = burner")
        # 10 s: well past the planning of the query, deep in its runaway job
        conn.execute("SET statement_timeout = '10s'")
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute(RUNAWAY)
        canceled_at = time.monotonic()
        conn.execute("RESET statement_timeout")
        assert _cores(pgid) > 0.25  # the work outlived its cancel (Spark alone never stops it)
        # The canceled work stops using the replica's CPU (within seconds on a quiet
        # machine; the bound is generous, as a loaded CI machine is slower).
        assert wait_for(lambda: _cores(pgid) < 0.2, 120, 0)
        print(f"replica CPU free {time.monotonic() - canceled_at:.1f} s after the cancel")
        assert "ignore the interrupt; restarting it" in server.log_path.read_text(errors="replace")
        # Other clusters answered all along; this one answers again once restarted.
        with server.connect() as other:
            assert other.execute("SELECT count(*) FROM burn").fetchone() == (2000,)
        conn.execute("SET cluster = burner")
        assert conn.execute("SELECT count(*) FROM burn").fetchone() == (2000,)
        assert wait_for(lambda: _replica(conn, "burner", "r1")[1] == "healthy", 180)
    finally:
        conn.execute("SET cluster = quickstart")
        conn.execute("DROP TABLE IF EXISTS burn")
        conn.execute("DROP CLUSTER burner")


@pytest.fixture
def remote_spark(tmp_path):
    """A Spark Connect server of our own, to freeze: a REMOTE replica has no process
    environmentd could see stopped, so only its pings reveal the hang."""
    orch = Orchestrator(tmp_path / "remote", instance="remote")
    proc = orch.start(ReplicaSpec("frozen1", "remote", workers=1))

    def answers():
        try:
            s = connect_session(proc.url, proc.token)
            s.range(1).collect()
            s.client.close()
            return True
        except Exception:
            return False

    assert wait_for(answers, 120)
    yield proc
    os.kill(proc.popen.pid, signal.SIGCONT)
    orch.stop(proc)
    orch.close()


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.mark.slow
def test_hung_replica_holds_only_its_own_share(server, conn, remote_spark):
    """A replica that hangs (SIGSTOP of a REMOTE server) takes at most its own bounded
    number of peek threads; every peek is answered by the cluster's other replica."""
    conn.execute(f"CREATE CLUSTER mixed REPLICAS (hung (REMOTE ('{remote_spark.url}'), TOKEN '{remote_spark.token}'),"
                 " ok (SIZE '1'))")
    conn.execute("CREATE TABLE share (a int)")
    conn.execute("INSERT INTO share VALUES (1), (2)")
    try:
        assert wait_for(lambda: _replica(conn, "mixed", "hung")[1] == "healthy"
                        and _replica(conn, "mixed", "ok")[1] == "healthy", 180)
        threads_before = _threads(server.proc.pid)
        os.kill(remote_spark.popen.pid, signal.SIGSTOP)
        failures: list[Exception] = []
        answered = [0]

        def client():
            with server.connect() as c:
                c.execute("SET cluster = mixed")
                for _ in range(40):
                    try:
                        assert c.execute("SELECT sum(a) FROM share").fetchone() == (3,)
                        answered[0] += 1
                    except Exception as e:  # noqa: BLE001 - counted and reported
                        failures.append(e)

        clients = [threading.Thread(target=client) for _ in range(4)]
        for t in clients:
            t.start()
        for t in clients:
            t.join(300)
        assert failures == [] and answered[0] == 160
        # The hung replica holds at most max_peeks_per_replica (8) peek threads and its
        # control thread, not one per peek sent its way (160 here); the healthy replica's
        # peek threads (4 clients) and gRPC's own come on top.
        assert _threads(server.proc.pid) - threads_before <= 30
    finally:
        os.kill(remote_spark.popen.pid, signal.SIGCONT)
        conn.execute("DROP TABLE IF EXISTS share")
        conn.execute("DROP CLUSTER mixed")


class _Boom(BaseException):
    """Not even an Exception: what a careless side effect could raise."""


def test_coordinator_loop_survives_side_effect_errors(tmp_path):
    """A side effect (on_commit) or the bookkeeping after it that raises does not kill
    the Coordinator thread: the statement's catalog change stays committed, the error
    is counted, and later DDL is served."""
    store = CatalogStore(str(tmp_path / "catalog.db"))
    effects = {"raise": True}

    def on_commit(old, new, ops):
        if effects["raise"]:
            raise _Boom("side effect failed")

    def observe(kind, seconds):
        if effects["raise"]:
            raise RuntimeError("metrics failed")

    errors = []
    coord = Coordinator(store, store.load(), on_commit, observe, lambda: errors.append(1))
    coord.start()
    try:
        snap = coord.transact(lambda s, ids: [durable.CreateCluster(Cluster(ids.allocate("cluster"), "a"))])
        assert snap.cluster_by_name("a") is not None
        # the side effect's error, then the bookkeeping's (after the reply)
        assert wait_for(lambda: len(errors) == 2 and coord.errors == 2, 10)

        def bad_build(s, ids):
            raise _Boom("build failed")

        with pytest.raises(_Boom):
            coord.transact(bad_build)
        effects["raise"] = False
        snap = coord.transact(lambda s, ids: [durable.CreateCluster(Cluster(ids.allocate("cluster"), "b"))])
        assert snap.cluster_by_name("b") is not None
        assert coord._thread.is_alive()
    finally:
        coord.stop()
    assert CatalogStore(str(tmp_path / "catalog.db")).load().cluster_by_name("a") is not None
