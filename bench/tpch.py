"""TPC-H Q1 and Q6: our time through the wire vs. plain Spark SQL on the same Parquet files.

Starts a server on a temporary data directory with one replica of ``--size`` (default 2),
loads TPC-H at ``--scale`` (default 1), then times each query ``--runs`` times through
psycopg and through psql, and the same query as Spark SQL over temp views of the raw
Parquet files in one Spark Connect session on the same replica. Prints medians and ratios.

    .venv/bin/python bench/tpch.py [--scale 1] [--runs 5] [--size 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from server import Server  # noqa: E402
from spark_exec.replica import connect_session  # noqa: E402
from sqlfront import tpch  # noqa: E402


def timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", default="2")
    ap.add_argument("--data", default=str(ROOT / "tpch-data"))
    args = ap.parse_args()

    data = tpch.generate(args.scale, Path(args.data))
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp) / "mzdata", "--bootstrap-replica-size", args.size,
                     "--copy-from-dir", str(data.resolve())).start()
        try:
            t = time.perf_counter()
            tpch.load(srv.url, data)
            print(f"loaded scale {args.scale:g} in {time.perf_counter() - t:.1f}s")
            spark = connect_session(srv.replica_url("u1"))
            spark.read.parquet(str(data / "lineitem.parquet")).createOrReplaceTempView("lineitem")
            print(f"{'query':<6}{'psycopg s':>11}{'psql s':>9}{'spark s':>9}{'ratio':>8}   (medians of {args.runs})")
            with srv.connect() as conn:
                for name, ours, theirs in (("Q1", tpch.Q1, tpch.SPARK_Q1), ("Q6", tpch.Q6, tpch.SPARK_Q6)):
                    conn.execute(ours).fetchall()  # warm-up: JIT, file cache
                    spark.sql(theirs).collect()
                    ps = statistics.median(timed(lambda: conn.execute(ours).fetchall(), args.runs))
                    psql = statistics.median(timed(lambda: subprocess.run(
                        ["psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(srv.port), "-U", "materialize",
                         "materialize", "-c", ours], check=True, capture_output=True), args.runs))
                    sp = statistics.median(timed(lambda: spark.sql(theirs).collect(), args.runs))
                    print(f"{name:<6}{ps:>11.3f}{psql:>9.3f}{sp:>9.3f}{ps / sp:>8.2f}")
            spark.client.close()
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
