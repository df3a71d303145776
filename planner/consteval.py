"""Evaluate scalar expressions in Python with PostgreSQL semantics.

Used to fold constant subexpressions at plan time (so ``date '1998-12-01' - interval
'90' day`` reaches Spark as one timestamp literal) and to compute the rows of
``INSERT ... VALUES``. NULL handling is SQL's three-valued logic throughout. Function
calls run the Python implementations of the registry (``planner.functions``); this
module owns casts, CASE and the evaluation walk.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal, ROUND_HALF_UP

from catalog.errors import (
    SqlError, CANNOT_COERCE, DATETIME_FIELD_OVERFLOW, FEATURE_NOT_SUPPORTED, NUMERIC_VALUE_OUT_OF_RANGE,
)
from catalog import mztime
from catalog.intervalio import adjust_interval, parse_interval
from catalog.textio import (
    DEFAULT_FORMAT, INT_RANGES, TextFormat, check_int, fit_datetime, fit_numeric, fit_string, format_text, parse_text,
)
from catalog.types import FarDate, FarTimestamp, SqlType, date_from_days, timestamp_from_micros
from planner.context import NO_STATEMENT, PlanContext
from planner.functions import FUNCTIONS, run_py
from planner.functions.array import any_all
from planner.functions.datetime import add_interval
from planner.guard import INLINE_VALUE_BYTES, Outgrown, utf8_bytes
from planner.scalar import Call, Case, Cast, ColRef, Literal, OuterRef, Subquery, children, is_constant, walk

_EPOCH_DATE = dt.date(1970, 1, 1)

def cast_value(v, src: SqlType, dst: SqlType, explicit: bool = True, fmt: TextFormat = DEFAULT_FORMAT):
    """Convert a non-NULL value of ``src`` to ``dst`` as PostgreSQL's cast does, then
    apply ``dst``'s typmod (PostgreSQL's length coercion: ``timestamp(0)`` rounds,
    ``interval minute`` truncates; a text value's bare number is seconds before that, as
    only an untyped literal reads it in the qualifier's unit). ``fmt``: the session's
    DateStyle, TimeZone and IntervalStyle (its evaluation's ``Guard.text``), which text
    casts and casts between timestamp and timestamptz follow.

    Raises:
        SqlError 22P02/22003/22001/22007/22015 as the target type's input function would;
        42846 when no cast exists.
    """
    if v is None:
        return None
    out = _convert(v, src, dst, explicit, fmt)
    if dst.name == "interval" and (dst.scale is not None or dst.precision is not None):
        return adjust_interval(out, dst.scale, dst.precision)
    return fit_datetime(out, dst)


def _convert(v, src: SqlType, dst: SqlType, explicit: bool, fmt: TextFormat):
    s, d = src.name, dst.name
    if (src.is_list and dst.is_list) or (src.is_map and dst.is_map):
        from planner.functions import lists

        lists.check_cast(src, dst)
        return lists.cast_value(v, src, dst, lambda x, a, b: cast_value(x, a, b, explicit, fmt))
    if d == "mz_timestamp" and s != "mz_timestamp":
        if s in INT_RANGES or s in ("numeric", "float4", "float8", "date", "timestamp", "timestamptz"):
            return mztime.from_value(v, s)
        if s not in ("text", "varchar", "bpchar", "name", "unknown"):  # text: parse_text's, below
            raise SqlError(CANNOT_COERCE, f"cannot cast type {src.sql()} to {dst.sql()}")
    if s == "mz_timestamp" and d != "mz_timestamp":
        out = mztime.to_value(int(v), d)
        if out is None:
            raise SqlError(CANNOT_COERCE, f"cannot cast type {src.sql()} to {dst.sql()}")
        return fit_string(out, dst, explicit) if d == "varchar" else out
    if d == "interval" and s in ("text", "varchar", "bpchar", "name"):
        return parse_interval(v.rstrip(" ") if s == "bpchar" else v, style=fmt.interval_style)
    if s in ("unknown", "text", "varchar", "bpchar", "name") and d not in ("text", "varchar", "bpchar", "unknown"):
        text = v.rstrip(" ") if s == "bpchar" else v
        return parse_text(text, dst, explicit, fmt)
    if d in ("text", "varchar", "bpchar", "unknown", "name"):
        if d == "name":
            return parse_text(v if isinstance(v, str) else format_text(v, src, fmt), dst)
        if s == "bool":
            text = "true" if v else "false"  # booltext, not boolout's t/f (PostgreSQL 8.6)
        else:
            text = v.rstrip(" ") if s == "bpchar" and d != "bpchar" else \
                (v if isinstance(v, str) else format_text(v, src, fmt))
        return fit_string(text, dst, explicit) if d in ("varchar", "bpchar") else text
    if d in INT_RANGES:
        if s in INT_RANGES:
            return check_int(int(v), dst)
        if s == "numeric":
            return check_int(int(v.to_integral_value(rounding=ROUND_HALF_UP)), dst)
        if s in ("float4", "float8"):
            if math.isnan(v) or math.isinf(v):
                raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"{INT_RANGES[d][2]} out of range")
            return check_int(int(round(v)), dst)  # rint(): half to even, as Python's round
        if s == "bool" and d == "int4":
            return 1 if v else 0
    if d == "numeric":
        if s in INT_RANGES:
            return fit_numeric(Decimal(v), dst)
        if s == "numeric":
            return fit_numeric(v, dst)
        if s in ("float4", "float8"):
            if math.isinf(v):
                raise SqlError(FEATURE_NOT_SUPPORTED, "cannot convert infinity to numeric")
            return fit_numeric(Decimal(format_text(v, src)), dst)
    if d in ("float4", "float8"):
        if s in INT_RANGES or s in ("numeric", "float4", "float8"):
            f = float(v)
            return f if d == "float8" else float(__import__("numpy").float32(f))
    if d == "bool":
        if s == "bool":
            return v
        if s == "int4":
            return v != 0
    if (s, d) in (("date", "timestamp"), ("date", "timestamptz"), ("timestamp", "date"), ("timestamptz", "date"),
                  ("timestamp", "timestamptz"), ("timestamptz", "timestamp")) and isinstance(v, (FarDate, FarTimestamp)):
        return _far_cast(v, d)
    if d == "date":
        if s == "date":
            return v
        if s == "timestamp":
            return v.date()
    if d == "timestamp":
        if s == "timestamp":
            return v
        if s == "date":
            return dt.datetime(v.year, v.month, v.day)
    # timestamp and date <-> timestamptz: in the session's time zone (PostgreSQL 8.5.1.3)
    if d == "timestamptz":
        if s == "timestamptz":
            return v
        if s in ("timestamp", "date"):
            local = v if s == "timestamp" else dt.datetime(v.year, v.month, v.day)
            try:
                return local.replace(tzinfo=fmt.time_zone).astimezone(dt.timezone.utc)
            except OverflowError:
                raise SqlError(DATETIME_FIELD_OVERFLOW, "timestamp out of range") from None
    if s == "timestamptz" and d in ("timestamp", "date"):
        try:
            naive = v.astimezone(fmt.time_zone).replace(tzinfo=None)
        except OverflowError:
            raise SqlError(DATETIME_FIELD_OVERFLOW, "timestamp out of range") from None
        return naive if d == "timestamp" else naive.date()
    if d == "interval" and s == "interval":
        return v
    if src.is_array and dst.is_array:  # nested lists for several dimensions
        return [cast_value(x, src, dst, explicit, fmt) if isinstance(x, list)
                else cast_value(x, src.element, dst.element, explicit, fmt)
                for x in v]
    if d == "time" and s in ("time", "timestamp", "timetz"):
        return v.replace(tzinfo=None) if s == "timetz" else v if s == "time" else v.time()
    if d == "timetz" and s in ("time", "timetz", "timestamptz"):
        # PostgreSQL: time -> timetz takes the session's time zone (UTC here)
        if s == "timestamptz":
            return v.astimezone(dt.timezone.utc).timetz()
        return v if s == "timetz" else v.replace(tzinfo=dt.timezone.utc)
    if d == s:
        return v  # bytea, uuid, jsonb to themselves
    raise SqlError(CANNOT_COERCE, f"cannot cast type {src.sql()} to {dst.sql()}")


def _far_cast(v, d: str):
    """Casts among date, timestamp and timestamptz of values outside datetime's years
    (FarDate, FarTimestamp): infinities stay infinite; others move by whole days
    (in UTC: the session's zone is not applied out there)."""
    if isinstance(v, FarDate):
        if v.infinite:
            return FarTimestamp(FarTimestamp.INFINITY if v.days > 0 else FarTimestamp.NEG_INFINITY, d == "timestamptz")
        return timestamp_from_micros(v.days * 86_400_000_000, d == "timestamptz")
    if v.infinite:
        if d == "date":
            return FarDate(FarDate.INFINITY if v.micros > 0 else FarDate.NEG_INFINITY)
        return FarTimestamp(v.micros, d == "timestamptz")
    if d == "date":
        return date_from_days(v.micros // 86_400_000_000)
    return timestamp_from_micros(v.micros, d == "timestamptz")


def evaluate(e, row: tuple = (), nested=None, ctx: PlanContext = NO_STATEMENT):
    """Evaluate ``e`` over ``row`` (the values ColRefs index). Returns a Python value or None.
    ``nested(node, row)`` evaluates its Subquery and OuterRef nodes, where a plan runs with
    its subqueries kept (``planner.interpret``); without it they raise TypeError.
    ``ctx``: the statement's context (``planner.context.PlanContext``): its ``guard``
    (``planner.guard.Guard``: limits, what stops the evaluation, text settings for casts),
    and what the functions that take it (registry ``extra["with_context"]``) are given;
    ``NO_STATEMENT`` outside a statement.

    Raises:
        SqlError with PostgreSQL's SQLSTATE for runtime errors (22012, 22003, ...); 57014
        before a function call once the statement timed out or was cancelled
        (``Guard.check_stop``); ``Outgrown`` and 53200/54000 for a value past the guard's
        limits.
    """
    if isinstance(e, Literal):
        return e.value
    if isinstance(e, ColRef):
        return row[e.index]
    if isinstance(e, Cast):
        v = evaluate(e.expr, row, nested, ctx)
        return cast_value(v, e.expr.type, e.type, fmt=ctx.guard.text)
    if isinstance(e, Case):
        for cond, res in e.whens:
            if evaluate(cond, row, nested, ctx) is True:
                return evaluate(res, row, nested, ctx)
        return evaluate(e.else_, row, nested, ctx)
    if isinstance(e, (Subquery, OuterRef)):
        if nested is None:
            raise TypeError(e)
        return nested(e, row)
    if not isinstance(e, Call):
        raise TypeError(e)
    f = e.func
    if f == "coalesce":  # lazy: later arguments are not evaluated (PostgreSQL 9.18.2)
        for a in e.args:
            v = evaluate(a, row, nested, ctx)
            if v is not None:
                return v
        return None
    entry = FUNCTIONS.get(f)
    if entry is None or entry.py is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"function {f} cannot be evaluated here")
    args = [evaluate(a, row, nested, ctx) for a in e.args]
    if entry.strict and any(v is None for v in args):
        return None
    guard = ctx.guard
    guard.check_stop()
    try:
        v = run_py(entry, ctx, args, e)
    except OverflowError:  # float arithmetic past the double range (exp(100000)): float.c's error
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow") from None
    if isinstance(v, (str, bytes)) and len(v) > _CHECKED_LEN:
        # What a function builds from values within the limits is at most a few times
        # their size (a || b): checked here, a chain of them stops at the first step past.
        guard.check_value_bytes(utf8_bytes(v) if isinstance(v, str) else len(v))
    return v


#: text or bytea results longer than this are checked against ``planner.guard``'s
#: limits after each call: a quarter of the inline budget, as a character may take 4 bytes
_CHECKED_LEN = INLINE_VALUE_BYTES // 4


def is_volatile(e) -> bool:
    """True if ``e`` calls a volatile function (``random()``): it is not folded."""
    return any(isinstance(n, Call) and (f := FUNCTIONS.get(n.func)) is not None and f.volatility == "volatile"
               for n in walk(e))


def fold(e, ctx: PlanContext = NO_STATEMENT):
    """Replace every constant subexpression of ``e`` by its value (a Literal), evaluated
    in the statement's context ``ctx`` (``evaluate``'s).

    Errors in constant subexpressions (``1/0``) surface here, as they do in
    PostgreSQL's planner (``eval_const_expressions``). One too costly to compute in
    the session's thread (``planner.guard.Outgrown``: a big value, a backtracking regular
    expression) stays as it is, its cheap parts folded: it is computed where the query runs."""
    if isinstance(e, (Literal, ColRef)):
        return e
    if is_constant(e) and not is_volatile(e):
        try:
            return Literal(evaluate(e, ctx=ctx), e.type)
        except Outgrown:
            pass
    if isinstance(e, Call):
        return _date_comparison(Call(e.func, tuple(fold(a, ctx) for a in e.args), e.type))
    if isinstance(e, Cast):
        return Cast(fold(e.expr, ctx), e.type)
    if isinstance(e, Case):
        return Case(tuple((fold(c, ctx), fold(r, ctx)) for c, r in e.whens), fold(e.else_, ctx), e.type)
    return e


_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _date_comparison(e: Call):
    """``date_col::timestamp <op> timestamp 'x'`` -> ``date_col <op'> date 'x'``: the same
    truth value (PostgreSQL's date/timestamp comparison), but on the column's own type,
    so scans can skip Parquet row groups by their date statistics."""
    if e.func not in _FLIP or len(e.args) != 2:
        return e
    a, b = e.args
    func = e.func
    if isinstance(a, Literal) and isinstance(b, Cast):
        a, b, func = b, a, _FLIP[func]
    if not (isinstance(a, Cast) and a.type.name == "timestamp" and a.expr.type.name == "date"
            and isinstance(b, Literal) and b.type.name == "timestamp" and b.value is not None):
        return e
    from catalog.types import DATE

    ts = b.value
    d = ts.date()
    midnight = ts == dt.datetime(d.year, d.month, d.day)
    if not midnight:
        # date < 'd 12:00' is date <= d; date >= 'd 12:00' is date > d.
        if func in ("eq", "ne"):
            return e
        func = {"lt": "le", "le": "le", "gt": "gt", "ge": "gt"}[func]
    return Call(func, (a.expr, Literal(d, DATE)), e.type)


__all__ = ["cast_value", "evaluate", "fold", "add_interval", "any_all", "children"]
