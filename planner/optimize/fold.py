"""Constant folding over the whole plan.

The planner folds each expression it plans; the rewrites after it (decorrelation,
predicate pushdown substituting projections) build new ones, so this pass folds again
(``planner.consteval.fold``, PostgreSQL's ``eval_const_expressions``) and drops what folding
decides: a Filter whose predicate is TRUE goes; one whose predicate is FALSE or NULL
becomes the empty relation.
"""

from __future__ import annotations

from planner.consteval import fold
from planner.context import NO_STATEMENT, PlanContext
from planner.plan import Constant, Filter, map_inputs, map_node_exprs
from planner.scalar import Literal


def fold_constants(plan, ctx: PlanContext = NO_STATEMENT):
    """``plan`` with every scalar expression folded in the statement's context ``ctx``
    (``planner.consteval.fold``'s) and constant Filters resolved.

    Raises:
        SqlError: an error of a constant subexpression (``1/0``), as PostgreSQL's
        planner does; 57014 once the statement timed out or was cancelled."""
    p = map_node_exprs(map_inputs(plan, lambda i: fold_constants(i, ctx)), lambda e: fold(e, ctx))
    if isinstance(p, Filter) and isinstance(p.predicate, Literal):
        return p.input if p.predicate.value is True else Constant((), p.columns)
    return p
