"""The README's walkthrough, over the wire with psql, psycopg and asyncpg."""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import subprocess
from decimal import Decimal

import asyncpg
import pytest

WALKTHROUGH = """
SHOW CLUSTER REPLICAS;
CREATE CLUSTER analytics REPLICAS (r1 (SIZE '2'));
SET cluster = analytics;
CREATE TABLE t (a int, b text, c numeric(10,2), d date);
INSERT INTO t VALUES (1, 'x', 1.50, '2024-01-02'), (2, NULL, 2.25, '2024-02-03');
SELECT b, sum(c) FROM t WHERE a > 0 GROUP BY b ORDER BY b;
SELECT name, size, status FROM mz_cluster_replicas ORDER BY id;
DROP CLUSTER REPLICA analytics.r1;
DROP CLUSTER analytics;
DROP TABLE t;
"""


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql (PostgreSQL's client) is not installed")
def test_walkthrough_with_psql(server):
    out = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(server.port), "-U", "materialize", "-X", "-A", "-t",
         "-v", "ON_ERROR_STOP=1", "materialize"],
        input=WALKTHROUGH, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "quickstart|r1|1|t" in lines
    # NULLs sort last ascending (PostgreSQL), sums keep numeric(10,2)'s scale.
    i = lines.index("x|1.50")
    assert lines[i + 1] == "|2.25"
    assert "r1|2|healthy" in lines
    assert lines[-1] == "DROP TABLE"


def test_walkthrough_with_psycopg(server):
    with server.connect() as c:
        c.execute("CREATE CLUSTER pg_analytics REPLICAS (r1 (SIZE '1'))")
        c.execute("SET cluster = pg_analytics")
        assert c.execute("SHOW cluster").fetchone() == ("pg_analytics",)
        c.execute("CREATE TABLE pt (a int, b text, c numeric(10,2), d date)")
        cur = c.execute("INSERT INTO pt VALUES (1, 'x', 1.50, '2024-01-02'), (2, NULL, 2.25, '2024-02-03')")
        assert cur.rowcount == 2
        rows = c.execute("SELECT b, sum(c) FROM pt WHERE a > 0 GROUP BY b ORDER BY b").fetchall()
        assert rows == [("x", Decimal("1.50")), (None, Decimal("2.25"))]
        rows = c.execute("SELECT a, d FROM pt ORDER BY a").fetchall()
        assert rows == [(1, dt.date(2024, 1, 2)), (2, dt.date(2024, 2, 3))]
        # System tables join and filter like any table.
        rows = c.execute(
            "SELECT c.name, r.name, r.size FROM mz_cluster_replicas r JOIN mz_clusters c ON r.cluster_id = c.id"
            " WHERE c.name = 'pg_analytics'"
        ).fetchall()
        assert rows == [("pg_analytics", "r1", "1")]
        c.execute("DROP CLUSTER REPLICA pg_analytics.r1")
        c.execute("DROP CLUSTER pg_analytics")
        c.execute("SET cluster = quickstart")
        c.execute("DROP TABLE pt")
        assert c.execute("SELECT count(*) FROM mz_clusters WHERE name = 'pg_analytics'").fetchone() == (0,)


def test_walkthrough_with_asyncpg(server):
    async def run():
        c = await asyncpg.connect(host="127.0.0.1", port=server.port, user="materialize", database="materialize")
        try:
            await c.execute("CREATE TABLE at (a int, b text, c numeric(10,2), d date)")
            await c.execute("INSERT INTO at VALUES (1, 'x', 1.50, '2024-01-02'), (2, NULL, 2.25, '2024-02-03')")
            rows = await c.fetch("SELECT b, sum(c) AS s FROM at WHERE a > 0 GROUP BY b ORDER BY b")
            assert [tuple(r) for r in rows] == [("x", Decimal("1.50")), (None, Decimal("2.25"))]
            row = await c.fetchrow("SELECT count(*) AS n, max(d) AS d FROM at")
            assert row["n"] == 2 and row["d"] == dt.date(2024, 2, 3)
            replicas = await c.fetch("SHOW CLUSTER REPLICAS")
            assert ("quickstart", "r1", "1", True) in [tuple(r) for r in replicas]
            await c.execute("DROP TABLE at")
        finally:
            await c.close()

    asyncio.run(run())


def test_constant_queries_and_types(conn):
    row = conn.execute(
        "SELECT 1 + 2, 7 / 2, -7 / 2, 7 % 3, 1.5::int, 2.5::int, 'a' || 'b', true AND NULL,"
        " date '2024-01-31' + interval '1 month', 10.0 / 4"
    ).fetchone()
    assert row == (3, 3, -3, 1, 2, 3, "ab", None, dt.datetime(2024, 2, 29), Decimal("2.5000000000000000"))


def test_select_runs_on_spark_with_postgres_semantics(conn):
    conn.execute("CREATE TABLE sem (i int, s text, f double precision, ch char(3))")
    conn.execute("INSERT INTO sem VALUES (7, 'b', 1.5, 'a'), (-7, 'B', NULL, 'a  '), (NULL, 'é', 2.0, 'b'), (2, 'a', 0.1, NULL)")
    try:
        # int / int truncates toward zero; NULLs last ascending, first descending.
        assert conn.execute("SELECT i / 2 FROM sem ORDER BY i").fetchall() == [(-3,), (1,), (3,), (None,)]
        assert conn.execute("SELECT i FROM sem ORDER BY i DESC").fetchall() == [(None,), (7,), (2,), (-7,)]
        # Text compares by code point: 'B' < 'a' < 'b' < 'é'.
        assert conn.execute("SELECT s FROM sem ORDER BY s").fetchall() == [("B",), ("a",), ("b",), ("é",)]
        # char(n) ignores trailing spaces in comparisons.
        assert conn.execute("SELECT count(*) FROM sem WHERE ch = 'a'").fetchone() == (2,)
        assert conn.execute("SELECT count(*), count(i), sum(i), avg(f) FROM sem WHERE i > 100").fetchone() == (0, 0, None, None)
        assert conn.execute("SELECT DISTINCT ch FROM sem ORDER BY 1 NULLS FIRST").fetchall() == [(None,), ("a  ",), ("b  ",)]
        rows = conn.execute(
            "SELECT s, count(*) AS n FROM sem GROUP BY s HAVING count(*) >= 1 ORDER BY n DESC, s LIMIT 2 OFFSET 1"
        ).fetchall()
        assert rows == [("a", 1), ("b", 1)]
        rows = conn.execute(
            "SELECT a.i, b.s FROM sem a LEFT JOIN sem b ON a.i = -b.i ORDER BY a.i NULLS FIRST"
        ).fetchall()
        assert rows == [(None, None), (-7, "b"), (2, None), (7, "B")]
    finally:
        conn.execute("DROP TABLE sem")
