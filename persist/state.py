"""Shard state: what Consensus stores for a shard at each seqno.

A state lists the shard's parts with the timestamp each was written at, its ``since``
(reads below it are not guaranteed) and ``upper`` (every write is at a time below it).
States are immutable values, serialized as JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, asdict


@dataclass(frozen=True)
class Part:
    """One immutable Parquet part in Blob.

    Attributes:
        key: Blob key of the Parquet file.
        ts: timestamp (ms) of the write that created it; its rows are visible at as_of >= ts.
        rows: number of rows.
        bytes: size of the Parquet file in bytes.
    """

    key: str
    ts: int
    rows: int
    bytes: int


@dataclass(frozen=True)
class ShardState:
    """Versioned state of one shard. ``seqno`` increases by one per compare-and-set."""

    seqno: int = 0
    since: int = 0
    upper: int = 0
    parts: tuple[Part, ...] = field(default_factory=tuple)

    def encode(self) -> bytes:
        d = asdict(self)
        return json.dumps(d, separators=(",", ":")).encode()

    @staticmethod
    def decode(data: bytes) -> "ShardState":
        d = json.loads(data)
        return ShardState(
            seqno=d["seqno"],
            since=d["since"],
            upper=d["upper"],
            parts=tuple(Part(**p) for p in d["parts"]),
        )

    def parts_as_of(self, as_of: int) -> tuple[Part, ...]:
        """The parts whose rows are visible to a read at ``as_of``."""
        return tuple(p for p in self.parts if p.ts <= as_of)
