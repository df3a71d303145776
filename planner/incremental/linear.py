"""Rules for the operators whose change is computed from their inputs' changes alone.

- A stored relation (a table, a materialized view) changes by its shard's updates.
- A subplan that reads nothing stored is a constant: it arrives once, at hydration.
- Filter, Project and Unnest are linear: they apply to the change as they are.
- ``UNION ALL`` adds its inputs' changes.
- An ``ORDER BY`` without ``LIMIT`` does not change a view's contents (a materialized
  view has no order: Materialize's SQL reference, "CREATE MATERIALIZED VIEW"), so it goes.
"""

from __future__ import annotations

from catalog.snapshot import Table
from planner.incremental.nodes import Constant, Input, Linear, UnionAll
from planner.incremental.temporal import plan_mentions_now
from planner.plan import Filter, Get, OrderBy, Project, SetOp, Unnest, relations_read


def stored(p, rec, arrange):
    if isinstance(p, Get) and isinstance(p.relation, Table):
        return Input(p)
    if not relations_read(p) and not plan_mentions_now(p):  # a temporal filter of constants changes
        return Constant(p)
    return None


def linear(p, rec, arrange):
    if isinstance(p, (Filter, Project, Unnest)):
        return Linear(p, rec(p.input))
    if isinstance(p, SetOp) and p.op == "union" and p.all:
        return UnionAll(p, rec(p.left), rec(p.right))
    if isinstance(p, OrderBy):
        return rec(p.input)
    return None
