"""``pg_column_size(any)`` (PostgreSQL 9.27.7): the bytes PostgreSQL would take to store a
value, by its type's on-disk form (PostgreSQL 73.2 "TOAST", 8.1 "Numeric Types").

sqlfront stores values in Parquet, so there is no datum to measure: the size is computed
from the value the way PostgreSQL lays it out, one rule for the interpreter and Spark:

- fixed-width types: their ``typlen`` (bool 1, int2 2, int4 4, int8 8, float4 4, float8 8,
  oid 4, date 4, time 8, timetz 12, timestamp(tz) 8, interval 16, uuid 16, name 64);
- text, varchar, char(n) (padded) and bytea: their bytes plus a varlena header, which is 1
  byte for a value read from a table (a short varlena, when the bytes plus one are at most
  127; also through a cast between text and varchar, which relabels the datum) and 4
  otherwise, as for a value computed in the query (PostgreSQL gives 4 for ``'abc'::text``
  and for ``s || ''``, 1 for a short ``s`` of a table);
- numeric: the same header, 2 bytes of numeric header (4 for a weight outside -64..63 or a
  display scale above 63: NumericLong), and 2 bytes per base-10000 digit between the first
  and last nonzero ones (``_numeric_digits``); NaN and the infinities take the header only.

A table value PostgreSQL would compress or move out of line (a row over about 2 kB)
answers its uncompressed size here. jsonb (its binary JEntry tree), arrays and records are
refused with 0A000.
"""

from __future__ import annotations

import re

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED
from planner.functions.registry import Function, register, sig

#: typlen of the fixed-width types (pg_type)
FIXED = {"bool": 1, "int2": 2, "int4": 4, "int8": 8, "float4": 4, "float8": 8, "oid": 4, "date": 4, "time": 8,
         "timetz": 12, "timestamp": 8, "timestamptz": 8, "interval": 16, "uuid": 16, "name": 64}
#: varlena types measured by their bytes (UTF-8 for text)
_BYTES = {"text", "varchar", "bpchar", "bytea"}
#: VARATT_SHORT_MAX: the largest value (header byte included) with a 1-byte header
_SHORT_MAX = 127
#: NUMERIC_SHORT_WEIGHT_MIN/MAX and NUMERIC_SHORT_DSCALE_MAX (numeric.c)
_WEIGHT_MIN, _WEIGHT_MAX, _DSCALE_MAX = -64, 63, 63
_NUMERIC_TEXT = re.compile(r"-?(\d*)(?:\.(\d*))?")


def _refuse(t) -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, f"pg_column_size of type {t.name} is not supported")


#: casts PostgreSQL makes by relabeling the datum (binary-coercible, pg_cast's method
#: ``b``) or by a length coercion that keeps a value that fits: the value stays as read
_RELABELED = {"text", "varchar"}


def _stored(e) -> bool:
    """Whether the argument is a value read from a relation (a column reference, perhaps
    relabeled as another string type), whose varlena header PostgreSQL packs to 1 byte,
    rather than one computed in the query."""
    from planner.scalar import Cast, ColRef

    x = e.args[0]
    while isinstance(x, Cast) and x.type.name in _RELABELED and x.expr.type.name in _RELABELED:
        x = x.expr
    return isinstance(x, ColRef)


def _varlena(data: int, stored: bool) -> int:
    return data + (1 if stored and data + 1 <= _SHORT_MAX else 4)


def _numeric_digits(text: str) -> tuple[int, int] | None:
    """(base-10000 digits, numeric header bytes) of a numeric's text (PostgreSQL's output:
    ``-12345.678``); None for NaN and the infinities (no digits, a 2-byte header). The
    digits run from the group of the first nonzero decimal digit to that of the last,
    groups counted from the decimal point (numeric.c's NumericVar)."""
    m = _NUMERIC_TEXT.fullmatch(text)
    if m is None:
        return None
    whole, frac = m[1], m[2] or ""
    if not (whole + frac).strip("0"):
        return 0, 2
    lead = whole.lstrip("0")
    high = len(lead) - 1 if lead else -(len(frac) - len(frac.lstrip("0"))) - 1
    low = -len(frac.rstrip("0")) if frac.rstrip("0") else len(whole) - len(whole.rstrip("0"))
    weight = high // 4
    short = len(frac) <= _DSCALE_MAX and _WEIGHT_MIN <= weight <= _WEIGHT_MAX
    return weight - low // 4 + 1, 2 if short else 4


def _py(a, e):
    from catalog.textio import format_text

    v, t = a[0], e.args[0].type
    if v is None:
        return None
    if t.name in FIXED:
        return FIXED[t.name]
    if t.name == "numeric":
        parts = _numeric_digits(format_text(v, t))
        return _varlena(2 if parts is None else parts[1] + 2 * parts[0], _stored(e))
    if t.name in _BYTES:
        return _varlena(len(v) if isinstance(v, (bytes, bytearray, memoryview)) else len(v.encode()), _stored(e))
    raise _refuse(t)


def _numeric_spark(S, c, t):
    """``_numeric_digits``'s bytes (numeric header plus digits) as a Spark column."""
    F = S.F
    text = S.output_text(c, t)
    whole = F.regexp_extract(text, r"^-?(\d*)", 1)
    frac = F.regexp_extract(text, r"\.(\d*)$", 1)
    lead = F.regexp_replace(whole, "^0+", "")
    frac_trim = F.regexp_replace(frac, "0+$", "")
    high = F.when(F.length(lead) > 0, F.length(lead) - 1).otherwise(
        -(F.length(frac) - F.length(F.regexp_replace(frac, "^0+", ""))) - 1)
    low = F.when(F.length(frac_trim) > 0, -F.length(frac_trim)).otherwise(
        F.length(whole) - F.length(F.regexp_replace(whole, "0+$", "")))
    weight = F.floor(high / 4)
    short = (F.length(frac) <= _DSCALE_MAX) & weight.between(_WEIGHT_MIN, _WEIGHT_MAX)
    digits = weight - F.floor(low / 4) + 1
    zero = F.length(F.regexp_replace(F.concat(whole, frac), "0", "")) == 0
    return F.when(~text.rlike(r"^-?\d*(\.\d*)?$") | zero, F.lit(2)).otherwise(
        F.when(short, F.lit(2)).otherwise(F.lit(4)) + 2 * digits)


def _spark(S, a, e):
    F = S.F
    c, t = a[0], e.args[0].type
    if t.name in FIXED:
        return F.when(c.isNull(), F.lit(None).cast("int")).otherwise(F.lit(FIXED[t.name]))
    if t.name == "numeric":
        data = _numeric_spark(S, c, t)
    elif t.name in _BYTES:
        data = F.octet_length(c)
    else:
        raise _refuse(t)
    header = F.when(data + 1 <= _SHORT_MAX, F.lit(1)).otherwise(F.lit(4)) if _stored(e) else F.lit(4)
    return F.when(c.isNull(), F.lit(None).cast("int")).otherwise((data + header).cast("int"))


register(
    Function("pg_column_size", (sig("any", ret="int4"),), _py, _spark, sql_names=("pg_column_size",), doc="9.27.7",
             volatility="stable",
             samples=("pg_column_size(k)", "pg_column_size(s)", "pg_column_size(s || 'xy')", "pg_column_size(n)",
                      "pg_column_size(n * 10000)", "pg_column_size(f)", "pg_column_size(d)", "pg_column_size(ts)",
                      "pg_column_size(b)", "pg_column_size(s::bytea)", "pg_column_size(s::char(12))",
                      "pg_column_size(s::varchar)", "pg_column_size(k::int8 + i)", "pg_column_size(1.5)",
                      "pg_column_size(-0.001)", "pg_column_size(12345.678)", "pg_column_size(0::numeric)",
                      "pg_column_size('NaN'::numeric)", "pg_column_size(1e30)", "pg_column_size(k * 0.0001)",
                      "pg_column_size('abc'::text)", "pg_column_size(repeat('x', 200))",
                      "pg_column_size(make_interval(days => k))", "pg_column_size(gen_random_uuid())"),
             differs="a table value PostgreSQL would compress (a row over about 2 kB) counts uncompressed; a value "
                     "a subquery computes counts as read from a table; an untyped literal ('abc') is text here (PostgreSQL: "
                     "a C string, 4)"),
)
