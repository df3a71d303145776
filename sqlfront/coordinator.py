"""The Coordinator main loop: this process's only writer of the catalog.

It runs on one thread and accepts a closed set of commands:

``Transact(build)``

    Run ``build(snapshot, ids)`` — a pure function that validates a DDL statement
    against the current snapshot and returns catalog ops (bounded: linear in the
    catalog's size) — then commit the ops in one sqlite transaction, publish the new
    snapshot, and hand replica changes to the ClusterCoordinators (``ensure_replica`` /
    ``drop_replica`` return at once: processes start and stop on other threads).
    Dropped shards are deleted on a background thread.

follow (shared catalog only)

    Publish the transactions other environmentd processes committed to the shared
    catalog (``catalog.durable_postgres``) since our snapshot, with the same side
    effects as our own commits. A follower thread asks for it when the log's version
    moved (LISTEN/NOTIFY, polling as the fallback).

Nothing on the loop waits on Spark, a replica, a client socket or a timer. SELECTs
and writes never enter it: sessions plan against ``snapshot`` and talk to the
ClusterCoordinators and persist directly (seeds/small-coordinator.md).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable

from catalog import durable
from catalog.builtins import RESERVED_IDS
from catalog.errors import SqlError, INTERNAL_ERROR, SERIALIZATION_FAILURE
from catalog.snapshot import ENVIRONMENT, CatalogSnapshot, Scope
from persist.shard_id import ShardId, catalog_shard_id

log = logging.getLogger(__name__)


#: how often a DDL statement is planned again after another environmentd committed first
MAX_CATALOG_CONFLICTS = 10
#: the loop's command to follow a shared catalog
_FOLLOW = object()


class IdAllocator:
    """Hands out ids (``u1``, ``u2``, ...) per kind during one transaction."""

    def __init__(self, next_ids):
        self.next = dict(next_ids)

    def allocate(self, kind: str) -> str:
        """The next id of ``kind``, skipping the reserved ones (``catalog.builtins.RESERVED_IDS``)."""
        while True:
            n = self.next.get(kind, 1)
            self.next[kind] = n + 1
            if f"u{n}" not in RESERVED_IDS.get(kind, ()):
                return f"u{n}"

    def allocate_shard(self) -> ShardId:
        """A new shard's id, minted by persist from the next ``shard`` id (one shard id per
        catalog transaction that takes it, across processes sharing the catalog)."""
        return catalog_shard_id(self.allocate("shard"))


BuildFn = Callable[[CatalogSnapshot, IdAllocator], list]


@dataclass
class Transact:
    build: BuildFn
    reply: Future
    #: who ``build`` reads the catalog as: the submitting statement's session (its
    #: search_path and roles: names resolve, and privileges are checked, as the statement's)
    scope: Scope = ENVIRONMENT
    #: commit even when ``build`` returns no ops (an id reservation: only ``next_ids`` move)
    commit_empty: bool = False


class Coordinator:
    """Owns the catalog store and the current snapshot. With a shared catalog
    (``catalog.durable_postgres``; a store with ``changes_since``), a commit that another
    environmentd beat (40001) is planned again after following its changes, and a
    follower thread (woken by the store's notifications, else every
    ``FOLLOW_INTERVAL_S``) makes the loop follow changes between commits. ``on_commit(old, new, ops)`` is
    called on the loop after each commit (it must not block).

    The loop survives any exception: one from ``build`` or the store fails its own
    statement only; one from a side effect (``on_commit``) or from bookkeeping is logged
    and counted (``errors``, ``on_error``), and the loop takes the next command."""

    #: seconds between polls of a shared catalog's latest version (without notifications)
    FOLLOW_INTERVAL_S = 0.5

    def __init__(self, store: durable.CatalogStore, snapshot: CatalogSnapshot,
                 on_commit: Callable[[CatalogSnapshot, CatalogSnapshot, list], None],
                 observe: Callable[[str, float], None] | None = None,
                 on_error: Callable[[], None] | None = None):
        self.store = store
        self.observe = observe
        #: called once per error that escaped a command or a side effect (a metric)
        self.on_error = on_error
        #: errors that escaped a command or a side effect; the loop carried on after each
        self.errors = 0
        self._snapshot = snapshot
        self.on_commit = on_commit
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="coordinator", daemon=True)
        self.busy_seconds = 0.0
        self.commands = 0
        self._stopped = threading.Event()

    @property
    def snapshot(self) -> CatalogSnapshot:
        """The latest committed catalog; reading it takes no lock (snapshots are immutable)."""
        return self._snapshot

    def start(self) -> None:
        self._thread.start()
        if hasattr(self.store, "latest_version"):
            threading.Thread(target=self._poll, name="catalog-follow", daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()
        self._queue.put(None)
        self._thread.join(5)

    def transact(self, build: BuildFn, scope: Scope = ENVIRONMENT) -> CatalogSnapshot:
        """Submit a catalog transaction and wait for it; returns the committed snapshot.
        ``build`` is given the latest catalog as ``scope`` reads it (a session's statement:
        ``Session.scope``; by default the environment's own work).

        Raises whatever ``build`` raises (a SqlError for invalid DDL); nothing is
        written then."""
        fut: Future = Future()
        self._queue.put(Transact(build, fut, scope))
        return fut.result()

    def reserve_id(self, kind: str) -> str:
        """Take the next id of ``kind`` (``IdAllocator.allocate``) for good: a catalog
        transaction with no ops that only moves ``next_ids``, so no later transaction, of
        this process or another sharing the catalog, hands it out again. For a transaction
        block's DDL, which commits its ops later (``sqlfront.sequence.block_ddl``); an id
        of a block that rolls back stays unused, as a sequence value does."""
        out: list[str] = []

        def build(snap: CatalogSnapshot, ids: IdAllocator) -> list:
            out[:] = [ids.allocate(kind)]
            return []

        fut: Future = Future()
        self._queue.put(Transact(build, fut, commit_empty=True))
        fut.result()
        return out[0]

    def follow(self) -> None:
        """Ask the loop to apply the catalog changes other processes committed (a shared
        catalog); returns at once."""
        self._queue.put(_FOLLOW)

    def _follow(self) -> None:
        """On the loop: publish each transaction another process committed since our
        snapshot, with its side effects (``on_commit``), as if it were ours."""
        for old, new, ops in self.store.changes_since(self._snapshot.version):
            self._snapshot = new
            try:
                self.on_commit(old, new, ops)
            except BaseException as e:
                self._report(e)

    def _poll(self) -> None:
        """Follow a shared catalog: wake on its change notifications (or every
        ``FOLLOW_INTERVAL_S``, the polling fallback) and follow when its version moved."""
        while not self._stopped.is_set():
            self.store.wait_for_change(self.FOLLOW_INTERVAL_S)
            try:
                if self.store.latest_version() > self._snapshot.version:
                    self.follow()
            except Exception as e:  # the next round tries again
                log.warning("following the catalog: %s", e)

    def _loop(self) -> None:
        while True:
            cmd = self._queue.get()
            if cmd is None:
                return
            if cmd is _FOLLOW:
                try:
                    self._follow()
                except BaseException as e:
                    self._report(e)
                continue
            start = time.perf_counter()
            try:
                self._transact(cmd)
            except BaseException as e:  # the loop must survive anything: later DDL waits on it
                self._report(e)
                if not cmd.reply.done():
                    cmd.reply.set_exception(SqlError(INTERNAL_ERROR, f"catalog transaction failed: {e}"))
            try:
                took = time.perf_counter() - start
                self.busy_seconds += took
                self.commands += 1
                if self.observe:
                    self.observe("transact", took)
            except BaseException as e:
                self._report(e)

    def _report(self, e: BaseException) -> None:
        """Log an error that escaped a command or its side effects, and count it."""
        self.errors += 1
        log.error("Coordinator: %s: %s", type(e).__name__, e, exc_info=e)
        if self.on_error is not None:
            try:
                self.on_error()
            except BaseException:
                pass

    def _transact(self, cmd: Transact) -> None:
        for attempt in range(MAX_CATALOG_CONFLICTS):
            old = self._snapshot
            try:
                ids = IdAllocator(old.next_ids)
                ops = cmd.build(old.scoped(cmd.scope), ids)
                if not ops and not cmd.commit_empty:
                    cmd.reply.set_result(old)
                    return
                new = self.store.transact(old, ops, ids.next)
            except BaseException as e:
                if getattr(e, "sqlstate", None) == SERIALIZATION_FAILURE and attempt + 1 < MAX_CATALOG_CONFLICTS \
                        and hasattr(self.store, "changes_since"):
                    # another environmentd committed first: follow, then plan again
                    self._follow()
                    continue
                cmd.reply.set_exception(e)
                return
            break
        self._snapshot = new
        try:
            self.on_commit(old, new, ops)
        except BaseException as e:  # the catalog is committed; side effects are best effort
            self._report(e)
        cmd.reply.set_result(new)
