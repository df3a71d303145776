"""Persist PubSub: state diffs pushed between processes (seeds/persist-state-pubsub.md).

A process that wins a compare-and-set on a shard pushes the new state to the PubSub
service; the service (:class:`PubSubServer`, hosted by environmentd) broadcasts it to the
other connections subscribed to that shard; a subscriber applies it when it is the next
seqno of its copy of the shard's state and otherwise reads Consensus. Delivery is
best-effort: nothing here is needed for correctness (polling Consensus stays the
fallback), and no fault of the service or of a message may raise out of this module.

Wire: one gRPC bidirectional stream per client, method
``/mz_persist_client.internal.service.ProtoPersistPubSub/PubSub``, carrying the seed's
protobuf messages (``ProtoPubSubMessage`` with a ``push_diff`` / ``subscribe`` /
``unsubscribe`` oneof). The message classes are built at import from a descriptor written
here (no protoc step). One field beyond the seed: ``ProtoPushDiff.append_us`` (4), the
pusher's wall clock in microseconds when its compare-and-set won, for the end-to-end
latency metric. ``diff`` holds the whole new state (``ShardState.encode``): states are
rollups here, so the "diff" that applies to seqno - 1 is the next state itself.

This module imports nothing of the project but persist's own metrics hooks.
"""

from __future__ import annotations

import hmac
import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

log = logging.getLogger(__name__)

PACKAGE = "mz_persist_client.internal.service"
SERVICE = f"{PACKAGE}.ProtoPersistPubSub"
METHOD = f"/{SERVICE}/PubSub"
#: messages a connection may have queued before more are dropped (best-effort delivery)
MAX_QUEUED = 10_000
#: metadata a server sets on its connections to peer servers (:meth:`PubSubServer.set_peers`)
PEER_METADATA = ("x-persist-pubsub-peer", "1")


def _build_messages():
    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name="persist/pubsub.proto", package=PACKAGE, syntax="proto3")

    def message(name, fields, oneof=None):
        m = f.message_type.add(name=name)
        if oneof:
            m.oneof_decl.add(name=oneof)
        for number, fname, ftype, type_name in fields:
            fd = m.field.add(name=fname, number=number, type=ftype, label=F.LABEL_OPTIONAL)
            if type_name:
                fd.type_name = f".{PACKAGE}.{type_name}"
            if oneof:
                fd.oneof_index = 0

    message("ProtoPushDiff", [(1, "shard_id", F.TYPE_STRING, None), (2, "seqno", F.TYPE_UINT64, None),
                              (3, "diff", F.TYPE_BYTES, None), (4, "append_us", F.TYPE_UINT64, None)])
    message("ProtoSubscribe", [(1, "shard", F.TYPE_STRING, None)])
    message("ProtoUnsubscribe", [(1, "shard", F.TYPE_STRING, None)])
    message("ProtoPubSubMessage", [(1, "push_diff", F.TYPE_MESSAGE, "ProtoPushDiff"),
                                   (2, "subscribe", F.TYPE_MESSAGE, "ProtoSubscribe"),
                                   (3, "unsubscribe", F.TYPE_MESSAGE, "ProtoUnsubscribe")], oneof="message")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.ProtoPubSubMessage"))


#: the seed's ``ProtoPubSubMessage``
ProtoPubSubMessage = _build_messages()


def decode(data: bytes):
    """A ``ProtoPubSubMessage`` from bytes, or None for anything that is not one."""
    try:
        return ProtoPubSubMessage.FromString(data)
    except Exception:
        return None


def encode(msg) -> bytes:
    return msg.SerializeToString()


def push_message(shard_id: str, seqno: int, diff: bytes, append_us: int):
    m = ProtoPubSubMessage()
    m.push_diff.shard_id, m.push_diff.seqno, m.push_diff.diff, m.push_diff.append_us = shard_id, seqno, diff, append_us
    return m


def _shard_message(kind: str, shard_id: str):
    m = ProtoPubSubMessage()
    getattr(m, kind).shard = shard_id
    return m


class _Noop:
    def inc(self, *a, **k):
        pass

    def observe(self, *a, **k):
        pass

    def labels(self, *a, **k):
        return self


class PubSubMetrics:
    """The seed's metrics. Attributes are Prometheus-like (``inc``, ``observe``,
    ``labels``); the defaults count nothing. environmentd passes real ones
    (``sqlfront.metrics``).

    - ``pushed``: updates this process pushed (counter)
    - ``received``: pushes received, by ``applied`` = ``clean`` (the next seqno) or
      ``unclean`` (stale, out of order or undecodable: Consensus is read instead)
    - ``fallback_polls``: Consensus reads a waiting reader made because no push came
    - ``latency``: seconds from a compare-and-set winning in one process to its state
      being applied in another (histogram)
    - ``broadcast``: seconds the server spent broadcasting (counter), per push
    - ``consensus_reads``: every ``Consensus.head`` this process made
    """

    def __init__(self, **kw):
        for name in ("pushed", "received", "fallback_polls", "latency", "broadcast", "consensus_reads"):
            setattr(self, name, kw.get(name) or _Noop())


class _Conn:
    """One client connection to the server: the shards it subscribes to and its outbox."""

    def __init__(self, peer: bool = False):
        self.shards: set[str] = set()
        self.outbox: queue.Queue = queue.Queue(MAX_QUEUED)
        self.closed = False
        #: another environmentd's server forwarding its local pushes (not forwarded again)
        self.peer = peer

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.outbox.put_nowait(None)
            except queue.Full:  # the sender loop sees ``closed`` on its next poll
                pass


class PubSubServer:
    """The PubSub service environmentd serves (gRPC, bidirectional stream per client).

    ``listen`` is ``(host, port)``; port 0 picks a free one. ``fallback_free_port``: when
    the port is taken, serve on a free port instead (``address`` says which) rather than
    fail. ``advertise``: the host other processes reach this one by (``address`` names it;
    default the listen host). Security: with a ``token``, streams without
    ``authorization: Bearer <token>`` metadata are refused (UNAUTHENTICATED): a pushed
    state is trusted by its subscribers; off loopback, ``server_credentials`` (TLS, from
    ``sqlfront.tls``) keep the token and the states private (``sqlfront serve`` refuses a
    non-loopback address without them), and ``channel_credentials`` are how this server
    dials its peers.

    Several environmentd processes sharing Consensus are peers (:meth:`set_peers`): each
    server forwards the pushes of its own connections to every peer server, which
    broadcasts them to its own subscribers and forwards them no further (one hop, so no
    loops), so a compare-and-set in one process reaches every process that reads the
    shard. Peer connections subscribe to nothing; they only push.

    Raises:
        OSError when the address cannot be bound (and no fallback is allowed)."""

    def __init__(self, host: str, port: int, metrics: PubSubMetrics | None = None,
                 fallback_free_port: bool = True, max_connections: int = 256, token: str | None = None,
                 advertise: str | None = None, server_credentials=None, channel_credentials=None):
        self.metrics = metrics or PubSubMetrics()
        self._server_credentials = server_credentials
        self._channel_credentials = channel_credentials
        self._auth = f"Bearer {token}" if token else None
        self._lock = threading.Lock()
        self._conns: set[_Conn] = set()
        #: peer server address -> the client that forwards pushes to it
        self._peers: dict[str, "PubSubClient"] = {}
        self._server = grpc.server(ThreadPoolExecutor(max_connections, thread_name_prefix="pubsub-server"),
                                   options=[("grpc.so_reuseport", 0)], maximum_concurrent_rpcs=max_connections)
        handler = grpc.stream_stream_rpc_method_handler(self._pubsub, request_deserializer=decode,
                                                        response_serializer=encode)
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"PubSub": handler}),))
        # A port some listener holds goes straight to the fallback: gRPC's own failed bind
        # writes an "Address already in use" error line to stderr on every start.
        taken = fallback_free_port and port != 0 and not _port_free(host, port)
        bound = 0 if taken else self._bind(host, port)
        if not bound and fallback_free_port and port != 0:
            log.info("persist pubsub: %s:%d is taken; serving on a free port instead", host, port)
            bound = self._bind(host, 0)
        if not bound:
            raise OSError(f"persist pubsub: cannot listen on {host}:{port}")
        self.address = f"{advertise or host}:{bound}"

    def _bind(self, host: str, port: int) -> int:
        try:
            if self._server_credentials is not None:
                return self._server.add_secure_port(f"{host}:{port}", self._server_credentials)
            return self._server.add_insecure_port(f"{host}:{port}")
        except RuntimeError:
            return 0

    def start(self) -> "PubSubServer":
        self._server.start()
        log.info("persist pubsub listening on %s", self.address)
        return self

    def set_peers(self, peers: dict[str, str | None]) -> None:
        """Forward local pushes to exactly the servers ``{address: token}`` (the other
        environmentd processes of the shared Consensus; this server's own address is
        ignored). Connects to new ones, closes those no longer listed."""
        peers = {a: t for a, t in peers.items() if a != self.address}
        with self._lock:
            gone = [c for a, c in self._peers.items() if a not in peers or c.token != peers[a]]
            for c in gone:
                del self._peers[c.address]
            new = {a: t for a, t in peers.items() if a not in self._peers}
            for a, t in new.items():
                self._peers[a] = PubSubClient(a, lambda *_: None, token=t, metadata=(PEER_METADATA,),
                                              credentials=self._channel_credentials)
        for c in gone:
            c.close()
        if new or gone:
            log.info("persist pubsub: peers %s", sorted(peers) or "none")

    def peers(self) -> list[str]:
        """Addresses of the peer servers local pushes are forwarded to."""
        with self._lock:
            return sorted(self._peers)

    def stop(self) -> None:
        self.set_peers({})
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            c.close()
        self._server.stop(grace=0.5)

    def connections(self) -> int:
        with self._lock:
            return len(self._conns)

    def subscribers(self, shard_id: str) -> int:
        """How many open connections subscribe to ``shard_id`` now."""
        with self._lock:
            return sum(1 for c in self._conns if shard_id in c.shards and not c.closed)

    def _pubsub(self, requests, context):
        metadata = dict(context.invocation_metadata())
        if self._auth is not None:
            given = metadata.get("authorization", "")
            if not hmac.compare_digest(given.encode(), self._auth.encode()):
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "persist pubsub: missing or wrong token")
        conn = _Conn(peer=metadata.get(PEER_METADATA[0]) == PEER_METADATA[1])
        self._attach(conn)
        context.add_callback(conn.close)
        threading.Thread(target=self._receive, args=(conn, requests), name="pubsub-conn", daemon=True).start()
        try:
            while not conn.closed or not conn.outbox.empty():
                try:
                    msg = conn.outbox.get(timeout=1.0)
                except queue.Empty:
                    continue
                if msg is None:
                    break
                yield msg
        finally:
            self._detach(conn)

    def same_process_connection(self, on_push: Callable[[str, int, bytes, int], None],
                                metrics: PubSubMetrics | None = None) -> "LocalConnection":
        """A connection for a persist client in this server's own process: pushes go
        straight to :meth:`_broadcast`, with no gRPC encoding, no loopback socket and no
        stream threads (Materialize's ``PersistGrpcPubSubServer::new_same_process_connection``).
        It has :class:`PubSubClient`'s interface and is connected until closed."""
        return LocalConnection(self, on_push, metrics or self.metrics)

    def _attach(self, conn: _Conn) -> None:
        with self._lock:
            self._conns.add(conn)

    def _detach(self, conn: _Conn) -> None:
        conn.close()
        with self._lock:
            self._conns.discard(conn)

    def _receive(self, conn: _Conn, requests) -> None:
        try:
            for msg in requests:
                if msg is None:
                    log.debug("persist pubsub: dropped a message that does not decode")
                    continue
                kind = msg.WhichOneof("message")
                if kind == "subscribe":
                    conn.shards.add(msg.subscribe.shard)
                elif kind == "unsubscribe":
                    conn.shards.discard(msg.unsubscribe.shard)
                elif kind == "push_diff":
                    self._broadcast(conn, msg)
        except Exception as e:  # the client went away, or sent something grpc rejects
            log.debug("persist pubsub connection ended: %s", e)
        finally:
            conn.close()

    def _broadcast(self, sender: _Conn, msg) -> None:
        start = time.perf_counter()
        shard = msg.push_diff.shard_id
        with self._lock:
            targets = [c for c in self._conns if c is not sender and shard in c.shards and not c.closed]
        for c in targets:
            try:
                c.outbox.put_nowait(msg)
            except queue.Full:  # a subscriber that does not read: it polls instead
                pass
        if not sender.peer:
            with self._lock:
                peers = list(self._peers.values())
            for p in peers:
                p.forward(msg)
        self.metrics.broadcast.inc(time.perf_counter() - start)


class _Subscriptions:
    """A connection's subscriptions, counted: as many unsubscribes as subscribes end one.
    ``_subscription(shard_id, on)`` tells the service when one starts or ends (called
    under ``_lock``, a reentrant lock the subclass may take again)."""

    _on_push: Callable[[str, int, bytes, int], None]

    def __init__(self):
        self._lock = threading.RLock()
        self._shards: dict[str, int] = {}
        self.connected = threading.Event()

    def _subscription(self, shard_id: str, on: bool) -> None:
        raise NotImplementedError

    def subscribe(self, shard_id: str) -> None:
        """Receive the pushes of ``shard_id``."""
        with self._lock:
            self._shards[shard_id] = self._shards.get(shard_id, 0) + 1
            if self._shards[shard_id] == 1:
                self._subscription(shard_id, True)

    def unsubscribe(self, shard_id: str) -> None:
        with self._lock:
            n = self._shards.get(shard_id, 0) - 1
            if n > 0:
                self._shards[shard_id] = n
                return
            if self._shards.pop(shard_id, None) is not None:
                self._subscription(shard_id, False)

    def subscribed(self, shard_id: str) -> bool:
        """Connected and subscribed to ``shard_id``: its pushes should arrive."""
        with self._lock:
            return self.connected.is_set() and shard_id in self._shards

    def _apply(self, msg) -> None:
        """Hand a received push to ``_on_push`` (its exceptions are logged, never raised)."""
        p = msg.push_diff
        try:
            self._on_push(p.shard_id, p.seqno, p.diff, p.append_us)
        except Exception as e:
            log.warning("persist pubsub: applying a push of %s failed: %s", p.shard_id, e)


class LocalConnection(_Subscriptions):
    """A persist client's connection to the :class:`PubSubServer` of its own process
    (:meth:`PubSubServer.same_process_connection`). Pushes are broadcast in the pusher's
    thread (enqueued for each subscriber, never blocking); pushes for this connection are
    delivered to ``on_push`` on a thread of its own, in order. ``push``/``subscribe``/
    ``unsubscribe`` never block and never raise."""

    def __init__(self, server: PubSubServer, on_push: Callable[[str, int, bytes, int], None],
                 metrics: PubSubMetrics):
        super().__init__()
        self._server = server
        self._on_push = on_push
        self.metrics = metrics
        self._conn = _Conn()
        server._attach(self._conn)
        self.connected.set()
        self._thread = threading.Thread(target=self._deliver, name="pubsub-local", daemon=True)
        self._thread.start()

    def push(self, shard_id: str, seqno: int, diff: bytes) -> None:
        if self._conn.closed:
            return
        try:
            self._server._broadcast(self._conn, push_message(shard_id, seqno, diff, int(time.time() * 1e6)))
        except Exception as e:  # best-effort, as over gRPC
            log.debug("persist pubsub: local push: %s", e)
        self.metrics.pushed.inc()

    def _subscription(self, shard_id: str, on: bool) -> None:
        (self._conn.shards.add if on else self._conn.shards.discard)(shard_id)

    def close(self) -> None:
        self.connected.clear()
        self._server._detach(self._conn)

    def _deliver(self) -> None:
        while True:
            msg = self._conn.outbox.get()
            if msg is None:
                return
            self._apply(msg)


class PubSubClient(_Subscriptions):
    """A process's connection to the PubSub service at ``address`` (``host:port``),
    presenting ``token`` when the service wants one.

    Runs on a thread of its own and reconnects with backoff (up to ``MAX_BACKOFF_S``)
    whenever the connection fails; subscriptions are sent again on each connection.
    ``on_push(shard_id, seqno, diff, append_us)`` runs on that thread for every push
    received, ``on_disconnect()`` when a connection ends; their exceptions are logged,
    never raised. ``push``/``subscribe``/``unsubscribe``
    never block and never raise: while disconnected, pushes are dropped."""

    MAX_BACKOFF_S = 2.0

    def __init__(self, address: str, on_push: Callable[[str, int, bytes, int], None],
                 metrics: PubSubMetrics | None = None, on_disconnect: Callable[[], None] | None = None,
                 token: str | None = None, metadata: tuple[tuple[str, str], ...] = (), credentials=None):
        super().__init__()
        self.address = address
        #: ``grpc.ChannelCredentials`` of a TLS server (None: clear text)
        self._credentials = credentials
        self.token = token
        self._metadata = ((("authorization", f"Bearer {token}"),) if token else ()) + tuple(metadata) or None
        self._on_disconnect = on_disconnect or (lambda: None)
        self.metrics = metrics or PubSubMetrics()
        self._on_push = on_push
        self._outbox: queue.Queue | None = None
        self._stop = threading.Event()
        self._channel = None
        self._thread = threading.Thread(target=self._run, name="pubsub-client", daemon=True)
        self._thread.start()

    # -- the PubSubSender of the seed ---------------------------------------------------

    def push(self, shard_id: str, seqno: int, diff: bytes) -> None:
        self._send(push_message(shard_id, seqno, diff, int(time.time() * 1e6)))
        self.metrics.pushed.inc()

    def forward(self, msg) -> None:
        """Send a push received from elsewhere as it is (a server to its peers)."""
        self._send(msg)

    def _subscription(self, shard_id: str, on: bool) -> None:
        self._send(_shard_message("subscribe" if on else "unsubscribe", shard_id))

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            box, self._outbox = self._outbox, None
        if box is not None:
            box.put(None)
        ch = self._channel
        if ch is not None:
            try:
                ch.close()
            except Exception:
                pass

    # -- the connection -----------------------------------------------------------------

    def _send(self, msg) -> None:
        with self._lock:
            box = self._outbox
        if box is None:
            return
        try:
            box.put_nowait(msg)
        except queue.Full:
            pass

    def _run(self) -> None:
        backoff = 0.05
        while not self._stop.is_set():
            try:
                self._connect_once()
                backoff = 0.05
            except Exception as e:  # never out of this thread
                log.debug("persist pubsub client: %s", e)
            if self._stop.wait(backoff):
                return
            backoff = min(backoff * 2, self.MAX_BACKOFF_S)

    def _connect_once(self) -> None:
        box: queue.Queue = queue.Queue(MAX_QUEUED)
        with self._lock:
            for shard in self._shards:
                box.put_nowait(_shard_message("subscribe", shard))
            self._outbox = box
        channel = (grpc.secure_channel(self.address, self._credentials) if self._credentials is not None
                   else grpc.insecure_channel(self.address))
        self._channel = channel

        def requests():
            while True:
                m = box.get()
                if m is None:
                    return
                yield m

        try:
            stub = channel.stream_stream(METHOD, request_serializer=encode, response_deserializer=decode)
            responses = stub(requests(), metadata=self._metadata)
            # The stream is up once the server has its headers out; until then pushes wait in box.
            grpc.channel_ready_future(channel).result(timeout=2.0)
            self.connected.set()
            log.debug("persist pubsub client connected to %s", self.address)
            for msg in responses:
                if self._stop.is_set():
                    break
                if msg is None or msg.WhichOneof("message") != "push_diff":
                    self.metrics.received.labels("unclean").inc()
                    continue
                self._apply(msg)
        finally:
            was = self.connected.is_set()
            self.connected.clear()
            if was:
                try:
                    self._on_disconnect()
                except Exception as e:
                    log.debug("persist pubsub: on_disconnect: %s", e)
            with self._lock:
                if self._outbox is box:
                    self._outbox = None
            try:
                box.put_nowait(None)  # ends the request iterator
            except queue.Full:
                pass
            channel.close()


def _port_free(host: str, port: int) -> bool:
    """Whether nothing listens on ``host:port`` now (a bind with SO_REUSEADDR, as a
    server binds, so connections in TIME_WAIT do not count)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True
