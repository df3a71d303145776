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

from catalog.errors import SqlError, OBJECT_NOT_IN_PREREQUISITE_STATE, UNDEFINED_TABLE
from catalog.pg_catalog import object_oid
from catalog.snapshot import Sequence, visible_schema
from sqlfront.rbac import check_sequence_use

if TYPE_CHECKING:
    from sqlfront.session import Session


class SessionSequences:
    """Sequence functions for session ``s``."""

    def __init__(self, s: Session):
        self._s = s
        #: sequence id -> the value nextval last gave this session
        self._current: dict[str, int] = {}
        self._last: int | None = None
        #: the sequence ``_last`` came from
        self._last_id: str | None = None

    def _sequence(self, oid: int, any_of: str | None = None) -> Sequence:
        """The sequence of OID ``oid``, which the session's current role must hold one of
        the privileges ``any_of`` on (``sqlfront.rbac.check_sequence_use``; None: no check).

        Raises:
            SqlError 42P01 for no such sequence (another session's temporary one
            included); 42501."""
        snap = self._s.env.snapshot
        for q in snap.sequences.values():
            if object_oid(q.id) == oid and visible_schema(q.schema):
                if any_of is not None:
                    check_sequence_use(snap, q, any_of, self._s.current_role_id)
                return q
        raise SqlError(UNDEFINED_TABLE, f"could not open relation with OID {oid}")

    def nextval(self, oid: int) -> int:
        """Raises SqlError 2200H at a bound of a sequence without CYCLE; 42P01; 42501
        without USAGE or UPDATE on it."""
        return self.nextval_many(oid, 1)[0]

    def nextval_many(self, oid: int, n: int) -> list[int]:
        """``n`` nextvals at once (a serial column of many rows): one durable step."""
        q = self._sequence(oid, "Uw")
        values = self._s.env.sequences.nextval(q, n)
        self._current[q.id] = self._last = values[-1]
        self._last_id = q.id
        return values

    def currval(self, oid: int) -> int:
        """Raises SqlError 55000 before this session's first nextval of the sequence;
        42501 without USAGE or SELECT on it."""
        q = self._sequence(oid, "Ur")
        if q.id not in self._current:
            raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, f'currval of sequence "{q.name}" is not yet defined in this session')
        return self._current[q.id]

    def lastval(self) -> int:
        """Raises SqlError 55000 before this session's first nextval; 42501 without
        USAGE or SELECT on the sequence it came from (PostgreSQL's rule)."""
        if self._last is None:
            raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, "lastval is not yet defined in this session")
        snap = self._s.env.snapshot
        q = snap.sequences.get(self._last_id)
        if q is None:
            raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, "lastval is not yet defined in this session")
        check_sequence_use(snap, q, "Ur", self._s.current_role_id)
        return self._last

    def setval(self, oid: int, value: int, is_called: bool) -> int:
        """Raises SqlError 22003 outside the sequence's bounds; 42501 without UPDATE on
        it. With ``is_called`` the value also becomes this session's currval
        (PostgreSQL's do_setval)."""
        q = self._sequence(oid, "w")
        self._s.env.sequences.setval(q, value, is_called)
        if is_called:
            self._current[q.id] = self._last = value
            self._last_id = q.id
        return value

    def state(self, oid: int) -> tuple[int, bool]:
        """``(last_value, is_called)`` of the sequence now (``SELECT * FROM seq``)."""
        return self._s.env.sequences.state(self._sequence(oid))

    def discard(self) -> None:
        """Forget currval/lastval (``DISCARD SEQUENCES``, ``DISCARD ALL``)."""
        self._current.clear()
        self._last = None
