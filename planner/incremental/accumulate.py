"""Rule for GROUP BY whose aggregates all accumulate: keep per-group sums, not the input.

``count``, ``count(*)``, ``sum`` and ``avg`` over integers and numerics are functions of
sums over the group's rows (a count is a sum of ones; ``avg`` is a sum over a count),
and a sum's change is the sum of the change, each row weighted by its diff. So the
operator keeps, per group, those sums (its accumulators) and the number of rows, adds
the change's sums to them, and emits for each touched group its row from the old sums
(retracted) and from the new ones (Materialize's accumulable reductions; DBSP's
incremental aggregation of a linear aggregate). The state is one row per group, however
many rows the group has: a GROUP BY over a big table with few groups holds few rows.

Left to ``recompute``: DISTINCT aggregates, ordered ones, and sums of floats or
intervals (a float's sum under retractions is not the sum of the remaining values:
rounding differs from recomputing, and intervals have no exact Spark sum here).
"""

from __future__ import annotations

from planner.incremental.nodes import Accumulate
from planner.plan import Reduce

#: aggregates kept as sums
ACCUMULABLE = frozenset({"count", "count_star", "sum", "avg"})
#: argument types whose sums are exact
_EXACT = frozenset({"int2", "int4", "int8", "numeric"})


def accumulable(a) -> bool:
    """Whether aggregate ``a`` (an AggCall) is a function of sums of its rows."""
    if a.func not in ACCUMULABLE or a.distinct or a.order:
        return False
    return a.func == "count_star" or a.func == "count" or a.arg.type.name in _EXACT


def accumulate(p, rec, arrange):
    if not (isinstance(p, Reduce) and p.aggregates and all(accumulable(a) for a in p.aggregates)):
        return None
    inp = rec(p.input)
    return Accumulate(p, inp, arrange(inp, p.keys))
