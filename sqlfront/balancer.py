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
import shlex
import struct
from dataclasses import dataclass, field

from catalog.errors import SqlError
from sqlfront.messages import error_response

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
    """The ``cluster`` a startup packet's ``options`` value sets, or None.

    ``options`` is split as libpq's PGOPTIONS (spaces separate, backslash escapes):
    ``-c cluster=a``, ``-ccluster=a`` and ``--cluster=a`` all give ``"a"``; the last one
    wins, as PostgreSQL applies them in order."""
    try:
        words = shlex.split(options.replace("\\ ", "\x00"), posix=True)
    except ValueError:
        return None
    words = [w.replace("\x00", " ") for w in words]
    found = None
    i = 0
    while i < len(words):
        w = words[i]
        setting = None
        if w == "-c" and i + 1 < len(words):
            setting, i = words[i + 1], i + 1
        elif w.startswith("-c"):
            setting = w[2:]
        elif w.startswith("--"):
            setting = w[2:]
        if setting is not None:
            name, eq, value = setting.partition("=")
            if eq and name.strip().lower().replace("-", "_") == "cluster":
                found = value
        i += 1
    return found


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
    """The proxy. ``start()`` binds (port 0: a free one, see ``address``); ``close()`` stops
    accepting and closes every proxied connection."""

    def __init__(self, listen: tuple[str, int], routes: Routes):
        self.listen = listen
        self.routes = routes
        #: balancer process id -> (balancer secret, the environmentd session behind it)
        self._cancel: dict[int, tuple[bytes, _Backend]] = {}
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()
        self.connections = 0

    @property
    def address(self) -> tuple[str, int]:
        return self._server.sockets[0].getsockname()[:2]

    async def start(self) -> "Balancer":
        self._server = await asyncio.start_server(self._client, *self.listen)
        return self

    async def serve_forever(self) -> None:
        await self._server.serve_forever()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for t in list(self._tasks):
            t.cancel()

    # -- one client ---------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self.connections += 1
        pid = None
        try:
            packet = await self._startup_packet(reader, writer)
            if packet is None:
                return
            code = struct.unpack("!I", packet[4:8])[0]
            if code == CANCEL_REQUEST:
                await self._forward_cancel(packet[8:])
                return
            params = parse_startup(packet[8:])
            cluster = cluster_of(params.get("options", ""))
            address = self.routes.address_for(cluster)
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*address), CONNECT_TIMEOUT_S)
            except (OSError, asyncio.TimeoutError) as e:
                log.warning("cannot reach environmentd %s:%d for cluster %s: %s", *address, cluster, e)
                writer.write(self._unreachable(cluster, address))
                await writer.drain()
                return
            up_writer.write(packet)
            pid = self._new_pid()
            await self._splice(reader, writer, up_reader, up_writer, pid, cluster, address)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            if pid is not None:
                self._cancel.pop(pid, None)
            self.connections -= 1
            self._tasks.discard(task)
            writer.close()

    async def _startup_packet(self, reader, writer) -> bytes | None:
        """The client's StartupMessage or CancelRequest (with its length word), after
        answering SSL/GSS requests with ``N``; None for a packet that breaks the rules."""
        while True:
            head = await reader.readexactly(8)
            length, code = struct.unpack("!II", head)
            if not 8 <= length <= MAX_STARTUP:
                writer.write(error_response(SqlError("08P01", "invalid startup packet length", severity="FATAL")))
                await writer.drain()
                return None
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                writer.write(b"N")
                continue
            return head + await reader.readexactly(length - 8)

    def _new_pid(self) -> int:
        pid = secrets.randbelow(2**31 - 1) + 1
        while pid in self._cancel:
            pid = secrets.randbelow(2**31 - 1) + 1
        return pid

    async def _forward_cancel(self, body: bytes) -> None:
        if len(body) < 8:
            return
        pid = struct.unpack("!I", body[:4])[0]
        entry = self._cancel.get(pid)
        # a wrong key does nothing; compared in constant time
        if entry is None or not hmac.compare_digest(entry[0], body[4:]):
            return
        backend = entry[1]
        try:
            _, w = await asyncio.wait_for(asyncio.open_connection(*backend.address), CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError):
            return  # the session's environmentd is gone, and the query with it
        w.write(struct.pack("!II", 8 + len(backend.key), CANCEL_REQUEST) + backend.key)
        await w.drain()
        w.close()

    def _unreachable(self, cluster: str | None, address: tuple[str, int]) -> bytes:
        name = f"cluster '{cluster}'" if cluster is not None else "the default cluster"
        return error_response(SqlError(
            CONNECTION_FAILURE, f"the environmentd of {name} at {address[0]}:{address[1]} cannot be reached",
            hint="It may be restarting: reconnect in a moment.", severity="FATAL"))

    async def _splice(self, reader, writer, up_reader, up_writer, pid: int, cluster, address) -> None:
        up = asyncio.ensure_future(self._pump_up(reader, up_writer))
        try:
            ended_cleanly = await self._pump_down(up_reader, writer, pid, address)
            if not ended_cleanly and not up.done():
                writer.write(self._unreachable(cluster, address))
                await writer.drain()
        finally:
            up.cancel()
            up_writer.close()

    async def _pump_up(self, reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter) -> None:
        """Client -> environmentd, bytes as they come."""
        try:
            while data := await reader.read(1 << 16):
                up_writer.write(data)
                if up_writer.transport.get_write_buffer_size() > 1 << 20:
                    await up_writer.drain()
        except ConnectionError:
            pass
        finally:
            up_writer.close()

    async def _pump_down(self, up_reader, writer, pid: int, address) -> bool:
        """environmentd -> client, message by message: BackendKeyData is swapped for the
        balancer's key. Returns when the environmentd closed the connection: False when
        the client should be told it went away (at a message boundary, and not after a
        FATAL it sent itself), True otherwise."""
        buf = b""
        last_kind = b""
        while True:
            data = await up_reader.read(1 << 16)
            if not data:
                # mid-message: adding a message would garble the stream; just close
                return bool(buf) or last_kind == b"E"
            buf += data
            out = []
            pos = 0
            while len(buf) - pos >= 5:
                kind = buf[pos:pos + 1]
                (n,) = struct.unpack_from("!I", buf, pos + 1)
                if len(buf) - pos < 1 + n:
                    break
                if kind == b"K":
                    secret = secrets.token_bytes(4)
                    self._cancel[pid] = (secret, _Backend(address, bytes(buf[pos + 5:pos + 1 + n])))
                    out.append(b"K" + struct.pack("!II", 12, pid) + secret)
                else:
                    out.append(buf[pos:pos + 1 + n])
                last_kind = kind
                pos += 1 + n
            buf = buf[pos:]
            if out:
                writer.write(b"".join(out) if len(out) > 1 else out[0])
                if writer.transport.get_write_buffer_size() > 1 << 20:
                    await writer.drain()


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
