"""Indexes as in Materialize: an index lives in a cluster, and every replica of that
cluster keeps the indexed data in memory (refreshed as writes land, rebuilt when the
replica restarts); peeks on that cluster read memory instead of Parquet."""

from __future__ import annotations

import os
import signal

import psycopg
import pytest

from catalog.durable import CatalogStore
from server import index_peeks, wait_for
from spark_exec.lower import read_parts
from spark_exec.replica import connect_session


def _error(conn, sql) -> tuple[str, str]:
    with pytest.raises(psycopg.Error) as ei:
        conn.execute(sql)
    return ei.value.sqlstate, ei.value.diag.message_primary


def test_index_statements_names_and_catalog(conn):
    conn.execute("CREATE CLUSTER ixc REPLICAS ()")
    conn.execute("CREATE TABLE ixt (a int NOT NULL, b text)")
    conn.execute("CREATE VIEW ixv AS SELECT a + 1 AS a1 FROM ixt")
    try:
        conn.execute("SET cluster = ixc")
        conn.execute("CREATE DEFAULT INDEX ON ixv")  # in the session's cluster
        conn.execute("SET cluster = quickstart")
        conn.execute("CREATE DEFAULT INDEX IN CLUSTER ixc ON ixv")
        conn.execute("CREATE INDEX ON ixt (a, upper(b))")  # PostgreSQL's form, session's cluster
        conn.execute("CREATE INDEX named IN CLUSTER ixc ON ixt (b)")
        assert conn.execute("SHOW INDEXES ON ixv").fetchall() == [
            ("ixv_primary_idx", "ixv", "ixc", ["a1"]), ("ixv_primary_idx1", "ixv", "ixc", ["a1"])]
        assert conn.execute("SHOW INDEXES IN CLUSTER quickstart WHERE on = 'ixt'").fetchall() == [
            ("ixt_a_expr_idx", "ixt", "quickstart", ["a", "upper(b)"])]
        assert conn.execute("SHOW INDEXES IN CLUSTER ixc WHERE on = 'ixt'").fetchall() == [
            ("named", "ixt", "ixc", ["b"])]
        cols = conn.execute(
            "SELECT ic.index_position, ic.on_position, ic.on_expression, ic.nullable FROM mz_index_columns ic"
            " JOIN mz_indexes i ON i.id = ic.index_id WHERE i.name = 'ixt_a_expr_idx' ORDER BY 1").fetchall()
        assert cols == [(1, 1, None, False), (2, None, "upper(b)", True)]
        assert conn.execute("SELECT o.type, c.name FROM mz_indexes i JOIN mz_objects o ON o.id = i.id"
                            " JOIN mz_clusters c ON c.id = o.cluster_id WHERE i.name = 'named'").fetchone() == \
            ("index", "ixc")
        assert _error(conn, "CREATE INDEX bad ON ixt (nope)")[0] == "42703"
        assert _error(conn, "CREATE DEFAULT INDEX IN CLUSTER noexist ON ixv") == ("42704", "unknown cluster 'noexist'")
        assert _error(conn, "CREATE INDEX named ON ixt (a)")[0] == "42P07"
        conn.execute("CREATE INDEX IF NOT EXISTS named ON ixt (a)")
        assert _error(conn, "DROP CLUSTER ixc") == (
            "2BP01", "cannot drop cluster with active indexes or materialized views")
        conn.execute("DROP INDEX ixv_primary_idx1")
        conn.execute("DROP CLUSTER ixc CASCADE")
        assert conn.execute("SELECT name FROM mz_indexes ORDER BY name").fetchall() == [("ixt_a_expr_idx",)]
    finally:
        conn.execute("SET cluster = quickstart")
        conn.execute("DROP CLUSTER IF EXISTS ixc CASCADE")
        conn.execute("DROP VIEW IF EXISTS ixv")
        conn.execute("DROP TABLE IF EXISTS ixt")


def _parts(server, table_name: str):
    """The table (a catalog object) and the URLs of its shard's Parquet parts now."""
    snap = CatalogStore(str(server.data_dir / "catalog.db")).load()
    table = next(t for t in snap.tables.values() if t.name == table_name)
    shard_dir = server.data_dir / "blob" / table.shard_id
    return table, sorted(p.resolve().as_uri() for p in shard_dir.glob("*.parquet"))


def _cached(spark, table, urls) -> bool:
    """Whether the replica holds ``urls`` in memory as one unit (a table of small parts is
    arranged as one unit: ``lower.arranged_units``)."""
    return "InMemoryRelation" in read_parts(spark, table, urls)._explain_string()


@pytest.mark.slow
def test_index_keeps_table_in_replica_memory_and_rebuilds_after_restart(server, conn):
    conn.execute("CREATE CLUSTER arr REPLICAS (r1 (SIZE '1'))")
    conn.execute("CREATE TABLE arrt (a int, b text)")
    # rows too big for an inline part (persist.write's 4 KiB): the parts are in Blob, which
    # is what an arrangement caches (inline rows come with every peek's plan)
    conn.execute("INSERT INTO arrt VALUES (1, repeat('x', 5000)), (2, repeat('y', 5000))")
    try:
        rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                           " WHERE c.name = 'arr'").fetchone()[0]
        assert wait_for(lambda: conn.execute(f"SELECT status FROM mz_cluster_replicas WHERE id = '{rid}'")
                        .fetchone()[0] == "healthy", 180)
        conn.execute("CREATE DEFAULT INDEX IN CLUSTER arr ON arrt")
        # an index on a view is its dataflow, rebuilt too (issue 25)
        conn.execute("CREATE VIEW arrv AS SELECT a % 2 AS p, count(*) AS n, sum(a) AS s FROM arrt GROUP BY a % 2")
        conn.execute("CREATE INDEX arrv_idx IN CLUSTER arr ON arrv (p)")
        spark = connect_session(server.replica_url(rid))
        try:
            table, urls = _parts(server, "arrt")
            assert wait_for(lambda: _cached(spark, table, urls), 60)
            # A write's new part is arranged too (with the other small part); peeks on the
            # cluster see every row.
            conn.execute("INSERT INTO arrt VALUES (3, repeat('z', 5000))")
            table, urls = _parts(server, "arrt")
            assert len(urls) == 2
            assert wait_for(lambda: _cached(spark, table, urls), 60)
            conn.execute("SET cluster = arr")
            assert conn.execute("SELECT sum(a), count(*) FROM arrt").fetchone() == (6, 3)
        finally:
            spark.client.close()
        # A restarted replica starts empty and is filled again.
        os.kill(int((server.data_dir / "replicas" / rid / "pid").read_text()), signal.SIGKILL)
        assert wait_for(lambda: conn.execute(f"SELECT status FROM mz_cluster_replicas WHERE id = '{rid}'")
                        .fetchone()[0] == "unhealthy", 30)
        assert conn.execute("SELECT sum(a), count(*) FROM arrt").fetchone() == (6, 3)  # waits for the restart
        assert sorted(conn.execute("SELECT * FROM arrv").fetchall()) == [(0, 1, 2), (1, 2, 4)]
        spark = connect_session(server.replica_url(rid))
        try:
            assert wait_for(lambda: _cached(spark, table, urls), 60)
        finally:
            spark.client.close()
        assert wait_for(lambda: conn.execute("SELECT bool_and(h.hydrated) FROM mz_internal.mz_hydration_statuses h"
                                             " JOIN mz_indexes i ON i.id = h.object_id"
                                             " WHERE i.name = 'arrv_idx'").fetchone()[0], 180)
        reads = index_peeks(server.metrics_url).get("arrangement", 0)
        conn.execute("INSERT INTO arrt VALUES (4, 'w')")
        assert sorted(conn.execute("SELECT * FROM arrv").fetchall()) == [(0, 2, 6), (1, 2, 4)]
        assert index_peeks(server.metrics_url).get("arrangement", 0) == reads + 1  # read from the rebuilt dataflow
        # Without the index, nothing stays in memory.
        conn.execute("DROP INDEX arrt_primary_idx")
        spark = connect_session(server.replica_url(rid))
        try:
            assert wait_for(lambda: not _cached(spark, table, urls), 60)
        finally:
            spark.client.close()
    finally:
        conn.execute("SET cluster = quickstart")
        conn.execute("DROP TABLE IF EXISTS arrt CASCADE")
        conn.execute("DROP CLUSTER IF EXISTS arr CASCADE")



def test_index_on_a_view_with_mz_now_is_maintained_without_log_spam(server, conn):
    """Issue 32: the maintainer planned such a view with no query timestamp, failed, and
    logged a warning every second forever."""
    start = server.log_path.stat().st_size
    conn.execute("CREATE TABLE temporal (a int)")
    conn.execute("CREATE VIEW recent AS SELECT a FROM temporal WHERE mz_now() > 0")
    conn.execute("CREATE INDEX recent_idx ON recent (a)")
    conn.execute("INSERT INTO temporal VALUES (1)")
    assert conn.execute("SELECT a FROM recent").fetchall() == [(1,)]
    # its state is in mz_hydration_statuses, as a materialized view's (hydrated: in memory)
    assert wait_for(lambda: conn.execute("SELECT bool_and(h.hydrated) FROM mz_internal.mz_hydration_statuses h"
                                         " JOIN mz_indexes i ON i.id = h.object_id"
                                         " WHERE i.name = 'recent_idx'").fetchone()[0], 60)
    with open(server.log_path, "rb") as f:
        f.seek(start)
        assert b"arrangements of cluster" not in f.read()
    conn.execute("DROP VIEW recent CASCADE")


def test_a_failing_arrangement_round_is_reported_once():
    import logging
    import threading

    from spark_exec.arrangements import ArrangementMaintainer

    rounds = threading.Semaphore(0)

    def wanted():
        rounds.release()
        raise RuntimeError("cannot plan")

    m = ArrangementMaintainer("c", list, wanted)
    m.POLL_S = 0.01
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("spark_exec.arrangements").addHandler(handler)
    try:
        m.start()
        for _ in range(5):
            assert rounds.acquire(timeout=30)
        m.stop()
    finally:
        logging.getLogger("spark_exec.arrangements").removeHandler(handler)
    assert m.error == "cannot plan"
    assert len([r for r in records if r.levelno >= logging.WARNING]) == 1
