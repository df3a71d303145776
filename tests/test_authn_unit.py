"""SCRAM's mock secrets (issue 33): a user no password logs in gets the salt and
iteration count a real role of that name would show, PostgreSQL's scram_mock_salt."""

from __future__ import annotations

import base64

from catalog.secretbox import SecretBox
from sqlfront.auth import ITERATIONS, SALT_BYTES, ScramVerifier, mock_verifier, scram_secret


def _server_first(verifier, user: str = "") -> dict[str, str]:
    first = verifier.exchange().first(f"n,,n={user},r=clientnonce")
    return dict(f.split("=", 1) for f in first.split(","))


def test_a_mock_salt_is_fixed_per_name_and_server_secret_and_differs_between_names():
    nonce = b"n" * 32
    a1, a2 = _server_first(mock_verifier("alice", nonce)), _server_first(mock_verifier("alice", nonce))
    b = _server_first(mock_verifier("bob", nonce))
    other_server = _server_first(mock_verifier("alice", b"m" * 32))
    assert a1["s"] == a2["s"] and a1["r"] != a2["r"]  # the same salt, a fresh server nonce
    assert b["s"] != a1["s"] and other_server["s"] != a1["s"]
    assert len(base64.b64decode(a1["s"])) == SALT_BYTES and a1["i"] == str(ITERATIONS)
    # shaped as a real role's secret shows: the same salt length and iteration count
    real = _server_first(ScramVerifier.from_secret(scram_secret("pw")))
    assert len(base64.b64decode(real["s"])) == SALT_BYTES and real["i"] == a1["i"]


def test_no_proof_passes_a_mock_secret():
    import scramp

    client = scramp.ScramClient(["SCRAM-SHA-256"], "alice", "any password")
    exchange = mock_verifier("alice", b"n" * 32).exchange()
    client.set_server_first(exchange.first(client.get_client_first()))
    assert exchange.final(client.get_client_final()) is None


def test_the_mock_nonce_comes_from_the_catalog_key_and_is_the_same_for_each_process(tmp_path):
    key = tmp_path / "catalog.key"
    one, two = SecretBox.at(key), SecretBox.at(key)
    assert one.derive(b"scram mock salt") == two.derive(b"scram mock salt")
    assert len(one.derive(b"scram mock salt")) == 32
    assert one.derive(b"scram mock salt") != one.derive(b"something else")
    assert one.derive(b"scram mock salt") != SecretBox.at(tmp_path / "other.key").derive(b"scram mock salt")
    assert key.read_bytes().strip() not in base64.urlsafe_b64encode(one.derive(b"scram mock salt"))
