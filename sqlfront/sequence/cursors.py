"""Cursors: DECLARE, FETCH, MOVE, CLOSE, and the session's rows of ``pg_cursors``.

As in PostgreSQL ("DECLARE", "FETCH", "CLOSE" reference pages) and Materialize:
``DECLARE name [BINARY] [NO SCROLL] CURSOR [WITHOUT HOLD] FOR query`` only inside a
transaction block (25P01), a name at most once (42P03); ``FETCH [FORWARD] [n | ALL |
NEXT] [FROM | IN] name [WITH (TIMEOUT = 'interval')]`` (Materialize's option); ``CLOSE
name | ALL``; an unknown name is 34000. Cursors scan forward only (SCROLL and WITH HOLD
are 0A000, as in Materialize) and end with their transaction.

A cursor's query is planned at DECLARE and its peek opened at the first FETCH; FETCH
takes the next rows from the peek's stream, so a cursor over any number of rows holds
one batch in the server. A table whose shard another process's ALTER TABLE sealed
between the two is read as a SELECT reads it (``writes.replanned``): the first FETCH
waits for the catalog and plans the query again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pglast import ast
from pglast.enums import FetchDirection

from catalog.errors import (
    SqlError, DUPLICATE_CURSOR, FEATURE_NOT_SUPPORTED, INVALID_CURSOR_NAME, INVALID_PARAMETER_VALUE,
    NO_ACTIVE_SQL_TRANSACTION, OBJECT_NOT_IN_PREREQUISITE_STATE, SYNTAX_ERROR,
)
from catalog.textio import parse_interval
from catalog.types import SqlType
from sqlfront import mzparse as mz
from sqlfront.parse import parse_one
from sqlfront.sequence.peek import columns, peek_stream, plan_read
from sqlfront.sequence.result import Result, ResultStream
from sqlfront.sequence.writes import replanned

if TYPE_CHECKING:
    from sqlfront.session import Session

# DeclareCursorStmt.options bits (PostgreSQL's parsenodes.h CURSOR_OPT_*)
CURSOR_OPT_BINARY = 0x1
CURSOR_OPT_SCROLL = 0x2
CURSOR_OPT_HOLD = 0x20

#: FETCH ALL as pglast gives it (PostgreSQL's FETCH_ALL, LONG_MAX)
FETCH_ALL = 9223372036854775807
#: the longest FETCH ... WITH (TIMEOUT) Materialize accepts
MAX_FETCH_TIMEOUT_S = 24 * 3600

UNDEFINED_CURSOR = INVALID_CURSOR_NAME


@dataclass
class Cursor:
    """An open cursor: its planned query, and the peek's stream once FETCH opened it."""

    name: str
    #: the DECLARE statement's text, for pg_cursors
    statement: str
    columns: list[tuple[str, SqlType]]
    binary: bool
    plan: object
    created: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))
    stream: ResultStream | None = None
    #: the SUBSCRIBE this cursor follows (``DECLARE ... FOR SUBSCRIBE``), if any
    subscription: object = None
    #: the query and its parameters, to plan again (``_open``)
    query: ast.SelectStmt | None = None
    params: object = None
    #: the query planned to read views from their indexes (``peek.indexed_plan``), if any:
    #: the peek reads them at the block's timestamp when they serve it
    indexed: object = None

    def close(self) -> None:
        """Close the cursor's peek or subscription, if it was opened (its close hook runs)."""
        if self.stream is not None:
            self.stream.close()
        if self.subscription is not None:
            self.subscription.close()


def declare(s: Session, stmt: ast.DeclareCursorStmt, sql: str, params) -> Result:
    """DECLARE name [BINARY] [NO SCROLL] CURSOR [WITHOUT HOLD] FOR query.

    Raises:
        SqlError 25P01 outside a transaction block; 42P03 for a name in use; 0A000 for
        SCROLL, WITH HOLD and queries other than SELECT/VALUES; the planner's errors."""
    if not s.in_transaction:
        raise SqlError(NO_ACTIVE_SQL_TRANSACTION, "DECLARE CURSOR can only be used in transaction blocks")
    name = stmt.portalname
    if name in s.cursors:
        raise SqlError(DUPLICATE_CURSOR, f'cursor "{name}" already exists')
    opts = stmt.options or 0
    if opts & CURSOR_OPT_HOLD:
        raise SqlError(FEATURE_NOT_SUPPORTED, "DECLARE CURSOR WITH HOLD is not supported")
    if opts & CURSOR_OPT_SCROLL:
        raise SqlError(FEATURE_NOT_SUPPORTED, "DECLARE SCROLL CURSOR is not supported")
    if not isinstance(stmt.query, ast.SelectStmt):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"DECLARE CURSOR FOR {type(stmt.query).__name__} is not supported")
    pq, _, indexed = plan_read(s, stmt.query, None, params, indexes=True)
    s.cursors[name] = Cursor(name, sql.strip().rstrip(";").strip(), columns(pq), bool(opts & CURSOR_OPT_BINARY),
                             pq.plan, query=stmt.query, params=params, indexed=indexed)
    return Result("DECLARE CURSOR")


def declare_subscribe(s: Session, stmt: mz.DeclareSubscribe, sql: str, params) -> Result:
    """DECLARE name CURSOR FOR SUBSCRIBE ... (``sqlfront.sequence.subscribe``); FETCH
    then waits for updates up to its TIMEOUT.

    Raises:
        SqlError 25P01 outside a transaction block; 42P03 for a name in use; the
        SUBSCRIBE's errors."""
    from sqlfront.sequence.subscribe import Subscription

    if not s.in_transaction:
        raise SqlError(NO_ACTIVE_SQL_TRANSACTION, "DECLARE CURSOR can only be used in transaction blocks")
    if stmt.name in s.cursors:
        raise SqlError(DUPLICATE_CURSOR, f'cursor "{stmt.name}" already exists')
    sub_stmt = mz.parse_mz(stmt.subscribe)
    sub = Subscription(s, sub_stmt, s.as_of)
    s.cursors[stmt.name] = Cursor(stmt.name, sql.strip().rstrip(";").strip(), sub.columns, False, None,
                                  subscription=sub)
    return Result("DECLARE CURSOR")


def fetch(s: Session, stmt: ast.FetchStmt | mz.FetchWith, sql: str, params) -> Result:
    """FETCH [FORWARD] [n | ALL | NEXT] [FROM | IN] name [WITH (TIMEOUT = '...')], or
    MOVE (the same, without the rows). The rows stream: FETCH ALL of a billion rows holds
    one batch at a time.

    Raises:
        SqlError 34000 for an unknown cursor; 55000 for a backward fetch (the cursor is
        NO SCROLL); 22023 for a TIMEOUT below zero or above 24 hours; 0A000 for another
        option; the query's errors (at the first FETCH, which starts the peek)."""
    timeout = None
    if isinstance(stmt, mz.FetchWith):
        timeout = _check_options(stmt.options)
        stmt = parse_one(stmt.fetch)
        if not isinstance(stmt, ast.FetchStmt) or stmt.ismove:
            raise SqlError(SYNTAX_ERROR, "WITH options are only allowed on FETCH")
    cursor = lookup(s, stmt.portalname)
    n = stmt.howMany
    if stmt.direction != FetchDirection.FETCH_FORWARD or n < 0:
        raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, "cursor can only scan forward",
                       hint="Declare it with SCROLL option to enable backward scan.")
    limit = None if n == FETCH_ALL else n
    if cursor.subscription is not None:
        rows = cursor.subscription.fetch(limit, timeout)
        if stmt.ismove:
            return Result(f"MOVE {len(rows)}")
        chunks = iter([rows])
        return Result("FETCH", cursor.columns, stream=ResultStream(cursor.columns, lambda: next(chunks, None)))
    if cursor.stream is None:
        cursor.stream = _open(s, cursor)
    if stmt.ismove:
        moved = sum(len(c) if isinstance(c, list) else c.num_rows for c in cursor.stream.take(limit))
        return Result(f"MOVE {moved}")
    rows = cursor.stream.take(limit)
    return Result("FETCH", cursor.columns, stream=ResultStream(cursor.columns, lambda: next(rows, None)),
                  binary=cursor.binary)


def _open(s: Session, cursor: Cursor) -> ResultStream:
    """The peek of ``cursor``, opened (at its first FETCH) over the plan DECLARE made or,
    once a shard it read turned out sealed, over the query planned again against the
    catalog that replaced it (``writes.replanned``, as a SELECT).

    Raises:
        SqlError 0A000 "cached plan must not change result type" (PostgreSQL's) when
        the query planned again has other columns (an ALTER TABLE ADD COLUMN under a
        ``SELECT *``); ``replanned``'s and the peek's errors."""
    attempts = 0

    def attempt(s: Session) -> ResultStream:
        nonlocal attempts
        attempts += 1
        if attempts > 1:
            pq, _, cursor.indexed = plan_read(s, cursor.query, None, cursor.params, indexes=True)
            if columns(pq) != cursor.columns:
                raise SqlError(FEATURE_NOT_SUPPORTED, "cached plan must not change result type")
            cursor.plan = pq.plan
        return peek_stream(s, cursor.plan, cursor.columns, indexed=cursor.indexed)

    return replanned(attempt)(s)


def _check_options(options: tuple[tuple[str, str], ...]) -> float | None:
    """The TIMEOUT of FETCH's WITH options, in seconds (Materialize's FETCH reference).
    It bounds how long FETCH waits for rows; a SELECT cursor's rows come as fast as the
    replica makes them, so it only matters to SUBSCRIBE."""
    timeout = None
    for name, value in options:
        if name != "TIMEOUT":
            raise SqlError(FEATURE_NOT_SUPPORTED, f"FETCH option {name} is not supported")
        try:
            iv = parse_interval(value)
        except (SqlError, ValueError):
            raise SqlError(INVALID_PARAMETER_VALUE, f'invalid TIMEOUT: invalid input syntax for type interval: "{value}"') from None
        seconds = iv.months * 30 * 86400 + iv.days * 86400 + iv.micros / 1e6
        if seconds < 0:
            raise SqlError(INVALID_PARAMETER_VALUE, "invalid TIMEOUT: cannot convert negative interval to duration")
        if seconds > MAX_FETCH_TIMEOUT_S:
            raise SqlError(INVALID_PARAMETER_VALUE, "timeout out of range")
        timeout = seconds
    return timeout


def close(s: Session, stmt: ast.ClosePortalStmt, sql: str, params) -> Result:
    """CLOSE name | CLOSE ALL. Raises SqlError 34000 for an unknown cursor."""
    if stmt.portalname is None:
        close_all(s)
        return Result("CLOSE CURSOR ALL")
    lookup(s, stmt.portalname)
    s.cursors.pop(stmt.portalname).close()
    return Result("CLOSE CURSOR")


def close_all(s: Session) -> None:
    """Close every cursor of the session (at CLOSE ALL, transaction end, disconnect)."""
    cursors, s.cursors = s.cursors, {}
    error = None
    for c in cursors.values():  # each one, even after one failed to close
        try:
            c.close()
        except Exception as e:  # noqa: BLE001 - raised once every cursor was closed
            error = error or e
    if error is not None:
        raise error


def lookup(s: Session, name: str) -> Cursor:
    """The session's cursor ``name``. Raises SqlError 34000 if there is none."""
    c = s.cursors.get(name)
    if c is None:
        raise SqlError(UNDEFINED_CURSOR, f'cursor "{name}" does not exist')
    return c


def pg_cursors_rows(s: Session) -> list[tuple]:
    """The session's rows of ``pg_cursors``: name, statement, is_holdable, is_binary,
    is_scrollable, creation_time."""
    return [(c.name, c.statement, False, c.binary, False, c.created) for c in s.cursors.values()]
