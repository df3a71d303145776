"""Materialize's ``map[text=>T]`` type: its operators and functions (Materialize's SQL
reference, "Map types" and "Map functions and operators"; the semantics of its
``map.slt``).

A map value is a Python ``dict`` from text keys in key order in the interpreter
(``catalog.listmapio``; a sequence of key-value pairs, as Arrow hands a Spark map back,
is read as one) and a Spark ``map<string, T>`` on table data.

This module plans the map operators and calls (``plan_operator``, ``plan_call``) and
declares their implementations once, for both paths.
"""

from __future__ import annotations

from catalog.errors import SqlError, AMBIGUOUS_FUNCTION, FEATURE_NOT_SUPPORTED
from catalog.textio import TextFormat
from catalog.types import BOOL, INT4, TEXT, array_of, map_of
from planner.functions.aggregate import AggSig
from planner.functions.registry import Function, register
from planner.functions.lists import strict_spark as _strict


def as_dict(v) -> dict | None:
    """A map value as a dict (Arrow gives a Spark map back as (key, value) pairs)."""
    return v if v is None or isinstance(v, dict) else dict(v)


def _call(func: str, args: tuple, t):
    from planner.scalar import Call

    return Call(func, args, t)


#: operators whose left operand of unknown type (a NULL or a string literal) leaves
#: map's operator and jsonb's (and for @>, <@ also list's and array's) as candidates
AMBIGUOUS_WITH_UNKNOWN = ("->", "?", "?&", "?|", "@>", "<@")


def plan_operator(op: str, l, r, fmt: TextFormat):
    """``l op r`` where a side is a map: ``m -> 'k'`` (the value, NULL when absent),
    ``m -> ARRAY['a', 'b']`` (the values), ``m ? 'k'``, ``m ?& keys``, ``m ?| keys``,
    ``m @> m2``, ``m <@ m2``. None when no side is a map, or the operator is not one of
    these (the caller reports it).

    Raises:
        SqlError 42883 for sides of other types (``m -> 1``); 42725 for ``NULL -> 'k'``,
        ``NULL ? 'k'``, ``NULL ?& '{k}'`` and ``NULL ?| '{k}'`` (map's and jsonb's
        operators both fit: Materialize refuses them too; PostgreSQL, where json's and
        jsonb's ``->`` both fit, refuses ``NULL -> 'k'``), and for ``NULL @> NULL``
        (PostgreSQL's answer)."""
    from planner import typing as ty
    from planner.expr import coerce

    lt, rt = l.type, r.type
    if op in ("@>", "<@"):
        if lt.name == rt.name == "unknown":
            raise SqlError(AMBIGUOUS_FUNCTION, f"operator is not unique: unknown {op} unknown")
        if not (lt.is_map or rt.is_map):
            return None
        t = lt if lt.is_map else rt
        if (lt.name != "unknown" and lt != t) or (rt.name != "unknown" and rt != t):
            raise ty._undefined_op(op, lt, rt)
        a, b = coerce(l, t, fmt=fmt), coerce(r, t, fmt=fmt)
        return _call("map_contains", (a, b) if op == "@>" else (b, a), BOOL)
    if op not in ("->", "?", "?&", "?|"):
        return None
    if not lt.is_map:
        if lt.name == "unknown" and (rt.is_string if op in ("->", "?") else rt.name == "unknown" or rt == array_of(TEXT)):
            raise SqlError(AMBIGUOUS_FUNCTION, f"operator is not unique: unknown {op} {rt.sql()}")
        return None
    if op in ("->", "?") and (rt.is_string or rt.name == "unknown"):
        k = coerce(r, TEXT, fmt=fmt)
        return _call("map_get", (l, k), lt.element) if op == "->" else _call("map_has_key", (l, k), BOOL)
    if op in ("->", "?&", "?|") and (rt == array_of(TEXT) or rt.name == "unknown"):
        keys = coerce(r, array_of(TEXT), fmt=fmt)
        if op == "->":
            return _call("map_get_all", (l, keys), array_of(lt.element))
        return _call("map_has_all" if op == "?&" else "map_has_any", (l, keys), BOOL)
    raise ty._undefined_op(op, lt, rt)


def plan_call(name: str, args: list):
    """``map_length(m)``.

    Raises:
        SqlError 42883 for arguments that are not one map."""
    if name == "map_length" and len(args) == 1 and args[0].type.is_map:
        return _call("map_length", (args[0],), INT4)
    from planner.functions.registry import undefined_function

    raise undefined_function(name, [a.type for a in args])


#: SQL names planned by ``plan_call``
PLANNED = ("map_length",)


def _contains_py(a, e):
    big, small = as_dict(a[0]), as_dict(a[1])
    return all(k in big and big[k] == v for k, v in small.items())


def _contains_spark(S, a, e):
    F = S.F
    if e.args[0].type.element.is_map:
        raise SqlError(FEATURE_NOT_SUPPORTED, "@> of maps of maps is not supported on table data")
    big, small = a
    return F.forall(F.map_entries(small), lambda x: F.coalesce(
        F.array_contains(F.map_keys(big), x["key"]) & F.try_element_at(big, x["key"]).eqNullSafe(x["value"]),
        F.lit(False)))


def _has(S, m, k):
    return S.F.coalesce(S.F.array_contains(S.F.map_keys(m), k), S.F.lit(False))



register(
    Function("map_get", (), lambda a, e: as_dict(a[0]).get(a[1]), lambda S, a, e: S.F.try_element_at(a[0], a[1]),
             doc="Materialize: map -> text"),
    Function("map_get_all", (), lambda a, e: [as_dict(a[0]).get(k) for k in a[1]],
             _strict(lambda S, a, e: S.F.transform(a[1], lambda k: S.F.when(k.isNotNull(),
                                                                            S.F.try_element_at(a[0], k)))),
             doc="Materialize: map -> text[]"),
    Function("map_has_key", (), lambda a, e: a[1] in as_dict(a[0]), _strict(lambda S, a, e: _has(S, a[0], a[1])),
             doc="Materialize: map ? text"),
    Function("map_has_all", (), lambda a, e: all(k in as_dict(a[0]) for k in a[1]),
             _strict(lambda S, a, e: S.F.forall(a[1], lambda k: _has(S, a[0], k))), doc="Materialize: map ?& text[]"),
    Function("map_has_any", (), lambda a, e: any(k in as_dict(a[0]) for k in a[1]),
             _strict(lambda S, a, e: S.F.exists(a[1], lambda k: _has(S, a[0], k))), doc="Materialize: map ?| text[]"),
    Function("map_contains", (), _contains_py, _strict(_contains_spark), doc="Materialize: map @> map, map <@ map"),
    Function("map_length", (), lambda a, e: len(as_dict(a[0])), lambda S, a, e: S.F.size(a[0]),
             doc="Materialize: map_length"),
)



def _map_agg_py(vals, a, p):
    """Materialize's map_agg: the group's (key, value) pairs as a map, NULL keys left out,
    the last value of a key (in the aggregate's ORDER BY) kept; NULL for no rows."""
    if not vals:
        return None
    return dict(sorted({k: v for k, v in vals if k is not None}.items()))


def _map_agg_spark(S, x, a):
    F = S.F
    arr = F.filter(S.ordered_values(a), lambda q: q["y"].isNotNull())
    # the last of each key: an entry no later entry has the key of
    last = F.filter(arr, lambda q, i: ~F.exists(F.slice(arr, i + 2, F.size(arr) + 1), lambda r: r["y"] == q["y"]))
    entries = F.transform(last, lambda q: F.struct(q["y"].alias("key"), q["x"].alias("value")))
    return F.when(F.size(S.ordered_values(a)) > 0, F.map_from_entries(entries))


register(
    Function("map_agg", (AggSig(lambda t: (t, map_of(t.of[1])) if t.name == "record" and len(t.of) == 2 else None),),
             _map_agg_py, _map_agg_spark, sql_names=("map_agg",), kind="aggregate", strict=False,
             doc="Materialize: map_agg", extra={"pair": ("text", None)}),
)
