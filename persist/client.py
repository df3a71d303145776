"""PersistClient: appends to shards and takes snapshots of them.

Writers add a Parquet part to Blob first and then publish it with a compare-and-set
on the shard's state; a writer that loses the race re-reads the state and retries, so
concurrent appends never lose one another. A part that never got published is garbage
and is never read.
"""

from __future__ import annotations

import io
import logging
import threading
import uuid
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.parquet as pq

from persist.blob import Blob
from persist.consensus import Consensus
from persist.state import Part, ShardState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShardSnapshot:
    """The parts of a shard visible at ``as_of``, with the seqno they were read at.

    ``urls`` are what a reader (Spark, pyarrow) opens, one per part; an empty list
    means the shard holds no rows at ``as_of``.
    """

    shard_id: str
    seqno: int
    as_of: int
    urls: tuple[str, ...]
    rows: int


class PersistClient:
    """Read and write shards stored in ``blob`` + ``consensus``."""

    def __init__(self, blob: Blob, consensus: Consensus):
        self.blob = blob
        self.consensus = consensus

    def state(self, shard_id: str) -> ShardState:
        head = self.consensus.head(shard_id)
        return ShardState.decode(head[1]) if head else ShardState()

    def append(self, shard_id: str, table: pa.Table, ts: int) -> ShardState:
        """Append ``table``'s rows to the shard at timestamp ``ts`` (ms).

        If the shard's upper is already past ``ts`` (a later write won the race), the
        rows are written at the upper instead, so the upper only moves forward.

        Returns the new state. An empty ``table`` still advances the upper.
        """
        part_key = None
        nbytes = 0
        if table.num_rows > 0:
            buf = io.BytesIO()
            pq.write_table(table, buf, compression="zstd")
            data = buf.getvalue()
            nbytes = len(data)
            part_key = f"{shard_id}/{uuid.uuid4().hex}.parquet"
            self.blob.put(part_key, data)
        while True:
            head = self.consensus.head(shard_id)
            cur = ShardState.decode(head[1]) if head else ShardState()
            write_ts = max(ts, cur.upper)
            parts = cur.parts
            if part_key is not None:
                parts = parts + (Part(part_key, write_ts, table.num_rows, nbytes),)
            new = replace(cur, seqno=cur.seqno + 1, upper=write_ts + 1, parts=parts)
            if self.consensus.compare_and_set(shard_id, head[0] if head else None, new.seqno, new.encode()):
                return new
            log.debug("compare-and-set lost on shard %s, retrying", shard_id)

    def snapshot(self, shard_id: str, as_of: int | None = None) -> ShardSnapshot:
        """The parts visible at ``as_of`` (default: everything written so far)."""
        return self.snapshot_of(shard_id, self.state(shard_id), as_of)

    def snapshot_of(self, shard_id: str, st: ShardState, as_of: int | None = None) -> ShardSnapshot:
        """The snapshot of a state the caller already read (so it can compare-and-set
        against the same seqno later)."""
        as_of = st.upper if as_of is None else max(as_of, st.since)
        parts = st.parts_as_of(as_of)
        return ShardSnapshot(
            shard_id=shard_id,
            seqno=st.seqno,
            as_of=as_of,
            urls=tuple(self.blob.url(p.key) for p in parts),
            rows=sum(p.rows for p in parts),
        )

    def read_table(self, shard_id: str, schema: pa.Schema, as_of: int | None = None) -> pa.Table:
        """All rows visible at ``as_of`` as one Arrow table (for small reads and tests)."""
        st = self.state(shard_id)
        as_of = st.upper if as_of is None else max(as_of, st.since)
        tables = []
        for p in st.parts_as_of(as_of):
            data = self.blob.get(p.key)
            tables.append(pq.read_table(io.BytesIO(data)).cast(schema))
        if not tables:
            return schema.empty_table()
        return pa.concat_tables(tables)

    def drop_shard(self, shard_id: str) -> None:
        """Delete a shard's parts and state. Only for shards no catalog object refers to."""
        st = self.state(shard_id)
        self.consensus.delete_shard(shard_id)
        for p in st.parts:
            self.blob.delete(p.key)

    def replace(self, shard_id: str, table: pa.Table, ts: int, expected_seqno: int) -> ShardState | None:
        """Replace the shard's whole contents with ``table`` at ``ts``, if its state is
        still at ``expected_seqno`` (the state the caller read). Returns the new state, or
        None if another writer got there first (the caller re-reads and retries).

        Used by UPDATE and DELETE; the replaced parts are deleted once unreferenced."""
        head = self.consensus.head(shard_id)
        cur = ShardState.decode(head[1]) if head else ShardState()
        if cur.seqno != expected_seqno:
            return None
        parts: tuple[Part, ...] = ()
        write_ts = max(ts, cur.upper)
        if table.num_rows:
            buf = io.BytesIO()
            pq.write_table(table, buf, compression="zstd")
            data = buf.getvalue()
            key = f"{shard_id}/{uuid.uuid4().hex}.parquet"
            self.blob.put(key, data)
            parts = (Part(key, write_ts, table.num_rows, len(data)),)
        new = replace(cur, seqno=cur.seqno + 1, since=write_ts, upper=write_ts + 1, parts=parts)
        if not self.consensus.compare_and_set(shard_id, head[0] if head else None, new.seqno, new.encode()):
            for p in parts:
                self.blob.delete(p.key)
            return None
        self.retire([p.key for p in cur.parts])
        return new

    #: seconds a replaced part stays readable, for reads that listed it just before
    RETIRE_DELAY_S = 120.0

    def retire(self, keys: list[str]) -> None:
        """Delete parts no state refers to any more, after ``RETIRE_DELAY_S`` (a read
        that took its snapshot before the replacement may still be reading them)."""
        if not keys:
            return
        t = threading.Timer(self.RETIRE_DELAY_S, lambda: [self.blob.delete(k) for k in keys])
        t.daemon = True
        t.start()

    def gc(self) -> int:
        """Delete every part in Blob that its shard's current state does not reference
        (parts retired by an earlier process, or written by a writer that lost its
        compare-and-set and died). Returns how many were deleted."""
        deleted = 0
        by_shard: dict[str, list[str]] = {}
        for key in self.blob.list_keys():
            by_shard.setdefault(key.split("/", 1)[0], []).append(key)
        for shard, keys in by_shard.items():
            live = {p.key for p in self.state(shard).parts}
            for k in keys:
                if k not in live:
                    self.blob.delete(k)
                    deleted += 1
        return deleted

    def compact(self, shard_id: str, max_parts: int = 8) -> ShardState | None:
        """Merge a shard's parts into one when it has more than ``max_parts``: fewer,
        larger files make every later read cheaper. The merged part's timestamp is the
        newest merged one, which becomes the shard's ``since`` (reads at an earlier
        as_of are served at the since). Returns the new state, or None if nothing was
        done (few parts, or a concurrent writer won the race)."""
        st = self.state(shard_id)
        if len(st.parts) <= max_parts:
            return None
        tables = [pq.read_table(io.BytesIO(self.blob.get(p.key))) for p in st.parts]
        merged = pa.concat_tables(tables, promote_options="default")
        return self.replace(shard_id, merged, max(p.ts for p in st.parts), st.seqno)
