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
median RPCs of the view's narrow rounds and the median seconds spent in them; over the
measured writes, per narrow round: environmentd's and the replicas' CPU seconds and the
classes the replicas' Janino compiled (``Cpu``); and the median of the replicas' CPU
seconds from each write to its change's arrival, per kind (``rep cpu i/u/d``: an INSERT
of a row is inline in persist, so its figure is the view's round alone; an UPDATE's
and a DELETE's include the statement's own Spark job). ``jobs i/u/d``: likewise the median
number of Spark jobs the replicas ran (their Spark UI's REST API).

    .venv/bin/python bench/ivm_round.py [--writes 8] [--warmup 2] [--views v_sum,v_join,v_max]

With ``--index-peeks N``, instead: each view is an (unmaterialized) view with an index
(its dataflow keeps its contents in the replica's memory: issue 25), and the bench times
N peeks of ``SELECT * FROM view`` (read from the index's arrangement) interleaved with N
of the same query written out (``SELECT * FROM (query) q``: names no view, so it runs the
query over the tables, as every peek of the view did before), on the same cluster: first
with no write between them, then each right after a 1-row INSERT (the peek of the view
then waits for the index's round); prints the medians (ms) and their ratio (rerun /
index: above 1, the index is faster), and how many of the view's peeks the server
counted as arrangement reads (``index_peeks_total``). With no write, also the ratios
(rerun / index) of a peek of a view over the view (``over``: it reads the index too) and
of a peek ``AS OF`` a timestamp a transaction block holds (``as of``: against the query
written out, AS OF the same timestamp).

2026-11-26, branch h44f, shared 2-core machine at load 13-30 (other helpers' suites),
``--index-peeks 5 --views v_sum,v_join,v_max`` (quickstart, size 1; 100-row tables)::

    view      after a write: rerun/index ms  ratio  no write: rerun/index ms  ratio  index reads
    v_sum                   2024/17011        0.12           1385/764          1.81      10/10
    v_join                  3333/9575         0.35           2163/318          6.81      10/10
    v_max                   2130/9110         0.23           1405/309          4.55      10/10

2026-11-27, branch h45e, same machine at load ~13, ``--index-peeks 3`` (the two last
columns: a view over the view, and AS OF a held timestamp, rerun / index, no write)::

    view      after a write: rerun/index ms  ratio  no write: rerun/index ms  ratio  index reads    over   as of
    v_sum                    580/5734         0.10            283/213          1.33      12/12    1.48    1.67
    v_join                  1821/3356         0.54            838/194          4.32      12/12    3.21    3.62
    v_max                   1400/5551         0.25            625/104          6.00      12/12    2.59    4.15

With no write, a peek of the indexed view reads its kept contents: 1.8-6.8x faster than
running the query (a join more than a scan of one table). Right after a write, the peek
waits for the index's round for that write (the dataflow's narrow round, 2-14 s each at
this load, as a materialized view's: ``--views`` without ``--index-peeks``), which on
100-row tables costs more than running the query: the round's fixed cost (Spark planning
and jobs) is what issue 25's incremental work still has to bring down.

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

Janino compiled 10-15 classes per narrow round (the replica's CodeGenerator debug log):
an arrangement is read as a union of its batches (``dataflow.Spine``), one more each
round until they are merged, and Spark 4.3 fuses a union into one codegen stage with a
method per child, so the code, and the number of every stage after it, changed every
round; Spark's cache of compiled classes is keyed by the code. The dataflows' session
now leaves unions unfused and stage numbers out of class names
(``replica.ReplicaHandle.DATAFLOW_CONF``): each batch's stage has the same code in every
round, and a steady round compiles nothing. Before (e640e11, A) and after (9b8e4cf, B),
interleaved A B A B on the same machine, load 15-25 on 2 cores (other helpers' suites),
``--writes 4 --warmup 2``; per view the two runs of each side::

    view    side  insert med/p99 ms  update med/p99 ms  delete med/p99 ms  RPCs  rep cpu/round  janino/round  rep cpu i/u/d
    v_sum   A1        6781/9374          7679/10336         5378/13057        4       2.12          11.1      1.56/2.09/2.12
    v_sum   B1        4451/4725          4277/7360          4605/6086         4       1.73           3.4      1.22/1.63/1.86
    v_sum   A2        6320/7500          6274/10757         5983/9758         4       2.26           9.8      1.80/2.12/2.68
    v_sum   B2        2843/5199          2737/4041          2101/5608         4       1.64           3.3      1.11/1.59/1.69
    v_join  A1        4045/5410          4321/8648          4212/6362         4       1.82          14.2      1.39/1.81/1.93
    v_join  B1        4329/4778          4155/7145          3489/10983        4       1.61           3.8      1.16/1.52/1.55
    v_join  A2        5659/7838          5390/9126          5824/15956        4       2.25          14.5      1.69/1.94/2.40
    v_join  B2        1759/2023          2181/2565          1858/3653         4       1.44           4.0      0.97/1.43/1.61

Replica CPU per narrow round B/A: v_sum 0.77, v_join 0.75; per INSERT's round alone
0.69 and 0.69. The compiles left (3-4 per round) are the UPDATE and DELETE statements'
own (their ``WHERE w = <literal>`` is compiled into their code, on the peek session);
the dataflow's rounds compile none but now and then a round whose plan is new (seen
once in 9 rounds of a debug run, a spine's merge likely). Latencies follow the load of the moment (B2 ran as it fell from 25 to 15).

2026-11-27, branch h46e: where a narrow round of ``v_sum`` goes (1-row INSERT, the replica's
Spark UI timeline, load 12-17). Write acknowledged at 0; the round starts at once (the
maintainer wakes on persist's push: no poll or debounce shows), environmentd's own CPU is
0.1 s per round; everything else is two ExecutePlans on the replica::

    0.00-1.08  ExecutePlan 1 arrives, is read and analysed (before its SQL execution starts)
    1.08-2.42  SQL 1: the state's new batch checkpointed: 2 jobs (the touched groups'
               broadcast, the checkpoint), 0.7 s of planning before the first
    2.42-3.50  ExecutePlan 2 (the view's change) read and analysed
    3.50-4.39  SQL 2: the change collected: 2 jobs (the time row's broadcast, the collect)

The jobs themselves run 30-230 ms each; the rest is Spark planning. A JFR of the replica
over such rounds (samples of its Connect, broadcast, task and scheduler threads): analysis
25%, whole-stage codegen (generating and formatting code whose class is cached) 19%,
scheduling and tasks 14%, ClosureCleaner 9%, Connect's proto-to-plan 7%, optimizer 7%,
physical planning 5%, other 12%. Changed: the time row joins a narrow change unbroadcast
(one job fewer per narrow round), adaptive execution off for the dataflows' session, and
dataflow.py's plans without withColumn/withColumnRenamed (each makes Spark Connect analyse
its input eagerly). Jobs per round (``jobs i/u/d``) before (A, 9f12e90) and after the first
two of those (B: the selects came after this run), ``--writes 4 --views v_sum,v_join``::

    view    side  insert med/p99 ms  update med/p99 ms  delete med/p99 ms  RPCs  rep cpu i/u/d   jobs i/u/d  load
    v_sum   A         2313/2431          2223/3330          2436/3497          4   1.09/1.47/1.62      4/5/6  8-19
    v_sum   B         3919/4628          4607/5912          2767/7407          4   1.23/1.81/1.78      3/4/5  19-22
    v_join  A         3084/3808          2786/7344          2864/5521          4   1.03/1.43/1.47      6/7/8  8-19
    v_join  B         3337/4431          3834/4575          2969/5325          4   0.91/1.38/1.44      5/6/7  19-22

(B's latencies ran at twice A's load; the replica's CPU per round is the fairer figure,
and it moved within noise: the round's cost is the planning of its two plans, which one
job fewer barely touches. Fusing the two ExecutePlans into one, for a GROUP BY at the
root, is what is left to try: see ``Dataflow._d_Accumulate``.)

2026-11-27, branch h47b (not merged: no measurable gain, and its kept batches are subplans that grow a round's plan until a merge): one Spark plan per narrow round of a GROUP BY over one table's
inline change (``v_sum``): the accumulation keeps its change's sums (rows inside the plan)
as its new batch instead of checkpointing its totals, so the only plan is the collect of
the view's change (ExecutePlans per round 2 -> 1, jobs i/u/d 4/5/6 -> 3/4/5). ``v_join``'s
accumulation reads a join's change (not rows inside the plan): still 2 plans. Alternating
A (bcb12c9) and B, ``--writes 4 --views v_sum``, load 10-19 on 2 cores; round s: the
median of the 18 narrow rounds of the server log; rep cpu: per round::

    side  load   insert med ms  round s  rep cpu  rep cpu i/u/d   jobs i/u/d
    A     10-16      2162        2.36     2.33   1.44/2.24/2.32    4/5/6
    B     16-17      2887        3.84     2.25   1.40/2.17/1.91    3/4/5
    A     17-19      3197        3.09     2.07   1.47/1.92/1.65    4/5/6
    B     19-12      1943        1.69     2.01   1.38/1.55/1.77    3/4/5

The replica's CPU per round moved 3% (B/A 0.97); latencies follow the load of the moment.
A plan fewer did not halve the round: the one plan left has the aggregation, the touched
groups' broadcast and the change's consolidation, each a job or stage of its own, and
Spark's cost is per job and node as much as per plan. Tried and left out (same runs'
machine): the totals collected to environmentd and kept as a local relation (2 plans
still: the change's collect over the local rows was 0.2-1.6 s, no cheaper than over a
checkpoint); ``spark.sql.codegen.wholeStage=false`` with adaptive execution off for the
dataflows' session (rep cpu per round 2.32 against 2.35, v_join 1.44 against 1.61: noise).
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

from server import Server, free_port, index_peeks

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

    def jobs(self) -> int | None:
        """Spark jobs the replicas ran so far (the Spark UI's REST API: job ids count up
        from 0 in each replica's application); None with the UI off."""
        total = 0
        for pidfile in (self.srv.data_dir / "replicas").glob("*/pid"):
            url = spark_ui_url(pidfile.parent / "replica.log")
            try:
                with urllib.request.urlopen(f"{url}/api/v1/applications", timeout=60) as r:
                    app = json.load(r)[0]["id"]
                with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/jobs", timeout=60) as r:
                    total += 1 + max((j["jobId"] for j in json.load(r)), default=-1)
            except (OSError, ValueError, KeyError, IndexError, TypeError):
                return None
        return total


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
    ap.add_argument("--index-peeks", type=int, default=0,
                    help="time this many peeks of indexed views against re-running their queries instead")
    ap.add_argument("--keep-log", help="copy the server's log here at the end (and each replica's log to PATH.<replica id>)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        metrics = free_port()
        srv = Server(Path(tmp) / "mzdata", "--log-level", "debug",
                     "--metrics-listen", f"127.0.0.1:{metrics}").start()
        try:
            with srv.connect() as c:
                c.execute("CREATE TABLE t1 (k int, v int)")
                c.execute("CREATE TABLE t2 (k int, w int)")
                c.execute("INSERT INTO t1 SELECT g % 10, g FROM generate_series(1, 100) g")
                c.execute("INSERT INTO t2 SELECT g % 10, g FROM generate_series(1, 100) g")
                if args.index_peeks:
                    print(f"{'view':<8}{'after a write: rerun/index ms':>31}{'ratio':>7}"
                          f"{'no write: rerun/index ms':>26}{'ratio':>7}{'index reads':>13}"
                          f"{'over':>8}{'as of':>8}", flush=True)
                    for name in args.views.split(","):
                        print(run_index_peeks(srv, c, name.strip(), args.index_peeks,
                                              f"http://127.0.0.1:{metrics}/metrics"), flush=True)
                    return
                print(f"{'view':<8}" + "".join(f"{k + ' med/p99 ms':>19}" for k in KINDS)
                      + f"{'rounds':>8}{'RPCs':>6}{'RPC s':>7}{'round s':>8}{'env cpu':>8}{'rep cpu':>8}{'janino':>7}{'rep cpu i/u/d':>16}"
                      + f"{'jobs i/u/d':>11}"
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


def run_index_peeks(srv: Server, c, name: str, n: int, metrics_url: str) -> str:
    """Median latencies (ms) of ``n`` peeks of indexed view ``name`` and of ``n`` runs of
    its query, interleaved, after a 1-row write each and with none (``--index-peeks``)."""
    c.execute(f"CREATE VIEW {name} AS {VIEWS[name]}")
    try:
        c.execute(f"CREATE INDEX {name}_idx ON {name} (k)")
        deadline = time.monotonic() + 600
        while not c.execute("SELECT bool_and(h.hydrated) FROM mz_internal.mz_hydration_statuses h JOIN mz_indexes i"
                            " ON i.id = h.object_id WHERE i.name = %s", (f"{name}_idx",)).fetchone()[0]:
            if time.monotonic() > deadline:
                return f"{name:<8} not hydrated in 600 s"
            time.sleep(0.2)
        peek, rerun = f"SELECT * FROM {name}", f"SELECT * FROM ({VIEWS[name]}) q"

        def timed(sql: str, i: int | None) -> float:
            if i is not None:
                c.execute("INSERT INTO t2 VALUES (%s, %s)", (i % 10, 5000 + i))
            t0 = time.perf_counter()
            c.execute(sql).fetchall()
            return time.perf_counter() - t0

        for i in range(2):  # warm both paths (plans compiled, the index's rounds steady)
            timed(peek, i), timed(rerun, None)
        c.execute(f"CREATE VIEW {name}_over AS SELECT * FROM {name}")
        # a block's timestamp holds every shard's since, for the AS OF reads
        holder = srv.connect()
        holder.execute("BEGIN")
        ts = int(holder.execute("SELECT mz_now()").fetchone()[0])
        reads0 = index_peeks(metrics_url).get("arrangement", 0)
        got: dict[tuple[str, bool], list[float]] = {(k, w): [] for k in ("index", "rerun") for w in (True, False)}
        #: no write: a view over the view, and AS OF the held timestamp (each read from the
        #: index) and that query's rerun AS OF it
        more: dict[str, list[float]] = {"over": [], "as of": [], "rerun as of": []}
        # no write: the two interleaved (the index has caught up after the first)
        for i in range(n):
            got[("index", False)].append(timed(peek, None))
            got[("rerun", False)].append(timed(rerun, None))
            more["over"].append(timed(f"SELECT * FROM {name}_over", None))
            more["as of"].append(timed(f"{peek} AS OF {ts}", None))
            more["rerun as of"].append(timed(f"{rerun} AS OF {ts}", None))
        holder.execute("COMMIT")
        holder.close()
        # after a 1-row write each (the index's round for the write goes on either way)
        for i in range(n):
            got[("index", True)].append(timed(peek, 100 + 2 * i))
            got[("rerun", True)].append(timed(rerun, 101 + 2 * i))
        reads = index_peeks(metrics_url).get("arrangement", 0) - reads0
        med = {k: statistics.median(v) * 1000 for k, v in got.items()}
        mm = {k: statistics.median(v) * 1000 for k, v in more.items()}
        return (f"{name:<8}{med[('rerun', True)]:>20.0f}/{med[('index', True)]:<10.0f}"
                f"{med[('rerun', True)] / med[('index', True)]:>7.2f}"
                f"{med[('rerun', False)]:>15.0f}/{med[('index', False)]:<10.0f}"
                f"{med[('rerun', False)] / med[('index', False)]:>7.2f}{reads:>8.0f}/{4 * n}"
                f"{med[('rerun', False)] / mm['over']:>8.2f}{mm['rerun as of'] / mm['as of']:>8.2f}")
    finally:
        c.execute(f"DROP VIEW {name} CASCADE")


def run_view(srv: Server, c, name: str, args) -> str:
    c.execute(f"CREATE MATERIALIZED VIEW {name} AS {VIEWS[name]}")
    try:
        c.execute(f"SELECT * FROM {name}").fetchall()
        sub = Subscribed(srv, name)
        lat: dict[str, list[float | None]] = {k: [] for k in KINDS}
        #: kind -> the replicas' CPU seconds from each write to its change's arrival
        used: dict[str, list[float]] = {k: [] for k in KINDS}
        #: kind -> the replicas' Spark jobs from each write to its change's arrival
        jobs: dict[str, list[int]] = {k: [] for k in KINDS}
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
                    r0, j0 = cpu.replicas(), cpu.jobs()
                    write(c, kind, i)
                    lat[kind].append(sub.change(time.perf_counter(), args.timeout))
                    used[kind].append(cpu.replicas() - r0)
                    j1 = cpu.jobs()
                    if j0 is not None and j1 is not None:
                        jobs[kind].append(j1 - j0)
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
                f"{'/'.join(f'{statistics.median(used[k]):.2f}' for k in KINDS):>16}"
                f"{'/'.join(f'{statistics.median(jobs[k]):.0f}' if jobs[k] else '?' for k in KINDS):>11}  {mid[3]}")
    finally:
        c.execute(f"DROP MATERIALIZED VIEW {name}")


if __name__ == "__main__":
    main()
