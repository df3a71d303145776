"""Tools that reflect the catalog: SQLAlchemy 2 Core (psycopg dialect) and pandas."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pandas as pd
import pytest
import sqlalchemy as sa


@pytest.fixture
def engine(server):
    eng = sa.create_engine(f"postgresql+psycopg://materialize@127.0.0.1:{server.port}/materialize")
    yield eng
    eng.dispose()


def test_sqlalchemy_reflection_and_select(engine, conn):
    conn.execute("CREATE TABLE sa_items (id int NOT NULL, name varchar(20), price numeric(8,2), added date)")
    try:
        with engine.begin() as c:
            c.execute(sa.text("INSERT INTO sa_items VALUES (1, 'apple', 1.25, '2024-01-02'), (2, 'pear', NULL, NULL)"))
        insp = sa.inspect(engine)
        assert "sa_items" in insp.get_table_names()
        assert insp.has_table("sa_items") and not insp.has_table("sa_nothing")
        md = sa.MetaData()
        items = sa.Table("sa_items", md, autoload_with=engine)
        assert [(c.name, str(c.type), c.nullable) for c in items.columns] == [
            ("id", "INTEGER", False), ("name", "VARCHAR(20)", True), ("price", "NUMERIC(8, 2)", True),
            ("added", "DATE", True)]
        assert insp.get_pk_constraint("sa_items")["constrained_columns"] == []
        assert insp.get_indexes("sa_items") == [] and insp.get_foreign_keys("sa_items") == []
        with engine.connect() as c:
            rows = c.execute(sa.select(items.c.name, items.c.price).where(items.c.id > sa.bindparam("lo"))
                             .order_by(items.c.id), {"lo": 0}).fetchall()
        assert [tuple(r) for r in rows] == [("apple", Decimal("1.25")), ("pear", None)]
    finally:
        conn.execute("DROP TABLE sa_items")


def test_pandas_read_sql(engine, conn):
    conn.execute("CREATE TABLE pd_t (a int, b text, d date)")
    conn.execute("INSERT INTO pd_t VALUES (1, 'x', '2024-01-02'), (2, NULL, NULL)")
    try:
        df = pd.read_sql("SELECT a, b, d FROM pd_t ORDER BY a", engine)
        assert list(df.columns) == ["a", "b", "d"]
        assert df["a"].tolist() == [1, 2]
        assert df["b"].tolist()[0] == "x" and df["b"].isna().tolist() == [False, True]
        assert df["d"].tolist()[0] == dt.date(2024, 1, 2)
        df2 = pd.read_sql(sa.text("SELECT count(*) AS n FROM pd_t WHERE a >= :lo"), engine, params={"lo": 2})
        assert df2["n"].tolist() == [1]
    finally:
        conn.execute("DROP TABLE pd_t")
