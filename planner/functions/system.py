"""System information and catalog functions (PostgreSQL 9.26, 9.27) that drivers and
tools call. sqlfront has one user (``materialize``) and no comments, so several
answers are constants."""

from __future__ import annotations

import uuid as _uuid

import functools
import re
from decimal import Decimal
from typing import Callable

from catalog.errors import (
    SqlError, DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, NUMERIC_VALUE_OUT_OF_RANGE,
    OBJECT_NOT_IN_PREREQUISITE_STATE, UNDEFINED_FILE, UNDEFINED_OBJECT, WRONG_OBJECT_TYPE,
)
from catalog.encodings import ENCODINGS
from catalog.settings import DEFAULTS
from planner.functions.registry import (
    IN_CONTEXT, Function, by_python, lookup_args, lookup_map, lookup_table, register, sig, static_map,
)


def pg_size_pretty(size) -> str:
    """PostgreSQL's pg_size_pretty (dbsize.c): bytes below 10240, then kB, MB, GB, TB, PB,
    each step halving with rounding away from zero. C's integer division truncates."""

    def div(a: int, b: int) -> int:
        return abs(a) // b * (1 if a >= 0 else -1)

    size = int(size)
    if abs(size) < 10 * 1024:
        return f"{size} bytes"
    size = div(size, 1 << 9)  # one extra bit, for rounding
    for unit in ("kB", "MB", "GB", "TB"):
        if abs(size) < 20 * 1024 - 1:
            break
        size = div(size, 1 << 10)
    else:
        unit = "PB"
    return f"{div(size + (1 if size >= 0 else -1), 2)} {unit}"


#: pg_size_bytes' units (case-insensitive; "" is bytes), PostgreSQL's dbsize.c
_SIZE_UNITS = {"": 1, "bytes": 1, "b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40, "pb": 1 << 50}
#: a size: blanks, a number (sign, digits with a decimal point, an exponent), blanks, a
#: unit, blanks; the same pattern for Python's ``re`` and Spark's Java regex
_SIZE = r"^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*(.*?)\s*$"
_INT8_MAX = (1 << 63) - 1


def pg_size_bytes(text: str) -> int:
    """PostgreSQL's pg_size_bytes (9.28.7): ``' 1.5 GB '`` -> 1610612736, the number
    times the unit's power of 1024, rounded half away from zero.

    Raises:
        SqlError 22023 ``invalid size`` for a text that is no number and unit; 22003
        ``bigint out of range``."""
    m = re.match(_SIZE, text)
    if m is None or m[2].lower() not in _SIZE_UNITS:
        raise SqlError(INVALID_PARAMETER_VALUE, f'invalid size: "{text}"')
    n = (Decimal(m[1]) * _SIZE_UNITS[m[2].lower()]).to_integral_value("ROUND_HALF_UP")
    if abs(n) > _INT8_MAX:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "bigint out of range")
    return int(n)


def _size_bytes_spark(S, a, e):
    F = S.F
    text = a[0]
    number = F.regexp_extract(text, F.lit(_SIZE), 1).cast(S.T.DecimalType(38, 9))
    unit = F.lower(F.regexp_extract(text, F.lit(_SIZE), 2))
    units = F.create_map(*[F.lit(x) for k, v in _SIZE_UNITS.items() for x in (k, Decimal(v))])
    n = F.round(number * units[unit], 0)
    # far out of range (the decimal product would overflow): told by the double's product
    huge = F.abs(F.regexp_extract(text, F.lit(_SIZE), 1).cast("double") * units[unit].cast("double")) > 1e19
    return (F.when(text.isNull(), F.lit(None).cast("long"))
            .when(~text.rlike(_SIZE) | units[unit].isNull(),
                  S.fail(INVALID_PARAMETER_VALUE, F.concat(F.lit('invalid size: "'), text, F.lit('"'))))
            .when(huge | (F.abs(n) > _INT8_MAX), S.fail(NUMERIC_VALUE_OUT_OF_RANGE, "bigint out of range"))
            .otherwise(n.cast("long")))


def _size_pretty_spark(S, a, e):
    """pg_size_pretty's steps (``pg_size_pretty``) on a decimal(38,0) column. Truncating
    divisions compose (trunc(trunc(x / a) / b) = trunc(x / (a * b))), so each unit's value
    is one division of the size: the expression stays shallow."""
    F = S.F
    whole = S.T.DecimalType(38, 0)

    def div(x, b: int):  # C's integer division: toward zero (Spark's % keeps the dividend's sign)
        d = F.lit(Decimal(b))
        return ((x - x % d) / d).cast(whole)

    def text(x, unit: str):
        return F.concat(x.cast("string"), F.lit(" " + unit))

    def halved(x):
        return div(x + F.signum(x).cast(whole), 2)

    size = a[0].cast(whole) if e.args[0].type.scale == 0 else div(a[0], 1)
    pretty = F.when(F.abs(size) < 10 * 1024, text(size, "bytes"))
    for n, unit in enumerate(("kB", "MB", "GB", "TB", "PB")):
        steps = div(size, 1 << (9 + 10 * n))
        pretty = pretty.when((F.abs(steps) < 20 * 1024 - 1) if unit != "PB" else F.lit(True),
                             text(halved(steps), unit))
    return pretty


def format_type(oid: int, typmod: int | None) -> str | None:
    """PostgreSQL's ``format_type(type_oid, typmod)``: ``numeric(10,2)``, ``integer[]``;
    ``???`` for an OID that names no type, as PostgreSQL prints."""
    from catalog.pg_catalog import PSEUDO_TYPE_OIDS
    from catalog.types import SqlType, type_from_oid

    t = type_from_oid(oid)
    if t is None:
        return next((n for n, o in PSEUDO_TYPE_OIDS.items() if o == oid), "???")
    name = t.element.name if t.is_array else t.name
    if typmod is not None and typmod >= 0 and name in ("timestamp", "timestamptz", "time", "timetz", "interval"):
        from catalog.intervalio import FULL_PRECISION, FULL_RANGE

        if name != "interval":
            return SqlType(t.name, typmod).sql()
        fields, precision = typmod >> 16 & 0x7FFF, typmod & 0xFFFF
        return SqlType(t.name, None if precision == FULL_PRECISION else precision,
                       None if fields == FULL_RANGE else fields).sql()
    if typmod is not None and typmod >= 4:
        if name == "numeric":
            t = SqlType(t.name, (typmod - 4) >> 16, (typmod - 4) & 0xFFFF)
        elif name in ("varchar", "bpchar"):
            t = SqlType(t.name, typmod - 4)
    elif t.name in ("bpchar", "_bpchar"):
        # no typmod: "character"; a typmod of -1 given: "bpchar" (format_type.c: character
        # without a length would mean character(1))
        return ("character" if typmod is None else "bpchar") + ("[]" if t.is_array else "")
    return t.sql()


@functools.lru_cache(maxsize=1)
def _format_type_table() -> dict[str, str]:
    """format_type's answers where a typmod changes them in a way other than numeric's,
    the character types' and the time types' (``_format_type_spark``): ``oid`` (typmod
    NULL), ``oid/typmod`` for -1 and the interval's fields and precisions."""
    from catalog.intervalio import FIELD_NAMES, FULL_PRECISION, FULL_RANGE
    from catalog.pg_catalog import PSEUDO_TYPE_OIDS
    from catalog.types import _BY_OID, type_from_oid

    table = {}
    for oid in sorted({*_BY_OID, *PSEUDO_TYPE_OIDS.values()}):
        table[str(oid)] = format_type(oid, None)
        table[f"{oid}/-1"] = format_type(oid, -1)
        t = type_from_oid(oid)
        base = None if t is None else (t.element if t.is_array else t).name
        if base == "interval":
            table |= {f"{oid}/{f << 16 | p}": format_type(oid, f << 16 | p) for f in (*FIELD_NAMES, FULL_RANGE)
                      for p in (*range(7), FULL_PRECISION)}
    return table


def _format_type_spark(S, a, e):
    """format_type on Spark: ``_format_type_table`` for what it lists; numeric(p,s),
    character varying(n) and character(n) from the typmod (``typmod - 4`` holds them,
    PostgreSQL's numeric.c and varchar.c), the time types' precision after their first
    word (``timestamp(3) with time zone``); otherwise the type's name without a typmod."""
    F = S.F
    oid, typmod = a[0].cast("string"), a[1]
    table = static_map(S, _format_type_table())
    plain = table[oid]
    arr = F.when(F.endswith(plain, F.lit("[]")), F.lit("[]")).otherwise(F.lit(""))
    m = typmod - 4
    with_mod = (F.when(a[0].isin(1700, 1231), F.concat(F.lit("numeric("), F.shiftright(m, 16).cast("string"), F.lit(","),
                                                        m.bitwiseAND(F.lit(0xFFFF)).cast("string"), F.lit(")"), arr))
                .when(a[0].isin(1043, 1015), F.concat(F.lit("character varying("), m.cast("string"), F.lit(")"), arr))
                .when(a[0].isin(1042, 1014), F.concat(F.lit("character("), m.cast("string"), F.lit(")"), arr)))
    timed = F.regexp_replace(plain, F.lit(r"^(\w+)"), F.concat(F.lit("$1("), typmod.cast("string"), F.lit(")")))
    listed = table[F.concat(oid, F.lit("/"), typmod.cast("string"))]
    return (F.when(a[0].isNull(), F.lit(None).cast("string"))
            .when(typmod.isNull(), F.coalesce(plain, F.lit("???")))
            .otherwise(F.coalesce(listed, F.when(a[0].isin(*_TIME_OIDS) & (typmod >= 0), timed),
                                  F.when(typmod >= 4, with_mod), plain, F.lit("???"))))


#: timestamp, timestamptz, time, timetz and their arrays: a precision typmod
_TIME_OIDS = (1114, 1184, 1083, 1266, 1115, 1185, 1183, 1270)


def regtype_in(text: str) -> int:
    """The OID a type name (``int4``, ``integer``, ``pg_catalog.text``, ``void``, and
    Materialize's ``int list``, ``map[text=>int]``) names: the ``regtype`` input function
    (PostgreSQL 8.19).

    Raises:
        SqlError 42704 for a name that names no type."""
    from catalog.pg_catalog import PSEUDO_TYPE_OIDS
    from catalog.types import make_type

    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    name = text.removeprefix("pg_catalog.")
    if name.lower().endswith(" list") or name.lower().startswith("map["):
        from planner.functions.lists import type_from_text  # Materialize's list and map types

        return type_from_text(name).oid
    return PSEUDO_TYPE_OIDS[name] if name in PSEUDO_TYPE_OIDS else make_type(name).oid


def _settings(args: list, ctx) -> dict[str, str]:
    """current_setting's lookup table (``lookup_args``): the statement's settings by
    lower-case name, its session's (``ctx.session.vars``, a ``sqlfront.vars.SessionVars``:
    a ``values`` dict) over the defaults (``catalog.settings.DEFAULTS``)."""
    defaults = {name: value for name, (value, _) in DEFAULTS.items()}
    return defaults | (dict(ctx.session.vars.values) if ctx.session is not None else {})


def _current_setting(a, e):
    """current_setting(name [, missing_ok]) (PostgreSQL 9.27.1): names are
    case-insensitive; an unknown one is 42704, or NULL with ``missing_ok``."""
    *args, table = a
    if args[0] is None or len(args) > 1 and args[1] is None:
        return None
    value = lookup_table(table).get(args[0].lower())
    if value is None and not (len(args) > 1 and args[1]):
        raise SqlError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{args[0]}"')
    return value


def _current_setting_spark(S, a, e):
    F = S.F
    *args, table = a
    value = lookup_map(S, table)[F.lower(args[0])]
    missing = S.fail(UNDEFINED_OBJECT, F.concat(F.lit('unrecognized configuration parameter "'), args[0], F.lit('"')))
    out = F.when(args[0].isNull(), F.lit(None).cast("string"))
    if len(args) > 1:
        out = out.when(args[1].isNull() | (value.isNull() & args[1]), F.lit(None).cast("string"))
    return out.when(value.isNull(), missing).otherwise(value)


@functools.lru_cache(maxsize=1)
def _function_texts() -> dict[str, dict[str, str]]:
    """"arguments" and "result": pg_proc OID -> pg_get_function_arguments' and
    pg_get_function_result's text, for every pg_proc row of the registry
    (``catalog.pg_catalog.FUNCTION_PROCS``, fixed once the registry is loaded)."""
    from catalog.pg_catalog import FUNCTION_PROC_BY_OID

    return {"arguments": {str(oid): ", ".join(format_type(t, None) for t in row[8])
                          for oid, row in FUNCTION_PROC_BY_OID.items()},
            "result": {str(oid): ("SETOF " if row[6] else "") + format_type(row[2], None)
                       for oid, row in FUNCTION_PROC_BY_OID.items()}}


#: pg_get_functiondef's volatility words (a volatile function's is not written)
_VOLATILITY = {"immutable": "IMMUTABLE", "stable": "STABLE"}


@functools.lru_cache(maxsize=1)
def _function_definitions() -> dict[str, dict[str, str]]:
    """"definition": pg_proc OID -> pg_get_functiondef's text of each function of the
    registry (ruleutils.c's layout: CREATE OR REPLACE FUNCTION in pg_catalog, its
    arguments and result, LANGUAGE internal, WINDOW, volatility and STRICT, and AS the
    entry's plan name, which is what implements it); "aggregate": OID -> name of each
    aggregate, which has none."""
    from catalog.pg_catalog import FUNCTION_PROC_BY_OID
    from planner.functions.registry import proc_entries
    from planner.functions.string import quote_ident

    texts, definitions, aggregates = _function_texts(), {}, {}
    for oid, sql_name, f, _ in proc_entries():
        if FUNCTION_PROC_BY_OID[oid][5] == "a":
            aggregates[str(oid)] = sql_name
            continue
        lines = [f"CREATE OR REPLACE FUNCTION pg_catalog.{quote_ident(sql_name)}({texts['arguments'][str(oid)]})",
                 f" RETURNS {texts['result'][str(oid)]}", " LANGUAGE internal"]
        if f.kind == "window":
            lines.append(" WINDOW")
        traits = [_VOLATILITY[f.volatility]] if f.volatility in _VOLATILITY else []
        if f.strict:
            traits.append("STRICT")
        if traits:
            lines.append(" " + " ".join(traits))
        definitions[str(oid)] = "\n".join([*lines, f"AS $function${f.name}$function$", ""])
    return {"definition": definitions, "aggregate": aggregates}


def _functiondef_py(a, e):
    """pg_get_functiondef(oid): NULL for an OID that names no function.

    Raises:
        SqlError 42809 for an aggregate (PostgreSQL: it has no CREATE FUNCTION)."""
    table = _function_definitions()
    if str(a[0]) in table["aggregate"]:
        raise SqlError(WRONG_OBJECT_TYPE, f'"{table["aggregate"][str(a[0])]}" is an aggregate function')
    return table["definition"].get(str(a[0]))


def _by_oid(which: str):
    """(Python, Spark) implementations of a function of a pg_proc OID answered by
    ``_function_texts()[which]``: NULL for an OID that names no function."""
    def py(a, e):
        return _function_texts()[which].get(str(a[0]))

    def spark(S, a, e):
        return static_map(S, _function_texts()[which])[a[0].cast("string")]
    return py, spark


def _user_names(args: list, ctx) -> dict[str, str] | None:
    """pg_get_userbyid's lookup table (``lookup_args``): role OID -> name."""
    from catalog import rbac

    snap = ctx.catalog()
    return None if snap is None else {str(rbac.role_oid(r.id)): r.name for r in rbac.all_roles(snap)}


def _user_by_id(a, e):
    """pg_get_userbyid(oid): the role's name; ``unknown (OID=n)`` for an OID that names
    none (PostgreSQL's text)."""
    oid, table = a
    if oid is None:
        return None
    return lookup_table(table).get(str(oid), f"unknown (OID={oid})")


def _user_by_id_spark(S, a, e):
    F = S.F
    return F.coalesce(lookup_map(S, a[1])[a[0].cast("string")],
                      F.concat(F.lit("unknown (OID="), a[0].cast("string"), F.lit(")")))


_NULL_CATALOG_FUNCTIONS = (
    "obj_description", "col_description", "shobj_description", "pg_get_constraintdef",
    "pg_get_serial_sequence", "pg_get_triggerdef", "pg_get_ruledef", "pg_get_partkeydef",
    "pg_get_statisticsobjdef_columns",
)


def _index_texts(args: list, ctx) -> dict[str, str] | None:
    """pg_get_indexdef's lookup table (``lookup_args``): ``oid`` -> the index's
    definition, ``oid/n`` -> its n-th key (``catalog.pg_catalog.index_definition``)."""
    from catalog.pg_catalog import index_definition, object_oid

    snap = ctx.catalog()
    if snap is None:
        return None
    table = {}
    for index in snap.indexes.values():
        oid = object_oid(index.id)
        table[str(oid)] = index_definition(snap, oid)
        table |= {f"{oid}/{n}": index_definition(snap, oid, n) for n in range(1, len(index.keys) + 1)}
    return table


#: those of ``_NULL_CATALOG_FUNCTIONS`` that PostgreSQL answers NULL for an OID that names
#: nothing (the differential suite's case; pg_get_triggerdef and pg_get_ruledef fail there)
_NULL_SAMPLED = ("obj_description", "pg_get_constraintdef", "pg_get_partkeydef", "pg_get_statisticsobjdef_columns")


def _indexdef(a, e):
    """pg_get_indexdef(oid [, column, pretty]): NULL for an OID that names no index or a
    column past its keys; column 0 is the whole definition (PostgreSQL's rule)."""
    *args, table = a
    if args[0] is None or len(args) > 1 and args[1] is None:
        return None
    t = lookup_table(table)
    return t.get(str(args[0]) if len(args) == 1 or args[1] == 0 else f"{args[0]}/{args[1]}")


def _indexdef_spark(S, a, e):
    F = S.F
    *args, table = a
    t = lookup_map(S, table)
    whole = t[args[0].cast("string")]
    if len(args) == 1:
        return whole
    return F.when(args[1] == 0, whole).otherwise(t[F.concat(args[0].cast("string"), F.lit("/"),
                                                            args[1].cast("string"))])


def _set_config(a, e, ctx):
    """set_config(name, value, is_local): SET name = value (a NULL value: RESET) in
    the evaluation's session's (``ctx.session``) variables (``vars``: ``get(name) -> str``, ``set(name, value | None)``,
    ``sqlfront.vars.SessionVars``), then the variable's new value (PostgreSQL 9.27.1).
    ``is_local`` is taken like SET LOCAL, which sqlfront treats as SET
    (``sqlfront.sequence.vars``)."""
    name, value, session = a[0], a[1], ctx.session
    if name is None:
        raise SqlError(INVALID_PARAMETER_VALUE, "SET requires parameter name")
    if session is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "set_config is not supported here")
    session.vars.set(name, value)
    return session.vars.get(name)


def _typeof_spark(S, a, e):
    return S.F.lit(e.args[0].type.unconstrained().sql())  # regtype shows no typmod


register(
    Function("pg_size_pretty", (sig("numeric", ret="text"),), lambda a, e: pg_size_pretty(a[0]), _size_pretty_spark,
             sql_names=("pg_size_pretty",), doc="9.28.7",
             samples=("pg_size_pretty((k * 100000)::numeric)", "pg_size_pretty(i::int8 * 10239)",
                      "pg_size_pretty(-k::int8 << (k * 11))", "pg_size_pretty(k * 1e17)")),
    Function("pg_size_bytes", (sig("text", ret="int8"),), lambda a, e: pg_size_bytes(a[0]), _size_bytes_spark,
             sql_names=("pg_size_bytes",), doc="9.28.7",
             samples=("pg_size_bytes((ARRAY['1', '123bYteS', ' 1.5 gB ', '1e6 MB', '-.5kB'])[k])",
                      "pg_size_bytes((ARRAY['256 B', '99 PB', '3000 TB', '+7.000001 kb ', '0.0000001 PB'])[k])",
                      "pg_size_bytes(k || ' KB' || s)", "pg_size_bytes(k || 'e20 PB')", "pg_size_bytes(k || ' XB')")),
    Function("format_type", (sig("oid", "int4", ret="text"),), lambda a, e: None if a[0] is None else
             format_type(a[0], a[1]), _format_type_spark, sql_names=("format_type",), strict=False, doc="9.26",
             samples=("format_type(23, null)",
                      ("format_type((CASE k WHEN 1 THEN 23 WHEN 2 THEN 1700 WHEN 3 THEN 1043 WHEN 4 THEN 1231 "
                       "ELSE 1114 END)::oid, CASE WHEN k < 3 THEN NULL ELSE (k * 65536 + 6) END)"),
                      ("format_type((CASE k WHEN 1 THEN 1042 WHEN 2 THEN 1186 WHEN 3 THEN 1184 WHEN 4 THEN 1015 "
                       "ELSE 16 END)::oid, CASE k WHEN 1 THEN -1 WHEN 2 THEN -1 WHEN 3 THEN 3 WHEN 4 THEN 24 END)"),
                      "format_type(1083::oid, k - 2)", "format_type(k::oid, NULL)",
                      "format_type(1186::oid, (ARRAY[4, 2, 8, 3072, 7168])[k] << 16 | 2)",
                      "format_type((ARRAY[1114, 1184, 1083, 1185, 1266])[k]::oid, k + 1)")),
    Function("pg_typeof", (sig("any", ret="text"),), lambda a, e: e.args[0].type.unconstrained().sql(), _typeof_spark,
             sql_names=("pg_typeof",), strict=False, volatility="stable", doc="9.26",
             samples=("pg_typeof(i)", "pg_typeof(n)", "pg_typeof(s)", "pg_typeof(d)", "pg_typeof(a)"),
             differs="returns text rather than regtype (same text)"),
    Function("current_setting", (sig("text", "internal", ret="text"), sig("text", "bool", "internal", ret="text")),
             _current_setting, _current_setting_spark, sql_names=("current_setting",), strict=False,
             volatility="stable", doc="9.27.1", extra={"plan_args_in": lookup_args("current_setting", _settings)},
             samples=("current_setting('standard_conforming_strings')",
                      ("current_setting(CASE WHEN k < 3 THEN 'Standard_Conforming_Strings' "
                       "ELSE 'integer_datetimes' END)"), "current_setting('no_such_setting_' || k)",
                      "current_setting('no_such_setting_' || k, k > 2)",
                      "current_setting(CASE WHEN k < 4 THEN 'server_encoding' END, true)")),
    Function("pg_get_indexdef", (sig("oid", "internal", ret="text"), sig("oid", "int4", "bool", "internal", ret="text")),
             _indexdef, _indexdef_spark, sql_names=("pg_get_indexdef",), strict=False, volatility="stable", doc="9.27",
             extra={"plan_args_in": lookup_args("pg_get_indexdef", _index_texts)},
             samples=("pg_get_indexdef(k::oid)", "pg_get_indexdef(k::oid, k, true)"),
             differs="Materialize's text: USING arrangement, the relation's name unqualified; computed in "
                     "Python only (it reads the catalog)"),
    Function("set_config", (sig("text", "text", "bool", ret="text"),), _set_config, None,
             sql_names=("set_config",), strict=False, volatility="volatile", doc="9.27.1",
             samples=("set_config('application_name', 'fx', false)",
                      "set_config('standard_conforming_strings', 'on', true)",
                      "set_config('application_name', 'fx' || k, false)"),
             extra={"session": True, "with_context": True},
             differs="is_local is taken as SET LOCAL, which lasts for the session here; on table data, in the "
                     "select list only (planner.session_split)"),
    # text::regtype of a computed string (a literal's is looked up at plan time, planner.expr)
    Function("regtypein", (sig("text", ret="oid"),), lambda a, e: regtype_in(a[0]), None, volatility="stable",
             doc="8.19", samples=("('int' || 'eger')::regtype::oid", "lower('INT8')::regtype::oid",
                                  "(s || '')::regtype::oid"),
             differs="computed in Python only: 0A000 on table data"),
    # psql's \df reads these (its "Argument data types" and "Result data type" columns)
    Function("pg_get_function_arguments", (sig("oid", ret="text"),), *_by_oid("arguments"),
             sql_names=("pg_get_function_arguments", "pg_get_function_identity_arguments"),
             volatility="stable", doc="9.27", samples=("pg_get_function_arguments((k + 999990)::oid)",),
             differs="the registry's signatures (argument names, defaults and VARIADIC are not kept)"),
    # psql's \sf and \ef read this one
    # (on table data through the same Python, by_python: the texts are too long to ship
    # to Spark as a map in every plan)
    Function("pg_get_functiondef", (sig("oid", ret="text"),), _functiondef_py, by_python,
             sql_names=("pg_get_functiondef",), volatility="stable", doc="9.26",
             samples=("pg_get_functiondef((k + 999990)::oid)", "pg_get_functiondef(0)",
                      "pg_get_functiondef(CASE WHEN k > 3 THEN (SELECT min(oid) FROM pg_proc WHERE proname = 'sum') END)")),
    Function("pg_get_function_result", (sig("oid", ret="text"),), *_by_oid("result"),
             sql_names=("pg_get_function_result",), volatility="stable", doc="9.27",
             samples=(("pg_get_function_result(CASE WHEN k < 3 THEN (SELECT min(oid) FROM pg_proc WHERE "
                       "proname = 'upper') ELSE (k + 999990)::oid END)"),)),
    # every function is built in, in pg_catalog, which is always searched
    Function("pg_function_is_visible", (sig("oid", ret="bool"),), lambda a, e: True, lambda S, a, e: S.F.lit(True),
             sql_names=("pg_function_is_visible",), volatility="stable", doc="9.26",
             samples=("pg_function_is_visible(CASE WHEN k > 0 THEN (SELECT min(oid) FROM pg_proc WHERE proname = 'lower') END)",)),
    Function("pg_get_userbyid", (sig("oid", "internal", ret="text"),), _user_by_id, _user_by_id_spark,
             sql_names=("pg_get_userbyid",), strict=False, volatility="stable", doc="9.27",
             extra={"plan_args_in": lookup_args("pg_get_userbyid", _user_names)},
             samples=("pg_get_userbyid(10)", "pg_get_userbyid((k + 99990)::oid)"),
             differs="OID 10 is the bootstrap role, named materialize here"),
    # adbin (pg_attrdef) holds the expression's text here, so decompiling it is the identity
    Function("pg_get_expr", (sig("text", "oid", ret="text"), sig("text", "oid", "bool", ret="text")),
             lambda a, e: a[0], None, sql_names=("pg_get_expr",), volatility="stable", doc="9.27",
             differs="computed in Python only: 0A000 on table data"),
    *[Function(n, (sig("oid", ret="text"), sig("oid", "text", ret="text"), sig("oid", "int4", ret="text"),
                   sig("text", ret="text"), sig("oid", "bool", ret="text"), sig("oid", "oid", ret="text"),
                   sig("oid", "oid", "bool", ret="text"), sig("oid", "int4", "bool", ret="text"),
                   sig("text", "text", ret="text"), sig("oid", "text", "bool", ret="text"),
                   # pg_get_expr(pg_node_tree, relation [, pretty]): adbin and friends are text here
                   sig("text", "oid", ret="text"), sig("text", "oid", "bool", ret="text")),
               lambda a, e: None, lambda S, a, e: S.F.lit(None).cast("string"), sql_names=(n,), strict=False,
               volatility="stable", doc="9.27", samples=(f"{n}((k + 999990)::oid)",) if n in _NULL_SAMPLED else ())
      for n in _NULL_CATALOG_FUNCTIONS],
)


register(
    Function("gen_random_uuid", (sig(ret="uuid"),), lambda a, e: str(_uuid.uuid4()), lambda S, a, e: S.F.uuid(),
             sql_names=("gen_random_uuid", "uuidv4"), volatility="volatile", doc="9.14",
             samples=("length(gen_random_uuid()::text) + k", "gen_random_uuid() <> gen_random_uuid()")),
)


def _mz_now_outside_filter(*_):
    from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED

    raise SqlError(FEATURE_NOT_SUPPORTED, "mz_now() in a materialized view or SUBSCRIBE is only supported in a "
                   "temporal filter: WHERE mz_now() compared directly to an expression of the row")


register(
    # mz_now() of a maintained query (``planner.expr.MAINTAINED``): a temporal filter's
    # (``planner.incremental.temporal``) and nowhere else; a query read once has its
    # timestamp as a literal instead. Reached only through ``planner.expr``.
    Function("mz_now", (sig(ret="mz_timestamp"),), _mz_now_outside_filter, _mz_now_outside_filter,
             volatility="volatile", doc="Materialize"),
)


def _txid_args(args: list, ctx) -> list:
    """txid_current() is the statement's start time in microseconds since 1970: an int8
    that grows from one statement to the next (sqlfront has no transaction ids), fixed
    at plan time."""
    if args:
        return args  # no signature takes arguments: 42883
    from catalog.types import INT8
    from planner.scalar import Literal

    t = ctx.now
    return [Literal(int(t.timestamp()) * 1_000_000 + t.microsecond, INT8)]


register(
    Function("pg_client_encoding", (sig(ret="name"),), lambda a, e: "UTF8", lambda S, a, e: S.F.lit("UTF8"),
             sql_names=("pg_client_encoding",), doc="9.4", samples=("pg_client_encoding() || k",)),
    Function("txid_current", (sig("int8", ret="int8"),), lambda a, e: a[0], lambda S, a, e: a[0],
             sql_names=("txid_current", "pg_current_xact_id"), volatility="stable", doc="9.27",
             extra={"plan_args_in": _txid_args},
             differs="not PostgreSQL's transaction id: a number that grows from statement to statement",
             samples=("txid_current() > k",)),
)


def constant_entry(name: str, sigs: tuple, value, spark_type: str, samples: tuple[str, ...], doc: str = "9.26",
                   strict: bool = True, volatility: str = "stable", differs: str = "") -> Function:
    """An entry whose answer is the same for every argument value, because of what
    sqlfront's catalog holds (no such objects: NULL, PostgreSQL's answer for an OID that
    names none; no triggers: depth 0); NULL for a NULL argument when ``strict``."""

    def spark(S, a, e):
        F = S.F
        out = F.lit(value).cast(spark_type)
        if not (strict and a and value is not None):
            return out
        return F.when(F.greatest(*[x.isNull() for x in a]) if len(a) > 1 else a[0].isNull(),
                      F.lit(None).cast(spark_type)).otherwise(out)

    return Function(name, sigs, lambda a, e: value, spark, sql_names=(name,), strict=strict, volatility=volatility,
                    doc=doc, samples=samples, differs=differs)


_constant = constant_entry


#: ``*_is_visible`` of object classes sqlfront's catalog has none of: NULL for every OID
_NO_OBJECTS = ("pg_conversion_is_visible", "pg_opclass_is_visible", "pg_opfamily_is_visible", "pg_operator_is_visible",
               "pg_statistics_obj_is_visible", "pg_ts_config_is_visible", "pg_ts_dict_is_visible",
               "pg_ts_parser_is_visible", "pg_ts_template_is_visible")


def _collation_is_visible(a, e):
    """pg_collation_is_visible(oid): true for pg_collation's rows (pg_catalog's, always
    searched), NULL for an OID that names none."""
    from catalog.pg_catalog import COLLATION_OIDS

    return True if a[0] in COLLATION_OIDS else None


def _collation_is_visible_spark(S, a, e):
    from catalog.pg_catalog import COLLATION_OIDS

    return S.F.when(a[0].isin(*COLLATION_OIDS), S.F.lit(True))


def _collation_for(e) -> str:
    """pg_collation_for(any): the argument type's collation, quoted as an identifier:
    ``"default"`` for the string types (and arrays of them); a NULL value has its type's
    (PostgreSQL 9.26).

    Raises:
        SqlError 42804 for a type without collations (PostgreSQL's misc.c)."""
    t = e.args[0].type
    base = t.element if t.is_array else t
    if base.name not in ("text", "varchar", "bpchar", "unknown"):
        raise SqlError(DATATYPE_MISMATCH, f"collations are not supported by type {t.sql()}")
    return '"default"'


def _collation_for_spark(S, a, e):
    try:
        return S.F.lit(_collation_for(e))
    except SqlError as err:  # per row, as PostgreSQL: a query of no rows does not fail
        return S.fail(err.sqlstate, err.message)


register(
    *[_constant(n, (sig("oid", ret="bool"),), None, "boolean", (f"{n}(k::oid)",)) for n in _NO_OBJECTS],
    Function("pg_collation_is_visible", (sig("oid", ret="bool"),), _collation_is_visible,
             _collation_is_visible_spark, sql_names=("pg_collation_is_visible",), volatility="stable", doc="9.26",
             samples=("pg_collation_is_visible((ARRAY[100, 950, 1, 2, 3])[k]::oid)",)),
    Function("pg_collation_for", (sig("any", ret="text"),), lambda a, e: _collation_for(e),
             _collation_for_spark, sql_names=("pg_collation_for",), strict=False,
             volatility="stable", doc="9.26", samples=("pg_collation_for(s)", "pg_collation_for(k)")),
    _constant("pg_trigger_depth", (sig(ret="int4"),), 0, "int", ("pg_trigger_depth() + k",)),
    # no partitioned tables, no replica identity indexes: NULL for every relation
    _constant("pg_get_partition_constraintdef", (sig("oid", ret="text"),), None, "string",
              ("pg_get_partition_constraintdef(k::oid)",), "9.27"),
    _constant("pg_get_replica_identity_index", (sig("oid", ret="oid"),), None, "long",
              ("pg_get_replica_identity_index(CASE WHEN k > 0 THEN 'fx_t'::regclass::oid END)",), "9.27"),
    _constant("pg_partition_root", (sig("oid", ret="oid"),), None, "long", ("pg_partition_root(k::oid)",), "9.27"),
    # no LISTEN/NOTIFY: the queue is empty
    _constant("pg_notification_queue_usage", (sig(ret="float8"),), 0.0, "double",
              ("pg_notification_queue_usage() + k",)),
)


def _my_temp_schema(args: list, ctx) -> list:
    """pg_my_temp_schema(): the OID of the session's temporary schema, 0 while it has
    none (PostgreSQL 9.26), fixed at plan time as the call's argument."""
    if args:
        return args  # no signature takes arguments: 42883
    from catalog.pg_catalog import object_oid
    from catalog.types import OID
    from planner.scalar import Literal

    snap = ctx.catalog()
    temp = None if snap is None else snap.scope.temp_schema
    schema = None if snap is None or temp is None else snap.schema_by_name(temp)
    return [Literal(0 if schema is None else object_oid(schema.id), OID)]


def _other_temp_schemas(args: list, ctx) -> dict[str, str] | None:
    """pg_is_other_temp_schema's lookup table (``lookup_args``): OIDs of the other
    sessions' temporary schemas."""
    from catalog.pg_catalog import object_oid
    snap = ctx.catalog()
    if snap is None:
        return None
    mine = snap.scope.temp_schema
    return {str(object_oid(s.id)): "1" for s in snap.schemas.values() if s.temp and s.name != mine}


register(
    Function("pg_my_temp_schema", (sig("oid", ret="oid"),), lambda a, e: a[0], lambda S, a, e: a[0],
             sql_names=("pg_my_temp_schema",), volatility="stable", doc="9.26",
             extra={"plan_args_in": _my_temp_schema}, samples=("CASE WHEN k > 0 THEN pg_my_temp_schema() END",)),
    Function("pg_is_other_temp_schema", (sig("oid", "internal", ret="bool"),),
             lambda a, e: None if a[0] is None else str(a[0]) in lookup_table(a[1]),
             lambda S, a, e: S.F.when(a[0].isNotNull(), lookup_map(S, a[1])[a[0].cast("string")].isNotNull()),
             sql_names=("pg_is_other_temp_schema",), strict=False, volatility="stable", doc="9.26",
             extra={"plan_args_in": lookup_args("pg_is_other_temp_schema", _other_temp_schemas)},
             samples=("pg_is_other_temp_schema(k::oid)",)),
)


def _encoding(i: int, part: int):
    return ENCODINGS[i][part] if 0 <= i < len(ENCODINGS) else None


def _encoding_spark(part: int, missing, spark_type: str):
    def lower(S, a, e):
        value = static_map(S, {str(i): str(enc[part]) for i, enc in enumerate(ENCODINGS)})[a[0].cast("string")]
        return S.F.when(a[0].isNotNull(), S.F.coalesce(value, S.F.lit(missing)).cast(spark_type))
    return lower


def _not_in_recovery(*_):
    """What a recovery control function says on a server that is not a standby (sqlfront
    never is: replicas of a cluster are active-active)."""
    raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, "recovery is not in progress",
                   hint="Recovery control functions can only be executed during recovery.")


def _no_backup(*_):
    raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, "backup is not in progress", hint="Did you call pg_backup_start()?")


def _raising(name: str, sigs: tuple, raise_: Callable, sqlstate: str, message: str, samples: tuple[str, ...] = (),
             doc: str = "9.27.4") -> Function:
    """An entry that always fails as ``raise_`` does (``sqlstate``, ``message`` on Spark,
    evaluated per row as PostgreSQL evaluates it)."""
    return Function(name, sigs, raise_, lambda S, a, e: S.fail(sqlstate, message),
                    sql_names=(name,), strict=False, volatility="volatile", doc=doc, samples=samples)


_LOG_FORMATS = ("stderr", "csvlog", "jsonlog")


def _current_logfile(a, e):
    """pg_current_logfile([format]): NULL, PostgreSQL's answer without a logging
    collector (environmentd logs to its standard output); the format is checked first."""
    if a and a[0] is not None and a[0] not in _LOG_FORMATS:
        raise SqlError(INVALID_PARAMETER_VALUE, f'log format "{a[0]}" is not supported',
                       hint='The supported log formats are "stderr", "csvlog", and "jsonlog".')


def _current_logfile_spark(S, a, e):
    F = S.F
    if not a:
        return F.lit(None).cast("string")
    bad = S.fail(INVALID_PARAMETER_VALUE, F.concat(F.lit('log format "'), a[0], F.lit('" is not supported')))
    return F.when(a[0].isNotNull() & ~a[0].isin(*_LOG_FORMATS), bad).otherwise(F.lit(None).cast("string"))


def _tablespace_location(a, e):
    """pg_tablespace_location(oid): '' for pg_default and pg_global (in the data
    directory); another OID names no tablespace directory (PostgreSQL's error)."""
    from catalog.pg_catalog import TABLESPACE_OIDS

    if a[0] in TABLESPACE_OIDS.values():
        return ""
    raise SqlError(UNDEFINED_FILE, f'could not stat file "pg_tblspc/{a[0]}": No such file or directory')


def _tablespace_location_spark(S, a, e):
    from catalog.pg_catalog import TABLESPACE_OIDS

    F = S.F
    return F.when(a[0].isNull(), F.lit(None).cast("string")).when(a[0].isin(*TABLESPACE_OIDS.values()), F.lit("")).otherwise(S.fail(UNDEFINED_FILE, F.concat(
        F.lit('could not stat file "pg_tblspc/'), a[0].cast("string"), F.lit('": No such file or directory'))))


def _basetype_spark(S, a, e):
    from catalog.types import _BY_OID

    return S.F.when(a[0].isin(*sorted(_BY_OID)), a[0])


def _int4inc(a, e):
    if a[0] == 2**31 - 1:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range")
    return a[0] + 1


def _int4inc_spark(S, a, e):
    return S.F.when(a[0] == 2**31 - 1, S.fail(NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range")).otherwise(a[0] + 1)


register(
    Function("pg_encoding_to_char", (sig("int4", ret="name"),), lambda a, e: _encoding(a[0], 0) or "",
             _encoding_spark(0, "", "string"), sql_names=("pg_encoding_to_char",), doc="9.26",
             samples=("pg_encoding_to_char(k)", "pg_encoding_to_char(k * 8 + i)")),
    Function("pg_encoding_max_length", (sig("int4", ret="int4"),), lambda a, e: _encoding(a[0], 1),
             _encoding_spark(1, None, "int"), sql_names=("pg_encoding_max_length",), doc="9.26",
             samples=("pg_encoding_max_length(k * 8 + i)", "pg_encoding_max_length(k - 1)")),
    # sqlfront is never a standby, nor in a base backup
    _constant("pg_is_in_recovery", (sig(ret="bool"),), False, "boolean", ("pg_is_in_recovery() OR k > 3",), "9.27.4"),
    _constant("pg_last_xact_replay_timestamp", (sig(ret="timestamptz"),), None, "timestamp",
              ("pg_last_xact_replay_timestamp() < now()",), "9.27.4"),
    *[_raising(n, sigs, _not_in_recovery, OBJECT_NOT_IN_PREREQUISITE_STATE, "recovery is not in progress",
               samples)
      for n, sigs, samples in (
          ("pg_is_wal_replay_paused", (sig(ret="bool"),), ("pg_is_wal_replay_paused()",)),
          ("pg_get_wal_replay_pause_state", (sig(ret="text"),), ("pg_get_wal_replay_pause_state()",)),
          ("pg_wal_replay_pause", (sig(ret="void"),), ()), ("pg_wal_replay_resume", (sig(ret="void"),), ()),
          ("pg_promote", (sig("bool", "int4", ret="bool"),), ()))],
    _raising("pg_backup_stop", (sig("bool", ret="record"),), _no_backup, OBJECT_NOT_IN_PREREQUISITE_STATE,
             "backup is not in progress", doc="9.27.3"),
    _constant("pg_jit_available", (sig(ret="bool"),), False, "boolean", ("pg_jit_available() OR k > 3",)),
    Function("pg_current_logfile", (sig(ret="text"), sig("text", ret="text")), _current_logfile,
             _current_logfile_spark, sql_names=("pg_current_logfile",), strict=False, volatility="volatile",
             doc="9.27.4", samples=("pg_current_logfile()", "pg_current_logfile(CASE WHEN k < 3 THEN 'csvlog' END)",
                                    "pg_current_logfile(s)")),
    Function("pg_tablespace_location", (sig("oid", ret="text"),), _tablespace_location, _tablespace_location_spark,
             sql_names=("pg_tablespace_location",), volatility="stable", doc="9.26",
             samples=("pg_tablespace_location(CASE WHEN k < 3 THEN 1663 WHEN k = 3 THEN 1664 END::oid)",
                      "pg_tablespace_location(k::oid)")),
    # no lock manager: no session ever waits for another's lock (writes are compare-and-append)
    *[Function(n, (sig("int4", ret="_int4"),), lambda a, e: [], lambda S, a, e: S.F.array().cast("array<int>"),
               sql_names=(n,), volatility="volatile", doc="9.26", samples=(f"{n}(k)", f"{n}(pg_backend_pid())"))
      for n in ("pg_blocking_pids", "pg_safe_snapshot_blocking_pids")],
    # no SQL-bodied functions and no extended statistics objects: NULL for every OID
    _constant("pg_get_function_sqlbody", (sig("oid", ret="text"),), None, "string",
              ("pg_get_function_sqlbody(k::oid)",), "9.26"),
    _constant("pg_get_statisticsobjdef", (sig("oid", ret="text"),), None, "string",
              ("pg_get_statisticsobjdef(k::oid)",), "9.26"),
    _constant("pg_get_statisticsobjdef_expressions", (sig("oid", ret="_text"),), None, "array<string>",
              ("pg_get_statisticsobjdef_expressions(k::oid)",), "9.26"),
    # no domains: a type's base type is itself; NULL for an OID that names no type
    Function("pg_basetype", (sig("oid", ret="oid"),), lambda a, e: a[0] if _known_type(a[0]) else None,
             _basetype_spark, sql_names=("pg_basetype",), volatility="stable", doc="9.26",
             samples=("pg_basetype(CASE WHEN k < 3 THEN 23 ELSE k END::oid)::oid",)),
    # no VACUUM or ANALYZE: tables are persist shards, compacted by persist
    *[_constant(f"pg_stat_get_total_{w}_time", (sig("oid", ret="float8"),), 0.0, "double",
                (f"pg_stat_get_total_{w}_time(k::oid)",), "9.26")
      for w in ("vacuum", "autovacuum", "analyze", "autoanalyze")],
    # count()'s transition function, callable in PostgreSQL
    Function("int4inc", (sig("int4", ret="int4"),), _int4inc, _int4inc_spark, sql_names=("int4inc",), doc="9.3",
             samples=("int4inc(i)", "int4inc(2147483646 + k)")),
)


def _known_type(oid: int) -> bool:
    from catalog.types import _BY_OID

    return oid in _BY_OID


# -- pg_input_is_valid, pg_input_error_info (PostgreSQL 16+, 9.26 "Data Validity Checking") --


def _input_type(name: str):
    """The type a ``type_name`` argument names, with its modifiers (``varchar(3)``,
    ``numeric(5,2)``, ``int[]``), as PostgreSQL's parseTypeString reads it.

    Raises:
        SqlError 42704 for a name that names no type."""
    from catalog.types import array_of
    from planner.functions.lists import type_from_text

    s = name.strip()
    if s.endswith("[]"):
        return array_of(type_from_text(s[:-2]))
    return type_from_text(s)


def _input_error(value: str, type_name: str, fmt) -> SqlError | None:
    """The soft error of reading ``value`` as the type ``type_name`` names (its input
    function's: a data exception, SQLSTATE class 22), None when it reads; dates and times
    read in the session's text settings ``fmt`` (``Guard.text``: DateStyle's field order).

    Raises:
        SqlError 42704 for a type name that names no type (a hard error in PostgreSQL too)."""
    from catalog.types import TEXT
    from planner.consteval import cast_value

    t = _input_type(type_name)
    try:
        cast_value(value, TEXT, t, explicit=False, fmt=fmt)
    except SqlError as err:
        if not err.sqlstate.startswith("22"):
            raise
        return err
    return None


def _input_error_row(a, ctx) -> tuple:
    err = _input_error(a[0], a[1], ctx.guard.text)
    return (None,) * 4 if err is None else (err.message, err.detail, err.hint, err.sqlstate)


def _input_error_columns() -> tuple:
    from catalog.types import TEXT

    return tuple((n, TEXT) for n in ("message", "detail", "hint", "sql_error_code"))


def _input_error_info_py(a, e, ctx):
    from planner.functions.logic import record_text

    return record_text(_input_error_row(a, ctx))


register(
    # whether a text reads as a type, and the error it would raise: the input function of
    # the type (its modifiers too) is the cast from text an assignment makes
    # (planner.consteval.cast_value); on table data through the same Python (by_python)
    Function("pg_input_is_valid", (sig("text", "text", ret="bool"),), lambda a, e, ctx: _input_error(a[0], a[1], ctx.guard.text) is None,
             by_python,
             sql_names=("pg_input_is_valid",), volatility="stable", doc="9.26",
             samples=("pg_input_is_valid(k::text, 'int4')", "pg_input_is_valid(s, 'integer')",
                      "pg_input_is_valid(s, 'varchar(5)')", "pg_input_is_valid(k || '.25', 'numeric(3,2)')",
                      "pg_input_is_valid('{' || k || ',2}', 'int[]')", "pg_input_is_valid(d::text, 'date')",
                      "pg_input_is_valid(s, 'nosuchtype')", "pg_input_is_valid('2024-02-3' || k, 'date')",
                      "pg_input_is_valid('42', 'integer')", "pg_input_is_valid(j::text, 'jsonb')"),
             extra=IN_CONTEXT),
    Function("pg_input_error_info", (sig("text", "text", ret="record"),), _input_error_info_py,
             by_python,
             sql_names=("pg_input_error_info",), volatility="stable", doc="9.26",
             extra={"row_in_from": (_input_error_columns(), _input_error_row), "with_context": True},
             samples=("pg_input_error_info(s, 'int4')", "pg_input_error_info(k * 1000000000 || '', 'integer')",
                      "pg_input_error_info(s, 'varchar(5)')", "pg_input_error_info('1' || k || '.5', 'numeric(2,1)')",
                      "pg_input_error_info('42000000000', 'integer')", "pg_input_error_info(s, 'nosuchtype')")),
)
