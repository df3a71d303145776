"""Indexes on views as dataflows (issue 25, items 2 and 3): an index on a view whose
query has an incremental plan is the view's dataflow on the index's cluster, its output
kept in each replica's memory; a peek of the view on that cluster reads it there once
its frontier passes the peek's timestamp, instead of running the view's query: AS OF a
time the index keeps, in a cursor, and through a view over the view too (and plain
EXPLAIN shows the index read).

The session's quickstart cluster serves (no replica of its own); the differential steps
are few and seeded. A killed replica's index dataflows are rebuilt:
``test_indexes.test_index_keeps_table_in_replica_memory_and_rebuilds_after_restart``."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from server import index_peeks, wait_for

#: view name -> its query (one per kind of incremental operator: linear, accumulation,
#: delta join, recomputed groups)
VIEWS = {
    "ix_sum": "SELECT k, count(*) AS n, sum(v) AS s FROM ixt GROUP BY k",
    "ix_join": "SELECT ixt.k, ixt.v, ixu.w FROM ixt JOIN ixu ON ixt.k = ixu.k WHERE ixt.v > 2 OR ixt.v IS NULL",
    "ix_max": "SELECT k, max(v) AS m FROM ixt GROUP BY k",
}

#: each view's second column
SECOND = {"ix_sum": "n", "ix_join": "v", "ix_max": "m"}

#: peeks of a view checked, one per step in turn: the view's rows, a filter over them
PEEKS = ("SELECT * FROM {v}", "SELECT k, {c} FROM {v} WHERE k <= 2")


def _hydrated(conn, names) -> bool:
    rows = conn.execute("SELECT i.name, h.hydrated FROM mz_internal.mz_hydration_statuses h"
                        " JOIN mz_indexes i ON i.id = h.object_id").fetchall()
    got = {n: h for n, h in rows if n in names}
    return len(got) == len(names) and all(got.values())


@pytest.fixture(scope="module")
def indexed(server):
    with server.connect() as conn:
        yield from _indexed_views(conn)


def _indexed_views(conn):
    conn.execute("CREATE TABLE ixt (k int, v int)")
    conn.execute("CREATE TABLE ixu (k int, w text)")
    conn.execute("INSERT INTO ixt VALUES (1, 1), (1, 5), (2, NULL), (3, 3), (3, 3)")
    conn.execute("INSERT INTO ixu VALUES (1, 'a'), (3, 'c'), (3, 'cc'), (NULL, 'n')")
    try:
        for name, sql in VIEWS.items():
            conn.execute(f"CREATE VIEW {name} AS {sql}")
            conn.execute(f"CREATE INDEX {name}_idx ON {name} (k)")
        assert wait_for(lambda: _hydrated(conn, {f"{n}_idx" for n in VIEWS}), 300)
        yield
    finally:
        for name in VIEWS:
            conn.execute(f"DROP VIEW IF EXISTS {name} CASCADE")
        conn.execute("DROP TABLE IF EXISTS ixt, ixu CASCADE")


def _check_every_view(conn, step: int = 0) -> int:
    """A peek of each indexed view (``PEEKS[step % 2]``) equals the same query over the
    view's query, run from scratch (on the same cluster: a query that names no view
    reads no index); returns how many peeks of views ran."""
    for name, sql in VIEWS.items():
        peek = PEEKS[step % 2]
        col = SECOND[name]
        got = Counter(conn.execute(peek.format(v=name, c=col)).fetchall())
        want = Counter(conn.execute(peek.format(v=f"({sql}) AS q", c=col)).fetchall())
        assert got == want, (name, peek)
    return len(VIEWS)


def test_explain_shows_the_index_dataflow_and_a_view_without_a_rule_keeps_recomputing(indexed, server, conn):
    lines = [r[0] for r in conn.execute("EXPLAIN INCREMENTAL PLAN FOR INDEX ix_sum_idx").fetchall()]
    assert any(line.lstrip().startswith("Accumulate") for line in lines) and "Changes of public.ixt" in lines[-1]
    # a view with no incremental rule (mz_now() outside a temporal filter) can still be
    # indexed: the index keeps its inputs in memory and its peeks run the query, as before
    conn.execute("CREATE VIEW ix_now AS SELECT k, v FROM ixt WHERE mz_now() > 0 OR k = 1")
    try:
        conn.execute("CREATE INDEX ix_now_idx ON ix_now (k)")
        before = index_peeks(server.metrics_url)
        assert Counter(conn.execute("SELECT * FROM ix_now").fetchall()) == \
            Counter(conn.execute("SELECT * FROM ixt").fetchall())
        assert index_peeks(server.metrics_url) == before  # not a dataflow: no index read proposed
    finally:
        conn.execute("DROP VIEW ix_now CASCADE")


def test_indexed_view_peeks_equal_the_query_after_random_writes_and_read_the_arrangement(indexed, server, conn):
    rng = random.Random(25)
    before = index_peeks(server.metrics_url)
    peeks = _check_every_view(conn)
    for step in range(3):
        kind = rng.choice(("insert", "update", "delete", "insert"))
        if kind == "insert":
            rows = ", ".join(f"({rng.choice(['NULL', 1, 2, 3, 4])}, {rng.choice(['NULL', 1, 3, 3, 7])})"
                             for _ in range(rng.randint(1, 3)))
            conn.execute(f"INSERT INTO ixt VALUES {rows}")
            conn.execute(f"INSERT INTO ixu VALUES ({rng.choice([1, 2, 4])}, 'w{step}')")
        elif kind == "update":
            conn.execute(f"UPDATE ixt SET v = v + 1 WHERE k = {rng.choice([1, 2, 3])}")
        else:
            conn.execute(f"DELETE FROM ixt WHERE k = {rng.choice([1, 3, 4])}")  # retractions to zero
        peeks += _check_every_view(conn, step + 1)
    after = index_peeks(server.metrics_url)
    # every peek of an indexed view read its index's arrangement (none ran the view's query)
    assert after.get("arrangement", 0) - before.get("arrangement", 0) == peeks
    assert after.get("rerun", 0) == before.get("rerun", 0)


def _from_scratch(conn, name: str, as_of: str = "") -> Counter:
    """View ``name``'s query run from scratch (it names no view: no index is read)."""
    return Counter(conn.execute(f"SELECT * FROM ({VIEWS[name]}) AS q{as_of}").fetchall())


def test_as_of_reads_and_cursors_read_the_index_at_their_timestamp(indexed, server, conn):
    with server.connect() as holder:
        # a block's read timestamp holds every shard's since there (tables keep 1 s only)
        holder.execute("BEGIN")
        ts = int(holder.execute("SELECT mz_now()").fetchone()[0])
        before = index_peeks(server.metrics_url)
        conn.execute("INSERT INTO ixt VALUES (2, 9), (1, 40)")
        peeks = 0
        for name in VIEWS:
            # AS OF a time before the write, within what the index keeps (since ..
            # frontier): the index's contents then, not its current ones
            got = Counter(conn.execute(f"SELECT * FROM {name} AS OF {ts}").fetchall())
            assert got == _from_scratch(conn, name, f" AS OF {ts}"), name
            peeks += 1
        assert _from_scratch(conn, "ix_sum", f" AS OF {ts}") != _from_scratch(conn, "ix_sum")  # the write shows
        # a cursor in a block reads at the block's timestamp
        conn.execute("BEGIN")
        try:
            for name in VIEWS:
                conn.execute(f"DECLARE c_{name} CURSOR FOR SELECT * FROM {name}")
                got = Counter(conn.execute(f"FETCH ALL c_{name}").fetchall())
                assert got == _from_scratch(conn, name), name
                peeks += 1
        finally:
            conn.execute("COMMIT")
        after = index_peeks(server.metrics_url)
        assert after.get("arrangement", 0) - before.get("arrangement", 0) == peeks
        assert after.get("rerun", 0) == before.get("rerun", 0)
        # AS OF before what an index keeps (its since: when it hydrated): the view's
        # query runs instead, at that time
        conn.execute(f"CREATE VIEW ix_late AS {VIEWS['ix_sum']}")
        try:
            conn.execute("CREATE INDEX ix_late_idx ON ix_late (k)")
            assert wait_for(lambda: _hydrated(conn, {"ix_late_idx"}), 300)
            got = Counter(conn.execute(f"SELECT * FROM ix_late AS OF {ts}").fetchall())
            assert got == _from_scratch(conn, "ix_sum", f" AS OF {ts}")
            last = index_peeks(server.metrics_url)
            assert last.get("rerun", 0) - after.get("rerun", 0) == 1
            assert last.get("arrangement", 0) == after.get("arrangement", 0)
        finally:
            conn.execute("DROP VIEW ix_late CASCADE")
        holder.execute("COMMIT")


def test_a_view_over_an_indexed_view_reads_its_index_and_explain_shows_it(indexed, server, conn):
    conn.execute("CREATE VIEW ix_over AS SELECT k, s FROM ix_sum WHERE n > 1")
    conn.execute("CREATE VIEW ix_over2 AS SELECT o.k, o.s, m.m FROM ix_over o JOIN ix_max m ON o.k = m.k")
    try:
        before = index_peeks(server.metrics_url)
        want = Counter(conn.execute(f"SELECT k, s FROM ({VIEWS['ix_sum']}) AS q WHERE n > 1").fetchall())
        assert Counter(conn.execute("SELECT * FROM ix_over").fetchall()) == want
        want2 = Counter(conn.execute(
            f"SELECT o.k, o.s, m.m FROM (SELECT k, s FROM ({VIEWS['ix_sum']}) AS q WHERE n > 1) o"
            f" JOIN ({VIEWS['ix_max']}) m ON o.k = m.k").fetchall())
        assert Counter(conn.execute("SELECT * FROM ix_over2").fetchall()) == want2
        after = index_peeks(server.metrics_url)
        assert after.get("arrangement", 0) - before.get("arrangement", 0) == 2
        assert after.get("rerun", 0) == before.get("rerun", 0)
        lines = [r[0] for r in conn.execute("EXPLAIN SELECT * FROM ix_over2").fetchall()]
        assert any(line.strip() == "ReadIndex on=public.ix_sum idx=ix_sum_idx" for line in lines), lines
        assert any(line.strip() == "ReadIndex on=public.ix_max idx=ix_max_idx" for line in lines), lines
        assert lines[-3:] == ["Used Indexes:", "  - public.ix_max_idx", "  - public.ix_sum_idx"], lines
        # a query that reads no indexed view: its plan as before
        lines = [r[0] for r in conn.execute("EXPLAIN SELECT * FROM ixt").fetchall()]
        assert "Used Indexes:" not in lines and any("Get public.ixt" in line for line in lines)
    finally:
        conn.execute("DROP VIEW ix_over CASCADE")


def test_an_indexed_view_whose_query_fails_answers_the_error_until_its_row_is_gone(server, conn):
    """A row that makes the view's query fail (10 / 0) makes peeks of the indexed view
    fail with the query's error; once the row is deleted the peeks answer rows again,
    from the index's dataflow, hydrated past the error."""
    import psycopg

    conn.execute("CREATE TABLE ix_err_t (k int, x int)")
    conn.execute("INSERT INTO ix_err_t VALUES (1, 2), (2, 5)")
    conn.execute("CREATE VIEW ix_err AS SELECT k, sum(10 / x) AS s FROM ix_err_t GROUP BY k")
    conn.execute("CREATE INDEX ix_err_idx ON ix_err (k)")
    try:
        assert wait_for(lambda: _hydrated(conn, {"ix_err_idx"}), 300)
        assert sorted(conn.execute("SELECT * FROM ix_err").fetchall()) == [(1, 5), (2, 2)]
        conn.execute("INSERT INTO ix_err_t VALUES (1, 0)")
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT * FROM ix_err")
        conn.execute("DELETE FROM ix_err_t WHERE x = 0")
        conn.execute("INSERT INTO ix_err_t VALUES (2, 10)")
        assert sorted(conn.execute("SELECT * FROM ix_err").fetchall()) == [(1, 5), (2, 3)]
        before = index_peeks(server.metrics_url).get("arrangement", 0)
        assert wait_for(lambda: sorted(conn.execute("SELECT * FROM ix_err").fetchall()) == [(1, 5), (2, 3)]
                        and index_peeks(server.metrics_url).get("arrangement", 0) > before, 60)
    finally:
        conn.execute("DROP TABLE ix_err_t CASCADE")
