"""Secrets the catalog keeps (a REMOTE replica's TOKEN) are encrypted at rest, with
``cryptography``'s Fernet (AES-128-CBC and HMAC-SHA256, a random IV per value), under a
key in a file of the data directory (``catalog.key``, mode 0600) that only environmentd
reads: a copy of catalog.db, or a backup of it, does not give the token away.

SCRAM secrets of role passwords need none of this: they are already one-way hashes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

#: marks an encrypted value in the catalog; a value without it is clear text, as versions
#: before encryption wrote it
PREFIX = "fernet:"


class SecretBox:
    """Encrypts and decrypts the catalog's secrets with one Fernet key."""

    def __init__(self, key: bytes):
        self._fernet = Fernet(key)
        self._key = base64.urlsafe_b64decode(key)

    def derive(self, purpose: bytes) -> bytes:
        """A 32-byte secret for ``purpose`` (HMAC-SHA256 of it under this box's key): the
        server's other secrets come from the one key file, each its own (knowing one
        gives neither the key nor another), and every process sharing the key agrees."""
        return hmac.new(self._key, b"sqlfront " + purpose, hashlib.sha256).digest()

    @classmethod
    def at(cls, path: Path) -> SecretBox:
        """The box whose key is in file ``path``; a missing file gets a new random key
        (created 0600 and exclusively, so two processes never write two keys).

        Raises:
            OSError if the file cannot be read or made; ValueError for a file that
            holds no Fernet key."""
        path = Path(path)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return cls(path.read_bytes().strip())
        with os.fdopen(fd, "wb") as f:
            f.write(Fernet.generate_key() + b"\n")
            f.flush()
            os.fsync(f.fileno())
        return cls(path.read_bytes().strip())

    def seal(self, text: str | None) -> str | None:
        """``text`` encrypted, as stored (``fernet:...``); None stays None."""
        if text is None:
            return None
        return PREFIX + self._fernet.encrypt(text.encode()).decode()

    def unseal(self, stored: str | None) -> str | None:
        """The clear text of a stored value (clear text from an older version is
        returned as it is).

        Raises:
            ValueError if the value was encrypted under another key or was altered."""
        if stored is None or not stored.startswith(PREFIX):
            return stored
        try:
            return self._fernet.decrypt(stored[len(PREFIX):].encode()).decode()
        except InvalidToken:
            raise ValueError("a catalog secret cannot be decrypted with this catalog key (DATA_DIR/catalog.key or "
                             "--catalog-key-file: processes that share a catalog must share its key)") from None

    @staticmethod
    def is_sealed(stored: str | None) -> bool:
        return stored is not None and stored.startswith(PREFIX)
