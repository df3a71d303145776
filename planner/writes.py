"""Plan writes: ``INSERT INTO t [(cols)] VALUES ... | SELECT ...``.

Values are converted with assignment casts (PostgreSQL 10.4 "Value Storage"): a
``varchar(n)`` overflow is an error (22001) rather than a truncation, numerics are
rounded to the column's scale, NOT NULL is checked (23502).
"""

from __future__ import annotations

from dataclasses import dataclass

import pglast
from pglast import ast

from catalog.errors import (
    SqlError, DUPLICATE_COLUMN, FEATURE_NOT_SUPPORTED, GENERATED_ALWAYS, GROUPING_ERROR,
    NOT_NULL_VIOLATION, SYNTAX_ERROR, UNDEFINED_COLUMN, UNDEFINED_PARAMETER, WRONG_OBJECT_TYPE,
)
from catalog.snapshot import CatalogSnapshot, MaterializedView, Source, Subsource, Table
from catalog.types import SqlType
from planner.assign import assign_expr, check_assignable
from planner.consteval import cast_value, evaluate, is_volatile
from planner.ddl import check_default
from planner.context import NO_STATEMENT, PlanContext
from planner.guard import Outgrown
from planner.expr import ast_nodes
from planner.plan import Plan, Project, Unnest
from catalog.types import BOOL, INT8, TEXT, UNKNOWN
from planner.query import QueryPlanner
from planner.scalar import Call, Case, ColRef, Literal, Param


@dataclass(frozen=True)
class Returning:
    """A ``RETURNING`` list (PostgreSQL "INSERT", "UPDATE", "DELETE"): output ``columns``
    as ``(name, type)`` and ``exprs`` over a row of the target table (``ColRef(i)`` is
    its column ``i``), evaluated in Python for each row written (``rows``)."""

    columns: tuple[tuple[str, SqlType], ...]
    exprs: tuple

    def rows(self, rows, ctx: PlanContext = NO_STATEMENT) -> list[tuple]:
        """The returned rows of ``rows`` written, evaluated in the statement's context
        ``ctx`` (``planner.context.PlanContext``: its session and guard)."""
        return [tuple(evaluate(e, r, ctx=ctx) for e in self.exprs) for r in rows]


@dataclass(frozen=True)
class PlannedInsert:
    """Rows to append to ``table``: either constant ``rows`` (full width, table column
    order) or a ``query`` plan whose output already has the table's columns and types.
    ``fill``: ``(column index, expression)`` pairs evaluated in Python for each row the
    query yields (volatile defaults such as ``nextval``), so the query's rows must come
    back to Python first. ``returning``: the RETURNING list, if any."""

    table: Table
    rows: tuple[tuple, ...] | None
    query: Plan | None
    fill: tuple = ()
    returning: Returning | None = None


def plan_returning(qp: QueryPlanner, table: Table, rv: ast.RangeVar, returning_list) -> Returning | None:
    """Plan ``RETURNING`` items over the columns of ``table`` (named by its alias, if
    any). None when there is no RETURNING clause.

    Raises:
        SqlError 42703 for unknown columns; 0A000 for subqueries or aggregates in it."""
    from planner.expr import contains_aggregate
    from planner.scope import Scope, ScopeItem

    if returning_list is None:
        return None
    if isinstance(returning_list, ast.ReturningClause):  # PostgreSQL 18's grammar
        if returning_list.options:
            raise SqlError(FEATURE_NOT_SUPPORTED, "RETURNING WITH (OLD/NEW) is not supported")
        returning_list = returning_list.exprs
    if not returning_list:
        return None
    for rt in returning_list:
        if any(isinstance(n, ast.SubLink) for n in ast_nodes(rt.val)):
            raise SqlError(FEATURE_NOT_SUPPORTED, "subqueries in RETURNING are not supported")
        if contains_aggregate(rt.val):
            raise SqlError(GROUPING_ERROR, "aggregate functions are not allowed in RETURNING")
    q = rv.alias.aliasname if rv.alias else rv.relname
    scope = Scope([ScopeItem(q, c.name, c.type, i) for i, c in enumerate(table.columns)])
    ep = qp.expr_planner(scope, agg_context="RETURNING")
    cols, exprs = [], []
    for node, name in qp._expand_targets(returning_list, scope):
        e = ep.plan(node)
        cols.append((name, e.type if e.type.name != "unknown" else TEXT))
        exprs.append(e if e.type.name != "unknown" else ep.coerce(e, TEXT))
    return Returning(tuple(cols), tuple(exprs))


def default_exprs(snap: CatalogSnapshot, table: Table, ctx=None) -> list:
    """The planned DEFAULT expression of each column of ``table`` (None where it has
    none: the default is NULL), cast to the column's type. ``ctx``: as QueryPlanner's."""
    return [check_default(snap, c.default, c, ctx) if c.default is not None else None for c in table.columns]


def check_identity_insert(table: Table, target: list[str], override) -> None:
    """Raises SqlError 428C9 for a value given to a GENERATED ALWAYS identity column
    without ``OVERRIDING SYSTEM VALUE`` (PostgreSQL "INSERT")."""
    from pglast.enums import OverridingKind

    if override in (OverridingKind.OVERRIDING_SYSTEM_VALUE, OverridingKind.OVERRIDING_USER_VALUE):
        return  # USER VALUE: the values given are ignored (plan_insert)
    for c in table.columns:
        if c.identity == "a" and c.name in target:
            raise SqlError(GENERATED_ALWAYS, f'cannot insert a non-DEFAULT value into column "{c.name}"',
                           detail=f'Column "{c.name}" is an identity column defined as GENERATED ALWAYS.',
                           hint="Use OVERRIDING SYSTEM VALUE to override.")


def resolve_target(snap: CatalogSnapshot, rv: ast.RangeVar) -> Table:
    rel = snap.resolve_relation(rv.schemaname, rv.relname)
    if rel.builtin:
        raise SqlError(WRONG_OBJECT_TYPE, f'cannot insert into system table "{rel.name}"')
    if isinstance(rel, MaterializedView):  # its rows come from its query (Materialize: tables take writes)
        raise SqlError(WRONG_OBJECT_TYPE, f'cannot insert into materialized view "{rel.name}"')
    if isinstance(rel, (Source, Subsource)):  # its rows come from its ingestion
        raise SqlError(WRONG_OBJECT_TYPE, f'cannot insert into source "{rel.name}"')
    return rel


def plan_insert(snap: CatalogSnapshot, stmt: ast.InsertStmt, params: list | None = None, ctx=None) -> PlannedInsert:
    """Plan an INSERT (``ctx``: as QueryPlanner's).

    Raises:
        SqlError 42P01 unknown table, 42703 unknown column, 42701 column given twice,
        42601 more expressions than columns, 23502 NULL into NOT NULL, 22xxx casts.
    """
    from pglast.enums import OverridingKind
    from planner.expr import DescribeParams

    if stmt.withClause or stmt.onConflictClause:
        raise SqlError(FEATURE_NOT_SUPPORTED, "INSERT with WITH/ON CONFLICT is not supported yet")
    table = resolve_target(snap, stmt.relation)
    names = [c.name for c in table.columns]
    target = _target_columns(table, stmt)
    positions = [names.index(n) for n in target]
    sel = stmt.selectStmt
    qp = QueryPlanner(snap, params, ctx=ctx)
    returning = plan_returning(qp, table, stmt.relation, stmt.returningClause)
    defaults = default_exprs(snap, table, ctx)
    if stmt.override == OverridingKind.OVERRIDING_USER_VALUE:
        # the values given for identity columns are ignored: their defaults apply
        user = {j for j, c in enumerate(table.columns) if c.identity}
    else:
        user = set()
    describing = isinstance(params, DescribeParams)  # nothing may run

    def default(j):
        e = defaults[j]
        return None if e is None or describing else evaluate(e, ctx=qp.ctx)

    if sel is None:  # DEFAULT VALUES
        row = tuple(default(j) for j in range(len(names)))
        row = row if describing else _fill(table, range(len(names)), row, ())
        return PlannedInsert(table, (row,), None, returning=returning)
    if sel.valuesLists and not sel.sortClause and sel.limitCount is None:
        try:
            rows = []
            planner_rows = sel.valuesLists
            for r in planner_rows:
                if len(r) > len(target):
                    raise SqlError(SYNTAX_ERROR, "INSERT has more expressions than target columns")
            # Plan each row on its own: every value is assigned straight to its column's type.
            from planner.scope import Scope

            ep = qp.expr_planner(Scope(), agg_context="VALUES")
            given = [[pos for node, pos in zip(r, positions) if not isinstance(node, ast.SetToDefault)]
                     for r in planner_rows]
            check_identity_insert(table, [names[p] for g in given for p in g], stmt.override)
            for r in planner_rows:
                vals = [None] * len(names)
                set_ = set()
                for node, pos in zip(r, positions):
                    if isinstance(node, ast.SetToDefault) or pos in user:
                        continue
                    e = ep.plan(node)
                    vals[pos] = assign_value(e, table.columns[pos].type, table.columns[pos].name, qp.ctx)
                    set_.add(pos)
                for j in range(len(names)):
                    if j not in set_:
                        vals[j] = default(j)
                # describing: nothing was evaluated, so there is nothing to check
                rows.append(tuple(vals) if describing else _fill(table, range(len(names)), vals, ()))
            return PlannedInsert(table, tuple(rows), None, returning=returning)
        except Outgrown:
            # a value too costly to compute in the session's thread (planner.guard): the
            # rows come from a query, which the fast path runs in a worker process
            pass
    pq = qp.plan_select(sel)
    cols = pq.plan.columns
    if len(cols) > len(target):
        raise SqlError(SYNTAX_ERROR, "INSERT has more expressions than target columns")
    check_identity_insert(table, target[: len(cols)], stmt.override)
    exprs = []
    fill = []
    for j, col in enumerate(table.columns):
        if j in positions[: len(cols)] and j not in user:
            k = positions.index(j)
            src = ColRef(k, cols[k][1])
            exprs.append(assign_expr(src, col.type, col.name))
        elif defaults[j] is not None and is_volatile(defaults[j]):
            exprs.append(Literal(None, col.type))
            fill.append((j, defaults[j]))
        else:
            exprs.append(defaults[j] if defaults[j] is not None else Literal(None, col.type))
    plan = Project(pq.plan, tuple(exprs), tuple(names))
    return PlannedInsert(table, None, plan, tuple(fill), returning)


@dataclass(frozen=True)
class InsertTemplate:
    """``INSERT INTO t [(cols)] VALUES (...), ...`` whose values are all parameters
    (``$n``) or DEFAULT, planned up to its parameters: what a driver's prepared INSERT
    executes again and again with new ones. Valid for the catalog snapshot (and
    search_path) it was planned with; :meth:`bind` gives what :func:`plan_insert` would."""

    table: Table
    #: per VALUES row: ``(table column index, parameter number)`` of each value given
    rows: tuple[tuple[tuple[int, int], ...], ...]
    #: the planned DEFAULT of each column (None: NULL), evaluated per row as plan_insert does
    defaults: tuple
    returning: Returning | None = None

    def bind(self, params: list, ctx: PlanContext = NO_STATEMENT) -> PlannedInsert:
        """The planned INSERT with ``params`` (Bind's: Literals, or None/text for untyped
        ones) assigned to their columns, in the statement's context ``ctx``
        (``planner.context.PlanContext``: its session's text settings read untyped
        parameters; its session evaluates the defaults, a serial's nextval).

        Raises:
            SqlError 42P02 for a missing parameter; 23502, 42804 and the casts' 22xxx,
            as plan_insert."""
        cols = self.table.columns
        out = []
        for given in self.rows:
            vals = [None] * len(cols)
            set_ = set()
            for pos, n in given:
                if n < 1 or n > len(params):
                    raise SqlError(UNDEFINED_PARAMETER, f"there is no parameter ${n}")
                v = params[n - 1]
                e = v if isinstance(v, Literal) else Literal(None if v is None else str(v), UNKNOWN)
                # assign_value of a Literal: its value, assigned (what Bind gives, always)
                if e.value is not None:
                    t = cols[pos].type
                    if (e.type, t) not in _ASSIGNABLE:
                        check_assignable(e.type, t, cols[pos].name)
                        _ASSIGNABLE.add((e.type, t))
                    vals[pos] = cast_value(e.value, e.type, t, explicit=False, fmt=ctx.guard.text)
                set_.add(pos)
            for j, d in enumerate(self.defaults):
                if j not in set_ and d is not None:
                    vals[j] = evaluate(d, ctx=ctx)
            check_not_null(self.table, vals)
            out.append(tuple(vals))
        return PlannedInsert(self.table, tuple(out), None, returning=self.returning)


#: (source, column type) pairs check_assignable passed: it depends on the types alone
_ASSIGNABLE: set = set()


def insert_template(snap: CatalogSnapshot, stmt: ast.InsertStmt, ctx=None) -> InsertTemplate | None:
    """The InsertTemplate of ``stmt``; None when it is not an INSERT of parameters and
    DEFAULTs only (plan it with :func:`plan_insert`).

    Raises:
        what plan_insert raises before it looks at parameters (42P01, 42703, 42701,
        42601, 428C9)."""
    from pglast.enums import OverridingKind

    sel = stmt.selectStmt
    if (stmt.withClause or stmt.onConflictClause or stmt.returningClause or sel is None or not sel.valuesLists
            or sel.sortClause or sel.limitCount is not None):  # RETURNING may name parameters too
        return None
    if not all(isinstance(node, (ast.ParamRef, ast.SetToDefault)) for r in sel.valuesLists for node in r):
        return None
    table = resolve_target(snap, stmt.relation)
    names = [c.name for c in table.columns]
    target = _target_columns(table, stmt)
    positions = [names.index(n) for n in target]
    defaults = tuple(default_exprs(snap, table, ctx))
    for r in sel.valuesLists:
        if len(r) > len(target):
            raise SqlError(SYNTAX_ERROR, "INSERT has more expressions than target columns")
    check_identity_insert(table, [names[pos] for r in sel.valuesLists for node, pos in zip(r, positions)
                                  if not isinstance(node, ast.SetToDefault)], stmt.override)
    user = ({j for j, c in enumerate(table.columns) if c.identity}
            if stmt.override == OverridingKind.OVERRIDING_USER_VALUE else set())
    rows = tuple(tuple((pos, node.number) for node, pos in zip(r, positions)
                       if isinstance(node, ast.ParamRef) and pos not in user)
                 for r in sel.valuesLists)
    return InsertTemplate(table, rows, defaults, None)


def _target_columns(table: Table, stmt: ast.InsertStmt) -> list[str]:
    """The column names an INSERT gives values for, in its order.

    Raises:
        SqlError 42703 for an unknown column, 42701 for one named twice."""
    names = [c.name for c in table.columns]
    if not stmt.cols:
        return names
    target = [rt.name for rt in stmt.cols]
    for n in target:
        if n not in names:
            raise SqlError(UNDEFINED_COLUMN, f'column "{n}" of relation "{table.name}" does not exist')
    if len(set(target)) != len(target):
        dup = next(n for n in target if target.count(n) > 1)
        raise SqlError(DUPLICATE_COLUMN, f'column "{dup}" specified more than once')
    return target


def assign_value(e, t: SqlType, column: str, ctx: PlanContext = NO_STATEMENT):
    """Evaluate constant ``e`` in the statement's context ``ctx``
    (``planner.context.PlanContext``) and assign it to a column of type ``t``."""
    from planner.expr import infer_param
    from planner.scalar import is_constant

    if infer_param(e, t) is not None:
        return None  # describing a prepared INSERT: the parameter takes the column's type
    if isinstance(e, Param):  # describing, the parameter's type given: it must fit the column
        check_assignable(e.type, t, column)
        return None
    if not is_constant(e):
        raise SqlError(FEATURE_NOT_SUPPORTED, "INSERT ... VALUES may only contain constant expressions")
    v = evaluate(e, ctx=ctx)
    if v is None:
        return None
    check_assignable(e.type, t, column)
    return cast_value(v, e.type, t, explicit=False, fmt=ctx.guard.text)


def _fill(table: Table, positions, vals, _):
    row = [None] * len(table.columns)
    for p, v in zip(positions, vals):
        row[p] = v
    check_not_null(table, row)
    return tuple(row)


def not_null_message(column: str) -> str:
    """Materialize's NOT NULL violation message (23502); PostgreSQL's also names the
    relation."""
    return f'null value in column "{column}" violates not-null constraint'


def check_not_null(table: Table, row) -> None:
    for c, v in zip(table.columns, row):
        if v is None and not c.nullable:
            raise SqlError(
                NOT_NULL_VIOLATION,
                not_null_message(c.name),
            )


@dataclass(frozen=True)
class PlannedRewrite:
    """UPDATE or DELETE as updates: ``plan`` yields, for each affected row, the row as it
    was with diff -1 and (UPDATE) the row as it becomes with diff +1 — the table's columns
    in order, then an ``int8`` diff column (Materialize plans read-then-write the same
    way). ``updated`` is True for UPDATE (each affected row yields two updates)."""

    table: Table
    plan: Plan
    updated: bool
    #: the RETURNING list, over the new rows (UPDATE) or the deleted ones (DELETE)
    returning: Returning | None = None

    def affected(self, updates: int) -> int:
        """Rows the statement affected (the command tag), from the updates written."""
        return updates // 2 if self.updated else updates


def _target_scope(snap: CatalogSnapshot, rv: ast.RangeVar):
    from planner.plan import Get
    from planner.scope import Scope, ScopeItem

    table = resolve_target(snap, rv)
    q = rv.alias.aliasname if rv.alias else rv.relname
    scope = Scope([ScopeItem(q, c.name, c.type, i) for i, c in enumerate(table.columns)])
    return table, Get(table, tuple((c.name, c.type) for c in table.columns)), scope


def plan_delete(snap: CatalogSnapshot, stmt: ast.DeleteStmt, params: list | None = None, ctx=None) -> PlannedRewrite:
    """``DELETE FROM t [WHERE cond]``: keep the rows where ``cond`` is not true."""
    from planner.optimize import optimize

    if stmt.withClause:
        raise SqlError(FEATURE_NOT_SUPPORTED, "DELETE with WITH is not supported yet")
    table, get, scope = _target_scope(snap, stmt.relation)
    qp = QueryPlanner(snap, params, ctx=ctx)
    returning = plan_returning(qp, table, stmt.relation, stmt.returningClause)
    cols = tuple(ColRef(i, c.type) for i, c in enumerate(table.columns))
    hit = _affected(get, qp, scope, _using_as_exists(stmt.usingClause, stmt.whereClause))
    plan = Project(hit, cols + (Literal(-1, INT8),), tuple(c.name for c in table.columns) + (DIFF,))
    return PlannedRewrite(table, optimize(plan, ctx=qp.ctx), False, returning)


def _using_as_exists(using, where):
    """``DELETE FROM t USING u, ... WHERE cond`` deletes the rows of t for which some row
    of the USING list makes ``cond`` true (PostgreSQL's DELETE reference page): the
    condition ``EXISTS (SELECT FROM u, ... WHERE cond)``, correlated with t. Without
    USING, ``where`` as it is."""
    if not using:
        return where
    sublink = pglast.parse_sql("SELECT WHERE EXISTS (SELECT 1)")[0].stmt.whereClause
    sublink.subselect.fromClause = using
    sublink.subselect.whereClause = where
    return sublink


def plan_update(snap: CatalogSnapshot, stmt: ast.UpdateStmt, params: list | None = None, ctx=None) -> PlannedRewrite:
    """``UPDATE t SET c = e, ... [WHERE cond]`` with assignment casts to the columns' types."""
    from planner.consteval import fold
    from planner.optimize import optimize

    if stmt.fromClause or stmt.withClause:
        raise SqlError(FEATURE_NOT_SUPPORTED, "UPDATE with FROM/WITH is not supported yet")
    table, get, scope = _target_scope(snap, stmt.relation)
    qp = QueryPlanner(snap, params, ctx=ctx)
    returning = plan_returning(qp, table, stmt.relation, stmt.returningClause)
    defaults = None
    ep = qp.expr_planner(scope, agg_context="UPDATE")
    names = [c.name for c in table.columns]
    sets: dict[int, object] = {}
    for rt in stmt.targetList:
        if rt.name not in names:
            # Materialize's wording (update.slt); PostgreSQL's names the relation.
            raise SqlError(UNDEFINED_COLUMN, f"unknown column {rt.name}")
        if rt.indirection:
            raise SqlError(FEATURE_NOT_SUPPORTED, "UPDATE of subfields is not supported")
        j = names.index(rt.name)
        if j in sets:
            raise SqlError(SYNTAX_ERROR, f'multiple assignments to same column "{rt.name}"')
        col = table.columns[j]
        if isinstance(rt.val, ast.SetToDefault):
            defaults = defaults or default_exprs(snap, table, ctx)
            e = defaults[j] if defaults[j] is not None else Literal(None, col.type)
            if is_volatile(e):
                raise SqlError(FEATURE_NOT_SUPPORTED, f'UPDATE to a volatile DEFAULT (column "{col.name}") is not '
                                                      "supported")
        else:
            if col.identity == "a":
                raise SqlError(GENERATED_ALWAYS, f'column "{col.name}" can only be updated to DEFAULT',
                               detail=f'Column "{col.name}" is an identity column defined as GENERATED ALWAYS.')
            e = ep.plan(rt.val)
        sets[j] = fold(assign_expr(ep.coerce(e, col.type) if isinstance(e, Literal) else e, col.type, col.name),
                       qp.ctx)
    hit = _affected(get, qp, scope, stmt.whereClause)
    old = tuple(ColRef(j, c.type) for j, c in enumerate(table.columns))
    new = tuple(not_null_guard(sets[j], table, c) if j in sets else ColRef(j, c.type) for j, c in enumerate(table.columns))
    return PlannedRewrite(table, optimize(_retract_and_insert(hit, old, new, names), ctx=qp.ctx), True, returning)


def _retract_and_insert(hit, old: tuple, new: tuple, names: list[str]):
    """``(old, -1)`` and ``(new, +1)`` for each row of ``hit``, from one read of it: each
    row is repeated once per element of the array ``[-1, 1]`` (an unnest: Spark's
    explode, no join) and each column picks its old or new value by the diff (a union
    of two projections would scan the table twice)."""
    from catalog.types import array_of

    w = len(hit.columns)
    both = Project(hit, tuple(ColRef(j, t) for j, (_, t) in enumerate(hit.columns)) + (Literal([-1, 1], array_of(INT8)),),
                   tuple(n for n, _ in hit.columns) + ("_diffs",))
    d = ColRef(w + 1, INT8)
    retracted = Call("eq", (d, Literal(-1, INT8)), BOOL)
    cols = tuple(o if o == n else Case(((retracted, o),), n, o.type) for o, n in zip(old, new))
    return Project(Unnest(both, (w,), ("unnest",)), cols + (d,), tuple(names) + (DIFF,))


#: name of the diff column of a rewrite's plan
DIFF = "_mz_diff"


def _affected(get, qp, scope, where):
    """The rows of ``get`` where ``where`` is true (all rows without one)."""
    from planner.consteval import fold
    from planner.plan import Filter

    if where is None:
        return get
    return Filter(get, fold(qp.expr_planner(scope, agg_context="WHERE").plan_bool(where, "WHERE"), qp.ctx))


def not_null_guard(e, table: Table, c):
    """``e``, raising 23502 where it is NULL and column ``c`` is NOT NULL (checked where
    the new rows are computed: on the replica)."""
    from planner.scalar import Call

    if c.nullable:
        return e
    msg = not_null_message(c.name)
    return Call("not_null_or_raise", (e, Literal(msg, TEXT)), c.type)
