"""Plan a SELECT: pglast SelectStmt -> logical Plan with output names.

Order of clauses as in PostgreSQL's parse analysis: FROM (joins), WHERE, GROUP BY and
aggregates, HAVING, select list, DISTINCT, ORDER BY, LIMIT/OFFSET. ORDER BY may name
an output column by ordinal or alias, or use any expression of the input (a hidden
column is added and projected away afterwards).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, replace
from types import SimpleNamespace

from pglast import ast
from pglast.enums import GroupingSetKind, JoinType, SetOperation, SortByDir, SortByNulls

from catalog.errors import (
    SqlError, AMBIGUOUS_COLUMN, DATATYPE_MISMATCH, DUPLICATE_ALIAS, DUPLICATE_COLUMN, FEATURE_NOT_SUPPORTED,
    GROUPING_ERROR, INVALID_COLUMN_REFERENCE, INVALID_NAME, INVALID_PARAMETER_VALUE,
    INVALID_PRECEDING_OR_FOLLOWING_SIZE, INVALID_ROW_COUNT_IN_LIMIT_CLAUSE, NULL_VALUE_NOT_ALLOWED, STATEMENT_TOO_COMPLEX,
    SYNTAX_ERROR, UNDEFINED_COLUMN, UNDEFINED_FUNCTION, UNDEFINED_OBJECT, WINDOWING_ERROR,
)
from catalog.snapshot import CatalogSnapshot, View
from catalog.types import BOOL, INT4, INT8, TEXT, SqlType
from planner import typing as ty
from planner import functions
from planner.consteval import evaluate, fold
from planner.context import PlanContext
from planner.functions import json as json_fns
from planner.functions.aggregate import resolve_aggregate
from planner.guard import Outgrown
from planner.expr import (
    ExprPlanner, Grouping, ast_nodes, coerce, contains_aggregate, figure_colname, sort_direction, type_from_ast,
    window_calls,
)
from planner.optimize import optimize
from planner.plan import (
    Constant, Distinct, Filter, Get, Join, LateralJoin, Limit, OrderBy, Plan, Project, Recursive, Reduce, SetOp, SortKey, Unnest,
    Series, Window, WindowCall, WorkTable,
)
from planner.levels import AggregateRef, deepen
from planner.scalar import Call, ColRef, Literal, is_constant
from planner.scope import Scope, ScopeItem


#: aggregates that also run as window functions over the default frame
_WINDOW_AGGREGATES = ("count", "sum", "avg", "min", "max", "bool_and", "bool_or", "stddev_samp", "stddev_pop",
                      "var_samp", "var_pop")


#: functions whose rows are a system view's (PostgreSQL's system views are SELECTs from
#: them): function name -> the view in pg_catalog, whose columns are the function's OUT
#: columns (PostgreSQL 53, "System Views")
VIEW_FUNCTIONS = {"pg_show_all_settings": "pg_settings", "pg_cursor": "pg_cursors",
                  "pg_prepared_statement": "pg_prepared_statements"}


@dataclass(frozen=True)
class PlannedQuery:
    """A planned SELECT: the plan and the names of its output columns. For a WITH query,
    ``level`` is the number of queries enclosing the one it belongs to (its OuterRefs
    count from there: ``QueryPlanner._cte``)."""

    plan: Plan
    names: tuple[str, ...]
    level: int = 0


class QueryPlanner:
    """Plans queries against one catalog snapshot. ``params``: values of $1..$n.
    ``ctx``: what the plan takes from its statement (``planner.context``; by default a
    statement starting now, without ``mz_now()``)."""

    def __init__(self, snap: CatalogSnapshot, params: list | None = None,
                 outer_scopes: list[Scope] | None = None, ctes: dict | None = None,
                 catalog_only: bool | None = None, row_count=None, outer_aggregates: list | None = None,
                 ctx: PlanContext | None = None):
        self.snap = snap
        self.params = params or []
        self.ctx = ctx or PlanContext.starting()
        self.outer_scopes = outer_scopes or []
        #: per enclosing query (as ``outer_scopes``), the sink of its aggregates found
        #: here (``ExprPlanner.outer_aggregates``)
        self.outer_aggregates = outer_aggregates if outer_aggregates is not None else [None] * len(self.outer_scopes)
        self.ctes: dict[str, PlannedQuery] = dict(ctes or {})
        #: the statement reads only system tables, so it runs in Python (planner.interpret),
        #: which can do what Spark cannot (WITH RECURSIVE). None: decide from the statement.
        self.catalog_only = catalog_only
        #: estimated rows of a catalog relation (or None), for join ordering: see
        #: ``planner.optimize.optimize``
        self.row_count = row_count

    def expr_planner(self, scope: Scope, agg_context: str | None = None) -> ExprPlanner:
        ep = ExprPlanner(scope, self.params, agg_context, self.outer_scopes, self.plan_subquery)
        ep.outer_aggregates = self.outer_aggregates
        ep.resolve_relation_oid = self.relation_oid
        ep.relation_name = self.relation_name
        ep.schema_exists = self.snap.schema_exists
        ep.path = self.snap.scope.search_path
        ep.namespace_oid = self.namespace_oid
        ep.visible_oids = self.visible_oids
        ep.ctx = self.ctx
        return ep

    def visible_oids(self) -> set[int]:
        """OIDs of the user tables, views, materialized views, sequences and indexes in the
        search path."""
        from catalog.pg_catalog import object_oid

        path = set(self.snap.search_path())
        return {object_oid(o.id) for objs in (self.snap.tables, self.snap.views, self.snap.materialized_views,
                                              self.snap.sequences, self.snap.indexes)
                for o in objs.values() if o.schema in path}

    def namespace_oid(self, name: str) -> int | None:
        """pg_namespace's OID of schema ``name``, None if there is none."""
        from catalog.pg_catalog import namespace_oid

        return namespace_oid(self.snap, name) if self.snap.schema_exists(name) else None

    def relation_name(self, oid: int) -> str:
        """regclassout: the name of the relation with ``oid``, or its digits if none."""
        from catalog.pg_catalog import object_oid

        for rel in [*self.snap.tables.values(), *self.snap.views.values(), *self.snap.materialized_views.values(),
                    *self.snap.builtins.values(), *self.snap.sequences.values()]:
            if object_oid(rel.id) == oid:
                return rel.name
        return str(oid)

    def relation_oid(self, name: str) -> int:
        """OID of the relation ``name`` names (``t``, ``public.t``, ``"T"``), as ``'...'::regclass``.

        Raises:
            SqlError 42P01 if there is none."""
        from catalog.pg_catalog import object_oid
        from pglast.parser import parse_sql

        try:
            rv = parse_sql(f"SELECT * FROM {name}")[0].stmt.fromClause[0]
        except Exception:
            raise SqlError(INVALID_NAME, f'invalid name syntax: "{name}"') from None
        try:
            return object_oid(self.snap.resolve_relation(rv.schemaname, rv.relname).id)
        except SqlError as e:
            try:
                return object_oid(self.snap.resolve_sequence(rv.schemaname, rv.relname).id)
            except SqlError:
                raise e from None

    def plan_subquery(self, stmt, scope: Scope, sink=None) -> "PlannedQuery":
        """Plan a subquery whose correlated names resolve in ``scope`` (depth 1) and then in
        this query's own enclosing scopes; ``sink`` takes the aggregates in it that
        belong to this query (``ExprPlanner.outer_aggregates``)."""
        return QueryPlanner(self.snap, self.params, [scope] + self.outer_scopes, self.ctes,
                            self.catalog_only, outer_aggregates=[sink] + self.outer_aggregates,
                            ctx=self.ctx).plan_raw(stmt)

    #: True for the planner of a JOIN after comma-separated FROM items, which are its
    #: nearest outer scope: its LATERAL items see them, its ON conditions do not (42P01)
    conditions_hide_lateral = False

    def _join_condition_planner(self, scope: Scope) -> ExprPlanner:
        """The planner of a JOIN's ON or USING condition over ``scope``."""
        if not self.conditions_hide_lateral:
            return self.expr_planner(scope, agg_context="JOIN conditions")
        hidden = QueryPlanner(self.snap, self.params, [Scope()] + self.outer_scopes[1:], self.ctes, self.catalog_only,
                              outer_aggregates=[None] + self.outer_aggregates[1:], ctx=self.ctx)
        return hidden.expr_planner(scope, agg_context="JOIN conditions")

    def _child(self) -> "QueryPlanner":
        return QueryPlanner(self.snap, self.params, self.outer_scopes, self.ctes, self.catalog_only,
                            outer_aggregates=self.outer_aggregates, ctx=self.ctx)

    # -- entry ------------------------------------------------------------------------

    def plan_select(self, stmt: ast.SelectStmt) -> PlannedQuery:
        """The optimized plan of ``stmt`` (``planner.optimize``), ready to run.

        Raises:
            SqlError: PostgreSQL's errors of name resolution and typing; 0A000 for what
            cannot be planned yet."""
        pq = self.plan_raw(stmt)
        return PlannedQuery(optimize(pq.plan, self.row_count, ctx=self.ctx), pq.names)

    def plan_raw(self, stmt: ast.SelectStmt) -> PlannedQuery:
        """The plan of ``stmt`` as written (Materialize's raw plan): subqueries stay in the
        expressions that use them, joins in the order of the FROM clause."""
        if self.catalog_only is None:
            self.catalog_only = reads_only_catalog(self.snap, stmt)
        if stmt.withClause is not None:
            planner = self._child()
            planner._plan_ctes(stmt.withClause)
            inner = ast.SelectStmt(**{k: getattr(stmt, k) for k in stmt if k != "withClause"})
            return planner.plan_raw(inner)
        if stmt.op != SetOperation.SETOP_NONE:
            return self._plan_setop(stmt)
        if stmt.valuesLists:
            plan = self.plan_values(stmt.valuesLists)
            names = tuple(n for n, _ in plan.columns)
            plan, names = self._order_limit_plain(plan, names, stmt)
            return PlannedQuery(plan, names)
        if stmt.intoClause is not None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "SELECT INTO is not supported")
        if stmt.lockingClause:
            raise SqlError(FEATURE_NOT_SUPPORTED, "SELECT ... FOR UPDATE is not supported")
        return self._plan_simple(stmt)

    def _cte(self, name: str) -> PlannedQuery:
        """WITH query ``name`` as read here: a reference from a subquery deeper than the
        query it belongs to reads that query's enclosing rows through more levels
        (``WITH s AS (SELECT t.y) ... (SELECT * FROM s)``: ``t`` is one level further)."""
        pq = self.ctes[name]
        deeper = len(self.outer_scopes) - pq.level
        return PlannedQuery(deepen(pq.plan, deeper), pq.names) if deeper else pq

    def _plan_ctes(self, with_clause) -> None:
        for cte in with_clause.ctes:
            if cte.ctename in self.ctes and cte.ctename in [c.ctename for c in with_clause.ctes[: with_clause.ctes.index(cte)]]:
                raise SqlError(DUPLICATE_ALIAS, f'WITH query name "{cte.ctename}" specified more than once')
            q = cte.ctequery
            if with_clause.recursive and q.op == SetOperation.SETOP_UNION and _references(q.rarg, cte.ctename):
                self.ctes[cte.ctename] = replace(self._plan_recursive(cte), level=len(self.outer_scopes))
                continue
            pq = self._child().plan_raw(cte.ctequery)
            names = list(pq.names)
            if cte.aliascolnames:
                aliases = [c.sval for c in cte.aliascolnames]
                if len(aliases) > len(names):
                    raise SqlError(INVALID_COLUMN_REFERENCE, f'WITH query "{cte.ctename}" has {len(names)} columns available but {len(aliases)} columns specified')
                names = aliases + names[len(aliases):]
            self.ctes[cte.ctename] = PlannedQuery(pq.plan, tuple(names), len(self.outer_scopes))

    def _plan_recursive(self, cte) -> PlannedQuery:
        """``name AS (base UNION [ALL] step)`` where ``step`` reads ``name`` (PostgreSQL 7.8.2).

        Raises:
            SqlError 0A000 unless the query reads only system tables (it then runs in
            Python; Spark has no fixpoint iteration); 42804 when a step column's type
            differs from the base's."""
        if not self.catalog_only:
            raise SqlError(FEATURE_NOT_SUPPORTED, "WITH RECURSIVE is supported over system catalogs only")
        q = cte.ctequery
        if q.sortClause or q.limitCount is not None or q.limitOffset is not None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "ORDER BY/LIMIT in a recursive query is not implemented")
        base = self._child().plan_raw(q.larg)
        names = list(base.names)
        if cte.aliascolnames:
            names = [c.sval for c in cte.aliascolnames] + names[len(cte.aliascolnames):]
        types = [TEXT if t.name == "unknown" else t for _, t in base.plan.columns]
        base_plan = base.plan
        if [t for _, t in base_plan.columns] != types:
            base_plan = Project(base_plan, tuple(coerce(ColRef(i, t0), t, fmt=self.ctx.guard.text) for i, ((_, t0), t) in
                                                 enumerate(zip(base_plan.columns, types))), tuple(names))
        cte_id = next(_CTE_IDS)
        child = self._child()
        child.ctes[cte.ctename] = PlannedQuery(WorkTable(cte_id, tuple(zip(names, types))), tuple(names),
                                               len(self.outer_scopes))
        step = child.plan_raw(q.rarg)
        if len(step.plan.columns) != len(types):
            raise SqlError(SYNTAX_ERROR, "each UNION query must have the same number of columns")
        exprs = []
        for i, ((_, st), t) in enumerate(zip(step.plan.columns, types)):
            if st != t and not (st.name == t.name or st.name == "unknown" or (st.is_numeric and t.is_numeric)):
                raise SqlError(DATATYPE_MISMATCH, f'recursive query "{cte.ctename}" column {i + 1} has type {t.sql()} '
                                                  f"in non-recursive term but type {st.sql()} overall")
            exprs.append(coerce(ColRef(i, st), t, fmt=self.ctx.guard.text))
        step_plan = Project(step.plan, tuple(exprs), tuple(names))
        return PlannedQuery(Recursive(cte_id, base_plan, step_plan, q.all), tuple(names))

    def _plan_setop(self, stmt: ast.SelectStmt) -> PlannedQuery:
        op = {SetOperation.SETOP_UNION: "union", SetOperation.SETOP_INTERSECT: "intersect",
              SetOperation.SETOP_EXCEPT: "except"}[stmt.op]
        left = self._child().plan_raw(stmt.larg)
        right = self._child().plan_raw(stmt.rarg)
        if len(left.plan.columns) != len(right.plan.columns):
            raise SqlError(SYNTAX_ERROR, f"each {op.upper()} query must have the same number of columns")
        types = [ty.common_type([lt, rt], op.upper()) for (_, lt), (_, rt) in zip(left.plan.columns, right.plan.columns)]
        types = [TEXT if t.name == "unknown" else t for t in types]

        def conform(p):
            if [t for _, t in p.columns] == types:
                return p
            return Project(p, tuple(coerce(ColRef(i, t0), t, fmt=self.ctx.guard.text) for i, ((_, t0), t) in enumerate(zip(p.columns, types))),
                           tuple(n for n, _ in p.columns))

        plan = SetOp(op, conform(left.plan), conform(right.plan), bool(stmt.all))
        names = left.names
        plan = Project(plan, tuple(ColRef(i, t) for i, t in enumerate(types)), tuple(names))
        plan, names = self._order_limit_plain(plan, names, stmt)
        return PlannedQuery(plan, tuple(names))

    def plan_values(self, rows) -> Plan:
        """``VALUES (...), (...)``: constant rows with a common type per column (10.5):
        a Constant, or (a value too costly to compute in the session's thread,
        ``planner.guard``) a UNION ALL of one-row Projects, computed where the query runs."""
        width = len(rows[0])
        if any(len(r) != width for r in rows):
            raise SqlError(SYNTAX_ERROR, "VALUES lists must all be the same length")
        planner = self.expr_planner(Scope(), agg_context="VALUES")
        exprs = [[planner.plan(v) for v in row] for row in rows]
        types = []
        for j in range(width):
            t = ty.common_type([r[j].type for r in exprs], "VALUES")
            types.append(t)
        coerced = []
        for r in exprs:
            cs = tuple(coerce(e, t, fmt=self.ctx.guard.text) for e, t in zip(r, types))
            if not all(is_constant(c) for c in cs):
                raise SqlError(FEATURE_NOT_SUPPORTED, "VALUES may only contain constant expressions")
            coerced.append(cs)
        columns = tuple((f"column{j + 1}", t) for j, t in enumerate(types))
        try:
            return Constant(tuple(tuple(evaluate(c, ctx=self.ctx) for c in cs) for cs in coerced), columns)
        except Outgrown:
            names = tuple(n for n, _ in columns)
            one_row = [Project(Constant(((),), ()), tuple(fold(c, self.ctx) for c in cs), names) for cs in coerced]
            return functools.reduce(lambda a, b: SetOp("union", a, b, True), one_row)

    # -- FROM -------------------------------------------------------------------------

    def plan_from(self, from_clause) -> tuple[Plan, Scope]:
        if not from_clause:
            return Constant(((),), ()), Scope()
        plan, scope = self.plan_from_item(from_clause[0])
        for item in from_clause[1:]:
            if isinstance(item, ast.JoinExpr) and _contains_lateral(item):
                # A LATERAL item inside a JOIN also sees the FROM items before the join
                # (PostgreSQL 7.2.1.5): the join is planned against them, as a lateral item.
                joins = self._lateral_child(scope)
                joins.conditions_hide_lateral = True
                p2, s2 = joins.plan_join(item)
                self._check_duplicate_aliases(scope, s2)
                plan, scope = LateralJoin(plan, p2, "cross", None), scope.concat(s2)
                continue
            p2, s2 = self.plan_from_item(item, scope)
            self._check_duplicate_aliases(scope, s2)
            plan, scope = self._join_lateral(item, plan, p2, "cross", None), scope.concat(s2)
        return plan, scope

    @staticmethod
    def _join_lateral(item, left, right, kind, on):
        """A Join, or a LateralJoin when ``item`` was planned against the FROM items before
        it (``LATERAL (subquery)``, and every function call, implicitly lateral)."""
        if _is_lateral(item):
            return LateralJoin(left, right, kind, on)
        return Join(left, right, kind, on)

    def _lateral_child(self, scope: Scope | None) -> "QueryPlanner":
        """A planner for a LATERAL item: the FROM items before it are its nearest outer
        scope (depth 1); this planner when there are none."""
        if scope is None:
            return self
        return QueryPlanner(self.snap, self.params, [scope or Scope()] + self.outer_scopes, self.ctes,
                            self.catalog_only, outer_aggregates=[None] + self.outer_aggregates, ctx=self.ctx)

    def _check_duplicate_aliases(self, a: Scope, b: Scope):
        dup = a.qualifiers() & b.qualifiers()
        if dup:
            raise SqlError(DUPLICATE_ALIAS, f'table name "{sorted(dup)[0]}" specified more than once')

    def plan_from_item(self, item, left: Scope | None = None) -> tuple[Plan, Scope]:
        """Plan one FROM item; ``left``: the scope of the items before it, which a LATERAL
        item (and a function call) may read."""
        if isinstance(item, ast.RangeVar):
            if item.schemaname is None and item.relname in self.ctes:
                return self._derived(self._cte(item.relname), item.alias, item.relname)
            try:
                rel = self.snap.resolve_relation(item.schemaname, item.relname)
            except SqlError as e:
                try:
                    q = self.snap.resolve_sequence(item.schemaname, item.relname)
                except SqlError:
                    raise e from None
                from planner.functions.sequence import sequence_relation

                cols, row = sequence_relation(q, self.ctx.session)
                return self._derived(PlannedQuery(Constant((row,), cols), tuple(n for n, _ in cols)), item.alias,
                                     item.relname)
            if isinstance(rel, View) and rel.id not in self.ctx.indexed_views:
                import pglast

                view_stmt = pglast.parse_sql(rel.sql)[0].stmt
                # its names mean what they meant when it was made
                pq = QueryPlanner(self.snap.searching_from(rel.schema), catalog_only=False,
                                  ctx=self.ctx).plan_raw(view_stmt)
                pq = PlannedQuery(pq.plan, tuple(c.name for c in rel.columns))
                return self._derived(pq, item.alias, item.relname)
            qualifier = item.alias.aliasname if item.alias else item.relname
            cols = rel.columns
            names = [c.name for c in cols]
            if item.alias and item.alias.colnames:
                aliases = [c.sval for c in item.alias.colnames]
                if len(aliases) > len(names):
                    raise SqlError(INVALID_COLUMN_REFERENCE,
                                   f'table "{qualifier}" has {len(names)} columns available but {len(aliases)} columns specified')
                names = aliases + names[len(aliases):]
            # a stored column's scale is the read's (Lowerer._Get), not its expressions' type
            plan = Get(rel, tuple((c.name, c.type.logical()) for c in cols))
            scope = Scope([ScopeItem(qualifier, n, c.type.logical(), i) for i, (n, c) in enumerate(zip(names, cols))])
            return plan, scope
        if isinstance(item, ast.JoinExpr):
            return self.plan_join(item)
        if isinstance(item, ast.RangeSubselect):
            # no alias: its columns are named unqualified only (Materialize, PostgreSQL 16)
            planner = self._lateral_child(left) if item.lateral else self._child()
            sub = planner.plan_raw(item.subquery)
            return self._derived(sub, item.alias, None)
        if isinstance(item, ast.RangeFunction):
            pq = self._plan_function(item, self._lateral_child(left))
            scalar = len(pq.names) - bool(item.ordinality) == 1 and not item.coldeflist
            if item.alias is not None and not item.alias.colnames and scalar:
                pq = PlannedQuery(pq.plan, (item.alias.aliasname,) + pq.names[1:])  # f(...) AS x: the column is x too
            plan, scope = self._derived(pq, item.alias, item.functions[0][0].funcname[-1].sval.lower())
            if scalar and not item.ordinality:
                scope = Scope([replace(i, scalar=True) for i in scope.items])
            return plan, scope
        raise SqlError(FEATURE_NOT_SUPPORTED, f"FROM item {type(item).__name__} is not supported")

    def _plan_function(self, item: ast.RangeFunction, lateral: "QueryPlanner") -> PlannedQuery:
        """A function in FROM (PostgreSQL 7.2.1.4): ``generate_series`` with constant
        arguments is a Series; ``unnest(array)`` and the registry's set-returning functions
        (``planner.functions.SET_RETURNING``) unnest arrays computed from their arguments,
        which may name columns of the FROM items before it (``lateral`` plans them) or of
        an enclosing query. ``ROWS FROM (f(...), g(...))`` puts the functions' columns side
        by side, padding the shorter with NULLs. ``WITH ORDINALITY`` adds the row's 1-based
        position. A one-column function's column is named after the function.

        Raises:
            SqlError 0A000 for other functions; 22023 for a zero step."""
        planner = lateral.expr_planner(Scope(), agg_context="functions in FROM")
        if item.is_rowsfrom or len(item.functions) != 1:
            # ROWS FROM (f(...), g(...)): the functions' columns side by side, the shorter
            # ones padded with NULLs (PostgreSQL 7.2.1.4).
            columns = []
            for entry in item.functions:
                fc = entry[0]
                if not isinstance(fc, ast.FuncCall) or entry[1]:
                    raise SqlError(FEATURE_NOT_SUPPORTED, "ROWS FROM takes function calls without column definitions")
                columns += self._function_columns(fc.funcname[-1].sval.lower(),
                                                  [fold(planner.plan(a), self.ctx) for a in fc.args or ()])
            return self._unnest_rows(columns, item.ordinality)
        fc = item.functions[0][0]
        if not isinstance(fc, ast.FuncCall):
            raise SqlError(FEATURE_NOT_SUPPORTED, "only function calls are supported in FROM")
        name = fc.funcname[-1].sval.lower()
        args = [fold(planner.plan(a), self.ctx) for a in fc.args or ()]
        if name in json_fns.RECORD_FUNCTIONS or item.coldeflist:
            return self._json_record(name, args, item)
        series = name == "generate_series" and all(isinstance(a, Literal) and (a.type.is_integer or a.type.name == "unknown")
                                                   for a in args) and not item.ordinality
        if (name == "unnest" and args and all(a.type.is_array or a.type.is_list for a in args)) or (name in functions.SET_RETURNING
                                                                                  and not series):
            return self._unnest_rows(self._function_columns(name, args), item.ordinality)
        if name == "unnest":  # of no array or list: as unnest(...) in a select list
            raise functions.undefined_function(name, [a.type for a in args])
        if name in VIEW_FUNCTIONS:
            return self._view_function(name, args, item.ordinality)
        row_entry = next((f for f in functions.BY_SQL_NAME.get(name, ()) if "row_in_from" in f.extra), None)
        if row_entry is not None:
            return self._session_row(row_entry, name, args)
        if not all(isinstance(a, Literal) for a in args):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"function {name} in FROM is not supported")
        if name == "generate_series" and len(args) in (2, 3) and all(a.type.is_integer or a.type.name == "unknown"
                                                                       for a in args):
            t = INT8 if any(a.type.name in ("int8", "oid") for a in args) else INT4
            vals = [coerce(a, t, fmt=self.ctx.guard.text).value for a in args]
            if any(v is None for v in vals):
                return PlannedQuery(Constant((), ((name, t),)), (name,))
            step = vals[2] if len(vals) > 2 else 1
            if step == 0:
                raise SqlError(INVALID_PARAMETER_VALUE, "step size cannot equal zero")
            return PlannedQuery(Series(vals[0], vals[1], step, ((name, t),)), (name,))
        raise SqlError(FEATURE_NOT_SUPPORTED, f"function {name} in FROM is not supported")

    def _view_function(self, name: str, args: list, ordinality: bool) -> PlannedQuery:
        """A function behind a system view (``VIEW_FUNCTIONS``): the view's rows and columns,
        as PostgreSQL defines the view (``pg_settings`` is ``SELECT * FROM
        pg_show_all_settings()``).

        Raises:
            SqlError 42883 for arguments (the functions take none); 0A000 WITH ORDINALITY."""
        if args:
            raise functions.undefined_function(name, [a.type for a in args])
        if ordinality:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"function {name} WITH ORDINALITY is not supported")
        import pglast

        return self._child().plan_raw(pglast.parse_sql(f"SELECT * FROM pg_catalog.{VIEW_FUNCTIONS[name]}")[0].stmt)

    def _session_row(self, entry, name: str, args: list) -> PlannedQuery:
        """A function returning a record in FROM (``pg_sequence_parameters(oid)``,
        ``pg_input_error_info(text, text)``: its ``extra["row_in_from"]``, (columns as
        (name, SqlType) pairs, ``(argument values, ctx) -> row``, ``ctx`` the statement's
        ``PlanContext``)): one row of those
        columns, read at plan time, as ``SELECT * FROM seq`` reads the sequence; a NULL
        argument of the strict function gives a row of NULLs (PostgreSQL's expansion of a
        NULL record).

        Raises:
            SqlError 0A000 for an argument computed per row; 42883 when no signature fits;
            the function's own errors."""
        if not all(isinstance(a, Literal) for a in args):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"function {name} in FROM needs constant arguments")
        _, casts, _ = functions.resolve([entry], name, [a.type for a in args])
        values = [coerce(a, t, fmt=self.ctx.guard.text).value for a, t in zip(args, casts)]
        columns, row = entry.extra["row_in_from"]
        out = (None,) * len(columns) if entry.strict and None in values else tuple(row(values, self.ctx))
        return PlannedQuery(Constant((out,), columns), tuple(n for n, _ in columns))

    def _json_record(self, name: str, args: list, item: ast.RangeFunction) -> PlannedQuery:
        """``jsonb_to_record(j) AS x(a int, ...)`` and ``jsonb_to_recordset`` (PostgreSQL
        9.16, table 9.49; json's the same, json being jsonb): one row of the object's
        fields, or one per object of the array, each column of the column definition
        list ``(x ->> 'a')::int`` (``x -> 'a'`` for a json or jsonb column), as
        populate_record_field gives a scalar's text to the type's input function, after a
        shape check with PostgreSQL's errors (``json_fns._RECORD_SHAPES``).

        Raises:
            SqlError 42601 without a column definition list, with one for another
            function or with WITH ORDINALITY; 42701 for a column named twice; 0A000 for
            array, composite and length-limited (varchar(n), char(n)) columns, whose
            PostgreSQL conversions (populate_array, the input function's length check)
            differ from a cast's; 42883 for other arguments."""
        if name not in json_fns.RECORD_FUNCTIONS:
            raise SqlError(SYNTAX_ERROR, 'a column definition list is only allowed for functions returning "record"')
        if not item.coldeflist:
            raise SqlError(SYNTAX_ERROR, 'a column definition list is required for functions returning "record"')
        if item.ordinality:
            raise SqlError(SYNTAX_ERROR, "WITH ORDINALITY cannot be used with a column definition list",
                           hint="Put the column definition list inside ROWS FROM().")
        if len(args) != 1 or (args[0].type.name not in ("jsonb", "unknown")):
            raise functions.undefined_function(name, [a.type for a in args])
        j = coerce(args[0], SqlType("jsonb"), fmt=self.ctx.guard.text)
        columns = []
        for c in item.coldeflist:
            t = type_from_ast(c.typeName)
            if t.is_array or (t.name in ("varchar", "bpchar") and t.precision is not None) or t.name == "record":
                raise SqlError(FEATURE_NOT_SUPPORTED, f"a {t.sql()} column of {name} is not supported")
            if c.colname in [n for n, _ in columns]:
                raise SqlError(DUPLICATE_COLUMN, f'column name "{c.colname}" specified more than once')
            columns.append((c.colname, t))
        what = "recordset" if json_fns.RECORD_FUNCTIONS[name] else "record"
        checked = Call("jsonb_record_check", (j, Literal(what, TEXT), Literal(name, TEXT)), j.type)
        if what == "recordset":
            rows = self._unnest_rows(self._function_columns("jsonb_array_elements", [checked]), False).plan
            x = Call("jsonb_record_check", (ColRef(0, rows.columns[0][1]), Literal("element", TEXT), Literal(name, TEXT)),
                     j.type)
        else:
            rows = Project(Constant(((),), ()), (checked,), ("?record?",))
            x = ColRef(0, j.type)
        exprs = tuple(Call("jsonb_get", (x, Literal(n, TEXT)), j.type) if t.name == "jsonb"
                      else coerce(Call("jsonb_get_text", (x, Literal(n, TEXT)), TEXT), t, explicit=True)
                      for n, t in columns)
        names = tuple(n for n, _ in columns)
        return PlannedQuery(Project(rows, exprs, names), names)

    def _function_columns(self, name: str, args: list) -> list:
        """(column name, array expression) of each output column of function ``name`` in
        FROM over planned ``args``: ``unnest(array)`` or a set-returning function of the
        registry. ``unnest(a, b, ...)`` of several arrays is their columns side by side
        (PostgreSQL 9.19: allowed only in FROM).

        Raises:
            SqlError 0A000 for other functions; 42883 when no signature fits."""
        if name == "unnest" and args and all(a.type.is_array or a.type.is_list for a in args):
            # a list's elements are its outer layer's (Materialize's unnest(list))
            return [(name, a if a.type.is_list else _flattened(a, self.ctx)) for a in args]
        if name in functions.SET_RETURNING:
            return _srf_columns(name, args, self.ctx)
        raise SqlError(FEATURE_NOT_SUPPORTED, f"function {name} in ROWS FROM is not supported")

    @staticmethod
    def _unnest_rows(columns: list, ordinality: bool) -> PlannedQuery:
        """The rows of arrays ``columns`` ((name, array expression) pairs) side by side,
        from one row holding them; with ``ordinality`` an ``ordinality`` column."""
        names = tuple(n for n, _ in columns)
        one = Project(Constant(((),), ()), tuple(a for _, a in columns), tuple(f"?array{i}?" for i in range(len(columns))))
        kinds = ("unnest",) * len(columns) + (("ordinality",) if ordinality else ())
        k = len(columns)
        plan = Unnest(one, tuple(range(k)) + ((0,) if ordinality else ()), kinds)
        cols = plan.columns
        out = tuple(ColRef(k + i, cols[k + i][1]) for i in range(len(kinds)))
        if ordinality:
            out = out[:-1] + (coerce(out[-1], INT8),)
            names += ("ordinality",)
        return PlannedQuery(Project(plan, out, names), names)

    def _derived(self, sub: PlannedQuery, alias, default_name: str | None) -> tuple[Plan, Scope]:
        names = list(sub.names)
        if alias is not None and alias.colnames:
            aliases = [c.sval for c in alias.colnames]
            if len(aliases) > len(names):
                raise SqlError(INVALID_COLUMN_REFERENCE, f"table \"{alias.aliasname}\" has {len(names)} columns available but {len(aliases)} columns specified")
            names = aliases + names[len(aliases):]
        q = alias.aliasname if alias is not None else default_name
        scope = Scope([ScopeItem(q, n, t, i) for i, (n, (_, t)) in enumerate(zip(names, sub.plan.columns))])
        return sub.plan, scope

    def plan_join(self, j: ast.JoinExpr) -> tuple[Plan, Scope]:
        lp, ls = self.plan_from_item(j.larg)
        rp, rs = self.plan_from_item(j.rarg, ls)  # a JOIN's LATERAL item sees its left side only
        if _is_lateral(j.rarg):
            if j.jointype not in (JoinType.JOIN_INNER, JoinType.JOIN_LEFT) or j.isNatural or j.usingClause:
                raise SqlError(FEATURE_NOT_SUPPORTED if j.jointype in (JoinType.JOIN_INNER, JoinType.JOIN_LEFT)
                               else INVALID_COLUMN_REFERENCE, "the LATERAL item of a RIGHT or FULL JOIN cannot refer to the left side"
                               if j.jointype not in (JoinType.JOIN_INNER, JoinType.JOIN_LEFT)
                               else "NATURAL or USING joins with LATERAL are not supported")
            self._check_duplicate_aliases(ls, rs)
            scope = ls.concat(rs)
            kind = "left" if j.jointype == JoinType.JOIN_LEFT else ("inner" if j.quals is not None else "cross")
            on = fold(self._join_condition_planner(scope).plan_bool(j.quals, "JOIN/ON"), self.ctx) \
                if j.quals is not None else (Literal(True, BOOL) if kind == "left" else None)
            return LateralJoin(lp, rp, kind, on), _join_alias(scope, j.alias)
        self._check_duplicate_aliases(ls, rs)
        kind = {JoinType.JOIN_INNER: "inner", JoinType.JOIN_LEFT: "left", JoinType.JOIN_RIGHT: "right",
                JoinType.JOIN_FULL: "full"}.get(j.jointype)
        if kind is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"join type {j.jointype.name} is not supported")
        scope = ls.concat(rs)
        if j.isNatural or j.usingClause:
            plan, scope = self._using_join(j, kind, lp, rp, ls, rs)
        elif j.quals is None:
            plan = Join(lp, rp, "cross" if kind == "inner" else kind, None if kind == "inner" else Literal(True, BOOL))
        else:
            plan = Join(lp, rp, kind, fold(self._join_condition_planner(scope).plan_bool(j.quals, "JOIN/ON"), self.ctx))
        return plan, _join_alias(scope, j.alias)

    def _using_join(self, j: ast.JoinExpr, kind: str, lp, rp, ls: Scope, rs: Scope) -> tuple[Plan, Scope]:
        """``JOIN ... USING (c, ...)`` and ``NATURAL JOIN`` (PostgreSQL 7.2.1.1): the join on
        ``l.c = r.c`` whose output has one merged column per name, of the two sides' common
        type: the left one for INNER and LEFT joins, the right one for RIGHT, COALESCE(l, r)
        for FULL (``transformFromClauseItem``). ``*`` gives the merged columns first, then
        the left's others, then the right's; ``l.c`` and ``r.c`` stay addressable. With
        ``USING (...) AS a``, ``a.c`` names a merged column.

        Raises:
            SqlError 42703 for a name a side lacks; 42702 for a name a side has twice;
            42701 for a name listed twice; 42804 for types with no common type; 42712
            for an alias a table inside already has."""
        if j.isNatural:
            rnames = {i.name for i in rs.star()}
            using = [i.name for i in ls.star() if i.name in rnames]
        else:
            using = [u.sval for u in j.usingClause]
            dup = next((n for k, n in enumerate(using) if n in using[:k]), None)
            if dup is not None:
                raise SqlError(DUPLICATE_COLUMN, f'column name "{dup}" appears more than once in USING clause')
        scope = ls.concat(rs)
        n_left = ls.width
        planner = self._join_condition_planner(scope)
        conds, merged, taken = [], [], set()
        for name in using:
            li, ri = _using_column(ls, name, "left"), _using_column(rs, name, "right")
            ri = replace(ri, index=ri.index + n_left)
            taken |= {(li.qualifier, li.index), (ri.qualifier, ri.index)}
            lref, rref = ColRef(li.index, li.type), ColRef(ri.index, ri.type)
            conds.append(planner.binary("=", lref, rref))
            t = ty.common_type([li.type, ri.type], "JOIN/USING")
            lref, rref = coerce(lref, t, fmt=self.ctx.guard.text), coerce(rref, t, fmt=self.ctx.guard.text)
            merged.append((name, Call("coalesce", (lref, rref), t) if kind == "full" else
                           rref if kind == "right" else lref))
        if not conds:
            plan = Join(lp, rp, "cross" if kind == "inner" else kind, None if kind == "inner" else Literal(True, BOOL))
        else:
            plan = Join(lp, rp, kind, fold(conds[0] if len(conds) == 1 else Call("and", tuple(conds), BOOL), self.ctx))
        width = scope.width
        extra = [e for _, e in merged if not isinstance(e, ColRef)]
        if extra:
            plan = Project(plan, tuple(ColRef(i, t) for i, (_, t) in enumerate(plan.columns)) + tuple(extra),
                           tuple(n for n, _ in plan.columns) + tuple(n for n, e in merged if not isinstance(e, ColRef)))
        items, at = [], width
        qualifier = j.join_using_alias.aliasname if j.join_using_alias is not None else None
        if qualifier is not None and qualifier in scope.qualifiers():
            raise SqlError(DUPLICATE_ALIAS, f'table name "{qualifier}" specified more than once')
        for name, e in merged:
            if isinstance(e, ColRef):
                items.append(ScopeItem(qualifier, name, e.type, e.index))
            else:
                items.append(ScopeItem(qualifier, name, e.type, at))
                at += 1
        items += [replace(i, unqualified=False) if (i.qualifier, i.index) in taken else i for i in scope.items]
        return plan, Scope(items)

    # -- SELECT -----------------------------------------------------------------------

    def _plan_simple(self, stmt: ast.SelectStmt) -> PlannedQuery:
        plan, scope = self.plan_from(stmt.fromClause)
        from_planner = self.expr_planner(scope)
        if stmt.whereClause is not None:
            where_planner = self.expr_planner(scope, agg_context="WHERE")
            pred = fold(where_planner.plan_bool(stmt.whereClause, "WHERE"), self.ctx)
            plan = Filter(plan, pred)  # the subqueries' OuterRefs index this input's row

        targets = self._expand_targets(stmt.targetList, scope)
        nodes = [t for t, _ in targets] + [s.node for s in stmt.sortClause or ()]
        grouped = bool(stmt.groupClause) or stmt.havingClause is not None or self._own_aggregates(nodes, from_planner) \
            or self._subquery_aggregates(nodes, from_planner)

        if grouped:
            if any(window_calls(t) for t, _ in targets) or any(window_calls(s.node) for s in stmt.sortClause or ()):
                raise SqlError(FEATURE_NOT_SUPPORTED, "window functions in queries with GROUP BY or aggregates are not supported yet")
            keys, sets = self._group_keys(stmt, targets, from_planner)
            grouping = Grouping(from_planner, keys, sets)
            sel_planner = self.expr_planner(Scope())
            sel_planner.grouping = grouping
            sel_planner.subquery_scope = scope
            sel_planner.remap_outer = grouping.remap_outer
            sel_planner.aggregate_sink = grouping.outer_aggregate
            exprs = [fold(sel_planner.plan(node), self.ctx) for node, _ in targets]
            having = None
            if stmt.havingClause is not None:
                having = fold(sel_planner.plan_bool(stmt.havingClause, "HAVING"), self.ctx)
            order_planner = sel_planner
            # Sort expressions may add aggregates, so plan them before building the Reduce.
            sort_exprs = self._sort_exprs(stmt, targets, exprs, order_planner)
            on_exprs = self._distinct_on(stmt, targets, exprs, order_planner)
            plan = self._reduce(plan, keys, sets, grouping.aggregates)
            if having is not None:
                plan = Filter(plan, having)
        else:
            plan = self._plan_windows(plan, stmt, targets, from_planner)
            plan, srf_refs = self._plan_srfs(plan, targets, from_planner)
            exprs = [srf_refs[i] if i in srf_refs else fold(from_planner.plan(node), self.ctx)
                     for i, (node, _) in enumerate(targets)]
            sort_exprs = self._sort_exprs(stmt, targets, exprs, from_planner)
            on_exprs = self._distinct_on(stmt, targets, exprs, from_planner)

        names = [name for _, name in targets]
        exprs = [coerce(e, TEXT, fmt=self.ctx.guard.text) if e.type.name == "unknown" else e for e in exprs]
        return self._finish(plan, exprs, names, sort_exprs, stmt, on_exprs)

    @staticmethod
    def _own_aggregates(nodes, from_planner: ExprPlanner) -> bool:
        """True when select list or ORDER BY items ``nodes`` call an aggregate that belongs
        to this query, not to an enclosing one (``planner.levels``)."""
        return any(from_planner.aggregate_level(n)[1] == 0 for node in nodes
                   for n in ast_nodes(node, (ast.SelectStmt,)) if _is_aggregate_call(n))

    @staticmethod
    def _subquery_aggregates(nodes, from_planner: ExprPlanner) -> bool:
        """True when a subquery in ``nodes`` has an aggregate that belongs to this query
        (``SELECT (SELECT count(t.x)) FROM t``: one row, PostgreSQL 4.2.7). The subqueries
        are planned once to find out (only those with aggregate calls)."""
        links = [n for node in nodes for n in ast_nodes(node, (ast.SelectStmt,)) if isinstance(n, ast.SubLink)
                 and any(_is_aggregate_call(c) for c in ast_nodes(n.subselect))]
        if not links:
            return False
        found = []

        def sink(agg, depth):
            found.append(agg)
            return AggregateRef(depth, 0, agg.type)

        probe = from_planner
        saved, probe.aggregate_sink = probe.aggregate_sink, sink
        try:
            for link in links:
                try:
                    probe.plan(link)
                except SqlError:
                    pass  # planned again for real, for its error
        finally:
            probe.aggregate_sink = saved
        return bool(found)

    def _distinct_on(self, stmt, targets, exprs, planner: ExprPlanner) -> list | None:
        """The expressions of ``DISTINCT ON (...)`` as ``_sort_exprs`` gives ORDER BY items
        (an output column by ordinal or name, or any expression); None without ON."""
        if not stmt.distinctClause or stmt.distinctClause[0] is None:
            return None
        items = SimpleNamespace(sortClause=[ast.SortBy(node=n, sortby_dir=SortByDir.SORTBY_DEFAULT,
                                                       sortby_nulls=SortByNulls.SORTBY_NULLS_DEFAULT)
                                            for n in stmt.distinctClause])
        return self._sort_exprs(items, targets, exprs, planner)

    def _plan_windows(self, plan, stmt, targets, planner: ExprPlanner):
        """A Window over ``plan`` for the window functions of the select list and ORDER BY
        (PostgreSQL 3.5, 4.2.8); ``planner`` then plans each call as a ref to its column.
        Named windows (``WINDOW w AS (...)``, ``OVER w``, ``OVER (w ...)``) are resolved
        here (PostgreSQL 7.2.5, "Window Function Processing").

        Raises:
            SqlError 42704 for an undefined window name; 42P20 for a window that overrides
            the PARTITION BY or ORDER BY of the one it names or copies one with a frame,
            and for nested window functions; 0A000 for GROUPS frames and EXCLUDE; 42883
            for unknown functions."""
        calls = [c for node, _ in targets for c in window_calls(node)]
        calls += [c for sb in stmt.sortClause or () for c in window_calls(sb.node)]
        named = {}
        for wd in stmt.windowClause or ():
            if wd.name in named:
                raise SqlError(WINDOWING_ERROR, f'window "{wd.name}" is already defined')
            named[wd.name] = _resolve_window(wd, named, over=False)
        if not calls:
            return plan
        width = len(plan.columns)
        planned = []
        for fc in calls:
            w = _resolve_window(fc.over, named, over=True)
            if window_calls(fc.args) or contains_aggregate(fc.args):
                raise SqlError(WINDOWING_ERROR, "window function calls cannot be nested")
            partition = tuple(fold(planner.plan(x), self.ctx) for x in w.partitionClause or ())
            order = tuple((fold(planner.plan(sb.node), self.ctx), *sort_direction(sb)) for sb in w.orderClause or ())
            frame = self._frame(w, order)
            planned.append(self._window_call(fc, planner, partition, order, frame))
        plan = Window(plan, tuple(planned))
        for i, (fc, c) in enumerate(zip(calls, planned)):
            planner.window_refs[id(fc)] = ColRef(width + i, c.type)
        return plan

    def _frame(self, w, order):
        """The ``Frame`` of window definition ``w`` (None: the default), PostgreSQL 4.2.8.

        Raises:
            SqlError 0A000 for GROUPS, EXCLUDE and RANGE offsets over non-numeric keys;
            42P20 for RANGE offsets without exactly one ORDER BY column; 22004/22013 for
            a NULL or negative offset."""
        from pglast import enums as en

        from planner.functions.window import Frame

        o = w.frameOptions
        if not o & en.FRAMEOPTION_NONDEFAULT:
            return None
        if o & en.FRAMEOPTION_GROUPS:
            raise SqlError(FEATURE_NOT_SUPPORTED, "GROUPS frames are not supported")
        if o & (en.FRAMEOPTION_EXCLUDE_CURRENT_ROW | en.FRAMEOPTION_EXCLUDE_GROUP | en.FRAMEOPTION_EXCLUDE_TIES):
            raise SqlError(FEATURE_NOT_SUPPORTED, "frame exclusion (EXCLUDE ...) is not supported")
        mode = "rows" if o & en.FRAMEOPTION_ROWS else "range"

        def bound(which: str):
            up = which.upper()
            for kind, bit in (("unbounded_preceding", f"{up}_UNBOUNDED_PRECEDING"), ("current", f"{up}_CURRENT_ROW"),
                              ("unbounded_following", f"{up}_UNBOUNDED_FOLLOWING")):
                if o & getattr(en, f"FRAMEOPTION_{bit}"):
                    return kind, None
            kind = "preceding" if o & getattr(en, f"FRAMEOPTION_{up}_OFFSET_PRECEDING") else "following"
            node = w.startOffset if which == "start" else w.endOffset
            e = self.expr_planner(Scope(), agg_context="window frame offsets").plan(node)
            if mode == "rows":
                e = coerce(e, INT8, fmt=self.ctx.guard.text)
                if not e.type.is_integer:
                    raise SqlError(DATATYPE_MISMATCH, f"argument of ROWS must be type bigint, not type {e.type.sql()}")
            else:
                if len(order) != 1:
                    raise SqlError(WINDOWING_ERROR, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
                key_t = order[0][0].type
                if not key_t.is_numeric:
                    raise SqlError(FEATURE_NOT_SUPPORTED, f"RANGE offsets over {key_t.sql()} are not supported")
                e = coerce(e, key_t, fmt=self.ctx.guard.text)
            if not is_constant(e):
                raise SqlError(INVALID_COLUMN_REFERENCE, f"argument of {mode.upper()} must not contain variables")
            v = evaluate(e, ctx=self.ctx)
            if v is None:
                raise SqlError(NULL_VALUE_NOT_ALLOWED, f"frame {which}ing offset must not be null")
            if v < 0:
                raise SqlError(INVALID_PRECEDING_OR_FOLLOWING_SIZE, f"frame {which}ing offset must not be negative" if mode == "rows"
                               else "invalid preceding or following size in window function")
            return kind, v

        return Frame(mode, bound("start"), bound("end"))

    @staticmethod
    def _window_call(fc, planner: ExprPlanner, partition, order, frame) -> WindowCall:
        """A window function call: a window entry of the registry (its signature decides
        the argument casts), or an aggregate over the window."""
        name = fc.funcname[-1].sval.lower()
        args = [planner.plan(a) for a in fc.args or ()]
        if fc.agg_distinct or fc.agg_order:
            raise SqlError(FEATURE_NOT_SUPPORTED, "DISTINCT or ORDER BY inside a window function is not supported")
        if fc.agg_filter is not None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "FILTER in a window function is not supported")
        entry = functions.WINDOW_FUNCTIONS.get(name)
        if entry is not None:
            if name in ("lag", "lead") and len(args) == 1:
                args.append(Literal(1, INT4))
            f, casts, result = functions.resolve([entry], name, [a.type for a in args])
            if result.name == "unknown":
                result = TEXT
                casts = [TEXT if t.name == "unknown" else t for t in casts]
            return WindowCall(f.name, tuple(planner.coerce(a, t) for a, t in zip(args, casts)), partition, order, result,
                              frame if f.extra.get("framed") else None)
        entry = functions.AGGREGATES.get(name)
        if entry is not None and entry.name in _WINDOW_AGGREGATES:
            if fc.agg_star:
                return WindowCall("count_star", (), partition, order, INT8, frame)
            if len(args) != 1:
                raise SqlError(UNDEFINED_FUNCTION, f"function {name} with {len(args)} arguments does not exist")
            f, cast_to, result = resolve_aggregate(name, args[0].type)
            return WindowCall(f.name, (planner.coerce(args[0], cast_to),), partition, order, result, frame)
        raise SqlError(UNDEFINED_FUNCTION, f"window function {name} with {len(args)} arguments does not exist")

    def _plan_srfs(self, plan, targets, planner: ExprPlanner):
        """Plan ``unnest(array)``, ``unnest(list)`` (Materialize's: the list's outer layer),
        ``generate_subscripts(array, 1)`` and the registry's set-returning select items as an Unnest over ``plan``. Returns the new plan and
        {target index: its value}: a ColRef, or a record of the columns of a function of
        several (``jsonb_each(j)``)."""
        srfs = [(i, node) for i, (node, _) in enumerate(targets) if _srf_name(node)]
        if not srfs:
            return plan, {}
        width = len(plan.columns)
        arrays, kinds, counts = [], [], []
        for _, node in srfs:
            name = _srf_name(node)
            args = node.args or ()
            counts.append(1)
            if name in functions.SET_RETURNING:
                cols = _srf_columns(name, [fold(planner.plan(a), self.ctx) for a in args], self.ctx)
                arrays += [c for _, c in cols]
                kinds += ["unnest"] * len(cols)
                counts[-1] = len(cols)
                continue
            if len(args) != (1 if name == "unnest" else 2):
                raise SqlError(UNDEFINED_FUNCTION, f"function {name} with {len(args)} arguments does not exist")
            arr = fold(planner.plan(args[0]), self.ctx)
            if name == "unnest" and arr.type.is_list:  # a list's elements are its outer layer's
                arrays.append(arr)
                kinds.append("unnest")
                continue
            if not arr.type.is_array:
                raise SqlError(UNDEFINED_FUNCTION, f"function {name}({arr.type.sql()}) does not exist")
            if name == "generate_subscripts":
                dim = fold(coerce(planner.plan(args[1]), INT4, fmt=self.ctx.guard.text), self.ctx)
                if not (isinstance(dim, Literal) and dim.value == 1):
                    raise SqlError(FEATURE_NOT_SUPPORTED, "generate_subscripts supports dimension 1 only")
            arrays.append(_flattened(arr, self.ctx) if name == "unnest" else arr)
            kinds.append("unnest" if name == "unnest" else "subscripts")
        keep = tuple(ColRef(i, t) for i, (_, t) in enumerate(plan.columns))
        plan = Project(plan, keep + tuple(arrays), tuple(n for n, _ in plan.columns) + ("?array?",) * len(arrays))
        plan = Unnest(plan, tuple(range(width, width + len(arrays))), tuple(kinds))
        cols = plan.columns
        out, at = {}, width + len(arrays)
        for (i, _), n in zip(srfs, counts):
            refs = tuple(ColRef(at + j, cols[at + j][1]) for j in range(n))
            # a function of several columns is one record value here (PostgreSQL 9.25)
            out[i] = refs[0] if n == 1 else Call("record", refs, SqlType("record"))
            at += n
        return plan, out

    def _expand_targets(self, target_list, scope: Scope) -> list[tuple]:
        """Select items as (AST node, output name), with ``*`` and ``t.*`` expanded."""
        out = []
        for rt in target_list or ():
            v = rt.val
            if isinstance(v, ast.ColumnRef) and isinstance(v.fields[-1], ast.A_Star):
                qual = v.fields[-2].sval if len(v.fields) > 1 else None
                items = scope.star(qual)
                if not items and qual is None:
                    raise SqlError(SYNTAX_ERROR, "SELECT * with no tables specified is not valid")
                for i in items:
                    out.append((_SyntheticRef(i), i.name))
                continue
            out.append((v, rt.name or figure_colname(v)))
        return out

    def _group_keys(self, stmt, targets, from_planner: ExprPlanner) -> tuple[list, list | None]:
        """The GROUP BY keys (distinct expressions), and with GROUPING SETS, ROLLUP or CUBE
        the grouping sets as tuples of key indexes (None for a plain GROUP BY): the
        product of the items' sets, a plain expression being a set of its own
        (PostgreSQL 7.2.4); ``GROUP BY DISTINCT`` drops repeated sets."""
        keys: list = []
        if not any(isinstance(g, ast.GroupingSet) for g in stmt.groupClause or ()):
            for g in stmt.groupClause or ():
                self._group_key(g, targets, from_planner, keys)
            return keys, None

        def elems(node) -> tuple:
            nodes = node.args if isinstance(node, ast.RowExpr) else (node,)
            return tuple(self._group_key(n, targets, from_planner, keys) for n in nodes)

        def sets_of(node) -> list[tuple]:
            if not isinstance(node, ast.GroupingSet):
                return [elems(node)]
            kind = node.kind
            parts = list(node.content or ())
            if kind == GroupingSetKind.GROUPING_SET_EMPTY:
                return [()]
            if kind == GroupingSetKind.GROUPING_SET_SIMPLE:
                return [tuple(i for p_ in parts for i in elems(p_))]
            if kind == GroupingSetKind.GROUPING_SET_ROLLUP:
                cols = [elems(p_) for p_ in parts]
                return [tuple(i for c in cols[:n] for i in c) for n in range(len(cols), -1, -1)]
            if kind == GroupingSetKind.GROUPING_SET_CUBE:
                cols = [elems(p_) for p_ in parts]
                if len(cols) > 12:
                    raise SqlError(STATEMENT_TOO_COMPLEX, "CUBE is limited to 12 elements")
                return [tuple(i for j, c in enumerate(cols) if mask >> (len(cols) - 1 - j) & 1 for i in c)
                        for mask in range(2 ** len(cols) - 1, -1, -1)]
            return [s_ for p_ in parts for s_ in sets_of(p_)]

        sets = [()]
        for g in stmt.groupClause:
            sets = [a + b for a in sets for b in sets_of(g)]
        if len(sets) > 4096:
            raise SqlError(STATEMENT_TOO_COMPLEX, "too many grouping sets present (maximum 4096)")
        sets = [tuple(dict.fromkeys(s_)) for s_ in sets]
        if stmt.groupDistinct:
            sets = list(dict.fromkeys(tuple(sorted(s_)) for s_ in sets))
        return keys, sets

    def _group_key(self, g, targets, from_planner: ExprPlanner, keys: list) -> int:
        """Plan GROUP BY item ``g`` (an expression, an output ordinal or alias) into
        ``keys``; its index there."""
        if isinstance(g, ast.A_Const) and isinstance(g.val, ast.Integer):
            n = g.val.ival
            if not 1 <= n <= len(targets):
                raise SqlError(INVALID_COLUMN_REFERENCE, f"GROUP BY position {n} is not in select list")
            node = targets[n - 1][0]
            if contains_aggregate(node):
                raise SqlError(GROUPING_ERROR, "aggregate functions are not allowed in GROUP BY")
            e = from_planner.plan(node)
        else:
            if contains_aggregate(g):
                raise SqlError(GROUPING_ERROR, "aggregate functions are not allowed in GROUP BY")
            try:
                e = from_planner.plan(g)
            except SqlError as err:
                # An output column alias may be grouped by name (PostgreSQL extension).
                alias = _bare_name(g)
                match = [t for t, name in targets if name == alias] if alias else []
                if err.sqlstate != UNDEFINED_COLUMN or len(match) != 1:
                    raise
                e = from_planner.plan(match[0])
        e = fold(e, self.ctx)
        if e not in keys:
            keys.append(e)
        return keys.index(e)

    @staticmethod
    def _reduce(plan, keys: list, sets: list | None, aggregates: list):
        """The Reduce of a GROUP BY; with grouping sets, the union of one Reduce per set,
        each with NULL for the keys not in its set and, after the keys, the set's number
        (which ``GROUPING()`` reads; see ``planner.expr.Grouping``)."""
        if sets is None:
            return Reduce(plan, tuple(keys), tuple(aggregates))
        out = None
        for n, members in enumerate(sets):
            r = Reduce(plan, tuple(keys[i] for i in members), tuple(aggregates))
            exprs = [ColRef(members.index(i), k.type) if i in members else Literal(None, k.type)
                     for i, k in enumerate(keys)]
            exprs.append(Literal(n, INT4))
            exprs += [ColRef(len(members) + j, a.type) for j, a in enumerate(aggregates)]
            branch = Project(r, tuple(exprs), tuple(f"?column{i}?" for i in range(len(exprs))))
            out = branch if out is None else SetOp("union", out, branch, True)
        return out

    def _sort_exprs(self, stmt, targets, exprs, planner: ExprPlanner) -> list[tuple]:
        """ORDER BY items as (output index or expression, descending, nulls_first)."""
        out = []
        names = [n for _, n in targets]
        for sb in stmt.sortClause or ():
            if sb.useOp:
                raise SqlError(FEATURE_NOT_SUPPORTED, "ORDER BY ... USING is not supported")
            desc, nulls_first = sort_direction(sb)
            node = sb.node
            target = None
            if isinstance(node, ast.A_Const) and isinstance(node.val, ast.Integer):
                n = node.val.ival
                if not 1 <= n <= len(targets):
                    raise SqlError(INVALID_COLUMN_REFERENCE, f"ORDER BY position {n} is not in select list")
                target = n - 1
            else:
                alias = _bare_name(node)
                if alias is not None and names.count(alias) >= 1:
                    hits = [i for i, n in enumerate(names) if n == alias]
                    if len(hits) > 1 and len({exprs[i] for i in hits}) > 1:
                        raise SqlError(AMBIGUOUS_COLUMN, f'ORDER BY "{alias}" is ambiguous')
                    target = hits[0]
                else:
                    e = fold(planner.plan(node), self.ctx)
                    target = exprs.index(e) if e in exprs else e
            out.append((target, desc, nulls_first))
        return out

    def _finish(self, plan, exprs, names, sort_exprs, stmt, on_exprs=None) -> PlannedQuery:
        """Select list, DISTINCT [ON], ORDER BY and LIMIT over ``plan``. Sort and DISTINCT ON
        items are output indexes or expressions (hidden columns, projected away at the end).

        ``DISTINCT ON (e, ...)`` keeps the first row of each group of equal ``e`` in ORDER BY
        order (PostgreSQL, SELECT "DISTINCT Clause"): a row_number() window partitioned by
        ``e`` and ordered like the query, filtered to 1.

        Raises:
            SqlError 42P10 when ORDER BY of a DISTINCT query is not in the select list, or
            DISTINCT ON does not match the leftmost ORDER BY items."""
        hidden = [t for t, _, _ in sort_exprs if not isinstance(t, int)]
        distinct = stmt.distinctClause is not None and on_exprs is None
        if distinct and hidden:
            raise SqlError(INVALID_COLUMN_REFERENCE, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
        all_exprs = list(exprs)

        def index_of(t):
            if isinstance(t, int):
                return t
            if t not in all_exprs[len(exprs):]:
                all_exprs.append(t)
            return all_exprs.index(t, len(exprs))

        keys = [SortKey(index_of(t), desc, nf) for t, desc, nf in sort_exprs]
        on = list(dict.fromkeys(index_of(t) for t, _, _ in on_exprs or ()))
        if on and keys:
            lead = list(dict.fromkeys(k.index for k in keys))[: len(on)]
            if set(lead) != set(on) and not set(k.index for k in keys) <= set(on):
                raise SqlError(INVALID_COLUMN_REFERENCE,
                               "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
        all_names = list(names) + [f"?order{i}?" for i in range(len(all_exprs) - len(exprs))]
        plan = Project(plan, tuple(all_exprs), tuple(all_names))
        if distinct:
            plan = Distinct(plan)
        if on:
            cols = plan.columns
            width = len(cols)
            order = tuple((ColRef(k.index, cols[k.index][1]), k.descending, k.nulls_first) for k in keys)
            rn = WindowCall("row_number", (), tuple(ColRef(i, cols[i][1]) for i in on), order, INT8)
            plan = Window(plan, (rn,))
            plan = Filter(plan, Call("eq", (ColRef(width, INT8), Literal(1, INT8)), BOOL))
            plan = Project(plan, tuple(ColRef(i, t) for i, (_, t) in enumerate(cols)), tuple(n for n, _ in cols))
        if keys:
            plan = OrderBy(plan, tuple(keys))
        plan = self._limit(plan, stmt)
        if len(all_exprs) > len(exprs):
            plan = Project(plan, tuple(ColRef(i, e.type) for i, e in enumerate(exprs)), tuple(names))
        return PlannedQuery(plan, tuple(names))

    def _order_limit_plain(self, plan, names, stmt):
        if stmt.sortClause:
            keys = []
            for sb in stmt.sortClause:
                node = sb.node
                if not (isinstance(node, ast.A_Const) and isinstance(node.val, ast.Integer)):
                    alias = _bare_name(node)
                    if alias not in names:
                        raise SqlError(FEATURE_NOT_SUPPORTED, "ORDER BY on VALUES must name an output column")
                    idx = list(names).index(alias)
                else:
                    idx = node.val.ival - 1
                keys.append(SortKey(idx, *sort_direction(sb)))
            plan = OrderBy(plan, tuple(keys))
        return self._limit(plan, stmt), names

    def _limit(self, plan, stmt):
        limit = self._limit_value(stmt.limitCount, "LIMIT")
        offset = self._limit_value(stmt.limitOffset, "OFFSET") or 0
        if limit is not None or offset:
            plan = Limit(plan, limit, offset)
        return plan

    def _limit_value(self, node, what: str) -> int | None:
        if node is None:
            return None
        e = self.expr_planner(Scope(), agg_context=what).plan(node)
        if not is_constant(e):
            raise SqlError(SYNTAX_ERROR, f"argument of {what} must not contain variables")
        e = coerce(e, INT8, fmt=self.ctx.guard.text)
        if not e.type.is_integer:
            raise SqlError(DATATYPE_MISMATCH, f"argument of {what} must be type bigint, not type {e.type.sql()}")
        v = evaluate(e, ctx=self.ctx)
        if v is not None and v < 0:
            raise SqlError(INVALID_ROW_COUNT_IN_LIMIT_CLAUSE, f"{what} must not be negative")
        return v


class _SyntheticRef(ast.ColumnRef):
    """A ColumnRef that names one scope item exactly (from ``*`` expansion)."""

    def __init__(self, item: ScopeItem):
        fields = (ast.String(item.qualifier), ast.String(item.name)) if item.qualifier else (ast.String(item.name),)
        super().__init__(fields=fields)
        #: the item itself: resolved by position where its scope is the one planned against,
        #: so ``*`` over columns of equal names (ROWS FROM, joins) takes each once
        self.scope_item = item


_CTE_IDS = itertools.count(1)
#: frameOptions of OVER (...) without a frame clause (PostgreSQL's FRAMEOPTION_DEFAULTS)
_DEFAULT_FRAME = 1058


def _resolve_window(w, named: dict, over: bool):
    """Window definition ``w`` with the named window it refers to merged in (PostgreSQL
    7.2.5: ``OVER w`` is window w itself; ``OVER (w ORDER BY ...)`` and ``WINDOW x AS
    (w ...)`` extend w, without overriding its PARTITION BY or ORDER BY nor copying its
    frame). ``over``: ``w`` is an OVER clause (else a WINDOW clause entry, named itself).

    Raises:
        SqlError 42704 for an undefined name; 42P20 for an override."""
    ref = w.name if over and w.name else w.refname
    if ref is None:
        return w
    base = named.get(ref)
    if base is None:
        raise SqlError(UNDEFINED_OBJECT, f'window "{ref}" does not exist')
    if over and w.name:
        return base
    if w.partitionClause:
        raise SqlError(WINDOWING_ERROR, f'cannot override PARTITION BY clause of window "{ref}"')
    if w.orderClause and base.orderClause:
        raise SqlError(WINDOWING_ERROR, f'cannot override ORDER BY clause of window "{ref}"')
    if base.frameOptions != _DEFAULT_FRAME:
        raise SqlError(WINDOWING_ERROR, f'cannot copy window "{ref}" because it has a frame clause')
    return ast.WindowDef(name=w.name, partitionClause=base.partitionClause,
                         orderClause=w.orderClause or base.orderClause, frameOptions=w.frameOptions,
                         startOffset=w.startOffset, endOffset=w.endOffset)


def _using_column(scope: Scope, name: str, side: str) -> ScopeItem:
    """The column ``name`` of one side of a USING join (the one ``*`` shows).

    Raises:
        SqlError 42703 when the side has none; 42702 when it has several."""
    hits = [i for i in scope.star() if i.name == name]
    if not hits:
        raise SqlError(UNDEFINED_COLUMN, f'column "{name}" specified in USING clause does not exist in {side} table')
    if len(hits) > 1:
        raise SqlError(AMBIGUOUS_COLUMN, f'common column name "{name}" appears more than once in {side} table')
    return hits[0]


def _join_alias(scope: Scope, alias) -> Scope:
    """The scope of ``(a JOIN b) AS j [(c, ...)]``: the join's ``*`` columns, named by ``j``
    alone (PostgreSQL 7.2.1.1: the alias hides the tables inside); others unreachable.

    Raises:
        SqlError 42P10 for more column aliases than columns."""
    if alias is None:
        return scope
    shown = scope.star()
    names = [i.name for i in shown]
    if alias.colnames:
        aliases = [c.sval for c in alias.colnames]
        if len(aliases) > len(names):
            raise SqlError(INVALID_COLUMN_REFERENCE, f'table "{alias.aliasname}" has {len(names)} columns available but '
                                    f'{len(aliases)} columns specified')
        names = aliases + names[len(aliases):]
    visible = {id(i): n for i, n in zip(shown, names)}
    return Scope([replace(i, qualifier=alias.aliasname, name=visible[id(i)]) if id(i) in visible
                  else replace(i, qualifier=None, unqualified=False) for i in scope.items])


def _is_aggregate_call(n) -> bool:
    return isinstance(n, ast.FuncCall) and n.over is None and n.funcname[-1].sval.lower() in functions.AGGREGATES


def _references(node, name: str) -> bool:
    return any(isinstance(n, ast.RangeVar) and n.schemaname is None and n.relname == name for n in ast_nodes(node))


def reads_only_catalog(snap: CatalogSnapshot, stmt) -> bool:
    """True when every relation ``stmt`` names is a system table or one of its own WITH
    queries, so that it can run in Python."""
    nodes = list(ast_nodes(stmt))
    ctes = {n.ctename for n in nodes if isinstance(n, ast.CommonTableExpr)}
    for n in nodes:
        if isinstance(n, ast.RangeVar) and not (n.schemaname is None and n.relname in ctes):
            try:
                if not snap.resolve_relation(n.schemaname, n.relname).builtin:
                    return False
            except SqlError:
                return False
        elif isinstance(n, ast.RangeFunction):
            return False
    return True


def _srf_name(node) -> str | None:
    if isinstance(node, ast.FuncCall):
        name = node.funcname[-1].sval.lower()
        if (name in ("unnest", "generate_subscripts") or name in functions.SET_RETURNING) and node.over is None:
            return name
    return None


def _is_lateral(item) -> bool:
    """True for a FROM item planned against the items before it: LATERAL (subquery) and
    function calls (implicitly LATERAL, PostgreSQL 7.2.1.5)."""
    return isinstance(item, ast.RangeFunction) or (isinstance(item, ast.RangeSubselect) and bool(item.lateral))


def _contains_lateral(item) -> bool:
    """True for a FROM item that is, or is a join containing, a lateral item."""
    if isinstance(item, ast.JoinExpr):
        return _contains_lateral(item.larg) or _contains_lateral(item.rarg)
    return _is_lateral(item)


def _flattened(arr, ctx: PlanContext):
    """unnest's array: its elements in storage order, whatever its dimensions
    (PostgreSQL 9.19: unnest expands an array of several dimensions to a set of rows),
    folded in the statement's context ``ctx``."""
    return fold(Call("array_flatten", (arr,), arr.type), ctx)


def _srf_columns(name: str, args: list, ctx: PlanContext) -> list:
    """(column name, array expression) of each output column of the registry's
    set-returning function ``name`` over planned ``args`` (unknown literals read in the
    statement's text settings: ``ctx``).

    Raises:
        SqlError 42883 when no signature fits; what the entry's ``plan_args_in`` raises
        (42501 for a role that may not call it)."""
    entry = functions.SET_RETURNING[name]
    if "plan_args_in" in entry.extra:  # a check at plan time (a privilege), as planner.expr's
        args = entry.extra["plan_args_in"](args, ctx)
    _, casts, result = functions.resolve([entry], name, [a.type for a in args])
    args = tuple(coerce(a, t, fmt=ctx.guard.text) for a, t in zip(args, casts))
    out = []
    for col_name, col_entry in entry.extra["columns"]:
        f = functions.FUNCTIONS[col_entry.format(type=result.name)]
        _, _, t = functions.resolve([f], name, list(casts))
        out.append((col_name, Call(f.name, args, t)))
    return out


def _bare_name(node) -> str | None:
    if isinstance(node, ast.ColumnRef) and len(node.fields) == 1 and isinstance(node.fields[0], ast.String):
        return node.fields[0].sval
    return None
