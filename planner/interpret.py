"""Evaluate a plan in Python, for plans that read no user table (Materialize's fast
path: constant queries and peeks on system tables need no Spark job).

Semantics match ``spark_exec.lower``: SQL three-valued logic, NULLs last ascending,
code-point string order, aggregates over empty input giving one row without GROUP BY.

Every evaluation runs under ``Limits`` (deadline, cancel flag, heap budget), checked every
``CHECK_EVERY`` rows of work in the loops that can grow (joins, series, unnest,
recursion, per-row expressions, window frames, sorts), so a constant query cannot outlive
its ``statement_timeout`` or a cancel, nor grow the server without bound. ``Outgrown``
(``planner.guard``) lets the caller move an evaluation that gets big, or needs work
whose time its inputs do not bound, elsewhere (``sqlfront.pyworker``).
"""

from __future__ import annotations

import heapq
import sys
import time
from typing import Callable, Iterable, Iterator

from catalog.snapshot import BuiltinTable, Table
from collections import Counter

from catalog.errors import SqlError, CARDINALITY_VIOLATION, STATEMENT_TOO_COMPLEX, query_canceled
from planner.consteval import any_all, evaluate
from planner.context import NO_STATEMENT, PlanContext
from planner.functions import FUNCTIONS, run_py
from planner.functions.json import jsonb_sort_key
from planner.guard import Outgrown, heap_exceeded
from planner.functions.logic import order_key

from planner.plan import (
    Constant, Distinct, Filter, Get, Join, Limit, OrderBy, Project, Recursive, Reduce, SetOp, Unnest, Window,
    Series, WindowCall, WorkTable, inputs, map_plan_exprs, relations_read, relations_read_deep,
)
from planner.scalar import AggCall, Call, ColRef, OuterRef, Subquery, walk

Rows = list[tuple]


#: recursion limit of WITH RECURSIVE here (PostgreSQL has none; a catalog query needs few)
MAX_RECURSION = 10_000


#: a generate_series longer than this runs on Spark
MAX_FAST_PATH_SERIES = 100_000


def is_fast_path(plan) -> bool:
    """True when ``plan`` reads no user table's shard and generates no long series."""
    return not any(isinstance(r, Table) for r in relations_read(plan)) and not _long_series(plan)


def builtins_read(plan) -> list[BuiltinTable]:
    """Every system table ``plan`` reads, its subqueries' included, each once."""
    return [r for r in relations_read_deep(plan) if isinstance(r, BuiltinTable)]


def _long_series(p) -> bool:
    if isinstance(p, Series):
        return (p.stop - p.start) // p.step >= MAX_FAST_PATH_SERIES
    return any(_long_series(i) for i in inputs(p))


#: rows of work between two checks of ``Limits``: about a millisecond of interpreting, so
#: a timeout or cancel lands within milliseconds while the checks cost well under 1 %
CHECK_EVERY = 1024

#: rows freed per step when a statement's intermediate rows are released: ~0.1 ms of
#: deallocation, so other threads get the GIL between steps (see ``Limits.release``)
RELEASE_SLICE = 4096

#: bytes of a list slot holding a row (a pointer), added to each row's own size
_SLOT_BYTES = 8


class Limits:
    """What stops one Python evaluation: a deadline, a cancel flag and a heap budget.

    Args:
        deadline: ``time.monotonic()`` value after which the evaluation stops, or None.
        cancelled: returns True once the statement is cancelled (a CancelRequest), or None.
        max_heap_bytes: budget, in bytes, for the rows the evaluation builds, or None.
        outgrow_bytes: past this many bytes (within the budget), raise ``guard.Outgrown``;
            None: never.

    ``held`` is an upper estimate, in bytes, of every row the evaluation has built: each
    operator's output, charged while it is built and kept (``keep``) until the statement
    ends, when ``release`` frees it in slices. A row costs its tuple plus every value in
    it (``sys.getsizeof`` of a sample row every ``CHECK_EVERY`` rows); values shared
    between rows (a join's) count once per row, so the estimate errs high. Checks are
    amortized: loops call ``tick`` with the rows of work they did, or ``grow`` with the
    list they build, and every ``CHECK_EVERY`` rows of work ``check`` runs.

    Raises (from ``tick``, ``check``, ``grow``, ``keep``; also ``Outgrown``):
        SqlError 57014 "canceling statement due to statement timeout" / "... due to user
        request" (PostgreSQL's); 53200 out_of_memory once ``held`` exceeds
        ``max_heap_bytes`` (the code Materialize gives a query result over
        ``max_query_result_size``, and PostgreSQL a failed allocation).
    """

    __slots__ = ("deadline", "cancelled", "max_heap_bytes", "outgrow_bytes", "held", "_countdown", "_kept")

    def __init__(self, deadline: float | None = None, cancelled: Callable[[], bool] | None = None,
                 max_heap_bytes: int | None = None, outgrow_bytes: int | None = None):
        self.deadline = deadline
        self.cancelled = cancelled
        self.max_heap_bytes = max_heap_bytes
        self.outgrow_bytes = outgrow_bytes
        self.held = 0
        self._countdown = CHECK_EVERY
        #: every list of rows built so far, freed by ``release``
        self._kept: list[list] = []

    def tick(self, work: int = 1) -> None:
        """Count ``work`` rows of work; check once every ``CHECK_EVERY`` of them."""
        self._countdown -= work
        if self._countdown <= 0:
            self._countdown = CHECK_EVERY
            self.check()

    def check(self) -> None:
        """Raise 57014 if the statement was cancelled or its deadline has passed."""
        if self.cancelled is not None and self.cancelled():
            raise query_canceled(timeout=False)
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise query_canceled(timeout=True)

    def grow(self, out: list) -> None:
        """A loop building ``out`` did about ``CHECK_EVERY`` rows of work: check, and
        check the budget with ``out`` as it is now."""
        self.check()
        if not self._kept or self._kept[-1] is not out:
            self._kept.append(out)  # so that an error part-way still releases it in slices
        self._over(self.held + _rows_bytes(out))

    def keep(self, rows: list) -> None:
        """Charge an operator's finished output ``rows`` and keep it until ``release``."""
        self.held += _rows_bytes(rows)
        if not self._kept or self._kept[-1] is not rows:
            self._kept.append(rows)
        self._over(self.held)
        self.tick(1 + len(rows))

    def _over(self, total: int) -> None:
        if self.max_heap_bytes is not None and total > self.max_heap_bytes:
            raise heap_exceeded(self.max_heap_bytes)
        if self.outgrow_bytes is not None and total > self.outgrow_bytes:
            raise Outgrown()

    def release(self, result: list | None = None) -> None:
        """Free every kept list but ``result``, ``RELEASE_SLICE`` rows at a time.

        Freeing a list of millions of rows is one C call that holds the GIL for tens of
        milliseconds, stalling every other session; in slices, the interpreter can hand the
        GIL over between them (``sys.setswitchinterval``)."""
        kept, self._kept = self._kept, []
        for rows in kept:
            if rows is not result:
                while rows:
                    del rows[-RELEASE_SLICE:]


def _rows_bytes(rows: list) -> int:
    return len(rows) * _row_bytes(rows[-1]) if rows else 0


def _row_bytes(row: tuple) -> int:
    return sys.getsizeof(row) + _SLOT_BYTES + sum(map(sys.getsizeof, row))


def _checked(rows: Iterable, limits: Limits) -> Iterator:
    """``rows``, with ``limits.check()`` every ``CHECK_EVERY`` rows (for per-row loops
    whose output is no bigger than their input: Filter, Project, Reduce, ...)."""
    rows = rows if isinstance(rows, list) else list(rows)
    for i in range(0, len(rows), CHECK_EVERY):
        if i:
            limits.check()
        yield from rows[i : i + CHECK_EVERY]


def run(plan, builtin_rows: Callable[[BuiltinTable], Rows], limits: Limits | None = None,
        ctx: PlanContext = NO_STATEMENT) -> Rows:
    """The rows of ``plan``; ``builtin_rows`` supplies system tables. Subqueries the
    optimizer kept (``planner.optimize.decorrelate``) are evaluated per row, correlated ones with
    the enclosing rows bound to their OuterRefs. ``ctx``: the statement's context, whose
    guard the expressions are evaluated under and which the functions that take it are
    given (``planner.consteval.evaluate``); ``NO_STATEMENT`` outside a statement.

    Raises:
        SqlError 57014 / 53200 from ``limits`` (see ``Limits``), and the query's own errors.
    """
    cache: dict[str, Rows] = {}

    def cached_rows(table: BuiltinTable) -> Rows:
        # One snapshot of each system table per statement: subqueries re-read them per row.
        if table.id not in cache:
            cache[table.id] = list(builtin_rows(table))
        return cache[table.id]

    limits = limits or Limits()
    nested = _Nested(cached_rows, limits, ctx)
    rows = None
    try:
        rows = _run(plan, cached_rows, nested)
        return rows
    finally:
        limits.release(rows)


class _Nested:
    def __init__(self, builtin_rows, limits: Limits, stmt: PlanContext):
        self.builtin_rows = builtin_rows
        self.limits = limits
        #: the statement's context (``run``'s ``ctx``)
        self.stmt = stmt
        #: rows of the enclosing queries, innermost first (OuterRef depth 1 = [0])
        self.outer: list[tuple] = []
        #: Recursive id -> the previous iteration's rows
        self.work: dict[int, Rows] = {}
        #: rows of uncorrelated subqueries, by plan identity
        self.memo: dict[int, Rows] = {}
        #: (plan identity, column) -> {value: rows}, for Filters on col = outer value
        self.indexes: dict[tuple, dict] = {}
        #: plan identity -> whether its rows change from one evaluation to the next
        self._varies: dict[int, bool] = {}

    def varies(self, plan) -> bool:
        """True if ``plan``'s rows can differ between evaluations in one statement: it
        reads an enclosing query's row or a WITH RECURSIVE work table. Only plans that
        do not vary may be indexed once per statement."""
        key = id(plan)
        if key not in self._varies:
            self._varies[key] = _correlated(plan)
        return self._varies[key]

    def value(self, e, row: tuple):
        """``e``'s value over ``row``, its subqueries and outer references evaluated here."""
        return evaluate(e, row, self.nested, self.stmt)

    def nested(self, e, row: tuple):
        if isinstance(e, OuterRef):
            return self.outer[e.depth - 1][e.index]
        key = id(e.plan)
        if key in self.memo:
            rows = self.memo[key]
        else:
            self.outer.insert(0, row)
            try:
                rows = _run(e.plan, self.builtin_rows, self)
            finally:
                self.outer.pop(0)
            if not _correlated(e.plan):
                self.memo[key] = rows  # an uncorrelated subquery runs once per statement
        if e.kind == "scalar":
            if len(rows) > 1:
                raise SqlError(CARDINALITY_VIOLATION, "more than one row returned by a subquery used as an expression")
            return rows[0][0] if rows else None
        if e.kind == "exists":
            return bool(rows)
        if e.kind == "array":
            return [r[0] for r in rows]
        return any_all(e.kind, e.func, self.value(e.test, row), [r[0] for r in rows])


def _correlated(plan, level: int = 0) -> bool:
    """True if ``plan`` (a subquery ``level`` subqueries deep) refers to a row outside it."""
    found = []

    def visit(n):
        if isinstance(n, OuterRef) and n.depth > level:
            found.append(n)
        elif isinstance(n, Subquery) and _correlated(n.plan, level + 1):
            found.append(n)
        return n

    map_plan_exprs(plan, visit)
    return bool(found) or _reads_work_table(plan)


def _reads_work_table(p) -> bool:
    # A subquery over a WITH RECURSIVE work table changes from one iteration to the next.
    return isinstance(p, WorkTable) or any(_reads_work_table(i) for i in inputs(p))


def _run(plan, builtin_rows, ctx: "_Nested") -> Rows:
    rows = _run_node(plan, builtin_rows, ctx)
    ctx.limits.keep(rows)
    return rows


def _run_node(plan, builtin_rows, ctx: "_Nested") -> Rows:
    run = lambda p, b: _run(p, b, ctx)  # noqa: E731
    limits = ctx.limits
    if isinstance(plan, WorkTable):
        return list(ctx.work[plan.cte])
    if isinstance(plan, Recursive):
        result = run(plan.base, builtin_rows)
        if not plan.all:
            result = _distinct(result)
        seen = {hashable_row(r) for r in result}
        work = result
        for _ in range(MAX_RECURSION):
            if not work:
                return result
            ctx.work[plan.cte] = work
            new = run(plan.step, builtin_rows)
            if not plan.all:
                new = [r for r in _distinct(new) if hashable_row(r) not in seen]
                seen.update(hashable_row(r) for r in new)
            result = result + new
            work = new
            limits.check()  # each iteration's rows were kept as the step returned them
        raise SqlError(STATEMENT_TOO_COMPLEX, f"WITH RECURSIVE did not finish within {MAX_RECURSION} iterations")
    if isinstance(plan, Get):
        return list(builtin_rows(plan.relation))
    if isinstance(plan, Series):
        stop = plan.stop + (1 if plan.step > 0 else -1)
        values = range(plan.start, stop, plan.step)
        out = []
        for i in range(0, len(values), CHECK_EVERY):
            out.extend([(v,) for v in values[i : i + CHECK_EVERY]])
            limits.grow(out)
        return out
    if isinstance(plan, Constant):
        return list(plan.rows)
    if isinstance(plan, Filter):
        probe = _index_probe(plan)
        if probe is not None and not ctx.varies(plan.input):
            # col = (value fixed for this evaluation): look the rows up in a hash index
            # kept for the statement, instead of scanning (subqueries run once per row).
            col, value_expr = probe
            key = (id(plan.input), col)
            if key not in ctx.indexes:
                index: dict = {}
                for r in run(plan.input, builtin_rows):
                    index.setdefault(r[col], []).append(r)
                ctx.indexes[key] = index
            value = ctx.value(value_expr, ())
            candidates = ctx.indexes[key].get(value, []) if value is not None else []
            return [r for r in _checked(candidates, limits) if ctx.value(plan.predicate, r) is True]
        return [r for r in _checked(run(plan.input, builtin_rows), limits) if ctx.value(plan.predicate, r) is True]
    if isinstance(plan, Project):
        return [tuple(ctx.value(e, r) for e in plan.exprs) for r in _checked(run(plan.input, builtin_rows), limits)]
    if isinstance(plan, Join):
        left, right = run(plan.left, builtin_rows), run(plan.right, builtin_rows)
        return _join(plan, left, right, limits, ctx.value)
    if isinstance(plan, Reduce):
        return _reduce(plan, run(plan.input, builtin_rows), limits, ctx.value, ctx.stmt)
    if isinstance(plan, OrderBy):
        keys = []
        for k in plan.keys:
            bpchar = plan.input.columns[k.index][1].name == "bpchar"
            jsonb = plan.input.columns[k.index][1].name == "jsonb"
            nan = _keyed(plan.input.columns[k.index][1])
            key = (lambda r, i=k.index: r[i] if r[i] is None else r[i].rstrip(" ")) if bpchar else \
                (lambda r, i=k.index: r[i] if r[i] is None else jsonb_sort_key(r[i])) if jsonb else \
                (lambda r, i=k.index: r[i] if r[i] is None else order_key(r[i])) if nan else \
                (lambda r, i=k.index: r[i])
            keys.append((key, k.descending, k.nulls_first))
        return _sort_by(run(plan.input, builtin_rows), keys, limits)
    if isinstance(plan, Limit):
        rows = run(plan.input, builtin_rows)[plan.offset :]
        return rows if plan.limit is None else rows[: plan.limit]
    if isinstance(plan, SetOp):
        return _setop(plan, run(plan.left, builtin_rows), run(plan.right, builtin_rows))
    if isinstance(plan, Window):
        rows = run(plan.input, builtin_rows)
        columns = [_window(c, rows, limits, ctx.value, ctx.stmt) for c in plan.calls]
        return [r + tuple(col[i] for col in columns) for i, r in enumerate(rows)]
    if isinstance(plan, Unnest):
        out, work = [], 0
        for r in run(plan.input, builtin_rows):
            arrays = [r[i] or [] for i in plan.arrays]
            n = max((len(a) for a in arrays), default=0)
            for k in range(n):
                out.append(r + tuple(k + 1 if kind == "ordinality" else (a[k] if kind == "unnest" else k + 1)
                                     if k < len(a) else None for a, kind in zip(arrays, plan.kinds)))
            work += 1 + n
            if work >= CHECK_EVERY:
                work = 0
                limits.grow(out)
        return out
    if isinstance(plan, Distinct):
        seen, out = set(), []
        for r in _checked(run(plan.input, builtin_rows), limits):
            key = hashable_row(r)
            if key not in seen:
                seen.add(key)
                out.append(r)
        return out
    raise TypeError(plan)


def _sort_by(items: list, keys, limits: Limits | None = None) -> list:
    """``items`` sorted by ``keys``, each (key function, descending, nulls_first), first
    key most significant; stable, with PostgreSQL's NULL placement. With ``limits``, the
    passes over ``items`` check them (the sort itself is one C call, n log n)."""
    for key, desc, nulls_first in reversed(keys):
        scan = items if limits is None else _checked(items, limits)
        vals, nulls = [], []
        for x in scan:
            (vals if key(x) is not None else nulls).append(x)
        if limits is None or len(vals) <= SORT_RUN:
            vals.sort(key=key, reverse=desc)
        else:
            vals = _merge_sort(vals, key, desc, limits)
        items = nulls + vals if nulls_first else vals + nulls
    return items


#: rows list.sort sorts in one go, holding the GIL (~5 ms); longer inputs are sorted in
#: runs of this length and merged in Python, where other threads get their turn
SORT_RUN = 16384


def _merge_sort(vals: list, key, desc: bool, limits: Limits) -> list:
    """``vals`` sorted by ``key`` (stable, descending if ``desc``), in runs of ``SORT_RUN``
    merged by ``heapq.merge`` (which keeps stability: ties come from the earlier run)."""
    runs = []
    for lo in range(0, len(vals), SORT_RUN):
        limits.check()
        runs.append(sorted(vals[lo : lo + SORT_RUN], key=key, reverse=desc))
    out = []
    for i, x in enumerate(heapq.merge(*runs, key=key, reverse=desc)):
        if i % CHECK_EVERY == 0:
            limits.check()
        out.append(x)
    return out


def _order_keys(order, rows: Rows, value) -> list:
    """Sort keys over row positions for an ORDER BY of (expr, descending, nulls_first)."""
    out = []
    for e, desc, nulls_first in order:
        values = [value(e, r) for r in rows]
        if e.type.name == "jsonb":  # jsonb's btree order, not its text's
            values = [v if v is None else jsonb_sort_key(v) for v in values]
        elif _keyed(e.type):
            values = [v if v is None else order_key(v) for v in values]
        out.append((values.__getitem__, desc, nulls_first))
    return out


def _window(c: WindowCall, rows: Rows, limits: Limits, value, stmt: PlanContext) -> list:
    """The value of window function ``c`` for each of ``rows`` (in their order): rows are
    partitioned and ordered here; a window entry's ``py`` computes its values over each
    partition (``planner.functions.window.Partition``), an aggregate is computed over each
    row's frame."""
    from planner.functions.window import Partition, frame_rows

    out = [None] * len(rows)
    parts: dict[tuple, list[int]] = {}
    for i, r in enumerate(_checked(rows, limits)):
        parts.setdefault(tuple(value(k, r) for k in c.partition), []).append(i)
    keys = _order_keys(c.order, rows, value)
    entry = FUNCTIONS[c.func]
    for members in parts.values():
        ordered = _sort_by(members, keys, limits)
        n = len(ordered)
        peer = [tuple(key(p) for key, _, _ in keys) for p in ordered]
        peers, j = [], 0
        while j < n:
            end = j + 1
            while end < n and peer[end] == peer[j]:
                end += 1
            peers += [(j, end)] * (end - j)
            j = end
        range_keys = [k[0] for k in peer] if len(keys) == 1 else None
        desc = bool(c.order) and c.order[0][1]

        def frame(j, ordered=ordered, peers=peers, range_keys=range_keys, n=n):
            return frame_rows(c.frame, j, peers, range_keys, desc, n)

        if entry.kind == "window":
            cache: dict[tuple, object] = {}

            def arg(i, j, ordered=ordered, cache=cache):
                if (i, j) not in cache:
                    cache[(i, j)] = value(c.args[i], rows[ordered[j]])
                return cache[(i, j)]

            limits.tick(n)
            values = entry.py(Partition(n, len(c.args), arg, peers, frame))
        else:
            agg = c.as_aggregate()
            values, memo = [], {}
            for j in range(n):
                f = frame(j)
                if (f.start, f.stop) not in memo:
                    limits.tick(len(f))  # each frame is re-read: quadratic work at worst
                    memo[(f.start, f.stop)] = _aggregate(agg, [rows[ordered[p]] for p in f], value, stmt)
                values.append(memo[(f.start, f.stop)])
        for p, v in zip(ordered, values):
            out[p] = v
    return out


def _conjuncts(e) -> list:
    if isinstance(e, Call) and e.func == "and":
        return [c for a in e.args for c in _conjuncts(a)]
    return [e]


def _hashable_col(e) -> bool:
    # bpchar compares without trailing spaces, so its raw values cannot be hashed as keys;
    # arrays, lists and maps (Python lists and dicts) are not hashable
    return isinstance(e, ColRef) and e.type.name != "bpchar" and not (e.type.is_array or e.type.is_list or e.type.is_map)


def _index_probe(plan: Filter):
    """(column, expression) for a conjunct ``col = expr`` where ``expr`` reads no column
    of this row (a literal or an enclosing query's value), else None."""
    for c in _conjuncts(plan.predicate):
        if isinstance(c, Call) and c.func == "eq":
            for a, b in (c.args, reversed(c.args)):
                if _hashable_col(a) and not any(isinstance(n, (ColRef, Subquery)) for n in walk(b)):
                    return a.index, b
    return None


def _equi_keys(on, nl: int):
    """Left and right column positions of ``l.x = r.y`` conjuncts of a join condition
    (and of ``l.x IS NOT DISTINCT FROM r.y``, which decorrelation joins on: NULL keys
    then match, as the condition is still checked on every candidate)."""
    lk, rk = [], []
    for c in _conjuncts(on) if on is not None else ():
        if isinstance(c, Call) and c.func in ("eq", "is_not_distinct") and all(_hashable_col(a) for a in c.args):
            a, b = c.args
            if a.index < nl <= b.index:
                lk.append(a.index)
                rk.append(b.index - nl)
            elif b.index < nl <= a.index:
                lk.append(b.index)
                rk.append(a.index - nl)
    return lk, rk


def _join(plan: Join, left: Rows, right: Rows, limits: Limits, value) -> Rows:
    nl, nr = len(plan.left.columns), len(plan.right.columns)
    out = []
    matched_right = set()
    lk, rk = _equi_keys(plan.on, nl)
    work = 0  # candidate pairs looked at since the last check
    buckets = None
    if lk:  # hash join on the equality conjuncts; the whole condition is still checked
        buckets = {}
        for j, rr in enumerate(right):
            buckets.setdefault(tuple(rr[i] for i in rk), []).append(j)
    for lr in left:
        hit = False
        if buckets is not None:
            candidates = buckets.get(tuple(lr[i] for i in lk), ())
        else:
            candidates = range(len(right))
        # In slices of CHECK_EVERY candidates: one left row may meet millions of right rows.
        for lo in range(0, len(candidates), CHECK_EVERY):
            chunk = candidates[lo : lo + CHECK_EVERY]
            for j in chunk:
                rr = right[j]
                row = lr + rr
                if plan.on is None or value(plan.on, row) is True:
                    hit = True
                    if plan.kind in ("semi", "anti"):
                        break
                    out.append(row)
                    matched_right.add(j)
            work += len(chunk)
            if work >= CHECK_EVERY:
                work = 0
                limits.grow(out)
            if hit and plan.kind in ("semi", "anti"):
                break
        if plan.kind == "semi" and hit or plan.kind == "anti" and not hit:
            out.append(lr)
        if not hit and plan.kind in ("left", "full"):
            out.append(lr + (None,) * nr)
        limits.tick()
    if plan.kind in ("right", "full"):
        out += [(None,) * nl + rr for j, rr in enumerate(right) if j not in matched_right]
    return out


def _reduce(plan: Reduce, rows: Rows, limits: Limits, value, stmt: PlanContext) -> Rows:
    groups: dict[tuple, list[tuple]] = {}
    first: dict[tuple, tuple] = {}
    for r in _checked(rows, limits):
        key = tuple(value(k, r) for k in plan.keys)
        h = hashable_row(key)
        first.setdefault(h, key)
        groups.setdefault(h, []).append(r)
    if not plan.keys and not groups:
        groups[()] = []
        first[()] = ()
    return [first[h] + tuple(_aggregate(a, members, value, stmt) for a in plan.aggregates) for h, members in groups.items()]


#: types whose NaN sorts above every other value (``order_key``)
_NAN_TYPES = ("float4", "float8", "numeric")


def _keyed(t) -> bool:
    """Whether values of type ``t`` sort by ``order_key`` (NaNs; arrays, lists and maps,
    whose NULL elements sort last)."""
    return t.name in _NAN_TYPES or t.is_array or t.is_list or t.is_map


def hashable_row(row: tuple | list) -> tuple:
    """``row`` with its arrays (lists, nested for several dimensions) as tuples and its maps
    (dicts) as tuples of (key, value) pairs in key order, to serve as a dict key; a NaN as
    ``order_key``'s (NaNs are equal in PostgreSQL, not in Python)."""
    return tuple(hashable_row(v) if isinstance(v, list) else ("map", hashable_row(sorted(v.items())))
                 if isinstance(v, dict) else hashable_row(v) if isinstance(v, tuple)
                 else order_key(v) if v != v else v for v in row)


def _distinct(rows: Rows) -> Rows:
    """The first of each set of equal rows, in order (rows may hold arrays: lists)."""
    first: dict = {}
    for r in rows:
        first.setdefault(hashable_row(r), r)
    return list(first.values())


def _aggregate(a: AggCall, rows: Rows, value, stmt: PlanContext):
    """Aggregate ``a`` over ``rows``: FILTER, then its ORDER BY, then NULLs dropped for a
    strict aggregate, then DISTINCT; the registry entry computes the value (given the
    statement's context ``stmt`` if it takes it: ``run_py``)."""
    entry = FUNCTIONS[a.func]
    if a.filter is not None:
        rows = [r for r in rows if value(a.filter, r) is True]
    params = [value(p, rows[0] if rows else ()) for p in a.params]
    if a.func == "count_star":
        return len(rows)
    if a.order:
        rows = [rows[p] for p in _sort_by(list(range(len(rows))), _order_keys(a.order, rows, value))]
    vals = [value(a.arg, r) for r in rows]
    if entry.strict:
        vals = [v for v in vals if v is not None]
    if a.distinct:
        vals = [r[0] for r in _distinct([(v,) for v in vals])]
        if not a.order and a.arg.type.name not in ("jsonb", "record"):
            # PostgreSQL sorts a DISTINCT aggregate's input (nodeAgg.c); jsonb's order is its own
            vals = sorted(vals, key=lambda v: (v is None, order_key(v) if v is not None else 0))
    return run_py(entry, stmt, vals, a, params)


def _setop(p: SetOp, left: Rows, right: Rows) -> Rows:
    if p.op == "union":
        rows = left + right
        return rows if p.all else _distinct(rows)
    rc = Counter(hashable_row(r) for r in right)
    if p.op == "intersect":
        if not p.all:
            return [r for r in _distinct(left) if hashable_row(r) in rc]
        out = []
        for r in left:
            if rc[hashable_row(r)] > 0:
                rc[hashable_row(r)] -= 1
                out.append(r)
        return out
    if not p.all:
        return [r for r in _distinct(left) if hashable_row(r) not in rc]
    out = []
    for r in left:
        if rc[hashable_row(r)] > 0:
            rc[hashable_row(r)] -= 1
        else:
            out.append(r)
    return out
