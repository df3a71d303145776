"""Sequence values (PostgreSQL 9.17 "Sequence Manipulation Functions"), durable in the
catalog's sqlite database, table ``sequence_values``.

A sequence's definition is catalog (``catalog.snapshot.Sequence``, changed only by the
Coordinator); its value is data: ``nextval`` and ``setval`` change it here, outside
the Coordinator, atomically (one sqlite ``BEGIN IMMEDIATE`` transaction per call, so
concurrent sessions, and processes sharing the file, never get the same value), and
never roll back, as in PostgreSQL. This module owns the arithmetic of nextval/setval
and their errors; per-session ``currval``/``lastval`` live on the session.
"""

from __future__ import annotations

import sqlite3
import threading

from catalog.errors import (
    SqlError, NUMERIC_VALUE_OUT_OF_RANGE, SEQUENCE_GENERATOR_LIMIT_EXCEEDED, UNDEFINED_TABLE,
)
from catalog.snapshot import Sequence

#: bounds of a sequence's type (PostgreSQL's "CREATE SEQUENCE": AS smallint | integer | bigint)
TYPE_BOUNDS = {"int2": (-32768, 32767), "int4": (-2147483648, 2147483647),
               "int8": (-9223372036854775808, 9223372036854775807)}


def next_values(q: Sequence, last: int, is_called: bool, n: int) -> tuple[list[int], int]:
    """The next ``n`` values of ``q`` after state ``(last, is_called)``, and the new last.

    Raises:
        SqlError 2200H ``nextval: reached maximum value of sequence "s" (max)`` (or
        minimum) when a value would pass a bound of a sequence without CYCLE
        (PostgreSQL's sequence.c)."""
    out = []
    v = last
    called = is_called
    for _ in range(n):
        if not called:
            called = True
        else:
            v = v + q.increment
            if q.increment > 0 and v > q.maxvalue:
                if not q.cycle:
                    raise SqlError(SEQUENCE_GENERATOR_LIMIT_EXCEEDED, f'nextval: reached maximum value of sequence "{q.name}" ({q.maxvalue})')
                v = q.minvalue
            elif q.increment < 0 and v < q.minvalue:
                if not q.cycle:
                    raise SqlError(SEQUENCE_GENERATOR_LIMIT_EXCEEDED, f'nextval: reached minimum value of sequence "{q.name}" ({q.minvalue})')
                v = q.maxvalue
        out.append(v)
    return out, v


def check_setval(q: Sequence, value: int) -> None:
    """Raises SqlError 22003 ``setval: value v is out of bounds for sequence "s" (min..max)``."""
    if not q.minvalue <= value <= q.maxvalue:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f'setval: value {value} is out of bounds for sequence "{q.name}" '
                                f'({q.minvalue}..{q.maxvalue})')


class SequenceStore:
    """The current values of every sequence. Thread-safe."""

    def __init__(self, path: str):
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")

    def _state(self, q: Sequence) -> tuple[int, bool]:
        row = self._conn.execute("SELECT last_value, is_called FROM sequence_values WHERE id = ?", (q.id,)).fetchone()
        if row is None:
            raise SqlError(UNDEFINED_TABLE, f'relation "{q.name}" does not exist')
        return row[0], bool(row[1])

    def nextval(self, q: Sequence, n: int = 1) -> list[int]:
        """Take the next ``n`` values of ``q`` (all or none), durably.

        Raises:
            SqlError 2200H at a bound (see ``next_values``); 42P01 if ``q`` was dropped."""
        with self._lock:
            c = self._conn
            c.execute("BEGIN IMMEDIATE")
            try:
                last, called = self._state(q)
                values, new_last = next_values(q, last, called, n)
                c.execute("UPDATE sequence_values SET last_value = ?, is_called = 1 WHERE id = ?", (new_last, q.id))
                c.execute("COMMIT")
            except BaseException:
                # sqlite may have rolled back already (a full disk, SQLITE_FULL): a ROLLBACK then
                # fails with "no transaction is active" and would hide the real error
                if c.in_transaction:
                    c.execute("ROLLBACK")
                raise
        return values

    def setval(self, q: Sequence, value: int, is_called: bool = True) -> int:
        """PostgreSQL's ``setval``: the next nextval returns ``value`` + increment (or
        ``value`` itself when not ``is_called``). Returns ``value``.

        Raises:
            SqlError 22003 outside the sequence's bounds; 42P01 if ``q`` was dropped."""
        check_setval(q, value)
        with self._lock:
            cur = self._conn.execute("UPDATE sequence_values SET last_value = ?, is_called = ? WHERE id = ?",
                                     (value, int(is_called), q.id))
            if cur.rowcount == 0:
                raise SqlError(UNDEFINED_TABLE, f'relation "{q.name}" does not exist')
        return value

    def state(self, q: Sequence) -> tuple[int, bool]:
        """``(last_value, is_called)`` of ``q`` now (``SELECT * FROM seq``, pg_sequences)."""
        with self._lock:
            return self._state(q)

    def create(self, q: Sequence) -> None:
        """Give ``q`` its value row now, at its start (a sequence made in a transaction
        block, before its catalog entry is committed); no-op if it has one."""
        with self._lock:
            self._conn.execute("INSERT OR IGNORE INTO sequence_values (id, last_value, is_called) VALUES (?, ?, 0)",
                               (q.id, q.start))

    def forget(self, sequence_ids: list[str]) -> None:
        """Remove the value rows of ``sequence_ids`` (dropped sequences, whose catalog
        transaction may have deleted them already, or a transaction block's sequences
        that did not commit)."""
        with self._lock:
            self._conn.executemany("DELETE FROM sequence_values WHERE id = ?", [(i,) for i in sequence_ids])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
