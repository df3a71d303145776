"""The small Coordinator, measured (seeds/small-coordinator.md).

1. Throughput: ``--clients`` connections (16) run peeks on a small table on a
   size-"2" replica for ``--seconds`` (60): peeks/s, p50/p99 latency, the main loop's
   busy fraction (coordinator_busy_seconds_total per wall second, from /metrics) and
   environmentd CPU time per peek (from /proc).
2. Fast path: ``SELECT 1`` round trips through psycopg, p50/p99.
3. Isolation: cluster B's p99 while idle, then while cluster A's only replica is frozen
   (SIGSTOP) with 8 clients waiting on it, then while A is saturated by long scans;
   the ratio to idle, and how long DDL on B takes meanwhile.
4. Python-evaluated queries (``--section python``, alone): ``SELECT 1`` p50/p99 on another
   connection while one client runs an oversized constant or catalog query again and
   again (moved to a worker process past ``sqlfront.pyworker.INLINE_HEAP_BYTES``, stopped
   there by ``max_query_heap_size``), next to the idle p50/p99 of the same run
   and to the p50/p99 while a separate process merely spins on a CPU (what CPU contention
   alone costs on this machine), and environmentd's memory growth meanwhile (VmRSS/VmHWM
   from /proc).

    .venv/bin/python bench/coordinator.py [--section all|peeks|python] [--clients 16]
        [--seconds 60] [--iso-seconds 15] [--probes 3000]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import psycopg  # noqa: E402
from server import Server, free_port, wait_for  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def busy_seconds(url: str) -> float:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    m = re.search(r"^coordinator_busy_seconds_total (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(srv, cluster: str, sql: str, clients: int, seconds: float) -> list[float]:
    lat: list[float] = []
    stop = time.monotonic() + seconds

    def client():
        with srv.connect() as c:
            c.execute(f"SET cluster = {cluster}")
            while time.monotonic() < stop:
                t = time.perf_counter()
                c.execute(sql).fetchall()
                lat.append(time.perf_counter() - t)

    ts = [threading.Thread(target=client) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return lat


def vm_mib(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak RSS) of process ``pid``, in MiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(line.split()[1]) / 1024
    return out


def reset_peak_rss(pid: int) -> None:
    """Start VmHWM over from the current RSS (proc(5), /proc/PID/clear_refs "5")."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def probe(c, n: int) -> list[float]:
    """``n`` round trips of ``SELECT 1`` on connection ``c``, in seconds each."""
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        c.execute("SELECT 1").fetchone()
        lat.append(time.perf_counter() - t)
    return lat


#: queries answered in Python that the default max_query_heap_size stops (53200)
OVERSIZED = {
    "generate_series cross join": "SELECT count(*) FROM generate_series(1, 3000) a, generate_series(1, 3000) b",
    "system tables cross join": "SELECT count(*) FROM pg_catalog.pg_attribute a, pg_catalog.pg_attribute b,"
                                " mz_catalog.mz_clusters c",
}


def python_section(srv, probes: int) -> None:
    """Figure 4: other sessions' SELECT 1 while one session runs oversized Python queries."""
    pid = srv.proc.pid
    with srv.connect() as c:
        probe(c, 300)  # warm-up
        idle = probe(c, probes)
        i50, i99 = pct(idle, .5) * 1000, pct(idle, .99) * 1000
        print(f"python-evaluated queries: SELECT 1 idle p50 {i50:.3f} ms   p99 {i99:.3f} ms   "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
        # The floor on this machine: a process that only spins takes a CPU from the server
        # without touching its GIL, memory or sockets.
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.5)
            spun = probe(c, probes)
        finally:
            hog.kill()
            hog.wait()
        print(f"  while another process spins on a CPU: SELECT 1 p50 {pct(spun, .5) * 1000:.3f} ms   "
              f"p99 {pct(spun, .99) * 1000:.3f} ms (ratio {pct(spun, .99) * 1000 / i99:.2f})")
        for name, sql in OVERSIZED.items():
            reset_peak_rss(pid)
            before = vm_mib(pid)
            stop = threading.Event()
            outcomes: dict[str, int] = {}

            def heavy():
                with srv.connect() as h:
                    while not stop.is_set():
                        try:
                            h.execute(sql).fetchall()
                            key = "ok"
                        except psycopg.Error as e:
                            key = e.sqlstate or type(e).__name__
                        outcomes[key] = outcomes.get(key, 0) + 1

            t = threading.Thread(target=heavy)
            t.start()
            time.sleep(0.5)
            busy = probe(c, probes)
            stop.set()
            t.join()
            after = vm_mib(pid)
            b50, b99 = pct(busy, .5) * 1000, pct(busy, .99) * 1000
            print(f"  while another client runs the {name} ({', '.join(f'{k} x{v}' for k, v in outcomes.items())}):")
            print(f"    SELECT 1 p50 {b50:.3f} ms (ratio {b50 / i50:.2f})   p99 {b99:.3f} ms (ratio {b99 / i99:.2f})")
            print(f"    environmentd RSS {before['VmRSS']:.0f} -> {after['VmRSS']:.0f} MiB, peak (VmHWM) "
                  f"{after['VmHWM']:.0f} MiB: grew {after['VmHWM'] - before['VmRSS']:.0f} MiB at most   "
                  f"(load average {os.getloadavg()[0]:.1f})")


def healthy(c, cluster: str) -> bool:
    rows = c.execute("SELECT r.status FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                     " WHERE c.name = %s", (cluster,)).fetchall()
    return bool(rows) and all(r[0] == "healthy" for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--iso-seconds", type=float, default=15)
    ap.add_argument("--section", choices=("all", "peeks", "python"), default="all",
                    help="peeks: figures 1-3; python: figure 4 (no replica work)")
    ap.add_argument("--probes", type=int, default=3000, help="SELECT 1 samples per phase of figure 4")
    args = ap.parse_args()

    mport = free_port()
    murl = f"http://127.0.0.1:{mport}/metrics"
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp) / "mzdata", "--metrics-listen", f"127.0.0.1:{mport}").start()
        try:
            if args.section in ("all", "python"):
                python_section(srv, args.probes)
            if args.section == "python":
                return
            with srv.connect() as c:
                c.execute("CREATE CLUSTER bench REPLICAS (r1 (SIZE '2'))")
                c.execute("CREATE TABLE small (a int, b text)")
                c.execute("INSERT INTO small SELECT * FROM (VALUES " +
                          ",".join(f"({i}, 'v{i % 7}')" for i in range(100)) + ") v")
                assert wait_for(lambda: healthy(c, "bench"), 300)
                load(srv, "bench", "SELECT b, count(*) FROM small GROUP BY b", 4, 3)  # warm-up

                b0, c0, t0 = busy_seconds(murl), cpu_seconds(srv.proc.pid), time.monotonic()
                lat = load(srv, "bench", "SELECT b, count(*) FROM small GROUP BY b", args.clients, args.seconds)
                b1, c1, t1 = busy_seconds(murl), cpu_seconds(srv.proc.pid), time.monotonic()
                print(f"throughput: {args.clients} clients, {t1 - t0:.0f}s on a size-2 replica")
                print(f"  peeks/s {len(lat) / (t1 - t0):.1f}   p50 {pct(lat, .5) * 1000:.1f} ms   "
                      f"p99 {pct(lat, .99) * 1000:.1f} ms")
                print(f"  main loop busy fraction {(b1 - b0) / (t1 - t0):.6f}   "
                      f"environmentd CPU per peek {(c1 - c0) / max(1, len(lat)) * 1000:.2f} ms")

                fast = []
                for _ in range(2000):
                    t = time.perf_counter()
                    c.execute("SELECT 1").fetchone()
                    fast.append(time.perf_counter() - t)
                print(f"fast path SELECT 1 through psycopg: p50 {pct(fast, .5) * 1000:.3f} ms   "
                      f"p99 {pct(fast, .99) * 1000:.3f} ms")

                # -- isolation ---------------------------------------------------------
                c.execute("DROP CLUSTER bench")
                c.execute("CREATE CLUSTER a REPLICAS (r1 (SIZE '1'))")
                c.execute("CREATE CLUSTER b REPLICAS (r1 (SIZE '1'))")
                assert wait_for(lambda: healthy(c, "a") and healthy(c, "b"), 300)
                q = "SELECT b, count(*) FROM small GROUP BY b"
                load(srv, "b", q, 2, 3)
                idle = load(srv, "b", q, 2, args.iso_seconds)
                print(f"isolation: cluster b, 2 clients, p99 idle {pct(idle, .99) * 1000:.1f} ms")

                def ddl_time() -> float:
                    t = time.perf_counter()
                    c.execute("CREATE TABLE ddl_probe (x int)")
                    c.execute("CREATE CLUSTER REPLICA b.extra REMOTE ('sc://127.0.0.1:9')")
                    c.execute("DROP CLUSTER REPLICA b.extra")
                    c.execute("DROP TABLE ddl_probe")
                    return time.perf_counter() - t

                rid = c.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                                " WHERE c.name = 'a'").fetchone()[0]
                pid = int((srv.data_dir / "replicas" / rid / "pid").read_text())
                os.kill(pid, signal.SIGSTOP)
                waiters = [threading.Thread(target=load, args=(srv, "a", q, 1, 1)) for _ in range(8)]
                for w in waiters:
                    w.start()
                time.sleep(1)
                frozen = load(srv, "b", q, 2, args.iso_seconds)
                d = ddl_time()
                print(f"  a frozen, 8 clients waiting: b p99 {pct(frozen, .99) * 1000:.1f} ms "
                      f"(ratio {pct(frozen, .99) / pct(idle, .99):.2f}), DDL on b {d * 1000:.0f} ms")
                os.kill(pid, signal.SIGCONT)
                for w in waiters:
                    w.join()

                c.execute("CREATE TABLE big (a int)")
                c.execute("INSERT INTO big SELECT * FROM (VALUES " + ",".join(f"({i})" for i in range(2000)) + ") v")
                scan = "SELECT count(*) FROM big x, big y WHERE x.a + y.a > 1000"
                sat = [threading.Thread(target=load, args=(srv, "a", scan, 1, args.iso_seconds + 3)) for _ in range(8)]
                for s in sat:
                    s.start()
                time.sleep(2)
                busy = load(srv, "b", q, 2, args.iso_seconds)
                d = ddl_time()
                print(f"  a saturated by 8 scans: b p99 {pct(busy, .99) * 1000:.1f} ms "
                      f"(ratio {pct(busy, .99) / pct(idle, .99):.2f}), DDL on b {d * 1000:.0f} ms")
                for s in sat:
                    s.join()
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
