"""Materialize's ``list`` type: its constructor, subscripts and slices, and functions
(Materialize's SQL reference, "List types" and "List functions"; the semantics of its
``list.slt``).

A list value is a Python list in the interpreter (``catalog.listmapio``) and a Spark array
on table data. Lists nest (``int list list``) without having to be rectangular, and are
one-based. ``sqlfront.listsyntax`` turns Materialize's syntax into PostgreSQL's, marked
with the names below, which this module plans back.

This module plans the list calls (their types are not PostgreSQL's polymorphic ones, so
``planner.functions.resolve`` does not) and declares their implementations once, for
both paths.
"""

from __future__ import annotations

import functools

from catalog.errors import (
    SqlError, ARRAY_SUBSCRIPT_ERROR, DATATYPE_MISMATCH, INDETERMINATE_DATATYPE,
)
from catalog.textio import TextFormat
from catalog.types import SqlType, BOOL, INT4, INT8, TEXT, UNKNOWN, list_of, make_type, map_of
from planner.functions.registry import Function, register
from planner.functions.aggregate import AggSig

#: ``T list`` arrives as ``T[LIST_BOUND]`` (``sqlfront.listsyntax``)
LIST_BOUND = 424242
#: ``LIST[a, b]`` arrives as ``(LIST_CTOR(ARRAY[a, b]))``
LIST_CTOR = "mz_list_ctor"
#: ``x[a:b, c:d]`` arrives as ``x[a:b][LIST_LAYER()][c:d]``
LIST_LAYER = "mz_list_layer"
#: the largest int8: an open slice bound
_I64_MAX = 2**63 - 1


def depth(t: SqlType) -> int:
    """How many list layers type ``t`` has (``int list list``: 2)."""
    n = 0
    while t.is_list:
        t, n = t.element, n + 1
    return n


# -- type names --------------------------------------------------------------------------


def type_from_text(text: str) -> SqlType:
    """The type a name written in Materialize's syntax names: ``int``, ``numeric(38,5)``,
    ``text list``, ``map[text=>int list]``, nested as deep as written.

    Raises:
        SqlError 42704 for unknown type names; 42804 for a map key that is not text
        (Materialize: ``map key type must be text``)."""
    s = " ".join(text.split())
    low = s.lower()
    if low.endswith(" list"):
        return list_of(type_from_text(s[:-5]))
    if low.startswith("map[") and s.endswith("]"):
        inner, level, split = s[4:-1], 0, None
        for k, c in enumerate(inner):
            level += c == "["
            level -= c == "]"
            if inner.startswith("=>", k) and level == 0:
                split = k
                break
        if split is None:
            raise SqlError(DATATYPE_MISMATCH, f'type "{s}" does not exist')
        key, value = type_from_text(inner[:split]), type_from_text(inner[split + 2:])
        if key.name != "text":
            raise SqlError(DATATYPE_MISMATCH, f"map key type must be text, got {key.sql()}")
        return map_of(value)
    name, _, mods = s.partition("(")
    modifiers = [int(m) for m in mods.rstrip(")").split(",") if m.strip()] if mods else []
    name = name.strip()
    if name.lower().startswith("pg_catalog."):
        name = name[11:]
    if name.lower() == "double":  # Materialize's alias in a type's text
        name = "double precision"
    return make_type(name, modifiers)


# -- the constructor ---------------------------------------------------------------------


def plan_ctor(planner, node, hint: SqlType | None = None):
    """``LIST[...]`` (its ARRAY[...] AST, ``node``): every element of one type, the
    elements of an inner ``[...]`` a nested list; ``hint``, the list type a cast around
    it asks for, types an empty ``[]``.

    Raises:
        SqlError 42P18 for ``LIST[]`` (Materialize: cannot determine type of empty list);
        42804 for elements of different types (``LIST[1, LIST[2]]``)."""
    from pglast import ast
    from planner import typing as ty

    inner = hint.element if hint is not None and hint.is_list and hint.element.is_list else None

    def plan(n):
        if isinstance(n, ast.FuncCall) and n.funcname[-1].sval == LIST_CTOR:
            return plan_ctor(planner, n.args[0], inner)
        return planner.plan(n)

    elems = [plan(e) for e in node.elements or ()]
    if not elems:
        if hint is not None and hint.is_list:
            from planner.scalar import Literal

            return Literal([], hint)
        return _Empty()
    known = [e.type for e in elems if not isinstance(e, _Empty)]
    if not known:
        raise SqlError(INDETERMINATE_DATATYPE, "cannot determine type of empty list")
    if len({t.is_list for t in known if t.name != "unknown"}) > 1 or any(
            t.is_list and known[0].is_list and t != known[0] for t in known):
        raise SqlError(DATATYPE_MISMATCH, "LIST expression does not have uniform type: "
                       + " vs ".join(dict.fromkeys(t.sql() for t in known)))
    t = ty.common_type(known, "LIST")
    if all(k.name == "unknown" for k in known):
        t = hint.element if hint is not None and hint.is_list else TEXT
    return call("list_ctor", tuple(_Empty.typed(e, t) if isinstance(e, _Empty) else planner.coerce(e, t) for e in elems),
                list_of(t))


class _Empty:
    """An inner ``[]`` of a list constructor, whose type is its siblings'."""

    type = UNKNOWN

    @staticmethod
    def typed(e, t: SqlType):
        from planner.scalar import Literal

        if not t.is_list:
            raise SqlError(INDETERMINATE_DATATYPE, "cannot determine type of empty list")
        return Literal([], t)


def finish_ctor(e):
    """A top-level ``LIST[]``: its type cannot be known.

    Raises:
        SqlError 42P18."""
    if isinstance(e, _Empty):
        raise SqlError(INDETERMINATE_DATATYPE, "cannot determine type of empty list")
    return e


def call(func: str, args: tuple, t: SqlType):
    from planner.scalar import Call

    return Call(func, args, t)


# -- casts -------------------------------------------------------------------------------


def check_cast(src: SqlType, dst: SqlType) -> None:
    """Whether a list or map of ``src`` casts to ``dst``: to and from text, and between
    lists of as many layers (maps of the same key) whose elements cast.

    Raises:
        SqlError 42846 (Materialize: ``CAST does not support casting from X to Y``)."""
    from catalog.errors import CANNOT_COERCE

    if src == dst or src.name == "unknown":
        return
    textual = {"text", "varchar", "bpchar", "unknown"}
    if (src.is_list or src.is_map) and dst.name in textual or (dst.is_list or dst.is_map) and src.name in textual:
        return
    if src.is_list and dst.is_list and depth(src) == depth(dst) or src.is_map and dst.is_map:
        s, d = src, dst
        while s.is_list or s.is_map:
            s, d = s.element, d.element
        if s == d or s.is_numeric and d.is_numeric or s.is_string or d.is_string or {s.category, d.category} <= {"D"}:
            return
    raise SqlError(CANNOT_COERCE, f"CAST does not support casting from {src.sql()} to {dst.sql()}")


def cast_value(v, src: SqlType, dst: SqlType, convert):
    """A list or map value of ``src`` as ``dst`` (``check_cast``), its elements converted
    by ``convert(value, src element, dst element)``."""
    if src.is_list:
        return [None if x is None else convert(x, src.element, dst.element) for x in v]
    return {k: None if x is None else convert(x, src.element, dst.element) for k, x in sorted(dict(v).items())}


#: what makes an element of a list (a map) be quoted in its text (``catalog.listmapio``)
_QUOTE = {"list": r'^$|^NULL$|[{},"\\\s]', "map": r'^$|^NULL$|[{},"=>\\\s]'}


def spark_text(S, c, t: SqlType):
    """Spark: the text of list or map column ``c`` of type ``t``, as ``catalog.listmapio``
    writes it."""
    F = S.F
    e = t.element
    nested = e.is_list or e.is_map

    def elem(x):
        s = spark_text(S, x, e) if nested else S.output_text(x, e)
        if not nested:
            quoted = F.concat(F.lit('"'), F.regexp_replace(s, r'(["\\])', r'\\$1'), F.lit('"'))
            s = F.when(s.rlike(_QUOTE[t.name]), quoted).otherwise(s)
        return F.when(x.isNull(), F.lit("NULL")).otherwise(s)

    if t.is_list:
        body = F.array_join(F.transform(c, elem), ",")
    else:
        key = lambda k: F.when(k.rlike(_QUOTE["map"]), F.concat(  # noqa: E731
            F.lit('"'), F.regexp_replace(k, r'(["\\])', r'\\$1'), F.lit('"'))).otherwise(k)
        body = F.array_join(F.transform(F.array_sort(F.map_entries(c)),
                                        lambda p: F.concat(key(p["key"]), F.lit("=>"), elem(p["value"]))), ",")
    return F.when(c.isNotNull(), F.concat(F.lit("{"), body, F.lit("}")))


# -- subscripts ------------------------------------------------------------------------


def plan_subscripts(planner, e, indices: list):
    """``e[i]`` and ``e[a:b, c:d]`` (``indices``: the A_Indices after ``e``) of list ``e``:
    an index is one element (NULL past the ends); a slice of several layers slices each
    layer of the nested lists (``list_slice``). Subscripts are cast to int8 (Materialize
    rounds ``1.5`` to 2).

    Raises:
        SqlError 42804 for a subscript of something not a list, or a slice of more layers
        than the list has."""
    from pglast import ast

    k = 0
    while k < len(indices):
        if not e.type.is_list:
            raise SqlError(DATATYPE_MISMATCH, f"cannot subscript type {e.type.sql()}")
        ind = indices[k]
        if not ind.is_slice:
            e = call("list_index", (e, _bound(planner, ind.uidx, 1)), e.type.element)
            k += 1
            continue
        layers = [ind]
        k += 1
        while k + 1 < len(indices) and _is_layer(indices[k]):
            layers.append(indices[k + 1])
            k += 2
        if any(not isinstance(x, ast.A_Indices) or not x.is_slice for x in layers):
            raise SqlError(DATATYPE_MISMATCH, "cannot mix slices and indexes in one subscript")
        have = depth(e.type)
        if len(layers) > have:
            raise SqlError(DATATYPE_MISMATCH, f"cannot slice into {len(layers)} layers; list only has {have} layer"
                           + ("s" if have != 1 else ""))
        bounds = []
        for x in layers:
            bounds += [_bound(planner, x.lidx, 1), _bound(planner, x.uidx, _I64_MAX)]
        e = call("list_slice", (e, *bounds), e.type)
    return e


def _is_layer(ind) -> bool:
    from pglast import ast

    u = getattr(ind, "uidx", None)
    return not ind.is_slice and isinstance(u, ast.FuncCall) and u.funcname[-1].sval == LIST_LAYER


def _bound(planner, node, default: int):
    from planner.scalar import Literal

    if node is None:
        return Literal(default, INT8)
    x = planner.plan(node)
    if not (x.type.is_numeric or x.type.name == "unknown"):
        raise SqlError(DATATYPE_MISMATCH, f"list subscript must have type integer, not {x.type.sql()}")
    return planner.coerce(x, INT8, explicit=True) if x.type.name != "int8" else x


# -- functions and operators: typing ----------------------------------------------------


def _no_call(name: str, args: list):
    from planner.functions.registry import undefined_function

    return undefined_function(name, [a.type for a in args])


def plan_call(name: str, args: list, fmt: TextFormat):
    """A call of one of Materialize's list functions (``PLANNED``) over planned ``args``.

    Raises:
        SqlError 42883 when the arguments fit no form of it."""
    from planner.expr import coerce

    if name in ("list_append", "list_prepend"):
        if len(args) != 2:
            raise _no_call(name, args)
        lst, x = (args[0], args[1]) if name == "list_append" else (args[1], args[0])
        lt = _list_with_element(lst.type, x.type)
        if lt is None:
            raise _no_call(name, args)
        lst, x = coerce(lst, lt, fmt=fmt), coerce(x, lt.element, fmt=fmt)
        return call(name, (lst, x) if name == "list_append" else (x, lst), lt)
    if name == "list_cat":
        if len(args) != 2:
            raise _no_call(name, args)
        t = _same_lists(args[0].type, args[1].type)
        if t is None:
            raise _no_call(name, args)
        return call("list_cat", tuple(coerce(a, t, fmt=fmt) for a in args), t)
    if name == "list_remove":
        if len(args) != 2 or not args[0].type.is_list:
            raise _no_call(name, args)
        return call("list_remove", (args[0], coerce(args[1], args[0].type.element, fmt=fmt)), args[0].type)
    if name in ("list_length", "list_ndims", "list_n_layers"):
        if len(args) != 1 or not args[0].type.is_list:
            raise _no_call(name, args)
        # list_n_layers is today's name of list_ndims (Materialize's mz_functions list both)
        return call("list_ndims" if name == "list_n_layers" else name, (args[0],), INT4)
    if name == "list_length_max":
        if len(args) != 2 or not args[0].type.is_list or not (args[1].type.is_integer or args[1].type.name == "unknown"):
            raise _no_call(name, args)
        return call(name, (args[0], coerce(args[1], INT8, fmt=fmt)), INT4)
    raise _no_call(name, args)


def _base(t: SqlType) -> SqlType:
    """``t`` without modifiers at any layer (``numeric(38,5) list`` -> ``numeric list``):
    lists of one base type concatenate, the result of the first operand's type
    (Materialize casts between the scales implicitly)."""
    return list_of(_base(t.element)) if t.is_list else t.unconstrained()


def _list_with_element(lt: SqlType, et: SqlType) -> SqlType | None:
    """The list type a list of type ``lt`` and an element of type ``et`` make (either may
    be unknown, not both), or None."""
    if lt.name == "unknown":
        return None if et.name == "unknown" else list_of(et)
    if not lt.is_list:
        return None
    if et.name == "unknown" or _base(et) == _base(lt.element):
        return lt
    return None


def _same_lists(a: SqlType, b: SqlType) -> SqlType | None:
    if a.name == "unknown" and b.is_list:
        return b
    if b.name == "unknown" and a.is_list:
        return a
    return a if a.is_list and _base(a) == _base(b) else None


def plan_concat(l, r, fmt: TextFormat):
    """``l || r`` where either side is a list: two lists of one type join (``list_cat``),
    a list and its element type append or prepend; an unknown side is a list of the other
    side's type. None when neither side is a list.

    Raises:
        SqlError 42883 when the sides fit no form."""
    from planner import typing as ty
    from planner.expr import coerce

    lt, rt = l.type, r.type
    if not (lt.is_list or rt.is_list):
        return None
    if lt.is_list and rt.name != "unknown" and _base(rt) == _base(lt.element):
        return call("list_append", (l, coerce(r, lt.element, fmt=fmt)), lt)
    if rt.is_list and lt.name != "unknown" and _base(lt) == _base(rt.element):
        return call("list_prepend", (l, coerce(r, list_of(lt), fmt=fmt)), list_of(lt))
    t = _same_lists(lt, rt)
    if t is None:
        raise ty._undefined_op("||", lt, rt)
    return call("list_cat", (coerce(l, t, fmt=fmt), coerce(r, t, fmt=fmt)), t)


def plan_operator(op: str, l, r, fmt: TextFormat):
    """``l || r`` (``plan_concat``), ``l @> r`` and ``l <@ r`` where a side is a list: the
    containment of two lists of one type, an unknown side read as the other's type. None
    for other operators, or when no side is a list.

    Raises:
        SqlError 42883 when the sides fit no form."""
    from planner import typing as ty
    from planner.expr import coerce

    if op == "||":
        return plan_concat(l, r, fmt)
    if op not in ("@>", "<@") or not (l.type.is_list or r.type.is_list):
        return None
    t = _same_lists(l.type, r.type)
    if t is None:
        raise ty._undefined_op(op, l.type, r.type)
    a, b = coerce(l, t, fmt=fmt), coerce(r, t, fmt=fmt)
    return call("list_contains", (a, b) if op == "@>" else (b, a), BOOL)


#: SQL names planned by ``plan_call``
PLANNED = ("list_append", "list_prepend", "list_cat", "list_remove", "list_length", "list_ndims", "list_n_layers",
           "list_length_max")


# -- implementations -------------------------------------------------------------------


def _slice_py(v: list, layers: list[tuple[int, int]]):
    """Materialize's slice of several layers: the outer slice, then each element's slice
    by the next layer; an empty result, or a NULL element sliced, is NULL, and a slice
    whose results are all NULL so is NULL itself."""
    lo, hi = max(layers[0][0], 1), layers[0][1]
    if lo > hi:
        return None
    part = v[lo - 1:hi]
    if not part:
        return None
    if len(layers) == 1:
        return part
    out = [None if e is None else _slice_py(e, layers[1:]) for e in part]
    return None if all(x is None for x in out) else out


def _slice_spark(S, c, bounds: list):
    F = S.F
    lo, hi = F.greatest(bounds[0], F.lit(1)), bounds[1]
    size = F.size(c)
    start = F.least(lo, size + 1).cast("int")
    length = (F.least(hi, size) - lo + 1).cast("int")
    part = F.when((lo <= hi) & (lo <= size) & (F.least(hi, size) >= lo), F.slice(c, start, length))
    if len(bounds) == 2:
        return part
    inner = F.transform(part, lambda e: F.when(e.isNotNull(), _slice_spark(S, e, bounds[2:])))
    return F.when(F.exists(inner, lambda x: x.isNotNull()), inner)


def strict_spark(spark):
    """A Spark lowering made NULL when an argument is NULL, as a strict entry is (Spark's
    forall, exists and transform over a NULL map or array answer instead)."""
    def lowered(S, a, e):
        null = functools.reduce(lambda x, y: x | y, [x.isNull() for x in a])
        return S.F.when(~null, spark(S, a, e))
    return lowered


def _index_py(a, e):
    v, i = a
    return v[i - 1] if 1 <= i <= len(v) else None


def _index_spark(S, a, e):
    F = S.F
    v, i = a
    return F.when((i >= 1) & (i <= F.size(v)), F.get(v, (i - 1).cast("int")))


def _length_max_py(v: list, layer: int):
    if layer == 1:
        return len(v)
    inner = [_length_max_py(x, layer - 1) for x in v if x is not None]
    inner = [x for x in inner if x is not None]
    return max(inner) if inner else None


def _check_layer(layer: int, have: int) -> None:
    if not 1 <= layer <= have:
        raise SqlError(ARRAY_SUBSCRIPT_ERROR, f"invalid dimension: {layer}; must use value within [1, {have}]")


def _length_max_call(a, e):
    v, layer = a
    if layer is None:
        return None
    _check_layer(layer, depth(e.args[0].type))
    return None if v is None else _length_max_py(v, layer)


def _length_max_spark(S, a, e):
    from planner.functions.registry import constant_arg

    F = S.F
    layer = constant_arg(e, 1, "list_length_max needs a constant layer")
    if layer is None:
        return F.lit(None).cast("int")
    _check_layer(layer, depth(e.args[0].type))

    def at(c, n):
        if n == 1:
            return F.size(c)
        return F.array_max(F.transform(c, lambda x: F.when(x.isNotNull(), at(x, n - 1))))
    return F.when(a[0].isNotNull(), at(a[0], layer))


def _contains_py(a, e):
    """Materialize's list @> list: every element of the right list is in the left one; a
    NULL element on the right is in no list (NULL equals nothing)."""
    big, small = a
    return None not in small and all(x in big for x in small)


def _contains_spark(S, a, e):
    F = S.F
    big, small = a
    return F.when(F.exists(small, lambda x: x.isNull()), F.lit(False)).otherwise(
        F.forall(small, lambda x: F.exists(big, lambda y: y.eqNullSafe(x))))


def _cat_py(a, e):
    x, y = a
    if x is None and y is None:
        return None
    return (x or []) + (y or [])


def _cat_spark(S, a, e):
    F = S.F
    x, y = a
    empty = S.empty_array(e.type)
    return F.when(x.isNull() & y.isNull(), F.lit(None)).otherwise(F.concat(F.coalesce(x, empty), F.coalesce(y, empty)))


def _ctor_spark(S, a, e):
    F = S.F
    return F.array(*a).cast(S.spark_type(e.type)) if a else S.empty_array(e.type)


register(
    Function("list_ctor", (), lambda a, e: list(a), _ctor_spark, strict=False, doc="Materialize: LIST[...]"),
    Function("list_index", (), _index_py, _index_spark, doc="Materialize: list[i]"),
    Function("list_slice", (),
             lambda a, e: _slice_py(a[0], [(a[k], a[k + 1]) for k in range(1, len(a), 2)]),
             strict_spark(lambda S, a, e: _slice_spark(S, a[0], a[1:])),
             doc="Materialize: list[a:b, c:d]"),
    Function("list_append", (), lambda a, e: (a[0] or []) + [a[1]],
             lambda S, a, e: S.F.concat(S.F.coalesce(a[0], S.empty_array(e.type)), S.F.array(a[1])),
             strict=False, doc="Materialize: list_append"),
    Function("list_prepend", (), lambda a, e: [a[0]] + (a[1] or []),
             lambda S, a, e: S.F.concat(S.F.array(a[0]), S.F.coalesce(a[1], S.empty_array(e.type))),
             strict=False, doc="Materialize: list_prepend"),
    Function("list_cat", (), _cat_py, _cat_spark, strict=False, doc="Materialize: list_cat"),
    Function("list_contains", (), _contains_py, strict_spark(_contains_spark), doc="Materialize: list @> list"),
    Function("list_remove", (), lambda a, e: None if a[0] is None else [x for x in a[0] if x != a[1]],
             lambda S, a, e: S.F.filter(a[0], lambda x: ~x.eqNullSafe(a[1])), strict=False,
             doc="Materialize: list_remove"),
    Function("list_length", (), lambda a, e: len(a[0]), lambda S, a, e: S.F.size(a[0]), doc="Materialize: list_length"),
    # the layers of the list's type, even for a NULL list (Materialize's list_ndims)
    Function("list_ndims", (), lambda a, e: depth(e.args[0].type), lambda S, a, e: S.F.lit(depth(e.args[0].type)),
             strict=False, doc="Materialize: list_ndims"),
    Function("list_length_max", (), _length_max_call, _length_max_spark, strict=False,
             doc="Materialize: list_length_max"),
)


def _list_agg_py(vals, a, p):
    return vals or None


def _list_agg_spark(S, x, a):
    arr = S.ordered_values(a)
    return S.F.when(S.F.size(arr) > 0, arr)


register(
    # Materialize's list_agg: the group's values, NULLs too, in the aggregate's ORDER BY
    Function("list_agg", (AggSig(lambda t: (t, list_of(t))),), _list_agg_py, _list_agg_spark,
             sql_names=("list_agg",), kind="aggregate", strict=False, doc="Materialize: list_agg"),
)
