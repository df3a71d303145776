"""Cluster leases on a real PostgreSQL (catalog.cluster_leases, sqlfront.ownership),
without environmentd or Spark: one holder at a time, takeover only after expiry, a
higher epoch fences the old holder, a restart reclaims its own lease at once, a clean
release lets a takeover happen at once, a renewal stuck on a lock fails in time, and a
holder that cannot renew steps down before its lease expires."""

from __future__ import annotations

import time
from types import SimpleNamespace

import psycopg
import pytest

from catalog.cluster_leases import PostgresClusterLeases, read_routes
from catalog.snapshot import Cluster
from conftest import new_database
from sqlfront.ownership import LeasedOwnership

A, B = "127.0.0.1:7001", "127.0.0.1:7002"


@pytest.fixture
def url(postgres):
    return new_database(postgres)


def test_one_holder_until_expiry_then_a_higher_epoch_fences_the_old_one(url):
    a, b = PostgresClusterLeases(url, A, 1.0), PostgresClusterLeases(url, B, 1.0)
    try:
        assert a.acquire("u1", "c", reclaim=False) == 1
        assert b.acquire("u1", "c", reclaim=True) is None  # reclaim is for one's own address only
        assert a.renew({"u1": (1, "c", {"u5": "healthy"})}) == {"u1"}
        lease = b.all()["u1"]
        assert (lease.owner, lease.epoch, lease.live, lease.replica_statuses) == (A, 1, True, {"u5": "healthy"})
        time.sleep(1.2)  # a stopped renewing: the lease expires
        assert not b.all()["u1"].live
        assert b.acquire("u1", "c", reclaim=False) == 2
        assert a.renew({"u1": (1, "c", {})}) == set()  # fenced by epoch 2
        assert a.acquire("u1", "c", reclaim=False) is None  # b's lease is live
        with psycopg.connect(url, autocommit=True) as c:
            assert read_routes(c) == {"c": B}
    finally:
        a.close()
        b.close()


def test_a_renewal_stuck_on_a_lock_fails_within_a_quarter_lease(url):
    """A renewal waiting on a row lock (or a stalled server) must not hang the lease loop
    past its step-down: PostgreSQL cancels it after a quarter of the lease."""
    a = PostgresClusterLeases(url, A, 4.0)
    try:
        assert a.acquire("u1", "c", reclaim=False) == 1
        with psycopg.connect(url) as locker:  # a transaction holding the lease row
            locker.execute("SELECT * FROM cluster_leases WHERE cluster_id = 'u1' FOR UPDATE")
            t = time.monotonic()
            with pytest.raises(psycopg.errors.QueryCanceled):
                a.renew({"u1": (1, "c", {})})
            assert time.monotonic() - t < 3.0  # 1 s statement timeout, not the lock's holder
        assert a.renew({"u1": (1, "c", {})}) == {"u1"}  # the lock gone, the next renewal works
    finally:
        a.close()


def test_a_restart_reclaims_its_own_lease_and_a_release_frees_it_at_once(url):
    a, b = PostgresClusterLeases(url, A, 30.0), PostgresClusterLeases(url, B, 30.0)
    a2 = PostgresClusterLeases(url, A, 30.0)  # A again, after a restart
    try:
        assert a.acquire("u1", "c", reclaim=False) == 1
        assert a2.acquire("u1", "c", reclaim=True) == 2  # no wait for expiry
        assert a.renew({"u1": (1, "c", {})}) == set()  # the earlier incarnation is fenced
        assert b.acquire("u1", "c", reclaim=False) is None
        a2.release({"u1": 2})
        assert b.acquire("u1", "c", reclaim=False) == 3
    finally:
        for x in (a, b, a2):
            x.close()


class Recorder:
    def __init__(self):
        self.gained, self.lost = [], []


def ownership(url, owner, clusters, takeover, snap, duration=1.5):
    rec = Recorder()
    o = LeasedOwnership(PostgresClusterLeases(url, owner, duration), clusters, takeover, lambda: snap,
                        rec.gained.append, rec.lost.append, lambda cid: {})
    return o, rec


def test_listed_clusters_are_taken_and_unlisted_ones_only_after_their_owner_died(url):
    snap = SimpleNamespace(clusters={c.id: c for c in (Cluster("u1", "c1"), Cluster("u2", "c2"),
                                                        Cluster("u3", "c3"))})
    oa, ra = ownership(url, A, ("c1",), False, snap)
    ob, rb = ownership(url, B, ("c2",), True, snap)
    try:
        oa.round()
        ob.round()
        assert (ra.gained, rb.gained) == (["u1"], ["u2"])  # c3: listed nowhere, never leased
        oa.round()
        assert (oa.owner_of("u1"), oa.owner_of("u2"), oa.owner_of("u3")) == (A, B, None)
        time.sleep(1.7)  # A stops renewing (it died): its lease expires
        ob.round()
        assert rb.gained == ["u2", "u1"] and ob.owner_of("u1") == B
        oa.round()  # A was only paused: it sees the higher epoch and stops u1
        assert ra.lost == ["u1"] and not oa.owns("u1")
    finally:
        oa.leases.close()
        ob.leases.close()


def test_a_holder_that_cannot_renew_steps_down_before_its_lease_expires(url):
    snap = SimpleNamespace(clusters={"u1": Cluster("u1", "c1")})
    oa, ra = ownership(url, A, None, False, snap)
    try:
        oa.round()
        assert ra.gained == ["u1"]
        assert oa.fence_after_s < oa.leases.duration_s

        def unreachable(held):  # the edge: PostgreSQL is gone
            raise psycopg.OperationalError("connection refused")

        oa.leases.renew = unreachable
        time.sleep(oa.fence_after_s + 0.1)
        with pytest.raises(psycopg.OperationalError):
            oa.round()
        assert ra.lost == ["u1"] and not oa.owns("u1")
        assert oa.leases.all()["u1"].live  # stepped down while the lease still held
    finally:
        oa.leases.close()
