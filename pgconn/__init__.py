"""PostgreSQL connections for the shared store of several environmentd processes:
recognising and redacting ``postgres://`` URLs, a small pool of autocommit connections,
and ``CREATE ... IF NOT EXISTS`` run once under an advisory lock.

What persist (Consensus), the catalog (log, timestamp oracle, cluster leases) and
sqlfront share, so none of them imports another for it. Imports nothing of ours
(psycopg only): it sits below ``persist`` in ARCHITECTURE.md's table, which every
package may import.
"""

from __future__ import annotations

import select
import threading
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg

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
    connection (creating tables). An idle connection the server has closed meanwhile (a
    restart: PostgreSQL tells its clients "terminating connection due to administrator
    command", 57P01) is dropped when taken, not handed out to fail. Thread-safe."""

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
        while conn is not None and _closed_by_server(conn):
            conn.close()
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


def _closed_by_server(conn: psycopg.Connection) -> bool:
    """Whether an idle connection has something to read: an idle autocommit connection is
    sent nothing unasked but its server's goodbye (an ErrorResponse, then EOF). A false
    alarm (an asynchronous ParameterStatus) costs one reconnect."""
    try:
        return bool(select.select([conn.fileno()], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        return True


def create_once(conn: psycopg.Connection, ddl: list[str]) -> None:
    """Run ``ddl`` (``CREATE ... IF NOT EXISTS``) under a transaction-level advisory lock,
    so processes starting at once do not race in PostgreSQL's catalog (two concurrent
    ``CREATE TABLE IF NOT EXISTS`` can fail with a unique violation)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('sqlfront-ddl', 0))")
        for stmt in ddl:
            conn.execute(stmt)
