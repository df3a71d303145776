"""persist listen and PubSub in one process: two PersistClients over one Blob and
Consensus, as two processes would have them, with a real gRPC PubSub server between."""

from __future__ import annotations

import collections
import time

import grpc
import pyarrow as pa
import pytest

from persist import FileBlob, PersistClient, SqliteConsensus
from persist.pubsub import METHOD, PubSubMetrics, PubSubServer, push_message
from server import wait_for


class _Count:
    """A Prometheus-like counter/histogram that remembers, by label."""

    def __init__(self, store, key=()):
        self.store, self.key = store, key

    def labels(self, *values):
        return _Count(self.store, self.key + values)

    def inc(self, n=1):
        self.store[self.key] += n

    def observe(self, v):
        self.store[self.key] += 1


def counting_metrics():
    stores = {n: collections.Counter() for n in ("pushed", "received", "fallback_polls", "latency", "broadcast",
                                                 "consensus_reads")}
    return PubSubMetrics(**{n: _Count(s) for n, s in stores.items()}), stores


@pytest.fixture
def pubsub_server():
    s = PubSubServer("127.0.0.1", 0).start()
    yield s
    s.stop()


def client(tmp_path, address=None, metrics=None) -> PersistClient:
    return PersistClient(FileBlob(tmp_path / "blob"), SqliteConsensus(str(tmp_path / "consensus.db")),
                         pubsub_address=address, metrics=metrics)


def test_listen_yields_updates_after_as_of_with_times_and_diffs(tmp_path):
    p = client(tmp_path)
    p.create_shard("s", 10)
    p.append("s", pa.table({"x": [1, 2]}), 10)
    listen = p.listen("s", 10)
    assert listen.next(0.05) is None  # nothing after as_of yet
    p.append("s", pa.table({"x": [3]}), 12)
    p.append("s", pa.table({"x": [4]}), 15)
    b = listen.next(2)
    assert (b.lower, b.upper) == (11, 16)
    assert sorted(b.updates.to_pylist(), key=lambda r: r["x"]) == [
        {"x": 3, "_mz_time": 12, "_mz_diff": 1}, {"x": 4, "_mz_time": 15, "_mz_diff": 1}]
    assert p.leases.holds("s") and listen.frontier == 16
    listen.close()
    assert p.leases.holds("s") == []


def test_a_push_is_applied_as_the_next_seqno_without_polling(tmp_path, pubsub_server):
    mw, writer_counts = counting_metrics()
    mr, reader_counts = counting_metrics()
    w = client(tmp_path, pubsub_server.address, mw)
    r = client(tmp_path, pubsub_server.address, mr)
    assert w.pubsub.connected.wait(5) and r.pubsub.connected.wait(5)
    w.create_shard("s", 10)
    listen = r.listen("s", 10)
    assert listen.next(0.3) is None
    assert wait_for(lambda: pubsub_server.subscribers("s") == 1, timeout=10), "the subscribe never reached the server"
    polls = reader_counts["fallback_polls"][()]
    t = time.monotonic()
    w.append("s", pa.table({"x": [7]}), 20)
    b = listen.next(5)
    assert b is not None and b.updates.column("x").to_pylist() == [7]
    assert time.monotonic() - t < 0.9  # a fallback poll comes after 1 s at the earliest
    assert reader_counts["fallback_polls"][()] == polls
    assert reader_counts["received"][("clean",)] >= 1 and reader_counts["latency"][()] >= 1
    assert writer_counts["pushed"][()] >= 2  # the create and the append
    listen.close()
    w.close()
    r.close()


def test_a_push_that_is_not_the_next_seqno_reads_consensus(tmp_path):
    m, counts = counting_metrics()
    p = client(tmp_path, None, m)
    p.create_shard("s", 10)
    other = client(tmp_path)
    st = other.append("s", pa.table({"x": [1]}), 11)
    other.append("s", pa.table({"x": [2]}), 12)
    p._pushed("s", st.seqno + 1, b"not a state", 0)  # a gap: p knows seqno 1 only
    assert counts["received"][("unclean",)] == 1
    assert p.latest("s").upper == 13  # read from Consensus instead
    p._pushed("s", p.latest("s").seqno + 1, b"garbage", 0)  # the next seqno, but no state
    assert counts["received"][("unclean",)] == 2


def test_garbage_on_the_wire_does_not_break_the_server(tmp_path, pubsub_server):
    ch = grpc.insecure_channel(pubsub_server.address)
    raw = ch.stream_stream(METHOD, request_serializer=lambda b: b, response_deserializer=lambda b: b)
    try:
        for _ in raw(iter([b"\xff\xfe garbage", b"\x0a\x03abc", push_message("s", 1, b"x", 0).SerializeToString()])):
            pass
    except grpc.RpcError:
        pass
    ch.close()
    # The server still serves: a push goes from one client to the other.
    w, r = client(tmp_path, pubsub_server.address), client(tmp_path, pubsub_server.address)
    got = []
    r.pubsub._on_push = lambda *a: got.append(a)
    assert w.pubsub.connected.wait(5) and r.pubsub.connected.wait(5)
    r.pubsub.subscribe("s")
    assert wait_for(lambda: pubsub_server.subscribers("s") == 1, timeout=10), "the subscribe never reached the server"
    w.pubsub.push("s", 5, b"state")
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        time.sleep(0.02)
    assert got and got[0][:3] == ("s", 5, b"state")
    w.close()
    r.close()


def test_when_the_server_goes_polling_still_delivers(tmp_path):
    server = PubSubServer("127.0.0.1", 0).start()
    w = client(tmp_path, server.address)
    r = client(tmp_path, server.address)
    assert w.pubsub.connected.wait(5) and r.pubsub.connected.wait(5)
    w.create_shard("s", 10)
    listen = r.listen("s", 10)
    listen.next(0.2)
    server.stop()
    deadline = time.monotonic() + 5
    while r.pubsub.connected.is_set() and time.monotonic() < deadline:
        time.sleep(0.02)
    t = time.monotonic()
    w.append("s", pa.table({"x": [1]}), 20)
    b = listen.next(5)
    assert b is not None and b.updates.column("x").to_pylist() == [1]
    assert time.monotonic() - t < 1.0  # polling without PubSub backs off to 250 ms at most
    listen.close()
    w.close()
    r.close()


def test_pubsub_server_falls_back_to_a_free_port_when_its_port_is_taken(pubsub_server, capfd):
    port = int(pubsub_server.address.rsplit(":", 1)[1])
    other = PubSubServer("127.0.0.1", port).start()
    try:
        assert other.address != pubsub_server.address
    finally:
        other.stop()
    # gRPC writes no failed bind to stderr: the taken port is seen before gRPC binds
    assert "Address already in use" not in capfd.readouterr().err


def test_a_server_with_a_token_refuses_clients_without_it():
    from persist.pubsub import PubSubClient

    server = PubSubServer("127.0.0.1", 0, token="s3cret").start()
    try:
        ok = PubSubClient(server.address, lambda *a: None, token="s3cret")
        bad = PubSubClient(server.address, lambda *a: None, token="guess")
        none = PubSubClient(server.address, lambda *a: None)
        assert ok.connected.wait(5)
        time.sleep(0.5)
        ok.subscribe("s")
        deadline = time.monotonic() + 5
        while server.connections() < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)
        assert server.connections() == 1  # only the client with the token holds a stream
        for c in (ok, bad, none):
            c.close()
    finally:
        server.stop()


def test_peer_servers_forward_local_pushes_one_hop():
    """Three environmentd's servers, A peered with B and B with C: a push to A reaches
    B's subscribers (with B's token), and B does not forward it on to C (one hop: every
    process peers with every other one itself, so there are no loops)."""
    from persist.pubsub import PubSubClient

    servers = {n: PubSubServer("127.0.0.1", 0, token=f"tok-{n}").start() for n in "abc"}
    got = {n: [] for n in "abc"}
    clients = []
    try:
        servers["a"].set_peers({servers["b"].address: "tok-b", servers["a"].address: "tok-a"})
        servers["b"].set_peers({servers["c"].address: "tok-c"})
        assert servers["a"].peers() == [servers["b"].address]  # its own address is ignored
        for n in "abc":
            c = PubSubClient(servers[n].address, lambda *a, n=n: got[n].append(a[:2]), token=f"tok-{n}")
            c.subscribe("s")
            clients.append(c)
        pusher = PubSubClient(servers["a"].address, lambda *a: None, token="tok-a")
        clients.append(pusher)
        for c in clients:
            assert c.connected.wait(5)
        # pushes before the peer stream and the subscriptions are up are dropped
        # (best-effort): push until one came through
        deadline = time.monotonic() + 20
        seqno = 0
        while not (got["a"] and got["b"]) and time.monotonic() < deadline:
            seqno += 1
            pusher.push("s", seqno, b"state")
            time.sleep(0.2)
        time.sleep(0.5)
        assert got["a"] and got["b"] and got["c"] == []
        assert {s for s, _ in got["b"]} == {"s"} and len(got["b"]) == len(set(got["b"]))  # each once
        servers["a"].set_peers({})
        assert servers["a"].peers() == []
    finally:
        for c in clients:
            c.close()
        for s in servers.values():
            s.stop()


def test_same_process_connection_pushes_and_receives_without_grpc(tmp_path, pubsub_server):
    """environmentd's own persist client (``pubsub_server=``): its compare-and-sets reach a
    gRPC subscriber, and a gRPC writer's commits are applied by it as the next seqno."""
    local = PersistClient(FileBlob(tmp_path / "blob"), SqliteConsensus(str(tmp_path / "consensus.db")),
                          pubsub_server=pubsub_server)
    remote = client(tmp_path, pubsub_server.address)
    assert local.pubsub.connected.is_set() and remote.pubsub.connected.wait(5)
    local.create_shard("s", 1)
    remote.state("s")
    local.state("s")
    local.watch("s")
    remote.watch("s")
    assert wait_for(lambda: pubsub_server.subscribers("s") == 2, timeout=10), "a subscribe never reached the server"

    def seqno(c):
        deadline = time.monotonic() + 5
        want = c.consensus.head("s")[0]
        while c._seqno("s") < want and time.monotonic() < deadline:
            time.sleep(0.01)
        return c._seqno("s")

    local.append("s", pa.table({"x": [1]}), 2)
    assert seqno(remote) == local.consensus.head("s")[0]  # pushed to the gRPC subscriber
    remote.append("s", pa.table({"x": [2]}), 3)
    assert seqno(local) == remote.consensus.head("s")[0]  # pushed to the local one
    assert pubsub_server.connections() == 2
    local.close()
    assert pubsub_server.connections() == 1 and not local.pubsub.subscribed("s")
    remote.close()


def test_peer_servers_on_distinct_addresses_push_over_tls(tmp_path):
    """Issue 27: PubSub off 127.0.0.1 with TLS (sqlfront.tls.PeerTls, one self-signed
    certificate naming both addresses): peers are dialed at the address each advertises,
    the token travels inside TLS, and a client in clear text gets no stream."""
    from persist.pubsub import PubSubClient
    from server import self_signed
    from sqlfront.tls import PeerTls

    tls = PeerTls(*self_signed(tmp_path, ("127.0.0.2", "127.0.0.3")))
    creds = {"server_credentials": tls.grpc_server_credentials(), "channel_credentials": tls.grpc_channel_credentials()}
    a = PubSubServer("127.0.0.2", 0, token="tok-a", **creds).start()
    b = PubSubServer("127.0.0.3", 0, token="tok-b", **creds).start()
    got, clients = [], []
    try:
        assert a.address.startswith("127.0.0.2:") and b.address.startswith("127.0.0.3:")
        a.set_peers({b.address: "tok-b"})
        sub = PubSubClient(b.address, lambda *x: got.append(x[:2]), token="tok-b",
                           credentials=tls.grpc_channel_credentials())
        sub.subscribe("s")
        pusher = PubSubClient(a.address, lambda *x: None, token="tok-a", credentials=tls.grpc_channel_credentials())
        clear = PubSubClient(a.address, lambda *x: None, token="tok-a")
        clients += [sub, pusher, clear]
        assert sub.connected.wait(10) and pusher.connected.wait(10)
        deadline, seqno = time.monotonic() + 20, 0
        while not got and time.monotonic() < deadline:  # best-effort: until a push came through
            seqno += 1
            pusher.push("s", seqno, b"state")
            time.sleep(0.2)
        assert got and got[0][0] == "s"
        assert not clear.connected.is_set()
    finally:
        for c in clients:
            c.close()
        a.stop()
        b.stop()
