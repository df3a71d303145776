"""Clusters and replicas as designed (seeds/cluster-replicas.md): statements, errors,
availability zones, sizes, REMOTE replicas, orchestration and active replication."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import psycopg
import pytest

from server import replica_jvms, wait_for
from spark_exec.orchestrator import Orchestrator, ReplicaSpec
from spark_exec.replica import connect_session

NOWHERE = "sc://127.0.0.1:9"  # a REMOTE address nothing listens on: no process is started


def sqlstate_of(conn, sql) -> tuple[str, str, str | None]:
    with pytest.raises(psycopg.Error) as ei:
        conn.execute(sql)
    e = ei.value
    return e.sqlstate, e.diag.message_primary, e.diag.message_detail


def replicas(conn, cluster):
    return conn.execute(
        "SELECT r.name, r.size, r.availability_zone, r.status FROM mz_cluster_replicas r"
        " JOIN mz_clusters c ON c.id = r.cluster_id WHERE c.name = %s ORDER BY r.name", (cluster,)
    ).fetchall()


def replica_id(conn, cluster, name) -> str:
    return conn.execute(
        "SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
        " WHERE c.name = %s AND r.name = %s", (cluster, name)
    ).fetchone()[0]


def test_statement_forms(conn):
    conn.execute("CREATE CLUSTER empty")
    conn.execute("CREATE CLUSTER empty2 REPLICAS ()")
    conn.execute(f"CREATE CLUSTER far REPLICAS (a (REMOTE ('{NOWHERE}')), b (REMOTE = ('{NOWHERE}'), AVAILABILITY ZONE 'az2'))")
    conn.execute(f"CREATE CLUSTER REPLICA far.c REMOTE ('{NOWHERE}')")
    assert conn.execute("SHOW CLUSTERS LIKE 'empt%'").fetchall() == [("empty", None, ""), ("empty2", None, "")]
    assert conn.execute("SHOW CLUSTERS WHERE name = 'far'").fetchall() == [("far", "a (REMOTE), b (REMOTE), c (REMOTE)", "")]
    rows = conn.execute("SHOW CLUSTER REPLICAS FOR far").fetchall()
    assert rows == [("far", "a", None, False), ("far", "b", None, False), ("far", "c", None, False)]
    assert conn.execute("SHOW CLUSTER REPLICAS LIKE 'b'").fetchall() == [("far", "b", None, False)]
    assert conn.execute("SHOW CLUSTER REPLICAS WHERE cluster = 'far' AND replica <> 'a'").fetchall() == [
        ("far", "b", None, False), ("far", "c", None, False)]
    # Without FOR, every cluster's replicas.
    all_clusters = {r[0] for r in conn.execute("SHOW CLUSTER REPLICAS").fetchall()}
    assert {"far", "quickstart"} <= all_clusters
    c_id = replica_id(conn, "far", "c")
    conn.execute("ALTER CLUSTER REPLICA far.c RENAME TO cc")  # same replica, new name
    assert replica_id(conn, "far", "cc") == c_id
    conn.execute("ALTER CLUSTER REPLICA IF EXISTS far.c RENAME TO cc")
    for sql, code, msg in [
        ("ALTER CLUSTER REPLICA far.c RENAME TO x", "42704", 'CLUSTER far has no CLUSTER REPLICA named "c"'),
        ("ALTER CLUSTER REPLICA far.cc RENAME TO b", "42710", "cluster replica 'far.b' already exists"),
        ("ALTER CLUSTER REPLICA quickstart.r1 RENAME TO x", "55000", "cannot modify managed cluster quickstart"),
        ("ALTER CLUSTER REPLICA far.a OWNER TO materialize", "0A000", "ALTER CLUSTER REPLICA ... OWNER TO is not supported"),
    ]:
        assert sqlstate_of(conn, sql)[:2] == (code, msg), sql
    conn.execute("ALTER CLUSTER REPLICA far.cc RENAME TO c")
    conn.execute("ALTER CLUSTER far RENAME TO distant")
    assert [r[0] for r in replicas(conn, "distant")] == ["a", "b", "c"]
    conn.execute("DROP CLUSTER REPLICA distant.c")
    conn.execute("DROP CLUSTER REPLICA IF EXISTS distant.c")
    conn.execute("DROP CLUSTER IF EXISTS nope")
    conn.execute("DROP CLUSTER distant CASCADE")
    conn.execute("DROP CLUSTER empty RESTRICT")
    conn.execute("DROP CLUSTER empty2")
    assert conn.execute("SELECT count(*) FROM mz_clusters WHERE name IN ('empty', 'empty2', 'distant')").fetchone() == (0,)


def test_errors_with_materialize_wording(server, conn):
    cases = [
        ("CREATE CLUSTER x REPLICAS (r (SIZE 'nope'))", "22023", "unknown cluster replica size nope"),
        (f"CREATE CLUSTER x REPLICAS (r (SIZE '1', REMOTE ('{NOWHERE}')))", "42601",
         "only one of REMOTE or SIZE may be specified"),
        ("CREATE CLUSTER x REPLICAS (r (SIZE '1', SIZE '1'))", "42601", "SIZE specified more than once"),
        ("CREATE CLUSTER x REPLICAS (r (SIZE '1', AVAILABILITY ZONE 'az1', AVAILABILITY ZONE 'az2'))", "42601",
         "AVAILABILITY ZONE specified more than once"),
        ("CREATE CLUSTER x REPLICAS (r (SIZE '1'), r (SIZE '1'))", "42710",
         "cannot create multiple replicas named 'r' on cluster 'x'"),
        ("CREATE CLUSTER x REPLICAS (r (SIZE '1', AVAILABILITY ZONE 'mars'))", "22023", "unknown availability zone 'mars'"),
        ("CREATE CLUSTER quickstart", "42710", "cluster 'quickstart' already exists"),
        ("CREATE CLUSTER REPLICA quickstart.r1 SIZE '1'", "55000", "cannot modify managed cluster quickstart"),
        ("DROP CLUSTER REPLICA quickstart.r1", "55000", "cannot drop replica of managed cluster"),
        ("CREATE CLUSTER REPLICA nope.r1 SIZE '1'", "42704", "unknown cluster 'nope'"),
        ("DROP CLUSTER REPLICA quickstart.nope", "42704", 'CLUSTER quickstart has no CLUSTER REPLICA named "nope"'),
        ("DROP CLUSTER nope", "42704", "unknown cluster 'nope'"),
        ("ALTER CLUSTER nope RENAME TO x", "42704", "unknown cluster 'nope'"),
        ("SHOW CLUSTER REPLICAS FOR nope", "42704", "unknown cluster 'nope'"),
        ("CREATE CLUSTER x REPLICAS (r (SIZ '1'))", "42601", 'syntax error at or near "SIZ"'),
        ("CREATE CLUSTER x REPLICAS (r)", "42601", "SIZE or REMOTE option must be specified for replica r"),
    ]
    before = conn.execute("SELECT count(*) FROM mz_cluster_replicas").fetchone()
    jvms = len(replica_jvms(server.data_dir))
    for sql, code, msg in cases:
        state, primary, detail = sqlstate_of(conn, sql)
        assert (state, primary.split(":")[0] if "syntax" in msg else primary) == (code, msg.split(":")[0] if "syntax" in msg else msg), sql
        assert conn.execute("SELECT 1").fetchone() == (1,)
    # A failed statement leaves no trace: no catalog row, no process.
    assert conn.execute("SELECT count(*) FROM mz_cluster_replicas").fetchone() == before
    assert conn.execute("SELECT count(*) FROM mz_clusters WHERE name = 'x'").fetchone() == (0,)
    assert len(replica_jvms(server.data_dir)) == jvms
    _, _, detail = sqlstate_of(conn, "CREATE CLUSTER x REPLICAS (r (SIZE '1', AVAILABILITY ZONE 'mars'))")
    assert detail == "Valid availability zones are: az1, az2"


def test_availability_zone_assignment(conn):
    conn.execute(f"CREATE CLUSTER zoned REPLICAS (a (REMOTE ('{NOWHERE}')), b (REMOTE ('{NOWHERE}')),"
                 f" c (REMOTE ('{NOWHERE}'), AVAILABILITY ZONE 'az1'))")
    conn.execute(f"CREATE CLUSTER REPLICA zoned.d REMOTE ('{NOWHERE}')")
    try:
        # Fewest replicas of the cluster first, ties to the first listed zone.
        zones = {r[0]: r[2] for r in replicas(conn, "zoned")}
        assert zones == {"a": "az1", "b": "az2", "c": "az1", "d": "az2"}
        sizes = conn.execute("SELECT size, workers, scale FROM mz_cluster_replica_sizes WHERE size IN ('2', '2-1')"
                             " ORDER BY size").fetchall()
        assert sizes == [("2", 2, 1), ("2-1", 1, 2)]
    finally:
        conn.execute("DROP CLUSTER zoned")


def test_sizes_map_to_spark_cores_and_processes(server, conn):
    conn.execute("CREATE CLUSTER sized REPLICAS (two (SIZE '2'), split (SIZE '2-1'))")
    try:
        assert wait_for(lambda: all(r[3] == "healthy" for r in replicas(conn, "sized")), 180)
        two = connect_session(server.replica_url(replica_id(conn, "sized", "two")))
        assert two.conf.get("spark.master") == "local[2]"
        assert two.conf.get("spark.sqlfront.availability_zone") in ("az1", "az2")
        two.client.close()
        split_id = replica_id(conn, "sized", "split")
        split = connect_session(server.replica_url(split_id))
        assert split.conf.get("spark.master").startswith("local-cluster[2,1,")
        split.client.close()
        pgid = int((server.data_dir / "replicas" / split_id / "pid").read_text())
        executors = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _in_group(int(p.name), pgid)
                     and b"CoarseGrainedExecutorBackend" in _cmdline(p)]
        assert len(executors) == 2
        conn.execute("SET cluster = sized")
        conn.execute("CREATE TABLE sz (a int)")
        conn.execute("INSERT INTO sz VALUES (1), (2), (3)")
        assert conn.execute("SELECT sum(a) FROM sz").fetchone() == (6,)
        conn.execute("DROP TABLE sz")
    finally:
        conn.execute("SET cluster = quickstart")
        conn.execute("DROP CLUSTER sized")


def _in_group(pid: int, pgid: int) -> bool:
    try:
        return os.getpgid(pid) == pgid
    except OSError:
        return False


def _cmdline(p: Path) -> bytes:
    try:
        return (p / "cmdline").read_bytes()
    except OSError:
        return b""


@pytest.fixture(scope="module")
def foreign_spark(tmp_path_factory):
    """A Spark Connect server this test starts itself, standing for one that runs elsewhere."""
    orch = Orchestrator(tmp_path_factory.mktemp("foreign"), instance="foreign")
    proc = orch.start(ReplicaSpec("remote1", "foreign", workers=1))
    assert wait_for(lambda: _answers(proc.url, proc.token), 120)
    yield proc
    orch.stop(proc)
    orch.close()


def _answers(url, token=None) -> bool:
    try:
        s = connect_session(url, token)
        s.range(1).collect()
        s.client.close()
        return True
    except Exception:
        return False


def test_replica_requires_its_token(server, conn, foreign_spark):
    """Spark Connect servers accept only clients that present their replica's secret
    token; the token is on no command line, in no log and in no system table."""
    assert not _answers(foreign_spark.url)  # no token: refused
    assert not _answers(foreign_spark.url, "not-the-token")
    assert _answers(foreign_spark.url, foreign_spark.token)
    rid = conn.execute("SELECT id FROM mz_cluster_replicas WHERE name = 'r1'"
                       " AND cluster_id = (SELECT id FROM mz_clusters WHERE name = 'quickstart')").fetchone()[0]
    token_file = server.data_dir / "replicas" / rid / "token"
    token = token_file.read_text().strip()
    assert len(token) >= 32 and token_file.stat().st_mode & 0o077 == 0
    assert (server.data_dir / "replicas").stat().st_mode & 0o077 == 0
    for pid in replica_jvms(server.data_dir):
        assert token.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    assert token not in server.log_path.read_text(errors="replace")
    assert token not in (server.data_dir / "replicas" / rid / "replica.log").read_text(errors="replace")


def test_remote_replica(conn, foreign_spark):
    with pytest.raises(psycopg.Error) as ei:
        conn.execute("CREATE CLUSTER nope REPLICAS (r1 (SIZE '1', TOKEN 'x'))")
    assert ei.value.sqlstate == "42601"
    conn.execute(f"CREATE CLUSTER remote REPLICAS (r1 (REMOTE ('{foreign_spark.url}'), TOKEN '{foreign_spark.token}'))")
    try:
        all_text = str(conn.execute("SELECT * FROM mz_cluster_replicas").fetchall())
        assert foreign_spark.token not in all_text
        assert wait_for(lambda: replicas(conn, "remote")[0][3] == "healthy", 60)
        assert replicas(conn, "remote")[0][1] is None  # size is NULL for REMOTE
        conn.execute("SET cluster = remote")
        conn.execute("CREATE TABLE rt (a int)")
        conn.execute("INSERT INTO rt VALUES (41), (1)")
        assert conn.execute("SELECT sum(a) FROM rt").fetchone() == (42,)
        conn.execute("DROP TABLE rt")
    finally:
        conn.execute("SET cluster = quickstart")
        conn.execute("DROP CLUSTER remote")
    # Nothing was started or stopped for it: the foreign server still runs.
    assert foreign_spark.alive()


def _run_load(server, n_queries: int, threads: int, disrupt) -> list[Exception]:
    failures: list[Exception] = []
    done = [0]
    lock = threading.Lock()

    def client():
        with server.connect() as c:
            c.execute("SET cluster = failover")
            while True:
                with lock:
                    if done[0] >= n_queries:
                        return
                    done[0] += 1
                try:
                    assert c.execute("SELECT count(*), sum(a) FROM fo").fetchone() == (100, 5050)
                except Exception as e:  # noqa: BLE001 - counted and reported
                    failures.append(e)

    ts = [threading.Thread(target=client) for _ in range(threads)]
    for t in ts:
        t.start()
    wait_for(lambda: done[0] >= n_queries // 4, 120, 0.05)
    disrupt()
    for t in ts:
        t.join(600)
    return failures


@pytest.mark.slow
def test_failover_on_sigkill_and_sigstop(server, conn):
    conn.execute("CREATE CLUSTER failover REPLICAS (r1 (SIZE '1'), r2 (SIZE '1'))")
    conn.execute("SET cluster = failover")
    conn.execute("CREATE TABLE fo (a int)")
    conn.execute("INSERT INTO fo SELECT * FROM (VALUES " + ",".join(f"({i})" for i in range(1, 101)) + ") v")
    try:
        assert wait_for(lambda: all(r[3] == "healthy" for r in replicas(conn, "failover")), 180)
        victim = replica_id(conn, "failover", "r1")
        pid_file = server.data_dir / "replicas" / victim / "pid"
        statuses: list[str] = []

        def watch(stop):
            while not stop.is_set():
                statuses.append(replicas(conn_watch, "failover")[0][3])
                time.sleep(0.1)

        with server.connect() as conn_watch:
            stop = threading.Event()
            w = threading.Thread(target=watch, args=(stop,))
            w.start()
            killed_at = []

            def kill():
                killed_at.append(time.monotonic())
                os.kill(int(pid_file.read_text()), signal.SIGKILL)

            failures = _run_load(server, 200, 4, kill)
            assert failures == []
            # unhealthy within 2 s of the death, healthy again after the automatic restart
            assert wait_for(lambda: replicas(conn, "failover")[0][3] == "healthy", 120)
            # The watcher samples every 0.1 s: let it see the recovery too before stopping it.
            assert wait_for(lambda: statuses[-1] == "healthy", 30, 0.05)
            stop.set()
            w.join()
            assert "unhealthy" in statuses and "healthy" in statuses[statuses.index("unhealthy"):]

            # SIGSTOP for 10 s: the frozen replica must neither fail nor stall the peeks.
            def freeze():
                pid = int(pid_file.read_text())
                os.kill(pid, signal.SIGSTOP)
                threading.Timer(10, os.kill, (pid, signal.SIGCONT)).start()

            failures = _run_load(server, 200, 4, freeze)
            assert failures == []
            assert wait_for(lambda: replicas(conn, "failover")[0][3] == "healthy", 120)
    finally:
        conn.execute("DROP TABLE IF EXISTS fo")
        conn.execute("SET cluster = quickstart")
        conn.execute("DROP CLUSTER failover")


def test_cluster_without_healthy_replica_errors_after_bounded_wait(conn):
    conn.execute(f"CREATE CLUSTER dead REPLICAS (r1 (REMOTE ('{NOWHERE}')))")
    conn.execute("CREATE CLUSTER none")
    conn.execute("CREATE TABLE dt (a int)")
    try:
        conn.execute("SET cluster = none")
        state, msg, _ = sqlstate_of(conn, "SELECT * FROM dt")
        assert (state, msg) == ("55000", 'CLUSTER "none" has no replicas available to service request')
        conn.execute("SET cluster = dead")
        conn.execute("SET statement_timeout = '2s'")
        t = time.monotonic()
        state, msg, _ = sqlstate_of(conn, "SELECT * FROM dt")
        assert state == "57014" and time.monotonic() - t < 10
    finally:
        conn.execute("RESET statement_timeout")
        conn.execute("SET cluster = quickstart")
        conn.execute("DROP TABLE dt")
        conn.execute("DROP CLUSTER dead")
        conn.execute("DROP CLUSTER none")
