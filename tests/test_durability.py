"""Restart durability, and no replica JVM outlives its environmentd."""

from __future__ import annotations

import signal

import pytest

from server import Server, replica_jvms, wait_for

pytestmark = pytest.mark.slow


def test_restart_restores_clusters_replicas_tables_and_rows(tmp_path):
    data = tmp_path / "mzdata"
    zones = ("--availability-zone", "az1", "--availability-zone", "az2")
    s = Server(data, *zones).start()
    try:
        with s.connect() as c:
            c.execute("CREATE CLUSTER keep REPLICAS (k1 (SIZE '1'))")
            c.execute("CREATE CLUSTER far REPLICAS (f1 (REMOTE ('sc://127.0.0.1:9'), AVAILABILITY ZONE 'az2'))")
            c.execute("ALTER CLUSTER far RENAME TO distant")
            c.execute("CREATE TABLE kept (a int, b text, c numeric(10,2))")
            c.execute("INSERT INTO kept VALUES (1, 'one', 1.25), (2, NULL, NULL)")
            c.execute("INSERT INTO kept VALUES (3, 'three', 3.5)")
    finally:
        assert s.stop(signal.SIGTERM) == 0
    assert wait_for(lambda: not replica_jvms(data), 20), "replica JVMs survived a clean shutdown"
    from test_persist_inline import shard_state

    # the small INSERTs were inline parts (in Consensus, no file in Blob): they come back too
    st, files = shard_state(s, "kept")
    assert len(st.parts) == 2 and all(p.inline is not None for p in st.parts) and files == []

    s = Server(data, *zones).start(wait_replicas=False)
    try:
        with s.connect() as c:
            assert wait_for(lambda: c.execute("SELECT count(*) FROM mz_cluster_replicas WHERE status = 'healthy'")
                            .fetchone() == (2,), 180)
            rows = c.execute("SELECT c.name, r.name, r.size, r.availability_zone FROM mz_cluster_replicas r"
                             " JOIN mz_clusters c ON c.id = r.cluster_id ORDER BY 1, 2").fetchall()
            assert rows == [("distant", "f1", None, "az2"), ("keep", "k1", "1", "az1"), ("quickstart", "r1", "1", "az1")]
            c.execute("SET cluster = keep")
            rows = c.execute("SELECT a, b, c FROM kept ORDER BY a").fetchall()
            assert [r[:2] for r in rows] == [(1, "one"), (2, None), (3, "three")]
            assert str(rows[0][2]) == "1.25" and rows[1][2] is None
            assert len(replica_jvms(data)) == 2
    finally:
        s.stop()


def test_killed_server_leaves_no_orphan_java(tmp_path):
    data = tmp_path / "mzdata"
    s = Server(data).start()
    assert len(replica_jvms(data)) == 1
    s.stop(signal.SIGKILL)
    # The replica gets its parent-death signal; nothing is left behind.
    assert wait_for(lambda: not replica_jvms(data), 30), f"orphans: {replica_jvms(data)}"
    s = Server(data).start()
    try:
        assert len(replica_jvms(data)) == 1
        with s.connect() as c:
            assert c.execute("SELECT count(*) FROM mz_cluster_replicas").fetchone() == (1,)
    finally:
        s.stop()
    assert wait_for(lambda: not replica_jvms(data), 20)
