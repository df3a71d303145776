"""Other sessions while one runs issue 33's freezing queries (item 3).

Starts a server, measures ``SELECT 1`` round trips (p50/p99) on one connection while
idle, then while another connection runs each bad query again and again under
``statement_timeout = '2s'``: a backtracking regular expression (on RE2 now), one
with a backreference (Python's engine, in a worker process, stopped at 2 s), a LIKE
with many ``%``, and lpad/repeat past 1 GB; and, for reference, a session that only
loops on ``SELECT 1`` (what any busy neighbour costs on this machine). Prints each p99 as a ratio to the idle p99
of the same run, and the bad query's outcomes (answers or SQLSTATEs) and its longest run.

    .venv/bin/python bench/evalguard.py [--probes 2000] [--seconds 6]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import psycopg  # noqa: E402
from bench.coordinator import pct, probe  # noqa: E402
from server import Server  # noqa: E402

BAD = {
    "(reference) SELECT 1 in a loop": "SELECT 1",
    "regex (a+)+$": "SELECT 'aaaaaaaaaaaaaaaaaaaaaaaaaaaa!' ~ '(a+)+$'",
    "regex with backreference": r"SELECT 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' ~ '^(a+)+\1$'",
    "LIKE %a%a%a%b": "SELECT repeat('a', 600) LIKE '%a%a%a%b'",
    "lpad to 2e9": "SELECT lpad('x', 2000000000)",
    "repeat to 3 GB": "SELECT repeat('ab', 1500000000)",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--probes", type=int, default=2000, help="idle SELECT 1 round trips")
    ap.add_argument("--seconds", type=float, default=6, help="probing time per bad query")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp) / "mzdata")
        try:
            srv.start(timeout=600)  # a busy machine starts Spark slowly; stopped below even if it fails
            with srv.connect() as c:
                probe(c, 200)  # warm-up
                idle = probe(c, args.probes)
                i50, i99 = pct(idle, .5) * 1000, pct(idle, .99) * 1000
                print(f"SELECT 1 idle: p50 {i50:.3f} ms  p99 {i99:.3f} ms  "
                      f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
                for name, sql in BAD.items():
                    stop = threading.Event()
                    outcomes: Counter = Counter()
                    longest = [0.0]

                    def bad(sql=sql, stop=stop, outcomes=outcomes, longest=longest):
                        with srv.connect() as b:
                            b.execute("SET statement_timeout = '2s'")
                            while not stop.is_set():
                                t = time.perf_counter()
                                try:
                                    outcomes[repr(b.execute(sql).fetchone()[0])] += 1
                                except psycopg.Error as e:
                                    outcomes[e.sqlstate] += 1
                                longest[0] = max(longest[0], time.perf_counter() - t)

                    t = threading.Thread(target=bad)
                    t.start()
                    time.sleep(0.5)
                    busy, until = [], time.monotonic() + args.seconds
                    while time.monotonic() < until:  # several 2 s runs of the slow ones
                        busy += probe(c, 100)
                    stop.set()
                    t.join()
                    b99 = pct(busy, .99) * 1000
                    print(f"  while {name:<26} p50 {pct(busy, .5) * 1000:7.3f} ms  p99 {b99:8.3f} ms  "
                          f"ratio p99/idle {b99 / i99:6.2f}  max {max(busy) * 1000:8.1f} ms  "
                          f"bad query: {dict(outcomes)}, longest {longest[0]:.2f} s")
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
