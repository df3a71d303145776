"""Incremental plans: how a materialized view, an index on a view or a SUBSCRIBE is kept
current at the cost of its inputs' changes, not of its inputs (issue 25).

``incremental_plan(plan)`` derives the incremental plan (``planner.incremental.nodes``)
from an optimized plan by rules, each a pure function in its own module (the shape of
``planner.optimize``), tried in ``RULES``' order on every plan node of the plan narrowed
to the columns it uses (``planner.optimize.prune.prune_columns``: an arrangement keeps
only what its operator reads, and a table's unused columns never enter the dataflow),
after semi and anti joins moved below the inner joins they can pass
(``semijoin_pushdown``: their arrangements then hold one input's rows, not a join's):

0. ``temporal.temporal``: a Filter with ``mz_now()`` is a temporal filter over the rest
   of its predicate; ``mz_now()`` anywhere else is refused.
1. ``linear.stored``: stored relations change by their shard's updates; subplans that
   read nothing stored are constants.
2. ``linear.linear``: Filter, Project, Unnest and UNION ALL apply to the change as they
   are; an ORDER BY without LIMIT goes.
3. ``joins.delta_join``: a tree of inner and cross joins is one n-way delta join over
   arrangements of its leaves.
4. ``accumulate.accumulate``: GROUP BY whose aggregates are all sums (count, sum, avg of
   exact numbers) keeps per-group sums and adds the change's.
5. ``recompute.recompute``: GROUP BY, DISTINCT, set operations, outer/semi/anti joins,
   TopK and window functions recompute the groups a change touches.

A plan node no rule takes is refused with 0A000 naming it: a view is never silently
recomputed whole. The references are DBSP (Budiu et al., VLDB 2023) and Materialize's
rendering of MIR. Rendering the plan as Spark jobs is ``spark_exec.dataflow``'s; this
package is pure (no Spark, no persist).
"""

from __future__ import annotations

import itertools

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED
from planner.incremental.accumulate import accumulate
from planner.incremental.joins import delta_join
from planner.incremental.linear import linear, stored
from planner.incremental.nodes import (
    Accumulate, Arrangement, DeltaJoin, Inc, Recompute, Temporal, walk,
)
from planner.incremental.recompute import recompute
from planner.incremental.semijoin_pushdown import push_semijoins
from planner.incremental.temporal import temporal
from planner.optimize.prune import prune_columns
from planner.plan import Get, Join, LateralJoin

RULES = (temporal, stored, linear, delta_join, accumulate, recompute)


def incremental_plan(plan) -> Inc:
    """The incremental plan of optimized plan ``plan``.

    Raises:
        SqlError: 0A000 when some node of ``plan`` has no incremental rule yet (named in
        the message)."""
    ids = itertools.count(1)

    def arrange(source, keys) -> Arrangement:
        return Arrangement(next(ids), tuple(keys), source)

    def rec(p):
        for rule in RULES:
            n = rule(p, rec, arrange)
            if n is not None:
                return n
        raise SqlError(FEATURE_NOT_SUPPORTED, f"materialized views cannot maintain {_describe(p)} incrementally yet",
                       hint="Use a view (not materialized) or SELECT the query directly.")

    inc = rec(prune_columns(push_semijoins(plan)))
    bad = next((t for t in _consolidated_types(inc) if t.holds_map and not t.map_groupable), None)
    if bad is not None:
        # a dataflow consolidates and arranges these rows by value, maps by their entries
        # in key order (SqlType.map_groupable); a map inside a list or array, or a map of
        # maps, has no such form yet
        raise SqlError(FEATURE_NOT_SUPPORTED, "materialized views, indexes on views and SUBSCRIBE cannot maintain "
                       f"values of type {bad.sql()} incrementally yet",
                       hint="Use a view (not materialized) or SELECT the query directly.")
    return inc


def _consolidated_types(inc) -> list:
    """The types of the values a dataflow of ``inc`` groups rows by: its output's columns
    (consolidated), the rows of its arrangements and of its temporal filters' pending
    updates, and the keys of its accumulations (their state is sums per key)."""
    out = [t for _, t in inc.columns]
    for n in walk(inc):
        if isinstance(n, Accumulate):
            out += [k.type for k in n.plan.keys]
        elif isinstance(n, (DeltaJoin, Recompute)):
            out += [t for a in n.states for _, t in a.columns]
        elif isinstance(n, Temporal):
            out += [t for _, t in n.columns]
    return out


def _describe(p) -> str:
    if isinstance(p, Get):
        return f'reads of system relation "{p.relation.name}"'
    if isinstance(p, (Join, LateralJoin)):
        return f"{p.kind} joins"
    name = type(p).__name__
    return {"Recursive": "WITH RECURSIVE", "WorkTable": "WITH RECURSIVE"}.get(name, name)


__all__ = ["RULES", "incremental_plan"]
