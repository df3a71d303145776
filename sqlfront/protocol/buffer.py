"""The primitives of PostgreSQL's message layout (PostgreSQL 55.7 "Message Formats":
Int8/Int16/Int32 in network byte order, String = NUL-terminated, Byten): a bounds-checked
:class:`Reader` over one message body, the writers, message framing, and the checks of a
length header before anything is read or allocated.

Owns no socket. Every malformed or truncated input raises :class:`ProtocolError` (SQLSTATE
08P01, PostgreSQL's ``ERRCODE_PROTOCOL_VIOLATION``); a count or length read from the input is
checked against the bytes actually there before a list or a slice is made of it, so a
length field never makes this module allocate more than the input's own size.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import ClassVar

from catalog.errors import ProtocolViolation

_I16, _I32, _U32 = struct.Struct("!h"), struct.Struct("!i"), struct.Struct("!I")
_HEAD = struct.Struct("!ci")  # a message's type byte and Int32 length
_STARTUP_HEAD = struct.Struct("!iI")  # a startup packet's Int32 length and Int32 code

int16 = _I16.pack
int32 = _I32.pack
uint32 = _U32.pack
#: NULL as a field or parameter length (55.7 DataRow, Bind: "-1 indicates a NULL")
NULL_LENGTH = int32(-1)


class ProtocolError(ProtocolViolation, ValueError):
    """Bytes that break PostgreSQL's message format: SqlError 08P01 (protocol_violation).
    Also a ValueError, so that code reading a value's binary form (an array's
    length-prefixed elements) sees it as bad data."""


def int16s(values) -> bytes:
    """An Int16 count, then each value as an Int16 (format codes)."""
    return int16(len(values)) + b"".join(int16(v) for v in values)


def pack_values(values) -> bytes:
    """An Int16 count, then each value after its Int32 length (None: length -1, no
    bytes): Bind's parameters, DataRow's columns (55.7)."""
    return int16(len(values)) + b"".join([NULL_LENGTH if v is None else int32(len(v)) + v for v in values])


def frame(kind: bytes, body: bytes = b"") -> bytes:
    """The message of type byte ``kind`` with ``body``: the type, an Int32 length that
    counts itself and the body, then the body (55.7)."""
    return _HEAD.pack(kind, len(body) + 4) + body


def body_length(header: bytes, limit: int, setting: str | None = None) -> int:
    """The body size given by a message's 4-byte length ``header`` (the length counts
    itself), checked against ``limit`` bytes for the whole message before its body is read.

    Raises:
        ProtocolError for a length below 4 ("invalid message length", as PostgreSQL's) or
        above ``limit`` (the message names ``setting``, the option that raises the limit)."""
    (size,) = _U32.unpack(header)
    if size < 4:
        raise ProtocolError(f"invalid message length {size}")
    if size > limit:
        where = f" ({setting})" if setting else ""
        raise ProtocolError(f"message of {size} bytes exceeds the limit of {limit} bytes{where}")
    return size - 4


def startup_header(header: bytes) -> tuple[int, int]:
    """``(length, code)`` of the 8 bytes that start every startup-phase packet
    (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest: 55.7): the Int32 length
    counting itself, and the Int32 protocol version or request code."""
    if len(header) != 8:
        raise ProtocolError("incomplete startup packet")
    return _STARTUP_HEAD.unpack(header)


def message_bounds(data: bytes | bytearray, pos: int = 0) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each whole message in ``data`` from ``pos`` on (a stream cut
    anywhere: a message not all there yet ends the iteration; its start is the last
    ``end``, or ``pos``).

    Raises:
        ProtocolError for a length below 4."""
    n = len(data)
    while n - pos >= 5:
        (length,) = _U32.unpack_from(data, pos + 1)
        if length < 4:
            raise ProtocolError(f"invalid message length {length}")
        end = pos + 1 + length
        if end > n:
            return
        yield pos, end
        pos = end


def messages(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    """``(kind, body)`` of each message of ``data``, which holds whole messages only.

    Raises:
        ProtocolError when ``data`` ends inside a message."""
    end = 0
    for start, end in message_bounds(data):
        yield data[start:start + 1], data[start + 5:end]
    if end != len(data):
        raise ProtocolError("message truncated")


def length_prefixed(data: bytes, pos: int, count: int) -> tuple[list[bytes | None], int]:
    """``count`` values each after an Int32 length (-1: NULL), from ``data`` at ``pos``
    (Bind parameters, DataRow fields; also array elements and COPY BINARY fields, which
    share the layout). Returns them and the position after them.

    Raises:
        ProtocolError when ``data`` ends early, or for a length below -1."""
    if count < 0 or count * 4 > len(data) - pos:  # each value needs 4 bytes at least
        raise ProtocolError(f"{count} values cannot fit in the {max(len(data) - pos, 0)} bytes left")
    out: list[bytes | None] = []
    for _ in range(count):
        if pos + 4 > len(data):
            raise ProtocolError("value length runs past the end of the message")
        (n,) = _I32.unpack_from(data, pos)
        pos += 4
        if n < 0:
            if n != -1:
                raise ProtocolError(f"invalid value length {n}")
            out.append(None)
            continue
        if pos + n > len(data):
            raise ProtocolError("value runs past the end of the message")
        out.append(data[pos:pos + n])
        pos += n
    return out, pos


class Reader:
    """A cursor over one message body. Each read checks the bytes left first.

    Raises (every method):
        ProtocolError when the body ends early or holds what its format forbids."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        """Byten: the next ``n`` bytes."""
        if n < 0 or n > self.left():
            raise ProtocolError(f"message too short: {n} more bytes expected, {self.left()} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def byte(self) -> bytes:
        """Byte1: one byte, as a 1-byte bytes."""
        return self.take(1)

    def int8(self) -> int:
        return self.take(1)[0]

    def int16(self) -> int:
        return _I16.unpack(self.take(2))[0]

    def int32(self) -> int:
        return _I32.unpack(self.take(4))[0]

    def uint32(self) -> int:
        """An Int32 read as unsigned (object ids)."""
        return _U32.unpack(self.take(4))[0]

    def count(self, item_size: int) -> int:
        """An Int16 count of items of at least ``item_size`` bytes each, checked to fit in
        the bytes left (before a list of that many is made)."""
        n = self.int16()
        if n < 0 or n * item_size > self.left():
            raise ProtocolError(f"invalid count {n} for the {self.left()} bytes left")
        return n

    def int16s(self) -> list[int]:
        """An Int16 count, then that many Int16 (format codes)."""
        n = self.count(2)
        return list(struct.unpack_from(f"!{n}h", self.take(2 * n)))

    def uint32s(self) -> list[int]:
        """An Int16 count, then that many Int32 read as unsigned (type OIDs)."""
        n = self.count(4)
        return list(struct.unpack_from(f"!{n}I", self.take(4 * n)))

    def values(self) -> list[bytes | None]:
        """An Int16 count, then that many length-prefixed values (-1: NULL)."""
        n = self.count(4)
        out, self.pos = length_prefixed(self.data, self.pos, n)
        return out

    def cstring(self) -> bytes:
        """String: the bytes up to the next NUL (which is consumed)."""
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise ProtocolError("string not terminated by a NUL byte")
        out = self.data[self.pos:end]
        self.pos = end + 1
        return out

    def name(self) -> str:
        """A String holding an identifier (statement, portal, parameter names), in UTF-8."""
        raw = self.cstring()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProtocolError(f"invalid UTF-8 in a name: {e}") from None

    def rest(self) -> bytes:
        """All the bytes left (Byten at the end of a message)."""
        return self.take(self.left())


def cstring(value: bytes) -> bytes:
    """String: ``value`` then a NUL byte. ``value`` must hold no NUL: PostgreSQL's strings
    cannot, and a reader would cut it there (not checked here: an error message is sent
    whatever text it carries)."""
    return value + b"\x00"


def utf8(text: str) -> bytes:
    """Text as UTF-8: how a message's text is encoded unless the caller passes the
    session's client encoding."""
    return text.encode("utf-8")


class Message:
    """A message with a type byte (every one but the startup-phase packets): ``kind``;
    ``body(text)``, its bytes after the length, and ``encode(text)``, the whole message,
    where ``text(str) -> bytes`` encodes its text fields (UTF-8 unless told); ``decode(body)``,
    the message from its body."""

    kind: ClassVar[bytes]

    def body(self, text: Callable[[str], bytes] = utf8) -> bytes:
        return b""

    def encode(self, text: Callable[[str], bytes] = utf8) -> bytes:
        return frame(self.kind, self.body(text))

    @classmethod
    def decode(cls, body: bytes):
        return cls()
