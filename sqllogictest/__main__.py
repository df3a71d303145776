"""``python -m sqllogictest [--url postgres://...] [--reset-user-objects] FILE_OR_DIR ...``

With no ``--url`` a server is started on a temporary data directory and stopped
afterwards; each file then runs in ``public`` of that server, whose user objects are
dropped before each file. With ``--url`` each file runs in a schema of its own that the
runner creates and drops, and nothing else on the server is touched unless
``--reset-user-objects`` is given (see ``sqllogictest.runner``). Prints one line per
failure (file:line, SQL, expected, actual), one line per file (passed, failed, skipped
by reason), and a closing total; exits non-zero when anything failed.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from sqllogictest.runner import Outcome, Runner


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data_dir: Path, log) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    url = f"postgresql://materialize@127.0.0.1:{port}/materialize"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqlfront.cli", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data_dir)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with code {proc.returncode}")
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=2) as c:
                if all(r[0] == "healthy" for r in c.execute("SELECT status FROM mz_cluster_replicas").fetchall()):
                    return proc, url
        except psycopg.OperationalError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("server did not become ready")


def collect(paths: list[str]) -> list[Path]:
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(q for q in p.rglob("*") if q.suffix in (".test", ".slt"))
        else:
            files.append(p)
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sqllogictest", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="files or directories of .test/.slt files")
    ap.add_argument("--url", help="server to test (default: start one on a temporary data dir)")
    ap.add_argument("--reset-user-objects", action="store_true",
                    help="drop EVERY user table, view, materialized view, source, sink, secret, connection, "
                         "type and non-public schema of the server before each file, and run files in public "
                         "(default with --url: each file runs in a schema of its own and nothing else is touched)")
    ap.add_argument("--retry-timeout", type=float, default=30.0,
                    help="seconds a `query ... retry` record is re-run before it fails (default 30)")
    ap.add_argument("--fail-fast", action="store_true", help="stop at the first failure")
    ap.add_argument("--jobs", type=int, default=1,
                    help="connections that run a file's consecutive queries at once (only for files "
                         "whose queries change nothing, such as SQLite's select corpus)")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--json", dest="json_path", help="write a JSON summary here")
    args = ap.parse_args(argv)
    if argv is None:
        # a SIGTERM unwinds like Ctrl-C, so the file's schema (and a started server) are cleaned up
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    files = collect(args.paths)
    proc = None
    tmp = None
    url = args.url
    if url is None:
        tmp = tempfile.TemporaryDirectory(prefix="slt-")
        with open(Path(tmp.name) / "server.log", "wb") as log:  # the server keeps its own descriptor
            proc, url = start_server(Path(tmp.name) / "mzdata", log)
    total = Outcome()
    per_file = {}
    # the server the runner started is its own: it resets it between files
    runner = Runner(url, verbose=args.verbose, fail_fast=args.fail_fast, retry_timeout=args.retry_timeout,
                    jobs=args.jobs,
                    reset_user_objects=args.reset_user_objects or proc is not None)
    start = time.perf_counter()
    try:
        for f in files:
            t = time.perf_counter()
            o = runner.run_file(f)
            per_file[str(f)] = {"passed": o.passed, "failed": o.failed, "skipped": o.skipped,
                                "skip_reasons": dict(o.skip_reasons), "seconds": round(time.perf_counter() - t, 2)}
            print(f"{f}: {o.summary()} ({time.perf_counter() - t:.1f}s)", flush=True)
            total.add(o)
            if args.fail_fast and o.failed:
                break
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
            tmp.cleanup()
    elapsed = time.perf_counter() - start
    if args.json_path:
        Path(args.json_path).write_text(json.dumps({
            "passed": total.passed, "failed": total.failed, "skipped": total.skipped,
            "skip_reasons": dict(total.skip_reasons),
            "seconds": round(elapsed, 2), "files": per_file, "failures": total.failures,
        }, indent=2))
    print(total.summary())
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main())
