"""``sqlfront balancer``: a pgwire proxy in front of several environmentd processes
(Materialize's balancerd), routing each connection to the environmentd of its cluster.

Per client connection:

1. SSLRequest / GSSENCRequest are answered ``N`` (plain text, as environmentd does).
2. The startup packet's ``options`` parameter names the cluster (``-c cluster=NAME``,
   ``--cluster=NAME``, as libpq passes ``PGOPTIONS``); a route for that name picks the
   environmentd (``--route NAME=HOST:PORT``), anything else goes to ``--default``. The
   startup packet is forwarded unchanged (so the session's ``cluster`` is set there).
3. From then on bytes are spliced both ways. Authentication passes through: SCRAM runs
   between the client and environmentd (the balancer holds no password). Backend
   messages are followed by their length headers only, to find BackendKeyData and to
   know where a message ends.
4. BackendKeyData is replaced by a key of the balancer's own (process id and secret from
   ``secrets``), remembered with the environmentd's address and key. A CancelRequest
   carrying the balancer's key is forwarded to that environmentd with its key; a wrong
   key is ignored (as PostgreSQL does, the CancelRequest gets no answer).

When the environmentd cannot be reached, the client gets ``FATAL 08006
connection_failure`` naming the cluster and address. Class 08 ("connection exception")
is what drivers and pools treat as "reconnect and retry", which is right: the balancer
is up, the process behind it is not (yet). 57P01 admin_shutdown would claim an operator
shut the server down, 57P03 cannot_connect_now that the server the client reached is
starting up; neither is what happened. When an environmentd goes away mid-session, the
client gets the same FATAL 08006 at the next message boundary, then the connection closes.

Listens on loopback only: the balancer has no authentication of its own.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import struct
from dataclasses import dataclass, field

from catalog.errors import SqlError
from sqlfront.messages import error_response
from sqlfront.vars import parse_options

log = logging.getLogger(__name__)

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
#: PostgreSQL's MAX_STARTUP_PACKET_LENGTH
MAX_STARTUP = 10_000
#: SQLSTATE of "the environmentd of this cluster cannot be reached" (see module docstring)
CONNECTION_FAILURE = "08006"
#: seconds to wait for an environmentd to accept a connection
CONNECT_TIMEOUT_S = 5.0


def cluster_of(options: str) -> str | None:
    """The ``cluster`` a startup packet's ``options`` value sets, or None (read as the
    server reads it: ``sqlfront.vars.parse_options``)."""
    return parse_options(options).get("cluster")


def parse_startup(body: bytes) -> dict[str, str]:
    """The parameters of a StartupMessage body after the protocol version (pairs of
    NUL-terminated strings, ending with an empty one)."""
    msg = [x.decode("utf-8", "replace") for x in body.split(b"\x00")]
    return {k: v for k, v in zip(msg[::2], msg[1::2]) if k}


@dataclass
class Routes:
    """Where each cluster's connections go: ``clusters`` maps a cluster name to
    ``(host, port)``; everything else goes to ``default``."""

    default: tuple[str, int]
    clusters: dict[str, tuple[str, int]] = field(default_factory=dict)

    def address_for(self, cluster: str | None) -> tuple[str, int]:
        return self.clusters.get(cluster, self.default) if cluster is not None else self.default


@dataclass
class _Backend:
    """What the balancer keeps of one proxied session for cancellation."""

    address: tuple[str, int]
    key: bytes  # the environmentd's BackendKeyData body (process id and secret)


class Balancer:
    """The proxy. ``start()`` binds (port 0: a free one, see ``address``); ``close()``
    stops accepting.

    Bytes are spliced in asyncio protocol callbacks (``data_received`` writes straight to
    the other transport): no task switch per message, which is most of a proxy's cost
    on small round trips. Each side's write buffer pauses the other side's reading."""

    def __init__(self, listen: tuple[str, int], routes: Routes):
        self.listen = listen
        self.routes = routes
        #: balancer process id -> (balancer secret, the environmentd session behind it)
        self.cancel_keys: dict[int, tuple[bytes, _Backend]] = {}
        self._server: asyncio.AbstractServer | None = None
        #: client connections open now
        self.connections = 0

    @property
    def address(self) -> tuple[str, int]:
        return self._server.sockets[0].getsockname()[:2]

    async def start(self) -> "Balancer":
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Client(self), *self.listen)
        return self

    async def serve_forever(self) -> None:
        await self._server.serve_forever()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()

    def new_pid(self) -> int:
        """A balancer process id for a new session's cancel key, unused among live ones."""
        pid = secrets.randbelow(2**31 - 1) + 1
        while pid in self.cancel_keys:
            pid = secrets.randbelow(2**31 - 1) + 1
        return pid

    async def forward_cancel(self, body: bytes) -> None:
        """Forward a CancelRequest (``body``: process id and secret) to the environmentd of
        the session it names, with that environmentd's key; a wrong key does nothing."""
        if len(body) < 8:
            return
        entry = self.cancel_keys.get(struct.unpack("!I", body[:4])[0])
        if entry is None or not hmac.compare_digest(entry[0], body[4:]):  # constant time
            return
        backend = entry[1]
        try:
            _, w = await asyncio.wait_for(asyncio.open_connection(*backend.address), CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError):
            return  # the session's environmentd is gone, and the query with it
        w.write(struct.pack("!II", 8 + len(backend.key), CANCEL_REQUEST) + backend.key)
        await w.drain()
        w.close()


def _unreachable(cluster: str | None, address: tuple[str, int]) -> bytes:
    """FATAL 08006 naming the cluster and the environmentd's address."""
    name = f"cluster '{cluster}'" if cluster is not None else "the default cluster"
    return error_response(SqlError(
        CONNECTION_FAILURE, f"the environmentd of {name} at {address[0]}:{address[1]} cannot be reached",
        hint="It may be restarting: reconnect in a moment.", severity="FATAL"))


class _Client(asyncio.Protocol):
    """One client connection: reads the startup packet, connects to the environmentd of
    its cluster, then forwards the client's bytes as they come."""

    def __init__(self, balancer: Balancer):
        self.balancer = balancer
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()  # startup bytes, then what came while connecting
        self.backend: _Upstream | None = None
        self.pid: int | None = None
        self.closed = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.balancer.connections += 1

    def data_received(self, data: bytes) -> None:
        if self.backend is not None and self.backend.transport is not None:
            self.backend.transport.write(data)
            return
        self.buf += data
        if self.pid is None:
            self._startup()

    def _startup(self) -> None:
        while len(self.buf) >= 8:
            length, code = struct.unpack_from("!II", self.buf)
            if not 8 <= length <= MAX_STARTUP:
                self.transport.write(error_response(SqlError("08P01", "invalid startup packet length",
                                                             severity="FATAL")))
                self.transport.close()
                return
            if len(self.buf) < length:
                return
            packet, self.buf = bytes(self.buf[:length]), self.buf[length:]
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                self.transport.write(b"N")  # plain text, as environmentd answers
                continue
            if code == CANCEL_REQUEST:
                asyncio.ensure_future(self.balancer.forward_cancel(packet[8:]))
                self.transport.close()
                return
            cluster = cluster_of(parse_startup(packet[8:]).get("options", ""))
            address = self.balancer.routes.address_for(cluster)
            self.pid = self.balancer.new_pid()
            self.transport.pause_reading()
            asyncio.ensure_future(self._connect(packet, cluster, address))
            return

    async def _connect(self, packet: bytes, cluster: str | None, address: tuple[str, int]) -> None:
        loop = asyncio.get_running_loop()
        try:
            upstream = _Upstream(self, cluster, address)
            await asyncio.wait_for(loop.create_connection(lambda: upstream, *address), CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError) as e:
            log.warning("cannot reach environmentd %s:%d for cluster %s: %s", *address, cluster, e)
            if not self.closed:
                self.transport.write(_unreachable(cluster, address))
                self.transport.close()
            return
        if self.closed:
            upstream.transport.close()
            return
        self.backend = upstream
        upstream.transport.write(packet + bytes(self.buf))
        self.buf = bytearray()
        self.transport.resume_reading()

    def pause_writing(self) -> None:  # the client reads slowly: stop reading environmentd
        if self.backend is not None and self.backend.transport is not None:
            self.backend.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.backend is not None and self.backend.transport is not None:
            self.backend.transport.resume_reading()

    def connection_lost(self, exc) -> None:
        self.closed = True
        self.balancer.connections -= 1
        if self.pid is not None:
            self.balancer.cancel_keys.pop(self.pid, None)
        if self.backend is not None and self.backend.transport is not None:
            self.backend.transport.close()


class _Upstream(asyncio.Protocol):
    """The environmentd side of one session: forwards its messages to the client,
    following their length headers (to swap BackendKeyData for the balancer's key, and
    to know whether the stream stands at a message boundary when environmentd goes)."""

    def __init__(self, client: _Client, cluster: str | None, address: tuple[str, int]):
        self.client = client
        self.cluster = cluster
        self.address = address
        self.transport: asyncio.Transport | None = None
        self.partial = b""  # an incomplete message at the end of what came so far
        self.last_kind = b""

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.partial:
            data = self.partial + data
        pos, n, key_at = 0, len(data), -1
        while n - pos >= 5:
            (length,) = struct.unpack_from("!I", data, pos + 1)
            if n - pos < 1 + length:
                break
            if data[pos] == 0x4B:  # 'K' BackendKeyData
                key_at = pos
            self.last_kind = data[pos:pos + 1]
            pos += 1 + length
        self.partial = data[pos:]
        out = data[:pos] if self.partial else data
        if key_at >= 0:
            (length,) = struct.unpack_from("!I", out, key_at + 1)
            secret = secrets.token_bytes(4)
            b = self.client.balancer
            b.cancel_keys[self.client.pid] = (secret, _Backend(self.address, bytes(out[key_at + 5:key_at + 1 + length])))
            out = out[:key_at] + b"K" + struct.pack("!II", 12, self.client.pid) + secret + out[key_at + 1 + length:]
        if out:
            self.client.transport.write(out)

    def pause_writing(self) -> None:  # environmentd reads slowly: stop reading the client
        self.client.transport.pause_reading()

    def resume_writing(self) -> None:
        self.client.transport.resume_reading()

    def connection_lost(self, exc) -> None:
        if self.client.closed:
            return
        # At a message boundary, and not after a FATAL environmentd sent itself: say why.
        # Mid-message, another message would garble the stream: just close.
        if not self.partial and self.last_kind != b"E":
            self.client.transport.write(_unreachable(self.cluster, self.address))
        self.client.transport.close()


def serve(listen: tuple[str, int], routes: Routes, ready=None) -> None:
    """Run the balancer until cancelled (SIGINT/SIGTERM end the process). ``ready(address)``
    is called once it listens."""

    async def main():
        b = await Balancer(listen, routes).start()
        log.info("balancer listening on %s:%d; default %s:%d; routes %s", *b.address, *routes.default,
                 ", ".join(f"{c}={h}:{p}" for c, (h, p) in sorted(routes.clusters.items())) or "none")
        if ready is not None:
            ready(b.address)
        await b.serve_forever()

    asyncio.run(main())
