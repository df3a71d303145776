"""Backend (server to client) messages, typed: each serializes itself (``encode(text)``,
``text(str) -> bytes`` encoding its text fields in the session's client encoding, UTF-8
unless told) and parses its body from bytes (``decode``), per PostgreSQL 55.7 "Message
Formats"; ErrorResponse and NoticeResponse fields per 55.8 "Error and Notice Message
Fields". :func:`parse_backend` reads any of them by type byte.

Raises (every ``decode``): :class:`~sqlfront.protocol.buffer.ProtocolError` (08P01) for a
malformed or truncated body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from catalog.errors import SqlError
from sqlfront.protocol.buffer import (
    Message,
    ProtocolError,
    Reader,
    cstring,
    int16,
    int16s,
    int32,
    pack_values,
    uint32,
    utf8,
)
from sqlfront.protocol.frontend import CopyData, CopyDone

# -- authentication ('R': an Int32 code says which) -----------------------------------

@dataclass(frozen=True)
class AuthenticationOk(Message):
    kind: ClassVar[bytes] = b"R"
    code: ClassVar[int] = 0

    def body(self, text=utf8) -> bytes:
        return int32(self.code)


@dataclass(frozen=True)
class AuthenticationSASL(Message):
    """AuthenticationSASL: the SASL mechanisms the server offers, in its order."""

    kind: ClassVar[bytes] = b"R"
    code: ClassVar[int] = 10
    mechanisms: tuple[str, ...]

    def body(self, text=utf8) -> bytes:
        return int32(self.code) + b"".join(cstring(m.encode()) for m in self.mechanisms) + b"\x00"

    @classmethod
    def decode(cls, body: bytes) -> AuthenticationSASL:
        r, out = Reader(body), []
        r.int32()
        while name := r.name():
            out.append(name)
        return cls(tuple(out))


@dataclass(frozen=True)
class AuthenticationSASLContinue(Message):
    """AuthenticationSASLContinue: the mechanism's challenge (SCRAM's server-first)."""

    kind: ClassVar[bytes] = b"R"
    code: ClassVar[int] = 11
    data: bytes

    def body(self, text=utf8) -> bytes:
        return int32(self.code) + self.data

    @classmethod
    def decode(cls, body: bytes):
        r = Reader(body)
        r.int32()
        return cls(r.rest())


@dataclass(frozen=True)
class AuthenticationSASLFinal(AuthenticationSASLContinue):
    """AuthenticationSASLFinal: the mechanism's outcome (SCRAM's server-final)."""

    code: ClassVar[int] = 12


_AUTHENTICATION = {c.code: c for c in (AuthenticationOk, AuthenticationSASL, AuthenticationSASLContinue,
                                       AuthenticationSASLFinal)}


def _authentication(body: bytes) -> Message:
    code = Reader(body).int32()
    cls = _AUTHENTICATION.get(code)
    if cls is None:
        raise ProtocolError(f"unsupported authentication request {code}")
    return cls.decode(body)


# -- session ----------------------------------------------------------------------------

@dataclass(frozen=True)
class BackendKeyData(Message):
    """BackendKeyData: the process id and secret key a CancelRequest must carry (4
    bytes in protocol 3.0)."""

    kind: ClassVar[bytes] = b"K"
    process_id: int
    secret: bytes

    def body(self, text=utf8) -> bytes:
        return uint32(self.process_id) + self.secret

    @classmethod
    def decode(cls, body: bytes) -> BackendKeyData:
        r = Reader(body)
        pid = r.uint32()
        secret = r.rest()
        if not 4 <= len(secret) <= 256:
            raise ProtocolError(f"invalid cancel key length {len(secret)}")
        return cls(pid, secret)


@dataclass(frozen=True)
class ParameterStatus(Message):
    """ParameterStatus: a reported setting's name and value."""

    kind: ClassVar[bytes] = b"S"
    name: str
    value: str

    def body(self, text=utf8) -> bytes:
        return cstring(text(self.name)) + cstring(text(self.value))

    @classmethod
    def decode(cls, body: bytes) -> ParameterStatus:
        r = Reader(body)
        return cls(r.cstring().decode("utf-8", "replace"), r.cstring().decode("utf-8", "replace"))


@dataclass(frozen=True)
class ReadyForQuery(Message):
    """ReadyForQuery: the transaction status, ``I`` (idle), ``T`` (in a transaction)
    or ``E`` (in a failed transaction)."""

    kind: ClassVar[bytes] = b"Z"
    IDLE: ClassVar[bytes] = b"I"
    IN_TRANSACTION: ClassVar[bytes] = b"T"
    FAILED: ClassVar[bytes] = b"E"
    status: bytes = b"I"

    def body(self, text=utf8) -> bytes:
        return self.status

    @classmethod
    def decode(cls, body: bytes) -> ReadyForQuery:
        status = Reader(body).byte()
        if status not in (b"I", b"T", b"E"):
            raise ProtocolError(f"invalid transaction status {status!r}")
        return cls(status)


class _Fields(Message):
    """ErrorResponse or NoticeResponse: (field code, value) pairs, each a code byte and
    a String, ending with a zero byte (55.8)."""

    fields: tuple[tuple[bytes, str], ...]

    def body(self, text=utf8) -> bytes:
        return b"".join(code + cstring(text(v)) for code, v in self.fields) + b"\x00"

    @classmethod
    def decode(cls, body: bytes):
        r, out = Reader(body), []
        while (code := r.byte()) != b"\x00":
            out.append((code, r.cstring().decode("utf-8", "replace")))
        return cls(tuple(out))

    @classmethod
    def of(cls, e: SqlError):
        """The message of ``e``: severity (S, and V, not localized), SQLSTATE (C),
        message (M), then detail (D), hint (H) and position (P) when set."""
        fields = [(b"S", e.severity), (b"V", e.severity), (b"C", e.sqlstate), (b"M", e.message)]
        if e.detail:
            fields.append((b"D", e.detail))
        if e.hint:
            fields.append((b"H", e.hint))
        if e.position:
            fields.append((b"P", str(e.position)))
        return cls(tuple(fields))

    def error(self) -> SqlError:
        """The SqlError these fields describe."""
        f = dict(self.fields)
        pos = f.get(b"P")
        return SqlError(f.get(b"C", ""), f.get(b"M", ""), detail=f.get(b"D"), hint=f.get(b"H"),
                        position=int(pos) if pos and pos.isdigit() else None,
                        severity=f.get(b"V", f.get(b"S", "ERROR")))


@dataclass(frozen=True)
class ErrorResponse(_Fields):
    kind: ClassVar[bytes] = b"E"
    fields: tuple[tuple[bytes, str], ...]


@dataclass(frozen=True)
class NoticeResponse(_Fields):
    kind: ClassVar[bytes] = b"N"
    fields: tuple[tuple[bytes, str], ...]


# -- queries ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParseComplete(Message):
    kind: ClassVar[bytes] = b"1"


@dataclass(frozen=True)
class BindComplete(Message):
    kind: ClassVar[bytes] = b"2"


@dataclass(frozen=True)
class CloseComplete(Message):
    kind: ClassVar[bytes] = b"3"


@dataclass(frozen=True)
class NoData(Message):
    kind: ClassVar[bytes] = b"n"


@dataclass(frozen=True)
class PortalSuspended(Message):
    kind: ClassVar[bytes] = b"s"


@dataclass(frozen=True)
class EmptyQueryResponse(Message):
    kind: ClassVar[bytes] = b"I"


@dataclass(frozen=True)
class CommandComplete(Message):
    """CommandComplete: the command tag (``SELECT 3``, ``INSERT 0 1``, ...)."""

    kind: ClassVar[bytes] = b"C"
    tag: str

    def body(self, text=utf8) -> bytes:
        return cstring(self.tag.encode())

    @classmethod
    def decode(cls, body: bytes) -> CommandComplete:
        return cls(Reader(body).name())


@dataclass(frozen=True)
class ParameterDescription(Message):
    """ParameterDescription: the type OID of each parameter of a statement."""

    kind: ClassVar[bytes] = b"t"
    type_oids: tuple[int, ...]

    def body(self, text=utf8) -> bytes:
        return int16(len(self.type_oids)) + b"".join(uint32(o) for o in self.type_oids)

    @classmethod
    def decode(cls, body: bytes) -> ParameterDescription:
        return cls(tuple(Reader(body).uint32s()))


@dataclass(frozen=True)
class Field:
    """One column of a RowDescription: name, table OID and column number (0 when not a
    table's column), type OID, type size (-1 variable), type modifier (-1 none), format
    (0 text, 1 binary)."""

    name: str
    type_oid: int
    type_size: int = -1
    type_modifier: int = -1
    format: int = 0
    table_oid: int = 0
    column: int = 0


@dataclass(frozen=True)
class RowDescription(Message):
    kind: ClassVar[bytes] = b"T"
    fields: tuple[Field, ...]

    def body(self, text=utf8) -> bytes:
        return int16(len(self.fields)) + b"".join(
            cstring(text(f.name)) + uint32(f.table_oid) + int16(f.column) + uint32(f.type_oid)
            + int16(f.type_size) + int32(f.type_modifier) + int16(f.format) for f in self.fields)

    @classmethod
    def decode(cls, body: bytes) -> RowDescription:
        r = Reader(body)
        out = []
        for _ in range(r.count(19)):  # the smallest field: an empty name and 18 bytes
            name = r.cstring().decode("utf-8", "replace")
            table, col, oid, size, mod, fmt = r.uint32(), r.int16(), r.uint32(), r.int16(), r.int32(), r.int16()
            out.append(Field(name, oid, size, mod, fmt, table, col))
        return cls(tuple(out))


@dataclass(frozen=True)
class DataRow(Message):
    """DataRow: each column's value in its format's bytes (None: NULL)."""

    kind: ClassVar[bytes] = b"D"
    values: tuple[bytes | None, ...]

    def body(self, text=utf8) -> bytes:
        return pack_values(self.values)

    @classmethod
    def decode(cls, body: bytes) -> DataRow:
        return cls(tuple(Reader(body).values()))


# -- COPY -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class CopyInResponse(Message):
    """CopyInResponse: the overall format (0 text, 1 binary) and each column's."""

    kind: ClassVar[bytes] = b"G"
    format: int
    column_formats: tuple[int, ...]

    def body(self, text=utf8) -> bytes:
        return bytes((self.format,)) + int16s(self.column_formats)

    @classmethod
    def decode(cls, body: bytes):
        r = Reader(body)
        return cls(r.int8(), tuple(r.int16s()))


@dataclass(frozen=True)
class CopyOutResponse(CopyInResponse):
    kind: ClassVar[bytes] = b"H"


#: the type byte of each backend message to the function reading its body
BACKEND = {
    b"R": _authentication,
    **{c.kind: c.decode for c in (BackendKeyData, ParameterStatus, ReadyForQuery, ErrorResponse, NoticeResponse,
                                  ParseComplete, BindComplete, CloseComplete, NoData, PortalSuspended,
                                  EmptyQueryResponse, CommandComplete, ParameterDescription, RowDescription,
                                  DataRow, CopyInResponse, CopyOutResponse, CopyData, CopyDone)},
}


def parse_backend(kind: bytes, body: bytes) -> Message:
    """The backend message of type byte ``kind`` with ``body``.

    Raises:
        ProtocolError for an unknown type byte or a malformed body."""
    read = BACKEND.get(kind)
    if read is None:
        raise ProtocolError(f"invalid backend message type {kind!r}")
    return read(body)
