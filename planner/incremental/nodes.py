"""Nodes of the incremental plan: how a view's changes are computed from its inputs'.

An incremental plan has the shape of the optimized plan it comes from, and each node says
how the node's *change* (its updates ``(row, time, diff)`` at one time) follows from its
inputs' changes and from *arrangements*: the state an operator keeps, the integral of
an input (every update up to the last time processed, consolidated), keyed for its
lookups (Materialize's arrangements; DBSP's ``I`` operator).

Every node has ``columns`` (the columns of the plan node it maintains) and ``plan`` (that
plan node), so an arrangement can always be described, and hydrated, from the plan.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Union

from planner.plan import Columns


@dataclass(frozen=True)
class Arrangement:
    """State one operator keeps: the integral of its input ``source`` (an incremental
    node) up to the last time processed, keyed by ``keys`` (scalar expressions over the
    source's columns; () for one key, the whole collection). ``id`` names it within its
    plan (EXPLAIN, metrics)."""

    id: int
    keys: tuple
    source: "Inc"

    @property
    def columns(self) -> Columns:
        return self.source.columns


@dataclass(frozen=True)
class Input:
    """A stored relation (a table's or a materialized view's shard): its changes are its
    shard's updates at the time processed (persist's ``(row, time, diff)``)."""

    plan: object

    @property
    def columns(self) -> Columns:
        return self.plan.columns


@dataclass(frozen=True)
class Constant:
    """A subplan that reads no stored relation (VALUES, generate_series, ``SELECT 1``):
    all of it arrives when the view is first computed, and it never changes after."""

    plan: object

    @property
    def columns(self) -> Columns:
        return self.plan.columns


@dataclass(frozen=True)
class Linear:
    """A linear operator (Filter, Project, Unnest: one input row gives output rows on its
    own): applied to its input's change as it is, each output row carrying the diff of
    the input row it came from (DBSP: a linear operator is its own incremental
    version). ``plan`` is the operator; its input is ``input``'s plan."""

    plan: object
    input: "Inc"

    @property
    def columns(self) -> Columns:
        return self.plan.columns


@dataclass(frozen=True)
class UnionAll:
    """``UNION ALL``: the change is the sum of the inputs' changes."""

    plan: object
    left: "Inc"
    right: "Inc"

    @property
    def columns(self) -> Columns:
        return self.plan.columns


@dataclass(frozen=True)
class DeltaJoin:
    """A tree of inner (and cross) joins as one n-way join, multilinear: with ``A_j`` the
    integral of input ``j`` before the change and ``dA_j`` its change, the change of
    ``A_1 join ... join A_n`` is the sum over the inputs ``i`` that changed of
    ``A'_1 .. A'_(i-1) join dA_i join A_(i+1) .. A_n`` (``A' = A + dA``: the inputs
    before ``i`` after their change), diffs multiplied: every combination of changes
    counts once (DBSP, VLDB 2023, section 4: a join is bilinear; Materialize's delta
    joins, "delta query" plans: each input's change is looked up in the other inputs'
    arrangements in turn, so no join of a subset of the inputs is arranged). ``inputs``
    are the join tree's leaves in column order (the output's columns are theirs,
    concatenated); ``conditions`` the joins' conjuncts over those columns; ``states``
    arrange each input, keyed by its sides of the equalities that connect it to the
    others (what a change is looked up by)."""

    plan: object
    inputs: tuple
    states: tuple
    conditions: tuple

    @property
    def columns(self) -> Columns:
        return self.plan.columns

    def offsets(self) -> list[int]:
        """The position of each input's first column in the output."""
        return column_offsets(self.inputs)


def column_offsets(inputs) -> list[int]:
    """The position of each of ``inputs``' first column in their concatenated columns."""
    return list(itertools.accumulate((len(i.columns) for i in inputs), initial=0))[:-1]


@dataclass(frozen=True)
class Hole:
    """A leaf of a ``Recompute``'s template: the rows of input ``index`` of the groups
    being recomputed."""

    index: int
    columns: Columns

    def explain_line(self) -> str:
        """Its line in an EXPLAIN of the template."""
        return f"Rows of input {self.index} in the touched groups"


@dataclass(frozen=True)
class Recompute:
    """An operator that is not linear (GROUP BY with any aggregate, DISTINCT, INTERSECT
    and EXCEPT, outer, semi and anti joins, ORDER BY ... LIMIT, window functions), kept
    current by recomputing only the groups its change touches: the groups are the
    values of ``states[i].keys`` over input i (equal keys across inputs are one group;
    NULL is a key like any other); the operator's output for a group depends only on
    its inputs' rows of that group. The change is ``template`` over the touched groups'
    rows after the change, minus ``template`` over their rows before it (DBSP's rule
    for a non-linear operator, restricted to the changed keys as Materialize's
    reductions are). ``template`` is ``plan`` with its inputs replaced by ``Hole``s."""

    plan: object
    inputs: tuple["Inc", ...]
    states: tuple[Arrangement, ...]
    template: object
    #: what the operator is, for EXPLAIN (Reduce, Distinct, TopK, Window, SetOp, Join kind)
    operator: str

    @property
    def columns(self) -> Columns:
        return self.plan.columns


@dataclass(frozen=True)
class Accumulate:
    """A GROUP BY whose aggregates are all functions of sums over the group's rows
    (``planner.incremental.accumulate``): ``state`` keeps, per group of ``plan.keys``,
    those sums and the group's row count, not the input's rows."""

    plan: object
    input: "Inc"
    state: Arrangement

    @property
    def columns(self) -> Columns:
        return self.plan.columns


@dataclass(frozen=True)
class Temporal:
    """A temporal filter (Materialize's SQL reference, "Temporal filters"): ``mz_now()``
    compared with expressions of the row. A row is in the output from the greatest of
    ``lowers`` to the least of ``uppers`` (exclusive), each bound an ``(expression of
    mz_timestamp over the input's columns, offset)`` pair meaning expression + offset
    (``mz_now() > e`` is the lower bound ``e + 1``); a NULL bound keeps the row out. An
    input update ``(row, t, d)`` becomes ``(row, max(t, lower), d)`` and ``(row,
    max(t, upper), -d)`` when lower < upper (nothing otherwise): updates at times still
    to come, which the operator keeps (its *pending* updates, by time) until the
    frontier reaches them."""

    plan: object
    input: "Inc"
    lowers: tuple
    uppers: tuple

    @property
    def columns(self) -> Columns:
        return self.plan.columns


Inc = Union[Input, Constant, Linear, UnionAll, DeltaJoin, Recompute, Accumulate, Temporal]


def inc_inputs(n) -> tuple:
    """The incremental nodes ``n`` reads."""
    if isinstance(n, (Input, Constant)):
        return ()
    if isinstance(n, (Linear, Accumulate, Temporal)):
        return (n.input,)
    if isinstance(n, UnionAll):
        return (n.left, n.right)
    return n.inputs


def walk(n):
    """``n`` and every incremental node under it, ``n`` first."""
    yield n
    for i in inc_inputs(n):
        yield from walk(i)


def arrangements(n) -> list[Arrangement]:
    """Every arrangement of the plan under ``n``, inputs' first (the order they are
    brought up to date in)."""
    out: list[Arrangement] = []
    for i in inc_inputs(n):
        out.extend(arrangements(i))
    if isinstance(n, (DeltaJoin, Recompute)):
        out += list(n.states)
    elif isinstance(n, Accumulate):
        out.append(n.state)
    return out
