"""PersistClient: one process's handle on every shard in a Blob and a Consensus.

It ties the pieces together: writes (:mod:`persist.write`), reads with read holds and
leased readers (:mod:`persist.read`, :mod:`persist.lease`), the periodic maintenance of a
shard (heartbeat, since, GC: :mod:`persist.gc`) and compaction (:mod:`persist.compact`).
"""

from __future__ import annotations

import logging
import uuid

import pyarrow as pa

from persist import compact as compaction
from persist import gc
from persist.blob import Blob
from persist.consensus import Consensus
from persist.lease import DEFAULT_LEASE_MS, Leases, ReadHold
from persist.read import ShardSnapshot, SinceError, read_arrow, snapshot_of
from persist.state import ShardState
from persist.write import Batch, UpperMismatch, compare_and_append, write_batch, written_batch

log = logging.getLogger(__name__)


class PersistClient:
    """Read and write shards stored in ``blob`` + ``consensus``.

    ``reader_id`` names this process's leased readers; ids that share its prefix up to
    the first ``:`` belong to earlier runs of the same environment and are dropped at
    startup (:meth:`expire_previous_readers`)."""

    def __init__(self, blob: Blob, consensus: Consensus, reader_id: str | None = None,
                 lease_ms: int = DEFAULT_LEASE_MS):
        self.blob = blob
        self.consensus = consensus
        self.leases = Leases(consensus, reader_id or f"local:{uuid.uuid4().hex[:12]}", lease_ms)

    # -- state --------------------------------------------------------------------------

    def state(self, shard_id: str) -> ShardState:
        head = self.consensus.head(shard_id)
        return ShardState.decode(head[1]) if head else ShardState()

    def create_shard(self, shard_id: str, since: int) -> None:
        """Start ``shard_id`` empty with since and upper at ``since`` (a new table: reads
        before its creation are not valid). No-op for a shard that already has a state."""
        if self.consensus.head(shard_id) is None:
            st = ShardState(seqno=1, since=since, upper=since)
            self.consensus.compare_and_set(shard_id, None, 1, st.encode())

    # -- writes -------------------------------------------------------------------------

    def write_batch(self, shard_id: str, table: pa.Table) -> Batch:
        return write_batch(self.blob, shard_id, table)

    def written_batch(self, key: str, diffs: bool) -> Batch:
        return written_batch(self.blob, key, diffs)

    def new_part_url(self, shard_id: str) -> tuple[str, str]:
        """(key, url) for a part another process (a replica) is about to write."""
        key = self.blob.new_part_key(shard_id)
        return key, self.blob.url(key)

    def compare_and_append(self, shard_id: str, batches: list[Batch], expected_upper: int,
                           ts: int) -> ShardState | UpperMismatch:
        return compare_and_append(self.consensus, shard_id, batches, expected_upper, ts)

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

    def delete_batch(self, b: Batch) -> None:
        """Delete a batch that was never appended."""
        self.blob.delete(b.key)

    # -- reads --------------------------------------------------------------------------

    def read(self, shard_id: str, as_of: int) -> tuple[ShardSnapshot, ReadHold]:
        """The snapshot of ``shard_id`` at ``as_of``, with a read hold that keeps its parts
        until :meth:`release`.

        Raises:
            SinceError: ``as_of`` is below the shard's since."""
        st = self.state(shard_id)
        hold = self.leases.acquire(shard_id, st, as_of)
        try:
            return snapshot_of(st, shard_id, as_of, self.blob.url), hold
        except BaseException:
            self.leases.release(hold)
            raise

    def release(self, hold: ReadHold) -> None:
        self.leases.release(hold)

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
        Returns the new state (None: the shard has no state)."""
        while True:
            head = self.consensus.head(shard_id)
            if head is None:
                return None
            cur = ShardState.decode(head[1])
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
            small = (since - cur.since < self.SINCE_STEP_MS and not keys and not cur.retired
                     and len(new.readers) == len(cur.readers)
                     and (me is None or was is None or me.heartbeat_ms - was.heartbeat_ms < self.leases.lease_ms // 4))
            if small and not force:
                return cur
            if self.consensus.compare_and_set(shard_id, head[0], new.seqno, new.encode()):
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

    def gc_orphans(self, live_shards: set[str] | None = None) -> int:
        """Delete parts no state refers to, and the state and parts of shards not in
        ``live_shards`` (a DROP TABLE a crash interrupted). Only at startup. Returns how
        many parts were deleted."""
        keys = gc.orphans(self.consensus, self.blob, live_shards)
        for k in keys:
            self.blob.delete(k)
        if live_shards is not None:
            for shard in self.consensus.keys():
                if shard not in live_shards:
                    self.consensus.delete_shard(shard)
        return len(keys)

    def drop_shard(self, shard_id: str) -> None:
        """Delete a shard's parts and state. Only for shards no catalog object refers to."""
        st = self.state(shard_id)
        self.consensus.delete_shard(shard_id)
        for p in st.parts:
            self.blob.delete(p.key)
        for r in st.retired:
            for k in r.keys:
                self.blob.delete(k)
        self.leases.forget(shard_id)


__all__ = ["PersistClient", "SinceError", "UpperMismatch"]
