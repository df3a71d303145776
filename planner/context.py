"""What a statement's plans and evaluations take from the statement: its start time, its
read timestamp, its session and its evaluation guard.

The session builds one ``PlanContext`` per statement (``sqlfront.session``) and hands it to
every planner of that statement (``QueryPlanner(ctx=...)``), so ``now()`` is one value
throughout a statement, as PostgreSQL's ``statement_timestamp()`` (9.9.5), and
``mz_now()`` is the timestamp the statement reads at (Materialize's ``mz_now``). The
same object is what an evaluation in Python runs in (``planner.consteval.evaluate``,
``planner.interpret.run``): the function implementations that need the session or the
guard are given it (registry ``extra["with_context"]``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Callable

from planner.guard import INLINE, Guard

#: ``PlanContext.mz_now`` of a query kept current (a materialized view, a SUBSCRIBE):
#: ``mz_now()`` is each moment's time, not one, so it stays a call (``mz_now``), which
#: only a temporal filter may hold (``planner.incremental.temporal``)
MAINTAINED = object()


@dataclasses.dataclass(frozen=True)
class PlanContext:
    """``now``: the statement's start (an aware UTC datetime): ``now()``,
    ``current_timestamp``, ``current_date``, ``age(ts)``, ``txid_current()``.
    ``mz_now``: what ``mz_now()`` is: ``() -> int`` (the statement's read timestamp,
    called when planned), ``MAINTAINED``, or None where there is none (0A000).
    ``session``: the session running the statement, which the functions that act on it
    read (registry ``extra["with_context"]``; ``planner.consteval.evaluate``) and
    whose state some plan-time lookups read (``plan_args_in``): it has ``sequences``
    (``sqlfront.sequence.sequences.SessionSequences``), ``vars``
    (``sqlfront.vars.SessionVars``), ``catalog`` and the backend's
    attributes (``planner.functions.backend``). None outside a session (a maintained
    query): those functions raise 0A000, or answer without it.
    ``guard``: what its evaluations in Python may do (``planner.guard.Guard``: heap
    budget, what stops them, the session's DateStyle, TimeZone and IntervalStyle);
    ``INLINE`` outside a session.
    ``indexed_views``: ids of the views whose index the statement's peek reads instead
    of the view's query (Materialize's optimizer reads an index's arrangement for a
    ``Get`` of an indexed view): such a view plans as a ``Get`` of itself, which only
    the peek's lowering knows how to read (``spark_exec.dataflow.Contents``)."""

    now: dt.datetime
    mz_now: Callable[[], int] | object | None = None
    session: Any = None
    guard: Guard = INLINE
    indexed_views: frozenset = frozenset()

    @classmethod
    def starting(cls, mz_now=None, session=None, guard: Guard = INLINE) -> PlanContext:
        """A statement of ``session`` starting now, with ``mz_now`` and ``guard``."""
        return cls(dt.datetime.now(dt.timezone.utc), mz_now, session, guard)

    def catalog(self):
        """The catalog snapshot the statement's catalog functions read (privileges, role
        names: ``has_table_privilege``, ``pg_get_userbyid``, ``current_user``): its
        session's (``session.catalog``: the latest, or its transaction block's, scoped to
        its search_path and roles); None outside a session."""
        return None if self.session is None else self.session.catalog

    def with_mz_now(self, mz_now) -> PlanContext:
        """The same statement with ``mz_now()`` being ``mz_now`` (an AS OF read, a
        maintained query)."""
        return dataclasses.replace(self, mz_now=mz_now)

    def with_indexed_views(self, views: frozenset) -> PlanContext:
        """The same statement reading the indexes of ``views`` (ids) for them."""
        return dataclasses.replace(self, indexed_views=frozenset(views))

    def with_guard(self, guard: Guard) -> PlanContext:
        """The same statement, its evaluations under ``guard``."""
        return dataclasses.replace(self, guard=guard)


#: where an evaluation outside any statement runs (a webhook's CHECK, a replica's Python
#: UDF, a unit test): no session, ``INLINE`` guard; its ``now`` (the Unix epoch) is never
#: read, as evaluation takes its times from the plan
NO_STATEMENT = PlanContext(dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc))
