"""What one Python evaluation may do where it runs.

environmentd evaluates expressions in its sessions' threads (constant folding while
planning, the fast path of ``planner.interpret``). A thread there must not hold the
interpreter for long: one C call (a backtracking regular expression, building a
gigabyte string) holds the GIL throughout, so every other session stalls, and no
statement_timeout or cancel is seen until it returns. So work whose cost is not bounded
by its inputs' size is never done there: it raises ``Outgrown``, and the caller leaves
the expression unfolded (``planner.consteval.fold``) or runs the query again in a worker
process (``sqlfront.pyworker``), which a timeout or cancel kills. The worker runs under
a guard without ``inline_bytes``: big values up to the query's heap budget, backtracking
allowed.

Work that is bounded step by step can still be long in sum (a statement of thousands
of calls, each a few milliseconds on megabyte values): each step looks at the guard's
``stop`` first (``Guard.check_stop``), so statement_timeout and cancel end folding and inline
evaluation within one step's time.

The guard also carries the session's text settings (``Guard.text``: DateStyle, TimeZone,
IntervalStyle), which casts and functions that print or read dates, times and intervals
follow.

The ``Guard`` of an evaluation is passed to it explicitly: the session builds its
statement's (``sqlfront.statement.StatementContext.start``) into the statement's
``planner.context.PlanContext`` (``PlanContext.guard``), which the constant folder and the
interpreter take (``planner.consteval.evaluate``, ``fold``, ``planner.interpret.run``) and
hand to the function implementations that need it (registry ``extra["with_context"]``);
the regular expressions' methods take it too (``planner.pattern``). Without one,
evaluation is ``INLINE`` (environmentd's rules, no heap budget, nothing stops it,
PostgreSQL's default text settings). The project has no context variable.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.errors import SqlError, OUT_OF_MEMORY, PROGRAM_LIMIT_EXCEEDED
from catalog.textio import DEFAULT_FORMAT, TextFormat

#: PostgreSQL's MaxAllocSize (1 GB - 1, memutils.h): no value may be bigger; a function
#: asked for one raises 54000 "requested length too large" (repeat, lpad: oracle_compat.c)
MAX_ALLOC_BYTES = (1 << 30) - 1

#: bytes one value may take when built in a session's thread: a few milliseconds of
#: copying; a bigger one is built in a worker process
INLINE_VALUE_BYTES = 4 << 20


class Outgrown(SqlError):
    """The evaluation needs more than a session's thread may do (``what``): the caller
    may run it where big work is cheap and can be stopped (``sqlfront.pyworker``). An
    SqlError (54000), so that a caller with nowhere else to run it reports it clearly."""

    def __init__(self, what: str = "more rows than it may build in environmentd"):
        super().__init__(PROGRAM_LIMIT_EXCEEDED, f"the statement needs {what}",
                         hint="Run the expression in a SELECT, which evaluates it in a worker process.")


@dataclass(frozen=True)
class Guard:
    """Limits of one evaluation's values.

    Attributes:
        max_bytes: the query's heap budget (``max_query_heap_size``), in bytes: a value
            bigger than that raises 53200; None: no budget.
        inline_bytes: in a session's thread, the bytes a value may take there: a bigger
            one, and any backtracking regular expression, raise ``Outgrown``. None: in a
            worker process, where both are allowed.
        stop: the statement's deadline and cancel flag, as an object whose ``check()``
            raises their 57014 (``sqlfront.statement.StatementContext``, ``planner.interpret.Limits``);
            None: nothing stops it.
        text: the session's DateStyle, TimeZone and IntervalStyle
            (``catalog.textio.TextFormat``; ``SessionVars.text_format``), which casts and
            functions that print or read dates, times and intervals follow.
    """

    max_bytes: int | None = None
    inline_bytes: int | None = INLINE_VALUE_BYTES
    stop: object | None = None
    text: TextFormat = DEFAULT_FORMAT

    def check_stop(self) -> None:
        """Call before each step of an evaluation (a function call).

        Raises:
            SqlError 57014 once the statement's statement_timeout passed or it was
            cancelled (``stop``)."""
        if self.stop is not None:
            self.stop.check()

    def check_value_bytes(self, n: int) -> None:
        """Call before building a value of ``n`` bytes (UTF-8, for text).

        Raises:
            SqlError 54000 "requested length too large" past ``MAX_ALLOC_BYTES``
            (PostgreSQL's); 53200 past ``max_bytes``; ``Outgrown`` past ``inline_bytes``."""
        if n > MAX_ALLOC_BYTES:
            raise SqlError(PROGRAM_LIMIT_EXCEEDED, "requested length too large")
        if self.max_bytes is not None and n > self.max_bytes:
            raise heap_exceeded(self.max_bytes)
        if self.inline_bytes is not None and n > self.inline_bytes:
            raise Outgrown(f"a value of {n} bytes, more than it may build in environmentd")

    def check_unbounded(self, what: str = "a backtracking regular expression") -> None:
        """Call before work whose time no small bound limits (a backtracking regular
        expression; compiling a very long pattern in Python). Raises ``Outgrown`` in a
        session's thread (``inline_bytes`` set)."""
        if self.inline_bytes is not None:
            raise Outgrown(f"{what}, which environmentd does not run in a session")


#: environmentd's rules (the default)
INLINE = Guard()


def heap_exceeded(max_bytes: int) -> SqlError:
    """The 53200 of a query past its ``max_query_heap_size`` (the code Materialize gives a
    result over ``max_query_result_size``, and PostgreSQL a failed allocation)."""
    return SqlError(OUT_OF_MEMORY, f"query needs more than max_query_heap_size ({max_bytes} bytes) of server memory",
                    hint="Narrow the query, or raise max_query_heap_size (SET max_query_heap_size = '1GB').")


def utf8_bytes(s: str) -> int:
    """``s``'s length in UTF-8 bytes (exact; linear, in C)."""
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))
