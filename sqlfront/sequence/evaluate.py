"""Evaluating a plan in Python (the fast path's, a subscription's filter, an AS OF
expression) under the running statement's bounds: its deadline and cancel flag
(``s.statement``) and max_query_heap_size; here while the work stays small, else in a
worker process (``sqlfront.pyworker``) that a timeout or cancel stops at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from planner import interpret
from catalog.errors import SqlError
from planner.guard import Outgrown
from planner.session_split import plan_acts_on_session
from sqlfront.pyworker import INLINE_HEAP_BYTES

if TYPE_CHECKING:
    from sqlfront.session import Session


def evaluate(s: Session, plan) -> list[tuple]:
    """Evaluate a fast-path plan in Python, under the statement's deadline
    (``s.statement``), cancel flag and max_query_heap_size: here while it stays small and its time is
    bounded by its size (``planner.guard``), else again in a worker process
    (``sqlfront.pyworker``) so that big or runaway work does not stall the other
    sessions and a timeout or cancel stops it at once."""
    return evaluate_over(s, plan, s.builtin_rows,
                         lambda: {t.id: list(s.builtin_rows(t)) for t in interpret.builtins_read(plan)})


def evaluate_over(s: Session, plan, rows_of: Callable, tables: Callable[[], dict[str, list[tuple]]]) -> list[tuple]:
    """:func:`evaluate` for a plan whose relations' rows are at hand: ``rows_of(relation)``
    gives them here, ``tables()`` (relation id -> rows) for a worker process. (A
    subscription's filter over the rows persist delivered; an AS OF expression.)

    Raises:
        SqlError 57014 (the statement's deadline, ``s.statement``; a cancel), 53200
        (max_query_heap_size), and the plan's own errors."""
    deadline = s.statement.deadline
    budget = s.vars.max_query_heap_bytes()
    limits = interpret.Limits(deadline=deadline, cancelled=s.cancel_event.is_set, max_heap_bytes=budget,
                              outgrow_bytes=INLINE_HEAP_BYTES)
    # the statement's guard, stopped by ``limits`` (checked between calls within a row too)
    ctx = s.statement.plan
    ctx = ctx.with_guard(dataclasses.replace(ctx.guard, max_bytes=budget, stop=limits))
    try:
        return interpret.run(plan, rows_of, limits, ctx)
    except Outgrown as e:
        # rows or a value too big here, or a backtracking regex: the worker can be stopped;
        # but a worker has no session, and what acted on it here would act twice
        if plan_acts_on_session(plan):
            raise SqlError(e.sqlstate, str(e), hint="A query calling a function that acts on the session "
                                                    "(pg_advisory_lock, nextval, set_config, ...) is evaluated "
                                                    "in the session: make it smaller.") from None
    return s.env.python_workers.run(plan, tables(), budget, deadline, s.cancel_event, ctx.guard.text)
