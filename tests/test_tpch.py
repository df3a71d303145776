"""TPC-H at scale 0.01: all 22 queries through the wire equal Spark SQL run directly on the
same Parquet files, and EXPLAIN shows each stage of the optimizer (no cross joins)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from sqlfront import tpch
from spark_exec.replica import connect_session

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tpch_data(server):
    d = tpch.generate(0.01, server.copy_from_dir / "tpch", echo=lambda s: None)
    with server.connect() as c:
        tpch.load(server.url, d, echo=lambda s: None, conn=c)
    yield d
    with server.connect() as c:
        for t in tpch.TABLES:
            c.execute(f"DROP TABLE IF EXISTS {t}")


def spark_sql(server, data, sql):
    spark = connect_session(server.replica_url("u1"))
    try:
        spark.read.parquet(str(data / "lineitem.parquet")).createOrReplaceTempView("lineitem")
        return [tuple(r) for r in spark.sql(sql).collect()]
    finally:
        spark.client.close()


QUERY_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "tpch" / "queries"


@pytest.fixture(scope="module")
def spark(server, tpch_data):
    """A plain Spark Connect session on the replica, with a temp view per TPC-H file."""
    session = connect_session(server.replica_url("u1"))
    for t in tpch.TABLES:
        session.read.parquet(str(tpch_data / f"{t}.parquet")).createOrReplaceTempView(t)
    yield session
    session.client.close()


def close(a, b) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.rstrip(" ") == b.rstrip(" ")  # char(n) keeps its padding on our side
    if isinstance(a, (Decimal, float)) or isinstance(b, (Decimal, float)):
        return abs(Decimal(str(a)) - Decimal(str(b))) <= Decimal("1e-6") * max(1, abs(Decimal(str(b))))
    return a == b


def same(ours, theirs):
    assert len(ours) == len(theirs)
    for r1, r2 in zip(ours, theirs):
        assert len(r1) == len(r2)
        assert all(close(a, b) for a, b in zip(r1, r2)), (r1, r2)


def test_tpch_counts(server, tpch_data):
    with server.connect() as c:
        assert c.execute("SELECT count(*) FROM lineitem").fetchone() == (60175,)
        assert c.execute("SELECT count(*) FROM nation").fetchone() == (25,)


def test_tpch_q1_matches_spark_sql(server, tpch_data):
    with server.connect() as c:
        ours = c.execute(tpch.Q1).fetchall()
    assert len(ours) == 4
    same(ours, spark_sql(server, tpch_data, tpch.SPARK_Q1))


def test_tpch_q6_matches_spark_sql(server, tpch_data):
    with server.connect() as c:
        ours = c.execute(tpch.Q6).fetchall()
    assert ours[0][0] is not None
    same(ours, spark_sql(server, tpch_data, tpch.SPARK_Q6))


@pytest.mark.skipif(not QUERY_DIR.exists(), reason="the TPC-H queries live in ../shared/tpch")
@pytest.mark.parametrize("q", range(1, 23))
def test_tpch_query_matches_spark_sql(server, tpch_data, spark, q):
    sql = (QUERY_DIR / f"q{q:02d}.sql").read_text()
    with server.connect() as c:
        c.execute("SET statement_timeout = '120s'")
        ours = c.execute(sql).fetchall()
    theirs = [tuple(r) for r in spark.sql(sql).collect()]
    if "order by" not in sql.lower():
        ours, theirs = sorted(ours, key=repr), sorted(theirs, key=repr)
    same(ours, theirs)


@pytest.mark.skipif(not QUERY_DIR.exists(), reason="the TPC-H queries live in ../shared/tpch")
@pytest.mark.parametrize("q", [2, 17, 20, 21])
def test_tpch_explain_shows_no_cross_join(server, tpch_data, q):
    sql = (QUERY_DIR / f"q{q:02d}.sql").read_text().rstrip().rstrip(";")
    with server.connect() as c:
        optimized = "\n".join(r[0] for r in c.execute("EXPLAIN " + sql).fetchall())
        same_text = "\n".join(r[0] for r in c.execute("EXPLAIN OPTIMIZED PLAN FOR " + sql).fetchall())
        raw = "\n".join(r[0] for r in c.execute("EXPLAIN RAW PLAN FOR " + sql).fetchall())
        decorrelated = c.execute("EXPLAIN DECORRELATED PLAN AS TEXT FOR " + sql)
        assert decorrelated.description[0].name == "Decorrelated Plan"
        decorrelated = "\n".join(r[0] for r in decorrelated.fetchall())
    assert "Join cross" not in optimized and optimized == same_text
    assert "$1:" in raw and "Join cross" in raw  # subqueries in expressions; FROM as written
    assert "$1:" not in decorrelated
