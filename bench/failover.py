"""Active replication under a replica crash: queries attempted, failed, and latency
(p50/p99) before, during and after SIGKILL of one of a cluster's two replicas.

"during" is from the kill until the killed replica is healthy again (restarted by the
orchestrator); "before" and "after" are windows of the same length around it.

    .venv/bin/python bench/failover.py [--clients 4] [--window 10]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from server import Server, wait_for  # noqa: E402


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--window", type=float, default=10.0, help="seconds of load before the kill")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp) / "mzdata").start()
        try:
            with srv.connect() as c:
                c.execute("CREATE CLUSTER bench REPLICAS (r1 (SIZE '1'), r2 (SIZE '1'))")
                c.execute("SET cluster = bench")
                c.execute("CREATE TABLE f (a int)")
                c.execute("INSERT INTO f SELECT * FROM (VALUES " + ",".join(f"({i})" for i in range(1000)) + ") v")
                healthy = lambda: c.execute(  # noqa: E731
                    "SELECT count(*) FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                    " WHERE c.name = 'bench' AND r.status = 'healthy'").fetchone()[0] == 2
                assert wait_for(healthy, 300), "replicas did not become healthy"
                victim = c.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                                   " WHERE c.name = 'bench' AND r.name = 'r1'").fetchone()[0]

                for _ in range(30):  # warm-up: the first peeks on a new replica compile and load
                    c.execute("SELECT count(*), sum(a) FROM f").fetchone()
                samples: list[tuple[float, float, bool]] = []  # (start, latency, ok)
                stop = threading.Event()

                def client():
                    with srv.connect() as cc:
                        cc.execute("SET cluster = bench")
                        while not stop.is_set():
                            t = time.monotonic()
                            try:
                                cc.execute("SELECT count(*), sum(a) FROM f").fetchone()
                                ok = True
                            except Exception:  # noqa: BLE001 - counted as a failure
                                ok = False
                            samples.append((t, time.monotonic() - t, ok))

                threads = [threading.Thread(target=client) for _ in range(args.clients)]
                for t in threads:
                    t.start()
                time.sleep(args.window)
                kill_at = time.monotonic()
                os.kill(int((srv.data_dir / "replicas" / victim / "pid").read_text()), signal.SIGKILL)
                time.sleep(1)
                assert wait_for(healthy, 300)
                back_at = time.monotonic()
                time.sleep(args.window)
                stop.set()
                for t in threads:
                    t.join()
        finally:
            srv.stop()

    phases = {
        "before": (kill_at - args.window, kill_at),
        "during": (kill_at, back_at),
        "after": (back_at, back_at + args.window),
    }
    print(f"replica r1 killed; restarted and healthy after {back_at - kill_at:.1f}s; {args.clients} clients")
    print(f"{'phase':<8}{'attempted':>10}{'failed':>8}{'p50 ms':>9}{'p99 ms':>9}")
    for name, (lo, hi) in phases.items():
        xs = [s for s in samples if lo <= s[0] < hi]
        lat = [s[1] * 1000 for s in xs if s[2]]
        print(f"{name:<8}{len(xs):>10}{sum(not s[2] for s in xs):>8}{pct(lat, .5):>9.1f}{pct(lat, .99):>9.1f}")


if __name__ == "__main__":
    main()
