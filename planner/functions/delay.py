"""Delaying execution (PostgreSQL 9.9.6): ``pg_sleep(seconds)``, ``pg_sleep_for(interval)``,
``pg_sleep_until(timestamptz)``.

They wait in the session, not on a replica (``extra["session"]``: over table data the
select list runs in the session over the rows Spark computed, ``planner.session_split``):
a sleeping Spark task would hold a replica's task slot. The wait looks at the statement's
timeout and cancel flag every few milliseconds (the evaluation's ``Guard.check_stop``: 57014), as
PostgreSQL's pg_sleep checks for interrupts while it waits.
"""

from __future__ import annotations

import datetime as dt
import math
import time

from planner.functions.registry import Function, register, sig
from planner.guard import Guard

#: the longest single wait between two looks at the statement's timeout and cancel flag
_STEP_S = 0.05


def sleep(seconds: float, guard: Guard) -> str:
    """Wait ``seconds`` (nothing for a negative or NaN one); void's value ''. ``guard``:
    the evaluation's, whose ``stop`` is the statement's timeout and cancel flag.

    Raises:
        SqlError 57014 when the statement's timeout passes or it is canceled meanwhile."""
    end = time.monotonic() + (seconds if seconds > 0 else 0)  # NaN > 0 is false: no wait
    while True:
        guard.check_stop()
        left = end - time.monotonic()
        if left <= 0 or math.isnan(left):
            return ""
        time.sleep(min(left, _STEP_S))


def _sleep_for(a, e, ctx):
    """pg_sleep_for(interval): until now plus the interval (PostgreSQL: clock_timestamp() +
    $1, so months and days count on the calendar)."""
    from planner.functions.datetime import add_interval

    now = dt.datetime.now(dt.timezone.utc)
    return sleep((add_interval(now, a[0]) - now).total_seconds(), ctx.guard)


def _sleep_until(a, e, ctx):
    """pg_sleep_until(timestamptz): until then; a time past or -infinity: no wait."""
    from catalog.types import FarTimestamp

    until = a[0]
    if isinstance(until, FarTimestamp):  # infinity (sleeps until the timeout), -infinity, years past 9999
        return sleep(-1 if until.micros < 0 else math.inf, ctx.guard)
    return sleep((until - dt.datetime.now(dt.timezone.utc)).total_seconds(), ctx.guard)


_IN_SESSION = ("waits in the session, not on a replica: over table data in the select list only "
               "(planner.session_split), 0A000 elsewhere")

register(
    Function("pg_sleep", (sig("float8", ret="void"),), lambda a, e, ctx: sleep(a[0], ctx.guard), None, sql_names=("pg_sleep",),
             volatility="volatile", doc="9.9.6", differs=_IN_SESSION, extra={"session": True, "with_context": True},
             samples=("pg_sleep(0)", "pg_sleep(-1)", "pg_sleep(CASE WHEN k = 1 THEN 0.01 END)")),
    Function("pg_sleep_for", (sig("interval", ret="void"),), _sleep_for, None, sql_names=("pg_sleep_for",),
             volatility="volatile", doc="9.9.6", differs=_IN_SESSION, extra={"session": True, "with_context": True},
             samples=("pg_sleep_for('0 seconds')", "pg_sleep_for(interval '-1 day')")),
    Function("pg_sleep_until", (sig("timestamptz", ret="void"),), _sleep_until, None, sql_names=("pg_sleep_until",),
             volatility="volatile", doc="9.9.6", differs=_IN_SESSION, extra={"session": True, "with_context": True},
             samples=("pg_sleep_until('2000-01-01 00:00:00+00')", "pg_sleep_until('-infinity')")),
)
