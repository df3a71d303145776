"""SUBSCRIBE through the wire: a cursor over a table's changes as other sessions write."""

from __future__ import annotations

from decimal import Decimal

import psycopg
import pytest


def test_subscribe_follows_a_table(server, conn):
    conn.execute("CREATE TABLE followed (a int, b text)")
    conn.execute("INSERT INTO followed VALUES (1, 'x')")
    conn.autocommit = False
    conn.execute("DECLARE c CURSOR FOR SUBSCRIBE followed WITH (PROGRESS)")
    cur = conn.execute("FETCH ALL c WITH (TIMEOUT = '2s')")
    assert [d.name for d in cur.description] == ["mz_timestamp", "mz_progressed", "mz_diff", "a", "b"]
    rows = cur.fetchall()
    snapshot = [r for r in rows if not r[1]]
    assert [(r[2], r[3], r[4]) for r in snapshot] == [(1, 1, "x")]
    t0 = snapshot[0][0]
    assert any(r[1] for r in rows)  # a progress message follows the snapshot
    with server.connect() as other:
        other.execute("INSERT INTO followed VALUES (2, 'y')")
        other.execute("UPDATE followed SET b = 'z' WHERE a = 1")
    seen = []
    for _ in range(20):
        seen += [r for r in conn.execute("FETCH ALL c WITH (TIMEOUT = '1s')").fetchall() if not r[1]]
        if len(seen) >= 3:
            break
    changes = sorted((r[2], r[3], r[4]) for r in seen)
    assert changes == [(-1, 1, "x"), (1, 1, "z"), (1, 2, "y")]
    assert all(isinstance(r[0], Decimal) and r[0] > t0 for r in seen)
    conn.rollback()


def test_fetch_waits_no_longer_than_its_timeout(conn):
    import time

    conn.execute("CREATE TABLE quiet (a int)")
    conn.autocommit = False
    conn.execute("DECLARE q CURSOR FOR SUBSCRIBE quiet WITH (SNAPSHOT = false)")
    t = time.monotonic()
    assert conn.execute("FETCH 1 q WITH (TIMEOUT = '0.5s')").fetchall() == []
    assert time.monotonic() - t < 5
    conn.rollback()
    with pytest.raises(psycopg.errors.InvalidCursorName):
        conn.execute("FETCH q")
    conn.rollback()


def test_psql_copy_subscribe_shows_rows_as_they_land(server, conn):
    import shutil
    import subprocess

    if shutil.which("psql") is None or shutil.which("stdbuf") is None:
        pytest.skip("psql (PostgreSQL's client) or stdbuf (coreutils) is not installed")
    conn.execute("CREATE TABLE watched (a int)")
    conn.execute("INSERT INTO watched VALUES (1)")
    # psql writes COPY data through stdio: line-buffer it (stdbuf) to read rows as they come.
    p = subprocess.Popen(["stdbuf", "-oL", "psql", server.url, "-c", "COPY (SUBSCRIBE watched) TO STDOUT"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline().split("\t")
        assert first[1:] == ["1", "1\n"]
        conn.execute("INSERT INTO watched VALUES (2)")
        second = p.stdout.readline().split("\t")
        assert second[1:] == ["1", "2\n"] and int(second[0]) > int(first[0])
    finally:
        p.kill()
        p.wait()
    # The server dropped the subscription with the connection: the session still works.
    assert conn.execute("SELECT count(*) FROM watched").fetchone()[0] == 2


def test_subscribe_over_a_join_and_aggregate_is_a_dataflow(server, conn):
    """A query that is more than a filter of one table: its changes come from the
    dataflow on the session's cluster (``_QueryDataflow``), one per write, at its time."""
    conn.execute("CREATE TABLE sub_o (id int, c int, amount int)")
    conn.execute("CREATE TABLE sub_c (id int, name text)")
    try:
        conn.execute("INSERT INTO sub_c VALUES (1, 'ann'), (2, 'bob')")
        conn.execute("INSERT INTO sub_o VALUES (1, 1, 10), (2, 2, 5)")
        with server.connect() as sub:
            sub.execute("BEGIN")
            sub.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT name, sum(amount) AS total FROM sub_o "
                        "JOIN sub_c ON sub_c.id = sub_o.c GROUP BY name)")
            first = sub.execute("FETCH ALL c WITH (TIMEOUT = '60s')").fetchall()
            assert sorted((r[1], r[2], r[3]) for r in first) == [(1, "ann", 10), (1, "bob", 5)]
            conn.execute("INSERT INTO sub_o VALUES (3, 1, 7)")
            got = []
            while len(got) < 2:
                more = sub.execute("FETCH ALL c WITH (TIMEOUT = '60s')").fetchall()
                assert more, "no change within 60 s"
                got += more
            assert sorted((r[1], r[2], r[3]) for r in got) == [(-1, "ann", 10), (1, "ann", 17)]
            assert len({r[0] for r in got}) == 1  # one write, one time
            sub.execute("COMMIT")
    finally:
        conn.execute("DROP TABLE sub_o")
        conn.execute("DROP TABLE sub_c")


def test_idle_subscription_progresses_and_up_to_ends(conn):
    """An idle table's frontier advances about once a second (a progress row each time),
    and a subscription ends once its frontier passes UP TO, written to or not."""
    import time

    conn.execute("CREATE TABLE idle (a int)")
    conn.execute("INSERT INTO idle VALUES (1)")
    ts = int(conn.execute("SELECT mz_now()").fetchone()[0])
    rows = conn.execute(f"SUBSCRIBE idle AS OF {ts} UP TO {ts} + 1").fetchall()
    assert [r[1:] for r in rows] == [(1, 1)]
    conn.autocommit = False
    conn.execute("DECLARE p CURSOR FOR SUBSCRIBE idle WITH (PROGRESS, SNAPSHOT = false)")
    progress: list = []
    deadline = time.monotonic() + 60
    while len(progress) < 3 and time.monotonic() < deadline:
        progress += [r[0] for r in conn.execute("FETCH ALL p WITH (TIMEOUT = '1s')").fetchall() if r[1]]
    assert len(progress) >= 3 and progress == sorted(set(progress))
    conn.rollback()


def test_within_timestamp_order_by(conn):
    conn.execute("CREATE TABLE ordered (k int, v text)")
    conn.execute("INSERT INTO ordered VALUES (1, 'a'), (3, NULL), (2, 'c'), (NULL, 'b')")
    ts = int(conn.execute("SELECT mz_now()").fetchone()[0])

    def sub(order: str) -> list:
        rows = conn.execute(f"SUBSCRIBE ordered WITHIN TIMESTAMP ORDER BY {order} AS OF {ts} UP TO {ts} + 1")
        return [r[2:] for r in rows.fetchall()]

    assert [r[0] for r in sub("k DESC")] == [None, 3, 2, 1]
    assert [r[0] for r in sub("k")] == [1, 2, 3, None]
    assert [r[0] for r in sub("k DESC NULLS LAST")] == [3, 2, 1, None]
    assert [r[1] for r in sub("mz_diff, v ASC NULLS FIRST")] == [None, "a", "b", "c"]
    with pytest.raises(psycopg.errors.UndefinedColumn):
        conn.execute("SUBSCRIBE ordered WITHIN TIMESTAMP ORDER BY nope")


def test_subscribe_follows_a_table_of_arrays_lists_and_maps(conn):
    # their values are Python lists and dicts: the update counters key rows by value
    conn.execute("CREATE TABLE sub_nested (k int, a int[], l int list, m map[text=>int])")
    conn.execute("INSERT INTO sub_nested VALUES (1, '{1,NULL}', LIST[1,NULL], '{a=>1,b=>NULL}')")
    conn.execute("BEGIN")
    conn.execute("DECLARE c CURSOR FOR SUBSCRIBE sub_nested")
    first = conn.execute("FETCH ALL c WITH (timeout = '10s')").fetchall()
    assert [r[1:] for r in first] == [(1, 1, [1, None], "{1,NULL}", "{a=>1,b=>NULL}")]
    with psycopg.connect(conn.info.dsn, autocommit=True) as w:
        w.execute("UPDATE sub_nested SET k = 2")
    changed = []
    while len(changed) < 2:
        changed += conn.execute("FETCH ALL c WITH (timeout = '10s')").fetchall()
    assert sorted(r[1:] for r in changed) == [(-1, 1, [1, None], "{1,NULL}", "{a=>1,b=>NULL}"),
                                              (1, 2, [1, None], "{1,NULL}", "{a=>1,b=>NULL}")]
    conn.execute("COMMIT")
    conn.execute("DROP TABLE sub_nested")
