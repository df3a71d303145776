"""Mathematical operators and functions (PostgreSQL 9.3), and the date/time arithmetic
operators that share their names (9.9, table 9.33). Operator resolution is
``planner.typing.resolve_binary``'s; these are the implementations."""

from __future__ import annotations

import functools
import math
import random as _random
from decimal import Decimal, localcontext, ROUND_HALF_UP, ROUND_DOWN, ROUND_FLOOR, ROUND_CEILING

from catalog.errors import (
    SqlError, FEATURE_NOT_SUPPORTED, INVALID_ARGUMENT_FOR_LOGARITHM,
    INVALID_ARGUMENT_FOR_POWER_FUNCTION, INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION, INVALID_PARAMETER_VALUE,
    NUMERIC_VALUE_OUT_OF_RANGE,
)
from catalog.textio import check_int, INT_RANGES
from catalog.types import UNCONSTRAINED_NUMERIC, SqlType
from planner.functions.registry import Function, by_python, div0, register, sig

FLOATS = ("float4", "float8")


def numeric_div_scale(a: Decimal, b: Decimal) -> int:
    """PostgreSQL's ``select_div_scale`` (numeric.c): at least 16 significant digits
    (NUMERIC_MIN_SIG_DIGITS), never fewer decimals than either input. Weights are in
    base-10000 digits, as PostgreSQL stores numerics."""

    def weight_first(x: Decimal) -> tuple[int, int]:
        if x == 0:
            return 0, 0
        x = abs(x)
        w = (x.adjusted()) // 4  # base-10000 digit holding the first significant decimal
        first = int(x.scaleb(-4 * w))
        return w, first

    w1, f1 = weight_first(a)
    w2, f2 = weight_first(b)
    qweight = w1 - w2
    if f1 <= f2:
        qweight -= 1
    rscale = 16 - qweight * 4
    for x in (a, b):
        rscale = max(rscale, -x.as_tuple().exponent if x.is_finite() else 0)
    return min(max(rscale, 0), 1000)


def numeric_div(a: Decimal, b: Decimal) -> Decimal:
    if b == 0:
        raise div0()
    with localcontext() as ctx:
        ctx.prec = 1100
        q = a / b
    return q.quantize(Decimal(1).scaleb(-numeric_div_scale(a, b)), rounding=ROUND_HALF_UP)


def arith(func: str, a, b, t: SqlType, ta: SqlType, tb: SqlType):
    """``a func b`` for the result type ``t`` and operand types ``ta``, ``tb`` (PostgreSQL
    9.3 table 9.4; 9.9 table 9.33 for dates, timestamps and intervals).

    Raises:
        SqlError 22012 division by zero; 22003 out of range."""
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
                raise div0()
            r = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        else:
            if b == 0:
                raise div0()
            r = int(math.fmod(a, b))
        return check_int(r, t)
    if n == "numeric":
        if a.is_nan() or b.is_nan():
            return Decimal("NaN")  # NaN with anything, even a zero divisor, is NaN (PostgreSQL 8.1.2)
        with localcontext() as ctx:
            ctx.prec = 1100
            if func == "add":
                return a + b
            if func == "sub":
                return a - b
            if func == "mul":
                return a * b
            if b == 0:
                raise div0()
            if func == "div":
                return numeric_div(a, b)
            return a % b
    if n in FLOATS:
        if func in ("div", "mod") and b == 0:
            raise div0()
        r = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
             "mod": lambda: math.fmod(a, b)}[func]()
        if math.isinf(r) and not (math.isinf(a) or math.isinf(b)):
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")
        return r
    from planner.functions.datetime import datetime_arith

    return datetime_arith(func, a, b, t, ta)


def _arith_spark(func):
    def spark(S, a, e):
        x, y = a
        t, ta, tb = e.type, e.args[0].type, e.args[1].type
        F = S.F
        if "timetz" in (ta.name, tb.name, t.name):  # kept as its text on Spark: the Python implementation reads it
            return by_python(S, a, e)
        if "time" in (ta.name, tb.name):
            from planner.functions.datetime import time_arith_spark

            return time_arith_spark(S, func, x, y, t, ta)
        if func in ("add", "sub"):
            if t.name == "date":
                if ta.name == "date":
                    return F.date_add(x, y) if func == "add" else F.date_sub(x, y)
                return F.date_add(y, x)
            if func == "sub" and ta.name == "date" and tb.name == "date":
                return F.datediff(x, y)
            if func == "sub" and t.name == "interval" and ta.name in ("timestamp", "timestamptz"):
                # whole days and the rest, of the difference's sign (timestamp_mi)
                us = F.unix_micros(x.cast("timestamp")) - F.unix_micros(y.cast("timestamp"))
                days = S.trunc_div(us, 86_400_000_000)
                return S.make_interval(F.lit(0), days.cast("int"), us - days * 86_400_000_000)
            return x + y if func == "add" else x - y
        if func == "mul":
            exact = S.numeric_product(e, x, y) if t.name == "numeric" else None
            return x * y if exact is None else exact
        if func == "div":
            if t.is_integer:
                return F.call_function("div", x, y).cast(S.spark_type(t))
            return x / y
        return x % y
    return spark


def _round_py(func):
    def py(a, e):
        v = a[0]
        if e.args[0].type.name in FLOATS:
            return float(round(v)) if func == "round" else float(math.trunc(v))
        digits = a[1] if len(a) > 1 else 0
        q = Decimal(1).scaleb(-digits)
        with localcontext() as ctx:
            ctx.prec = 1100
            r = v.quantize(q, rounding=ROUND_HALF_UP if func == "round" else ROUND_DOWN)
        return r if digits >= 0 else r.quantize(Decimal(1))
    return py


def _round_spark(S, a, e):
    F = S.F
    if e.args[0].type.name in FLOATS:
        return F.bround(a[0], 0)
    if len(a) == 1:
        return F.round(a[0], 0).cast(S.T.DecimalType(38, 0))
    d = e.args[1]
    if d.__class__.__name__ == "Literal" and d.value is not None and d.value >= 0:
        return F.round(a[0], d.value).cast(S.T.DecimalType(38, min(d.value, 37)))
    return F.call_function("round", a[0], a[1])


def _trunc_spark(S, a, e):
    F = S.F
    if e.args[0].type.name in FLOATS:
        return F.when(a[0] < 0, F.ceil(a[0])).otherwise(F.floor(a[0])).cast(S.T.DoubleType())
    d = e.args[1] if len(a) > 1 else None
    if d is not None and (d.__class__.__name__ != "Literal" or d.value is None or d.value < 0):
        raise SqlError(FEATURE_NOT_SUPPORTED, "trunc(numeric, n) needs a constant n >= 0 on table data")
    scale = min(d.value if d is not None else 0, 37)
    # x - x % 10^-scale: the remainder keeps x's sign, so this cuts toward zero.
    step = F.lit(Decimal(1).scaleb(-scale))
    return (a[0] - a[0] % step).cast(S.T.DecimalType(38, scale))


def _floor_py(func):
    def py(a, e):
        v = a[0]
        if isinstance(v, Decimal):
            return v.to_integral_value(rounding=ROUND_FLOOR if func == "floor" else ROUND_CEILING)
        return float(math.floor(v) if func == "floor" else math.ceil(v))
    return py


def _sign_py(a, e):
    v = a[0]
    s = (v > 0) - (v < 0)
    return float(s) if isinstance(v, float) else Decimal(s)


def _check_sqrt(v):
    if v < 0:
        raise SqlError(INVALID_ARGUMENT_FOR_POWER_FUNCTION, "cannot take square root of a negative number")


def _check_ln(v):
    if v == 0:
        raise SqlError(INVALID_ARGUMENT_FOR_LOGARITHM, "cannot take logarithm of zero")
    if v < 0:
        raise SqlError(INVALID_ARGUMENT_FOR_LOGARITHM, "cannot take logarithm of a negative number")


def _numeric_sig(v: float, sig_digits: int, min_scale: int = 0) -> Decimal:
    """A float result as a numeric with ``sig_digits`` significant digits (PostgreSQL's
    numeric transcendental functions give at least 16, NUMERIC_MIN_SIG_DIGITS)."""
    d = Decimal(repr(v))
    if d == 0:
        return Decimal(0).quantize(Decimal(1).scaleb(-min_scale))
    scale = max(sig_digits - 1 - d.adjusted(), min_scale, 0)
    return d.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def _transcendental(func):
    def py(a, e):
        v = a[0]
        if e.type.name == "numeric":
            if func == "exp":
                return numeric_exp_exact(v)
            if func == "sqrt":
                return numeric_sqrt(v)
            if func in ("ln", "log10"):
                return numeric_log(None if func == "ln" else Decimal(10), v)
        if func == "sqrt":
            _check_sqrt(v)
        elif func in ("ln", "log10"):
            _check_ln(v)
        return {"sqrt": math.sqrt, "ln": math.log, "exp": float_exp, "log10": math.log10, "cbrt": math.cbrt}[func](
            float(v))
    return py


def float_exp(x: float) -> float:
    """exp(double precision) as float.c's dexp: the C library's exp (Python's), an
    infinite or zero result of a finite argument out of range.

    Raises:
        SqlError 22003 ("overflow", "underflow")."""
    if math.isnan(x) or math.isinf(x):
        return x if x > 0 or math.isnan(x) else 0.0
    try:
        r = math.exp(x)
    except OverflowError:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow") from None
    if r == 0.0:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: underflow")
    return r


def numeric_result(e) -> bool:
    """``result_text`` of the numeric logarithms, exponential, root and power: Spark has
    these in double precision only, where PostgreSQL computes a numeric result exactly to
    16 or more significant digits, with a scale of its own per value (numeric.c), so the
    replica runs the Python implementation (``by_python``). A query's result column of
    such a call is sent as its text, with PostgreSQL's scale; inside an expression it is
    a decimal of the unconstrained numeric's scale (``catalog.types.UNCONSTRAINED_NUMERIC``)."""
    return e.type.name == "numeric"


def _float_fn(spark_name):
    def spark(S, a, e):
        if e.type.name == "numeric" or spark_name in ("exp", "cbrt"):
            # Java's exp and cbrt differ from the C library's (PostgreSQL's) in the last digit
            return by_python(S, a, e)
        r = getattr(S.F, spark_name)(a[0])
        if spark_name in ("sqrt",):
            r = S.F.when(a[0] < 0, S.fail(INVALID_ARGUMENT_FOR_POWER_FUNCTION, "cannot take square root of a negative number")).otherwise(r)
        if spark_name in ("ln", "log10"):
            r = S.F.when(a[0] == 0, S.fail(INVALID_ARGUMENT_FOR_LOGARITHM, "cannot take logarithm of zero")).when(
                a[0] < 0, S.fail(INVALID_ARGUMENT_FOR_LOGARITHM, "cannot take logarithm of a negative number")).otherwise(r)
        return r.cast(S.spark_type(e.type))
    return spark


def _power_py(a, e):
    x, y = a
    if x == 0 and y < 0:
        raise SqlError(INVALID_ARGUMENT_FOR_POWER_FUNCTION, "zero raised to a negative power is undefined")
    if x < 0 and y != int(y):
        raise SqlError(INVALID_ARGUMENT_FOR_POWER_FUNCTION, "a negative number raised to a non-integer power yields a complex result")
    if e.type.name == "numeric":
        if y == y.to_integral_value() and -2**31 <= y < 2**31:
            return numeric_power_int(x, int(y), _display_scale(y))
        return numeric_power(x, y)
    try:
        return math.pow(float(x), float(y))
    except OverflowError:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow") from None


def _overflows() -> SqlError:
    return SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")


def numeric_power_int(x: Decimal, n: int, n_scale: int) -> Decimal:
    """x ^ n on numeric for an integral exponent ``n`` (of display scale ``n_scale``),
    correctly rounded to PostgreSQL's scale: 16 - the result's decimal weight (n *
    log10(|x|), truncated), never below either argument's scale (numeric.c power_var_int).

    Raises:
        SqlError 22003 when the result overflows numeric (a weight above 131072 digits)."""
    f = n * float(x.copy_abs().log10()) if x != 0 else 0.0
    if f > 131072:  # (NUMERIC_WEIGHT_MAX + 1) * DEC_DIGITS
        raise _overflows()
    if f + 1 < -1000:  # below NUMERIC_MAX_DISPLAY_SCALE: zero
        return Decimal(0).scaleb(-1000)
    rscale = min(max(16 - int(f), _display_scale(x), n_scale, 0), 1000)
    with localcontext() as ctx:
        ctx.prec = max(int(f), 0) + rscale + 20
        ctx.Emin, ctx.Emax = -999999, 999999
        r = Decimal(1) if n == 0 else x ** n
        return r.quantize(Decimal(1).scaleb(-rscale), rounding=ROUND_HALF_UP)


def numeric_power(x: Decimal, y: Decimal) -> Decimal:
    """x ^ y on numeric for a non-integer ``y``, correctly rounded to PostgreSQL's scale:
    16 - the result's decimal weight (y * ln(x) * log10(e), truncated), never below the
    arguments' scales; 0 ^ y is 0 with 16 decimals (numeric.c power_var).

    Raises:
        SqlError 22003 when the result overflows numeric (y * ln(x) above 6020)."""
    if x == 0:
        return Decimal(0).quantize(Decimal(1).scaleb(-16))
    with localcontext() as ctx:
        ctx.prec = 40
        val = float(y) * float(x.ln())  # power_var's first estimate, exp * ln(base)
    if abs(val) > 6020:  # NUMERIC_MAX_RESULT_SCALE * 3.01
        if val > 0:
            raise _overflows()
        return Decimal(0).scaleb(-1000)
    weight = int(val * 0.434294481903252)
    rscale = min(max(16 - weight, _display_scale(x), _display_scale(y), 0), 1000)
    with localcontext() as ctx:
        ctx.prec = max(weight, 0) + rscale + 20
        return (x ** y).quantize(Decimal(1).scaleb(-rscale), rounding=ROUND_HALF_UP)


def _div_int(a, e):
    if a[0].is_nan() or a[1].is_nan():
        return Decimal("NaN")
    if a[1] == 0:
        raise div0()
    with localcontext() as ctx:
        ctx.prec = 1100
        return (a[0] / a[1]).to_integral_value(rounding=ROUND_DOWN)


def _sign_flip_spark(f):
    """Spark: unary minus or abs of ``a[0]``; of an integer type's minimum that is out of
    the type's range (PostgreSQL: 22003 ``integer out of range``), which Spark would
    report in its own words."""
    def spark(S, a, e):
        x = a[0]
        r = f(S, x)
        if e.type.name in ("int2", "int4", "int8"):
            lo, _, name = INT_RANGES[e.type.name]
            return S.F.when(x == S.F.lit(lo).cast(S.spark_type(e.type)),
                            S.fail(NUMERIC_VALUE_OUT_OF_RANGE, f"{name} out of range")).otherwise(r)
        return r
    return spark


def _mod_py(a, e):
    return arith("mod", a[0], a[1], e.type, e.args[0].type, e.args[1].type)


NUMS = ("int2", "int4", "int8", "numeric")


def _same_type(kinds, n: int = 1):
    return tuple(sig(*([k] * n), ret=k) for k in kinds)


register(
    Function("add", (), lambda a, e: arith("add", *a, e.type, e.args[0].type, e.args[1].type), _arith_spark("add"),
             doc="9.3", samples=("i + k", "n + 1", "f + i", "d + k", "ts + interval '1 day'",
                                 "make_interval(hours => k) + ts::timestamptz", "ts::time + make_interval(hours => k * 7)",
                                 "interval '1 day 90 minutes' + ts::time", "d + ts::time", "ts::time + d",
                                 "ts::time + make_interval(hours => -i * 9, secs => f)", "d + (ts::time || '-05')::timetz",
                                 "(ts::time || '+02')::timetz + d", "(ts::time || '+02')::timetz + make_interval(hours => k * 7)",
                                 "make_interval(mins => i * 100) + (ts::time || '-03')::timetz")),
    Function("sub", (), lambda a, e: arith("sub", *a, e.type, e.args[0].type, e.args[1].type), _arith_spark("sub"),
             doc="9.3", samples=("i - k", "n - i", "d - date '2000-01-01'", "ts - interval '1 month'",
                                 "ts - timestamp '2000-01-01 12:00'", "timestamp '2000-02-29 01:00' - ts",
                                 "ts::timestamptz - timestamptz '2000-01-01 12:00+00'", "ts - ts::timestamptz",
                                 "ts::time - interval '1 day 14 hours'", "ts::time - make_interval(mins => i * 500)",
                                 "ts::time - time '12:00:00.25'", "time '01:00' - ts::time",
                                 "(ts::time || '+02')::timetz - make_interval(days => 1, hours => 14 * k)")),
    Function("mul", (), lambda a, e: arith("mul", *a, e.type, e.args[0].type, e.args[1].type), _arith_spark("mul"),
             doc="9.3", samples=("i * k", "n * 2", "f * 2")),
    Function("div", (), lambda a, e: arith("div", *a, e.type, e.args[0].type, e.args[1].type), _arith_spark("div"),
             doc="9.3", samples=("i / k", "7 / k", "f / 4", "i / 0")),
    Function("mod", _same_type(("int2", "int4", "int8", "numeric"), 2), _mod_py, _arith_spark("mod"),
             sql_names=("mod",), doc="9.3", samples=("mod(i, 3)", "i % k", "mod(k, 0)")),
    Function("neg", (), lambda a, e: check_int(-a[0], e.type) if e.type.is_integer else -a[0],
             _sign_flip_spark(lambda S, x: -x), doc="9.3",
             samples=("-i", "-n")),
    Function("pos", (), lambda a, e: a[0], lambda S, a, e: a[0], doc="9.3", samples=("+i",)),
    Function("abs", _same_type(("int2", "int4", "int8", "numeric", "float4", "float8")),
             lambda a, e: check_int(abs(a[0]), e.type) if e.type.is_integer else abs(a[0]),
             _sign_flip_spark(lambda S, x: S.F.abs(x)), sql_names=("abs",), doc="9.3",
             samples=("abs(i)", "abs(n)", "abs(f)", "@ i", "@ f")),
    Function("round", (sig("float8", ret="float8"), sig("numeric", ret="numeric"), sig("numeric", "int4", ret="numeric")),
             _round_py("round"), _round_spark, sql_names=("round",), doc="9.3",
             samples=("round(n)", "round(n, 1)", "round(f)", "round(i)"),
             differs="a negative zero result prints as 0 (PostgreSQL: -0)"),
    Function("trunc", (sig("float8", ret="float8"), sig("numeric", ret="numeric"), sig("numeric", "int4", ret="numeric")),
             _round_py("trunc"), _trunc_spark, sql_names=("trunc",), doc="9.3",
             samples=("trunc(n)", "trunc(n, 1)", "trunc(f)"),
             differs="a negative zero result prints as 0 (PostgreSQL: -0)"),
    Function("floor", (sig("float8", ret="float8"), sig("numeric", ret="numeric")), _floor_py("floor"),
             lambda S, a, e: S.F.floor(a[0]).cast(S.spark_type(e.type) if e.type.name == "float8"
                                                  else S.T.DecimalType(38, 0)),
             sql_names=("floor",), doc="9.3", samples=("floor(n)", "floor(f)")),
    Function("ceil", (sig("float8", ret="float8"), sig("numeric", ret="numeric")), _floor_py("ceil"),
             lambda S, a, e: S.F.ceil(a[0]).cast(S.spark_type(e.type) if e.type.name == "float8"
                                                 else S.T.DecimalType(38, 0)),
             sql_names=("ceil", "ceiling"), doc="9.3", samples=("ceil(n)", "ceiling(f)"),
             differs="a negative zero result prints as 0 (PostgreSQL: -0)"),
    Function("sign", (sig("float8", ret="float8"), sig("numeric", ret="numeric")), _sign_py,
             lambda S, a, e: S.F.signum(a[0]).cast(S.T.DoubleType() if e.type.name == "float8"
                                                   else S.T.DecimalType(38, 0)),
             sql_names=("sign",), doc="9.3", samples=("sign(n)", "sign(f)", "sign(i)")),
    Function("sqrt", (sig("float8", ret="float8"), sig("numeric", ret="numeric")), _transcendental("sqrt"),
             _float_fn("sqrt"), sql_names=("sqrt",), doc="9.3", extra={"result_text": numeric_result},
             samples=("sqrt(f)", "sqrt(abs(f))", "|/ k", "sqrt(abs(n))", "sqrt(n)", "|/ (abs(n) * 1e6)")),
    Function("cbrt", (sig("float8", ret="float8"),), _transcendental("cbrt"), _float_fn("cbrt"),
             sql_names=("cbrt",), doc="9.3", samples=("cbrt(f)", "cbrt(k * 9.0)", "||/ f")),
    Function("ln", (sig("float8", ret="float8"), sig("numeric", ret="numeric")), _transcendental("ln"),
             _float_fn("ln"), sql_names=("ln",), doc="9.3", extra={"result_text": numeric_result},
             samples=("ln(f)", "ln(abs(n) + 0.001)", "ln(n)", "ln(k + 0.0)")),
    Function("log10", (sig("float8", ret="float8"), sig("numeric", ret="numeric")), _transcendental("log10"),
             _float_fn("log10"), sql_names=("log", "log10"), doc="9.3", extra={"result_text": numeric_result},
             samples=("log(f)", "log(abs(n) + 1)", "log10(n)", "log(k * 10.0)")),
    Function("exp", (sig("float8", ret="float8"), sig("numeric", ret="numeric")), _transcendental("exp"),
             _float_fn("exp"), sql_names=("exp",), doc="9.3", extra={"result_text": numeric_result},
             samples=("exp(f)", "exp(i::float8)", "exp(CASE WHEN k = 3 THEN f END)", "exp(n)", "exp(k - 1.0)",
                      "exp(-n * 3)", "exp(n - 12340)", "exp(-f / 1e7)", "exp(f / 1e7 * 0.7)", "exp(k * -150.0::float8)")),
    Function("power", (sig("float8", "float8", ret="float8"), sig("numeric", "numeric", ret="numeric")), _power_py,
             lambda S, a, e: by_python(S, a, e) if e.type.name == "numeric" else S.F.pow(a[0], a[1]),
             sql_names=("power", "pow"), doc="9.3", extra={"result_text": numeric_result},
             samples=("power(f, 2)", "power(i::float8, 2)", "f ^ 2", "k ^ 2", "power(abs(n), 0.5)", "n ^ 2.0",
                      "pow(k + 0.5, n)", "power(n, -1.5)", "2.0 ^ k")),
    Function("pi", (sig(ret="float8"),), lambda a, e: math.pi, lambda S, a, e: S.F.lit(math.pi),
             sql_names=("pi",), doc="9.3", samples=("pi() * i",)),
    Function("degrees", (sig("float8", ret="float8"),), lambda a, e: math.degrees(a[0]),
             lambda S, a, e: S.F.degrees(a[0]), sql_names=("degrees",), doc="9.3", samples=("degrees(f)",)),
    Function("radians", (sig("float8", ret="float8"),), lambda a, e: math.radians(a[0]),
             lambda S, a, e: S.F.radians(a[0]), sql_names=("radians",), doc="9.3", samples=("radians(f)",)),
    Function("random", (sig(ret="float8"),), lambda a, e: _random.random(), lambda S, a, e: S.F.rand(),
             sql_names=("random",), volatility="volatile", doc="9.3", samples=("random() < 1.0",)),
    Function("div_int", (sig("numeric", "numeric", ret="numeric"),), _div_int,
             lambda S, a, e: S.F.call_function("div", a[0], a[1]).cast(S.T.DecimalType(38, 0)),
             sql_names=("div",), doc="9.3", samples=("div(n, 2)", "div(i, 2)")),
)


# -- precision of numeric logarithms and exponentials (numeric.c) ---------------------------


def _ln_dweight(x: Decimal) -> int:
    """PostgreSQL's estimate_ln_dweight: the decimal weight of ln(x), which sets the
    result scale of ln, log and exp on numeric (16 significant digits at least)."""
    if Decimal("0.9") <= x <= Decimal("1.1"):
        d = x - 1
        return d.adjusted() if d != 0 else 0
    return int(math.log10(abs(math.log(float(x))))) if x != 1 else 0


def _display_scale(x: Decimal) -> int:
    return max(-x.as_tuple().exponent, 0) if x.is_finite() else 0


def numeric_log(base: Decimal | None, x: Decimal) -> Decimal:
    """ln(x) (``base`` None) or log_base(x) on numeric, correctly rounded to PostgreSQL's
    result scale: 16 - the result's decimal weight, never fewer decimals than an argument
    (numeric.c log_var, numeric_ln).

    Raises:
        SqlError 2201E for a zero or negative argument; 22012 for base 1."""
    for v in (x,) if base is None else (base, x):
        _check_ln(v)
    if x.is_nan() or (base is not None and base.is_nan()):
        return Decimal("NaN")
    with localcontext() as ctx:
        ctx.prec = 60
        if base is None:
            r, weight, scale = x.ln(), _ln_dweight(x), _display_scale(x)
        else:
            if base == 1:
                raise div0()
            r = x.ln() / base.ln()
            weight = _ln_dweight(x) - _ln_dweight(base)
            scale = max(_display_scale(x), _display_scale(base))
        rscale = min(max(16 - weight, scale, 0), 1000)
        return r.quantize(Decimal(1).scaleb(-rscale), rounding=ROUND_HALF_UP)


def numeric_exp_exact(x: Decimal) -> Decimal:
    """exp(numeric), correctly rounded to PostgreSQL's scale: 16 - (int)(x * log10(e)),
    never below the argument's (numeric.c numeric_exp).

    Raises:
        SqlError 22003 when the result overflows numeric."""
    if x.is_nan():
        return x
    dweight = int(min(max(float(x) * 0.434294481903252, -2000), 2000))
    rscale = min(max(16 - dweight, _display_scale(x), 0), 1000)
    if abs(x) >= 6000:  # exp_var's guard (NUMERIC_MAX_RESULT_SCALE * 3)
        if x > 0:
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
        return Decimal(0).quantize(Decimal(1).scaleb(-rscale))
    with localcontext() as ctx:
        ctx.prec = max(dweight, 0) + rscale + 10
        return x.exp().quantize(Decimal(1).scaleb(-rscale), rounding=ROUND_HALF_UP)


def numeric_sqrt(x: Decimal) -> Decimal:
    """sqrt(numeric) to PostgreSQL's scale: 16 - the root's weight (numeric.c numeric_sqrt,
    with weights in base-10000 digits).

    Raises:
        SqlError 2201F for a negative argument."""
    _check_sqrt(x)
    if x.is_nan():
        return x
    weight = (x.adjusted() // 4) if x != 0 else 0
    rscale = min(max(16 - ((weight + 1) * 4 // 2 - 1), _display_scale(x), 0), 1000)
    with localcontext() as ctx:
        ctx.prec = rscale + 60
        return x.sqrt().quantize(Decimal(1).scaleb(-rscale), rounding=ROUND_HALF_UP)


# -- gcd and lcm (PostgreSQL 9.3, table 9.5) ------------------------------------------------


def _gcd_lcm_py(rule):
    """gcd or lcm (``rule``: math.gcd or math.lcm) of two integers, or of two numerics
    scaled to integers by the larger of their scales (numeric.c gcd_var)."""
    def py(a, e):
        x, y = a
        if isinstance(x, Decimal):
            if x.is_nan() or y.is_nan():
                return Decimal("NaN")
            scale = max(_display_scale(x), _display_scale(y))
            r = rule(int(x.scaleb(scale)), int(y.scaleb(scale)))
            return Decimal(r).scaleb(-scale).quantize(Decimal(1).scaleb(-scale))
        return check_int(rule(x, y), e.type)
    return py


#: Euclid's steps that suffice per type: consecutive Fibonacci numbers are the slowest
#: pair, and the 47th, 93rd and 183rd exceed int4, int8 and 10^38 (Spark's widest decimal)
_EUCLID_STEPS = {"int2": 24, "int4": 47, "int8": 93, "numeric": 183}


def _gcd_steps_spark(S, x, y, steps: int):
    """gcd of two integral Spark columns of one type, non-negative: Euclid as a fold over a
    fixed number of steps (Spark has no gcd function)."""
    F = S.F
    start = F.struct(F.abs(x).alias("a"), F.abs(y).alias("b"))
    return F.aggregate(F.sequence(F.lit(1), F.lit(steps)), start, lambda acc, _: F.when(acc["b"] == 0, acc).otherwise(
        F.struct(acc["b"].alias("a"), (acc["a"] % F.when(acc["b"] == 0, F.lit(1)).otherwise(acc["b"])).alias("b"))),
        lambda acc: acc["a"])


def static_scale(x) -> int | None:
    """The decimal scale a numeric plan expression has on Spark, where every value of a
    column has its column's scale: a numeric(p, s) column's s, a literal's own, the sum,
    difference, product or negation of such (PostgreSQL's rules, which are Spark's within
    38 digits); None when only Spark's decimal arithmetic knows it."""
    t = x.type
    if t.is_integer:
        return 0
    if t.scale is not None:
        return t.scale
    if x.__class__.__name__ == "Literal" and isinstance(x.value, Decimal):
        return _display_scale(x.value)
    if x.__class__.__name__ == "Cast":
        return static_scale(x.expr)
    if x.__class__.__name__ == "Call" and x.func in ("add", "sub", "mul", "neg"):
        # PostgreSQL's result scales (numeric.c add_var, sub_var, mul_var), which are
        # Spark's too while a result's precision stays within 38 digits
        scales = [static_scale(a) for a in x.args]
        if None in scales:
            return None
        return sum(scales) if x.func == "mul" else max(scales)
    return None


def _gcd_lcm_spark(lcm: bool):
    def spark(S, a, e):
        F, T = S.F, S.T
        x, y = a
        if e.type.name != "numeric":
            g = _gcd_steps_spark(S, x, y, _EUCLID_STEPS[e.type.name])
            if not lcm:
                return g
            lo, hi, name = INT_RANGES[e.type.name]
            wide = (F.abs(x.cast("decimal(38,0)")) / F.when(g == 0, 1).otherwise(g).cast("decimal(38,0)")
                    * F.abs(y.cast("decimal(38,0)")))
            return F.when(g == 0, F.lit(0).cast(S.spark_type(e.type))).when(
                (wide < lo) | (wide > hi), S.fail(NUMERIC_VALUE_OUT_OF_RANGE, f"{name} out of range")).otherwise(
                wide.cast(S.spark_type(e.type)))
        # the integers gcd_var works on, at the larger scale: an unconstrained numeric's is
        # its stored one (its value's own is at most that; its text takes the value's:
        # Lowerer.numeric_scale)
        scale = max(UNCONSTRAINED_NUMERIC[1] if s is None else s for s in map(static_scale, e.args))
        whole = T.DecimalType(38, 0)
        ix, iy = ((v * F.lit(Decimal(10) ** scale)).cast(whole) for v in (x, y))
        g = _gcd_steps_spark(S, ix, iy, _EUCLID_STEPS["numeric"])
        if lcm:
            g = F.when(g == 0, F.lit(0).cast(whole)).otherwise(
                (F.abs(ix) / g).cast(whole) * F.abs(iy)).cast(whole)
        return (g.cast(T.DecimalType(38, scale)) / F.lit(Decimal(10) ** scale)).cast(T.DecimalType(38, scale))
    return spark


# -- width_bucket (PostgreSQL 9.3, table 9.5) -------------------------------------------------


def _width_bucket_check(low, high, count):
    if count <= 0:
        raise SqlError(INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION, "count must be greater than zero")
    if low == high:
        raise SqlError(INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION, "lower bound cannot equal upper bound")


def _width_bucket_py(a, e):
    op, low, high, count = a
    _width_bucket_check(low, high, count)
    if any(isinstance(v, float) and math.isnan(v) or isinstance(v, Decimal) and v.is_nan() for v in (op, low, high)):
        raise SqlError(INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION, "operand, lower bound, and upper bound cannot be NaN")
    if isinstance(op, float) and (math.isinf(low) or math.isinf(high)):
        raise SqlError(INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION, "lower and upper bounds must be finite")
    if low < high:
        if op < low:
            return 0
        if op >= high:
            return check_int(count + 1, e.type)
        frac = (op - low) / (high - low) if isinstance(op, float) else None
    else:
        if op > low:
            return 0
        if op <= high:
            return check_int(count + 1, e.type)
        frac = (low - op) / (low - high) if isinstance(op, float) else None
    if frac is None:  # numeric: exact, (op - low) * count // (high - low)
        num, den = (op - low, high - low) if low < high else (low - op, low - high)
        with localcontext() as ctx:
            ctx.prec = 1100
            return int((num * count / den).to_integral_value(rounding=ROUND_FLOOR)) + 1
    return min(int(frac * count) + 1, count)  # float.c: rounding may not reach count + 1


def _width_bucket_spark(S, a, e):
    F = S.F
    return F.when(any_null(a), F.lit(None).cast("int")).otherwise(_width_bucket_column(S, a, e))


def any_null(cols):
    """A Spark condition: some column of ``cols`` is NULL (a strict function's NULL)."""
    cond = cols[0].isNull()
    for c in cols[1:]:
        cond = cond | c.isNull()
    return cond


def _width_bucket_column(S, a, e):
    F = S.F
    op, low, high, count = a
    float_ = e.args[0].type.name == "float8"
    up = low < high
    frac = F.when(up, (op - low) / (high - low)).otherwise((low - op) / (low - high))
    inside = F.floor(frac * count).cast("int") + 1 if float_ else F.floor(
        F.when(up, (op - low) * count / (high - low)).otherwise((low - op) * count / (low - high))).cast("int") + 1
    if float_:
        inside = F.least(inside, count)
    r = (F.when(count <= 0, S.fail(INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION, "count must be greater than zero"))
         .when(low == high, S.fail(INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION, "lower bound cannot equal upper bound")))
    if float_:
        r = r.when(F.isnan(op) | F.isnan(low) | F.isnan(high),
                   S.fail(INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION, "operand, lower bound, and upper bound cannot be NaN")).when(
            (F.abs(low) == math.inf) | (F.abs(high) == math.inf), S.fail(INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION, "lower and upper bounds must be finite"))
    return (r.when(up & (op < low), 0).when(up & (op >= high), count + 1)
            .when(~up & (op > low), 0).when(~up & (op <= high), count + 1).otherwise(inside))


# -- integer bit operators (PostgreSQL 9.3, table 9.4) -----------------------------------------

_BITS = {"int2": 16, "int4": 32, "int8": 64}


def _wrap(v: int, bits: int) -> int:
    """``v`` as a two's complement integer of ``bits`` bits (C's shift results)."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _shift_py(left: bool):
    def py(a, e):
        bits = _BITS[e.type.name]
        n = a[1] % (64 if bits == 64 else 32)  # x86 masks the count to the promoted width
        return _wrap(a[0] << n if left else a[0] >> n, bits)
    return py


def _shift_spark(left: bool):
    def spark(S, a, e):
        F = S.F
        x = a[0].cast("int") if e.type.name == "int2" else a[0]
        r = F.shiftleft(x, a[1]) if left else F.shiftright(x, a[1])
        if e.type.name == "int2":  # the low 16 bits, as C's conversion to int16
            low = F.pmod(r, F.lit(65536))
            r = F.when(low >= 32768, low - 65536).otherwise(low).cast("smallint")
        return r
    return spark


register(
    Function("int_and", (), lambda a, e: a[0] & a[1], lambda S, a, e: a[0].bitwiseAND(a[1]), doc="9.3",
             samples=("i & 3", "k & i", "i::int8 & 6", "i::int2 & 7::int2")),
    Function("int_or", (), lambda a, e: a[0] | a[1], lambda S, a, e: a[0].bitwiseOR(a[1]), doc="9.3",
             samples=("i | 4", "k | i")),
    Function("int_xor", (), lambda a, e: a[0] ^ a[1], lambda S, a, e: a[0].bitwiseXOR(a[1]), doc="9.3",
             samples=("i # 5", "k::int8 # i")),
    Function("int_not", (), lambda a, e: ~a[0], lambda S, a, e: S.F.bitwise_not(a[0]), doc="9.3",
             samples=("~i", "~k::int8")),
    Function("int_shl", (), _shift_py(True), _shift_spark(True), doc="9.3",
             samples=("i << 2", "k << 30", "i::int8 << 40", "i::int2 << 14", "k << 33")),
    Function("int_shr", (), _shift_py(False), _shift_spark(False), doc="9.3",
             samples=("i >> 1", "i::int8 >> k", "i::int2 >> 1")),
    Function("gcd", _same_type(("int4", "int8", "numeric"), 2), _gcd_lcm_py(math.gcd), _gcd_lcm_spark(False), sql_names=("gcd",),
             doc="9.3", samples=("gcd(i, 6)", "gcd(k::int8, 4)", "gcd(n, 1.5)", "gcd(i, 0)")),
    Function("lcm", _same_type(("int4", "int8", "numeric"), 2), _gcd_lcm_py(math.lcm), _gcd_lcm_spark(True), sql_names=("lcm",),
             doc="9.3", samples=("lcm(i, 6)", "lcm(k::int8, 4)", "lcm(n, 0.5)", "lcm(i, 0)", "lcm(i + 2147483000, 7)")),
    Function("log_base", (sig("numeric", "numeric", ret="numeric"),), lambda a, e: numeric_log(a[0], a[1]),
             by_python, sql_names=("log",), doc="9.3", extra={"result_text": numeric_result},
             samples=("log(2, abs(n) + 1)", "log(2.0, i)", "log(k + 1.5, 100)", "log(n, 8)")),
    Function("width_bucket", (sig("float8", "float8", "float8", "int4", ret="int4"),
                              sig("numeric", "numeric", "numeric", "int4", ret="int4")),
             _width_bucket_py, _width_bucket_spark, sql_names=("width_bucket",), doc="9.3",
             samples=("width_bucket(f, 0, 10, 5)", "width_bucket(n, -3, 20000, 4)", "width_bucket(f, 10, 0, k)",
                      "width_bucket(n, 5, -5, 3)", "width_bucket(f, 0, 10, 0)", "width_bucket(n, 1, 1, 3)")),
)


# -- hyperbolic functions, factorial, scale, num_nulls (PostgreSQL 9.3, tables 9.5 and 9.9) ---


def _hyperbolic(name):
    rule = {"sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh, "asinh": math.asinh, "acosh": math.acosh,
            "atanh": math.atanh}[name]

    def py(a, e):
        x = a[0]
        if math.isnan(x):
            return x
        if name == "acosh" and x < 1 or name == "atanh" and not -1 <= x <= 1:
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "input is out of range")
        if name == "atanh" and abs(x) == 1:
            return math.copysign(math.inf, x)
        try:
            return rule(x)
        except OverflowError:  # C's sinh/cosh give an infinity; float.c reports it
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow") from None
    return py


def _factorial_py(a, e):
    n = a[0]
    if n < 0:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "factorial of a negative number is undefined")
    if n > 32177:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
    return Decimal(math.factorial(n))


def _factorial_spark(S, a, e):
    F = S.F
    n = a[0]
    return (F.when(n < 0, S.fail(NUMERIC_VALUE_OUT_OF_RANGE, "factorial of a negative number is undefined"))
            .when(n > 20, S.fail(FEATURE_NOT_SUPPORTED, "factorial of more than 20 is not supported on table data (Spark's "
                                          "decimals stop at 38 digits)"))
            .otherwise(F.factorial(n.cast("int")).cast("decimal(38,0)")))


def _scale_spark(S, a, e):
    scale = static_scale(e.args[0])
    if scale is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "scale(numeric) on table data needs a column or a constant")
    return S.F.when(a[0].isNotNull(), S.F.lit(scale))


def _num_nulls(nulls: bool):
    def py(a, e):
        return sum((v is None) == nulls for v in a)

    def spark(S, a, e):
        F = S.F
        total = F.lit(0)
        for c in a:
            total = total + F.when(c.isNull() if nulls else c.isNotNull(), 1).otherwise(0)
        return total
    return py, spark


register(
    # on Spark through the C library's functions (by_python): Java's differ from them, and
    # so from PostgreSQL's, in the last digit
    *[Function(name, (sig("float8", ret="float8"),), _hyperbolic(name), by_python, sql_names=(name,),
               doc="9.3", samples=(f"{name}(k / 2.0)", f"{name}(CASE WHEN k = 3 THEN f END)", f"{name}(f / 1e8 - 1)"))
      for name in ("sinh", "cosh", "tanh", "asinh", "acosh", "atanh")],
    Function("factorial", (sig("int8", ret="numeric"),), _factorial_py, _factorial_spark, sql_names=("factorial",),
             doc="9.3", samples=("factorial(k)", "factorial(i)", "factorial(k + 15)")),
    Function("scale", (sig("numeric", ret="int4"),), lambda a, e: _display_scale(a[0]), _scale_spark,
             sql_names=("scale",), doc="9.3", samples=("scale(n)", "scale(k::numeric)", "scale(1.5)")),
    Function("num_nulls", (sig("any", ret="int4", variadic=True),), *_num_nulls(True), sql_names=("num_nulls",),
             strict=False, doc="9.2", samples=("num_nulls(i, s, k)", "num_nulls(n)")),
    Function("num_nonnulls", (sig("any", ret="int4", variadic=True),), *_num_nulls(False),
             sql_names=("num_nonnulls",), strict=False, doc="9.2", samples=("num_nonnulls(i, s, k)",)),
)


# -- random with bounds, random_normal, min_scale (PostgreSQL 9.3, tables 9.6 and 9.5) ---------


def _random_bounds_check(lo, hi):
    if lo > hi:
        raise SqlError(INVALID_PARAMETER_VALUE, "lower bound must be less than or equal to upper bound")


def _random_between_py(a, e):
    """A random value in [lo, hi]: an integer, or a numeric of the larger of the bounds'
    scales (PostgreSQL 17's random(min, max))."""
    lo, hi = a
    _random_bounds_check(lo, hi)
    if isinstance(lo, int):
        return _random.randint(lo, hi)
    scale = max(_display_scale(lo), _display_scale(hi))
    step = Decimal(1).scaleb(-scale)
    n = int((hi - lo) / step)
    return (lo + _random.randint(0, n) * step).quantize(step)


def _random_between_spark(S, a, e):
    F = S.F
    lo, hi = a
    if e.type.name == "numeric":
        scales = [static_scale(x) for x in e.args]
        if None in scales:
            raise SqlError(FEATURE_NOT_SUPPORTED, "random(numeric, numeric) on table data needs bounds of a known scale "
                                    "(a column or a constant)")
        scale = max(scales)
        unit = F.lit(Decimal(10) ** scale)
        steps = ((hi - lo) * unit).cast("decimal(38,0)")
        r = (lo + F.floor(F.rand() * (steps + 1).cast("double")).cast("decimal(38,0)") / unit)
        r = r.cast(S.T.DecimalType(38, scale))
    else:
        span = (hi.cast("decimal(38,0)") - lo.cast("decimal(38,0)") + 1).cast("double")
        r = (lo.cast("decimal(38,0)") + F.floor(F.rand() * span).cast("decimal(38,0)")).cast(S.spark_type(e.type))
    return F.when(lo > hi, S.fail(INVALID_PARAMETER_VALUE, "lower bound must be less than or equal to upper bound")).otherwise(r)


def _min_scale_py(a, e):
    v = a[0]
    if v.is_nan():
        return None
    return max(-v.normalize().as_tuple().exponent, 0) if v != 0 else 0


def _min_scale_spark(S, a, e):
    F = S.F
    scale = static_scale(e.args[0])
    if scale is None:  # Spark's decimal arithmetic decides it: at most its widest
        scale = 38
    x = a[0]
    r = F.lit(scale)
    for s in reversed(range(scale)):  # the fewest decimals that hold x exactly
        r = F.when(x % F.lit(Decimal(1).scaleb(-s)) == 0, F.lit(s)).otherwise(r)
    return F.when(x.isNotNull(), r)


def _trim_scale_py(a, e) -> Decimal:
    """trim_scale(numeric): the value without the trailing zeros of its fraction
    (numeric.c numeric_trim_scale); an integer keeps its digits."""
    x = a[0]
    if not x.is_finite() or x == x.to_integral_value():
        return x.quantize(Decimal(1)) if x.is_finite() else x
    return x.normalize()


register(
    Function("random_between", (sig("int4", "int4", ret="int4"), sig("int8", "int8", ret="int8"),
                                sig("numeric", "numeric", ret="numeric")),
             _random_between_py, _random_between_spark, sql_names=("random",), volatility="volatile", doc="9.3",
             samples=("random(k, k)", "random(i::int8, i::int8)", "random(k, k + 2) between k and k + 2",
                      "random(n, n)", "random(k, 1)", "random(1.5, 1.5)")),
    Function("random_normal", (sig("float8", "float8", ret="float8"),),
             lambda a, e: _random.gauss(a[0], a[1]), lambda S, a, e: S.F.randn() * a[1] + a[0],
             sql_names=("random_normal",), volatility="volatile", doc="9.3",
             samples=("random_normal(k, 0)", "random_normal(f, 0)")),
    Function("min_scale", (sig("numeric", ret="int4"),), _min_scale_py, _min_scale_spark, sql_names=("min_scale",),
             doc="9.3", samples=("min_scale(n)", "min_scale(n * 10)", "min_scale(k::numeric / 8)")),
    # the value is the argument's; its scale, each value's own, is given by its text
    # (result_text: a result column or a cast to text runs the Python implementation)
    Function("trim_scale", (sig("numeric", ret="numeric"),), _trim_scale_py, lambda S, a, e: a[0],
             sql_names=("trim_scale",), doc="9.3", extra={"result_text": numeric_result},
             samples=("trim_scale(n)", "trim_scale(n * 10)", "trim_scale(k * 1.000)", "trim_scale(n - n + 100)")),
)


# -- error and gamma functions (PostgreSQL 9.3, table 9.5) -------------------------------------


@functools.cache
def _libm():
    """The C library's math functions, as PostgreSQL's float.c calls them (erf, erfc,
    tgamma, lgamma of the system's libm): Python's math module computes gamma and lgamma
    itself, and Spark has none of them."""
    import ctypes
    import ctypes.util

    m = ctypes.CDLL(ctypes.util.find_library("m"), use_errno=True)
    for name in ("erf", "erfc", "tgamma", "lgamma"):
        getattr(m, name).restype = ctypes.c_double
        getattr(m, name).argtypes = [ctypes.c_double]
    return m


def _out_of_range(what: str) -> SqlError:
    return SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"value out of range: {what}")


def _gamma_py(a, e) -> float:
    """gamma(x): float.c dgamma: NaN is NaN, +Infinity itself, -Infinity and poles
    overflow, a result that rounds to zero underflows.

    Raises:
        SqlError 22003 for an overflow or underflow."""
    import ctypes

    x = a[0]
    if math.isnan(x):
        return x
    if math.isinf(x):
        if x < 0:
            raise _out_of_range("overflow")
        return x
    ctypes.set_errno(0)
    r = _libm().tgamma(x)
    if ctypes.get_errno() != 0 or math.isinf(r) or math.isnan(r):
        raise _out_of_range("overflow" if r != 0.0 else "underflow")
    if r == 0.0:
        raise _out_of_range("underflow")
    return r


def _lgamma_py(a, e) -> float:
    """lgamma(x): float.c dlgamma: an infinite result of a finite argument overflows.

    Raises:
        SqlError 22003 for an overflow."""
    r = _libm().lgamma(a[0])
    if math.isinf(r) and not math.isinf(a[0]):
        raise _out_of_range("overflow")
    return r


register(
    Function("erf", (sig("float8", ret="float8"),), lambda a, e: _libm().erf(a[0]), by_python, sql_names=("erf",),
             doc="9.3", samples=("erf(f)", "erf(i / 10.0)")),
    Function("erfc", (sig("float8", ret="float8"),), lambda a, e: _libm().erfc(a[0]), by_python,
             sql_names=("erfc",), doc="9.3", samples=("erfc(f)", "erfc(i / 10.0)")),
    Function("gamma", (sig("float8", ret="float8"),), _gamma_py, by_python, sql_names=("gamma",), doc="9.3",
             samples=("gamma(CASE WHEN k < 3 THEN f END)", "gamma(k * 0.7)", "gamma(f)", "gamma(-f * 400 - 0.5)")),
    Function("lgamma", (sig("float8", ret="float8"),), _lgamma_py, by_python, sql_names=("lgamma",), doc="9.3",
             samples=("lgamma(abs(f) + 1)", "lgamma(k * -0.7)", "lgamma(f)")),
)
