"""Reads: the updates of a shard visible at ``as_of``, consolidated.

A read at ``as_of`` sees every update at a time <= ``as_of``; the rows of the shard are
those updates consolidated (diffs summed per row, rows with a positive sum repeated that
many times). When no visible part holds a retraction, every update is a ``+1`` and the
parts are read as they are (append-only tables read as fast as plain Parquet files).
Materialize: a read below the shard's ``since`` is not answerable.

Inline parts (:mod:`persist.write`) are read here like parts in Blob: :func:`part_table`
is the one place that opens a part, and :func:`inline_updates` gives a snapshot's inline
updates as one Arrow table, which Spark reads as a local relation next to its scan of the
Parquet parts (``spark_exec.lower.read_snapshot``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from persist.state import DIFF_COLUMN, Part, ShardState, TIME_COLUMN
from persist.write import decode_inline


class SinceError(Exception):
    """A read at a time below the shard's since (the updates there were compacted)."""

    def __init__(self, shard_id: str, as_of: int, since: int):
        super().__init__(f"shard {shard_id}: as_of {as_of} is below since {since}")
        self.shard_id, self.as_of, self.since = shard_id, as_of, since


@dataclass(frozen=True)
class PartRead:
    """How to read one part at the snapshot's as_of.

    ``url`` is what Spark and pyarrow open. ``diffs``: the file has a ``_mz_diff`` column
    (else every row is a ``+1``). ``timed``: it also has a ``_mz_time`` column.
    ``filter_time``: some of its updates are after as_of (keep ``_mz_time <= as_of``).
    ``inline``: an inline part's updates (``Part.inline``; ``url`` is then its name,
    nothing to open)."""

    url: str
    diffs: bool
    timed: bool = False
    filter_time: bool = False
    #: updates in the file (its row count)
    updates: int = 0
    inline: str | None = None


@dataclass(frozen=True)
class ShardSnapshot:
    """The parts of a shard to read at ``as_of``, as of state ``seqno``.

    ``consolidate``: some visible update is a retraction, so the reader must sum diffs
    per row. ``rows``: the rows at the shard's upper (an estimate for planning)."""

    shard_id: str
    seqno: int
    as_of: int
    parts: tuple[PartRead, ...]
    consolidate: bool
    rows: int

    @property
    def urls(self) -> tuple[str, ...]:
        """URLs of the parts in Blob (inline parts have none)."""
        return tuple(p.url for p in self.parts if p.inline is None)


def snapshot_of(state: ShardState, shard_id: str, as_of: int, url) -> ShardSnapshot:
    """The snapshot of ``state`` at ``as_of``; ``url(key)`` is Blob's URL of a part.

    Raises:
        SinceError: ``as_of`` is below the state's since.
    """
    if as_of < state.since:
        raise SinceError(shard_id, as_of, state.since)
    parts = [part_read(p, url, as_of) for p in state.visible_parts(as_of)]
    return ShardSnapshot(shard_id, state.seqno, as_of, tuple(parts), state.retractions_visible(as_of),
                         state.row_count())


def part_read(p: Part, url, as_of: int) -> PartRead:
    """How to read part ``p`` at ``as_of``; ``url(key)`` is Blob's URL of a part."""
    timed = p.diffs and p.ts is None
    return PartRead(p.key if p.inline is not None else url(p.key), p.diffs, timed, timed and p.max_time() > as_of,
                    p.updates, p.inline)


def part_table(p: PartRead | Part, url=None) -> pa.Table:
    """Every update stored in part ``p`` (the file's columns, as stored), from Blob or
    from the state (inline). For a :class:`Part`, ``url(key)`` gives Blob's URL."""
    if p.inline is not None:
        return decode_inline(p.inline)
    u = p.url if isinstance(p, PartRead) else url(p.key)
    return ds.dataset(u.removeprefix("file://"), format="parquet").to_table()


def inline_updates(parts, as_of: int, names: list[str]) -> pa.Table | None:
    """The updates of the inline parts among ``parts`` (PartReads) visible at ``as_of``:
    columns ``names``, then ``_mz_diff`` (1 for parts of plain rows); None when there
    are none. Their size is bounded by ``persist.write.INLINE_TOTAL_MAX_BYTES``."""
    tables = []
    for p in parts:
        if p.inline is None:
            continue
        t = part_table(p)
        if p.filter_time:
            t = t.filter(pc.less_equal(t.column(TIME_COLUMN), as_of))
        diff = t.column(DIFF_COLUMN) if p.diffs else pa.repeat(pa.scalar(1, pa.int64()), t.num_rows)
        tables.append(t.select(names).append_column(DIFF_COLUMN, diff))
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")


def change_values(snap: ShardSnapshot, column: str, max_updates: int, max_values: int) -> set | None:
    """The distinct values (None for NULL) of ``column`` among the updates of ``snap``'s
    changes: its parts with diffs and its inline parts, whatever their times (a superset
    of the visible ones). None when those parts hold more than ``max_updates`` updates
    or the values number more than ``max_values``. Reads only that column."""
    changes = [p for p in snap.parts if p.diffs or p.inline is not None]
    if sum(p.updates for p in changes) > max_updates:
        return None
    values: set = set()
    for p in changes:
        if p.inline is not None:
            col = decode_inline(p.inline).column(column)
        else:
            col = ds.dataset(p.url.removeprefix("file://"), format="parquet").to_table(columns=[column]).column(column)
        values.update(col.unique().to_pylist())
        if len(values) > max_values:
            return None
    return values


def read_arrow(snap: ShardSnapshot, schema: pa.Schema) -> pa.Table:
    """The rows of ``snap`` as one Arrow table in ``schema`` (small reads, tests).
    Memory: the whole shard."""
    t = updates_arrow(snap, schema)
    if not snap.consolidate:
        return t.drop_columns([DIFF_COLUMN])
    return consolidate_arrow(t, schema)


def updates_arrow(snap: ShardSnapshot, schema: pa.Schema) -> pa.Table:
    """The updates of ``snap`` visible at its as_of, not consolidated: ``schema``'s
    columns, then ``_mz_diff`` (1 for parts of plain rows). Memory: every update."""
    tables = []
    for p in snap.parts:
        t = part_table(p)
        if p.filter_time:
            t = t.filter(pc.less_equal(t.column(TIME_COLUMN), snap.as_of))
        diff = t.column(DIFF_COLUMN) if p.diffs else pa.repeat(pa.scalar(1, pa.int64()), t.num_rows)
        tables.append(t.select(schema.names).cast(schema).append_column(DIFF_COLUMN, diff))
    return pa.concat_tables(tables) if tables else empty_updates(schema)


def empty_updates(schema: pa.Schema) -> pa.Table:
    """No updates: ``schema``'s columns, then ``_mz_diff``."""
    return schema.empty_table().append_column(pa.field(DIFF_COLUMN, pa.int64()), pa.array([], pa.int64()))


def consolidate_arrow(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """Sum ``_mz_diff`` per row of ``t`` and repeat each row its sum times (rows whose sum
    is <= 0 vanish). Values are compared as Python values (NULL equals NULL)."""
    out = [r for r, n in _summed(t, schema) if n > 0 for _ in range(n)]
    return pa.Table.from_pylist(out, schema=schema) if out else schema.empty_table()


def consolidate_updates(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """``t``'s updates consolidated, as updates: columns ``schema``, then ``_mz_diff``.
    Each row whose diffs sum to ``n != 0`` comes ``|n|`` times with diff ``sign(n)``;
    rows summing to 0 vanish. A retraction whose insertion is in no part of ``t`` stays
    (Materialize's consolidation of a batch: compaction that merges some of a shard's
    parts cannot know what the others hold)."""
    rows, diffs = [], []
    for r, n in _summed(t, schema):
        rows.extend([r] * abs(n))
        diffs.extend([1 if n > 0 else -1] * abs(n))
    data = pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()
    return data.append_column(pa.field(DIFF_COLUMN, pa.int64()), pa.array(diffs, pa.int64()))


def _summed(t: pa.Table, schema: pa.Schema) -> list[tuple[dict, int]]:
    """Each distinct row of ``t`` (``schema``'s columns, as a dict) with the sum of its
    ``_mz_diff``; NULL equals NULL."""
    counts: Counter = Counter()
    first: dict = {}
    rows = t.select(schema.names).to_pylist()
    for r, d in zip(rows, t.column(DIFF_COLUMN).to_pylist()):
        k = _freeze(r)
        counts[k] += d
        first.setdefault(k, r)
    return [(first[k], n) for k, n in counts.items() if n]


def _freeze(v):
    if isinstance(v, dict):
        return tuple((k, _freeze(x)) for k, x in v.items())
    if isinstance(v, list):
        return ("__list__",) + tuple(_freeze(x) for x in v)
    return v


@dataclass(frozen=True)
class ListenBatch:
    """What a listen yields: every update of the shard at a time in ``[lower, upper)``
    as an Arrow table (the part files' columns, then ``_mz_time`` and ``_mz_diff``; rows
    in no particular order, not consolidated), and the new frontier ``upper``: the shard
    will get no more updates below it (Materialize's progress)."""

    lower: int
    upper: int
    updates: pa.Table | None


def listen_updates(state: ShardState, lower: int, upper: int, url) -> list[pa.Table]:
    """The updates of ``state``'s parts at times in ``[lower, upper)``, one Arrow table
    per part that has some, each with ``_mz_time`` and ``_mz_diff`` appended (or kept, for
    parts that carry them). ``url(key)`` is Blob's URL of a part."""
    out = []
    for p in state.parts:
        if p.max_time() < lower or p.min_time() >= upper:
            continue
        t = part_table(p, url)
        if TIME_COLUMN not in t.column_names:
            t = t.append_column(TIME_COLUMN, pa.repeat(pa.scalar(p.ts if p.ts is not None else p.lower, pa.int64()),
                                                       t.num_rows))
        else:
            times = t.column(TIME_COLUMN)
            t = t.filter(pc.and_(pc.greater_equal(times, lower), pc.less(times, upper)))
        if DIFF_COLUMN not in t.column_names:
            t = t.append_column(DIFF_COLUMN, pa.repeat(pa.scalar(1, pa.int64()), t.num_rows))
        else:  # keep the two at the end, in this order
            t = t.select([c for c in t.column_names if c not in (TIME_COLUMN, DIFF_COLUMN)] + [TIME_COLUMN, DIFF_COLUMN])
        if t.num_rows:
            out.append(t)
    return out


def change_parts(state: ShardState, lower: int, upper: int) -> list[Part]:
    """The parts of ``state`` that may hold updates at times in ``(lower, upper]`` (what
    an incremental round after ``lower`` up to ``upper`` reads). Exact as long as the
    shard's since is at most ``lower``: compaction moves only times at or below since."""
    return [p for p in state.parts if p.max_time() > lower and p.min_time() <= upper]


def change_times(state: ShardState, lower: int, upper: int, url) -> list[int]:
    """The distinct times in ``(lower, upper]`` at which ``state`` has updates, ascending.
    An append's part has its one time (``Part.ts``) in the state; a part of several
    times (a materialized view's, compaction's) has its ``_mz_time`` column read (only
    that column). ``url(key)`` is Blob's URL of a part."""
    times: set[int] = set()
    for p in change_parts(state, lower, upper):
        if p.ts is not None:
            times.add(p.ts)
            continue
        if p.inline is not None:
            column = decode_inline(p.inline).column(TIME_COLUMN)
        else:
            column = ds.dataset(url(p.key).removeprefix("file://"), format="parquet").to_table(
                columns=[TIME_COLUMN]).column(TIME_COLUMN)
        times.update(t for t in pc.unique(column).to_pylist() if lower < t <= upper)
    return sorted(times)


def shards_change_times(states, lower: int, upper: int, url) -> list[int]:
    """The distinct times in ``(lower, upper]`` at which any of ``states`` (shard states)
    has updates, ascending (``change_times`` over several shards)."""
    return sorted(set().union(*[change_times(st, lower, upper, url) for st in states]))
