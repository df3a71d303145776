"""COPY FROM STDIN's memory (issue 33, item 4): what the server holds while COPY streams run.

1. One stream of ``--mb`` MB of small rows (an int and a short text): the server's peak
   RSS growth over its idle RSS, and its ratio to the data's size (it was about 57 before
   COPY was parsed in batches into Arrow columns), after a 1 MB warm-up COPY (first-use
   imports and caches are not a COPY's memory).
2. ``--streams`` such streams at once, from as many connections: the peak RSS growth,
   against the server's COPY memory budget (``--budget``, sqlfront serve
   --copy-memory-budget) and against the single stream's; how many COPYs succeeded and
   how many failed with 53200 (the budget could not be had in time).

The peak is the kernel's (``VmHWM`` of /proc/PID/status, reset before each phase by
writing 5 to /proc/PID/clear_refs), so a short spike between samples is counted too.

    .venv/bin/python bench/copy_memory.py [--streams 20] [--mb 40] [--budget 2GB]

Figures (2026-11-25, 2 shared cores, load average ~30; before batching, one 40 MB stream
peaked at 2.9 GB, about 57 x the data):

    budget  allocator  1 stream          20 streams (800 MB)     peak/budget  peak/1 stream  53200s
    2 GB    mimalloc   100 MB (2.5 x)    1776 MB, 310 s          0.87         17.7           0
    1 GB    mimalloc    99 MB (2.5 x)    1671 MB, 226 s          1.63         16.9           0
    1 GB    system     137 MB (3.4 x)    1392 MB, 242 s          1.36         10.1           1

The budget bounds what COPY counts (Python rows of the batch being parsed, Arrow columns,
the encoding at the end); the process holds more than that under many streams (the
allocators keep freed memory, CopyData bodies and buffers are not counted), so set it
well below the memory the server may use.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from server import Server  # noqa: E402


def status_mb(pid: int, field: str) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def reset_peak(pid: int) -> None:
    """Set VmHWM back to the current RSS (Linux: ``clear_refs`` 5)."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def rows(mb: int) -> bytes:
    line, out, n, i = [], 0, mb << 20, 0
    while out < n:
        b = b"%d\trow number %d\n" % (i, i)
        line.append(b)
        out += len(b)
        i += 1
    return b"".join(line)


def copy_one(url: str, table: str, data: bytes, results: list, chunk: int = 1 << 20) -> None:
    try:
        with psycopg.connect(url, autocommit=True) as c:
            with c.cursor() as cur:
                with cur.copy(f"COPY {table} FROM STDIN") as cp:
                    for i in range(0, len(data), chunk):
                        cp.write(data[i : i + chunk])
                results.append(cur.statusmessage)
    except psycopg.Error as e:
        results.append(e.sqlstate or str(e))


def phase(server: Server, data: bytes, streams: int) -> tuple[float, float, list]:
    """(seconds, peak RSS growth in MB, each COPY's tag or SQLSTATE)."""
    pid = server.proc.pid
    with server.connect() as c:
        for i in range(streams):
            c.execute(f"DROP TABLE IF EXISTS cm{i}")
            c.execute(f"CREATE TABLE cm{i} (a int, b text)")
    time.sleep(1)
    base = status_mb(pid, "VmRSS")
    reset_peak(pid)
    results: list = []
    t0 = time.perf_counter()
    threads = [threading.Thread(target=copy_one, args=(server.url, f"cm{i}", data, results)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, status_mb(pid, "VmHWM") - base, results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=20)
    ap.add_argument("--mb", type=int, default=40, help="MB of COPY data per stream")
    ap.add_argument("--budget", default="2GB", help="the server's --copy-memory-budget")
    args = ap.parse_args()
    data = rows(args.mb)
    with tempfile.TemporaryDirectory() as d:
        server = Server(Path(d) / "mzdata", "--copy-memory-budget", args.budget).start(wait_replicas=False)
        try:
            from sqlfront.cli import ByteSize

            budget_mb = ByteSize().convert(args.budget, None, None) / (1 << 20)
            phase(server, rows(1), 1)  # warm-up: first-use imports and caches are not a COPY's memory
            secs, one, r1 = phase(server, data, 1)
            print(f"1 stream of {len(data) / (1 << 20):.0f} MB: {secs:.1f} s, {r1[0]}; server peak RSS growth "
                  f"{one:.0f} MB = {one / (len(data) / (1 << 20)):.2f} x the data")
            secs, many, rn = phase(server, data, args.streams)
            ok = sum(1 for r in rn if str(r).startswith("COPY"))
            failed = {s: rn.count(s) for s in set(rn) if not str(s).startswith("COPY")}
            print(f"{args.streams} streams at once: {secs:.1f} s, {ok} succeeded, failed: {failed or 'none'}")
            print(f"  server peak RSS growth {many:.0f} MB; COPY memory budget {budget_mb:.0f} MB "
                  f"(peak / budget = {many / budget_mb:.2f}); peak / single stream = {many / one:.1f}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
