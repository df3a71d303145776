"""Indexes on views as dataflows (issue 25, items 2 and 3): an index on a view whose
query has an incremental plan is the view's dataflow on the index's cluster, its output
kept in each replica's memory; a peek of the view on that cluster reads it there once
its frontier passes the peek's timestamp, instead of running the view's query.

One cluster of one replica for the module (a replica of its own, because one test kills
it); the differential steps are few and seeded."""

from __future__ import annotations

import os
import random
import re
import signal
import urllib.request
from collections import Counter

import pytest

from server import wait_for

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


def _index_peeks(server) -> dict[str, float]:
    text = urllib.request.urlopen(server.metrics_url, timeout=10).read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r'index_peeks_total\{how="(\w+)"\} (\S+)', text)}


def _hydrated(conn, names) -> bool:
    rows = conn.execute("SELECT i.name, h.hydrated FROM mz_internal.mz_hydration_statuses h"
                        " JOIN mz_indexes i ON i.id = h.object_id").fetchall()
    got = {n: h for n, h in rows if n in names}
    return len(got) == len(names) and all(got.values())


@pytest.fixture(scope="module")
def ixc(server):
    with server.connect() as conn:
        yield from _cluster(conn)


def _cluster(conn):
    conn.execute("CREATE CLUSTER ixc REPLICAS (r1 (SIZE '1'))")
    conn.execute("CREATE TABLE ixt (k int, v int)")
    conn.execute("CREATE TABLE ixu (k int, w text)")
    conn.execute("INSERT INTO ixt VALUES (1, 1), (1, 5), (2, NULL), (3, 3), (3, 3)")
    conn.execute("INSERT INTO ixu VALUES (1, 'a'), (3, 'c'), (3, 'cc'), (NULL, 'n')")
    for name, sql in VIEWS.items():
        conn.execute(f"CREATE VIEW {name} AS {sql}")
        conn.execute(f"CREATE INDEX {name}_idx IN CLUSTER ixc ON {name} (k)")
    rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                       " WHERE c.name = 'ixc'").fetchone()[0]
    try:
        assert wait_for(lambda: _hydrated(conn, {f"{n}_idx" for n in VIEWS}), 300)
        yield rid
    finally:
        conn.execute("SET cluster = quickstart")
        for name in VIEWS:
            conn.execute(f"DROP VIEW IF EXISTS {name} CASCADE")
        conn.execute("DROP TABLE IF EXISTS ixt, ixu CASCADE")
        conn.execute("DROP CLUSTER IF EXISTS ixc CASCADE")


def _check_every_view(conn, step: int = 0) -> int:
    """A peek of each indexed view on cluster ixc (``PEEKS[step % 2]``) equals the same
    query over the view's query, run from scratch (on the same cluster: a query that
    names no view reads no index); returns how many peeks of views ran."""
    conn.execute("SET cluster = ixc")
    try:
        for name, sql in VIEWS.items():
            peek = PEEKS[step % 2]
            col = SECOND[name]
            got = Counter(conn.execute(peek.format(v=name, c=col)).fetchall())
            want = Counter(conn.execute(peek.format(v=f"({sql}) AS q", c=col)).fetchall())
            assert got == want, (name, peek)
    finally:
        conn.execute("SET cluster = quickstart")
    return len(VIEWS)


def test_explain_shows_the_index_dataflow_and_a_view_without_a_rule_keeps_recomputing(ixc, server, conn):
    lines = [r[0] for r in conn.execute("EXPLAIN INCREMENTAL PLAN FOR INDEX ix_sum_idx").fetchall()]
    assert any(line.lstrip().startswith("Accumulate") for line in lines) and "Changes of public.ixt" in lines[-1]
    # a view with no incremental rule (mz_now() outside a temporal filter) can still be
    # indexed: the index keeps its inputs in memory and its peeks run the query, as before
    conn.execute("CREATE VIEW ix_now AS SELECT k, v FROM ixt WHERE mz_now() > 0 OR k = 1")
    try:
        conn.execute("CREATE INDEX ix_now_idx IN CLUSTER ixc ON ix_now (k)")
        before = _index_peeks(server)
        conn.execute("SET cluster = ixc")
        assert Counter(conn.execute("SELECT * FROM ix_now").fetchall()) == \
            Counter(conn.execute("SELECT * FROM ixt").fetchall())
        assert _index_peeks(server) == before  # not a dataflow: no index read proposed
    finally:
        conn.execute("SET cluster = quickstart")
        conn.execute("DROP VIEW ix_now CASCADE")


def test_indexed_view_peeks_equal_the_query_after_random_writes_and_read_the_arrangement(ixc, server, conn):
    rng = random.Random(25)
    before = _index_peeks(server)
    peeks = _check_every_view(conn)
    for step in range(4):
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
    after = _index_peeks(server)
    # every peek of an indexed view read its index's arrangement (none ran the view's query)
    assert after.get("arrangement", 0) - before.get("arrangement", 0) == peeks
    assert after.get("rerun", 0) == before.get("rerun", 0)


def test_a_killed_replica_rebuilds_its_index_dataflows(ixc, server, conn):
    os.kill(int((server.data_dir / "replicas" / ixc / "pid").read_text()), signal.SIGKILL)
    assert wait_for(lambda: not _hydrated(conn, {"ix_sum_idx"}), 60)
    conn.execute("INSERT INTO ixt VALUES (1, 10), (5, 50)")
    _check_every_view(conn)  # right while the index hydrates again (the query runs)
    assert wait_for(lambda: _hydrated(conn, {f"{n}_idx" for n in VIEWS}), 300)
    before = _index_peeks(server)
    conn.execute("DELETE FROM ixt WHERE k = 5")
    peeks = _check_every_view(conn)
    assert _index_peeks(server).get("arrangement", 0) - before.get("arrangement", 0) == peeks
