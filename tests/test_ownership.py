"""Cluster ownership across two environmentd processes (issue 13), through the wire, on
a real PostgreSQL, with the balancer routing by the owners' leases:

- A runs ``--clusters quickstart``, B runs ``--clusters cb --takeover``: each runs its
  own cluster's replica only, ``mz_clusters.environmentd`` says who owns what through
  either, and a peek (or ``SET cluster``) on the other's cluster is a clear 55000 naming
  its owner, the session staying usable;
- concurrent INSERTs through both processes, 10,000 rows, each read through the other
  process right after its acknowledgement: the recorded history is checked (every write
  acknowledged before a read started is in it, whole; nothing is lost or doubled);
- SIGKILL of A while 200 peeks run on cb through the balancer: none fails; B takes over
  quickstart once A's lease expires and the balancer sends quickstart's connections to
  B; A restarted does not take it back (B's lease is live) and names B as its owner.

One module-scoped pair of processes (two replica JVMs, a third for the takeover).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import psycopg
import pytest

from conftest import new_database
from server import Balancer, Server, replica_jvms, seen_by, start_owner_pair, wait_for

#: short leases, so the takeover test waits seconds, not the default 10 s
LEASE_S = "5"
ROWS_PER_INSERT = 250
INSERTS_PER_WRITER = 10
WRITERS = 4  # 2 through each process: 4 * 10 * 250 = 10,000 rows


@pytest.fixture(scope="module")
def envds(tmp_path_factory, postgres):
    d = tmp_path_factory.mktemp("ownership")
    url = new_database(postgres)
    shared = ("--catalog-url", url, "--persist-consensus-url", url, "--timestamp-oracle-url", url,
              "--persist-blob-url", str(d / "blob"), "--catalog-key-file", str(d / "catalog.key"),
              "--cluster-lease-duration", LEASE_S)
    (d / "a").mkdir()
    (d / "b").mkdir()
    a = Server(d / "a" / "mzdata", *shared, "--clusters", "quickstart")
    b = Server(d / "b" / "mzdata", *shared, "--clusters", "cb", "--takeover")
    bal = None
    try:
        start_owner_pair(a, b)  # a bootstraps quickstart; b waits for cluster cb
        bal = Balancer(d / "balancer.log", None, "--catalog-url", url)
        for s in (a, b):  # both replicas up, as each process sees them (its own, or its owner's lease)
            with s.connect() as c:
                assert wait_for(lambda: {r[0] for r in c.execute("SELECT status FROM mz_cluster_replicas")}
                                == {"healthy"}, 180, 0.3)
        yield a, b, bal, url
    finally:
        if bal is not None:
            bal.stop()
        for s in (a, b):
            s.stop()
            for pid in replica_jvms(s.data_dir):
                os.kill(pid, signal.SIGKILL)


def addr(s: Server) -> str:
    return f"127.0.0.1:{s.port}"



def test_each_process_runs_its_own_clusters_and_names_the_owner_of_the_others(envds):
    a, b, bal, url = envds
    for s in (a, b):
        with s.connect() as c:
            assert dict(c.execute("SELECT name, environmentd FROM mz_clusters").fetchall()) == \
                {"quickstart": addr(a), "cb": addr(b)}
    # two processes never run one cluster's replicas: one JVM each
    assert len(replica_jvms(a.data_dir)) == 1 and len(replica_jvms(b.data_dir)) == 1
    with a.connect() as c:
        c.execute("CREATE TABLE owned (x int)")
        c.execute("INSERT INTO owned VALUES (1), (2)")
        assert c.execute("SELECT sum(x) FROM owned").fetchone() == (3,)
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as e:
            c.execute("SET cluster = cb")
        assert f"cluster 'cb' is owned by the environmentd at {addr(b)}" in str(e.value)
        assert "-c cluster=cb" in e.value.diag.message_hint
        assert c.execute("SHOW cluster").fetchone() == ("quickstart",)  # unchanged, session usable
    seen_by(b, "owned")
    with psycopg.connect(a.url, autocommit=True, options="-c cluster=cb") as c:
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as e:
            c.execute("SELECT sum(x) FROM owned")
        assert f"owned by the environmentd at {addr(b)}" in str(e.value)
        assert c.execute("SELECT 1").fetchone() == (1,)  # no table read: no cluster needed
    # the balancer sends each cluster's sessions to its owner, where peeks run
    for cluster in ("quickstart", "cb"):
        with bal.connect(cluster) as c:
            assert c.execute("SELECT sum(x) FROM owned").fetchone() == (3,)
    with bal.connect() as c:  # no cluster named: quickstart's owner
        assert c.execute("SELECT sum(x) FROM owned").fetchone() == (3,)


def check_history(writes: list[tuple], reads: list[tuple]) -> None:
    """``writes``: (writer, batch, invoked, acknowledged); ``reads``: (started, ended,
    {(writer, batch): rows}). Every write acknowledged before a read started is in that
    read, whole; every batch a read shows is whole and was invoked before the read ended
    (times: one monotonic clock)."""
    invoked = {(w, i): t0 for w, i, t0, _ in writes}
    for started, ended, seen in reads:
        for key, n in seen.items():
            assert n == ROWS_PER_INSERT, f"batch {key} seen with {n} rows"
            assert invoked[key] < ended, f"batch {key} seen before it was written"
        for w, i, _, acked in writes:
            if acked < started:
                assert (w, i) in seen, f"batch {(w, i)} acknowledged {started - acked:.3f}s before a read missed it"


def test_concurrent_inserts_through_both_none_lost_each_visible_through_the_other(envds):
    a, b, bal, url = envds
    with a.connect() as c:
        c.execute("CREATE TABLE hist (w int, i int, j int)")
    seen_by(b, "hist")
    # writers 0, 2 write through A (quickstart) and read through B (cb); 1, 3 the reverse
    writes, reads, errors = [], [], []

    def writer(k: int) -> None:
        mine, other = ("quickstart", "cb") if k % 2 == 0 else ("cb", "quickstart")
        try:
            with bal.connect(mine) as w, bal.connect(other) as r:
                for i in range(INSERTS_PER_WRITER):
                    values = ", ".join(f"({k}, {i}, {j})" for j in range(ROWS_PER_INSERT))
                    t0 = time.monotonic()
                    w.execute(f"INSERT INTO hist VALUES {values}")
                    writes.append((k, i, t0, time.monotonic()))
                    t2 = time.monotonic()
                    seen = r.execute("SELECT w, i, count(*) FROM hist GROUP BY w, i").fetchall()
                    reads.append((t2, time.monotonic(), {(x, y): n for x, y, n in seen}))
        except Exception as e:  # reported below, not lost in the thread
            errors.append(repr(e))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(writes) == WRITERS * INSERTS_PER_WRITER and len(reads) == len(writes)
    check_history(writes, reads)
    for s in (a, b):
        with s.connect(options=f"-c cluster={'quickstart' if s is a else 'cb'}") as c:
            assert c.execute("SELECT count(*) FROM (SELECT DISTINCT w, i, j FROM hist) AS d").fetchone() == (10_000,)
            assert c.execute("SELECT count(*) FROM hist").fetchone() == (10_000,)


@pytest.mark.slow
def test_sigkill_of_one_envd_fails_no_query_on_the_other_and_its_clusters_are_taken_over(envds):
    """Last in this module: it kills A."""
    a, b, bal, url = envds
    with a.connect() as c:
        c.execute("CREATE TABLE IF NOT EXISTS owned (x int)")
    seen_by(b, "owned")
    results, errors = [], []
    done = threading.Semaphore(0)

    def run(n: int) -> None:
        try:
            with bal.connect("cb") as c:
                for _ in range(n):
                    try:
                        results.append(c.execute("SELECT count(*) FROM owned").fetchone()[0])
                    except Exception as e:
                        errors.append(repr(e))
                    done.release()
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=run, args=(50,)) for _ in range(4)]
    for t in threads:
        t.start()
    for _ in range(20):
        done.acquire()
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait(30)
    killed_at = time.monotonic()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 200
    # B takes quickstart over once A's lease expires, and the balancer follows
    def quickstart_on_b():
        try:
            with bal.connect("quickstart") as c:
                return c.execute("SELECT count(*) FROM owned").fetchone() is not None
        except psycopg.Error:
            return False

    assert wait_for(quickstart_on_b, 120, 0.5)
    assert time.monotonic() - killed_at >= float(LEASE_S) - 1  # not before the lease expired
    with psycopg.connect(url) as c:  # one change of hands: epoch 2
        assert c.execute("SELECT owner, epoch FROM cluster_leases WHERE cluster_name = 'quickstart'").fetchone() \
            == (addr(b), 2)
    with b.connect() as c:
        assert dict(c.execute("SELECT name, environmentd FROM mz_clusters").fetchall()) == \
            {"quickstart": addr(b), "cb": addr(b)}
    # A comes back: B's lease is live, so A runs no replica and names B as the owner
    a.start(wait_replicas=False)
    with a.connect() as c:
        assert wait_for(lambda: c.execute("SELECT environmentd FROM mz_clusters WHERE name = 'quickstart'")
                        .fetchone() == (addr(b),), 30, 0.2)
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as e:
            c.execute("SELECT count(*) FROM owned")
        assert f"owned by the environmentd at {addr(b)}" in str(e.value)
    assert replica_jvms(a.data_dir) == [] and len(replica_jvms(b.data_dir)) == 2
