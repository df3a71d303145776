"""JSON functions and operators (PostgreSQL 9.16). As in Materialize, ``json`` is
``jsonb``. Values are jsonb's text form; on Spark, operators read them with VARIANT
(``parse_json``, ``try_variant_get``) and jsonb results are normalized to jsonb's text
form when the rows reach the session."""

from __future__ import annotations

import json
from decimal import Decimal

from catalog.errors import SqlError, INVALID_PARAMETER_VALUE, FEATURE_NOT_SUPPORTED
from catalog.textio import jsonb_text, format_text
from planner.functions import Function, register, sig

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
    return (F.when(xo & yo, F.concat(F.lit("{"), join(inner(x), inner(y)), F.lit("}")))
            .otherwise(F.concat(F.lit("["), join(as_items(x, xa), as_items(y, ya)), F.lit("]"))))


def to_json_value(v, t):
    """A SQL value as a JSON value (PostgreSQL's to_jsonb for scalars)."""
    if v is None:
        return None
    n = t.name
    if n == "jsonb":
        return doc(v)
    if n in ("int2", "int4", "int8", "numeric", "float4", "float8", "bool"):
        return v if not isinstance(v, float) else Decimal(format_text(v, t))
    if t.is_array:
        return [to_json_value(x, t.element) for x in v]
    if n == "timestamp":
        iso = v.isoformat()  # PostgreSQL's JSON form: no trailing zeros in the fraction
        return iso.rstrip("0").rstrip(".") if "." in iso else iso
    return v if isinstance(v, str) else format_text(v, t)


def json_text_spark(S, c, t):
    """Spark: the JSON text of a column of type ``t`` (to_jsonb of a scalar)."""
    F = S.F
    n = t.name
    if n == "jsonb":
        r = c
    elif n in ("int2", "int4", "int8", "numeric", "float4", "float8"):
        r = c.cast("string")
    elif n == "bool":
        r = F.when(c, F.lit("true")).when(~c, F.lit("false"))
    elif n == "timestamp":
        r = F.date_format(c, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS")
        r = F.regexp_replace(r, r"\.?0+$", "")
        r = F.to_json(F.array(r)).substr(F.lit(2), F.length(F.to_json(F.array(r))) - 2)
    elif t.is_array:
        raise SqlError(FEATURE_NOT_SUPPORTED, "arrays in jsonb_build_object are not supported on table data")
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


def _object_key_py(v, t, i: int) -> str:
    """A jsonb_build_object key: the string of the JSON scalar ``v`` becomes (PostgreSQL's
    datum_to_jsonb with key_scalar), so true is ``"true"`` and a timestamp is ISO 8601.

    Raises:
        SqlError 22023 for a NULL key or one that is not a scalar."""
    _check_key_type(t)
    if v is None:
        raise SqlError(INVALID_PARAMETER_VALUE, f"argument {i + 1}: key must not be null")
    if t.name == "bool":
        return "true" if v else "false"
    j = to_json_value(v, t)
    return j if isinstance(j, str) else format_text(v, t)  # a number: its output text


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


def _build_object_py(a, e):
    if len(a) % 2:
        raise SqlError(INVALID_PARAMETER_VALUE, "argument list must have even number of elements",
                       hint="The arguments of jsonb_build_object() must consist of alternating keys and values.")
    out = {}
    for i in range(0, len(a), 2):
        out[_object_key_py(a[i], e.args[i].type, i)] = to_json_value(a[i + 1], e.args[i + 1].type)
    return jsonb_text(out)


def _build_object_spark(S, a, e):
    F = S.F
    if len(a) % 2:
        raise SqlError(INVALID_PARAMETER_VALUE, "argument list must have even number of elements")
    parts = []
    for i in range(0, len(a), 2):
        key = _object_key_spark(S, a[i], e.args[i].type, i)
        parts += [F.lit(", ") if i else F.lit(""), key, F.lit(": "), json_text_spark(S, a[i + 1], e.args[i + 1].type)]
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


def _unsupported(what):
    def spark(S, a, e):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{what} is not supported on table data yet")
    return spark


register(
    Function("jsonb_get", (), lambda a, e: _out(_step(doc(a[0]), a[1], path=False), False), _get_spark, doc="9.16",
             samples=("j -> 'a'", "j -> 1", "j -> '1'", "j #> '{1}'")),
    Function("jsonb_get_text", (), lambda a, e: _out(_step(doc(a[0]), a[1], path=False), True), _get_spark,
             doc="9.16", samples=("j ->> 'a'", "j ->> 1", "j ->> '0'", "j #>> '{0}'"),
             differs="on Spark, ->> and #>> of an object or array give compact JSON text ({\"c\":null})"),
    Function("jsonb_path", (), _path, _get_spark, doc="9.16", samples=("j #> '{a,c}'",)),
    Function("jsonb_path_text", (), _path, _get_spark, doc="9.16", samples=("j #>> '{b,1}'",)),
    Function("jsonb_contains", (), lambda a, e: contains(doc(a[0]), doc(a[1])), _unsupported("jsonb @>"),
             doc="9.16", differs="not supported on table data yet (0A000)"),
    Function("jsonb_contained", (), lambda a, e: contains(doc(a[1]), doc(a[0])), _unsupported("jsonb <@"),
             doc="9.16", differs="not supported on table data yet (0A000)"),
    Function("jsonb_exists", (), _exists, _unsupported("jsonb ?"), doc="9.16",
             differs="not supported on table data yet (0A000)"),
    Function("jsonb_concat", (), lambda a, e: jsonb_text(concat_py(doc(a[0]), doc(a[1]))), _concat_spark,
             doc="9.16", samples=("j || '{\"z\": 1}'", "j || '[9]'", "'{\"a\": 0, \"y\": 2}' || j")),
    Function("jsonb_typeof", (sig("jsonb", ret="text"),), lambda a, e: _typeof(doc(a[0])), _typeof_spark,
             sql_names=("jsonb_typeof", "json_typeof"), doc="9.16", samples=("jsonb_typeof(j)",)),
    Function("jsonb_array_length", (sig("jsonb", ret="int4"),), lambda a, e: _array_length(doc(a[0])),
             _array_length_spark, sql_names=("jsonb_array_length", "json_array_length"), doc="9.16",
             samples=("jsonb_array_length(j -> 'b')",)),
    Function("jsonb_build_object", (sig("any", ret="jsonb", variadic=True),), _build_object_py,
             _build_object_spark, sql_names=("jsonb_build_object", "json_build_object"), strict=False, doc="9.16",
             samples=("jsonb_build_object('k', k, 's', s, 'b', b, 'n', n)", "jsonb_build_object('j', j, 'd', d)")),
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
