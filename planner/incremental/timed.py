"""Time as a grouping key of a recomputed operator: one round over several times.

A ``Recompute`` operator's change at time ``t`` is the operator over the touched groups'
rows through ``t`` less its answer through the time before (``recompute``). In a round
of several times (``spark_exec.dataflow.Dataflow.advance``) each touched group is
recomputed once per time it changed at, all in one plan, by making the time part of
the group: every row of the operator's input comes tagged with ``(t, tn)``, a time the
group is recomputed at and the group's next such time (NULL: none in this round), and
the operator groups by ``t`` besides its own keys. ``tn`` is a function of the group
and ``t``, so grouping by it as well changes no group; it rides along so the answer at
``t`` can be taken back at ``tn``. This is DBSP's lifting of an operator to a stream of
times (Budiu et al., VLDB 2023, section 3) restricted to the groups a round touches, as
Materialize's reductions and TopK keep one output per key and time.

Operators of one group (TopK, an aggregate without GROUP BY, a window without PARTITION
BY, a join without an equi-join conjunct) are rewritten the same way, their one group
being the whole input at each time. A TopK ranks per time (``row_number()`` partitioned
by ``t``, in the TopK's total order), as a ``LIMIT`` cannot. An aggregate without GROUP
BY answers one row over no rows (PostgreSQL's and SQL's rule: ``max`` NULL, ``count`` 0),
which a group of no rows would not: ``answers_no_rows`` says so, and the renderer gives
each time whose group has no rows the template's answer over no rows.
"""

from __future__ import annotations

from dataclasses import replace

from catalog.types import BOOL, INT8
from planner.incremental.nodes import Hole, Recompute
from planner.plan import Distinct, Filter, Join, Limit, OrderBy, Project, Reduce, SetOp, Window, WindowCall
from planner.scalar import Call, ColRef, Literal, conjoin, remap_columns

#: the two columns each input row of a timed template has after its own: the time its
#: group is recomputed at, and the group's next such time in the round (or NULL)
TIME_COLUMNS = (("_t", INT8), ("_tn", INT8))


def _hole(h: Hole) -> Hole:
    return Hole(h.index, tuple(h.columns) + TIME_COLUMNS)


def _project(p, order: list[int], names: tuple) -> Project:
    return Project(p, tuple(ColRef(i, p.columns[i][1]) for i in order), names)


def timed_template(n: Recompute):
    """``n.template`` over inputs with ``TIME_COLUMNS`` after their own columns, computed
    per ``(group, _t)``; its output: the template's columns, then ``_t`` and ``_tn``.

    Over no rows it answers no rows, even where ``n.template`` answers one
    (``answers_no_rows``). Returns None when the template has a shape no rule here
    knows (the operator then steps per time)."""
    p = n.template
    names = tuple(c for c, _ in p.columns) + tuple(c for c, _ in TIME_COLUMNS)
    if isinstance(p, Reduce) and isinstance(p.input, Hole):
        k = len(p.input.columns)
        keys = p.keys + (ColRef(k, INT8), ColRef(k + 1, INT8))
        r = Reduce(_hole(p.input), keys, p.aggregates)
        nk = len(p.keys)
        return _project(r, [*range(nk), *range(nk + 2, nk + 2 + len(p.aggregates)), nk, nk + 1], names)
    if isinstance(p, Distinct) and isinstance(p.input, Hole):
        return Distinct(_hole(p.input))
    if isinstance(p, SetOp) and isinstance(p.left, Hole) and isinstance(p.right, Hole):
        return SetOp(p.op, _hole(p.left), _hole(p.right), p.all)
    if isinstance(p, Join) and isinstance(p.left, Hole) and isinstance(p.right, Hole):
        kl, kr = len(p.left.columns), len(p.right.columns)
        # the right's columns move past the left's two time columns
        on = remap_columns(p.on, lambda i: i if i < kl else i + 2) if p.on is not None else None
        same = Call("eq", (ColRef(kl, INT8), ColRef(kl + 2 + kr, INT8)), BOOL)
        j = Join(_hole(p.left), _hole(p.right), p.kind, conjoin([same] + ([on] if on is not None else [])))
        if p.kind in ("semi", "anti"):
            return j
        if p.kind == "inner":
            return _project(j, [*range(kl), *range(kl + 2, kl + 2 + kr), kl, kl + 1], names)
        # an outer join's unmatched row has its own side's times only
        cols = j.columns
        ref = [ColRef(i, cols[i][1]) for i in range(len(cols))]
        t = Call("coalesce", (ref[kl], ref[kl + 2 + kr]), INT8)
        tn = Call("coalesce", (ref[kl + 1], ref[kl + 3 + kr]), INT8)
        return Project(j, tuple(ref[:kl]) + tuple(ref[kl + 2:kl + 2 + kr]) + (t, tn), names)
    if isinstance(p, Limit) and isinstance(p.input, OrderBy) and isinstance(p.input.input, Hole):
        # TopK: each time's rows ranked in the total order (``recompute``'s: ties broken
        # by every column, so the rows kept are the LIMIT's), those in the window kept
        k = len(p.input.input.columns)
        cols = p.input.input.columns
        order = tuple((ColRef(s.index, cols[s.index][1]), s.descending, s.nulls_first) for s in p.input.keys)
        w = Window(_hole(p.input.input), (WindowCall("row_number", (), (ColRef(k, INT8),), order, INT8),))
        rank = ColRef(k + 2, INT8)
        keep = conjoin(([Call("gt", (rank, Literal(p.offset, INT8)), BOOL)] if p.offset else [])
                       + ([Call("le", (rank, Literal(p.offset + p.limit, INT8)), BOOL)] if p.limit is not None else []))
        return _project(w if keep is None else Filter(w, keep), list(range(k + 2)), names)
    if isinstance(p, Window) and isinstance(p.input, Hole):
        k = len(p.input.columns)
        t = ColRef(k, INT8)
        calls = tuple(replace(c, partition=c.partition + (t,)) for c in p.calls)
        w = Window(_hole(p.input), calls)
        return _project(w, [*range(k), *range(k + 2, k + 2 + len(calls)), k, k + 1], names)
    return None


def answers_no_rows(n: Recompute) -> bool:
    """Whether ``n``'s operator answers a row over no input rows: an aggregate without
    GROUP BY (SQL's rule; PostgreSQL's docs, 4.2.7: ``count`` 0, the others NULL). Its
    ``timed_template`` answers nothing at a time whose input is empty, so the renderer
    answers there the template over no rows."""
    return isinstance(n.template, Reduce) and not n.template.keys
