"""Sequence manipulation functions (PostgreSQL 9.17): ``nextval``, ``currval``,
``setval``, ``lastval``; and PostgreSQL's ``pg_sequence_last_value`` (behind
``pg_sequences.last_value``), ``pg_sequence_parameters`` and ``pg_get_sequence_data``
(records, as their text).

The planner turns the sequence argument (``'s'``, ``'s'::regclass``) into the
sequence's OID at plan time (``planner.expr``); the calls here take that OID. They
change or read state outside the plan, so they are volatile (never folded) and run in
Python only, given the session (registry ``extra["with_context"]``: ``ctx.session``), whose ``sequences``
does the work: methods ``nextval(oid) -> int``, ``currval(oid) -> int``, ``setval(oid,
value, is_called) -> int``, ``lastval() -> int``, ``last_value(oid) -> int | None``,
``parameters(oid) -> tuple``, ``data(oid) -> (last_value, is_called)`` and ``state(oid) ->
(last_value, is_called)`` (``sqlfront.sequence.sequences.SessionSequences``). This module holds no
state of its own.
"""

from __future__ import annotations

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED
from planner.functions.registry import Function, register, sig

#: SQL names of the functions whose first argument names a sequence (a regclass)
SEQUENCE_ARG_FUNCTIONS = ("nextval", "currval", "setval")


def _access(session):
    """``session``'s sequences. Raises SqlError 0A000 outside a session."""
    if session is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "sequence functions are not supported here")
    return session.sequences


def sequence_relation(q, session) -> tuple[tuple, tuple]:
    """``SELECT * FROM seq``: its columns and its one row, as PostgreSQL 9.5 (the version
    reported to clients, so psql's ``\\d seq`` reads them) shows a sequence relation:
    sequence_name, last_value, start_value, increment_by, max_value, min_value,
    cache_value, log_cnt, is_cycled, is_called. ``q`` is a ``catalog.snapshot.Sequence``;
    ``session`` the reading session (``planner.context.PlanContext.session``)."""
    from catalog.pg_catalog import object_oid
    from catalog.types import BOOL, INT8, TEXT

    last, called = _access(session).state(object_oid(q.id))
    cols = (("sequence_name", TEXT), ("last_value", INT8), ("start_value", INT8), ("increment_by", INT8),
            ("max_value", INT8), ("min_value", INT8), ("cache_value", INT8), ("log_cnt", INT8),
            ("is_cycled", BOOL), ("is_called", BOOL))
    return cols, (q.name, last, q.start, q.increment, q.maxvalue, q.minvalue, q.cache, 0, q.cycle, called)


_PY_ONLY = ("runs in the session (it changes state outside the query): over table data in the select list only "
            "(planner.session_split), 0A000 elsewhere")

#: they act on the session (``planner.session_split``) and are given it
_IN_SESSION = {"session": True, "with_context": True}


def _columns(*cols: tuple[str, str]) -> tuple:
    from catalog.types import SqlType

    return tuple((n, SqlType(t)) for n, t in cols)


#: the OUT columns of pg_sequence_parameters and pg_get_sequence_data, which a call in FROM
#: has (``planner.query``'s ``row_in_from``: read once, at plan time, as ``SELECT * FROM seq``)
_PARAMETER_COLUMNS = _columns(("start_value", "int8"), ("minimum_value", "int8"), ("maximum_value", "int8"),
                              ("increment", "int8"), ("cycle_option", "bool"), ("cache_size", "int8"),
                              ("data_type", "oid"))
_DATA_COLUMNS = _columns(("last_value", "int8"), ("is_called", "bool"))

register(
    Function("nextval", (sig("oid", ret="int8"),), lambda a, e, ctx: _access(ctx.session).nextval(a[0]), None,
             sql_names=("nextval",), volatility="volatile", doc="9.17", differs=_PY_ONLY, extra=dict(_IN_SESSION)),
    Function("currval", (sig("oid", ret="int8"),), lambda a, e, ctx: _access(ctx.session).currval(a[0]), None,
             sql_names=("currval",), volatility="volatile", doc="9.17", differs=_PY_ONLY, extra=dict(_IN_SESSION)),
    Function("lastval", (sig(ret="int8"),), lambda a, e, ctx: _access(ctx.session).lastval(), None,
             sql_names=("lastval",), volatility="volatile", doc="9.17", differs=_PY_ONLY, extra=dict(_IN_SESSION)),
    Function("setval", (sig("oid", "int8", ret="int8"), sig("oid", "int8", "bool", ret="int8")),
             lambda a, e, ctx: _access(ctx.session).setval(a[0], a[1], True if len(a) < 3 else a[2]), None,
             sql_names=("setval",), volatility="volatile", doc="9.17", differs=_PY_ONLY, extra=dict(_IN_SESSION)),
    # no state change: in the session because the value lives there, not in the plan
    Function("pg_sequence_last_value", (sig("oid", ret="int8"),),
             lambda a, e, ctx: _access(ctx.session).last_value(a[0]), None, sql_names=("pg_sequence_last_value",),
             volatility="volatile", doc="9.27", differs=_PY_ONLY, extra=dict(_IN_SESSION),
             samples=("pg_sequence_last_value('fx_t'::regclass::oid)",)),
    Function("pg_sequence_parameters", (sig("oid", ret="record"),),
             lambda a, e, ctx: _record(_access(ctx.session).parameters(a[0])), None,
             sql_names=("pg_sequence_parameters",), volatility="volatile", doc="9.27", differs=_PY_ONLY,
             extra=dict(_IN_SESSION, row_in_from=(_PARAMETER_COLUMNS,
                                                  lambda a, ctx: _access(ctx.session).parameters(a[0]))),
             samples=("pg_sequence_parameters('fx_t'::regclass::oid)",)),
    Function("pg_get_sequence_data", (sig("oid", ret="record"),),
             lambda a, e, ctx: _record(_access(ctx.session).data(a[0])), None,
             sql_names=("pg_get_sequence_data",), volatility="volatile", doc="9.27", differs=_PY_ONLY,
             extra=dict(_IN_SESSION, row_in_from=(_DATA_COLUMNS, lambda a, ctx: _access(ctx.session).data(a[0]))),
             samples=("pg_get_sequence_data('fx_t'::regclass::oid)", "pg_get_sequence_data(k::oid)")),
)


def _record(fields: tuple) -> str:
    """A record's text of int and bool fields (bool as boolout's t/f)."""
    from planner.functions.logic import record_text

    return record_text(None if v is None else ("t" if v else "f") if isinstance(v, bool) else str(v) for v in fields)
