"""Aggregate functions (PostgreSQL 9.21), with ``FILTER``, ``DISTINCT`` and ``ORDER BY``
(4.2.7) and the ordered-set aggregates of ``WITHIN GROUP``.

An aggregate's ``py(values, agg, params)`` gets the values of its argument over the
group, already filtered (FILTER), ordered (its ORDER BY or WITHIN GROUP), without NULLs
when the aggregate is strict, and de-duplicated (DISTINCT); ``params`` are its extra
arguments (``string_agg``'s delimiter, a percentile's fraction), evaluated once. Its
``spark(S, x, agg)`` gets the argument column with FILTER already applied (NULL where the
filter fails) and uses ``S.ordered_values(agg)`` for an ordered array of the values.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext

from catalog.errors import (
    SqlError, ARRAY_SUBSCRIPT_ERROR, DUPLICATE_JSON_OBJECT_KEY_VALUE, FEATURE_NOT_SUPPORTED,
    INVALID_PARAMETER_VALUE, NULL_VALUE_NOT_ALLOWED, NUMERIC_VALUE_OUT_OF_RANGE,
)
from catalog.textio import array_dims
from catalog.types import SqlType, BYTEA, INT4, INT8, NUMERIC, FLOAT8, INTERVAL, BOOL, TEXT, JSONB, array_of
from planner.functions.registry import AGGREGATES, FUNCTIONS, IN_CONTEXT, Function, register, undefined_function
from planner.functions.math import numeric_div, numeric_div_scale, static_scale
from planner.functions.logic import order_key

#: Spark decimals have one scale per column, PostgreSQL's numerics one per value: numeric
#: results whose scale PostgreSQL derives from the value get this many decimals on Spark.
SPARK_DIV_SCALE = 16


class AggSig:
    """Result type of an aggregate from its argument type; None if it does not apply."""

    def __init__(self, f):
        self.f = f


def _sum_type(a: SqlType):
    if a.name in ("int2", "int4"):
        return a, INT8
    if a.name in ("int8", "numeric"):
        return a, NUMERIC
    if a.name in ("float4", "float8", "interval"):
        return a, a
    return None


def _avg_type(a: SqlType):
    if a.name in ("int2", "int4", "int8", "numeric"):
        return a, NUMERIC
    if a.name in ("float4", "float8"):
        return a, FLOAT8
    if a.name == "interval":
        return a, INTERVAL
    return None


def _minmax_type(a: SqlType):
    if a.name == "bool" or a.name == "jsonb":
        return None
    return a, a.unconstrained() if a.name in ("varchar", "bpchar") else a


def _minmax_spark(f: str):
    """Spark's min/max, or, for arrays, lists and maps (whose NULL elements sort last and
    which Spark orders otherwise or not at all), the value of the least/greatest
    ``sort_key`` (``spark_exec.lower.sort_key``)."""
    def spark(S, x, a):
        t = a.arg.type
        if t.is_array or t.is_list or t.is_map:
            return (S.F.min_by if f == "min" else S.F.max_by)(x, S.sort_key(x, t))
        return getattr(S.F, f)(x)
    return spark


def _stat_type(a: SqlType):
    if a.name in ("int2", "int4", "int8", "numeric"):
        return NUMERIC, NUMERIC
    if a.name in ("float4", "float8"):
        return FLOAT8, FLOAT8
    return None


def _sum(vals, a, p):
    if not vals:
        return None
    s = sum(vals[1:], vals[0])
    return Decimal(s) if a.type.name == "numeric" else s


def _avg(vals, a, p):
    if not vals:
        return None
    if a.type.name == "float8":
        return float(sum(vals)) / len(vals)
    if a.type.name == "interval":
        from planner.functions.datetime import datetime_arith
        return datetime_arith("div", sum(vals[1:], vals[0]), len(vals), INTERVAL, INTERVAL)
    return numeric_div(Decimal(sum(vals)), Decimal(len(vals)))


def numeric_variance(n: int, sx: Decimal, sx2: Decimal, sample: bool, root: bool) -> Decimal | None:
    """PostgreSQL's numeric_stddev_internal (numeric.c): the variance (``root``: the
    standard deviation) of ``n`` values whose sum is ``sx`` and sum of squares ``sx2``
    (exact, each at its display scale: the inputs' largest, twice that), ``sample`` or
    population. The numerator N*sum(x^2) - sum(x)^2 is exact; the variance is rounded
    (half away from zero) to ``select_div_scale`` of numerator and denominator, and the
    root is taken of that rounded variance at the same scale. A numerator <= 0 gives 0
    (PostgreSQL's guard against round-off); None (NULL) for no values, or one sample."""
    if n == 0 or (sample and n == 1):
        return None
    with localcontext() as ctx:
        ctx.prec = 1100
        num = n * sx2 - sx * sx
        if num <= 0:
            return Decimal(0)
        den = Decimal(n * (n - 1) if sample else n * n)
        quantum = Decimal(1).scaleb(-numeric_div_scale(num, den))
        var = (num / den).quantize(quantum, rounding=ROUND_HALF_UP)
        return var.sqrt().quantize(quantum, rounding=ROUND_HALF_UP) if root else var


def float_accum(xs) -> tuple[float, float, float]:
    """PostgreSQL's float8_accum over the values ``xs`` in their order (float.c: the
    Youngs-Cramer algorithm): (N, Sx, Sxx), Sxx the sum of squared deviations from the
    mean. An infinite or NaN input makes Sxx NaN.

    Raises:
        SqlError 22003 when finite inputs overflow Sx or Sxx."""
    n = sx = sxx = 0.0
    for x in xs:
        old_n, old_sx = n, sx
        n += 1.0
        sx += x
        if old_n > 0.0:
            tmp = x * n - sx
            sxx += tmp * tmp / (n * old_n)
            if math.isinf(sx) or math.isinf(sxx):
                if not math.isinf(old_sx) and not math.isinf(x):
                    raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")
                sxx = math.nan
        elif math.isnan(x) or math.isinf(x):
            sxx = math.nan
    return n, sx, sxx


def _float_variance_final(n, sxx, sample: bool, root: bool, sqrt=math.sqrt):
    """float8_var_samp/var_pop/stddev_samp/stddev_pop (float.c) of ``float_accum``'s N and
    Sxx (at least two values for a sample, one for a population: the caller checks);
    ``sqrt`` the engine's square root (Python floats or Spark columns: one rule for both)."""
    var = sxx / (n - 1.0) if sample else sxx / n
    return sqrt(var) if root else var


def _float_accum_spark(S, x):
    """``float_accum`` on Spark: the same steps over the group's values in input order
    (collected in the order Spark reads them), so the answers agree to the last digit;
    Spark's own stddev/variance merge partial moments, another rounding. A struct
    (n, sx, sxx) of doubles."""
    F = S.F
    zero = F.lit(0.0).cast("double")
    start = F.struct(zero.alias("n"), zero.alias("sx"), zero.alias("sxx"))

    def step(s, v):
        n, sx = s["n"] + 1.0, s["sx"] + v
        tmp = v * n - sx
        grown = s["sxx"] + tmp * tmp / F.when(s["n"] > 0, n * s["n"]).otherwise(1.0)
        inf = float("inf")
        later = F.when((F.abs(sx) == inf) | (F.abs(grown) == inf), F.when(
            (F.abs(s["sx"]) != inf) & (F.abs(v) != inf),
            S.fail(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")).otherwise(F.lit(math.nan))
        ).otherwise(grown)
        first = F.when(F.isnan(v) | (F.abs(v) == inf), F.lit(math.nan)).otherwise(s["sxx"])
        return F.struct(n.alias("n"), sx.alias("sx"), F.when(s["n"] > 0, later).otherwise(first).alias("sxx"))

    return F.aggregate(F.collect_list(x.cast("double")), start, step)


def _variance(sample: bool, root: bool):
    def py(vals, a, p):
        n = len(vals)
        if n == 0 or (sample and n == 1):
            return None
        if a.type.name == "float8":
            n, _, sxx = float_accum(float(v) for v in vals)
            return _float_variance_final(n, sxx, sample, root)
        with localcontext() as ctx:
            ctx.prec = 1100
            xs = [Decimal(v) for v in vals]
            return numeric_variance(n, sum(xs), sum(x * x for x in xs), sample, root)
    return py


#: decimal digits of each piece a numeric's unscaled value is cut into on Spark for an
#: exact sum of squares (``_variance_text``): three pieces cover a decimal(38, s), a
#: product of two pieces has at most 26 digits, and a sum of them fits decimal(38, 0)
_PIECE = 13


def _variance_from_sums(a, e) -> Decimal | None:
    """numeric_variance from the sums ``_variance_text`` keeps on Spark: the count, the
    scale s of the values on Spark and their display scale (the largest of the values'
    own: PostgreSQL's sums keep it), sample and root, the sums of the three pieces of the values'
    unscaled integers (least significant first) and the five sums of the pieces'
    products (of pieces i and j into i + j)."""
    n, scale, dscale, sample, root, *sums = a
    with localcontext() as ctx:
        ctx.prec = 1100
        sx = sum(Decimal(v) * 10 ** (_PIECE * k) for k, v in enumerate(sums[:3]))
        sx2 = sum(Decimal(v) * 10 ** (_PIECE * k) for k, v in enumerate(sums[3:]))
        if dscale is None:
            dscale = scale
        # at the values' display scale (the digits below it are zeros)
        sx = sx.scaleb(-scale).quantize(Decimal(1).scaleb(-dscale))
        sx2 = sx2.scaleb(-2 * scale).quantize(Decimal(1).scaleb(-2 * dscale))
        return numeric_variance(n, sx, sx2, sample, root)


def _variance_text(sample: bool, root: bool):
    """PostgreSQL's text of a numeric variance or standard deviation on Spark: Spark sums
    exactly (the count; the values cut into pieces of their unscaled integers, from
    their text at the argument's scale, and the pieces' products), and the replica's
    Python finishes with ``numeric_variance``, the interpreter's rule. The argument's
    scale is its static one (``static_scale``: an integer's 0, a numeric(p, s)'s s),
    else the unconstrained numeric's stored one (``catalog.types.UNCONSTRAINED_NUMERIC``);
    the sums are taken at the values' display scale (``Lowerer.value_scale``), as
    PostgreSQL's are."""
    def text(S, x, a):
        from planner.scalar import Call, Literal

        F, T = S.F, S.T
        scale = static_scale(a.arg)
        if scale is None:
            scale = a.arg.type.storage_precision_scale()[1]
        digits = x.cast(T.DecimalType(38, scale)).cast("string")
        padded = F.lpad(F.regexp_replace(digits, "[-.]", ""), 3 * _PIECE, "0")
        piece = T.DecimalType(_PIECE, 0)
        p = [F.when(digits.startswith("-"), -d).otherwise(d)
             for d in (F.substring(padded, 1 + _PIECE * (2 - k), _PIECE).cast(piece) for k in range(3))]
        products = [p[0] * p[0], 2 * p[0] * p[1], p[1] * p[1] + 2 * p[0] * p[2], 2 * p[1] * p[2], p[2] * p[2]]
        sums = [F.sum(c) for c in p + products]
        call = Call("variance_from_sums", tuple(Literal(None, t) for t in [INT8, INT4, INT4, BOOL, BOOL] + [NUMERIC] * 8),
                    NUMERIC)
        dscale = S.value_scale(a.arg, x)
        dscale = F.lit(scale) if dscale is None else F.max(dscale)
        return S.python_text(call, [F.count(x), F.lit(scale), dscale, F.lit(sample), F.lit(root), *sums])
    return text


def _spark_div_value(S, text):
    """A numeric aggregate's value on Spark from its text: ``SPARK_DIV_SCALE`` decimals
    (the column's one scale)."""
    return text.try_cast(S.T.DecimalType(38, SPARK_DIV_SCALE))


def _variance_spark(sample: bool, root: bool):
    def spark(S, x, a):
        if a.type.name == "numeric":
            return _spark_div_value(S, _variance_text(sample, root)(S, x, a))
        st = _float_accum_spark(S, x)
        n = st["n"]
        return S.F.when(n > (1 if sample else 0), _float_variance_final(n, st["sxx"], sample, root, S.F.sqrt))
    return spark


def _numeric_text(a) -> bool:
    """``result_text`` of the numeric variances: PostgreSQL's scale is each group's own."""
    return a.type.name == "numeric"


def _string_agg_py(vals, a, p):
    """string_agg(text, text) and string_agg(bytea, bytea): the values joined by the
    delimiter (a NULL delimiter joins them with nothing)."""
    if not vals:
        return None
    delim = p[0] if p else None
    if a.arg.type.name == "bytea":
        return bytes(delim or b"").join(bytes(v) for v in vals)
    return (delim or "").join(vals)


def _percentile_fraction(vals, p):
    """The fraction of an ordered-set percentile, or None when the answer is NULL (a NULL
    fraction, no values). Raises SqlError 22003 outside [0, 1] (PostgreSQL 9.21)."""
    f = p[0]
    if f is None:
        return None
    if not 0 <= f <= 1:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"percentile value {f} is not between 0 and 1")
    return f if vals else None


def _percentile_cont_py(vals, a, p):
    f = _percentile_fraction(vals, p)
    if f is None:
        return None
    xs = [float(v) for v in vals]
    pos = f * (len(xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _percentile_disc_py(vals, a, p):
    f = _percentile_fraction(vals, p)
    if f is None:
        return None
    return vals[max(math.ceil(f * len(vals)), 1) - 1]


def _mode_py(vals, a, p):
    if not vals:
        return None
    best, best_n, run, n = None, 0, object(), 0
    for v in vals:  # sorted: the first of the most frequent values wins
        n = n + 1 if v == run else 1
        run = v
        if n > best_n:
            best, best_n = v, n
    return best


def _param_literal(a, i):
    e = a.params[i] if i < len(a.params) else None
    if e is None or e.__class__.__name__ != "Literal":
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{a.func} needs a constant argument on table data")
    return e.value


def _percentile_cont_spark(S, x, a):
    f = _param_literal(a, 0)
    if f is None:
        return S.F.lit(None).cast("double")
    if not 0 <= f <= 1:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"percentile value {f} is not between 0 and 1")
    desc = a.order and a.order[0][1]
    return S.F.percentile(x.cast("double"), 1 - f if desc else f)


def _percentile_disc_spark(S, x, a):
    F = S.F
    f = _param_literal(a, 0)
    if f is None:
        return F.lit(None).cast(S.spark_type(a.type))
    if not 0 <= f <= 1:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"percentile value {f} is not between 0 and 1")
    arr = S.ordered_values(a)
    idx = F.greatest(F.ceil(F.lit(f) * F.size(arr)).cast("int"), F.lit(1))
    return F.when(F.size(arr) > 0, F.element_at(arr, idx))


def _array_agg_py(vals, a, p):
    """array_agg: the values as an array; of arrays, an array of one more dimension, whose
    inputs must be non-NULL, non-empty and of one shape (PostgreSQL 9.21, array_agg(anyarray))."""
    if not vals or not a.arg.type.is_array:
        return vals or None
    for v in vals:
        if v is None:
            raise SqlError(NULL_VALUE_NOT_ALLOWED, "cannot accumulate null arrays")
        if not v:
            raise SqlError(ARRAY_SUBSCRIPT_ERROR, "cannot accumulate empty arrays")
        if array_dims(v) != array_dims(vals[0]):
            raise SqlError(ARRAY_SUBSCRIPT_ERROR, "cannot accumulate arrays of different dimensionality")
    return vals


def _array_agg_spark(S, x, a):
    F = S.F
    arr = S.ordered_values(a)
    if a.arg.type.is_array:
        from planner.functions.array import array_depth

        if array_depth(a.arg) > 1:
            raise SqlError(FEATURE_NOT_SUPPORTED, "array_agg of arrays of several dimensions is not supported on table data")
        # the first offending input decides the error, as PostgreSQL reads them in order
        bad = F.filter(arr, lambda v: v.isNull() | (F.size(v) == 0) | (F.size(v) != F.size(arr[0])))
        first = bad[0]
        return (F.when(F.size(bad) == 0, F.when(F.size(arr) > 0, arr))
                .when(first.isNull(), S.fail(NULL_VALUE_NOT_ALLOWED, "cannot accumulate null arrays"))
                .when(F.size(first) == 0, S.fail(ARRAY_SUBSCRIPT_ERROR, "cannot accumulate empty arrays"))
                .otherwise(S.fail(ARRAY_SUBSCRIPT_ERROR, "cannot accumulate arrays of different dimensionality")))
    return F.when(F.size(arr) > 0, arr)


def _string_agg_spark(S, x, a):
    F = S.F
    delim = _param_literal(a, 0)
    arr = S.ordered_values(a)
    if a.arg.type.name == "bytea":
        # Spark's array_join takes strings: the bytes joined by concat, NULLs left out
        kept = F.filter(arr, lambda v: v.isNotNull())
        sep = F.lit(bytes(delim or b""))
        joined = F.aggregate(F.slice(kept, 2, 2**31 - 1), kept[0], lambda acc, v: F.concat(acc, sep, v))
        return F.when(F.size(kept) > 0, joined)
    return F.when(F.size(arr) > 0, F.array_join(arr, delim or ""))


def _jsonb_agg(skip_nulls: bool):
    """jsonb_agg, or jsonb_agg_strict (``skip_nulls``: NULL values are left out, but a
    group of NULLs is ``[]``, not NULL) (PostgreSQL 9.21): (py, spark)."""
    def py(vals, a, p, ctx):
        from catalog.textio import jsonb_text
        from planner.functions.json import to_json_value

        if not vals:
            return None
        return jsonb_text([to_json_value(v, a.arg.type, ctx.guard.text) for v in vals if v is not None or not skip_nulls])

    def spark(S, x, a):
        from planner.functions.json import json_text_spark

        F = S.F
        arr = S.ordered_values(a)
        kept = F.filter(arr, lambda v: v.isNotNull()) if skip_nulls else arr
        texts = F.transform(kept, lambda v: json_text_spark(S, v, a.arg.type, a.arg, row=False))
        return F.when(F.size(arr) > 0, F.concat(F.lit("["), F.array_join(texts, ", "), F.lit("]")))
    return py, spark


def _sum_spark(S, x, a):
    F, T = S.F, S.T
    if a.arg.type.name == "int8":
        x = x.cast(T.DecimalType(38, 0))  # PostgreSQL: sum(bigint) is numeric
    r = F.sum_distinct(x) if a.distinct else F.sum(x)
    return r.cast(S.spark_type(a.type)) if a.type.name in ("float4", "float8", "int8") else r


def _avg_spark(S, x, a):
    F, T = S.F, S.T
    if a.arg.type.is_integer:
        x = x.cast(T.DecimalType(38, 0))
    elif a.type.name == "float8":
        x = x.cast(T.DoubleType())
    total, n = (F.sum_distinct(x), F.count_distinct(x)) if a.distinct else (F.sum(x), F.count(x))
    if a.type.name == "float8":
        return (total / n).cast(T.DoubleType())
    if a.type.name == "interval":
        raise SqlError(FEATURE_NOT_SUPPORTED, "avg(interval) is not supported on table data")
    q = total.cast(T.DecimalType(38, 0 if a.arg.type.is_integer else 10)) / n.cast(T.DecimalType(20, 0))
    return q.cast(T.DecimalType(38, SPARK_DIV_SCALE))


def _avg_from_sum(a, e) -> Decimal | None:
    """avg of a numeric on Spark from its group's exact sum, count and the values'
    display scale (None: the sum's own): ``numeric_div``, the interpreter's rule
    (PostgreSQL's numeric_avg: the sum divided at select_div_scale)."""
    total, n, dscale = a
    if not n:
        return None
    if dscale is not None:
        total = total.quantize(Decimal(1).scaleb(-dscale))  # the digits below it are zeros
    return numeric_div(total, Decimal(n))


def _avg_text(S, x, a):
    """PostgreSQL's text of a numeric avg on Spark: Spark sums exactly and counts, the
    replica's Python divides (``_avg_from_sum``)."""
    from planner.scalar import Call, Literal

    F, T = S.F, S.T
    scale = S.value_scale(a.arg, x)
    if a.arg.type.is_integer:
        x = x.cast(T.DecimalType(38, 0))
    total, n = (F.sum_distinct(x), F.count_distinct(x)) if a.distinct else (F.sum(x), F.count(x))
    call = Call("avg_from_sum", tuple(Literal(None, t) for t in (NUMERIC, INT8, INT4)), NUMERIC)
    return S.python_text(call, [total, n, F.lit(None).cast("int") if scale is None else F.max(scale)])


def _sum_text(S, x, a):
    """PostgreSQL's text of a sum of an unconstrained numeric on Spark: the sum at the
    largest display scale of the values (``Lowerer.value_scale``; numeric.c add_var)."""
    F = S.F
    total = _sum_spark(S, x, a)
    scale = S.value_scale(a.arg, x)
    return total.cast("string") if scale is None else S.scaled_text(total, F.max(scale))


def _per_value_sum(a) -> bool:
    """``result_text`` of sum and avg: of an unconstrained numeric, whose Spark scale is
    its column's, not its values'."""
    return a.type.name == "numeric" and a.arg.type.precision is None and static_scale(a.arg) is None


def _per_value_avg(a) -> bool:
    """``result_text`` of avg: of an integer (its 16 decimals on Spark were PostgreSQL's
    only where select_div_scale gives 16) or of an unconstrained numeric
    (``_per_value_sum``)."""
    return a.type.name == "numeric" and (a.arg.type.is_integer or _per_value_sum(a))


def _bool(fn):
    return lambda vals, a, p: (all(vals) if fn == "bool_and" else any(vals)) if vals else None


SAMPLE_ORDER = "order by k"

register(
    Function("count", (AggSig(lambda t: (t, INT8)),), lambda vals, a, p: len(vals),
             lambda S, x, a: S.F.count_distinct(x) if a.distinct else S.F.count(x), sql_names=("count",),
             kind="aggregate", doc="9.21",
             samples=("count(i)", "count(distinct b)", "count(*) filter (where i > 0)", "count(s) filter (where b)")),
    Function("count_star", (), lambda vals, a, p: len(vals), lambda S, x, a: S.F.count(x), kind="aggregate",
             strict=False, doc="9.21", samples=("count(*)",)),
    Function("sum", (AggSig(_sum_type),), _sum, _sum_spark, sql_names=("sum",), kind="aggregate", doc="9.21",
             extra={"result_text": _per_value_sum, "spark_text": _sum_text,
                    "text_value": lambda S, text: text.try_cast(S.spark_type(NUMERIC))},
             samples=("sum(i)", "sum(n)", "sum(f)", "sum(i) filter (where b)", "sum(distinct k)")),
    Function("avg", (AggSig(_avg_type),), _avg, _avg_spark, sql_names=("avg",), kind="aggregate", doc="9.21",
             extra={"result_text": _per_value_avg, "text_value": _spark_div_value, "spark_text": _avg_text},
             samples=("avg(f)", "avg(k)", "avg(i) filter (where k < 3)", "avg(distinct i)", "avg(i * 3)"),
             differs="the avg of a numeric(p, s) has 16 decimals on Spark (the scale a materialized view stores it "
                     "with); PostgreSQL's scale follows the value (select_div_scale), as it does here for an "
                     "integer or an unconstrained numeric"),
    Function("avg_from_sum", (), _avg_from_sum, None, doc="9.21"),
    Function("min", (AggSig(_minmax_type),), lambda vals, a, p: min(vals, key=order_key) if vals else None,
             _minmax_spark("min"), sql_names=("min",), kind="aggregate", doc="9.21",
             samples=("min(s)", "min(d)", "min(n)")),
    Function("max", (AggSig(_minmax_type),), lambda vals, a, p: max(vals, key=order_key) if vals else None,
             _minmax_spark("max"), sql_names=("max",), kind="aggregate", doc="9.21",
             samples=("max(s)", "max(ts)", "max(i) filter (where i < 40)")),
    Function("bool_and", (AggSig(lambda t: (BOOL, BOOL) if t.name == "bool" else None),), _bool("bool_and"),
             lambda S, x, a: S.F.bool_and(x), sql_names=("bool_and", "every"), kind="aggregate", doc="9.21",
             samples=("bool_and(b)", "every(i > -5)")),
    Function("bool_or", (AggSig(lambda t: (BOOL, BOOL) if t.name == "bool" else None),), _bool("bool_or"),
             lambda S, x, a: S.F.bool_or(x), sql_names=("bool_or",), kind="aggregate", doc="9.21",
             samples=("bool_or(b)",)),
    Function("array_agg", (AggSig(lambda t: (t, array_of(t)) if not t.is_array else (t, t)),),
             _array_agg_py, _array_agg_spark, sql_names=("array_agg",), kind="aggregate",
             strict=False, doc="9.21",
             samples=("array_agg(i order by k)", "array_agg(i order by b, i desc)", "array_agg(s order by i nulls first)",
                      "array_agg(k order by k) filter (where b)", "array_agg(distinct b order by b)",
                      "array_agg(distinct i)", "array_agg(ARRAY[k, i] order by k)",
                      "array_agg(a order by k) filter (where k = 1)", "array_agg(a order by k) filter (where k < 3)",
                      "array_agg(a order by k) filter (where k >= 3)",
                      "array_agg(a order by k desc) filter (where k > 3)",
                      "array_agg(ARRAY[s] order by k)")),
    Function("string_agg", (AggSig(lambda t: (TEXT, TEXT) if t.is_string else (BYTEA, BYTEA)
                                   if t.name == "bytea" else None),), _string_agg_py,
             _string_agg_spark, sql_names=("string_agg",), kind="aggregate", doc="9.21",
             # the delimiter is of the values' type: bytea for bytea values, text otherwise
             extra={"params": lambda t: (BYTEA,) if t.name == "bytea" else (TEXT,)},
             samples=("string_agg(s, ',' order by k)", "string_agg(s, '; ' order by s desc)",
                      "string_agg(distinct s, '|' order by s)", "string_agg(s, '' order by k) filter (where k > 1)",
                      "string_agg(distinct s, ';')", "string_agg(distinct k::text, ',')",
                      "string_agg(s::bytea, '\\x00ff'::bytea order by k)",
                      "string_agg(distinct s::bytea, ', ' order by s::bytea desc)",
                      "string_agg(k::text::bytea, NULL order by k) filter (where k > 2)",
                      "string_agg(s::bytea, 'x') filter (where k > 9)")),
    Function("jsonb_agg", (AggSig(lambda t: (t, JSONB)),), *_jsonb_agg(False),
             sql_names=("jsonb_agg", "json_agg"), kind="aggregate", strict=False, doc="9.21",
             samples=("jsonb_agg(i order by k)", "jsonb_agg(s order by k)", "json_agg(b order by k)"),
             differs="json_agg is jsonb_agg (Materialize: json is jsonb), so its text is jsonb's", extra=IN_CONTEXT),
    Function("jsonb_agg_strict", (AggSig(lambda t: (t, JSONB)),), *_jsonb_agg(True),
             sql_names=("jsonb_agg_strict", "json_agg_strict"), kind="aggregate", strict=False, doc="9.21",
             samples=("jsonb_agg_strict(i order by k)", "jsonb_agg_strict(s) filter (where k > 3)",
                      "jsonb_agg_strict(d order by k desc)"),
             differs="json_agg_strict is jsonb_agg_strict (Materialize: json is jsonb), so its text is jsonb's",
             extra=IN_CONTEXT),
    Function("stddev_samp", (AggSig(_stat_type),), _variance(True, True), _variance_spark(True, True),
             sql_names=("stddev", "stddev_samp"), kind="aggregate", doc="9.21",
             extra={"result_text": _numeric_text, "text_value": _spark_div_value, "spark_text": _variance_text(True, True)},
             samples=("stddev(f)", "stddev_samp(f)", "stddev(i)", "stddev(n)", "stddev(n) filter (where k > 4)",
                      "stddev(k * 1.5)")),
    Function("stddev_pop", (AggSig(_stat_type),), _variance(False, True), _variance_spark(False, True),
             sql_names=("stddev_pop",), kind="aggregate", doc="9.21",
             extra={"result_text": _numeric_text, "text_value": _spark_div_value, "spark_text": _variance_text(False, True)},
             samples=("stddev_pop(f)", "stddev_pop(i)", "stddev_pop(n)", "stddev_pop(n) filter (where k = 1)")),
    Function("var_samp", (AggSig(_stat_type),), _variance(True, False), _variance_spark(True, False),
             sql_names=("variance", "var_samp"), kind="aggregate", doc="9.21",
             extra={"result_text": _numeric_text, "text_value": _spark_div_value, "spark_text": _variance_text(True, False)},
             samples=("variance(f)", "variance(i)", "var_samp(n)", "variance(i::int8 * 4000000000)")),
    Function("var_pop", (AggSig(_stat_type),), _variance(False, False), _variance_spark(False, False),
             sql_names=("var_pop",), kind="aggregate", doc="9.21",
             extra={"result_text": _numeric_text, "text_value": _spark_div_value, "spark_text": _variance_text(False, False)},
             samples=("var_pop(f)", "var_pop(i)", "var_pop(n)", "var_pop(-n * 1000)")),
    Function("variance_from_sums", (), _variance_from_sums, None, doc="9.21"),
    Function("percentile_cont", (AggSig(lambda t: (FLOAT8, FLOAT8) if t.is_numeric else None),),
             _percentile_cont_py, _percentile_cont_spark, sql_names=("percentile_cont",), kind="aggregate",
             ordered_set=True, doc="9.21", extra={"params": (FLOAT8,)},
             samples=("percentile_cont(0.5) within group (order by f)",
                      "percentile_cont(0.25) within group (order by i)")),
    Function("percentile_disc", (AggSig(lambda t: (t, t) if not t.is_array else None),), _percentile_disc_py,
             _percentile_disc_spark, sql_names=("percentile_disc",), kind="aggregate", ordered_set=True, doc="9.21",
             extra={"params": (FLOAT8,)},
             samples=("percentile_disc(0.5) within group (order by i)",
                      "percentile_disc(0.9) within group (order by s)")),
    Function("mode", (AggSig(lambda t: (t, t) if not t.is_array else None),), _mode_py,
             lambda S, x, a: S.F.mode(x, True), sql_names=("mode",), kind="aggregate", ordered_set=True,
             doc="9.21", samples=("mode() within group (order by b)",)),
)


def resolve_aggregate(name: str, arg: SqlType | None) -> tuple[Function, SqlType | None, SqlType]:
    """(entry, cast arg to, result type) for aggregate ``name(arg)`` (PostgreSQL 9.21's
    result types: sum(int4) is bigint, sum(int8) and avg of integers numeric).

    Raises:
        SqlError 42883 when no signature applies."""
    f = AGGREGATES[name]
    if arg is None:
        if name == "count":
            return FUNCTIONS["count_star"], None, INT8
        raise undefined_function(name, [])
    a = TEXT if arg.name == "unknown" else arg
    for s in f.sigs:
        r = s.f(a)
        if r is not None:
            return f, r[0], r[1]
    raise undefined_function(name, [a])



# -- aggregates of two arguments: statistics of pairs, jsonb_object_agg (9.21) --------------
# A two-argument aggregate aggregates one value: the pair of its arguments
# (``agg_pair``: a tuple in the interpreter, a struct of fields y and x on Spark), so the
# plan's AggCall keeps one argument; ``extra["pair"]`` gives the types the arguments are
# cast to (None: kept as they are).


def _pair_py(a, e):
    return tuple(a)


def _pair_spark(S, a, e):
    return S.F.struct(a[0].alias("y"), a[1].alias("x"))


def _regr_state(pairs):
    """PostgreSQL's float8_regr_accum over (y, x) pairs, in input order, skipping pairs
    with a NULL: (N, Sx, Sxx, Sy, Syy, Sxy), the Youngs-Cramer sums (float.c)."""
    n = sx = sxx = sy = syy = sxy = 0.0
    for y, x in pairs:
        if y is None or x is None:
            continue
        old = n
        n += 1.0
        sx += x
        sy += y
        if old > 0.0:
            tx, ty = x * n - sx, y * n - sy
            scale = 1.0 / (n * old)
            sxx += tx * tx * scale
            syy += ty * ty * scale
            sxy += tx * ty * scale
        elif not (math.isfinite(x) and math.isfinite(y)):
            sxx = syy = sxy = math.nan
    return n, sx, sxx, sy, syy, sxy


def _corr(n, sx, sxx, sy, syy, sxy):
    if sxx == 0 or syy == 0:
        return None
    product = sxx * syy
    root = math.sqrt(sxx) * math.sqrt(syy) if product == 0 or math.isinf(product) else math.sqrt(product)
    return max(-1.0, min(1.0, sxy / root))


#: name -> (final function of the sums, least N for a non-NULL answer) (float.c)
_REGR = {
    "regr_count": (lambda n, sx, sxx, sy, syy, sxy: int(n), 0),
    "regr_sxx": (lambda n, sx, sxx, sy, syy, sxy: sxx, 1),
    "regr_syy": (lambda n, sx, sxx, sy, syy, sxy: syy, 1),
    "regr_sxy": (lambda n, sx, sxx, sy, syy, sxy: sxy, 1),
    "regr_avgx": (lambda n, sx, sxx, sy, syy, sxy: sx / n, 1),
    "regr_avgy": (lambda n, sx, sxx, sy, syy, sxy: sy / n, 1),
    "regr_r2": (lambda n, sx, sxx, sy, syy, sxy: None if sxx == 0 else 1.0 if syy == 0 else (sxy * sxy) / (sxx * syy), 1),
    "regr_slope": (lambda n, sx, sxx, sy, syy, sxy: None if sxx == 0 else sxy / sxx, 1),
    "regr_intercept": (lambda n, sx, sxx, sy, syy, sxy: None if sxx == 0 else (sy - sx * sxy / sxx) / n, 1),
    "covar_pop": (lambda n, sx, sxx, sy, syy, sxy: sxy / n, 1),
    "covar_samp": (lambda n, sx, sxx, sy, syy, sxy: sxy / (n - 1.0), 2),
    "corr": (_corr, 1),
}


def _regr_py(name):
    final, least = _REGR[name]

    def py(vals, a, p):
        state = _regr_state(vals)
        if state[0] < least:
            return None
        return final(*state)
    return py


def _regr_spark(name):
    """On Spark: the same sums, accumulated in the same order over the group's pairs
    (collected in input order), so the answers agree to the last digit."""
    final, least = _REGR[name]

    def spark(S, x, a):
        F = S.F
        pairs = F.filter(F.collect_list(x), lambda p: p["y"].isNotNull() & p["x"].isNotNull())
        zero = F.lit(0.0).cast("double")
        start = F.struct(*(zero.alias(f) for f in ("n", "sx", "sxx", "sy", "syy", "sxy")))

        def step(s, p):
            n = s["n"] + 1.0
            sx, sy = s["sx"] + p["x"], s["sy"] + p["y"]
            tx, ty = p["x"] * n - sx, p["y"] * n - sy
            scale = F.lit(1.0) / F.when(s["n"] > 0, n * s["n"]).otherwise(1.0)
            first = s["n"] == 0
            return F.struct(n.alias("n"), sx.alias("sx"),
                            F.when(first, s["sxx"]).otherwise(s["sxx"] + tx * tx * scale).alias("sxx"),
                            sy.alias("sy"),
                            F.when(first, s["syy"]).otherwise(s["syy"] + ty * ty * scale).alias("syy"),
                            F.when(first, s["sxy"]).otherwise(s["sxy"] + tx * ty * scale).alias("sxy"))

        st = F.aggregate(pairs, start, step)
        n, sx, sxx, sy, syy, sxy = (st[f] for f in ("n", "sx", "sxx", "sy", "syy", "sxy"))
        r = _regr_final_spark(F, name, n, sx, sxx, sy, syy, sxy)
        return F.when(n >= least, r) if name != "regr_count" else r
    return spark


def _safe(F, den):
    """A divisor that is never 0 (its quotient is not used then): Spark's ANSI division
    fails on 0 where C's gives an infinity."""
    return F.when(den == 0, F.lit(1.0)).otherwise(den)


def _regr_final_spark(F, name, n, sx, sxx, sy, syy, sxy):
    if name == "regr_count":
        return n.cast("long")
    if name in ("regr_sxx", "regr_syy", "regr_sxy"):
        return {"regr_sxx": sxx, "regr_syy": syy, "regr_sxy": sxy}[name]
    if name in ("regr_avgx", "regr_avgy"):
        return (sx if name == "regr_avgx" else sy) / _safe(F, n)
    if name == "covar_pop":
        return sxy / _safe(F, n)
    if name == "covar_samp":
        return sxy / _safe(F, n - 1.0)
    if name == "regr_r2":
        return F.when(sxx == 0, F.lit(None).cast("double")).when(syy == 0, F.lit(1.0)).otherwise(
            (sxy * sxy) / _safe(F, sxx * syy))
    if name == "regr_slope":
        return F.when(sxx != 0, sxy / _safe(F, sxx))
    if name == "regr_intercept":
        return F.when(sxx != 0, (sy - sx * sxy / _safe(F, sxx)) / _safe(F, n))
    product = sxx * syy  # corr
    root = F.when((product == 0) | (product == float("inf")), F.sqrt(sxx) * F.sqrt(syy)).otherwise(F.sqrt(product))
    return F.when((sxx != 0) & (syy != 0), F.greatest(F.lit(-1.0), F.least(F.lit(1.0), sxy / _safe(F, root))))


def _bits_py(op):
    def py(vals, a, p):
        if not vals:
            return None
        r = vals[0]
        for v in vals[1:]:
            r = r & v if op == "and" else r | v if op == "or" else r ^ v
        return r
    return py


DUPLICATE_JSON_KEY = DUPLICATE_JSON_OBJECT_KEY_VALUE


def _object_agg(skip_nulls: bool, unique: bool, json: bool = False):
    """jsonb_object_agg and its _strict (pairs with a NULL value left out) and _unique
    (a repeated key is 22030) forms (PostgreSQL 9.21): (py, spark). Keys are checked
    before values are left out, as PostgreSQL does. A NULL key is 22023 for the jsonb
    forms, 22004 for the ``json`` ones (jsonb.c, json.c)."""
    null_key = (NULL_VALUE_NOT_ALLOWED, "null value not allowed for object key") if json else \
        (INVALID_PARAMETER_VALUE, "field name must not be null")

    def py(vals, a, p, ctx):
        from catalog.textio import jsonb_text
        from planner.functions.json import _object_key_py, to_json_value

        fmt = ctx.guard.text
        if not vals:
            return None
        kt, vt = (x.type for x in a.arg.args)
        out, seen = {}, set()
        for k, v in vals:
            if k is None:
                raise SqlError(*null_key)
            key = _object_key_py(k, kt, 0, fmt)
            if unique and key in seen:
                raise SqlError(DUPLICATE_JSON_KEY, f'duplicate JSON object key value: "{key}"')
            seen.add(key)
            if v is not None or not skip_nulls:
                out[key] = to_json_value(v, vt, fmt)
        return jsonb_text(out)

    def spark(S, x, a):
        from planner.functions.json import _object_key_spark, json_text_spark

        F = S.F
        kt, vt = (e.type for e in a.arg.args)
        arr = S.ordered_values(a)
        keyed = F.transform(arr, lambda p: F.struct(F.when(p["y"].isNull(), S.fail(*null_key)).otherwise(
            _object_key_spark(S, p["y"], kt, 0))
            .alias("k"), p["x"].alias("x")))
        kept = F.filter(keyed, lambda p: p["x"].isNotNull()) if skip_nulls else keyed
        items = F.transform(kept, lambda p: F.concat(p["k"], F.lit(": "),
                                                     json_text_spark(S, p["x"], vt, a.arg.args[1], row=False)))
        # duplicate keys: jsonb keeps the last, as the session's normalization of jsonb text does
        out = F.when(F.size(arr) > 0, F.concat(F.lit("{"), F.array_join(items, ", "), F.lit("}")))
        if unique:
            keys = F.transform(keyed, lambda p: p["k"])
            out = F.when(F.size(F.array_distinct(keys)) < F.size(keys),
                         S.fail(DUPLICATE_JSON_KEY, "duplicate JSON object key value")).otherwise(out)
        return out
    return py, spark


_PAIR_SAMPLES = {
    "corr": ("corr(f, i)", "corr(i, k)", "corr(k, k)"), "regr_slope": ("regr_slope(f, i)", "regr_slope(k, i)"),
    "regr_intercept": ("regr_intercept(f, i)",), "regr_r2": ("regr_r2(f, i)", "regr_r2(k, i)"),
    "regr_count": ("regr_count(f, i)",), "regr_avgx": ("regr_avgx(f, i)",), "regr_avgy": ("regr_avgy(f, i)",),
    "regr_sxx": ("regr_sxx(f, i)",), "regr_syy": ("regr_syy(f, i)",), "regr_sxy": ("regr_sxy(f, i)",),
    "covar_pop": ("covar_pop(f, i)", "covar_pop(k, k)"),
    "covar_samp": ("covar_samp(f, i)", "covar_samp(f, i) filter (where k = 1)"),
}
_INTS = ("int2", "int4", "int8")

register(
    Function("agg_pair", (), _pair_py, _pair_spark, strict=False, doc="9.21"),
    *[Function(name, (AggSig(lambda t: (t, INT8 if name == "regr_count" else FLOAT8)),), _regr_py(name),
               _regr_spark(name), sql_names=(name,), kind="aggregate", strict=False, doc="9.21",
               extra={"pair": ("float8", "float8")}, samples=_PAIR_SAMPLES[name])
      for name in _REGR],
    *[Function(f"bit_{op}", (AggSig(lambda t: (t, t) if t.name in _INTS else None),), _bits_py(op),
               lambda S, x, a, op=op: getattr(S.F, f"bit_{op}")(x), sql_names=(f"bit_{op}",), kind="aggregate",
               doc="9.21", samples=(f"bit_{op}(i)", f"bit_{op}(k)", f"bit_{op}(i::int8)", f"bit_{op}(k::int2)"))
      for op in ("and", "or", "xor")],
    *[Function(f"{kind}_object_agg{suffix}", (AggSig(lambda t: (t, JSONB)),),
               *_object_agg("strict" in suffix, "unique" in suffix, kind == "json"),
               sql_names=(f"{kind}_object_agg{suffix}",), kind="aggregate", strict=False,
               doc="9.21", extra={"pair": (None, None), "with_context": True},
               samples=samples if kind == "jsonb" else (f"json_object_agg{suffix}(s, k)",),
               differs="" if kind == "jsonb" else "json is jsonb (Materialize), so its text is jsonb's")
      for kind in ("jsonb", "json")
      for suffix, samples in (
          ("", ("jsonb_object_agg(k, s)", "jsonb_object_agg(s, n) filter (where k < 4)",
                "jsonb_object_agg(k % 2, k order by k)", "jsonb_object_agg(s, k)")),
          ("_strict", ("jsonb_object_agg_strict(k, s)", "jsonb_object_agg_strict(k % 2, i order by k)",
                       "jsonb_object_agg_strict(s, k)")),
          ("_unique", ("jsonb_object_agg_unique(k, s)", "jsonb_object_agg_unique(k % 2, i)",
                       "jsonb_object_agg_unique(k, i) filter (where k > 3)")),
          ("_unique_strict", ("jsonb_object_agg_unique_strict(k, s)", "jsonb_object_agg_unique_strict(k % 2, i)",
                              "jsonb_object_agg_unique_strict(k % 4, i) filter (where k > 2)")))],
)

register(
    Function("any_value", (AggSig(lambda t: (t, t)),), lambda vals, a, p: vals[0] if vals else None,
             lambda S, x, a: S.F.any_value(x, True), sql_names=("any_value",), kind="aggregate", doc="9.21",
             samples=("any_value(s) filter (where k = 2)", "any_value(i) filter (where i < 0)")),
)


# -- hypothetical-set aggregates (PostgreSQL 9.21, table 9.65) --------------------------------
# rank(x) WITHIN GROUP (ORDER BY v): where the hypothetical row x would rank among the
# group's values v (NULLs included, in the ORDER BY's direction and NULL placement).


def _placement_py(v, x, desc: bool, nulls_first: bool) -> int:
    """-1 when ``v`` sorts before ``x``, 0 for peers, 1 after."""
    if v is None or x is None:
        if v is None and x is None:
            return 0
        return (-1 if nulls_first else 1) if v is None else (1 if nulls_first else -1)
    kv, kx = order_key(v), order_key(x)
    c = (kv > kx) - (kv < kx)
    return -c if desc else c


def _hypothetical_py(name: str):
    def py(vals, a, p):
        x = p[0]
        _, desc, nulls_first = a.order[0]
        places = [_placement_py(v, x, desc, nulls_first) for v in vals]
        before = sum(1 for c in places if c < 0)
        if name == "rank":
            return before + 1
        if name == "dense_rank":
            return len({order_key(v) if v is not None else None for v, c in zip(vals, places) if c < 0}) + 1
        if name == "percent_rank":
            return before / len(vals) if vals else 0.0
        return (before + sum(1 for c in places if c == 0) + 1) / (len(vals) + 1)
    return py


def _hypothetical_spark(name: str):
    def spark(S, x, a):
        F = S.F
        _param_literal(a, 0)  # a constant hypothetical row
        h = S.scalar(a.params[0])
        _, desc, nulls_first = a.order[0]
        arr = S.ordered_values(a)

        def before(v):
            lower = v > h if desc else v < h
            return (F.when(v.isNull() & h.isNull(), False).when(v.isNull(), F.lit(nulls_first))
                    .when(h.isNull(), F.lit(not nulls_first)).otherwise(lower))

        def peer(v):
            return F.when(v.isNull() | h.isNull(), v.isNull() & h.isNull()).otherwise(v == h)

        n_before = F.size(F.filter(arr, before))
        if name == "rank":
            return (n_before + 1).cast("long")
        if name == "dense_rank":
            return (F.size(F.array_distinct(F.filter(arr, before))) + 1).cast("long")
        n = F.size(arr)
        if name == "percent_rank":
            return F.when(n > 0, n_before.cast("double") / F.when(n > 0, n).otherwise(1)).otherwise(F.lit(0.0))
        return (n_before + F.size(F.filter(arr, peer)) + 1).cast("double") / (n + 1).cast("double")
    return spark


register(
    *[Function(f"hypothetical_{name}", (AggSig(lambda t, name=name: (t, FLOAT8 if "_" in name else INT8)),),
               _hypothetical_py(name), _hypothetical_spark(name), sql_names=(name,), kind="aggregate", strict=False,
               ordered_set=True, doc="9.21", extra={"hypothetical": True},
               samples=(f"{name}(2) within group (order by i)", f"{name}(2) within group (order by k desc)",
                        f"{name}('b') within group (order by s nulls first)",
                        f"{name}(null::int) within group (order by i)",
                        f"{name}(1.5) within group (order by f) filter (where k < 4)"))
      for name in ("rank", "dense_rank", "percent_rank", "cume_dist")],
)
