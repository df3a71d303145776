"""to_char(number, format) (PostgreSQL 9.8, table 9.28): the template patterns ``9``,
``0``, ``.``/``D``, ``,``/``G``, the ``FM`` modifier, and the sign as PostgreSQL puts it:
by default just before the first digit (a blank for a positive number, so the result is
one character wider than the template), ``S`` at either end (``+`` or ``-``), ``MI`` at
the end (``-`` or a blank). Other patterns (``PR``, ``L``, ``RN``, ``EEEE``, ``V``, ``TH``,
``PL``, ``SG``, text) are refused with 0A000 rather than answered wrongly.

The template is parsed once (``parse``) into a ``NumFormat``; ``to_char_py`` formats a
value in the interpreter and ``to_char_spark`` builds the same text as a Spark column
(the template must then be a constant).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from catalog.errors import FEATURE_NOT_SUPPORTED, SqlError
from planner.functions.registry import Function, by_python, constant_arg, register, sig

_TOKEN = re.compile(r"FM|MI|S|9|0|\.|D|,|G", re.IGNORECASE)


@dataclass(frozen=True)
class NumFormat:
    """A parsed number template: ``pre`` the integer part's tokens (``9``, ``0``, ``,``),
    ``point`` whether there is a decimal point, ``post`` the fraction's tokens, ``fm``
    the fill mode, ``sign`` where the sign goes: ``default``, ``S<`` / ``S>`` (S first or
    last), ``MI>`` (MI last)."""

    pre: tuple[str, ...]
    point: bool
    post: tuple[str, ...]
    fm: bool
    sign: str

    @property
    def digits(self) -> int:
        return sum(t in "90" for t in self.pre)

    @property
    def zeros(self) -> int:
        """Integer digit positions that print a zero rather than a blank: those from the
        first ``0`` on."""
        ds = [t for t in self.pre if t in "90"]
        return len(ds) - ds.index("0") if "0" in ds else 0

    @property
    def strippable(self) -> int:
        """Trailing fraction digits FM may drop when zero: the ``9``s at the end."""
        n = 0
        for t in reversed(self.post):
            if t != "9":
                break
            n += 1
        return n


@functools.lru_cache(maxsize=256)
def parse(fmt: str) -> NumFormat:
    """The template ``fmt``.

    Raises:
        SqlError 0A000 for a pattern outside the supported subset."""
    pos, tokens = 0, []
    while pos < len(fmt):
        m = _TOKEN.match(fmt, pos)
        if m is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"to_char number pattern {fmt[pos:]!r} is not supported")
        tokens.append(m.group(0).upper())
        pos = m.end()
    fm = "FM" in tokens
    tokens = [t for t in tokens if t != "FM"]
    sign = "default"
    if tokens and tokens[0] == "S":
        sign, tokens = "S<", tokens[1:]
    elif tokens and tokens[-1] in ("S", "MI"):
        sign, tokens = ("S>" if tokens[-1] == "S" else "MI>"), tokens[:-1]
    tokens = ["," if t == "G" else "." if t == "D" else t for t in tokens]
    if any(t in ("S", "MI") for t in tokens) or tokens.count(".") > 1:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"to_char number pattern {fmt!r} is not supported")
    point = "." in tokens
    pre = tuple(tokens[:tokens.index(".")] if point else tokens)
    post = tuple(tokens[tokens.index(".") + 1:]) if point else ()
    if "," in post:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"to_char number pattern {fmt!r} is not supported")
    return NumFormat(pre, point, post, fm, sign)


def _with_separators(f: NumFormat, padded: str) -> str:
    out, d = [], 0
    for t in f.pre:
        if t == ",":
            out.append("," if d and padded[d - 1] != " " else " ")
        else:
            out.append(padded[d])
            d += 1
    return "".join(out)


def to_char_py(value, f: NumFormat) -> str:
    """``value`` (int or Decimal) formatted by ``f``."""
    v = Decimal(value).quantize(Decimal(1).scaleb(-len(f.post)), rounding=ROUND_HALF_UP)
    whole, _, frac = format(abs(v), "f").partition(".")
    return _layout(f, v < 0, whole, frac)


def _layout(f: NumFormat, neg: bool, whole: str, frac: str, point: bool | None = None) -> str:
    """The text of a number with sign ``neg``, integer digits ``whole`` and fraction
    digits ``frac`` (rounded to the template's already) in template ``f``; ``point``:
    whether the decimal point is written (default: the template has one)."""
    point = f.point if point is None else point
    if whole == "0" and point:
        whole = ""
    if len(whole) > f.digits:  # too many digits: every digit position shows #
        field = "".join("#" if t in "90" else t for t in f.pre)
        frac = "#" * len(f.post)
    else:
        whole = whole.rjust(f.zeros, "0")
        field = _with_separators(f, whole.rjust(f.digits))
    if f.fm and f.strippable:
        keep = len(frac) - f.strippable
        frac = frac[:keep] + frac[keep:].rstrip("0")
    tail = ("." + frac) if point else ""
    lead = len(field) - len(field.lstrip(" "))
    if f.fm:
        field, lead = field.lstrip(" "), 0
        if point and not field and not frac:
            field = "0"  # FM leaves a digit before a bare point: 0 is "0.", not "."
    if f.sign == "default":
        sign = "-" if neg else ("" if f.fm else " ")
        return field[:lead] + sign + field[lead:] + tail
    if f.sign == "S<":
        return field[:lead] + ("-" if neg else "+") + field[lead:] + tail
    sign = "-" if neg else "+" if f.sign == "S>" else ("" if f.fm else " ")
    return field + tail + sign


def float_to_char_py(value: float, f: NumFormat, max_digits: int) -> str:
    """``value`` (a float4 or float8) formatted by ``f`` as formatting.c's float4_to_char
    and float8_to_char do: C's ``%.*f`` of the value (correctly rounded from its binary
    value, halfway cases to even: Python's formatting is the same), with no more than
    ``max_digits`` significant digits (FLT_DIG 6, DBL_DIG 15): fraction digits past them
    are dropped from the template, and with none left the point is not written; NaN
    takes three digit positions, an infinity overflows them (#)."""
    if math.isnan(value):
        if f.digits < 3:
            return _layout(f, False, "#" * (f.digits + 1), "")
        return _layout(dataclasses.replace(f, post=(), point=False), False, "NaN", "")
    if math.isinf(value):
        return _layout(f, value < 0, "#" * (f.digits + 1), "")
    pre_len = len("%.0f" % abs(value))
    post = 0 if pre_len >= max_digits else min(len(f.post), max_digits - pre_len)
    text = "%.*f" % (post, value)
    neg = text.startswith("-")
    whole, _, frac = text.lstrip("-").partition(".")
    f = dataclasses.replace(f, post=f.post[:post])
    return _layout(f, neg, whole, frac, point=f.point and (post > 0 or len(whole) > f.digits))


def to_char_spark(S, x, f: NumFormat):
    """``to_char_py`` as a Spark column over the numeric or integer column ``x``."""
    F = S.F
    rounded = x.cast(f"decimal(38,{len(f.post)})")  # Spark's decimal casts round half up
    neg = rounded < 0
    text = F.abs(rounded).cast("string")
    whole = F.substring_index(text, ".", 1) if f.post else text
    frac = F.substring_index(text, ".", -1) if f.post else F.lit("")
    if f.point:
        whole = F.when(whole == "0", F.lit("")).otherwise(whole)
    padded = F.lpad(F.lpad(whole, f.zeros, "0") if f.zeros else whole, f.digits, " ")
    pieces, d = [], 0
    for t in f.pre:
        if t == ",":
            pieces.append(F.when(F.substring(padded, d, 1) != " ", ",").otherwise(" ") if d else F.lit(" "))
        else:
            pieces.append(F.substring(padded, d + 1, 1))
            d += 1
    field = F.concat(*pieces) if pieces else F.lit("")
    overflow = F.length(whole) > f.digits
    field = F.when(overflow, F.lit("".join("#" if t in "90" else t for t in f.pre))).otherwise(field)
    frac = F.when(overflow, F.lit("#" * len(f.post))).otherwise(frac)
    if f.fm and f.strippable:
        frac = F.regexp_replace(frac, f"0{{0,{f.strippable}}}$", "")
    tail = F.concat(F.lit("."), frac) if f.point else F.lit("")
    if f.fm:
        field = F.ltrim(field)
        if f.point:  # FM leaves a digit before a bare point: 0 is "0.", not "."
            field = F.when((field == "") & (frac == ""), F.lit("0")).otherwise(field)
    lead = F.length(field) - F.length(F.ltrim(field))
    before, after = F.substring(field, F.lit(1), lead), F.substring(field, lead + 1, F.lit(2**31 - 1))
    if f.sign in ("default", "S<"):
        sign = F.when(neg, "-").otherwise("+" if f.sign == "S<" else ("" if f.fm else " "))
        out = F.concat(before, sign, after, tail)
    else:
        sign = F.when(neg, "-").otherwise("+" if f.sign == "S>" else ("" if f.fm else " "))
        out = F.concat(field, tail, sign)
    return F.when(x.isNotNull(), out)


def _spark(S, a, e):
    fmt = constant_arg(e, 1, "to_char needs a constant format")
    if fmt is None:
        return S.F.lit(None).cast("string")
    return to_char_spark(S, a[0], parse(fmt))


register(
    Function("to_char_number", (sig("numeric", "text", ret="text"), sig("int4", "text", ret="text"),
                                sig("int8", "text", ret="text")),
             lambda a, e: to_char_py(a[0], parse(a[1])), _spark, sql_names=("to_char",), doc="9.8",
             differs="the patterns PR, L, RN, EEEE, V, TH, PL, SG and quoted text are refused (0A000)",
             samples=("to_char(n, '999.99')", "to_char(n, 'FM99999.000')", "to_char(i, '999')",
                      "to_char(n, '0000.9')", "to_char(n * 1000, '9,999,999.99')", "to_char(i, 'S9999')",
                      "to_char(n, 'FM9999.99')", "to_char(i, '999MI')", "to_char(k, 'FM0.9')",
                      "to_char(i, 'FM999')", "to_char(i, '9999S')", "to_char(n / 1000, 'FM9999.99')")),
)
register(
    Function("to_char_float", (sig("float4", "text", ret="text"), sig("float8", "text", ret="text")),
             lambda a, e: float_to_char_py(a[0], parse(a[1]), 6 if e.args[0].type.name == "float4" else 15),
             by_python, sql_names=("to_char",), doc="9.8",
             differs="the patterns PR, L, RN, EEEE, V, TH, PL, SG and quoted text are refused (0A000)",
             samples=("to_char(f, '999.99')", "to_char(f * 1e5 + 0.125, 'FM999999999999999.999999')",
                      "to_char(-f / 1000, '9.99')", "to_char(f::float4 / 3, '9.9999999999')", "to_char(f, 'S9,999.9')",
                      "to_char(CASE WHEN k = 4 THEN 'NaN'::float8 ELSE f END, '9999.9')",
                      "to_char(CASE WHEN k = 4 THEN '-Infinity'::float8 ELSE f END, 'FM99.9')",
                      "to_char(f * 1e6, '99999999999999999.99')", "to_char(k + 0.5::float8, 'FM0')")),
)
