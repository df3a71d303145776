"""Security by default: SCRAM-SHA-256 with a password, loopback only without one, and
malformed protocol messages that close only their own connection."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys

import asyncio
import asyncpg
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from server import ROOT, Server, free_port


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
    finally:
        s.stop()


def test_listening_beyond_loopback_needs_a_password(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "sqlfront.cli", "serve", "--listen", f"0.0.0.0:{free_port()}",
         "--data-dir", str(tmp_path / "d")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode != 0
    assert "refusing to listen on 0.0.0.0" in out.stderr
    assert not (tmp_path / "d").exists()  # nothing started, nothing written


def _startup() -> bytes:
    params = b"user\x00materialize\x00database\x00materialize\x00\x00"
    return struct.pack("!ii", 8 + len(params), 196608) + params


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
        s.sendall(_startup() + b"".join(batch))
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
