"""Frontend (client to server) messages, typed: each parses its body from bytes
(``decode``) and serializes itself (``encode``), per PostgreSQL 55.7 "Message Formats".

The startup-phase packets (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest) have
no type byte: an Int32 length, then an Int32 code (:func:`startup_packet` picks the class).
The others are a type byte and a length (:data:`FRONTEND` maps the byte to the class);
``PasswordMessage``'s byte ``p`` carries SASLInitialResponse or SASLResponse, which only
the authentication exchange's state tells apart.

Text whose encoding is the session's client_encoding (query text) stays ``bytes``: the
session decodes it. Statement and portal names are read as UTF-8.

Raises (every ``decode``): :class:`~sqlfront.protocol.buffer.ProtocolError` (08P01) for a
malformed or truncated body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from sqlfront.protocol.buffer import (
    NULL_LENGTH,
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

#: the protocol version of StartupMessage this server speaks (3.0)
PROTOCOL_3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
#: PostgreSQL's MAX_STARTUP_PACKET_LENGTH: the largest startup-phase packet
MAX_STARTUP = 10_000
#: the server's one-byte answers to SSLRequest and GSSENCRequest (55.2.10)
ACCEPT, REFUSE = b"S", b"N"


def startup_parameters(body: bytes) -> dict[str, str]:
    """The parameters of a StartupMessage ``body`` after its protocol version: pairs of
    Strings up to an empty name (55.7), decoded as UTF-8 with bad bytes replaced. Never
    raises: a missing final NUL, or a name without a value at the end, is forgiven, as
    this server always has (PostgreSQL refuses such a packet)."""
    parts = body.split(b"\x00")
    out = {}
    for name, value in zip(parts[::2], parts[1::2]):
        if not name:
            break
        out[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


@dataclass(frozen=True)
class StartupMessage:
    """StartupMessage: the protocol version, then parameter names and values
    (``user``, ``database``, ``options``, any setting)."""

    parameters: dict[str, str] = field(default_factory=dict)
    version: int = PROTOCOL_3

    def encode(self) -> bytes:
        body = b"".join(cstring(k.encode()) + cstring(v.encode()) for k, v in self.parameters.items()) + b"\x00"
        return int32(8 + len(body)) + uint32(self.version) + body

    @classmethod
    def decode(cls, body: bytes, version: int = PROTOCOL_3) -> StartupMessage:
        """From the bytes after the packet's length and version."""
        return cls(startup_parameters(body), version)


@dataclass(frozen=True)
class SSLRequest:
    """SSLRequest: the client asks for TLS; the server answers one byte, ``S`` or ``N``."""

    code: ClassVar[int] = SSL_REQUEST

    def encode(self) -> bytes:
        return int32(8) + uint32(self.code)

    @classmethod
    def decode(cls, body: bytes):
        return cls()


@dataclass(frozen=True)
class GSSENCRequest(SSLRequest):
    """GSSENCRequest: the client asks for GSSAPI encryption (answered ``N`` here)."""

    code: ClassVar[int] = GSSENC_REQUEST


@dataclass(frozen=True)
class CancelRequest:
    """CancelRequest: the process id and secret key of BackendKeyData (4 bytes in
    protocol 3.0; 3.2 allows up to 256)."""

    process_id: int
    secret: bytes

    def encode(self) -> bytes:
        return int32(12 + len(self.secret)) + uint32(CANCEL_REQUEST) + uint32(self.process_id) + self.secret

    @classmethod
    def decode(cls, body: bytes) -> CancelRequest:
        r = Reader(body)
        pid = r.uint32()
        secret = r.rest()
        if not 4 <= len(secret) <= 256:
            raise ProtocolError(f"invalid cancel key length {len(secret)}")
        return cls(pid, secret)


_STARTUP = {PROTOCOL_3: StartupMessage, SSL_REQUEST: SSLRequest, GSSENC_REQUEST: GSSENCRequest,
            CANCEL_REQUEST: CancelRequest}


def startup_packet(code: int, body: bytes):
    """The startup-phase packet of ``code`` (the Int32 after the length) with ``body``
    (what follows the code).

    Raises:
        ProtocolError for a code that is no known request nor protocol 3.0 (its message
        names the version asked for, as PostgreSQL's "unsupported frontend protocol")."""
    cls = _STARTUP.get(code)
    if cls is None:  # 3.x minors would be negotiated (NegotiateProtocolVersion): not here
        raise ProtocolError(f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}")
    return cls.decode(body)


@dataclass(frozen=True)
class Query(Message):
    """Query: the SQL text (one or more statements), in the client's encoding."""

    kind: ClassVar[bytes] = b"Q"
    text: bytes

    def body(self, text=utf8) -> bytes:
        return cstring(self.text)

    @classmethod
    def decode(cls, body: bytes) -> Query:
        return cls(body.rstrip(b"\x00"))


@dataclass(frozen=True)
class Parse(Message):
    """Parse: statement name, query text (client encoding), the parameter type OIDs the
    client fixes (0: unspecified)."""

    kind: ClassVar[bytes] = b"P"
    name: str
    query: bytes
    param_types: tuple[int, ...] = ()

    def body(self, text=utf8) -> bytes:
        return (cstring(self.name.encode()) + cstring(self.query) + int16(len(self.param_types))
                + b"".join(uint32(o) for o in self.param_types))

    @classmethod
    def decode(cls, body: bytes) -> Parse:
        r = Reader(body)
        return cls(r.name(), r.cstring(), tuple(r.uint32s()))


@dataclass(frozen=True)
class Bind(Message):
    """Bind: portal and statement names, the parameters' format codes (none: all text;
    one: all alike; else one each), the parameter values (None: NULL), the result
    columns' format codes (same rule)."""

    kind: ClassVar[bytes] = b"B"
    portal: str
    statement: str
    param_formats: tuple[int, ...] = ()
    params: tuple[bytes | None, ...] = ()
    result_formats: tuple[int, ...] = ()

    def body(self, text=utf8) -> bytes:
        return (cstring(self.portal.encode()) + cstring(self.statement.encode()) + int16s(self.param_formats)
                + pack_values(self.params) + int16s(self.result_formats))

    @classmethod
    def decode(cls, body: bytes) -> Bind:
        r = Reader(body)
        return cls(r.name(), r.name(), tuple(r.int16s()), tuple(r.values()), tuple(r.int16s()))


@dataclass(frozen=True)
class _Target(Message):
    """Describe or Close: ``S`` (a prepared statement) or ``P`` (a portal), and a name."""

    target: bytes
    name: str

    def body(self, text=utf8) -> bytes:
        return self.target + cstring(self.name.encode())

    @classmethod
    def decode(cls, body: bytes):
        r = Reader(body)
        return cls(r.byte(), r.name())


@dataclass(frozen=True)
class Describe(_Target):
    kind: ClassVar[bytes] = b"D"


@dataclass(frozen=True)
class Close(_Target):
    kind: ClassVar[bytes] = b"C"


@dataclass(frozen=True)
class Execute(Message):
    """Execute: the portal, and the most rows to return (0: no limit)."""

    kind: ClassVar[bytes] = b"E"
    portal: str
    max_rows: int = 0

    def body(self, text=utf8) -> bytes:
        return cstring(self.portal.encode()) + int32(self.max_rows)

    @classmethod
    def decode(cls, body: bytes) -> Execute:
        r = Reader(body)
        return cls(r.name(), r.int32())


@dataclass(frozen=True)
class Sync(Message):
    kind: ClassVar[bytes] = b"S"


@dataclass(frozen=True)
class Flush(Message):
    kind: ClassVar[bytes] = b"H"


@dataclass(frozen=True)
class Terminate(Message):
    kind: ClassVar[bytes] = b"X"


@dataclass(frozen=True)
class CopyData(Message):
    """CopyData: a piece of the COPY stream (both directions)."""

    kind: ClassVar[bytes] = b"d"
    data: bytes

    def body(self, text=utf8) -> bytes:
        return self.data

    @classmethod
    def decode(cls, body: bytes) -> CopyData:
        return cls(body)


@dataclass(frozen=True)
class CopyDone(Message):
    """CopyDone: the COPY stream ends (both directions)."""

    kind: ClassVar[bytes] = b"c"


@dataclass(frozen=True)
class CopyFail(Message):
    """CopyFail: the client abandons COPY FROM STDIN, with its reason."""

    kind: ClassVar[bytes] = b"f"
    message: str

    def body(self, text=utf8) -> bytes:
        return cstring(self.message.encode())

    @classmethod
    def decode(cls, body: bytes) -> CopyFail:
        return cls(body.rstrip(b"\x00").decode("utf-8", "replace"))


@dataclass(frozen=True)
class SASLInitialResponse(Message):
    """SASLInitialResponse (a PasswordMessage ``p``): the mechanism chosen, then its
    first message (None: Int32 -1, no data)."""

    kind: ClassVar[bytes] = b"p"
    mechanism: str
    data: bytes | None

    def body(self, text=utf8) -> bytes:
        data = NULL_LENGTH if self.data is None else int32(len(self.data)) + self.data
        return cstring(self.mechanism.encode()) + data

    @classmethod
    def decode(cls, body: bytes) -> SASLInitialResponse:
        r = Reader(body)
        mechanism = r.name()
        n = r.int32()
        return cls(mechanism, None if n == -1 else r.take(n))


@dataclass(frozen=True)
class SASLResponse(Message):
    """SASLResponse (a PasswordMessage ``p``): the mechanism's next message."""

    kind: ClassVar[bytes] = b"p"
    data: bytes

    def body(self, text=utf8) -> bytes:
        return self.data

    @classmethod
    def decode(cls, body: bytes) -> SASLResponse:
        return cls(body)


#: the type byte of each message a client sends in a session (after startup), to its class
FRONTEND: dict[bytes, type[Message]] = {
    c.kind: c for c in (Query, Parse, Bind, Describe, Close, Execute, Sync, Flush, Terminate, CopyData,
                        CopyDone, CopyFail)
}


def parse_frontend(kind: bytes, body: bytes) -> Message:
    """The session-phase frontend message of type byte ``kind`` with ``body``
    (PasswordMessage ``p`` is read by the authentication exchange, which knows which).

    Raises:
        ProtocolError for an unknown type byte ("invalid frontend message type") or a
        malformed body."""
    cls = FRONTEND.get(kind)
    if cls is None:
        raise ProtocolError(f"invalid frontend message type {kind!r}")
    return cls.decode(body)
