"""What other local users can reach (issue 33, items 6 and 7): nothing in the data
directory (it is 0700, every file in it 0600, the Parquet parts Spark writes included),
and no Spark port of a replica without its secret."""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import struct
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from server import Server, wait_for


def _modes_open_to_others(data_dir) -> list[str]:
    """Paths under ``data_dir`` (itself included) that group or others may use."""
    found = []
    for root, dirs, files in os.walk(data_dir):
        for p in (root, *(os.path.join(root, n) for n in dirs + files)):
            st = os.lstat(p)
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
                found.append(f"{p} {stat.filemode(st.st_mode)}")
    return found


def test_every_file_in_the_data_dir_is_private(server, conn):
    n = uuid.uuid4().hex[:6]
    conn.execute(f"CREATE TABLE pd_t_{n} (a int)")
    conn.execute(f"CREATE MATERIALIZED VIEW pd_mv_{n} AS SELECT sum(a) AS s FROM pd_t_{n}")
    try:
        conn.execute(f"INSERT INTO pd_t_{n} VALUES (1), (2)")
        # the replica computes the view and writes its part (Parquet, through Hadoop)
        assert conn.execute(f"SELECT s FROM pd_mv_{n}").fetchall() == [(3,)]
        parquet = [p for p in server.data_dir.rglob("*") if p.is_file() and p.stat().st_size
                   and p.read_bytes()[:4] == b"PAR1"]
        assert parquet  # there are parts to check
        assert _modes_open_to_others(server.data_dir) == []
    finally:
        conn.execute(f"DROP MATERIALIZED VIEW pd_mv_{n}")
        conn.execute(f"DROP TABLE pd_t_{n}")


def test_another_user_can_read_nothing_in_the_data_dir():
    if shutil.which("runuser") is None or os.geteuid() != 0:
        pytest.skip("needs runuser, as root")
    # under a directory others may traverse (pytest's temporary directories are 0700)
    parent = Path(tempfile.mkdtemp(prefix="sqlfront-private-"))
    parent.chmod(0o711)
    s = Server(parent / "mzdata").start(wait_replicas=False)
    try:
        with s.connect() as c:
            c.execute("CREATE TABLE pd (a int)")
            c.execute("INSERT INTO pd VALUES (1)")
        files = [str(p) for p in s.data_dir.rglob("*") if p.is_file()]
        assert any(f.endswith("catalog.db") for f in files) and any(f.endswith("consensus.db") for f in files)
        for cmd in (["ls", "-la", str(s.data_dir)], ["cat", *files]):
            out = subprocess.run(["runuser", "-u", "nobody", "--", *cmd], capture_output=True, timeout=60)
            assert out.returncode != 0 and out.stdout == b"", (cmd[0], out.stdout[:300])
    finally:
        s.stop()
        shutil.rmtree(parent, ignore_errors=True)


def _spark_ports(log: str) -> dict[str, int]:
    """The ports the last start of a replica logged (Spark's "Successfully started service
    'NAME' on port N"), by service name."""
    last = log.rsplit("=== starting ", 1)[-1]
    return {m[0]: int(m[1]) for m in re.findall(r"Successfully started service '([^']+)' on port (\d+)", last)}


def _send_rpc(port: int) -> bytes:
    """Send one Spark RpcRequest frame carrying a junk payload (Spark's network protocol,
    MessageEncoder: Int64 frame length, message type 3, Int64 request id, Int32 body
    length, body) and return the reply frame (an RpcFailure, type 5, for junk)."""
    body = b"not a real request"
    frame = struct.pack("!bqi", 3, 42, len(body)) + body
    reply = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(struct.pack("!q", 8 + len(frame)) + frame)
        while len(reply) < 8 or len(reply) < struct.unpack("!q", reply[:8])[0]:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    return reply


def test_spark_ports_refuse_peers_without_the_secret(server, conn):
    rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id "
                       "WHERE c.name = 'quickstart' AND r.name = 'r1'").fetchone()[0]
    log = server.data_dir / "replicas" / rid / "replica.log"
    ports = wait_for(lambda: _spark_ports(log.read_text(errors="replace")), 30)
    driver = ports["sparkDriver"]
    blocks = ports["org.apache.spark.network.netty.NettyBlockTransferService"]
    for port in (driver, blocks):
        # Without authentication the request reaches the RPC layer, which answers with
        # its own parse error (RequestMessage, NettyBlockRpcServer); with it, the auth
        # handshake refuses it ("Expected SaslMessage") before any handler sees it,
        # the second time too.
        for _ in range(2):
            reply = _send_rpc(port)
            assert b"SaslRpcHandler" in reply, reply[:400]
            assert b"RequestMessage" not in reply and b"NettyBlockRpcServer" not in reply
    assert conn.execute("SELECT count(*) FROM mz_clusters").fetchone()[0] >= 1  # the replica is unharmed


def test_a_remote_replicas_token_is_encrypted_in_the_catalog(server, conn):
    token = f"pd-token-{uuid.uuid4().hex}"
    conn.execute(f"CREATE CLUSTER pd_remote REPLICAS (r (REMOTE ('127.0.0.1:9'), TOKEN '{token}'))")
    try:
        stored = b"".join(p.read_bytes() for p in server.data_dir.glob("catalog.db*"))  # the WAL too
        assert token.encode() not in stored
        assert stat.S_IMODE((server.data_dir / "catalog.key").stat().st_mode) == 0o600
    finally:
        conn.execute("DROP CLUSTER pd_remote CASCADE")


def test_catalog_tokens_round_trip_and_clear_ones_are_encrypted_on_open(tmp_path):
    from catalog import durable
    from catalog.secretbox import SecretBox
    from catalog.snapshot import Cluster, Replica

    path = str(tmp_path / "catalog.db")
    old = durable.CatalogStore(path)  # as a version before encryption wrote it
    snap = old.load()
    old.transact(snap, [durable.CreateCluster(Cluster("u1", "c")),
                        durable.CreateReplica(Replica("u1", "u1", "r", None, remote=("sc://h:1",), token="clear-tok"))],
                 dict(snap.next_ids))
    box = SecretBox.at(tmp_path / "catalog.key")
    store = durable.CatalogStore(path, box)
    assert store.load().replicas["u1"].token == "clear-tok"
    snap = store.load()
    store.transact(snap, [durable.CreateReplica(Replica("u2", "u1", "r2", None, remote=("sc://h:2",),
                                                        token="new-tok"))], dict(snap.next_ids))
    assert {r.id: r.token for r in durable.CatalogStore(path, box).load().replicas.values()} == \
        {"u1": "clear-tok", "u2": "new-tok"}
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("catalog.db*"))
    assert b"clear-tok" not in raw and b"new-tok" not in raw
