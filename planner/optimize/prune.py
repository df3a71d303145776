"""Projection pruning: merge a Project into the Project below it and drop Projects that
only pass their input's columns through (what join planning and decorrelation leave:
column reorders and narrowings stacked on one another).

Merging substitutes the lower Project's expressions into the upper one's, so it only
happens when that duplicates no computation: each lower expression used more than once
must be a column reference or a literal. Dropping unused columns from scans and join
inputs is left to Spark's own column pruning, which sees the final Project; dataflows,
which arrange their inputs' rows themselves, narrow them first (``prune_columns``).
"""

from __future__ import annotations

from collections import Counter

from dataclasses import replace

from planner.plan import (
    Constant, Distinct, Filter, Get, Join, LateralJoin, Limit, OrderBy, Project, Recursive, Reduce, Series, SetOp,
    Unnest, Window, WorkTable, map_inputs, map_node_exprs,
)
from planner.scalar import ColRef, Literal, column_refs, has_subquery, map_expr, remap_columns, walk


def prune_projections(plan):
    """``plan`` with stacked Projects merged and identity Projects removed (never the
    root's: it names the result's columns). Never raises."""
    p = map_inputs(plan, _prune)
    return _merge(p) if isinstance(p, Project) else p


def _prune(p):
    p = map_inputs(p, _prune)
    if isinstance(p, Project):
        p = _merge(p)
        if isinstance(p, Project) and _is_identity(p):
            return p.input
    return p


def _is_identity(p: Project) -> bool:
    cols = p.input.columns
    return len(p.exprs) == len(cols) and all(
        isinstance(e, ColRef) and e.index == i and e.type == t for i, (e, (_, t)) in enumerate(zip(p.exprs, cols)))


def _merge(p: Project):
    inner = p.input
    if not isinstance(inner, Project) or any(has_subquery(e) for e in p.exprs + inner.exprs):
        return p
    uses = Counter(n.index for e in p.exprs for n in walk(e) if isinstance(n, ColRef))
    if any(n > 1 and not isinstance(inner.exprs[i], (ColRef, Literal)) for i, n in uses.items()):
        return p
    exprs = tuple(map_expr(e, lambda n: inner.exprs[n.index] if isinstance(n, ColRef) else n) for e in p.exprs)
    return _merge(Project(inner.input, exprs, p.names))


def prune_columns(plan):
    """``plan`` with every input narrowed to the columns its consumer uses: a Project of
    the used columns over each Get, Projects' unused expressions dropped, and every
    expression above moved to the columns' new positions; then ``prune_projections``.
    A Filter is followed by a Project dropping the columns only its predicate reads.
    The root keeps its columns. Not one of the optimizer's ``RULES``: a peek leaves this
    to Spark's column pruning, but a dataflow (``planner.incremental``) arranges and
    consolidates the rows of its inputs itself, so it must not carry what it never reads.

    A node whose expressions hold a subquery, Distinct, INTERSECT / EXCEPT / UNION (all of
    a row counts there) and WITH RECURSIVE use every column of their inputs. A Get none
    of whose columns is used keeps one (its first not holding a map): a relation of no
    columns still has its rows. Never raises."""
    p, _ = _narrow(plan, set(range(len(plan.columns))), root=True)
    return prune_projections(p)


def _own_refs(p) -> set[int]:
    """The input columns ``p``'s own expressions read (Join: of both inputs, left's first)."""
    found: set[int] = set()

    def see(e):
        found.update(column_refs(e))
        return e

    map_node_exprs(p, see)
    return found


def _own_subquery(p) -> bool:
    seen = []
    map_node_exprs(p, lambda e: seen.append(has_subquery(e)) or e)
    return any(seen)


def _narrow(p, used: set[int], root: bool = False):
    """``(p narrowed, old output index -> new)``, the mapping covering ``used``."""
    n = len(p.columns)
    if isinstance(p, (Get, Constant, Series, WorkTable, Recursive, LateralJoin)) or _own_subquery(p):
        if isinstance(p, Get) and not root:
            return _narrow_get(p, used)
        if isinstance(p, (Get, Constant, Series, WorkTable, Recursive)):
            return p, {i: i for i in range(n)}
        return map_inputs(p, lambda i: _narrow(i, set(range(len(i.columns))))[0]), {i: i for i in range(n)}
    if isinstance(p, (Distinct, SetOp)):
        return map_inputs(p, lambda i: _narrow(i, set(range(len(i.columns))))[0]), {i: i for i in range(n)}
    if isinstance(p, (Filter, OrderBy, Limit)):
        need = used | _own_refs(p) | {k.index for k in getattr(p, "keys", ())}
        child, m = _narrow(p.input, need)
        q = map_node_exprs(replace(p, input=child), lambda e: remap_columns(e, m.__getitem__))
        if isinstance(p, OrderBy):
            q = replace(q, keys=tuple(replace(k, index=m[k.index]) for k in p.keys))
        if isinstance(p, Filter) and not need <= used:  # what only the predicate reads goes after it
            keep = sorted(used) or sorted(m)[:1]
            return (Project(q, tuple(ColRef(m[i], p.columns[i][1]) for i in keep), tuple(p.columns[i][0] for i in keep)),
                    {i: j for j, i in enumerate(keep)})
        return q, m
    if isinstance(p, Project):
        keep = list(range(n)) if root else sorted(used) or list(range(n))[:1]
        child, m = _narrow(p.input, set().union(*(column_refs(p.exprs[i]) for i in keep)))
        return (Project(child, tuple(remap_columns(p.exprs[i], m.__getitem__) for i in keep),
                        tuple(p.names[i] for i in keep)), {i: j for j, i in enumerate(keep)})
    if isinstance(p, Reduce):
        child, m = _narrow(p.input, _own_refs(p))
        return map_node_exprs(replace(p, input=child), lambda e: remap_columns(e, m.__getitem__)), {i: i for i in range(n)}
    if isinstance(p, (Window, Unnest)):
        k = len(p.input.columns)
        need = {i for i in used if i < k} | _own_refs(p) | set(getattr(p, "arrays", ()))
        child, m = _narrow(p.input, need)
        q = map_node_exprs(replace(p, input=child), lambda e: remap_columns(e, m.__getitem__))
        if isinstance(p, Unnest):
            q = replace(q, arrays=tuple(m[i] for i in p.arrays))
        k2 = len(child.columns)
        return q, {**m, **{k + j: k2 + j for j in range(n - k)}}
    if isinstance(p, Join):
        k = len(p.left.columns)
        refs = _own_refs(p)
        out = used if p.kind not in ("semi", "anti") else {i for i in used if i < k}
        left, ml = _narrow(p.left, {i for i in out | refs if i < k})
        right, mr = _narrow(p.right, {i - k for i in out | refs if i >= k})
        k2 = len(left.columns)
        m = {**ml, **{k + i: k2 + j for i, j in mr.items()}}
        q = map_node_exprs(Join(left, right, p.kind, p.on), lambda e: remap_columns(e, m.__getitem__))
        return q, (ml if p.kind in ("semi", "anti") else m)
    return p, {i: i for i in range(n)}  # a node kind this pass does not know: left whole


def _narrow_get(p: Get, used: set[int]):
    n = len(p.columns)
    keep = sorted(used) or [next((i for i, (_, t) in enumerate(p.columns) if not t.holds_map), 0)]
    if len(keep) == n:
        return p, {i: i for i in range(n)}
    return (Project(p, tuple(ColRef(i, p.columns[i][1]) for i in keep), tuple(p.columns[i][0] for i in keep)),
            {i: j for j, i in enumerate(keep)})
