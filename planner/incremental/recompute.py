"""Rule for the operators that are not linear: recompute the groups a change touches.

For each operator the output of a *group* depends only on its inputs' rows of that
group, so its change is the operator over the touched groups' rows after the change
minus the operator over their rows before it (DBSP's incremental version of a
non-linear operator, restricted to the changed keys as Materialize's reductions and
TopK are). The groups:

- GROUP BY (``Reduce``): its keys (no keys: one group, the whole input);
- DISTINCT, and UNION / INTERSECT / EXCEPT [ALL] by counts: the whole row;
- outer, semi and anti joins: their equi-join keys (``joins.equi_keys``), one group
  across both inputs (no equi-join conjunct: one group);
- ORDER BY ... LIMIT / OFFSET (TopK): one group (with every column added to the sort
  after its own keys, so that ties are broken the same way before and after a change);
- window functions: the partition keys all calls share (none shared: one group).

Aggregates that could add their input's change to a per-group accumulator (count, sum)
still recompute their group here; an accumulating rule is for later.
"""

from __future__ import annotations

from planner.incremental.joins import equi_keys
from planner.incremental.nodes import Hole, Recompute
from planner.plan import Distinct, Join, Limit, OrderBy, Reduce, SetOp, SortKey, Window
from planner.scalar import ColRef


def _all_columns(p) -> tuple:
    return tuple(ColRef(i, t) for i, (_, t) in enumerate(p.columns))


def _node(p, rec, arrange, inputs: tuple, keys: tuple, template, operator: str) -> Recompute:
    incs = tuple(rec(i) for i in inputs)
    return Recompute(p, incs, tuple(arrange(inc, k) for inc, k in zip(incs, keys)), template, operator)


def _hole(p, i: int = 0) -> Hole:
    return Hole(i, p.columns)


def recompute(p, rec, arrange):
    if isinstance(p, Reduce):
        return _node(p, rec, arrange, (p.input,), (p.keys,), Reduce(_hole(p.input), p.keys, p.aggregates),
                     "Reduce" if p.aggregates else "Distinct")
    if isinstance(p, Distinct):
        return _node(p, rec, arrange, (p.input,), (_all_columns(p.input),), Distinct(_hole(p.input)), "Distinct")
    if isinstance(p, SetOp) and not (p.op == "union" and p.all):
        return _node(p, rec, arrange, (p.left, p.right), (_all_columns(p.left), _all_columns(p.right)),
                     SetOp(p.op, _hole(p.left, 0), _hole(p.right, 1), p.all), f"{p.op.title()}{' All' if p.all else ''}")
    if isinstance(p, Join) and p.kind in ("left", "right", "full", "semi", "anti"):
        lk, rk = equi_keys(p)
        return _node(p, rec, arrange, (p.left, p.right), (lk, rk),
                     Join(_hole(p.left, 0), _hole(p.right, 1), p.kind, p.on), f"{p.kind.title()}Join")
    if isinstance(p, Limit):
        inner = p.input.input if isinstance(p.input, OrderBy) else p.input
        keys = p.input.keys if isinstance(p.input, OrderBy) else ()
        named = {k.index for k in keys}
        total = keys + tuple(SortKey(i) for i in range(len(inner.columns)) if i not in named)
        return _node(p, rec, arrange, (inner,), ((),), Limit(OrderBy(_hole(inner), total), p.limit, p.offset), "TopK")
    if isinstance(p, Window):
        shared = set(p.calls[0].partition)
        for c in p.calls[1:]:
            shared &= set(c.partition)
        keys = tuple(k for k in p.calls[0].partition if k in shared)
        return _node(p, rec, arrange, (p.input,), (keys,), Window(_hole(p.input), p.calls), "Window")
    return None
