"""Blob: a key-value store of immutable byte objects (persist parts).

The interface is deliberately small (put, get, delete, list, url) so that an object
store can stand in for the directory implementation.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
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

    @abstractmethod
    def size(self, key: str) -> int:
        """Bytes stored under ``key`` (a directory written by Spark: its files together)."""

    @abstractmethod
    def sync(self, key: str) -> None:
        """Make an object someone else wrote under ``key`` (a replica's Spark job)
        durable before the part is published."""

    #: the process whose parts this Blob writes, named in their keys (None: not named)
    writer: str | None = None

    def new_part_key(self, shard_id: str) -> str:
        """A fresh key for a part of ``shard_id`` (never reused: parts are immutable):
        ``<shard>/<writer>-<uuid>.parquet``, or ``<shard>/<uuid>.parquet`` without a
        ``writer`` (see :func:`part_writer`)."""
        part = uuid.uuid4().hex
        return f"{shard_id}/{self.writer}-{part}.parquet" if self.writer else f"{shard_id}/{part}.parquet"

    def modified_at(self, key: str) -> float | None:
        """When ``key`` was last written (seconds since the epoch; for a directory part,
        its newest file), or None when absent. Leaked-part clean-up uses it as the part's age."""
        return None


def part_writer(key: str) -> str | None:
    """The writer a part's key names (:meth:`Blob.new_part_key`), or None when it names
    none (keys of a Blob without ``writer``, and keys made before keys named writers)."""
    name = key.rpartition("/")[2]
    writer, sep, _ = name.partition("-")
    return writer if sep and writer else None


class FileBlob(Blob):
    """A Blob in a local directory. Writes go to a temp file first, then rename (atomic)."""

    def __init__(self, root: str | os.PathLike, writer: str | None = None):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        if writer is not None:
            if "-" in writer or "/" in writer:
                raise ValueError(f"a blob writer id cannot contain '-' or '/': {writer!r}")
            self.writer = writer

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
            fsync_dir(path.parent)
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
        p = self._path(key)
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
            return
        try:
            p.unlink()
        except FileNotFoundError:
            pass

    def sync(self, key: str) -> None:
        p = self._path(key)
        files = [f for f in p.rglob("*") if f.is_file()] if p.is_dir() else [p]
        for f in files:
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if p.is_dir():
            fsync_dir(p)
        fsync_dir(p.parent)

    def size(self, key: str) -> int:
        p = self._path(key)
        if p.is_dir():
            return sum(f.stat().st_size for f in p.rglob("*.parquet"))
        return p.stat().st_size

    def modified_at(self, key: str) -> float | None:
        p = self._path(key)
        try:
            stamps = [p.stat().st_mtime] + ([f.stat().st_mtime for f in p.rglob("*")] if p.is_dir() else [])
        except FileNotFoundError:
            return None
        return max(stamps)

    def list_keys(self, prefix: str = "") -> list[str]:
        # Keys are "<shard>/<part>": a part is a file or a directory Spark wrote.
        out = []
        for shard in self.root.iterdir():
            if not shard.is_dir():
                continue
            for p in shard.iterdir():
                if not p.name.startswith(".tmp-"):
                    key = p.relative_to(self.root).as_posix()
                    if key.startswith(prefix):
                        out.append(key)
        return sorted(out)

    def url(self, key: str) -> str:
        return self._path(key).as_uri()


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable (POSIX: the directory entry is only
    durable once the directory itself is fsynced)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
