"""Resources a statement can run out of, without a server: the COPY memory budget
(sqlfront.memory_budget), the errors PostgreSQL reports for a full disk or a statement
nested too deeply (sqlfront.session.resource_error), and sqlite's full disk, which a
ROLLBACK after sqlite's own must not hide."""

from __future__ import annotations

import errno
import math
import os
import sqlite3
import subprocess
import threading

import psycopg
import pytest

from catalog.errors import SqlError
from sqlfront.memory_budget import MemoryBudget
from sqlfront.sequence.subscribe import StoreOutage
from sqlfront.session import resource_error, store_error


def test_reservations_share_the_budget_and_a_waiter_gets_what_is_given_back():
    budget = MemoryBudget(100, wait_s=600)
    a, b = budget.reservation(), budget.reservation()
    a.resize(70)
    got = threading.Event()

    def grow_b():
        b.resize(50)  # waits: only 30 are free
        got.set()

    t = threading.Thread(target=grow_b)
    t.start()
    assert not got.wait(0.2)
    a.resize(40)  # gives back 30: 60 free
    t.join(60)
    assert got.is_set() and budget.used == 90 and budget.peak == 90
    a.release()
    b.release()
    assert budget.used == 0


def test_more_than_the_whole_budget_fails_at_once_and_a_long_wait_fails_with_53200():
    budget = MemoryBudget(100, wait_s=0.05)
    r = budget.reservation()
    with pytest.raises(SqlError) as ei:
        r.resize(101)
    assert ei.value.sqlstate == "53200" and "more than the whole budget" in ei.value.detail
    r.resize(60)
    other = budget.reservation()
    with pytest.raises(SqlError) as ei:
        other.resize(50)  # nobody gives anything back
    assert ei.value.sqlstate == "53200" and "other COPY statements" in ei.value.detail
    assert other.held == 0 and budget.used == 60


def test_a_wait_of_its_own_outlasts_the_budgets_wait_time():
    """A first share (a COPY's start) may wait longer than ``wait_s``: it holds nothing."""
    budget = MemoryBudget(100, wait_s=0.01)
    a, b = budget.reservation(), budget.reservation()
    a.resize(80)
    got = []
    t = threading.Thread(target=lambda: got.append(b.resize(50, wait_s=math.inf)))
    t.start()
    t.join(0.3)  # many times the budget's wait time
    assert t.is_alive() and not got
    a.release()
    t.join(60)
    assert got == [None] and b.held == 50 and budget.used == 50


def test_resource_errors_are_postgres_errors():
    assert resource_error(RecursionError()).sqlstate == "54001"
    assert resource_error(OSError(errno.ENOSPC, "No space left on device", "/blob/p1")).sqlstate == "53100"
    assert resource_error(sqlite3.OperationalError("database or disk is full")).sqlstate == "53100"
    assert resource_error(OSError(errno.EACCES, "Permission denied")) is None
    assert resource_error(ValueError("a bug")) is None


def test_a_replica_whose_scratch_space_is_full_reports_disk_full():
    from spark_exec.errors import to_sql_error

    e = RuntimeError("Job aborted due to stage failure: Task 0 in stage 4.0 failed 1 times, most recent failure: "
                     "Lost task 0.0 (TID 4): java.io.IOException: No space left on device")
    assert to_sql_error(e).sqlstate == "53100"
    assert to_sql_error(RuntimeError("Job aborted: java.io.IOException: Stream closed")).sqlstate == "XX000"


def test_a_lost_shared_store_is_a_connection_failure():
    assert store_error(psycopg.OperationalError("connection refused")).sqlstate == "08006"
    assert store_error(psycopg.errors.AdminShutdown("terminating connection")).sqlstate == "08006"
    assert store_error(psycopg.errors.DiskFull("could not extend file")).sqlstate == "53100"
    assert store_error(psycopg.errors.UniqueViolation("a bug")) is None
    assert store_error(ValueError("a bug")) is None


def test_a_follower_waits_out_a_store_outage_for_its_grace_only():
    def down():
        raise psycopg.OperationalError("connection refused")

    waiting = StoreOutage(grace_s=3600)
    assert waiting.call(down, "nothing yet", 0) == "nothing yet"
    assert waiting.since is not None
    assert waiting.call(lambda: "back", None, 0) == "back" and waiting.since is None
    with pytest.raises(psycopg.OperationalError):
        StoreOutage(grace_s=0).call(down, None, 0)
    with pytest.raises(ValueError):  # not the store: not waited out
        waiting.call(lambda: int("x"), None, 0)


@pytest.fixture
def tiny_disk(tmp_path):
    """A 512 kB tmpfs (root only)."""
    d = tmp_path / "tiny"
    d.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(d)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a tmpfs")
    yield d
    subprocess.run(["umount", str(d)], check=False)


def test_consensus_on_a_full_disk_reports_the_full_disk(tiny_disk):
    """sqlite rolls a transaction back itself on SQLITE_FULL; our ROLLBACK after it used
    to fail with "cannot rollback - no transaction is active", hiding the real error."""
    from persist.consensus import SqliteConsensus

    c = SqliteConsensus(str(tiny_disk / "consensus.db"))
    seqno = None
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        for i in range(1000):
            assert c.compare_and_set("s1", seqno, i, b"x" * 20_000)
            seqno = i
    assert c.head("s1")[0] == seqno  # what was committed stays
    c.close()


@pytest.mark.parametrize("sql", [
    "SELECT " + "+".join(["1"] * 64_000),  # libpg_query overflowed its C stack on this: a SIGSEGV
    "SELECT 1" + "::int" * 30_000,
    "SELECT " + "(1+" * 6_000 + "1" + ")" * 6_000,
    "SELECT 1" + " OPERATOR(pg_catalog.+) 1" * 30_000,
])
def test_statements_nested_too_deeply_are_54001_before_they_are_parsed(sql):
    from sqlfront.parse import parse_one

    with pytest.raises(SqlError) as ei:
        parse_one(sql)
    assert ei.value.sqlstate == "54001" and ei.value.message == "stack depth limit exceeded"


def test_long_flat_statements_are_not_deep():
    from sqlfront.parse import check_expression_depth

    check_expression_depth("SELECT * FROM t WHERE " + " OR ".join(f"a = -{i}" for i in range(20_000)))
    check_expression_depth("INSERT INTO t VALUES " + ",".join(f"(-{i}, {i} + 1, 'x')" for i in range(20_000)))
    check_expression_depth("SELECT " + "+".join(["1"] * 9_000))
