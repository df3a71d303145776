"""``sqlfront balancer``: a pgwire proxy in front of several environmentd processes
(Materialize's balancerd), routing each connection to the environmentd of its cluster.

Per client connection:

1. SSLRequest is answered ``S`` and the connection becomes TLS when the balancer has a
   certificate (``--tls-cert``; it terminates TLS, as Materialize's balancerd does), else
   ``N``; GSSENCRequest always ``N``. With ``tls_required`` a startup in clear text gets
   FATAL 28000, as environmentd's ``--tls-mode require``.
2. The startup packet's ``options`` parameter names the cluster (``-c cluster=NAME``,
   ``--cluster=NAME``, as libpq passes ``PGOPTIONS``); a route for that name picks the
   environmentd (``--route NAME=HOST:PORT``), else, with ``--catalog-url``, the process
   that owns the cluster now (its lease in the shared catalog, followed by LISTEN/NOTIFY:
   a takeover moves new connections within milliseconds), anything else goes to
   ``--default``. The startup packet is forwarded unchanged (so the session's
   ``cluster`` is set there).
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

To environmentd the balancer speaks TLS when given a client context (``--backend-tls-ca``):
it sends SSLRequest first, checks the certificate against the CA and the address it dials,
and refuses an environmentd that answers ``N`` (no silent fallback to clear text).
CancelRequests take the same way.

The balancer has no authentication of its own: environmentd authenticates every session.
Listening off loopback, it therefore forwards only to environmentd processes that listen
off loopback too (which ``sqlfront serve`` allows only with a password); a loopback
environmentd may have none.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import ssl
import threading
from dataclasses import dataclass, field

from catalog.cluster_leases import read_routes
from catalog.errors import (
    SqlError, CONNECTION_FAILURE, INVALID_AUTHORIZATION_SPECIFICATION, PROTOCOL_VIOLATION,
)
from sqlfront.addresses import is_loopback
from sqlfront.protocol import ProtocolError, message_bounds
from sqlfront.protocol.backend import BackendKeyData, ErrorResponse
from sqlfront.protocol.buffer import startup_header
from sqlfront.protocol.frontend import (
    ACCEPT, CANCEL_REQUEST, GSSENC_REQUEST, MAX_STARTUP, REFUSE, SSL_REQUEST, CancelRequest, SSLRequest,
    startup_parameters,
)
from sqlfront.vars import parse_options

log = logging.getLogger(__name__)

#: seconds to wait for an environmentd to accept a connection
CONNECT_TIMEOUT_S = 5.0


def cluster_of(options: str) -> str | None:
    """The ``cluster`` a startup packet's ``options`` value sets, or None (read as
    environmentd reads it: :func:`sqlfront.vars.parse_options`)."""
    return parse_options(options).get("cluster")


@dataclass
class Routes:
    """Where each cluster's connections go: ``clusters`` maps a cluster name to
    ``(host, port)`` (``--route``, the operator's pins); then the owners the shared
    catalog's cluster leases name (``owners``, with ``--catalog-url``: kept current by
    :class:`OwnerFollower`); everything else goes to ``default``. Without a default, a
    connection that names no cluster goes to the owner of ``quickstart`` (the session
    variable ``cluster``'s default)."""

    default: tuple[str, int] | None
    clusters: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: cluster name -> its owner's pgwire address (replaced whole, never mutated)
    owners: dict[str, tuple[str, int]] = field(default_factory=dict)

    def address_for(self, cluster: str | None) -> tuple[str, int] | None:
        """Where to send a connection whose options set ``cluster`` (None: not set);
        None when nothing says (no default, and no owner known)."""
        if cluster is None:
            return self.default or self.owners.get(DEFAULT_CLUSTER)
        return self.clusters.get(cluster) or self.owners.get(cluster) or self.default


#: the session variable ``cluster``'s default (sqlfront.vars)
DEFAULT_CLUSTER = "quickstart"
#: seconds between reads of the cluster leases when no NOTIFY comes (the fallback)
OWNERS_POLL_S = 1.0


class OwnerFollower:
    """Keeps ``routes.owners`` equal to the cluster leases in the shared catalog at
    ``url`` (``catalog.cluster_leases``): read at start, again at each ``NOTIFY
    cluster_leases`` (a lease changed hands: a takeover or a restart) and every
    ``OWNERS_POLL_S`` seconds. Runs on its own thread with its own connection; while
    PostgreSQL is unreachable the last routes stay."""

    def __init__(self, url: str, routes: Routes):
        self.url = url
        self.routes = routes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="balancer-owners", daemon=True)

    def start(self) -> "OwnerFollower":
        try:
            self._refresh_once()  # routes are right from the first connection on
        except Exception as e:
            log.warning("reading cluster owners: %s", e)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _refresh_once(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True, connect_timeout=10,
                             application_name="sqlfront-balancer") as c:
            self._apply(read_routes(c))

    def _apply(self, owners: dict[str, str]) -> None:
        new = {}
        for name, address in owners.items():
            host, _, port = address.rpartition(":")
            if host and port.isdigit():
                new[name] = (host.strip("[]"), int(port))
        if new != self.routes.owners:
            log.info("cluster owners: %s", ", ".join(f"{c}={h}:{p}" for c, (h, p) in sorted(new.items())) or "none")
        self.routes.owners = new

    def _run(self) -> None:
        import psycopg

        from catalog.cluster_leases import CHANNEL

        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=10,
                                     application_name="sqlfront-balancer") as c:
                    c.execute(f"LISTEN {CHANNEL}")
                    while not self._stop.is_set():
                        self._apply(read_routes(c))
                        for _ in c.notifies(timeout=OWNERS_POLL_S, stop_after=1):
                            pass
            except psycopg.Error as e:
                log.warning("following cluster owners: %s", e)
                self._stop.wait(OWNERS_POLL_S)


@dataclass
class _Backend:
    """What the balancer keeps of one proxied session for cancellation."""

    address: tuple[str, int]
    key: BackendKeyData  # the environmentd's


class Balancer:
    """The proxy. ``start()`` binds (port 0: a free one, see ``address``); ``close()``
    stops accepting.

    Bytes are spliced in asyncio protocol callbacks (``data_received`` writes straight to
    the other transport): no task switch per message, which is most of a proxy's cost
    on small round trips. Each side's write buffer pauses the other side's reading."""

    def __init__(self, listen: tuple[str, int], routes: Routes, tls: ssl.SSLContext | None = None,
                 tls_required: bool = False, backend_tls: ssl.SSLContext | None = None):
        self.listen = listen
        self.routes = routes
        #: the clients' TLS (server side), required or not; the TLS to environmentd (client side)
        self.tls, self.tls_required, self.backend_tls = tls, tls_required, backend_tls
        #: off loopback: forward to no loopback environmentd (see the module doc)
        self.public = not is_loopback(listen[0])
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

    async def forward_cancel(self, request: CancelRequest) -> None:
        """Forward a CancelRequest to the environmentd of the session it names, with that
        environmentd's key; a wrong key does nothing."""
        entry = self.cancel_keys.get(request.process_id)
        if entry is None or not hmac.compare_digest(entry[0], request.secret):  # constant time
            return
        backend = entry[1]
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(*backend.address), CONNECT_TIMEOUT_S)
            if self.backend_tls is not None:
                w.write(SSLRequest().encode())
                if await asyncio.wait_for(r.readexactly(1), CONNECT_TIMEOUT_S) != ACCEPT:
                    w.close()
                    return
                await asyncio.wait_for(w.start_tls(self.backend_tls, server_hostname=backend.address[0]),
                                       CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ssl.SSLError):
            return  # the session's environmentd is gone, and the query with it
        w.write(CancelRequest(backend.key.process_id, backend.key.secret).encode())
        await w.drain()
        w.close()


def _unreachable(cluster: str | None, address: tuple[str, int]) -> bytes:
    """FATAL 08006 naming the cluster and the environmentd's address."""
    name = f"cluster '{cluster}'" if cluster is not None else "the default cluster"
    return ErrorResponse.of(SqlError(
        CONNECTION_FAILURE, f"the environmentd of {name} at {address[0]}:{address[1]} cannot be reached",
        hint="It may be restarting: reconnect in a moment.", severity="FATAL")).encode()


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
        #: the client's connection is TLS (after SSLRequest and the handshake)
        self.tls_in_use = False
        #: the TLS handshake runs: what arrives (decrypted, possibly before ``start_tls``
        #: has returned the new transport) waits in ``buf``
        self._upgrading = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.balancer.connections += 1

    def _fatal(self, sqlstate: str, message: str, hint: str | None = None) -> None:
        self.transport.write(ErrorResponse.of(SqlError(sqlstate, message, hint=hint, severity="FATAL")).encode())
        self.transport.close()

    async def _start_tls(self) -> None:
        """Answer the client's SSLRequest with the TLS handshake; reading resumes on the
        TLS transport, where the startup packet follows."""
        loop = asyncio.get_running_loop()
        try:
            self.transport = await loop.start_tls(self.transport, self, self.balancer.tls, server_side=True)
        except (OSError, ssl.SSLError, ConnectionError) as e:
            log.info("client TLS handshake failed: %s", e)
            self.transport.close()
            return
        self.tls_in_use, self._upgrading = True, False
        if self.buf:
            self._startup()

    def data_received(self, data: bytes) -> None:
        if self.backend is not None and self.backend.transport is not None:
            self.backend.transport.write(data)
            return
        self.buf += data
        if self.pid is None and not self._upgrading:
            self._startup()

    def _startup(self) -> None:
        while len(self.buf) >= 8:
            length, code = startup_header(bytes(self.buf[:8]))
            if not 8 <= length <= MAX_STARTUP:
                self._fatal(PROTOCOL_VIOLATION, "invalid startup packet length")
                return
            if len(self.buf) < length:
                return
            packet, self.buf = bytes(self.buf[:length]), self.buf[length:]
            if code == SSL_REQUEST and self.balancer.tls is not None and not self.tls_in_use:
                if self.buf:  # the client must wait for the answer before its handshake
                    self._fatal(PROTOCOL_VIOLATION, "data after SSLRequest before the TLS handshake")
                    return
                self.transport.write(ACCEPT)
                self.transport.pause_reading()  # start_tls takes over the socket's reading
                self._upgrading = True
                asyncio.ensure_future(self._start_tls())
                return
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                self.transport.write(REFUSE)  # plain text, as environmentd answers without a certificate
                continue
            if code == CANCEL_REQUEST:
                try:
                    asyncio.ensure_future(self.balancer.forward_cancel(CancelRequest.decode(packet[8:])))
                except ProtocolError:
                    pass  # a malformed CancelRequest gets no answer, as a wrong key
                self.transport.close()
                return
            if self.balancer.tls_required and not self.tls_in_use:
                self._fatal(INVALID_AUTHORIZATION_SPECIFICATION, "this server accepts TLS connections only", "Connect with sslmode=require.")
                return
            cluster = cluster_of(startup_parameters(packet[8:]).get("options", ""))
            address = self.balancer.routes.address_for(cluster)
            if address is None:
                self._fatal(CONNECTION_FAILURE, f"no environmentd owns cluster '{cluster or DEFAULT_CLUSTER}'",
                            "Name a cluster with options '-c cluster=NAME', or start the balancer with --default.")
                return
            if self.balancer.public and is_loopback(address[0]):
                self._fatal(CONNECTION_FAILURE, f"the environmentd of cluster '{cluster or DEFAULT_CLUSTER}' "
                            f"listens on loopback ({address[0]}:{address[1]}), where it may have no password: "
                            "this balancer, off loopback, does not forward to it",
                            "Run environmentd on an address of its host, with --password-file.")
                return
            self.pid = self.balancer.new_pid()
            self.transport.pause_reading()
            asyncio.ensure_future(self._connect(packet, cluster, address))
            return

    async def _connect(self, packet: bytes, cluster: str | None, address: tuple[str, int]) -> None:
        loop = asyncio.get_running_loop()
        try:
            upstream = _Upstream(self, cluster, address)
            await asyncio.wait_for(loop.create_connection(lambda: upstream, *address), CONNECT_TIMEOUT_S)
            if self.balancer.backend_tls is not None:
                await asyncio.wait_for(upstream.start_tls(self.balancer.backend_tls), CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError, ssl.SSLError, _NoTls) as e:
            log.warning("cannot reach environmentd %s:%d for cluster %s: %s", *address, cluster, e)
            upstream.abandoned = True
            if upstream.transport is not None:
                upstream.transport.close()
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
        #: set while an SSLRequest waits for environmentd's one-byte answer
        self._tls_answer: asyncio.Future | None = None
        #: given up while connecting (the client has been told why already)
        self.abandoned = False

    def connection_made(self, transport) -> None:
        self.transport = transport

    async def start_tls(self, ctx: ssl.SSLContext) -> None:
        """SSLRequest, then the TLS handshake checking environmentd's certificate against
        ``ctx`` and the address dialed.

        Raises:
            _NoTls when environmentd answers ``N``; ssl.SSLError / OSError from the handshake."""
        self._tls_answer = asyncio.get_running_loop().create_future()
        self.transport.write(SSLRequest().encode())
        answer = await self._tls_answer
        self._tls_answer = None
        if answer != ACCEPT:
            raise _NoTls(f"environmentd at {self.address[0]}:{self.address[1]} does not offer TLS")
        self.transport.pause_reading()
        self.transport = await asyncio.get_running_loop().start_tls(
            self.transport, self, ctx, server_hostname=self.address[0])

    def data_received(self, data: bytes) -> None:
        if self._tls_answer is not None:
            if not self._tls_answer.done():
                self._tls_answer.set_result(data[:1])
            return
        if self.partial:
            data = self.partial + data
        pos, key = 0, None
        try:
            for start, end in message_bounds(data):
                if data[start:start + 1] == BackendKeyData.kind:
                    key = (start, end)
                self.last_kind = data[start:start + 1]
                pos = end
            if key is not None:  # swapped for the balancer's own key
                start, end = key
                theirs = BackendKeyData.decode(data[start + 5:end])
                secret = secrets.token_bytes(4)
                self.client.balancer.cancel_keys[self.client.pid] = (secret, _Backend(self.address, theirs))
                ours = BackendKeyData(self.client.pid, secret).encode()
                data = data[:start] + ours + data[end:]
                pos += len(ours) - (end - start)
        except ProtocolError as e:  # environmentd broke the protocol: end the session
            log.warning("environmentd at %s:%d sent a malformed message: %s", *self.address, e.message)
            self.transport.close()
            self.client.transport.close()
            return
        self.partial = data[pos:]
        out = data[:pos] if self.partial else data
        if out:
            self.client.transport.write(out)

    def pause_writing(self) -> None:  # environmentd reads slowly: stop reading the client
        self.client.transport.pause_reading()

    def resume_writing(self) -> None:
        self.client.transport.resume_reading()

    def connection_lost(self, exc) -> None:
        if self._tls_answer is not None and not self._tls_answer.done():
            self._tls_answer.set_exception(ConnectionError("environmentd closed the connection"))
            return
        if self.client.closed or self.abandoned:
            return
        # At a message boundary, and not after a FATAL environmentd sent itself: say why.
        # Mid-message, another message would garble the stream: just close.
        if not self.partial and self.last_kind != b"E":
            self.client.transport.write(_unreachable(self.cluster, self.address))
        self.client.transport.close()


class _NoTls(Exception):
    """environmentd answered SSLRequest with ``N``."""


def serve(listen: tuple[str, int], routes: Routes, ready=None, catalog_url: str | None = None,
          tls: ssl.SSLContext | None = None, tls_required: bool = False,
          backend_tls: ssl.SSLContext | None = None) -> None:
    """Run the balancer until cancelled (SIGINT/SIGTERM end the process). ``ready(address)``
    is called once it listens. With ``catalog_url``, clusters go to their owners
    (:class:`OwnerFollower`); ``tls``, ``tls_required``, ``backend_tls``: see the module doc."""

    async def main():
        if catalog_url:
            OwnerFollower(catalog_url, routes).start()
        b = await Balancer(listen, routes, tls, tls_required, backend_tls).start()
        default = "%s:%d" % routes.default if routes.default else "the owner of quickstart"
        log.info("balancer listening on %s:%d; default %s; routes %s", *b.address, default,
                 ", ".join(f"{c}={h}:{p}" for c, (h, p) in sorted(routes.clusters.items())) or "none")
        if ready is not None:
            ready(b.address)
        await b.serve_forever()

    asyncio.run(main())
