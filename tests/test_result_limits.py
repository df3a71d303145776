"""A result far larger than a replica's heap streams to the client and leaves every
replica of the cluster running (issue 33: a ~2 GB result killed the JVM of both replicas
of a 2-replica cluster, and an unrelated query failed with 'stopped SparkContext').

The server's one size has a 512 MiB heap; the big queries make about 290 MB of Arrow in
what Spark would otherwise send as one partition (``lower.spread_partitions``)."""

from __future__ import annotations

import json
import os
import re
import signal
import threading

import psycopg
import pytest
from server import Server, wait_for

SIZES = {"small": {"workers": 1, "memory_limit": "512MiB"}}

#: 1,200 x 1,200 rows of ~208 characters from a one-partition table: ~290 MB
BIG = "SELECT repeat('x', 200) || a.i || '/' || b.i AS s FROM big a, big b"


#: a result estimated at over a million rows (spread: it runs alone, ``spark_exec.crashes``)
#: that takes hours to find it has no rows (four-way: Spark ran a three-way one over 1,200
#: rows in 7 s, sooner than the test killed its replica)
ENDLESS = "SELECT a.i, b.i, c.i, d.i FROM big a, big b, big c, big d WHERE a.i + b.i + c.i + d.i < 0"


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("results") / "mzdata", "--cluster-replica-sizes", json.dumps(SIZES),
               "--bootstrap-replica-size", "small").start()
    with s.connect() as c:
        c.execute("CREATE CLUSTER two REPLICAS (r1 (SIZE 'small'), r2 (SIZE 'small'))")
        c.execute("CREATE TABLE big (i int)")
        c.execute("INSERT INTO big SELECT generate_series(1, 1200)")
    yield s
    s.stop()


def fetch_all(c, sql: str) -> tuple[int, object, object]:
    """(rows, first, last) of ``sql`` read through a named cursor 50,000 rows at a time."""
    n, first, last = 0, None, None
    with c.transaction(), c.cursor("big_result") as cur:
        cur.execute(sql)
        while rows := cur.fetchmany(50_000):
            first = rows[0] if first is None else first
            n, last = n + len(rows), rows[-1]
    return n, first, last


def replica_starts(server: Server) -> int:
    """How many times any replica process of ``server`` was started."""
    return sum(p.read_text(errors="replace").count("=== starting")
               for p in (server.data_dir / "replicas").glob("*/replica.log"))


@pytest.mark.slow
def test_big_results_stream_and_every_replica_lives(small_server):
    starts = replica_starts(small_server)
    with small_server.connect() as c:
        c.execute("SET cluster = two")
        assert fetch_all(c, BIG)[0] == 1_440_000
        n, first, last = fetch_all(c, BIG + " ORDER BY a.i DESC, b.i DESC")
        assert (n, first[0][200:], last[0][200:]) == (1_440_000, "1200/1200", "1/1")
        rows = c.execute("SELECT r.name, r.status FROM mz_cluster_replicas r JOIN mz_clusters c "
                         "ON r.cluster_id = c.id WHERE c.name = 'two' ORDER BY 1").fetchall()
        assert rows == [("r1", "healthy"), ("r2", "healthy")]
    assert replica_starts(small_server) == starts  # no replica died and restarted meanwhile


def replica_statuses(c) -> list[tuple[str, str, str]]:
    return c.execute("SELECT r.name, r.id, r.status FROM mz_cluster_replicas r JOIN mz_clusters c "
                     "ON r.cluster_id = c.id WHERE c.name = 'two' ORDER BY 1").fetchall()


def test_a_query_that_kills_its_replica_fails_and_spares_the_others(small_server):
    """A risky peek runs on one replica; when that replica dies running it (SIGKILL here,
    as the kernel would for memory), the query fails naming the replica and is not sent
    to the other one, which answers the next query at once."""
    with small_server.connect() as c:
        c.execute("SET cluster = two")
        assert wait_for(lambda: all(s == "healthy" for _, _, s in replica_statuses(c)), 180)
        ids = {name: rid for name, rid, _ in replica_statuses(c)}
        starts = {rid: replica_log(small_server, rid).count("=== starting") for rid in ids.values()}
        log_at = small_server.log_path.stat().st_size
        failed: list[psycopg.Error] = []

        def run():
            with small_server.connect() as q:
                q.execute("SET cluster = two")
                try:
                    q.execute(ENDLESS)
                except psycopg.Error as e:
                    failed.append(e)

        t = threading.Thread(target=run)
        t.start()

        def alone_on() -> str | None:
            with open(small_server.log_path, "rb") as f:
                f.seek(log_at)
                m = re.search(rb"runs alone on replica two\.(r\d)", f.read())
            return m and m.group(1).decode()

        victim = wait_for(alone_on, 120, 0.05)
        assert victim
        os.kill(int((small_server.data_dir / "replicas" / ids[victim] / "pid").read_text()), signal.SIGKILL)
        t.join(120)
        assert not t.is_alive() and len(failed) == 1
        e = failed[0]
        assert (e.sqlstate, e.diag.message_primary) == (
            "XX000", f'replica two.{victim} of cluster "two" crashed running the query (killed by signal 9)')
        assert "not sent to the cluster's other replicas" in e.diag.message_hint
        # The other replica never ran it: it was never sent there, it answers now, and it
        # was never restarted.
        with open(small_server.log_path, "rb") as f:
            f.seek(log_at)
            assert set(re.findall(rb"runs alone on replica two\.(r\d)", f.read())) == {victim.encode()}
        assert c.execute("SELECT count(*) FROM big").fetchone() == (1200,)
        other = ids["r2" if victim == "r1" else "r1"]
        assert replica_log(small_server, other).count("=== starting") == starts[other]
        # The victim comes back on its own.
        assert wait_for(lambda: all(s == "healthy" for _, _, s in replica_statuses(c)), 180)
        assert replica_log(small_server, ids[victim]).count("=== starting") == starts[ids[victim]] + 1


def replica_log(server: Server, replica_id: str) -> str:
    return (server.data_dir / "replicas" / replica_id / "replica.log").read_text(errors="replace")
