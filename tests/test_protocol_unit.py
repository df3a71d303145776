"""sqlfront.protocol: every message survives encode -> decode unchanged; malformed,
truncated or hostile bytes raise ProtocolError (08P01) and nothing else, without a length
or count field making the decoder allocate or loop beyond the input's size."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog.errors import PROTOCOL_VIOLATION, SqlError
from sqlfront.protocol import (
    ProtocolError,
    body_length,
    frame,
    message_bounds,
    messages,
)
from sqlfront.protocol import backend as be
from sqlfront.protocol import frontend as fe
from sqlfront.protocol.buffer import length_prefixed, startup_header

FRONTEND = [
    fe.Query(b"SELECT 1; SELECT 'h\xc3\xa9'"),
    fe.Parse("s1", b"SELECT $1, $2", (23, 0)),
    fe.Parse("", b"SELECT 1"),
    fe.Bind("p", "s1", (1,), (b"\x00\x00\x00\x01", None, b""), (0, 1)),
    fe.Bind("", ""),
    fe.Describe(b"S", "s1"), fe.Describe(b"P", ""),
    fe.Close(b"S", "s1"), fe.Close(b"P", "p"),
    fe.Execute("p", 10), fe.Execute("", 0),
    fe.Sync(), fe.Flush(), fe.Terminate(),
    fe.CopyData(b"1\t2\n"), fe.CopyDone(), fe.CopyFail("client gave up"),
]
BACKEND = [
    be.AuthenticationOk(), be.AuthenticationSASL(("SCRAM-SHA-256",)),
    be.AuthenticationSASLContinue(b"r=abc,s=xyz,i=4096"), be.AuthenticationSASLFinal(b"v=abc"),
    be.BackendKeyData(12345, b"\x01\x02\x03\x04"),
    be.ParameterStatus("TimeZone", "UTC"),
    be.ReadyForQuery(b"I"), be.ReadyForQuery(b"T"), be.ReadyForQuery(b"E"),
    be.ErrorResponse.of(SqlError("42P01", 'unknown catalog item "t"', detail="d", hint="h", position=15)),
    be.NoticeResponse.of(SqlError("00000", "note", severity="NOTICE")),
    be.ParseComplete(), be.BindComplete(), be.CloseComplete(), be.NoData(), be.PortalSuspended(),
    be.EmptyQueryResponse(), be.CommandComplete("INSERT 0 1"),
    be.ParameterDescription((23, 25, 4294967295)), be.ParameterDescription(()),
    be.RowDescription((be.Field("a", 23, 4, -1, 0), be.Field("é", 1700, -1, 655366, 1, 16384, 2))),
    be.DataRow((b"1", None, b"")), be.DataRow(()),
    be.CopyInResponse(0, (0, 0)), be.CopyOutResponse(1, (1,)),
    be.CopyData(b"x"), be.CopyDone(),
]


def split(data: bytes) -> tuple[bytes, bytes]:
    [(kind, body)] = list(messages(data))
    return kind, body


@pytest.mark.parametrize("msg", FRONTEND, ids=lambda m: type(m).__name__)
def test_frontend_messages_round_trip(msg):
    kind, body = split(msg.encode())
    assert kind == msg.kind
    assert fe.parse_frontend(kind, body) == msg


@pytest.mark.parametrize("msg", BACKEND, ids=lambda m: type(m).__name__)
def test_backend_messages_round_trip(msg):
    kind, body = split(msg.encode())
    assert be.parse_backend(kind, body) == msg


def test_sasl_password_messages_round_trip():
    for msg in (fe.SASLInitialResponse("SCRAM-SHA-256", b"n,,n=,r=abc"), fe.SASLInitialResponse("X", None)):
        assert fe.SASLInitialResponse.decode(split(msg.encode())[1]) == msg
    assert fe.SASLResponse.decode(split(fe.SASLResponse(b"c=biws").encode())[1]) == fe.SASLResponse(b"c=biws")


def test_startup_packets_round_trip():
    for msg in (fe.StartupMessage({"user": "materialize", "options": "-c cluster=x"}), fe.SSLRequest(),
                fe.GSSENCRequest(), fe.CancelRequest(7, b"\x00\x00\x00\x09")):
        data = msg.encode()
        length, code = startup_header(data[:8])
        assert length == len(data)
        assert fe.startup_packet(code, data[8:]) == msg


def test_startup_parameters_stop_at_the_empty_name_and_forgive_a_missing_nul():
    assert fe.startup_parameters(b"user\x00u\x00\x00") == {"user": "u"}
    assert fe.startup_parameters(b"user\x00u") == {"user": "u"}
    assert fe.startup_parameters(b"user\x00\xff\x00\x00") == {"user": "\ufffd"}
    assert fe.startup_parameters(b"user\x00u\x00options") == {"user": "u"}
    assert fe.startup_parameters(b"") == {}


@given(st.binary(max_size=200))
def test_startup_parameters_never_raise(body):
    assert isinstance(fe.startup_parameters(body), dict)


def test_error_response_keeps_the_error_and_encodes_text_as_told():
    e = SqlError("22P02", "bad input", detail="x", hint="y", position=3, severity="ERROR")
    msg = be.ErrorResponse.of(e)
    back = be.ErrorResponse.decode(split(msg.encode())[1]).error()
    assert (back.sqlstate, back.message, back.detail, back.hint, back.position, back.severity) == \
        ("22P02", "bad input", "x", "y", 3, "ERROR")
    assert b"Mbad input" in msg.encode()
    assert b"MBAD INPUT" in msg.encode(lambda s: s.upper().encode())


@pytest.mark.parametrize("msg, decode", [(m, fe.parse_frontend) for m in FRONTEND if m.body()]
                         + [(m, be.parse_backend) for m in BACKEND if m.body()], ids=lambda m: type(m).__name__)
def test_every_truncation_is_a_protocol_error_or_a_shorter_valid_message(msg, decode):
    """A body cut anywhere either is still a well-formed message of the same type (some
    end in Byten: CopyData) or raises ProtocolError, never another exception."""
    body = msg.body()
    for cut in range(len(body)):
        try:
            decode(msg.kind, body[:cut])
        except ProtocolError as e:
            assert e.sqlstate == PROTOCOL_VIOLATION


def test_counts_and_lengths_are_checked_before_anything_is_allocated():
    # 32767 parameters claimed, none there
    with pytest.raises(ProtocolError, match="invalid count"):
        fe.Bind.decode(b"p\x00s\x00\x00\x00\x7f\xff")
    # a value claiming 2 GiB
    with pytest.raises(ProtocolError, match="past the end"):
        length_prefixed(b"\x7f\xff\xff\xff", 0, 1)
    with pytest.raises(ProtocolError, match="invalid value length"):
        length_prefixed(b"\xff\xff\xff\xfe", 0, 1)
    with pytest.raises(ProtocolError):
        fe.Parse.decode(b"s\x00q\x00\xff\xff")  # a negative count
    with pytest.raises(ProtocolError, match="exceeds the limit of 100 bytes"):
        body_length(b"\x7f\xff\xff\xff", 100)
    with pytest.raises(ProtocolError, match="invalid message length 3"):
        body_length(b"\x00\x00\x00\x03", 100)
    with pytest.raises(ProtocolError, match="invalid message length"):
        list(message_bounds(b"Z\x00\x00\x00\x00I"))
    with pytest.raises(ProtocolError, match="truncated"):
        list(messages(frame(b"Z", b"I")[:-1]))


def test_message_bounds_stop_at_a_message_not_all_there():
    data = frame(b"Z", b"I") + frame(b"C", b"SELECT 1\x00")
    assert list(message_bounds(data + data[6:10])) == [(0, 6), (6, len(data))]
    assert list(message_bounds(data, 6)) == [(6, len(data))]


def test_unknown_types_and_codes_are_protocol_errors():
    with pytest.raises(ProtocolError, match="invalid frontend message type"):
        fe.parse_frontend(b"Z", b"")
    with pytest.raises(ProtocolError, match="unsupported frontend protocol 2.0"):
        fe.startup_packet(2 << 16, b"")
    with pytest.raises(ProtocolError, match="invalid cancel key length"):
        fe.startup_packet(fe.CANCEL_REQUEST, b"\x00\x00\x00\x01")
    with pytest.raises(ProtocolError, match="unsupported authentication request"):
        be.parse_backend(b"R", b"\x00\x00\x00\x05")


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(set(fe.FRONTEND) | set(be.BACKEND))), body=st.binary(max_size=80),
       backend=st.booleans())
def test_random_bodies_raise_only_protocol_errors(kind, body, backend):
    table = be.BACKEND if backend else fe.FRONTEND
    if kind not in table:
        return
    try:
        (be.parse_backend if backend else fe.parse_frontend)(kind, body)
    except ProtocolError:
        pass
