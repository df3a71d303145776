"""The scan section's baseline: plain pyspark (no sqlfront, no Spark Connect) over one Parquet file.

Runs ``SELECT count(*), sum(l_quantity), sum(l_extendedprice)`` over ``PATH`` with the
master given (``local[1]``, ``local[2]``, ``local-cluster[2,1,1024]``) and prints one line
``<master> <median seconds> <min seconds>``: what Spark itself does on this machine, the
ceiling of a replica of that shape.

Each run builds a *fresh* DataFrame: collecting the same DataFrame again reuses its
finished shuffle stage (adaptive execution keeps the materialized query stages), so only
the final aggregation would run (65 ms instead of 750 ms at TPC-H scale 1).

    .venv/bin/python bench/spark_ceiling.py PATH MASTER [--runs 7] [--warmup 3]
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("master")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    from pyspark.sql import SparkSession, functions as F

    spark = (SparkSession.builder.master(args.master).config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    def scan():
        spark.read.parquet(args.path).agg(F.count(F.lit(1)), F.sum("l_quantity"), F.sum("l_extendedprice")).collect()

    try:
        for _ in range(args.warmup):
            scan()
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            scan()
            times.append(time.perf_counter() - t)
        print(f"{args.master} {statistics.median(times):.4f} {min(times):.4f}", flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
