"""Mathematical operators and functions (PostgreSQL 9.3), and the date/time arithmetic
operators that share their names (9.9, table 9.33). Operator resolution is
``planner.typing.resolve_binary``'s; these are the implementations."""

from __future__ import annotations

import math
import random as _random
from decimal import Decimal, localcontext, ROUND_HALF_UP, ROUND_DOWN, ROUND_FLOOR, ROUND_CEILING

from catalog.errors import SqlError, DIVISION_BY_ZERO, NUMERIC_VALUE_OUT_OF_RANGE
from catalog.textio import check_int, INT_RANGES
from catalog.types import SqlType
from planner.functions import Function, register, sig

FLOATS = ("float4", "float8")


def div0() -> SqlError:
    return SqlError(DIVISION_BY_ZERO, "division by zero")


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
        if func in ("add", "sub"):
            if t.name == "date":
                if ta.name == "date":
                    return F.date_add(x, y) if func == "add" else F.date_sub(x, y)
                return F.date_add(y, x)
            if func == "sub" and ta.name == "date" and tb.name == "date":
                return F.datediff(x, y)
            return x + y if func == "add" else x - y
        if func == "mul":
            return x * y
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
        raise SqlError("0A000", "trunc(numeric, n) needs a constant n >= 0 on table data")
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
        raise SqlError("2201F", "cannot take square root of a negative number")


def _check_ln(v):
    if v == 0:
        raise SqlError("2201E", "cannot take logarithm of zero")
    if v < 0:
        raise SqlError("2201E", "cannot take logarithm of a negative number")


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
        if func == "sqrt":
            _check_sqrt(v)
        elif func in ("ln", "log10"):
            _check_ln(v)
        x = float(v)
        r = {"sqrt": math.sqrt, "ln": math.log, "exp": math.exp, "log10": math.log10, "cbrt": math.cbrt}[func](x)
        if e.type.name != "numeric":
            return r
        scale = -v.as_tuple().exponent if v.is_finite() else 0
        if func == "exp":
            return numeric_exp(v, r)
        return _numeric_sig(r, 16, scale)
    return py


def numeric_exp(v: Decimal, r: float) -> Decimal:
    """exp(numeric): PostgreSQL's rscale is 16 - (int)(x * log10(e)), never below the
    argument's scale (numeric.c, numeric_exp)."""
    dweight = int(float(v) * 0.434294481903252)
    scale = max(16 - dweight, -v.as_tuple().exponent, 0)
    return Decimal(repr(r)).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def _float_fn(spark_name):
    def spark(S, a, e):
        r = getattr(S.F, spark_name)(a[0])
        if spark_name in ("sqrt",):
            r = S.F.when(a[0] < 0, S.fail("2201F", "cannot take square root of a negative number")).otherwise(r)
        if spark_name in ("ln", "log10"):
            r = S.F.when(a[0] == 0, S.fail("2201E", "cannot take logarithm of zero")).when(
                a[0] < 0, S.fail("2201E", "cannot take logarithm of a negative number")).otherwise(r)
        if spark_name == "exp":
            r = S.F.when(S.F.isnan(r) | (r != float("inf")) | (a[0] == float("inf")), r).otherwise(
                S.fail(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow"))
        return r.cast(S.spark_type(e.type)) if e.type.name != "numeric" else r
    return spark


def _power_py(a, e):
    x, y = a
    if x == 0 and y < 0:
        raise SqlError("2201F", "zero raised to a negative power is undefined")
    if x < 0 and y != int(y):
        raise SqlError("2201F", "a negative number raised to a non-integer power yields a complex result")
    r = math.pow(float(x), float(y))
    if e.type.name == "numeric":
        if y == int(y) and y >= 0:
            with localcontext() as ctx:
                ctx.prec = 1100
                exact = x ** int(y)
            return exact
        return _numeric_sig(r, 16)
    return r


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
             doc="9.3", samples=("i + k", "n + 1", "f + i", "d + k", "ts + interval '1 day'")),
    Function("sub", (), lambda a, e: arith("sub", *a, e.type, e.args[0].type, e.args[1].type), _arith_spark("sub"),
             doc="9.3", samples=("i - k", "n - i", "d - date '2000-01-01'", "ts - interval '1 month'")),
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
             _float_fn("sqrt"), sql_names=("sqrt",), doc="9.3", samples=("sqrt(f)", "sqrt(abs(f))"),
             differs="numeric results are computed in double precision on Spark, so digits past the 15th may differ"),
    Function("cbrt", (sig("float8", ret="float8"),), _transcendental("cbrt"), _float_fn("cbrt"),
             sql_names=("cbrt",), doc="9.3", samples=("cbrt(f)",),
             differs="Spark's cbrt (Java) and PostgreSQL's (C library) can differ in the last digit"),
    Function("ln", (sig("float8", ret="float8"), sig("numeric", ret="numeric")), _transcendental("ln"),
             _float_fn("ln"), sql_names=("ln",), doc="9.3", samples=("ln(f)",)),
    Function("log10", (sig("float8", ret="float8"), sig("numeric", ret="numeric")), _transcendental("log10"),
             _float_fn("log10"), sql_names=("log", "log10"), doc="9.3", samples=("log(f)",)),
    Function("exp", (sig("float8", ret="float8"), sig("numeric", ret="numeric")), _transcendental("exp"),
             _float_fn("exp"), sql_names=("exp",), doc="9.3", samples=("exp(f)", "exp(i::float8)"),
             differs="Spark's exp (Java) and PostgreSQL's (C library) can differ in the last digit"),
    Function("power", (sig("float8", "float8", ret="float8"), sig("numeric", "numeric", ret="numeric")), _power_py,
             lambda S, a, e: S.F.pow(a[0], a[1]) if e.type.name == "float8" else S.F.pow(a[0], a[1]),
             sql_names=("power", "pow"), doc="9.3", samples=("power(f, 2)", "power(i::float8, 2)")),
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
