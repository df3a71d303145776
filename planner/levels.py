"""Which query level an aggregate belongs to (PostgreSQL 4.2.7, "Aggregate Expressions").

"An aggregate expression can only appear in the result list or HAVING clause of a SELECT
command": the SELECT it belongs to is "the lowest query level of the variables in its
arguments": when "the aggregate's arguments (and filter_clause if any) contain only
outer-level variables: the aggregate then belongs to the nearest such outer level, and
is evaluated over the rows of that query", and "acts as an outer reference for the
subquery in which it appears". An aggregate without variables (``count(*)``) belongs
to the query it is written in.

In a plan, a query's own columns are ColRefs and an enclosing query's columns are
``OuterRef(depth, ...)`` (``planner.scalar``); inside a subquery nested ``n`` levels
deeper in the arguments, depths grow by ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.plan import map_plan_exprs
from planner.scalar import AggCall, ColRef, OuterRef, Subquery, map_expr


@dataclass(frozen=True)
class AggregateRef(OuterRef):
    """The value of an aggregate of the enclosing query ``depth`` levels up, computed by
    that query's Reduce: column ``index`` of its output. The enclosing query's
    ``Grouping.remap_outer`` turns it into a plain OuterRef (where other OuterRefs to it
    are moved from its input's columns to the Reduce's)."""


def _exprs(agg: AggCall) -> list:
    return ([agg.arg] if agg.arg is not None else []) + [e for e, _, _ in agg.order] + list(agg.params) + \
        ([agg.filter] if agg.filter is not None else [])


def aggregate_level(agg: AggCall) -> int:
    """0 when ``agg`` belongs to the query it is written in, else how many levels up the
    query it belongs to is: the nearest level its arguments, ORDER BY and FILTER read."""
    levels: list[int] = []

    def visit(nest: int):
        def f(n):
            if isinstance(n, ColRef) and nest == 0:
                levels.append(0)
            elif isinstance(n, OuterRef) and n.depth > nest:
                levels.append(n.depth - nest)
            elif isinstance(n, Subquery):
                map_plan_exprs(n.plan, visit(nest + 1))
            return n
        return f

    for e in _exprs(agg):
        map_expr(e, visit(0))
    return min(levels, default=0)


def lift_aggregate(agg: AggCall, level: int) -> AggCall:
    """``agg`` (of level ``level`` > 0) as the query ``level`` levels up plans it: its
    columns are that query's ColRefs, its other outer references ``level`` shallower."""

    def move(nest: int):
        def f(n):
            if isinstance(n, OuterRef) and n.depth > nest:
                depth = n.depth - level
                return ColRef(n.index, n.type) if depth == 0 else OuterRef(depth, n.index, n.type)
            if isinstance(n, Subquery):
                return Subquery(n.kind, map_plan_exprs(n.plan, move(nest + 1)), n.type, n.test, n.func)
            return n
        return f

    return agg.map_exprs(lambda e: map_expr(e, move(0)))


def deepen(plan, levels: int):
    """``plan`` moved ``levels`` query levels deeper (a WITH query read from a subquery
    of the query it belongs to): its references to enclosing queries, in it and in its
    subqueries, reach ``levels`` further out."""

    def move(nest: int):
        def f(n):
            if isinstance(n, OuterRef) and n.depth > nest:
                return OuterRef(n.depth + levels, n.index, n.type)
            if isinstance(n, Subquery):
                return Subquery(n.kind, map_plan_exprs(n.plan, move(nest + 1)), n.type, n.test, n.func)
            return n
        return f

    return map_plan_exprs(plan, move(0))
