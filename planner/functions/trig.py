"""Trigonometric functions (PostgreSQL 9.3, tables 9.7 and 9.8), on double precision.

The degree forms (``sind``, ``cosd``, ...) follow PostgreSQL's float.c: the argument is
reduced to the first quadrant and scaled by the function's value at 30, 45 or 60
degrees, so that ``sind(30)`` is exactly 0.5 and ``tand(45)`` exactly 1. Each rule is
written once, over an ``ops`` namespace: ``PY`` evaluates it on Python floats (the
interpreter and the constant folder), ``SparkOps(S)`` builds the same arithmetic as
Spark columns (on table data, through Spark's own ``sin``, ``acos``, ...: Java's
``Math`` functions).
"""

from __future__ import annotations

import math

from catalog.errors import NUMERIC_VALUE_OUT_OF_RANGE, SqlError
from planner.functions.registry import Function, register, sig
from planner.functions.math import any_null

#: PostgreSQL's RADIANS_PER_DEGREE (float.c)
RADIANS_PER_DEGREE = 0.0174532925199432957692


class _PyOps:
    """The rules' operations on Python floats (C library math, as PostgreSQL's)."""

    sin, cos, tan, asin, acos, atan, atan2 = math.sin, math.cos, math.tan, math.asin, math.acos, math.atan, math.atan2
    fmod = math.fmod

    @staticmethod
    def div(x, y):
        """x / y as C's double division: x/0 is an infinity (NaN for 0/0)."""
        if y == 0:
            return math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1.0, y)
        return x / y

    @staticmethod
    def where(cond, a, b):
        return a if cond else b

    @staticmethod
    def let(vals, f):
        return f(*vals)


PY = _PyOps()


class SparkOps:
    """The rules' operations as Spark columns (``S`` is the lowering toolkit)."""

    @staticmethod
    def _div(F, x, y):
        return F.when(y != 0, x / y).when(x > 0, math.inf).when(x < 0, -math.inf).otherwise(math.nan)

    def __init__(self, S):
        F = S.F
        self.sin, self.cos, self.tan, self.asin, self.acos, self.atan = F.sin, F.cos, F.tan, F.asin, F.acos, F.atan
        self.atan2 = F.atan2
        # C's double division (x/0 is an infinity), which Spark's ANSI division is not
        # (the rules divide only by a +0, never a -0)
        self.div = lambda x, y: self._div(F, F.lit(x), y)
        self.fmod = lambda x, y: x % y  # Java's % on doubles truncates, as C's fmod
        self.where = lambda cond, a, b: F.when(cond, a).otherwise(b)
        # values bound as the fields of a one-element array's struct, which ``f`` reads
        self.let = lambda vals, f: F.element_at(F.transform(
            F.array(F.struct(*(F.lit(v).cast("double").alias(f"v{i}") for i, v in enumerate(vals)))),
            lambda s: f(*(s[f"v{i}"] for i in range(len(vals))))), 1)


def _sind_0_to_30(o, x):
    return (o.sin(x * RADIANS_PER_DEGREE) / SIN_30) / 2.0


def _cosd_0_to_60(o, x):
    return 1.0 - ((1.0 - o.cos(x * RADIANS_PER_DEGREE)) / ONE_MINUS_COS_60) / 2.0


def _sind_q1(o, x):
    return o.where(x <= 30.0, _sind_0_to_30(o, x), _cosd_0_to_60(o, 90.0 - x))


def _cosd_q1(o, x):
    return o.where(x <= 60.0, _cosd_0_to_60(o, x), _sind_0_to_30(o, 90.0 - x))


def _asind_q1(o, x):
    return o.where(x <= 0.5, (o.asin(x) / ASIN_0_5) * 30.0, 90.0 - (o.acos(x) / ACOS_0_5) * 60.0)


def _acosd_q1(o, x):
    return o.where(x <= 0.5, 90.0 - (o.asin(x) / ASIN_0_5) * 30.0, (o.acos(x) / ACOS_0_5) * 60.0)


SIN_30 = math.sin(30.0 * RADIANS_PER_DEGREE)
ONE_MINUS_COS_60 = 1.0 - math.cos(60.0 * RADIANS_PER_DEGREE)
ASIN_0_5 = math.asin(0.5)
ACOS_0_5 = math.acos(0.5)
ATAN_1_0 = math.atan(1.0)
TAN_45 = _sind_q1(PY, 45.0) / _cosd_q1(PY, 45.0)
COT_45 = _cosd_q1(PY, 45.0) / _sind_q1(PY, 45.0)


def _reduced(o, x, odd: bool, flip_over_90: bool, finish):
    """``finish(o, x, sign)`` of ``x`` (degrees) reduced to [0, 90] as float.c does for
    sind, tand and cotd (``odd``) or cosd: fmod by 360, then the absolute value, then
    360 - x past 180, then 180 - x past 90, the result's sign following. Each step is
    bound (``o.let``) so the next refers to it rather than repeating its expression."""
    return o.let((o.fmod(x, 360.0),), lambda x0: o.let(
        (o.where(x0 < 0, -x0, x0), o.where(x0 < 0, -1.0, 1.0) if odd else 1.0), lambda x1, s1: o.let(
            (o.where(x1 > 180.0, 360.0 - x1, x1), o.where(x1 > 180.0, -s1, s1) if odd else s1), lambda x2, s2: o.let(
                (o.where(x2 > 90.0, 180.0 - x2, x2), o.where(x2 > 90.0, -s2, s2) if flip_over_90 else s2),
                lambda x3, s3: finish(o, x3, s3)))))


def sind(o, x):
    return _reduced(o, x, True, False, lambda o, x, sign: sign * _sind_q1(o, x))


def cosd(o, x):
    return _reduced(o, x, False, True, lambda o, x, sign: sign * _cosd_q1(o, x))


def tand(o, x):
    return _reduced(o, x, True, True,
                    lambda o, x, sign: sign * (o.div(_sind_q1(o, x), _cosd_q1(o, x)) / TAN_45))


def cotd(o, x):
    def finish(o, x, sign):
        # no -0 (float.c)
        return o.let((sign * (o.div(_cosd_q1(o, x), _sind_q1(o, x)) / COT_45),), lambda r: o.where(r == 0.0, 0.0, r))
    return _reduced(o, x, True, True, finish)


def asind(o, x):
    return o.where(x >= 0, _asind_q1(o, x), -_asind_q1(o, -x))


def acosd(o, x):
    return o.where(x >= 0, _acosd_q1(o, x), 90.0 + _asind_q1(o, -x))


def atand(o, x):
    return (o.atan(x) / ATAN_1_0) * 45.0


def atan2d(o, y, x):
    return (o.atan2(y, x) / ATAN_1_0) * 45.0


def _cot(o, x):
    return o.div(1.0, o.tan(x))  # float.c dcot: 1 / tan(x), Infinity at 0


#: name -> (rule over ops, arguments that must be finite, arguments that must be in [-1, 1])
RULES = {
    "sin": (lambda o, x: o.sin(x), True, False), "cos": (lambda o, x: o.cos(x), True, False),
    "tan": (lambda o, x: o.tan(x), True, False), "cot": (_cot, True, False),
    "asin": (lambda o, x: o.asin(x), False, True), "acos": (lambda o, x: o.acos(x), False, True),
    "atan": (lambda o, x: o.atan(x), False, False), "atan2": (lambda o, y, x: o.atan2(y, x), False, False),
    "sind": (sind, True, False), "cosd": (cosd, True, False), "tand": (tand, True, False),
    "cotd": (cotd, True, False), "asind": (asind, False, True), "acosd": (acosd, False, True),
    "atand": (atand, False, False), "atan2d": (atan2d, False, False),
}

_OUT_OF_RANGE = "input is out of range"


def _py(name):
    rule, finite, unit = RULES[name]

    def py(a, e):
        if any(math.isnan(v) for v in a):
            return math.nan
        if (finite and math.isinf(a[0])) or (unit and not -1.0 <= a[0] <= 1.0):
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, _OUT_OF_RANGE)
        return rule(PY, *a)
    return py


def _spark(name):
    rule, finite, unit = RULES[name]

    def spark(S, a, e):
        F = S.F
        x = a[0]
        r = rule(SparkOps(S), *a)
        bad = None
        if finite:
            bad = (x == float("inf")) | (x == float("-inf"))
        if unit:
            bad = (x < -1.0) | (x > 1.0)
        if bad is not None:
            r = F.when(F.isnan(x), F.lit(math.nan)).when(bad, S.fail(NUMERIC_VALUE_OUT_OF_RANGE, _OUT_OF_RANGE)) \
                .otherwise(r)
        return F.when(any_null(a), F.lit(None).cast("double")).otherwise(r)
    return spark


_SAMPLE = {
    "sin": ("sin(f)", "sin(i)"), "cos": ("cos(f)",), "tan": ("tan(f)",), "cot": ("cot(f + 1)",),
    "asin": ("asin(f / 1e10)", "asin(f)"), "acos": ("acos(f / 1e10)",), "atan": ("atan(f)",),
    "atan2": ("atan2(f, 2)", "atan2(i, f)"), "sind": ("sind(f)", "sind(i * 30)", "sind(k * 45)"),
    "cosd": ("cosd(f)", "cosd(k * 60)"), "tand": ("tand(f)", "tand(i * 45)"), "cotd": ("cotd(f + 1)", "cotd(k * 45)"),
    "asind": ("asind(f / 1e10)", "asind(k / 4.0)"), "acosd": ("acosd(f / 1e10)", "acosd(k / -4.0)"),
    "atand": ("atand(f)", "atand(i)"), "atan2d": ("atan2d(f, 2)", "atan2d(i, k)"),
}

register(*[
    Function(name, (sig(*(["float8"] * (2 if name.startswith("atan2") else 1)), ret="float8"),), _py(name),
             _spark(name), sql_names=(name,), doc="9.3", samples=_SAMPLE[name],
             differs="" if name.endswith("d") else
             "on table data, Spark's (Java's) trigonometric functions and PostgreSQL's (the C library's) can "
             "differ in the last digit")
    for name in RULES
])
