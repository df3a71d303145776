"""Writes: updates become a *batch* in Blob, then a part of the shard by compare-and-append.

A small batch (its Arrow IPC encoding under ``INLINE_SINGLE_MAX_BYTES``) is not written to
Blob at all: it travels *inline* in the shard's state, so publishing it costs one Consensus
compare-and-set and no Blob write (Materialize persist's inline writes,
``persist_inline_writes_single_max_bytes``). The state of a shard holds at most
``INLINE_TOTAL_MAX_BYTES`` inline (``persist_inline_writes_total_max_bytes``): a batch
beyond that goes to Blob, and compaction moves inline parts into Blob parts
(:mod:`persist.compact`), never the other way.

A batch is written first (any number of writers at once; nothing refers to it yet), then
published with :func:`compare_and_append` (Materialize persist's ``compare_and_append``):
the shard's state takes the batch's part at time ``ts`` only if its ``upper`` is still
the ``expected_upper`` the writer saw; the upper moves to ``ts + 1``. A writer whose
expected upper is stale learns the current upper (:class:`UpperMismatch`) and must pick a
new timestamp, never slide its data to another time. A batch that is never published is
garbage, deleted by the GC at the next start.
"""

from __future__ import annotations

import base64
import io
import logging
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from persist.blob import Blob
from persist.consensus import Consensus
from persist.state import DIFF_COLUMN, Part, ShardState, TIME_COLUMN

log = logging.getLogger(__name__)

#: Parquet compression of every part, here and on replicas: Snappy, Spark's default. It
#: decodes faster than zstd (TPC-H Q6 over lineitem: 0.27 s vs 0.33 s), and Spark's size
#: estimates from file lengths come out closer to the data's size, so broadcast decisions
#: (AQE's 10 MiB threshold) are not misled by a strong compression ratio.
COMPRESSION = "snappy"
#: pyarrow.parquet writer options of every part: decimals of precision <= 18 as INT32/INT64
#: (Spark's own layout; Spark reads them as unscaled longs, pyarrow's default
#: FIXED_LEN_BYTE_ARRAY made TPC-H Q1 ~15% slower), statistics in every row group.
PARQUET_OPTIONS = {"compression": COMPRESSION, "write_statistics": True, "store_decimal_as_integer": True}
#: rows per Parquet row group: a point read skips the row groups whose column statistics
#: exclude it, and Spark splits a part's file between workers at row group boundaries,
#: so a big COPY's part is read by every worker (pyarrow's default is 1 Mi rows)
ROW_GROUP_ROWS = 128 * 1024

#: a batch whose encoding is shorter than this is written inline in the state
#: (Materialize's ``persist_inline_writes_single_max_bytes`` default: 4 KiB, exclusive)
INLINE_SINGLE_MAX_BYTES = 4096
#: at most this many bytes of inline parts per shard state (Materialize's
#: ``persist_inline_writes_total_max_bytes`` is 1 MiB; ours is smaller because every
#: Consensus version here is a full state, written and decoded whole at each
#: compare-and-set, where Materialize's versions are diffs)
INLINE_TOTAL_MAX_BYTES = 64 * 1024


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
    #: an inline batch: its updates as base64 Arrow IPC (``Part.inline``); nothing in Blob
    inline: str | None = None

    def part(self, lower: int, upper: int, ts: int | None) -> Part:
        if self.timed is not None:
            lower, upper = self.timed
        return Part(self.key, lower, upper, self.updates, self.bytes, ts=None if self.timed else ts,
                    diffs=self.diffs, retractions=self.retractions, net=self.net, inline=self.inline)


@dataclass(frozen=True)
class UpperMismatch:
    """compare_and_append found the shard's upper at ``current``, not the expected one."""

    current: int


class ShardSealed(Exception):
    """The shard is sealed (``ShardState.sealed``): nothing may be appended to it any more.
    The writer planned against a catalog in which the shard was still its table's; it
    must plan again against the current one (the table has a new shard, or is gone)."""

    def __init__(self, shard_id: str):
        super().__init__(f"shard {shard_id} is sealed")
        self.shard_id = shard_id


def write_batch(blob: Blob, shard_id: str, table: pa.Table, inline_budget: int = 0, dictionary: bool = True) -> Batch:
    """Write ``table``'s rows as a batch of ``+1`` updates (INSERT, COPY): inline when its
    encoding is shorter than both ``INLINE_SINGLE_MAX_BYTES`` and ``inline_budget`` + 1
    (the bytes the shard's state may still take inline; 0: always to Blob).
    ``dictionary``: see :func:`encode`.

    Raises whatever Blob raises (the batch is then simply absent)."""
    key, size, inline = _store(blob, shard_id, table, inline_budget, dictionary)
    return Batch(key, table.num_rows, size, net=table.num_rows, inline=inline)


def inline_room(state: ShardState) -> int:
    """How many bytes of inline parts ``state`` may still take."""
    return max(0, INLINE_TOTAL_MAX_BYTES - state.inline_bytes())


def _store(blob: Blob, shard_id: str, table: pa.Table, inline_budget: int,
           dictionary: bool = True) -> tuple[str, int, str | None]:
    """(key, bytes, inline) of ``table`` stored inline or as a Parquet file in Blob."""
    # The IPC stream holds at least the table's buffers: a big table is not encoded twice.
    if inline_budget > 0 and table.num_rows and table.nbytes < INLINE_SINGLE_MAX_BYTES:
        data = encode_inline(table)
        if len(data) < INLINE_SINGLE_MAX_BYTES and len(data) <= inline_budget:
            return f"inline/{uuid.uuid4().hex}", len(data), base64.b64encode(data).decode()
    data = encode(table, dictionary)
    key = blob.new_part_key(shard_id)
    blob.put(key, data)
    return key, len(data), None


def encode_inline(table: pa.Table) -> bytes:
    """``table`` as an Arrow IPC stream (an inline part's bytes: cheap to encode and to
    hand to Spark as a local relation; Parquet costs ~15x the time for a few rows)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        # one record batch: a group commit's concatenation of single-row appends would
        # otherwise cost a batch header (~200 bytes) per row
        w.write_table(table.combine_chunks())
    return sink.getvalue().to_pybytes()


def decode_inline(inline: str) -> pa.Table:
    """The updates of an inline part (``Part.inline``) as an Arrow table."""
    return pa.ipc.open_stream(base64.b64decode(inline)).read_all()


def write_updates(blob: Blob, shard_id: str, table: pa.Table, inline_budget: int = 0) -> Batch:
    """Write a batch whose last column is ``_mz_diff`` (and, for compaction output,
    ``_mz_time`` before it); inline as in :func:`write_batch`."""
    names = table.column_names
    if names[-1] != DIFF_COLUMN:
        raise ValueError(f"an update batch ends with {DIFF_COLUMN}")
    diffs = table.column(DIFF_COLUMN)
    timed = None
    if TIME_COLUMN in names:
        times = table.column(TIME_COLUMN)
        timed = (pa.compute.min(times).as_py(), pa.compute.max(times).as_py() + 1) if table.num_rows else None
    key, size, inline = _store(blob, shard_id, table, inline_budget)
    return Batch(key, table.num_rows, size, diffs=True, retractions=bool(table.num_rows) and
                 pa.compute.min(diffs).as_py() < 0, net=int(pa.compute.sum(diffs).as_py() or 0), timed=timed,
                 inline=inline)


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


def encode(table: pa.Table, dictionary: bool = True) -> bytes:
    """``table`` as a part's Parquet file (``PARQUET_OPTIONS``), ``ROW_GROUP_ROWS`` rows per
    row group, with column statistics (min, max, nulls) in every row group's metadata.

    ``dictionary``: Parquet's dictionary encoding of the columns. Without it the writer
    does not hold a row group's encoded pages until the row group ends: encoding 8 MB of
    Arrow took 7 MB at its peak instead of 26 MB (pyarrow 26, system allocator; an int
    and a short distinct text per row, where plain pages also came out 25% smaller)."""
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=ROW_GROUP_ROWS, use_dictionary=dictionary, **PARQUET_OPTIONS)
    return buf.getvalue()


def compare_and_append(consensus: Consensus, shard_id: str, batches: list[Batch], expected_upper: int,
                       ts: int, known: ShardState | None = None) -> ShardState | UpperMismatch:
    """Publish ``batches`` at time ``ts`` if the shard's upper is ``expected_upper``.

    The new upper is ``ts + 1``; ``ts`` must be >= ``expected_upper``. Returns the new state,
    or :class:`UpperMismatch` with the current upper (the caller picks a new ``ts``). A lost
    compare-and-set against a change that left the upper alone (a reader's heartbeat,
    compaction) is retried here. ``known``: a state of the shard the caller already has
    (the first attempt builds on it instead of reading Consensus; a stale one only loses
    the compare-and-set).

    Raises:
        ShardSealed: the shard is sealed (as read from Consensus: a stale ``known``
        state neither hides a seal nor invents one)."""
    if ts < expected_upper:
        raise ValueError(f"cannot append at {ts} below the expected upper {expected_upper}")
    cur, fresh = known, False
    while True:
        if cur is None:
            head = consensus.head(shard_id)
            cur, fresh = (ShardState.decode(head[1]) if head else ShardState()), True
        if cur.sealed:
            if fresh:
                raise ShardSealed(shard_id)
            cur = None
            continue
        if cur.upper != expected_upper:
            if fresh:
                return UpperMismatch(cur.upper)
            cur = None  # the known state was stale: read Consensus
            continue
        parts = cur.parts + tuple(b.part(expected_upper, ts + 1, ts) for b in batches)
        new = cur.next(upper=ts + 1, parts=parts)
        # A state's seqno is its Consensus version (0: the shard has none yet).
        if consensus.compare_and_set(shard_id, cur.seqno or None, new.seqno, new.encode()):
            return new
        cur = None
        log.debug("compare-and-set lost on shard %s, retrying", shard_id)


def seal(consensus: Consensus, shard_id: str, expected_upper: int | None) -> ShardState | UpperMismatch:
    """Seal the shard if its upper is ``expected_upper`` (None: whatever it is): from the
    returned state on, every :func:`compare_and_append` raises :class:`ShardSealed`
    (Materialize persist finalizes a shard by advancing its upper to the empty
    antichain; the rows stay readable here until the shard is dropped). A seal is the
    point after which a copy of the shard's rows is complete. Idempotent.

    Returns the sealed state, or :class:`UpperMismatch` when a write landed first."""
    while True:
        head = consensus.head(shard_id)
        cur = ShardState.decode(head[1]) if head else ShardState()
        if cur.sealed:
            return cur
        if expected_upper is not None and cur.upper != expected_upper:
            return UpperMismatch(cur.upper)
        new = cur.next(sealed=True)
        if consensus.compare_and_set(shard_id, cur.seqno or None, new.seqno, new.encode()):
            return new


def unseal(consensus: Consensus, shard_id: str) -> ShardState | None:
    """Undo :func:`seal` when what the seal was for did not happen (the catalog change
    that would have replaced the shard failed): writes may land again. Returns the new
    state (None: the shard has none)."""
    while True:
        head = consensus.head(shard_id)
        if head is None:
            return None
        cur = ShardState.decode(head[1])
        if not cur.sealed:
            return cur
        new = cur.next(sealed=False)
        if consensus.compare_and_set(shard_id, cur.seqno, new.seqno, new.encode()):
            return new
