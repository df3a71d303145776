"""sqlfront.advisory: PostgreSQL's advisory locks (9.27.10, 13.3.5) of one process's
sessions: reentrant counts at session and transaction level, shared and exclusive modes,
the two key spaces, waits stopped by a timeout or cancel, deadlocks (40P01)."""

from __future__ import annotations

import threading

import pytest

from catalog.errors import SqlError, query_canceled
from sqlfront.advisory import LockTable, SessionLocks

K = ("8", 1)


def _session(table, name, check=lambda: None):
    warnings = []
    return SessionLocks(table, name, warnings.append, check), warnings


def test_reentrant_counts_and_the_warning_of_an_unheld_unlock():
    t = LockTable()
    a, warned = _session(t, "a")
    b, _ = _session(t, "b")
    assert a.lock(K, False, False, True) and a.lock(K, False, False, True)
    assert not b.lock(K, False, False, False)
    assert a.unlock(K, False)
    assert not b.lock(K, False, False, False)  # held once more
    assert a.unlock(K, False)
    assert b.lock(K, False, False, False)
    assert not a.unlock(K, False)
    assert [str(w) for w in warned] == ["you don't own a lock of type ExclusiveLock"]
    assert not a.unlock(K, True) and "ShareLock" in str(warned[-1])


def test_modes_and_key_spaces():
    t = LockTable()
    a, _ = _session(t, "a")
    b, _ = _session(t, "b")
    assert a.lock(K, True, False, False) and b.lock(K, True, False, False)  # shared with shared
    assert not b.lock(K, False, False, False)  # exclusive waits for a's shared
    assert a.lock(K, False, False, False) is False  # b's shared blocks a's exclusive too
    b.unlock(K, True)
    assert a.lock(K, False, False, False)  # its own shared lock does not conflict
    assert b.lock(("8", 2), False, False, False) and b.lock(("4", 0, 1), False, False, False)
    assert not b.lock(("8", 1), True, False, False)


def test_transaction_level_locks_end_with_the_transaction_and_unlock_all_keeps_them():
    t = LockTable()
    a, warned = _session(t, "a")
    b, _ = _session(t, "b")
    a.lock(K, False, True, True)
    a.lock(("8", 2), False, False, True)
    assert not a.unlock(K, False) and warned  # a transaction-level lock is not unlocked so
    a.unlock_all()
    assert b.lock(("8", 2), False, False, False) and not b.lock(K, False, False, False)
    a.end_transaction()
    assert b.lock(K, False, False, False)


def test_close_releases_everything():
    t = LockTable()
    a, _ = _session(t, "a")
    a.lock(K, False, False, True)
    a.lock(K, True, True, True)
    a.close()
    assert t.holders() == []


def test_a_wait_ends_when_the_holder_releases():
    t = LockTable()
    a, _ = _session(t, "a")
    b, _ = _session(t, "b")
    a.lock(K, False, False, True)
    got = []
    waiter = threading.Thread(target=lambda: got.append(b.lock(K, False, False, True)))
    waiter.start()
    a.unlock(K, False)
    waiter.join()
    assert got == [True] and t.holders() == [(K, "b", False)]


def test_a_canceled_wait_holds_nothing():
    t = LockTable()
    a, _ = _session(t, "a")
    cancel = threading.Event()

    def check():
        if cancel.is_set():
            raise query_canceled(timeout=False)

    b, _ = _session(t, "b", check)
    a.lock(K, False, False, True)
    errors = []

    def wait():
        try:
            b.lock(K, False, False, True)
        except SqlError as e:
            errors.append(e.sqlstate)

    waiter = threading.Thread(target=wait)
    waiter.start()
    cancel.set()
    waiter.join()
    assert errors == ["57014"] and t.holders() == [(K, "a", False)]
    a.close()
    assert b.lock(K, False, False, False) is True


def test_a_deadlock_is_40P01_for_the_session_that_closes_the_cycle():
    t = LockTable()
    a, _ = _session(t, "a")
    b, _ = _session(t, "b")
    k2 = ("8", 2)
    a.lock(K, False, False, True)
    b.lock(k2, False, False, True)
    got = []
    waiter = threading.Thread(target=lambda: got.append(a.lock(k2, False, False, True)))
    waiter.start()
    while "a" not in t._waiting:  # a waits for b's lock
        waiter.join(0.01)
    with pytest.raises(SqlError) as e:
        b.lock(K, False, False, True)
    assert e.value.sqlstate == "40P01"
    b.close()  # the client rolls back and leaves: a gets its lock
    waiter.join()
    assert got == [True]


def test_a_process_holds_a_bounded_number_of_locks():
    """Past ``max_locks`` a new lock fails with PostgreSQL's 53200 "out of shared memory"
    and takes nothing; one released makes room again; a lock already held is free."""
    table = LockTable(max_locks=3)
    (a, _), (b, _) = _session(table, "a"), _session(table, "b")
    assert a.lock(("8", 1), False, False, False) and a.lock(("8", 2), False, False, False)
    assert b.lock(("8", 3), True, False, False)
    assert a.lock(("8", 1), False, False, False)  # reentrant: no new entry
    with pytest.raises(SqlError) as ei:
        b.lock(("8", 4), False, False, False)
    assert ei.value.sqlstate == "53200" and "max_locks_per_transaction" in ei.value.hint
    with pytest.raises(SqlError):
        a.lock(("8", 3), True, False, False)  # another session's key: a new entry too
    assert table.holders() == [(("8", 1), "a", False), (("8", 2), "a", False), (("8", 3), "b", True)]
    b.close()
    assert a.lock(("8", 4), False, False, False)
