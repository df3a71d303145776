"""The session's backend: its process id and connection (PostgreSQL 9.26
``pg_backend_pid``, ``current_query``, ``system_user``, ``inet_client_port``,
``inet_server_port``, ``pg_postmaster_start_time``, ``pg_conf_load_time``) and the server
signaling functions (9.27.2 ``pg_cancel_backend``, ``pg_terminate_backend``).

A session here is a thread of environmentd, not a process: its "backend pid" is the
process id of its connection's cancel key (BackendKeyData), the id
``mz_internal.mz_sessions.connection_id`` shows and a CancelRequest names. The
statement's session (``planner.context.PlanContext.session``, ``sqlfront.session.Session``)
knows it: ``pid`` (int), ``query``, ``system_user`` (text or None), ``client_port``,
``server_port`` (int or None), ``started_at`` (an aware datetime) and ``signal(pid,
terminate, timeout_ms) -> bool``. This module holds no state of its own.
"""

from __future__ import annotations

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE
from planner.functions.registry import Function, register, sig

def _session_value(attr: str, type_name: str, default=None):
    """A ``plan_args_in`` for a function of no arguments whose answer is fixed for the
    statement: its session's ``attr`` (``default`` outside a session), passed as the
    call's argument, so Spark and the interpreter give the same value on table data."""

    def plan_args_in(args: list, ctx) -> list:
        if args:
            return args  # no signature takes arguments: 42883
        from catalog.types import SqlType
        from planner.scalar import Literal

        backend = ctx.session
        return [Literal(default if backend is None else getattr(backend, attr), SqlType(type_name))]
    return plan_args_in


def _session_function(name: str, attr: str, type_name: str, doc: str, samples: tuple[str, ...], default=None,
                      differs: str = "") -> Function:
    """An entry ``name()`` answering the backend's ``attr`` (``_session_value``)."""
    return Function(name, (sig(type_name, ret=type_name),), lambda a, e: a[0], lambda S, a, e: a[0],
                    sql_names=(name,), strict=False, volatility="stable", doc=doc, samples=samples, differs=differs,
                    extra={"plan_args_in": _session_value(attr, type_name, default)})


def _signal(backend, pid: int, terminate: bool, timeout_ms: int = 0) -> bool:
    """Signal session ``pid`` from session ``backend`` (PostgreSQL's pg_signal_backend,
    signalfuncs.c).

    Raises:
        SqlError 22023 for a negative timeout; 42501 when the current role may not
        signal that session; 0A000 outside a session."""
    if timeout_ms < 0:
        raise SqlError(INVALID_PARAMETER_VALUE, '"timeout" must not be negative')
    if backend is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "server signaling functions need a session")
    return backend.signal(pid, terminate, timeout_ms)


_PY_ONLY = ("signals another session from environmentd: over a user table's rows in the select list only "
            "(planner.session_split), 0A000 elsewhere")

register(
    # 0 for a session without a connection (the console's)
    _session_function("pg_backend_pid", "pid", "int4", "9.26", ("pg_backend_pid() > 0",), 0,
                      "the connection's cancel-key process id (mz_sessions.connection_id), not an OS process"),
    _session_function("current_query", "query", "text", "9.26",
                      ("current_query() LIKE 'SELECT k, %current_query()%FROM fx_t ORDER BY k'",)),
    # "method:identity"; NULL when the session did not authenticate (PostgreSQL's trust)
    _session_function("system_user", "system_user", "text", "9.26", ("system_user IS NULL",)),
    # NULL without a TCP connection (PostgreSQL: over a Unix socket)
    _session_function("inet_client_port", "client_port", "int4", "9.26", ("inet_client_port() > 0",)),
    _session_function("inet_server_port", "server_port", "int4", "9.26", ("inet_server_port() > 0",)),
    # environmentd reads its configuration (flags) once, when it starts
    _session_function("pg_postmaster_start_time", "started_at", "timestamptz", "9.26",
                      ("pg_postmaster_start_time() <= now()",)),
    _session_function("pg_conf_load_time", "started_at", "timestamptz", "9.26", ("pg_conf_load_time() <= now()",)),
    Function("pg_cancel_backend", (sig("int4", ret="bool"),), lambda a, e, ctx: _signal(ctx.session, a[0], False),
             None, sql_names=("pg_cancel_backend",), volatility="volatile", doc="9.27.2", differs=_PY_ONLY,
             extra={"session": True, "with_context": True}),
    Function("pg_terminate_backend", (sig("int4", "int8", ret="bool"),),
             lambda a, e, ctx: _signal(ctx.session, a[0], True, a[1]), None, sql_names=("pg_terminate_backend",),
             volatility="volatile", doc="9.27.2", differs=_PY_ONLY,
             extra={"arg_names": ("pid", "timeout"), "defaults": (0,), "session": True, "with_context": True}),
)
