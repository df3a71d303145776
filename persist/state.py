"""Shard state: what Consensus stores for a shard at each seqno.

A shard is a collection of updates ``(row, time, diff)`` (Materialize's persist). Its
state lists the *parts* holding those updates (Parquet files in Blob, or, for small
batches, *inline* in the state itself: Materialize's inline writes), its frontiers
``since`` (reads at a time below it are no longer answerable: updates there may have
been advanced by compaction) and ``upper`` (every update is at a time below it), the
*leased readers* that hold back ``since`` and garbage collection, and the parts removed
at each seqno that GC deletes once no reader can still see them. States are immutable
values, serialized as JSON; each version is the full state (a rollup), so Consensus can
be truncated below any seqno.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field, replace
from functools import cached_property

#: columns a part with explicit updates carries after the row's own columns
TIME_COLUMN = "_mz_time"
DIFF_COLUMN = "_mz_diff"


@dataclass(frozen=True)
class Part:
    """One immutable part holding updates at times in ``[lower, upper)``: a Parquet file
    in Blob, or an *inline* part kept in the state itself.

    Attributes:
        key: Blob key of the Parquet file (or of a directory of Parquet files, when a
            replica wrote the part); for an inline part a unique name that is no Blob
            key (``inline/<uuid>``).
        lower, upper: the part's description: every update in it has lower <= time < upper
            (times are milliseconds; see ``catalog.oracle``).
        updates: number of updates (rows of the file).
        bytes: size in Blob.
        ts: when every update is at one time (an append), that time; else None.
        diffs: True when the file has ``_mz_time`` and ``_mz_diff`` columns; False when
            each row is one update ``(row, ts, +1)`` (what INSERT and COPY write).
        retractions: True when some update has a negative diff (reads must consolidate).
        net: the sum of the diffs (how many rows the part adds to the shard; negative for
            a DELETE's part).
        inline: for an inline part, its updates as an Arrow IPC stream, base64 (the
            same columns a Parquet part would have; ``bytes`` is the stream's length);
            None for a part in Blob. Materialize persist's ``ProtoInlineBatchPart``:
            opaque bytes, decoded only where the data is read.
    """

    key: str
    lower: int
    upper: int
    updates: int
    bytes: int
    ts: int | None = None
    diffs: bool = False
    retractions: bool = False
    net: int = 0
    inline: str | None = None

    def max_time(self) -> int:
        return self.ts if self.ts is not None else self.upper - 1

    def min_time(self) -> int:
        return self.ts if self.ts is not None else self.lower

    @cached_property
    def json_text(self) -> str:
        """This part's JSON in an encoded state. Kept: a state is encoded whole at every
        compare-and-set, and all but the newest of its parts were encoded before."""
        return json.dumps(_part_dict(self), separators=(",", ":"))


@dataclass(frozen=True)
class LeasedReader:
    """A reader registered in the state (Materialize's leased reader).

    It holds back the shard's ``since`` to its own ``since`` and keeps GC from deleting
    any part referenced by a state at or after its ``seqno``. A reader whose last
    heartbeat is older than ``lease_ms`` is expired: its process is gone, and the next
    writer of the state removes it.
    """

    reader_id: str
    seqno: int
    since: int
    heartbeat_ms: int
    lease_ms: int

    def expired(self, now_ms: int) -> bool:
        return now_ms - self.heartbeat_ms > self.lease_ms


@dataclass(frozen=True)
class Retired:
    """Blob keys that stopped being referenced at ``seqno`` (compaction replaced them).
    GC deletes them once every reader has moved to ``seqno`` or later."""

    seqno: int
    keys: tuple[str, ...]


@dataclass(frozen=True)
class ShardState:
    """Versioned state of one shard. ``seqno`` increases by one per compare-and-set."""

    seqno: int = 0
    since: int = 0
    upper: int = 0
    parts: tuple[Part, ...] = field(default_factory=tuple)
    readers: tuple[LeasedReader, ...] = field(default_factory=tuple)
    retired: tuple[Retired, ...] = field(default_factory=tuple)
    #: no write may follow: the upper is the empty antichain (Materialize persist's
    #: finalized shard). Set when a table's rows move to a new shard (ALTER TABLE) or the
    #: table is dropped, so a write planned against the old catalog fails instead of
    #: landing where nobody reads (``persist.write.ShardSealed``).
    sealed: bool = False

    def encode(self) -> bytes:
        # By hand, not ``asdict``: asdict deep-copies every field, and a state with many
        # inline parts is encoded at every compare-and-set.
        d = {"seqno": self.seqno, "since": self.since, "upper": self.upper,
             "readers": [_reader_dict(r) for r in self.readers],
             "retired": [{"seqno": r.seqno, "keys": list(r.keys)} for r in self.retired]}
        if self.sealed:
            d["sealed"] = True  # states of open shards stay as they were
        head = json.dumps(d, separators=(",", ":"))
        for p in self.parts:  # a writer's new parts too: the next decode of this state reuses them
            if _DECODED.get(p.key) is not p:
                _DECODED[p.key] = p
        return f'{head[:-1]},"parts":[{",".join(p.json_text for p in self.parts)}]}}'.encode()

    @staticmethod
    def decode(data: bytes) -> "ShardState":
        d = json.loads(data)
        return ShardState(
            seqno=d["seqno"],
            since=d["since"],
            upper=d["upper"],
            parts=tuple(_decode_part(p) for p in d["parts"]),
            readers=tuple(LeasedReader(**r) for r in d.get("readers", ())),
            retired=tuple(Retired(r["seqno"], tuple(r["keys"])) for r in d.get("retired", ())),
            sealed=d.get("sealed", False),
        )

    def next(self, **changes) -> "ShardState":
        """The state one seqno later, with ``changes``."""
        return replace(self, seqno=self.seqno + 1, **changes)

    def visible_parts(self, as_of: int) -> tuple[Part, ...]:
        """The parts with an update at a time <= ``as_of``."""
        return tuple(p for p in self.parts if p.min_time() <= as_of)

    def retractions_visible(self, as_of: int) -> bool:
        """True when a read at ``as_of`` must consolidate (sum diffs per row)."""
        return any(p.retractions for p in self.visible_parts(as_of))

    def reader(self, reader_id: str) -> LeasedReader | None:
        return next((r for r in self.readers if r.reader_id == reader_id), None)

    def oldest_reader_seqno(self, now_ms: int) -> int:
        """The oldest seqno a live reader may still read (this state's seqno if none)."""
        return min((r.seqno for r in self.readers if not r.expired(now_ms)), default=self.seqno)

    def inline_bytes(self) -> int:
        """Bytes of updates held inline in this state (``persist.write``'s inline limits)."""
        return sum(p.bytes for p in self.parts if p.inline is not None)

    def blob_keys(self) -> set[str]:
        """Blob keys this state refers to: its parts in Blob and the retired ones."""
        return {p.key for p in self.parts if p.inline is None} | {k for r in self.retired for k in r.keys}

    def row_count(self) -> int:
        """Rows of the shard at its upper: the sum of every update's diff."""
        return sum(p.net for p in self.parts)


_PART_FIELDS = tuple(Part.__dataclass_fields__)


def _part_dict(p: Part) -> dict:
    d = {k: getattr(p, k) for k in _PART_FIELDS}
    if d["inline"] is None:
        del d["inline"]  # states of parts in Blob stay as they were
    return d


_READER_FIELDS = tuple(LeasedReader.__dataclass_fields__)


def _reader_dict(r: LeasedReader) -> dict:
    return {k: getattr(r, k) for k in _READER_FIELDS}


#: key -> the part last decoded or encoded under that key, while a state still holds it. A state is
#: decoded whole whenever another thread or process moved it (a compaction, a heartbeat, a
#: push), and then encoded whole at the next compare-and-set: the parts it shares with the
#: state before are reused, with their encoded JSON (``Part.json_text``), instead of built
#: and encoded again. Weak: a part no state holds any more (compacted away) leaves it. A
#: plain dict cleared at 4096 entries kept every dead part until then, an inline one with
#: its rows twice (base64 and JSON), ~1.7 KiB each: 7 MiB of environmentd under bench/chaos.py.
_DECODED: weakref.WeakValueDictionary[str, Part] = weakref.WeakValueDictionary()


def _decode_part(p: dict) -> Part:
    if "lower" not in p:
        # A part written before updates had times and diffs: its rows are all at ``ts``.
        return Part(p["key"], p["ts"], p["ts"] + 1, p["rows"], p["bytes"], ts=p["ts"], net=p["rows"])
    hit = _DECODED.get(p["key"])
    if hit is not None and _part_dict(hit) == p:
        return hit
    part = Part(**p)
    _DECODED[part.key] = part
    return part
