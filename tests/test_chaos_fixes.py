"""What the chaos check (issue 28, tests/test_chaos.py) found, pinned through the wire.

- A block that wrote, then read, then committed after another session wrote what it
  read: its read is at the block's read timestamp, its writes at COMMIT, so it would
  serialize both before and after the other write (G-single). COMMIT fails with 40001
  instead; a block whose reads nobody wrote meanwhile commits, and so does one whose
  table was written meanwhile in rows its reads did not select (a key it did not read:
  the check used to fail any write to the table, 140 of 327 transactions on two
  processes).

And the holes the issue lists under "Why":

- a block with DDL and an UPDATE/DELETE whose COMMIT conflicts keeps nothing (the
  conditional writes are checked in the catalog transaction, before the DDL commits);
- DDL of another session on other objects between a block's first DDL and its COMMIT
  no longer fails that COMMIT (only DDL on what the block touched or read does);
- ``mz_now()`` of a read outside a transaction is the timestamp it read at: a write
  landing between planning the read and reading no longer makes the read see a row
  that a read ``AS OF`` its ``mz_now()`` does not (the two-process run's
  view-mismatch and subscribe-mismatch);
- a materialized view over a table and another view catches up on any number of waiting
  writes in one dataflow round (its lag stays bounded), each write still at its own time;
  so does a view of one group (a TopK, a ``max`` without GROUP BY).
"""

from __future__ import annotations

import contextlib
import threading

import psycopg
import pytest

from server import metric_value


@pytest.fixture
def ws(server):
    with server.connect() as c:
        c.execute("DROP TABLE IF EXISTS ws")
        c.execute("CREATE TABLE ws (k int, v int)")
    yield server
    with server.connect() as c:
        c.execute("DROP TABLE IF EXISTS ws")


def test_a_write_then_read_block_fails_its_commit_when_what_it_read_changed(ws):
    with ws.connect() as a, ws.connect() as b:
        a.execute("BEGIN")
        a.execute("INSERT INTO ws VALUES (1, 1)")
        assert a.execute("SELECT v FROM ws WHERE k = 2").fetchall() == []
        b.execute("INSERT INTO ws VALUES (2, 2)")
        with pytest.raises(psycopg.errors.SerializationFailure):
            a.execute("COMMIT")
        # nothing of the failed block is visible; the session goes on
        assert a.execute("SELECT k, v FROM ws ORDER BY k").fetchall() == [(2, 2)]


def test_a_write_then_read_block_commits_when_nobody_wrote_what_it_read(ws):
    with ws.connect() as a, ws.connect() as b:
        b.execute("INSERT INTO ws VALUES (2, 2)")
        a.execute("BEGIN")
        a.execute("INSERT INTO ws VALUES (1, 1)")
        assert a.execute("SELECT k, v FROM ws ORDER BY k").fetchall() == [(1, 1), (2, 2)]
        a.execute("COMMIT")
        assert b.execute("SELECT k, v FROM ws ORDER BY k").fetchall() == [(1, 1), (2, 2)]


def test_a_write_then_read_block_commits_when_others_wrote_rows_it_did_not_read(ws):
    with ws.connect() as a, ws.connect() as b:
        b.execute("INSERT INTO ws VALUES (2, 2)")
        a.execute("BEGIN")
        a.execute("INSERT INTO ws VALUES (1, 1)")
        assert a.execute("SELECT v FROM ws WHERE k = 2 ORDER BY v").fetchall() == [(2,)]
        b.execute("INSERT INTO ws VALUES (3, 3)")  # not what a read
        b.execute("DELETE FROM ws WHERE k = 3")
        a.execute("COMMIT")
        assert b.execute("SELECT k, v FROM ws ORDER BY k").fetchall() == [(1, 1), (2, 2)]
        # a read that is not a filter of the table (an aggregate): any write conflicts
        a.execute("BEGIN")
        a.execute("INSERT INTO ws VALUES (4, 4)")
        assert a.execute("SELECT count(*) FROM ws WHERE k = 2").fetchall() == [(1,)]
        b.execute("INSERT INTO ws VALUES (5, 5)")
        with pytest.raises(psycopg.errors.SerializationFailure):
            a.execute("COMMIT")
        # a deleted row it read conflicts too
        a.execute("BEGIN")
        a.execute("INSERT INTO ws VALUES (6, 6)")
        assert a.execute("SELECT v FROM ws WHERE k = 1").fetchall() == [(1,)]
        b.execute("DELETE FROM ws WHERE k = 1")
        with pytest.raises(psycopg.errors.SerializationFailure):
            a.execute("COMMIT")
        assert a.execute("SELECT k FROM ws ORDER BY k").fetchall() == [(2,), (5,)]


def test_a_block_with_ddl_whose_update_conflicts_keeps_nothing(ws):
    """Issue 28's first hole: the catalog used to commit before the writes, so a COMMIT
    that failed with 40001 on its UPDATE kept the block's CREATE TABLE."""
    with ws.connect() as a, ws.connect() as b:
        a.execute("DROP TABLE IF EXISTS ddl_side")
        b.execute("INSERT INTO ws VALUES (1, 1)")
        a.execute("BEGIN")
        a.execute("CREATE TABLE ddl_side (x int)")
        a.execute("UPDATE ws SET v = v + 1")
        b.execute("INSERT INTO ws VALUES (2, 2)")
        with pytest.raises(psycopg.errors.SerializationFailure):
            a.execute("COMMIT")
        assert a.execute("SELECT count(*) FROM mz_tables WHERE name = 'ddl_side'").fetchone() == (0,)
        assert a.execute("SELECT k, v FROM ws ORDER BY k").fetchall() == [(1, 1), (2, 2)]


def test_unrelated_ddl_of_another_session_does_not_fail_a_blocks_commit(ws):
    """Issue 28's second hole: any DDL committed between a block's first DDL and its
    COMMIT failed the COMMIT with 40001 (two dbt threads building two models)."""
    with ws.connect() as a, ws.connect() as b:
        for t in ("h2_a", "h2_b"):
            a.execute(f"DROP TABLE IF EXISTS {t}")
        a.execute("BEGIN")
        a.execute("CREATE TABLE h2_a (x int)")
        a.execute("INSERT INTO h2_a VALUES (1)")
        b.execute("CREATE TABLE h2_b (y int)")  # takes ids after the block's: none shared
        b.execute("INSERT INTO h2_b VALUES (2)")
        a.execute("COMMIT")
        assert b.execute("SELECT x FROM h2_a").fetchall() == [(1,)]
        assert a.execute("SELECT y FROM h2_b").fetchall() == [(2,)]
        ids = a.execute("SELECT id FROM mz_tables WHERE name IN ('h2_a', 'h2_b')").fetchall()
        assert len(set(ids)) == 2
        for t in ("h2_a", "h2_b"):
            a.execute(f"DROP TABLE {t}")


def test_ddl_of_another_session_on_what_a_block_touched_fails_its_commit(ws):
    with ws.connect() as a, ws.connect() as b:
        for t in ("h2_same", "h2_base"):
            a.execute(f"DROP TABLE IF EXISTS {t} CASCADE")
        a.execute("CREATE TABLE h2_base (x int)")
        # the same name, taken meanwhile
        a.execute("BEGIN")
        a.execute("CREATE TABLE h2_same (x int)")
        b.execute("CREATE TABLE h2_same (y int)")
        with pytest.raises(psycopg.errors.SerializationFailure):
            a.execute("COMMIT")
        # a view over a table dropped meanwhile
        a.execute("BEGIN")
        a.execute("CREATE VIEW h2_v AS SELECT x FROM h2_base")
        b.execute("DROP TABLE h2_base")
        with pytest.raises(psycopg.errors.SerializationFailure):
            a.execute("COMMIT")
        assert a.execute("SELECT count(*) FROM mz_views WHERE name = 'h2_v'").fetchone() == (0,)
        assert a.execute("SELECT y FROM h2_same").fetchall() == []
        a.execute("DROP TABLE h2_same")


def test_a_table_widened_by_alter_table_is_not_readable_before_its_rows_were_copied(ws):
    # The chaos workload's register read in a block found no row at all: its timestamp
    # was taken while ALTER TABLE ... ADD COLUMN copied the rows to a new shard, which
    # existed (empty) from before that timestamp and got the rows after it. The new
    # shard's since is now the copy's time: such a read fails (22000), never sees it empty.
    with ws.connect() as c:
        c.execute("INSERT INTO ws VALUES (1, 1), (2, 2)")
        c.execute("ALTER TABLE ws ADD COLUMN w int")
        lines = [r[0].strip() for r in c.execute("EXPLAIN TIMESTAMP FOR SELECT * FROM ws")]
        since = next(int(x.split("[")[1].rstrip("]")) for x in lines if x.startswith("read frontier"))
        upper = next(int(x.split("[")[1].rstrip("]")) for x in lines if x.startswith("write frontier"))
        assert since == upper - 1, lines
        assert c.execute("SELECT k, v, w FROM ws ORDER BY k").fetchall() == [(1, 1, None), (2, 2, None)]


def _quickstart_again(server, conn) -> str:
    """Options of a REMOTE replica on the quickstart's Spark Connect server: a cluster's
    replica with no second JVM."""
    rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                       " WHERE c.name = 'quickstart' AND r.name = 'r1'").fetchone()[0]
    return server.remote_options(rid)


@contextlib.contextmanager
def _writes_waiting(server, conn, cluster: str, table: str, writes: list, remote: str):
    """Runs ``writes`` (SQL, or (SQL, parameters)) each at a timestamp of its own while
    ``cluster`` (its one replica named ``r``) has none, then gives it replica ``r2`` on
    ``remote``. Yields ``(the writes' timestamps, a function giving the dataflow rounds
    the cluster ran since the writes began)``; while it is open, a SUBSCRIBE to ``table``
    holds every shard's since (reads AS OF the timestamps stay valid)."""
    conn.execute(f"DROP CLUSTER REPLICA {cluster}.r")
    rounds = f'materialization_dataflow_rounds_total{{cluster="{cluster}"}}'
    before = metric_value(server.metrics_url, rounds)
    stamps = []
    with server.connect() as holder:
        holder.execute("BEGIN")
        holder.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {table}")
        for w in writes:
            conn.execute(*((w,) if isinstance(w, str) else w))
            stamps.append(int(conn.execute("SELECT mz_now()").fetchone()[0]))
        assert len(set(stamps)) == len(writes)
        conn.execute(f"CREATE CLUSTER REPLICA {cluster}.r2 {remote}")
        yield stamps, lambda: metric_value(server.metrics_url, rounds) - before


def test_a_view_over_a_table_and_a_view_takes_every_waiting_write_in_one_round(server, conn):
    """Hole 5: writes at distinct timestamps came faster than the view's rounds (one
    dataflow round per input time, ~2.5 s each), so its lag grew a second per second
    (bench/matview_lag.py). Now one round takes every time waiting when it starts. Here
    N writes wait while the view's cluster has no replica; once one is back the view
    catches up in one round (``materialization_dataflow_rounds``), not N, and a read AS
    OF each write's time still sees exactly the writes up to it."""
    n = 6
    remote = _quickstart_again(server, conn)
    conn.execute("CREATE TABLE h5_t (k int, v int)")
    conn.execute("CREATE TABLE h5_u (k int, w int)")
    conn.execute("INSERT INTO h5_u VALUES (0, 1), (0, 2), (1, 5)")
    conn.execute("CREATE VIEW h5_v AS SELECT k, sum(w) AS w FROM h5_u GROUP BY k")
    conn.execute(f"CREATE CLUSTER h5 REPLICAS (r ({remote}))")
    try:
        conn.execute("CREATE MATERIALIZED VIEW h5_mv IN CLUSTER h5 AS SELECT t.k, count(*) AS n, max(t.v + v.w) AS m"
                     " FROM h5_t t JOIN h5_v v ON t.k = v.k GROUP BY t.k")
        conn.execute("SET statement_timeout = '300s'")  # a round per write took minutes at load 25
        assert conn.execute("SELECT * FROM h5_mv").fetchall() == []  # hydrated
        writes = [("INSERT INTO h5_t VALUES (%s, %s)", (i % 2, i)) for i in range(n)]
        with _writes_waiting(server, conn, "h5", "h5_t", writes, remote) as (stamps, rounds):

            def expected(last: int) -> list[tuple]:  # after the writes 0 .. last
                w = {0: 3, 1: 5}  # h5_v
                return [(k, len(vs), max(vs) + w[k]) for k in (0, 1) if (vs := range(k, last + 1, 2))]

            assert sorted(conn.execute("SELECT * FROM h5_mv").fetchall()) == expected(n - 1)
            took = rounds()
            assert 1 <= took <= 2, f"{took:.0f} dataflow rounds for {n} waiting writes (one per write is the lag of hole 5)"
            for i, ts in enumerate(stamps):
                assert sorted(conn.execute(f"SELECT * FROM h5_mv AS OF {ts}").fetchall()) == expected(i), i
    finally:
        conn.execute("RESET statement_timeout")
        conn.execute("DROP CLUSTER h5 CASCADE")
        conn.execute("DROP TABLE h5_t, h5_u CASCADE")


def test_views_of_one_group_take_every_waiting_write_in_one_round(server, conn):
    """Hole 5 for operators of one group: a TopK and an aggregate without GROUP BY that
    does not accumulate (``max``; over no rows its one row is NULLs and a count of 0)
    stepped one dataflow round per waiting time, however many waited (12 rounds here,
    6 per view). Now they take them all in one round (``planner.incremental.timed``; the
    times with no rows answer the empty input's row), each change still at its time:
    inserts, a NULL, the maximum and a top row deleted (the next one enters), an update,
    and the table emptied."""
    remote = _quickstart_again(server, conn)
    writes = ["INSERT INTO h5o_t VALUES (1, 10)", "INSERT INTO h5o_t VALUES (2, NULL), (3, 30)",
              "INSERT INTO h5o_t VALUES (4, 20), (5, 20)", "DELETE FROM h5o_t WHERE v = 30",
              "UPDATE h5o_t SET v = 40 WHERE k = 2", "DELETE FROM h5o_t"]
    tables = [[(1, 10)], [(1, 10), (2, None), (3, 30)], [(1, 10), (2, None), (3, 30), (4, 20), (5, 20)],
              [(1, 10), (2, None), (4, 20), (5, 20)], [(1, 10), (2, 40), (4, 20), (5, 20)], []]  # after each write

    def expected(table: list[tuple]) -> list[tuple]:  # both views' rows, as ``read`` has them
        vs = [v for _, v in table if v is not None]
        top = sorted(table, key=lambda r: (r[1] is None, -(r[1] or 0), r[0]))[:2]
        return sorted([("max", max(vs) if vs else None, len(table))] + [("top", k, v) for k, v in top], key=repr)

    def read(at: str = "") -> list[tuple]:
        return sorted(conn.execute(f"SELECT 'max', m, n FROM h5o_max UNION ALL SELECT 'top', k, v FROM h5o_top {at}")
                      .fetchall(), key=repr)

    conn.execute("CREATE TABLE h5o_t (k int, v int)")
    conn.execute(f"CREATE CLUSTER h5o REPLICAS (r ({remote}))")
    try:
        conn.execute("CREATE MATERIALIZED VIEW h5o_max IN CLUSTER h5o AS SELECT max(v) AS m, count(*) AS n FROM h5o_t")
        conn.execute("CREATE MATERIALIZED VIEW h5o_top IN CLUSTER h5o AS"
                     " SELECT k, v FROM h5o_t ORDER BY v DESC NULLS LAST, k LIMIT 2")
        conn.execute("SET statement_timeout = '300s'")
        assert read() == [("max", None, 0)]  # hydrated
        with _writes_waiting(server, conn, "h5o", "h5o_t", writes, remote) as (stamps, rounds):
            assert read() == expected([])
            took = rounds()
            assert 2 <= took <= 4, f"{took:.0f} dataflow rounds of two views for {len(writes)} waiting writes"
            for i, ts in enumerate(stamps):
                assert read(f"AS OF {ts}") == expected(tables[i]), i
    finally:
        conn.execute("RESET statement_timeout")
        conn.execute("DROP CLUSTER h5o CASCADE")
        conn.execute("DROP TABLE h5o_t CASCADE")


def test_mz_now_of_a_read_is_the_timestamp_it_read_at_while_others_write(ws):
    stop = threading.Event()

    def write():
        with ws.connect() as w:
            i = 0
            while not stop.is_set():
                i += 1
                w.execute("INSERT INTO ws VALUES (%s, %s)", (i % 3, i))

    with ws.connect() as sub, ws.connect() as r:
        sub.execute("BEGIN")
        sub.execute("DECLARE c CURSOR FOR SUBSCRIBE ws WITH (PROGRESS)")
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        # a long IN list makes planning slow: writes land between planning and reading
        slow = "SELECT count(*), mz_now() FROM ws WHERE v NOT IN ({})".format(", ".join(map(str, range(-3000, 0))))
        try:
            reads = [r.execute(slow).fetchone() for _ in range(20)]
        finally:
            stop.set()
            writer.join(30)
        last = max(int(str(u)) for _, u in reads)
        updates, progress = [], 0
        while progress <= last:
            for ts, progressed, diff, *_ in sub.execute("FETCH ALL c WITH (timeout = '1s')"):
                if progressed:
                    progress = max(progress, int(str(ts)))
                else:
                    updates.append((int(str(ts)), diff))
    # what the subscription says the table held at each read's mz_now(), and what it read
    seen = [(n, sum(d for t, d in updates if t <= int(str(u)))) for n, u in reads]
    assert [(a, b) for a, b in seen if a != b] == [], seen
    assert seen[-1][0] > seen[0][0]  # the writes went on during the reads


def test_a_script_reads_its_own_insert_at_a_timestamp_its_mz_now_names(ws):
    # one simple Query: an implicit transaction, whose read commits the INSERT before it
    with ws.connect() as c:
        cur = c.execute("INSERT INTO ws VALUES (7, 7); SELECT count(*), mz_now() FROM ws WHERE k = 7")
        assert cur.nextset()
        n, u = cur.fetchone()
        assert n == 1
        assert c.execute(f"SELECT count(*) FROM ws WHERE k = 7 AS OF {u}").fetchone()[0] == 1


@pytest.mark.slow
def test_a_materialized_view_and_compaction_outlive_a_postgresql_restart(tmp_path):
    """The chaos run's memory growth on two processes (issue 28): a PostgreSQL restart
    killed the thread maintaining the materialized views (an error waiting on Consensus
    was not caught), so the view never advanced again, and the read hold it kept on its
    input pinned the table's since, with every part retired after it and every Consensus
    version since, for the rest of the process's life; the compaction thread died the
    same way. Now a restart is a pause: the view catches up, and the table's since moves
    on."""
    import time

    from pg_reference import PostgresReference
    from server import Server, free_port, shared_shard_state, wait_for

    pg = PostgresReference(tmp_path / "pg", free_port()).start()
    server = None
    try:
        url = pg.url
        server = Server(tmp_path / "mzdata", "--catalog-url", url, "--persist-consensus-url", url,
                        "--timestamp-oracle-url", url, "--persist-blob-url", str(tmp_path / "blob"),
                        "--catalog-key-file", str(tmp_path / "catalog.key")).start()
        with server.connect() as c:
            c.execute("CREATE TABLE pt (k int)")
            c.execute("CREATE MATERIALIZED VIEW pv AS SELECT count(*) AS n FROM pt")
            c.execute("INSERT INTO pt VALUES (1)")
            assert wait_for(lambda: c.execute("SELECT n FROM pv").fetchall() == [(1,)], 60)
        pg.stop()
        time.sleep(3)  # every background loop meets the refused connection
        pg.start()

        def insert(c, i: int) -> None:  # the first statements may meet connections PostgreSQL closed
            end = time.monotonic() + 30
            while True:
                try:
                    c.execute(f"INSERT INTO pt VALUES ({i})")
                    return
                except psycopg.OperationalError:
                    if time.monotonic() > end:
                        raise
                    time.sleep(0.5)

        with server.connect() as c:
            c.execute("SET statement_timeout = '60s'")
            for i in range(2, 5):
                insert(c, i)
            # the view's round for these writes runs: its thread lives
            assert c.execute("SELECT n FROM pv").fetchall() == [(4,)]
            upper = int(str(c.execute("SELECT mz_now()").fetchone()[0]))
        # the view's hold moved with it: the table's since follows the writes (it moves in
        # steps of persist's SINCE_STEP_MS, 5 s, behind a compaction window)
        with server.connect() as c:
            for i in range(5, 8):
                time.sleep(3)
                insert(c, i)
        assert wait_for(lambda: shared_shard_state(url, "pt")["since"] > upper - 1, 60), "the table's since stayed behind the view's old hold"
    finally:
        if server is not None:
            server.stop()
        pg.stop()
