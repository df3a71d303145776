"""Scale-out: TPC-H on a ``local[2]`` replica vs. one on a Spark standalone cluster of two
1-core workers on this machine (issue 27): the cost of going distributed, and the scan
throughput per worker.

Starts a standalone cluster (``spark_exec.standalone.up``: a master and two workers of one
core and ``--executor-memory`` each, in a temporary directory) and one server with two
clusters: ``quickstart`` (size ``2``: ``local[2]``, driver and both task slots in one JVM) and
``dist`` (a size naming the master: the driver here, one 1-core executor on each worker).
Loads TPC-H at ``--scale`` (default 0.1) with COPY, then runs each of the 22 queries of
``../shared/tpch/queries`` (or ``--queries 1,6``) on both clusters, one untimed run then
``--runs`` timed ones (bench/tpch.py's ``timed``: medians), and prints the seconds, the ratio
dist / local (what going distributed costs: tasks launched in other JVMs, shuffles through
the block manager over TCP instead of in one heap) and whether both clusters answered the
same rows (``same``; at scale 1 also ``ok``: the dist answer against PostgreSQL's, as
bench/tpch.py checks). Totals over the queries both finished and the geometric mean of
the ratios follow.

Last, a scan of lineitem (sums over three columns: every row read, one row out) on each
cluster: wall-clock rows/s, and per executor, from the tasks of the timed runs in the
replica's Spark UI REST API (``/api/v1/applications/<app>/stages/<id>/<attempt>/taskList``),
the rows it read (Spark's input metrics), its task run seconds, and rows read per task
second: the scan throughput of one worker. (Spark's input bytes are left out: for local
Parquet files it counts a fraction of the pages read.)

    .venv/bin/python bench/scaleout.py [--scale 0.1] [--runs 1] [--timeout 120] [--executor-memory 1g] [--data DIR]

Measured on this 2-core machine, shared with other sessions (docs/scale.md has the rest):

    --scale 0.1   local 159.0 s, dist 152.7 s: ratio 0.96, geo-mean 0.97; 22/22 same
    --scale 1     local 417.8 s, dist 330.4 s: ratio 0.79, geo-mean 0.87; 22/22 same, 22/22 ok
                  (--timeout 600; load average 4 to 46; RPC authenticated, not yet encrypted)
                  scan of lineitem, 6.0 M rows: local 0.98 M rows/s wall, 0.53 M per task s;
                  dist 1.80 M rows/s wall, 1.71 M and 1.33 M per task s (one per worker)
    --scale 1 --queries 1,9,18,21, RPC encrypted (spark.network.crypto.enabled):
                  local 164.4 s, dist 123.8 s: ratio 0.75 (unencrypted, the run above:
                  164.7 s and 97.0 s, ratio 0.59); 4/4 same, 4/4 ok
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from server import Server, free_port, wait_for

from bench.tpch import ANSWER_DIR, QUERY_DIR, matches_answer, timed
from spark_exec import standalone
from spark_exec.orchestrator import spark_ui_url
from sqlfront import tpch

#: every lineitem row read, one row out: the scan's cost is the scan
SCAN = "SELECT count(*), sum(l_quantity), sum(l_extendedprice), sum(l_discount) FROM lineitem"
CLUSTERS = ("quickstart", "dist")


def same_rows(a: list | None, b: list | None) -> str:
    """"yes" when both clusters answered the same rows (in order, or as a bag: ties of an
    ORDER BY may come out in either order), "NO" otherwise, "-" when one failed."""
    if a is None or b is None:
        return "-"
    return "yes" if a == b or sorted(map(repr, a)) == sorted(map(repr, b)) else "NO"


def _get(url: str):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def last_stage(ui: str) -> int:
    """The highest stage id the replica's one Spark application has seen (-1: none)."""
    app = _get(ui + "/api/v1/applications")[0]["id"]
    return max((s["stageId"] for s in _get(f"{ui}/api/v1/applications/{app}/stages")), default=-1)


def task_totals(ui: str, after_stage: int) -> dict[str, dict[str, float]]:
    """``executor-id host:port`` -> rows read and task run seconds of the tasks of the
    stages after ``after_stage`` (Spark UI REST API: stages, taskList)."""
    app = _get(ui + "/api/v1/applications")[0]["id"]
    base = f"{ui}/api/v1/applications/{app}"
    hosts = {e["id"]: e["hostPort"] for e in _get(base + "/allexecutors")}
    out: dict[str, dict[str, float]] = {}
    for st in _get(base + "/stages"):
        if st["stageId"] <= after_stage:
            continue
        for t in _get(f"{base}/stages/{st['stageId']}/{st['attemptId']}/taskList?length=100000"):
            m = t.get("taskMetrics") or {}
            tot = out.setdefault(f"{t['executorId']} {hosts.get(t['executorId'], '?')}",
                                 {"rows": 0, "run_s": 0.0})
            tot["rows"] += m.get("inputMetrics", {}).get("recordsRead", 0)
            tot["run_s"] += m.get("executorRunTime", 0) / 1e3
    return out


def replica_ui(srv: Server, conn, cluster: str) -> str | None:
    """The Spark UI address of ``cluster``'s one replica, from its log."""
    rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id "
                       "WHERE c.name = %s", (cluster,)).fetchone()[0]
    return spark_ui_url(srv.data_dir / "replicas" / rid / "replica.log")


def run_queries(conns: dict, queries: list[int], args) -> None:
    """Each query on both clusters; prints seconds, ratio, same (and ok at scale 1), totals."""
    check = args.scale == 1 and ANSWER_DIR.exists()
    show = lambda s: f"{s:>9.2f}" if s is not None else f"{'-':>9}"
    print(f"{'query':<6}{'local s':>9}{'dist s':>9}{'ratio':>8}{'same':>6}{'ok':>5}   (medians of {args.runs}, warm)")
    totals = dict.fromkeys(CLUSTERS, 0.0)
    ratios = []
    for q in queries:
        sql = (QUERY_DIR / f"q{q:02d}.sql").read_text()
        secs, answers = {}, {}
        for name in CLUSTERS:
            first: list = []
            secs[name] = timed(lambda c=conns[name], sql=sql: c.execute(sql).fetchall(), args.runs, first)
            answers[name] = first[0] if first else None
        local, dist = secs["quickstart"], secs["dist"]
        ratio = dist / local if local and dist is not None else None
        ok = matches_answer(q, answers["dist"]) if check and answers["dist"] is not None else "-"
        print(f"Q{q:<5}{show(local)}{show(dist)}{f'{ratio:>8.2f}' if ratio else f'{chr(45):>8}'}"
              f"{same_rows(answers['quickstart'], answers['dist']):>6}{ok:>5}", flush=True)
        if ratio is not None:
            totals["quickstart"] += local
            totals["dist"] += dist
            ratios.append(ratio)
    if ratios:
        print(f"{'total':<6}{totals['quickstart']:>9.2f}{totals['dist']:>9.2f}"
              f"{totals['dist'] / totals['quickstart']:>8.2f}   ({len(ratios)} queries both finished)")
        print(f"geo-mean ratio dist / local {math.exp(sum(math.log(r) for r in ratios) / len(ratios)):.2f}")


def scan(conns: dict, uis: dict, rows: int, args) -> None:
    """The lineitem scan on each cluster: wall rows/s, and per executor the rows it read
    per second of task run time (the scan throughput of one worker's core)."""
    print(f"\nscan of lineitem ({rows:,} rows): {SCAN}")
    print(f"{'cluster':<11}{'executor':<26}{'wall s':>8}{'Mrows/s':>9}{'Mrows':>7}{'task s':>8}{'Mrows/task s':>13}")
    for name in CLUSTERS:
        conn = conns[name]
        conn.execute(SCAN).fetchall()  # warm: the tasks below are of timed's runs
        before = last_stage(uis[name]) if uis[name] else None
        wall = timed(lambda c=conn: c.execute(SCAN).fetchall(), args.runs)
        if wall is None:
            continue
        print(f"{name:<11}{'(wall clock, all)':<26}{wall:>8.2f}{rows / wall / 1e6:>9.2f}")
        if before is None:
            continue
        runs = args.runs + 1  # timed's own untimed run, then its timed ones
        for executor, t in sorted(task_totals(uis[name], before).items()):
            if t["run_s"] > 0:
                mrows, run_s = t["rows"] / 1e6 / runs, t["run_s"] / runs
                print(f"{'':<11}{executor:<26}{'':>8}{'':>9}{mrows:>7.2f}{run_s:>8.2f}{mrows / run_s:>13.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0, help="statement timeout, seconds")
    ap.add_argument("--queries", default=",".join(str(i) for i in range(1, 23)))
    ap.add_argument("--executor-memory", default="1g", help="each worker's (and its executor's) memory")
    ap.add_argument("--data", default=str(ROOT / "tpch-data"))
    args = ap.parse_args()
    queries = [int(q) for q in args.queries.split(",")]

    data = tpch.generate(args.scale, Path(args.data))
    with tempfile.TemporaryDirectory() as tmp:
        cluster_dir = Path(tmp) / "spark-cluster"
        t = time.perf_counter()
        master = standalone.up(cluster_dir, "127.0.0.1", free_port(), workers=2, cores=1,
                               memory=args.executor_memory, echo=lambda s: None)
        print(f"standalone cluster {master}: 2 workers of 1 core up in {time.perf_counter() - t:.1f}s")
        try:
            sizes = {"2": {"workers": 2},
                     "sa": {"master": master, "executors": 2, "cores": 1, "memory": args.executor_memory,
                            "secret_file": str(cluster_dir / "secret")}}
            srv = Server(Path(tmp) / "mzdata", "--cluster-replica-sizes", json.dumps(sizes),
                         "--bootstrap-replica-size", "2", "--copy-from-dir", str(data.resolve())).start()
            try:
                with srv.connect() as admin:
                    admin.execute("CREATE CLUSTER dist REPLICAS (r1 (SIZE 'sa'))")
                    if not wait_for(lambda: admin.execute(
                            "SELECT r.status FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id "
                            "WHERE c.name = 'dist'").fetchone() == ("healthy",), 300, 1.0):
                        raise SystemExit("the standalone replica did not get healthy within 300 s")
                    t = time.perf_counter()
                    tpch.load(srv.url, data, echo=lambda s: None, conn=admin)
                    print(f"loaded scale {args.scale:g} in {time.perf_counter() - t:.1f}s")
                    uis = {name: replica_ui(srv, admin, name) for name in CLUSTERS}
                    rows = admin.execute("SELECT count(*) FROM lineitem").fetchone()[0]
                conns = {name: srv.connect() for name in CLUSTERS}
                try:
                    for name, conn in conns.items():
                        conn.execute(f"SET cluster = {name}")
                        conn.execute(f"SET statement_timeout = '{int(args.timeout * 1000)}ms'")
                    run_queries(conns, queries, args)
                    scan(conns, uis, rows, args)
                finally:
                    for conn in conns.values():
                        conn.close()
            finally:
                srv.stop()
        finally:
            standalone.down(cluster_dir)


if __name__ == "__main__":
    main()
