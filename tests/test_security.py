"""Security by default: SCRAM-SHA-256 with a password, loopback only without one (metrics
too), server files readable only under --copy-from-dir, bounded connections, messages and
COPY data, unguessable cancel keys, and malformed protocol messages that close only their
own connection."""

from __future__ import annotations

import base64
import os
import socket
import struct
import subprocess
import sys
import time

import asyncio
import asyncpg
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from server import ROOT, Server, free_port, read_message, startup_packet, wait_for


@pytest.mark.slow
def test_scram_password(tmp_path):
    pw = tmp_path / "password"
    pw.write_text("s3cret-pässword\n")
    s = Server(tmp_path / "mzdata", "--password-file", str(pw), password="s3cret-pässword").start(wait_replicas=False)
    try:
        with s.connect() as c:
            assert c.execute("SELECT 1").fetchone() == (1,)
        with pytest.raises(psycopg.OperationalError) as ei:
            psycopg.connect(f"postgresql://materialize:wrong@127.0.0.1:{s.port}/materialize")
        assert "28P01" in str(ei.value) or "password authentication failed" in str(ei.value)
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(f"postgresql://materialize@127.0.0.1:{s.port}/materialize")

        async def via_asyncpg():
            c = await asyncpg.connect(host="127.0.0.1", port=s.port, user="materialize",
                                      password="s3cret-pässword", database="materialize")
            try:
                return await c.fetchval("SELECT 40 + 2")
            finally:
                await c.close()

        assert asyncio.run(via_asyncpg()) == 42

        # The salted password is derived once, at startup: every attempt sees the same salt
        # and iteration count (a per-attempt derivation would draw a new salt each time).
        assert _scram_server_first(s.port)[1:] == _scram_server_first(s.port)[1:]

        # A SASL message's length is checked before it is read: a claim of 1 MiB is refused
        # at once (PostgreSQL's limit for SASL tokens is 64 KiB), without waiting for it.
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as sock:
            sock.sendall(startup_packet())
            kind, _ = read_message(sock)
            assert kind == b"R"  # AuthenticationSASL
            sock.sendall(b"p" + struct.pack("!I", 1 << 20) + b"SCRAM-SHA-256\x00")
            kind, body = read_message(sock)
            assert kind == b"E" and b"SFATAL" in body and b"C08P01" in body
        with s.connect() as c:
            assert c.execute("SELECT 1").fetchone() == (1,)
    finally:
        s.stop()


def _scram_server_first(port: int) -> tuple[str, str, str]:
    """The (nonce, salt, iterations) of one SCRAM server-first message, read by starting
    an exchange with a raw socket and abandoning it."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(startup_packet())
        assert read_message(sock)[0] == b"R"
        client_first = b"n,,n=,r=" + base64.b64encode(os.urandom(18))
        body = b"SCRAM-SHA-256\x00" + struct.pack("!i", len(client_first)) + client_first
        sock.sendall(b"p" + struct.pack("!I", 4 + len(body)) + body)
        kind, reply = read_message(sock)
        assert kind == b"R" and struct.unpack("!i", reply[:4])[0] == 11  # AuthenticationSASLContinue
        attrs = dict(kv.split("=", 1) for kv in reply[4:].decode().split(","))
        return attrs["r"], attrs["s"], attrs["i"]


def test_listening_beyond_loopback_needs_a_password(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "sqlfront.cli", "serve", "--listen", f"0.0.0.0:{free_port()}",
         "--data-dir", str(tmp_path / "d")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode != 0
    assert "refusing to listen on 0.0.0.0" in out.stderr
    assert not (tmp_path / "d").exists()  # nothing started, nothing written


def test_metrics_listener_beyond_loopback_is_refused(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "sqlfront.cli", "serve", "--listen", f"127.0.0.1:{free_port()}",
         "--metrics-listen", f"0.0.0.0:{free_port()}", "--data-dir", str(tmp_path / "d")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode != 0
    assert "refusing to serve metrics on 0.0.0.0" in out.stderr and "no authentication" in out.stderr
    assert not (tmp_path / "d").exists()


def _raw_session(port: int) -> tuple[socket.socket, int, int]:
    """A trusted session on a raw socket, ready for queries: (socket, process id, secret key)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(startup_packet())
    pid = key = None
    while True:
        kind, body = read_message(sock)
        assert kind not in (b"", b"E"), body
        if kind == b"K":
            pid, key = struct.unpack("!iI", body)
        if kind == b"Z":
            return sock, pid, key


def test_cancel_keys_are_unique_and_not_sequential(server):
    socks, keys = [], []
    try:
        for _ in range(20):
            sock, pid, key = _raw_session(server.port)
            socks.append(sock)
            keys.append((pid, key))
    finally:
        for sock in socks:
            sock.close()
    pids, secrets_ = [k[0] for k in keys], [k[1] for k in keys]
    assert len(set(pids)) == 20 and len(set(secrets_)) == 20
    assert all(p > 0 for p in pids)  # a positive Int32, as a real process id
    # Spread over the whole range, not a counter: guessing a live pair means guessing 63 bits.
    assert max(pids) - min(pids) > 1 << 20 and max(secrets_) - min(secrets_) > 1 << 20


def test_dollar_n_inside_literals_and_comments_is_not_a_parameter(server):
    async def run():
        c = await asyncpg.connect(host="127.0.0.1", port=server.port, user="materialize", database="materialize")
        try:
            # A regex would count $5 and $9 and make asyncpg expect nine arguments.
            stmt = await c.prepare("SELECT '$5' AS a, $1::int AS b /* $9 */")
            assert len(stmt.get_parameters()) == 1
            return tuple(await stmt.fetchrow(7))
        finally:
            await c.close()

    assert asyncio.run(run()) == ("$5", 7)


def test_copy_from_file_inside_allowed_dir_loads(server, conn):
    d = server.copy_from_dir / "inside"
    d.mkdir(exist_ok=True)
    (d / "rows.csv").write_text("1,a\n2,b\n")
    conn.execute("CREATE TABLE cp_in (a int, b text)")
    try:
        # ".." that stays inside the allowed directory is fine: the resolved path counts.
        cur = conn.execute(f"COPY cp_in FROM '{d}/../inside/rows.csv' (FORMAT CSV)")
        assert cur.rowcount == 2
        assert conn.execute("SELECT count(*) FROM cp_in").fetchone() == (2,)
    finally:
        conn.execute("DROP TABLE cp_in")


def test_copy_from_file_outside_allowed_dirs_is_refused(server, conn, tmp_path):
    outside = tmp_path / "secret.csv"
    outside.write_text("1,leaked\n")
    link = server.copy_from_dir / "link-to-outside.csv"
    if not link.is_symlink():
        link.symlink_to(outside)
    conn.execute("CREATE TABLE cp_out (a int, b text)")
    try:
        for path in (outside, "/etc/passwd", link, f"{server.copy_from_dir}/../{outside.parent.name}/secret.csv",
                     tmp_path / "does-not-exist.csv"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as ei:
                conn.execute(f"COPY cp_out FROM '{path}' (FORMAT CSV)")
            diag = ei.value.diag
            assert diag.sqlstate == "42501"
            assert diag.message_primary == "permission denied to COPY from a file"
            assert "--copy-from-dir" in diag.message_hint
        # The session stays usable and nothing was loaded.
        assert conn.execute("SELECT count(*) FROM cp_out").fetchone() == (0,)
    finally:
        conn.execute("DROP TABLE cp_out")


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """A server with small limits, no --copy-from-dir and no replica to wait for."""
    s = Server(tmp_path_factory.mktemp("limited") / "mzdata", "--max-connections", "3",
               "--max-message-size", "1MB", "--max-copy-from-size", "64kB").start(wait_replicas=False)
    yield s
    s.stop()


def test_copy_from_file_is_refused_when_no_dir_is_allowed(limited, tmp_path):
    f = tmp_path / "rows.csv"
    f.write_text("1\n")
    with limited.connect() as c:
        c.execute("CREATE TABLE nodir (a int)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as ei:
            c.execute(f"COPY nodir FROM '{f}' (FORMAT CSV)")
        assert "no server files" in ei.value.diag.message_detail
        # COPY FROM STDIN stays open to everyone.
        with c.cursor().copy("COPY nodir FROM STDIN") as copy:
            copy.write("1\n2\n")
        assert c.execute("SELECT count(*) FROM nodir").fetchone() == (2,)


def test_copy_from_stdin_beyond_max_copy_from_size_is_refused(limited):
    with limited.connect() as c:
        assert c.execute("SHOW max_copy_from_size").fetchone() == (str(64 << 10),)
        c.execute("CREATE TABLE bigcopy (a text)")
        with pytest.raises(psycopg.errors.InsufficientResources) as ei:
            with c.cursor().copy("COPY bigcopy FROM STDIN") as copy:
                for _ in range(100):
                    copy.write(("x" * 1000 + "\n").encode())
        assert ei.value.diag.sqlstate == "53000"
        assert ei.value.diag.message_primary == "COPY FROM STDIN too large"
        # All or nothing, and the session goes on.
        assert c.execute("SELECT count(*) FROM bigcopy").fetchone() == (0,)
        with c.cursor().copy("COPY bigcopy FROM STDIN") as copy:
            copy.write(b"small\n")
        assert c.execute("SELECT count(*) FROM bigcopy").fetchone() == (1,)


def test_message_beyond_max_message_size_is_refused_before_it_is_read(limited):
    sock, _, _ = _raw_session(limited.port)
    with sock:
        start = time.monotonic()
        # Only the header of a 2 MiB query: the server must answer without waiting for it.
        sock.sendall(b"Q" + struct.pack("!I", 2 << 20))
        kind, body = read_message(sock)
        assert kind == b"E" and b"SFATAL" in body and b"C08P01" in body and b"exceeds the limit" in body
        assert time.monotonic() - start < 5
        assert read_message(sock) == (b"", b"")  # closed
    with limited.connect() as c:
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_connections_beyond_max_connections_get_53300_until_one_ends(limited):
    def try_connect():
        try:
            return limited.connect()
        except psycopg.OperationalError:
            return None

    # Each of the three ways a connection can end frees its slot: a clean close, a
    # dropped socket, a protocol error.
    for end in ("close", "drop", "protocol error"):
        # A slot of the previous round (or another test) is freed when the server notices.
        first = wait_for(try_connect, timeout=10)
        assert first is not None
        held = [first, _raw_session(limited.port)[0], _raw_session(limited.port)[0]]
        try:
            assert first.execute("SHOW max_connections").fetchone() == ("3",)
            with pytest.raises(psycopg.OperationalError) as ei:
                limited.connect()
            assert "sorry, too many clients already" in str(ei.value)
            with socket.create_connection(("127.0.0.1", limited.port), timeout=10) as sock:
                sock.sendall(startup_packet())  # psycopg hides a failed connection's SQLSTATE
                kind, body = read_message(sock)
                assert kind == b"E" and b"SFATAL" in body and b"C53300" in body
                assert read_message(sock) == (b"", b"")  # and closed
            # A CancelRequest is no session: it is heard, not refused with 53300.
            with socket.create_connection(("127.0.0.1", limited.port), timeout=10) as sock:
                sock.sendall(struct.pack("!iiii", 16, 80877102, 1, 2))
                assert read_message(sock) == (b"", b"")
            victim = held.pop(1)
            if end == "close":
                victim.sendall(b"X" + struct.pack("!I", 4))
            elif end == "protocol error":
                victim.sendall(b"Q" + struct.pack("!I", 2))
                assert b"C08P01" in read_message(victim)[1]
            victim.close()
            again = wait_for(try_connect, timeout=10)
            assert again is not None
            held.append(again)
        finally:
            for h in held:
                h.close()


KINDS = list(b"QPBDECSHXdcfp") + [0, 255, ord("Z")]


@st.composite
def messages(draw):
    kind = draw(st.sampled_from(KINDS))
    body = draw(st.binary(max_size=64))
    mode = draw(st.sampled_from(["ok", "short", "long", "negative"]))
    length = {"ok": len(body) + 4, "short": max(0, len(body) + 4 - draw(st.integers(1, 8))),
              "long": len(body) + 4 + draw(st.integers(1, 1 << 20)), "negative": 0xFFFFFFFF}[mode]
    return bytes([kind]) + struct.pack("!I", length) + body


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.lists(messages(), min_size=10, max_size=10))
def _fuzz_once(port, batch):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(startup_packet() + b"".join(batch))
        s.shutdown(socket.SHUT_WR)
        s.settimeout(5)
        try:
            while s.recv(65536):
                pass
        except (socket.timeout, ConnectionResetError):
            pass


@pytest.mark.slow
def test_protocol_fuzz_never_hurts_the_server(server, conn):
    """10,000 random and mutated messages (1,000 connections of 10): the server keeps
    serving, and a session opened before keeps working."""
    _fuzz_once(server.port)
    assert conn.execute("SELECT count(*) FROM mz_clusters").fetchone()[0] >= 1
    with server.connect() as fresh:
        assert fresh.execute("SELECT 1").fetchone() == (1,)


def test_max_connections_defaults_to_postgres_100(conn):
    assert conn.execute("SHOW max_connections").fetchone() == ("100",)
