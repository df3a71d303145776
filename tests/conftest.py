"""Shared fixtures: one server (and so one Spark replica) for the whole test session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server import Server, free_port  # noqa: E402

#: Flags of the shared test server: two availability zones for placement tests.
SERVER_ARGS = ("--availability-zone", "az1", "--availability-zone", "az2")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    metrics_port = free_port()
    copy_from_dir = tmp_path_factory.mktemp("copy-from")
    s = Server(tmp_path_factory.mktemp("env") / "mzdata", *SERVER_ARGS,
               "--metrics-listen", f"127.0.0.1:{metrics_port}", "--copy-from-dir", str(copy_from_dir)).start()
    s.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    #: the one directory whose files COPY t FROM 'path' may read on this server
    s.copy_from_dir = copy_from_dir
    yield s
    s.stop()


@pytest.fixture
def conn(server):
    with server.connect() as c:
        yield c
