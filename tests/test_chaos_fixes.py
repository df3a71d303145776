"""What the chaos check (issue 28, tests/test_chaos.py) found, pinned through the wire.

- A block that wrote, then read, then committed after another session wrote what it
  read: its read is at the block's read timestamp, its writes at COMMIT, so it would
  serialize both before and after the other write (G-single). COMMIT fails with 40001
  instead; a block whose reads nobody wrote meanwhile commits.

And the holes the issue lists under "Why":

- a block with DDL and an UPDATE/DELETE whose COMMIT conflicts keeps nothing (the
  conditional writes are checked in the catalog transaction, before the DDL commits).
"""

from __future__ import annotations

import psycopg
import pytest


@pytest.fixture
def ws(server):
    with server.connect() as c:
        c.execute("DROP TABLE IF EXISTS ws")
        c.execute("CREATE TABLE ws (k int, v int)")
    yield server
    with server.connect() as c:
        c.execute("DROP TABLE IF EXISTS ws")


def test_a_write_then_read_block_fails_its_commit_when_what_it_read_changed(ws):
    with ws.connect() as a, ws.connect() as b:
        a.execute("BEGIN")
        a.execute("INSERT INTO ws VALUES (1, 1)")
        assert a.execute("SELECT v FROM ws WHERE k = 2").fetchall() == []
        b.execute("INSERT INTO ws VALUES (2, 2)")
        with pytest.raises(psycopg.errors.SerializationFailure):
            a.execute("COMMIT")
        # nothing of the failed block is visible; the session goes on
        assert a.execute("SELECT k, v FROM ws ORDER BY k").fetchall() == [(2, 2)]


def test_a_write_then_read_block_commits_when_nobody_wrote_what_it_read(ws):
    with ws.connect() as a, ws.connect() as b:
        b.execute("INSERT INTO ws VALUES (2, 2)")
        a.execute("BEGIN")
        a.execute("INSERT INTO ws VALUES (1, 1)")
        assert a.execute("SELECT k, v FROM ws ORDER BY k").fetchall() == [(1, 1), (2, 2)]
        a.execute("COMMIT")
        assert b.execute("SELECT k, v FROM ws ORDER BY k").fetchall() == [(1, 1), (2, 2)]


def test_a_block_with_ddl_whose_update_conflicts_keeps_nothing(ws):
    """Issue 28's first hole: the catalog used to commit before the writes, so a COMMIT
    that failed with 40001 on its UPDATE kept the block's CREATE TABLE."""
    with ws.connect() as a, ws.connect() as b:
        a.execute("DROP TABLE IF EXISTS ddl_side")
        b.execute("INSERT INTO ws VALUES (1, 1)")
        a.execute("BEGIN")
        a.execute("CREATE TABLE ddl_side (x int)")
        a.execute("UPDATE ws SET v = v + 1")
        b.execute("INSERT INTO ws VALUES (2, 2)")
        with pytest.raises(psycopg.errors.SerializationFailure):
            a.execute("COMMIT")
        assert a.execute("SELECT count(*) FROM mz_tables WHERE name = 'ddl_side'").fetchone() == (0,)
        assert a.execute("SELECT k, v FROM ws ORDER BY k").fetchall() == [(1, 1), (2, 2)]
