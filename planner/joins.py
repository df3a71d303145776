"""Join ordering: turn a filter over a product of relations into a join tree in which
every join has the predicates that connect its sides.

``FROM a, b, c WHERE a.x = c.y AND c.z = b.w`` plans first as
``Filter(Join(Join(a, b), c))`` with two cross products. This rewrite collects the
inner/cross joins under a filter and all their conjuncts, orders the relations greedily so
that each one joins the ones before it through some predicate (falling back to the
original order, as a cross join, only when nothing connects), puts each conjunct at the
lowest join that has all its columns and single-relation conjuncts directly on their
relation, and restores the original column order with a final projection. The result is
the same relation: inner joins and filters commute.
"""

from __future__ import annotations

from catalog.types import BOOL
from planner.plan import Filter, Join, Project
from planner.scalar import Call, ColRef, map_expr, walk


def split_and(e) -> list:
    if isinstance(e, Call) and e.func == "and":
        out = []
        for a in e.args:
            out += split_and(a)
        return out
    return [e]


def _and(conds: list):
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else Call("and", tuple(conds), BOOL)


def _shift(e, offset: int):
    return map_expr(e, lambda n: ColRef(n.index + offset, n.type) if isinstance(n, ColRef) else n)


def reorder_joins(plan):
    """Rewrite ``Filter(inner/cross join tree)``; any other plan is returned unchanged."""
    if not (isinstance(plan, Filter) and isinstance(plan.input, Join) and plan.input.kind in ("inner", "cross")):
        return plan
    leaves: list[tuple[object, int]] = []  # (plan, offset of its first column in the original)
    conjs: list = []

    def flatten(p, offset: int) -> None:
        if isinstance(p, Join) and p.kind in ("inner", "cross"):
            flatten(p.left, offset)
            flatten(p.right, offset + len(p.left.columns))
            if p.on is not None:
                conjs.extend(split_and(_shift(p.on, offset)))
        else:
            leaves.append((p, offset))

    flatten(plan.input, 0)
    conjs += split_and(plan.predicate)
    if len(leaves) < 2:
        return plan

    def leaf_of(col: int) -> int:
        for k, (p, off) in enumerate(leaves):
            if off <= col < off + len(p.columns):
                return k
        raise IndexError(col)

    refs = [frozenset(leaf_of(n.index) for n in walk(c) if isinstance(n, ColRef)) for c in conjs]

    # Greedy order: next is the first relation connected to those already placed.
    order = [0]
    placed = {0}
    while len(order) < len(leaves):
        nxt = next((j for j in range(len(leaves)) if j not in placed
                    and any(j in r and len(r) > 1 and r <= placed | {j} for r in refs)), None)
        if nxt is None:
            nxt = next(j for j in range(len(leaves)) if j not in placed)
        order.append(nxt)
        placed.add(nxt)

    # New position of every original column.
    new_pos: dict[int, int] = {}
    pos = 0
    for k in order:
        p, off = leaves[k]
        for i in range(len(p.columns)):
            new_pos[off + i] = pos
            pos += 1

    def remap(e, base: int = 0):
        return map_expr(e, lambda n: ColRef(new_pos[n.index] - base, n.type) if isinstance(n, ColRef) else n)

    used = [False] * len(conjs)

    def leaf_plan(k: int):
        p, off = leaves[k]
        start = new_pos[off] if p.columns else 0
        local = [i for i, r in enumerate(refs) if r == {k}]
        for i in local:
            used[i] = True
        if not local:
            return p
        return Filter(p, _and([remap(conjs[i], start) for i in local]))

    tree = leaf_plan(order[0])
    have = {order[0]}
    for k in order[1:]:
        right = leaf_plan(k)
        have.add(k)
        here = [i for i, r in enumerate(refs) if not used[i] and len(r) > 1 and r <= have]
        for i in here:
            used[i] = True
        on = _and([remap(conjs[i]) for i in here])
        tree = Join(tree, right, "inner" if on is not None else "cross", on)
    rest = [remap(conjs[i]) for i, u in enumerate(used) if not u]
    if rest:
        tree = Filter(tree, _and(rest))
    cols = plan.columns
    if order == sorted(order):
        return tree
    return Project(tree, tuple(ColRef(new_pos[i], t) for i, (_, t) in enumerate(cols)), tuple(n for n, _ in cols))
