"""``AS OF [AT LEAST] <timestamp>``: which timestamp a SELECT reads at (Materialize's
SELECT reference, "AS OF").

The expression must be a constant castable to ``mz_timestamp`` (a non-negative 64-bit
integer of milliseconds; a timestamp means its milliseconds since the Unix epoch) that
calls no unmaterializable function; the query itself may call ``mz_now()`` (the chosen
timestamp) but no other unmaterializable function. ``AS OF t`` reads exactly at ``t``
and fails when a table's since has passed it; ``AS OF AT LEAST t`` reads at the earliest
valid timestamp at or after ``t``.
"""

from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal
from typing import TYPE_CHECKING

import pglast

from catalog import mztime
from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SYNTAX_ERROR
from catalog.snapshot import Table
from catalog.textio import parse_mz_timestamp
from planner.plan import relations_read
from planner.query import QueryPlanner
from sqlfront.parse import AsOf
from sqlfront.sequence.evaluate import evaluate as evaluate_plan

if TYPE_CHECKING:
    from sqlfront.session import Session

#: functions whose value depends on more than the query's timestamp (Materialize's
#: "unmaterializable" functions), as they are spelled in SQL
UNMATERIALIZABLE = frozenset({
    "now", "current_timestamp", "localtimestamp", "current_time", "localtime", "transaction_timestamp",
    "statement_timestamp", "clock_timestamp", "current_database", "current_schema", "current_schemas",
    "current_user", "current_role", "session_user", "user", "current_setting", "pg_backend_pid", "version",
    "mz_now", "random",
})

_CASTABLE = "AS OF or UP TO should be castable to a (non-null) mz_timestamp value"


def calls_unmaterializable(sql: str, allowed: frozenset[str] = frozenset()) -> bool:
    """Whether ``sql`` calls a function of ``UNMATERIALIZABLE`` (other than ``allowed``)."""
    toks = pglast.parser.scan(sql)
    for i, t in enumerate(toks):
        word = sql[t.start:t.end + 1].lower()
        if word in UNMATERIALIZABLE and word not in allowed:
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if nxt is not None and nxt.name == "ASCII_40":
                return True
            if word in ("current_timestamp", "localtimestamp", "current_time", "localtime", "current_user",
                        "current_role", "session_user", "user") and t.name != "IDENT":
                return True
    return False


def check_query(sql: str) -> None:
    """Raises SqlError 0A000 when a query read AS OF calls an unmaterializable function
    other than mz_now()."""
    if calls_unmaterializable(sql, frozenset({"mz_now"})):
        raise SqlError(FEATURE_NOT_SUPPORTED,
                       "unmaterializable function (except `mz_now`) in an AS OF query not yet supported")


def evaluate(s: Session, a: AsOf) -> int:
    """The timestamp ``a``'s expression names.

    Raises:
        SqlError 0A000 for an unmaterializable function; 22023 when the value is not a
        non-null mz_timestamp; the planner's errors (42703 for a column)."""
    if calls_unmaterializable(a.expr):
        raise SqlError(FEATURE_NOT_SUPPORTED, "calling an unmaterializable function in AS OF or UP TO not yet supported")
    try:
        stmt = pglast.parse_sql(f"SELECT {a.expr}")[0].stmt
    except pglast.parser.ParseError as e:
        raise SqlError(SYNTAX_ERROR, f"invalid AS OF expression: {e.args[0] if e.args else e}") from None
    try:
        plan = QueryPlanner(s.catalog, ctx=s.statement.plan).plan_select(stmt).plan
        # as a fast-path SELECT: its timeout, cancel and heap limit; costly work in a worker
        v = evaluate_plan(s, plan)[0][0]
    except SqlError as e:
        if e.sqlstate.startswith("22"):
            raise SqlError(INVALID_PARAMETER_VALUE, _CASTABLE) from None
        raise
    return _to_mz_timestamp(v, s.vars.time_zone())


def _to_mz_timestamp(v, zone: dt.tzinfo) -> int:
    """The value of an AS OF expression as an mz_timestamp (``catalog.mztime``'s casts;
    text as ``catalog.textio.parse_mz_timestamp`` reads it, in the session's time zone ``zone``).

    Raises:
        SqlError 22023 when it is not castable to a non-null mz_timestamp."""
    if isinstance(v, bool) or v is None or isinstance(v, list):
        raise SqlError(INVALID_PARAMETER_VALUE, _CASTABLE)
    src = ("timestamptz" if isinstance(v, dt.datetime) and v.tzinfo else "timestamp" if isinstance(v, dt.datetime)
           else "text" if isinstance(v, str) else "numeric" if isinstance(v, Decimal) else "float8"
           if isinstance(v, float) else "int8" if isinstance(v, int) else None)
    if src is None:
        raise SqlError(INVALID_PARAMETER_VALUE, _CASTABLE)
    try:
        return parse_mz_timestamp(v, zone) if src == "text" else mztime.from_value(v, src)
    except SqlError:
        raise SqlError(INVALID_PARAMETER_VALUE, _CASTABLE) from None


def choose(s: Session, a: AsOf, ts: int, plan) -> int:
    """The timestamp to read ``plan`` at for ``AS OF [AT LEAST] ts``: ``ts`` itself, or
    with AT LEAST the least valid one at or after it (every input's since). When it is
    ahead of the oracle's read timestamp and tables are read, waits until the read
    timestamp catches up (their data up to it is then complete), as Materialize waits for
    the inputs' uppers, within the statement's deadline (``s.statement``).

    Raises:
        SqlError 57014 when the statement's deadline passes or it is canceled."""
    tables = [r for r in relations_read(plan) if isinstance(r, Table)]
    if a.at_least and tables:
        ts = max([ts] + [s.env.persist.state(t.shard_id).since for t in tables])
    if not tables:
        return ts
    while s.env.oracle.read_ts() < ts:
        s.statement.check()
        time.sleep(0.05)
    return ts
