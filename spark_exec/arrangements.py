"""Arrangements: the in-memory copies of indexed data that a cluster's replicas keep.

In Materialize an index is an arrangement a cluster maintains: the indexed object's
current rows, kept in memory on every replica of that cluster, so that peeks read
memory instead of storage (Materialize's docs, "Indexes"). An index on a view whose
query has an incremental plan is the view's dataflow, its contents kept on each replica
(``spark_exec.materializations``, ``dataflow.Contents``: issue 25); for the others, here,
each replica caches, with Spark's cache, the Parquet parts of every table an index of
its cluster covers (for an index on a view without an incremental plan: the tables the
view reads, and a peek runs the view's query over them), in the units of
``lower.arranged_units``: each big part alone (parts are immutable, so a write into a
big table costs the caching of its own new part), the small parts together. A unit
that no longer matches the shard (compaction replaced a part, a write added a small
one) is dropped from memory.

Correctness never depends on the cache: a peek reads exactly the parts of its as_of,
in the same units through ``lower.read_parts``, which Spark's cache manager answers
from memory when it holds that unit and from Blob otherwise. A restarted replica
starts with an empty cache and is filled again (its session is new).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from typing import Callable

from catalog.snapshot import Table
from spark_exec.lower import read_parts
from spark_exec.replica import HEALTHY, ReplicaHandle
from spark_exec.state_sizes import parts_key, state_tag

log = logging.getLogger(__name__)

#: table id -> (table, the units of part URLs of its shard now: ``lower.arranged_units``)
WantedFn = Callable[[], dict[str, tuple[Table, list[tuple[str, ...]]]]]


class _Cached:
    """What one replica's current Spark session holds: unit of part URLs -> its table."""

    def __init__(self, session):
        self.session = session
        self.parts: dict[tuple[str, ...], Table] = {}
        #: the fill running on the replica now, if any
        self.fill: Future | None = None


class ArrangementMaintainer:
    """Keeps the arrangements of one cluster's indexes on each of its healthy replicas.

    ``wanted()`` says what to keep; ``poke()`` (after a write or a catalog change)
    makes the next round start at once, else rounds run every ``POLL_S`` seconds. The
    caching runs on each replica's own peek threads (``ReplicaHandle.submit_peek``),
    one fill at a time per replica, so a slow or hung replica delays only itself.
    """

    POLL_S = 1.0

    def __init__(self, label: str, replicas: Callable[[], list[ReplicaHandle]], wanted: WantedFn):
        self.label = label
        self.replicas = replicas
        self.wanted = wanted
        self._arranged: frozenset[str] = frozenset()
        self._cached: dict[str, _Cached] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        #: why the last round failed (None: it did not), each new reason logged once
        self.error: str | None = None
        #: table id -> the units of its parts the last round wanted kept
        self._units: dict[str, tuple] = {}
        self._thread = threading.Thread(target=self._loop, name=f"arrangements-{label}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def poke(self) -> None:
        """Start the next round now (new parts or a changed catalog)."""
        self._wake.set()

    def arranged(self) -> frozenset[str]:
        """Ids of the tables this cluster's indexes cover (peeks read them part by part)."""
        return self._arranged

    def cached_parts(self, replica_id: str) -> int:
        """How many units of parts replica ``replica_id`` holds in memory now."""
        c = self._cached.get(replica_id)
        return len(c.parts) if c else 0

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._round()
                if self.error is not None:
                    log.info("arrangements of cluster %s: maintained again", self.label)
                self.error = None
            except Exception as e:  # the catalog or persist may be mid-change: try again
                if str(e) != self.error:  # reported once, not every round
                    log.warning("arrangements of cluster %s: %s (retrying every %g s)", self.label, e, self.POLL_S)
                self.error = str(e)
            self._wake.wait(self.POLL_S)
            self._wake.clear()

    def hydrated(self, replica_id: str, table_ids) -> bool:
        """Whether replica ``replica_id`` holds every unit of the tables ``table_ids`` in
        memory now, as of the last round, and that round did not fail (an index on them
        is hydrated there: Materialize's mz_internal.mz_hydration_statuses)."""
        c = self._cached.get(replica_id)
        if self.error is not None or c is None:
            return False
        return all(u in c.parts for tid in table_ids for u in self._units.get(tid, ()))

    def _round(self) -> None:
        wanted = self.wanted()
        self._arranged = frozenset(wanted)
        self._units = {tid: tuple(units) for tid, (_, units) in wanted.items()}
        parts = {unit: table for table, units in wanted.values() for unit in units}
        live = set()
        for h in self.replicas():
            live.add(h.id)
            sess = h.session
            if h.status != HEALTHY or sess is None:
                continue
            c = self._cached.get(h.id)
            if c is None or c.session is not sess:  # a new session: nothing cached yet
                c = self._cached[h.id] = _Cached(sess)
            if c.fill is not None and not c.fill.done():
                continue
            add = {u: t for u, t in parts.items() if u not in c.parts}
            drop = {u: t for u, t in c.parts.items() if u not in parts}
            if add or drop:
                c.fill = h.submit_peek(lambda c=c, add=add, drop=drop, label=h.label: self._fill(c, add, drop, label))
        for rid in set(self._cached) - live:
            del self._cached[rid]

    @staticmethod
    def _fill(c: _Cached, add: dict[tuple[str, ...], Table], drop: dict[tuple[str, ...], Table],
              label: str) -> None:
        for unit, table in drop.items():
            read_parts(c.session, table, list(unit)).unpersist()
            c.parts.pop(unit, None)
        for unit, table in add.items():
            df = read_parts(c.session, table, list(unit))
            df.cache()
            with state_tag(c.session, parts_key(table.id)):  # the table's indexes' state (mz_object_arrangement_sizes)
                df.count()  # fills the cache now, not at the first peek
            c.parts[unit] = table
        log.debug("replica %s: arranged %d unit(s) of parts, dropped %d", label, len(add), len(drop))
