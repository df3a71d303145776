"""PersistClient: one process's handle on every shard in a Blob and a Consensus.

It ties the pieces together: writes (:mod:`persist.write`), reads with read holds and
leased readers (:mod:`persist.read`, :mod:`persist.lease`), listens, the periodic
maintenance of a shard (heartbeat, since, GC: :mod:`persist.gc`) and compaction
(:mod:`persist.compact`).

It also keeps the process's one shared copy of each shard's latest known state
(Materialize's ``StateCache``): every compare-and-set this process wins, every state it
reads from Consensus and every state pushed to it through PubSub (:mod:`persist.pubsub`)
lands there, and waiters (:meth:`PersistClient.wait_for_change`, listens) wake on it.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass

import pyarrow as pa

from persist import compact as compaction
from persist import gc
from persist.blob import Blob
from persist.consensus import Consensus, ObservedConsensus
from persist.pubsub import PubSubClient, PubSubMetrics, PubSubServer
from persist.lease import DEFAULT_LEASE_MS, HoldGroup, Leases, ReadHold
from persist.read import (ListenBatch, PartRead, ShardSnapshot, SinceError, change_parts, consolidate_updates,
                          empty_updates, listen_updates, part_table, read_arrow, snapshot_of)
from persist.state import DIFF_COLUMN, Retired, ShardState
from persist.write import (Batch, ShardSealed, UpperMismatch, compare_and_append, inline_room, seal, unseal,
                           write_batch, write_updates, written_batch)

log = logging.getLogger(__name__)


class PersistClient:
    """Read and write shards stored in ``blob`` + ``consensus``.

    ``reader_id`` names this process's leased readers; ids that share its prefix up to
    the first ``:`` belong to earlier runs of the same environment and are dropped at
    startup (:meth:`expire_previous_readers`). PubSub: ``pubsub_server``, a server in this
    process, connected to without gRPC; else ``pubsub_address`` (``host:port``, with
    ``pubsub_token``); neither: polling only."""

    def __init__(self, blob: Blob, consensus: Consensus, reader_id: str | None = None,
                 lease_ms: int = DEFAULT_LEASE_MS, pubsub_address: str | None = None,
                 metrics: PubSubMetrics | None = None, pubsub_token: str | None = None,
                 fence_reads: bool = False, pubsub_server: PubSubServer | None = None,
                 pubsub_credentials=None):
        self.blob = blob
        #: reads advance a shard's upper past their as_of (see :meth:`read`)
        self.fence_reads = fence_reads
        self.metrics = metrics or PubSubMetrics()
        self.consensus = ObservedConsensus(consensus, self._won, self.metrics.consensus_reads.inc)
        self.leases = Leases(self.consensus, reader_id or f"local:{uuid.uuid4().hex[:12]}", lease_ms)
        #: shard -> the latest state this process knows of (its bytes, until first needed)
        self._states: dict[str, ShardState | _Encoded] = {}
        self._states_cv = threading.Condition()
        #: the PubSub connection (None: pubsub off; polling only)
        self.pubsub = (pubsub_server.same_process_connection(self._pushed, self.metrics) if pubsub_server else
                       PubSubClient(pubsub_address, self._pushed, self.metrics, on_disconnect=self._pubsub_down,
                                    token=pubsub_token, credentials=pubsub_credentials)
                       if pubsub_address else None)

    def close(self) -> None:
        """Disconnect from PubSub (the Blob and Consensus stay open)."""
        if self.pubsub is not None:
            self.pubsub.close()

    # -- state --------------------------------------------------------------------------

    def state(self, shard_id: str) -> ShardState:
        """The shard's latest state, read from Consensus (linearizable)."""
        head = self.consensus.head(shard_id)
        if head is None:
            return ShardState()
        st = ShardState.decode(head[1])
        self._learn(shard_id, st)
        return st

    def latest(self, shard_id: str) -> ShardState:
        """The latest state this process knows of (no Consensus read when it knows one):
        at most as old as the last push, poll or compare-and-set. For followers (listen,
        SUBSCRIBE), not for writers, which must read Consensus."""
        st = self._known(shard_id)
        return st if st is not None else self.state(shard_id)

    def _known(self, shard_id: str) -> ShardState | None:
        """The latest state this process knows of, decoded (None: it knows none)."""
        with self._states_cv:
            st = self._states.get(shard_id)
        if isinstance(st, _Encoded):
            st = ShardState.decode(st.data)
            self._learn(shard_id, st)
        return st

    def _learn(self, shard_id: str, st: "ShardState | _Encoded") -> bool:
        """Keep ``st`` if it is newer than what we know (or the decoded form of the same
        seqno); wake waiters. True if it was newer."""
        with self._states_cv:
            cur = self._states.get(shard_id)
            if cur is not None and cur.seqno >= st.seqno:
                if cur.seqno == st.seqno and isinstance(cur, _Encoded) and isinstance(st, ShardState):
                    self._states[shard_id] = st
                return False
            self._states[shard_id] = st
            self._states_cv.notify_all()
        return True

    def _won(self, shard_id: str, seqno: int, data: bytes) -> None:
        """After each compare-and-set this process won: learn the state (as its bytes: the
        writer hands the decoded state to :meth:`_learn` itself, and decoding a state full
        of inline parts at every group commit would cost as much as encoding it), push it."""
        try:
            self._learn(shard_id, _Encoded(seqno, data))
            if self.pubsub is not None:
                self.pubsub.push(shard_id, seqno, data)
        except Exception as e:  # the write is durable; pubsub is best-effort
            log.warning("persist: publishing seqno %d of %s: %s", seqno, shard_id, e)

    def _pushed(self, shard_id: str, seqno: int, diff: bytes, append_us: int) -> None:
        """A push from PubSub: applied when it is the next seqno of the state we know
        (clean); otherwise (a gap, a stale or undecodable push) Consensus is read."""
        with self._states_cv:
            cur = self._states.get(shard_id)
        st = None
        if cur is not None and seqno == cur.seqno + 1:
            try:
                st = ShardState.decode(diff)
                if st.seqno != seqno:
                    st = None
            except Exception:
                st = None
        if st is not None and self._learn(shard_id, st):
            self.metrics.received.labels("clean").inc()
            if append_us:
                self.metrics.latency.observe(max(0.0, time.time() - append_us / 1e6))
            return
        self.metrics.received.labels("unclean").inc()
        if cur is None or seqno > cur.seqno:
            self.state(shard_id)

    def watch(self, shard_id: str) -> None:
        """Follow ``shard_id``: subscribe to its pushes (see :meth:`unwatch`)."""
        if self.pubsub is not None:
            self.pubsub.subscribe(shard_id)

    def unwatch(self, shard_id: str) -> None:
        if self.pubsub is not None:
            self.pubsub.unsubscribe(shard_id)

    def wait_for_change(self, seen: dict[str, int], timeout_s: float, poll: "Backoff") -> bool:
        """Wait up to ``timeout_s`` seconds until some shard of ``seen`` (shard -> the
        seqno the caller last saw) has a newer state in :meth:`latest`. Pushes (and this
        process's own compare-and-sets) wake it at once; otherwise it reads Consensus
        when ``poll`` (kept by the caller across calls) says so: often without PubSub,
        rarely while PubSub is connected and subscribed. Returns whether a change came.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            with self._states_cv:
                while True:
                    if any(self._seqno(s) > n for s, n in seen.items()):
                        poll.reset()
                        return True
                    now = time.monotonic()
                    if now >= deadline:
                        return False
                    if now >= poll.next_at or (poll.pushed and not self._pubsub_up()):
                        break
                    self._states_cv.wait(min(deadline, poll.next_at) - now)
            pushed = self.pubsub is not None and all(self.pubsub.subscribed(s) for s in seen)
            poll.advance(pushed)
            self.metrics.fallback_polls.inc()
            for s in seen:
                self.state(s)

    def _pubsub_up(self) -> bool:
        return self.pubsub is not None and self.pubsub.connected.is_set()

    def _pubsub_down(self) -> None:
        """The PubSub connection dropped: waiters go back to polling often."""
        with self._states_cv:
            self._states_cv.notify_all()

    def _seqno(self, shard_id: str) -> int:
        st = self._states.get(shard_id)
        return st.seqno if st is not None else -1

    def create_shard(self, shard_id: str, since: int) -> None:
        """Start ``shard_id`` empty with since and upper at ``since`` (a new table: reads
        before its creation are not valid). No-op for a shard that already has a state."""
        if self.consensus.head(shard_id) is None:
            st = ShardState(seqno=1, since=since, upper=since)
            self.consensus.compare_and_set(shard_id, None, 1, st.encode())

    # -- writes -------------------------------------------------------------------------

    def write_batch(self, shard_id: str, table: pa.Table, dictionary: bool = True) -> Batch:
        """``table``'s rows as a batch of +1 updates in Blob (``dictionary``:
        :func:`persist.write.encode`'s)."""
        return write_batch(self.blob, shard_id, table, dictionary=dictionary)

    def batch(self, shard_id: str, table: pa.Table) -> Batch:
        """``table``'s rows as a batch of +1 updates: inline when small and the shard's
        latest known state has room for it (:mod:`persist.write`'s limits; the check is
        against this process's latest state, so concurrent writers may pass the total
        limit by a few batches, as Materialize's may), else in Blob."""
        return write_batch(self.blob, shard_id, table, inline_room(self.latest(shard_id)))

    def updates_batch(self, shard_id: str, table: pa.Table) -> Batch:
        """``table``'s updates (last column ``_mz_diff``, ``_mz_time`` before it) as a
        batch: inline when small and the shard's state has room (as :meth:`batch`), else
        in Blob (:func:`persist.write.write_updates`)."""
        return write_updates(self.blob, shard_id, table, inline_room(self.latest(shard_id)))

    def written_batch(self, key: str, diffs: bool) -> Batch:
        return written_batch(self.blob, key, diffs)

    def new_part_url(self, shard_id: str) -> tuple[str, str]:
        """(key, url) for a part another process (a replica) is about to write."""
        key = self.blob.new_part_key(shard_id)
        return key, self.blob.url(key)

    def compare_and_append(self, shard_id: str, batches: list[Batch], expected_upper: int,
                           ts: int, known: ShardState | None = None) -> ShardState | UpperMismatch:
        r = compare_and_append(self.consensus, shard_id, batches, expected_upper, ts, known)
        if isinstance(r, ShardState):
            self._learn(shard_id, r)
            if r.seqno % self.TRUNCATE_EVERY == 0:
                self._truncate(shard_id, r)
        return r

    #: a writer truncates its shard's Consensus history every this many seqnos
    TRUNCATE_EVERY = 32

    def _truncate(self, shard_id: str, st: ShardState) -> None:
        """Delete the Consensus versions of ``shard_id`` below the oldest seqno a live
        reader may read (:mod:`persist.gc`'s rule). The writer does it, not only the
        maintenance round: a round truncates only when it commits a state of its own (since
        moved far enough), so sustained small writes piled up versions, each a full state
        with its inline parts, between rounds (issue 28's fourth hole)."""
        try:
            self.consensus.truncate(shard_id, st.oldest_reader_seqno(gc.now_ms()))
        except Exception as e:  # the write is durable; the next truncation catches up
            log.warning("persist: truncating %s: %s", shard_id, e)

    def seal(self, shard_id: str, expected_upper: int | None = None) -> ShardState | UpperMismatch:
        """Seal ``shard_id`` if its upper is ``expected_upper`` (:func:`persist.write.seal`)."""
        r = seal(self.consensus, shard_id, expected_upper)
        if isinstance(r, ShardState):
            self._won(shard_id, r.seqno, r.encode())
        return r

    def unseal(self, shard_id: str) -> None:
        """Let writes land on ``shard_id`` again (:func:`persist.write.unseal`)."""
        r = unseal(self.consensus, shard_id)
        if r is not None:
            self._won(shard_id, r.seqno, r.encode())

    def append(self, shard_id: str, table: pa.Table, ts: int) -> ShardState:
        """Append ``table``'s rows at ``ts`` (tests, tools): the shard's upper must be <= ts.

        Raises:
            ValueError: the shard's upper is already past ``ts``."""
        b = self.write_batch(shard_id, table) if table.num_rows else None
        while True:
            upper = self.state(shard_id).upper
            if ts < upper:
                if b is not None:
                    self.blob.delete(b.key)
                raise ValueError(f"shard {shard_id}: upper {upper} is past {ts}")
            r = self.compare_and_append(shard_id, [b] if b else [], upper, ts)
            if not isinstance(r, UpperMismatch):
                return r

    def read_batch(self, b: Batch) -> pa.Table:
        """The updates of a batch not yet appended, as written (:meth:`write_batch`)."""
        return part_table(PartRead(self.blob.url(b.key), b.diffs, inline=b.inline))

    def delete_batch(self, b: Batch) -> None:
        """Delete a batch that was never appended (an inline one has nothing in Blob)."""
        if b.inline is None:
            self.blob.delete(b.key)

    # -- reads --------------------------------------------------------------------------

    def read(self, shard_id: str, as_of: int) -> tuple[ShardSnapshot, ReadHold]:
        """The snapshot of ``shard_id`` at ``as_of``, with a read hold that keeps its parts
        until :meth:`release`.

        With ``fence_reads`` (several processes write the shard, timestamps from a shared
        oracle), a shard whose upper is still at or below ``as_of`` first gets its upper
        advanced to ``as_of + 1`` by an empty compare-and-append, so a write in flight in
        another process at a time <= ``as_of`` fails its compare-and-append and goes above:
        the snapshot at ``as_of`` never changes once read (Materialize reads wait until
        the upper passes the as_of; the coordinator advances table uppers. Here the
        reader advances it).

        Raises:
            SinceError: ``as_of`` is below the shard's since.
            ShardSealed: the shard was dropped (:meth:`drop_shard`; the reader plans again
                against the catalog that replaced it, ``sqlfront.sequence.writes.replanned``)."""
        st, hold = self.held_state(shard_id, as_of, fence=self.fence_reads)
        try:
            return snapshot_of(st, shard_id, as_of, self.blob.url), hold
        except SinceError:
            self.leases.release(hold)
            if st.sealed and not st.parts:  # a dropped shard's tombstone (drop_shard)
                raise ShardSealed(shard_id) from None
            raise
        except BaseException:
            self.leases.release(hold)
            raise

    def held_state(self, shard_id: str, as_of: int, fence: bool = False) -> tuple[ShardState, ReadHold]:
        """The shard's latest state, read from Consensus, with a read hold at ``as_of`` on
        it: GC keeps every part it lists until :meth:`release`. No since check (the
        caller's). ``fence``: advance an upper at or below ``as_of`` first (:meth:`read`).

        A state known before the hold is not safe to read: a maintenance round between
        learning it and holding it may move this process's reader past it (no hold
        then) and GC may delete the parts it lists. So the hold comes first, at the
        latest state known here; a state read from Consensus after it is at or above the
        reader's seqno from then on, and GC keeps its parts (Materialize persist: a
        reader's seqno hold is taken before the state it fetches is read)."""
        first = self.leases.acquire(shard_id, self.latest(shard_id), as_of)
        try:
            st = self.state(shard_id)
            if fence and st.seqno and st.upper <= as_of:
                st = self.advance_upper(shard_id, as_of, st)
            return st, self.leases.acquire(shard_id, st, as_of)
        finally:
            self.leases.release(first)

    def hold(self, shard_id: str, as_of: int) -> ReadHold:
        """A read hold at ``as_of`` without a snapshot yet (Materialize: a peek acquires
        read holds on its inputs when it picks its timestamp, before it waits for their
        uppers): from now until :meth:`release`, this process keeps the shard's since at
        or below ``as_of``, and GC keeps every part of the latest state known here. When
        this process's reader is already registered with a since above ``as_of`` (an
        ``AS OF`` in the past), its since is lowered to ``as_of`` first. Since is checked
        against the latest state known here (no Consensus read): a :meth:`read`, which
        reads Consensus, is the linearizable check.

        Raises:
            SinceError: ``as_of`` is below the shard's since."""
        st = self.latest(shard_id)
        if as_of < st.since:
            raise SinceError(shard_id, as_of, st.since)
        h = self.leases.acquire(shard_id, st, as_of)
        try:
            self.leases.lower_since(shard_id, st, as_of)
        except BaseException:
            self.leases.release(h)
            raise
        return h

    def advance_upper(self, shard_id: str, ts: int, st: ShardState | None = None) -> ShardState:
        """The shard's state once its upper is past ``ts``: an empty compare-and-append at
        ``ts`` unless a writer passed it first (``st``: the state already read, if any)."""
        st = st if st is not None else self.state(shard_id)
        while st.upper <= ts:
            r = self.compare_and_append(shard_id, [], st.upper, ts)
            st = self.state(shard_id) if isinstance(r, UpperMismatch) else r
        return st

    def read_point(self, shard_id: str, st: ShardState, read_ts: int) -> tuple[int, ShardState]:
        """``(as_of, state)`` for a read of ``shard_id`` whose writes must land at
        ``state.upper`` exactly (an UPDATE's or DELETE's compare-and-append, an ALTER
        TABLE's seal): a read at ``as_of`` sees every update below that upper. ``st``: the
        shard's state read before; ``read_ts``: the oracle's read timestamp.

        Without ``fence_reads``: ``max(st.upper - 1, read_ts)`` and ``st``. With it, the
        upper is first advanced past that time (another process may still write at or
        below it: :meth:`read`), and ``as_of`` is the new upper - 1: a write that landed
        between ``st`` and the fence is below that upper, so the read must be at or after
        it. (Reading at the time chosen before the fence and expecting the fenced upper
        lost such a write: two concurrent UPDATEs of one row both committed, the chaos
        checker's ``duplicate``.)

        Raises:
            ShardSealed: the shard was sealed or dropped meanwhile."""
        as_of = max(st.upper - 1, read_ts)
        if not self.fence_reads:
            return as_of, st
        st = self.advance_upper(shard_id, as_of, st)
        return st.upper - 1, st

    def listen(self, shard_id: str, as_of: int) -> "Listen":
        """Follow ``shard_id``'s updates after ``as_of`` (see :class:`Listen`).

        Raises:
            SinceError: ``as_of`` is below the shard's since."""
        return Listen(self, shard_id, as_of)

    def release(self, hold: ReadHold) -> None:
        self.leases.release(hold)

    def hold_group(self) -> HoldGroup:
        """An empty :class:`~persist.lease.HoldGroup` of this client's holds."""
        return HoldGroup(self.release)

    def read_table(self, shard_id: str, schema: pa.Schema, as_of: int | None = None) -> pa.Table:
        """All rows visible at ``as_of`` (default: the shard's upper - 1) as one Arrow
        table (small reads, tests)."""
        st = self.state(shard_id)
        as_of = max(st.upper - 1, st.since) if as_of is None else as_of
        snap, hold = self.read(shard_id, as_of)
        try:
            return read_arrow(snap, schema)
        finally:
            self.release(hold)

    def read_changes(self, shard_id: str, schema: pa.Schema, lower: int, upper: int,
                     max_updates: int | None = None) -> pa.Table | None:
        """The shard's updates at times in ``(lower, upper]``, consolidated (each row whose
        diffs there sum to ``n != 0`` comes ``|n|`` times, with ``_mz_diff`` its sign):
        columns ``schema``, then ``_mz_diff``. The difference of the snapshots at ``upper``
        and ``lower`` without reading either: memory is the change's, not the shard's.
        None when the parts holding those times have more than ``max_updates`` updates.

        Exact only while since is at most ``lower`` (compaction moves times at or below
        since forward): a read hold at ``lower`` is held while the parts are read.

        Raises:
            SinceError: ``lower`` is below the shard's since."""
        st, hold = self.held_state(shard_id, lower)
        try:
            if lower < st.since:
                raise SinceError(shard_id, lower, st.since)
            if max_updates is not None and \
                    sum(p.updates for p in change_parts(st, lower, upper)) > max_updates:
                return None
            tables = [t.select(schema.names).cast(schema).append_column(DIFF_COLUMN, t.column(DIFF_COLUMN))
                      for t in listen_updates(st, lower + 1, upper + 1, self.blob.url)]
        finally:
            self.release(hold)
        return consolidate_updates(pa.concat_tables(tables), schema) if tables else empty_updates(schema)

    # -- maintenance --------------------------------------------------------------------

    #: since moves in steps of at least this (ms), heartbeats come every lease / 4: an
    #: idle shard costs a compare-and-set now and then, not every round
    SINCE_STEP_MS = 5000

    def maintain(self, shard_id: str, desired_since: int, force: bool = False) -> ShardState | None:
        """Heartbeat this process's reader on ``shard_id``, advance the shard's since
        toward ``desired_since`` (as far as every live reader allows), drop expired
        readers, then delete the parts no reader can reach and truncate Consensus.
        Without ``force``, nothing is written while the change would be small (since
        moving less than ``SINCE_STEP_MS``, a fresh heartbeat, nothing to collect).
        Returns the new state (None: the shard has no state). While PubSub brings the
        shard's states, the first attempt starts from the latest known state instead of
        reading Consensus (a stale one only loses the compare-and-set, and the retry reads
        Consensus)."""
        cached = self.pubsub is not None and self.pubsub.subscribed(shard_id)
        while True:
            cur = self._known(shard_id) if cached else None
            cached = False
            if cur is None:
                head = self.consensus.head(shard_id)
                if head is None:
                    return None
                cur = ShardState.decode(head[1])
                self._learn(shard_id, cur)
            changes = self.leases.heartbeat(cur, shard_id, desired_since)
            readers = changes.get("readers", cur.readers)
            probe = cur.next(readers=readers)
            keys, keep = gc.collectable(probe)
            live = [r.since for r in readers]
            since = max(cur.since, min(live) if live else desired_since)
            since = min(since, max(cur.upper - 1, cur.since))
            new = cur.next(readers=readers, retired=keep, since=since)
            if new.readers == cur.readers and new.since == cur.since and not keys:
                return cur
            me, was = new.reader(self.leases.reader_id), cur.reader(self.leases.reader_id)
            # A step that settles a part (all its updates at or below since) is never
            # small: an idle shard's since would otherwise stop short of its last writes,
            # and the merges waiting for since to pass them would never run.
            settles = any(cur.since < p.max_time() <= since for p in cur.parts)
            # Nor is a step of this process's own reader: with several processes reading
            # the shard, its since is the oldest reader's, so it cannot move until each
            # process writes its reader forward; judging by the shard's since alone, none
            # ever would (until the heartbeat is due, lease / 4 later).
            own = me is not None and was is not None and me.since - was.since >= self.SINCE_STEP_MS
            small = (since - cur.since < self.SINCE_STEP_MS and not own and not settles and not keys
                     and not cur.retired
                     and len(new.readers) == len(cur.readers)
                     and (me is None or was is None or me.heartbeat_ms - was.heartbeat_ms < self.leases.lease_ms // 4))
            if small and not force:
                return cur
            if self.consensus.compare_and_set(shard_id, cur.seqno, new.seqno, new.encode()):
                gc.delete_and_truncate(self.consensus, self.blob, shard_id, keys,
                                       new.oldest_reader_seqno(gc.now_ms()))
                return new

    def compact(self, shard_id: str, merge: compaction.MergeFn | None = None,
                max_parts: int = compaction.MAX_PARTS) -> ShardState | None:
        return compaction.compact(self.consensus, self.blob, shard_id, merge, max_parts)

    def expire_previous_readers(self) -> None:
        """Remove readers of an earlier run of this environment from every shard (that
        process is gone: its holds need not wait for the lease to run out)."""
        prefix = self.leases.reader_id.split(":", 1)[0] + ":"
        for shard_id in self.consensus.keys():
            while True:
                head = self.consensus.head(shard_id)
                cur = ShardState.decode(head[1])
                readers = tuple(r for r in cur.readers if not r.reader_id.startswith(prefix)
                                or r.reader_id == self.leases.reader_id)
                if readers == cur.readers:
                    break
                new = cur.next(readers=readers)
                if self.consensus.compare_and_set(shard_id, head[0], new.seqno, new.encode()):
                    break

    def gc_orphans(self, live_shards: set[str] | None = None, deletable=None) -> int:
        """Delete parts no state refers to, and the state and parts of shards not in
        ``live_shards`` (a DROP TABLE a crash interrupted). Only at startup, or with
        ``deletable(key)`` saying which unreferenced parts may go (``gc.orphans``).
        Returns how many parts were deleted."""
        keys = gc.orphans(self.consensus, self.blob, live_shards, deletable)
        for k in keys:
            self.blob.delete(k)
        if live_shards is not None:
            for shard in self.consensus.keys():
                if shard not in live_shards:
                    self.consensus.delete_shard(shard)
        return len(keys)

    def forget_shard(self, shard_id: str) -> None:
        """Delete a shard's parts and state outright, leaving no tombstone: only for a
        shard no writer but its creator ever knew of (its id may be handed out again)."""
        st = self.state(shard_id)
        self.consensus.delete_shard(shard_id)
        for k in st.blob_keys():
            self.blob.delete(k)
        self.leases.forget(shard_id)
        with self._states_cv:
            self._states.pop(shard_id, None)

    def drop_shard(self, shard_id: str) -> bool:
        """Drop a shard: its state becomes a *tombstone*: sealed, with no parts, so a
        writer that planned against the catalog of before the drop gets
        :class:`~persist.write.ShardSealed` instead of reviving the shard (Materialize
        keeps finalized shards' tombstones the same way), and its since at its upper, so a
        read of it fails (ShardSealed too) instead of finding it empty. Its parts are
        *retired* at the tombstone's seqno and deleted by GC's seqno rule
        (:mod:`persist.gc`): a read in flight (of this process or another) that took its snapshot from a state
        before the drop keeps them until it releases its hold (Materialize finalizes a
        shard only once every read hold on it is gone). Idempotent: call it again until it
        returns True (``sqlfront.finalize`` does, each maintenance round). Tombstones of
        shards no catalog refers to are removed at the next start (:meth:`gc_orphans`).
        Only for shards no catalog object refers to.

        Returns True when none of the shard's parts is left in Blob."""
        while True:
            head = self.consensus.head(shard_id)
            if head is None:
                self.leases.forget(shard_id)
                return True
            st = ShardState.decode(head[1])
            in_blob = tuple(sorted(p.key for p in st.parts if p.inline is None))
            tomb = st.next(sealed=True, parts=(), since=max(st.since, st.upper),
                           retired=st.retired + ((Retired(st.seqno + 1, in_blob),) if in_blob else ()))
            if st.sealed and not st.parts and st.since == tomb.since:
                break  # a tombstone already
            if self.consensus.compare_and_set(shard_id, st.seqno, tomb.seqno, tomb.encode()):
                self._learn(shard_id, tomb)
                break
        st = self.maintain(shard_id, tomb.since)  # heartbeat our reader, collect what no read holds
        if st is None or st.retired:
            return st is None
        self.consensus.truncate(shard_id, st.seqno)
        self.leases.forget(shard_id)
        return True


@dataclass(frozen=True)
class _Encoded:
    """A state known by its bytes only (one this process wrote), decoded when needed."""

    seqno: int
    data: bytes


@dataclass
class Backoff:
    """When a follower reads Consensus next, without a push (polling with backoff, the
    fallback of the pubsub seed). Without PubSub it starts at ``POLL_S`` and doubles up
    to ``MAX_POLL_S`` while nothing changes (Materialize's old ~300 ms of latency);
    with PubSub connected it waits ``PUBSUB_POLL_S`` doubling to ``PUBSUB_MAX_POLL_S``."""

    POLL_S = 0.01
    MAX_POLL_S = 0.25
    PUBSUB_POLL_S = 1.0
    PUBSUB_MAX_POLL_S = 8.0

    interval: float = 0.0
    next_at: float = 0.0
    #: the current interval assumes pushes arrive
    pushed: bool = False

    def reset(self) -> None:
        self.interval, self.pushed = 0.0, False
        self.next_at = time.monotonic() + self.POLL_S

    def advance(self, pushed: bool) -> None:
        lo, hi = (self.PUBSUB_POLL_S, self.PUBSUB_MAX_POLL_S) if pushed else (self.POLL_S, self.MAX_POLL_S)
        if pushed != self.pushed:
            self.interval, self.pushed = 0.0, pushed
        self.interval = min(max(self.interval * 2, lo), hi)
        self.next_at = time.monotonic() + self.interval


__all__ = ["Backoff", "Listen", "PersistClient", "SinceError", "UpperMismatch"]


class Listen:
    """A shard's updates after ``as_of``, as its upper advances (Materialize persist's
    ``Listen``): :meth:`next` yields a :class:`~persist.read.ListenBatch` with the updates at
    times in ``[frontier, upper)`` each time the upper passes the frontier. It follows
    the shard through PubSub pushes when connected, else by polling Consensus with
    backoff. It holds a read hold at ``frontier - 1`` (so since and GC stay behind it)
    until :meth:`close`. Not thread-safe: one consumer drives it.

    Raises (at creation):
        SinceError: ``as_of`` is below the shard's since."""

    def __init__(self, client: "PersistClient", shard_id: str, as_of: int):
        self.client = client
        self.shard_id = shard_id
        st = client.state(shard_id)  # from Consensus: the since ``hold`` checks is the latest
        self._hold = client.hold(shard_id, as_of)
        #: every update below this was yielded (or was in the snapshot at as_of)
        self.frontier = as_of + 1
        self._seqno = st.seqno
        self._poll = Backoff()
        self.closed = False
        client.watch(shard_id)

    def next(self, timeout_s: float) -> ListenBatch | None:
        """The updates since the last batch, waiting up to ``timeout_s`` seconds for the
        upper to pass the frontier; None when it did not. Part files are read here."""
        st = self.client.latest(self.shard_id)
        if st.upper <= self.frontier:
            self._seqno = max(self._seqno, st.seqno)
            if not self.client.wait_for_change({self.shard_id: self._seqno}, timeout_s, self._poll):
                return None
            st = self.client.latest(self.shard_id)
            self._seqno = st.seqno
            if st.upper <= self.frontier:
                return None
        # Hold the new state before reading its parts; the old hold keeps them until then.
        hold = self.client.leases.acquire(self.shard_id, st, st.upper - 1)
        tables = listen_updates(st, self.frontier, st.upper, self.client.blob.url)
        self.client.release(self._hold)
        self._hold = hold
        lower, self.frontier, self._seqno = self.frontier, st.upper, st.seqno
        return ListenBatch(lower, st.upper, pa.concat_tables(tables, promote_options="permissive") if tables else None)

    def close(self) -> None:
        """Release the read hold and stop following the shard. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self.client.release(self._hold)
        self.client.unwatch(self.shard_id)
