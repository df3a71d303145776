"""What bounds one running statement: its one deadline and its cancel flag; and what its
plans and evaluations take from it (``planner.context.PlanContext``: its start time, its
``mz_now()``, its session, and its evaluation guard: heap budget, text settings, and this
deadline and cancel flag).

PostgreSQL's ``statement_timeout`` (section 19.11.2) bounds the whole statement, "starting
from the time the command arrives at the server": the session computes the deadline once,
when the statement starts (``StatementContext.start``), and every wait of the statement
(for a materialized view's upper, for replicas racing the peek, for each streamed batch,
in an evaluation in Python) checks that same deadline instead of starting its own.
"""

from __future__ import annotations

import dataclasses
import threading
import time

from catalog.errors import query_canceled
from catalog.textio import DEFAULT_FORMAT, TextFormat
from planner.context import PlanContext
from planner.guard import Guard


class ReadTimestamp:
    """The one timestamp a statement outside a transaction reads user data at, taken
    from the timestamp oracle when it first needs one: ``mz_now()`` in its plan and the
    peek's as_of are that same timestamp (Materialize: ``mz_now()`` is the query's
    timestamp), whatever is written between planning and reading."""

    def __init__(self) -> None:
        self._ts: int | None = None
        self._lock = threading.Lock()

    def get(self, take) -> int:
        """The statement's read timestamp, ``take()`` (the oracle's) the first time."""
        with self._lock:
            if self._ts is None:
                self._ts = take()
            return self._ts

    @property
    def taken(self) -> bool:
        """Whether the statement took its read timestamp (its plan holds ``mz_now()``'s
        value, say)."""
        return self._ts is not None

    def forget(self) -> None:
        """Take a new one at the next :meth:`get` (a statement planned again after its
        shard was replaced: ``sequence.writes.replanned``)."""
        with self._lock:
            self._ts = None


@dataclasses.dataclass(frozen=True)
class StatementContext:
    """One statement's bounds. ``started`` and ``deadline`` are ``time.monotonic()``
    seconds; ``deadline`` None: no timeout (``statement_timeout`` 0, or a stream that
    lasts as long as its client keeps it: COPY FROM STDIN's data, a bare SUBSCRIBE).
    ``cancel``: the session's flag a CancelRequest sets. ``plan``: what every plan of the
    statement takes from it. ``read_ts``: its read timestamp outside a transaction
    (``Session.read_ts``)."""

    started: float
    deadline: float | None
    cancel: threading.Event
    plan: PlanContext = dataclasses.field(default_factory=PlanContext.starting)
    read_ts: ReadTimestamp = dataclasses.field(default_factory=ReadTimestamp)

    @classmethod
    def start(cls, timeout_s: float | None, cancel: threading.Event, now: float | None = None,
              mz_now=None, session=None, heap_bytes: int | None = None,
              text: TextFormat = DEFAULT_FORMAT) -> StatementContext:
        """A statement of ``session`` starting ``now`` (default: the monotonic clock's now)
        under a timeout of ``timeout_s`` seconds (None: none), whose ``mz_now()`` is
        ``mz_now`` (``PlanContext``'s). Its evaluations in the session's thread (constant
        folding, INSERT's VALUES) run under its guard (``PlanContext.guard``): a heap
        budget of ``heap_bytes`` (max_query_heap_size), the session's text settings
        ``text``, and this statement's deadline and cancel flag, checked between calls."""
        now = time.monotonic() if now is None else now
        stmt = cls(now, now + timeout_s if timeout_s else None, cancel)
        guard = Guard(max_bytes=heap_bytes, stop=stmt, text=text)
        return dataclasses.replace(stmt, plan=PlanContext.starting(mz_now, session, guard))

    def unbounded(self) -> StatementContext:
        """The same statement with no deadline (the cancel flag still applies)."""
        stmt = dataclasses.replace(self, deadline=None)
        guard = dataclasses.replace(self.plan.guard, stop=stmt)
        return dataclasses.replace(stmt, plan=self.plan.with_guard(guard))

    def remaining(self) -> float | None:
        """Seconds left until the deadline (never below 0); None without a deadline."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def check(self) -> None:
        """Raises SqlError 57014 ("canceling statement due to user request" / "... due to
        statement timeout") once the statement is canceled or past its deadline."""
        if self.cancel.is_set():
            raise query_canceled(timeout=False)
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise query_canceled(timeout=True)
