"""The optimizer: an ordered list of rewrites of the logical plan (``planner.plan``).

Each rule is a pure function ``plan -> plan`` in its own module, with its own tests
(``tests/test_optimize_unit.py``), as in sqlglot's ``optimizer/`` and Materialize's
transform crate. ``RULES`` lists them in the order they run:

1. ``semijoins``: EXISTS / IN / NOT EXISTS / NOT IN conjuncts of a WHERE become semi and
   anti joins (NOT IN keeps SQL's NULL semantics).
2. ``decorrelate``: every other subquery becomes joins and aggregates.
3. ``fold_constants``: constant subexpressions are evaluated; trivially true filters go.
4. ``pushdown_predicates``: filters move down to the scans, and into join conditions.
5. ``plan_joins``: trees of inner joins become equi-join trees ordered by estimated size,
   never a cross join where a predicate connects the inputs.
6. ``prune_projections``: adjacent projections merge, identity projections go.

What the planner produces is Materialize's *raw* plan; after ``decorrelate`` the
*decorrelated* plan; after the last rule the *optimized* plan (``EXPLAIN RAW |
DECORRELATED | OPTIMIZED PLAN`` show each). The result is one plan whichever engine runs
it: Spark (``spark_exec.lower``) or the Python interpreter (``planner.interpret``).

This package must not import Spark, persist or sqlfront: statistics come in as a
``row_count`` callable.
"""

from __future__ import annotations

import inspect
from typing import Callable

from planner.context import NO_STATEMENT, PlanContext
from planner.optimize.decorrelate import decorrelate
from planner.optimize.fold import fold_constants
from planner.optimize.joins import plan_joins
from planner.optimize.prune import prune_projections
from planner.optimize.pushdown import pushdown_predicates
from planner.optimize.semijoins import semijoins

#: catalog relation -> its estimated number of rows, or None when unknown
RowCount = Callable[[object], "int | None"]

RULES = (semijoins, decorrelate, fold_constants, pushdown_predicates, plan_joins, prune_projections)

#: the rules whose output is the decorrelated plan (EXPLAIN DECORRELATED PLAN)
DECORRELATION = RULES[:2]


def optimize(plan, row_count: RowCount | None = None, rules=RULES, ctx: PlanContext = NO_STATEMENT):
    """``plan`` rewritten by each of ``rules`` in turn. A rule that takes a ``row_count``
    parameter gets ``row_count`` (sqlglot's optimizer passes its schema the same way),
    asked at most once per relation; one that takes a ``ctx`` parameter gets the
    statement's context (``planner.context.PlanContext``: constant folding evaluates under
    its guard, in its session's text settings)."""
    if row_count is not None:
        row_count = _once_per_relation(row_count)
    for rule in rules:
        params = inspect.signature(rule).parameters
        kwargs = {}
        if "row_count" in params:
            kwargs["row_count"] = row_count
        if "ctx" in params:
            kwargs["ctx"] = ctx
        plan = rule(plan, **kwargs)
    return plan


def _once_per_relation(row_count: RowCount) -> RowCount:
    seen: dict = {}

    def count(relation):
        if relation.id not in seen:
            seen[relation.id] = row_count(relation)
        return seen[relation.id]

    return count


__all__ = ["RULES", "DECORRELATION", "optimize", "decorrelate", "fold_constants", "plan_joins",
           "prune_projections", "pushdown_predicates", "semijoins"]
