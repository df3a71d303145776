"""Narrow rounds of incremental maintenance (issue 25): what a 1-row write into a small
table costs to reach a SUBSCRIBE of a materialized view over it, and how many Spark
Connect requests the view's round makes.

Starts a server (``--log-level debug``) on a temporary data directory, makes tables
``t1 (k, v)`` and ``t2 (k, w)`` of 100 rows each (10 groups), then for each view of
``--views`` in turn (each alone, dropped before the next): ``--warmup`` unmeasured rounds
of a 1-row INSERT, an UPDATE of that row and its DELETE, then ``--writes`` measured ones,
each timed from the write's acknowledgement to the FETCH of a SUBSCRIBE of the view that
returns its change (``bench/ivm.py``'s ``Subscribed``).

Prints per view and write kind the median and p99 latency (ms) and, from the server's
debug log (``spark_exec.materializations``: one line per round with its RPCs), the
median RPCs of the view's narrow rounds and the median seconds spent in them.

    .venv/bin/python bench/ivm_round.py [--writes 8] [--warmup 2] [--views v_sum,v_join,v_max]

2026-11-26, branch h25, shared 2-core machine under other sessions' tests (load 7-17, so
latencies vary 2x with the load of the moment), ``--writes 4-5 --warmup 2``::

    before (f1d577b), load ~7-10:
    view      insert med/p99 ms  update med/p99 ms  delete med/p99 ms  rounds  RPCs  RPC s round s
    v_sum         1271/1876          1507/2506          1468/2873          15     5   1.43    1.46
    v_join        1860/2639          2263/5030          2351/3555          12     5   2.17    2.19
    after (time relations' schemas as types: one AnalyzePlan fewer), load 10-17:
    v_sum         2249/3510          2376/3519          1501/4638          15     4   2.05    2.06
    v_join        1869/2038          1705/3000          1921/4335          15     4   1.83    1.86

A narrow round is 2 ExecutePlans (the accumulation's checkpoint, the collect of the
view's change) and 2 Config calls (pyspark's createDataFrame reads settings); 99% of
its time is inside the ExecutePlans: the replica spends 1.3-2.2 CPU-seconds per 1-row
round planning (Catalyst) and compiling (Janino) the round's plans (JFR). Fusing the
checkpoint into the collect (one union of the view's change and the new state batch,
the batch then sent back as a local relation) made it 1 ExecutePlan but cost the replica
more CPU per round (1.7-3.0 s against 1.3-1.6 s, same server, alternating): the shared
subplan is analysed, optimised and computed once per branch. Left out.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from server import Server

from bench.ivm import Subscribed, fmt_ms
from spark_exec.orchestrator import group_cpu_seconds, spark_ui_url

#: name -> the view's query; its writes go to t2
VIEWS = {
    "v_sum": "SELECT k, sum(w) AS w, count(*) AS n FROM t2 GROUP BY k",
    "v_join": "SELECT t1.k, sum(t2.w) AS w, count(*) AS n FROM t1 JOIN t2 ON t1.k = t2.k GROUP BY t1.k",
    "v_max": "SELECT k, max(w) AS w FROM t2 GROUP BY k",
    "v_filter": "SELECT k, w FROM t2 WHERE w > 50",
}
KINDS = ("insert", "update", "delete")

#: a round's debug line (``MaterializationMaintainer._compute``)
ROUND = re.compile(r"view (\S+) on replica \S+: (\w+) round ([\d.]+) s, (\d+) RPCs ([\d.]+) s \((.*?)\)")


def rounds(log: Path, view: str, start: int) -> list[tuple[float, int, float, str]]:
    """The narrow rounds of ``view`` logged after byte ``start`` of ``log``: (seconds, RPCs,
    seconds in RPCs, RPCs by method)."""
    with open(log, "rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    return [(float(m[3]), int(m[4]), float(m[5]), m[6]) for m in ROUND.finditer(text)
            if m[1] == view and m[2] == "narrow"]


class Cpu:
    """CPU seconds (user + system) so far of the server process and of its replicas'
    process groups (their pid files), and how many classes the replicas' Janino compiled
    (Spark's ``CodeGenerator.compilationTime`` histogram count, from the Spark UI's
    ``/metrics/json``; None with the UI off)."""

    def __init__(self, srv: Server):
        self.srv = srv

    def replicas(self) -> float:
        """The replicas' CPU seconds so far."""
        return sum(group_cpu_seconds(int(f.read_text().strip()))
                   for f in (self.srv.data_dir / "replicas").glob("*/pid"))

    def sample(self) -> tuple[float, float, int | None]:
        import psutil

        t = psutil.Process(self.srv.proc.pid).cpu_times()
        compiled: int | None = 0
        for pidfile in (self.srv.data_dir / "replicas").glob("*/pid"):
            url = spark_ui_url(pidfile.parent / "replica.log")
            try:
                with urllib.request.urlopen(f"{url}/metrics/json/", timeout=10) as r:
                    hist = json.load(r)["histograms"]
                compiled += sum(v["count"] for k, v in hist.items() if k.endswith("CodeGenerator.compilationTime"))
            except (OSError, ValueError, KeyError):  # the UI off, or not up
                compiled = None
        return t.user + t.system, self.replicas(), compiled


def write(conn, kind: str, i: int) -> None:
    key = 1000 + i
    if kind == "insert":
        conn.execute("INSERT INTO t2 VALUES (%s, %s)", (i % 10, key))
    elif kind == "update":
        conn.execute("UPDATE t2 SET w = w + 1 WHERE w = %s", (key,))
    else:
        conn.execute("DELETE FROM t2 WHERE w = %s", (key + 1,))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=8, help="measured writes of each kind per view")
    ap.add_argument("--warmup", type=int, default=2, help="unmeasured insert/update/delete rounds first")
    ap.add_argument("--views", default=",".join(VIEWS), help=f"some of {','.join(VIEWS)}")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for one change")
    ap.add_argument("--keep-log", help="copy the server's log here at the end (and each replica's log to PATH.<replica id>)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp) / "mzdata", "--log-level", "debug").start()
        try:
            with srv.connect() as c:
                c.execute("CREATE TABLE t1 (k int, v int)")
                c.execute("CREATE TABLE t2 (k int, w int)")
                c.execute("INSERT INTO t1 SELECT g % 10, g FROM generate_series(1, 100) g")
                c.execute("INSERT INTO t2 SELECT g % 10, g FROM generate_series(1, 100) g")
                print(f"{'view':<8}" + "".join(f"{k + ' med/p99 ms':>19}" for k in KINDS)
                      + f"{'rounds':>8}{'RPCs':>6}{'RPC s':>7}{'round s':>8}{'env cpu':>8}{'rep cpu':>8}{'janino':>7}{'rep cpu i/u/d':>16}"
                      + "  RPCs by method (median round)",
                      flush=True)
                for name in args.views.split(","):
                    print(run_view(srv, c, name.strip(), args), flush=True)
        finally:
            srv.stop()
            if args.keep_log:
                shutil.copy(srv.log_path, args.keep_log)
                for rlog in (srv.data_dir / "replicas").glob("*/replica.log"):
                    shutil.copy(rlog, f"{args.keep_log}.{rlog.parent.name}")


def run_view(srv: Server, c, name: str, args) -> str:
    c.execute(f"CREATE MATERIALIZED VIEW {name} AS {VIEWS[name]}")
    try:
        c.execute(f"SELECT * FROM {name}").fetchall()
        sub = Subscribed(srv, name)
        lat: dict[str, list[float | None]] = {k: [] for k in KINDS}
        #: kind -> the replicas' CPU seconds from each write to its change's arrival
        used: dict[str, list[float]] = {k: [] for k in KINDS}
        try:
            for i in range(args.warmup):
                for kind in KINDS:
                    write(c, kind, i)
                    sub.change(time.perf_counter(), args.timeout)
            start = srv.log_path.stat().st_size
            cpu = Cpu(srv)
            before = cpu.sample()
            for i in range(args.warmup, args.warmup + args.writes):
                for kind in KINDS:
                    r0 = cpu.replicas()
                    write(c, kind, i)
                    lat[kind].append(sub.change(time.perf_counter(), args.timeout))
                    used[kind].append(cpu.replicas() - r0)
            after = cpu.sample()
        finally:
            sub.close()
        got = rounds(srv.log_path, name, start)
        line = f"{name:<8}" + "".join(f"{fmt_ms(lat[k]):>19}" for k in KINDS)
        if not got:
            return line + f"{0:>8}"
        mid = sorted(got, key=lambda r: r[1])[len(got) // 2]
        env, rep = ((after[i] - before[i]) / len(got) for i in (0, 1))
        jan = "?" if after[2] is None or before[2] is None else f"{(after[2] - before[2]) / len(got):.1f}"
        return (line + f"{len(got):>8}{statistics.median(r[1] for r in got):>6.0f}"
                f"{statistics.median(r[2] for r in got):>7.2f}{statistics.median(r[0] for r in got):>8.2f}"
                f"{env:>8.2f}{rep:>8.2f}{jan:>7}"
                f"{'/'.join(f'{statistics.median(used[k]):.2f}' for k in KINDS):>16}  {mid[3]}")
    finally:
        c.execute(f"DROP MATERIALIZED VIEW {name}")


if __name__ == "__main__":
    main()
