"""Semi and anti joins for the subqueries of a WHERE that only test for matches.

A Filter conjunct ``EXISTS (S)``, ``x op ANY (S)`` (``IN``), ``NOT EXISTS (S)``, ``NOT
(x op ANY (S))`` (``NOT IN``) or ``x op ALL (S)`` keeps a row of the Filter's input ``R``
when some row of ``S`` (or none) makes a condition true. When ``S`` is ``[Project]
[Filter(preds)] X`` with ``X`` free of outer references, the condition is a join
condition: the correlated conjuncts of ``preds`` (outer columns become ``R``'s) and, for
ANY/ALL, the comparison of ``x`` with ``S``'s column:

    EXISTS (S)           R semi join X on corr
    NOT EXISTS (S)       R anti join X on corr
    x op ANY (S)         R semi join X on corr AND (x op s)
    NOT (x op ANY (S))   R anti join X on corr AND ((x op s) IS NOT FALSE)
    x op ALL (S)         R anti join X on corr AND ((x op s) IS NOT TRUE)

The IS NOT FALSE / IS NOT TRUE forms keep SQL's NULL semantics: a NULL ``x``, or a NULL in
``S``, makes ``x NOT IN (S)`` NULL (the row is dropped) unless ``S`` has no rows (it is
kept); over NOT NULL columns on both sides the test is plain ``x = s``. Spark runs ``(x = s) OR (x = s) IS NULL`` as its null-aware anti join. This is the
rewrite of PostgreSQL's ``pull_up_sublinks`` and of Spark's ``RewritePredicateSubquery``.
Subqueries of other shapes are left for ``decorrelate``.
"""

from __future__ import annotations

from dataclasses import replace

from catalog.types import BOOL
from planner.optimize.nullability import expr_non_null, non_null_columns
from planner.plan import Distinct, Filter, Join, OrderBy, Project, filtered, map_inputs, map_plan_exprs
from planner.scalar import (
    Call, ColRef, OuterRef, Subquery, conjoin, conjuncts, has_subquery, map_expr, remap_columns, walk,
)


def semijoins(plan):
    """``plan`` with the matching-only subqueries of its Filters (and of its subqueries'
    Filters) turned into semi and anti joins. Never raises."""
    plan = map_plan_exprs(plan, lambda n: replace(n, plan=semijoins(n.plan)) if isinstance(n, Subquery) else n)
    return _visit(plan)


def _visit(p):
    p = map_inputs(p, _visit)
    if not isinstance(p, Filter):
        return p
    rest, joins = [], []
    for c in conjuncts(p.predicate):
        j = _as_join(c, p.input)
        if j is None:
            rest.append(c)
        else:
            joins.append(j)
    if not joins:
        return p
    # plain conjuncts, then the semi and anti joins, then the other subqueries: these
    # are decorrelated over the smallest input
    plain = [c for c in rest if not has_subquery(c)]
    plan = filtered(p.input, plain)
    for kind, right, on in joins:
        plan = Join(plan, right, kind, on)
    others = [c for c in rest if has_subquery(c)]
    return filtered(plan, others)


def _as_join(c, outer):
    """``(kind, right, on)`` for a conjunct over ``outer`` that is a semi or anti join,
    else None."""
    width = len(outer.columns)
    negated = isinstance(c, Call) and c.func == "not"
    sq = c.args[0] if negated else c
    if not isinstance(sq, Subquery) or sq.kind not in ("exists", "any", "all"):
        return None
    if sq.kind == "all" and negated:
        return None
    split = _split(sq.plan, sq.kind != "exists")
    if split is None:
        return None
    value, corr, right = split
    if sq.kind == "exists" and not corr:
        return None  # uncorrelated: decorrelate's one-row left join is cheaper than a product
    on = [_to_join(e, width) for e in corr]
    if sq.kind != "exists":
        if sq.test is None or has_subquery(sq.test) or _has_outer(sq.test, 1):
            return None
        cmp = Call(sq.func, (sq.test, remap_columns(value, lambda i: i + width)), BOOL)
        if sq.kind == "any" and negated and not _never_null(sq.test, outer, value, right):
            cmp = Call("is_not_false", (cmp,), BOOL)
        elif sq.kind == "all":
            cmp = Call("is_not_true", (cmp,), BOOL)
        on.append(cmp)
    kind = "anti" if negated or sq.kind == "all" else "semi"
    return kind, right, conjoin(on)


def _never_null(test, outer, value, right) -> bool:
    """True when neither side of ``test op value`` can be NULL (NOT NULL columns): then
    ``NOT IN`` is a plain anti join, with no null-aware semantics to keep."""
    return expr_non_null(test, non_null_columns(outer)) and expr_non_null(value, non_null_columns(right))


def _split(plan, wants_value: bool):
    """``(value, correlated conjuncts, right input)`` of a subquery plan of the shape the
    rewrite handles, else None. ``value`` is the subquery's column over the right input."""
    value = ColRef(0, plan.columns[0][1]) if plan.columns else None
    body = plan
    while isinstance(body, (Project, Distinct, OrderBy)):
        # Distinct and ORDER BY do not change whether a match exists
        if isinstance(body, Project):
            if wants_value:
                exprs = body.exprs
                value = map_expr(value, lambda n: exprs[n.index] if isinstance(n, ColRef) else n)
        body = body.input
    corr, local = [], []
    if isinstance(body, Filter):
        for c in conjuncts(body.predicate):
            (corr if _has_outer(c, 1) else local).append(c)
        body = body.input
    if _deep_outer(body, 1) or any(_deep_outer_expr(c, 1) for c in local):
        return None
    if any(has_subquery(c) for c in corr):
        return None
    if wants_value and (value is None or has_subquery(value) or _has_outer(value, 1)):
        return None
    right = filtered(body, local)
    return value, corr, right


def _to_join(e, width: int):
    """A correlated conjunct of the subquery as a join condition: its columns move past
    the ``width`` columns of the outer input, which its depth-1 OuterRefs now name."""
    def f(n):
        if isinstance(n, ColRef):
            return ColRef(n.index + width, n.type)
        if isinstance(n, OuterRef):
            return ColRef(n.index, n.type) if n.depth == 1 else OuterRef(n.depth - 1, n.index, n.type)
        return n

    return map_expr(e, f)


def _has_outer(e, depth: int) -> bool:
    return any(isinstance(n, OuterRef) and n.depth >= depth for n in walk(e))


def _deep_outer_expr(e, depth: int) -> bool:
    """True when ``e`` or a subquery in it refers to a query ``depth`` or more levels out."""
    for n in walk(e):
        if isinstance(n, OuterRef) and n.depth >= depth:
            return True
        if isinstance(n, Subquery) and _deep_outer(n.plan, depth + 1):
            return True
    return False


def _deep_outer(plan, depth: int) -> bool:
    found = []
    map_plan_exprs(plan, lambda n: found.append(n) or n if _deep_outer_expr(n, depth) else n)
    return bool(found)
