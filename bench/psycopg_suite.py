"""psycopg's own test suite against sqlfront (issue 16): pass, fail and error counts per
module and the total pass rate.

psycopg's tests are not in its PyPI distribution, so they come from a checkout of its
repository: ``--src PATH``, or else a shallow clone of the tag of the installed psycopg
(``git clone --depth 1 --branch 3.3.9 https://github.com/psycopg/psycopg``) kept in
``--cache-dir``. A fresh server (``sqlfront serve`` with its own temporary data directory
and one replica, as ``tests/server.py`` starts it) runs for the suite unless ``--dsn`` names
one already running. The modules run in one pytest process with psycopg's own
``--test-dsn`` option and its own pytest settings (its ``pyproject.toml``), in file order
(no pytest-randomly), without the tests psycopg marks slow, timing or flakey. The pass
rate is passed over all selected tests (what psycopg skips or expects to fail counts as
not passed); the rate over the tests that ran is printed too.

    .venv/bin/python bench/psycopg_suite.py [--src PATH] [--dsn DSN] [--failures FILE]
        [--timeout 120] [MODULE ...] [-- PYTEST ARGS]

``make psycopg-suite [PSYCOPG_SRC=path]`` installs the suite's extra test dependencies
(pproxy, anyio, pytest-timeout) into the venv and runs this script.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from server import Server  # noqa: E402

REPOSITORY = "https://github.com/psycopg/psycopg"

#: the 15 modules of issue 16: cursor, connection, copy, transaction, server-side cursor,
#: prepared statements, and the core type modules (as first measured)
MODULES = (
    "tests/test_cursor.py",
    "tests/test_cursor_common.py",
    "tests/test_connection.py",
    "tests/test_copy.py",
    "tests/test_transaction.py",
    "tests/test_cursor_server.py",
    "tests/test_prepared.py",
    "tests/types/test_array.py",
    "tests/types/test_bool.py",
    "tests/types/test_datetime.py",
    "tests/types/test_json.py",
    "tests/types/test_none.py",
    "tests/types/test_numeric.py",
    "tests/types/test_string.py",
    "tests/types/test_uuid.py",
)


def checkout(src: str | None, cache_dir: Path) -> Path:
    """The psycopg checkout to test: ``src`` if given, else a shallow clone of the
    installed psycopg's tag in ``cache_dir`` (made once, reused after)."""
    if src:
        path = Path(src).resolve()
        if not (path / "tests" / "fix_db.py").exists():
            sys.exit(f"{path} is not a psycopg checkout (no tests/fix_db.py)")
        return path
    version = metadata.version("psycopg")
    path = cache_dir / f"psycopg-{version}"
    if not (path / "tests" / "fix_db.py").exists():
        shutil.rmtree(path, ignore_errors=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"cloning {REPOSITORY} at {version} into {path}", flush=True)
        subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", version, REPOSITORY, str(path)],
                       check=True)
    return path


def outcomes(junit: Path) -> dict[str, list[tuple[str, str, str]]]:
    """module path -> [(test id, outcome, first line of its message)] from pytest's JUnit
    XML; outcome is passed, failed, error or skipped."""
    by_module: dict[str, list] = collections.defaultdict(list)
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split("::")[0]
        # classname is dotted: tests.types.test_json[.Class]; keep the module part
        parts = module.split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()
        module = "/".join(parts) + ".py"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = (child.get("message") or child.text or "").strip().splitlines()
                message = message[0][:300] if message else ""
                break
        by_module[module].append((f"{module}::{case.get('name')}", outcome, message))
    return by_module


def report(by_module: dict[str, list]) -> None:
    """Print the per-module table and the totals: the pass rate is passed over every
    selected test (skipped and xfailed ones count as not passed), and, apart, over the
    tests that ran (passed, failed, errors)."""
    print(f"\n{'module':38} {'passed':>7} {'failed':>7} {'error':>6} {'skipped':>8} {'rate':>7}")
    total = collections.Counter()
    for module in sorted(by_module):
        c = collections.Counter(o for _, o, _ in by_module[module])
        total.update(c)
        n = sum(c.values())
        rate = f"{100 * c['passed'] / n:.1f}%" if n else "-"
        print(f"{module:38} {c['passed']:7} {c['failed']:7} {c['error']:6} {c['skipped']:8} {rate:>7}")
    n = sum(total.values())
    rate = f"{100 * total['passed'] / n:.1f}%" if n else "-"
    print(f"{'total':38} {total['passed']:7} {total['failed']:7} {total['error']:6} {total['skipped']:8} {rate:>7}")
    ran = total["passed"] + total["failed"] + total["error"]
    print(f"\npassed {total['passed']} of {n} ({rate}); of the {ran} that ran (not skipped or xfailed): "
          f"{100 * total['passed'] / max(ran, 1):.1f}%")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("modules", nargs="*", help="module paths inside the checkout (default: the 15 of issue 16)")
    p.add_argument("--src", default=os.environ.get("PSYCOPG_SRC") or None,
                   help="a psycopg checkout (default: clone the installed version's tag)")
    p.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "sqlfront",
                   help="where the clone is kept (default ~/.cache/sqlfront)")
    p.add_argument("--dsn", help="run against this server instead of starting one")
    p.add_argument("--failures", type=Path, help="write every failed or errored test, with its message, here (TSV)")
    p.add_argument("--timeout", type=float, default=120, help="seconds one test may take (pytest-timeout)")
    p.add_argument("--start-timeout", type=float, default=600,
                   help="seconds the server may take to start with a healthy replica")
    args, extra = p.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]

    src = checkout(args.src, args.cache_dir)
    tmp = Path(tempfile.mkdtemp(prefix="psycopg-suite-"))
    server = None
    try:
        dsn = args.dsn
        if dsn is None:
            print("starting a server (one replica) ...", flush=True)
            server = Server(tmp / "data").start(timeout=args.start_timeout)
            dsn = server.url
        junit = tmp / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", *(args.modules or MODULES), f"--test-dsn={dsn}", "-q",
               "-m", "not slow and not timing and not flakey",
               "-p", "no:randomly", f"--junitxml={junit}", "-o", "junit_family=xunit1",
               "--tb=no", "-rN", *extra]
        if importlib.util.find_spec("pytest_timeout"):
            cmd.append(f"--timeout={args.timeout}")
        # the installed psycopg is the one tested, never the checkout's sources
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PSYCOPG_IMPL")}
        t = time.monotonic()
        subprocess.run(cmd, cwd=src, env=env)
        print(f"pytest took {time.monotonic() - t:.0f} s")
        if not junit.exists():
            print("pytest wrote no results", file=sys.stderr)
            return 2
        by_module = outcomes(junit)
        report(by_module)
        if args.failures:
            with open(args.failures, "w") as f:
                for rows in by_module.values():
                    for test, outcome, message in rows:
                        if outcome in ("failed", "error"):
                            f.write(f"{test}\t{outcome}\t{message}\n")
            print(f"failures written to {args.failures}")
        return 0
    finally:
        if server is not None:
            server.stop()
            if server.log_path.exists():
                shutil.copy(server.log_path, Path(tempfile.gettempdir()) / "psycopg-suite-server.log")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
