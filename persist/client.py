"""PersistClient: appends to shards and takes snapshots of them.

Writers add a Parquet part to Blob first and then publish it with a compare-and-set
on the shard's state; a writer that loses the race re-reads the state and retries, so
concurrent appends never lose one another. A part that never got published is garbage
and is never read.
"""

from __future__ import annotations

import io
import logging
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
        st = self.state(shard_id)
        as_of = st.upper if as_of is None else as_of
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
        as_of = st.upper if as_of is None else as_of
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
