"""EXPLAIN: a logical plan (raw, decorrelated or optimized), one operator per line,
indented.

Columns print as ``#i`` (position in the operator's input), as Materialize's EXPLAIN
does for MIR plans. A subquery still in an expression (raw plans) prints as ``$n`` (with
``exists``, ``array``, ``ANY`` or ``ALL`` around it), and its plan follows the operator
that uses it under ``$n:``, its outer references as ``outer(depth)#i``.
"""

from __future__ import annotations

from planner.plan import (
    Constant, Distinct, Filter, Get, Join, Limit, OrderBy, Project, Recursive, Reduce, SetOp, Series, Unnest, Window,
    WorkTable, inputs,
)
from planner.scalar import AggCall, Call, Case, Cast, ColRef, Literal, OuterRef, Subquery

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "eq": "=", "ne": "<>", "lt": "<",
          "le": "<=", "gt": ">", "ge": ">=", "and": "AND", "or": "OR", "concat": "||", "like": "LIKE",
          "ilike": "ILIKE", "is_distinct": "IS DISTINCT FROM", "is_not_distinct": "IS NOT DISTINCT FROM"}


def expr_text(e, subqueries: list | None = None) -> str:
    """``e`` as text; subqueries in it are appended to ``subqueries`` and print as ``$n``."""
    if isinstance(e, Subquery):
        if subqueries is None:
            subqueries = []
        subqueries.append(e.plan)
        ref = f"${len(subqueries)}"
        if e.kind in ("any", "all"):
            return f"({expr_text(e.test, subqueries)} {_INFIX.get(e.func, e.func)} {e.kind.upper()}({ref}))"
        return f"{e.kind}({ref})" if e.kind in ("exists", "array") else ref
    return _expr_text(e, lambda x: expr_text(x, subqueries))


def _expr_text(e, expr_text) -> str:
    if isinstance(e, ColRef):
        return f"#{e.index}"
    if isinstance(e, OuterRef):
        return f"outer({e.depth})#{e.index}"
    if isinstance(e, Literal):
        if e.type.name == "internal":  # a catalog lookup table the planner filled in
            return "<catalog lookup>"
        if e.value is None:
            return "null"
        if isinstance(e.value, str):
            return "'" + e.value.replace("'", "''") + "'"
        if hasattr(e.value, "pg_text"):
            return f"interval '{e.value.pg_text()}'"
        if e.type.name in ("date", "timestamp"):
            return f"{e.type.name} '{e.value}'"
        return str(e.value).lower() if isinstance(e.value, bool) else str(e.value)
    if isinstance(e, Cast):
        return f"{expr_text(e.expr)}::{e.type.sql()}"
    if isinstance(e, Case):
        whens = " ".join(f"WHEN {expr_text(c)} THEN {expr_text(r)}" for c, r in e.whens)
        return f"CASE {whens} ELSE {expr_text(e.else_)} END"
    if isinstance(e, AggCall):
        if e.func == "count_star":
            return "count(*)"
        return f"{e.func}({'DISTINCT ' if e.distinct else ''}{expr_text(e.arg)})"
    if isinstance(e, Call):
        if e.func in _INFIX and len(e.args) >= 2:
            return "(" + f" {_INFIX[e.func]} ".join(expr_text(a) for a in e.args) + ")"
        if e.func == "not":
            return f"NOT {expr_text(e.args[0])}"
        if e.func in ("is_null", "is_not_null", "is_true", "is_false", "is_not_true", "is_not_false"):
            return f"({expr_text(e.args[0])}) {e.func.upper().replace('_', ' ')}"
        if e.func == "neg":
            return f"-{expr_text(e.args[0])}"
        return f"{e.func}({', '.join(expr_text(a) for a in e.args)})"
    return repr(e)


def explain(plan, indexes: dict[str, str] | None = None) -> list[str]:
    """The lines of the EXPLAIN output for ``plan``. ``indexes``: view id -> the name of
    the index a ``Get`` of that view reads (``PlanContext.indexed_views``), which prints
    as Materialize's ``ReadIndex on=schema.view idx=index``."""
    indexes = indexes or {}
    lines: list[str] = []
    subqueries: list = []

    def text(e) -> str:
        return expr_text(e, subqueries)

    def emit(p, depth: int):
        pad = "  " * depth
        first_subquery = len(subqueries)
        if hasattr(p, "explain_line"):  # a leaf defined outside planner.plan (an incremental Hole)
            lines.append(pad + p.explain_line())
            return
        if isinstance(p, Get):
            idx = indexes.get(p.relation.id)
            on = f"{p.relation.schema}.{p.relation.name}"
            lines.append(f"{pad}ReadIndex on={on} idx={idx}" if idx is not None else f"{pad}Get {on}")
            return
        if isinstance(p, Constant):
            rows = "; ".join("(" + ", ".join(expr_text(Literal(v, t)) for v, (_, t) in zip(r, p.columns)) + ")"
                             for r in p.rows[:5])
            more = f" ... {len(p.rows)} rows" if len(p.rows) > 5 else ""
            lines.append(f"{pad}Constant {rows}{more}")
            return
        if isinstance(p, Series):
            lines.append(f"{pad}Series {p.start} to {p.stop} step {p.step}")
            return
        if isinstance(p, Filter):
            lines.append(f"{pad}Filter {text(p.predicate)}")
        elif isinstance(p, Project):
            lines.append(f"{pad}Project {', '.join(text(e) for e in p.exprs)}")
        elif isinstance(p, Reduce):
            keys = ", ".join(text(k) for k in p.keys)
            aggs = ", ".join(text(a) for a in p.aggregates)
            lines.append(f"{pad}Reduce group_by=[{keys}] aggregates=[{aggs}]")
        elif isinstance(p, Join):
            on = f" on={text(p.on)}" if p.on is not None else ""
            lines.append(f"{pad}Join {p.kind}{on}")
        elif isinstance(p, OrderBy):
            keys = ", ".join(f"#{k.index}{' desc' if k.descending else ''}{' nulls_first' if k.nulls_first else ''}"
                             for k in p.keys)
            lines.append(f"{pad}OrderBy {keys}")
        elif isinstance(p, Limit):
            lines.append(f"{pad}Limit {p.limit if p.limit is not None else 'ALL'} offset={p.offset}")
        elif isinstance(p, Distinct):
            lines.append(f"{pad}Distinct")
        elif isinstance(p, Unnest):
            lines.append(f"{pad}Unnest " + ", ".join(f"{k}(#{i})" for i, k in zip(p.arrays, p.kinds)))
        elif isinstance(p, SetOp):
            lines.append(f"{pad}{p.op.capitalize()}{' all' if p.all else ''}")
        elif isinstance(p, Window):
            lines.append(f"{pad}Window " + ", ".join(
                f"{c.func}({', '.join(text(a) for a in c.args)}) over (partition by "
                f"{', '.join(text(k) for k in c.partition)} order by "
                f"{', '.join(text(e) + (' desc' if d else '') for e, d, _ in c.order)}"
                f"{_frame_text(c.frame)})" for c in p.calls))
        elif isinstance(p, Recursive):
            lines.append(f"{pad}Recursive #{p.cte}{' all' if p.all else ''}")
        elif isinstance(p, WorkTable):
            lines.append(f"{pad}WorkTable #{p.cte}")
        mine = subqueries[first_subquery:]
        for k, sq in enumerate(mine, start=first_subquery + 1):
            lines.append(f"{pad}  ${k}:")
            emit(sq, depth + 2)
        for i in inputs(p):
            emit(i, depth + 1)

    emit(plan, 0)
    return lines


def _frame_text(frame) -> str:
    """`` rows between ...`` of a window frame, empty for the default frame."""
    if frame is None:
        return ""

    def bound(kind, off):
        kind = kind.replace("_", " ")
        return "current row" if kind == "current" else (f"{off} {kind}" if off is not None else kind)

    return f" {frame.mode} between {bound(*frame.start)} and {bound(*frame.end)}"
