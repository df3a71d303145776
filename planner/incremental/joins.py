"""Rule for inner and cross joins: delta joins over arrangements of both inputs.

``d(A join B) = dA join B + A join dB + dA join dB`` (DBSP, VLDB 2023, section 4: a join
is bilinear), where ``A`` and ``B`` are the inputs' integrals before the change: each
input is arranged by its side of the join's equi-join conjuncts (``eq`` or
``is_not_distinct`` between an expression of the left's columns and one of the right's),
which is what a change's rows are looked up by. Outer, semi and anti joins are not
bilinear; ``recompute`` keeps them, by the same keys (``equi_keys``).
"""

from __future__ import annotations

from planner.incremental.nodes import DeltaJoin
from planner.plan import Join
from planner.scalar import Call, column_refs, conjuncts, shift_columns

#: join conditions whose two sides key an arrangement
_EQUALITIES = ("eq", "is_not_distinct")


def equi_keys(j: Join) -> tuple[tuple, tuple]:
    """``(left keys, right keys)``: the two sides of each equality conjunct of ``j.on``
    that compares an expression of the left's columns with one of the right's, as
    expressions over each side's own columns. ``((), ())`` when there is none."""
    n = len(j.left.columns)
    left, right = [], []
    for c in conjuncts(j.on) if j.on is not None else []:
        if not (isinstance(c, Call) and c.func in _EQUALITIES and len(c.args) == 2):
            continue
        a, b = c.args
        ra, rb = column_refs(a), column_refs(b)
        if not ra or not rb:
            continue
        if max(ra) < n <= min(rb):
            left.append(a)
            right.append(shift_columns(b, -n))
        elif max(rb) < n <= min(ra):
            left.append(b)
            right.append(shift_columns(a, -n))
    return tuple(left), tuple(right)


def delta_join(p, rec, arrange):
    if not (isinstance(p, Join) and p.kind in ("inner", "cross")):
        return None
    lk, rk = equi_keys(p)
    left, right = rec(p.left), rec(p.right)
    return DeltaJoin(p, left, right, arrange(left, lk), arrange(right, rk))
