"""The wire's own cost: sqlfront next to a real PostgreSQL server (issue: pgwire).

Measures, through psycopg, in text and binary result format:
1. ``SELECT 1`` round trips (sqlfront answers it on the fast path, without Spark): p50/p99.
2. Fetching a 100,000-row result (int4, int8, text, float8, numeric, date columns) from a
   table: median of ``--repeat`` runs. sqlfront's time includes the Spark peek; the
   server-side time of the same statement (its ``server`` phase: parse, plan, peek, result rows) is split
   out so that what remains (encoding, socket, client decoding) is comparable.

PostgreSQL runs from Debian's packages (``/usr/lib/postgresql/*/bin``) in a temporary
directory on a free loopback port, as the ``postgres`` user when run as root. Without
it, only sqlfront's figures are printed.

    .venv/bin/python bench/wire.py [--iterations 2000] [--rows 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from server import Server, free_port, wait_for  # noqa: E402

TABLE = "CREATE TABLE wire_rows (a int4, b int8, c text, d float8, e numeric(12,2), f date)"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


class Postgres:
    """A throwaway PostgreSQL cluster (initdb + pg_ctl) on 127.0.0.1."""

    def __init__(self):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        self.bin = Path(bins[-1]).parent if bins else None
        self.dir = Path(tempfile.mkdtemp(prefix="wire-pg-"))
        self.port = free_port()

    def _run(self, *args):
        cmd = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:  # initdb refuses to run as root
            shutil.chown(self.dir, "postgres")
            cmd = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self) -> "Postgres | None":
        if self.bin is None:
            return None
        data = self.dir / "data"
        self._run("initdb", "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync")
        self._run("pg_ctl", "-D", str(data), "-l", str(self.dir / "log"), "-w", "-o",
                  f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        return self

    def connect(self):
        return psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True)

    def stop(self):
        try:
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


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


def server_seconds(srv) -> float:
    import re
    import urllib.request

    text = urllib.request.urlopen(srv.metrics_url, timeout=10).read().decode()
    return sum(float(m) for m in re.findall(r'^statement_phase_seconds_total\{phase="server"\} (\S+)$', text, re.M))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

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


if __name__ == "__main__":
    main()
