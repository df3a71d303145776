"""A small Coordinator: metrics, the fast path, and isolation between clusters."""

from __future__ import annotations

import os
import signal
import threading
import time
import urllib.request
from decimal import Decimal

import pytest

from server import wait_for

EXPRESSIONS = [
    "1 + 2", "7 / 2", "-7 % 3", "2.5::int", "1.5 * 3", "10.0 / 4", "'a' || 'b'", "upper('x')",
    "length('héllo')", "substr('hello', 2, 3)", "abs(-3)", "coalesce(NULL, 2)", "nullif(1, 1)",
    "greatest(1, 3, 2)", "CASE WHEN 1 > 2 THEN 'x' ELSE 'y' END", "1 IN (2, NULL)", "NULL::int IS NULL",
    "true AND NULL", "false OR NULL", "'abc' LIKE 'a%'", "3 BETWEEN 1 AND 2", "round(2.345, 2)",
    "date '2024-01-31' + 1", "date '2024-03-01' - date '2024-02-01'", "'2024-01-02'::date",
    "'x' < 'y'", "2147483647::bigint + 1", "1.0::float8 / 3", "floor(2.7)", "'  a '::char(4) = 'a'",
]


def test_fast_path_and_spark_agree(conn):
    conn.execute("CREATE TABLE one (x int)")
    conn.execute("INSERT INTO one VALUES (1)")
    try:
        for expr in EXPRESSIONS:
            fast = conn.execute(f"SELECT {expr}").fetchone()
            spark = conn.execute(f"SELECT {expr} FROM one").fetchone()
            if isinstance(fast[0], Decimal) and isinstance(spark[0], Decimal):
                assert fast[0] == spark[0], expr  # equal values (scales may differ)
            else:
                assert fast == spark, expr
    finally:
        conn.execute("DROP TABLE one")


def test_metrics_over_http_and_sql(server, conn):
    conn.execute("CREATE TABLE m (a int)")
    conn.execute("INSERT INTO m VALUES (1)")
    conn.execute("SELECT * FROM m").fetchall()
    conn.execute("DROP TABLE m")
    text = urllib.request.urlopen(server.metrics_url, timeout=10).read().decode()
    assert "coordinator_busy_seconds_total" in text
    assert 'coordinator_command_duration_seconds_bucket{kind="transact"' in text
    assert 'peeks_total{cluster="quickstart",outcome="success"}' in text
    assert 'peek_duration_seconds_bucket{cluster="quickstart"' in text
    assert 'replicas{status="healthy"}' in text
    busy, wall, commands = conn.execute(
        "SELECT busy_seconds, wall_seconds, commands FROM mz_internal.mz_coordinator_loop").fetchone()
    assert commands >= 2 and 0 < busy < wall
    n = conn.execute("SELECT count FROM mz_internal.mz_peek_durations"
                     " WHERE cluster = 'quickstart' AND outcome = 'success' AND le_seconds IS NULL").fetchone()[0]
    assert n >= 1


@pytest.mark.slow
def test_frozen_cluster_does_not_stall_others(server, conn):
    conn.execute("CREATE CLUSTER frozen REPLICAS (r1 (SIZE '1'))")
    conn.execute("CREATE TABLE iso (a int)")
    conn.execute("INSERT INTO iso VALUES (1), (2)")
    rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                       " WHERE c.name = 'frozen'").fetchone()[0]
    assert wait_for(lambda: conn.execute(f"SELECT status FROM mz_cluster_replicas WHERE id = '{rid}'")
                    .fetchone()[0] == "healthy", 180)
    pid = int((server.data_dir / "replicas" / rid / "pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    waiting_results = []

    def waiter():
        with server.connect() as c:
            c.execute("SET cluster = frozen")
            waiting_results.append(c.execute("SELECT count(*) FROM iso").fetchone())

    waiters = [threading.Thread(target=waiter) for _ in range(8)]
    try:
        for t in waiters:
            t.start()
        time.sleep(1)
        # Cluster quickstart keeps serving, and DDL goes through, while frozen's peeks wait.
        for _ in range(5):
            assert conn.execute("SELECT sum(a) FROM iso").fetchone() == (3,)
        conn.execute("CREATE TABLE iso2 (b int)")
        conn.execute("ALTER CLUSTER quickstart SET (MANAGED = false)")
        conn.execute("CREATE CLUSTER REPLICA quickstart.extra REMOTE ('sc://127.0.0.1:9')")
        conn.execute("DROP CLUSTER REPLICA quickstart.extra")
        conn.execute("ALTER CLUSTER quickstart SET (MANAGED)")
        conn.execute("DROP TABLE iso2")
        assert waiting_results == []
    finally:
        os.kill(pid, signal.SIGCONT)
    for t in waiters:
        t.join(180)
    assert waiting_results == [(2,)] * 8
    conn.execute("DROP TABLE iso")
    conn.execute("DROP CLUSTER frozen")


def test_now_and_current_date_on_both_paths(conn):
    import datetime as dt

    conn.execute("CREATE TABLE one_now (x int)")
    conn.execute("INSERT INTO one_now VALUES (1)")
    try:
        before = dt.datetime.now(dt.timezone.utc)
        fast = conn.execute("SELECT now(), current_timestamp, current_date").fetchone()
        spark = conn.execute("SELECT now(), now() = current_timestamp FROM one_now").fetchone()
        after = dt.datetime.now(dt.timezone.utc)
        assert fast[0] == fast[1] and before - dt.timedelta(seconds=1) <= fast[0] <= after
        assert fast[2] == before.date() or fast[2] == after.date()
        assert before - dt.timedelta(seconds=1) <= spark[0] <= after and spark[1] is True
        assert conn.execute("SELECT now()::text LIKE '%+00'").fetchone() == (True,)
    finally:
        conn.execute("DROP TABLE one_now")
