"""SCRAM-SHA-256 password authentication, server side (RFC 5802 and RFC 7677, as
PostgreSQL implements it: section 55.3 "SASL Authentication")."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

ITERATIONS = 4096
MECHANISM = "SCRAM-SHA-256"


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


class ScramServer:
    """One SCRAM exchange against ``password``. Call ``first`` with the client-first
    message, then ``final`` with the client-final message."""

    def __init__(self, password: str):
        self.salt = os.urandom(16)
        salted = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), self.salt, ITERATIONS)
        self.stored_key = hashlib.sha256(_hmac(salted, b"Client Key")).digest()
        self.server_key = _hmac(salted, b"Server Key")
        self.client_first_bare = ""
        self.server_first = ""
        self.nonce = ""

    def first(self, client_first: str) -> str:
        """The server-first message for ``client_first`` (``n,,n=user,r=nonce``).

        Raises ValueError for a malformed message or channel binding we do not offer."""
        gs2, _, bare = client_first.partition(",,")
        if not gs2 or gs2[0] not in "ny" or not bare:
            raise ValueError("malformed SCRAM client-first message")
        attrs = dict(kv.split("=", 1) for kv in bare.split(",") if "=" in kv)
        if "r" not in attrs:
            raise ValueError("SCRAM client nonce missing")
        self.client_first_bare = bare
        self.nonce = attrs["r"] + base64.b64encode(secrets.token_bytes(18)).decode()
        self.server_first = f"r={self.nonce},s={base64.b64encode(self.salt).decode()},i={ITERATIONS}"
        return self.server_first

    def final(self, client_final: str) -> str | None:
        """The server-final message (``v=...``) if the proof is right, else None."""
        without_proof, _, proof_part = client_final.rpartition(",p=")
        attrs = dict(kv.split("=", 1) for kv in without_proof.split(",") if "=" in kv)
        if attrs.get("r") != self.nonce or not proof_part:
            return None
        auth_message = f"{self.client_first_bare},{self.server_first},{without_proof}".encode()
        try:
            proof = base64.b64decode(proof_part)
        except ValueError:
            return None
        signature = _hmac(self.stored_key, auth_message)
        if len(proof) != len(signature):
            return None
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(hashlib.sha256(client_key).digest(), self.stored_key):
            return None
        return "v=" + base64.b64encode(_hmac(self.server_key, auth_message)).decode()
