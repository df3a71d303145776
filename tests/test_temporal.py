"""Temporal filters and the mz_timestamp type through the wire (Materialize's SQL
reference, "Temporal filters" and "mz_timestamp type"): a row enters and leaves a
materialized view or a SUBSCRIBE at the times ``mz_now()``'s comparisons give, with no
write, at exactly those times."""

from __future__ import annotations

import time

import psycopg
import pytest

#: longest wait for a row to enter or leave (seconds); the tests wait for a state, not a time
WAIT_S = 90


def _until(conn, sql: str, want: list, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    got = None
    while time.monotonic() < deadline:
        got = sorted(conn.execute(sql).fetchall())
        if got == want:
            return
        time.sleep(0.3)
    raise AssertionError(f"{what}: {got} != {want}")


def test_mz_timestamp_type_and_casts(conn):
    assert conn.execute("SELECT pg_typeof(mz_now())::text").fetchone() == ("mz_timestamp",)
    assert conn.execute("SELECT '2024-01-01 00:00:00+00'::mz_timestamp::text, 42::mz_timestamp::text, "
                        "1704067200000::mz_timestamp::timestamptz = '2024-01-01 00:00:00+00'::timestamptz, "
                        "5::mz_timestamp < now(), mz_now() > '2020-01-01'::timestamptz, "
                        "'18446744073709551615'::mz_timestamp::numeric").fetchone() == (
        "1704067200000", "42", True, True, True, 18446744073709551615)
    for bad, state in (("SELECT (-1)::mz_timestamp", "22003"), ("SELECT 'xyz'::mz_timestamp", "22P02"),
                       ("SELECT 1.5::mz_timestamp", "22003"), ("SELECT true::mz_timestamp", "42846")):
        with pytest.raises(psycopg.Error) as e:
            conn.execute(bad)
        assert e.value.sqlstate == state, bad
    # on table data, the same casts (Spark)
    conn.execute("CREATE TABLE tf_cast (ts timestamptz, n bigint)")
    try:
        conn.execute("INSERT INTO tf_cast VALUES ('2024-01-01 00:00:01+00', 7), (NULL, NULL)")
        assert sorted(conn.execute("SELECT ts::mz_timestamp::text, n::mz_timestamp::text, "
                                   "n::mz_timestamp < ts FROM tf_cast").fetchall(), key=str) == [
            ("1704067201000", "7", True), (None, None, None)]
        conn.execute("INSERT INTO tf_cast VALUES (NULL, -3)")
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SELECT n::mz_timestamp FROM tf_cast")
        assert e.value.sqlstate == "22003"
    finally:
        conn.execute("DROP TABLE tf_cast")


def test_row_leaves_and_enters_a_materialized_view_with_no_write(conn):
    conn.execute("CREATE TABLE tf_events (id int, ts timestamptz)")
    try:
        conn.execute("INSERT INTO tf_events VALUES (1, now()), (2, now() + interval '1 hour'), (3, NULL), "
                     "(4, now() - interval '1 hour')")
        conn.execute("CREATE MATERIALIZED VIEW tf_recent AS SELECT id FROM tf_events "
                     "WHERE mz_now() < ts + INTERVAL '4 seconds' AND id > 0")
        conn.execute("CREATE MATERIALIZED VIEW tf_soon AS SELECT id FROM tf_events "
                     "WHERE mz_now() >= ts + INTERVAL '3 seconds' AND mz_now() <= ts + INTERVAL '1 day'")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN INCREMENTAL PLAN FOR MATERIALIZED VIEW tf_recent"))
        assert "Temporal" in plan and "pending updates" in plan
        assert sorted(conn.execute("SELECT * FROM tf_recent").fetchall()) in ([(1,), (2,)], [(2,)])
        # No write: row 1 leaves once mz_now() passes its ts + 4 s; row 1 enters tf_soon.
        _until(conn, "SELECT * FROM tf_recent", [(2,)], "row 1 left")
        _until(conn, "SELECT * FROM tf_soon", [(1,), (4,)], "row 1 entered")
        # A row written already expired never shows; one written for later shows now.
        conn.execute("INSERT INTO tf_events VALUES (5, now() - interval '10 seconds'), (6, now())")
        assert sorted(conn.execute("SELECT * FROM tf_recent").fetchall()) in ([(2,), (6,)], [(2,)])
        _until(conn, "SELECT * FROM tf_recent", [(2,)], "row 6 left")
        # Each AS OF read is the query at that time: the view's history is exact.
        t = int(conn.execute("SELECT mz_now()::text").fetchone()[0])
        expected = conn.execute(f"SELECT id FROM tf_events WHERE {t}::mz_timestamp < ts + INTERVAL '4 seconds'"
                                f" AND id > 0 ORDER BY id").fetchall()
        assert sorted(conn.execute(f"SELECT * FROM tf_recent AS OF {t}").fetchall()) == expected
    finally:
        conn.execute("DROP TABLE tf_events CASCADE")


def test_subscribe_emits_a_rows_exit_at_its_time(server, conn):
    conn.execute("CREATE TABLE tf_sub (id int, ts timestamptz)")
    try:
        conn.execute("INSERT INTO tf_sub VALUES (1, now())")
        expiry = int(conn.execute("SELECT (ts + INTERVAL '3 seconds')::mz_timestamp::text FROM tf_sub")
                     .fetchone()[0])
        with server.connect() as sub:
            sub.execute("BEGIN")
            sub.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT id FROM tf_sub WHERE "
                        "mz_now() < ts + INTERVAL '3 seconds')")
            first = sub.execute("FETCH ALL c WITH (TIMEOUT = '60s')").fetchall()
            assert [(r[1], r[2]) for r in first] == [(1, 1)]
            got = []
            deadline = time.monotonic() + WAIT_S
            while not got and time.monotonic() < deadline:
                got = sub.execute("FETCH ALL c WITH (TIMEOUT = '5s')").fetchall()
            assert [(int(r[0]), r[1], r[2]) for r in got] == [(expiry, -1, 1)]
            sub.execute("COMMIT")
    finally:
        conn.execute("DROP TABLE tf_sub")


def test_subscribe_over_constants_with_a_temporal_filter(conn):
    # as_of.slt's records: each row at the time it enters; the greatest time included
    conn.execute("CREATE VIEW tf_over_time AS VALUES ('joe', 100), ('mike', 101), ('sam', 200), "
                 "('end', 18446744073709551615)")
    conn.execute("CREATE VIEW tf_const AS SELECT * FROM tf_over_time WHERE mz_now() >= column2")
    try:
        conn.execute("BEGIN")
        conn.execute("DECLARE c CURSOR FOR SUBSCRIBE tf_const AS OF 0")
        got = [(int(r[0]), r[1], r[2]) for r in conn.execute("FETCH ALL c").fetchall()]
        conn.execute("COMMIT")
        assert got == [(100, 1, "joe"), (101, 1, "mike"), (200, 1, "sam"), (18446744073709551615, 1, "end")]
        assert conn.execute("SELECT column1 FROM tf_const AS OF 101 ORDER BY 1").fetchall() == [("joe",), ("mike",)]
    finally:
        conn.execute("ROLLBACK") if conn.info.transaction_status else None
        conn.execute("DROP VIEW tf_const")
        conn.execute("DROP VIEW tf_over_time")


@pytest.mark.parametrize("query", [
    "SELECT mz_now() FROM tf_bad",
    "SELECT id FROM tf_bad WHERE mz_now() < ts OR id = 1",
    "SELECT id FROM tf_bad WHERE mz_now() <> ts",
    "SELECT id FROM tf_bad WHERE mz_now() < mz_now()",
])
def test_mz_now_outside_a_temporal_filter_is_refused(conn, query):
    conn.execute("CREATE TABLE IF NOT EXISTS tf_bad (id int, ts timestamptz)")
    with pytest.raises(psycopg.Error) as e:
        conn.execute(f"CREATE MATERIALIZED VIEW tf_bad_v AS {query}")
    assert e.value.sqlstate == "0A000"
    assert conn.execute("SELECT count(*) FROM mz_materialized_views WHERE name = 'tf_bad_v'").fetchone() == (0,)
