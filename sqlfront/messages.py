"""pgwire backend messages that more than one server builds (environmentd's pgwire
server and the balancer): bytes only, no sockets (PostgreSQL 55.7 "Message Formats")."""

from __future__ import annotations

import struct

from catalog.errors import SqlError


def error_response(e: SqlError, encode=lambda v: v.encode("utf-8")) -> bytes:
    """The ErrorResponse ('E') message of ``e``: severity (S and V), SQLSTATE (C),
    message (M), then detail (D), hint (H) and position (P) when set (PostgreSQL 55.8).
    ``encode(str) -> bytes`` is the session's client encoding (UTF-8 by default)."""
    return _fields_message(b"E", e, encode)


def notice_response(e: SqlError, encode=lambda v: v.encode("utf-8")) -> bytes:
    """The NoticeResponse ('N') message of ``e`` (a NOTICE or WARNING): the fields of
    :func:`error_response`."""
    return _fields_message(b"N", e, encode)


def _fields_message(kind: bytes, e: SqlError, encode) -> bytes:
    fields = [(b"S", e.severity), (b"V", e.severity), (b"C", e.sqlstate), (b"M", e.message)]
    if e.detail:
        fields.append((b"D", e.detail))
    if e.hint:
        fields.append((b"H", e.hint))
    if e.position:
        fields.append((b"P", str(e.position)))
    body = b"".join(k + encode(v) + b"\x00" for k, v in fields) + b"\x00"
    return kind + struct.pack("!i", len(body) + 4) + body
