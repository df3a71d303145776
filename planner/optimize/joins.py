"""Join planning: turn each tree of inner and cross joins into an equi-join tree in which
every join has the predicates that connect its sides, ordered by estimated sizes.

``FROM a, b, c WHERE a.x = c.y AND c.z = b.w`` reaches this pass (after predicate
pushdown) as joins whose conditions sit wherever pushdown left them. The rule collects
the leaves of a maximal inner/cross join tree and all their conjuncts, then orders the
leaves greedily: first the largest (by ``estimate_rows``: the fact table of a star
join), then, at each step, the first leaf in FROM order that some conjunct connects to
those already placed; that leaf first joins the smaller filtered leaves that connect to
it alone (a bushy subtree: ``lineitem ⋈ (orders ⋈ σ customer)``). It falls back to a cross join only when nothing connects. Each conjunct goes to the lowest join that has all
its columns, single-leaf conjuncts onto their leaf; a final projection restores the
original column order. The result is the same relation: inner joins and filters commute.

Starting from the largest input keeps a left-deep tree whose build sides are the
smaller inputs (Spark's adaptive execution broadcasts the small ones), the shape of a
star or snowflake join. After it, row counts alone cannot tell a join on a dimension's
key from one on a non-key column that multiplies rows (supplier joined to nation before
lineitem, in TPC-H Q7), so the query's own order of the connected leaves decides, as in
Spark without its cost-based optimizer.
"""

from __future__ import annotations

from planner.plan import (
    Constant, Distinct, Filter, Get, Join, Limit, Project, Reduce, Series, SetOp, filtered, inputs, map_inputs,
)
from planner.scalar import Call, ColRef, column_refs, conjoin, conjuncts, remap_columns

#: rows assumed for a relation without statistics
DEFAULT_ROWS = 1000
#: estimated rows from which a leaf joins its filtered neighbours before the rest
#: (``_absorbed``): well above what Spark broadcasts (10 MiB)
ABSORB_MIN_ROWS = 100_000


def estimate_rows(p, row_count=None) -> float:
    """A rough number of rows of ``p``: catalog row counts (``row_count(relation)``, None
    when unknown) at the scans, a selectivity of 1/10 per equality and 1/3 per other
    conjunct of a Filter, a series' own length, foreign-key joins (the larger side's rows) for equi-joins."""
    if isinstance(p, Get):
        n = row_count(p.relation) if row_count is not None else None
        return float(n) if n is not None else DEFAULT_ROWS
    if isinstance(p, Constant):
        return float(len(p.rows))
    if isinstance(p, Series):
        return float(max(0, (p.stop - p.start) // p.step + 1))
    if isinstance(p, Filter):
        sel = 1.0
        for c in conjuncts(p.predicate):
            sel *= 0.1 if isinstance(c, Call) and c.func in ("eq", "in", "like") else 1 / 3
        return max(1.0, estimate_rows(p.input, row_count) * sel)
    if isinstance(p, Join):
        left, right = estimate_rows(p.left, row_count), estimate_rows(p.right, row_count)
        if p.kind in ("semi", "anti", "left"):
            return left
        if p.kind == "cross" or p.on is None:
            return left * right
        return max(left, right)
    if isinstance(p, Reduce):
        return 1.0 if not p.keys else max(1.0, estimate_rows(p.input, row_count) / 10)
    if isinstance(p, Limit):
        n = estimate_rows(p.input, row_count)
        return min(n, p.limit) if p.limit is not None else n
    if isinstance(p, SetOp):
        return estimate_rows(p.left, row_count) + estimate_rows(p.right, row_count)
    if isinstance(p, Distinct):
        return estimate_rows(p.input, row_count)
    ins = inputs(p)
    return estimate_rows(ins[0], row_count) if ins else DEFAULT_ROWS


def plan_joins(plan, row_count=None):
    """``plan`` with every inner/cross join tree planned (see the module docstring).
    ``row_count``: catalog relation -> rows or None. Never raises."""
    if _is_inner(plan):
        return _plan_tree(plan, row_count)
    return map_inputs(plan, lambda p: plan_joins(p, row_count))


def _is_inner(p) -> bool:
    return isinstance(p, Join) and p.kind in ("inner", "cross")


def _absorbed(j: int, rest: list[int], refs: list, sizes: list, leaves: list) -> list[int]:
    """The leaves that join ``j`` before ``j`` joins the placed ones: each not yet placed,
    connected to ``j`` alone (no conjunct ties it to a placed leaf), filtered by a
    conjunct of its own, and smaller than ``j``. So ``orders`` meets the filtered
    ``customer`` before ``lineitem`` (TPC-H Q3: Spark's shape, a smaller shuffle).
    Only a ``j`` of at least ``ABSORB_MIN_ROWS`` absorbs: a smaller one is broadcast as it
    is, and a join under it would cost that broadcast, because Spark without its
    cost-based optimizer sizes a join as the product of its inputs' sizes."""
    if sizes[j] < ABSORB_MIN_ROWS:
        return []
    out = []
    for y in rest:
        if y == j or sizes[y] >= sizes[j]:
            continue
        tied = [r for r in refs if y in r and len(r) > 1]
        filtered = isinstance(leaves[y][0], Filter) or any(r == {y} for r in refs)
        if tied and all(r <= {j, y} for r in tied) and filtered:
            out.append(y)
    return out


def _plan_tree(plan: Join, row_count):
    leaves: list[tuple[object, int]] = []  # (planned leaf, offset of its first column in the original)
    conjs: list = []

    def flatten(p, offset: int) -> None:
        if _is_inner(p):
            flatten(p.left, offset)
            flatten(p.right, offset + len(p.left.columns))
            if p.on is not None:
                conjs.extend(conjuncts(remap_columns(p.on, lambda i: i + offset)))
        else:
            leaves.append((plan_joins(p, row_count), offset))

    flatten(plan, 0)

    def leaf_of(col: int) -> int:
        for k, (p, off) in enumerate(leaves):
            if off <= col < off + len(p.columns):
                return k
        raise IndexError(col)

    refs = [frozenset(leaf_of(i) for i in column_refs(c)) for c in conjs]
    sizes = [estimate_rows(p, row_count) for p, _ in leaves]

    # Greedy order: the largest first (ties: FROM order), then the first leaf in FROM
    # order connected to those placed, as a unit with the filtered leaves it absorbs.
    first = max(range(len(leaves)), key=lambda k: (sizes[k], -k))
    units, placed = [[first]], {first}
    while len(placed) < len(leaves):
        rest = [j for j in range(len(leaves)) if j not in placed]
        connected = [j for j in rest if any(j in r and len(r) > 1 and r <= placed | {j} for r in refs)]
        unit = [connected[0]] + _absorbed(connected[0], rest, refs, sizes, leaves) if connected else [rest[0]]
        units.append(unit)
        placed.update(unit)

    # New position of every original column.
    new_pos: dict[int, int] = {}
    bases = []  # position of each unit's first column
    pos = 0
    for unit in units:
        bases.append(pos)
        for k in unit:
            p, off = leaves[k]
            for i in range(len(p.columns)):
                new_pos[off + i] = pos
                pos += 1

    used = [False] * len(conjs)

    def leaf_plan(k: int):
        p, off = leaves[k]
        local = [i for i, r in enumerate(refs) if r == {k}]
        for i in local:
            used[i] = True
        if not local:
            return p
        return filtered(p, [remap_columns(conjs[i], lambda c: c - off) for i in local])

    def join_in(tree, right, have: set, base: int):
        """``tree ⋈ right`` on the unused conjuncts over ``have`` (columns from ``base``)."""
        here = [i for i, r in enumerate(refs) if not used[i] and len(r) > 1 and r <= have]
        for i in here:
            used[i] = True
        on = conjoin([remap_columns(conjs[i], lambda c: new_pos[c] - base) for i in here])
        return Join(tree, right, "inner" if on is not None else "cross", on)

    tree, have = None, set()
    for unit, base in zip(units, bases):
        sub, sub_have = leaf_plan(unit[0]), {unit[0]}
        for y in unit[1:]:  # a unit is a left-deep subtree of its own
            sub_have.add(y)
            sub = join_in(sub, leaf_plan(y), sub_have, base)
        have |= sub_have
        tree = sub if tree is None else join_in(tree, sub, have, 0)
    rest = [remap_columns(conjs[i], new_pos.__getitem__) for i, u in enumerate(used) if not u]
    tree = filtered(tree, rest)
    cols = plan.columns
    if all(new_pos[i] == i for i in range(len(cols))):
        return tree
    return Project(tree, tuple(ColRef(new_pos[i], t) for i, (_, t) in enumerate(cols)), tuple(n for n, _ in cols))
