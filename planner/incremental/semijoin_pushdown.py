"""Pre-pass of the incremental rules: semi and anti joins move below the inner joins whose
one side holds every left column their condition reads.

``(A join B) semi join R on c`` where ``c`` reads only ``A``'s columns (and ``R``'s) is
``(A semi join R on c) join B``: a row ``(a, b)`` is kept exactly when ``a`` has a match in
``R``, with ``(a, b)``'s multiplicity either way; likewise for anti joins, and for ``B``'s
side. This is the semi join transposition of the relational algebra (Spark's
``PushLeftSemiLeftAntiThroughJoin``).

Why the incremental plan wants it: a semi or anti join is recomputed per group over an
arrangement of each input (``recompute``), and its left input's arrangement holds every
row of that input. Above a join, that is the join's whole output (TPC-H Q18: customer,
orders and lineitem joined, 6 million wide rows at scale 1); below it, one table
(orders, 1.5 million narrow rows), and the joins above it then look a change up against
the semi join's (usually small) output. The batch optimizer (``planner.optimize``) keeps
its own join order: Spark pushes these joins itself.
"""

from __future__ import annotations

from dataclasses import replace

from planner.plan import Join, map_inputs
from planner.scalar import column_refs, has_subquery, remap_columns


def push_semijoins(p):
    """``p`` with each semi and anti join moved as far down its left input's inner and
    cross joins as its condition allows. Never raises; a plan with nothing to move comes
    back equal."""
    p = map_inputs(p, push_semijoins)
    if not (isinstance(p, Join) and p.kind in ("semi", "anti") and p.on is not None and not has_subquery(p.on)):
        return p
    inner = p.left
    if not (isinstance(inner, Join) and inner.kind in ("inner", "cross")):
        return p
    na, nb = len(inner.left.columns), len(inner.right.columns)
    left_refs = {i for i in column_refs(p.on) if i < na + nb}
    if not left_refs:  # the condition reads no left column: nothing to choose a side by
        return p
    if max(left_refs) < na:  # only A's columns: R's move down by B's width
        on = remap_columns(p.on, lambda i: i if i < na else i - nb)
        return replace(inner, left=push_semijoins(Join(inner.left, p.right, p.kind, on)))
    if min(left_refs) >= na:  # only B's columns: every column moves down by A's width
        on = remap_columns(p.on, lambda i: i - na)
        return replace(inner, right=push_semijoins(Join(inner.right, p.right, p.kind, on)))
    return p


__all__ = ["push_semijoins"]
