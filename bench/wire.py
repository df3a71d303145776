"""The wire's own cost: sqlfront next to a real PostgreSQL server (issue: pgwire).

Measures, through psycopg, in text and binary result format:
1. ``SELECT 1`` round trips (sqlfront answers it on the fast path, without Spark): p50/p99.
2. Fetching a 100,000-row result (int4, int8, text, float8, numeric, date columns) from a
   table: median of ``--repeat`` runs. sqlfront's time includes the Spark peek; the
   server-side time of the same statement (its ``server`` phase: parse, plan, peek, result rows) is split
   out so that what remains (encoding, socket, client decoding) is comparable. Results
   stream, so that phase now ends at the first batch: "peek" is the time to first rows.
3. A ``--big-rows`` (10,000,000) row fetch through a psycopg named (server-side) cursor,
   ``FETCH`` by 50,000: rows per second, and the server's peak RSS growth while it runs
   (sqlfront's process; PostgreSQL's backend). Issue 12's target: under 200 MB.

PostgreSQL runs from Debian's packages (``/usr/lib/postgresql/*/bin``) in a temporary
directory on a free loopback port, as the ``postgres`` user when run as root. Without
it, only sqlfront's figures are printed.

4. ``--activity-log-cost``: only the ``SELECT 1`` p50 of two sqlfront servers, one
   recording every statement in ``mz_recent_activity_log`` (the default) and one started
   with ``--no-activity-log``, measured in alternating rounds so that both see the same
   machine load (issue 29's target: at most 1.1x).

    .venv/bin/python bench/wire.py [--iterations 2000] [--rows 100000] [--repeat 3] [--big-rows 10000000]
    .venv/bin/python bench/wire.py --activity-log-cost [--iterations 2000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from server import Server, free_port  # noqa: E402
sys.path.append(str(ROOT / "bench"))  # last: bench/persist.py must not shadow the persist package
from pgserver import Postgres  # noqa: E402

TABLE = "CREATE TABLE wire_rows (a int4, b int8, c text, d float8, e numeric(12,2), f date)"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def select1(conn, n: int, binary: bool) -> list[float]:
    cur = conn.cursor(binary=binary)
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        cur.execute("SELECT 1").fetchall()
        lat.append(time.perf_counter() - t)
    return lat


def fill(conn, rows: int):
    conn.execute("DROP TABLE IF EXISTS wire_rows")
    conn.execute(TABLE)
    with conn.cursor().copy("COPY wire_rows FROM STDIN") as cp:
        for i in range(rows):
            cp.write(f"{i}\t{i * 1000}\trow number {i}\t{i / 7}\t{i}.25\t2024-01-{i % 28 + 1:02d}\n")


def fetch(conn, repeat: int, binary: bool) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        n = len(conn.cursor(binary=binary).execute("SELECT * FROM wire_rows").fetchall())
        times.append(time.perf_counter() - t)
    return statistics.median(times), n


#: the big fetch is a self-join of this many integers, limited to --big-rows rows
BIG_SIDE = 10_000


def fill_big(conn) -> None:
    conn.execute("DROP TABLE IF EXISTS wire_k")
    conn.execute("CREATE TABLE wire_k (x int8)")
    with conn.cursor().copy("COPY wire_k FROM STDIN") as cp:
        for i in range(BIG_SIDE):
            cp.write(f"{i}\n")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def big_fetch(conn, pid: int, rows: int) -> tuple[float, int, float]:
    """Fetch ``rows`` rows (int8, text) through a named cursor, counting them without
    keeping them. Returns (seconds, rows, peak RSS growth of process ``pid`` in MB)."""
    import threading

    base = rss_mb(pid)
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb(pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    outer = -(-rows // BIG_SIDE)
    n = 0
    t = time.perf_counter()
    try:
        conn.autocommit = False
        with conn.cursor("wire_big") as cur:
            cur.itersize = 50_000
            cur.execute("SELECT a.x * %s + b.x AS v, 'row ' || b.x AS s FROM wire_k a, wire_k b WHERE a.x < %s"
                        % (BIG_SIDE, outer))
            while batch := cur.fetchmany(50_000):
                n += len(batch)
        conn.commit()
    finally:
        conn.autocommit = True
        done.set()
        sampler.join()
    return time.perf_counter() - t, n, peak[0] - base


def server_seconds(srv) -> float:
    import re
    import urllib.request

    text = urllib.request.urlopen(srv.metrics_url, timeout=10).read().decode()
    return sum(float(m) for m in re.findall(r'^statement_phase_seconds_total\{phase="server"\} (\S+)$', text, re.M))


def activity_log_cost(iterations: int, rounds: int = 5) -> None:
    """Print the SELECT 1 p50 with the activity log on and off, and their ratio."""
    dirs = [Path(tempfile.mkdtemp(prefix="wire-log-")) for _ in range(2)]
    servers = {"on": Server(dirs[0] / "mzdata"), "off": Server(dirs[1] / "mzdata", "--no-activity-log")}
    try:
        for s in servers.values():
            s.start()
        lat: dict[str, list[float]] = {"on": [], "off": []}
        conns = {k: s.connect() for k, s in servers.items()}
        for c in conns.values():
            select1(c, 100, False)  # warm up
        for _ in range(rounds):  # alternate, so both see the same load
            for k, c in conns.items():
                lat[k] += select1(c, max(1, iterations // rounds), False)
        for c in conns.values():
            c.close()
    finally:
        for s in servers.values():
            s.stop()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    on, off = pct(lat["on"], 0.5), pct(lat["off"], 0.5)
    print(f"SELECT 1 p50, {iterations} iterations (ms): activity log on {on * 1e3:.3f}, off {off * 1e3:.3f}, "
          f"ratio {on / off:.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--activity-log-cost", action="store_true",
                    help="only compare SELECT 1 with mz_recent_activity_log on and off")
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big-rows", type=int, default=10_000_000, help="rows of the big fetch (0: skip it)")
    args = ap.parse_args()
    if args.activity_log_cost:
        activity_log_cost(args.iterations)
        return

    metrics_port = free_port()
    data = Path(tempfile.mkdtemp(prefix="wire-sf-"))
    srv = Server(data / "mzdata", "--metrics-listen", f"127.0.0.1:{metrics_port}").start()
    srv.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    pg = None
    try:
        pg = Postgres().start()
    except (subprocess.CalledProcessError, OSError) as e:
        print(f"PostgreSQL could not be started ({e}); sqlfront figures only")
    results = {}
    try:
        targets = [("sqlfront", srv.connect)] + ([("postgres", pg.connect)] if pg else [])
        for name, connect in targets:
            with connect() as c:
                c.autocommit = True
                fill(c, args.rows)
                for binary in (False, True):
                    fmt = "binary" if binary else "text"
                    select1(c, 50, binary)  # warm up
                    lat = select1(c, args.iterations, binary)
                    results[(name, "select1", fmt)] = (pct(lat, 0.5), pct(lat, 0.99))
                    fetch(c, 1, binary)  # warm up (Spark compiles the scan once)
                    before = server_seconds(srv) if name == "sqlfront" else 0.0
                    secs, n = fetch(c, args.repeat, binary)
                    inside = (server_seconds(srv) - before) / args.repeat if name == "sqlfront" else 0.0
                    results[(name, "fetch", fmt)] = (secs, inside, n)
                if args.big_rows:
                    fill_big(c)
                    pid = srv.proc.pid if name == "sqlfront" else c.execute("SELECT pg_backend_pid()").fetchone()[0]
                    results[(name, "big")] = big_fetch(c, pid, args.big_rows)
    finally:
        srv.stop()
        shutil.rmtree(data, ignore_errors=True)
        if pg:
            pg.stop()

    print(f"SELECT 1 round trip, {args.iterations} iterations (ms):")
    for fmt in ("text", "binary"):
        sf = results[("sqlfront", "select1", fmt)]
        line = f"  {fmt:6s} sqlfront p50 {sf[0] * 1e3:.3f} p99 {sf[1] * 1e3:.3f}"
        if pg:
            p = results[("postgres", "select1", fmt)]
            line += f" | postgres p50 {p[0] * 1e3:.3f} p99 {p[1] * 1e3:.3f} | ratio p50 {sf[0] / p[0]:.2f}"
        print(line)
    print(f"{args.rows:,}-row fetch, median of {args.repeat} (s):")
    for fmt in ("text", "binary"):
        total, inside, n = results[("sqlfront", "fetch", fmt)]
        wire = total - inside
        line = f"  {fmt:6s} sqlfront {total:.3f} (peek {inside:.3f}, wire+client {wire:.3f}; {n} rows)"
        if pg:
            p = results[("postgres", "fetch", fmt)][0]
            line += f" | postgres {p:.3f} | ratio total {total / p:.2f}, wire+client {wire / p:.2f}"
        print(line)

    if args.big_rows:
        print(f"{args.big_rows:,}-row fetch through a named cursor (FETCH 50,000 at a time):")
        for name in ("sqlfront", "postgres"):
            if (name, "big") in results:
                secs, n, grew = results[(name, "big")]
                print(f"  {name:8s} {n:,} rows in {secs:.1f} s = {n / secs:,.0f} rows/s; "
                      f"server peak RSS growth {grew:.0f} MB")


if __name__ == "__main__":
    main()
