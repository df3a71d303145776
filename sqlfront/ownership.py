"""Which clusters this environmentd runs: cluster ownership by lease (issue 13).

With a shared catalog (``--catalog-url postgres://...``), each cluster is run by exactly
one environmentd: the one holding its lease (``catalog.cluster_leases``). A process
started with ``--clusters a,b`` takes the leases of those clusters (without the flag: of
every cluster) when no live process holds them; with ``--takeover`` it also takes any
other cluster whose lease expired (its owner died). A lease its own address held before
(a restart) it takes back at once. Everything else is the other processes' business.

The lease loop (one thread, every ``duration / 5`` seconds, and at once when the catalog
gains a cluster) renews the leases held, stops the clusters whose lease was taken (a
higher epoch: fenced) or could not be renewed for ``fence_after_s`` (the database is
unreachable: the holder steps down before the lease expires, so that whoever takes it
over never finds our replicas still running), then takes the leases it wants. Gains and
losses are handed to the environment (``on_gain(cluster_id)``, ``on_loss(cluster_id)``),
which starts or stops the ClusterCoordinator and its replicas.

Lease duration: 10 s by default (``--cluster-lease-duration``), renewed every 2 s and
given up after 8 s without a renewal. A takeover costs the lease duration plus the
replica's start (10-20 s of JVM start on a small machine), so a shorter lease would not
shorten the outage much, while a stall of a few seconds (a slow PostgreSQL, CPU
starvation, a GC pause) must not make a healthy process drop its clusters: that costs
the same replica restart.

One process on the sqlite catalog has no leases: it owns every cluster
(:class:`LocalOwnership`), as before issue 13.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from catalog.cluster_leases import Lease, PostgresClusterLeases
from catalog.snapshot import CatalogSnapshot

log = logging.getLogger(__name__)

#: default lease duration (seconds); see the module docstring
DEFAULT_LEASE_S = 10.0


class LocalOwnership:
    """One environmentd on its own catalog: it owns every cluster, always."""

    local = True

    def __init__(self, address: str | None):
        self.address = address

    def owns(self, cluster_id: str) -> bool:
        return True

    def owner_of(self, cluster_id: str) -> str | None:
        """The pgwire address of the cluster's owner: this process."""
        return self.address

    def lease(self, cluster_id: str) -> Lease | None:
        return None

    def start(self) -> None:
        pass

    def poke(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def release(self) -> None:
        pass


class LeasedOwnership:
    """Cluster ownership by the leases of ``leases`` (see the module docstring).

    Args:
        leases: the shared lease table; its ``owner`` is this process's pgwire address.
        clusters: the names of the clusters to own (``--clusters``), None for every one.
        takeover: also take clusters not listed whose lease expired (``--takeover``).
        snapshot: the current catalog (the clusters that exist).
        on_gain, on_loss: start / stop a cluster's ClusterCoordinator (called on the
            lease thread, never under this object's lock).
        statuses: ``{replica id: status}`` of a cluster this process runs, published in
            the lease for the other processes' ``mz_cluster_replicas``.
    """

    local = False

    def __init__(self, leases: PostgresClusterLeases, clusters: tuple[str, ...] | None, takeover: bool,
                 snapshot: Callable[[], CatalogSnapshot], on_gain: Callable[[str], None],
                 on_loss: Callable[[str], None], statuses: Callable[[str], dict[str, str]]):
        self.leases = leases
        self.address = leases.owner
        self.clusters = set(clusters) if clusters is not None else None
        self.takeover = takeover
        self._snapshot = snapshot
        self._on_gain = on_gain
        self._on_loss = on_loss
        self._statuses = statuses
        self.interval_s = leases.duration_s / 5
        #: without a renewal for this long, a holder steps down (before its lease expires)
        self.fence_after_s = leases.duration_s - max(self.interval_s, min(1.0, leases.duration_s / 2))
        self._lock = threading.Lock()
        #: cluster id -> (epoch, monotonic time the last successful renewal was sent)
        self._held: dict[str, tuple[int, float]] = {}
        #: every lease as last read (other processes' clusters), by cluster id
        self._view: dict[str, Lease] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what sessions ask (no I/O) -----------------------------------------------------

    def owns(self, cluster_id: str) -> bool:
        with self._lock:
            return cluster_id in self._held

    def owner_of(self, cluster_id: str) -> str | None:
        """The pgwire address (``HOST:PORT``) of the process that owns the cluster now:
        this one's if it holds the lease, else the live holder's as of the last round
        (at most ``interval_s`` old), None when nobody holds a live lease."""
        with self._lock:
            if cluster_id in self._held:
                return self.address
            lease = self._view.get(cluster_id)
        return lease.owner if lease is not None and lease.live and lease.owner != self.address else None

    def lease(self, cluster_id: str) -> Lease | None:
        """The cluster's lease as of the last round (None if it never had one)."""
        with self._lock:
            return self._view.get(cluster_id)

    # -- the lease loop -------------------------------------------------------------------

    def start(self) -> None:
        """Take the leases wanted now (so boot starts the replicas of the clusters owned),
        then keep renewing them on a thread."""
        try:
            self.round()
        except Exception as e:  # PostgreSQL away at boot: the loop keeps trying
            log.warning("cluster leases: %s", e)
        self._thread = threading.Thread(target=self._loop, name="cluster-leases", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """Run a round now (the catalog gained or lost a cluster)."""
        self._wake.set()

    def stop(self) -> None:
        """Stop the loop (the leases stay held until :meth:`release`)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10)

    def release(self) -> None:
        """Give up every lease held (after their replicas stopped): with ``--takeover``,
        another process takes them at once instead of after the lease expires."""
        with self._lock:
            held, self._held = {c: e for c, (e, _) in self._held.items()}, {}
        try:
            self.leases.release(held)
        except Exception as e:  # they expire on their own
            log.warning("releasing cluster leases: %s", e)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            t = time.monotonic()
            try:
                self.round()
            except Exception as e:  # the next round tries again; held leases fence on time
                log.warning("cluster leases: %s", e)
            took = time.monotonic() - t
            if took > self.fence_after_s / 2:  # what precedes a step-down, in the log
                log.warning("cluster leases: a round took %.1f s (renewed every %.1f s, given up after "
                            "%.1f s without a renewal)", took, self.interval_s, self.fence_after_s)

    def round(self) -> None:
        """One round: renew, step down from what was lost, take what is wanted and free.

        Raises psycopg.Error when PostgreSQL cannot be reached (after stepping down from
        leases not renewed for ``fence_after_s``)."""
        snap = self._snapshot()
        lost: list[str] = []
        try:
            self._renew(snap, lost)
        finally:
            self._fence_stale(lost)
            for cid in lost:
                self._on_loss(cid)
        view = self.leases.all()
        with self._lock:
            self._view = view
            held = set(self._held)
        for c in sorted(snap.clusters.values(), key=lambda c: c.id):
            if c.id in held:
                continue
            lease = view.get(c.id)
            mine_before = lease is not None and lease.owner == self.address
            listed = self.clusters is None or c.name in self.clusters
            free = lease is None or not lease.live
            if not (mine_before or (listed and free) or (self.takeover and lease is not None and not lease.live)):
                continue
            sent = time.monotonic()  # the lease runs from some moment after this
            epoch = self.leases.acquire(c.id, c.name, reclaim=mine_before)
            if epoch is None:
                continue
            with self._lock:
                self._held[c.id] = (epoch, sent)
            log.info("cluster %s: lease taken (epoch %d)%s", c.name, epoch,
                     "" if lease is None or mine_before else f", was {lease.owner}'s")
            self._on_gain(c.id)
        self._refresh_view()

    def _renew(self, snap: CatalogSnapshot, lost: list[str]) -> None:
        with self._lock:
            held = dict(self._held)
        if not held:
            return
        dropped = [cid for cid in held if cid not in snap.clusters]
        if dropped:
            with self._lock:
                for cid in dropped:
                    self._held.pop(cid, None)
            lost.extend(dropped)
            self.leases.forget(dropped)
            held = {c: v for c, v in held.items() if c not in dropped}
        sent = time.monotonic()
        kept = self.leases.renew({cid: (epoch, snap.clusters[cid].name, self._statuses(cid))
                                  for cid, (epoch, _) in held.items()})
        with self._lock:
            for cid, (epoch, _) in held.items():
                if self._held.get(cid, (None,))[0] != epoch:
                    continue
                if cid in kept:
                    self._held[cid] = (epoch, sent)
                else:
                    del self._held[cid]
                    lost.append(cid)
                    log.warning("cluster %s: lease taken by another environmentd (a higher epoch than %d): "
                                "stopping its replicas", snap.clusters[cid].name, epoch)

    def _fence_stale(self, lost: list[str]) -> None:
        now = time.monotonic()
        with self._lock:
            for cid, (epoch, renewed) in list(self._held.items()):
                if now - renewed > self.fence_after_s:
                    del self._held[cid]
                    lost.append(cid)
                    log.warning("cluster %s: lease not renewed for %.1f s: stepping down before it expires",
                                cid, now - renewed)

    def _refresh_view(self) -> None:
        """Read the leases again when this round took any (so ``owner_of`` shows them)."""
        with self._lock:
            stale = any(cid not in self._view or self._view[cid].owner != self.address for cid in self._held)
        if stale:
            view = self.leases.all()
            with self._lock:
                self._view = view
