"""Advisory locks (PostgreSQL 9.27.10 "Advisory Lock Functions", 13.3.5 "Advisory Locks").

Scope: the sessions of one environmentd process. Each process has one :class:`LockTable`
(``Environment.advisory_locks``); a session of another process (``make serve-multi``,
where the balancer sends each cluster's connections to the process that owns it) does not
see its locks. That is the simplest thing that is correct for one process, which is how
``make serve`` runs and how a client connected to one address sees the server: the locks
live in the process's memory, so they end with it, and a session's with the session.

Semantics, as PostgreSQL's lock manager gives them to advisory locks:

- a key is an int8 (``pg_advisory_lock(bigint)``) or a pair of int4
  (``pg_advisory_lock(int, int)``): two namespaces, as PostgreSQL's lock tag tells them
  apart (``(1, 2)`` is not ``1 << 32 | 2``);
- a lock is exclusive or shared: an exclusive lock conflicts with any lock of another
  session, a shared one with another session's exclusive lock; a session's own locks
  never conflict with each other;
- locks are reentrant: each acquisition is counted, at session level (held until
  ``pg_advisory_unlock*`` as often, or ``pg_advisory_unlock_all``, or the end of the
  session) and at transaction level (``pg_advisory_xact_lock*``, held until the end of the
  transaction, which outside a transaction block is the statement's);
- ``pg_advisory_lock*`` waits until it gets the lock, stopped by the statement's
  ``statement_timeout`` or a cancel (57014) and by a deadlock between waiting sessions
  (40P01, the session that closes the cycle), as PostgreSQL's deadlock detector;
- ``pg_advisory_unlock*`` of a lock the session does not hold at session level answers
  false with PostgreSQL's WARNING ``you don't own a lock of type ExclusiveLock``
  (``ShareLock`` for the shared form).

``SessionLocks`` is a session's view (the counts), ``LockTable`` the process's (who holds
what, who waits for whom).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from catalog.errors import SqlError, DEADLOCK_DETECTED, OUT_OF_MEMORY, WARNING

#: a lock's key: ("8", k) for an int8 key, ("4", a, b) for two int4 keys
Key = tuple

#: how often a waiting session looks at its statement's timeout and cancel flag (seconds);
#: a release wakes the waiters at once
_POLL_S = 0.05

#: locks (a session's hold of one key in one mode) a process holds at most, as
#: PostgreSQL's shared lock table has room for max_locks_per_transaction (64) times its
#: connections: a client taking locks without end gets 53200, not the server's memory
MAX_LOCKS = 64 * 1000


@dataclass
class _Held:
    """Who holds one key: the exclusive holder (a session id) and the shared holders."""

    exclusive: object = None
    shared: set = field(default_factory=set)


class LockTable:
    """The advisory locks of one environmentd process: key -> holders, and which session
    waits for which key (for deadlock detection). Thread-safe: sessions are threads."""

    def __init__(self, max_locks: int = MAX_LOCKS) -> None:
        self._cond = threading.Condition()
        self._held: dict[Key, _Held] = {}
        self._waiting: dict[object, tuple[Key, bool]] = {}
        self.max_locks = max_locks
        self._count = 0  # (key, owner, mode) holds in _held

    def _blockers(self, owner, key: Key, shared: bool) -> set:
        """The other sessions whose locks on ``key`` conflict with ``owner`` taking it."""
        h = self._held.get(key)
        if h is None:
            return set()
        out = {h.exclusive} if h.exclusive is not None and h.exclusive != owner else set()
        if not shared:
            out |= h.shared - {owner}
        return out

    def _closes_cycle(self, owner, key: Key, shared: bool) -> bool:
        """Whether ``owner`` waiting for ``key`` would wait, through the sessions it waits
        for and those they wait for, on itself."""
        seen, todo = set(), list(self._blockers(owner, key, shared))
        while todo:
            s = todo.pop()
            if s == owner:
                return True
            if s in seen or s not in self._waiting:
                continue
            seen.add(s)
            todo.extend(self._blockers(s, *self._waiting[s]))
        return False

    def acquire(self, owner, key: Key, shared: bool, wait: bool, check=lambda: None) -> bool:
        """Take ``key`` for ``owner`` (exclusive, or ``shared``). Without ``wait``: False
        when another session's lock conflicts. With it: waits until none does.

        Raises:
            SqlError 57014 from ``check()`` (the statement's timeout or cancel) while it
            waits; 40P01 when waiting would close a cycle of waiting sessions; 53200
            ("out of shared memory", as PostgreSQL's) when the process holds
            ``max_locks`` already."""
        with self._cond:
            while self._blockers(owner, key, shared):
                if not wait:
                    return False
                if self._closes_cycle(owner, key, shared):
                    raise SqlError(DEADLOCK_DETECTED, "deadlock detected",
                                   detail="Process waits for an advisory lock held by a process that waits for it.",
                                   hint="See server log for query details.")
                self._waiting[owner] = (key, shared)
                try:
                    check()
                    self._cond.wait(_POLL_S)
                finally:
                    del self._waiting[owner]
            h = self._held.get(key)
            new = h is None or (owner not in h.shared if shared else h.exclusive != owner)
            if new and self._count >= self.max_locks:
                raise SqlError(OUT_OF_MEMORY, "out of shared memory",
                               hint='You might need to increase "max_locks_per_transaction".')
            h = self._held.setdefault(key, _Held())
            if shared:
                h.shared.add(owner)
            else:
                h.exclusive = owner
            self._count += new
            return True

    def release(self, owner, key: Key, shared: bool) -> None:
        """Drop ``owner``'s lock of ``key`` (it holds it) and wake the waiting sessions."""
        with self._cond:
            h = self._held.get(key)
            if h is None:
                return
            if shared and owner in h.shared:
                h.shared.discard(owner)
                self._count -= 1
            elif not shared and h.exclusive == owner:
                h.exclusive = None
                self._count -= 1
            if h.exclusive is None and not h.shared:
                del self._held[key]
            self._cond.notify_all()

    def holders(self) -> list[tuple[Key, object, bool]]:
        """Every lock held: (key, owner, shared), for pg_locks."""
        with self._cond:
            return [(k, o, s) for k, h in self._held.items()
                    for o, s in ([(h.exclusive, False)] if h.exclusive is not None else []) + [(o, True) for o in h.shared]]


class SessionLocks:
    """One session's advisory locks: how often it took each (key, mode) at session and
    at transaction level; the process's ``LockTable`` holds a (key, mode) while either
    count is above 0. ``warn(err)`` sends the session a WARNING; ``check()`` raises the
    running statement's 57014 (its timeout, a cancel)."""

    def __init__(self, table: LockTable, owner, warn, check) -> None:
        self.table, self.owner, self.warn, self.check = table, owner, warn, check
        self._session: dict[tuple[Key, bool], int] = {}
        self._xact: dict[tuple[Key, bool], int] = {}

    def _held(self, k: tuple[Key, bool]) -> bool:
        return self._session.get(k, 0) + self._xact.get(k, 0) > 0

    def lock(self, key: Key, shared: bool, xact: bool, wait: bool) -> bool:
        """pg_advisory_lock and its forms: True once held (False: ``wait`` is off and
        another session holds a conflicting lock). Raises as ``LockTable.acquire``."""
        k = (key, shared)
        if not self._held(k) and not self.table.acquire(self.owner, key, shared, wait, self.check):
            return False
        counts = self._xact if xact else self._session
        counts[k] = counts.get(k, 0) + 1
        return True

    def unlock(self, key: Key, shared: bool) -> bool:
        """pg_advisory_unlock(_shared): release one session-level hold of ``key``; False
        with a WARNING when the session holds none."""
        k = (key, shared)
        n = self._session.get(k, 0)
        if n == 0:
            mode = "ShareLock" if shared else "ExclusiveLock"
            self.warn(SqlError(WARNING, f"you don't own a lock of type {mode}", severity="WARNING"))
            return False
        if n == 1:
            del self._session[k]
        else:
            self._session[k] = n - 1
        self._drop_if_free(k)
        return True

    def unlock_all(self) -> None:
        """pg_advisory_unlock_all: every session-level lock (transaction-level ones stay)."""
        held, self._session = self._session, {}
        for k in held:
            self._drop_if_free(k)

    def end_transaction(self) -> None:
        """The transaction ended: its transaction-level locks go."""
        held, self._xact = self._xact, {}
        for k in held:
            self._drop_if_free(k)

    def close(self) -> None:
        """The session ended: every lock it holds goes."""
        self.end_transaction()
        self.unlock_all()

    def _drop_if_free(self, k: tuple[Key, bool]) -> None:
        if not self._held(k):
            self.table.release(self.owner, *k)
