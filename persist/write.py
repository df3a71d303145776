"""Writes: updates become a *batch* in Blob, then a part of the shard by compare-and-append.

A batch is written first (any number of writers at once; nothing refers to it yet), then
published with :func:`compare_and_append` (Materialize persist's ``compare_and_append``):
the shard's state takes the batch's part at time ``ts`` only if its ``upper`` is still
the ``expected_upper`` the writer saw; the upper moves to ``ts + 1``. A writer whose
expected upper is stale learns the current upper (:class:`UpperMismatch`) and must pick a
new timestamp, never slide its data to another time. A batch that is never published is
garbage, deleted by the GC at the next start.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from persist.blob import Blob
from persist.consensus import Consensus
from persist.state import DIFF_COLUMN, Part, ShardState, TIME_COLUMN

log = logging.getLogger(__name__)

#: Parquet compression of every part
COMPRESSION = "zstd"


@dataclass(frozen=True)
class Batch:
    """Updates written to Blob under ``key``, not yet part of the shard.

    ``diffs`` is False when every row is one update ``(row, +1)``; True when the file has
    a ``_mz_diff`` column (and, when ``timed``, a ``_mz_time`` column: compaction output)."""

    key: str
    updates: int
    bytes: int
    diffs: bool = False
    retractions: bool = False
    net: int = 0
    #: (lower, upper) of the times in the file, when it has a ``_mz_time`` column
    timed: tuple[int, int] | None = None

    def part(self, lower: int, upper: int, ts: int | None) -> Part:
        if self.timed is not None:
            lower, upper = self.timed
        return Part(self.key, lower, upper, self.updates, self.bytes, ts=None if self.timed else ts,
                    diffs=self.diffs, retractions=self.retractions, net=self.net)


@dataclass(frozen=True)
class UpperMismatch:
    """compare_and_append found the shard's upper at ``current``, not the expected one."""

    current: int


def write_batch(blob: Blob, shard_id: str, table: pa.Table) -> Batch:
    """Write ``table``'s rows as a batch of ``+1`` updates (INSERT, COPY).

    Raises whatever Blob raises (the batch is then simply absent)."""
    data = encode(table)
    key = blob.new_part_key(shard_id)
    blob.put(key, data)
    return Batch(key, table.num_rows, len(data), net=table.num_rows)


def write_updates(blob: Blob, shard_id: str, table: pa.Table) -> Batch:
    """Write a batch whose last column is ``_mz_diff`` (and, for compaction output,
    ``_mz_time`` before it)."""
    names = table.column_names
    if names[-1] != DIFF_COLUMN:
        raise ValueError(f"an update batch ends with {DIFF_COLUMN}")
    diffs = table.column(DIFF_COLUMN)
    timed = None
    if TIME_COLUMN in names:
        times = table.column(TIME_COLUMN)
        timed = (pa.compute.min(times).as_py(), pa.compute.max(times).as_py() + 1) if table.num_rows else None
    data = encode(table)
    key = blob.new_part_key(shard_id)
    blob.put(key, data)
    return Batch(key, table.num_rows, len(data), diffs=True, retractions=bool(table.num_rows) and
                 pa.compute.min(diffs).as_py() < 0, net=int(pa.compute.sum(diffs).as_py() or 0), timed=timed)


def written_batch(blob: Blob, key: str, diffs: bool) -> Batch:
    """A batch someone else wrote under ``key`` (a replica's Spark job, a directory of
    Parquet files): made durable, then described from the files' footers and, for update
    batches, their ``_mz_diff`` column."""
    blob.sync(key)
    ds = _dataset(blob, key)
    updates = sum(f.metadata.num_rows for f in ds.get_fragments())
    if not diffs or updates == 0:
        return Batch(key, updates, blob.size(key), diffs=diffs, net=updates)
    d = ds.to_table(columns=[DIFF_COLUMN]).column(DIFF_COLUMN)
    return Batch(key, updates, blob.size(key), diffs=True, retractions=bool(updates) and pa.compute.min(d).as_py() < 0,
                 net=int(pa.compute.sum(d).as_py() or 0))


def _dataset(blob: Blob, key: str):
    import pyarrow.dataset as ds

    return ds.dataset(blob.url(key).removeprefix("file://"), format="parquet")


def encode(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression=COMPRESSION)
    return buf.getvalue()


def compare_and_append(consensus: Consensus, shard_id: str, batches: list[Batch], expected_upper: int,
                       ts: int) -> ShardState | UpperMismatch:
    """Publish ``batches`` at time ``ts`` if the shard's upper is ``expected_upper``.

    The new upper is ``ts + 1``; ``ts`` must be >= ``expected_upper``. Returns the new state,
    or :class:`UpperMismatch` with the current upper (the caller picks a new ``ts``). A lost
    compare-and-set against a change that left the upper alone (a reader's heartbeat,
    compaction) is retried here."""
    if ts < expected_upper:
        raise ValueError(f"cannot append at {ts} below the expected upper {expected_upper}")
    while True:
        head = consensus.head(shard_id)
        cur = ShardState.decode(head[1]) if head else ShardState()
        if cur.upper != expected_upper:
            return UpperMismatch(cur.upper)
        parts = cur.parts + tuple(b.part(expected_upper, ts + 1, ts) for b in batches)
        new = cur.next(upper=ts + 1, parts=parts)
        if consensus.compare_and_set(shard_id, head[0] if head else None, new.seqno, new.encode()):
            return new
        log.debug("compare-and-set lost on shard %s, retrying", shard_id)
