"""Rule for inner and cross joins: delta joins over arrangements of their inputs.

``d(A join B) = dA join B + A join dB + dA join dB`` (DBSP, VLDB 2023, section 4: a join
is bilinear), where ``A`` and ``B`` are the inputs' integrals before the change. A tree
of inner and cross joins is one n-way ``DeltaJoin`` over its leaves (Materialize's delta
query plans): each leaf is arranged, keyed by its sides of the equalities (``eq`` or
``is_not_distinct`` between an expression of its columns and one of another leaf's)
that a change's rows are looked up by, and no join of a subset of the leaves is kept:
a change goes through the other leaves' arrangements in one pass. Outer, semi and anti
joins are not bilinear; ``recompute`` keeps them, by the same keys (``equi_keys``).
"""

from __future__ import annotations

from dataclasses import replace

from planner.incremental.nodes import DeltaJoin, column_offsets
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


def is_inner_join(p) -> bool:
    """Whether ``p`` is an inner or cross join (a node of a ``join_tree``)."""
    return isinstance(p, Join) and p.kind in ("inner", "cross")


def join_tree(p) -> tuple[tuple, tuple]:
    """``(leaves, conditions)`` of the tree of inner and cross joins rooted at ``p``: the
    plans under it that are not such joins, in column order (``p``'s columns are theirs,
    concatenated), and every join's conjuncts over those columns."""
    if not is_inner_join(p):
        return (p,), ()
    left, lc = join_tree(p.left)
    right, rc = join_tree(p.right)
    n = len(p.left.columns)
    own = tuple(conjuncts(p.on)) if p.on is not None else ()
    return left + right, lc + tuple(shift_columns(c, n) for c in rc) + own


def with_leaves(p, leaves):
    """Join tree ``p`` (``join_tree``) with its leaves, in column order, taken from the
    iterator ``leaves``."""
    if not is_inner_join(p):
        return next(leaves)
    return replace(p, left=with_leaves(p.left, leaves), right=with_leaves(p.right, leaves))


def leaf_keys(conditions, offsets: list[int], widths: list[int], j: int) -> tuple:
    """The keys leaf ``j`` is looked up by: its sides (over its own columns) of the
    equalities of ``conditions`` whose other side reads other leaves only."""
    lo, hi = offsets[j], offsets[j] + widths[j]
    out = []
    for c in conditions:
        if not (isinstance(c, Call) and c.func in _EQUALITIES and len(c.args) == 2):
            continue
        for mine, other in (c.args, c.args[::-1]):
            rm, ro = column_refs(mine), column_refs(other)
            if rm and ro and all(lo <= i < hi for i in rm) and not any(lo <= i < hi for i in ro):
                if (k := shift_columns(mine, -lo)) not in out:
                    out.append(k)
    return tuple(out)


def delta_join(p, rec, arrange):
    if not is_inner_join(p):
        return None
    leaves, conditions = join_tree(p)
    inputs = tuple(rec(x) for x in leaves)
    offsets = column_offsets(leaves)
    widths = [len(x.columns) for x in leaves]
    states = tuple(arrange(x, leaf_keys(conditions, offsets, widths, j)) for j, x in enumerate(inputs))
    return DeltaJoin(p, inputs, states, conditions)
