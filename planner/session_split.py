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
from planner.scalar import Call, Subquery, walk


def acts_on_session(e) -> bool:
    """Whether scalar expression ``e`` calls a function that acts on the session."""
    return any(isinstance(x, Call) and FUNCTIONS.get(x.func) is not None
               and FUNCTIONS[x.func].extra.get("session") for x in walk(e))


def _plan_acts_on_session(p) -> bool:
    found = []

    def visit(e):
        if acts_on_session(e):
            found.append(e)
        return e
    map_plan_exprs(p, visit)
    return bool(found)


def split(plan) -> tuple[object, Callable[[list[tuple]], object]] | None:
    """``(inner, rebuild)`` when ``plan``'s select list (its top Project, under any ORDER
    BY and LIMIT) calls a function that acts on the session and nothing below it does:
    ``inner`` is the Project's input, to compute on Spark, and ``rebuild(rows)`` the plan
    with that input replaced by ``rows`` (a Constant), to evaluate in the session. None
    otherwise (nothing to split, or a call the split cannot move: in a subquery of the
    select list, or below it)."""
    chain, p = [], plan
    while isinstance(p, (OrderBy, Limit)):
        chain.append(p)
        p = p.input
    if not isinstance(p, Project) or not any(acts_on_session(e) for e in p.exprs):
        return None
    if any(isinstance(x, Subquery) for e in p.exprs for x in walk(e)) or _plan_acts_on_session(p.input):
        return None
    for c in chain:
        if any(acts_on_session(e) for e in _node_exprs(c)):
            return None
    project, inner = p, p.input

    def rebuild(rows: list[tuple]):
        node = dataclasses.replace(project, input=Constant(tuple(rows), inner.columns))
        for c in reversed(chain):
            node = dataclasses.replace(c, input=node)
        return node
    return inner, rebuild


def _node_exprs(p) -> list:
    out = []

    def visit(e):
        out.append(e)
        return e
    map_plan_exprs(dataclasses.replace(p, input=Constant((), ())), visit)
    return out
