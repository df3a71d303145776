"""Predicate pushdown: move each conjunct of a Filter as far down the plan as it can go.

A conjunct moves through Project (its column references replaced by the projected
expressions), Distinct, OrderBy, Unnest (when it reads no unnested column), Reduce (when
it reads grouping keys only, replaced by the key expressions), into both sides of a SetOp,
into the side of an inner join it reads (a conjunct that reads both sides becomes part of
the join condition, so a cross join becomes an inner join), into the preserved side of an
outer join and the left of a semi or anti join; where it can go no further it becomes a
Filter there. A join condition's conjuncts that read only the side they may filter
(either side of an inner join, the non-preserved side of an outer join, the right of a
semi or anti join) move into that side too. A conjunct above a left join that compares a
right-side column with a strict operator rejects the NULL-extended rows, so that join
becomes an inner join (outer join simplification). Limit and Window stop everything.

Conjuncts with subqueries (left nested for the interpreter) never move: their outer
references name the row they are evaluated on. The rule is the classic one of System R
and of PostgreSQL's ``distribute_qual_to_rels``.
"""

from __future__ import annotations

from planner.plan import Distinct, Filter, Join, OrderBy, Project, Reduce, SetOp, Unnest, map_inputs
from catalog.types import BOOL
from planner.scalar import (
    Call, ColRef, Literal, column_refs, conjoin, conjuncts, has_subquery, map_expr, remap_columns, walk,
)
from planner.scalar import OuterRef

#: comparisons that are NULL when either argument is NULL
_STRICT = ("eq", "ne", "lt", "le", "gt", "ge")


def pushdown_predicates(plan):
    """``plan`` with its Filters' conjuncts pushed down (see the module docstring);
    the same rows, never an error that the original plan would not raise."""
    return _push(plan, [])


def _movable(c) -> bool:
    return not has_subquery(c) and not any(isinstance(n, OuterRef) for n in walk(c))


def _filter(p, preds: list):
    pred = conjoin(preds)
    return Filter(p, pred) if pred is not None else p


def _substitute(c, exprs):
    return map_expr(c, lambda n: exprs[n.index] if isinstance(n, ColRef) else n)


def _push(p, preds: list):
    """``p`` with ``preds`` (conjuncts over its columns) applied, as low as they go."""
    if isinstance(p, Filter):
        conds = [f for c in conjuncts(p.predicate) for f in factor_or(c)]
        stay = [c for c in conds if not _movable(c)]
        return _filter(_push(p.input, preds + [c for c in conds if _movable(c)]), stay)
    if isinstance(p, Project):
        down, stay = [], []
        for c in preds:
            used = [p.exprs[i] for i in column_refs(c)]
            (down if all(_movable(e) for e in used) else stay).append(c)
        return _filter(Project(_push(p.input, [_substitute(c, p.exprs) for c in down]), p.exprs, p.names), stay)
    if isinstance(p, (Distinct, OrderBy)):
        return map_inputs(p, lambda i: _push(i, preds))
    if isinstance(p, Unnest):
        width = len(p.input.columns)
        down = [c for c in preds if all(i < width for i in column_refs(c))]
        stay = [c for c in preds if c not in down]
        return _filter(Unnest(_push(p.input, down), p.arrays, p.kinds), stay)
    if isinstance(p, Reduce):
        nk = len(p.keys)
        # (never below a global aggregate: it has its one row even over no input)
        down = [c for c in preds if nk and all(i < nk for i in column_refs(c)) and all(_movable(k) for k in p.keys)]
        stay = [c for c in preds if c not in down]
        inner = _push(p.input, [_substitute(c, p.keys) for c in down])
        return _filter(Reduce(inner, p.keys, p.aggregates), stay)
    if isinstance(p, SetOp):
        return SetOp(p.op, _push(p.left, preds), _push(p.right, preds), p.all)
    if isinstance(p, Join):
        return _push_join(p, preds)
    return _filter(map_inputs(p, lambda i: _push(i, [])), preds)


def _push_join(p: Join, preds: list):
    nl = len(p.left.columns)
    kind = p.kind
    on = [f for c in conjuncts(p.on) for f in factor_or(c)] if p.on is not None and p.on != Literal(True, p.on.type) else []
    if kind == "left" and any(_rejects_nulls(c, nl) for c in preds):
        kind = "inner"
    left, right, stay = [], [], []
    sides = lambda c: {i < nl for i in column_refs(c)}  # noqa: E731  {True}: left only, {False}: right only
    for c in preds:
        s = sides(c)
        if kind in ("inner", "cross") and s == {False}:
            right.append(c)
        elif kind in ("inner", "cross", "left", "semi", "anti") and s == {True}:
            left.append(c)
        elif kind in ("inner", "cross") and s == {True, False}:
            on.append(c)
        elif kind == "right" and s == {False}:
            right.append(c)
        else:
            stay.append(c)
    if kind in ("inner", "cross"):
        # (l1 AND r1) OR (l2 AND r2) implies (l1 OR l2) on the left and (r1 OR r2) on the
        # right: filters each side can apply before the join (Spark's
        # PushExtraPredicateThroughJoin)
        on += [d for c in on if sides(c) == {True, False} and _movable(c)
               for d in (_implied(c, lambda i: i < nl), _implied(c, lambda i: i >= nl)) if d is not None]
    keep_on = []
    for c in on:
        s = sides(c) if _movable(c) else None
        if s == {True} and kind in ("inner", "cross", "right", "semi"):
            left.append(c)
        elif s == {False} and kind in ("inner", "cross", "left", "semi", "anti"):
            right.append(c)
        else:
            keep_on.append(c)
    new_on = conjoin(keep_on)
    if kind in ("inner", "cross"):
        kind = "inner" if new_on is not None else "cross"
    elif new_on is None:
        new_on = Literal(True, BOOL)  # outer, semi and anti joins keep an explicit condition
    joined = Join(_push(p.left, left), _push(p.right, [remap_columns(c, lambda i: i - nl) for c in right]), kind, new_on)
    return _filter(joined, stay)


def _rejects_nulls(c, nl: int) -> bool:
    """True when ``c`` is NULL (so not true) where the right side's columns are all NULL."""
    return (_movable(c) and hasattr(c, "func") and c.func in _STRICT
            and any(isinstance(a, ColRef) and a.index >= nl for a in c.args))


def _disjuncts(e) -> list:
    if isinstance(e, Call) and e.func == "or":
        return [d for a in e.args for d in _disjuncts(a)]
    return [e]


def _disjoin(ds: list):
    return ds[0] if len(ds) == 1 else Call("or", tuple(ds), BOOL)


def factor_or(c) -> list:
    """``c`` as conjuncts, with the conjuncts common to every branch of an OR taken out:
    ``(a AND b) OR (a AND c)`` is ``a AND (b OR c)`` (``a`` alone when a branch is just
    ``a``). The factored ``a`` can then be a join key or move down on its own."""
    ds = _disjuncts(c)
    if len(ds) < 2:
        return [c]
    branches = [conjuncts(d) for d in ds]
    common = [x for x in branches[0] if all(x in b for b in branches[1:])]
    if not common:
        return [c]
    rests = [[x for x in b if x not in common] for b in branches]
    if any(not r for r in rests):
        return common  # one branch is exactly the common part: the OR adds nothing
    return common + [_disjoin([conjoin(r) for r in rests])]


def _implied(c, on_side):
    """The OR, over ``c``'s branches, of each branch's conjuncts that read only columns
    ``on_side`` accepts; None when some branch has none (then nothing is implied)."""
    parts = []
    for d in _disjuncts(c):
        mine = [x for x in conjuncts(d) if column_refs(x) and all(on_side(i) for i in column_refs(x))]
        if not mine:
            return None
        parts.append(conjoin(mine))
    return _disjoin(parts) if len(parts) > 1 else None
