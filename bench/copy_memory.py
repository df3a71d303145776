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

Figures (2026-11-25, 2 shared cores; before batching, one 40 MB stream peaked at 2.9 GB,
about 57 x the data):

    budget  allocator  1 stream          20 streams (800 MB)     peak/budget  peak/1 stream  53200s
    COPY held every batch's Arrow columns until its end (load average ~30):
    2 GB    mimalloc   100 MB (2.5 x)    1776 MB, 310 s          0.87         17.7           0
    1 GB    mimalloc    99 MB (2.5 x)    1671 MB, 226 s          1.63         16.9           0
    1 GB    system     137 MB (3.4 x)    1392 MB, 242 s          1.36         10.1           1
    the same, again (load average from 0.2 to 15):
    1 GB    mimalloc   106 MB (2.7 x)    1714 MB, 234 s          1.67         16.2           0
    each stream writes 8 MB of Arrow at a time to Blob and holds 35 MB of the budget from
    its start (load average 13 to 22; the 512 MB run while a wait for a share still
    ended after 30 s, since unbounded):
    1 GB    mimalloc    50 MB (1.3 x)     381 MB, 218 s          0.37          7.6           0
    512 MB  mimalloc    50 MB (1.3 x)     344 MB, 124 s          0.67          6.8           6
    4 streams of 40 MB, 80 MB budget (2 streams at a time; load average 13 to 19):
    80 MB   mimalloc    50 MB (1.3 x)      88 MB, 35 s           1.10          1.7           0
    80 MB   malloc      37 MB (0.9 x)      43 MB, 32 s           0.53          1.1           0
    (malloc: sqlfront serve now sets pyarrow's default pool to the system allocator; with
    ARROW_DEFAULT_MEMORY_POOL=system, which also covers Parquet's internal allocations,
    17 MB and 37 MB; with MALLOC_ARENA_MAX=2 and mimalloc, 50 MB and 70 MB)

How: a stream holds at most one 64 KB batch in Python rows and 8 MB of Arrow columns,
then writes them to Blob as a batch of its own (appended with the others at the end: all
or none); its batches are Parquet without dictionaries (the dictionary writer held ~3 x
the columns until a row group ended) and pyarrow's pool gives back what it freed after
each. Its budget share (``sqlfront.sequence.copy.STREAM_BYTES``: 16 MB measured
overhead, a batch's columns and their encoding, a batch's parsing) is taken before the
client is asked for data, so a stream that finds the budget taken waits without holding
anything; the 20 streams above (700 MB of shares) all ran at once at 1 GB, 14 at a
time at 512 MB. A stream waits for its first share until its statement_timeout (none
by default): it holds nothing meanwhile, so no stream waits on it. Four streams'
peaks while tuning, 1 GB budget: 8 MB batches with dictionaries 176-188 MB (mimalloc,
system and jemalloc pools within 10% of each other; ``MALLOC_ARENA_MAX=2`` changed
nothing), 2 MB batches 71 MB, 4 MB 145 MB; 8 MB without dictionaries and with the
pool's release 111 MB.
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
