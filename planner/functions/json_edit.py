"""Path edits of jsonb (PostgreSQL 9.16, table 9.46 and 9.47): ``jsonb #- path`` (delete
the value at a path) and ``jsonb_insert`` (insert beside an array element, or add a
missing key), with jsonb_set's walk of the path (``planner.functions.json``,
jsonfuncs.c setPath): a step into an object is a key, into an array an integer index
(negative from the end); a path that leaves the document changes nothing. On Spark the
path and flags must be constants; each level is rebuilt from VARIANT values."""

from __future__ import annotations

from catalog.errors import (
    SqlError, INVALID_PARAMETER_VALUE, INVALID_TEXT_REPRESENTATION, NULL_VALUE_NOT_ALLOWED,
)
from catalog.textio import jsonb_text
from planner.functions.registry import Function, constant_arg, register, sig
from planner.functions.json import _field_path, _kind, doc


def _index(step: str, i: int) -> int:
    try:
        return int(step)
    except ValueError:
        raise SqlError(INVALID_TEXT_REPRESENTATION, f'path element at position {i + 1} is not an integer: "{step}"') from None


def _check_path(path, what: str, d) -> None:
    if not isinstance(d, (dict, list)):
        raise SqlError(INVALID_PARAMETER_VALUE, f"cannot {what} path in scalar")
    if any(p is None for p in path):
        raise SqlError(NULL_VALUE_NOT_ALLOWED, f"path element at position {path.index(None) + 1} is null")


def _edit(d, path, i, mode, new=None):
    """``d`` with ``path[i:]`` edited: ``mode`` "delete", "before" or "after" (insert)."""
    step, last = path[i], i == len(path) - 1
    if isinstance(d, dict):
        if step not in d:
            return {**d, step: new} if last and mode != "delete" else d
        if not last:
            return {**d, step: _edit(d[step], path, i + 1, mode, new)}
        if mode == "delete":
            return {k: v for k, v in d.items() if k != step}
        raise SqlError(INVALID_PARAMETER_VALUE, "cannot replace existing key",
                       hint="Try using the function jsonb_set to replace key value.")
    if isinstance(d, list):
        n = _index(step, i)
        idx = n + len(d) if n < 0 else n
        inside = 0 <= idx < len(d)
        if not last:
            return d[:idx] + [_edit(d[idx], path, i + 1, mode, new)] + d[idx + 1:] if inside else d
        if mode == "delete":
            return d[:idx] + d[idx + 1:] if inside else d
        if not inside:
            return [new] + d if idx < 0 else d + [new]
        at = idx + (mode == "after")
        return d[:at] + [new] + d[at:]
    return d


def _delete_path_py(a, e):
    d = doc(a[0])
    _check_path(a[1], "delete", d)
    return jsonb_text(_edit(d, a[1], 0, "delete")) if a[1] else a[0]


def _insert_py(a, e):
    d = doc(a[0])
    _check_path(a[1], "set", d)
    if not a[1]:
        return a[0]
    return jsonb_text(_edit(d, a[1], 0, "after" if len(a) > 3 and a[3] else "before", doc(a[2])))


def _edit_level(S, v, path, i, mode, new):
    """The VARIANT ``v`` with ``path[i:]`` edited (``_edit``'s rules)."""
    F = S.F
    step, last = path[i], i == len(path) - 1
    kind = _kind(F, v)
    m = F.try_variant_get(v, "$", "map<string,variant>")
    has = F.array_contains(F.map_keys(m), F.lit(step))
    rest = F.map_filter(m, lambda k, _: k != F.lit(step))
    if not last:
        inner = _edit_level(S, F.try_variant_get(v, _field_path(step), "variant"), path, i + 1, mode, new)
        as_object = F.when(has, F.to_json(F.map_concat(rest, F.create_map(F.lit(step), inner))))
    elif mode == "delete":
        as_object = F.to_json(rest)
    else:
        as_object = F.when(has, S.fail(INVALID_PARAMETER_VALUE, "cannot replace existing key")).otherwise(
            F.to_json(F.map_concat(m, F.create_map(F.lit(step), new))))
    as_object = F.coalesce(as_object, F.to_json(v))
    try:
        n = int(step)
    except ValueError:
        n = None
    if n is None:
        as_array = S.fail(INVALID_TEXT_REPRESENTATION, f'path element at position {i + 1} is not an integer: "{step}"')
    else:
        arr = F.try_variant_get(v, "$", "array<variant>")
        at = F.lit(n) if n >= 0 else F.size(arr) + n
        inside = (at >= 0) & (at < F.size(arr))
        if not last:
            elem = _edit_level(S, F.element_at(arr, at + 1), path, i + 1, mode, new)
            out = F.when(inside, F.transform(arr, lambda x, j: F.when(j == at, elem).otherwise(x))).otherwise(arr)
        elif mode == "delete":
            out = F.filter(arr, lambda x, j: j != at)
        else:
            cut = at + (1 if mode == "after" else 0)
            out = F.when(inside, F.concat(F.slice(arr, 1, cut), F.array(new), F.slice(arr, cut + 1, 2**31 - 1))) \
                .when(at < 0, F.concat(F.array(new), arr)).otherwise(F.concat(arr, F.array(new)))
        as_array = F.to_json(out)
    return F.parse_json(F.when(kind == "object", as_object).when(kind == "array", as_array).otherwise(F.to_json(v)))


def _edit_spark(what: str):
    """#- (``what`` delete) or jsonb_insert (``what`` insert) on Spark."""
    def spark(S, a, e):
        F = S.F
        path = constant_arg(e, 1, f"{'#-' if what == 'delete' else 'jsonb_insert'}'s path")
        after = constant_arg(e, 3, "jsonb_insert's insert_after") if len(a) > 3 else False
        if path is None or after is None:
            return F.lit(None).cast("string")
        v = F.parse_json(a[0])
        kind = _kind(F, v)
        scalar = S.fail(INVALID_PARAMETER_VALUE, f"cannot {'delete' if what == 'delete' else 'set'} path in scalar")
        if any(p is None for p in path):
            out = S.fail(NULL_VALUE_NOT_ALLOWED, f"path element at position {path.index(None) + 1} is null")
        elif not path:
            out = a[0]
        else:
            mode = "delete" if what == "delete" else "after" if after else "before"
            out = F.to_json(_edit_level(S, v, list(path), 0, mode, None if what == "delete" else F.parse_json(a[2])))
        return F.when(a[0].isNull(), F.lit(None).cast("string")).when(
            (kind != "object") & (kind != "array"), scalar).otherwise(out)
    return spark


register(
    Function("jsonb_delete_path", (sig("jsonb", "_text", ret="jsonb"),), _delete_path_py, _edit_spark("delete"),
             doc="9.16", samples=("CASE WHEN k <> 3 THEN j END #- '{a}'", "CASE WHEN k <> 3 THEN j END #- '{b,1}'",
                                  "CASE WHEN k <> 3 THEN j END #- '{-1}'", "CASE WHEN k <> 3 THEN j END #- '{a,c}'",
                                  "CASE WHEN k <> 3 THEN j END #- '{}'", "CASE WHEN k <> 3 THEN j END #- '{x,y}'",
                                  "j #- '{a}'")),
    Function("jsonb_insert", (sig("jsonb", "_text", "jsonb", ret="jsonb"),
                              sig("jsonb", "_text", "jsonb", "bool", ret="jsonb")),
             _insert_py, _edit_spark("insert"), sql_names=("jsonb_insert",), doc="9.16",
             samples=("jsonb_insert(CASE WHEN k <> 3 THEN j END, '{b,0}', '7')",
                      "jsonb_insert(CASE WHEN k <> 3 THEN j END, '{b,-1}', '7', true)",
                      "jsonb_insert(CASE WHEN k = 2 THEN j END, '{0}', to_jsonb(k))",
                      "jsonb_insert(CASE WHEN k = 2 THEN j END, '{9}', '\"z\"', true)",
                      "jsonb_insert(CASE WHEN k IN (1, 5) THEN j END, '{z}', '1')",
                      "jsonb_insert(CASE WHEN k <> 3 THEN j END, '{a}', '1')",
                      "jsonb_insert(CASE WHEN k IN (1, 5) THEN j END, '{a,x}', '1')", "jsonb_insert(j, '{0}', '1')")),
)


# -- jsonb_set_lax (PostgreSQL 9.16, table 9.47) ----------------------------------------------

_TREATMENTS = ("raise_exception", "use_json_null", "delete_key", "return_target")


def _bad_treatment() -> SqlError:
    return SqlError(INVALID_PARAMETER_VALUE, 'null_value_treatment must be "delete_key", "return_target", '
                                             '"use_json_null", or "raise_exception"')


def _null_new(treatment: str):
    """What jsonb_set_lax does with a NULL new value: ``treatment``'s rule, or its error."""
    if treatment == "raise_exception":
        return SqlError(NULL_VALUE_NOT_ALLOWED, "JSON value must not be null",
                        hint='Exception was raised because null_value_treatment is "raise_exception".')
    if treatment not in _TREATMENTS:
        return _bad_treatment()
    return treatment


def _set_lax_py(a, e):
    """jsonb_set with a rule for a NULL new value: use a JSON null (the default), delete the
    path, return the target unchanged, or raise 22004."""
    from planner.functions.json import _set_py

    treatment = a[4] if len(a) > 4 else "use_json_null"
    if treatment is None:
        raise _bad_treatment()
    if a[2] is not None:
        return _set_py(a[:4], e)
    if a[0] is None or a[1] is None:
        return None
    rule = _null_new(treatment)
    if isinstance(rule, SqlError):
        raise rule
    if rule == "use_json_null":
        return _set_py([a[0], a[1], "null", *a[3:4]], e)
    return _delete_path_py(a[:2], e) if rule == "delete_key" else a[0]


def _set_lax_spark(S, a, e):
    from planner.functions.json import _set_spark

    F = S.F
    treatment = constant_arg(e, 4, "jsonb_set_lax's null_value_treatment") if len(a) > 4 else "use_json_null"
    if treatment is None:
        return F.when(F.lit(True), S.fail(INVALID_PARAMETER_VALUE, _bad_treatment().message))
    rule = _null_new(treatment)
    if isinstance(rule, SqlError):
        on_null = S.fail(rule.sqlstate, rule.message)
    elif rule == "use_json_null":
        on_null = _set_spark(S, [a[0], a[1], F.lit("null"), *a[3:4]], e)
    elif rule == "delete_key":
        on_null = _edit_spark("delete")(S, a[:2], e)
    else:
        on_null = a[0]
    on_null = F.when(a[0].isNull(), F.lit(None).cast("string")).otherwise(on_null)
    return F.when(a[2].isNotNull(), _set_spark(S, a[:4], e)).otherwise(on_null)


register(
    Function("jsonb_set_lax", (sig("jsonb", "_text", "jsonb", "bool", "text", ret="jsonb"),
                               sig("jsonb", "_text", "jsonb", "bool", ret="jsonb"),
                               sig("jsonb", "_text", "jsonb", ret="jsonb")),
             _set_lax_py, _set_lax_spark, sql_names=("jsonb_set_lax",), strict=False, doc="9.16",
             samples=("jsonb_set_lax(CASE WHEN k IN (1, 5) THEN j END, '{a}', CASE WHEN k = 1 THEN to_jsonb(k) END)",
                      "jsonb_set_lax(CASE WHEN k IN (1, 5) THEN j END, '{a}', NULL, true, 'delete_key')",
                      "jsonb_set_lax(CASE WHEN k <> 3 THEN j END, '{b,0}', NULL, true, 'return_target')",
                      "jsonb_set_lax(CASE WHEN k <> 3 THEN j END, '{z}', NULL::jsonb, false)",
                      "jsonb_set_lax(CASE WHEN k IN (1, 5) THEN j END, '{a}', CASE WHEN k = 1 THEN j END, true, "
                      "'raise_exception')",
                      "jsonb_set_lax(j, '{a}', NULL, true, 'nothing')")),
)
