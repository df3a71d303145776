"""Arrangements: the in-memory copies of indexed data that a cluster's replicas keep.

In Materialize an index is an arrangement a cluster maintains: the indexed object's
current rows, kept in memory on every replica of that cluster, so that peeks read
memory instead of storage (Materialize's docs, "Indexes"). Here each replica caches,
with Spark's cache, every Parquet part of every table an index of its cluster covers
(for an index on a view: the tables the view reads). Parts are immutable, so caching
is part by part: a write costs the caching of its own new part, and a part that
compaction replaced is dropped from memory.

Correctness never depends on the cache: a peek reads exactly the parts of its as_of,
each through ``lower.read_parts`` of that one part, which Spark's cache manager
answers from memory when it holds that part and from Blob otherwise. A restarted
replica starts with an empty cache and is filled again (its session is new).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from typing import Callable

from catalog.snapshot import Table
from spark_exec.lower import read_parts
from spark_exec.replica import HEALTHY, ReplicaHandle

log = logging.getLogger(__name__)

#: table id -> (table, the part URLs of its shard now)
WantedFn = Callable[[], dict[str, tuple[Table, tuple[str, ...]]]]


class _Cached:
    """What one replica's current Spark session holds: part URL -> its table."""

    def __init__(self, session):
        self.session = session
        self.parts: dict[str, Table] = {}
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
        """How many parts replica ``replica_id`` holds in memory now."""
        c = self._cached.get(replica_id)
        return len(c.parts) if c else 0

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._round()
            except Exception as e:  # the catalog or persist may be mid-change: try again
                log.warning("arrangements of cluster %s: %s", self.label, e)
            self._wake.wait(self.POLL_S)
            self._wake.clear()

    def _round(self) -> None:
        wanted = self.wanted()
        self._arranged = frozenset(wanted)
        parts = {u: table for table, urls in wanted.values() for u in urls}
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
    def _fill(c: _Cached, add: dict[str, Table], drop: dict[str, Table], label: str) -> None:
        for url, table in drop.items():
            read_parts(c.session, table, [url]).unpersist()
            c.parts.pop(url, None)
        for url, table in add.items():
            df = read_parts(c.session, table, [url])
            df.cache()
            df.count()  # fills the cache now, not at the first peek
            c.parts[url] = table
        log.debug("replica %s: arranged %d part(s), dropped %d", label, len(add), len(drop))
