"""Which columns of a plan can never be NULL, from the catalog's NOT NULL constraints.

Two rewrites use it: ``x NOT IN (S)`` over non-null columns is a plain anti join on
``x = s`` (no null-aware anti join, which Spark can only broadcast), and decorrelation
joins a subquery's result back on ``=`` rather than ``IS NOT DISTINCT FROM`` when the
correlated columns cannot be NULL (plain hash keys instead of ``coalesce``/``isnull``
pairs). NOT NULL is enforced on every write path and checked by ``ALTER ... SET NOT
NULL`` (23502), so the constraint describes the data.

The analysis is conservative: a column not proven non-null is treated as nullable.
"""

from __future__ import annotations

from planner.plan import Distinct, Filter, Get, Join, Limit, OrderBy, Project, Reduce
from planner.scalar import Cast, ColRef, Literal


def non_null_columns(plan) -> frozenset[int]:
    """Indexes of ``plan``'s output columns that are never NULL."""
    if isinstance(plan, Get):
        cols = getattr(plan.relation, "columns", None)
        if cols is None or len(cols) != len(plan.columns):
            return frozenset()
        return frozenset(i for i, c in enumerate(cols) if getattr(c, "nullable", True) is False)
    if isinstance(plan, (Filter, Distinct, OrderBy, Limit)):
        return non_null_columns(plan.input)
    if isinstance(plan, Project):
        inner = non_null_columns(plan.input)
        return frozenset(i for i, e in enumerate(plan.exprs) if expr_non_null(e, inner))
    if isinstance(plan, Reduce):
        # grouping keys keep their input's nullability; aggregates may be NULL
        inner = non_null_columns(plan.input)
        return frozenset(i for i, k in enumerate(plan.keys) if expr_non_null(k, inner))
    if isinstance(plan, Join):
        left = non_null_columns(plan.left)
        if plan.kind in ("semi", "anti"):
            return left
        if plan.kind in ("inner", "cross"):
            width = len(plan.left.columns)
            return left | frozenset(i + width for i in non_null_columns(plan.right))
        if plan.kind == "left":
            return left
        return frozenset()
    return frozenset()


def expr_non_null(e, non_null: frozenset[int]) -> bool:
    """True when ``e`` over columns ``non_null`` (never NULL) can never be NULL."""
    if isinstance(e, ColRef):
        return e.index in non_null
    if isinstance(e, Literal):
        return e.value is not None
    if isinstance(e, Cast):
        return expr_non_null(e.expr, non_null)
    return False
