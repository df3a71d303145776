"""TPC-H: generate data with tpchgen-cli, create the tables, load them with COPY, and
the standard text of the queries we run (TPC-H specification 2.18, section 2.4)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")

DDL = {
    "region": "r_regionkey bigint NOT NULL, r_name char(25) NOT NULL, r_comment varchar(152)",
    "nation": "n_nationkey bigint NOT NULL, n_name char(25) NOT NULL, n_regionkey bigint NOT NULL, n_comment varchar(152)",
    "supplier": "s_suppkey bigint NOT NULL, s_name char(25) NOT NULL, s_address varchar(40) NOT NULL, "
                "s_nationkey bigint NOT NULL, s_phone char(15) NOT NULL, s_acctbal numeric(15,2) NOT NULL, "
                "s_comment varchar(101) NOT NULL",
    "customer": "c_custkey bigint NOT NULL, c_name varchar(25) NOT NULL, c_address varchar(40) NOT NULL, "
                "c_nationkey bigint NOT NULL, c_phone char(15) NOT NULL, c_acctbal numeric(15,2) NOT NULL, "
                "c_mktsegment char(10) NOT NULL, c_comment varchar(117) NOT NULL",
    "part": "p_partkey bigint NOT NULL, p_name varchar(55) NOT NULL, p_mfgr char(25) NOT NULL, "
            "p_brand char(10) NOT NULL, p_type varchar(25) NOT NULL, p_size integer NOT NULL, "
            "p_container char(10) NOT NULL, p_retailprice numeric(15,2) NOT NULL, p_comment varchar(23) NOT NULL",
    "partsupp": "ps_partkey bigint NOT NULL, ps_suppkey bigint NOT NULL, ps_availqty integer NOT NULL, "
                "ps_supplycost numeric(15,2) NOT NULL, ps_comment varchar(199) NOT NULL",
    "orders": "o_orderkey bigint NOT NULL, o_custkey bigint NOT NULL, o_orderstatus char(1) NOT NULL, "
              "o_totalprice numeric(15,2) NOT NULL, o_orderdate date NOT NULL, o_orderpriority char(15) NOT NULL, "
              "o_clerk char(15) NOT NULL, o_shippriority integer NOT NULL, o_comment varchar(79) NOT NULL",
    "lineitem": "l_orderkey bigint NOT NULL, l_partkey bigint NOT NULL, l_suppkey bigint NOT NULL, "
                "l_linenumber integer NOT NULL, l_quantity numeric(15,2) NOT NULL, "
                "l_extendedprice numeric(15,2) NOT NULL, l_discount numeric(15,2) NOT NULL, "
                "l_tax numeric(15,2) NOT NULL, l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL, "
                "l_shipdate date NOT NULL, l_commitdate date NOT NULL, l_receiptdate date NOT NULL, "
                "l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL, l_comment varchar(44) NOT NULL",
}

Q1 = """select
    l_returnflag,
    l_linestatus,
    sum(l_quantity) as sum_qty,
    sum(l_extendedprice) as sum_base_price,
    sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
    avg(l_quantity) as avg_qty,
    avg(l_extendedprice) as avg_price,
    avg(l_discount) as avg_disc,
    count(*) as count_order
from
    lineitem
where
    l_shipdate <= date '1998-12-01' - interval '90' day
group by
    l_returnflag,
    l_linestatus
order by
    l_returnflag,
    l_linestatus"""

Q6 = """select
    sum(l_extendedprice * l_discount) as revenue
from
    lineitem
where
    l_shipdate >= date '1994-01-01'
    and l_shipdate < date '1994-01-01' + interval '1' year
    and l_discount between 0.06 - 0.01 and 0.06 + 0.01
    and l_quantity < 24"""

# The same queries as Spark SQL over views of the raw Parquet files (the baseline).
SPARK_Q1 = Q1.replace("date '1998-12-01' - interval '90' day", "date_sub(date '1998-12-01', 90)")
SPARK_Q6 = Q6.replace("date '1994-01-01' + interval '1' year", "add_months(date '1994-01-01', 12)")


def catalog():
    """An in-memory catalog snapshot holding the eight TPC-H tables (ids ``u1`` ..
    ``u8``, shards ``s1`` .. ``s8``, in ``TABLES``' order), for planning their queries
    without a server (unit tests, ``bench/ivm_columns.py``)."""
    import pglast

    from catalog.durable import CatalogStore
    from catalog.snapshot import Table
    from planner.ddl import plan_columns

    tables = {}
    for i, t in enumerate(TABLES):
        cols = plan_columns(pglast.parse_sql(f"CREATE TABLE {t} ({DDL[t]})")[0].stmt)
        tables[f"u{i + 1}"] = Table(f"u{i + 1}", "public", t, cols, f"s{i + 1}")
    return CatalogStore(":memory:").load().with_changes(tables=tables)


def generate(scale: float, root: Path, echo: Callable[[str], None] = print) -> Path:
    """Parquet files for every table at ``scale`` under ``root/sf<scale>`` (reused if there)."""
    d = Path(root) / f"sf{scale:g}"
    if all((d / f"{t}.parquet").exists() for t in TABLES):
        echo(f"using TPC-H scale {scale:g} data in {d}")
        return d
    d.mkdir(parents=True, exist_ok=True)
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    echo(f"generating TPC-H scale {scale:g} data in {d} ...")
    subprocess.run([exe, "parquet", "-s", f"{scale:g}", "--output-dir", str(d)], check=True)
    return d


def load(url: str, data_dir: Path, echo: Callable[[str], None] = print, conn=None) -> None:
    """Create the TPC-H tables (dropping old ones) and COPY each from its Parquet file."""
    import time

    import psycopg

    own = conn is None
    if own:
        conn = psycopg.connect(url, autocommit=True)
    try:
        for t in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {t}")
            conn.execute(f"CREATE TABLE {t} ({DDL[t]})")
            start = time.perf_counter()
            cur = conn.execute(f"COPY {t} FROM '{(Path(data_dir) / f'{t}.parquet').resolve()}' (FORMAT PARQUET)")
            echo(f"  {t:<9} {cur.rowcount:>10,} rows in {time.perf_counter() - start:.1f}s")
    finally:
        if own:
            conn.close()


#: ../shared/tpch/TIMES.md: the keys and indexes PostgreSQL's reference times were taken with
PG_KEYS = {
    "region": ["r_regionkey"], "nation": ["n_nationkey"], "part": ["p_partkey"], "supplier": ["s_suppkey"],
    "partsupp": ["ps_partkey", "ps_suppkey"], "customer": ["c_custkey"], "orders": ["o_orderkey"],
    "lineitem": ["l_orderkey", "l_linenumber"],
}
PG_INDEXES = [("lineitem", "l_orderkey"), ("lineitem", "l_partkey, l_suppkey"), ("lineitem", "l_suppkey"),
              ("partsupp", "ps_suppkey"), ("orders", "o_custkey"), ("supplier", "s_nationkey"),
              ("customer", "c_nationkey"), ("nation", "n_regionkey")]


def _csv_batches(path: Path):
    """``path``'s rows as CSV text in 200,000-row batches (string_view read as string)."""
    import io

    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(200_000):
        schema = pa.schema([f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f
                            for f in batch.schema])
        buf = io.BytesIO()
        pacsv.write_csv(batch.cast(schema), buf, pacsv.WriteOptions(include_header=False))
        yield buf.getvalue()


def load_postgres(conn, data_dir: Path) -> None:
    """Load the Parquet files of ``data_dir`` (``generate``'s) into PostgreSQL through
    ``conn`` (a psycopg connection in autocommit, to an empty database) as
    ../shared/tpch/TIMES.md describes: the tables of ``DDL``, COPY in CSV, the primary keys
    ``PG_KEYS`` and indexes ``PG_INDEXES``, then ``VACUUM ANALYZE``. Raises psycopg.Error
    when PostgreSQL refuses a step (a table already there, say)."""
    for name in TABLES:
        conn.execute(f"CREATE TABLE {name} ({DDL[name]})")
        with conn.cursor().copy(f"COPY {name} FROM STDIN (FORMAT csv)") as cp:
            for chunk in _csv_batches(Path(data_dir) / f"{name}.parquet"):
                cp.write(chunk)
        conn.execute(f"ALTER TABLE {name} ADD PRIMARY KEY ({', '.join(PG_KEYS[name])})")
    for name, cols in PG_INDEXES:
        conn.execute(f"CREATE INDEX ON {name} ({cols})")
    conn.execute("VACUUM ANALYZE")
