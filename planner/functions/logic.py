"""Comparison, logical and conditional operators and functions (PostgreSQL 9.1, 9.2,
9.18). Operator resolution is ``planner.typing``'s; these are the implementations.
``coalesce`` is evaluated lazily by ``planner.consteval`` (PostgreSQL 9.18.2: arguments
after the first non-NULL one are not evaluated)."""

from __future__ import annotations

from decimal import Decimal
from functools import reduce

from catalog.errors import SqlError, CARDINALITY_VIOLATION, NOT_NULL_VIOLATION
from planner.functions.registry import IN_CONTEXT, Function, register, sig
from planner.scalar import Cast, Literal

CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
       "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}

CARDINALITY_MESSAGE = "more than one row returned by a subquery used as an expression"


def _bpchar_pair(e, a, b):
    if e.args[0].type.name == "bpchar":
        return a.rstrip(" "), b.rstrip(" ")
    return a, b


def order_key(v):
    """``v`` as a sort key in PostgreSQL's order of floats and numerics, where NaN equals
    NaN and is above every other value (8.1.2); an array or list (a Python list) element by
    element, a NULL element above every other value and equal to another NULL (PostgreSQL's
    array_cmp; Materialize's Datum order, where Null is last), a shorter prefix first; a map
    (a dict) as its (key, value) pairs in key order (Materialize's DatumMap order); other
    values as they are. Python's NaNs are unordered (and a Decimal NaN raises when
    ordered), and so are None and a value."""
    if isinstance(v, list):
        return tuple(_element_key(x) for x in v)
    if isinstance(v, dict):
        return tuple((k, _element_key(x)) for k, x in sorted(v.items()))
    if isinstance(v, (float, Decimal)) and v != v:
        return (True, 0)
    return (False, v) if isinstance(v, (float, Decimal)) else v


def _element_key(x) -> tuple:
    return (1,) if x is None else (0, order_key(x))


def _cmp_py(op):
    def py(a, e):
        x, y = _bpchar_pair(e, a[0], a[1])
        if (isinstance(x, (float, Decimal)) and isinstance(y, (float, Decimal)) and (x != x or y != y)
                or isinstance(x, (list, dict))):
            x, y = order_key(x), order_key(y)
        return CMP[op](x, y)
    return py


def _padded_char(arg):
    """``(expr, n)`` when ``arg`` is a char(n) expression (or one cast to unbounded text or
    varchar, which strips its trailing blanks) other than a constant, else None. A char(n)
    value is always exactly n characters long: every cast and assignment to char(n) pads
    with blanks (``catalog.textio.fit_string`` and its Spark twins), and so does COPY."""
    inner = arg
    if isinstance(arg, Cast) and arg.type.name in ("text", "varchar") and arg.type.precision is None:
        inner = arg.expr
    t = inner.type
    if t.name == "bpchar" and t.precision is not None and not isinstance(inner, Literal):
        return inner, t.precision
    return None


def _char_key(arg, lit, n: int) -> str | None:
    """The stored (padded) form a char(n) value has when it equals the constant ``lit``
    under ``arg``'s comparison (blank-insensitive for char, exact for text after the
    cast's blank stripping), or None when no char(n) value equals it."""
    v = lit.value
    if arg.type.name == "bpchar":
        v = v.rstrip(" ")
    elif v != v.rstrip(" "):
        return None  # the cast to text strips trailing blanks: such a constant never matches
    return v.ljust(n) if len(v) <= n else None


def _char_equality(S, op, e):
    """``char_col = 'const'`` (and ``<>``) as a comparison of the stored, padded values
    rather than of blank-stripped ones, so that Spark can push it into the Parquet scan
    and skip a trim per row; None when the operands are not a char(n) column and a string
    constant. Same result as PostgreSQL's blank-insensitive bpchar equality (9.2, 8.3)."""
    if op not in ("eq", "ne"):
        return None
    for col_arg, other in ((e.args[0], e.args[1]), (e.args[1], e.args[0])):
        found = _padded_char(col_arg)
        if found is not None and isinstance(other, Literal) and isinstance(other.value, str):
            inner, n = found
            key = _char_key(col_arg, other, n)
            x = S.scalar(inner)
            if key is None:  # never equal: NULL stays NULL
                return S.F.when(x.isNull(), S.F.lit(None)).otherwise(S.F.lit(op == "ne"))
            return CMP[op](x, S.F.lit(key))
    return None


def _cmp_spark(op):
    def spark(S, a, e):
        fast = _char_equality(S, op, e)
        if fast is not None:
            return fast
        x, y = a
        if e.args[0].type.name == "bpchar":
            x, y = S.F.rtrim(x), S.F.rtrim(y)
        elif e.args[0].type.name == "interval":
            x, y = S.interval_key(x), S.interval_key(y)
        elif (t := e.args[0].type).is_array or t.is_list or t.is_map:  # NULL elements last; maps by entries
            x, y = S.sort_key(x, t), S.sort_key(y, t)
        return CMP[op](x, y)
    return spark


def _and(a, e):
    if any(v is False for v in a):
        return False
    return None if any(v is None for v in a) else True


def _or(a, e):
    if any(v is True for v in a):
        return True
    return None if any(v is None for v in a) else False


def _in(a, e):
    x, *lst = a
    if x is None:
        return None
    if any(v is not None and order_key(v) == order_key(x) for v in lst):
        return True
    return None if any(v is None for v in lst) else False


def _in_spark(S, a, e):
    found = _padded_char(e.args[0])
    if found is not None and all(isinstance(v, Literal) and isinstance(v.value, str) for v in e.args[1:]):
        # as _char_equality: one IN over the stored, padded values, pushed into the scan
        inner, n = found
        keys = [k for k in (_char_key(e.args[0], v, n) for v in e.args[1:]) if k is not None]
        x = S.scalar(inner)
        return x.isin(keys) if keys else S.F.when(x.isNull(), S.F.lit(None)).otherwise(S.F.lit(False))
    x = a[0]
    if e.args[0].type.name == "bpchar":
        return reduce(lambda p, q: p | q, [S.F.rtrim(x) == S.F.rtrim(v) for v in a[1:]])
    if e.args[0].type.name == "interval":  # compared by interval_cmp_value, as _cmp_spark
        return reduce(lambda p, q: p | q, [S.interval_key(x) == S.interval_key(v) for v in a[1:]])
    # Spark's In: x is computed once (an OR chain computes it per item), same NULL logic
    return x.isin(*a[1:])


def _same(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and order_key(a) == order_key(b))


def _cardinality_check(a, e):
    if a[0] is not None and a[0] > 1:
        raise SqlError(CARDINALITY_VIOLATION, CARDINALITY_MESSAGE)
    return a[1]


def _not_null_or_raise(a, e):
    if a[0] is None:
        raise SqlError(NOT_NULL_VIOLATION, a[1])
    return a[0]


def _greatest(f):
    def py(a, e):
        vals = [v for v in a if v is not None]
        return (max(vals, key=order_key) if f == "greatest" else min(vals, key=order_key)) if vals else None
    return py


register(
    *[Function(op, (), _cmp_py(op), _cmp_spark(op), doc="9.2",
               samples=(f"i {o} 0", f"s {o} 'a'", f"d {o} date '2020-01-01'") + (
                   (f"s {pattern} 'a'", f"s::char(12) {pattern} 'Hello  '::char(5)") if pattern else ()))
      for op, o, pattern in zip(CMP, ("=", "<>", "<", "<=", ">", ">="), ("", "", "~<~", "~<=~", "~>~", "~>=~"))],
    Function("and", (), _and, lambda S, a, e: reduce(lambda x, y: x & y, a), strict=False, doc="9.1",
             samples=("b and i > 0",)),
    Function("or", (), _or, lambda S, a, e: reduce(lambda x, y: x | y, a), strict=False, doc="9.1",
             samples=("b or i > 0",)),
    Function("not", (), lambda a, e: not a[0], lambda S, a, e: ~a[0], doc="9.1"),
    Function("is_null", (), lambda a, e: a[0] is None, lambda S, a, e: a[0].isNull(), strict=False, doc="9.2"),
    Function("is_not_null", (), lambda a, e: a[0] is not None, lambda S, a, e: a[0].isNotNull(), strict=False,
             doc="9.2"),
    Function("is_true", (), lambda a, e: a[0] is True, lambda S, a, e: a[0].eqNullSafe(S.F.lit(True)),
             strict=False, doc="9.2"),
    Function("is_false", (), lambda a, e: a[0] is False, lambda S, a, e: a[0].eqNullSafe(S.F.lit(False)),
             strict=False, doc="9.2"),
    Function("is_not_true", (), lambda a, e: a[0] is not True, lambda S, a, e: ~a[0].eqNullSafe(S.F.lit(True)),
             strict=False, doc="9.2"),
    # x OR x IS NULL: for x = (a = b) in an anti join, Spark plans a null-aware anti join
    Function("is_not_false", (), lambda a, e: a[0] is not False, lambda S, a, e: a[0] | a[0].isNull(),
             strict=False, doc="9.2"),
    Function("is_distinct", (), lambda a, e: not _same(*a), lambda S, a, e: ~a[0].eqNullSafe(a[1]),
             strict=False, doc="9.2"),
    Function("is_not_distinct", (), lambda a, e: _same(*a), lambda S, a, e: a[0].eqNullSafe(a[1]),
             strict=False, doc="9.2"),
    Function("in", (), _in, _in_spark, strict=False, doc="9.24.1", samples=("i in (1, 42, null)", "s in ('Hello')")),
    Function("coalesce", (), None, lambda S, a, e: S.F.coalesce(*a), strict=False, doc="9.18.2",
             samples=("coalesce(s, 'none')", "coalesce(i, k)")),
    Function("nullif", (), lambda a, e: None if (a[0] is not None and a[1] is not None and a[0] == a[1]) else a[0],
             lambda S, a, e: S.F.nullif(a[0], a[1]), strict=False, doc="9.18.3", samples=("nullif(i, 1)",)),
    Function("greatest", (), _greatest("greatest"),
             lambda S, a, e: S.F.greatest(*a) if len(a) > 1 else a[0], strict=False, doc="9.18.4",
             samples=("greatest(i, k)", "greatest(s, 'm')")),
    Function("least", (), _greatest("least"), lambda S, a, e: S.F.least(*a) if len(a) > 1 else a[0],
             strict=False, doc="9.18.4", samples=("least(i, k, 2)", "least(n, 2.5)"),
             differs="Spark decimals have one scale per column: 2.5 among numeric(10,3) values prints 2.500"),
    # A write's NOT NULL check, evaluated per row where the rows are made (volatile: never
    # folded, so an UPDATE that touches no row raises nothing). Not callable from SQL.
    Function("not_null_or_raise", (), _not_null_or_raise,
             lambda S, a, e: S.F.when(a[0].isNull(), S.fail(NOT_NULL_VIOLATION, e.args[1].value)).otherwise(a[0]),
             strict=False, volatility="volatile", doc="5.4.2"),
    Function("cardinality_check", (), _cardinality_check,
             lambda S, a, e: S.F.when(a[0] > 1, S.fail(CARDINALITY_VIOLATION, CARDINALITY_MESSAGE)).otherwise(a[1]),
             strict=False, doc="9.23.1"),
)


# -- whole-row references (8.16.5, 4.2.13) --------------------------------------------------

#: characters that make record_out quote a field (rowtypes.c: quotes, backslash,
#: parentheses, comma, and C isspace)
_RECORD_SPECIAL = '"\\(), \t\n\r\v\f'


def record_field(text: str | None) -> str:
    """One field of record_out's text: empty for NULL; quoted (``"`` and ``\\`` doubled)
    when empty or holding a special character (PostgreSQL 8.16.6, rowtypes.c record_out)."""
    if text is None:
        return ""
    if text == "" or any(c in _RECORD_SPECIAL for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '""') + '"'
    return text


def record_text(fields) -> str:
    """record_out's text of a row whose fields are given as their texts (None: NULL)."""
    return "(" + ",".join(record_field(f) for f in fields) + ")"


def _record_py(a, e, ctx):
    from catalog.textio import format_text

    fmt = ctx.guard.text
    return record_text(None if v is None else v if isinstance(v, str) else format_text(v, x.type, fmt)
                       for v, x in zip(a, e.args))


def _record_spark(S, a, e):
    F = S.F
    fields = []
    for c, x in zip(a, e.args):
        t = S.output_text(c, x.type)
        quoted = F.concat(F.lit('"'), F.replace(F.replace(t, F.lit("\\"), F.lit("\\\\")), F.lit('"'), F.lit('""')),
                          F.lit('"'))
        fields.append(F.when(t.isNull(), F.lit("")).when((t == "") | t.rlike('["\\\\(),\\s]'), quoted).otherwise(t))
    return F.concat(F.lit("("), F.concat_ws(",", *fields), F.lit(")"))


register(
    Function("record", (sig("any", ret="record", variadic=True),), _record_py, _record_spark, strict=False,
             doc="8.16.5",
             differs="a whole-row value is record_out's text: ORDER BY and comparisons use that text, not the "
                     "fields in turn; it is sent in text format only; on table data, a jsonb field computed by a "
                     "function is Spark's compact JSON text ([1,2], not [1, 2]), as jsonb::text is there", extra=IN_CONTEXT),
)
