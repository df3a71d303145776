"""Sequence values in the catalog's PostgreSQL database (``--catalog-url postgres://...``),
shared by every environmentd of the catalog: ``nextval`` through any of them never hands
out a value another one handed out (serial and identity columns included).

Table (created if missing)::

    sequence_values (id text PRIMARY KEY, last_value bigint, is_called boolean)

A row is made on a sequence's first use, at its definition's start (the catalog log
carries definitions only: values are data, changed outside the Coordinator). ``nextval``
is one transaction that locks the row (``SELECT ... FOR UPDATE``), so nextvals from
several processes run one after the other; the arithmetic is
``catalog.sequences.next_values``, the one rule for both stores. Rows of dropped
sequences are deleted by :meth:`PostgresSequenceStore.forget` (ids are never reused, so a
leftover row is only a few bytes).

Interface: that of ``catalog.sequences.SequenceStore``.
"""

from __future__ import annotations

from catalog.sequences import check_setval, next_values
from catalog.snapshot import Sequence

_DDL = ["CREATE TABLE IF NOT EXISTS sequence_values ("
        " id text PRIMARY KEY, last_value bigint NOT NULL, is_called boolean NOT NULL)"]

_CREATE = "INSERT INTO sequence_values (id, last_value, is_called) VALUES (%s, %s, false) ON CONFLICT DO NOTHING"
_LOCK = "SELECT last_value, is_called FROM sequence_values WHERE id = %s FOR UPDATE"


class PostgresSequenceStore:
    """The current values of every sequence, in the PostgreSQL database at ``url``.
    Thread-safe (a connection per call from a pool).

    Raises psycopg.OperationalError when the server is unreachable (nothing changed:
    every call is one transaction)."""

    def __init__(self, url: str):
        from pgconn import ConnectionPool, create_once

        self._pool = ConnectionPool(url, setup=lambda c: create_once(c, _DDL))
        with self._pool.connection():
            pass  # a wrong URL fails at startup

    def nextval(self, q: Sequence, n: int = 1) -> list[int]:
        """Take the next ``n`` values of ``q`` (all or none), durably, unique across
        every process of the catalog.

        Raises:
            SqlError 2200H at a bound (``catalog.sequences.next_values``)."""
        with self._pool.connection() as c, c.transaction():
            row = c.execute(_LOCK, (q.id,)).fetchone()
            if row is None:
                c.execute(_CREATE, (q.id, q.start))
                row = c.execute(_LOCK, (q.id,)).fetchone()
            values, new_last = next_values(q, row[0], row[1], n)
            c.execute("UPDATE sequence_values SET last_value = %s, is_called = true WHERE id = %s",
                      (new_last, q.id))
        return values

    def setval(self, q: Sequence, value: int, is_called: bool = True) -> int:
        """PostgreSQL's ``setval`` (see ``SequenceStore.setval``). Returns ``value``.

        Raises:
            SqlError 22003 outside the sequence's bounds."""
        check_setval(q, value)
        with self._pool.connection() as c:
            c.execute("INSERT INTO sequence_values (id, last_value, is_called) VALUES (%s, %s, %s)"
                      " ON CONFLICT (id) DO UPDATE SET last_value = EXCLUDED.last_value,"
                      " is_called = EXCLUDED.is_called", (q.id, value, is_called))
        return value

    def state(self, q: Sequence) -> tuple[int, bool]:
        """``(last_value, is_called)`` of ``q`` now (its start, not called, before first use)."""
        with self._pool.connection() as c:
            row = c.execute("SELECT last_value, is_called FROM sequence_values WHERE id = %s", (q.id,)).fetchone()
        return (row[0], bool(row[1])) if row else (q.start, False)

    def create(self, q: Sequence) -> None:
        """Give ``q`` its value row now, at its start (see ``SequenceStore.create``)."""
        with self._pool.connection() as c:
            c.execute(_CREATE, (q.id, q.start))

    def forget(self, sequence_ids: list[str]) -> None:
        """Delete the values of dropped sequences (or of a block's uncommitted ones)."""
        if sequence_ids:
            with self._pool.connection() as c:
                c.execute("DELETE FROM sequence_values WHERE id = ANY(%s)", (list(sequence_ids),))

    def close(self) -> None:
        self._pool.close()
