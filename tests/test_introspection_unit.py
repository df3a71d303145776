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
