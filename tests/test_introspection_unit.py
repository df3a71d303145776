"""Pure pieces of issue 29: statement redaction and typing (sqlfront.activity) and the
console's HTTP Basic check against pgwire's password rules (sqlfront.console.app)."""

from __future__ import annotations

import base64
from types import SimpleNamespace

from catalog.snapshot import Role
from sqlfront.activity import redact, statement_type
from sqlfront.auth import ScramVerifier
from sqlfront.console.app import _Credentials


def test_redact_replaces_every_literal_and_keeps_the_rest():
    assert redact("SELECT 'a''b', 42, 1.5e3, x'ff' FROM t WHERE name = 'ünï' AND id = $1") == \
        "SELECT '<REDACTED>', '<REDACTED>', '<REDACTED>', '<REDACTED>' FROM t WHERE name = '<REDACTED>' AND id = $1"
    assert redact("SELECT 'unterminated") == "'<REDACTED>'"  # nothing of a text the scanner rejects shows


def test_statement_type_in_materializes_snake_case():
    assert [statement_type(s) for s in ("select 1", "CREATE TABLE t (a int)", "  ", "SHOW clusters")] == \
        ["select", "create_table", None, "show_clusters"]


def _env(roles: dict[str, Role]):
    snap = SimpleNamespace(role_by_name=roles.get)
    return SimpleNamespace(snapshot=snap, config=SimpleNamespace(auto_create_roles=False),
                           login_role=lambda name: roles[name].id)


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_console_needs_the_password_pgwire_needs():
    creds = _Credentials(_env({"materialize": Role("u1", "materialize", login=True, superuser=True)}),
                         ScramVerifier("s3cret"))
    assert creds.role_id(_basic("materialize", "s3cret")) == "u1"
    assert creds.role_id(_basic("materialize", "s3cret")) == "u1"  # remembered
    assert creds.role_id(_basic("materialize", "wrong")) is None
    assert creds.role_id(_basic("nobody", "s3cret")) is None
    assert creds.role_id(None) is None
    assert creds.role_id("Basic !!!") is None


def test_console_without_a_server_password_trusts_as_pgwire_does():
    creds = _Credentials(_env({"materialize": Role("u1", "materialize", login=True, superuser=True)}), None)
    assert creds.role_id(None) == "u1"


class _Proc:
    def __init__(self, ended):
        self.ended = ended

    def alive(self):
        return self.ended is None

    def exit_reason(self):
        return self.ended


def test_replica_status_reason_is_how_its_process_ended():
    from sqlfront.replica_monitor import ReplicaMonitor

    oom = SimpleNamespace(id="u7", status="unhealthy", process=_Proc(("exit code 52", True)))
    killed = SimpleNamespace(id="u8", status="unhealthy", process=_Proc(("killed by signal 9", False)))
    starting = SimpleNamespace(id="u9", status="unhealthy", process=_Proc(None))
    # its server answers, but its executors cannot read persist Blob (spark_exec.blob_probe)
    no_blob = SimpleNamespace(id="u10", status="unhealthy", process=_Proc(None), failure="cannot read Blob")
    for h in (oom, killed, starting):
        h.failure = None
    mon = ReplicaMonitor(lambda: [(oom, None), (killed, None), (starting, None), (no_blob, None)])
    for h in (oom, killed, starting, no_blob):
        mon.status_changed(h, healthy=False)
    assert [r[:4] for r in mon.status_rows()] == [
        ("u10", 0, "offline", "cannot read Blob"), ("u7", 0, "offline", "oom-killed"),
        ("u8", 0, "offline", "killed by signal 9"), ("u9", 0, "offline", None)]
    starting.status = "healthy"
    mon.status_changed(starting, healthy=True)
    assert mon.status_rows()[3][:4] == ("u9", 0, "online", None)


def test_console_http_answers_401_without_the_password_and_serves_with_it():
    import socket
    import urllib.error
    import urllib.request

    from sqlfront.console import ConsoleServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = _env({"materialize": Role("u1", "materialize", login=True, superuser=True)})
    console = ConsoleServer(env, "127.0.0.1", port, scram=ScramVerifier("s3cret")).start()
    try:
        url = f"http://127.0.0.1:{port}/"
        try:
            urllib.request.urlopen(url, timeout=10)
            raise AssertionError("served without a password")
        except urllib.error.HTTPError as e:
            assert e.code == 401 and e.headers["WWW-Authenticate"].startswith("Basic")
        req = urllib.request.Request(url, headers={"Authorization": _basic("materialize", "s3cret")})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200 and b"sqlfront console" in r.read()
    finally:
        console.stop()


def test_console_beyond_loopback_needs_a_password(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    out = subprocess.run([sys.executable, "-m", "sqlfront.cli", "serve", "--listen", "127.0.0.1:1",
                          "--console-listen", "0.0.0.0:1", "--data-dir", str(tmp_path / "d")],
                         cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "refusing to serve the console on 0.0.0.0:1" in out.stderr
    assert not (tmp_path / "d").exists()
