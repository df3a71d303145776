"""Evaluate a plan in Python, for plans that read no user table (Materialize's fast
path: constant queries and peeks on system tables need no Spark job).

Semantics match ``spark_exec.lower``: SQL three-valued logic, NULLs last ascending,
code-point string order, aggregates over empty input giving one row without GROUP BY.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Callable

from catalog.snapshot import BuiltinTable, Table
from collections import Counter

from catalog.errors import SqlError
from planner.consteval import NESTED_EVALUATOR, any_all, evaluate

from planner.plan import (
    Constant, Distinct, Filter, Get, Join, Limit, OrderBy, Project, Recursive, Reduce, SetOp, Unnest, Window,
    Series, WindowCall, WorkTable, inputs, map_plan_exprs, relations_read,
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


def _long_series(p) -> bool:
    if isinstance(p, Series):
        return (p.stop - p.start) // p.step >= MAX_FAST_PATH_SERIES
    return any(_long_series(i) for i in inputs(p))


def run(plan, builtin_rows: Callable[[BuiltinTable], Rows]) -> Rows:
    """The rows of ``plan``; ``builtin_rows`` supplies system tables. Subqueries the
    optimizer kept (``planner.optimize.decorrelate``) are evaluated per row, correlated ones with
    the enclosing rows bound to their OuterRefs."""
    cache: dict[str, Rows] = {}

    def cached_rows(table: BuiltinTable) -> Rows:
        # One snapshot of each system table per statement: subqueries re-read them per row.
        if table.id not in cache:
            cache[table.id] = list(builtin_rows(table))
        return cache[table.id]

    ctx = _Nested(cached_rows)
    token = NESTED_EVALUATOR.set(ctx.evaluate)
    try:
        return _run(plan, cached_rows, ctx)
    finally:
        NESTED_EVALUATOR.reset(token)


class _Nested:
    def __init__(self, builtin_rows):
        self.builtin_rows = builtin_rows
        #: rows of the enclosing queries, innermost first (OuterRef depth 1 = [0])
        self.outer: list[tuple] = []
        #: Recursive id -> the previous iteration's rows
        self.work: dict[int, Rows] = {}
        #: rows of uncorrelated subqueries, by plan identity
        self.memo: dict[int, Rows] = {}
        #: (plan identity, column) -> {value: rows}, for Filters on col = outer value
        self.indexes: dict[tuple, dict] = {}

    def evaluate(self, e, row: tuple):
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
                raise SqlError("21000", "more than one row returned by a subquery used as an expression")
            return rows[0][0] if rows else None
        if e.kind == "exists":
            return bool(rows)
        if e.kind == "array":
            return [r[0] for r in rows]
        return any_all(e.kind, e.func, evaluate(e.test, row), [r[0] for r in rows])


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
    run = lambda p, b: _run(p, b, ctx)  # noqa: E731
    if isinstance(plan, WorkTable):
        return list(ctx.work[plan.cte])
    if isinstance(plan, Recursive):
        result = run(plan.base, builtin_rows)
        if not plan.all:
            result = list(dict.fromkeys(result))
        seen = set(result)
        work = result
        for _ in range(MAX_RECURSION):
            if not work:
                return result
            ctx.work[plan.cte] = work
            new = run(plan.step, builtin_rows)
            if not plan.all:
                new = [r for r in dict.fromkeys(new) if r not in seen]
                seen.update(new)
            result = result + new
            work = new
        raise SqlError("54001", f"WITH RECURSIVE did not finish within {MAX_RECURSION} iterations")
    if isinstance(plan, Get):
        return list(builtin_rows(plan.relation))
    if isinstance(plan, Series):
        stop = plan.stop + (1 if plan.step > 0 else -1)
        return [(v,) for v in range(plan.start, stop, plan.step)]
    if isinstance(plan, Constant):
        return list(plan.rows)
    if isinstance(plan, Filter):
        probe = _index_probe(plan)
        if probe is not None and not _reads_work_table(plan.input):
            # col = (value fixed for this evaluation): look the rows up in a hash index
            # kept for the statement, instead of scanning (subqueries run once per row).
            col, value_expr = probe
            key = (id(plan.input), col)
            if key not in ctx.indexes:
                index: dict = {}
                for r in run(plan.input, builtin_rows):
                    index.setdefault(r[col], []).append(r)
                ctx.indexes[key] = index
            value = evaluate(value_expr, ())
            candidates = ctx.indexes[key].get(value, []) if value is not None else []
            return [r for r in candidates if evaluate(plan.predicate, r) is True]
        return [r for r in run(plan.input, builtin_rows) if evaluate(plan.predicate, r) is True]
    if isinstance(plan, Project):
        return [tuple(evaluate(e, r) for e in plan.exprs) for r in run(plan.input, builtin_rows)]
    if isinstance(plan, Join):
        left, right = run(plan.left, builtin_rows), run(plan.right, builtin_rows)
        return _join(plan, left, right)
    if isinstance(plan, Reduce):
        return _reduce(plan, run(plan.input, builtin_rows))
    if isinstance(plan, OrderBy):
        keys = []
        for k in plan.keys:
            bpchar = plan.input.columns[k.index][1].name == "bpchar"
            key = (lambda r, i=k.index: r[i] if r[i] is None else r[i].rstrip(" ")) if bpchar else \
                (lambda r, i=k.index: r[i])
            keys.append((key, k.descending, k.nulls_first))
        return _sort_by(run(plan.input, builtin_rows), keys)
    if isinstance(plan, Limit):
        rows = run(plan.input, builtin_rows)[plan.offset :]
        return rows if plan.limit is None else rows[: plan.limit]
    if isinstance(plan, SetOp):
        return _setop(plan, run(plan.left, builtin_rows), run(plan.right, builtin_rows))
    if isinstance(plan, Window):
        rows = run(plan.input, builtin_rows)
        columns = [_window(c, rows) for c in plan.calls]
        return [r + tuple(col[i] for col in columns) for i, r in enumerate(rows)]
    if isinstance(plan, Unnest):
        out = []
        for r in run(plan.input, builtin_rows):
            arrays = [r[i] or [] for i in plan.arrays]
            for k in range(max((len(a) for a in arrays), default=0)):
                out.append(r + tuple((a[k] if kind == "unnest" else k + 1) if k < len(a) else None
                                     for a, kind in zip(arrays, plan.kinds)))
        return out
    if isinstance(plan, Distinct):
        seen, out = set(), []
        for r in run(plan.input, builtin_rows):
            if r not in seen:
                seen.add(r)
                out.append(r)
        return out
    raise TypeError(plan)


def _sort_by(items: list, keys) -> list:
    """``items`` sorted by ``keys``, each (key function, descending, nulls_first), first
    key most significant; stable, with PostgreSQL's NULL placement."""
    for key, desc, nulls_first in reversed(keys):
        vals = [x for x in items if key(x) is not None]
        nulls = [x for x in items if key(x) is None]
        vals.sort(key=key, reverse=desc)
        items = nulls + vals if nulls_first else vals + nulls
    return items


def _order_keys(order, rows: Rows) -> list:
    """Sort keys over row positions for an ORDER BY of (expr, descending, nulls_first)."""
    out = []
    for e, desc, nulls_first in order:
        values = [evaluate(e, r) for r in rows]
        out.append((values.__getitem__, desc, nulls_first))
    return out


def _window(c: WindowCall, rows: Rows) -> list:
    """The value of window function ``c`` for each of ``rows`` (in their order)."""
    out = [None] * len(rows)
    parts: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows):
        parts.setdefault(tuple(evaluate(k, r) for k in c.partition), []).append(i)
    keys = _order_keys(c.order, rows)
    for members in parts.values():
        ordered = _sort_by(members, keys)
        peer = [tuple(key(p) for key, _, _ in keys) for p in ordered]
        if c.func in ("lag", "lead"):
            vals = [evaluate(c.args[0], rows[p]) for p in ordered]
            for j, p in enumerate(ordered):
                off = evaluate(c.args[1], rows[p])
                t = j - off if c.func == "lag" else j + off
                default = evaluate(c.args[2], rows[p]) if len(c.args) > 2 else None
                out[p] = vals[t] if off is not None and 0 <= t < len(vals) else (None if off is None else default)
            continue
        rank = dense = 0
        for j, p in enumerate(ordered):
            new_peer = j == 0 or peer[j] != peer[j - 1]
            if new_peer:
                rank, dense = j + 1, dense + 1
            if c.func == "row_number":
                out[p] = j + 1
            elif c.func == "rank":
                out[p] = rank
            elif c.func == "dense_rank":
                out[p] = dense
        if c.func in ("row_number", "rank", "dense_rank"):
            continue
        # Aggregates over the default frame: all rows up to the current row's last peer
        # (the whole partition without ORDER BY).
        agg = c.as_aggregate()
        j = 0
        while j < len(ordered):
            end = j + 1
            while c.order and end < len(ordered) and peer[end] == peer[j]:
                end += 1
            if not c.order:
                end = len(ordered)
            value = _aggregate(agg, [rows[p] for p in ordered[:end]])
            for p in ordered[j:end]:
                out[p] = value
            j = end
    return out


def _conjuncts(e) -> list:
    if isinstance(e, Call) and e.func == "and":
        return [c for a in e.args for c in _conjuncts(a)]
    return [e]


def _hashable_col(e) -> bool:
    # bpchar compares without trailing spaces, so its raw values cannot be hashed as keys
    return isinstance(e, ColRef) and e.type.name != "bpchar" and not e.type.is_array


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


def _join(plan: Join, left: Rows, right: Rows) -> Rows:
    nl, nr = len(plan.left.columns), len(plan.right.columns)
    out = []
    matched_right = set()
    lk, rk = _equi_keys(plan.on, nl)
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
        for j in candidates:
            rr = right[j]
            row = lr + rr
            if plan.on is None or evaluate(plan.on, row) is True:
                hit = True
                if plan.kind in ("semi", "anti"):
                    break
                out.append(row)
                matched_right.add(j)
        if plan.kind == "semi" and hit or plan.kind == "anti" and not hit:
            out.append(lr)
        if not hit and plan.kind in ("left", "full"):
            out.append(lr + (None,) * nr)
    if plan.kind in ("right", "full"):
        out += [(None,) * nl + rr for j, rr in enumerate(right) if j not in matched_right]
    return out


def _reduce(plan: Reduce, rows: Rows) -> Rows:
    groups: dict[tuple, list[tuple]] = {}
    for r in rows:
        groups.setdefault(tuple(evaluate(k, r) for k in plan.keys), []).append(r)
    if not plan.keys and not groups:
        groups[()] = []
    return [key + tuple(_aggregate(a, members) for a in plan.aggregates) for key, members in groups.items()]


def _aggregate(a: AggCall, rows: Rows):
    if a.func == "count_star":
        return len(rows)
    if a.func == "array_agg":  # keeps NULLs and input order (or its ORDER BY); NULL for no rows
        if a.order:
            rows = [rows[p] for p in _sort_by(list(range(len(rows))), _order_keys(a.order, rows))]
        vals = [evaluate(a.arg, r) for r in rows]
        return (list(dict.fromkeys(vals)) if a.distinct else vals) or None
    vals = [v for r in rows if (v := evaluate(a.arg, r)) is not None]
    if a.distinct:
        vals = list(dict.fromkeys(vals))
    if a.func == "count":
        return len(vals)
    if not vals:
        return None
    if a.func == "sum":
        s = sum(vals)
        return Decimal(s) if a.type.name == "numeric" else s
    if a.func == "avg":
        if a.type.name == "float8":
            return float(sum(vals)) / len(vals)
        return Decimal(sum(vals)) / len(vals)
    if a.func == "min":
        return min(vals)
    if a.func == "max":
        return max(vals)
    if a.func == "bool_and":
        return all(vals)
    if a.func == "bool_or":
        return any(vals)
    raise ValueError(a.func)


def _setop(p: SetOp, left: Rows, right: Rows) -> Rows:
    if p.op == "union":
        rows = left + right
        return rows if p.all else list(dict.fromkeys(rows))
    rc = Counter(right)
    if p.op == "intersect":
        if not p.all:
            return [r for r in dict.fromkeys(left) if r in rc]
        out = []
        for r in left:
            if rc[r] > 0:
                rc[r] -= 1
                out.append(r)
        return out
    if not p.all:
        return [r for r in dict.fromkeys(left) if r not in rc]
    out = []
    for r in left:
        if rc[r] > 0:
            rc[r] -= 1
        else:
            out.append(r)
    return out
