"""Consensus: versioned shard state, advanced only by compare-and-set on seqno.

Each shard key maps to a sequence of (seqno, data) versions; ``compare_and_set``
writes version ``new_seqno`` only if the current head is ``expected``. This is
Materialize persist's Consensus interface, in sqlite by default.
"""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod


class Consensus(ABC):
    @abstractmethod
    def head(self, key: str) -> tuple[int, bytes] | None:
        """The latest (seqno, data) of ``key``, or None if it has none."""

    @abstractmethod
    def compare_and_set(self, key: str, expected: int | None, new_seqno: int, data: bytes) -> bool:
        """Write (new_seqno, data) if the head's seqno is ``expected`` (None: no head yet).

        Returns True on success, False if another writer got there first.
        ``new_seqno`` must be greater than ``expected``.
        """

    @abstractmethod
    def truncate(self, key: str, seqno: int) -> int:
        """Delete versions of ``key`` older than ``seqno``; returns how many were deleted."""

    @abstractmethod
    def delete_shard(self, key: str) -> None:
        """Remove every version of ``key``."""

    @abstractmethod
    def keys(self) -> list[str]:
        """Every key that has a version, sorted."""


class SqliteConsensus(Consensus):
    """Consensus in a sqlite3 database file; safe across threads of one process."""

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        # FULL: a compare-and-set that returned True survives power loss (NORMAL in WAL
        # mode may lose the last commits; an acknowledged write must not be among them).
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS consensus ("
            " shard TEXT NOT NULL, seqno INTEGER NOT NULL, data BLOB NOT NULL,"
            " PRIMARY KEY (shard, seqno))"
        )

    def head(self, key: str) -> tuple[int, bytes] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT seqno, data FROM consensus WHERE shard = ? ORDER BY seqno DESC LIMIT 1", (key,)
            ).fetchone()
        return (row[0], bytes(row[1])) if row else None

    def compare_and_set(self, key: str, expected: int | None, new_seqno: int, data: bytes) -> bool:
        if expected is not None and new_seqno <= expected:
            raise ValueError("new_seqno must advance past expected")
        with self._lock:
            c = self._conn
            c.execute("BEGIN IMMEDIATE")
            try:
                row = c.execute("SELECT max(seqno) FROM consensus WHERE shard = ?", (key,)).fetchone()
                current = row[0]
                if current != expected:
                    c.execute("ROLLBACK")
                    return False
                c.execute("INSERT INTO consensus (shard, seqno, data) VALUES (?, ?, ?)", (key, new_seqno, data))
                c.execute("COMMIT")
                return True
            except BaseException:
                c.execute("ROLLBACK")
                raise

    def truncate(self, key: str, seqno: int) -> int:
        with self._lock:
            cur = self._conn.execute("DELETE FROM consensus WHERE shard = ? AND seqno < ?", (key, seqno))
            return cur.rowcount

    def delete_shard(self, key: str) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM consensus WHERE shard = ?", (key,))

    def keys(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT DISTINCT shard FROM consensus ORDER BY 1")]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
