"""Plan scalar expressions: pglast AST nodes -> typed ScalarExprs over a Scope.

Implicit casts are inserted here, following ``planner.typing``; literals of type
``unknown`` are converted at plan time (``'2024-01-02'::date`` becomes a date
Literal). Aggregates are handled by a ``Grouping`` when the query groups.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Callable

import pglast
from pglast import ast
from pglast.enums import (
    A_Expr_Kind, BoolExprType, NullTestType, BoolTestType, MinMaxOp, SortByDir, SortByNulls, SubLinkType,
)

from catalog.errors import (
    SqlError, CANNOT_COERCE, DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, GROUPING_ERROR, INDETERMINATE_DATATYPE,
    INVALID_COLUMN_REFERENCE, INVALID_SCHEMA_NAME, SYNTAX_ERROR, TOO_MANY_ARGUMENTS, UNDEFINED_COLUMN,
    UNDEFINED_FUNCTION, UNDEFINED_OBJECT, UNDEFINED_PARAMETER, UNDEFINED_TABLE, WINDOWING_ERROR,
    WRONG_OBJECT_TYPE,
)
from catalog.pg_catalog import FIRST_USER_OID
from catalog.textio import DEFAULT_FORMAT, TextFormat, parse_text
from catalog.types import (
    SqlType, BOOL, DATE, INT4, INT8, MZ_TIMESTAMP, NUMERIC, OID, TEXT, TIMESTAMP, TIMESTAMPTZ, UNKNOWN, array_of, make_type,
)
from planner import functions as fn
from planner import typing as ty
from planner.functions.aggregate import resolve_aggregate
from planner.consteval import cast_value, fold
from planner.context import MAINTAINED, PlanContext
from planner.plan import Project
from planner.levels import AggregateRef, aggregate_level, lift_aggregate
from planner.scalar import (
    AggCall, Call, Case, Cast, ColRef, Literal, OuterRef, Param, Subquery, column_refs, is_constant,
)


#: OID alias types (PostgreSQL 8.19 "Object Identifier Types"); values are int8 OIDs here
OID_ALIASES = ("oid", "regclass", "regtype", "regproc", "regprocedure", "regnamespace", "regrole", "regoper")


def _cast_single(plan, t: SqlType):
    """``plan`` (one column) with its column cast to ``t``."""
    name, ct = plan.columns[0]
    return Project(plan, (coerce(ColRef(0, ct), t),), (name,))
from planner.scope import Scope


class DescribeParams(list):
    """The ``params`` of a plan made only to describe a statement (nothing of it may run:
    no nextval, say): ``$n`` plans as a Param whose type is inferred from its use;
    ``types`` collects the inferences."""

    def __init__(self, n: int, given: dict[int, SqlType] | None = None):
        super().__init__([None] * n)
        self.types: dict[int, SqlType] = dict(given or {})


def infer_param(e, target: SqlType):
    """If ``e`` is a parameter of still unknown type, infer ``target`` for it (recorded in
    its statement's ``DescribeParams``)."""
    if isinstance(e, Param) and e.type.name == "unknown":
        if e.described is not None:
            e.described.types.setdefault(e.index, target.unconstrained() if target.name == "numeric" else target)
        return Param(e.index, target, e.described)
    return None



def type_from_ast(tn: ast.TypeName) -> SqlType:
    """The SqlType a pglast TypeName names, with its modifiers (``numeric(10,2)``,
    ``timestamp(3)``, ``interval day to second(2)``: ``make_type``).

    Raises:
        SqlError 42704 for unknown types. ``int[][]`` is ``int[]``: PostgreSQL ignores
        declared dimensions (8.15.1).
    """
    names = [n.sval for n in tn.names]
    if names[0] == "pg_catalog" and len(names) > 1:
        names = names[1:]
    from planner.functions import lists

    layers = sum(1 for b in tn.arrayBounds or () if isinstance(b, ast.Integer) and b.ival == lists.LIST_BOUND)
    if len(names) == 1 and names[0].lower().startswith("map[") or layers:
        if layers and layers != len(tn.arrayBounds):
            raise SqlError(FEATURE_NOT_SUPPORTED, "lists of arrays are not supported")
        base = ast.TypeName(names=tn.names, typmods=tn.typmods, typemod=tn.typemod)
        t = lists.type_from_text(names[0]) if names[0].lower().startswith("map[") else type_from_ast(base)
        for _ in range(layers):
            t = lists.list_of(t)
        return t
    name = " ".join(names) if len(names) == 1 else names[-1]
    mods = []
    for m in tn.typmods or ():
        if isinstance(m, ast.A_Const) and isinstance(m.val, ast.Integer):
            mods.append(m.val.ival)
        else:
            raise SqlError(SYNTAX_ERROR, f"invalid type modifier for type {name}")
    t = make_type(name, mods)
    return array_of(t) if tn.arrayBounds else t


def coerce(e, target: SqlType, explicit: bool = False, fmt: TextFormat = DEFAULT_FORMAT):
    """Cast ``e`` to ``target`` unless it already has that type; unknown literals are
    converted immediately (PostgreSQL resolves them at parse analysis), in the session's
    text settings ``fmt`` (``Guard.text``: its DateStyle, TimeZone and IntervalStyle;
    ``ExprPlanner.coerce`` gives its statement's)."""
    if e.type == target:
        return e
    p = infer_param(e, target)
    if p is not None:
        return p
    if isinstance(e, Literal):
        # a constant is converted now, as PostgreSQL folds it (an untyped literal, and a
        # typed one such as a parameter of a type the client gave: int2 where int4 is wanted)
        if e.value is None:
            return Literal(None, target)
        return Literal(cast_value(e.value, e.type, target, explicit, fmt), target)
    if e.type.name == target.name and target.precision is None and target.scale is None:
        return e  # e.g. numeric(10,2) where numeric is wanted: no work to do
    return Cast(e, target)


def ast_nodes(node, stop=()):
    """Every pglast node in ``node`` (itself included), depth first; nodes of the ``stop``
    types are yielded but not entered."""
    if isinstance(node, (list, tuple)):
        for x in node:
            yield from ast_nodes(x, stop)
    elif isinstance(node, ast.Node):
        yield node
        if not isinstance(node, stop):
            for attr in node:
                yield from ast_nodes(getattr(node, attr), stop)


def _ast_contains(node, hit, stop=()) -> bool:
    """True if some AST node in ``node`` satisfies ``hit``; ``stop`` types are not entered."""
    return any(hit(n) for n in ast_nodes(node, stop))


def sort_direction(sb: ast.SortBy) -> tuple[bool, bool]:
    """(descending, nulls_first) of an ORDER BY item: NULLS FIRST is the default for DESC
    (PostgreSQL 7.5)."""
    desc = sb.sortby_dir == SortByDir.SORTBY_DESC
    if sb.sortby_nulls == SortByNulls.SORTBY_NULLS_DEFAULT:
        return desc, desc
    return desc, sb.sortby_nulls == SortByNulls.SORTBY_NULLS_FIRST


def contains_aggregate(node) -> bool:
    """True if the AST ``node`` calls an aggregate (outside of nested subqueries)."""
    return _ast_contains(node, lambda n: isinstance(n, ast.FuncCall) and _func_name(n) in fn.AGGREGATES
                         and n.over is None, stop=(ast.SelectStmt,))


def window_calls(node) -> list:
    """The window function calls (``f(...) OVER (...)``) in AST ``node``, outside subqueries."""
    return [n for n in ast_nodes(node, (ast.SelectStmt,)) if isinstance(n, ast.FuncCall) and n.over is not None]


def _contains_sublink(node) -> bool:
    return _ast_contains(node, lambda n: isinstance(n, ast.SubLink))


def _func_name(fc: ast.FuncCall) -> str:
    names = [n.sval for n in fc.funcname]
    return names[-1].lower()


def figure_colname(node) -> str:
    """The output column name PostgreSQL gives an unaliased select item (FigureColname)."""
    if isinstance(node, ast.ColumnRef):
        last = node.fields[-1]
        return last.sval if isinstance(last, ast.String) else "?column?"
    if isinstance(node, ast.FuncCall):
        return _func_name(node)
    if isinstance(node, ast.TypeCast):
        # A name from a column or function beats a type name; the outermost cast's type
        # name beats an inner one (FigureColnameInternal's "strength").
        arg = node.arg
        while isinstance(arg, ast.TypeCast):
            arg = arg.arg
        inner = figure_colname(arg)
        if inner != "?column?":
            return inner
        return node.typeName.names[-1].sval
    if isinstance(node, ast.A_Indirection):
        return figure_colname(node.arg)
    if isinstance(node, ast.A_ArrayExpr) or (isinstance(node, ast.SubLink) and node.subLinkType == SubLinkType.ARRAY_SUBLINK):
        return "array"
    if isinstance(node, ast.SubLink) and node.subLinkType == SubLinkType.EXISTS_SUBLINK:
        return "exists"
    if isinstance(node, ast.SubLink) and node.subLinkType == SubLinkType.EXPR_SUBLINK:
        sel = node.subselect
        while isinstance(sel, ast.SelectStmt) and sel.larg is not None:  # a set operation: its first branch
            sel = sel.larg
        targets = getattr(sel, "targetList", None)
        if targets:
            return targets[0].name or figure_colname(targets[0].val)
    if isinstance(node, ast.CaseExpr):
        return "case"
    if isinstance(node, ast.CoalesceExpr):
        return "coalesce"
    if isinstance(node, ast.MinMaxExpr):
        return "greatest" if node.op == MinMaxOp.IS_GREATEST else "least"
    if isinstance(node, ast.A_Expr) and node.kind == A_Expr_Kind.AEXPR_NULLIF:
        return "nullif"
    if isinstance(node, ast.SQLValueFunction):
        # current_user, current_timestamp, localtime, user, ... (their _N forms, with a
        # precision, are named alike)
        return node.op.name.removeprefix("SVFOP_").lower().removesuffix("_n")
    return "?column?"


class ExprPlanner:
    """Plans expressions over ``scope``. ``params`` are the values of ``$1..$n`` (text)."""

    def __init__(self, scope: Scope, params: list | None = None, agg_context: str | None = None,
                 outer_scopes: list[Scope] | None = None, plan_subquery=None):
        self.scope = scope
        self.params = params or []
        # When aggregates are not allowed, the clause name for the error message.
        self.agg_context = agg_context
        self.grouping: "Grouping | None" = None
        #: scopes of the enclosing queries, nearest first (for correlated subqueries)
        self.outer_scopes = outer_scopes or []
        #: plan_subquery(select_stmt, scope, sink) -> PlannedQuery, with ``scope`` as depth 1
        #: and ``sink`` taking the aggregates of this level found in it
        self.plan_subquery = plan_subquery
        #: per enclosing query (as ``outer_scopes``): sink(aggregate, depth) -> the reference
        #: to an aggregate that belongs to that query (``planner.levels``), or None where
        #: none may be (its WHERE, its FROM)
        self.outer_aggregates: list[Callable | None] = []
        #: the sink of this level's aggregates found in its subqueries (None: an error)
        self.aggregate_sink: Callable | None = None
        #: id of a window FuncCall node -> the column of the Window plan computing it
        self.window_refs: dict[int, ColRef] = {}
        #: resolves a relation name (``'public.t'``) to its OID, for ``::regclass``
        self.resolve_relation_oid: Callable[[str], int] | None = None
        #: the name of the relation with an OID (or the OID's digits), for ``::regclass::text``
        self.relation_name: Callable[[int], str] = str
        #: OIDs of the user objects in the search path's schemas, for pg_table_is_visible
        self.visible_oids: Callable[[], set[int]] | None = None
        #: whether a schema exists (the catalog's answer), for current_schema()
        self.schema_exists: Callable[[str], bool] | None = None
        #: the session's search_path (its catalog's ``scope``), for current_schema()
        self.path: tuple[str, ...] = ("public",)
        #: pg_namespace OID of a schema name, or None, for ``::regnamespace``
        self.namespace_oid: Callable[[str], int | None] | None = None
        #: the scope a subquery here correlates with, and how to remap its OuterRefs
        self.subquery_scope: Scope | None = None
        self.remap_outer: Callable | None = None
        #: what the plan takes from its statement: now(), mz_now() (``plan_mz_now``); a
        #: statement of its own by default (no mz_now(): a webhook's CHECK, say)
        self.ctx: PlanContext = PlanContext.starting()

    def coerce(self, e, target: SqlType, explicit: bool = False):
        """``coerce`` in this statement's text settings (``PlanContext.guard``)."""
        return coerce(e, target, explicit, self.ctx.guard.text)

    def plan(self, node):
        if self.grouping is not None:
            return self.grouping.plan(node, self)
        return self.plan_node(node)

    def plan_bool(self, node, clause: str):
        e = self.plan(node)
        if e.type.name == "unknown":
            e = self.coerce(e, BOOL)
        if e.type != BOOL:
            raise SqlError(DATATYPE_MISMATCH, f"argument of {clause} must be type boolean, not type {e.type.sql()}")
        return e

    # -- dispatch -----------------------------------------------------------------

    def plan_node(self, node):
        m = next((getattr(self, "_" + c.__name__) for c in type(node).__mro__ if hasattr(self, "_" + c.__name__)), None)
        if m is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"expression of type {type(node).__name__} is not supported")
        return m(node)

    def _ColumnRef(self, node: ast.ColumnRef):
        fields = node.fields
        if any(isinstance(f, ast.A_Star) for f in fields):
            raise SqlError(SYNTAX_ERROR, "* is not allowed here")
        names = [f.sval for f in fields]
        if len(names) > 3:
            raise SqlError(SYNTAX_ERROR, f"improper qualified name (too many dotted names): {'.'.join(names)}")
        qual, name = (None, names[0]) if len(names) == 1 else (names[-2], names[-1])
        exact = getattr(node, "scope_item", None)
        if exact is not None and any(i is exact for i in self.scope.items):
            return ColRef(exact.index, exact.type)
        try:
            item = self.scope.resolve(qual, name)
            return ColRef(item.index, item.type)
        except SqlError as first:
            if first.sqlstate not in (UNDEFINED_COLUMN, UNDEFINED_TABLE):
                raise
            if qual is None and name in self.scope.qualifiers() and not any(
                    i.name == name for o in self.outer_scopes for i in o.items):
                # A whole-row reference: FROM item ``name`` as one record value (8.16.5),
                # or the value itself for a function in FROM that returns a scalar.
                items = self.scope.star(name)
                if len(items) == 1 and items[0].scalar:
                    return ColRef(items[0].index, items[0].type)
                return Call("record", tuple(ColRef(i.index, i.type) for i in items), SqlType("record"))
            for depth, outer in enumerate(self.outer_scopes, start=1):
                try:
                    item = outer.resolve(qual, name)
                except SqlError as e:
                    if e.sqlstate in (UNDEFINED_COLUMN, UNDEFINED_TABLE):
                        continue
                    raise
                return OuterRef(depth, item.index, item.type)
            raise first

    def _A_Const(self, node: ast.A_Const):
        if node.isnull:
            return Literal(None, UNKNOWN)
        v = node.val
        if isinstance(v, ast.Integer):
            return Literal(v.ival, INT4)
        if isinstance(v, ast.Float):
            s = v.fval
            if s.isdigit():
                n = int(s)
                return Literal(n, INT8) if n < 2**63 else Literal(Decimal(s), NUMERIC)
            return Literal(Decimal(s), NUMERIC)
        if isinstance(v, ast.String):
            return Literal(v.sval, UNKNOWN)
        if isinstance(v, ast.Boolean):
            return Literal(bool(v.boolval), BOOL)
        if isinstance(v, ast.BitString):
            raise SqlError(FEATURE_NOT_SUPPORTED, "bit strings are not supported")
        raise SqlError(FEATURE_NOT_SUPPORTED, f"constant {v!r} is not supported")

    def _ParamRef(self, node: ast.ParamRef):
        n = node.number
        if isinstance(self.params, DescribeParams):
            while len(self.params) < n:
                self.params.append(None)
            return Param(n, self.params.types.get(n, UNKNOWN), self.params)
        if n < 1 or n > len(self.params):
            raise SqlError(UNDEFINED_PARAMETER, f"there is no parameter ${n}")
        v = self.params[n - 1]
        if isinstance(v, Literal):
            return v
        return Literal(None if v is None else str(v), UNKNOWN)

    def _TypeCast(self, node: ast.TypeCast):
        reg = node.typeName.names[-1].sval
        if reg in OID_ALIASES:
            if not node.typeName.arrayBounds:
                return self.oid_cast(reg, self.plan(node.arg))
            arg = self.plan(node.arg)
            return infer_param(arg, array_of(OID)) or self.coerce(arg, array_of(OID), explicit=True)
        inner = node.arg
        if isinstance(inner, ast.TypeCast) and inner.typeName.names[-1].sval == "regtype" and reg == "text":
            # x::regtype::text is the type's name (regtypeout prints format_type's name).
            return Call("format_type", (self.plan(inner), Literal(None, INT4)), TEXT)
        if isinstance(inner, ast.TypeCast) and inner.typeName.names[-1].sval == "regclass" and reg == "text":
            # x::regclass::text is the relation's name (regclassout), or the OID's digits
            # when no relation has it.
            oid = self.coerce(self.plan(inner), OID)
            if isinstance(oid, Literal) or self.plan_subquery is None:
                return self.coerce(oid, TEXT, explicit=True) if not isinstance(oid, Literal) or oid.value is None else \
                    Literal(self.relation_name(oid.value), TEXT)
            name = self.catalog_lookup('SELECT "?c?".relname FROM pg_catalog.pg_class AS "?c?" WHERE "?c?".oid = $1',
                                       inner)
            return Call("coalesce", (name, self.coerce(oid, TEXT, explicit=True)), TEXT)
        target = type_from_ast(node.typeName)
        from planner.functions import lists

        if isinstance(node.arg, ast.FuncCall) and _func_name(node.arg) == lists.LIST_CTOR:
            arg = lists.finish_ctor(lists.plan_ctor(self, node.arg.args[0], target))
        elif isinstance(node.arg, ast.A_ArrayExpr) and not node.arg.elements and target.is_array:
            return Literal([], target)  # ARRAY[]::text[]: the cast gives the empty array its type
        else:
            arg = self.plan(node.arg)
        if target.is_list or target.is_map or arg.type.is_list or arg.type.is_map:
            lists.check_cast(arg.type, target)
        inferred = infer_param(arg, target)
        if inferred is not None:
            return inferred
        if isinstance(arg, Literal) and arg.type.name == "unknown":
            if arg.value is None:
                return Literal(None, target)
            return Literal(parse_text(arg.value, target, True, self.ctx.guard.text), target)
        if arg.type == target:
            return arg
        return Cast(arg, target)

    def catalog_lookup(self, query: str, *args: ast.Node, types: tuple[str, ...] = ("oid",)):
        """``(query)`` as a scalar subquery, with ``$n`` (the right side of a comparison)
        standing for ``args[n-1]`` cast to ``types[n-1]`` (ASTs of the enclosing query, so
        the lookup correlates with it)."""
        select = pglast.parse_sql(query)[0].stmt
        for n in ast_nodes(select.whereClause):
            if isinstance(n, ast.A_Expr) and isinstance(n.rexpr, ast.ParamRef):
                k = n.rexpr.number
                # a fresh parse tree of our own, so editing it is safe
                n.rexpr = ast.TypeCast(arg=args[k - 1], typeName=ast.TypeName(
                    names=(ast.String(sval=types[k - 1]),), typemod=-1))
        return self.plan(ast.SubLink(subLinkType=SubLinkType.EXPR_SUBLINK, subselect=select))

    def search_path(self) -> tuple[str, ...]:
        """The existing schemas of the session's search_path (PostgreSQL's
        current_schemas(false)); the first is current_schema."""
        path = self.path
        exists = self.schema_exists or (lambda name: name == "public")
        return tuple(p for p in path if exists(p))

    def sequence_oid(self, arg):
        """The first argument of nextval/currval/setval (a ``regclass``): a name literal
        (``'s'``, ``'public.s'``) is looked up at plan time; an OID passes as it is.

        Raises:
            SqlError 42P01 for a name that names nothing; 0A000 for a name computed per row."""
        if isinstance(arg, Literal) and arg.type.name in ("unknown", "text", "varchar") and arg.value is not None:
            return self.oid_cast("regclass", Literal(arg.value, UNKNOWN))
        if arg.type.name == "unknown" or arg.type.is_string:
            raise SqlError(FEATURE_NOT_SUPPORTED, "a sequence name must be a constant here")
        return self.coerce(arg, OID)

    def oid_cast(self, reg: str, arg):
        """Casts to ``oid`` and the ``reg*`` OID alias types (PostgreSQL 8.19), which are
        ``oid`` here; a ``regclass``/``regtype`` name literal is looked up at plan time,
        and ``x::regtype::text`` prints the type's name."""
        if isinstance(arg, Literal) and arg.type.name == "unknown" and arg.value is not None:
            text = arg.value.strip()
            if text.lstrip("-").isdigit():
                return Literal(int(text), OID)
            if reg == "regclass":
                if self.resolve_relation_oid is None:
                    raise SqlError(FEATURE_NOT_SUPPORTED, "regclass names are not supported here")
                return Literal(self.resolve_relation_oid(text), OID)
            if reg == "regtype":
                from planner.functions.system import regtype_in

                return Literal(regtype_in(text), OID)
            if reg in ("regproc", "regprocedure"):
                from catalog.pg_catalog import PROC_NAMES

                name = text.split(".")[-1].split("(")[0]
                oid = next((o for o, n in PROC_NAMES.items() if n == name), None)
                if oid is None:
                    raise SqlError(UNDEFINED_FUNCTION, f'function "{text}" does not exist')
                return Literal(oid, OID)
            if reg == "regnamespace":
                from catalog.pg_catalog import NAMESPACE_OIDS
                oid = self.namespace_oid(text) if self.namespace_oid else NAMESPACE_OIDS.get(text)
                if oid is None:
                    raise SqlError(INVALID_SCHEMA_NAME, f'schema "{text}" does not exist')
                return Literal(oid, OID)
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{reg} names are not supported")
        if isinstance(arg, Call) and arg.func == "pg_typeof" and reg in ("oid", "regtype"):
            # pg_typeof returns regtype in PostgreSQL (its name here): its OID is known now
            return Literal(arg.args[0].type.oid, OID)
        if reg == "regtype" and arg.type.is_string:
            return Call("regtypein", (self.coerce(arg, TEXT),), OID)  # text::regtype (an I/O conversion cast)
        if not (arg.type.is_integer or arg.type.name == "unknown"):
            raise SqlError(CANNOT_COERCE, f"cannot cast type {arg.type.sql()} to {reg}")
        return self.coerce(arg, OID, explicit=True)

    def _A_Expr(self, node: ast.A_Expr):
        k = node.kind
        op = node.name[-1].sval if node.name else None
        if k == A_Expr_Kind.AEXPR_OP:
            if node.lexpr is None:
                e = self.plan(node.rexpr)
                func, at, rt = ty.resolve_unary(op, e.type)
                return Call(func, (self.coerce(e, at),), rt)
            return self.binary(op, self.plan(node.lexpr), self.plan(node.rexpr))
        if k in (A_Expr_Kind.AEXPR_OP_ANY, A_Expr_Kind.AEXPR_OP_ALL):
            return self.array_any_all(op, k == A_Expr_Kind.AEXPR_OP_ANY, self.plan(node.lexpr), self.plan(node.rexpr))
        if k == A_Expr_Kind.AEXPR_IN:
            x = self.plan(node.lexpr)
            if isinstance(node.rexpr, ast.SubLink):
                raise SqlError(FEATURE_NOT_SUPPORTED, "IN (subquery) must be parsed as a SubLink")
            items = [self.plan(i) for i in node.rexpr]
            t = ty.common_type([x.type] + [i.type for i in items], "IN")
            if t.name == "bpchar":
                t = TEXT
            e = Call("in", tuple(self.coerce(a, t) for a in [x] + items), BOOL)
            return Call("not", (e,), BOOL) if op == "<>" else e
        if k in (A_Expr_Kind.AEXPR_LIKE, A_Expr_Kind.AEXPR_ILIKE):
            s = self.coerce(self.plan(node.lexpr), TEXT)
            p = self.coerce(self.plan(node.rexpr), TEXT)
            if not (s.type.is_string and p.type.is_string):
                raise ty._undefined_op(op, s.type, p.type)
            func = "ilike" if k == A_Expr_Kind.AEXPR_ILIKE else "like"
            e = Call(func, (self.coerce(s, TEXT), self.coerce(p, TEXT)), BOOL)
            return Call("not", (e,), BOOL) if op.startswith("!") else e
        if k == A_Expr_Kind.AEXPR_SIMILAR:
            # s [NOT] SIMILAR TO p [ESCAPE e] (PostgreSQL 9.7.2); the parser wraps p and e
            # in similar_to_escape(...)
            s_ = self.coerce(self.plan(node.lexpr), TEXT)
            parts = [self.coerce(self.plan(x), TEXT) for x in node.rexpr.args]
            if not all(x.type.is_string for x in [s_, *parts]):
                raise ty._undefined_op("~", s_.type, parts[0].type)
            e = Call("similar_to", tuple(self.coerce(x, TEXT) for x in [s_, *parts]), BOOL)
            return Call("not", (e,), BOOL) if op.startswith("!") else e
        if k in (A_Expr_Kind.AEXPR_BETWEEN, A_Expr_Kind.AEXPR_NOT_BETWEEN,
                 A_Expr_Kind.AEXPR_BETWEEN_SYM, A_Expr_Kind.AEXPR_NOT_BETWEEN_SYM):
            x = self.plan(node.lexpr)
            lo, hi = (self.plan(n) for n in node.rexpr)
            e = Call("and", (self.binary(">=", x, lo), self.binary("<=", x, hi)), BOOL)
            if k in (A_Expr_Kind.AEXPR_BETWEEN_SYM, A_Expr_Kind.AEXPR_NOT_BETWEEN_SYM):
                e = Call("or", (e, Call("and", (self.binary(">=", x, hi), self.binary("<=", x, lo)), BOOL)), BOOL)
            if k in (A_Expr_Kind.AEXPR_NOT_BETWEEN, A_Expr_Kind.AEXPR_NOT_BETWEEN_SYM):
                e = Call("not", (e,), BOOL)
            return e
        if k in (A_Expr_Kind.AEXPR_DISTINCT, A_Expr_Kind.AEXPR_NOT_DISTINCT):
            l, r = self.plan(node.lexpr), self.plan(node.rexpr)
            _, lt, rt, _ = ty.resolve_binary("=", l.type, r.type)
            func = "is_distinct" if k == A_Expr_Kind.AEXPR_DISTINCT else "is_not_distinct"
            return Call(func, (self.coerce(l, lt), self.coerce(r, rt)), BOOL)
        if k == A_Expr_Kind.AEXPR_NULLIF:
            l, r = self.plan(node.lexpr), self.plan(node.rexpr)
            _, lt, rt, _ = ty.resolve_binary("=", l.type, r.type)
            t = l.type if l.type.name != "unknown" else lt
            return Call("nullif", (self.coerce(l, t), self.coerce(r, rt)), t)
        raise SqlError(FEATURE_NOT_SUPPORTED, f"operator kind {k.name} is not supported")

    def array_any_all(self, op: str, is_any: bool, x, arr):
        """``x op ANY (array)`` / ``ALL`` (PostgreSQL 9.24.3): three-valued, so a NULL
        element that decides nothing makes the answer NULL."""
        if arr.type.name == "unknown":
            elem = x.type if x.type.name != "unknown" else TEXT
            arr = self.coerce(arr, array_of(elem))
        if not arr.type.is_array:
            raise SqlError(DATATYPE_MISMATCH, "op ANY/ALL (array) requires array on right side")
        func, lt, rt, _ = ty.resolve_binary(op, x.type, arr.type.element)
        if func not in ("eq", "ne", "lt", "le", "gt", "ge"):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"operator {op} with ANY/ALL is not supported")
        if rt != arr.type.element:
            arr = self.coerce(arr, array_of(rt))
        return Call(("array_any:" if is_any else "array_all:") + func, (self.coerce(x, lt), arr), BOOL)

    def _A_ArrayExpr(self, node: ast.A_ArrayExpr):
        elems = [self.plan(e) for e in node.elements or ()]
        if not elems:
            raise SqlError(INDETERMINATE_DATATYPE, "cannot determine type of empty array",
                           hint="Explicitly cast to the desired type, for example ARRAY[]::integer[].")
        t = ty.common_type([e.type for e in elems], "ARRAY")
        if t.is_array:  # ARRAY[ARRAY[1, 2], ARRAY[3, 4]]: one more dimension, the same type
            return Call("array_nested", tuple(self.coerce(e, t) for e in elems), t)
        return Call("array", tuple(self.coerce(e, t) for e in elems), array_of(t))

    def _A_Indirection(self, node: ast.A_Indirection):
        e = self.plan(node.arg)
        if e.type.is_list:
            from planner.functions import lists

            return lists.plan_subscripts(self, e, list(node.indirection))
        for ind in node.indirection:
            if not isinstance(ind, ast.A_Indices):
                raise SqlError(FEATURE_NOT_SUPPORTED, "only array subscripts a[i] and slices a[i:j] are supported")
            if not e.type.is_array:
                raise SqlError(DATATYPE_MISMATCH, f"cannot subscript type {e.type.sql()} because it does not support subscripting")
            if ind.is_slice:
                # a[lo:hi], a[lo:], a[:hi] (PostgreSQL 8.15.3): an array of the same type
                from planner.functions.array import SLICE_END

                bounds = []
                for b, default in ((ind.lidx, 1), (ind.uidx, SLICE_END)):
                    x = self.coerce(self.plan(b), INT4) if b is not None else Literal(default, INT4)
                    if not x.type.is_integer:
                        raise SqlError(DATATYPE_MISMATCH, "array subscript must have type integer")
                    bounds.append(self.coerce(x, INT4))
                e = Call("array_slice", (e, *bounds), e.type)
                continue
            idx = self.coerce(self.plan(ind.uidx), INT4)
            if not idx.type.is_integer:
                raise SqlError(DATATYPE_MISMATCH, "array subscript must have type integer")
            e = Call("subscript", (e, self.coerce(idx, INT4)), e.type.element)
        return e

    def _CollateClause(self, node: ast.CollateClause):
        # Only the default collation exists (code-point order), as in Materialize.
        coll = node.collname[-1].sval
        if coll not in ("default", "C", "POSIX"):
            raise SqlError(UNDEFINED_OBJECT, f'collation "{coll}" for encoding "UTF8" does not exist')
        return self.plan(node.arg)

    def binary(self, op: str, l, r):
        from planner.functions import lists, maps

        if l.type.name in ("list", "map") or r.type.name in ("list", "map") or (
                l.type.name == "unknown" and op in maps.AMBIGUOUS_WITH_UNKNOWN):
            e = lists.plan_operator(op, l, r, self.ctx.guard.text)
            e = maps.plan_operator(op, l, r, self.ctx.guard.text) if e is None else e
            if e is not None:
                return e
        func, lt, rt, result = ty.resolve_binary(op, l.type, r.type)
        return Call(func, (self.coerce(l, lt), self.coerce(r, rt)), result)

    def _BoolExpr(self, node: ast.BoolExpr):
        name = {BoolExprType.AND_EXPR: "AND", BoolExprType.OR_EXPR: "OR", BoolExprType.NOT_EXPR: "NOT"}[node.boolop]
        args = tuple(self.plan_bool(a, name) for a in node.args)
        return Call(name.lower(), args, BOOL)

    def _NullTest(self, node: ast.NullTest):
        e = self.plan(node.arg)
        return Call("is_null" if node.nulltesttype == NullTestType.IS_NULL else "is_not_null", (e,), BOOL)

    def _BooleanTest(self, node: ast.BooleanTest):
        e = self.plan_bool(node.arg, "IS TRUE")
        t = node.booltesttype
        if t in (BoolTestType.IS_UNKNOWN, BoolTestType.IS_NOT_UNKNOWN):
            return Call("is_null" if t == BoolTestType.IS_UNKNOWN else "is_not_null", (e,), BOOL)
        func = {BoolTestType.IS_TRUE: "is_true", BoolTestType.IS_NOT_TRUE: "is_not_true",
                BoolTestType.IS_FALSE: "is_false", BoolTestType.IS_NOT_FALSE: "is_not_false"}[t]
        return Call(func, (e,), BOOL)

    def _CaseExpr(self, node: ast.CaseExpr):
        arg = self.plan(node.arg) if node.arg is not None else None
        conds, results = [], []
        for w in node.args:
            if arg is not None:
                conds.append(self.binary("=", arg, self.plan(w.expr)))
            else:
                conds.append(self.plan_bool(w.expr, "CASE"))
            results.append(self.plan(w.result))
        default = self.plan(node.defresult) if node.defresult is not None else Literal(None, UNKNOWN)
        t = ty.common_type([r.type for r in results] + [default.type], "CASE")
        return Case(tuple((c, self.coerce(r, t)) for c, r in zip(conds, results)), self.coerce(default, t), t)

    def _CoalesceExpr(self, node: ast.CoalesceExpr):
        args = [self.plan(a) for a in node.args]
        t = ty.common_type([a.type for a in args], "COALESCE")
        return Call("coalesce", tuple(self.coerce(a, t) for a in args), t)

    def _MinMaxExpr(self, node: ast.MinMaxExpr):
        args = [self.plan(a) for a in node.args]
        name = "greatest" if node.op == MinMaxOp.IS_GREATEST else "least"
        t = ty.common_type([a.type for a in args], name.upper())
        return Call(name, tuple(self.coerce(a, t) for a in args), t)

    def _FuncCall(self, node: ast.FuncCall):
        name = _func_name(node)
        if node.over is not None:
            if id(node) in self.window_refs:
                return self.window_refs[id(node)]
            raise SqlError(WINDOWING_ERROR, f"window functions are not allowed in {self.agg_context or 'this context'}")
        if name in fn.AGGREGATES:
            ref = self.outer_aggregate(node)
            if ref is not None:
                return ref
            if self.agg_context:
                raise SqlError(GROUPING_ERROR, f"aggregate functions are not allowed in {self.agg_context}")
            raise SqlError(GROUPING_ERROR, "aggregate function calls cannot be nested")
        if node.agg_star or node.agg_distinct or node.over is not None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{name}(...) with * / DISTINCT / OVER is not supported")
        from planner.functions import lists, maps

        if name == lists.LIST_CTOR:
            return lists.finish_ctor(lists.plan_ctor(self, node.args[0]))
        args = self._call_args(name, node.args or ())
        if name in lists.PLANNED:
            return lists.plan_call(name, args, self.ctx.guard.text)
        if name in maps.PLANNED:
            return maps.plan_call(name, args)
        if name in ("now", "transaction_timestamp", "statement_timestamp") and not args:
            return Literal(self.ctx.now, TIMESTAMPTZ)
        if name in fn.sequence.SEQUENCE_ARG_FUNCTIONS and args:
            args[0] = self.sequence_oid(args[0])
        if name == "mz_now" and not args:
            return self.plan_mz_now()
        if name == "version" and not args:
            from catalog.settings import SERVER_VERSION

            return Literal(f"PostgreSQL {SERVER_VERSION} on sqlfront (Materialize-compatible SQL front end on Spark)", TEXT)
        if name == "current_schemas" and len(args) == 1:
            # The search path; with true, the implicitly searched schemas first (PostgreSQL 9.26).
            implicit = self.coerce(args[0], BOOL)
            if not isinstance(implicit, Literal):
                raise SqlError(FEATURE_NOT_SUPPORTED, "current_schemas needs a constant argument")
            path = (["mz_catalog", "pg_catalog"] if implicit.value else []) + list(self.search_path())
            return Literal(None if implicit.value is None else path, array_of(TEXT))
        if name in ("current_schema", "current_database") and not args:
            if name == "current_database":
                return Literal("materialize", TEXT)
            return Literal(next(iter(self.search_path()), None), TEXT)
        if name == "nullif" and len(args) == 2:
            _, lt, rt, _ = ty.resolve_binary("=", args[0].type, args[1].type)
            return Call("nullif", (self.coerce(args[0], lt), self.coerce(args[1], rt)), lt)
        if name == "coalesce":
            t = ty.common_type([a.type for a in args], "COALESCE")
            return Call("coalesce", tuple(self.coerce(a, t) for a in args), t)
        if name in ("pg_table_size", "pg_total_relation_size", "pg_relation_size") and len(args) == 1 \
                and self.plan_subquery is not None:
            # Bytes of the table's Parquet parts (mz_recent_storage_usage); 0 for views and
            # system tables; NULL for an OID that names no relation. The argument is a
            # regclass: a name literal ('t', 'public.t') is looked up (42P01 if none).
            return self.catalog_lookup(
                'SELECT coalesce(s.size_bytes, 0) FROM pg_catalog.pg_class AS "?c?" '
                'LEFT JOIN mz_catalog.mz_tables AS "?t?" ON "?t?".oid = "?c?".oid '
                'LEFT JOIN mz_catalog.mz_recent_storage_usage AS s ON s.object_id = "?t?".id '
                'WHERE "?c?".oid = $1', node.args[0], types=("regclass",))
        if name == "pg_indexes_size" and len(args) == 1 and self.plan_subquery is not None:
            # Indexes are arrangements in the replicas' memory, not persist parts: 0 bytes
            # for a relation (pg_total_relation_size is its table size alone); NULL for an
            # OID that names no relation.
            return self.catalog_lookup('SELECT 0::int8 FROM pg_catalog.pg_class AS "?c?" WHERE "?c?".oid = $1',
                                       node.args[0], types=("regclass",))
        if name in ("pg_database_size", "pg_tablespace_size") and len(args) == 1 and self.plan_subquery is not None:
            return self.plan_storage_size(name, args[0], node.args[0])
        if name in ("obj_description", "col_description") and len(args) in (1, 2) \
                and self.plan_subquery is not None:
            # COMMENT ON's text (pg_description): obj_description(oid [, catalog]) for the
            # object itself (objsubid 0), col_description(table oid, column number)
            if name == "col_description":
                return self.catalog_lookup(
                    'SELECT description FROM pg_catalog.pg_description AS "?d?" WHERE "?d?".objoid = $1 '
                    'AND "?d?".objsubid = $2 AND "?d?".classoid = 1259', *node.args, types=("oid", "int4"))
            # the catalog argument is not needed: an OID names one object here
            return self.catalog_lookup(
                'SELECT description FROM pg_catalog.pg_description AS "?d?" WHERE "?d?".objoid = $1 '
                'AND "?d?".objsubid = 0', node.args[0])
        if name == "pg_get_viewdef" and len(args) in (1, 2) and self.plan_subquery is not None:
            # the query of a view or materialized view (PostgreSQL 9.27 decompiles it; here
            # it is the stored text), as psql's \d+ shows it; NULL for other OIDs
            return self.catalog_lookup(
                'SELECT \' \' || "?v?".definition || \';\' FROM (SELECT id, definition FROM mz_catalog.mz_views '
                'UNION ALL SELECT id, definition FROM mz_catalog.mz_materialized_views) AS "?v?" '
                'JOIN mz_catalog.mz_objects AS "?o?" ON "?o?".id = "?v?".id WHERE "?o?".oid = $1', node.args[0])
        if name == "pg_get_serial_sequence" and len(args) == 2 and self.plan_subquery is not None:
            # the sequence a serial/identity column owns (pg_depend), schema-qualified
            return self.catalog_lookup(
                'SELECT "?n?".nspname || \'.\' || "?s?".relname FROM pg_catalog.pg_depend AS "?d?" '
                'JOIN pg_catalog.pg_class AS "?s?" ON "?s?".oid = "?d?".objid '
                'JOIN pg_catalog.pg_namespace AS "?n?" ON "?n?".oid = "?s?".relnamespace '
                'JOIN pg_catalog.pg_attribute AS "?a?" ON "?a?".attrelid = "?d?".refobjid '
                'AND "?a?".attnum = "?d?".refobjsubid '
                'WHERE "?d?".refobjid = $1 AND "?a?".attname = $2', *node.args, types=("regclass", "text"))
        if name in ("to_regtype", "to_regclass", "to_regnamespace") and len(args) == 1:
            # Like ::regtype etc., but NULL instead of an error for a name that names nothing.
            a = args[0]
            if not isinstance(a, Literal) or not a.type.is_string:
                raise SqlError(FEATURE_NOT_SUPPORTED, f"{name} needs a constant argument")
            if a.value is None:
                return Literal(None, OID)
            try:
                return self.oid_cast(name[3:], Literal(a.value, UNKNOWN))
            except SqlError:
                return Literal(None, OID)
        if name in ("pg_table_is_visible", "pg_type_is_visible") and len(args) == 1:
            # Visible: user objects (catalog.pg_catalog.object_oid) and types.
            if name == "pg_type_is_visible":
                return Literal(True, BOOL)
            if self.visible_oids is not None:
                # user objects in a schema of the search path (PostgreSQL 9.26: "visible in
                # the search path"); system tables are not shown as visible
                oids = sorted(self.visible_oids())
                if not oids:
                    return Literal(False, BOOL)
                return self.plan(ast.A_Expr(kind=A_Expr_Kind.AEXPR_IN, name=(ast.String(sval="="),),
                                            lexpr=node.args[0], rexpr=tuple(
                                                ast.A_Const(val=ast.Integer(ival=o)) for o in oids)))
            return self.binary(">=", args[0], Literal(FIRST_USER_OID, INT8))
        if name in fn.WINDOW_FUNCTIONS:
            raise SqlError(WRONG_OBJECT_TYPE, f"window function {name} requires an OVER clause")
        # an error names the arguments written, not the defaults or what the planner adds
        shown = [a.type for a in args[:len(node.args or ())]]
        for entry in fn.BY_SQL_NAME.get(name, ()):
            if "plan_args" in entry.extra:  # arguments completed at plan time, e.g. age(ts)
                args = entry.extra["plan_args"](args)
            if "plan_args_in" in entry.extra:  # ... from the statement (its start time)
                args = entry.extra["plan_args_in"](args, self.ctx)
        types = [a.type for a in args]
        resolved = fn.resolve_scalar(name, types, shown)
        if resolved is None:
            raise fn.undefined_function(name, shown)
        f, casts, result = resolved
        return Call(f.name, tuple(self.coerce(a, t) for a, t in zip(args, casts)), result)

    def plan_storage_size(self, name: str, arg, node: ast.Node):
        """``pg_database_size(name | oid)`` and ``pg_tablespace_size(name | oid)`` (PostgreSQL
        9.27.7), in bytes (int8): the database's, and its default tablespace
        ``pg_default``'s, is the sum of the Parquet parts of every shard
        (``mz_recent_storage_usage``, what pg_table_size counts per table); ``pg_global``
        holds no shard here (the catalog is environmentd's own): 0. A string argument is a
        name, anything else an OID (PostgreSQL's resolution of an unknown literal).

        Raises:
            SqlError 3D000 ``database "x" does not exist`` / 42704 ``database with OID n
            does not exist`` / 42704 ``tablespace ... does not exist`` for a constant that
            names nothing (PostgreSQL's errors); a value computed per row that names nothing
            gives NULL instead."""
        from catalog.errors import INVALID_CATALOG_NAME
        from catalog.pg_catalog import DATABASE_OID, TABLESPACE_OIDS

        by_name = arg.type.name == "unknown" or arg.type.is_string
        database = name == "pg_database_size"
        if isinstance(arg, Literal) and arg.value is not None:
            v = arg.value if by_name else int(arg.value)
            known = ({"materialize"} if by_name else {DATABASE_OID}) if database else \
                (set(TABLESPACE_OIDS) if by_name else set(TABLESPACE_OIDS.values()))
            if v not in known:
                what = "database" if database else "tablespace"
                raise SqlError(INVALID_CATALOG_NAME if database and by_name else UNDEFINED_OBJECT,
                               f'{what} "{v}" does not exist' if by_name else f"{what} with OID {v} does not exist")
        key, types = ("datname" if database else "spcname", ("text",)) if by_name else ("oid", ("oid",))
        if database:
            return self.catalog_lookup(
                'SELECT coalesce(sum(s.size_bytes), 0)::int8 FROM pg_catalog.pg_database AS "?d?" '
                'LEFT JOIN mz_catalog.mz_recent_storage_usage AS s ON true '
                f'WHERE "?d?".{key} = $1 GROUP BY "?d?".oid', node, types=types)
        return self.catalog_lookup(
            'SELECT coalesce(sum(s.size_bytes), 0)::int8 FROM pg_catalog.pg_tablespace AS "?t?" '
            'LEFT JOIN mz_catalog.mz_recent_storage_usage AS s ON "?t?".spcname = \'pg_default\' '
            f'WHERE "?t?".{key} = $1 GROUP BY "?t?".oid', node, types=types)

    def plan_mz_now(self):
        """``mz_now()``: the timestamp the statement reads at (Materialize's), as a
        constant; the call itself in a maintained query.

        Raises:
            SqlError 0A000 where the statement has none."""
        mz_now = self.ctx.mz_now
        if mz_now is MAINTAINED:
            return Call("mz_now", (), MZ_TIMESTAMP)
        if mz_now is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "mz_now() is not supported here")
        return Literal(mz_now(), MZ_TIMESTAMP)

    def _GroupingFunc(self, node):
        raise SqlError(GROUPING_ERROR, "arguments to GROUPING must be grouping expressions of the associated query level"
                       if self.agg_context is None else f"grouping operations are not allowed in {self.agg_context}")

    def _call_args(self, name: str, nodes) -> list:
        """The planned arguments of a call, named ones (``f(days => 3)``, PostgreSQL 4.3)
        put in their places by the entry's ``extra["arg_names"]``, omitted ones given
        their ``extra["defaults"]``.

        Raises:
            SqlError 42883 for a name the function does not have or a missing argument
            without a default; 42601 for an argument named twice."""
        named = any(isinstance(n, ast.NamedArgExpr) for n in nodes)
        entry = next((f for f in fn.BY_SQL_NAME.get(name, ()) if "arg_names" in f.extra), None) \
            if named or name in fn.BY_SQL_NAME and len(nodes) < 7 else None
        if not named and (entry is None or len(nodes) >= len(entry.extra["arg_names"])
                          or len(nodes) < len(entry.extra["arg_names"]) - len(entry.extra.get("defaults", ()))):
            return [self.plan(a) for a in nodes]
        if entry is None:
            raise SqlError(UNDEFINED_FUNCTION, f"function {name} with named arguments does not exist",
                           hint="No function matches the given name and argument types. "
                                "You might need to add explicit type casts.")
        names, defaults = entry.extra["arg_names"], entry.extra.get("defaults", ())
        slots: list = [None] * len(names)
        for i, n in enumerate(nodes):
            if not isinstance(n, ast.NamedArgExpr):
                slots[i] = self.plan(n)
                continue
            if n.name not in names:
                raise SqlError(UNDEFINED_FUNCTION, f"function {name} has no argument named \"{n.name}\"",
                               hint="No function matches the given name and argument types.")
            j = names.index(n.name)
            if slots[j] is not None:
                raise SqlError(SYNTAX_ERROR, f'argument name "{n.name}" used more than once')
            slots[j] = self.plan(n.arg)
        first_default = len(names) - len(defaults)
        for j, s_ in enumerate(slots):
            if s_ is None:
                if j < first_default:
                    raise SqlError(UNDEFINED_FUNCTION, f"function {name} requires argument \"{names[j]}\"",
                                   hint="No function matches the given name and argument types.")
                slots[j] = Literal(defaults[j - first_default], SqlType(entry.sigs[0].args[j]))
        return slots

    def _SQLValueFunction(self, node):
        """current_timestamp, current_date, ...: the statement's start time (PostgreSQL:
        stable within a statement), as a constant, so both execution paths agree."""
        from pglast.enums import SQLValueFunctionOp as Op

        now = self.ctx.now
        op = node.op
        if op in (Op.SVFOP_CURRENT_TIMESTAMP, Op.SVFOP_CURRENT_TIMESTAMP_N):
            return Literal(now, TIMESTAMPTZ)
        if op in (Op.SVFOP_LOCALTIMESTAMP, Op.SVFOP_LOCALTIMESTAMP_N):
            return Literal(now.replace(tzinfo=None), TIMESTAMP)
        if op == Op.SVFOP_CURRENT_DATE:
            return Literal(now.date(), DATE)
        if op in (Op.SVFOP_CURRENT_USER, Op.SVFOP_SESSION_USER, Op.SVFOP_USER, Op.SVFOP_CURRENT_ROLE):
            from planner.functions.privileges import current_role_name

            return Literal(current_role_name(self.ctx, session=op == Op.SVFOP_SESSION_USER), TEXT)
        if op == Op.SVFOP_CURRENT_CATALOG:
            return Literal("materialize", TEXT)
        if op == Op.SVFOP_CURRENT_SCHEMA:
            return Literal(next(iter(self.search_path()), None), TEXT)
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{op.name} is not supported")

    def _SubLink(self, node: ast.SubLink):
        if self.plan_subquery is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "subqueries are not allowed here")
        kind = node.subLinkType
        scope = self.subquery_scope if self.subquery_scope is not None else self.scope
        pq = self.plan_subquery(node.subselect, scope, self.aggregate_sink or self._no_aggregates)
        plan = pq.plan
        if self.remap_outer is not None:
            plan = self.remap_outer(plan)
        if kind == SubLinkType.EXISTS_SUBLINK:
            return Subquery("exists", plan, BOOL)
        if len(plan.columns) != 1:
            raise SqlError(SYNTAX_ERROR, "subquery must return only one column" if kind == SubLinkType.EXPR_SUBLINK
                           else "subquery has too many columns")
        col_t = plan.columns[0][1]
        if kind == SubLinkType.ARRAY_SUBLINK:
            if col_t.name == "unknown":
                plan = _cast_single(plan, TEXT)
                col_t = TEXT
            return Subquery("array", plan, array_of(col_t))
        if kind == SubLinkType.EXPR_SUBLINK:
            if col_t.name == "unknown":
                plan = _cast_single(plan, TEXT)
                col_t = TEXT
            return Subquery("scalar", plan, col_t)
        if kind in (SubLinkType.ANY_SUBLINK, SubLinkType.ALL_SUBLINK):
            op = node.operName[-1].sval if node.operName else "="
            x = self.plan(node.testexpr)
            func, lt, rt, _ = ty.resolve_binary(op, x.type, col_t)
            if func not in ("eq", "ne", "lt", "le", "gt", "ge"):
                raise SqlError(FEATURE_NOT_SUPPORTED, f"operator {op} with ANY/ALL is not supported")
            if col_t != rt:
                plan = _cast_single(plan, rt)
            return Subquery("any" if kind == SubLinkType.ANY_SUBLINK else "all", plan, BOOL, self.coerce(x, lt), func)
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{kind.name} subqueries are not supported")

    def _no_aggregates(self, agg: AggCall, depth: int):
        raise SqlError(GROUPING_ERROR, f"aggregate functions are not allowed in {self.agg_context}"
                       if self.agg_context else "aggregate functions are not allowed here")

    def aggregate_level(self, node: ast.FuncCall) -> tuple[AggCall | None, int]:
        """Aggregate call ``node`` planned over this scope and the level it belongs to
        (``planner.levels.aggregate_level``: 0 for this query; also 0, without a plan,
        when there is no enclosing query or the call does not plan here)."""
        if not self.outer_scopes:
            return None, 0
        try:
            agg = self.plan_aggregate(node, self)
        except SqlError:
            return None, 0  # planned again as this query's own aggregate, for its error
        return agg, aggregate_level(agg)

    def outer_aggregate(self, node: ast.FuncCall):
        """The reference to aggregate call ``node`` when it belongs to an enclosing query
        (``planner.levels``: its arguments read only outer columns), which computes it;
        None when it belongs to this query.

        Raises:
            SqlError 42803 where that query may not have aggregates."""
        agg, level = self.aggregate_level(node)
        if level == 0:
            return None
        sink = self.outer_aggregates[level - 1] if level <= len(self.outer_aggregates) else None
        if sink is None:
            raise SqlError(GROUPING_ERROR, "aggregate functions are not allowed in FROM clause of their own query level")
        return sink(lift_aggregate(agg, level), level)

    def plan_aggregate(self, node: ast.FuncCall, arg_planner: "ExprPlanner") -> AggCall:
        """An aggregate call with its DISTINCT, ORDER BY, FILTER and WITHIN GROUP
        (PostgreSQL 4.2.7); its function comes from the registry (``planner.functions``)."""
        name = _func_name(node)
        if node.over is not None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "window functions are not supported yet")
        entry = fn.AGGREGATES[name]
        nested = [node.args, node.agg_order, node.agg_filter]
        if any(contains_aggregate(n) for n in nested if n):
            raise SqlError(GROUPING_ERROR, "aggregate function calls cannot be nested")
        filt = arg_planner.plan_bool(node.agg_filter, "FILTER") if node.agg_filter is not None else None
        if node.agg_star:
            if name != "count":
                raise SqlError(SYNTAX_ERROR, f"{name}(*) must be used to call a parameterless aggregate function")
            return AggCall("count_star", None, False, INT8, filter=filt)
        args = list(node.args or ())
        if entry.ordered_set != bool(node.agg_within_group):
            if entry.ordered_set:
                raise SqlError(WRONG_OBJECT_TYPE, f"WITHIN GROUP is required for ordered-set aggregate {name}")
            raise SqlError(WRONG_OBJECT_TYPE, f"{name} is not an ordered-set aggregate, so it cannot have WITHIN GROUP")
        if entry.ordered_set:
            # percentile_cont(0.5) WITHIN GROUP (ORDER BY x): the direct arguments are
            # parameters; the aggregated value is the ORDER BY expression.
            sorts = node.agg_order or ()
            if len(sorts) != 1:
                raise SqlError(UNDEFINED_FUNCTION, f"function {name} with {len(sorts)} ordering expressions does not exist")
            value, direct = sorts[0].node, args
        else:
            if not args:
                raise SqlError(UNDEFINED_FUNCTION, f"function {name}() does not exist")
            value, direct = args[0], args[1:]
        pair = entry.extra.get("pair")
        if pair is not None:  # an aggregate of two arguments aggregates their pair
            if len(args) != 2:
                raise SqlError(UNDEFINED_FUNCTION, f"function {name} with {len(args)} arguments does not exist",
                               hint="No function matches the given name and argument types. "
                                    "You might need to add explicit type casts.")
            two = [arg_planner.plan(v) for v in args]
            for v, t in zip(two, pair):
                if t is not None and fn.match(fn.Sig((t,), t), [v.type]) is None:
                    raise fn.undefined_function(name, [x.type for x in two])
            two = [self.coerce(v, SqlType(t) if t is not None else TEXT if v.type.name == "unknown" else v.type)
                   for v, t in zip(two, pair)]
            value, direct = None, ()
            # the record's types, which an aggregate's result may take (map_agg's values)
            pair_value = Call("agg_pair", tuple(two), SqlType("record", of=tuple(v.type for v in two)))
        want = entry.extra.get("params", ())
        if callable(want):  # the further arguments' types follow the aggregated value's (string_agg)
            want = want(arg_planner.plan(value).type if value is not None else TEXT)
        hypothetical = None
        if entry.extra.get("hypothetical"):
            # rank(x) WITHIN GROUP (ORDER BY v): x and v are of their common type (9.21, table 9.65)
            if len(direct) != 1:
                raise SqlError(UNDEFINED_FUNCTION, f"function {name} with {len(direct)} direct arguments does not exist",
                               hint="Only one hypothetical row and one ordering expression are supported.")
            d, v = arg_planner.plan(direct[0]), arg_planner.plan(value)
            t = ty.common_type([d.type, v.type], name)
            t = TEXT if t.name == "unknown" else t
            hypothetical = self.coerce(v, t)
            want, direct = (t,), (direct[0],)
        if len(direct) != len(want):
            shown = len(args) + (1 if entry.ordered_set else 0)
            raise SqlError(UNDEFINED_FUNCTION, f"function {name} with {shown} arguments does not exist",
                           hint="No function matches the given name and argument types. "
                                "You might need to add explicit type casts.")
        params = tuple(self.coerce(arg_planner.plan(d), t) for d, t in zip(direct, want))
        for p, t in zip(params, want):
            if p.type != t:
                raise fn.undefined_function(name, [p.type])
        arg = hypothetical if hypothetical is not None else arg_planner.plan(value) if pair is None else pair_value
        f, cast_to, result = resolve_aggregate(name, arg.type)
        order = tuple((arg_planner.plan(sb.node), *sort_direction(sb)) for sb in node.agg_order or ())
        if node.agg_distinct and order and any(o[0] != arg for o in order):
            raise SqlError(INVALID_COLUMN_REFERENCE, "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list")
        arg = self.coerce(arg, cast_to) if cast_to else arg
        if entry.ordered_set:
            order = ((arg, *order[0][1:]),)
        return AggCall(f.name, arg, bool(node.agg_distinct), result, order, params, filt)


#: the key that stands for the grouping set number (matches no expression of a query)
_SET_NUMBER = ColRef(-1, INT4)


class Grouping:
    """Plans expressions above a ``Reduce``: group keys and aggregates become ColRefs to
    the Reduce's output; other column references are a grouping error (42803)."""

    def __init__(self, from_planner: ExprPlanner, keys: list, sets: list | None = None):
        self.from_planner = from_planner
        #: with grouping sets (tuples of key indexes), the Reduce's output has one more
        #: key column, the number of the row's set (``QueryPlanner._reduce``)
        self.sets = sets
        self.group_keys = list(keys)
        self.keys = list(keys) + ([_SET_NUMBER] if sets is not None else [])
        self.aggregates: list[AggCall] = []

    def grouping_func(self, node: ast.GroupingFunc):
        """``GROUPING(a, b, ...)``: a bit per argument, most significant first, set when
        the argument is not grouped in the row's grouping set (PostgreSQL 9.21, Table
        9.64); 0 without grouping sets.

        Raises:
            SqlError 42803 for an argument that is not a GROUP BY expression."""
        idx = []
        for a in node.args:
            e = fold(self.from_planner.plan(a), self.from_planner.ctx)
            if e not in self.group_keys:
                raise SqlError(GROUPING_ERROR, "arguments to GROUPING must be grouping expressions of the associated query level")
            idx.append(self.group_keys.index(e))
        if len(idx) > 31:
            raise SqlError(TOO_MANY_ARGUMENTS, "GROUPING must have fewer than 32 arguments")

        def mask(members) -> int:
            return sum(1 << (len(idx) - 1 - j) for j, i in enumerate(idx) if i not in members)

        if self.sets is None:
            return Literal(0, INT4)
        set_no = ColRef(len(self.group_keys), INT4)
        return Case(tuple((Call("eq", (set_no, Literal(n, INT4)), BOOL), Literal(mask(m), INT4))
                          for n, m in enumerate(self.sets)), Literal(None, INT4), INT4)

    def aggregate_column(self, agg: AggCall) -> ColRef:
        """The Reduce's output column computing ``agg`` (added to its aggregates)."""
        if agg not in self.aggregates:
            self.aggregates.append(agg)
        return ColRef(len(self.keys) + self.aggregates.index(agg), agg.type)

    def outer_aggregate(self, agg: AggCall, depth: int) -> AggregateRef:
        """The sink of this query's aggregates found in its subqueries ``depth`` levels
        down (``planner.levels``): a reference to the Reduce's column computing it."""
        col = self.aggregate_column(agg)
        return AggregateRef(depth, col.index, col.type)

    def remap_outer(self, plan):
        """A subquery planned against the FROM scope may only use grouped columns of it:
        point its OuterRefs at the Reduce's key columns (42803 otherwise)."""
        from dataclasses import replace

        from planner.plan import map_plan_exprs

        def at(depth: int):
            # OuterRefs of the grouped query: depth 1 here, one deeper per nested subquery
            def f(n):
                if isinstance(n, Subquery):
                    return replace(n, plan=map_plan_exprs(n.plan, at(depth + 1)))
                if isinstance(n, AggregateRef) and n.depth == depth:
                    return OuterRef(depth, n.index, n.type)  # already the Reduce's column
                if isinstance(n, OuterRef) and n.depth == depth:
                    ref = ColRef(n.index, n.type)
                    if ref not in self.keys:
                        item = next((i for i in self.from_planner.scope.items if i.index == n.index), None)
                        shown = f"{item.qualifier}.{item.name}" if item and item.qualifier else (item.name if item else "?")
                        raise SqlError(GROUPING_ERROR, f'subquery uses ungrouped column "{shown}" from outer query')
                    return OuterRef(depth, self.keys.index(ref), n.type)
                return n
            return f

        return map_plan_exprs(plan, at(1))

    def plan(self, node, outer: ExprPlanner):
        if isinstance(node, ast.SubLink):
            return outer.plan_node(node)
        if isinstance(node, ast.GroupingFunc):
            return self.grouping_func(node)
        if isinstance(node, ast.FuncCall) and _func_name(node) in fn.AGGREGATES and node.over is None:
            ref = self.from_planner.outer_aggregate(node)
            if ref is not None:
                return ref
            return self.aggregate_column(outer.plan_aggregate(node, self.from_planner))
        if not contains_aggregate(node) and not isinstance(node, ast.A_Const) and not _contains_sublink(node):
            e = self.from_planner.plan(node)
            if e in self.keys:
                return ColRef(self.keys.index(e), e.type)
            if is_constant(e) or not column_refs(e):
                return e  # constant for each group, as is a column of an enclosing query
            if isinstance(node, ast.ColumnRef):
                names = ".".join(f.sval for f in node.fields if isinstance(f, ast.String))
                raise SqlError(
                    GROUPING_ERROR,
                    f'column "{names}" must appear in the GROUP BY clause or be used in an aggregate function',
                )
        return outer.plan_node(node)
