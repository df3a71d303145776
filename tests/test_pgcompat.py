"""What psycopg's own test suite needs of the server (issue 16), one behaviour per test,
through the wire with psycopg: a transaction block reading its own writes, DateStyle,
timetz, multi-dimensional arrays, binary parameters.

``make psycopg-suite`` (bench/psycopg_suite.py) runs psycopg's suite itself; these tests
do not depend on it."""

from __future__ import annotations

import psycopg
import pytest


def test_block_reads_its_own_writes_once(server):
    """PostgreSQL: a transaction sees its own writes. A block that wrote first reads its
    buffered rows exactly once (rows buffered as Arrow and rows a replica wrote for
    INSERT ... SELECT), ROLLBACK TO drops a savepoint's rows from what it reads, COMMIT
    shows the rest to others once, ROLLBACK shows nothing."""
    with server.connect() as admin, server.connect(autocommit=False) as c:
        admin.execute("CREATE TABLE own_w (a int)")
        admin.execute("INSERT INTO own_w VALUES (1)")
        try:
            c.execute("INSERT INTO own_w VALUES (2)")
            # a replica writes 11 and 12: INSERT ... SELECT reads the block's own row 2 too
            c.execute("INSERT INTO own_w SELECT a + 10 FROM own_w")
            assert c.execute("SELECT a FROM own_w ORDER BY a").fetchall() == [(1,), (2,), (11,), (12,)]
            c.execute("SAVEPOINT s")
            c.execute("INSERT INTO own_w VALUES (3)")
            assert c.execute("SELECT count(*) FROM own_w").fetchone() == (5,)
            c.execute("ROLLBACK TO SAVEPOINT s")
            c.execute("INSERT INTO own_w VALUES (4)")  # writing after a read goes on
            assert c.execute("SELECT a FROM own_w ORDER BY a").fetchall() == [(1,), (2,), (4,), (11,), (12,)]
            assert admin.execute("SELECT count(*) FROM own_w").fetchone() == (1,)
            c.commit()
            assert admin.execute("SELECT a FROM own_w ORDER BY a").fetchall() == [(1,), (2,), (4,), (11,), (12,)]
            c.execute("INSERT INTO own_w VALUES (5)")
            assert c.execute("SELECT count(*) FROM own_w WHERE a = 5").fetchone() == (1,)
            c.rollback()
            assert admin.execute("SELECT count(*) FROM own_w").fetchone() == (5,)
            # a block that read first is still read-only (Materialize)
            c.execute("SELECT * FROM own_w")
            with pytest.raises(psycopg.Error) as e:
                c.execute("INSERT INTO own_w VALUES (6)")
            assert e.value.sqlstate == "25000"
            c.rollback()
        finally:
            admin.execute("DROP TABLE own_w")
