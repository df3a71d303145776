"""Who may log in (issue 33, items 2 and 8), over the wire: the server password
(``--password-file``) is no way to become a superuser, reserved and empty user names are
refused, and a login never makes a role unless the server runs with
``--auto-create-roles`` (a longer name than 63 bytes is cut to 63, as in PostgreSQL)."""

from __future__ import annotations

import base64
import socket
import struct
import uuid

import psycopg
import pytest

from server import Server, error_fields, read_message, startup_packet

SERVER_PASSWORD = "server-pw"


def _startup_error(port: int, user: str) -> dict[str, str] | None:
    """The ErrorResponse fields a startup as ``user`` gets before any authentication
    request, or None when the server asks for a password or accepts the user."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(startup_packet(user))
        kind, body = read_message(sock)
        return error_fields(body) if kind == b"E" else None


def _login(port: int, user: str, password: str | None) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=port, user=user, password=password, dbname="materialize",
                           autocommit=True, connect_timeout=10)


def _refused(port: int, user: str, password: str | None) -> str:
    with pytest.raises(psycopg.OperationalError) as e:
        _login(port, user, password).close()
    return str(e.value)


@pytest.fixture(scope="module")
def pw_server(tmp_path_factory):
    """A server with a password and its defaults otherwise (no role is made at login);
    nothing here needs a replica."""
    d = tmp_path_factory.mktemp("authn")
    (d / "password").write_text(SERVER_PASSWORD + "\n")
    s = Server(d / "mzdata", "--password-file", str(d / "password"),
               password=SERVER_PASSWORD).start(wait_replicas=False)
    yield s
    s.stop()


def _roles(conn) -> int:
    return conn.execute("SELECT count(*) FROM mz_roles").fetchone()[0]


def test_reserved_and_empty_user_names_are_refused_before_any_password(pw_server):
    for user in ("", "mz_system", "mz_support", "mz_anything", "pg_monitor", "public", "PUBLIC"):
        err = _startup_error(pw_server.port, user)
        assert err is not None and err["S"] == "FATAL" and err["C"] == "28000", (user, err)
    msg = _refused(pw_server.port, "mz_system", SERVER_PASSWORD)
    assert "reserved" in msg, msg


def test_the_server_password_makes_no_one_a_superuser(pw_server):
    port, n = pw_server.port, uuid.uuid4().hex[:6]
    su, plain = f"au_su_{n}", f"au_plain_{n}"
    with pw_server.connect() as admin:
        admin.execute(f"CREATE ROLE {su} LOGIN SUPERUSER")
        admin.execute(f"CREATE ROLE {plain} LOGIN")
        # a superuser without a password of its own: the shared server password is not it
        assert "password authentication failed" in _refused(port, su, SERVER_PASSWORD)
        # a plain role without one logs in with the server password, as no superuser
        with _login(port, plain, SERVER_PASSWORD) as c:
            assert c.execute("SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user"
                             ).fetchone() == (plain, False)
        admin.execute(f"ALTER ROLE {su} PASSWORD 'su-own'")
        with _login(port, su, "su-own") as c:
            assert c.execute("SELECT current_user").fetchone() == (su,)
        assert "password authentication failed" in _refused(port, su, SERVER_PASSWORD)
        admin.execute(f"DROP ROLE {su}")
        admin.execute(f"DROP ROLE {plain}")


def test_the_bootstrap_role_keeps_the_server_password_until_it_has_its_own(pw_server):
    port = pw_server.port
    with pw_server.connect() as admin:
        assert admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (True,)
        admin.execute("ALTER ROLE materialize PASSWORD 'bootstrap-own'")
    pw_server.password = "bootstrap-own"  # for the module's later connections
    assert "password authentication failed" in _refused(port, "materialize", SERVER_PASSWORD)
    for user in ("", "mz_system"):  # and no other name reaches a superuser with it
        assert _startup_error(port, user)["C"] == "28000"
    with _login(port, "materialize", "bootstrap-own") as c:
        assert c.execute("SELECT current_user").fetchone() == ("materialize",)


def test_an_unknown_user_is_refused_and_no_role_is_made(pw_server, server):
    with pw_server.connect() as admin:
        before = _roles(admin)
        # with a password: the exchange runs and fails, as for a wrong password
        assert "password authentication failed" in _refused(pw_server.port, f"au_new_{uuid.uuid4().hex[:6]}",
                                                            SERVER_PASSWORD)
        assert _roles(admin) == before
    with server.connect() as admin:  # trusted: PostgreSQL's "role does not exist"
        before = _roles(admin)
        for _ in range(300):
            err = _startup_error(server.port, f"au_{uuid.uuid4().hex}")
            assert err is not None and err["C"] == "28000" and "does not exist" in err["M"], err
        assert _roles(admin) == before


def _server_first(port: int, user: str) -> dict[str, str]:
    """The fields of the SCRAM server-first message (``r``, ``s`` salt, ``i`` iterations)
    a startup as ``user`` gets: what a client sees before it has to prove anything."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(startup_packet(user))
        kind, body = read_message(sock)
        assert kind == b"R" and body[:4] == struct.pack("!i", 10), (kind, body)  # AuthenticationSASL
        first = b"n,,n=,r=clientnonce"
        payload = b"SCRAM-SHA-256\x00" + struct.pack("!i", len(first)) + first
        sock.sendall(b"p" + struct.pack("!i", 4 + len(payload)) + payload)
        kind, body = read_message(sock)
        assert kind == b"R" and body[:4] == struct.pack("!i", 11), (kind, body)  # AuthenticationSASLContinue
        return dict(f.split("=", 1) for f in body[4:].decode().split(","))


def test_an_unknown_user_shows_the_salt_and_iterations_a_role_would(pw_server):
    """PostgreSQL's mock salt (auth-scram.c): fixed per name, different between names,
    of a real secret's length and iteration count, so the server-first message does not
    tell a role that exists from one that does not."""
    port, n = pw_server.port, uuid.uuid4().hex[:6]
    ghost, other = f"au_ghost_{n}", f"au_other_{n}"
    with pw_server.connect() as admin:
        admin.execute(f"CREATE ROLE au_real_{n} LOGIN PASSWORD 'real-pw'")
        try:
            real = _server_first(port, f"au_real_{n}")
        finally:
            admin.execute(f"DROP ROLE au_real_{n}")
    g1, g2, o = _server_first(port, ghost), _server_first(port, ghost), _server_first(port, other)
    assert g1["s"] == g2["s"] != o["s"]
    assert {len(base64.b64decode(x["s"])) for x in (real, g1, o)} == {16}  # PostgreSQL's SCRAM_DEFAULT_SALT_LEN
    assert real["i"] == g1["i"] == o["i"] == "4096"
    assert "password authentication failed" in _refused(port, ghost, SERVER_PASSWORD)


def test_names_beyond_63_bytes_are_truncated_with_a_notice_and_log_in_as_truncated(server, conn):
    """PostgreSQL's identifier rule (scan.l truncate_identifier): a role, table or cluster
    name past 63 bytes is cut at a character boundary, with NOTICE 42622; a startup
    packet's user name is cut the same way, so the long name logs in as the role that
    CREATE ROLE made of it."""
    notices = []

    def on_notice(d):  # a Diagnostic is read in the handler: its result is freed after
        notices.append((d.sqlstate, d.severity_nonlocalized, d.message_primary))

    conn.add_notice_handler(on_notice)
    n = uuid.uuid4().hex[:6]
    long_role = f"au_long_{n}_" + "r" * 100
    role = long_role[:63]
    renamed = f"au_ren_{n}_" + "é" * 40  # cut to 31 é: 62 bytes, not half a character
    table = f"au_tbl_{n}_" + "t" * 100
    try:
        conn.execute(f"CREATE ROLE {long_role.upper()} LOGIN")  # folded to lower case, then cut
        assert conn.execute("SELECT count(*) FROM mz_roles WHERE name = %s", (role,)).fetchone() == (1,)
        with _login(server.port, long_role, None) as c:
            assert c.execute("SELECT current_user").fetchone() == (role,)
        conn.execute(f'ALTER ROLE {long_role} RENAME TO "{renamed}"')
        cut = renamed.encode()[:63].decode("utf-8", "ignore")
        assert len(cut.encode()) == 62
        assert conn.execute("SELECT name FROM mz_roles WHERE name LIKE %s", (f"au_ren_{n}%",)).fetchone() == (cut,)
        conn.execute(f'DROP ROLE "{cut}"')
        conn.execute(f"CREATE TABLE {table} (a int)")
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
        assert conn.execute("SELECT name FROM mz_tables WHERE name LIKE %s", (f"au_tbl_{n}%",)).fetchone() \
            == (table[:63],)
    finally:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"DROP ROLE IF EXISTS {role}")
        conn.remove_notice_handler(on_notice)
    got = [d for d in notices if d[0] == "42622"]
    assert got[0] == ("42622", "NOTICE", f'identifier "{long_role}" will be truncated to "{role}"')
    assert ("42622", "NOTICE", f'identifier "{renamed}" will be truncated to "{cut}"') in got
    assert ("42622", "NOTICE", f'identifier "{table}" will be truncated to "{table[:63]}"') in got
    # a 9,000-byte user name is cut too: no such role, by its 63-byte name
    err = _startup_error(server.port, "x" * 9000)
    assert err is not None and err["C"] == "28000" and f'role "{"x" * 63}" does not exist' in err["M"], err
    conn.execute("SET client_min_messages = warning")
    try:
        notices.clear()
        conn.add_notice_handler(on_notice)
        conn.execute(f"SELECT 1 AS {table}")
        assert notices == []
    finally:
        conn.remove_notice_handler(on_notice)
        conn.execute("RESET client_min_messages")


def test_auto_create_roles_makes_plain_roles_for_names_it_allows(tmp_path):
    s = Server(tmp_path / "mzdata", "--auto-create-roles").start(wait_replicas=False)
    try:
        name = "au_" + "é" * 30  # 63 bytes: the longest name
        with _login(s.port, name, None) as c:
            assert c.execute("SELECT current_user").fetchone() == (name,)
        with s.connect() as admin:
            assert admin.execute("SELECT rolcanlogin, rolsuper FROM pg_roles WHERE rolname = %s",
                                 (name,)).fetchone() == (True, False)
            before = _roles(admin)
            with _login(s.port, name + "x" * 50, None) as c:  # cut to 63 bytes: the same role
                assert c.execute("SELECT current_user").fetchone() == (name,)
            assert _startup_error(s.port, "mz_system")["C"] == "28000"
            assert _startup_error(s.port, "pg_new")["C"] == "28000"
            assert _roles(admin) == before
    finally:
        s.stop()
