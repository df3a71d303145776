"""TPC-H Q1 and Q6 through the wire equal Spark SQL run directly on the same Parquet files."""

from __future__ import annotations

from decimal import Decimal

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


def close(a, b) -> bool:
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
