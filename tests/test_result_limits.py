"""A result far larger than a replica's heap streams to the client and leaves every
replica of the cluster running (issue 33: a ~2 GB result killed the JVM of both replicas
of a 2-replica cluster, and an unrelated query failed with 'stopped SparkContext').

The server's one size has a 512 MiB heap; the big queries make about 290 MB of Arrow in
what Spark would otherwise send as one partition (``lower.spread_partitions``)."""

from __future__ import annotations

import json

import pytest

from server import Server

SIZES = {"small": {"workers": 1, "memory_limit": "512MiB"}}

#: 1,200 x 1,200 rows of ~208 characters from a one-partition table: ~290 MB
BIG = "SELECT repeat('x', 200) || a.i || '/' || b.i AS s FROM big a, big b"


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
