"""Materialized views through the wire (Materialize's "CREATE MATERIALIZED VIEW"): kept
current by their cluster as their inputs change, stored in a shard of their own, readable
from any cluster right after a write into an input, SUBSCRIBE-able, and still maintained
after a restart."""

from __future__ import annotations

import time


import psycopg
import pytest

from server import Server, require_psql
from server import psql as run_psql


def rows(conn, sql: str) -> list[tuple]:
    return sorted(conn.execute(sql).fetchall())


def test_mv_follows_inserts_updates_and_deletes_of_its_table(server, conn):
    conn.execute("CREATE TABLE mv_base (k int, v text)")
    conn.execute("INSERT INTO mv_base VALUES (1, 'a'), (2, 'b')")
    conn.execute("CREATE MATERIALIZED VIEW mv_upper AS SELECT k, upper(v) AS u FROM mv_base WHERE k > 0")
    assert rows(conn, "SELECT * FROM mv_upper") == [(1, "A"), (2, "B")]
    # Each read comes right after the write: reads wait for the view to cover it.
    conn.execute("INSERT INTO mv_base VALUES (3, 'c'), (3, 'c'), (-1, 'hidden')")
    assert rows(conn, "SELECT * FROM mv_upper") == [(1, "A"), (2, "B"), (3, "C"), (3, "C")]  # a bag
    conn.execute("UPDATE mv_base SET v = 'z' WHERE k = 1")
    assert rows(conn, "SELECT * FROM mv_upper") == [(1, "Z"), (2, "B"), (3, "C"), (3, "C")]
    conn.execute("DELETE FROM mv_base WHERE k = 2 OR (k = 3 AND v = 'c')")
    conn.execute("INSERT INTO mv_base VALUES (3, 'c')")
    assert rows(conn, "SELECT u FROM mv_upper WHERE k < 3") == [("Z",)]
    # Another cluster reads the same shard (its replica here is the quickstart's Spark
    # Connect server again, as REMOTE: no second JVM for the test).
    rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                       " WHERE c.name = 'quickstart' AND r.name = 'r1'").fetchone()[0]
    d = server.data_dir / "replicas" / rid
    port, token = (d / "port").read_text().strip(), (d / "token").read_text().strip()
    conn.execute(f"CREATE CLUSTER mv_reader REPLICAS (r (REMOTE ('127.0.0.1:{port}'), TOKEN '{token}'))")
    try:
        with server.connect(options="-c cluster=mv_reader") as other:
            other.execute("SET statement_timeout = '60s'")
            assert rows(other, "SELECT * FROM mv_upper") == [(1, "Z"), (3, "C")]
            other.execute("INSERT INTO mv_base VALUES (4, 'd')")
            assert rows(other, "SELECT k FROM mv_upper") == [(1,), (3,), (4,)]
    finally:
        conn.execute("DROP CLUSTER mv_reader")
    assert conn.execute("SELECT count(*) FROM mv_upper").fetchone() == (3,)
    conn.execute("DROP TABLE mv_base CASCADE")  # its view's cluster stops maintaining it


def test_mv_over_join_and_aggregate_and_over_views_and_mvs(conn):
    conn.execute("CREATE TABLE mv_orders (id int, cust int, amount int)")
    conn.execute("CREATE TABLE mv_custs (id int, name text)")
    conn.execute("INSERT INTO mv_custs VALUES (1, 'ann'), (2, 'bob')")
    conn.execute("INSERT INTO mv_orders VALUES (1, 1, 10), (2, 1, 5), (3, 2, 7)")
    conn.execute("CREATE VIEW mv_joined AS SELECT c.name, o.amount FROM mv_orders o JOIN mv_custs c ON c.id = o.cust")
    conn.execute("CREATE MATERIALIZED VIEW mv_totals AS SELECT name, count(*) AS n, sum(amount) AS total"
                 " FROM mv_joined GROUP BY name")
    conn.execute("CREATE MATERIALIZED VIEW mv_grand AS SELECT sum(total) AS s, max(n) AS most FROM mv_totals")
    assert rows(conn, "SELECT * FROM mv_totals") == [("ann", 2, 15), ("bob", 1, 7)]
    assert rows(conn, "SELECT * FROM mv_grand") == [(22, 2)]
    conn.execute("INSERT INTO mv_orders VALUES (4, 2, 100), (5, 3, 1)")
    conn.execute("INSERT INTO mv_custs VALUES (3, 'cy')")
    assert rows(conn, "SELECT * FROM mv_totals") == [("ann", 2, 15), ("bob", 2, 107), ("cy", 1, 1)]
    assert rows(conn, "SELECT * FROM mv_grand") == [(123, 2)]
    conn.execute("DELETE FROM mv_orders WHERE cust = 1")
    assert rows(conn, "SELECT * FROM mv_grand") == [(108, 2)]
    # An MV joined with a table in a plain query.
    assert rows(conn, "SELECT t.name, c.id FROM mv_totals t JOIN mv_custs c ON c.name = t.name") == \
        [("bob", 2), ("cy", 3)]
    with pytest.raises(psycopg.errors.DependentObjectsStillExist):
        conn.execute("DROP MATERIALIZED VIEW mv_totals")
    conn.execute("DROP TABLE mv_orders, mv_custs CASCADE")
    assert conn.execute("SELECT count(*) FROM mz_materialized_views WHERE name IN ('mv_totals', 'mv_grand')"
                        ).fetchone() == (0,)


def test_subscribe_to_mv_sees_its_changes(server, conn):
    conn.execute("CREATE TABLE mv_sub_t (a int)")
    conn.execute("INSERT INTO mv_sub_t VALUES (1), (2)")
    conn.execute("CREATE MATERIALIZED VIEW mv_sub AS SELECT a * 10 AS a10 FROM mv_sub_t")
    conn.autocommit = False
    conn.execute("DECLARE c CURSOR FOR SUBSCRIBE mv_sub")
    snapshot = conn.execute("FETCH ALL c WITH (TIMEOUT = '10s')").fetchall()
    assert sorted((r[1], r[2]) for r in snapshot) == [(1, 10), (1, 20)]
    with server.connect() as other:
        other.execute("INSERT INTO mv_sub_t VALUES (3)")
        other.execute("DELETE FROM mv_sub_t WHERE a = 1")
    seen = []
    for _ in range(30):
        seen += conn.execute("FETCH ALL c WITH (TIMEOUT = '1s')").fetchall()
        if len(seen) >= 2:
            break
    assert sorted((r[1], r[2]) for r in seen) == [(-1, 10), (1, 30)]
    assert all(r[0] > snapshot[0][0] for r in seen)
    conn.rollback()
    conn.autocommit = True
    conn.execute("DROP TABLE mv_sub_t CASCADE")


def test_mv_ddl_catalog_and_errors_leave_the_session_usable(server, conn):
    conn.execute("CREATE TABLE mv_ddl_t (a int, b text)")
    conn.execute("INSERT INTO mv_ddl_t VALUES (1, 'x')")
    conn.execute("CREATE MATERIALIZED VIEW mv_ddl (x, y) AS SELECT a, b FROM mv_ddl_t")
    with pytest.raises(psycopg.errors.DuplicateTable):
        conn.execute("CREATE MATERIALIZED VIEW mv_ddl AS SELECT 1")
    conn.execute("CREATE MATERIALIZED VIEW IF NOT EXISTS mv_ddl AS SELECT 1")
    with pytest.raises(psycopg.errors.UndefinedObject, match="unknown cluster 'nosuch'"):
        conn.execute("CREATE MATERIALIZED VIEW mv_nowhere IN CLUSTER nosuch AS SELECT a FROM mv_ddl_t")
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="cannot materialize call to now"):
        conn.execute("CREATE MATERIALIZED VIEW mv_now AS SELECT a, now() FROM mv_ddl_t")
    with pytest.raises(psycopg.errors.WrongObjectType):
        conn.execute("INSERT INTO mv_ddl VALUES (2, 'y')")
    with pytest.raises(psycopg.errors.WrongObjectType):
        conn.execute("DROP VIEW mv_ddl")
    with pytest.raises(psycopg.errors.WrongObjectType):
        conn.execute("DROP TABLE mv_ddl")
    with pytest.raises(psycopg.errors.DependentObjectsStillExist, match="materialized view"):
        conn.execute("DROP TABLE mv_ddl_t")
    assert rows(conn, "SELECT x, y FROM mv_ddl") == [(1, "x")]

    conn.execute("ALTER MATERIALIZED VIEW mv_ddl RENAME TO mv_ddl2")
    conn.execute("INSERT INTO mv_ddl_t VALUES (2, 'y')")
    assert rows(conn, "SELECT x FROM mv_ddl2") == [(1,), (2,)]  # same shard, still maintained
    conn.execute("CREATE OR REPLACE MATERIALIZED VIEW mv_ddl2 AS SELECT count(*) AS n FROM mv_ddl_t")
    assert rows(conn, "SELECT n FROM mv_ddl2") == [(2,)]

    assert rows(conn, "SHOW MATERIALIZED VIEWS LIKE 'mv_ddl%'") == [("mv_ddl2", "quickstart", "")]
    name, create = conn.execute("SHOW CREATE MATERIALIZED VIEW mv_ddl2").fetchone()
    assert name == "materialize.public.mv_ddl2"
    assert create.startswith("CREATE MATERIALIZED VIEW materialize.public.mv_ddl2 IN CLUSTER quickstart AS SELECT")
    row = conn.execute("SELECT m.name, c.name, m.owner_id, m.oid = cl.oid FROM mz_materialized_views m"
                       " JOIN mz_clusters c ON c.id = m.cluster_id JOIN pg_class cl ON cl.relname = m.name"
                       " WHERE m.name = 'mv_ddl2'").fetchone()
    assert row == ("mv_ddl2", "quickstart", "u1", True)
    assert conn.execute("SELECT relkind FROM pg_class WHERE relname = 'mv_ddl2'").fetchone() == ("m",)
    assert conn.execute("SELECT matviewname, ispopulated FROM pg_matviews WHERE matviewname = 'mv_ddl2'"
                        ).fetchone() == ("mv_ddl2", True)
    assert conn.execute("SELECT type FROM mz_objects WHERE name = 'mv_ddl2'").fetchone() == ("materialized-view",)

    # A cluster without replicas does not advance its views: reads wait, up to the timeout.
    conn.execute("CREATE CLUSTER mv_idle REPLICAS ()")
    conn.execute("CREATE MATERIALIZED VIEW mv_stalled IN CLUSTER mv_idle AS SELECT a FROM mv_ddl_t")
    conn.execute("SET statement_timeout = '1s'")
    with pytest.raises(psycopg.errors.QueryCanceled):
        conn.execute("SELECT * FROM mv_stalled")
    conn.execute("RESET statement_timeout")
    assert rows(conn, "SHOW MATERIALIZED VIEWS IN CLUSTER mv_idle") == [("mv_stalled", "mv_idle", "")]
    with pytest.raises(psycopg.errors.DependentObjectsStillExist,
                       match="cannot drop cluster with active indexes or materialized views"):
        conn.execute("DROP CLUSTER mv_idle")
    conn.execute("DROP CLUSTER mv_idle CASCADE")
    assert conn.execute("SELECT count(*) FROM mz_materialized_views WHERE name = 'mv_stalled'").fetchone() == (0,)

    conn.execute("DROP TABLE mv_ddl_t CASCADE")
    assert conn.execute("SELECT count(*) FROM mz_materialized_views WHERE name LIKE 'mv_ddl%'").fetchone() == (0,)
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_psql_lists_and_describes_materialized_views(server, conn):
    require_psql()
    conn.execute("CREATE TABLE mv_psql_t (a int)")
    conn.execute("CREATE MATERIALIZED VIEW mv_psql AS SELECT a FROM mv_psql_t")

    def psql(command: str) -> str:
        out = run_psql(server, command)
        assert out.returncode == 0 and not out.stderr, out.stderr
        return out.stdout

    listed = psql(r"\dm")
    assert "mv_psql" in listed and "materialized view" in listed
    described = psql(r"\d+ mv_psql")
    assert 'Materialized view "public.mv_psql"' in described
    assert "View definition:" in described and "mv_psql_t" in described
    conn.execute("DROP MATERIALIZED VIEW mv_psql")
    conn.execute("DROP TABLE mv_psql_t")


@pytest.mark.slow
def test_a_replica_killed_during_maintenance_hydrates_again_and_the_view_stays_right(server, conn):
    """Issue 25: SIGKILL of the replica that keeps a view's dataflow: the orchestrator
    restarts it, the dataflow is hydrated again from the inputs at the view's frontier
    (mz_hydration_statuses), and the view goes on matching its query."""
    import os
    import signal

    conn.execute("CREATE TABLE kr_t (k int, v int)")
    conn.execute("INSERT INTO kr_t SELECT g % 5, g FROM generate_series(1, 200) AS g")
    query = "SELECT k, count(*), sum(v), max(v) FROM kr_t GROUP BY k"
    conn.execute(f"CREATE MATERIALIZED VIEW kr_v AS {query}")
    assert rows(conn, "SELECT * FROM kr_v") == rows(conn, query)
    rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                       " WHERE c.name = 'quickstart' AND r.name = 'r1'").fetchone()[0]
    conn.execute("INSERT INTO kr_t VALUES (1, 1000), (7, 7)")
    os.kill(int((server.data_dir / "replicas" / rid / "pid").read_text()), signal.SIGKILL)
    conn.execute("DELETE FROM kr_t WHERE v = 200")
    conn.execute("INSERT INTO kr_t VALUES (2, 2000)")
    assert rows(conn, "SELECT * FROM kr_v") == rows(conn, query)  # waits for the restart
    vid = conn.execute("SELECT id FROM mz_materialized_views WHERE name = 'kr_v'").fetchone()[0]
    assert conn.execute("SELECT hydrated FROM mz_internal.mz_hydration_statuses WHERE object_id = %s AND "
                        "replica_id = %s", (vid, rid)).fetchone() == (True,)


def test_restart_keeps_the_mv_and_keeps_maintaining_it(tmp_path):
    """A restarted process keeps the view and maintains it from where it was, also when
    its cluster has no replica for a while after the restart and its input is written
    meanwhile: the input's since stays at the view's upper (the chaos run found a view
    whose input was compacted past it while its replica came up: it failed for good with
    "as_of ... is below since")."""
    data = tmp_path / "mzdata"
    s = Server(data).start()
    try:
        with s.connect() as c:
            c.execute("CREATE TABLE kept_t (a int)")
            c.execute("INSERT INTO kept_t VALUES (1), (2)")
            c.execute("CREATE MATERIALIZED VIEW kept_mv AS SELECT sum(a) AS s FROM kept_t")
            assert c.execute("SELECT s FROM kept_mv").fetchone() == (3,)
            c.execute("ALTER CLUSTER quickstart SET (REPLICATION FACTOR 0)")
    finally:
        s.stop()
    s = Server(data).start(wait_replicas=False)
    try:
        with s.connect() as c:
            # Past the compaction window and persist's since step (1 s + 5 s), with writes
            # (a written shard is maintained), while no replica can step the view.
            end, n = time.monotonic() + 8, 0
            while time.monotonic() < end:
                c.execute("INSERT INTO kept_t VALUES (10)")
                n += 1
                time.sleep(0.5)
            c.execute("ALTER CLUSTER quickstart SET (REPLICATION FACTOR 1)")
            assert c.execute("SELECT s FROM kept_mv").fetchone() == (3 + 10 * n,)
            c.execute("INSERT INTO kept_t VALUES (100)")
            assert c.execute("SELECT s FROM kept_mv").fetchone() == (103 + 10 * n,)
    finally:
        s.stop()


def test_mv_is_maintained_incrementally_with_each_write_at_its_own_time(server, conn):
    """Issue 25: the view's changes come from its incremental plan (EXPLAIN INCREMENTAL
    PLAN shows it), several writes waiting for one round each keep their own time (a read
    AS OF each write's time sees exactly the writes up to it), a GROUP BY without keys
    goes back to its empty-input row, and a shape with no incremental rule is refused at
    CREATE with 0A000."""
    conn.execute("CREATE TABLE ivm_t (k int, v int)")
    conn.execute("CREATE MATERIALIZED VIEW ivm_sums AS SELECT k, count(*) AS n, sum(v) AS s FROM ivm_t GROUP BY k")
    conn.execute("CREATE MATERIALIZED VIEW ivm_all AS SELECT count(*) AS n, sum(v) AS s, max(v) AS m FROM ivm_t")
    plan = [r[0] for r in conn.execute("EXPLAIN INCREMENTAL PLAN FOR MATERIALIZED VIEW ivm_sums").fetchall()]
    assert any(line.strip().startswith("Accumulate") for line in plan), plan
    assert any("Changes of public.ivm_t" in line for line in plan), plan
    assert rows(conn, "SELECT * FROM ivm_all") == [(0, None, None)]
    stamps = []
    with server.connect() as holder:  # an open SUBSCRIBE holds every shard's since (AS OF stays valid)
        holder.execute("BEGIN")
        holder.execute("DECLARE c CURSOR FOR SUBSCRIBE ivm_t")
        for i in range(3):  # no read between the writes: one round may take all three
            conn.execute("INSERT INTO ivm_t VALUES (1, %s), (2, 10)", (i,))
            stamps.append(int(conn.execute("SELECT mz_now()").fetchone()[0]))
        assert rows(conn, "SELECT * FROM ivm_sums") == [(1, 3, 3), (2, 3, 30)]
        for i, ts in enumerate(stamps):
            assert rows(conn, f"SELECT * FROM ivm_sums AS OF {ts}") == [(1, i + 1, i * (i + 1) // 2),
                                                                        (2, i + 1, 10 * (i + 1))]
            assert rows(conn, f"SELECT * FROM ivm_all AS OF {ts}") == [(2 * (i + 1), 10 * (i + 1) + i * (i + 1) // 2,
                                                                       10)]
    conn.execute("DELETE FROM ivm_t WHERE k = 2")
    assert rows(conn, "SELECT * FROM ivm_sums") == [(1, 3, 3)]
    conn.execute("DELETE FROM ivm_t")
    assert rows(conn, "SELECT * FROM ivm_sums") == []
    assert rows(conn, "SELECT * FROM ivm_all") == [(0, None, None)]
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        conn.execute("CREATE MATERIALIZED VIEW ivm_rec AS WITH RECURSIVE r(x) AS "
                     "(SELECT k FROM ivm_t UNION ALL SELECT x + 1 FROM r WHERE x < 3) SELECT * FROM r")
    assert conn.execute("SELECT count(*) FROM mz_materialized_views WHERE name = 'ivm_rec'").fetchone() == (0,)


def test_hydration_statuses_and_materialization_lag(conn):
    """mz_internal.mz_hydration_statuses has each view's dataflow on each replica of its
    cluster, hydrated once it computed; mz_materialization_lag each view's lag behind
    its inputs and behind now (Materialize's relations of the same names)."""
    conn.execute("CREATE TABLE hy_t (a int)")
    conn.execute("INSERT INTO hy_t VALUES (1)")
    conn.execute("CREATE MATERIALIZED VIEW hy_v AS SELECT a, count(*) FROM hy_t GROUP BY a")
    assert rows(conn, "SELECT * FROM hy_v") == [(1, 1)]
    vid = conn.execute("SELECT id FROM mz_materialized_views WHERE name = 'hy_v'").fetchone()[0]
    st = conn.execute("SELECT replica_id, hydrated, hydration_seconds FROM mz_internal.mz_hydration_statuses "
                      "WHERE object_id = %s", (vid,)).fetchall()
    assert st and all(h and s is not None and s >= 0 for _, h, s in st), st
    lag = conn.execute("SELECT local_lag, global_lag FROM mz_internal.mz_materialization_lag WHERE object_id = %s",
                       (vid,)).fetchall()
    assert len(lag) == 1 and lag[0][0] is not None and lag[0][1] is not None


def test_mv_shows_numeric_values_with_its_querys_scale(conn):
    """An unconstrained numeric column of a view shows each value as its query does
    (issue 32): ``n * 2`` of a numeric(6,2) is ``-4.50``, not the stored default's
    ``-4.5000000000``; avg keeps the query's places; after an incremental write and
    through a view over the view too."""
    conn.execute("CREATE TABLE sc_t (g int, n numeric(6,2))")
    conn.execute("INSERT INTO sc_t VALUES (1, -2.25), (1, 5.10), (2, 15.00)")
    conn.execute("CREATE MATERIALIZED VIEW sc_twice AS SELECT g, n * 2 AS x FROM sc_t")
    conn.execute("CREATE MATERIALIZED VIEW sc_avg AS SELECT g, avg(n) AS a FROM sc_t GROUP BY g")
    conn.execute("CREATE MATERIALIZED VIEW sc_over AS SELECT g, x FROM sc_twice WHERE x < 100")

    def shown(sql: str) -> list[tuple]:
        return sorted((g, str(v)) for g, v in conn.execute(sql).fetchall())

    assert shown("SELECT * FROM sc_twice") == [(1, "-4.50"), (1, "10.20"), (2, "30.00")]
    for _ in range(2):  # at hydration, then after an incremental round
        assert shown("SELECT * FROM sc_twice") == shown("SELECT g, n * 2 FROM sc_t")
        assert shown("SELECT * FROM sc_avg") == shown("SELECT g, avg(n) FROM sc_t GROUP BY g")
        assert shown("SELECT * FROM sc_over") == shown("SELECT g, n * 2 FROM sc_t WHERE n * 2 < 100")
        conn.execute("INSERT INTO sc_t VALUES (2, 0.01), (3, -7.77)")
    assert ("3", "-15.54") in [(str(g), v) for g, v in shown("SELECT * FROM sc_twice")]
    # PostgreSQL's type stays numeric (no typmod)
    assert conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
                        " WHERE attrelid = 'sc_twice'::regclass AND attname = 'x'").fetchone() == ("numeric",)
    conn.execute("DROP TABLE sc_t CASCADE")


def test_mv_multiplies_unconstrained_numerics_exactly_as_its_query(conn):
    """A view's dataflow takes each stored value's own scale, as the query's peek does:
    ``n * 0.0000001`` of an unconstrained numeric was 0 in the view (Spark's decimal
    product dropped decimals below 6) where the query gave 0.00000015."""
    conn.execute("CREATE TABLE sc_u (k int, n numeric)")
    conn.execute("INSERT INTO sc_u VALUES (1, 1.5), (2, 0.001), (3, 123456.789)")
    conn.execute("CREATE MATERIALIZED VIEW sc_tiny AS SELECT k, n * 0.0000001 AS x FROM sc_u")
    for _ in range(2):  # at hydration, then after an incremental round
        assert conn.execute("SELECT k, x FROM sc_tiny ORDER BY k").fetchall() == \
            conn.execute("SELECT k, n * 0.0000001 FROM sc_u ORDER BY k").fetchall()
        conn.execute("INSERT INTO sc_u VALUES (4, 2.25)")
    assert conn.execute("SELECT x::text FROM sc_tiny WHERE k = 1").fetchone() == ("0.00000015",)
    conn.execute("DROP TABLE sc_u CASCADE")


def test_mv_with_a_temporal_filter_and_a_numeric_sum_keeps_its_querys_scale(conn):
    """A temporal filter does not stop CREATE from learning the result's numeric scale
    (a regression of issue 32's stored scale: the schema question lowered mz_now(),
    which has no single value, and CREATE answered 0A000)."""
    conn.execute("CREATE TABLE sct_t (g int, n numeric(6,2))")
    conn.execute("INSERT INTO sct_t VALUES (1, 2.25), (1, 5.10), (2, 15.00)")
    conn.execute("CREATE MATERIALIZED VIEW sct_v AS SELECT g, sum(n) AS s FROM sct_t "
                 "WHERE mz_now() >= 0 AND mz_now() < 99999999999999 GROUP BY g")
    got = sorted((g, str(v)) for g, v in conn.execute("SELECT * FROM sct_v").fetchall())
    assert got == [(1, "7.35"), (2, "15.00")]
    conn.execute("DROP TABLE sct_t CASCADE")


def test_refresh_materialized_view_waits_until_the_view_has_every_earlier_write(server, conn):
    """PostgreSQL's REFRESH MATERIALIZED VIEW on a maintained view: it returns once the
    view reflects every write acknowledged before it (so a read of the view right after
    sees them); WITH NO DATA is refused (0A000), another kind of relation is 42809, an
    unknown one 42P01, and a role that does not own the view gets 42501."""
    conn.execute("CREATE TABLE rf_t (a int)")
    conn.execute("CREATE MATERIALIZED VIEW rf_mv AS SELECT sum(a) AS s FROM rf_t")
    conn.execute("INSERT INTO rf_t VALUES (1), (2)")
    assert conn.execute("REFRESH MATERIALIZED VIEW rf_mv").statusmessage == "REFRESH MATERIALIZED VIEW"
    conn.execute("INSERT INTO rf_t VALUES (3)")
    conn.execute("REFRESH MATERIALIZED VIEW CONCURRENTLY public.rf_mv")
    assert rows(conn, "SELECT s FROM rf_mv") == [(6,)]
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="WITH NO DATA"):
        conn.execute("REFRESH MATERIALIZED VIEW rf_mv WITH NO DATA")
    with pytest.raises(psycopg.errors.WrongObjectType, match='"rf_t" is not a materialized view'):
        conn.execute("REFRESH MATERIALIZED VIEW rf_t")
    with pytest.raises(psycopg.errors.UndefinedTable):
        conn.execute("REFRESH MATERIALIZED VIEW rf_nope")
    conn.execute("CREATE ROLE rf_joe LOGIN")
    try:
        with psycopg.connect(host=server.host, port=server.port, user="rf_joe", dbname="materialize",
                             autocommit=True) as joe:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="must be owner"):
                joe.execute("REFRESH MATERIALIZED VIEW rf_mv")
    finally:
        conn.execute("DROP ROLE rf_joe")
        conn.execute("DROP MATERIALIZED VIEW rf_mv")
        conn.execute("DROP TABLE rf_t")


def test_an_error_of_a_view_is_retracted_with_the_row_that_caused_it(server, conn):
    """Materialize keeps a view's errors as data of the times they hold at: a row whose
    expression fails (10 / 0) makes reads of the view fail from its write on, and deleting
    it makes them answer again, while reads AS OF the times in between still fail and
    reads before the bad write answer as they did. Writes batched into the failing round
    with the bad one keep their own times."""
    conn.execute("CREATE TABLE mv_err_t (k int, x int)")
    conn.execute("INSERT INTO mv_err_t VALUES (1, 2), (2, 5)")
    conn.execute("CREATE MATERIALIZED VIEW mv_err_sum AS SELECT k, sum(10 / x) AS s FROM mv_err_t GROUP BY k")
    conn.execute("CREATE MATERIALIZED VIEW mv_err_map AS SELECT k, 10 / x AS q FROM mv_err_t")
    conn.execute("CREATE MATERIALIZED VIEW mv_err_top AS SELECT sum(s) AS t FROM mv_err_sum")  # a view over it
    assert rows(conn, "SELECT * FROM mv_err_sum") == [(1, 5), (2, 2)]
    assert rows(conn, "SELECT * FROM mv_err_map") == [(1, 5), (2, 2)]
    with server.connect() as holder:  # an open SUBSCRIBE holds every shard's since (AS OF stays valid)
        holder.execute("BEGIN")
        holder.execute("DECLARE c CURSOR FOR SUBSCRIBE mv_err_t")
        sub = server.connect()
        sub.execute("BEGIN")
        sub.execute("DECLARE s CURSOR FOR SUBSCRIBE mv_err_sum")
        assert len(sub.execute("FETCH ALL s").fetchall()) == 2  # its snapshot
        # Three writes with no read between: one round may take them all.
        conn.execute("INSERT INTO mv_err_t VALUES (2, 5)")
        good = int(conn.execute("SELECT mz_now()").fetchone()[0])
        conn.execute("INSERT INTO mv_err_t VALUES (1, 0)")
        bad = int(conn.execute("SELECT mz_now()").fetchone()[0])
        conn.execute("INSERT INTO mv_err_t VALUES (3, 1)")
        for view in ("mv_err_sum", "mv_err_map", "mv_err_top"):
            with pytest.raises(psycopg.errors.DivisionByZero):
                conn.execute(f"SELECT * FROM {view}")
            assert conn.execute("SELECT 1").fetchone() == (1,)  # the session stays usable
        assert rows(conn, f"SELECT * FROM mv_err_sum AS OF {good}") == [(1, 5), (2, 4)]
        # A SUBSCRIBE gets the change at the good write, then the error ends it.
        changes = []
        with pytest.raises(psycopg.errors.DivisionByZero):
            for _ in range(60):
                changes += sub.execute("FETCH ALL s WITH (timeout = '1s')").fetchall()
        assert sorted((r[1], r[2], r[3]) for r in changes) == [(-1, 2, 2), (1, 2, 4)]
        sub.close()
        conn.execute("INSERT INTO mv_err_t VALUES (3, 1)")  # another write while it fails
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT * FROM mv_err_sum")
        conn.execute("DELETE FROM mv_err_t WHERE x = 0")
        assert rows(conn, "SELECT * FROM mv_err_sum") == [(1, 5), (2, 4), (3, 20)]
        assert rows(conn, "SELECT * FROM mv_err_map") == [(1, 5), (2, 2), (2, 2), (3, 10), (3, 10)]
        assert rows(conn, "SELECT * FROM mv_err_top") == [(29,)]
        for view in ("mv_err_sum", "mv_err_map"):
            with pytest.raises(psycopg.errors.DivisionByZero):
                conn.execute(f"SELECT * FROM {view} AS OF {bad}")
        assert rows(conn, f"SELECT * FROM mv_err_map AS OF {good}") == [(1, 5), (2, 2), (2, 2)]
    # And on: the view follows its input again, incrementally.
    conn.execute("UPDATE mv_err_t SET x = 10 WHERE k = 3")
    assert rows(conn, "SELECT * FROM mv_err_sum") == [(1, 5), (2, 4), (3, 2)]
    conn.execute("DROP TABLE mv_err_t CASCADE")
