"""Compaction: fewer, larger parts, their updates consolidated and advanced to ``since``.

Size-tiered (Materialize persist's Spine merges batches of similar size): when a shard has
more than ``max_parts`` parts, the smallest parts of similar size are merged into one. The
merge advances every update's time to at least the shard's ``since`` (reads at or after
since cannot tell the difference) and, when a merged part holds retractions, sums diffs
per row. The merged part replaces its inputs in one compare-and-set; the inputs are
*retired* at that seqno and deleted by GC once no reader can still read them.

Retractions (UPDATE and DELETE) merge by size like any part: a merge of some of a
shard's parts keeps a retraction whose row is in none of them, so an UPDATE of one row of
a big table leaves a small part of changes, which reads apply cheaply
(``CHANGES_BROADCAST_UPDATES``), and never rewrites the table. The whole shard is
consolidated only when the changes become big next to the rest (``SIZE_RATIO``) or too
many for that cheap read, or when the shard is small (``SMALL_SHARD_UPDATES``): its cost
is then amortized over the writes that made the changes, as in a Spine.

Inline parts (small batches kept in the state, :mod:`persist.write`) are always among the
inputs of a merge, whose output always goes to Blob: compaction is how inline data leaves
the state (Materialize's compaction flushes inline parts the same way). A shard whose
inline parts reach ``INLINE_FLUSH_BYTES`` is merged even with few parts.

Merging append-only parts is streamed here batch by batch (bounded memory). Merging
parts with retractions needs consolidation: in memory here up to ``IN_MEMORY_UPDATES``,
else by the caller (environmentd runs it as a Spark job on a replica).
"""

from __future__ import annotations

import logging
import os
from typing import Callable

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from persist.blob import Blob
from persist.consensus import Consensus
from persist.read import PartRead, ShardSnapshot, consolidate_updates, part_read, updates_arrow
from persist.state import DIFF_COLUMN, Part, Retired, ShardState, TIME_COLUMN
from persist.write import INLINE_TOTAL_MAX_BYTES, PARQUET_OPTIONS, ROW_GROUP_ROWS, Batch, decode_inline, write_updates

log = logging.getLogger(__name__)

#: merge when a shard has more parts than this
MAX_PARTS = 8
#: parts within this factor of the smallest one's size are merged together; changes
#: (parts with diffs) this big next to the plain parts are consolidated into them
SIZE_RATIO = 8
#: consolidation in memory (in environmentd) only up to this many updates; more go to
#: the caller's merge (a Spark job on a replica)
IN_MEMORY_UPDATES = 20_000
#: a shard holding this many bytes of inline parts is merged whatever its part count
#: (half the inline limit: writes keep going inline while the merge runs)
INLINE_FLUSH_BYTES = INLINE_TOTAL_MAX_BYTES // 2
#: reads apply at most this many updates in parts with diffs to the plain rows by a
#: broadcast anti join (``spark_exec.lower.read_snapshot``); more are consolidated here
CHANGES_BROADCAST_UPDATES = 200_000
#: a shard with retractions and at most this many updates is consolidated whole (cheap,
#: in memory, and its reads no longer consolidate)
SMALL_SHARD_UPDATES = 10_000

#: ``merge(parts) -> Batch``: the updates of ``parts`` consolidated
#: (:func:`persist.read.consolidate_updates`'s rule) and written as a new batch of updates
MergeFn = Callable[[list[PartRead]], Batch]


def choose(state: ShardState, max_parts: int = MAX_PARTS) -> list[Part]:
    """The parts to merge now, or [].

    With retractions in the shard, every part whose updates are all at or below
    ``since`` (if two or more) when the shard is small (``SMALL_SHARD_UPDATES``) or its
    parts with diffs hold more than ``CHANGES_BROADCAST_UPDATES`` updates or more than
    1/``SIZE_RATIO`` of the plain parts' updates. Otherwise, when the shard has more than
    ``max_parts`` parts or ``INLINE_FLUSH_BYTES`` of inline parts: the smallest parts
    within ``SIZE_RATIO`` of each other (at least two) and every inline part, leaving
    out, when one of them has retractions, the parts with updates after ``since``.

    Consolidation writes every update at ``since``, so a part with updates after
    ``since`` waits until ``since`` passes them: relabelled, they would be seen early by
    reads ``AS OF`` a time before them and missed by a listener already past ``since``
    (Materialize's compaction advances times to since, never beyond what they were)."""
    def settled(ps):
        return [p for p in ps if p.max_time() <= state.since]

    if any(p.retractions for p in state.parts):
        changes = sum(p.updates for p in state.parts if p.diffs)
        plain = sum(p.updates for p in state.parts) - changes
        if (changes + plain <= SMALL_SHARD_UPDATES or changes > CHANGES_BROADCAST_UPDATES
                or changes * SIZE_RATIO >= plain):
            whole = settled(state.parts)
            if len(whole) >= 2:
                return whole
    inline = [p for p in state.parts if p.inline is not None]
    if len(state.parts) <= max_parts and sum(p.bytes for p in inline) < INLINE_FLUSH_BYTES:
        return []
    by_size = sorted(state.parts, key=lambda p: p.updates)
    floor = max(by_size[0].updates, 1)
    chosen = [p for p in by_size if p.updates <= floor * SIZE_RATIO or p.inline is not None]
    if len(chosen) < 2 and not inline:
        chosen = by_size[: len(by_size) - max_parts + 1]
    if any(p.retractions for p in chosen):
        chosen = settled(chosen)
    return chosen if len(chosen) >= 2 or any(p.inline is not None for p in chosen) else []


def needs_consolidation(parts: list[Part]) -> bool:
    """Whether merging ``parts`` must sum diffs (some hold retractions)."""
    return any(p.retractions for p in parts)


def needs_replica(parts: list[Part]) -> bool:
    """Whether merging ``parts`` takes the caller's merge (a consolidation too big to
    run in memory)."""
    return needs_consolidation(parts) and sum(p.updates for p in parts) > IN_MEMORY_UPDATES


def merge_append_only(blob: Blob, shard_id: str, parts: list[Part], since: int) -> Part | None:
    """Stream ``parts`` (no retractions) into one new part, batch by batch. Every update
    at or below ``since`` moves to ``since``: when all do, the output is a plain part of
    rows at ``since``; otherwise it keeps a ``_mz_time`` column (and ``_mz_diff`` of 1s)."""
    all_settled = all(p.max_time() <= since for p in parts)
    key = blob.new_part_key(shard_id)
    path = blob.url(key).removeprefix("file://")
    writer = None
    updates = 0
    lo, hi = None, None
    #: small batches (inline parts) wait here until they fill a row group together
    pending: list[pa.Table] = []
    pending_rows = 0

    def flush():
        nonlocal pending_rows
        if pending:
            writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP_ROWS)
            pending.clear()
            pending_rows = 0

    try:
        for t, times in _chunks(blob, parts, since):
            # Parts without retractions hold only +1s: the rows alone say it all.
            if not all_settled:
                t = t.append_column(TIME_COLUMN, times).append_column(
                    DIFF_COLUMN, pa.repeat(pa.scalar(1, pa.int64()), t.num_rows))
                if t.num_rows:
                    mn, mx = pa.compute.min(times).as_py(), pa.compute.max(times).as_py()
                    lo = mn if lo is None else min(lo, mn)
                    hi = mx if hi is None else max(hi, mx)
            if writer is None:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                writer = pq.ParquetWriter(path, t.schema, **PARQUET_OPTIONS)
            pending.append(t.cast(writer.schema))
            pending_rows += t.num_rows
            if pending_rows >= ROW_GROUP_ROWS:
                flush()
            updates += t.num_rows
        if writer is not None:
            flush()
    except BaseException:
        if writer is not None:
            writer.close()
        blob.delete(key)
        raise
    if writer is None:
        return None
    writer.close()
    blob.sync(key)
    size = blob.size(key)
    if all_settled:
        return Part(key, since, since + 1, updates, size, ts=since, net=updates)
    return Part(key, lo, hi + 1, updates, size, diffs=True, net=updates)


def _chunks(blob: Blob, parts: list[Part], since: int):
    """``(rows, times)`` of ``parts`` chunk by chunk, every time advanced to ``since`` (the
    rows without ``_mz_time``/``_mz_diff``): a record batch at a time from Blob, and all
    inline parts as one chunk (each costs a handful of Arrow calls, and a merge takes
    every inline part of the shard)."""
    inline: list[tuple[pa.Table, pa.ChunkedArray]] = []
    for p in parts:
        batches = ((decode_inline(p.inline),) if p.inline is not None else
                   (pa.Table.from_batches([rb]) for rb in
                    ds.dataset(blob.url(p.key).removeprefix("file://"), format="parquet").to_batches()))
        for t in batches:
            if p.ts is None:
                times = pa.compute.max_element_wise(t.column(TIME_COLUMN), pa.scalar(since, pa.int64()))
            else:
                times = pa.chunked_array([pa.repeat(pa.scalar(max(p.ts, since), pa.int64()), t.num_rows)])
            t = t.drop_columns([c for c in (TIME_COLUMN, DIFF_COLUMN) if c in t.column_names])
            if p.inline is None:
                yield t, times
            else:
                inline.append((t, times))
    if inline and all(t.schema == inline[0][0].schema for t, _ in inline):
        yield (pa.concat_tables([t for t, _ in inline]),
               pa.chunked_array([c for _, x in inline for c in x.chunks], pa.int64()))
    else:  # parts from before and after an ALTER TABLE: each on its own
        yield from inline


#: an as_of past every update: a read at it keeps all of them
_EVERY_TIME = 1 << 62


def merge_in_memory(blob: Blob, shard_id: str, parts: list[Part], since: int) -> Part | None:
    """Consolidate ``parts`` (with retractions) in memory at ``since``, for few updates
    (``IN_MEMORY_UPDATES``); None when every update cancels out."""
    snap = ShardSnapshot(shard_id, 0, _EVERY_TIME, tuple(_part_read(blob, p) for p in parts), True, 0)
    schema = _data_schema(blob, parts)
    t = consolidate_updates(updates_arrow(snap, schema), schema)
    if not t.num_rows:
        return None
    return merged_part(write_updates(blob, shard_id, t), since)


def merged_part(b: Batch, since: int) -> Part:
    """The part of a consolidated batch ``b``: every update at ``since``. Without
    retractions every diff is +1, so it is a plain part (reads ignore the file's
    ``_mz_diff`` column then): reads and later merges take it as rows, not changes."""
    return Part(b.key, since, since + 1, b.updates, b.bytes, ts=since, diffs=b.retractions,
                retractions=b.retractions, net=b.net)


def _part_read(blob: Blob, p: Part) -> PartRead:
    """How compaction reads part ``p``: every update, whatever its time."""
    return part_read(p, blob.url, _EVERY_TIME)


def _data_schema(blob: Blob, parts: list[Part]) -> pa.Schema:
    p = parts[0]
    s = (decode_inline(p.inline).schema if p.inline is not None else
         ds.dataset(blob.url(p.key).removeprefix("file://"), format="parquet").schema)
    return pa.schema([f for f in s if f.name not in (TIME_COLUMN, DIFF_COLUMN)])


def compact(consensus: Consensus, blob: Blob, shard_id: str, merge: MergeFn | None = None,
            max_parts: int = MAX_PARTS) -> ShardState | None:
    """Merge some parts of ``shard_id`` if it has too many. Returns the new state, or None
    when there was nothing to do or a concurrent change removed one of the chosen parts
    (the merged output is then deleted)."""
    head = consensus.head(shard_id)
    if head is None:
        return None
    st = ShardState.decode(head[1])
    chosen = choose(st, max_parts)
    if not chosen:
        return None
    since = st.since
    if not needs_consolidation(chosen):
        out = merge_append_only(blob, shard_id, chosen, since)
    elif sum(p.updates for p in chosen) <= IN_MEMORY_UPDATES:
        out = merge_in_memory(blob, shard_id, chosen, since)
    elif merge is not None:
        b = merge([_part_read(blob, p) for p in chosen])
        if not b.updates:
            blob.delete(b.key)
        out = merged_part(b, since) if b.updates else None
    else:
        return None
    keys = {p.key for p in chosen}
    while True:
        head = consensus.head(shard_id)
        cur = ShardState.decode(head[1])
        if not keys <= {p.key for p in cur.parts}:
            if out is not None:
                blob.delete(out.key)
            return None
        parts = tuple(p for p in cur.parts if p.key not in keys) + ((out,) if out is not None else ())
        # Inline parts leave with the state; only parts in Blob wait for GC.
        in_blob = tuple(sorted(p.key for p in chosen if p.inline is None))
        new = cur.next(parts=parts, retired=cur.retired + ((Retired(cur.seqno + 1, in_blob),) if in_blob else ()))
        if consensus.compare_and_set(shard_id, head[0], new.seqno, new.encode()):
            log.info("compacted %d part(s) of shard %s into one", len(keys), shard_id)
            return new
