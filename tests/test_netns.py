"""Several hosts, as network namespaces joined by a bridge (issue 27): environmentd A and B
each in a namespace of its own (its replica JVM with it), PostgreSQL and the balancer on
the bridge's address, Blob in one directory all of them see. Through the balancer with
sslmode=require (TLS on the client's hop and on the hop to environmentd): DDL through A is
seen by B, a write through A is read on B's replica, and a SUBSCRIBE in B sees a write
through A by a PubSub push across the namespaces (TLS), not by polling. Last, A's link is
cut: its cluster moves to B with every acknowledged write (the seconds it took are printed).

Needs root (``ip netns``); skipped otherwise. The Spark standalone master and workers in
namespaces of their own, and a worker dying mid-query: tests/test_netns_spark.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest
from conftest import new_database
from netns import bridged_namespaces
from netns import ip as _ip
from netns import netns_works as _netns_works
from server import (
    Balancer,
    Server,
    fetch_until,
    free_port,
    replica_jvms,
    self_signed,
    start_owner_pair,
    wait_for,
)

pytestmark = pytest.mark.slow

CLEAN = 'persist_pubsub_received_total{applied="clean"}'


@pytest.fixture(scope="module")
def hosts():
    """Namespaces a (10.27.N.2) and b (.3) on a bridge (``bridged_namespaces``)."""
    if not _netns_works():
        pytest.skip("needs root and ip netns")
    with bridged_namespaces(("a", "b")) as net:
        yield net


@pytest.fixture(scope="module")
def cluster(hosts, tmp_path_factory):
    from pg_reference import PostgresReference

    prefix, ns, _ = hosts
    d = tmp_path_factory.mktemp("netns")
    cert, key = self_signed(d, (f"{prefix}.1", f"{prefix}.2", f"{prefix}.3"))
    (d / "pw").write_text("netns-pw\n")
    pg = PostgresReference(host=f"{prefix}.1", trust_network=f"{prefix}.0/24")
    envds: dict[str, Server] = {}
    balancer = None
    try:
        pg.start()
        url = new_database(pg)
        shared = ("--catalog-url", url, "--persist-consensus-url", url, "--timestamp-oracle-url", url,
                  "--persist-blob-url", str(d / "blob"), "--catalog-key-file", str(d / "catalog.key"),
                  "--password-file", str(d / "pw"), "--tls-cert", cert, "--tls-key", key, "--tls-mode", "require")
        # B takes over A's clusters when A's lease expires (a cut link, below)
        for h, n, clusters in (("a", 2, ("--clusters", "quickstart")), ("b", 3, ("--clusters", "cb", "--takeover"))):
            (d / h).mkdir()
            metrics = free_port()
            s = Server(d / h / "mzdata", *shared, *clusters,
                       "--persist-pubsub-listen", f"{prefix}.{n}:{free_port()}",
                       "--metrics-listen", f"127.0.0.1:{metrics}", password="netns-pw", host=f"{prefix}.{n}",
                       prefix=("ip", "netns", "exec", ns[h]), sslmode="require")
            s.metrics = (ns[h], metrics)  # its metrics listen on its own namespace's loopback
            envds[h] = s
        a, b = envds["a"], envds["b"]
        start_owner_pair(a, b)
        balancer = Balancer(d / "balancer.log", None, "--catalog-url", url, "--tls-cert", cert, "--tls-key", key,
                            "--tls-mode", "require", "--backend-tls-ca", cert, host=f"{prefix}.1")
        for s in (a, b):
            with s.connect() as c:
                assert wait_for(lambda: {r[0] for r in c.execute("SELECT status FROM mz_cluster_replicas "
                                                                 "WHERE cluster_id IN (SELECT id FROM mz_clusters "
                                                                 "WHERE environmentd IS NOT NULL)")}
                                == {"healthy"}, 240, 0.5)
        yield balancer, a, b, prefix
    finally:
        if balancer is not None:
            balancer.stop()
        for s in envds.values():
            s.stop()
        pg.stop()


def _metric(server: Server, name: str) -> float:
    ns, port = server.metrics
    code = ("import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())")
    text = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code, f"http://127.0.0.1:{port}/metrics"],
                          check=True, capture_output=True, text=True).stdout
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def _connect(balancer: Balancer, cluster: str) -> psycopg.Connection:
    return balancer.connect(cluster, sslmode="require", password="netns-pw")


def test_clusters_are_owned_by_the_address_each_process_registered(cluster):
    balancer, a, b, prefix = cluster
    with _connect(balancer, "quickstart") as c:
        assert c.pgconn.ssl_in_use
        owners = dict(c.execute("SELECT name, environmentd FROM mz_clusters WHERE name IN ('quickstart', 'cb')"))
    assert owners == {"quickstart": f"{prefix}.2:{a.port}", "cb": f"{prefix}.3:{b.port}"}


def test_ddl_and_writes_through_a_are_read_on_b(cluster):
    balancer = cluster[0]
    with _connect(balancer, "quickstart") as ca, _connect(balancer, "cb") as cb:
        ca.execute("CREATE TABLE across (id int, note text)")
        ca.execute("INSERT INTO across VALUES (1, 'from a'), (2, 'from a')")
        assert wait_for(lambda: cb.execute("SELECT count(*) FROM mz_tables WHERE name = 'across'").fetchone()[0], 30)
        assert cb.execute("SELECT id, note FROM across ORDER BY id").fetchall() == [(1, "from a"), (2, "from a")]


def test_a_subscribe_in_b_sees_a_write_through_a_by_a_push(cluster):
    balancer, _, b, _ = cluster
    with _connect(balancer, "quickstart") as ca, _connect(balancer, "cb") as cb:
        ca.execute("CREATE TABLE pushed (x int)")
        assert wait_for(lambda: cb.execute("SELECT count(*) FROM mz_tables WHERE name = 'pushed'").fetchone()[0], 30)
        cb.execute("SELECT count(*) FROM pushed")  # B reads the shard: it follows it by PubSub
        cb.execute("BEGIN")
        cb.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT x FROM pushed) WITH (PROGRESS)")
        assert fetch_until(cb, "c", 0) == []
        before = _metric(b, CLEAN)
        # B's own reads race the push (a state B already read counts as unclean): a few
        # writes, and at least one must arrive by push across the namespaces
        for i in range(5):
            ca.execute("INSERT INTO pushed VALUES (%s)", (i,))
            assert [r[3] for r in fetch_until(cb, "c", 1, timeout=60)] == [i]
            if wait_for(lambda: _metric(b, CLEAN) > before, 2, 0.2):
                break
        assert _metric(b, CLEAN) > before, "no PubSub push from A reached B"
        cb.execute("ROLLBACK")


def test_cutting_as_link_moves_its_clusters_to_b_with_no_acknowledged_write_lost(cluster, hosts):
    """``ip link set down`` on A's link: A can no longer renew its lease and steps down, B
    takes quickstart over when the lease expires (10 s) and starts its replica, and the
    balancer sends quickstart's sessions to B, where every write A acknowledged is read.
    Prints how long the move took. Runs last: A stays cut off."""
    balancer, a, b, prefix = cluster
    _, ns, links = hosts
    acked = []
    with _connect(balancer, "quickstart") as ca:
        ca.execute("CREATE TABLE kept (i int)")
        for i in range(20):
            ca.execute("INSERT INTO kept VALUES (%s)", (i,))
            acked.append(i)  # acknowledged: it must survive the cut
    cut = time.monotonic()
    _ip("-n", ns["a"], "link", "set", links["a"], "down")

    def answered_by_b() -> bool:
        try:
            with _connect(balancer, "quickstart") as c:
                owner = c.execute("SELECT environmentd FROM mz_clusters WHERE name = 'quickstart'").fetchone()[0]
                return owner == f"{prefix}.3:{b.port}" and [r[0] for r in c.execute(
                    "SELECT i FROM kept ORDER BY i")] == acked
        except psycopg.Error:
            return False

    try:
        assert wait_for(answered_by_b, 240, 1.0), "quickstart did not move to B with every acknowledged write"
        print(f"\nquickstart answered by B {time.monotonic() - cut:.1f} s after A's link went down")
    finally:
        # cut off, A cannot deregister: SIGTERM would wait out its timeouts
        a.stop(signal.SIGKILL)
        for pid in replica_jvms(a.data_dir):  # none once A stepped down; a parent-death signal otherwise
            os.kill(pid, signal.SIGKILL)
