"""Array functions and operators (PostgreSQL 9.19) and ``op ANY/ALL (array)`` (9.24.3).
Arrays have lower bound 1. Values of several dimensions (nested lists) are evaluated in
Python only; on Spark, and in tables, arrays are one-dimensional."""

from __future__ import annotations

from catalog.errors import SqlError
from catalog.textio import array_dims, format_text
from catalog.types import TEXT
from planner.functions import Function, constant_arg, register, sig
from planner.functions.logic import CMP


def any_all(kind: str, op: str, x, values: list):
    """``x op ANY (values)`` (``kind`` any) or ``ALL``, in three-valued logic (PostgreSQL
    9.24.3, 9.23.4): a NULL comparison that decides nothing makes the answer NULL."""
    hits = [None if x is None or v is None else CMP[op](x, v) for v in values]
    if kind == "any":
        return True if True in hits else (None if None in hits else False)
    return False if False in hits else (None if None in hits else True)


def _any_all_py(a, e):
    kind, op = e.func.split(":")
    return None if a[1] is None else any_all(kind.removeprefix("array_"), op, a[0], a[1])


def _any_all_spark(S, a, e):
    kind, op = e.func.split(":")
    x = a[0]
    pred = lambda v: CMP[op](x, v)  # noqa: E731
    return S.F.exists(a[1], pred) if kind == "array_any" else S.F.forall(a[1], pred)


def _to_string_py(a, e):
    arr, sep = a[0], a[1]
    if arr is None or sep is None:
        return None
    null = a[2] if len(a) > 2 else None
    t = e.args[0].type.element
    return sep.join(format_text(v, t) if v is not None else null for v in arr if v is not None or null is not None)


def _to_string_spark(S, a, e):
    elem_t = e.args[0].type.element
    as_text = S.F.transform(a[0], lambda x: S.cast(x, elem_t, TEXT))
    return S.F.array_join(as_text, a[1], *(a[2:] and [a[2]]))


def _cat_spark(S, a, e):
    F = S.F
    x, y = a
    return F.when(x.isNull() & y.isNull(), F.lit(None)).otherwise(
        F.concat(F.coalesce(x, S.empty_array(e.type)), F.coalesce(y, S.empty_array(e.type))))


def _position_py(a, e):
    arr, x = a[0], a[1]
    if arr is None:
        return None
    return next((i + 1 for i, v in enumerate(arr) if v is not None and x is not None and v == x), None) \
        if x is not None else next((i + 1 for i, v in enumerate(arr) if v is None), None)


def _position_spark(S, a, e):
    F = S.F
    p = F.array_position(a[0], a[1]).cast("int")
    return F.when(a[1].isNull(), F.lit(None).cast("int")).otherwise(F.when(p > 0, p))


def _dims(f):
    """array_length/array_upper/array_lower of dimension ``a[1]``: NULL past the array's
    dimensions (and for an empty array); lower bounds are 1."""
    def py(a, e):
        dims = array_dims(a[0])
        if not 1 <= a[1] <= len(dims):
            return None
        return 1 if f == "array_lower" else dims[a[1] - 1]
    return py


def _cardinality(v) -> int:
    n = 1
    for d in array_dims(v):
        n *= d
    return n if v else 0


def _dims_text(v) -> str | None:
    """``array_dims``: ``[1:2][1:3]``, NULL for an empty array."""
    return "".join(f"[1:{d}]" for d in array_dims(v)) or None


def _nested_array(a, e):
    """ARRAY[ARRAY[...], ...] (and ARRAY[[...], ...]): the sub-arrays as one more
    dimension; they must all have the same dimensions (2202E), as in PostgreSQL 4.2.12.
    NULL sub-arrays are not allowed here (PostgreSQL skips them only when all are NULL)."""
    v = list(a)
    if any(x is None for x in v):
        raise SqlError("2202E", "multidimensional arrays must have array expressions with matching dimensions")
    if all(not x for x in v):
        return []
    array_dims(v)
    return v


register(
    Function("array", (), lambda a, e: list(a), lambda S, a, e: S.F.array(*a), strict=False, doc="4.2.12",
             samples=("array[i, k]",)),
    Function("subscript", (), lambda a, e: a[0][a[1] - 1] if 1 <= a[1] <= len(a[0]) else None,
             lambda S, a, e: S.F.when(a[1] >= 1, S.F.try_element_at(a[0], a[1])), doc="8.15.3",
             samples=("a[1]", "a[k]", "a[0]")),
    Function("array_nested", (), _nested_array, lambda S, a, e: S.F.array(*a), strict=False, doc="4.2.12"),
    Function("cardinality", (sig("anyarray", ret="int4"),), lambda a, e: _cardinality(a[0]),
             lambda S, a, e: S.F.size(a[0]), sql_names=("cardinality",), doc="9.19", samples=("cardinality(a)",)),
    Function("array_ndims", (sig("anyarray", ret="int4"),), lambda a, e: len(array_dims(a[0])) or None,
             lambda S, a, e: S.F.when(S.F.size(a[0]) > 0, S.F.lit(1)), sql_names=("array_ndims",), doc="9.19",
             samples=("array_ndims(a)",)),
    Function("array_dims", (sig("anyarray", ret="text"),), lambda a, e: _dims_text(a[0]),
             lambda S, a, e: S.F.when(S.F.size(a[0]) > 0, S.F.concat(S.F.lit("[1:"), S.F.size(a[0]).cast("string"),
                                                                     S.F.lit("]"))),
             sql_names=("array_dims",), doc="9.19", samples=("array_dims(a)",)),
    Function("array_length", (sig("anyarray", "int4", ret="int4"),), _dims("array_length"),
             lambda S, a, e: S.F.when((a[1] == 1) & (S.F.size(a[0]) > 0), S.F.size(a[0])),
             sql_names=("array_length",), doc="9.19", samples=("array_length(a, 1)", "array_length(a, 2)")),
    Function("array_upper", (sig("anyarray", "int4", ret="int4"),), _dims("array_upper"),
             lambda S, a, e: S.F.when((a[1] == 1) & (S.F.size(a[0]) > 0), S.F.size(a[0])),
             sql_names=("array_upper",), doc="9.19", samples=("array_upper(a, 1)",)),
    Function("array_lower", (sig("anyarray", "int4", ret="int4"),), _dims("array_lower"),
             lambda S, a, e: S.F.when((a[1] == 1) & (S.F.size(a[0]) > 0), S.F.lit(1)),
             sql_names=("array_lower",), doc="9.19", samples=("array_lower(a, 1)",)),
    Function("array_to_string", (sig("anyarray", "text", ret="text"), sig("anyarray", "text", "text", ret="text")),
             _to_string_py, _to_string_spark, sql_names=("array_to_string",), strict=False, doc="9.19",
             samples=("array_to_string(a, ',')", "array_to_string(a, ',', '*')")),
    Function("array_cat", (sig("anyarray", "anyarray", ret="anyarray"),), lambda a, e: None if a[0] is None and a[1] is None else (a[0] or []) + (a[1] or []),
             _cat_spark, sql_names=("array_cat",), strict=False, doc="9.19",
             samples=("a || a", "a || array[k]", "array_cat(a, array[k, 9])")),
    Function("array_append", (), lambda a, e: (a[0] or []) + [a[1]],
             lambda S, a, e: S.F.concat(S.F.coalesce(a[0], S.empty_array(e.type)), S.F.array(a[1])),
             strict=False, doc="9.19", samples=("a || k",)),
    Function("array_prepend", (), lambda a, e: [a[0]] + (a[1] or []),
             lambda S, a, e: S.F.concat(S.F.array(a[0]), S.F.coalesce(a[1], S.empty_array(e.type))),
             strict=False, doc="9.19", samples=("k || a",)),
    Function("array_position", (sig("anyarray", "anyelement", ret="int4"),), _position_py,
             _position_spark, sql_names=("array_position",), strict=False, doc="9.19",
             samples=("array_position(a, 2)", "array_position(a, k)")),
    *[Function(f"array_{kind}:{op}", (), _any_all_py, _any_all_spark, strict=False, doc="9.24.3",
               samples=(f"k {o} {kind[0:3].upper()} (a)",))
      for kind in ("any", "all") for op, o in zip(CMP, ("=", "<>", "<", "<=", ">", ">="))],
)


# -- generate_series over integers with column arguments (9.25) --------------------------


def _series_py(a, e):
    """start, start + step, ... while not past stop (PostgreSQL 9.25).

    Raises:
        SqlError 22023 for a zero step."""
    step = a[2] if len(a) > 2 else 1
    if step == 0:
        raise SqlError("22023", "step size cannot equal zero")
    return list(range(a[0], a[1] + (1 if step > 0 else -1), step))


def _series_spark(S, a, e):
    F = S.F
    start, stop = a[0], a[1]
    step = a[2] if len(a) > 2 else F.lit(1).cast(S.spark_type(e.type.element))
    empty = ((step > 0) & (start > stop)) | ((step < 0) & (start < stop))
    return (F.when(step == 0, S.fail("22023", "step size cannot equal zero"))
            .when(empty, S.empty_array(e.type)).otherwise(F.sequence(start, stop, step)))


def interval_sign(iv) -> int:
    """-1, 0 or 1: the sign of an interval as PostgreSQL compares intervals (a month is
    30 days, a day 24 hours: interval_cmp_value)."""
    total = (iv.months * 30 + iv.days) * 86_400_000_000 + iv.micros
    return (total > 0) - (total < 0)


def _time_series_py(a, e):
    """generate_series(start, stop, step interval) over timestamps: start, start + step,
    (start + step) + step, ... while not past stop (PostgreSQL 9.25, table 9.67).

    Raises:
        SqlError 22023 for a zero step."""
    from planner.functions.datetime import add_interval

    start, stop, step = a
    sign = interval_sign(step)
    if sign == 0:
        raise SqlError("22023", "step size cannot equal zero")
    out = []
    while (start <= stop) if sign > 0 else (start >= stop):
        out.append(start)
        start = add_interval(start, step)
    return out


def _time_series_spark(S, a, e):
    F = S.F
    step = constant_arg(e, 2, "generate_series needs a constant step interval")
    if step is None:
        return F.lit(None).cast(S.spark_type(e.type))
    sign = interval_sign(step)
    if sign == 0:
        raise SqlError("22023", "step size cannot equal zero")
    start, stop = a[0], a[1]
    empty = (start > stop) if sign > 0 else (start < stop)
    return F.when(empty, S.empty_array(e.type)).otherwise(F.sequence(start, stop, a[2]))


_TIMES = ("timestamp", "timestamptz")

register(
    *[Function(f"generate_series:{t}", (sig(t, t, ret=f"_{t}"), sig(t, t, t, ret=f"_{t}")), _series_py,
               _series_spark, doc="9.25") for t in ("int4", "int8")],
    *[Function(f"generate_series:{t}", (sig(t, t, "interval", ret=f"_{t}"),), _time_series_py,
               _time_series_spark, doc="9.25") for t in _TIMES],
    Function("generate_series", (sig("int4", "int4", ret="int4"), sig("int4", "int4", "int4", ret="int4"),
                                 sig("int8", "int8", ret="int8"), sig("int8", "int8", "int8", ret="int8"),
                                 *[sig(t, t, "interval", ret=t) for t in _TIMES]),
             None, None, sql_names=("generate_series",), kind="srf", doc="9.25",
             samples=("generate_series(1, k)", "generate_series(k, 1, -2)", "generate_series(i, 2)",
                      "generate_series(ts, ts + make_interval(hours => k), interval '90 minutes')",
                      "generate_series(d, d + k, interval '1 day')",
                      "generate_series(ts, ts - interval '2 days', interval '-12 hours')",
                      "generate_series(ts, ts, interval '0 days')"),
             differs="on table data a step with months is added to the start i times (Spark's sequence), not "
                     "step by step: from Jan 31 by one month, Mar 31 follows Feb 29 (PostgreSQL: Mar 29)",
             extra={"columns": (("generate_series", "generate_series:{type}"),)}),
)


# -- slices (8.15.3) ---------------------------------------------------------------------

#: the upper bound of ``a[lo:]`` (PostgreSQL: the array's own upper bound)
SLICE_END = 2147483647


def _slice_py(a, e):
    """``a[lo:hi]`` of a one-dimensional array with lower bound 1: the elements from
    max(lo, 1) to min(hi, length), ``{}`` when none (PostgreSQL 8.15.3)."""
    arr, lo, hi = a
    lo, hi = max(lo, 1), min(hi, len(arr))
    return arr[lo - 1:hi] if lo <= hi else []


def _slice_spark(S, a, e):
    F = S.F
    arr, lo, hi = a
    lo = F.greatest(lo, F.lit(1))
    hi = F.least(hi, F.size(arr))
    return F.when(arr.isNull() | lo.isNull() | hi.isNull(), F.lit(None)).when(
        lo <= hi, F.slice(arr, lo, hi - lo + 1)).otherwise(S.empty_array(e.type))


register(
    Function("array_slice", (), _slice_py, _slice_spark, doc="8.15.3",
             samples=("a[1:2]", "a[2:]", "a[:1]", "a[k:k + 1]", "a[0:10]", "a[3:1]")),
)


# -- array_remove, array_replace (9.19) -------------------------------------------------


def _remove_py(a, e):
    """Elements not equal to x (NULLs removed by NULL: IS NOT DISTINCT FROM)."""
    arr, x = a
    return None if arr is None else [v for v in arr if not (v == x if x is not None else v is None)]


def _replace_py(a, e):
    arr, x, y = a
    return None if arr is None else [y if (v == x if x is not None else v is None) else v for v in arr]


def _same(F, v, x):
    return F.when(x.isNull(), v.isNull()).otherwise(F.coalesce(v == x, F.lit(False)))


register(
    Function("array_remove", (sig("anyarray", "anyelement", ret="anyarray"),), _remove_py,
             lambda S, a, e: S.F.filter(a[0], lambda v: ~_same(S.F, v, a[1])), sql_names=("array_remove",),
             strict=False, doc="9.19", samples=("array_remove(a, 2)", "array_remove(a, NULL)", "array_remove(a, k)")),
    Function("array_replace", (sig("anyarray", "anyelement", "anyelement", ret="anyarray"),), _replace_py,
             lambda S, a, e: S.F.transform(a[0], lambda v: S.F.when(_same(S.F, v, a[1]), a[2]).otherwise(v)),
             sql_names=("array_replace",), strict=False, doc="9.19",
             samples=("array_replace(a, 2, 20)", "array_replace(a, NULL, k)", "array_replace(a, k, NULL)")),
)
