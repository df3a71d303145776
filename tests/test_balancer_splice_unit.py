"""The balancer's splice of environmentd's messages (sqlfront.balancer._Upstream): however
the stream is cut into reads, the client gets the same messages with BackendKeyData swapped
for the balancer's key, and that key forwards a CancelRequest with environmentd's. Pure:
fake transports, no sockets."""

from __future__ import annotations

import random

import pytest

from catalog.errors import SqlError
from sqlfront.balancer import Balancer, Routes, _Client, _Upstream
from sqlfront.protocol import messages
from sqlfront.protocol.backend import (
    AuthenticationOk,
    BackendKeyData,
    CommandComplete,
    ErrorResponse,
    ParameterStatus,
    ReadyForQuery,
    parse_backend,
)


class _Transport:
    def __init__(self):
        self.out, self.closed = bytearray(), False

    def write(self, data):
        self.out += data

    def close(self):
        self.closed = True


def _session():
    balancer = Balancer(("127.0.0.1", 0), Routes(None))
    client = _Client(balancer)
    client.transport, client.pid = _Transport(), 4242
    upstream = _Upstream(client, None, ("10.0.0.1", 6875))
    upstream.transport = _Transport()
    return balancer, client, upstream


def _stream(theirs: BackendKeyData) -> bytes:
    return b"".join(m.encode() for m in (
        AuthenticationOk(), ParameterStatus("TimeZone", "UTC"), theirs, ReadyForQuery(b"I"),
        CommandComplete("SELECT 1"), ReadyForQuery(b"I")))


@pytest.mark.parametrize("secret", [b"\x01\x02\x03\x04", bytes(range(32))])  # 3.0's, and 3.2's longer keys
def test_backend_key_is_swapped_however_the_stream_is_cut(secret):
    theirs = BackendKeyData(77, secret)
    stream = _stream(theirs)
    rng = random.Random(7)
    for _ in range(50):
        balancer, client, upstream = _session()
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(0, 8)))
        for a, b in zip([0, *cuts], [*cuts, len(stream)]):
            upstream.data_received(stream[a:b])
        got = [parse_backend(k, body) for k, body in messages(bytes(client.transport.out))]
        expected = [parse_backend(k, body) for k, body in messages(stream)]
        ours, backend = balancer.cancel_keys[4242]
        assert got[2] == BackendKeyData(4242, ours) and backend.key == theirs
        assert got[:2] + got[3:] == expected[:2] + expected[3:]
        assert upstream.partial == b""


def test_a_malformed_backend_message_ends_the_session():
    _, client, upstream = _session()
    upstream.data_received(ReadyForQuery().encode() + b"Z\x00\x00\x00\x02")
    assert client.transport.closed and upstream.transport.closed


def test_environmentd_gone_at_a_message_boundary_tells_the_client():
    _, client, upstream = _session()
    upstream.data_received(ReadyForQuery().encode())
    upstream.connection_lost(None)
    kind, body = list(messages(bytes(client.transport.out)))[-1]
    assert kind == b"E" and ErrorResponse.decode(body).error().sqlstate == "08006"
    assert isinstance(ErrorResponse.decode(body).error(), SqlError)
