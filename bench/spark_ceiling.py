"""The scan section's baseline: plain pyspark (no sqlfront, no Spark Connect) over one Parquet file.

Runs ``SELECT count(*), sum(l_quantity), sum(l_extendedprice)`` over ``PATH`` with the
master given (``local[1]``, ``local[2]``, ``local-cluster[2,1,1024]``) and prints, last, one
line ``<master> <median seconds> <min seconds>``: what Spark itself does on this machine,
the ceiling of a replica of that shape.

Each run builds a *fresh* DataFrame: collecting the same DataFrame again reuses its
finished shuffle stage (adaptive execution keeps the materialized query stages), so only
the final aggregation would run (65 ms instead of 750 ms at TPC-H scale 1). The reader is
given the file's schema, as sqlfront's replicas are (``--infer-schema``: Spark infers it
per run, one more job of ~100 ms).

Before the result line it prints where the CPU went during the timed runs: the machine's
(/proc/stat) and the driver JVM's by thread name (/proc/<pid>/task): "Executor task" are the
scan tasks, "C1/C2 CompilerThread" HotSpot's JIT compiling (mostly Spark's driver code,
still after dozens of queries), "Thread" the py4j thread that plans. In ``local[N]`` every
thread is in the driver JVM; ``local-cluster`` executors run in other processes.
``--events DIR`` also writes Spark's event log there and prints each timed run's stages
and tasks (start, end, run, CPU and GC milliseconds, rows read).

    .venv/bin/python bench/spark_ceiling.py PATH MASTER [--runs 7] [--warmup 4]
        [--conf key=value ...] [--java-options '-XX:...'] [--events DIR] [--infer-schema]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import time


def thread_cpu(pid: int) -> dict[str, tuple[str, int]]:
    """tid -> (thread name, user + system clock ticks) of process ``pid``."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            out[tid] = (name, int(fields[11]) + int(fields[12]))
        except OSError:  # the thread ended meanwhile
            pass
    return out


def machine_cpu() -> list[int]:
    return [int(x) for x in open("/proc/stat").readline().split()[1:9]]


def print_cpu(t0, t1, m0, m1, wall: float) -> None:
    tck = os.sysconf("SC_CLK_TCK")
    names = "user nice system idle iowait irq softirq steal".split()
    print("machine CPU s: " + " ".join(f"{n}={(b - a) / tck:.2f}" for n, a, b in zip(names, m0, m1))
          + f" (wall {wall:.2f}s x {os.cpu_count()} cores)")
    by_name: dict[str, float] = {}
    for tid, (name, after) in t1.items():
        before = t0.get(tid, (name, 0))[1]
        key = name.rstrip("0123456789#- ")
        by_name[key] = by_name.get(key, 0.0) + (after - before) / tck
    total = sum(by_name.values())
    print(f"driver JVM CPU s {total:.2f}: " + ", ".join(
        f"{k}={v:.2f}" for k, v in sorted(by_name.items(), key=lambda kv: -kv[1]) if v >= 0.02))


def print_tasks(events_dir: str, marks: list[tuple[float, float]]) -> None:
    log = max(glob.glob(os.path.join(events_dir, "*")), key=os.path.getmtime)
    tasks, submitted = [], {}
    for line in open(log):
        e = json.loads(line)
        if e["Event"] == "SparkListenerTaskEnd":
            ti, tm = e["Task Info"], e.get("Task Metrics") or {}
            tasks.append((e["Stage ID"], ti["Launch Time"], ti["Finish Time"], tm.get("Executor Run Time", 0),
                          tm.get("Executor CPU Time", 0) / 1e6, tm.get("JVM GC Time", 0),
                          (tm.get("Input Metrics") or {}).get("Records Read", 0), ti.get("Executor ID")))
        elif e["Event"] == "SparkListenerStageSubmitted":
            submitted[e["Stage Info"]["Stage ID"]] = e["Stage Info"].get("Submission Time")
    for i, (w0, w1) in enumerate(marks):
        print(f"run {i}: {w1 - w0:.0f} ms")
        run = [t for t in tasks if w0 <= t[1] <= w1]
        for stage in sorted({t[0] for t in run}):
            sub = submitted.get(stage)
            print(f"  stage {stage}: submitted at {sub - w0 if sub else float('nan'):.0f} ms")
            for _, start, end, ran, cpu, gc, rows, ex in (t for t in run if t[0] == stage):
                print(f"    task on {ex}: {start - w0:.0f}..{end - w0:.0f} ms, run {ran} cpu {cpu:.0f} "
                      f"gc {gc} ms, {rows:,} rows")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("master")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark property")
    ap.add_argument("--java-options", default="", help="extra JVM options of the driver (and executors)")
    ap.add_argument("--events", metavar="DIR", help="write Spark's event log to DIR and print each run's tasks")
    ap.add_argument("--infer-schema", action="store_true", help="let Spark infer the file's schema per run")
    args = ap.parse_args()
    from pyspark.sql import SparkSession, functions as F

    builder = (SparkSession.builder.master(args.master).config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "2g"))
    if args.java_options:
        builder = (builder.config("spark.driver.extraJavaOptions", args.java_options)
                   .config("spark.executor.extraJavaOptions", args.java_options))
    if args.events:
        os.makedirs(args.events, exist_ok=True)
        builder = (builder.config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", "file://" + os.path.abspath(args.events))
                   .config("spark.eventLog.compress", "false").config("spark.eventLog.rolling.enabled", "false"))
    for kv in args.conf:
        k, v = kv.split("=", 1)
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    schema = None if args.infer_schema else spark.read.parquet(args.path).schema

    def scan():
        reader = spark.read.schema(schema) if schema is not None else spark.read
        reader.parquet(args.path).agg(F.count(F.lit(1)), F.sum("l_quantity"), F.sum("l_extendedprice")).collect()

    try:
        for _ in range(args.warmup):
            scan()
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        t0, m0 = thread_cpu(pid), machine_cpu()
        times, marks = [], []
        for _ in range(args.runs):
            w0, t = time.time() * 1000, time.perf_counter()
            scan()
            times.append(time.perf_counter() - t)
            marks.append((w0, time.time() * 1000))
        print_cpu(t0, thread_cpu(pid), m0, machine_cpu(), sum(times))
        print("runs s: " + " ".join(f"{x:.3f}" for x in times))
    finally:
        spark.stop()
    if args.events:
        print_tasks(args.events, marks)
    print(f"{args.master} {statistics.median(times):.4f} {min(times):.4f}", flush=True)


if __name__ == "__main__":
    main()
