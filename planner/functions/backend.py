"""The session's backend process id and the server signaling functions (PostgreSQL
9.26 ``pg_backend_pid``, 9.27.2 ``pg_cancel_backend``, ``pg_terminate_backend``).

A session here is a thread of environmentd, not a process: its "backend pid" is the
process id of its connection's cancel key (BackendKeyData), the id
``mz_internal.mz_sessions.connection_id`` shows and a CancelRequest names. The session
sets, per statement, the object that knows it (``set_backend``): one with ``pid`` (int)
and ``signal(pid, terminate, timeout_ms) -> bool``
(``sqlfront.session.Session``). This module holds no state of its own.
"""

from __future__ import annotations

import contextvars

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE
from planner.functions import Function, register, sig

_BACKEND: contextvars.ContextVar = contextvars.ContextVar("backend", default=None)


def set_backend(backend) -> None:
    """Let this statement's (and thread's) backend functions use ``backend``."""
    _BACKEND.set(backend)


def _pid_args(args: list) -> list:
    """pg_backend_pid() is fixed for the session: the planner passes it as the call's
    argument, so Spark and the interpreter give the same number on table data (0 for a
    session without a connection, the console's)."""
    if args:
        return args  # no signature takes arguments: 42883
    from catalog.types import INT4
    from planner.scalar import Literal

    backend = _BACKEND.get()
    return [Literal(0 if backend is None else backend.pid, INT4)]


def _signal(pid: int, terminate: bool, timeout_ms: int = 0) -> bool:
    """Signal session ``pid`` (PostgreSQL's pg_signal_backend, signalfuncs.c).

    Raises:
        SqlError 22023 for a negative timeout; 42501 when the current role may not
        signal that session; 0A000 outside a session."""
    if timeout_ms < 0:
        raise SqlError(INVALID_PARAMETER_VALUE, '"timeout" must not be negative')
    backend = _BACKEND.get()
    if backend is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "server signaling functions need a session")
    return backend.signal(pid, terminate, timeout_ms)


_PY_ONLY = ("signals another session from environmentd: runs in Python only (over constants and system tables "
            "such as mz_sessions; 0A000 over a user table's rows, which replicas read)")

register(
    Function("pg_backend_pid", (sig("int4", ret="int4"),), lambda a, e: a[0], lambda S, a, e: a[0],
             sql_names=("pg_backend_pid",), volatility="stable", doc="9.26", extra={"plan_args": _pid_args},
             samples=("pg_backend_pid() > 0",),
             differs="the connection's cancel-key process id (mz_sessions.connection_id), not an OS process"),
    Function("pg_cancel_backend", (sig("int4", ret="bool"),), lambda a, e: _signal(a[0], False), None,
             sql_names=("pg_cancel_backend",), volatility="volatile", doc="9.27.2", differs=_PY_ONLY),
    Function("pg_terminate_backend", (sig("int4", "int8", ret="bool"),),
             lambda a, e: _signal(a[0], True, a[1]), None, sql_names=("pg_terminate_backend",),
             volatility="volatile", doc="9.27.2", differs=_PY_ONLY,
             extra={"arg_names": ("pid", "timeout"), "defaults": (0,)}),
)
