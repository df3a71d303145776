"""Functions that act on the session, over table data.

A function that changes or reads the session's state (``set_config``, the sequence
functions, ``pg_cancel_backend``; registry entries with ``extra["session"]``) cannot run on
a replica, which has no session. In a query's select list, PostgreSQL evaluates it once
per output row, after the rows are computed, sorted and limited (volatile target list
expressions are computed last). So the rows are computed on Spark without that
projection, and the projection (with the ORDER BY and LIMIT above it) is evaluated in the
session over them, by the interpreter, which has every function.

``split`` finds that projection; elsewhere (WHERE, a subquery, below a join) such a
function stays refused on table data (0A000), as before.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from planner.functions import FUNCTIONS
from planner.plan import Constant, Limit, OrderBy, Project, map_plan_exprs
from planner.scalar import Call, ColRef, Literal, Subquery, shift_columns, walk


def acts_on_session(e) -> bool:
    """Whether scalar expression ``e`` calls a function that acts on the session."""
    return any(isinstance(x, Call) and FUNCTIONS.get(x.func) is not None
               and FUNCTIONS[x.func].extra.get("session") for x in walk(e))


def plan_acts_on_session(p) -> bool:
    """Whether an expression of plan ``p`` (or of its inputs) acts on the session."""
    found = []

    def visit(e):
        if acts_on_session(e):
            found.append(e)
        return e
    map_plan_exprs(p, visit)
    return bool(found)


def split(plan) -> tuple[object, Callable[[list[tuple]], object]] | None:
    """``(inner, rebuild)`` when ``plan``'s select list (its top Project, under any ORDER
    BY, LIMIT and Project that only drops columns, as a sort on a column not selected
    leaves) calls a function that acts on the session and nothing below it does:
    ``inner`` runs on Spark and ``rebuild(rows)`` is the plan to evaluate in the session
    over its rows. None otherwise (nothing to split, or a call the split cannot move: in
    a subquery of the select list, or below it).

    When no ORDER BY key is such a column, ``inner`` is the whole query with those
    columns NULL and the Project's input columns appended, so that it sorts and limits
    first and the session evaluates the calls on the rows returned only, in their order
    (PostgreSQL postpones volatile select-list expressions past the sort and limit);
    else ``inner`` is the Project's input, and the session evaluates the rest."""
    chain, p = [], plan
    while isinstance(p, (OrderBy, Limit)) or isinstance(p, Project) and _only_columns(p):
        chain.append(p)
        p = p.input
    if not isinstance(p, Project) or not any(acts_on_session(e) for e in p.exprs):
        return None
    if any(isinstance(x, Subquery) for e in p.exprs for x in walk(e)) or plan_acts_on_session(p.input):
        return None
    for c in chain:
        if any(acts_on_session(e) for e in _node_exprs(c)):
            return None
    project, inner = p, p.input
    moved = [acts_on_session(e) for e in project.exprs]
    extra = tuple(ColRef(i, t) for i, (_, t) in enumerate(inner.columns))
    extra_names = tuple(f"?input{i}" for i in range(len(extra)))
    # bottom up: each level's columns as the select list's (``src``), and the chain with
    # the input columns carried through its Projects
    src, nodes, sorted_first = list(range(len(moved))), [], True
    for c in reversed(chain):
        if isinstance(c, OrderBy) and any(moved[src[k.index]] for k in c.keys):
            sorted_first = False
        if isinstance(c, Project):
            c = dataclasses.replace(c, exprs=c.exprs + tuple(ColRef(len(src) + i, x.type) for i, x in enumerate(extra)),
                                    names=c.names + extra_names)
            src = [src[e.index] for e in c.exprs[:len(c.exprs) - len(extra)]]
        nodes.append(c)
    if sorted_first:
        top = dataclasses.replace(project, names=project.names + extra_names, exprs=tuple(
            Literal(None, e.type) if m else e for e, m in zip(project.exprs, moved)) + extra)
        for c in nodes:
            top = dataclasses.replace(c, input=top)

        def rebuild_sorted(rows: list[tuple]):
            exprs = tuple(shift_columns(project.exprs[j], len(src)) if moved[j] else ColRef(i, project.exprs[j].type)
                          for i, j in enumerate(src))
            return Project(Constant(tuple(rows), top.columns), exprs, tuple(n for n, _ in plan.columns))
        return top, rebuild_sorted

    def rebuild(rows: list[tuple]):
        return _over(chain, dataclasses.replace(project, input=Constant(tuple(rows), inner.columns)))
    return inner, rebuild


def _only_columns(p: Project) -> bool:
    """A Project that only picks its input's columns (the select list over a sort on a
    column it does not show)."""
    return all(isinstance(e, ColRef) for e in p.exprs) and not any(acts_on_session(e) for e in p.exprs)


def _over(chain: list, node):
    """``node`` under the ORDER BY and LIMIT nodes of ``chain`` (top first)."""
    for c in reversed(chain):
        node = dataclasses.replace(c, input=node)
    return node


def _node_exprs(p) -> list:
    out = []

    def visit(e):
        out.append(e)
        return e
    map_plan_exprs(dataclasses.replace(p, input=Constant((), ())), visit)
    return out
