"""The timestamp oracle: hands out write timestamps and the read timestamp.

Timestamps are milliseconds since the Unix epoch, kept strictly increasing across
restarts: the oracle durably allocates a window of ``WINDOW_MS`` ahead in sqlite and hands
out timestamps inside it without touching disk (a restart resumes above the window). A write takes ``write_ts()``,
makes its data durable, then calls ``apply_write(ts)``; reads use ``read_ts()``,
which never passes a write that has not been applied, so a read sees every write
that completed before it started (Materialize's "strict serializable" reads).
"""

from __future__ import annotations

import sqlite3
import threading
import time


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
            ts = max(int(time.time() * 1000), self._write + 1, self._read + 1)
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
                now = int(time.time() * 1000)
                if now > self._read:
                    self._allocate(now)
                    self._read = now
            return self._read

    def _allocate(self, ts: int) -> None:
        # Durable before handed out: a restart resumes above every timestamp used.
        if ts > self._allocated:
            self._allocated = ts + self.WINDOW_MS
            self._conn.execute("INSERT OR REPLACE INTO timestamp_oracle (id, ts) VALUES (0, ?)", (self._allocated,))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
