"""Relations of the logical plan (relational algebra over positional columns).

Each node has ``columns``: a tuple of ``(name, SqlType)`` giving its output. Names
are only for the client's RowDescription; expressions refer to columns by position.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union

from catalog.snapshot import Relation as CatalogRelation
from catalog.types import SqlType
from planner.scalar import AggCall, ScalarExpr, conjoin

Columns = tuple[tuple[str, SqlType], ...]


@dataclass(frozen=True)
class Get:
    """Read a catalog relation (a user table's shard, or a builtin table's rows)."""

    relation: CatalogRelation
    columns: Columns


@dataclass(frozen=True)
class Constant:
    """Literal rows (``VALUES``, or the single empty row of ``SELECT`` without FROM)."""

    rows: tuple[tuple, ...]
    columns: Columns


@dataclass(frozen=True)
class Filter:
    input: "Plan"
    predicate: ScalarExpr

    @property
    def columns(self) -> Columns:
        return self.input.columns


@dataclass(frozen=True)
class Project:
    """Compute ``exprs`` over each input row; output column i is exprs[i] named names[i]."""

    input: "Plan"
    exprs: tuple[ScalarExpr, ...]
    names: tuple[str, ...]

    @property
    def columns(self) -> Columns:
        return tuple((n, e.type) for n, e in zip(self.names, self.exprs))


@dataclass(frozen=True)
class Reduce:
    """Group by ``keys`` and compute ``aggregates``; output: the keys, then the aggregates.

    With no keys the output is exactly one row, even over empty input (SQL's rule for
    aggregates without GROUP BY)."""

    input: "Plan"
    keys: tuple[ScalarExpr, ...]
    aggregates: tuple[AggCall, ...]

    @property
    def columns(self) -> Columns:
        return tuple((f"?key{i}?", k.type) for i, k in enumerate(self.keys)) + tuple(
            (a.func, a.type) for a in self.aggregates
        )


@dataclass(frozen=True)
class Join:
    """``kind`` is inner, left, right, full, cross, semi or anti. ``on`` refers to the
    concatenated columns (left's first). A semi join keeps each left row for which some
    right row makes ``on`` true, once; an anti join keeps the others (Spark's left_semi
    and left_anti); both output the left's columns only."""

    left: "Plan"
    right: "Plan"
    kind: str
    on: ScalarExpr | None

    @property
    def columns(self) -> Columns:
        if self.kind in ("semi", "anti"):
            return self.left.columns
        return self.left.columns + self.right.columns


@dataclass(frozen=True)
class LateralJoin:
    """``left [LEFT] JOIN LATERAL right ON on`` (``kind`` inner, cross or left; PostgreSQL
    7.2.1.5): ``right`` is evaluated for each row of ``left``, its depth-1 OuterRefs
    naming ``left``'s columns (deeper ones: the enclosing queries'). Only raw plans have
    it: decorrelation (``planner.optimize.decorrelate``) makes it a join."""

    left: "Plan"
    right: "Plan"
    kind: str
    on: ScalarExpr | None

    @property
    def columns(self) -> Columns:
        return self.left.columns + self.right.columns


@dataclass(frozen=True)
class SortKey:
    """Sort by input column ``index``; PostgreSQL's defaults: NULLs last ascending,
    first descending."""

    index: int
    descending: bool = False
    nulls_first: bool = False


@dataclass(frozen=True)
class OrderBy:
    input: "Plan"
    keys: tuple[SortKey, ...]

    @property
    def columns(self) -> Columns:
        return self.input.columns


@dataclass(frozen=True)
class Limit:
    input: "Plan"
    limit: int | None
    offset: int

    @property
    def columns(self) -> Columns:
        return self.input.columns


@dataclass(frozen=True)
class Distinct:
    input: "Plan"

    @property
    def columns(self) -> Columns:
        return self.input.columns


@dataclass(frozen=True)
class SetOp:
    """UNION / INTERSECT / EXCEPT (``op``), with ``all`` keeping duplicates (bag semantics).
    Inputs have the same number of columns and types; names come from the left."""

    op: str
    left: "Plan"
    right: "Plan"
    all: bool

    @property
    def columns(self) -> Columns:
        return self.left.columns


@dataclass(frozen=True)
class Unnest:
    """Set-returning functions of a select list (PostgreSQL's ProjectSet): each input row
    is repeated once per element of the longest of the arrays in columns ``arrays``
    (zero times when all are empty or NULL), with one more column per function: the
    element (``unnest``, NULL past a shorter array's end) or its 1-based position
    (``subscripts``, NULL past the end likewise) or the output row's 1-based position
    (``ordinality``: WITH ORDINALITY, over the longest array). PostgreSQL 9.25 / 10+ SRF
    rules."""

    input: "Plan"
    arrays: tuple[int, ...]
    kinds: tuple[str, ...]

    @property
    def columns(self) -> Columns:
        from catalog.types import INT4

        extra = tuple((k, self.input.columns[i][1].element if k == "unnest" else INT4)
                      for i, k in zip(self.arrays, self.kinds))
        return self.input.columns + extra


@dataclass(frozen=True)
class Series:
    """``generate_series(start, stop, step)`` over integers (PostgreSQL 9.26): start,
    start + step, ... while not past stop."""

    start: int
    stop: int
    step: int
    columns: Columns


@dataclass(frozen=True)
class WindowCall:
    """One window function: ``func`` (a window entry of ``planner.functions.window``, or
    an aggregate) over ``args``, within ``partition`` and in ``order`` ((expr, descending,
    nulls_first) triples). ``frame``: a ``planner.functions.window.Frame``, or None for
    PostgreSQL's default (section 4.2.8): with an ORDER BY, the partition's rows up to the
    current row and its peers; without, all."""

    func: str
    args: tuple
    partition: tuple
    order: tuple
    type: SqlType
    frame: object = None

    def map_exprs(self, f) -> "WindowCall":
        """This call with ``f`` applied to its arguments, partition and order expressions."""
        return replace(self, args=tuple(f(a) for a in self.args), partition=tuple(f(k) for k in self.partition),
                       order=tuple((f(e), d, n) for e, d, n in self.order))

    def as_aggregate(self) -> AggCall:
        """The aggregate an aggregate window function computes over its frame."""
        return AggCall(self.func, self.args[0] if self.args else None, False, self.type)


@dataclass(frozen=True)
class Window:
    """The input's rows with one more column per window function (PostgreSQL's WindowAgg)."""

    input: "Plan"
    calls: tuple[WindowCall, ...]

    @property
    def columns(self) -> Columns:
        return self.input.columns + tuple((c.func, c.type) for c in self.calls)


@dataclass(frozen=True)
class WorkTable:
    """Inside the recursive term of ``WITH RECURSIVE``: the rows the previous iteration
    produced (PostgreSQL's WorkTableScan). ``cte`` identifies the Recursive it belongs to."""

    cte: int
    columns: Columns


@dataclass(frozen=True)
class Recursive:
    """``WITH RECURSIVE``'s ``base UNION [ALL] step`` (PostgreSQL 7.8.2): rows of
    ``base``, then of ``step`` evaluated over the previous iteration's new rows until
    an iteration adds none; without ``all``, rows already produced are discarded."""

    cte: int
    base: "Plan"
    step: "Plan"
    all: bool

    @property
    def columns(self) -> Columns:
        return self.base.columns


Plan = Union[Get, Constant, Filter, Project, Reduce, Join, LateralJoin, OrderBy, Limit, Distinct, SetOp, Unnest, WorkTable,
             Recursive, Window, Series]


def inputs(p) -> tuple:
    if isinstance(p, (Join, SetOp, LateralJoin)):
        return (p.left, p.right)
    if isinstance(p, Recursive):
        return (p.base, p.step)
    if isinstance(p, (Get, Constant, WorkTable, Series)):
        return ()
    return (p.input,)


def with_inputs(p, new: tuple):
    """``p`` with its inputs (as ``inputs(p)`` lists them) replaced by ``new``."""
    if isinstance(p, (Join, SetOp, LateralJoin)):
        return replace(p, left=new[0], right=new[1])
    if isinstance(p, Recursive):
        return replace(p, base=new[0], step=new[1])
    if isinstance(p, (Get, Constant, WorkTable, Series)):
        return p
    return replace(p, input=new[0])


def map_inputs(p, f):
    """``p`` with ``f`` applied to each of its inputs."""
    ins = inputs(p)
    return with_inputs(p, tuple(f(i) for i in ins)) if ins else p


def relations_read(p) -> list:
    """Every catalog relation a plan reads, in plan order."""
    if isinstance(p, Get):
        return [p.relation]
    out = []
    for i in inputs(p):
        out.extend(relations_read(i))
    return out


def relations_read_deep(plan) -> list:
    """Every catalog relation ``plan`` reads, its subqueries' (in scalar expressions)
    included, each once (by id), in plan order."""
    from planner.scalar import Subquery

    found: dict[str, object] = {}

    def visit_plan(p):
        for r in relations_read(p):
            found.setdefault(r.id, r)
        map_plan_exprs(p, visit_expr)

    def visit_expr(e):
        if isinstance(e, Subquery):
            visit_plan(e.plan)
        return e

    visit_plan(plan)
    return list(found.values())


def could_run_expensive_function(p) -> bool:
    """Whether ``p`` may call a function with arguments, an aggregate, a window function
    or a table function (a Reduce, Window, Unnest or Series node), its subqueries
    included: Materialize's ``could_run_expensive_function`` (adapter, "catalog
    serving"), by which a query that reads no relation still needs the session's
    cluster. A call without arguments (``now()``, ``current_user``, ``version()``:
    Materialize's unmaterializable functions) is not one; neither is what the planner
    folded to a constant."""
    from planner.scalar import Call, Subquery, map_expr

    if isinstance(p, (Reduce, Window, Unnest, Series)):
        return True
    hit = False

    def visit(e):
        nonlocal hit
        hit = hit or isinstance(e, AggCall) or (isinstance(e, Call) and bool(e.args)) or (
            isinstance(e, Subquery) and could_run_expensive_function(e.plan))
        return e

    map_node_exprs(p, lambda e: map_expr(e, visit))
    return hit or any(could_run_expensive_function(i) for i in inputs(p))


def map_node_exprs(p, g):
    """``p`` with ``g`` applied to each of its own top-level scalar expressions (its
    inputs untouched): predicates, projections, keys, aggregate arguments, join
    conditions, window calls."""
    if isinstance(p, Filter):
        return Filter(p.input, g(p.predicate))
    if isinstance(p, Project):
        return Project(p.input, tuple(g(e) for e in p.exprs), p.names)
    if isinstance(p, Reduce):
        return Reduce(p.input, tuple(g(k) for k in p.keys), tuple(a.map_exprs(g) for a in p.aggregates))
    if isinstance(p, Join):
        return Join(p.left, p.right, p.kind, g(p.on) if p.on is not None else None)
    if isinstance(p, LateralJoin):
        return replace(p, on=g(p.on) if p.on is not None else None)
    if isinstance(p, Window):
        return Window(p.input, tuple(c.map_exprs(g) for c in p.calls))
    return p


def map_plan_exprs(p, f):
    """``p`` with ``f`` applied to every scalar expression of every node (bottom-up)."""
    from planner.scalar import map_expr

    return map_node_exprs(map_inputs(p, lambda i: map_plan_exprs(i, f)), lambda e: map_expr(e, f))


def filtered(p, conds: list):
    """``p`` filtered by the AND of ``conds``; ``p`` itself when nothing but TRUE is left
    (a Filter always has a predicate: ``WHERE true`` folds away)."""
    pred = conjoin(conds)
    return p if pred is None else Filter(p, pred)
