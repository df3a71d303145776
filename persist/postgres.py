"""Consensus in PostgreSQL: what several environmentd processes share (Materialize's
``PostgresConsensus``, persist's ``--persist-consensus-url postgres://...``).

Table (created if missing, by whichever process comes first)::

    consensus (shard text, seqno bigint, data bytea, PRIMARY KEY (shard, seqno))

``compare_and_set`` is one ``INSERT ... SELECT ... WHERE <head is expected>`` in a
SERIALIZABLE transaction: two processes that both saw head ``e`` and insert different
seqnos read and write the same index range of the shard, so PostgreSQL's serializable
snapshot isolation commits at most one of them (the other fails with 40001, answered as
False: "another writer got there first"). Same seqno: the primary key settles it.

Behaviour is identical to :class:`persist.consensus.SqliteConsensus` (the persist unit
tests run against both). Connections come from a small pool (one per thread that is in a
call at once); a connection that failed is dropped, not reused.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors

from persist.consensus import Consensus

#: URL schemes that name a PostgreSQL server (libpq accepts both)
POSTGRES_SCHEMES = ("postgres", "postgresql")


def is_postgres_url(url: str | None) -> bool:
    """True if ``url`` is a ``postgres://`` or ``postgresql://`` URL."""
    return bool(url) and urlsplit(url).scheme in POSTGRES_SCHEMES


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``****`` (for logs and error messages):
    ``postgres://u:secret@h:5432/db`` -> ``postgres://u:****@h:5432/db``. A password in
    the query string (``?password=...``) is redacted too."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":****"
        netloc = f"{userinfo}@{hostport}"
    query = "&".join(("password=****" if q.lower().startswith("password=") else q)
                     for q in parts.query.split("&")) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class ConnectionPool:
    """Autocommit psycopg connections to ``url``, handed out one per caller at a time
    and kept (at most ``max_idle``) for the next. ``setup(conn)`` runs once on each new
    connection (creating tables). Thread-safe."""

    def __init__(self, url: str, setup=None, max_idle: int = 8, connect_timeout: float = 10):
        self.url = url
        self._setup = setup
        self._idle: list[psycopg.Connection] = []
        self._lock = threading.Lock()
        self._max_idle = max_idle
        self._timeout = connect_timeout
        self._closed = False

    @contextmanager
    def connection(self):
        """A connection for the ``with`` block. Raises psycopg.OperationalError when the
        server cannot be reached (the message names host and port, never the password)."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=self._timeout,
                                   application_name="sqlfront")
            if self._setup is not None:
                self._setup(conn)
        try:
            yield conn
        except psycopg.OperationalError:
            conn.close()  # broken or in an unknown state: never reuse
            raise
        except BaseException:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.close()
            else:
                self._put(conn)
            raise
        else:
            self._put(conn)

    def _put(self, conn: psycopg.Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._max_idle and not conn.closed:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()


def create_once(conn: psycopg.Connection, ddl: list[str]) -> None:
    """Run ``ddl`` (``CREATE ... IF NOT EXISTS``) under a transaction-level advisory lock,
    so processes starting at once do not race in PostgreSQL's catalog (two concurrent
    ``CREATE TABLE IF NOT EXISTS`` can fail with a unique violation)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('sqlfront-ddl', 0))")
        for stmt in ddl:
            conn.execute(stmt)


_DDL = ["CREATE TABLE IF NOT EXISTS consensus ("
        " shard text NOT NULL, seqno bigint NOT NULL, data bytea NOT NULL,"
        " PRIMARY KEY (shard, seqno))"]

_CAS = ("INSERT INTO consensus (shard, seqno, data) SELECT %(shard)s, %(new)s, %(data)s"
        " WHERE (SELECT max(seqno) FROM consensus WHERE shard = %(shard)s) IS NOT DISTINCT FROM %(expected)s"
        " ON CONFLICT DO NOTHING")


class PostgresConsensus(Consensus):
    """Consensus in the ``consensus`` table of the PostgreSQL database at ``url``
    (``postgres://user[:password]@host:port/db``); safe across threads and processes.

    Raises psycopg.OperationalError from any call when the server is unreachable (the
    caller's retry decides; nothing is half-written: every call is one transaction)."""

    def __init__(self, url: str):
        self.url = url
        self._pool = ConnectionPool(url, setup=lambda c: create_once(c, _DDL))
        with self._pool.connection():
            pass  # connect now: a wrong URL fails at startup, not at the first write

    def head(self, key: str) -> tuple[int, bytes] | None:
        with self._pool.connection() as c:
            row = c.execute("SELECT seqno, data FROM consensus WHERE shard = %s ORDER BY seqno DESC LIMIT 1",
                            (key,)).fetchone()
        return (row[0], bytes(row[1])) if row else None

    def compare_and_set(self, key: str, expected: int | None, new_seqno: int, data: bytes) -> bool:
        if expected is not None and new_seqno <= expected:
            raise ValueError("new_seqno must advance past expected")
        with self._pool.connection() as c:
            try:
                with c.transaction():
                    c.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                    cur = c.execute(_CAS, {"shard": key, "new": new_seqno, "data": data, "expected": expected})
                    return cur.rowcount == 1
            except (errors.SerializationFailure, errors.UniqueViolation):
                return False  # a concurrent compare-and-set of this shard won

    def truncate(self, key: str, seqno: int) -> int:
        with self._pool.connection() as c:
            return c.execute("DELETE FROM consensus WHERE shard = %s AND seqno < %s", (key, seqno)).rowcount

    def delete_shard(self, key: str) -> None:
        with self._pool.connection() as c:
            c.execute("DELETE FROM consensus WHERE shard = %s", (key,))

    def keys(self) -> list[str]:
        # COLLATE "C": byte order, as sqlite sorts (the database's collation may differ)
        with self._pool.connection() as c:
            return [r[0] for r in c.execute('SELECT DISTINCT shard COLLATE "C" FROM consensus ORDER BY 1')]

    def close(self) -> None:
        self._pool.close()
