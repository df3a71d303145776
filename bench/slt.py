"""sqllogictest throughput: queries per second through the runner on select1.test, and
where the time goes: parsing, planning, execution (Spark or the fast path) and the rest
(wire and client), from the server's statement_phase_seconds metric; then the same file
with ``--jobs N`` connections running its queries at once (``Runner.jobs``), as a ratio to
the one-connection run on the same server.

    .venv/bin/python bench/slt.py [FILE] [--jobs N]   (default select1.test, N = 2)
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from server import Server, free_port  # noqa: E402
from sqllogictest.runner import Runner  # noqa: E402


def phases(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r'^statement_phase_seconds_total\{phase="(\w+)"\} (\S+)$', text, re.M)}


def main() -> None:
    args = sys.argv[1:]
    jobs = 2
    if "--jobs" in args:
        k = args.index("--jobs")
        jobs = int(args[k + 1])
        del args[k:k + 2]
    path = Path(args[0]) if args else ROOT.parent / "shared" / "slt" / "sqlite" / "select1.test"
    mport = free_port()
    murl = f"http://127.0.0.1:{mport}/metrics"
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp) / "mzdata", "--metrics-listen", f"127.0.0.1:{mport}").start()
        try:
            before = phases(murl)
            out, wall = _timed(Runner(srv.url, out=lambda s: None), path)
            after = phases(murl)
            out_jobs, wall_jobs = _timed(Runner(srv.url, out=lambda s: None, jobs=jobs), path)
        finally:
            srv.stop()
    d = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in ("parse", "plan", "execute", "server")}
    n = out.passed + out.failed
    print(f"{path.name}: {n} records ({out.passed} passed, {out.failed} failed) in {wall:.1f}s = {n / wall:.1f} per second")
    other = d["server"] - d["parse"] - d["plan"] - d["execute"]
    wire = wall - d["server"]
    for name, v in (("parse", d["parse"]), ("plan", d["plan"]), ("execute (Spark or fast path)", d["execute"]),
                    ("other server work (writes, DDL)", other), ("wire and client", wire)):
        print(f"  {name:<34}{v:8.2f}s {100 * v / wall:6.1f}%")
    print(f"with {jobs} connections: {out_jobs.passed} passed, {out_jobs.failed} failed in {wall_jobs:.1f}s "
          f"({wall_jobs / wall:.2f}x the time of one)")


def _timed(runner: Runner, path: Path):
    t = time.perf_counter()
    out = runner.run_file(path)
    return out, time.perf_counter() - t


if __name__ == "__main__":
    main()
