"""Queries evaluated in Python (the fast path: constants, system tables) stop on
statement_timeout, on a CancelRequest and on max_query_heap_size, through the wire; the
session goes on afterwards, and catalog queries are unaffected."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from catalog.errors import SqlError
from sqlfront.vars import SessionVars

#: 9 million rows in Python: minutes of work and gigabytes without limits
CROSS_JOIN = "SELECT count(*) FROM generate_series(1, 3000) a, generate_series(1, 3000) b"

#: generous bound for a stop that should take milliseconds (the machine may be busy)
STOP_WITHIN_S = 15

#: what psql's \dt sends (PostgreSQL 16), a pg_catalog join with CASE and ORDER BY
PSQL_DT = """
SELECT n.nspname as "Schema", c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
    WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table'
    WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2
"""


def run_failing(conn, sql: str) -> tuple[psycopg.Error, float]:
    t = time.monotonic()
    with pytest.raises(psycopg.Error) as ei:
        conn.execute(sql).fetchall()
    return ei.value, time.monotonic() - t


def test_statement_timeout_stops_python_cross_join(conn):
    conn.execute("SET max_query_heap_size = 0")  # no budget: only the timeout can stop it
    conn.execute("SET statement_timeout = '500ms'")
    e, took = run_failing(conn, CROSS_JOIN)
    assert e.sqlstate == "57014"
    assert e.diag.message_primary == "canceling statement due to statement timeout"
    assert took < STOP_WITHIN_S
    conn.execute("RESET statement_timeout")
    assert conn.execute("SELECT count(*) FROM generate_series(1, 100) a, generate_series(1, 100) b").fetchone() == (10000,)


def test_cancel_request_stops_python_cross_join(conn):
    conn.execute("SET max_query_heap_size = 0")
    timer = threading.Timer(0.5, conn.cancel)
    timer.start()
    try:
        e, took = run_failing(conn, CROSS_JOIN)
    finally:
        timer.join()
    assert e.sqlstate == "57014"
    assert e.diag.message_primary == "canceling statement due to user request"
    assert took < STOP_WITHIN_S
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_heap_budget_stops_oversized_query_and_session_goes_on(conn):
    conn.execute("SET max_query_heap_size = '16MB'")
    e, took = run_failing(conn, CROSS_JOIN)
    assert e.sqlstate == "53200"
    assert "max_query_heap_size" in e.diag.message_primary
    assert took < STOP_WITHIN_S
    # the same session answers the next query, in and out of Python
    assert conn.execute("SELECT count(*) FROM generate_series(1, 1000)").fetchone() == (1000,)
    assert conn.execute("SELECT count(*) FROM mz_catalog.mz_clusters WHERE name = 'quickstart'").fetchone() == (1,)


def test_query_too_big_for_the_session_thread_is_answered_by_a_worker_process(conn):
    # 1 million rows: past sqlfront.pyworker.INLINE_HEAP_BYTES, within max_query_heap_size
    big = "SELECT count(*), sum(a * b) FROM generate_series(1, 1000) a, generate_series(1, 1000) b"
    assert conn.execute(big).fetchone() == (1000000, 250500250000)
    # a cancel kills the worker mid-query; the next big query gets a new one
    conn.execute("SET statement_timeout = '200ms'")
    e, _ = run_failing(conn, CROSS_JOIN)
    assert e.sqlstate == "57014"
    conn.execute("RESET statement_timeout")
    assert conn.execute(big).fetchone() == (1000000, 250500250000)
    # system tables reach the worker too, the ones subqueries read included
    n = conn.execute("SELECT count(*) FROM pg_catalog.pg_attribute").fetchone()[0]
    assert conn.execute(
        "SELECT count(*) FROM (SELECT attrelid FROM pg_catalog.pg_attribute) a,"
        " (SELECT attnum FROM pg_catalog.pg_attribute) b"
        " WHERE b.attnum >= (SELECT min(attnum) FROM pg_catalog.pg_attribute)").fetchone() == (n * n,)


def test_heap_budget_stops_oversized_system_table_join(conn):
    conn.execute("SET max_query_heap_size = '4MB'")
    e, _ = run_failing(conn, "SELECT count(*) FROM pg_catalog.pg_attribute a, pg_catalog.pg_attribute b")
    assert e.sqlstate == "53200"


def test_heap_budget_stops_oversized_query_inside_a_transaction_until_rollback(conn):
    conn.execute("BEGIN")
    conn.execute("SET max_query_heap_size = '16MB'")
    e, _ = run_failing(conn, CROSS_JOIN)
    assert e.sqlstate == "53200"
    e, _ = run_failing(conn, "SELECT 1")
    assert e.sqlstate == "25P02"
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_max_query_heap_size_show_set_reset_and_bad_values(conn):
    assert conn.execute("SHOW max_query_heap_size").fetchone() == ("256MB",)
    conn.execute("SET max_query_heap_size = '1GB'")
    assert conn.execute("SHOW max_query_heap_size").fetchone() == ("1GB",)
    conn.execute("SET max_query_heap_size = 1000000")
    assert conn.execute("SHOW max_query_heap_size").fetchone() == ("1000000",)
    conn.execute("RESET max_query_heap_size")
    assert conn.execute("SHOW max_query_heap_size").fetchone() == ("256MB",)
    for bad in ("'lots'", "'-1MB'", "'1.5GB'", "'10 parsecs'"):
        with pytest.raises(psycopg.Error) as ei:
            conn.execute(f"SET max_query_heap_size = {bad}")
        assert ei.value.sqlstate == "22023"


def test_catalog_queries_unaffected_by_tight_limits(conn):
    conn.execute("CREATE TABLE limits_catalog_probe (a int)")
    try:
        expected = conn.execute(PSQL_DT).fetchall()
        conn.execute("SET max_query_heap_size = '8MB'")
        conn.execute("SET statement_timeout = '30s'")
        assert conn.execute(PSQL_DT).fetchall() == expected
        assert ("public", "limits_catalog_probe", "table", "materialize") in expected
        cols = conn.execute(
            "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a"
            " JOIN pg_catalog.pg_class c ON c.oid = a.attrelid"
            " WHERE c.relname = 'limits_catalog_probe' AND a.attnum > 0 AND NOT a.attisdropped"
            " ORDER BY a.attnum").fetchall()
        assert cols == [("a", "integer")]
    finally:
        conn.execute("DROP TABLE limits_catalog_probe")


def test_server_default_of_max_query_heap_size_is_what_reset_restores():
    v = SessionVars({}, {"max_query_heap_size": "64MB"}, superuser=True)
    assert v.get("max_query_heap_size") == "64MB"
    assert v.max_query_heap_bytes() == 64 << 20
    v.set("max_query_heap_size", "0")
    assert v.max_query_heap_bytes() is None  # 0: no limit
    v.set("max_query_heap_size", None)
    assert v.get("max_query_heap_size") == "64MB"
    assert SessionVars().get("max_query_heap_size") == "256MB"
    with pytest.raises(SqlError) as ei:
        v.set("max_query_heap_size", "12 furlongs")
    assert ei.value.sqlstate == "22023"


def test_long_sort_in_python_is_sorted_in_runs_with_postgres_order(conn):
    # 40000 rows: longer than interpret.SORT_RUN, so sorted in runs and merged
    rows = conn.execute("SELECT nullif(a % 97, 5) AS k, a FROM generate_series(1, 40000) a"
                        " ORDER BY k DESC NULLS LAST, a % 3, a DESC").fetchall()
    data = [(None if a % 97 == 5 else a % 97, a) for a in range(1, 40001)]
    expected = sorted(data, key=lambda r: (r[0] is None, -(r[0] or 0), r[1] % 3, -r[1]))
    assert rows == expected
