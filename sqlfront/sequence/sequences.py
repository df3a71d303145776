"""SQL sequences as one session sees them: ``nextval``/``setval`` through the durable
value store (``catalog.sequences.SequenceStore``), and the session's own ``currval``
and ``lastval`` (PostgreSQL 9.17: "currval: Return the value most recently obtained by
nextval for this sequence in the current session").

``SessionSequences`` is what ``planner.functions.sequence`` calls; the session sets it
for each statement. It holds no catalog state: each call looks the sequence up, by
OID, in the latest catalog snapshot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from catalog.errors import SqlError, UNDEFINED_TABLE
from catalog.pg_catalog import object_oid
from catalog.snapshot import Sequence

if TYPE_CHECKING:
    from sqlfront.session import Session


class SessionSequences:
    """Sequence functions for session ``s``."""

    def __init__(self, s: Session):
        self._s = s
        #: sequence id -> the value nextval last gave this session
        self._current: dict[str, int] = {}
        self._last: int | None = None

    def _sequence(self, oid: int) -> Sequence:
        for q in self._s.env.snapshot.sequences.values():
            if object_oid(q.id) == oid:
                return q
        raise SqlError(UNDEFINED_TABLE, f"could not open relation with OID {oid}")

    def nextval(self, oid: int) -> int:
        """Raises SqlError 2200H at a bound of a sequence without CYCLE; 42P01."""
        return self.nextval_many(oid, 1)[0]

    def nextval_many(self, oid: int, n: int) -> list[int]:
        """``n`` nextvals at once (a serial column of many rows): one durable step."""
        q = self._sequence(oid)
        values = self._s.env.sequences.nextval(q, n)
        self._current[q.id] = self._last = values[-1]
        return values

    def currval(self, oid: int) -> int:
        """Raises SqlError 55000 before this session's first nextval of the sequence."""
        q = self._sequence(oid)
        if q.id not in self._current:
            raise SqlError("55000", f'currval of sequence "{q.name}" is not yet defined in this session')
        return self._current[q.id]

    def lastval(self) -> int:
        """Raises SqlError 55000 before this session's first nextval."""
        if self._last is None:
            raise SqlError("55000", "lastval is not yet defined in this session")
        return self._last

    def setval(self, oid: int, value: int, is_called: bool) -> int:
        """Raises SqlError 22003 outside the sequence's bounds. With ``is_called`` the
        value also becomes this session's currval (PostgreSQL's do_setval)."""
        q = self._sequence(oid)
        self._s.env.sequences.setval(q, value, is_called)
        if is_called:
            self._current[q.id] = self._last = value
        return value

    def state(self, oid: int) -> tuple[int, bool]:
        """``(last_value, is_called)`` of the sequence now (``SELECT * FROM seq``)."""
        return self._s.env.sequences.state(self._sequence(oid))

    def discard(self) -> None:
        """Forget currval/lastval (``DISCARD SEQUENCES``, ``DISCARD ALL``)."""
        self._current.clear()
        self._last = None
