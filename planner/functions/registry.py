"""The one registry of SQL functions and operators.

Each function is declared once, as a ``Function`` entry in the module of its family
(``string``, ``math``, ``datetime``, ``json``, ``array``, ``logic``, ``aggregate``,
``window``, ``system``), with:

- its signatures (``Sig``): argument types, result type, PostgreSQL's overload
  resolution with implicit casts (PostgreSQL 10.3, "Functions"), done by ``resolve``;
- strictness (a strict function is NULL when any argument is NULL, and its
  implementation never sees a NULL) and volatility (only immutable and stable calls are
  folded at plan time);
- its Python implementation, which the constant folder (``planner.consteval``) and the
  interpreter (``planner.interpret``) run;
- its Spark lowering: a function ``spark(S, args, call)`` of the lowering toolkit ``S``
  (``spark_exec.lower.Lowerer``: ``S.F`` is ``pyspark.sql.connect.functions``, ``S.T``
  the Spark types, ``S.cast``, ``S.spark_type``, ``S.fail``), of the lowered argument
  columns and of the plan's ``Call``. The planner never imports Spark: it only holds
  these functions, which ``spark_exec.lower`` calls;
- ``samples``: SQL expressions over the columns of the differential suite's table
  (``tests/differential``), from which the suite generates its cases, so a function
  cannot be added untested.

This module owns the entry type, signature matching and the lookup tables, and the
helpers the family modules share. The family modules import it, never the package
(``planner.functions``), which loads them all and is what the rest of the planner reads.
It must not plan SQL syntax (``planner.expr`` does) nor know DataFrames.
"""

from __future__ import annotations

import functools
from decimal import Decimal
from dataclasses import dataclass, field
from typing import Any, Callable

from catalog.errors import SqlError, AMBIGUOUS_FUNCTION, DIVISION_BY_ZERO, UNDEFINED_FUNCTION
from catalog.types import SqlType, TEXT, array_of

#: numeric types in promotion order (PostgreSQL's implicit casts between them)
NUMERIC_ORDER = ("int2", "int4", "int8", "numeric", "float4", "float8")


@dataclass(frozen=True)
class Sig:
    """One signature: ``args`` are type names, or the pseudo-types ``any`` (anything,
    PostgreSQL's "any"), ``anyelement`` / ``anyarray`` (polymorphic, PostgreSQL 38.2.5:
    every use is the same element type) and ``anycompatible`` (common type of the
    arguments). ``result`` is a type name, a pseudo-type, or ``f(arg types) -> SqlType``.
    ``variadic``: the last argument repeats (zero or more times more)."""

    args: tuple[str, ...]
    result: Any
    variadic: bool = False


def sig(*args: str, ret: Any, variadic: bool = False) -> Sig:
    return Sig(tuple(args), ret, variadic)


@dataclass(frozen=True)
class Function:
    """A registry entry. ``name`` is the plan's name (``Call.func`` / ``AggCall.func``);
    ``sql_names`` the names SQL calls it by (empty for operators, reached only through
    ``planner.typing``). ``kind``: scalar, aggregate, window or srf. ``doc``: the
    PostgreSQL documentation section of its rules.

    A set-returning function (``srf``) is its output columns, each an array-valued scalar
    entry over the same arguments (``extra["columns"]``: (column name, entry name) pairs):
    the rows are the arrays' elements side by side (``planner.plan.Unnest``), in the
    select list or in FROM, where its arguments may name columns of the FROM items
    before it (PostgreSQL 7.2.1.4, 9.25)."""

    name: str
    sigs: tuple[Sig, ...]
    py: Callable | None
    spark: Callable | None
    sql_names: tuple[str, ...] = ()
    strict: bool = True
    volatility: str = "immutable"
    kind: str = "scalar"
    doc: str = ""
    samples: tuple[str, ...] = ()
    #: differences from PostgreSQL, deliberate: a reason each (reported by the suite)
    differs: str = ""
    #: True for an aggregate that takes the ORDER BY of WITHIN GROUP (ordered-set)
    ordered_set: bool = False
    #: ``extra`` keys: ``arg_names``/``defaults`` (named arguments, PostgreSQL 4.3),
    #: ``columns`` (a set-returning function's output columns), ``plan_args``
    #: (``list[Expr] -> list[Expr]``: the planner completes the arguments before resolving,
    #: e.g. ``age(ts)`` gets the statement's current_date first), ``plan_args_in`` (the
    #: same, given the statement's ``planner.context.PlanContext`` too), ``session`` (True: it
    #: acts on the session, so a select list calling it is evaluated in the session over
    #: the rows Spark computed: ``planner.session_split``), ``with_context`` (True: its
    #: implementation is ``py(args, call, ctx)`` (an aggregate's ``py(vals, call, params,
    #: ctx)``), given the evaluation's ``planner.context.PlanContext``: its ``session``
    #: (None outside one) and its ``guard`` (``planner.guard.Guard``: the session's text
    #: settings, value limits, what stops it); see ``run_py``), ``row_in_from``
    #: ((columns as (name, SqlType) pairs, ``(argument values, ctx) -> row``, given the
    #: statement's ``PlanContext``): a
    #: function of a record (of the session's state, or computed from its arguments) called
    #: in FROM with constant arguments is that one row, read at plan time:
    #: ``planner.query``), ``result_text``
    #: (``Call -> bool``: on table data, a result column of a query that is such a call is
    #: sent as the text its Python implementation gives per row (``call_text``), not as
    #: its Spark value: a numeric whose scale PostgreSQL derives from each value, which a
    #: Spark decimal column, of one scale, cannot hold; for an aggregate, ``AggCall -> bool``,
    #: with ``spark_text`` (``(S, x, agg) -> string column``: its text per group on Spark)
    #: and ``text_value`` (``(S, text column) -> column``: its Spark value from that text),
    #: the text going up to the result beside the value: ``spark_exec.lower.Lowerer._Reduce``)
    extra: dict = field(default_factory=dict)


#: plan name -> entry
FUNCTIONS: dict[str, Function] = {}
#: SQL name -> entries (scalar functions)
BY_SQL_NAME: dict[str, list[Function]] = {}
#: SQL name -> entry (aggregates)
AGGREGATES: dict[str, Function] = {}
#: SQL name -> entry (window-only functions)
WINDOW_FUNCTIONS: dict[str, Function] = {}
#: SQL name -> entry (set-returning functions: ``kind`` srf)
SET_RETURNING: dict[str, Function] = {}


def register(*entries: Function) -> None:
    """Add entries; a plan name may be declared once only."""
    for f in entries:
        if f.name in FUNCTIONS:
            raise ValueError(f"function {f.name} declared twice")
        FUNCTIONS[f.name] = f
        for n in f.sql_names:
            if f.kind == "aggregate":
                AGGREGATES[n] = f
            elif f.kind == "window":
                WINDOW_FUNCTIONS[n] = f
            elif f.kind == "srf":
                SET_RETURNING[n] = f
            else:
                BY_SQL_NAME.setdefault(n, []).append(f)


def _rank(name: str) -> int | None:
    return NUMERIC_ORDER.index(name) if name in NUMERIC_ORDER else None


def cast_cost(src: SqlType, dst: str) -> float | None:
    """Cost of PostgreSQL's implicit cast from ``src`` to type name ``dst`` (0: same or
    binary-coercible), None if there is no implicit cast (PostgreSQL 10.1, pg_cast with
    castcontext 'i')."""
    s = src.name
    if s == dst:
        return 0
    if s == "unknown":
        # An unknown literal can become any type; prefer the string category (10.3 step 4e).
        return 0.5 if dst == "text" else 1
    if s in ("varchar", "bpchar", "name") and dst == "text":
        return 0.1
    if s == "oid" and dst in ("int8", "numeric", "float8"):
        return 1
    if s in ("int2", "int4", "int8") and dst == "oid":
        return 1.5
    rs, rd = _rank(s), _rank(dst)
    if rs is not None and rd is not None and rs < rd:
        # float8 is the numeric category's preferred type: exp(1), sqrt(2), round(1) are
        # double precision (10.3 step 4d), not numeric
        return 1 if dst == "float8" else 1 + (rd - rs) * 0.01
    if (s, dst) in (("date", "timestamptz"), ("timestamp", "timestamptz")):
        return 0.9  # timestamptz is the preferred type of the datetime category (10.3 step 4d)
    if (s, dst) == ("date", "timestamp"):
        return 1
    return None


def _common(types: list[SqlType]) -> SqlType | None:
    from planner.typing import common_type

    try:
        return common_type(types)
    except SqlError:
        return None


def match(s: Sig, args: list[SqlType]) -> tuple[float, list[SqlType], SqlType] | None:
    """(cost, casts for args, result type) if ``args`` fit signature ``s``, else None."""
    want = list(s.args)
    if s.variadic:
        if len(args) < len(want) - 1:
            return None
        want = want[:-1] + [want[-1]] * (len(args) - len(want) + 1)
    elif len(args) != len(want):
        return None
    poly = [a for a, w in zip(args, want) if w in ("anyelement", "anycompatible")]
    poly += [a.element for a, w in zip(args, want) if w == "anyarray" and a.is_array]
    elem = None
    if poly or "anyarray" in want:
        known = [t for t in poly if t.name != "unknown"]
        elem = _common(known) if known else TEXT
        if elem is None:
            return None
        if "anyelement" in want and len({t.unconstrained() for t in known}) > 1:
            return None  # anyelement admits no casts (PostgreSQL 38.2.5)
    cost, casts = 0.0, []
    for a, w in zip(args, want):
        if w == "any":
            casts.append(TEXT if a.name == "unknown" else a)
            continue
        if w in ("anyelement", "anycompatible"):
            casts.append(elem)
            cost += 0 if a == elem else 0.5
            continue
        if w == "anyarray":
            if not a.is_array and a.name != "unknown":
                return None
            casts.append(array_of(elem))
            continue
        c = cast_cost(a, w)
        if c is None:
            return None
        cost += c
        casts.append(a if c == 0 and a.name == w else SqlType(w))
    r = s.result
    if callable(r):
        result = r(casts)
    elif r == "anyelement" or r == "anycompatible":
        result = elem
    elif r == "anyarray":
        result = array_of(elem)
    else:
        result = SqlType(r)
    return cost, casts, result


def div0() -> SqlError:
    """PostgreSQL's 22012 for a division or modulo by zero (numbers and intervals)."""
    return SqlError(DIVISION_BY_ZERO, "division by zero")


def undefined_function(name: str, args: list[SqlType]) -> SqlError:
    """PostgreSQL's 42883 for a call no signature accepts."""
    return SqlError(
        UNDEFINED_FUNCTION,
        f"function {name}({', '.join(a.sql() for a in args)}) does not exist",
        hint="No function matches the given name and argument types. You might need to add explicit type casts.",
    )


def resolve(entries: list[Function], sql_name: str, args: list[SqlType],
            shown: list[SqlType] | None = None) -> tuple[Function, list[SqlType], SqlType]:
    """The entry and signature ``sql_name(args)`` calls: the cheapest implicit casts win
    (PostgreSQL 10.3: exact match, then fewest and preferred casts).

    Raises:
        SqlError 42883 when no signature fits; 42725 when two fit equally well; their
        messages name the types ``shown`` (default ``args``): PostgreSQL names the
        arguments written, not the defaults or those the planner adds.
    """
    shown = args if shown is None else shown
    best = []
    for f in entries:
        for s in f.sigs:
            m = match(s, args)
            if m is not None:
                best.append((m[0], f, m[1], m[2]))
    if not best:
        raise undefined_function(sql_name, shown)
    best.sort(key=lambda b: b[0])
    cost, f, casts, result = best[0]
    if len(best) > 1 and best[1][0] == cost and (best[1][1], best[1][2]) != (f, casts):
        raise SqlError(AMBIGUOUS_FUNCTION, f"function {sql_name}({', '.join(a.sql() for a in shown)}) is not unique",
                       hint="Could not choose a best candidate function. You might need to add explicit type casts.")
    return f, casts, result


def resolve_scalar(sql_name: str, args: list[SqlType],
                   shown: list[SqlType] | None = None) -> tuple[Function, list[SqlType], SqlType] | None:
    """Resolve a scalar function call by its SQL name (``resolve``); None when no entry
    has the name."""
    entries = BY_SQL_NAME.get(sql_name)
    if not entries:
        return None
    return resolve(entries, sql_name, args, shown)


def constant_arg(call, i: int, what: str):
    """The value of argument ``i`` of plan ``Call`` ``call``, which a Spark lowering
    needs constant (a format, a pattern, a step).

    Raises:
        SqlError 0A000 ("``what`` needs a constant ... on table data") when it is not."""
    x = call.args[i]
    if x.__class__.__name__ != "Literal":
        from catalog.errors import FEATURE_NOT_SUPPORTED

        raise SqlError(FEATURE_NOT_SUPPORTED, f"{what} on table data")
    return x.value


#: the type of a lookup table argument (``lookup_args``): PostgreSQL's ``internal``
#: pseudo-type, which SQL cannot write
INTERNAL = SqlType("internal")


def lookup_args(name: str, build: Callable[[list, Any], dict | None]) -> Callable[[list, Any], list]:
    """A ``plan_args_in`` for entry ``name`` whose answers come from the catalog or the
    session (privileges, role names, settings): the planner appends a last argument of
    type ``internal``, a lookup table ``build(args, ctx)`` computed at plan time from the
    statement (``ctx``: its ``planner.context.PlanContext``) and its catalog (JSON text
    of a ``{str: str}`` dict; NULL outside a session).
    The interpreter reads it with ``lookup_table`` and Spark with ``lookup_map``, by the
    same keys, so the two paths give the same answers on table data. Calls no signature
    fits (with the table) are left alone: their 42883 names the call's own arguments."""
    import json

    def plan_args_in(args: list, ctx) -> list:
        from planner.scalar import Literal

        types = [a.type for a in args] + [INTERNAL]
        if not any(match(s, types) for s in FUNCTIONS[name].sigs):
            return args
        table = build(args, ctx)
        return [*args, Literal(None if table is None else json.dumps(table, sort_keys=True), INTERNAL)]
    return plan_args_in


@functools.lru_cache(maxsize=16)
def _decode(text: str) -> dict:
    import json

    return json.loads(text)


def lookup_table(value: str | None, what: str = "this function") -> dict:
    """The interpreter's view of a ``lookup_args`` table argument.

    Raises:
        SqlError 0A000 outside a session (no catalog to read)."""
    if value is None:
        from catalog.errors import FEATURE_NOT_SUPPORTED

        raise SqlError(FEATURE_NOT_SUPPORTED, f"{what} needs a session")
    return _decode(value)


def lookup_map(S, column):
    """Spark's view of a ``lookup_args`` table argument (its lowered column): a
    ``map<string,string>`` column, indexed by the same keys as ``lookup_table``."""
    return S.F.from_json(column, "map<string,string>")


def static_map(S, table: dict[str, str]):
    """A ``map<string,string>`` Spark column of a table known without a session (static
    catalog data: the registry's pg_proc rows, the types), read like ``lookup_map``."""
    import json

    return lookup_map(S, S.F.lit(json.dumps(table, sort_keys=True)))


#: ``extra`` of an entry whose implementation takes the evaluation's context (``run_py``)
IN_CONTEXT = {"with_context": True}


def run_py(f: Function, ctx, *args):
    """``f``'s Python implementation over ``args`` (``(values, call)``, an aggregate's
    ``(values, call, params)``), given the evaluation's context ``ctx``
    (``planner.context.PlanContext``) when it takes one (``extra["with_context"]``)."""
    return f.py(*args, ctx) if f.extra.get("with_context") else f.py(*args)


def call_text(call, values: tuple, error_prefix: str) -> str | None:
    """PostgreSQL's text of the plan ``Call`` ``call`` over argument ``values`` (Python
    values of its arguments' types), by its registry entry's Python implementation, or
    its error as ``error_prefix`` + ``"SQLSTATE: message"``; None for a NULL result.

    This is what a Spark replica runs, row by row, for an entry whose Spark lowering is a
    Python UDF (``spark_exec.lower.Lowerer.python_text``): the same definition as the
    interpreter's, so the two paths cannot drift apart."""
    from catalog.textio import format_text, parse_jsonb, parse_timetz
    from catalog.types import Interval

    f = FUNCTIONS[call.func]
    if f.strict and any(v is None for v in values):
        return None
    # the values as the interpreter has them, from Spark's forms (``spark_exec.lower.spark_type``):
    # timetz and jsonb as their text, an interval as its (months, days, micros) fields, an
    # unconstrained numeric as its text at its display scale (or as a decimal)
    convert = {"timetz": parse_timetz, "jsonb": parse_jsonb,
               "interval": lambda v: Interval(v["months"], v["days"], v["micros"]),
               "numeric": lambda v: Decimal(v) if isinstance(v, str) else v}
    values = [v if v is None or a.type.name not in convert else convert[a.type.name](v)
              for v, a in zip(values, call.args)]
    from planner.context import NO_STATEMENT

    try:
        r = run_py(f, NO_STATEMENT, values, call)  # on a replica: no session, environmentd's limits
    except SqlError as err:
        return f"{error_prefix}{err.sqlstate}: {err.message}"
    return None if r is None else format_text(r, call.type)


def by_python(S, a, e):
    """The Spark lowering of an entry Spark has no function of PostgreSQL's answers for:
    the entry's Python implementation runs on the replica, row by row (a Python UDF:
    ``Lowerer.python_text``, through ``call_text``), and its text is cast to the result
    type on Spark. Slower than Spark's own functions (rows cross to a Python worker as
    Arrow batches), so only where none of them agrees with PostgreSQL."""
    return S.cast(S.python_text(e, a), S.TEXT, e.type)


def get(name: str) -> Function | None:
    """The entry with plan name ``name``."""
    return FUNCTIONS.get(name)


#: pg_proc OIDs of the registry's functions start here (PostgreSQL's own system objects
#: are below 10000; user objects here start at 20000)
PROC_OID_BASE = 10000


def _type_oid(name: str) -> int:
    """The OID of a registry type name or pseudo-type (``anyelement``, ``any``)."""
    from catalog.pg_catalog import PSEUDO_TYPE_OIDS

    return PSEUDO_TYPE_OIDS.get(name) or SqlType(name).oid


def pg_proc_rows() -> list[tuple]:
    """One pg_proc row per SQL name and signature of the registry, so that psql (``\\df``,
    tab completion) and tools see the functions: (oid, proname, prorettype, proisagg,
    proiswindow, prokind, proretset, pronargs, proargtypes), in name order with stable
    OIDs from ``PROC_OID_BASE``. A result computed from the arguments shows as anyelement
    (an aggregate's signature, which has no argument list, as one argument of type any).
    A variadic signature lists its repeated argument once (PostgreSQL: VARIADIC and an
    array of it)."""
    out = []
    for oid, sql_name, f, s in proc_entries():
        result = getattr(s, "result", None)  # an aggregate's AggSig computes it
        ret = _type_oid(result) if isinstance(result, str) else _type_oid("anyelement")
        args = [_type_oid(a) for a in getattr(s, "args", ("any",))]
        kind = {"aggregate": "a", "window": "w"}.get(f.kind, "f")
        out.append((oid, sql_name, ret, kind == "a", kind == "w", kind, f.kind == "srf", len(args), args))
    return out


def proc_entries() -> list[tuple]:
    """(pg_proc OID, SQL name, entry, signature) of each row ``pg_proc_rows`` shows."""
    entries = sorted({(n, f.name): f for f in FUNCTIONS.values() for n in f.sql_names}.items())
    return [(PROC_OID_BASE + i, sql_name, f, s)
            for i, (sql_name, f, s) in enumerate((n, f, s) for (n, _), f in entries for s in f.sigs)]

