"""The timestamp oracle: hands out write timestamps and the read timestamp.

Timestamps are milliseconds since the Unix epoch, kept strictly increasing across
restarts: the oracle durably allocates a window of ``WINDOW_MS`` ahead in sqlite and hands
out timestamps inside it without touching disk (a restart resumes above the window). A write takes ``write_ts()``,
makes its data durable, then calls ``apply_write(ts)``; reads use ``read_ts()``,
which never passes a write that has not been applied, so a read sees every write
that completed before it started (Materialize's "strict serializable" reads).

This oracle serves one process; several processes share
:class:`catalog.oracle_postgres.PostgresTimestampOracle` (:func:`open_oracle`).
"""

from __future__ import annotations

import sqlite3
import threading
import time

# the oracle's clock (oracle_postgres reads it too, so it has a module of its own)
from catalog.clock import SKEW_DIR_ENV, wall_ms  # noqa: F401

#: raise the durable high-water mark to ? (never lower it)
_RAISE_MARK = ("INSERT INTO timestamp_oracle (id, ts) VALUES (0, ?) "
               "ON CONFLICT (id) DO UPDATE SET ts = max(ts, excluded.ts)")


def fenced_write_ts(path: str, not_below: int = 0) -> int:
    """A write timestamp for a process that writes a shard without environmentd's oracle
    (``sqlfront persist-write``), from the oracle's durable high-water mark in the
    catalog database at ``path``: above the mark (so above every timestamp any oracle of
    this data directory handed out, reads included: the write never lands below a read
    already taken), above the wall clock and ``not_below`` (the shard's upper); the mark
    is raised to it in the same sqlite transaction (a restarted environmentd resumes
    above it).

    The timestamp may run up to ``TimestampOracle.WINDOW_MS`` ahead of the wall clock; the
    caller waits until the clock passes it before acknowledging (``commit_wait``), so a
    read that starts after the acknowledgement (at environmentd's read timestamp, which
    follows the clock) sees the write."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS timestamp_oracle (id INTEGER PRIMARY KEY, ts INTEGER NOT NULL)")
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute("SELECT ts FROM timestamp_oracle WHERE id = 0").fetchone()
        ts = max(wall_ms(), (row[0] if row else 0) + 1, not_below)
        conn.execute(_RAISE_MARK, (ts,))
        conn.execute("COMMIT")
        return ts
    finally:
        conn.close()


def open_oracle(url: str | None, path: str):
    """The timestamp oracle: in PostgreSQL when ``url`` is ``postgres://...`` (shared by
    several processes), else this process's own, durable in the sqlite file ``path``.
    Raises psycopg.OperationalError when the PostgreSQL server is unreachable."""
    from pgconn import is_postgres_url

    if is_postgres_url(url):
        from catalog.oracle_postgres import PostgresTimestampOracle

        return PostgresTimestampOracle(url)
    return TimestampOracle(path)


def commit_wait(ts: int) -> None:
    """Sleep until the wall clock (ms) has reached ``ts``."""
    while (wait := ts - wall_ms()) > 0:
        time.sleep(wait / 1000)


class TimestampOracle:
    #: how far ahead of the timestamps handed out the durable high-water mark runs
    WINDOW_MS = 1000

    def __init__(self, path: str):
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("CREATE TABLE IF NOT EXISTS timestamp_oracle (id INTEGER PRIMARY KEY, ts INTEGER NOT NULL)")
        row = self._conn.execute("SELECT ts FROM timestamp_oracle WHERE id = 0").fetchone()
        self._write = row[0] if row else 0
        self._read = self._write
        #: durable: no timestamp up to here was handed out by an earlier run... or this one
        self._allocated = self._write
        self._pending: set[int] = set()

    def write_ts(self) -> int:
        """Allocate a new write timestamp, durably greater than any handed out before."""
        with self._lock:
            # Above every read timestamp handed out: a read at T never misses a write at T.
            ts = max(wall_ms(), self._write + 1, self._read + 1)
            self._allocate(ts)
            self._write = ts
            self._pending.add(ts)
            return ts

    def apply_write(self, ts: int) -> None:
        """Mark the write at ``ts`` as applied (durable in persist, or abandoned)."""
        with self._lock:
            self._pending.discard(ts)
            # Reads may advance to just below the oldest write still in flight.
            frontier = min(self._pending) - 1 if self._pending else self._write
            self._read = max(self._read, frontier)

    def read_ts(self) -> int:
        """The timestamp a read should use: every applied write is at or below it, and
        no write in flight. With none in flight it follows the wall clock, as
        Materialize's table uppers advance every second."""
        with self._lock:
            if not self._pending:
                now = wall_ms()
                if now > self._read:
                    try:
                        self._allocate(now)
                        self._read = now
                    except sqlite3.OperationalError:
                        # The mark cannot rise (a full disk): reads go on at the durable
                        # mark at most, still above every applied write.
                        self._read = max(self._read, min(now, self._allocated))
            return self._read

    def observe(self, ts: int) -> None:
        """A write at ``ts`` was applied by another process (a shard's upper passed it):
        later write timestamps go above it, so this process never writes below a write
        that is already visible."""
        with self._lock:
            if ts > self._write:
                self._allocate(ts)
                self._write = ts

    def _allocate(self, ts: int) -> None:
        # Durable before handed out: a restart resumes above every timestamp used. The
        # mark only rises: another process (``fenced_write_ts``) may have raised it.
        # The mark is raised here only once durable: a failed write (a full disk) must
        # not let later timestamps pass as allocated.
        if ts > self._allocated:
            mark = ts + self.WINDOW_MS
            self._conn.execute(_RAISE_MARK, (mark,))
            self._allocated = mark

    def close(self) -> None:
        with self._lock:
            self._conn.close()
