"""Array functions and operators (PostgreSQL 9.19) and ``op ANY/ALL (array)`` (9.24.3).
Arrays have lower bound 1. Values of several dimensions are nested lists in Python and
nested Spark arrays; tables hold one-dimensional arrays only, so on Spark an array's
dimensions are the plan's (``array_depth``: ARRAY[ARRAY[...]] and constants)."""

from __future__ import annotations

from catalog.errors import (
    SqlError, ARRAY_SUBSCRIPT_ERROR, DATA_EXCEPTION, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE,
    NULL_VALUE_NOT_ALLOWED, PROGRAM_LIMIT_EXCEEDED,
)
from catalog.textio import array_dims, format_text
from planner.functions.registry import IN_CONTEXT, Function, constant_arg, register, sig
from planner.functions.logic import CMP, order_key


INCOMPATIBLE = ARRAY_SUBSCRIPT_ERROR


def flatten(v: list) -> list:
    """The elements of an array value in storage order (row-major), whatever its
    dimensions: what unnest and ANY/ALL see (PostgreSQL 9.19, 9.24.3)."""
    out = []
    for x in v:
        out.extend(flatten(x) if isinstance(x, list) else (x,))
    return out


def array_depth(x) -> int:
    """The dimensions of the array that plan expression ``x`` computes, as the plan shows
    them: a constant's own, one more for ``ARRAY[ARRAY[...]]``, the larger operand's for
    ``||``; one for anything else (a column: tables hold one-dimensional arrays)."""
    kind = type(x).__name__
    if kind == "Literal":
        v, d = x.value, 1
        while isinstance(v, list) and v and isinstance(v[0], list):
            v, d = v[0], d + 1
        return d
    if kind == "Cast":
        return array_depth(x.expr)
    if kind == "Case":
        return max(array_depth(r) for r in [*(r for _, r in x.whens), x.else_])
    if kind == "Call":
        if x.func == "array_nested":
            return 1 + max(array_depth(a) for a in x.args)
        if x.func == "array_cat":
            return max(array_depth(a) for a in x.args)
    return 1


def _spark_flatten(S, c, depth: int):
    for _ in range(depth - 1):
        c = S.F.flatten(c)
    return c


def _spark_dims(S, c, depth: int) -> list:
    """Spark: the sizes of ``c``'s ``depth`` dimensions (read along its first elements;
    ``array_nested`` keeps arrays rectangular)."""
    out = []
    for _ in range(depth):
        out.append(S.F.size(c))
        c = S.F.try_element_at(c, S.F.lit(1))
    return out


def any_all(kind: str, op: str, x, values: list):
    """``x op ANY (values)`` (``kind`` any) or ``ALL``, in three-valued logic (PostgreSQL
    9.24.3, 9.23.4): a NULL comparison that decides nothing makes the answer NULL."""
    hits = [None if x is None or v is None else CMP[op](order_key(x), order_key(v)) for v in values]
    if kind == "any":
        return True if True in hits else (None if None in hits else False)
    return False if False in hits else (None if None in hits else True)


def _any_all_py(a, e):
    kind, op = e.func.split(":")
    return None if a[1] is None else any_all(kind.removeprefix("array_"), op, a[0], flatten(a[1]))


def _any_all_spark(S, a, e):
    kind, op = e.func.split(":")
    x = a[0]
    pred = lambda v: CMP[op](x, v)  # noqa: E731
    values = _spark_flatten(S, a[1], array_depth(e.args[1]))
    return S.F.exists(values, pred) if kind == "array_any" else S.F.forall(values, pred)


def _to_string_py(a, e, ctx):
    arr, sep = a[0], a[1]
    if arr is None or sep is None:
        return None
    null = a[2] if len(a) > 2 else None
    t = e.args[0].type.element
    fmt = ctx.guard.text
    return sep.join(format_text(v, t, fmt) if v is not None else null for v in flatten(arr)
                    if v is not None or null is not None)


def _to_string_spark(S, a, e):
    elem_t = e.args[0].type.element
    flat = _spark_flatten(S, a[0], array_depth(e.args[0]))
    as_text = S.F.transform(flat, lambda x: S.output_text(x, elem_t))
    return S.F.array_join(as_text, a[1], *(a[2:] and [a[2]]))


def _cat_py(a, e):
    """array_cat (``||`` of two arrays), PostgreSQL's rules (array_userfuncs.c): NULL or
    empty operands give the other; arrays of the same dimensions join along the first,
    and an array of one dimension fewer is one more element of the other.

    Raises:
        SqlError 2202E when the element dimensions do not match."""
    x, y = a
    if x is None or not x:
        return y if y is not None or x is None else x
    if y is None or not y:
        return x
    dx, dy = array_dims(x), array_dims(y)
    if len(dx) == len(dy) and dx[1:] == dy[1:]:
        return x + y
    if len(dx) == len(dy) + 1 and dx[1:] == dy:
        return x + [y]
    if len(dy) == len(dx) + 1 and dy[1:] == dx:
        return [x] + y
    raise SqlError(INCOMPATIBLE, "cannot concatenate incompatible arrays")


def _cat_spark(S, a, e):
    F = S.F
    x, y = a
    dx, dy = array_depth(e.args[0]), array_depth(e.args[1])
    fail = S.fail(INCOMPATIBLE, "cannot concatenate incompatible arrays")
    if dx == dy:
        sx, sy = _spark_dims(S, x, dx)[1:], _spark_dims(S, y, dy)[1:]
        joined = F.concat(x, y)
    elif abs(dx - dy) == 1:
        sx, sy = (_spark_dims(S, x, dx)[1:], _spark_dims(S, y, dy)) if dx > dy else \
            (_spark_dims(S, x, dx), _spark_dims(S, y, dy)[1:])
        joined = F.concat(x, F.array(y)) if dx > dy else F.concat(F.array(x), y)
    else:
        return F.when(x.isNull() & y.isNull(), F.lit(None)).otherwise(fail)
    same = F.lit(True)
    for p, q in zip(sx, sy):
        same = same & (p == q)
    if dx != dy:
        # the other operand alone has another Spark type (nested one level less)
        deep, flat = (x, y) if dx > dy else (y, x)
        gone = S.fail(FEATURE_NOT_SUPPORTED, "|| of an empty or NULL multidimensional array is not supported on table data")
        return (F.when(deep.isNull() & flat.isNull(), F.lit(None)).when(flat.isNull() | (F.size(flat) == 0), deep)
                .when(deep.isNull() | (F.size(deep) == 0), gone).when(same, joined).otherwise(fail))
    return (F.when(x.isNull() | (F.size(x) == 0), y).when(y.isNull() | (F.size(y) == 0), x)
            .when(same, joined).otherwise(fail))


def _one_dimensional(S, arr, e, i: int):
    """Spark: ``arr`` (argument ``i`` of ``e``), which array_append/array_prepend need
    empty or of one dimension (PostgreSQL: 22000 otherwise)."""
    if array_depth(e.args[i]) == 1:
        return S.F.coalesce(arr, S.empty_array(e.type))
    return S.F.when(arr.isNull() | (S.F.size(arr) == 0), S.empty_array(e.type)).otherwise(
        S.fail(DATA_EXCEPTION, "argument must be empty or one-dimensional array"))


def _append_py(arr, x, at_end: bool):
    """array_append / array_prepend (PostgreSQL 9.19).

    Raises:
        SqlError 22000 for an array of several dimensions."""
    arr = arr or []
    if any(isinstance(v, list) for v in arr):
        raise SqlError(DATA_EXCEPTION, "argument must be empty or one-dimensional array")
    return arr + [x] if at_end else [x] + arr


def _array_nested_spark(S, a, e):
    """Spark: ARRAY[ARRAY[...], ...], with ``_nested_array``'s rules: empty when every
    sub-array is NULL or empty, else all of the same dimensions."""
    F = S.F
    depth = max(array_depth(x) for x in e.args)
    first = _spark_dims(S, a[0], depth)
    ok, gone = F.lit(True), F.lit(True)
    for c in a:
        ok = ok & c.isNotNull()
        gone = gone & (c.isNull() | (F.size(c) == 0))
        for p, q in zip(first, _spark_dims(S, c, depth)):
            ok = ok & (p == q)
    whole = F.array(*a)
    return F.when(gone, F.filter(whole, lambda x: F.lit(False))).when(ok, whole).otherwise(
        S.fail(INCOMPATIBLE, "multidimensional arrays must have array expressions with matching dimensions"))


def _dims_spark(f):
    """Spark: array_length/array_upper/array_lower of dimension ``a[1]`` (the plan's
    dimensions, ``array_depth``)."""
    def spark(S, a, e):
        F = S.F
        sizes = _spark_dims(S, a[0], array_depth(e.args[0]))
        out = None
        for k, size in enumerate(sizes, 1):
            v = F.lit(1) if f == "array_lower" else size
            out = (F if out is None else out).when(a[1] == k, v)
        return F.when(F.size(a[0]) > 0, out)
    return spark


def _dims_text_spark(S, a, e):
    F = S.F
    sizes = _spark_dims(S, a[0], array_depth(e.args[0]))
    return F.when(F.size(a[0]) > 0, F.concat(*[F.concat(F.lit("[1:"), s.cast("string"), F.lit("]")) for s in sizes]))


def _one_dim_only(what: str):
    """PostgreSQL's 0A000 for array_position and array_remove of an array of several
    dimensions (array_userfuncs.c)."""
    return SqlError(FEATURE_NOT_SUPPORTED, f"{what} elements in multidimensional arrays is not supported"
                    if what == "searching for" else f"{what} elements from multidimensional arrays is not supported")


def _start_position(a) -> int:
    """array_position's start (its third argument, 1 without one).

    Raises:
        SqlError 22004 for a NULL start."""
    if len(a) < 3:
        return 1
    if a[2] is None:
        raise SqlError(NULL_VALUE_NOT_ALLOWED, "initial position must not be null")
    return a[2]


def _position_py(a, e):
    """The first position at or after the start whose element is not distinct from ``x``
    (NULL finds a NULL element), NULL when none is (PostgreSQL 9.19)."""
    arr, x = a[0], a[1]
    if arr is None:
        return None
    if any(isinstance(v, list) for v in arr):
        raise _one_dim_only("searching for")
    start = max(_start_position(a), 1)
    return next((i + 1 for i, v in enumerate(arr) if i + 1 >= start and (v == x if x is not None else v is None)
                 and (v is not None or x is None)), None)


def _position_spark(S, a, e):
    F = S.F
    if array_depth(e.args[0]) > 1:
        raise _one_dim_only("searching for")
    arr, x = a[0], a[1]
    start = a[2] if len(a) > 2 else F.lit(1)
    hits = F.transform(arr, lambda v, i: (i + 1 >= start) & F.when(x.isNull(), v.isNull()).otherwise(
        F.coalesce(v == x, F.lit(False))))
    p = F.array_position(hits, True).cast("int")
    found = F.when(p > 0, p)
    if len(a) > 2:
        found = F.when(start.isNull(), S.fail(NULL_VALUE_NOT_ALLOWED, "initial position must not be null")).otherwise(found)
    return F.when(arr.isNotNull(), found)


def _sort_py(a, e):
    """array_sort(array [, descending [, nulls_first]]): the first dimension sorted, NULLs
    first when ``nulls_first`` (by default: when descending) (PostgreSQL 18, 9.19)."""
    arr = a[0]
    desc = a[1] if len(a) > 1 else False
    nulls_first = a[2] if len(a) > 2 else desc
    if arr is None or desc is None or nulls_first is None:
        return None
    present = sorted((v for v in arr if v is not None), key=order_key, reverse=desc)
    nulls = [None] * (len(arr) - len(present))
    return nulls + present if nulls_first else present + nulls


def _sort_spark(S, a, e):
    F = S.F
    desc = a[1] if len(a) > 1 else F.lit(False)
    nulls_first = a[2] if len(a) > 2 else desc

    def compare(left, right):
        before = F.when(nulls_first, -1).otherwise(1)
        order = F.when(left < right, -1).when(left > right, 1).otherwise(0)
        return (F.when(left.isNull() & right.isNull(), 0).when(left.isNull(), before).when(right.isNull(), -before)
                .otherwise(F.when(desc, -order).otherwise(order)))
    return F.when(desc.isNotNull() & nulls_first.isNotNull(), F.array_sort(a[0], compare))


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
    NULL and empty sub-arrays make an empty array when all are so, else 2202E
    (PostgreSQL's ExecEvalArrayExpr)."""
    v = list(a)
    if all(not x for x in v):
        return []
    if any(not x for x in v):
        raise SqlError(INCOMPATIBLE, "multidimensional arrays must have array expressions with matching dimensions")
    array_dims(v)
    return v


register(
    Function("array", (), lambda a, e: list(a), lambda S, a, e: S.F.array(*a), strict=False, doc="4.2.12",
             samples=("array[i, k]",)),
    Function("subscript", (), lambda a, e: a[0][a[1] - 1] if 1 <= a[1] <= len(a[0]) else None,
             lambda S, a, e: S.F.when(a[1] >= 1, S.F.try_element_at(a[0], a[1])), doc="8.15.3",
             samples=("a[1]", "a[k]", "a[0]")),
    Function("array_nested", (), _nested_array, _array_nested_spark, strict=False, doc="4.2.12"),
    Function("array_flatten", (), lambda a, e: flatten(a[0]),
             lambda S, a, e: _spark_flatten(S, a[0], array_depth(e.args[0])), doc="9.19"),
    Function("cardinality", (sig("anyarray", ret="int4"),), lambda a, e: _cardinality(a[0]),
             lambda S, a, e: S.F.size(_spark_flatten(S, a[0], array_depth(e.args[0]))), sql_names=("cardinality",),
             doc="9.19", samples=("cardinality(a)", "cardinality(array[a, a])")),
    Function("array_ndims", (sig("anyarray", ret="int4"),), lambda a, e: len(array_dims(a[0])) or None,
             lambda S, a, e: S.F.when(S.F.size(a[0]) > 0, S.F.lit(array_depth(e.args[0]))),
             sql_names=("array_ndims",), doc="9.19", samples=("array_ndims(a)", "array_ndims(array[a, a])")),
    Function("array_dims", (sig("anyarray", ret="text"),), lambda a, e: _dims_text(a[0]), _dims_text_spark,
             sql_names=("array_dims",), doc="9.19", samples=("array_dims(a)", "array_dims(array[a, a, a])")),
    Function("array_length", (sig("anyarray", "int4", ret="int4"),), _dims("array_length"),
             _dims_spark("array_length"), sql_names=("array_length",), doc="9.19",
             samples=("array_length(a, 1)", "array_length(a, 2)", "array_length(array[a, a, a], 2)",
                      "array_length(array[a, a, a], k)")),
    Function("array_upper", (sig("anyarray", "int4", ret="int4"),), _dims("array_upper"),
             _dims_spark("array_upper"), sql_names=("array_upper",), doc="9.19",
             samples=("array_upper(a, 1)", "array_upper(array[a, a, a], 2)")),
    Function("array_lower", (sig("anyarray", "int4", ret="int4"),), _dims("array_lower"),
             _dims_spark("array_lower"), sql_names=("array_lower",), doc="9.19",
             samples=("array_lower(a, 1)", "array_lower(array[a, a], k)")),
    Function("array_to_string", (sig("anyarray", "text", ret="text"), sig("anyarray", "text", "text", ret="text")),
             _to_string_py, _to_string_spark, sql_names=("array_to_string",), strict=False, doc="9.19",
             samples=("array_to_string(a, ',')", "array_to_string(a, ',', '*')"), extra=IN_CONTEXT),
    Function("array_cat", (sig("anyarray", "anyarray", ret="anyarray"),), _cat_py,
             _cat_spark, sql_names=("array_cat",), strict=False, doc="9.19",
             samples=("a || a", "a || array[k]", "array_cat(a, array[k, 9])", "array[a, a] || a",
                      "a || array[a, a]", "array[a, a] || array[a]", "array[a, a] || array[k]")),
    Function("array_append", (sig("anyarray", "anycompatible", ret="anyarray"),),
             lambda a, e: _append_py(a[0], a[1], True),
             lambda S, a, e: S.F.concat(_one_dimensional(S, a[0], e, 0), S.F.array(a[1])),
             sql_names=("array_append",), strict=False, doc="9.19",
             samples=("a || k", "array[a, a] || k", "array_append(a, k)", "array_append(a, NULL)")),
    Function("array_prepend", (sig("anycompatible", "anyarray", ret="anyarray"),),
             lambda a, e: _append_py(a[1], a[0], False),
             lambda S, a, e: S.F.concat(S.F.array(a[0]), _one_dimensional(S, a[1], e, 1)),
             sql_names=("array_prepend",), strict=False, doc="9.19", samples=("k || a", "array_prepend(k, a)")),
    Function("array_position", (sig("anyarray", "anyelement", ret="int4"),
                                sig("anyarray", "anyelement", "int4", ret="int4")), _position_py,
             _position_spark, sql_names=("array_position",), strict=False, doc="9.19",
             samples=("array_position(a, 2)", "array_position(a, k)", "array_position(a, NULL)",
                      "array_position(a || a, 2, 2)", "array_position(a || a, i, k)",
                      "array_position(a, 1, -5)", "array_position(a, 1, NULL)")),
    Function("array_sort", (sig("anyarray", ret="anyarray"), sig("anyarray", "bool", ret="anyarray"),
                            sig("anyarray", "bool", "bool", ret="anyarray")), _sort_py, _sort_spark,
             sql_names=("array_sort",), doc="9.19",
             samples=("array_sort(a || ARRAY[k, NULL, 2])", "array_sort(a || ARRAY[k, NULL, 2], true)",
                      "array_sort(a || ARRAY[k, NULL], false, true)", "array_sort(a || ARRAY[k, NULL], b, false)",
                      "array_sort(ARRAY[s, 'b', 'A'])")),
    *[Function(f"array_{kind}:{op}", (), _any_all_py, _any_all_spark, strict=False, doc="9.24.3",
               samples=(f"k {o} {kind[0:3].upper()} (a)", f"k {o} {kind[0:3].upper()} (array[a, array[3, k]])"))
      for kind in ("any", "all") for op, o in zip(CMP, ("=", "<>", "<", "<=", ">", ">="))],
)


# -- generate_series over integers with column arguments (9.25) --------------------------


def _series_py(a, e):
    """start, start + step, ... while not past stop (PostgreSQL 9.25).

    Raises:
        SqlError 22023 for a zero step."""
    step = a[2] if len(a) > 2 else 1
    if step == 0:
        raise SqlError(INVALID_PARAMETER_VALUE, "step size cannot equal zero")
    return list(range(a[0], a[1] + (1 if step > 0 else -1), step))


def _series_spark(S, a, e):
    F = S.F
    start, stop = a[0], a[1]
    step = a[2] if len(a) > 2 else F.lit(1).cast(S.spark_type(e.type.element))
    empty = ((step > 0) & (start > stop)) | ((step < 0) & (start < stop))
    return (F.when(step == 0, S.fail(INVALID_PARAMETER_VALUE, "step size cannot equal zero"))
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
        raise SqlError(INVALID_PARAMETER_VALUE, "step size cannot equal zero")
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
        raise SqlError(INVALID_PARAMETER_VALUE, "step size cannot equal zero")
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
    if arr is not None and any(isinstance(v, list) for v in arr):
        raise _one_dim_only("removing")
    return None if arr is None else [v for v in arr if not (v == x if x is not None else v is None)]


def _replace_py(a, e):
    """array_replace, element by element at any depth (PostgreSQL keeps the dimensions)."""
    arr, x, y = a

    def swap(v):
        return [swap(u) for u in v] if isinstance(v, list) else y if (v == x if x is not None else v is None) else v
    return None if arr is None else swap(arr)


def _one_dim_spark(S, e, what: str, f):
    """Spark: ``f()``, for a one-dimensional array argument; 0A000 for several (the
    lowering's element lambdas see scalars only)."""
    if array_depth(e.args[0]) > 1:
        if what == "replacing":
            raise SqlError(FEATURE_NOT_SUPPORTED, "array_replace of a multidimensional array is not supported on table data")
        raise _one_dim_only(what)
    return f()


def _same(F, v, x):
    return F.when(x.isNull(), v.isNull()).otherwise(F.coalesce(v == x, F.lit(False)))


register(
    Function("array_remove", (sig("anyarray", "anyelement", ret="anyarray"),), _remove_py,
             lambda S, a, e: _one_dim_spark(S, e, "removing", lambda: S.F.filter(a[0], lambda v: ~_same(S.F, v, a[1]))),
             sql_names=("array_remove",),
             strict=False, doc="9.19", samples=("array_remove(a, 2)", "array_remove(a, NULL)", "array_remove(a, k)")),
    Function("array_replace", (sig("anyarray", "anyelement", "anyelement", ret="anyarray"),), _replace_py,
             lambda S, a, e: _one_dim_spark(S, e, "replacing", lambda: S.F.transform(
                 a[0], lambda v: S.F.when(_same(S.F, v, a[1]), a[2]).otherwise(v))),
             sql_names=("array_replace",), strict=False, doc="9.19",
             samples=("array_replace(a, 2, 20)", "array_replace(a, NULL, k)", "array_replace(a, k, NULL)")),
)


# -- array_positions, trim_array (9.19) ------------------------------------------------------


def _positions_py(a, e):
    arr, x = a[0], a[1]
    if arr is None:
        return None
    if any(isinstance(v, list) for v in arr):
        raise _one_dim_only("searching for")
    return [i + 1 for i, v in enumerate(arr) if (v is None and x is None) or (v is not None and v == x)]


def _positions_spark(S, a, e):
    F = S.F
    if array_depth(e.args[0]) > 1:
        raise _one_dim_only("searching for")
    hits = F.transform(a[0], lambda v, i: F.when(v.eqNullSafe(a[1]), i + 1))
    return F.filter(hits, lambda i: i.isNotNull())


def _trim_py(a, e):
    arr, n = a
    if any(isinstance(v, list) for v in arr):
        raise SqlError(FEATURE_NOT_SUPPORTED, "trim_array of a multidimensional array is not supported")
    if not 0 <= n <= len(arr):
        raise SqlError(ARRAY_SUBSCRIPT_ERROR, f"number of elements to trim must be between 0 and {len(arr)}")
    return arr[:len(arr) - n]


def _trim_spark(S, a, e):
    F = S.F
    if array_depth(e.args[0]) > 1:
        raise SqlError(FEATURE_NOT_SUPPORTED, "trim_array of a multidimensional array is not supported")
    arr, n = a
    size = F.size(arr)
    return (F.when(arr.isNull() | n.isNull(), F.lit(None).cast(S.spark_type(e.type)))
            .when((n < 0) | (n > size), S.fail(ARRAY_SUBSCRIPT_ERROR, "number of elements to trim must be between 0 and the "
                                                         "array's length"))
            .otherwise(F.slice(arr, 1, size - n)))


register(
    Function("array_positions", (sig("anyarray", "anycompatible", ret="_int4"),), _positions_py, _positions_spark,
             sql_names=("array_positions",), strict=False, doc="9.19",
             samples=("array_positions(a, 2)", "array_positions(a || a, k)", "array_positions(a, NULL)")),
    Function("trim_array", (sig("anyarray", "int4", ret="anyarray"),), _trim_py, _trim_spark,
             sql_names=("trim_array",), doc="9.19",
             differs="an array of several dimensions is refused (0A000); the error's message does not give the "
                     "length on table data",
             samples=("trim_array(a, 1)", "trim_array(a, 0)", "trim_array(a || a, k - 1)")),
)


# -- array containment and overlap (9.19, table 9.56), array_reverse -------------------------


def _holds(a: list, b: list) -> bool:
    """Every element of ``b`` is in ``a``; NULLs are equal to nothing (array_contain_compare)."""
    inside = [x for x in flatten(a) if x is not None]
    return all(y is not None and any(x == y for x in inside) for y in flatten(b))


def _overlap_py(a, e):
    inside = [x for x in flatten(a[0]) if x is not None]
    return any(y is not None and any(x == y for x in inside) for y in flatten(a[1]))


def _array_set_spark(kind: str):
    """@> (``contains``), <@ (``contained``) and && (``overlap``) on Spark, over
    one-dimensional arrays."""
    def spark(S, a, e):
        F = S.F
        if any(array_depth(x) > 1 for x in e.args):
            raise SqlError(FEATURE_NOT_SUPPORTED, "array containment of multidimensional arrays is not supported on table data")
        whole, part = (a[1], a[0]) if kind == "contained" else (a[0], a[1])

        def found(y):
            return F.coalesce(F.array_contains(whole, y), F.lit(False))
        test = F.exists(part, found) if kind == "overlap" else F.forall(part, found)
        return F.when(a[0].isNotNull() & a[1].isNotNull(), test)
    return spark


def _reverse_py(a, e):
    if any(isinstance(v, list) for v in a[0]):
        raise SqlError(FEATURE_NOT_SUPPORTED, "array_reverse of a multidimensional array is not supported")
    return a[0][::-1]


def _reverse_spark(S, a, e):
    if array_depth(e.args[0]) > 1:
        raise SqlError(FEATURE_NOT_SUPPORTED, "array_reverse of a multidimensional array is not supported")
    return S.F.reverse(a[0])


register(
    Function("array_contains", (), lambda a, e: _holds(a[0], a[1]), _array_set_spark("contains"), doc="9.19",
             samples=("a @> ARRAY[1]", "a @> ARRAY[k]", "a @> '{}'", "ARRAY[1, 2, 3, 4, 7] @> a",
                      "a @> ARRAY[NULL::int]")),
    Function("array_contained", (), lambda a, e: _holds(a[1], a[0]), _array_set_spark("contained"), doc="9.19",
             samples=("a <@ ARRAY[1, 2, 3, 4, 7]", "ARRAY[k] <@ a")),
    Function("array_overlap", (), _overlap_py, _array_set_spark("overlap"), doc="9.19",
             samples=("a && ARRAY[2, 7]", "a && ARRAY[k, NULL]", "a && '{}'")),
    Function("array_reverse", (sig("anyarray", ret="anyarray"),), _reverse_py, _reverse_spark,
             sql_names=("array_reverse",), doc="9.19", differs="an array of several dimensions is refused (0A000)",
             samples=("array_reverse(a)", "array_reverse(a || k)")),
)


# -- width_bucket over thresholds, array_fill, array_shuffle, array_sample (9.3, 9.19) -------


def _thresholds_check(th: list) -> None:
    if any(isinstance(v, list) for v in th):
        raise SqlError(ARRAY_SUBSCRIPT_ERROR, "thresholds must be one-dimensional array")
    if any(v is None for v in th):
        raise SqlError(NULL_VALUE_NOT_ALLOWED, "thresholds array must not contain NULLs")


def _width_bucket_array_py(a, e):
    """``width_bucket(x, thresholds)`` (PostgreSQL 9.3, table 9.5): the number of the bucket
    of ``x`` among buckets with the given lower bounds, by PostgreSQL's binary search
    (width_bucket_array): ``bisect_right``'s, the same steps even when the thresholds are
    not sorted."""
    import bisect

    x, th = a
    _thresholds_check(th)
    return bisect.bisect_right(th, x)


def _width_bucket_array_spark(S, a, e):
    F = S.F
    if array_depth(e.args[1]) > 1:
        raise SqlError(ARRAY_SUBSCRIPT_ERROR, "thresholds must be one-dimensional array")
    x, th = a
    n = F.size(th)

    def step(acc, _):  # one halving of [lo, hi) as width_bucket_array does it, a no-op once empty
        lo, hi = acc["lo"], acc["hi"]
        mid = F.shiftright(lo + hi, 1)
        below = x < F.get(th, mid)
        return F.when(lo >= hi, acc).when(below, F.struct(lo.alias("lo"), mid.alias("hi"))).otherwise(
            F.struct((mid + 1).alias("lo"), hi.alias("hi")))

    found = F.aggregate(F.sequence(F.lit(0), n), F.struct(F.lit(0).alias("lo"), n.alias("hi")), step,
                        lambda acc: acc["lo"])
    return (F.when(x.isNull() | th.isNull(), F.lit(None).cast("int"))
            .when(F.exists(th, lambda v: v.isNull()), S.fail(NULL_VALUE_NOT_ALLOWED, "thresholds array must not contain NULLs"))
            .otherwise(found))


def _fill_dims(dims, lbounds) -> None:
    """array_fill's checks of its dimensions and lower bounds (arrayfuncs.c array_fill_internal),
    for the one-dimensional arrays sqlfront holds.

    Raises:
        SqlError 22004 for NULLs; 2202E for lower bounds not matching the dimensions; 54000
        for a negative length; 0A000 for several dimensions or a lower bound other than 1."""
    if dims is None or lbounds is None:
        raise SqlError(NULL_VALUE_NOT_ALLOWED, "dimension array or low bound array cannot be null")
    if any(d is None for d in (*dims, *lbounds)):
        raise SqlError(NULL_VALUE_NOT_ALLOWED, "dimension values cannot be null")
    if lbounds is not _NO_LBOUNDS and len(lbounds) != len(dims):
        raise SqlError(ARRAY_SUBSCRIPT_ERROR, "wrong number of array subscripts",
                       detail="Low bound array has different size than dimensions array.")
    if len(dims) > 1:
        raise SqlError(FEATURE_NOT_SUPPORTED, "array_fill of more than one dimension is not supported")
    if dims and dims[0] < 0:
        raise SqlError(PROGRAM_LIMIT_EXCEEDED, "array size exceeds the maximum allowed (134217727)")
    if lbounds is not _NO_LBOUNDS and dims and lbounds[0] != 1:
        raise SqlError(FEATURE_NOT_SUPPORTED, "arrays with a lower bound other than 1 are not supported")


#: array_fill called without lower bounds
_NO_LBOUNDS = ()


def _array_fill_py(a, e):
    """``array_fill(value, dims [, lbounds])`` (PostgreSQL 9.19, table 9.67): an array of
    ``dims[1]`` copies of ``value`` (which may be NULL); one dimension, lower bound 1."""
    value, dims = a[0], a[1]
    lbounds = a[2] if len(a) > 2 else _NO_LBOUNDS
    _fill_dims(dims, lbounds)
    return [value] * dims[0] if dims else []


def _array_fill_spark(S, a, e):
    F = S.F
    value, dims = a[0], a[1]
    out = F.array_repeat(value, F.coalesce(F.get(dims, 0), F.lit(0)))
    checks = F.when(dims.isNull(), S.fail(NULL_VALUE_NOT_ALLOWED, "dimension array or low bound array cannot be null")).when(
        F.exists(dims, lambda d: d.isNull()), S.fail(NULL_VALUE_NOT_ALLOWED, "dimension values cannot be null"))
    if len(a) > 2:
        lb = a[2]
        checks = checks.when(lb.isNull(), S.fail(NULL_VALUE_NOT_ALLOWED, "dimension array or low bound array cannot be null")).when(
            F.exists(lb, lambda d: d.isNull()), S.fail(NULL_VALUE_NOT_ALLOWED, "dimension values cannot be null")).when(
            F.size(lb) != F.size(dims), S.fail(ARRAY_SUBSCRIPT_ERROR, "wrong number of array subscripts")).when(
            (F.size(dims) == 1) & (F.get(lb, 0) != 1),
            S.fail(FEATURE_NOT_SUPPORTED, "arrays with a lower bound other than 1 are not supported"))
    return (checks.when(F.size(dims) > 1, S.fail(FEATURE_NOT_SUPPORTED, "array_fill of more than one dimension is not supported"))
            .when(F.get(dims, 0) < 0, S.fail(PROGRAM_LIMIT_EXCEEDED, "array size exceeds the maximum allowed (134217727)"))
            .otherwise(out))


def _several_dims(name: str) -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, f"{name} of a multidimensional array is not supported")


def _sample_size(n: int, size: int) -> None:
    if not 0 <= n <= size:
        raise SqlError(INVALID_PARAMETER_VALUE, f"sample size must be between 0 and {size}")


def _array_sample_py(a, e):
    import random

    arr, n = a
    if any(isinstance(v, list) for v in arr):
        raise _several_dims("array_sample")
    _sample_size(n, len(arr))
    return random.sample(arr, n)


def _array_shuffle_py(a, e):
    import random

    arr = list(a[0])
    if any(isinstance(v, list) for v in arr):
        raise _several_dims("array_shuffle")
    random.shuffle(arr)
    return arr


def _array_sample_spark(S, a, e):
    F = S.F
    if array_depth(e.args[0]) > 1:
        raise _several_dims("array_sample")
    arr, n = a
    return F.when((n < 0) | (n > F.size(arr)), S.fail(INVALID_PARAMETER_VALUE, "sample size must be between 0 and the array's "
                                                                 "length")).otherwise(F.slice(F.shuffle(arr), 1, n))


def _array_shuffle_spark(S, a, e):
    if array_depth(e.args[0]) > 1:
        raise _several_dims("array_shuffle")
    return S.F.shuffle(a[0])


register(
    Function("width_bucket_array", (sig("anycompatible", "anyarray", ret="int4"),), _width_bucket_array_py,
             _width_bucket_array_spark, sql_names=("width_bucket",), doc="9.3",
             samples=("width_bucket(i, ARRAY[-5, 0, 1, 40])", "width_bucket(f, ARRAY[0.5, 1.5, 1e10])",
                      "width_bucket(n, ARRAY[1, 2.25, 3])", "width_bucket(k, a)", "width_bucket(k, ARRAY[5, 1, 3])",
                      "width_bucket(k, ARRAY[1, NULL, 4])", "width_bucket(d, ARRAY[date '2000-01-01', '2024-01-01'])",
                      "width_bucket(s, ARRAY['a', 'b'])")),
    Function("array_fill", (sig("anyelement", "_int4", ret="anyarray"),
                            sig("anyelement", "_int4", "_int4", ret="anyarray")),
             _array_fill_py, _array_fill_spark, sql_names=("array_fill",), strict=False, doc="9.19",
             differs="one dimension and a lower bound of 1 only: more dimensions or another lower bound are 0A000",
             samples=("array_fill(k, ARRAY[i])", "array_fill(s, ARRAY[k])", "array_fill(NULL::int, ARRAY[k])",
                      "array_fill(k, ARRAY[2], ARRAY[1])", "array_fill(k, '{}')", "array_fill(k, NULL)",
                      "array_fill(k, ARRAY[NULL::int])", "array_fill(k, ARRAY[2], ARRAY[1, 2])",
                      "array_fill(k, ARRAY[k - 4])")),
    Function("array_sample", (sig("anyarray", "int4", ret="anyarray"),), _array_sample_py, _array_sample_spark,
             sql_names=("array_sample",), volatility="volatile", doc="9.19",
             differs="an array of several dimensions is refused (0A000), where PostgreSQL samples its subarrays",
             samples=("cardinality(array_sample(a, 1))", "array_sample(a, 0)", "array_sample(a, 5)",
                      "array_sort(array_sample(a, cardinality(a)))")),
    Function("array_shuffle", (sig("anyarray", ret="anyarray"),), _array_shuffle_py, _array_shuffle_spark,
             sql_names=("array_shuffle",), volatility="volatile", doc="9.19",
             differs="an array of several dimensions is refused (0A000), where PostgreSQL shuffles its subarrays",
             samples=("array_sort(array_shuffle(a))", "cardinality(array_shuffle(a || a))")),
)
