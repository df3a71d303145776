"""Evaluate scalar expressions in Python with PostgreSQL semantics.

Used to fold constant subexpressions at plan time (so ``date '1998-12-01' - interval
'90' day`` reaches Spark as one timestamp literal) and to compute the rows of
``INSERT ... VALUES``. NULL handling is SQL's three-valued logic throughout.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import math
from decimal import Decimal, localcontext, ROUND_HALF_UP, ROUND_HALF_EVEN, ROUND_FLOOR, ROUND_CEILING, ROUND_DOWN

from catalog.errors import (
    SqlError, DIVISION_BY_ZERO, NUMERIC_VALUE_OUT_OF_RANGE, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE,
)
from catalog.textio import check_int, fit_numeric, fit_string, format_text, jsonb_text, parse_text, INT_RANGES
from catalog.types import Interval, SqlType, type_from_oid
from planner.scalar import Call, Case, Cast, ColRef, Literal, OuterRef, Subquery, children, is_constant

_EPOCH_DATE = dt.date(1970, 1, 1)

#: Evaluates Subquery and OuterRef nodes against the current row, when a plan runs
#: with its subqueries kept (``planner.interpret`` sets it); None otherwise.
NESTED_EVALUATOR: contextvars.ContextVar = contextvars.ContextVar("nested_evaluator", default=None)


def cast_value(v, src: SqlType, dst: SqlType, explicit: bool = True):
    """Convert a non-NULL value of ``src`` to ``dst`` as PostgreSQL's cast does.

    Raises:
        SqlError 22P02/22003/22001/22007 as the target type's input function would;
        42846 when no cast exists.
    """
    if v is None:
        return None
    s, d = src.name, dst.name
    if s in ("unknown", "text", "varchar", "bpchar") and d not in ("text", "varchar", "bpchar", "unknown"):
        text = v.rstrip(" ") if s == "bpchar" else v
        return parse_text(text, dst, explicit)
    if d in ("text", "varchar", "bpchar", "unknown"):
        text = v.rstrip(" ") if s == "bpchar" and d != "bpchar" else (v if isinstance(v, str) else format_text(v, src))
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
    if d == "timestamptz":
        if s == "timestamptz":
            return v
        if s == "timestamp":
            return v.replace(tzinfo=dt.timezone.utc)
        if s == "date":
            return dt.datetime(v.year, v.month, v.day, tzinfo=dt.timezone.utc)
    if s == "timestamptz" and d in ("timestamp", "date"):
        naive = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return naive if d == "timestamp" else naive.date()
    if d == "interval" and s == "interval":
        return v
    if src.is_array and dst.is_array:
        return [cast_value(x, src.element, dst.element, explicit) for x in v]
    if d == "time" and s in ("time", "timestamp"):
        return v if s == "time" else v.time()
    if d == s:
        return v  # bytea, uuid, jsonb to themselves
    raise SqlError("42846", f"cannot cast type {src.sql()} to {dst.sql()}")


def _div0():
    return SqlError(DIVISION_BY_ZERO, "division by zero")


def _numeric_div_scale(a: Decimal, b: Decimal, q: Decimal) -> int:
    # PostgreSQL's select_div_scale: at least 16 significant digits, never fewer
    # decimals than either input.
    weight = (q.adjusted() // 4) if q != 0 else 0
    rscale = 16 - weight * 4
    for x in (a, b):
        rscale = max(rscale, -x.as_tuple().exponent if x.is_finite() else 0)
    return min(max(rscale, 0), 1000)


def _arith(func: str, a, b, t: SqlType, ta: SqlType, tb: SqlType):
    n = t.name
    if n == "int4" and ta.name == "date":  # date - date
        return (a - b).days
    if n in INT_RANGES:
        if func == "add":
            r = a + b
        elif func == "sub":
            r = a - b
        elif func == "mul":
            r = a * b
        elif func == "div":
            if b == 0:
                raise _div0()
            r = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        else:
            if b == 0:
                raise _div0()
            r = int(math.fmod(a, b))
        return check_int(r, t)
    if n == "numeric":
        with localcontext() as ctx:
            ctx.prec = 60
            if func == "add":
                return a + b
            if func == "sub":
                return a - b
            if func == "mul":
                return a * b
            if b == 0:
                raise _div0()
            if func == "div":
                q = a / b
                return q.quantize(Decimal(1).scaleb(-_numeric_div_scale(a, b, q)), rounding=ROUND_HALF_UP)
            return a % b
    if n in ("float4", "float8"):
        if func in ("div", "mod") and b == 0:
            raise _div0()
        r = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
             "mod": lambda: math.fmod(a, b)}[func]()
        if math.isinf(r) and not (math.isinf(a) or math.isinf(b)):
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")
        return r
    if n == "date":
        # date +/- integer
        if ta.name == "date":
            days = b if func == "add" else -b
            return a + dt.timedelta(days=days)
        return b + dt.timedelta(days=a)
    if n in ("timestamp", "timestamptz"):
        ts, iv = (a, b) if ta.name == n else (b, a)
        if func == "sub":
            iv = -iv
        return add_interval(ts, iv)
    if n == "interval":
        if ta.name == "timestamp":  # timestamp - timestamp
            delta = a - b
            return Interval(0, delta.days, delta.seconds * 1_000_000 + delta.microseconds)
        if func == "add":
            return a + b
        if func == "sub":
            return a - b
        if func in ("mul", "div"):
            iv, f = (a, b) if ta.name == "interval" else (b, a)
            if func == "div":
                if f == 0:
                    raise _div0()
                f = 1 / f
            months = iv.months * f
            days = iv.days * f + (months - int(months)) * 30
            micros = iv.micros * f + (days - int(days)) * 86_400_000_000
            return Interval(int(months), int(days), int(round(micros)))
    raise SqlError(FEATURE_NOT_SUPPORTED, f"cannot evaluate {func} on {t.sql()}")


def add_interval(ts: dt.datetime, iv: Interval) -> dt.datetime:
    """``timestamp + interval``: months first (clamping the day to the month's end), then
    days, then microseconds, as PostgreSQL's timestamp_pl_interval."""
    if iv.months:
        total = ts.year * 12 + (ts.month - 1) + iv.months
        y, m = divmod(total, 12)
        m += 1
        last = (dt.date(y + (m == 12), m % 12 + 1, 1) - dt.timedelta(days=1)).day
        ts = ts.replace(year=y, month=m, day=min(ts.day, last))
    return ts + dt.timedelta(days=iv.days, microseconds=iv.micros)


def _compare(func: str, a, b) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        # Code-point order (PostgreSQL's "C" collation, Materialize's only one).
        pass
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[func]


def _like(s: str, pattern: str, ci: bool) -> bool:
    import re

    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.fullmatch("".join(out), s, re.S | (re.I if ci else 0)) is not None


def _round(v, t: SqlType, func: str, digits: int = 0):
    if t.name in ("float4", "float8"):
        return float(round(v)) if func == "round" else float(math.trunc(v))
    q = Decimal(1).scaleb(-digits)
    return v.quantize(q, rounding=ROUND_HALF_UP if func == "round" else ROUND_DOWN)


def evaluate(e, row: tuple = ()):
    """Evaluate ``e`` over ``row`` (the values ColRefs index). Returns a Python value or None.

    Raises:
        SqlError with PostgreSQL's SQLSTATE for runtime errors (22012, 22003, ...).
    """
    if isinstance(e, Literal):
        return e.value
    if isinstance(e, ColRef):
        return row[e.index]
    if isinstance(e, Cast):
        v = evaluate(e.expr, row)
        return cast_value(v, e.expr.type, e.type)
    if isinstance(e, Case):
        for cond, res in e.whens:
            if evaluate(cond, row) is True:
                return evaluate(res, row)
        return evaluate(e.else_, row)
    if isinstance(e, (Subquery, OuterRef)):
        nested = NESTED_EVALUATOR.get()
        if nested is None:
            raise TypeError(e)
        return nested(e, row)
    if not isinstance(e, Call):
        raise TypeError(e)
    f = e.func
    if f == "and":
        vals = [evaluate(a, row) for a in e.args]
        if any(v is False for v in vals):
            return False
        return None if any(v is None for v in vals) else True
    if f == "or":
        vals = [evaluate(a, row) for a in e.args]
        if any(v is True for v in vals):
            return True
        return None if any(v is None for v in vals) else False
    if f == "coalesce":
        for a in e.args:
            v = evaluate(a, row)
            if v is not None:
                return v
        return None
    args = [evaluate(a, row) for a in e.args]
    if f == "not_null_or_raise":
        if args[0] is None:
            raise SqlError("23502", args[1])
        return args[0]
    if f == "is_null":
        return args[0] is None
    if f == "is_not_null":
        return args[0] is not None
    if f in ("is_true", "is_false", "is_not_true", "is_not_false"):
        v = args[0]
        return {"is_true": v is True, "is_false": v is False, "is_not_true": v is not True,
                "is_not_false": v is not False}[f]
    if f in ("is_distinct", "is_not_distinct"):
        a, b = args
        same = (a is None and b is None) or (a is not None and b is not None and a == b)
        return (not same) if f == "is_distinct" else same
    if f == "in":
        x, *lst = args
        if x is None:
            return None
        if any(v is not None and v == x for v in lst):
            return True
        return None if any(v is None for v in lst) else False
    if f == "nullif":
        a, b = args
        return None if (a is not None and b is not None and a == b) else a
    if f in ("greatest", "least"):
        vals = [v for v in args if v is not None]
        if not vals:
            return None
        return max(vals) if f == "greatest" else min(vals)
    if f == "cardinality_check":
        if args[0] is not None and args[0] > 1:
            raise SqlError("21000", "more than one row returned by a subquery used as an expression")
        return args[1]
    if f == "concat_ws_null":
        return "".join(v for v in args if v is not None)
    if f in _NULL_TOLERANT:
        return _NULL_TOLERANT[f](e, args)
    if any(v is None for v in args):
        return None
    if f in _STRICT_FUNCS:
        return _STRICT_FUNCS[f](e, args)
    if f in ("add", "sub", "mul", "div", "mod"):
        return _arith(f, args[0], args[1], e.type, e.args[0].type, e.args[1].type)
    if f == "neg":
        v = -args[0]
        return check_int(v, e.type) if e.type.is_integer else v
    if f == "pos":
        return args[0]
    if f == "not":
        return not args[0]
    if f in ("eq", "ne", "lt", "le", "gt", "ge"):
        a, b = args
        if e.args[0].type.name == "bpchar":
            a, b = a.rstrip(" "), b.rstrip(" ")
        return _compare(f, a, b)
    if f in ("regex", "iregex", "not_regex", "not_iregex"):
        import re

        try:
            hit = re.search(args[1], args[0], re.I if "iregex" in f else 0) is not None
        except re.error as err:
            raise SqlError("2201B", f"invalid regular expression: {err}") from None
        return (not hit) if f.startswith("not_") else hit
    if f in ("like", "ilike"):
        s, p = args
        return _like(s, p, f == "ilike")
    if f == "concat":
        return args[0] + args[1]
    if f == "upper":
        return args[0].upper()
    if f == "lower":
        return args[0].lower()
    if f == "length":
        return len(args[0])
    if f in ("trim", "ltrim", "rtrim"):
        chars = args[1] if len(args) > 1 else " "
        return {"trim": str.strip, "ltrim": str.lstrip, "rtrim": str.rstrip}[f](args[0], chars)
    if f == "substr":
        s, start = args[0], args[1]
        if len(args) == 3:
            if args[2] < 0:
                raise SqlError("22011", "negative substring length not allowed")
            end = start + args[2]
        else:
            end = len(s) + 1
        return s[max(start, 1) - 1 : max(end - 1, 0)]
    if f == "replace":
        return args[0].replace(args[1], args[2])
    if f == "abs":
        return abs(args[0])
    if f in ("round", "trunc"):
        return _round(args[0], e.args[0].type, f, args[1] if len(args) > 1 else 0)
    if f in ("floor", "ceil"):
        v = args[0]
        if isinstance(v, Decimal):
            return v.to_integral_value(rounding=ROUND_FLOOR if f == "floor" else ROUND_CEILING)
        return float(math.floor(v) if f == "floor" else math.ceil(v))
    if f == "sign":
        v = args[0]
        return type(v)((v > 0) - (v < 0))
    if f in ("sqrt", "ln", "exp", "power"):
        if f == "sqrt" and args[0] < 0:
            raise SqlError("2201F", "cannot take square root of a negative number")
        if f == "ln" and args[0] <= 0:
            raise SqlError("2201E", "cannot take logarithm of zero" if args[0] == 0 else "cannot take logarithm of a negative number")
        vals = [float(v) for v in args]
        r = {"sqrt": lambda: math.sqrt(vals[0]), "ln": lambda: math.log(vals[0]), "exp": lambda: math.exp(vals[0]),
             "power": lambda: math.pow(vals[0], vals[1])}[f]()
        return Decimal(repr(r)) if e.type.name == "numeric" else r
    if f == "date_part":
        return _date_part(args[0], args[1], e.type)
    raise SqlError(FEATURE_NOT_SUPPORTED, f"function {f} cannot be evaluated here")


def any_all(kind: str, op: str, x, values: list):
    """``x op ANY (values)`` (``kind`` any) or ``ALL``, in three-valued logic (PostgreSQL
    9.24.3, 9.23.4): a NULL comparison that decides nothing makes the answer NULL."""
    hits = [None if x is None or v is None else _compare(op, x, v) for v in values]
    if kind == "any":
        return True if True in hits else (None if None in hits else False)
    return False if False in hits else (None if None in hits else True)


def _array_any_all(e: Call, args):
    x, arr = args
    kind, op = e.func.split(":")
    return None if arr is None else any_all(kind.removeprefix("array_"), op, x, arr)


def _array_to_string(e: Call, args):
    arr, sep = args[0], args[1]
    if arr is None or sep is None:
        return None
    null = args[2] if len(args) > 2 else None
    t = e.args[0].type.element
    return sep.join(format_text(v, t) if v is not None else null for v in arr if v is not None or null is not None)


#: array functions that are not strict (PostgreSQL's array_cat etc. accept a NULL array)
_NULL_TOLERANT = {
    "array": lambda e, a: list(a),
    "array_cat": lambda e, a: None if a[0] is None and a[1] is None else (a[0] or []) + (a[1] or []),
    "array_append": lambda e, a: (a[0] or []) + [a[1]],
    "array_prepend": lambda e, a: [a[0]] + (a[1] or []),
    **{f"array_{kind}:{op}": _array_any_all for kind in ("any", "all") for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    "array_to_string": _array_to_string,
    "format_type": lambda e, a: None if a[0] is None else format_type(a[0], a[1]),
}

def _doc(text: str):
    return json.loads(text, parse_float=Decimal)


_MISSING = object()


def _jsonb_step(doc, step):
    """doc -> step: an object's field, or an array's element (negative counts from the end)."""
    if isinstance(doc, dict) and isinstance(step, str):
        return doc.get(step, _MISSING)
    if isinstance(doc, list):
        try:
            i = int(step)
        except (TypeError, ValueError):
            return _MISSING
        if -len(doc) <= i < len(doc):
            return doc[i]
    return _MISSING


def _jsonb_out(value, as_text: bool):
    if value is _MISSING:
        return None
    if as_text:
        # ->> and #>>: strings without quotes, JSON null as SQL NULL
        return None if value is None else value if isinstance(value, str) else jsonb_text(value)
    return jsonb_text(value)


def _jsonb_path(e: Call, a):
    doc = _doc(a[0])
    for step in a[1]:
        if step is None:
            return None
        doc = _jsonb_step(doc, step)
        if doc is _MISSING:
            return None
    return _jsonb_out(doc, e.func.endswith("_text"))


def _contains(a, b) -> bool:
    """jsonb @> (PostgreSQL 8.14.3): objects by subset of pairs, arrays by elements, a
    scalar array contains a scalar."""
    if isinstance(a, dict) and isinstance(b, dict):
        return all(k in a and _contains(a[k], v) for k, v in b.items())
    if isinstance(a, list):
        if isinstance(b, list):
            return all(any(_contains(x, y) for x in a) for y in b)
        return not isinstance(b, (dict, list)) and any(_contains(x, b) for x in a if not isinstance(x, (dict, list)))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, Decimal)) and isinstance(b, (int, Decimal)):
        return a == b
    return type(a) is type(b) and a == b


def _jsonb_typeof(v) -> str:
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, bool):
        return "boolean"
    if v is None:
        return "null"
    return "string" if isinstance(v, str) else "number"


def _array_length(v):
    if not isinstance(v, list):
        raise SqlError(INVALID_PARAMETER_VALUE, "cannot get array length of a " +
                       ("scalar" if not isinstance(v, dict) else "non-array"))
    return len(v)


def pg_size_pretty(size: Decimal) -> str:
    """PostgreSQL's pg_size_pretty (dbsize.c): bytes below 10240, then kB, MB, GB, TB, PB,
    each step halving with rounding away from zero. C's integer division truncates."""

    def div(a: int, b: int) -> int:
        return abs(a) // b * (1 if a >= 0 else -1)

    size = int(size)
    if abs(size) < 10 * 1024:
        return f"{size} bytes"
    size = div(size, 1 << 9)  # one extra bit, for rounding
    for unit in ("kB", "MB", "GB", "TB"):
        if abs(size) < 20 * 1024 - 1:
            break
        size = div(size, 1 << 10)
    else:
        unit = "PB"
    return f"{div(size + (1 if size >= 0 else -1), 2)} {unit}"


#: functions with a NULL result for any NULL argument, by plan function name
_STRICT_FUNCS = {
    "pg_size_pretty": lambda e, a: pg_size_pretty(a[0]),
    "jsonb_get": lambda e, a: _jsonb_out(_jsonb_step(_doc(a[0]), a[1]), False),
    "jsonb_get_text": lambda e, a: _jsonb_out(_jsonb_step(_doc(a[0]), a[1]), True),
    "jsonb_path": _jsonb_path,
    "jsonb_path_text": _jsonb_path,
    "jsonb_contains": lambda e, a: _contains(_doc(a[0]), _doc(a[1])),
    "jsonb_contained": lambda e, a: _contains(_doc(a[1]), _doc(a[0])),
    "jsonb_exists": lambda e, a: (a[1] in d) if isinstance(d := _doc(a[0]), dict) else (
        isinstance(d, list) and a[1] in [x for x in d if isinstance(x, str)]) or (d == a[1]),
    "jsonb_typeof": lambda e, a: _jsonb_typeof(_doc(a[0])),
    "jsonb_array_length": lambda e, a: _array_length(_doc(a[0])),
    "subscript": lambda e, a: a[0][a[1] - 1] if 1 <= a[1] <= len(a[0]) else None,
    "cardinality": lambda e, a: len(a[0]),
    "array_length": lambda e, a: len(a[0]) if a[1] == 1 and a[0] else None,
    "array_upper": lambda e, a: len(a[0]) if a[1] == 1 and a[0] else None,
    "array_lower": lambda e, a: 1 if a[1] == 1 and a[0] else None,
    "bytea_concat": lambda e, a: a[0] + a[1],
}


def format_type(oid: int, typmod: int | None) -> str | None:
    """PostgreSQL's ``format_type(type_oid, typmod)``: ``numeric(10,2)``, ``integer[]``;
    ``???`` for an OID that names no type, as PostgreSQL prints."""
    t = type_from_oid(oid)
    if t is None:
        return "???"
    if typmod is not None and typmod >= 4:
        name = t.element.name if t.is_array else t.name
        if name == "numeric":
            t = SqlType(t.name, (typmod - 4) >> 16, (typmod - 4) & 0xFFFF)
        elif name in ("varchar", "bpchar"):
            t = SqlType(t.name, typmod - 4)
    elif t.name in ("bpchar", "_bpchar"):
        return "character" + ("[]" if t.is_array else "")  # no typmod: no length shown
    return t.sql()


def _date_part(field: str, v, t: SqlType):
    field = field.lower()
    if isinstance(v, Interval):
        vals = {"year": v.months // 12, "month": v.months % 12, "day": v.days,
                "hour": v.micros // 3_600_000_000, "minute": v.micros // 60_000_000 % 60,
                "second": Decimal(v.micros % 60_000_000) / 1_000_000}
    else:
        vals = {"year": v.year, "month": v.month, "day": v.day, "hour": v.hour, "minute": v.minute,
                "second": v.second + Decimal(v.microsecond) / 1_000_000, "quarter": (v.month - 1) // 3 + 1,
                "dow": (v.weekday() + 1) % 7, "doy": v.timetuple().tm_yday, "isodow": v.isoweekday(),
                "week": v.isocalendar()[1], "decade": v.year // 10, "century": (v.year + 99) // 100,
                "epoch": Decimal((v - dt.datetime(1970, 1, 1)).total_seconds()).quantize(Decimal("0.000001"))}
    if field not in vals:
        raise SqlError(INVALID_PARAMETER_VALUE, f'unit "{field}" not recognized for type {t.sql()}')
    r = vals[field]
    return float(r) if t.name == "float8" else Decimal(r)


def fold(e):
    """Replace every constant subexpression of ``e`` by its value (a Literal).

    Errors in constant subexpressions (``1/0``) surface here, as they do in
    PostgreSQL's planner (``eval_const_expressions``)."""
    if isinstance(e, (Literal, ColRef)):
        return e
    if is_constant(e) and not (isinstance(e, Call) and e.func == "not_null_or_raise"):
        # not_null_or_raise raises per row, only for the rows a write affects.
        return Literal(evaluate(e), e.type)
    if isinstance(e, Call):
        return _date_comparison(Call(e.func, tuple(fold(a) for a in e.args), e.type))
    if isinstance(e, Cast):
        return Cast(fold(e.expr), e.type)
    if isinstance(e, Case):
        return Case(tuple((fold(c), fold(r)) for c, r in e.whens), fold(e.else_), e.type)
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


__all__ = ["cast_value", "evaluate", "fold", "add_interval", "children"]
