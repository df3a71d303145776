"""TPC-H: our time through the wire vs. plain Spark SQL on the same Parquet files.

Starts a server on a temporary data directory with one replica of ``--size`` (default 2),
loads TPC-H at ``--scale`` (default 1) with COPY, then runs each of the 22 queries of
``../shared/tpch/queries`` (or ``--queries 2,17``) through psycopg with a statement timeout
of ``--timeout`` seconds, and the same text as Spark SQL over temp views of the raw
Parquet files in one Spark Connect session on the same replica. Each query runs once
untimed (warm: JIT, file cache), then ``--runs`` times; medians are printed with the ratio
ours / Spark's, totals over the queries both finished, and the geometric mean of the ratios.
At scale 1 our answers are also checked against PostgreSQL's (``../shared/tpch/answers``:
numbers within 1e-6 relative, text without trailing blanks): column ``ok``.
With ``--indexes``, a second pass runs the 22 again after ``CREATE DEFAULT INDEX`` on every
table, once the replica holds every part in memory (Materialize's indexes: arrangements).
When Debian's PostgreSQL is installed (``/usr/lib/postgresql``; ``--no-postgres`` skips it), a
last pass loads the same files into a throwaway PostgreSQL cluster with the keys, indexes and
settings of ``../shared/tpch/TIMES.md`` and times the queries there the same way: column ``pg s``
and the ratio ours / PostgreSQL's.

    .venv/bin/python bench/tpch.py [--scale 1] [--size 2] [--runs 1] [--timeout 60] [--indexes] [--no-postgres]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from server import Server  # noqa: E402
sys.path.append(str(ROOT / "bench"))  # last: bench/persist.py must not shadow the persist package
from pgserver import Postgres  # noqa: E402
from spark_exec.replica import connect_session  # noqa: E402
from sqlfront import tpch  # noqa: E402

QUERY_DIR = ROOT.parent / "shared" / "tpch" / "queries"
ANSWER_DIR = ROOT.parent / "shared" / "tpch" / "answers"


def _same_value(ours, text: str) -> bool:
    mine = "" if ours is None else str(ours)
    try:
        a, b = float(mine), float(text)
        return abs(a - b) <= 1e-6 * max(1.0, abs(b))
    except ValueError:
        return mine.rstrip(" ") == text.rstrip(" ")


def matches_answer(q: int, rows: list) -> str:
    """"yes", "NO" or "-" (no answer file): ``rows`` against PostgreSQL's answer to ``q``."""
    path = ANSWER_DIR / f"q{q:02d}.csv"
    if not path.exists():
        return "-"
    expected = [line.split("|") for line in path.read_text().splitlines()[1:] if line]
    ok = len(rows) == len(expected) and all(
        len(r) == len(e) and all(_same_value(a, b) for a, b in zip(r, e)) for r, e in zip(rows, expected))
    return "yes" if ok else "NO"


def timed(fn, runs: int, first: list | None = None) -> float | None:
    """Median seconds of ``runs`` calls of ``fn`` after one untimed call (its result is
    appended to ``first``); None if it fails."""
    try:
        result = fn()
        if first is not None:
            first.append(result)
        out = []
        for _ in range(runs):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
        return statistics.median(out)
    except Exception as e:  # noqa: BLE001 a timeout or an error is a result here
        print(f"    ({type(e).__name__}: {str(e).splitlines()[0][:100]})")
        return None


PG_SETTINGS = {"shared_buffers": "4GB", "work_mem": "512MB", "maintenance_work_mem": "2GB",
               "effective_cache_size": "16GB", "max_parallel_workers_per_gather": "2",
               "max_wal_size": "8GB", "synchronous_commit": "off", "full_page_writes": "off"}


def postgres_times(data: Path, queries: list[int], args) -> dict[int, float | None] | None:
    """Seconds per query on a throwaway PostgreSQL loaded as TIMES.md describes (one untimed
    run first, as ours); None when PostgreSQL is not installed or does not start."""
    try:
        pg = Postgres(PG_SETTINGS).start()
    except Exception as e:  # noqa: BLE001 no usable PostgreSQL is a result here
        print(f"PostgreSQL did not start: {e}")
        return None
    if pg is None:
        print("PostgreSQL is not installed: no PostgreSQL column")
        return None
    try:
        with pg.connect() as conn:
            t = time.perf_counter()
            tpch.load_postgres(conn, data)
            print(f"PostgreSQL {pg.version}: loaded, keyed, indexed and analyzed in {time.perf_counter() - t:.1f}s")
            conn.execute(f"SET statement_timeout = '{int(args.timeout * 1000)}ms'")
            return {q: timed(lambda: conn.execute((QUERY_DIR / f"q{q:02d}.sql").read_text()).fetchall(), args.runs)
                    for q in queries}
    finally:
        pg.stop()


def with_indexes(srv, spark, queries: list[int], args, spark_times: dict) -> None:
    """Default indexes on the eight tables (cluster quickstart), then the queries again once
    the replica's cache holds every part; seconds next to the first pass's Spark times."""
    from catalog.durable import CatalogStore
    from server import wait_for
    from spark_exec.lower import arranged_units, read_parts

    with srv.connect() as conn:
        t = time.perf_counter()
        for name in tpch.TABLES:
            conn.execute(f"CREATE DEFAULT INDEX ON {name}")
        snap = CatalogStore(str(srv.data_dir / "catalog.db")).load()
        units = [(tb, list(unit)) for tb in snap.tables.values()
                 for unit in arranged_units([(p.resolve().as_uri(), pq.ParquetFile(p).metadata.num_rows)
                                             for p in (srv.data_dir / "blob" / tb.shard_id).glob("*.parquet")])]
        cached = lambda: all("InMemoryRelation" in read_parts(spark, tb, u)._explain_string()  # noqa: E731
                             for tb, u in units)
        if not wait_for(cached, 1800, 2.0):
            print("the arrangements were not filled within 30 min")
            return
        print(f"indexes: {len(units)} units of parts in memory after {time.perf_counter() - t:.1f}s")
        conn.execute(f"SET statement_timeout = '{int(args.timeout * 1000)}ms'")
        print(f"{'query':<6}{'idx s':>9}{'spark s':>9}{'ratio':>8}")
        total = spark_total = 0.0
        ratios = []
        for q in queries:
            sql = (QUERY_DIR / f"q{q:02d}.sql").read_text()
            ours = timed(lambda: conn.execute(sql).fetchall(), args.runs)
            theirs = spark_times.get(q)
            ratio = ours / theirs if ours is not None and theirs else None
            print(f"Q{q:<5}{ours if ours is not None else float('nan'):>9.2f}"
                  f"{theirs if theirs is not None else float('nan'):>9.2f}{ratio or float('nan'):>8.2f}", flush=True)
            if ratio is not None:
                total += ours
                spark_total += theirs
                ratios.append(ratio)
        if ratios:
            print(f"{'total':<6}{total:>9.2f}{spark_total:>9.2f}{total / spark_total:>8.2f}   "
                  f"geo-mean ratio {math.exp(sum(math.log(r) for r in ratios) / len(ratios)):.2f}")


def print_next_to_postgres(ours: dict, pg: dict) -> None:
    """Per-query seconds and ratio ours / PostgreSQL's, totals over the queries both finished."""
    print(f"{'query':<6}{'ours s':>9}{'pg s':>9}{'ratio':>8}")
    total = pg_total = 0.0
    for q, theirs in pg.items():
        mine = ours.get(q)
        both = mine is not None and theirs
        print(f"Q{q:<5}{mine if mine is not None else float('nan'):>9.2f}"
              f"{theirs if theirs is not None else float('nan'):>9.2f}"
              f"{mine / theirs if both else float('nan'):>8.2f}", flush=True)
        if both:
            total += mine
            pg_total += theirs
    if pg_total:
        print(f"{'total':<6}{total:>9.2f}{pg_total:>9.2f}{total / pg_total:>8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--size", default="2")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0, help="statement timeout, seconds")
    ap.add_argument("--queries", default=",".join(str(i) for i in range(1, 23)))
    ap.add_argument("--data", default=str(ROOT / "tpch-data"))
    ap.add_argument("--indexes", action="store_true", help="a second pass with default indexes on every table")
    ap.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL pass")
    args = ap.parse_args()
    queries = [int(q) for q in args.queries.split(",")]

    data = tpch.generate(args.scale, Path(args.data))
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp) / "mzdata", "--bootstrap-replica-size", args.size,
                     "--copy-from-dir", str(data.resolve())).start()
        try:
            t = time.perf_counter()
            tpch.load(srv.url, data)
            print(f"loaded scale {args.scale:g} in {time.perf_counter() - t:.1f}s")
            spark = connect_session(srv.replica_url("u1"))
            for name in tpch.TABLES:
                spark.read.parquet(str(data / f"{name}.parquet")).createOrReplaceTempView(name)
            check = args.scale == 1 and ANSWER_DIR.exists()
            print(f"{'query':<6}{'ours s':>9}{'spark s':>9}{'ratio':>8}{'ok':>5}   (medians of {args.runs}, warm)")
            ours_total = spark_total = 0.0
            ratios = []
            spark_times: dict[int, float | None] = {}
            ours_times: dict[int, float | None] = {}
            with srv.connect() as conn:
                conn.execute(f"SET statement_timeout = '{int(args.timeout * 1000)}ms'")
                for q in queries:
                    sql = (QUERY_DIR / f"q{q:02d}.sql").read_text()
                    answer: list = []
                    ours = timed(lambda: conn.execute(sql).fetchall(), args.runs, answer)
                    ok = matches_answer(q, answer[0]) if check and answer else "-"
                    theirs = timed(lambda: spark.sql(sql).collect(), args.runs)
                    show = lambda s: f"{s:>9.2f}" if s is not None else f"{'-':>9}"  # noqa: E731
                    ratio = ours / theirs if ours is not None and theirs else None
                    print(f"Q{q:<5}{show(ours)}{show(theirs)}{f'{ratio:>8.2f}' if ratio else f'{chr(45):>8}'}"
                          f"{ok:>5}", flush=True)
                    spark_times[q] = theirs
                    ours_times[q] = ours
                    if ratio is not None:
                        ours_total += ours
                        spark_total += theirs
                        ratios.append(ratio)
            print(f"{'total':<6}{ours_total:>9.2f}{spark_total:>9.2f}"
                  f"{(ours_total / spark_total if spark_total else 0):>8.2f}   ({len(ratios)} queries both finished)")
            if ratios:
                print(f"geo-mean ratio {math.exp(sum(math.log(r) for r in ratios) / len(ratios)):.2f}")
            if args.indexes:
                with_indexes(srv, spark, queries, args, spark_times)
            spark.client.close()
        finally:
            srv.stop()
    if not args.no_postgres:
        pg_times = postgres_times(data, queries, args)
        if pg_times:
            print_next_to_postgres(ours_times, pg_times)


if __name__ == "__main__":
    main()
