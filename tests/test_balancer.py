"""The balancer through the wire: routes each connection by the cluster its startup
options name, forwards CancelRequests to the right environmentd, and answers FATAL 08006
when that environmentd cannot be reached (at connect, and mid-session)."""

from __future__ import annotations

import os
import signal
import socket
import struct
import threading
import time

import psycopg
import pytest

from server import Balancer, Server, free_port, replica_jvms

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setup(server, tmp_path_factory):
    """The shared server is the default; a second environmentd serves cluster
    ``quickstart`` (as the one that owns it would); cluster ``gone`` routes to a port
    where nothing listens."""
    d = tmp_path_factory.mktemp("balancer")
    other = Server(d / "mzdata").start(wait_replicas=False)
    b = Balancer(d / "balancer.log", server.port, quickstart=other.port, gone=free_port())
    with server.connect() as c:
        c.execute("CREATE TABLE IF NOT EXISTS on_default (x int)")
    with other.connect() as c:
        c.execute("CREATE TABLE on_other (x int)")
    yield b, server, other
    b.stop()
    other.stop()
    for pid in replica_jvms(other.data_dir):  # left behind by the SIGKILL of their environmentd
        os.kill(pid, signal.SIGKILL)


def _tables(conn) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM mz_tables WHERE name LIKE 'on_%'")}


def test_connections_are_routed_by_the_cluster_in_their_options(setup):
    b, server, other = setup
    with b.connect() as c:
        assert _tables(c) == {"on_default"}
    with b.connect("quickstart") as c:
        assert _tables(c) == {"on_other"}
        assert c.execute("SHOW cluster").fetchone() == ("quickstart",)
    with b.connect(cluster="nowhere") as c:  # no route: the default
        assert _tables(c) == {"on_default"}


def test_a_large_result_arrives_whole_through_the_balancer(setup):
    """200,000 DataRows: messages split across reads reach the client whole and in order."""
    b = setup[0]
    with b.connect() as c:
        cur = c.cursor()
        cur.execute("SELECT x, 'padding to make the rows wider' FROM generate_series(1, 200000) AS x")
        total = 0
        while batch := cur.fetchmany(20000):
            total += sum(r[0] for r in batch)
            time.sleep(0.01)
        assert total == 200000 * 200001 // 2
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_a_cancel_request_reaches_the_environmentd_of_the_session(setup):
    b, server, other = setup
    with b.connect("quickstart") as c, b.connect() as bystander:
        def cancel_soon():
            time.sleep(1.5)
            c.cancel_safe()

        t = threading.Thread(target=cancel_soon)
        t.start()
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            c.execute("SELECT count(*) FROM generate_series(1, 2000000000)")
        t.join()
        assert time.monotonic() - started < 30
        assert c.execute("SELECT 1").fetchone() == (1,)
        # the other session, on the other environmentd, was left alone
        assert bystander.execute("SELECT 2").fetchone() == (2,)


def test_an_unreachable_environmentd_is_a_clear_fatal_08006(setup):
    b = setup[0]
    with pytest.raises(psycopg.OperationalError) as e:
        b.connect("gone")
    assert "the environmentd of cluster 'gone' at 127.0.0.1:" in str(e.value)
    assert "cannot be reached" in str(e.value)
    # libpq does not hand the SQLSTATE of a failed connection to psycopg: read it raw
    params = b"user\x00materialize\x00options\x00-c cluster=gone\x00\x00"
    with socket.create_connection(("127.0.0.1", b.port), 10) as s:
        s.sendall(struct.pack("!II", 8 + len(params), 196608) + params)
        reply = s.recv(1000)
    assert reply[:1] == b"E" and b"SFATAL\x00" in reply and b"C08006\x00" in reply
    # the balancer itself is fine
    with b.connect() as c:
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_sessions_learn_when_their_environmentd_dies(setup):
    """Last in this module: it kills the second environmentd."""
    b, server, other = setup
    with b.connect("quickstart") as c, b.connect() as survivor:
        assert c.execute("SELECT 1").fetchone() == (1,)
        other.proc.send_signal(signal.SIGKILL)
        other.proc.wait(30)
        with pytest.raises(psycopg.OperationalError):
            c.execute("SELECT 1")
        assert survivor.execute("SELECT 1").fetchone() == (1,)
    with pytest.raises(psycopg.OperationalError) as e:
        b.connect("quickstart")
    assert "the environmentd of cluster 'quickstart'" in str(e.value)
