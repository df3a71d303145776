"""persist PubSub and listen end to end: a second process (``sqlfront persist-write``)
commits to a table's shard while a SUBSCRIBE in the server follows it."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from server import ROOT, Server, fetch_until, metric_value, wait_for


def write_rows(server, table: str, lines: list[str], *args: str) -> list[dict]:
    """Run ``sqlfront persist-write`` once; returns its commits."""
    p = subprocess.run([sys.executable, "-m", "sqlfront.cli", "persist-write", "--data-dir", str(server.data_dir),
                        "--table", table, *args], input="".join(f"{line}\n" for line in lines), cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


def shard_of(server, table: str) -> str:
    c = sqlite3.connect(str(server.data_dir / "catalog.db"))
    try:
        return c.execute("SELECT shard_id FROM tables WHERE name = ?", (table,)).fetchone()[0]
    finally:
        c.close()


def since_of(server, shard: str) -> int:
    c = sqlite3.connect(str(server.data_dir / "consensus.db"))
    try:
        data = c.execute("SELECT data FROM consensus WHERE shard = ? ORDER BY seqno DESC LIMIT 1", (shard,)).fetchone()
    finally:
        c.close()
    return json.loads(data[0])["since"]


def metric(server, name: str) -> float:
    return metric_value(server.metrics_url, name)



def test_a_commit_in_another_process_reaches_a_subscription_through_pubsub(server, conn):
    conn.execute("CREATE TABLE pushed (a int, b text)")
    conn.execute("INSERT INTO pushed VALUES (1, 'in the server')")
    clean = metric(server, 'persist_pubsub_received_total{applied="clean"}')
    with server.connect(autocommit=False) as follower:
        follower.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT a, b FROM pushed WHERE a > 1) WITH (PROGRESS)")
        assert fetch_until(follower, "c", 0) == []  # the snapshot: no row passes the filter
        commits = write_rows(server, "pushed", ["2\tfrom a writer", "1\tfiltered out"], "--rows-per-commit", "1")
        assert [c["rows"] for c in commits] == [1, 1]
        rows = fetch_until(follower, "c", 1)
        assert [(r[2], r[3], r[4]) for r in rows] == [(1, 2, "from a writer")]
        assert int(rows[0][0]) == commits[0]["ts"]  # at the writer's own timestamp
    # Acknowledged after its commit wait: a read that starts now sees both rows.
    assert conn.execute("SELECT a, b FROM pushed ORDER BY a, b").fetchall() == [
        (1, "filtered out"), (1, "in the server"), (2, "from a writer")]
    # A write in the server after them goes above them.
    conn.execute("INSERT INTO pushed VALUES (3, 'later')")
    assert metric(server, 'persist_pubsub_received_total{applied="clean"}') > clean
    assert metric(server, "persist_pubsub_latency_seconds_count") > 0


def test_pushes_lost_on_the_way_polling_still_delivers(server, conn):
    """The writer pushes to a PubSub address nobody serves: the server, subscribed and
    connected, finds the commit by its fallback poll."""
    conn.execute("CREATE TABLE unpushed (a int)")
    with server.connect(autocommit=False) as follower:
        follower.execute("DECLARE c CURSOR FOR SUBSCRIBE unpushed WITH (PROGRESS)")
        fetch_until(follower, "c", 0)
        polls = metric(server, "persist_fallback_polls_total")
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        try:
            write_rows(server, "unpushed", ["7"], "--pubsub", f"127.0.0.1:{dead.getsockname()[1]}")
        finally:
            dead.close()
        rows = fetch_until(follower, "c", 1, timeout=30)
        assert [(r[2], r[3]) for r in rows] == [(1, 7)]
    assert metric(server, "persist_fallback_polls_total") > polls


def test_a_dropped_connection_frees_the_subscriptions_read_holds(server, conn):
    """A subscription holds its shard's since at its frontier; a client that vanishes
    mid-subscription (no Terminate) frees it. (Since never passes upper - 1, and moves
    in steps of 5 s: the writes below give it room to move.)"""
    conn.execute("CREATE TABLE held (a int)")
    conn.execute("INSERT INTO held VALUES (1)")
    shard = shard_of(server, "held")
    follower = server.connect(autocommit=False)
    follower.execute("DECLARE c CURSOR FOR SUBSCRIBE held")
    t0 = int(follower.execute("FETCH ALL c WITH (TIMEOUT = '1s')").fetchall()[0][0])
    time.sleep(7)
    conn.execute("INSERT INTO held VALUES (2)")  # the follower does not FETCH it: its frontier stays
    time.sleep(2)  # maintenance rounds (every second) would move since 8 s on, but for the hold
    assert since_of(server, shard) <= t0
    s = socket.fromfd(follower.fileno(), socket.AF_INET, socket.SOCK_STREAM)
    s.shutdown(socket.SHUT_RDWR)  # the connection drops under the client
    s.close()
    follower.pgconn.finish()
    assert wait_for(lambda: since_of(server, shard) > t0, timeout=30), "the subscription's holds outlived it"


@pytest.mark.slow
def test_persist_pubsub_off(tmp_path):
    """``--persist-pubsub off``: no PubSub service, no pushes; subscriptions poll."""
    server = Server(tmp_path / "mzdata", "--persist-pubsub", "off").start()
    try:
        assert not (server.data_dir / "persist_pubsub").exists()
        with server.connect() as conn:
            conn.execute("CREATE TABLE polled (a int)")
            with server.connect(autocommit=False) as follower:
                follower.execute("DECLARE c CURSOR FOR SUBSCRIBE polled WITH (PROGRESS)")
                fetch_until(follower, "c", 0)
                write_rows(server, "polled", ["5"])
                assert [(r[2], r[3]) for r in fetch_until(follower, "c", 1)] == [(1, 5)]
                conn.execute("INSERT INTO polled VALUES (6)")
                assert [(r[2], r[3]) for r in fetch_until(follower, "c", 1)] == [(1, 6)]
    finally:
        server.stop()
