"""persist, measured (issue: persist as Materialize's; seeds/sharded-persist-reads.md).

Every figure comes with a baseline measured in the same run:

1. ``writes``: UPDATE and DELETE of one ``lineitem`` row at TPC-H ``--scale`` (1), end to
   end, and environmentd's memory growth meanwhile (VmRSS, from /proc), next to a SELECT
   of that one row (the read the write must do anyway); then the full-scan latency while a
   retraction is visible and again once compaction has consolidated it.
2. ``scan``: ``lineitem`` scan throughput (rows/s) on replicas of size 1 (one worker),
   2 (two workers) and 2-1 (two processes of one worker), as ratios to size 1, each with
   the replica's fixed cost per query; then plain pyspark's on the same Parquet part with
   ``local[1]``, ``local[2]`` and ``local-cluster[2,1,1024]`` (the machine's ceiling).
3. ``inserts``: single-row INSERT latency p50/p99 from one client, and rows/s from
   ``--clients`` (16) clients (group commit), next to ``SELECT 1`` round trips.
4. ``compaction``: a table of 1,000 single-row parts (compaction off), read latency p50;
   then compaction on, and the same read again. (Small writes are inline parts, kept in
   the shard's state, until the state holds ``persist.write.INLINE_TOTAL_MAX_BYTES`` of
   them; the rest are files in Blob.)

    .venv/bin/python bench/persist.py [--section all|writes|scan|inserts|compaction] [--scale 1]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from server import Server, wait_for  # noqa: E402
from sqlfront import tpch  # noqa: E402


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed(fn, runs: int = 1) -> float:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def load_lineitem(srv: Server, data: Path) -> int:
    with srv.connect() as c:
        c.execute(f"CREATE TABLE lineitem ({tpch.DDL['lineitem']})")
        t = time.perf_counter()
        c.execute(f"COPY lineitem FROM '{(data / 'lineitem.parquet').resolve()}' (FORMAT PARQUET)")
        n = c.execute("SELECT count(*) FROM lineitem").fetchone()[0]
        print(f"loaded lineitem: {n:,} rows in {time.perf_counter() - t:.1f}s")
        return n


def shard_state(srv: Server, table: str):
    """The table's shard state as of Consensus now."""
    from persist import ShardState, SqliteConsensus

    cat = sqlite3.connect(str(srv.data_dir / "catalog.db"))
    shard = cat.execute("SELECT shard_id FROM tables WHERE name = ?", (table,)).fetchone()[0]
    cat.close()
    c = SqliteConsensus(str(srv.data_dir / "consensus.db"))
    try:
        return ShardState.decode(c.head(shard)[1])
    finally:
        c.close()


def shard_parts(srv: Server, table: str) -> int:
    """How many parts the table has; negative while some hold retractions."""
    st = shard_state(srv, table)
    return len(st.parts) if not any(p.retractions for p in st.parts) else -len(st.parts)


def section_writes(srv: Server) -> None:
    print("\n== UPDATE / DELETE of one lineitem row")
    key = "l_orderkey = 1 AND l_linenumber = 1"
    scan = "SELECT count(*), sum(l_quantity) FROM lineitem"
    with srv.connect() as c:
        c.execute("SET statement_timeout = '600s'")
        base = timed(lambda: c.execute(f"SELECT * FROM lineitem WHERE {key}").fetchall(), 3)
        full = timed(lambda: c.execute(scan).fetchall(), 3)
        before = {p.key for p in shard_state(srv, "lineitem").parts}
        for verb, sql in (("UPDATE", "UPDATE lineitem SET l_comment = 'bench' WHERE l_orderkey = {k} AND l_linenumber = 1"),
                          ("DELETE", "DELETE FROM lineitem WHERE l_orderkey = {k} AND l_linenumber = 2")):
            r0 = rss_mib(srv.proc.pid)
            ts = [timed(lambda: c.execute(sql.format(k=k))) for k in range(1, 6)]
            grew = rss_mib(srv.proc.pid) - r0
            t = statistics.median(ts)
            print(f"{verb} 1 row: {t:.2f}s end to end, median of 5 rows (first {ts[0]:.2f}s; {t / base:.1f}x the "
                  f"SELECT of one row, {base:.2f}s); server memory +{grew:.1f} MiB over the 5")
        during = timed(lambda: c.execute(scan).fetchall(), 3)
        # Ten more single-row UPDATEs, then time for background compaction to act.
        r0 = rss_mib(srv.proc.pid)
        t = time.perf_counter()
        for k in range(6, 16):
            c.execute(f"UPDATE lineitem SET l_comment = 'bench' WHERE l_orderkey = {k} AND l_linenumber = 1")
        each = (time.perf_counter() - t) / 10
        time.sleep(10)
        st = shard_state(srv, "lineitem")
        after = timed(lambda: c.execute(scan).fetchall(), 3)
        grew = rss_mib(srv.proc.pid) - r0
        kept = before & {p.key for p in st.parts}
        changes = sum(p.updates for p in st.parts if p.key not in before)
        print(f"10 more single-row UPDATEs: {each:.2f}s each; server memory +{grew:.1f} MiB; then {len(st.parts)} "
              f"part(s): {'the loaded part untouched' if kept == before else 'the loaded part was rewritten'}, "
              f"{changes} update(s) of changes beside it")
        print(f"full scan: {full:.2f}s before; {during:.2f}s with 10 rows changed ({during / full:.2f}x); "
              f"{after:.2f}s with 20 rows changed ({after / full:.2f}x)")


#: the scan section's query, and its warm-up and timed runs per size: a new replica's JVM
#: compiles the scan's hot loop during its first queries (the first scans are up to 2x
#: slower), and two developers' jobs on a 2-core machine make single runs noisy
SCAN_QUERY = "SELECT count(*), sum(l_quantity), sum(l_extendedprice) FROM lineitem"
SCAN_WARMUP, SCAN_RUNS = 4, 7
#: plain pyspark masters of the ceiling baseline, by the replica size they model
CEILING_MASTERS = {"1": "local[1]", "2": "local[2]", "2-1": "local-cluster[2,1,1024]"}


def section_scan(srv: Server, rows: int, warmup: int = SCAN_WARMUP) -> None:
    """Scan throughput per replica size, each next to its fixed cost per query (a count of a
    one-row table on the same replica: planning, Spark Connect, job scheduling, result) and
    to plain pyspark's time on the same Parquet part (``bench/spark_ceiling.py``): what
    Spark itself gets out of this machine's cores."""
    print(f"\n== lineitem scan throughput by replica size ({warmup} warm-up scans, median of {SCAN_RUNS})")
    base = None
    with srv.connect() as c:
        c.execute("SET statement_timeout = '600s'")
        c.execute("CREATE TABLE one_row (i int)")
        c.execute("INSERT INTO one_row VALUES (1)")
        for size in ("1", "2", "2-1"):
            name = "scan_" + size.replace("-", "_")
            c.execute(f"CREATE CLUSTER {name} REPLICAS (r1 (SIZE '{size}'))")
            c.execute(f"SET cluster = {name}")
            wait_for(lambda: c.execute("SELECT 1 FROM lineitem LIMIT 1").fetchall(), timeout=300)
            for _ in range(warmup):
                c.execute(SCAN_QUERY).fetchall()
            fixed = timed(lambda: c.execute("SELECT count(*) FROM one_row").fetchall(), SCAN_RUNS)
            t = timed(lambda: c.execute(SCAN_QUERY).fetchall(), SCAN_RUNS)
            base = base or t
            print(f"size {size:<4}: {rows / t:>12,.0f} rows/s ({t:.2f}s median of {SCAN_RUNS}; "
                  f"{base / t:.2f}x size 1); fixed cost per query {fixed * 1000:.0f} ms", flush=True)
            c.execute("SET cluster = quickstart")
            c.execute(f"DROP CLUSTER {name} CASCADE")
    scan_ceiling(srv, warmup)


def scan_ceiling(srv: Server, warmup: int = SCAN_WARMUP) -> None:
    """Plain pyspark over lineitem's biggest part, one subprocess per master, while
    environmentd and its quickstart replica idle as they did above."""
    st = shard_state(srv, "lineitem")
    part = max((p for p in st.parts if p.inline is None), key=lambda p: p.updates)
    path = srv.data_dir / "blob" / part.key
    print(f"plain pyspark over the same part ({part.updates:,} rows), fresh DataFrame per run:")
    base = None
    for size, master in CEILING_MASTERS.items():
        out = subprocess.run([sys.executable, str(ROOT / "bench" / "spark_ceiling.py"), str(path), master,
                              "--runs", str(SCAN_RUNS), "--warmup", str(warmup)],
                             capture_output=True, text=True, timeout=600)
        line = out.stdout.strip().splitlines()[-1:] or [""]
        if out.returncode != 0 or not line[0]:
            print(f"  {master}: failed ({out.stderr.strip()[-300:]})")
            continue
        t = float(line[0].split()[1])
        base = base or t
        print(f"  {master:<24} (size {size:<3}): {part.updates / t:>12,.0f} rows/s ({t:.2f}s; {base / t:.2f}x local[1])")


def section_inserts(srv: Server, clients: int, seconds: float) -> None:
    print("\n== single-row INSERT")
    with srv.connect() as c:
        c.execute("CREATE TABLE ins (client int, i int)")
        ping = []
        for _ in range(200):
            t = time.perf_counter()
            c.execute("SELECT 1").fetchall()
            ping.append(time.perf_counter() - t)
        lat = []
        for i in range(200):
            t = time.perf_counter()
            c.execute("INSERT INTO ins VALUES (0, %s)", (i,))
            lat.append(time.perf_counter() - t)
    print(f"one client: p50 {pct(lat, .5) * 1000:.1f} ms, p99 {pct(lat, .99) * 1000:.1f} ms "
          f"(SELECT 1: p50 {pct(ping, .5) * 1000:.2f} ms; {pct(lat, .5) / pct(ping, .5):.0f}x)")
    counts = [0] * clients
    lats: list[list[float]] = [[] for _ in range(clients)]
    stop = threading.Event()

    def run(k):
        with srv.connect() as c:
            while not stop.is_set():
                t = time.perf_counter()
                c.execute("INSERT INTO ins VALUES (%s, %s)", (k + 1, counts[k]))
                lats[k].append(time.perf_counter() - t)
                counts[k] += 1

    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    el = time.perf_counter() - t0
    every = [x for xs in lats for x in xs]
    print(f"{clients} clients: {sum(counts) / el:,.0f} rows/s over {el:.0f}s "
          f"({sum(counts) / el * pct(lat, .5):.1f}x one client's rate); latency p50 {pct(every, .5) * 1000:.1f} ms, "
          f"p99 {pct(every, .99) * 1000:.1f} ms")


def section_compaction(tmp: Path) -> None:
    print("\n== read latency of a shard of 1,000 small parts, before and after compaction")
    (tmp / "compaction").mkdir()
    d = tmp / "compaction" / "mzdata"
    srv = Server(d, "--no-persist-compaction").start()
    q = "SELECT count(*) FROM small"
    try:
        with srv.connect() as c:
            c.execute("CREATE TABLE small (i int)")
        counter = iter(range(1000))
        lock = threading.Lock()

        def run():
            with srv.connect() as c:
                while True:
                    with lock:
                        i = next(counter, None)
                    if i is None:
                        return
                    c.execute("INSERT INTO small VALUES (%s)", (i,))

        threads = [threading.Thread(target=run) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        parts = shard_parts(srv, "small")
        with srv.connect() as c:
            c.execute(q).fetchall()
            before = timed(lambda: c.execute(q).fetchall(), 5)
    finally:
        srv.stop()
    srv = Server(d).start()
    try:
        with srv.connect() as c:
            c.execute("INSERT INTO small VALUES (1000)")
            wait_for(lambda: 0 < shard_parts(srv, "small") <= 16, timeout=600, interval=1)
            after_parts = shard_parts(srv, "small")
            c.execute(q).fetchall()
            after = timed(lambda: c.execute(q).fetchall(), 5)
    finally:
        srv.stop()
    print(f"{parts} parts: {before * 1000:.0f} ms; compacted to {after_parts} part(s): {after * 1000:.0f} ms "
          f"({before / after:.1f}x faster)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--section", default="all", choices=["all", "writes", "scan", "inserts", "compaction"])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--data", default=str(ROOT / "tpch-data"))
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--scan-warmup", type=int, default=SCAN_WARMUP,
                    help="warm-up scans per replica size (and per plain pyspark master) before the timed runs")
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.section in ("all", "writes", "scan"):
            data = tpch.generate(args.scale, Path(args.data))
            srv = Server(tmp / "mzdata", "--bootstrap-replica-size", "2", "--copy-from-dir", str(data.resolve())).start()
            try:
                rows = load_lineitem(srv, data)
                if args.section in ("all", "scan"):
                    section_scan(srv, rows, args.scan_warmup)
                if args.section in ("all", "writes"):
                    section_writes(srv)
            finally:
                srv.stop()
        if args.section in ("all", "inserts"):
            (tmp / "ins").mkdir()
            srv = Server(tmp / "ins" / "mzdata").start()
            try:
                section_inserts(srv, args.clients, args.seconds)
            finally:
                srv.stop()
        if args.section in ("all", "compaction"):
            section_compaction(tmp)


if __name__ == "__main__":
    main()
