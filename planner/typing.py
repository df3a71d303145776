"""Type resolution for operators, functions and aggregates, after PostgreSQL.

PostgreSQL section 10 ("Type Conversion") is the source: an ``unknown`` literal takes
the type of the other operand (10.2), numeric operands promote along
int2 < int4 < int8 < numeric < float4 < float8, UNION/CASE/COALESCE choose a common
type (10.5). Each resolver returns the types the arguments must be cast to and the
result type; the caller inserts the casts.
"""

from __future__ import annotations

from catalog.errors import SqlError, UNDEFINED_FUNCTION, DATATYPE_MISMATCH
from catalog.types import (
    SqlType, BOOL, INT4, INT8, JSONB, MZ_TIMESTAMP, NUMERIC, FLOAT8, TEXT, DATE, TIME, TIMETZ, TIMESTAMP, TIMESTAMPTZ,
    INTERVAL,
    array_of,
)

NUMERIC_RANK = {"int2": 0, "int4": 1, "int8": 2, "numeric": 3, "float4": 4, "float8": 5}
_RANKED = {v: k for k, v in NUMERIC_RANK.items()}


def numeric_common(a: SqlType, b: SqlType) -> SqlType:
    """Common type of two numeric types (PostgreSQL: int4 + float4 -> float8). ``oid``
    meets another type as int8 (its implicit cast)."""
    if a == b:
        return a
    if "oid" in (a.name, b.name):
        return numeric_common(INT8 if a.name == "oid" else a, INT8 if b.name == "oid" else b)
    if a.name == b.name:
        return a.unconstrained()
    ra, rb = NUMERIC_RANK[a.name], NUMERIC_RANK[b.name]
    top = max(ra, rb)
    if _RANKED[top] == "float4" and min(ra, rb) < NUMERIC_RANK["float4"]:
        return FLOAT8
    return SqlType(_RANKED[top])


def common_type(types: list[SqlType], what: str = "UNION") -> SqlType:
    """PostgreSQL's ``select_common_type`` for UNION, CASE, COALESCE, IN, VALUES.

    Raises:
        SqlError 42804 ``<what> types X and Y cannot be matched``.
    """
    known = [t for t in types if t.name != "unknown"]
    if not known:
        return TEXT
    result = known[0]
    for t in known[1:]:
        if t == result:
            continue
        if t.is_numeric and result.is_numeric:
            result = numeric_common(result, t)
        elif t.category == "S" and result.category == "S":
            result = result.unconstrained() if t.name == result.name else TEXT
        elif {t.name, result.name} == {"date", "timestamp"}:
            result = TIMESTAMP
        elif {t.name, result.name} <= {"date", "timestamp", "timestamptz"}:
            result = TIMESTAMPTZ
        elif t.of or result.of:  # lists and maps of other element types do not mix
            raise SqlError(DATATYPE_MISMATCH, f"{what} types {result.sql()} and {t.sql()} cannot be matched")
        elif t.name == result.name:
            result = result.unconstrained()
        elif "mz_timestamp" in (t.name, result.name) and {t.name, result.name} <= TO_MZ_TIMESTAMP:
            result = MZ_TIMESTAMP
        else:
            raise SqlError(DATATYPE_MISMATCH, f"{what} types {result.sql()} and {t.sql()} cannot be matched")
    return result


def _undefined_op(op: str, l: SqlType, r: SqlType | None) -> SqlError:
    shown = f"{l.sql()} {op} {r.sql()}" if r is not None else f"{op} {l.sql()}"
    return SqlError(
        UNDEFINED_FUNCTION,
        f"operator does not exist: {shown}",
        hint="No operator matches the given name and argument types. You might need to add explicit type casts.",
    )


ARITH = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}
#: POSIX regular expression match operators (PostgreSQL 9.7.3)
REGEX = {"~": "regex", "~*": "iregex", "!~": "not_regex", "!~*": "not_iregex"}
#: integer bit operators (PostgreSQL 9.3, table 9.4)
BITWISE = {"&": "int_and", "|": "int_or", "#": "int_xor", "<<": "int_shl", ">>": "int_shr"}
COMPARE = {"=": "eq", "<>": "ne", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
#: text pattern comparisons (PostgreSQL 11.10, text_pattern_ops): byte-wise, which is the
#: code-point order every text comparison here has already (only the C collation exists)
PATTERN_COMPARE = {"~<~": "<", "~<=~": "<=", "~>=~": ">=", "~>~": ">"}


def resolve_binary(op: str, l: SqlType, r: SqlType) -> tuple[str, SqlType, SqlType, SqlType]:
    """Resolve ``l op r``.

    Returns ``(func, cast left to, cast right to, result type)``.
    Raises:
        SqlError 42883 ``operator does not exist``.
    """
    if op in ("@>", "<@", "&&") and (l.is_array or r.is_array) and "jsonb" not in (l.name, r.name):
        return _array_set_op(op, l, r)
    if op in JSONB_OPS and (l.name == "jsonb" or (l.name == "unknown" and (r.name != "jsonb" or op in ("@>", "<@")))):
        return _jsonb_op(op, JSONB if l.name == "unknown" else l, r)
    if op == "-" and l.name == "jsonb" and (r.is_string or r.name == "unknown"):
        return "jsonb_delete", JSONB, TEXT, JSONB  # delete a key (PostgreSQL 9.16, table 9.46)
    if op == "-" and l.name == "jsonb" and r == array_of(TEXT):
        return "jsonb_delete_keys", JSONB, r, JSONB
    if op == "#-" and l.name == "jsonb" and (r.name == "unknown" or r == array_of(TEXT)):
        return "jsonb_delete_path", JSONB, array_of(TEXT), JSONB  # PostgreSQL 9.16, table 9.46
    if op == "-" and l.name == "jsonb" and r.is_integer:
        return "jsonb_delete_index", JSONB, INT4, JSONB
    # An unknown literal beside a known type takes that type; for ||, only beside jsonb,
    # bytea and arrays (their || operators' operand types), else it is text (anytextcat).
    if l.name == "unknown" and r.name != "unknown":
        l = r if op not in ("||",) or r.name in ("jsonb", "bytea") or r.is_array else TEXT
    elif r.name == "unknown" and l.name != "unknown":
        r = l if op not in ("||",) or l.name in ("jsonb", "bytea") or l.is_array else TEXT
    elif l.name == "unknown" and r.name == "unknown":
        l = r = TEXT
    if op in PATTERN_COMPARE and l.is_string and r.is_string:
        op = PATTERN_COMPARE[op]
    if op in COMPARE:
        t = _comparison_type(op, l, r)
        return COMPARE[op], t, t, BOOL
    if op in REGEX:
        if l.is_string and r.is_string:
            return REGEX[op], TEXT, TEXT, BOOL
        raise _undefined_op(op, l, r)
    if op == "||":
        if {l.name, r.name} <= {"jsonb", "unknown"} and "jsonb" in (l.name, r.name):
            return "jsonb_concat", JSONB, JSONB, JSONB  # PostgreSQL 9.16, table 9.46
        if l.is_array or r.is_array:
            return _array_concat(l, r)
        if l.name == r.name == "bytea":
            return "bytea_concat", l, r, l
        if l.is_string or r.is_string:
            return "concat", TEXT, TEXT, TEXT
        raise _undefined_op(op, l, r)
    if op in BITWISE and l.is_integer and r.is_integer:
        if op in ("<<", ">>"):  # int2, int4 or int8 shifted by an int4 count
            return BITWISE[op], l, INT4, l
        t = numeric_common(l, r)
        return BITWISE[op], t, t, t
    if op == "^" and l.is_numeric and r.is_numeric:  # exponentiation (PostgreSQL 9.3, table 9.4)
        t = FLOAT8 if {l.name, r.name} & {"float4", "float8"} or "numeric" not in (l.name, r.name) else NUMERIC
        return "power", t, t, t
    if op == "^@" and l.is_string and r.is_string:  # starts_with (PostgreSQL 9.4, table 9.10)
        return "starts_with", TEXT, TEXT, BOOL
    if op in ARITH:
        func = ARITH[op]
        if l.is_numeric and r.is_numeric:
            t = numeric_common(l, r)
            if op == "%" and t.name in ("float4", "float8"):
                raise _undefined_op(op, l, r)
            return func, t, t, t.unconstrained() if t.name == "numeric" else t
        names = (l.name, r.name)
        if op in "+-":
            if names == ("date", "int4") or (op == "+" and names == ("int4", "date")) or (
                names[0] == "date" and r.is_integer) or (op == "+" and l.is_integer and names[1] == "date"):
                return func, l if l.name == "date" else INT4, r if r.name == "date" else INT4, DATE
            if op == "-" and names == ("date", "date"):
                return "sub", DATE, DATE, INT4
            if names in (("date", "interval"), ("timestamp", "interval")):
                return func, TIMESTAMP, INTERVAL, TIMESTAMP
            if names == ("timestamptz", "interval"):
                return func, TIMESTAMPTZ, INTERVAL, TIMESTAMPTZ
            if op == "+" and names in (("interval", "date"), ("interval", "timestamp")):
                return func, INTERVAL, TIMESTAMP, TIMESTAMP
            if op == "+" and names == ("interval", "timestamptz"):
                return func, INTERVAL, TIMESTAMPTZ, TIMESTAMPTZ
            if op == "-" and names == ("timestamp", "timestamp"):
                return "sub", TIMESTAMP, TIMESTAMP, INTERVAL
            if op == "-" and set(names) <= {"timestamp", "timestamptz"} and "timestamptz" in names:
                return "sub", TIMESTAMPTZ, TIMESTAMPTZ, INTERVAL
            if names == ("interval", "interval"):
                return func, INTERVAL, INTERVAL, INTERVAL
            # time of day (PostgreSQL 9.9, table 9.33): +/- an interval's time part, wrapping
            # at midnight; time - time; a date plus a time is a timestamp
            if names == ("time", "interval") or (op == "+" and names == ("interval", "time")):
                return func, l, r, TIME
            if op == "-" and names == ("time", "time"):
                return "sub", TIME, TIME, INTERVAL
            if op == "+" and names in (("date", "time"), ("time", "date")):
                return "add", l, r, TIMESTAMP
            # time with time zone: the same, keeping its offset; a date plus it is a timestamptz
            if names == ("timetz", "interval") or (op == "+" and names == ("interval", "timetz")):
                return func, l, r, TIMETZ
            if op == "+" and names in (("date", "timetz"), ("timetz", "date")):
                return "add", l, r, TIMESTAMPTZ
        if op in "*/" and l.name == "interval" and r.is_numeric:
            return func, INTERVAL, FLOAT8, INTERVAL
        if op == "*" and r.name == "interval" and l.is_numeric:
            return func, FLOAT8, INTERVAL, INTERVAL
    raise _undefined_op(op, l, r)


#: jsonb operators (PostgreSQL 9.16, tables 9.45 and 9.46)
JSONB_OPS = ("->", "->>", "#>", "#>>", "@>", "<@", "?", "?|", "?&")


def _jsonb_op(op: str, l: SqlType, r: SqlType) -> tuple[str, SqlType, SqlType, SqlType]:
    text_result = op in ("->>", "#>>")
    if op in ("->", "->>") and (r.is_integer or r.is_string):
        # an array element by position, or an object field by key
        return ("jsonb_get_text" if text_result else "jsonb_get"), JSONB, INT4 if r.is_integer else TEXT, \
            TEXT if text_result else JSONB
    if op in ("#>", "#>>") and (r.name == "unknown" or r == array_of(TEXT)):
        return ("jsonb_path_text" if text_result else "jsonb_path"), JSONB, array_of(TEXT), TEXT if text_result else JSONB
    if op in ("@>", "<@") and r.name in ("jsonb", "unknown"):
        return ("jsonb_contains" if op == "@>" else "jsonb_contained"), JSONB, JSONB, BOOL
    if op == "?" and r.is_string:
        return "jsonb_exists", JSONB, TEXT, BOOL
    if op in ("?|", "?&") and (r.name == "unknown" or r == array_of(TEXT)):
        return ("jsonb_exists_any" if op == "?|" else "jsonb_exists_all"), JSONB, array_of(TEXT), BOOL
    raise _undefined_op(op, l, r)


def _array_set_op(op: str, l: SqlType, r: SqlType) -> tuple[str, SqlType, SqlType, SqlType]:
    """anyarray @> anyarray, <@, && (PostgreSQL 9.19, table 9.56): both sides an array of
    one element type."""
    known = [t for t in (l, r) if t.is_array]
    if any(not t.is_array and t.name != "unknown" for t in (l, r)):
        raise _undefined_op(op, l, r)
    try:
        t = array_of(common_type([k.element for k in known], "ARRAY"))
    except SqlError:
        raise _undefined_op(op, l, r) from None
    return {"@>": "array_contains", "<@": "array_contained", "&&": "array_overlap"}[op], t, t, BOOL


def _array_concat(l: SqlType, r: SqlType) -> tuple[str, SqlType, SqlType, SqlType]:
    # anycompatiblearray || anycompatiblearray, anycompatiblearray || anycompatible,
    # anycompatible || anycompatiblearray (PostgreSQL 9.19): no common element type, no
    # operator (42883, as PostgreSQL).
    try:
        if l.is_array and r.is_array:
            t = array_of(common_type([l.element, r.element], "ARRAY"))
            return "array_cat", t, t, t
        if l.is_array:
            e = common_type([l.element, r], "ARRAY")
            return "array_append", array_of(e), e, array_of(e)
        e = common_type([l, r.element], "ARRAY")
        return "array_prepend", e, array_of(e), array_of(e)
    except SqlError:
        raise _undefined_op("||", l, r) from None


#: types that cast implicitly to mz_timestamp (Materialize's SQL reference, "mz_timestamp
#: type"): a comparison of one with an mz_timestamp compares mz_timestamps
TO_MZ_TIMESTAMP = frozenset({"int2", "int4", "int8", "numeric", "date", "timestamp", "timestamptz", "text",
                             "varchar", "bpchar", "unknown", "mz_timestamp"})


def _comparison_type(op: str, l: SqlType, r: SqlType) -> SqlType:
    if "mz_timestamp" in (l.name, r.name) and {l.name, r.name} <= TO_MZ_TIMESTAMP:
        return MZ_TIMESTAMP
    if l.is_numeric and r.is_numeric:
        return numeric_common(l, r)
    if l.category == "S" and r.category == "S":
        if l.name == r.name:
            return l.unconstrained()
        if {l.name, r.name} == {"bpchar", "varchar"}:
            # varchar casts implicitly to bpchar and bpchar's operator matches one side
            # exactly; against text, text is the preferred type (PostgreSQL 10.2, step 3.c-d)
            return (l if l.name == "bpchar" else r).unconstrained()
        return TEXT
    if {l.name, r.name} <= {"date", "timestamp"}:
        return TIMESTAMP if l != r else l
    if {l.name, r.name} <= {"date", "timestamp", "timestamptz"}:
        return TIMESTAMPTZ
    if l.name == r.name:
        return l.unconstrained()
    raise _undefined_op(op, l, r)


def resolve_unary(op: str, t: SqlType) -> tuple[str, SqlType, SqlType]:
    """Resolve prefix ``op t``: returns (func, cast arg to, result type)."""
    if t.name == "unknown":
        t = NUMERIC if op in "+-" else t
    if op == "-" and (t.is_numeric or t.name == "interval"):
        return "neg", t, t
    if op == "+" and (t.is_numeric or t.name == "interval"):
        return "pos", t, t
    if op in ("|/", "||/") and (t.is_numeric or t.name == "unknown"):  # square and cube root (table 9.4)
        return ("sqrt" if op == "|/" else "cbrt"), FLOAT8, FLOAT8
    if op == "~" and t.is_integer:
        return "int_not", t, t  # bitwise NOT (PostgreSQL 9.3, table 9.4)
    if op == "@" and t.is_numeric:
        return "abs", t, t  # absolute value (PostgreSQL 9.3, table 9.4)
    raise _undefined_op(op, t, None)
