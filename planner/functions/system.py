"""System information and catalog functions (PostgreSQL 9.26, 9.27) that drivers and
tools call. sqlfront has one user (``materialize``) and no comments, so several
answers are constants."""

from __future__ import annotations

import uuid as _uuid

import contextvars
import os
from decimal import Decimal

from catalog.errors import SqlError, UNDEFINED_OBJECT
from catalog.settings import DEFAULTS
from planner.functions import Function, register, sig


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
        return "character" + ("[]" if t.is_array else "")  # no typmod: no length shown
    return t.sql()


def regtype_in(text: str) -> int:
    """The OID a type name (``int4``, ``integer``, ``pg_catalog.text``, ``void``) names:
    the ``regtype`` input function (PostgreSQL 8.19).

    Raises:
        SqlError 42704 for a name that names no type."""
    from catalog.pg_catalog import PSEUDO_TYPE_OIDS
    from catalog.types import make_type

    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    name = text.removeprefix("pg_catalog.")
    return PSEUDO_TYPE_OIDS[name] if name in PSEUDO_TYPE_OIDS else make_type(name).oid


#: the running statement's session variables (``sqlfront.vars.SessionVars``), set by the
#: session per statement (``set_session_vars``); None outside a session (plans, tests)
_SESSION_VARS: contextvars.ContextVar = contextvars.ContextVar("session_vars", default=None)


def set_session_vars(session_vars) -> None:
    """Let current_setting and set_config of this statement (and thread) use
    ``session_vars``: an object with ``get(name) -> str``, ``set(name, value | None)``
    and a ``values`` dict (``sqlfront.vars.SessionVars``)."""
    _SESSION_VARS.set(session_vars)


def _current_setting(a, e):
    name = a[0].lower()
    session = _SESSION_VARS.get()
    if session is not None and name in session.values:
        return session.get(name)
    if name not in DEFAULTS:  # outside a session (plans, tests): the defaults
        if len(a) > 1 and a[1]:
            return None
        raise SqlError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{a[0]}"')
    return DEFAULTS[name][0]


def _function_arguments(a, e):
    """pg_get_function_arguments(oid), pg_get_function_identity_arguments(oid): the
    argument types of a pg_proc row of the registry (``catalog.pg_catalog.FUNCTION_PROCS``),
    as format_type names them, comma separated; NULL for an OID that names none."""
    from catalog.pg_catalog import FUNCTION_PROC_BY_OID

    row = FUNCTION_PROC_BY_OID.get(a[0])
    return None if row is None else ", ".join(format_type(t, None) for t in row[8])


def _function_result(a, e):
    """pg_get_function_result(oid): the result type of a registry function, ``SETOF t``
    for a set-returning one; NULL for an OID that names none."""
    from catalog.pg_catalog import FUNCTION_PROC_BY_OID

    row = FUNCTION_PROC_BY_OID.get(a[0])
    return None if row is None else ("SETOF " if row[6] else "") + format_type(row[2], None)


_NULL_CATALOG_FUNCTIONS = (
    "obj_description", "col_description", "shobj_description", "pg_get_constraintdef",
    "pg_get_serial_sequence", "pg_get_triggerdef", "pg_get_ruledef", "pg_get_partkeydef",
    "pg_get_statisticsobjdef_columns",
)


def _indexdef(a, e):
    """pg_get_indexdef(oid [, column, pretty]) (``catalog.pg_catalog.index_definition``)."""
    from catalog import rbac
    from catalog.pg_catalog import index_definition

    snap = rbac.statement_catalog()
    if snap is None or a[0] is None:
        return None
    return index_definition(snap, a[0], a[1] if len(a) > 1 and a[1] is not None else 0)


def _set_config(a, e):
    """set_config(name, value, is_local): SET name = value (a NULL value: RESET), then
    the variable's new value (PostgreSQL 9.27.1). ``is_local`` is taken like SET LOCAL,
    which sqlfront treats as SET (``sqlfront.sequence.vars``)."""
    name, value = a[0], a[1]
    if name is None:
        raise SqlError("22023", "SET requires parameter name")
    session = _SESSION_VARS.get()
    if session is None:
        raise SqlError("0A000", "set_config is not supported here")
    session.set(name, value)
    return session.get(name)


def _typeof_spark(S, a, e):
    return S.F.lit(e.args[0].type.unconstrained().sql())  # regtype shows no typmod


register(
    Function("pg_size_pretty", (sig("numeric", ret="text"),), lambda a, e: pg_size_pretty(a[0]), _size_pretty_spark,
             sql_names=("pg_size_pretty",), doc="9.28.7",
             samples=("pg_size_pretty((k * 100000)::numeric)", "pg_size_pretty(i::int8 * 10239)",
                      "pg_size_pretty(-k::int8 << (k * 11))", "pg_size_pretty(k * 1e17)")),
    Function("format_type", (sig("oid", "int4", ret="text"),), lambda a, e: None if a[0] is None else
             format_type(a[0], a[1]), None, sql_names=("format_type",), strict=False, doc="9.26",
             samples=("format_type(23, null)",)),
    Function("pg_typeof", (sig("any", ret="text"),), lambda a, e: e.args[0].type.unconstrained().sql(), _typeof_spark,
             sql_names=("pg_typeof",), strict=False, volatility="stable", doc="9.26",
             samples=("pg_typeof(i)", "pg_typeof(n)", "pg_typeof(s)", "pg_typeof(d)", "pg_typeof(a)"),
             differs="returns text rather than regtype (same text)"),
    Function("current_setting", (sig("text", ret="text"), sig("text", "bool", ret="text")), _current_setting,
             None, sql_names=("current_setting",), volatility="stable", doc="9.27.1",
             samples=("current_setting('standard_conforming_strings')",)),
    Function("pg_get_indexdef", (sig("oid", ret="text"), sig("oid", "int4", "bool", ret="text")), _indexdef, None,
             sql_names=("pg_get_indexdef",), strict=False, volatility="stable", doc="9.27",
             differs="Materialize's text: USING arrangement, the relation's name unqualified; computed in "
                     "Python only (it reads the catalog)"),
    Function("set_config", (sig("text", "text", "bool", ret="text"),), _set_config, None,
             sql_names=("set_config",), strict=False, volatility="volatile", doc="9.27.1",
             samples=("set_config('application_name', 'fx', false)",
                      "set_config('standard_conforming_strings', 'on', true)"),
             differs="changes the session: runs in Python only (0A000 on table data); is_local is taken as SET "
                     "LOCAL, which lasts for the session here"),
    # text::regtype of a computed string (a literal's is looked up at plan time, planner.expr)
    Function("regtypein", (sig("text", ret="oid"),), lambda a, e: regtype_in(a[0]), None, volatility="stable",
             doc="8.19", samples=("('int' || 'eger')::regtype::oid", "lower('INT8')::regtype::oid",
                                  "(s || '')::regtype::oid"),
             differs="computed in Python only: 0A000 on table data"),
    Function("pg_backend_pid", (sig(ret="int4"),), lambda a, e: os.getpid(), None, sql_names=("pg_backend_pid",),
             volatility="stable", doc="9.26", samples=("pg_backend_pid() > 0",),
             differs="the server process id, the same for every connection"),
    # psql's \df reads these (its "Argument data types" and "Result data type" columns)
    Function("pg_get_function_arguments", (sig("oid", ret="text"),), _function_arguments, None,
             sql_names=("pg_get_function_arguments", "pg_get_function_identity_arguments"),
             volatility="stable", doc="9.27",
             differs="the registry's signatures (argument names, defaults and VARIADIC are not kept)"),
    Function("pg_get_function_result", (sig("oid", ret="text"),), _function_result, None,
             sql_names=("pg_get_function_result",), volatility="stable", doc="9.27"),
    Function("pg_function_is_visible", (sig("oid", ret="bool"),), lambda a, e: True, None,
             sql_names=("pg_function_is_visible",), strict=False, volatility="stable", doc="9.26"),
    Function("pg_encoding_to_char", (sig("int4", ret="text"),), lambda a, e: "UTF8", None,
             sql_names=("pg_encoding_to_char",), strict=False, volatility="stable", doc="9.27"),
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
               lambda a, e: None, None, sql_names=(n,), strict=False, volatility="stable", doc="9.27")
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


def _txid_args(args: list) -> list:
    """txid_current() is the statement's start time in microseconds since 1970: an int8
    that grows from one statement to the next (sqlfront has no transaction ids), fixed
    at plan time."""
    if args:
        return args  # no signature takes arguments: 42883
    from catalog.types import INT8
    from planner.expr import statement_time
    from planner.scalar import Literal

    t = statement_time()
    return [Literal(int(t.timestamp()) * 1_000_000 + t.microsecond, INT8)]


register(
    Function("pg_client_encoding", (sig(ret="name"),), lambda a, e: "UTF8", lambda S, a, e: S.F.lit("UTF8"),
             sql_names=("pg_client_encoding",), doc="9.4", samples=("pg_client_encoding() || k",)),
    Function("txid_current", (sig("int8", ret="int8"),), lambda a, e: a[0], lambda S, a, e: a[0],
             sql_names=("txid_current", "pg_current_xact_id"), volatility="stable", doc="9.27",
             extra={"plan_args": _txid_args},
             differs="not PostgreSQL's transaction id: a number that grows from statement to statement",
             samples=("txid_current() > k",)),
)
