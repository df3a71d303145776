"""Indexes on views as dataflows (issue 25, items 2 and 3): an index on a view whose
query has an incremental plan is the view's dataflow on the index's cluster, its output
kept in each replica's memory; a peek of the view on that cluster reads it there once
its frontier passes the peek's timestamp, instead of running the view's query.

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
