"""The server-wide memory budget that COPY FROM STDIN streams draw from together.

Each stream holds a :class:`Reservation` and resizes it to what it holds now (the data
not yet parsed, the batch it parses, the Arrow columns not yet written to Blob, their
encoding, and a measured overhead), never below the most it usually needs
(``sqlfront.sequence.copy.STREAM_BYTES``, taken at its start); the sum of all
reservations never passes the budget. A stream that needs more than is free waits for
others to give some back, for at most ``wait_s`` seconds, then fails with 53200
(PostgreSQL's out_of_memory); one that needs more than the whole budget fails at once.
A stream waiting for its first share holds nothing, so nobody waits on it: it may wait
longer (``Reservation.resize``'s ``wait_s``; COPY waits until its statement_timeout, as
a PostgreSQL statement waits for a lock).
The budget counts what COPY holds, not the process: queries, sessions and the catalog
are outside it.
"""

from __future__ import annotations

import os
import threading
import time

from catalog.errors import SqlError, OUT_OF_MEMORY

#: seconds a stream waits for budget that other streams hold before it fails
BUDGET_WAIT_S = 30.0


def default_copy_memory_budget() -> int:
    """A quarter of the machine's physical memory, in bytes (1 GiB if unknown)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4
    except (ValueError, OSError, AttributeError):
        return 1 << 30


class MemoryBudget:
    """``total`` bytes shared by every :class:`Reservation` made from it. Thread-safe."""

    def __init__(self, total: int, wait_s: float = BUDGET_WAIT_S):
        self.total = total
        self.wait_s = wait_s
        self._cond = threading.Condition()
        self._used = 0
        #: the most ever reserved at once (bytes), for benchmarks and tests
        self.peak = 0

    @property
    def used(self) -> int:
        """Bytes reserved now."""
        return self._used

    def reservation(self, what: str = "COPY FROM STDIN") -> Reservation:
        """A new, empty reservation; ``what`` names its user in errors."""
        return Reservation(self, what)

    def _grow(self, n: int, held: int, what: str, cancelled, wait_s: float | None) -> None:
        if held + n > self.total:
            raise self._error(what, held + n, "more than the whole budget")
        deadline = time.monotonic() + (self.wait_s if wait_s is None else wait_s)
        with self._cond:
            while self._used + n > self.total:
                left = deadline - time.monotonic()
                if left <= 0 or cancelled():
                    raise self._error(what, held + n, "other COPY statements hold the rest")
                self._cond.wait(min(left, 0.5))
            self._used += n
            self.peak = max(self.peak, self._used)

    def _shrink(self, n: int) -> None:
        with self._cond:
            self._used -= n
            self._cond.notify_all()

    def _error(self, what: str, need: int, why: str) -> SqlError:
        return SqlError(OUT_OF_MEMORY, "out of memory",
                        detail=f"{what} needs {need} bytes of the server's COPY memory budget of {self.total} "
                               f"bytes: {why}.",
                        hint="Split the data into smaller COPY statements, retry when fewer run at once, or "
                             "raise the budget with sqlfront serve --copy-memory-budget.")


class Reservation:
    """Bytes one user (one COPY) holds of a :class:`MemoryBudget`."""

    def __init__(self, budget: MemoryBudget, what: str):
        self.budget = budget
        self.what = what
        #: bytes held now
        self.held = 0

    def resize(self, n: int, cancelled=lambda: False, wait_s: float | None = None) -> None:
        """Hold ``n`` bytes: more waits for them (while ``cancelled()`` is false), less
        gives the difference back at once. ``wait_s``: seconds to wait at most
        (``math.inf``: no limit), instead of ``budget.wait_s``.

        Raises:
            SqlError 53200 when ``n`` is more than the whole budget, or when the rest
            of it stays held by others for ``wait_s`` seconds (what was held before
            stays held: release it), or when ``cancelled()`` while it waits."""
        if n > self.held:
            self.budget._grow(n - self.held, self.held, self.what, cancelled, wait_s)
        elif n < self.held:
            self.budget._shrink(self.held - n)
        self.held = n

    def release(self) -> None:
        """Give everything back (idempotent)."""
        self.resize(0)
