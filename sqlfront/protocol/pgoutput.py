"""Decoding of PostgreSQL's ``pgoutput`` logical replication messages (PostgreSQL's
"Logical Replication Message Formats", protocol version 1): what a PostgreSQL source
(``sqlfront.pg_source``) reads from its replication slot. The replication protocol itself
(START_REPLICATION, keepalives, standby status updates) is psycopg2's; this module only
turns one message's payload into a value. Pure: no I/O.

Messages decoded: Begin, Commit, Relation, Insert, Update, Delete, Truncate; the others
(Origin, Type, logical decoding Message) decode to :class:`Other`. Column values stay in
PostgreSQL's text form (``str``), ``None`` for NULL, :data:`UNCHANGED` for an unchanged
TOASTed value (an UPDATE's new tuple may hold one; the old tuple of a table with REPLICA
IDENTITY FULL has the value).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

#: an unchanged TOASTed value in a tuple ('u')
UNCHANGED = object()


@dataclass(frozen=True)
class Begin:
    final_lsn: int  # the LSN of the transaction's commit record
    xid: int


@dataclass(frozen=True)
class Commit:
    commit_lsn: int
    end_lsn: int  # the LSN just past the commit record: what a consumer confirms


@dataclass(frozen=True)
class RelationColumn:
    name: str
    type_oid: int
    typmod: int
    key: bool


@dataclass(frozen=True)
class Relation:
    oid: int
    schema: str
    name: str
    replica_identity: str  # 'd', 'n', 'f' or 'i' (pg_class.relreplident)
    columns: tuple[RelationColumn, ...]


@dataclass(frozen=True)
class Insert:
    oid: int
    new: tuple


@dataclass(frozen=True)
class Update:
    oid: int
    old: tuple | None  # None: the key did not change and REPLICA IDENTITY is not FULL
    new: tuple
    old_is_key: bool = False


@dataclass(frozen=True)
class Delete:
    oid: int
    old: tuple
    old_is_key: bool = False


@dataclass(frozen=True)
class Truncate:
    oids: tuple[int, ...]


@dataclass(frozen=True)
class Other:
    kind: str


class _Reader:
    def __init__(self, data: bytes):
        self.data = memoryview(data)
        self.i = 0

    def take(self, fmt: str):
        v = struct.unpack_from(fmt, self.data, self.i)
        self.i += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def byte(self) -> str:
        b = chr(self.data[self.i])
        self.i += 1
        return b

    def string(self) -> str:
        end = bytes(self.data[self.i:]).index(b"\0") + self.i
        s = bytes(self.data[self.i:end]).decode()
        self.i = end + 1
        return s

    def tuple(self) -> tuple:
        n = self.take("!h")
        out = []
        for _ in range(n):
            kind = self.byte()
            if kind == "n":
                out.append(None)
            elif kind == "u":
                out.append(UNCHANGED)
            elif kind in ("t", "b"):
                length = self.take("!i")
                raw = bytes(self.data[self.i:self.i + length])
                self.i += length
                out.append(raw.decode() if kind == "t" else raw)
            else:
                raise ValueError(f"pgoutput: unknown tuple column kind {kind!r}")
        return tuple(out)


def decode(payload: bytes):
    """One pgoutput message, as one of this module's dataclasses.

    Raises:
        ValueError for a malformed message (a column kind or tuple tag not in protocol 1)."""
    r = _Reader(payload)
    kind = r.byte()
    if kind == "B":
        final_lsn, _ts, xid = r.take("!qqI")
        return Begin(final_lsn, xid)
    if kind == "C":
        _flags, commit_lsn, end_lsn, _ts = r.take("!bqqq")
        return Commit(commit_lsn, end_lsn)
    if kind == "R":
        oid = r.take("!I")
        schema, name = r.string(), r.string()
        ident = r.byte()
        cols = []
        for _ in range(r.take("!h")):
            flags = r.take("!b")
            cname = r.string()
            type_oid, typmod = r.take("!Ii")
            cols.append(RelationColumn(cname, type_oid, typmod, bool(flags & 1)))
        return Relation(oid, schema, name, ident, tuple(cols))
    if kind == "I":
        oid = r.take("!I")
        if r.byte() != "N":
            raise ValueError("pgoutput: Insert without a new tuple")
        return Insert(oid, r.tuple())
    if kind == "U":
        oid = r.take("!I")
        tag = r.byte()
        old = None
        old_is_key = tag == "K"
        if tag in ("K", "O"):
            old = r.tuple()
            tag = r.byte()
        if tag != "N":
            raise ValueError("pgoutput: Update without a new tuple")
        return Update(oid, old, r.tuple(), old_is_key)
    if kind == "D":
        oid = r.take("!I")
        tag = r.byte()
        if tag not in ("K", "O"):
            raise ValueError("pgoutput: Delete without an old tuple")
        return Delete(oid, r.tuple(), tag == "K")
    if kind == "T":
        n = r.take("!i")
        r.take("!b")
        return Truncate(tuple(r.take("!I") for _ in range(n)))
    return Other(kind)
