"""Projection pruning: merge a Project into the Project below it and drop Projects that
only pass their input's columns through (what join planning and decorrelation leave:
column reorders and narrowings stacked on one another).

Merging substitutes the lower Project's expressions into the upper one's, so it only
happens when that duplicates no computation: each lower expression used more than once
must be a column reference or a literal. Dropping unused columns from scans and join
inputs is left to Spark's own column pruning, which sees the final Project.
"""

from __future__ import annotations

from collections import Counter

from planner.plan import Project, map_inputs
from planner.scalar import ColRef, Literal, has_subquery, map_expr, walk


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
