"""persist PubSub, measured (issue 12; seeds/persist-state-pubsub.md).

For each mode, ``--persist-pubsub on`` then ``off`` (the baseline), on a fresh server:

1. latency from a commit in another process (``sqlfront persist-write``, one row per
   commit, at random intervals) to that row arriving at a ``FETCH`` of a SUBSCRIBE
   cursor in the server: p50 and p99 (the seed's target with PubSub: p50 under 10 ms).
   Measured from the writer's compare-and-append winning (its wall clock, in its output)
   to the client holding the row (same machine, same clock).
2. Consensus reads per second in the server while the subscription is idle (its
   ``persist_consensus_reads_total``, over ``--idle`` seconds).

Figures are printed next to the baseline as ratios; nothing is asserted.

    .venv/bin/python bench/pubsub.py [--commits 40] [--idle 10]
"""

from __future__ import annotations

import argparse
import json
import random
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

from server import Server, free_port, metric_value as metric  # noqa: E402


def run_mode(mode: str, workdir: Path, commits: int, idle_s: float) -> dict:
    metrics_port = free_port()
    srv = Server(workdir / f"mzdata-{mode}", "--persist-pubsub", mode,
                 "--metrics-listen", f"127.0.0.1:{metrics_port}").start()
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    try:
        with srv.connect() as c:
            c.execute("CREATE TABLE followed (i int)")
        follower = srv.connect(autocommit=False)
        follower.execute("DECLARE c CURSOR FOR SUBSCRIBE followed WITH (SNAPSHOT = false)")
        follower.execute("FETCH ALL c WITH (TIMEOUT = '0.5s')")
        arrived: dict[int, float] = {}
        stop = threading.Event()

        def follow():
            while not stop.is_set():
                for r in follower.execute("FETCH ALL c WITH (TIMEOUT = '0.5s')").fetchall():
                    arrived[r[2]] = time.time()

        t = threading.Thread(target=follow, daemon=True)
        t.start()
        writer = subprocess.Popen([sys.executable, "-m", "sqlfront.cli", "persist-write", "--data-dir",
                                   str(srv.data_dir), "--table", "followed", "--rows-per-commit", "1"],
                                  cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        committed: dict[int, float] = {}
        for i in range(commits):
            writer.stdin.write(f"{i}\n")
            writer.stdin.flush()
            committed[i] = json.loads(writer.stdout.readline())["committed_at"]
            time.sleep(random.uniform(0.05, 0.5))  # idle gaps: a poller backs off in them
        writer.stdin.close()
        writer.wait(60)
        deadline = time.monotonic() + 30
        while len(arrived) < commits and time.monotonic() < deadline:
            time.sleep(0.05)
        lat = [(arrived[i] - committed[i]) * 1000 for i in committed if i in arrived]
        time.sleep(2)  # settle: backoff reaches its idle interval
        r0, t0 = metric(url, "persist_consensus_reads_total"), time.monotonic()
        time.sleep(idle_s)
        reads = (metric(url, "persist_consensus_reads_total") - r0) / (time.monotonic() - t0)
        stop.set()
        t.join(5)
        follower.close()
        p99 = statistics.quantiles(lat, n=100, method="inclusive")[98] if len(lat) > 1 else float("nan")
        return {"p50": statistics.median(lat) if lat else float("nan"), "p99": p99, "n": len(lat),
                "reads_per_s": reads}
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=40)
    ap.add_argument("--idle", type=float, default=10.0, help="seconds of idle subscription to count reads over")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-pubsub-") as d:
        res = {mode: run_mode(mode, Path(d), args.commits, args.idle) for mode in ("on", "off")}
    on, off = res["on"], res["off"]
    print(f"commit in another process -> row at a SUBSCRIBE FETCH ({on['n']} / {off['n']} commits):")
    print(f"  pubsub off (baseline): p50 {off['p50']:8.1f} ms   p99 {off['p99']:8.1f} ms")
    print(f"  pubsub on:             p50 {on['p50']:8.1f} ms   p99 {on['p99']:8.1f} ms"
          f"   ({on['p50'] / off['p50']:.2f}x / {on['p99'] / off['p99']:.2f}x of the baseline; seed target p50 < 10 ms)")
    print("Consensus reads per second in environmentd during an idle subscription:")
    print(f"  pubsub off (baseline): {off['reads_per_s']:6.2f}/s")
    ratio = on["reads_per_s"] / off["reads_per_s"] if off["reads_per_s"] else float("nan")
    print(f"  pubsub on:             {on['reads_per_s']:6.2f}/s   ({ratio:.2f}x of the baseline)")


if __name__ == "__main__":
    main()
