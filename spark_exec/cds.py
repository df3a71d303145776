"""A class-data-sharing archive of the replica JVM's classes, so replicas start faster.

A replica is a Spark Connect server JVM (``spark_exec.orchestrator``). Most of its start is
the JVM loading and verifying Spark's classes: some 18 CPU seconds from spawn to its
first job's answer, 12 of them before the Connect server listens. The JDK's dynamic
AppCDS archive (JEP 350, JDK 13 and later: ``-XX:ArchiveClassesAtExit`` writes the classes
a run loaded, ``-XX:SharedArchiveFile`` maps them into later runs) halves that: measured
on this project's 2-core machine at a load average of 18-19, 11.8 -> 5.5 CPU s to the
listening server and 18.1 -> 8.5 CPU s to the first job's answer (wall 65 s -> 35 s).
The mapped archive is also shared between replica JVMs rather than loaded into each.

``python -m spark_exec.cds`` (``make setup``) builds the archive once per machine, JDK
and Spark install, by starting a replica with ``ArchiveClassesAtExit``, running the kind
of work replicas run (a query, an aggregate, a Parquet write and read) and stopping it
(the JVM writes the archive as it exits: tens of seconds). Later replicas use it when it
exists (``spark_exec.orchestrator.java_options``, which finds it: ``archive_path``); without
it they start as before. A JVM that finds the archive unusable (another JDK build)
ignores it (``-Xshare:auto``, the default).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from spark_exec.orchestrator import Orchestrator, ReplicaSpec, archive_path
from spark_exec.replica import _close_session, connect_session


def _workload(url: str, token: str, scratch: Path) -> None:
    """What replicas do, so that its classes are archived too."""
    s = connect_session(url, token)
    try:
        s.range(1).collect()
        df = s.range(1000).selectExpr("id % 7 AS k", "CAST(id AS DECIMAL(38, 10)) AS n", "CAST(id AS STRING) AS t")
        df.groupBy("k").agg({"n": "sum", "t": "max"}).collect()
        df.write.parquet(str(scratch / "probe.parquet"))
        s.read.parquet(str(scratch / "probe.parquet")).where("k = 3").toArrow()
    finally:
        _close_session(s)


def build(timeout_s: float = 900.0, out=print) -> Path | None:
    """Build the archive unless it exists; returns its path (None: no java binary).

    Raises:
        RuntimeError when the replica does not start or the JVM writes no archive."""
    path = archive_path()
    if path is None or path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with tempfile.TemporaryDirectory(prefix="sqlfront-cds-") as work:

        class Dumping(Orchestrator):
            def command(self, spec, port, workdir):
                return [c + f" -XX:ArchiveClassesAtExit={tmp}" if c.startswith("spark.driver.extraJavaOptions=")
                        else c for c in super().command(spec, port, workdir)]

        start = time.monotonic()
        proc = Dumping(Path(work) / "data", "cds", scratch_dir=Path(work)).start(ReplicaSpec("u1", "cds.r1", workers=1, memory_mb=1024))
        try:
            deadline = start + timeout_s
            while True:
                if not proc.alive():
                    raise RuntimeError(f"the replica exited while starting; see {proc.log_path}")
                try:
                    _workload(proc.url, proc.token, Path(work))
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(1)
            out(f"replica answered after {time.monotonic() - start:.0f} s; writing the archive")
            os.killpg(proc.popen.pid, signal.SIGTERM)  # the JVM writes the archive as it exits
            proc.popen.wait(max(60.0, deadline - time.monotonic()))
        finally:
            if proc.popen.poll() is None:
                os.killpg(proc.popen.pid, signal.SIGKILL)
                proc.popen.wait()
    if not tmp.is_file() or tmp.stat().st_size == 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError("the replica JVM wrote no class-data archive")
    os.replace(tmp, path)  # readers see the whole archive or none
    out(f"{path} ({path.stat().st_size >> 20} MiB) in {time.monotonic() - start:.0f} s")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m spark_exec.cds", description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds the build may take (default 900)")
    args = ap.parse_args(argv)
    try:
        path = build(args.timeout)
    except Exception as e:  # noqa: BLE001  (replicas start without it: say why and carry on)
        print(f"no class-data archive: {e}", file=sys.stderr)
        return 1
    print(path if path is not None else "no java binary: no class-data archive")
    return 0


if __name__ == "__main__":
    sys.exit(main())
