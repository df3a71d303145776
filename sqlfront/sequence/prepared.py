"""SQL-level prepared statements and session reset: ``PREPARE``, ``EXECUTE``,
``DEALLOCATE [PREPARE] name | ALL``, ``DISCARD ALL | PLANS | SEQUENCES | TEMP``, and the
session's rows of ``pg_prepared_statements`` (PostgreSQL's reference pages of each
statement; PostgreSQL 54.16 "pg_prepared_statements").

SQL-level and protocol-level (Parse) prepared statements share one namespace, the
session's ``prepared`` dict (``name -> (sql, parameter type OIDs)``), as in PostgreSQL.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from pglast import ast
from pglast.enums import DiscardMode

from catalog.errors import (
    SqlError, ACTIVE_SQL_TRANSACTION, DUPLICATE_PREPARED_STATEMENT, FEATURE_NOT_SUPPORTED,
    INVALID_SQL_STATEMENT_NAME, SYNTAX_ERROR,
)
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session


class PreparedStatements(dict):
    """A session's prepared statements, ``name -> (sql, parameter type OIDs)``, noting
    when each was prepared (``prepare_time``) however it was (Parse or PREPARE)."""

    def __init__(self):
        super().__init__()
        self.times: dict[str, datetime.datetime] = {}

    def __setitem__(self, name, value) -> None:
        self.times[name] = datetime.datetime.now(datetime.timezone.utc)
        super().__setitem__(name, value)

    def pop(self, name, *default):
        self.times.pop(name, None)
        return super().pop(name, *default)

    def clear(self) -> None:
        self.times.clear()
        super().clear()


def prepare(s: Session, stmt: ast.PrepareStmt, sql: str, params) -> Result:
    """PREPARE name [(type, ...)] AS statement: the statement is parsed and analysed now
    (its errors are PREPARE's), run by EXECUTE.

    Raises:
        SqlError 42P05 for a name in use; 42704 for an unknown type; the statement's
        planning errors."""
    from pglast.stream import RawStream

    from planner.expr import type_from_ast

    if stmt.name in s.prepared:
        raise SqlError(DUPLICATE_PREPARED_STATEMENT, f'prepared statement "{stmt.name}" already exists')
    types = [type_from_ast(t) for t in stmt.argtypes or ()]
    text = RawStream()(stmt.query)
    from sqlfront.parse import param_count

    n = max(len(types), param_count(text))
    s.describe(text, n, {i + 1: t for i, t in enumerate(types)})
    s.prepared[stmt.name] = (text, [t.oid for t in types] + [0] * (n - len(types)))
    s.prepared_meta[stmt.name] = sql.strip().rstrip(";").strip()
    return Result("PREPARE")


def execute(s: Session, stmt: ast.ExecuteStmt, sql: str, params) -> Result:
    """EXECUTE name [(value, ...)]: the prepared statement with its parameters bound to
    the values (constant expressions, assigned to the declared types).

    Raises:
        SqlError 26000 for an unknown name; 42601 for the wrong number of values; the
        statement's errors."""
    from planner.consteval import fold
    from planner.query import QueryPlanner
    from planner.scope import Scope
    from catalog.types import type_from_oid

    if stmt.name not in s.prepared:
        raise SqlError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{stmt.name}" does not exist')
    text, oids = s.prepared[stmt.name]
    given = list(stmt.params or ())
    if len(given) != len(oids):
        raise SqlError(SYNTAX_ERROR, f'wrong number of parameters for prepared statement "{stmt.name}"',
                       detail=f"Expected {len(oids)} parameters but got {len(given)}.")
    ep = QueryPlanner(s.catalog, params, ctx=s.statement.plan).expr_planner(Scope(),
                                                                             agg_context="EXECUTE parameter")
    values = []
    for node, oid in zip(given, oids):
        e = ep.plan(node)
        t = type_from_oid(oid) if oid else None
        e = fold(ep.coerce(e, t) if t is not None else e, ep.ctx)
        if not hasattr(e, "value"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "EXECUTE parameters must be constant expressions")
        values.append(e)
    return s.execute_one(text, values)


def deallocate(s: Session, stmt: ast.DeallocateStmt, sql: str, params) -> Result:
    """DEALLOCATE [PREPARE] name | ALL. Raises SqlError 26000 for an unknown name."""
    if stmt.name is None:
        keep = s.prepared.get("")  # the unnamed statement running this one, if any
        s.prepared.clear()
        s.prepared_meta.clear()
        if keep is not None:
            s.prepared[""] = keep
        return Result("DEALLOCATE ALL")
    if s.prepared.pop(stmt.name, None) is None:
        raise SqlError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{stmt.name}" does not exist')
    s.prepared_meta.pop(stmt.name, None)
    return Result("DEALLOCATE")


def discard(s: Session, stmt: ast.DiscardStmt, sql: str, params) -> Result:
    """DISCARD ALL (close cursors, reset variables and the role, deallocate prepared statements, drop
    temporary tables, forget sequence values), PLANS (nothing is cached across
    statements here), SEQUENCES, TEMP.

    Raises:
        SqlError 25001 for DISCARD ALL inside a transaction block."""
    from sqlfront.sequence import cursors, schemas

    m = stmt.target
    if m == DiscardMode.DISCARD_ALL:
        if s.transaction.in_block:
            raise SqlError(ACTIVE_SQL_TRANSACTION, "DISCARD ALL cannot run inside a transaction block")
        cursors.close_all(s)
        for name in list(s.vars.values):
            try:
                s.vars.set(name, None)
            except SqlError:
                pass
        deallocate(s, ast.DeallocateStmt(name=None, isall=True), sql, params)
        from sqlfront.sequence.roles import set_role

        set_role(s, None)  # RESET ROLE, as PostgreSQL's DISCARD ALL does
    if m in (DiscardMode.DISCARD_ALL, DiscardMode.DISCARD_TEMP):
        schemas.drop_temp_schema(s)
    if m in (DiscardMode.DISCARD_ALL, DiscardMode.DISCARD_SEQUENCES):
        s.sequences.discard()
    return Result({DiscardMode.DISCARD_ALL: "DISCARD ALL", DiscardMode.DISCARD_PLANS: "DISCARD PLANS",
                   DiscardMode.DISCARD_SEQUENCES: "DISCARD SEQUENCES", DiscardMode.DISCARD_TEMP: "DISCARD TEMP"}[m])


def pg_prepared_statements_rows(s: Session) -> list[tuple]:
    """The session's named prepared statements, SQL-level (``from_sql``) and protocol-level.
    ``parameter_types`` are the types the statement's parameters were given or, where
    the client left them open, inferred from their use (as PostgreSQL reports them)."""
    from catalog.types import type_from_oid

    now = datetime.datetime.now(datetime.timezone.utc)
    times = getattr(s.prepared, "times", {})
    out = []
    for name, (text, oids) in s.prepared.items():
        if name == "":
            continue
        given = {i + 1: type_from_oid(o) for i, o in enumerate(oids) if o and type_from_oid(o) is not None}
        types = [given[i + 1].sql() if i + 1 in given else "unknown" for i in range(len(oids))]
        if len(given) < len(oids):
            try:
                types = [t.sql() for t in s.describe(text, len(oids), given)[1]]
            except SqlError:
                pass  # the catalog changed under it: its types as given
        statement = s.prepared_meta.get(name)
        out.append((name, statement or text, times.get(name, now), types, statement is not None, 0, 0))
    return sorted(out, key=lambda r: (r[2], r[0]))
