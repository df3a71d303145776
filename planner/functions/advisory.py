"""Advisory lock functions (PostgreSQL 9.27.10): ``pg_advisory_lock``,
``pg_try_advisory_lock``, ``pg_advisory_unlock``, ``pg_advisory_unlock_all`` and their
``_shared`` and ``xact_`` forms, each with an int8 key or two int4 keys.

They act on the session, so they run in Python only (``extra["session"]``: over table
data in the select list, ``planner.session_split``), given the session
(``extra["with_context"]``: ``ctx.session``), whose ``advisory`` does the work: ``lock(key, shared, xact,
wait) -> bool``, ``unlock(key, shared) -> bool`` and ``unlock_all()``
(``sqlfront.advisory.SessionLocks``, which gives the semantics and the scope). This
module holds no state of its own.
"""

from __future__ import annotations

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED
from planner.functions.registry import Function, register, sig

def _locks(session):
    """``session``'s advisory locks. Raises SqlError 0A000 outside a session."""
    if session is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "advisory lock functions need a session")
    return session.advisory


def _key(args: list) -> tuple:
    """The lock's key: an int8 key and a pair of int4 keys are apart (PostgreSQL's lock
    tag has a field that says which)."""
    return ("8", args[0]) if len(args) == 1 else ("4", args[0], args[1])


_SIGS = {"void": (sig("int8", ret="void"), sig("int4", "int4", ret="void")),
         "bool": (sig("int8", ret="bool"), sig("int4", "int4", ret="bool"))}
_PY_ONLY = ("takes or releases a lock of the session: over table data in the select list only "
            "(planner.session_split), 0A000 elsewhere")


def _entry(name: str, ret: str, call, samples: tuple[str, ...] = ()) -> Function:
    return Function(name, _SIGS[ret], lambda a, e, ctx: call(_locks(ctx.session), _key(a)), None, sql_names=(name,),
                    volatility="volatile", doc="9.27.10", differs=_PY_ONLY, samples=samples,
                    extra={"session": True, "with_context": True})


def _lock(shared: bool, xact: bool, wait: bool):
    def call(locks, key):
        got = locks.lock(key, shared, xact, wait)
        return "" if wait else got  # void's value is '', not NULL
    return call


register(*(
    _entry(f"pg_{'try_' if not wait else ''}advisory_{'xact_' if xact else ''}lock{'_shared' if shared else ''}",
           "void" if wait else "bool", _lock(shared, xact, wait))
    for wait in (True, False) for xact in (False, True) for shared in (False, True)
), _entry("pg_advisory_unlock", "bool", lambda locks, key: locks.unlock(key, False),
          # a lock taken and released in the row: the same answer whatever ran before
          ("pg_try_advisory_lock(k) AND pg_advisory_unlock(k) AND NOT pg_advisory_unlock(k)",
           "pg_try_advisory_lock(k, i) AND pg_advisory_unlock(k, i)")),
   _entry("pg_advisory_unlock_shared", "bool", lambda locks, key: locks.unlock(key, True),
          ("pg_try_advisory_lock_shared(k) AND pg_advisory_unlock_shared(k)",
           ("pg_try_advisory_lock_shared(k, 2) AND pg_try_advisory_lock(k, 2) AND pg_advisory_unlock_shared(k, 2) "
            "AND pg_advisory_unlock(k, 2)"))),
   Function("pg_advisory_unlock_all", (sig(ret="void"),), lambda a, e, ctx: _locks(ctx.session).unlock_all() or "",
            None,
            sql_names=("pg_advisory_unlock_all",), strict=False, volatility="volatile", doc="9.27.10",
            differs=_PY_ONLY, extra={"session": True, "with_context": True}),
)
