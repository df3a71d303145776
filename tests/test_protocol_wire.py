"""The server through a client made of sqlfront.protocol's messages: the extended protocol
round trip, and a hostile Bind (a parameter count with nothing behind it) that gets ERROR
08P01 and leaves the session usable (no allocation from the count, no dropped connection).
Uses the session's ``server``."""

from __future__ import annotations

import socket

from server import read_message

from sqlfront.protocol import backend as be
from sqlfront.protocol import frame
from sqlfront.protocol import frontend as fe


def _session(server) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    s.sendall(fe.StartupMessage({"user": "materialize", "database": "materialize"}).encode())
    _until_ready(s)
    return s


def _until_ready(s: socket.socket) -> list:
    out = []
    while True:
        kind, body = read_message(s)
        assert kind, "connection closed"
        out.append(be.parse_backend(kind, body))
        if kind == b"Z":
            return out


def test_extended_protocol_through_typed_messages(server):
    with _session(server) as s:
        s.sendall(b"".join(m.encode() for m in (
            fe.Parse("", b"SELECT $1::int + 1 AS n, NULL::text AS t", (23,)),
            fe.Bind("", "", (0,), (b"41",), (0,)), fe.Describe(b"P", ""), fe.Execute("", 0), fe.Sync())))
        got = _until_ready(s)
    assert [type(m) for m in got] == [be.ParseComplete, be.BindComplete, be.RowDescription, be.DataRow,
                                      be.CommandComplete, be.ReadyForQuery]
    assert [(f.name, f.type_oid) for f in got[2].fields] == [("n", 23), ("t", 25)]
    assert got[3] == be.DataRow((b"42", None)) and got[4] == be.CommandComplete("SELECT 1")


def test_a_bind_claiming_32767_parameters_is_08p01_and_the_session_goes_on(server):
    with _session(server) as s:
        s.sendall(fe.Parse("s", b"SELECT 1").encode()
                  + frame(b"B", b"\x00s\x00\x00\x00\x7f\xff") + fe.Sync().encode())
        got = _until_ready(s)
        errors = [m.error() for m in got if isinstance(m, be.ErrorResponse)]
        assert [(e.sqlstate, e.severity) for e in errors] == [("08P01", "ERROR")]
        assert errors[0].message.startswith("invalid Bind message")
        s.sendall(fe.Query(b"SELECT 2").encode())
        assert be.DataRow((b"2",)) in _until_ready(s)
