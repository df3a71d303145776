"""Consensus: versioned shard state, advanced only by compare-and-set on seqno.

Each shard key maps to a sequence of (seqno, data) versions; ``compare_and_set``
writes version ``new_seqno`` only if the current head is ``expected``. This is
Materialize persist's Consensus interface, in sqlite by default; in PostgreSQL
(:mod:`persist.postgres`) when several processes share it (``persist.open_consensus``
picks one by URL: it sits above both, so this module imports neither).
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

    @abstractmethod
    def claim(self, name: str, value: str) -> str:
        """Record ``value`` under ``name`` unless a value is recorded there already, and
        return the recorded one: the first claim wins, for good. Kept apart from the shards
        (``keys`` never lists it): which Blob this Consensus goes with (``persist.binding``)."""


class SqliteConsensus(Consensus):
    """Consensus in a sqlite3 database file; safe across threads of one process."""

    #: the WAL's size after a checkpoint, at most (sqlite's journal_size_limit)
    WAL_LIMIT_BYTES = 4 << 20

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        # FULL: a compare-and-set that returned True survives power loss (NORMAL in WAL
        # mode may lose the last commits; an acknowledged write must not be among them).
        self._conn.execute("PRAGMA synchronous=FULL")
        # a checkpoint truncates the WAL back to this size: without a limit it stays at
        # its largest (tens of MB under small writes of states full of inline parts)
        self._conn.execute(f"PRAGMA journal_size_limit={self.WAL_LIMIT_BYTES}")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS consensus ("
            " shard TEXT NOT NULL, seqno INTEGER NOT NULL, data BLOB NOT NULL,"
            " PRIMARY KEY (shard, seqno))"
        )
        self._conn.execute("CREATE TABLE IF NOT EXISTS consensus_claims (name TEXT PRIMARY KEY, value TEXT NOT NULL)")

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
                # sqlite may have rolled back already (a full disk, SQLITE_FULL): a ROLLBACK then
                # fails with "no transaction is active" and would hide the real error
                if c.in_transaction:
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

    def claim(self, name: str, value: str) -> str:
        with self._lock:
            self._conn.execute("INSERT OR IGNORE INTO consensus_claims (name, value) VALUES (?, ?)", (name, value))
            return self._conn.execute("SELECT value FROM consensus_claims WHERE name = ?", (name,)).fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class ObservedConsensus(Consensus):
    """A Consensus that reports what goes through it: ``on_read()`` after every
    :meth:`head` (the Consensus read load the pubsub seed wants to cut), and
    ``on_set(key, seqno, data)`` after every compare-and-set that won (what a process
    pushes to PubSub). Callback errors are the callbacks' own business: they must not
    raise (a won compare-and-set is durable whatever they do)."""

    def __init__(self, inner: Consensus, on_set, on_read):
        self.inner = inner
        self._on_set = on_set
        self._on_read = on_read

    def head(self, key: str) -> tuple[int, bytes] | None:
        self._on_read()
        return self.inner.head(key)

    def compare_and_set(self, key: str, expected: int | None, new_seqno: int, data: bytes) -> bool:
        won = self.inner.compare_and_set(key, expected, new_seqno, data)
        if won:
            self._on_set(key, new_seqno, data)
        return won

    def truncate(self, key: str, seqno: int) -> int:
        return self.inner.truncate(key, seqno)

    def delete_shard(self, key: str) -> None:
        self.inner.delete_shard(key)

    def keys(self) -> list[str]:
        return self.inner.keys()

    def claim(self, name: str, value: str) -> str:
        return self.inner.claim(name, value)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()
