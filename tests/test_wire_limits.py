"""Limits and errors of the wire layer, through the wire: the startup deadline and the cap
on connections in startup, the server-wide COPY memory budget (and COPYs waiting for it),
COPY text escapes and NUL
bytes, malformed binary parameters, statements nested too deeply, a full disk, bad
startup options and a client that leaves in the middle of a result."""

from __future__ import annotations

import os
import select
import socket
import struct
import subprocess
import threading
import time

import psycopg
import pytest
from psycopg import pq

from server import Server, wait_for

#: a small tmpfs for the persist Blob, so that a big COPY fills the disk (root only)
BLOB_TMPFS_BYTES = 2 << 20


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """A server with a 4 s startup deadline, 3 connections in startup at most, a 40 MB
    COPY memory budget (one COPY at a time: each holds ``STREAM_BYTES``, 35 MB) and,
    when the tests run as root, its Blob on a 2 MB tmpfs."""
    base = tmp_path_factory.mktemp("wire_limits")
    blob = base / "blob"
    blob.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={BLOB_TMPFS_BYTES}", "tmpfs", str(blob)],
                             capture_output=True).returncode == 0
    s = Server(base / "mzdata", "--authentication-timeout", "4", "--max-startup-connections", "3",
               "--copy-memory-budget", "40MB", "--persist-blob-url", str(blob)).start(wait_replicas=False)
    s.blob_is_small = mounted
    yield s
    s.stop()
    if mounted:
        subprocess.run(["umount", str(blob)], check=False)


def _startup(options: str | None = None) -> bytes:
    params = b"user\x00materialize\x00database\x00materialize\x00"
    if options is not None:
        params += b"options\x00" + options.encode() + b"\x00"
    params += b"\x00"
    return struct.pack("!ii", 8 + len(params), 196608) + params


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


# -- startup ----------------------------------------------------------------------------


def test_startup_deadline_counts_from_the_connection_not_per_byte(limited):
    """A byte every half second never lets a read wait long; the 4 s deadline still ends it."""
    packet = _startup()
    closed_at = None
    with socket.create_connection(("127.0.0.1", limited.port), timeout=60) as sock:
        for i in range(len(packet)):
            try:
                sock.sendall(packet[i : i + 1])
            except OSError:  # the server closed it (reset)
                closed_at = i
                break
            time.sleep(0.5)
            if select.select([sock], [], [], 0)[0]:
                try:
                    data = sock.recv(1)
                except OSError:
                    data = b""
                if data == b"":
                    closed_at = i
                    break
    assert closed_at is not None and closed_at < len(packet) - 1  # closed before the packet was whole
    with limited.connect() as c:
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_connections_beyond_the_startup_cap_are_refused_with_53300(limited):
    """Four silent connections: one is refused at once (FATAL 53300, before it sent
    anything), the three others are closed by the startup deadline without a word."""
    socks = [socket.create_connection(("127.0.0.1", limited.port), timeout=60) for _ in range(4)]
    try:
        replies = [_read_all(s) for s in socks]
    finally:
        for s in socks:
            s.close()
    refused = [r for r in replies if r]
    assert len(refused) == 1 and b"SFATAL" in refused[0] and b"C53300" in refused[0]
    assert replies.count(b"") == 3
    with limited.connect() as c:  # the slots are free again
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_bad_startup_option_fails_the_startup_with_22023(limited):
    with socket.create_connection(("127.0.0.1", limited.port), timeout=60) as sock:
        sock.sendall(_startup("-c statement_timeout=abc"))
        reply = _read_all(sock)
    assert reply[:1] == b"E" and b"SFATAL" in reply and b"C22023" in reply
    assert b'invalid value for parameter "statement_timeout": "abc"' in reply
    with pytest.raises(psycopg.OperationalError, match="invalid value for parameter"):
        psycopg.connect(limited.url, options="-c statement_timeout=abc")
    with limited.connect(options="-c statement_timeout=5s") as c:  # a good one still works
        assert c.execute("SHOW statement_timeout").fetchone() == ("5s",)


# -- COPY -------------------------------------------------------------------------------


def test_copy_beyond_the_memory_budget_is_53200_atomic_and_the_session_goes_on(limited):
    """A row whose parsing alone needs more than the whole budget (a 2 MB field, parsed
    at ~48 bytes a byte) fails at once, nothing of the COPY is written."""
    with limited.connect() as c:
        c.execute("CREATE TABLE budget_t (a int, b text)")
        data = b"".join(b"%d\tsome text of the row %d\n" % (i, i) for i in range(1000)) + b"0\t" + b"x" * (2 << 20)
        with pytest.raises(psycopg.errors.OutOfMemory) as ei:
            with c.cursor().copy("COPY budget_t FROM STDIN") as cp:
                for i in range(0, len(data), 1 << 16):
                    cp.write(data[i : i + (1 << 16)])
        assert ei.value.diag.sqlstate == "53200"
        assert "COPY memory budget" in ei.value.diag.message_detail
        assert "more than the whole budget" in ei.value.diag.message_detail
        assert c.execute("SELECT count(*) FROM budget_t").fetchone() == (0,)
        with c.cursor().copy("COPY budget_t FROM STDIN") as cp:
            cp.write(b"1\tsmall\n2\tsmall too\n")
        assert c.execute("SELECT count(*) FROM budget_t").fetchone() == (2,)


def test_copy_waits_for_budget_another_copy_holds_then_succeeds(limited):
    """Each COPY holds 35 MB (``STREAM_BYTES``) of the 40 MB budget from its start, before
    the server asks for its data: a second COPY waits (its ``cursor.copy`` does not
    return) until the first ends, then runs and succeeds; no 53200."""
    with limited.connect() as a, limited.connect() as b:
        a.execute("CREATE TABLE wait_a (a int)")
        a.execute("CREATE TABLE wait_b (a int)")
        entered, result = threading.Event(), []

        def second():
            try:
                cur = b.cursor()
                with cur.copy("COPY wait_b FROM STDIN") as cp:
                    entered.set()
                    cp.write(b"10\n11\n12\n")
                result.append(cur.statusmessage)
            except psycopg.Error as e:  # reported by the assertion below
                result.append(e)

        with a.cursor().copy("COPY wait_a FROM STDIN") as cp:
            cp.write(b"1\n")
            t = threading.Thread(target=second)
            t.start()
            # never set while the first holds its budget, however slow the machine
            assert not entered.wait(1.0)
            cp.write(b"2\n")
        t.join(120)
        assert result == ["COPY 3"]
        assert a.execute("SELECT (SELECT sum(a) FROM wait_a), (SELECT sum(a) FROM wait_b)").fetchone() == (3, 33)


def test_copy_waiting_for_budget_ends_at_its_statement_timeout_with_53200(limited):
    """The wait for a share is bounded by the waiting COPY's statement_timeout; the COPY
    holding the budget goes on and succeeds."""
    with limited.connect() as a, limited.connect(options="-c statement_timeout=1s") as b:
        a.execute("CREATE TABLE wait_t (a int)")
        with a.cursor().copy("COPY wait_t FROM STDIN") as cp:
            cp.write(b"1\n")
            with pytest.raises(psycopg.errors.OutOfMemory) as ei:
                b.execute("COPY wait_t FROM STDIN")
            assert "other COPY statements hold the rest" in ei.value.diag.message_detail
            cp.write(b"2\n")
        assert a.execute("SELECT sum(a) FROM wait_t").fetchone() == (3,)


def test_copy_text_decodes_octal_and_hex_escapes_and_refuses_nul(limited):
    with limited.connect() as c:
        c.execute("CREATE TABLE esc_t (a text)")
        with c.cursor().copy("COPY esc_t FROM STDIN") as cp:
            cp.write(b"\\101\\x41\\x4a\\303\\251\n")
        assert c.execute("SELECT a FROM esc_t").fetchall() == [("AAJ\u00e9",)]
        for bad in (b"ok\nnul \x00 byte\n", b"ok\nescaped \\0 nul\n", b"ok\n\\x00\n"):
            with pytest.raises(psycopg.errors.CharacterNotInRepertoire) as ei:
                with c.cursor().copy("COPY esc_t FROM STDIN") as cp:
                    cp.write(bad)
            assert ei.value.diag.message_primary == 'invalid byte sequence for encoding "UTF8": 0x00'
        assert c.execute("SELECT count(*) FROM esc_t").fetchone() == (1,)  # none of the bad COPYs


def test_copy_that_fills_the_disk_is_53100_and_loses_nothing(limited):
    if not limited.blob_is_small:
        pytest.skip("needs root to mount a small tmpfs for the Blob")
    with limited.connect() as c:
        c.execute("CREATE TABLE full_t (a int, b text)")
        with c.cursor().copy("COPY full_t FROM STDIN") as cp:
            cp.write(b"1\tkept\n")
        # ~5 MB that compress to no less than 2.4 MB (random hex), in a 2 MB tmpfs
        data = b"".join(b"%d\t%s\n" % (i, os.urandom(40).hex().encode()) for i in range(60_000))
        with pytest.raises(psycopg.errors.DiskFull) as ei:
            with c.cursor().copy("COPY full_t FROM STDIN") as cp:
                cp.write(data)
        assert ei.value.diag.sqlstate == "53100"
        assert c.execute("SELECT a, b FROM full_t").fetchall() == [(1, "kept")]


# -- statements ---------------------------------------------------------------------------


def test_binary_int4_parameter_of_the_wrong_length_is_22p03(limited):
    with limited.connect() as c:
        for raw in (b"\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00\x00\x01"):
            res = c.pgconn.exec_params(b"SELECT $1::int4", [raw], [23], [1])
            assert res.status == pq.ExecStatus.FATAL_ERROR
            assert res.error_field(pq.DiagnosticField.SQLSTATE) == b"22P03"
            assert res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) == \
                b"incorrect binary data format in bind parameter 1"
        res = c.pgconn.exec_params(b"SELECT $1::int4", [b"\x00\x00\x00\x2a"], [23], [1])
        assert res.status == pq.ExecStatus.TUPLES_OK and res.get_value(0, 0) == b"42"


def test_deep_nesting_is_54001_and_the_session_goes_on(limited):
    with limited.connect() as c:
        with pytest.raises(psycopg.errors.StatementTooComplex, match="stack depth limit exceeded"):
            c.execute("SELECT ARRAY" + "[" * 3000 + "1" + "]" * 3000)
        with pytest.raises(psycopg.errors.StatementTooComplex):  # extended protocol: Describe, Execute
            c.execute("SELECT ARRAY" + "[" * 3000 + "%s::int" + "]" * 3000, (1,))
        with pytest.raises(psycopg.errors.StatementTooComplex):  # refused before libpg_query sees it
            c.execute("SELECT " + "+".join(["1"] * 64_000))
        assert c.execute("SELECT ARRAY[[1, 2], [3, 4]]").fetchone() == ([[1, 2], [3, 4]],)


def test_client_leaving_mid_result_is_an_info_line_without_traceback(limited):
    with socket.create_connection(("127.0.0.1", limited.port), timeout=60) as sock:
        sock.sendall(_startup())
        reply = b""
        while not reply.endswith(b"Z\x00\x00\x00\x05I"):
            reply += sock.recv(65536)
        q = b"SELECT g, repeat('x', 100) FROM generate_series(1, 500000) AS g\x00"
        sock.sendall(b"Q" + struct.pack("!i", 4 + len(q)) + q)
        assert sock.recv(1024)  # the result has started
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
    assert wait_for(lambda: b"connection to client lost" in limited.log_path.read_bytes(), timeout=120)
    log = limited.log_path.read_text(errors="replace")
    assert "internal error" not in log and "Traceback" not in log
    with limited.connect() as c:
        assert c.execute("SELECT 1").fetchone() == (1,)
