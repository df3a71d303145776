"""A result of about 2 GB on a 2-replica cluster of small replicas (issue 33: such a result
killed the JVM of both replicas, and an unrelated query failed with 'stopped SparkContext').

Prints whether the SELECT answered (rows, bytes of text read) or failed (SQLSTATE and
message), its time, environmentd's peak RSS (VmHWM) and each replica JVM's, whether each
replica restarted meanwhile, their statuses after, and whether a SELECT on the cluster
answers after. The result is read through a server-side cursor (psycopg named cursor) and
only counted here.

    .venv/bin/python bench/large_result.py [--rows-side 3100] [--memory 512MiB]

Figures (2 cores shared with other work, load average 14 to 24; replicas of 1 worker
and 512 MiB), 9,610,000 rows, 2.00 GB of text:

    before (main 8dd93e3: both replicas race it)   answered in 162 s; environmentd peak
        RSS 359 MiB; both replica JVMs peaked at 865 MiB; no restart; both healthy after;
        the next query answered in 0.4 s.
    after (it runs on one replica; with Spark RPC encryption on, since turned off again)
                                                   answered in 217 s; environmentd peak
        RSS 353 MiB; r1 peaked at 863 MiB, r2 (not sent the query) at 449 MiB; no
        restart; both healthy after; the next query answered in 1.2 s.

The answer comes through Blob (``spark_exec.spill``), so no replica dies and the issue's
expected 53200 does not arise; the time includes psycopg reading 9.6 million rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from server import Server, wait_for  # noqa: E402

#: text per result row, about 210 characters (the number pair makes each row distinct)
QUERY = "SELECT repeat('x', 200) || a.i || '/' || b.i AS s FROM big a, big b"


def peak_rss_mb(pid: int) -> float:
    """Peak resident set size (VmHWM of /proc/<pid>/status) in MiB, NaN if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def replica_starts(data_dir: Path) -> dict[str, int]:
    """Replica id -> how many times its process was started (its log's start lines)."""
    return {p.parent.name: p.read_text(errors="replace").count("=== starting")
            for p in (data_dir / "replicas").glob("*/replica.log")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows-side", type=int, default=3100, help="rows of the table joined with itself")
    ap.add_argument("--memory", default="512MiB", help="memory_limit of each replica")
    args = ap.parse_args()
    sizes = {"small": {"workers": 1, "memory_limit": args.memory}}

    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp) / "mzdata", "--cluster-replica-sizes", json.dumps(sizes),
                     "--bootstrap-replica-size", "small").start()
        try:
            with srv.connect() as c:
                c.execute("CREATE CLUSTER two REPLICAS (r1 (SIZE 'small'), r2 (SIZE 'small'))")
                c.execute("SET cluster = two")
                c.execute("CREATE TABLE big (i int)")
                c.execute("INSERT INTO big SELECT generate_series(1, %s)", (args.rows_side,))
                statuses = lambda: c.execute(  # noqa: E731
                    "SELECT r.name, r.status FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                    " WHERE c.name = 'two' ORDER BY 1").fetchall()
                assert wait_for(lambda: all(s == "healthy" for _, s in statuses()), 300), statuses()
                c.execute("SELECT count(*) FROM big").fetchone()  # warm both replicas
                starts = replica_starts(srv.data_dir)
                ids = dict(c.execute("SELECT r.name, r.id FROM mz_cluster_replicas r JOIN mz_clusters c "
                                     "ON c.id = r.cluster_id WHERE c.name = 'two' ORDER BY 1").fetchall())
                jvms = {name: int((srv.data_dir / "replicas" / rid / "pid").read_text()) for name, rid in ids.items()}

                rows = nbytes = 0
                outcome = "answered"
                t0 = time.monotonic()
                try:
                    with srv.connect(autocommit=False) as q, q.cursor("big_result") as cur:
                        q.execute("SET cluster = two")
                        cur.execute(QUERY)
                        while batch := cur.fetchmany(50_000):
                            rows += len(batch)
                            nbytes += sum(len(r[0]) for r in batch)
                except psycopg.Error as e:
                    outcome = f"failed: {e.sqlstate} {e.diag.message_primary}"
                elapsed = time.monotonic() - t0
                jvm_peaks = {name: peak_rss_mb(pid) for name, pid in jvms.items()}
                server_peak = peak_rss_mb(srv.proc.pid)
                after = statuses()
                t1 = time.monotonic()
                try:
                    c.execute("SELECT count(*) FROM big").fetchone()
                    next_query = f"answered in {time.monotonic() - t1:.1f}s"
                except psycopg.Error as e:
                    next_query = f"failed: {e.sqlstate} {e.diag.message_primary}"
                now_starts = replica_starts(srv.data_dir)
                restarted = {name: now_starts[rid] - starts[rid] for name, rid in ids.items()
                             if now_starts[rid] != starts[rid]}
        finally:
            srv.stop()

    print(f"query: {QUERY} ({args.rows_side} rows a side, replicas of {args.memory})")
    print(f"outcome: {outcome}; rows {rows:,}, {nbytes / 1e9:.2f} GB of text, {elapsed:.1f}s")
    print(f"environmentd peak RSS: {server_peak:.0f} MiB; replica JVM peak RSS: "
          + ", ".join(f"{name} {p:.0f}" for name, p in jvm_peaks.items()) + " MiB (NaN: the JVM is gone)")
    print(f"replica restarts meanwhile: {restarted or 'none'}; statuses right after: {after}")
    print(f"next query on the cluster: {next_query}")


if __name__ == "__main__":
    main()
