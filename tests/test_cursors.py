"""Cursors and streamed results through the wire: DECLARE/FETCH/MOVE/CLOSE as PostgreSQL
and Materialize answer them, psycopg's named cursors, pandas' chunked reads, and the
server's memory staying flat while a large result streams."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@pytest.fixture(scope="module")
def k1000(server):
    """A table of 1,000 integers: its self-join is a 1,000,000-row result."""
    with server.connect() as c:
        c.execute("CREATE TABLE k1000 (x int)")
        with c.cursor().copy("COPY k1000 FROM STDIN") as cp:
            for i in range(1000):
                cp.write_row((i,))
    yield "k1000"
    with server.connect() as c:
        c.execute("DROP TABLE k1000")


def _state(e: BaseException) -> str:
    return e.sqlstate  # type: ignore[attr-defined]


def test_declare_fetch_close_answer_as_postgresql(server):
    with psycopg.connect(server.url, autocommit=True) as c:
        with pytest.raises(psycopg.Error) as e:
            c.execute("DECLARE c CURSOR FOR SELECT 1")
        assert _state(e.value) == "25P01"
        assert "DECLARE CURSOR can only be used in transaction blocks" in str(e.value)
        cur = c.cursor()
        cur.execute("BEGIN")
        cur.execute("DECLARE c CURSOR FOR VALUES (1), (2), (3)")
        assert cur.statusmessage == "DECLARE CURSOR"
        assert cur.execute("FETCH c").fetchall() == [(1,)]
        assert cur.execute("FETCH 2 c").fetchall() == [(2,), (3,)]
        assert cur.statusmessage == "FETCH 2"
        assert cur.execute("FETCH c").fetchall() == []
        assert cur.statusmessage == "FETCH 0"
        cur.execute("DECLARE d NO SCROLL CURSOR WITHOUT HOLD FOR VALUES ('a'), ('b'), ('c')")
        cur.execute("MOVE 2 IN d")
        assert cur.statusmessage == "MOVE 2"
        assert cur.execute("FETCH ALL FROM d").fetchall() == [("c",)]
        assert sorted(cur.execute("SELECT name, is_holdable, is_binary, is_scrollable FROM pg_cursors").fetchall()) \
            == [("c", False, False, False), ("d", False, False, False)]
        cur.execute("CLOSE c")
        assert cur.statusmessage == "CLOSE CURSOR"
        cur.execute("CLOSE ALL")
        assert cur.execute("SELECT count(*) FROM pg_cursors").fetchone() == (0,)
        cur.execute("COMMIT")

        # each error names the cursor, with PostgreSQL's SQLSTATE, and ROLLBACK recovers
        for setup, bad, state in [
            ("", "FETCH nope", "34000"),
            ("", "CLOSE nope", "34000"),
            ("DECLARE c CURSOR FOR SELECT 1", "DECLARE c CURSOR FOR SELECT 2", "42P03"),
            ("DECLARE c CURSOR FOR SELECT 1", "FETCH BACKWARD 1 FROM c", "55000"),
            ("", "DECLARE c SCROLL CURSOR FOR SELECT 1", "0A000"),
            ("", "DECLARE c CURSOR WITH HOLD FOR SELECT 1", "0A000"),
            ("DECLARE c CURSOR FOR SELECT 1", "FETCH c WITH (TIMEOUT = '-1s')", "22023"),
            ("DECLARE c CURSOR FOR SELECT 1", "FETCH c WITH (TIMEOUT = '25h')", "22023"),
        ]:
            cur.execute("BEGIN")
            if setup:
                cur.execute(setup)
            with pytest.raises(psycopg.Error) as e:
                cur.execute(bad)
            assert _state(e.value) == state, (bad, e.value)
            cur.execute("ROLLBACK")
        # cursors end with their transaction
        cur.execute("BEGIN")
        cur.execute("DECLARE gone CURSOR FOR SELECT 1")
        cur.execute("COMMIT")
        cur.execute("BEGIN")
        with pytest.raises(psycopg.Error) as e:
            cur.execute("FETCH gone")
        assert _state(e.value) == "34000"
        cur.execute("ROLLBACK")
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_fetch_with_timeout_over_a_table_and_binary_cursor(server, k1000):
    with psycopg.connect(server.url) as c:
        cur = c.cursor()
        cur.execute("DECLARE t CURSOR FOR SELECT x FROM k1000 WHERE x < 5 ORDER BY x")
        assert cur.execute("FETCH 2 t WITH (TIMEOUT = '1s')").fetchall() == [(0,), (1,)]
        assert cur.execute("FETCH ALL t").fetchall() == [(2,), (3,), (4,)]
        cur.execute("DECLARE b BINARY CURSOR FOR SELECT x, 'v' || x AS s FROM k1000 WHERE x < 2 ORDER BY x")
        assert cur.execute("FETCH 2 b", binary=True).fetchall() == [(0, "v0"), (1, "v1")]
        c.rollback()


def test_named_cursor_streams_a_million_rows_in_bounded_server_memory(server, k1000):
    """psycopg's named (server-side) cursor over 1,000,000 rows: every row arrives once,
    and the server grows by far less than the result's size (the whole result used to be
    held three times over)."""
    pid = server.proc.pid
    base = _rss_mb(pid)
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mb(pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    n = total = 0
    try:
        with psycopg.connect(server.url) as c:
            with c.cursor("million") as cur:
                cur.itersize = 20_000
                cur.execute("SELECT a.x * 1000 + b.x AS v, 'row ' || a.x AS s FROM k1000 a, k1000 b")
                while rows := cur.fetchmany(20_000):
                    n += len(rows)
                    total += sum(r[0] for r in rows)
            c.commit()
    finally:
        done.set()
        sampler.join()
    assert n == 1_000_000
    assert total == sum(range(1_000_000))
    assert peak[0] - base < 100, f"server grew by {peak[0] - base:.0f} MB while streaming"


def test_pandas_read_sql_chunksize(server, k1000):
    import pandas as pd  # both declared dependencies (pandas; SQLAlchemy in the test extra): never skipped
    import sqlalchemy as sa
    engine = sa.create_engine(server.url.replace("postgresql://", "postgresql+psycopg://"))
    query = "SELECT a.x * 1000 + b.x AS v FROM k1000 a, k1000 b WHERE a.x < 25 ORDER BY v"
    try:
        # stream_results: SQLAlchemy's server-side cursor, that is DECLARE and FETCH
        with engine.connect().execution_options(stream_results=True) as conn:
            chunks = list(pd.read_sql(sa.text(query), conn, chunksize=10_000))
        with engine.connect() as conn:
            plain = list(pd.read_sql(sa.text(query), conn, chunksize=10_000))
    finally:
        engine.dispose()
    assert [len(df) for df in chunks] == [10_000, 10_000, 5_000]
    assert pd.concat(chunks)["v"].tolist() == list(range(25_000))
    assert [len(df) for df in plain] == [10_000, 10_000, 5_000]


def test_closing_a_portal_mid_stream_leaves_the_session_usable(server, k1000):
    """A psycopg named cursor closed after its first rows ends the peek; the session
    runs the next statements normally."""
    with psycopg.connect(server.url) as c:
        with c.cursor("partial") as cur:
            cur.execute("SELECT a.x AS v FROM k1000 a, k1000 b")
            assert len(cur.fetchmany(10)) == 10
        c.commit()
        assert c.execute("SELECT count(*) FROM k1000").fetchone() == (1000,)
        assert c.execute("SELECT count(*) FROM pg_cursors").fetchone() == (0,)
