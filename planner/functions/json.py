"""JSON functions and operators (PostgreSQL 9.16). As in Materialize, ``json`` is
``jsonb``. Values are jsonb's text form; on Spark, operators read them with VARIANT
(``parse_json``, ``try_variant_get``) and jsonb results are normalized to jsonb's text
form when the rows reach the session."""

from __future__ import annotations

import json
from decimal import Decimal

from catalog.errors import (
    SqlError, ARRAY_SUBSCRIPT_ERROR, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE,
    INVALID_TEXT_REPRESENTATION, NULL_VALUE_NOT_ALLOWED,
)
from catalog.textio import TextFormat, jsonb_text, format_text
from catalog.types import TEXT
from planner.functions.registry import IN_CONTEXT, Function, by_python, constant_arg, register, sig

_MISSING = object()


def doc(text: str):
    return json.loads(text, parse_float=Decimal)


def _step(d, step, path: bool = True):
    """One step into ``d``: an object's field, or an array's element (negative counts
    from the end). A text step reads an array element only as a step of a path (``#>``:
    PostgreSQL parses it as an integer); ``->`` with a text key reads objects only
    (PostgreSQL 9.16, table 9.45)."""
    if isinstance(d, dict) and isinstance(step, str):
        return d.get(step, _MISSING)
    if isinstance(d, list) and (path or not isinstance(step, str)):
        try:
            i = int(step)
        except (TypeError, ValueError):
            return _MISSING
        if -len(d) <= i < len(d):
            return d[i]
    return _MISSING


def _out(value, as_text: bool):
    if value is _MISSING:
        return None
    if as_text:  # ->> and #>>: strings without quotes, JSON null as SQL NULL
        return None if value is None else value if isinstance(value, str) else jsonb_text(value)
    return jsonb_text(value)


def _path(a, e):
    d = doc(a[0])
    for step in a[1]:
        if step is None:
            return None
        d = _step(d, step)
        if d is _MISSING:
            return None
    return _out(d, e.func.endswith("_text"))


def contains(a, b) -> bool:
    """jsonb @> (PostgreSQL 8.14.3): objects by subset of pairs, arrays by elements, a
    scalar array contains a scalar."""
    if isinstance(a, dict) and isinstance(b, dict):
        return all(k in a and contains(a[k], v) for k, v in b.items())
    if isinstance(a, list):
        if isinstance(b, list):
            return all(any(contains(x, y) for x in a) for y in b)
        return not isinstance(b, (dict, list)) and any(contains(x, b) for x in a if not isinstance(x, (dict, list)))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, Decimal)) and isinstance(b, (int, Decimal)):
        return a == b
    return type(a) is type(b) and a == b


def _typeof(v) -> str:
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, bool):
        return "boolean"
    if v is None:
        return "null"
    return "string" if isinstance(v, str) else "number"


def _array_length(v):
    if not isinstance(v, list):
        raise SqlError(INVALID_PARAMETER_VALUE, "cannot get array length of a " +
                       ("scalar" if not isinstance(v, dict) else "non-array"))
    return len(v)


def _exists(a, e):
    d = doc(a[0])
    if isinstance(d, dict):
        return a[1] in d
    if isinstance(d, list):
        return a[1] in [x for x in d if isinstance(x, str)]
    return d == a[1]


def concat_py(a, b):
    """jsonb || jsonb (table 9.46): objects merge (right wins), arrays concatenate, and a
    non-array operand is a one-element array."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {**a, **b}
    return (a if isinstance(a, list) else [a]) + (b if isinstance(b, list) else [b])


def _concat_spark(S, a, e):
    F = S.F
    x, y = a
    xo, yo = x.startswith("{"), y.startswith("{")
    xa, ya = x.startswith("["), y.startswith("[")
    inner = lambda c: c.substr(F.lit(2), F.length(c) - 2)  # noqa: E731
    join = lambda p, q: F.when(p == "", q).when(q == "", p).otherwise(F.concat(p, F.lit(", "), q))  # noqa: E731
    as_items = lambda c, arr: F.when(arr, inner(c)).otherwise(c)  # noqa: E731
    # objects merge by key, the right one's value winning: text put together would hold a
    # key twice, which Spark's JSON readers (parse_json, from_json) of a later operator refuse
    mx, my = (F.try_variant_get(F.parse_json(c), "$", "map<string,variant>") for c in (x, y))
    merged = F.to_json(F.map_concat(F.map_filter(mx, lambda k, _: ~F.array_contains(F.map_keys(my), k)), my))
    return (F.when(xo & yo, merged)
            .otherwise(F.concat(F.lit("["), join(as_items(x, xa), as_items(y, ya)), F.lit("]"))))


def to_json_value(v, t, fmt: TextFormat):
    """A SQL value as a JSON value (PostgreSQL's to_jsonb for scalars); a value that
    becomes a JSON string has its output text in the session's text settings ``fmt``."""
    if v is None:
        return None
    n = t.name
    if n == "jsonb":
        return doc(v)
    if n in ("int2", "int4", "int8", "numeric", "float4", "float8", "bool"):
        return v if not isinstance(v, float) else Decimal(format_text(v, t))
    if t.is_array:
        return [to_json_value(x, t.element, fmt) for x in v]
    if n == "timestamp":
        iso = v.isoformat()  # PostgreSQL's JSON form: no trailing zeros in the fraction
        return iso.rstrip("0").rstrip(".") if "." in iso else iso
    return v if isinstance(v, str) else format_text(v, t, fmt)


def json_text_spark(S, c, t, x=None, row: bool = True):
    """Spark: the JSON text of a column of type ``t`` (to_jsonb of a scalar). ``x``: the
    plan expression whose value ``c`` is, for a numeric's scale per value
    (``Lowerer.numeric_text``, with its ``row``)."""
    F = S.F
    n = t.name
    if n == "jsonb":
        r = c
    elif n in ("int2", "int4", "int8", "numeric"):
        r = (S.numeric_text(x, c, row) if x is not None and n == "numeric" else None)
        if r is None and x is None and n == "numeric" and t.precision is None:
            r = S.scaled_text(c, S.least_scale(c))  # an element of a stored array: as stored values are
        r = c.cast("string") if r is None else r
    elif n in ("float4", "float8"):
        r = S.output_text(c, t)  # float8out's digits: 0, not Spark's 0.0
    elif n == "bool":
        r = F.when(c, F.lit("true")).when(~c, F.lit("false"))
    elif n in ("timestamp", "timestamptz"):
        # ISO 8601 (PostgreSQL's USE_XSD_DATES); a timestamptz with the offset of Spark's
        # zone, UTC (docs/differences.md), as +hh:mm
        r = F.date_format(c, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS")
        r = F.regexp_replace(r, r"\.?0+$", "")
        r = F.concat(F.lit('"'), r, F.lit('+00:00"' if n == "timestamptz" else '"'))
    elif t.is_array:
        # nested to the plan's dimensions (``array_depth``), each element as its JSON
        from planner.functions.array import array_depth

        def nest(v, depth):
            items = F.transform(v, (lambda y: nest(y, depth - 1)) if depth > 1 else
                                (lambda y: json_text_spark(S, y, t.element, None, row=False)))
            return F.concat(F.lit("["), F.array_join(items, ", "), F.lit("]"))
        r = F.when(c.isNotNull(), nest(c, array_depth(x) if x is not None else 1))
    else:
        s = S.output_text(c, t)
        js = F.to_json(F.array(s))
        r = js.substr(F.lit(2), F.length(js) - 2)
    return F.coalesce(r, F.lit("null"))


def _check_key_type(t) -> None:
    """A jsonb_build_object key must be a scalar (PostgreSQL's jsonb_build_object).

    Raises:
        SqlError 22023 for an array, jsonb or record key."""
    if t.is_array or t.name in ("jsonb", "record"):
        raise SqlError(INVALID_PARAMETER_VALUE, "key value must be scalar, not array, composite, or json")


def _object_key_py(v, t, i: int, fmt: TextFormat) -> str:
    """A jsonb_build_object key: the string of the JSON scalar ``v`` becomes (PostgreSQL's
    datum_to_jsonb with key_scalar), so true is ``"true"`` and a timestamp is ISO 8601.

    Raises:
        SqlError 22023 for a NULL key or one that is not a scalar."""
    _check_key_type(t)
    if v is None:
        raise SqlError(INVALID_PARAMETER_VALUE, f"argument {i + 1}: key must not be null")
    if t.name == "bool":
        return "true" if v else "false"
    j = to_json_value(v, t, fmt)
    return j if isinstance(j, str) else format_text(v, t, fmt)  # a number: its output text


def _object_key_spark(S, c, t, i: int):
    """Spark: ``_object_key_py``'s key as a JSON string."""
    _check_key_type(t)
    F = S.F
    if t.name in ("int2", "int4", "int8", "numeric", "float4", "float8", "bool"):
        # a number's or bool's text needs no escapes
        j = F.concat(F.lit('"'), json_text_spark(S, c, t) if t.name == "bool" else S.output_text(c, t), F.lit('"'))
    else:
        j = json_text_spark(S, c, t)
    return F.when(c.isNull(), S.fail(INVALID_PARAMETER_VALUE, f"argument {i + 1}: key must not be null")).otherwise(j)


def _build_object_py(a, e, ctx):
    if len(a) % 2:
        raise SqlError(INVALID_PARAMETER_VALUE, "argument list must have even number of elements",
                       hint="The arguments of jsonb_build_object() must consist of alternating keys and values.")
    out = {}
    for i in range(0, len(a), 2):
        fmt = ctx.guard.text
        out[_object_key_py(a[i], e.args[i].type, i, fmt)] = to_json_value(a[i + 1], e.args[i + 1].type, fmt)
    return jsonb_text(out)


def _build_object_spark(S, a, e):
    F = S.F
    if len(a) % 2:
        raise SqlError(INVALID_PARAMETER_VALUE, "argument list must have even number of elements")
    parts = []
    for i in range(0, len(a), 2):
        key = _object_key_spark(S, a[i], e.args[i].type, i)
        parts += [F.lit(", ") if i else F.lit(""), key, F.lit(": "),
                  json_text_spark(S, a[i + 1], e.args[i + 1].type, e.args[i + 1])]
    return F.concat(F.lit("{"), *parts, F.lit("}"))


def _variant_step(step) -> str:
    """A VARIANT path step: ``[i]`` for an integer (an array element), ``['key']`` for
    text (an object field)."""
    if isinstance(step, int) and not isinstance(step, bool):
        if step < 0:
            raise SqlError(FEATURE_NOT_SUPPORTED, "negative jsonb array indexes are not supported on table data")
        return f"[{step}]"
    if "'" in step or "\\" in step:
        raise SqlError(FEATURE_NOT_SUPPORTED, "jsonb keys with quotes or backslashes are not supported on table data")
    return f"['{step}']"


def _get_spark(S, a, e):
    """-> ->> #> #>> over VARIANT: the path must be constant."""
    F, T = S.F, S.T
    step = e.args[1]
    if step.__class__.__name__ != "Literal":
        raise SqlError(FEATURE_NOT_SUPPORTED, "jsonb paths must be constants on table data")
    if step.value is None:
        return F.lit(None).cast(T.StringType())
    steps = step.value if isinstance(step.value, list) else [step.value]
    if any(x is None for x in steps):
        return F.lit(None).cast(T.StringType())
    v = F.parse_json(a[0])
    typ = "string" if e.func.endswith("_text") else "variant"
    # A path (#>) step of digits reads an array element or an object field, whichever
    # the document has there; a text key of -> reads an object field only.
    paths = [""]
    for x in steps:
        alts = [x] + ([int(x)] if isinstance(x, str) and isinstance(step.value, list)
                      and x.lstrip("-").isdigit() else [])
        paths = [p + _variant_step(y) for p in paths for y in alts]
    got = F.coalesce(*[F.try_variant_get(v, "$" + p, typ) for p in paths]) if len(paths) > 1 \
        else F.try_variant_get(v, "$" + paths[0], typ)
    return got if typ == "string" else F.to_json(got)


#: a JSON string (kept whole, so that what looks like a null inside one is never taken)
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
#: (pattern of nulls after the first member or element, pattern of a first one) in
#: compact JSON (``to_json`` of a VARIANT: no blanks outside strings)
_LATER_NULL_MEMBER = rf',{_JSON_STRING}:null(?=[,}}])'
_FIRST_NULL_MEMBER = rf'(?<=\{{){_JSON_STRING}:null(?:,|(?=}}))'
_LATER_NULL_ELEMENT = r',null(?=[,\]])'
_FIRST_NULL_ELEMENT = r'(?<=\[)null(?:,|(?=\]))'


def _strip_nulls_spark(S, a, e):
    """jsonb_strip_nulls on Spark: the document in compact text, then two global regex
    passes that delete null members (and, with ``strip_in_arrays``, null elements):
    first every one after the first of its object or array, then a first one, so that a
    run of nulls goes whole. Strings are matched whole and kept (``$1``)."""
    F = S.F
    text = F.to_json(F.parse_json(a[0]))

    def strip(c, later: str, first: str):
        c = F.regexp_replace(c, f"{later}|({_JSON_STRING})", "$1")
        return F.regexp_replace(c, f"{first}|({_JSON_STRING})", "$1")

    members = strip(text, _LATER_NULL_MEMBER, _FIRST_NULL_MEMBER)
    if len(a) == 1:
        return members
    both = strip(text, f"{_LATER_NULL_MEMBER}|{_LATER_NULL_ELEMENT}", f"{_FIRST_NULL_MEMBER}|{_FIRST_NULL_ELEMENT}")
    return F.when(a[1].isNull(), F.lit(None).cast("string")).when(a[1], both).otherwise(members)


def _typeof_spark(S, a, e):
    F, T = S.F, S.T
    sch = F.schema_of_variant(F.parse_json(a[0]))
    return (F.when(a[0].isNull(), F.lit(None).cast(T.StringType()))
            .when(sch.startswith("OBJECT"), F.lit("object")).when(sch.startswith("ARRAY"), F.lit("array"))
            .when(sch == "STRING", F.lit("string")).when(sch == "BOOLEAN", F.lit("boolean"))
            .when(sch == "VOID", F.lit("null")).otherwise(F.lit("number")))


def _array_length_spark(S, a, e):
    F, T = S.F, S.T
    arr = F.try_variant_get(F.parse_json(a[0]), "$", "array<variant>")
    return F.when(a[0].isNull(), F.lit(None).cast(T.IntegerType())).when(arr.isNotNull(), F.size(arr)).otherwise(
        S.fail(INVALID_PARAMETER_VALUE, "cannot get array length of a non-array"))


register(
    Function("jsonb_get", (), lambda a, e: _out(_step(doc(a[0]), a[1], path=False), False), _get_spark, doc="9.16",
             samples=("j -> 'a'", "j -> 1", "j -> '1'", "j #> '{1}'")),
    Function("jsonb_get_text", (), lambda a, e: _out(_step(doc(a[0]), a[1], path=False), True), _get_spark,
             doc="9.16", samples=("j ->> 'a'", "j ->> 1", "j ->> '0'", "j #>> '{0}'"),
             differs="on Spark, ->> and #>> of an object or array give compact JSON text ({\"c\":null})"),
    Function("jsonb_path", (), _path, _get_spark, doc="9.16", samples=("j #> '{a,c}'",)),
    Function("jsonb_path_text", (), _path, _get_spark, doc="9.16", samples=("j #>> '{b,1}'",)),
    Function("jsonb_contains", (), lambda a, e: contains(doc(a[0]), doc(a[1])), lambda S, a, e: _contains_spark(False)(S, a, e),
             doc="9.16", samples=("j @> '{\"a\": 1}'", "j @> '[1]'", "j @> '\"str\"'", "j @> '{\"a\": {}}'",
                                  "j @> '[null, \"x\"]'", "j @> '{\"b\": [2]}'", "j @> j",
                                  "j @> jsonb_build_object('a', k)", "'[1, \"x\", null, 2]' @> j")),
    Function("jsonb_contained", (), lambda a, e: contains(doc(a[1]), doc(a[0])), lambda S, a, e: _contains_spark(True)(S, a, e),
             doc="9.16", samples=("'{\"a\": 1}' <@ j", "'1' <@ j", "j <@ '{\"a\": 1, \"b\": [1, 2, 3]}'",
                                  "j <@ j")),
    Function("jsonb_exists", (), _exists, lambda S, a, e: _exists_spark(S, a, e), doc="9.16",
             samples=("j ? 'a'", "j ? 'x'", "j ? 'str'", "j ? s")),
    Function("jsonb_concat", (), lambda a, e: jsonb_text(concat_py(doc(a[0]), doc(a[1]))), _concat_spark,
             doc="9.16", samples=("j || '{\"z\": 1}'", "j || '[9]'", "'{\"a\": 0, \"y\": 2}' || j",
                                       # merged keys read again on Spark; a quote escaped in a key's value
                                       "('{\"a\": \"x\\\"y\", \"q\": 1}' || j) -> 'a'")),
    Function("jsonb_typeof", (sig("jsonb", ret="text"),), lambda a, e: _typeof(doc(a[0])), _typeof_spark,
             sql_names=("jsonb_typeof", "json_typeof"), doc="9.16", samples=("jsonb_typeof(j)",)),
    Function("jsonb_array_length", (sig("jsonb", ret="int4"),), lambda a, e: _array_length(doc(a[0])),
             _array_length_spark, sql_names=("jsonb_array_length", "json_array_length"), doc="9.16",
             samples=("jsonb_array_length(j -> 'b')",)),
    Function("jsonb_build_object", (sig("any", ret="jsonb", variadic=True),), _build_object_py,
             _build_object_spark, sql_names=("jsonb_build_object", "json_build_object"), strict=False, doc="9.16",
             samples=("jsonb_build_object('k', k, 's', s, 'b', b, 'n', n)", "jsonb_build_object('j', j, 'd', d)"), extra=IN_CONTEXT),
)


# -- set-returning functions (9.16, table 9.49): each output column an array-valued entry --


def _object_of(srf: str, text, empty_ok: bool = False):
    d = doc(text)
    if not isinstance(d, dict):
        what = "an array" if isinstance(d, list) else "a scalar"
        raise SqlError(INVALID_PARAMETER_VALUE, f"cannot call {srf} on {what}" if srf == "jsonb_object_keys"
                       else f"cannot call {srf} on a non-object")
    return d


def _elements_of(text):
    d = doc(text)
    if not isinstance(d, list):
        raise SqlError(INVALID_PARAMETER_VALUE, "cannot extract elements from " +
                       ("an object" if isinstance(d, dict) else "a scalar"))
    return d


def _json_items_py(srf: str, part: str):
    """The column ``part`` (key, value, value_text, elem, elem_text) of ``srf``'s rows,
    in jsonb's key order."""
    def py(a, e):
        if part.startswith("elem"):
            items = _elements_of(a[0])
        else:
            obj = _object_of(srf, a[0])
            if part == "key":
                return list(obj)
            items = list(obj.values())
        return [_out(v, part.endswith("_text")) for v in items]
    return py


def _json_items_spark(srf: str, part: str):
    def spark(S, a, e):
        F = S.F
        v = F.parse_json(a[0])
        if part.startswith("elem"):
            arr = F.try_variant_get(v, "$", "array<variant>")
            bad = "cannot extract elements from a non-array"
        else:
            m = F.try_variant_get(v, "$", "map<string,variant>")
            if part == "key":
                arr = F.map_keys(m)
            else:
                arr = F.map_values(m)
            bad = f"cannot call {srf} on a non-object"
            if srf == "jsonb_object_keys":
                bad = "cannot call jsonb_object_keys on a non-object"
        if part in ("value", "elem"):
            arr = F.transform(arr, lambda x: F.to_json(x))
        elif part in ("value_text", "elem_text"):
            arr = F.transform(arr, lambda x: F.when(F.is_variant_null(x), F.lit(None).cast("string"))
                              .otherwise(F.coalesce(F.try_variant_get(x, "$", "string"), F.to_json(x))))
        return F.when(a[0].isNull(), F.lit(None)).when(arr.isNotNull(), arr).otherwise(
            S.fail(INVALID_PARAMETER_VALUE, bad))
    return spark


_JSON_SRFS = {
    "jsonb_each": (("key", "key", "text"), ("value", "value", "jsonb")),
    "jsonb_each_text": (("key", "key", "text"), ("value", "value_text", "text")),
    "jsonb_object_keys": (("jsonb_object_keys", "key", "text"),),
    "jsonb_array_elements": (("value", "elem", "jsonb"),),
    "jsonb_array_elements_text": (("value", "elem_text", "text"),),
}
_SRF_SAMPLES = {
    "jsonb_each": ("jsonb_each(j)", "jsonb_each(CASE WHEN jsonb_typeof(j) = 'object' THEN j END)"),
    "jsonb_each_text": ("jsonb_each_text(j)", "jsonb_each_text(CASE WHEN jsonb_typeof(j) = 'object' THEN j END)"),
    "jsonb_object_keys": ("jsonb_object_keys(j)",), "jsonb_array_elements": ("jsonb_array_elements(j)",),
    "jsonb_array_elements_text": ("jsonb_array_elements_text(j)",),
}
#: jsonb's text of a value computed on Spark (to_json of a VARIANT)
_COMPACT = "on table data, a nested object or array value is Spark's compact JSON text ([1,2], not [1, 2]), " \
           "as jsonb::text is there"
_SRF_DIFFERS = {
    "jsonb_each_text": _COMPACT,
    "jsonb_each": _COMPACT + " (in the select list, where jsonb_each's row is a record's text)",
}
for _srf, _cols in _JSON_SRFS.items():
    register(*[Function(f"{_srf}:{part}", (sig("jsonb", ret=f"_{t}"),), _json_items_py(_srf, part),
                        _json_items_spark(_srf, part), doc="9.16") for _, part, t in _cols])
    register(Function(_srf, (sig("jsonb", ret="record"),), None, None, sql_names=(_srf, _srf.replace("jsonb", "json")),
                      kind="srf", doc="9.16", samples=_SRF_SAMPLES[_srf], differs=_SRF_DIFFERS.get(_srf, ""),
                      extra={"columns": tuple((name, f"{_srf}:{part}") for name, part, _ in _cols)}))


# -- jsonb_to_record, jsonb_to_recordset (9.16, table 9.49) ---------------------------------
#
# Planned in FROM with their column definition list (``planner.query``): a record's column
# c of type T is ``(x ->> 'c')::T`` of the object x (``x -> 'c'`` for json and jsonb
# columns), as PostgreSQL's populate_record_field feeds a scalar's text (a string's
# contents, any other value's JSON text) to T's input function; recordset's rows are the
# array's elements. This entry checks the shape first, with PostgreSQL's errors.

#: the shape check's kinds -> (the JSON kind it wants, PostgreSQL's message without it)
_RECORD_SHAPES = {
    "record": ("object", "cannot call populate_composite on {an}"),
    "recordset": ("array", "cannot call {f} on a non-array"),
    "element": ("object", "argument of {f} must be an array of objects"),
}


def _shape(d) -> str:
    return "object" if isinstance(d, dict) else "array" if isinstance(d, list) else "scalar"


def _record_check_py(a, e):
    text, what, fname = a
    want, message = _RECORD_SHAPES[what]
    got = _shape(doc(text))
    if got != want:
        raise SqlError(INVALID_PARAMETER_VALUE, message.format(f=fname, an="an array" if got == "array" else "a scalar"))
    return text


def _record_check_spark(S, a, e):
    F = S.F
    what, fname = e.args[1].value, e.args[2].value
    want, message = _RECORD_SHAPES[what]
    sch = F.schema_of_variant(F.parse_json(a[0]))
    ok = sch.startswith(want.upper())
    if what == "record":
        fail = F.when(sch.startswith("ARRAY"), S.fail(INVALID_PARAMETER_VALUE, message.format(an="an array"))) \
            .otherwise(S.fail(INVALID_PARAMETER_VALUE, message.format(an="a scalar")))
    else:
        fail = S.fail(INVALID_PARAMETER_VALUE, message.format(f=fname))
    return F.when(a[0].isNull() | ok, a[0]).otherwise(fail)


register(Function("jsonb_record_check", (sig("jsonb", "text", "text", ret="jsonb"),), _record_check_py,
                  _record_check_spark, doc="9.16"))

#: the functions planned from a column definition list -> whether their rows are an array's
RECORD_FUNCTIONS = {"jsonb_to_record": False, "json_to_record": False, "jsonb_to_recordset": True,
                    "json_to_recordset": True}


# -- jsonb ordering (8.14.4, btree operator class) -----------------------------------------


def jsonb_sort_key(text: str) -> tuple:
    """A Python sort key giving jsonb's btree order (PostgreSQL 8.14.4 "jsonb Indexing"):
    an empty top-level array < null < string < number < boolean < array < object (the
    empty top-level array first, PostgreSQL's historical exception); arrays by length
    then elements, objects by number of pairs then key, value, key, ... in storage order
    (keys shorter first, then bytewise); strings in code-point order (the C.UTF-8
    collation), numbers as numerics (jsonb_util.c compareJsonbContainers)."""
    d = doc(text)
    return (0,) if d == [] else _value_key(d)


def _value_key(d) -> tuple:
    if d is None:
        return (1,)
    if isinstance(d, bool):
        return (4, d)
    if isinstance(d, str):
        return (2, d)
    if isinstance(d, (int, Decimal)):
        return (3, Decimal(d))
    if isinstance(d, list):
        return (5, len(d), tuple(_value_key(e) for e in d))
    keys = sorted(d, key=lambda k: (len(k.encode()), k.encode()))
    return (6, len(d), tuple(x for k in keys for x in ((2, k), _value_key(d[k]))))


def _variant_key(S, v):
    """(rank, size, string, number, text) of a VARIANT value: jsonb_sort_key's first
    level on Spark (a nested array or object within compares by size, then text). A
    number is (double, decimal(38,18)): the double orders numbers too large for the
    decimal, the decimal breaks the double's ties."""
    F = S.F
    kind = F.schema_of_variant(v)
    rank = (F.when(v.isNull() | (kind == "VOID"), 1).when(kind == "STRING", 2).when(kind == "BOOLEAN", 4)
            .when(kind.startswith("ARRAY"), 5).when(kind.startswith("OBJECT"), 6).otherwise(3))
    size = (F.when(rank == 5, F.size(F.try_variant_get(v, "$", "array<variant>")))
            .when(rank == 6, F.size(F.try_variant_get(v, "$", "map<string,variant>"))))
    string = F.when(rank == 2, F.try_variant_get(v, "$", "string")).when(rank == 4, F.to_json(v))
    number = F.when(rank == 3, F.struct(F.try_variant_get(v, "$", "double").alias("d"),
                                        F.try_variant_get(v, "$", "decimal(38,18)").alias("n")))
    text = F.when(rank >= 5, F.to_json(v))
    return rank, size, string, number, text


def _sort_key_spark(S, a, e):
    """jsonb_sort_key as a Spark struct column (ordered field by field)."""
    F = S.F
    v = F.try_parse_json(a[0])
    rank, size, string, number, _ = _variant_key(S, v)
    rank = F.when((rank == 5) & (size == 0), 0).otherwise(rank)
    elem = lambda x: F.struct(*[c.alias(f"f{i}") for i, c in enumerate(_variant_key(S, x))])  # noqa: E731
    elems = F.when(rank == 5, F.transform(F.try_variant_get(v, "$", "array<variant>"), elem))
    entries = F.map_entries(F.try_variant_get(v, "$", "map<string,variant>"))
    ordered = F.array_sort(entries, lambda p, q: F.when(F.octet_length(p.key) != F.octet_length(q.key),
                                                        F.octet_length(p.key) - F.octet_length(q.key))
                           .when(p.key < q.key, -1).when(p.key > q.key, 1).otherwise(0))
    pairs = F.when(rank == 6, F.transform(ordered, lambda p: F.struct(p.key.alias("k"), elem(p.value).alias("v"))))
    return F.when(a[0].isNotNull(), F.struct(rank.alias("rank"), size.alias("size"), string.alias("string"),
                                             number.alias("number"), elems.alias("elems"), pairs.alias("pairs")))


register(
    Function("jsonb_sort_key", (sig("jsonb", ret="jsonb"),), lambda a, e: jsonb_sort_key(a[0]), _sort_key_spark,
             doc="8.14.4",
             differs="on Spark, arrays and objects nested inside an array or object compare by size, then by "
                     "their text, not element by element"),
)


# -- jsonb_build_array, to_jsonb, jsonb - text, jsonb_set, jsonb_pretty (9.16) ---------------


def _build_array_spark(S, a, e):
    F = S.F
    items = [json_text_spark(S, c, x.type, x) for c, x in zip(a, e.args)]
    return F.concat(F.lit("["), F.concat_ws(", ", *items), F.lit("]")) if items else F.lit("[]")


def _to_jsonb_spark(S, a, e):
    return S.F.when(a[0].isNotNull(), json_text_spark(S, a[0], e.args[0].type, e.args[0]))


def _delete_py(a, e):
    """jsonb - text (table 9.46): an object without the key, an array without the string
    elements equal to it.

    Raises:
        SqlError 22023 for a scalar."""
    d = doc(a[0])
    if isinstance(d, dict):
        return jsonb_text({k: v for k, v in d.items() if k != a[1]})
    if isinstance(d, list):
        return jsonb_text([x for x in d if x != a[1] or not isinstance(x, str)])
    raise SqlError(INVALID_PARAMETER_VALUE, "cannot delete from scalar")


def _kind(F, v):
    """The JSON kind of a VARIANT column: object, array, string, boolean, null, number."""
    sch = F.schema_of_variant(v)
    return (F.when(sch.startswith("OBJECT"), F.lit("object")).when(sch.startswith("ARRAY"), F.lit("array"))
            .when(sch == "STRING", F.lit("string")).when(sch == "BOOLEAN", F.lit("boolean"))
            .when(sch == "VOID", F.lit("null")).otherwise(F.lit("number")))


def _delete_spark(S, a, e):
    F = S.F
    v = F.parse_json(a[0])
    kind = _kind(F, v)
    obj = F.map_filter(F.try_variant_get(v, "$", "map<string,variant>"), lambda k, _: k != a[1])
    arr = F.filter(F.try_variant_get(v, "$", "array<variant>"),
                   lambda x: ~((_kind(F, x) == "string") & (F.try_variant_get(x, "$", "string") == a[1])))
    return (F.when(a[0].isNull() | a[1].isNull(), F.lit(None).cast("string"))
            .when(kind == "object", F.to_json(obj)).when(kind == "array", F.to_json(arr))
            .otherwise(S.fail(INVALID_PARAMETER_VALUE, "cannot delete from scalar")))


def _field_path(k: str) -> str:
    if "'" in k or "\\" in k:
        raise SqlError(FEATURE_NOT_SUPPORTED, "jsonb keys with quotes or backslashes are not supported on table data")
    return f"$['{k}']"


def contains_spark(F, v, b):
    """Spark: whether the VARIANT column ``v`` contains the constant JSON value ``b``
    (``contains``'s rules, compiled over ``b``'s structure); NULL only for a NULL ``v``."""
    kind = _kind(F, v)
    if isinstance(b, dict):
        cond = kind == "object"
        for k, val in b.items():
            cond = cond & F.coalesce(contains_spark(F, F.try_variant_get(v, _field_path(k), "variant"), val),
                                     F.lit(False))
        return cond
    if isinstance(b, list):
        arr = F.try_variant_get(v, "$", "array<variant>")
        cond = kind == "array"
        for y in b:
            cond = cond & F.exists(arr, _contains_test(F, y))
        return cond
    if kind is None:
        return F.lit(False)
    scalar = _scalar_equal(F, v, kind, b)
    if b is None or isinstance(b, (bool, str, int, Decimal)):
        # a scalar array contains a scalar (8.14.3)
        arr = F.try_variant_get(v, "$", "array<variant>")
        return scalar | ((kind == "array") & F.exists(arr, lambda x: F.coalesce(_scalar_equal(F, x, _kind(F, x), b),
                                                                               F.lit(False))))
    return scalar


def _contains_test(F, y):
    """A one-argument lambda (Spark's higher-order functions pass an index to a second
    one): whether an element contains ``y``."""
    return lambda x: F.coalesce(contains_spark(F, x, y), F.lit(False))


def _scalar_equal(F, v, kind, b):
    if b is None:
        return kind == "null"
    if isinstance(b, bool):
        return (kind == "boolean") & (F.try_variant_get(v, "$", "boolean") == F.lit(b))
    if isinstance(b, str):
        return (kind == "string") & (F.try_variant_get(v, "$", "string") == F.lit(b))
    d = Decimal(b)
    if d == d.to_integral_value() and abs(d) < 2**63:
        num = F.try_variant_get(v, "$", "decimal(38,0)") == F.lit(int(d)).cast("decimal(38,0)")
        num = num & (F.try_variant_get(v, "$", "decimal(38,18)") == F.lit(int(d)).cast("decimal(38,18)"))
    else:
        num = F.try_variant_get(v, "$", "decimal(38,18)") == F.lit(d).cast("decimal(38,18)")
    return (kind == "number") & F.coalesce(num, F.lit(False))


def _contains_spark(flip: bool):
    """@> (``flip`` False) and <@: a constant contained side is compiled into Spark
    expressions over the container (``contains_spark``); any other runs ``contains`` on
    the replica (``by_python``: Spark has no recursion over two JSON values)."""
    def spark(S, a, e):
        F = S.F
        whole, part = (1, 0) if flip else (0, 1)
        c = e.args[part]
        if c.__class__.__name__ != "Literal":
            return by_python(S, a, e)
        if c.value is None:
            return F.lit(None).cast("boolean")
        return F.when(a[whole].isNotNull(), contains_spark(F, F.parse_json(a[whole]), doc(c.value)))
    return spark


def _string_keys(F, v):
    """Spark: what ``?`` looks for in the VARIANT column ``v``: an object's keys, an
    array's string elements, a string scalar itself (as an array of strings)."""
    kind = _kind(F, v)
    strings = F.transform(F.filter(F.try_variant_get(v, "$", "array<variant>"), lambda x: _kind(F, x) == "string"),
                          lambda x: F.try_variant_get(x, "$", "string"))
    return (F.when(kind == "object", F.map_keys(F.try_variant_get(v, "$", "map<string,variant>")))
            .when(kind == "array", strings)
            .when(kind == "string", F.array(F.try_variant_get(v, "$", "string")))
            .otherwise(F.array().cast("array<string>")))


def _exists_spark(S, a, e):
    F = S.F
    keys = _string_keys(F, F.parse_json(a[0]))
    return F.when(a[0].isNull() | a[1].isNull(), F.lit(None).cast("boolean")).otherwise(F.array_contains(keys, a[1]))


def _exists_many_py(every: bool):
    def py(a, e):
        wanted = [k for k in a[1] if k is not None]
        hits = [_exists([a[0], k], e) for k in wanted]
        return all(hits) if every else any(hits)
    return py


def _exists_many_spark(every: bool):
    """?& (``every``) and ?|: NULL elements of the key array are skipped (jsonb_op.c)."""
    def spark(S, a, e):
        F = S.F
        keys = _string_keys(F, F.parse_json(a[0]))
        test = (lambda k: k.isNull() | F.array_contains(keys, k)) if every else \
            (lambda k: k.isNotNull() & F.coalesce(F.array_contains(keys, k), F.lit(False)))
        return F.when(a[0].isNotNull() & a[1].isNotNull(), (F.forall if every else F.exists)(a[1], test))
    return spark


def _delete_keys_py(a, e):
    """jsonb - text[]: ``jsonb - text`` for each key (NULL keys skipped)."""
    d = doc(a[0])
    keys = {k for k in a[1] if k is not None}
    if isinstance(d, dict):
        return jsonb_text({k: v for k, v in d.items() if k not in keys})
    if isinstance(d, list):
        return jsonb_text([x for x in d if not (isinstance(x, str) and x in keys)])
    raise SqlError(INVALID_PARAMETER_VALUE, "cannot delete from scalar")


def _delete_keys_spark(S, a, e):
    F = S.F
    v = F.parse_json(a[0])
    kind = _kind(F, v)
    keys = F.filter(a[1], lambda k: k.isNotNull())
    obj = F.map_filter(F.try_variant_get(v, "$", "map<string,variant>"), lambda k, _: ~F.array_contains(keys, k))
    arr = F.filter(F.try_variant_get(v, "$", "array<variant>"),
                   lambda x: ~F.coalesce((_kind(F, x) == "string")
                                         & F.array_contains(keys, F.try_variant_get(x, "$", "string")), F.lit(False)))
    return (F.when(a[0].isNull() | a[1].isNull(), F.lit(None).cast("string"))
            .when(kind == "object", F.to_json(obj)).when(kind == "array", F.to_json(arr))
            .otherwise(S.fail(INVALID_PARAMETER_VALUE, "cannot delete from scalar")))


def _delete_index_py(a, e):
    d = doc(a[0])
    if isinstance(d, dict):
        raise SqlError(INVALID_PARAMETER_VALUE, "cannot delete from object using integer index")
    if not isinstance(d, list):
        raise SqlError(INVALID_PARAMETER_VALUE, "cannot delete from scalar")
    i = a[1] + len(d) if a[1] < 0 else a[1]
    return jsonb_text([x for j, x in enumerate(d) if j != i])


def _delete_index_spark(S, a, e):
    F = S.F
    v = F.parse_json(a[0])
    kind = _kind(F, v)
    arr = F.try_variant_get(v, "$", "array<variant>")
    at = F.when(a[1] < 0, F.size(arr) + a[1]).otherwise(a[1])
    return (F.when(a[0].isNull() | a[1].isNull(), F.lit(None).cast("string"))
            .when(kind == "array", F.to_json(F.filter(arr, lambda x, i: i != at)))
            .when(kind == "object", S.fail(INVALID_PARAMETER_VALUE, "cannot delete from object using integer index"))
            .otherwise(S.fail(INVALID_PARAMETER_VALUE, "cannot delete from scalar")))


def _strip_nulls(d, in_arrays: bool = False):
    if isinstance(d, dict):
        return {k: _strip_nulls(v, in_arrays) for k, v in d.items() if v is not None}
    if isinstance(d, list):
        return [_strip_nulls(x, in_arrays) for x in d if not (in_arrays and x is None)]
    return d


def _set_py(a, e):
    """jsonb_set(target, path, new [, create_if_missing]) (table 9.47): ``target`` with
    the value at ``path`` replaced by ``new``, or added as the path's last step when
    missing and ``create_if_missing`` (an array index past either end adds at that end).

    Raises:
        SqlError 22023 for a scalar target or a path step that is not an array index."""
    target, path, new = a[0], a[1], a[2]
    create = a[3] if len(a) > 3 else True
    if target is None or path is None or new is None or create is None:
        return None
    d = doc(target)
    if not isinstance(d, (dict, list)):
        raise SqlError(INVALID_PARAMETER_VALUE, "cannot set path in scalar")
    if not path:
        return jsonb_text(d)
    if any(p is None for p in path):
        raise SqlError(NULL_VALUE_NOT_ALLOWED, f"path element at position {path.index(None) + 1} is null")
    return jsonb_text(_set_in(d, path, 0, doc(new), create))


def _set_in(d, path, i, new, create):
    step = path[i]
    last = i == len(path) - 1
    if isinstance(d, dict):
        if step in d:
            return {**d, step: new if last else _set_in(d[step], path, i + 1, new, create)}
        return {**d, step: new} if last and create else d
    if isinstance(d, list):
        try:
            n = int(step)
        except ValueError:
            raise SqlError(INVALID_TEXT_REPRESENTATION, f"path element at position {i + 1} is not an integer: \"{step}\"") from None
        idx = n + len(d) if n < 0 else n
        if 0 <= idx < len(d):
            return d[:idx] + [new if last else _set_in(d[idx], path, i + 1, new, create)] + d[idx + 1:]
        if last and create:
            return [new] + d if idx < 0 else d + [new]
        return d
    return d  # a scalar inside: the path goes no further, nothing changes


def _set_spark(S, a, e):
    """jsonb_set on Spark, for a constant path and create flag: each step rebuilds its
    level (an object as a map without the key plus the new pair, an array by position)
    from VARIANT values; the jsonb text is normalized on its way to the session."""
    F = S.F
    path = constant_arg(e, 1, "jsonb_set's path")
    create = constant_arg(e, 3, "jsonb_set's create_if_missing") if len(a) > 3 else True
    if path is None or create is None:
        return F.lit(None).cast("string")
    if any(p is None for p in path):
        return F.when(a[0].isNotNull(), S.fail(NULL_VALUE_NOT_ALLOWED, f"path element at position {path.index(None) + 1} is null"))
    v = F.parse_json(a[0])
    if not path:
        return F.when(a[2].isNotNull(), F.to_json(v))
    kind = _kind(F, v)
    out = _set_level(S, v, list(path), F.parse_json(a[2]), create, 0)
    return (F.when(a[0].isNull() | a[2].isNull(), F.lit(None).cast("string"))
            .when((kind != "object") & (kind != "array"), S.fail(INVALID_PARAMETER_VALUE, "cannot set path in scalar"))
            .otherwise(F.to_json(out)))


def _set_level(S, v, path, new, create, i):
    """The VARIANT ``v`` with ``path[i:]`` set to ``new`` (``_set_in``'s rules)."""
    F = S.F
    step, last = path[i], i == len(path) - 1
    kind = _kind(F, v)
    m = F.try_variant_get(v, "$", "map<string,variant>")
    has = F.array_contains(F.map_keys(m), F.lit(step))
    inner = new if last else _set_level(S, F.try_variant_get(v, _field_path(step), "variant"), path, new, create,
                                        i + 1)
    rest = F.map_filter(m, lambda k, _: k != F.lit(step))
    as_object = F.when(has | F.lit(bool(last and create)), F.to_json(F.map_concat(rest, F.create_map(
        F.lit(step), inner)))).otherwise(F.to_json(v))
    try:
        n = int(step)
    except ValueError:
        n = None
    if n is None:
        as_array = F.when(kind == "array", S.fail(INVALID_TEXT_REPRESENTATION, f"path element at position {i + 1} is not an integer: "
                                                           f"\"{step}\""))
    else:
        arr = F.try_variant_get(v, "$", "array<variant>")
        at = F.lit(n) if n >= 0 else F.size(arr) + n
        elem = new if last else _set_level(S, F.element_at(arr, at + 1), path, new, create, i + 1)
        inside = (at >= 0) & (at < F.size(arr))
        replaced = F.transform(arr, lambda x, j: F.when(j == at, elem).otherwise(x))
        if last and create:
            grown = F.when(at < 0, F.concat(F.array(new), arr)).otherwise(F.concat(arr, F.array(new)))
            as_array = F.to_json(F.when(inside, replaced).otherwise(grown))
        else:
            as_array = F.to_json(F.when(inside, replaced).otherwise(arr))
    return F.parse_json(F.when(kind == "object", as_object).when(kind == "array", as_array).otherwise(F.to_json(v)))


def pretty(d, indent: int = 0) -> str:
    """jsonb_pretty's text: one item a line, four spaces an indent (jsonb.c JsonbToCStringIndent)."""
    pad = " " * (4 * (indent + 1))
    if d == {} or d == []:  # an empty container keeps its line break
        return ("{\n" if isinstance(d, dict) else "[\n") + " " * (4 * indent) + ("}" if isinstance(d, dict) else "]")
    if isinstance(d, dict):
        keys = sorted(d, key=lambda k: (len(k.encode()), k.encode()))
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {pretty(d[k], indent + 1)}" for k in keys]
        return "{\n" + ",\n".join(items) + "\n" + " " * (4 * indent) + "}"
    if isinstance(d, list):
        return "[\n" + ",\n".join(pad + pretty(x, indent + 1) for x in d) + "\n" + " " * (4 * indent) + "]"
    return jsonb_text(d)


def _jsonb_object_pairs(a) -> list:
    """jsonb_object's (key, value) pairs (PostgreSQL 9.16, table 9.47): of one array of
    alternating keys and values, of an array of two-element arrays, or of a keys and a
    values array.

    Raises:
        SqlError 2202E for an odd count, rows not of two, or arrays of different lengths;
        22004 for a NULL key."""
    if len(a) == 2:
        keys, values = a
        if len(keys) != len(values) or any(isinstance(v, list) for v in (*keys, *values)):
            raise SqlError(ARRAY_SUBSCRIPT_ERROR, "mismatched array dimensions")
        pairs = list(zip(keys, values))
    elif a[0] and isinstance(a[0][0], list):
        if any(not isinstance(row, list) or len(row) != 2 or any(isinstance(v, list) for v in row) for row in a[0]):
            raise SqlError(ARRAY_SUBSCRIPT_ERROR, "array must have two columns")
        pairs = [tuple(row) for row in a[0]]
    else:
        if len(a[0]) % 2:
            raise SqlError(ARRAY_SUBSCRIPT_ERROR, "array must have even number of elements")
        pairs = list(zip(a[0][::2], a[0][1::2]))
    if any(k is None for k, _ in pairs):
        raise SqlError(NULL_VALUE_NOT_ALLOWED, "null value not allowed for object key")
    return pairs


def _jsonb_object_spark(S, a, e):
    """On Spark, for one-dimensional arrays: the pairs, the last of each key kept, ordered
    as jsonb orders keys (shorter first, then bytewise: Spark compares strings by their
    UTF-8 bytes), as jsonb text."""
    from planner.functions.array import array_depth

    F = S.F
    if any(array_depth(x) > 1 for x in e.args):
        raise SqlError(FEATURE_NOT_SUPPORTED, "jsonb_object of a two-dimensional array is not supported on table data")
    if len(a) == 2:
        keys, values = a
        n = F.size(keys)
        bad = F.when(n != F.size(values), S.fail(ARRAY_SUBSCRIPT_ERROR, "mismatched array dimensions"))
    else:
        keys = values = a[0]
        n = F.size(keys) / 2
        bad = F.when(F.size(keys) % 2 == 1, S.fail(ARRAY_SUBSCRIPT_ERROR, "array must have even number of elements"))
    step = 1 if len(a) == 2 else 2
    n = n.cast("int")
    positions = F.filter(F.sequence(F.lit(1), F.greatest(n, F.lit(1))), lambda i: i <= n)  # 1..n, none for 0
    pairs = F.transform(positions, lambda i: F.struct(
        F.get(keys, (i - 1) * step).alias("k"), F.get(values, (i - 1) * step + (step - 1)).alias("v"), i.alias("i")))
    last = F.filter(pairs, lambda p: ~F.exists(pairs, lambda q: (q["k"] == p["k"]) & (q["i"] > p["i"])))
    ordered = F.array_sort(last, lambda p, q: (
        F.when(F.octet_length(p["k"]) != F.octet_length(q["k"]), F.octet_length(p["k"]) - F.octet_length(q["k"]))
        .when(p["k"] < q["k"], -1).when(p["k"] > q["k"], 1).otherwise(0)))
    text = F.concat(F.lit("{"), F.array_join(F.transform(ordered, lambda p: F.concat(
        json_text_spark(S, p["k"], TEXT), F.lit(": "), json_text_spark(S, p["v"], TEXT))), ", "), F.lit("}"))
    return (bad.when(F.exists(keys if len(a) == 2 else pairs, lambda x: (x if len(a) == 2 else x["k"]).isNull()),
                     S.fail(NULL_VALUE_NOT_ALLOWED, "null value not allowed for object key"))
            .otherwise(text))


def _pretty_spark(S, a, e):
    """``pretty`` on Spark: one pass over the characters of the jsonb text (whitespace
    outside strings dropped, so compact text too) that puts a line break and four spaces
    an indent after an opening bracket and a comma, before a closing one (on a line of
    its own for an empty container), and ": " after a key. Keys stay in the order of the
    value's text: a stored jsonb's, sorted as jsonb sorts them."""
    F = S.F
    x = a[0]

    def pad(n):
        return F.repeat(F.lit(" "), n * 4)

    def step(acc, c):
        out, depth, instr, esc, opened = acc["out"], acc["depth"], acc["instr"], acc["esc"], acc["opened"]
        is_open, is_close = (c == "{") | (c == "["), (c == "}") | (c == "]")
        space = c.rlike(r"^\s$")
        lead = F.when(opened & ~is_close, F.concat(F.lit("\n"), pad(depth))).otherwise(F.lit(""))
        piece = (F.when(is_close, F.concat(F.lit("\n"), pad(depth - 1), c))
                 .when(c == ",", F.concat(F.lit(",\n"), pad(depth)))
                 .when(c == ":", F.lit(": ")).otherwise(c))
        outside = ~instr & ~space
        return F.struct(
            F.when(instr, F.concat(out, c)).when(space, out).otherwise(F.concat(out, lead, piece)).alias("out"),
            F.when(outside & is_open, depth + 1).when(outside & is_close, depth - 1).otherwise(depth).alias("depth"),
            F.when(instr, esc | (c != '"')).otherwise(outside & (c == '"')).alias("instr"),
            (instr & ~esc & (c == "\\")).alias("esc"),
            F.when(outside, is_open).otherwise(opened).alias("opened"))

    start = F.struct(F.lit("").alias("out"), F.lit(0).alias("depth"), F.lit(False).alias("instr"),
                     F.lit(False).alias("esc"), F.lit(False).alias("opened"))
    chars = F.regexp_extract_all(x, F.lit("(?s)."), 0)
    return F.when(x.isNotNull(), F.aggregate(chars, start, step, lambda acc: acc["out"]))


register(
    Function("jsonb_build_array", (sig("any", ret="jsonb", variadic=True),),
             lambda a, e, ctx: jsonb_text([to_json_value(v, x.type, ctx.guard.text) for v, x in zip(a, e.args)]),
             _build_array_spark,
             sql_names=("jsonb_build_array", "json_build_array"), strict=False, doc="9.16",
             samples=("jsonb_build_array(k, s, n, b)", "jsonb_build_array(d, ts, f, j)", "jsonb_build_array()"), extra=IN_CONTEXT),
    Function("to_jsonb", (sig("any", ret="jsonb"),), lambda a, e, ctx: jsonb_text(to_json_value(a[0], e.args[0].type, ctx.guard.text)),
             _to_jsonb_spark, sql_names=("to_jsonb", "to_json"), doc="9.16",
             samples=("to_jsonb(s)", "to_jsonb(n)", "to_jsonb(a)", "to_jsonb(b)", "to_jsonb(ts)", "to_jsonb(j)",
                      "to_jsonb(f)"), extra=IN_CONTEXT),
    Function("jsonb_delete", (sig("jsonb", "text", ret="jsonb"),), _delete_py, _delete_spark, doc="9.16",
             samples=("j - 'a'", "j - 'x'", "j - s")),
    Function("jsonb_set", (sig("jsonb", "_text", "jsonb", ret="jsonb"), sig("jsonb", "_text", "jsonb", "bool",
                                                                             ret="jsonb")),
             _set_py, _set_spark, sql_names=("jsonb_set",), strict=False, doc="9.16",
             differs="on table data the path and create_if_missing must be constants (0A000 otherwise)",
             samples=("jsonb_set(CASE WHEN k <> 3 THEN j END, '{a}', '5')",
                      "jsonb_set(CASE WHEN k <> 3 THEN j END, '{b,0}', to_jsonb(k))",
                      "jsonb_set(CASE WHEN k <> 3 THEN j END, '{z}', '1', false)",
                      "jsonb_set(CASE WHEN k <> 3 THEN j END, '{-1}', '9')",
                      "jsonb_set(CASE WHEN k <> 3 THEN j END, '{a,c}', '[true]')",
                      "jsonb_set(CASE WHEN k <> 3 THEN j END, '{5}', '0')",
                      "jsonb_set(CASE WHEN k <> 3 THEN j END, '{x}', j)", "jsonb_set(j, '{a}', '5')")),
    Function("jsonb_exists_any", (), _exists_many_py(False), _exists_many_spark(False), doc="9.16",
             samples=("j ?| '{a,x}'", "j ?| ARRAY[s, 'str']", "j ?| '{}'")),
    Function("jsonb_exists_all", (), _exists_many_py(True), _exists_many_spark(True), doc="9.16",
             samples=("j ?& '{a,b}'", "j ?& ARRAY['x', NULL]", "j ?& '{}'")),
    Function("jsonb_delete_keys", (), _delete_keys_py, _delete_keys_spark, doc="9.16",
             samples=("CASE WHEN k <> 3 THEN j END - '{a,b}'::text[]", "CASE WHEN k <> 3 THEN j END - ARRAY[s, 'x']",
                      "j - '{a}'::text[]")),
    Function("jsonb_delete_index", (), _delete_index_py, _delete_index_spark, doc="9.16",
             samples=("j - 1", "j - (-1)", "j - k")),
    Function("jsonb_strip_nulls", (sig("jsonb", ret="jsonb"), sig("jsonb", "bool", ret="jsonb")),
             lambda a, e: jsonb_text(_strip_nulls(doc(a[0]), len(a) > 1 and a[1])), _strip_nulls_spark,
             sql_names=("jsonb_strip_nulls", "json_strip_nulls"), doc="9.16",
             samples=("jsonb_strip_nulls(j)", "jsonb_strip_nulls(j, true)", "jsonb_strip_nulls(j, k > 2)",
                      ("jsonb_strip_nulls(CASE WHEN k < 4 THEN '{\"a\": null, \"b\": null, \"c\": [null, {\"d\": "
                       "null, \"e\": 1}, null, [null]], \"f\": \"x\\\": null, [null\", \"g\": null}'::jsonb ELSE j END, "
                       "k < 3)"))),
    Function("jsonb_object", (sig("_text", ret="jsonb"), sig("_text", "_text", ret="jsonb")),
             lambda a, e: jsonb_text(dict(_jsonb_object_pairs(a))), _jsonb_object_spark, sql_names=("jsonb_object",),
             doc="9.16", differs="a two-dimensional array is refused on table data (0A000)",
             samples=("jsonb_object(ARRAY['a', s, 'b', NULL, 'a', k::text])", "jsonb_object(ARRAY[coalesce(s, 'z'), 'x'])",
                      "jsonb_object(a::text[])", "jsonb_object(ARRAY['k', 'kk', 'é', 'a'], ARRAY[s, 'x', NULL, k::text])",
                      "jsonb_object(ARRAY['a', 'b'], a::text[])", "jsonb_object('{}'::text[])",
                      "jsonb_object(ARRAY[CASE WHEN k < 4 THEN s END, 'v'])")),
    Function("jsonb_pretty", (sig("jsonb", ret="text"),), lambda a, e: pretty(doc(a[0])), _pretty_spark,
             sql_names=("jsonb_pretty",), doc="9.16",
             samples=("jsonb_pretty(j)", "jsonb_pretty(jsonb_build_array(k, s, j))",
                      "jsonb_pretty(CASE WHEN k < 3 THEN '{\"x\": [], \"y\": {}, \"s\": \"q\\\\\\\"\"}'::jsonb ELSE j END)",
                      "jsonb_pretty(to_jsonb(a))", "jsonb_pretty(to_jsonb(s))")),
)
