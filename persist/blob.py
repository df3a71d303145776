"""Blob: a key-value store of immutable byte objects (persist parts).

The interface is deliberately small (put, get, delete, list, url) so that an object
store can stand in for the directory implementation.
"""

from __future__ import annotations

import os
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path


class Blob(ABC):
    """Immutable objects addressed by key (``"<shard>/<part>.parquet"``)."""

    @abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` atomically: readers see all of it or nothing."""

    @abstractmethod
    def get(self, key: str) -> bytes | None:
        """The bytes under ``key``, or None if absent."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove ``key``; absent keys are ignored."""

    @abstractmethod
    def list_keys(self, prefix: str = "") -> list[str]:
        """Keys that start with ``prefix``, sorted."""

    @abstractmethod
    def url(self, key: str) -> str:
        """A URL for ``key`` that both Spark and pyarrow can read (``file:///...``)."""


class FileBlob(Blob):
    """A Blob in a local directory. Writes go to a temp file first, then rename (atomic)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        p = (self.root / key).resolve()
        if self.root not in p.parents:
            raise ValueError(f"blob key escapes the blob root: {key!r}")
        return p

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            pass

    def list_keys(self, prefix: str = "") -> list[str]:
        out = []
        for p in self.root.rglob("*"):
            if p.is_file() and not p.name.startswith(".tmp-"):
                key = p.relative_to(self.root).as_posix()
                if key.startswith(prefix):
                    out.append(key)
        return sorted(out)

    def url(self, key: str) -> str:
        return self._path(key).as_uri()
