"""statement_timeout bounds the whole statement (PostgreSQL 19.11.2): one deadline, computed
when the statement starts (``sqlfront.statement.StatementContext``), for every wait in it:
a materialized view's upper, replicas racing the peek, each streamed batch. The setting's
units are PostgreSQL's (``sqlfront.vars.parse_duration_ms``)."""

from __future__ import annotations

import os
import signal
import threading
import time

import psycopg
import pytest

from catalog.errors import SqlError
from sqlfront.statement import StatementContext
from sqlfront.vars import SessionVars, parse_duration_ms


@pytest.mark.parametrize("value, ms", [
    ("0", 0), ("250", 250), ("2s", 2000), (" 2 s ", 2000), ("1.5min", 90_000), ("1h", 3_600_000),
    ("1d", 86_400_000), ("1500us", 2), (".5s", 500), ("100ms", 100), ("2147483647", 2**31 - 1),
])
def test_durations_in_postgresqls_units(value, ms):
    assert parse_duration_ms(value) == ms


@pytest.mark.parametrize("value, message, hint", [
    ("5S", 'invalid value for parameter "statement_timeout": "5S"',
     'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".'),
    ("2 sec", 'invalid value for parameter "statement_timeout": "2 sec"',
     'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".'),
    ("abc", 'invalid value for parameter "statement_timeout": "abc"', None),
    ("", 'invalid value for parameter "statement_timeout": ""', None),
    ("100d", 'invalid value for parameter "statement_timeout": "100d"', "Value exceeds integer range."),
    ("-1", '-1 ms is outside the valid range for parameter "statement_timeout" (0 ms .. 2147483647 ms)', None),
])
def test_bad_durations_are_22023_with_postgresqls_messages(value, message, hint):
    with pytest.raises(SqlError) as ei:
        parse_duration_ms(value)
    assert (ei.value.sqlstate, ei.value.message, ei.value.hint) == ("22023", message, hint)


def test_session_reads_the_parsed_timeout():
    v = SessionVars({"options": "-c statement_timeout=1min"})
    assert v.statement_timeout_s() == 60
    v.set("statement_timeout", "1500")
    assert (v.get("statement_timeout"), v.statement_timeout_s()) == ("1500", 1.5)
    v.set("statement_timeout", None)
    assert v.statement_timeout_s() is None


def test_one_deadline_from_the_statements_start():
    cancel = threading.Event()
    st = StatementContext.start(2.0, cancel, now=100.0)
    assert (st.started, st.deadline) == (100.0, 102.0)
    assert StatementContext.start(None, cancel).deadline is None
    assert st.unbounded().deadline is None and st.unbounded().cancel is cancel
    past = StatementContext.start(0.001, cancel, now=time.monotonic() - 1)
    assert past.remaining() == 0.0
    with pytest.raises(SqlError) as ei:
        past.check()
    assert (ei.value.sqlstate, ei.value.message) == ("57014", "canceling statement due to statement timeout")
    cancel.set()
    with pytest.raises(SqlError, match="due to user request"):
        StatementContext.start(None, cancel).check()


#: 800,000 rows in ~10,000-row batches: streaming them takes far longer than the timeout,
#: a few batches at a time (fewer than the 1,000,000 that would send them through Blob)
STREAMED = "SELECT v.a, g, g::text || 'x' FROM tmo_v v, generate_series(1, 400000) g"


def _replica_pid(server, conn, cluster: str) -> int:
    rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                       " WHERE c.name = %s ORDER BY r.name LIMIT 1", (cluster,)).fetchone()[0]
    return int((server.data_dir / "replicas" / rid / "pid").read_text())


def test_one_timeout_across_view_wait_replica_race_and_stream(server, conn):
    """A SELECT that waits for a materialized view's upper (a write into its input just
    before, and its cluster's replica frozen for the first 0.5 s), then races the replicas,
    then streams a result that takes far longer than its timeout to send: the statement's
    one deadline ends it with 57014 about 2 s after it started, wherever it is then. (With
    a deadline started afresh by each phase, a statement whose phases each take under 2 s
    ran on, here through the whole stream.)"""
    conn.execute("CREATE TABLE tmo_t (a int)")
    conn.execute("INSERT INTO tmo_t VALUES (1)")
    conn.execute("CREATE MATERIALIZED VIEW tmo_v IN CLUSTER quickstart AS SELECT a FROM tmo_t")
    try:
        conn.execute("SET statement_timeout = '2s'")
        conn.execute("INSERT INTO tmo_t VALUES (2)")  # the view lags until its next round
        pid = _replica_pid(server, conn, "quickstart")
        os.kill(pid, signal.SIGSTOP)
        thaw = threading.Timer(0.5, os.kill, (pid, signal.SIGCONT))
        start = time.monotonic()
        thaw.start()
        try:
            with pytest.raises(psycopg.errors.QueryCanceled) as ei, conn.cursor() as cur:
                for _ in cur.stream(STREAMED):
                    pass
            elapsed = time.monotonic() - start
        finally:
            thaw.join()
            os.kill(pid, signal.SIGCONT)
        assert ei.value.diag.message_primary == "canceling statement due to statement timeout"
        # 2 s, and at most one batch (or one 0.25 s poll) more: 2.5 s leaves room for a busy machine
        assert elapsed < 2.5, f"ended {elapsed:.2f} s after it started"
    finally:
        conn.execute("RESET statement_timeout")
        conn.execute("DROP TABLE tmo_t CASCADE")
