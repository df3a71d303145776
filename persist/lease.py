"""Leased readers: what keeps a read's parts alive and its as_of answerable.

Each process has one *leased reader* per shard it reads, registered in the shard's state
(Materialize persist's ``LeasedReaderState``): its ``seqno`` keeps GC from deleting any part
a state from that seqno on refers to, its ``since`` holds back the shard's since. Reads in
flight are *read holds* kept in memory; the reader in the state is kept at or below every
hold (registered at the seqno of the first read, moved forward only by :meth:`heartbeat`
to the oldest hold) and renewed by the same heartbeat. A process that dies stops
heartbeating; its readers expire after ``lease_ms`` (Materialize's default: 15 minutes)
and the next heartbeat of a live reader removes them.

No timers decide what is deleted: only seqnos (the fix the sharded-persist-reads seed
asks for).
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, replace

from persist.consensus import Consensus
from persist.read import SinceError
from persist.state import LeasedReader, ShardState

#: Materialize's default reader lease (persist's ``reader_lease_duration``)
DEFAULT_LEASE_MS = 15 * 60 * 1000


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class ReadHold:
    """A read in flight: it reads state ``seqno`` of ``shard_id`` at ``as_of``."""

    hold_id: int
    shard_id: str
    seqno: int
    as_of: int


class HoldGroup:
    """Read holds released together: a peek's, a dataflow round's (Materialize's read
    holds of one peek or dataflow). Holds may be added from other threads, and after
    :meth:`release`: replicas racing a read take their snapshots' holds on their own
    threads, and one that lost the race (a replica killed and restarted under it, whose
    client then retried) may read after the reader finished. A hold added after
    :meth:`release` is released at once: a late reader leaks nothing, where a hold left
    behind would pin the shard's since and every part retired after it, forever.
    Thread-safe."""

    def __init__(self, release):
        self._release_one = release
        self._lock = threading.Lock()
        self._holds: list[ReadHold] = []
        self._released = False

    def add(self, hold: ReadHold) -> ReadHold:
        with self._lock:
            if not self._released:
                self._holds.append(hold)
                return hold
        self._release_one(hold)
        return hold

    def release(self) -> None:
        """Release every hold (idempotent); any added later is released when added."""
        with self._lock:
            holds, self._holds, self._released = self._holds, [], True
        for h in holds:
            self._release_one(h)

    def __len__(self) -> int:
        with self._lock:
            return len(self._holds)


class Leases:
    """This process's leased readers and read holds (thread-safe)."""

    def __init__(self, consensus: Consensus, reader_id: str, lease_ms: int = DEFAULT_LEASE_MS):
        self.consensus = consensus
        self.reader_id = reader_id
        self.lease_ms = lease_ms
        self._lock = threading.Lock()
        self._holds: dict[int, ReadHold] = {}
        self._ids = itertools.count(1)
        #: shards whose state has our reader
        self._registered: set[str] = set()

    def acquire(self, shard_id: str, state: ShardState, as_of: int) -> ReadHold:
        """Hold ``state`` (just read from Consensus) of ``shard_id`` for a read at ``as_of``,
        registering this process's reader in the shard's state first if needed (one
        compare-and-set per shard and process). The caller then checks ``as_of`` against the
        since of the state it reads, and must :meth:`release` the hold."""
        with self._lock:
            h = ReadHold(next(self._ids), shard_id, state.seqno, as_of)
            self._holds[h.hold_id] = h
        if shard_id not in self._registered:
            try:
                self._register(shard_id, state.seqno)
            except BaseException:
                self.release(h)
                raise
        return h

    def release(self, hold: ReadHold) -> None:
        with self._lock:
            self._holds.pop(hold.hold_id, None)

    def holds(self, shard_id: str) -> list[ReadHold]:
        with self._lock:
            return [h for h in self._holds.values() if h.shard_id == shard_id]

    def _register(self, shard_id: str, seqno: int) -> None:
        while True:
            head = self.consensus.head(shard_id)
            cur = ShardState.decode(head[1]) if head else ShardState()
            if cur.reader(self.reader_id) is not None:
                break
            # At or below the hold that made us register (its state may be older than cur).
            r = LeasedReader(self.reader_id, min(seqno, cur.seqno), cur.since, now_ms(), self.lease_ms)
            new = cur.next(readers=cur.readers + (r,))
            if self.consensus.compare_and_set(shard_id, head[0] if head else None, new.seqno, new.encode()):
                break
        with self._lock:
            self._registered.add(shard_id)

    def lower_since(self, shard_id: str, state: ShardState, as_of: int) -> None:
        """Move this process's reader on ``shard_id`` down to ``as_of`` when its since is
        above it, so the shard's since cannot pass a hold just taken there (heartbeats
        only ever raise a reader's since). ``state``: the latest state known here (our
        own compare-and-sets are in it); a compare-and-set only when it shows our reader
        above ``as_of``.

        Raises:
            SinceError: the shard's since is already above ``as_of``."""
        while True:
            me = state.reader(self.reader_id)
            if state.since > as_of:
                raise SinceError(shard_id, as_of, state.since)
            if me is None or me.since <= as_of:
                return
            mine = replace(me, since=as_of)
            new = state.next(readers=tuple(mine if r is me else r for r in state.readers))
            if self.consensus.compare_and_set(shard_id, state.seqno, new.seqno, new.encode()):
                return
            head = self.consensus.head(shard_id)
            state = ShardState.decode(head[1]) if head else ShardState()

    def registered(self) -> list[str]:
        with self._lock:
            return sorted(self._registered)

    def heartbeat(self, cur: ShardState, shard_id: str, desired_since: int) -> dict:
        """The changes to ``cur`` that renew this process's reader on ``shard_id``: its
        seqno moves to the oldest hold's (or to ``cur.seqno`` when none), its since to
        ``desired_since`` held back by every hold's as_of; expired readers go. Returns the
        ``ShardState.next`` keyword arguments (empty when this process has no reader)."""
        me = cur.reader(self.reader_id)
        if me is None:
            return {}
        holds = self.holds(shard_id)
        seqno = min((h.seqno for h in holds), default=cur.seqno)
        since = min([desired_since] + [h.as_of for h in holds])
        t = now_ms()
        mine = LeasedReader(self.reader_id, max(me.seqno, min(seqno, cur.seqno)), max(me.since, since), t,
                            self.lease_ms)
        readers = tuple(mine if r.reader_id == self.reader_id else r for r in cur.readers if
                        r.reader_id == self.reader_id or not r.expired(t))
        return {"readers": readers}

    def forget(self, shard_id: str) -> None:
        with self._lock:
            self._registered.discard(shard_id)
