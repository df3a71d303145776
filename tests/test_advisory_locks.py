"""Advisory locks through the wire (PostgreSQL 9.27.10), two psycopg sessions as two
clients would: a lock held by one excludes the other until released, at the end of the
transaction (xact forms) or when the holder's connection ends; a waiting
pg_advisory_lock returns once released, stops on statement_timeout or cancel (57014)."""

from __future__ import annotations

import threading

import psycopg
import pytest


def _waiting(server):
    """Whether some session's running statement is a pg_advisory_lock call (it waits)."""
    with server.connect() as c:
        return c.execute("SELECT count(*) FROM mz_internal.mz_recent_activity_log "
                         "WHERE sql LIKE 'SELECT pg_advisory_lock(%%' AND finished_at IS NULL").fetchone()[0] > 0


def _wait_in_thread(server, conn, sql):
    """Run ``sql`` on ``conn`` in a thread, and return once it waits (``_waiting``): the
    thread, and the list that gets its answer or error."""
    out = []

    def run():
        try:
            out.append(conn.execute(sql).fetchone())
        except psycopg.Error as e:
            out.append(e)

    t = threading.Thread(target=run)
    t.start()
    while t.is_alive() and not _waiting(server):
        t.join(0.05)
    return t, out


def test_a_lock_excludes_another_session_until_unlocked(server):
    with server.connect() as a, server.connect() as b:
        a.autocommit = b.autocommit = True
        assert a.execute("SELECT pg_advisory_lock(26001), pg_advisory_lock(26001)").fetchone() == ("", "")
        assert b.execute("SELECT pg_try_advisory_lock(26001), pg_try_advisory_lock(26001, 1)").fetchone() == \
            (False, True)  # a pair of int4 keys is another key
        b.execute("SET statement_timeout = '200ms'")
        with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
            b.execute("SELECT pg_advisory_lock(26001)")
        assert a.execute("SELECT pg_advisory_unlock(26001)").fetchone() == (True,)
        assert b.execute("SELECT pg_try_advisory_lock(26001)").fetchone() == (False,)  # held twice
        notices = []
        a.add_notice_handler(lambda d: notices.append(d.message_primary))  # valid in the handler only
        assert a.execute("SELECT pg_advisory_unlock(26001), pg_advisory_unlock(26001)").fetchone() == (True, False)
        assert notices == ["you don't own a lock of type ExclusiveLock"]
        assert b.execute("SELECT pg_try_advisory_lock_shared(26001), pg_advisory_unlock_all() IS NOT NULL") \
            .fetchone() == (True, True)


def test_a_waiting_lock_returns_when_released_and_a_dead_session_releases(server):
    with server.connect() as a, server.connect() as b:
        a.autocommit = b.autocommit = True
        a.execute("SELECT pg_advisory_lock(26002)")
        t, out = _wait_in_thread(server, b, "SELECT pg_advisory_lock(26002)")
        a.execute("SELECT pg_advisory_unlock(26002)")
        t.join()
        assert out == [("",)]
        c = server.connect()
        c.autocommit = True
        c.execute("SELECT pg_advisory_lock_shared(26003)")
        t, out = _wait_in_thread(server, a, "SELECT pg_advisory_lock(26003)")
        c.close()  # its session ends: its locks go
        t.join()
        assert out == [("",)]


def test_cancel_stops_a_waiting_lock(server):
    with server.connect() as a, server.connect() as b:
        a.autocommit = b.autocommit = True
        a.execute("SELECT pg_advisory_lock(26004)")
        t, out = _wait_in_thread(server, b, "SELECT pg_advisory_lock(26004)")
        b.cancel_safe()
        t.join()
        assert isinstance(out[0], psycopg.errors.QueryCanceled) and "user request" in str(out[0])
        assert b.execute("SELECT pg_try_advisory_lock(26004)").fetchone() == (False,)


def test_transaction_level_locks_and_locks_over_table_data(server):
    with server.connect() as a, server.connect() as b:
        a.autocommit = b.autocommit = True
        a.execute("CREATE TABLE IF NOT EXISTS adv_t (k int8)")
        a.execute("INSERT INTO adv_t VALUES (26010), (26011), (26011)")
        # a transaction block: held until its end
        a.execute("BEGIN")
        assert a.execute("SELECT pg_try_advisory_xact_lock(26005), pg_try_advisory_xact_lock_shared(26006)") \
            .fetchone() == (True, True)
        assert b.execute("SELECT pg_try_advisory_lock(26005), pg_try_advisory_lock_shared(26006)").fetchone() == \
            (False, True)
        a.execute("ROLLBACK")
        assert b.execute("SELECT pg_try_advisory_lock(26005)").fetchone() == (True,)
        # one statement outside a block is its own transaction
        assert a.execute("SELECT pg_advisory_xact_lock(26007) IS NOT NULL").fetchone() == (True,)
        assert b.execute("SELECT pg_try_advisory_lock(26007)").fetchone() == (True,)
        # on a table's rows (the select list runs in the session over Spark's rows)
        assert a.execute("SELECT k, pg_try_advisory_lock(k) FROM adv_t ORDER BY k").fetchall() == \
            [(26010, True), (26011, True), (26011, True)]
        assert b.execute("SELECT k, pg_try_advisory_lock(k) FROM adv_t ORDER BY k").fetchall() == \
            [(26010, False), (26011, False), (26011, False)]
        a.execute("SELECT pg_advisory_unlock_all()")
        assert b.execute("SELECT pg_try_advisory_lock(26011)").fetchone() == (True,)
        b.execute("SELECT pg_advisory_unlock_all()")
        a.execute("DROP TABLE adv_t")


def test_a_query_too_big_for_the_session_fails_rather_than_locking_in_a_worker(server):
    """A fast-path query that outgrows the session's thread moves to a worker process,
    which has no session: one taking locks fails (54000) instead of running twice, and
    its transaction-level locks end with the statement."""
    with server.connect() as a, server.connect() as b:
        a.autocommit = b.autocommit = True
        with pytest.raises(psycopg.errors.ProgramLimitExceeded):
            a.execute("SELECT pg_advisory_xact_lock(g) FROM generate_series(1, 200000) g")
        assert b.execute("SELECT pg_try_advisory_lock(1), pg_advisory_unlock(1)").fetchone() == (True, True)
