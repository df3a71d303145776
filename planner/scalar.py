"""Scalar expressions of the logical plan.

Every expression carries its SqlType. Column references are positional
(``ColRef(i)`` is the i-th column of the input relation), as in Materialize's MIR, so
plans need no names after planning.

``Call.func`` names an entry of the function registry (``planner.functions``), which
declares its signatures, strictness, Python implementation and Spark lowering.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Union

from catalog.types import BOOL, SqlType


@dataclass(frozen=True)
class ColRef:
    index: int
    type: SqlType


@dataclass(frozen=True)
class Literal:
    """A constant. ``value`` is None for NULL; otherwise a Python value of the type:
    int, Decimal, float, str, bool, datetime.date, datetime.datetime, Interval."""

    value: Any
    type: SqlType


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple["ScalarExpr", ...]
    type: SqlType


@dataclass(frozen=True)
class Cast:
    expr: "ScalarExpr"
    type: SqlType


@dataclass(frozen=True)
class Case:
    """``CASE WHEN c1 THEN r1 ... ELSE e END`` (the simple form is rewritten to this)."""

    whens: tuple[tuple["ScalarExpr", "ScalarExpr"], ...]
    else_: "ScalarExpr"
    type: SqlType


@dataclass(frozen=True)
class AggCall:
    """An aggregate, only valid as an aggregate of a ``Reduce``.

    ``func`` names an aggregate entry of ``planner.functions`` (count, count_star, sum,
    avg, string_agg, ...); ``arg`` is None for count_star. ``order`` is an aggregate's own
    ORDER BY or WITHIN GROUP (``array_agg(x ORDER BY y DESC)``): (expr, descending,
    nulls_first) triples. ``params`` are the further arguments (string_agg's delimiter,
    a percentile's fraction); ``filter`` is the FILTER (WHERE ...) condition or None
    (PostgreSQL 4.2.7)."""

    func: str
    arg: Union["ScalarExpr", None]
    distinct: bool
    type: SqlType
    order: tuple = ()
    params: tuple = ()
    filter: Union["ScalarExpr", None] = None

    def map_exprs(self, f) -> "AggCall":
        """This aggregate with ``f`` applied to its argument, ORDER BY, parameter and
        FILTER expressions."""
        return replace(self, arg=None if self.arg is None else f(self.arg),
                       order=tuple((f(e), d, n) for e, d, n in self.order),
                       params=tuple(f(p) for p in self.params),
                       filter=None if self.filter is None else f(self.filter))


@dataclass(frozen=True)
class Param:
    """``$n`` while describing a prepared statement: its type is inferred from where it
    is used (PostgreSQL 55.2.3: Parse leaves unspecified parameter types to the server).
    ``described``: the statement's ``planner.expr.DescribeParams``, which records the
    inferences (``planner.expr.infer_param``)."""

    index: int
    type: SqlType
    described: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class OuterRef:
    """A column of an enclosing query: ``depth`` 1 is the query the subquery sits in."""

    depth: int
    index: int
    type: SqlType


@dataclass(frozen=True)
class Subquery:
    """A subquery in an expression, before decorrelation (``planner.optimize.decorrelate``).

    kind: ``scalar`` (value of its only column), ``array`` (``ARRAY(subquery)``: its
    column's values as an array), ``exists``, ``any`` or ``all`` (``test
    func col0`` for some/every row; IN is ``= ANY``). ``plan``'s OuterRefs name columns
    of the enclosing queries."""

    kind: str
    plan: object
    type: SqlType
    test: Union["ScalarExpr", None] = None
    func: str | None = None


ScalarExpr = Union[ColRef, Literal, Call, Cast, Case, OuterRef, Subquery]


def children(e) -> Iterator:
    if isinstance(e, Call):
        yield from e.args
    elif isinstance(e, Cast):
        yield e.expr
    elif isinstance(e, Case):
        for c, r in e.whens:
            yield c
            yield r
        yield e.else_
    elif isinstance(e, AggCall):
        if e.arg is not None:
            yield e.arg
        yield from e.params
        if e.filter is not None:
            yield e.filter
    elif isinstance(e, Subquery) and e.test is not None:
        yield e.test


def map_expr(e, f):
    """Rebuild ``e`` bottom-up, replacing each node n by ``f(n)`` (after its children)."""
    if isinstance(e, Call):
        e = Call(e.func, tuple(map_expr(a, f) for a in e.args), e.type)
    elif isinstance(e, Cast):
        e = Cast(map_expr(e.expr, f), e.type)
    elif isinstance(e, Case):
        e = Case(tuple((map_expr(c, f), map_expr(r, f)) for c, r in e.whens), map_expr(e.else_, f), e.type)
    elif isinstance(e, AggCall):
        e = e.map_exprs(lambda x: map_expr(x, f))
    elif isinstance(e, Subquery) and e.test is not None:
        e = Subquery(e.kind, e.plan, e.type, map_expr(e.test, f), e.func)
    return f(e)


def walk(e):
    """Every node of ``e``, parents before children (subquery plans not entered)."""
    yield e
    for c in children(e):
        yield from walk(c)


def is_constant(e) -> bool:
    """True when ``e`` references no column (it can be evaluated at plan time)."""
    if isinstance(e, (ColRef, OuterRef, Subquery, Param)):
        return False
    return all(is_constant(c) for c in children(e))


def shift_columns(e, offset: int):
    """``e`` with every ColRef index moved by ``offset`` (for the right side of a join)."""
    if isinstance(e, ColRef):
        return ColRef(e.index + offset, e.type)
    if isinstance(e, (Literal, OuterRef, Param)):
        return e
    if isinstance(e, Subquery):
        return Subquery(e.kind, e.plan, e.type, shift_columns(e.test, offset) if e.test is not None else None, e.func)
    if isinstance(e, Call):
        return Call(e.func, tuple(shift_columns(a, offset) for a in e.args), e.type)
    if isinstance(e, Cast):
        return Cast(shift_columns(e.expr, offset), e.type)
    if isinstance(e, Case):
        return Case(
            tuple((shift_columns(c, offset), shift_columns(r, offset)) for c, r in e.whens),
            shift_columns(e.else_, offset),
            e.type,
        )
    raise TypeError(e)


TRUE = Literal(True, BOOL)


def conjuncts(e) -> list:
    """The operands of a (nested) AND, in order; ``[e]`` for anything else."""
    if isinstance(e, Call) and e.func == "and":
        return [c for a in e.args for c in conjuncts(a)]
    return [e]


def conjoin(conds: list):
    """The AND of ``conds`` (TRUE literals dropped); None when nothing is left."""
    conds = [c for c in conds if c != TRUE]
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else Call("and", tuple(conds), BOOL)


def column_refs(e) -> set[int]:
    """Indexes of the input columns ``e`` reads (subquery plans not entered)."""
    return {n.index for n in walk(e) if isinstance(n, ColRef)}


def remap_columns(e, move):
    """``e`` with every ColRef i at ``move(i)`` (subquery plans not entered)."""
    return map_expr(e, lambda n: ColRef(move(n.index), n.type) if isinstance(n, ColRef) else n)


def has_subquery(e) -> bool:
    return any(isinstance(n, Subquery) for n in walk(e))
