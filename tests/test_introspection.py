"""Materialize's introspection relations (issue 29) over the wire: columns as
Materialize's system catalog reference lists them ("mz_internal", "mz_catalog"), contents
as what the test did; and the web console's HTTP API (sqlfront.console) with a real HTTP
client. The SIGKILL test kills the replica of a cluster of its own, not the shared quickstart."""

from __future__ import annotations

import datetime
import json
import os
import signal
import urllib.error
import urllib.request

import psycopg
import pytest

from server import long_query, psql, run_in_background, wait_for

_ACTIVITY = [
    "execution_id", "sample_rate", "cluster_id", "application_name", "cluster_name", "database_name", "search_path",
    "transaction_isolation", "execution_timestamp", "transient_index_id", "params", "mz_version", "began_at",
    "finished_at", "finished_status", "error_message", "result_size", "rows_returned", "execution_strategy",
    "transaction_id", "prepared_statement_id", "sql_hash", "prepared_statement_name", "session_id", "prepared_at",
    "statement_type", "throttled_count", "connected_at", "initial_application_name", "authenticated_user", "sql"]
_PERCENTS = ["cpu_percent", "memory_percent", "disk_percent", "heap_percent", "swap_percent"]

#: relation -> its columns, in the order of Materialize's reference
MATERIALIZE_COLUMNS = {
    "mz_internal.mz_cluster_replica_statuses": ["replica_id", "process_id", "status", "reason", "updated_at"],
    "mz_internal.mz_cluster_replica_metrics": ["replica_id", "process_id", "cpu_nano_cores", "memory_bytes",
                                               "disk_bytes", "heap_bytes", "heap_limit", "swap_bytes"],
    "mz_internal.mz_cluster_replica_metrics_history": [
        "replica_id", "process_id", "cpu_nano_cores", "memory_bytes", "disk_bytes", "occurred_at", "heap_bytes",
        "heap_limit", "swap_bytes", "deployment_generation"],
    "mz_internal.mz_cluster_replica_utilization": ["replica_id", "process_id", *_PERCENTS],
    "mz_internal.mz_cluster_replica_utilization_history": ["replica_id", "process_id", *_PERCENTS, "occurred_at",
                                                           "deployment_generation"],
    "mz_internal.mz_sessions": ["id", "connection_id", "role_id", "client_ip", "connected_at"],
    "mz_internal.mz_recent_activity_log": _ACTIVITY,
    "mz_internal.mz_recent_activity_log_redacted": [c for c in _ACTIVITY if c not in ("error_message", "sql", "params")]
    + ["redacted_sql"],
    "mz_internal.mz_object_dependencies": ["object_id", "referenced_object_id"],
    "mz_internal.mz_storage_usage_by_shard": ["id", "shard_id", "size_bytes", "collection_timestamp"],
    "mz_internal.mz_comments": ["id", "object_type", "object_sub_id", "comment"],
    "mz_catalog.mz_types": ["id", "oid", "schema_id", "name", "category", "owner_id", "privileges", "create_sql",
                            "redacted_create_sql"],
    "mz_catalog.mz_functions": ["id", "oid", "schema_id", "name", "argument_type_ids", "variadic_argument_type_id",
                                "return_type_id", "returns_set", "owner_id"],
    "mz_internal.mz_object_arrangement_sizes": ["replica_id", "object_id", "size"],
}

LONG = long_query()


def _get(server, path: str):
    with urllib.request.urlopen(server.console_url + path, timeout=60) as r:
        return r.status, r.headers.get("content-type"), r.read()


def _api(server, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(server.console_url + path, method="GET" if body is None else "POST",
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return {"status": e.code, **json.load(e)}


def _records(data: dict) -> list[dict]:
    return [dict(zip(data["columns"], r)) for r in data["rows"]]


def test_relations_have_materializes_columns(conn):
    for rel, cols in MATERIALIZE_COLUMNS.items():
        cur = conn.execute(f"SELECT * FROM {rel} LIMIT 0")
        assert [d.name for d in cur.description] == cols, rel
    types = dict(conn.execute("SELECT c.name, c.type FROM mz_columns c JOIN mz_relations r ON r.id = c.id"
                              " WHERE r.name = 'mz_recent_activity_log' AND c.name IN"
                              " ('execution_id', 'began_at', 'rows_returned', 'search_path')").fetchall())
    assert types == {"execution_id": "uuid", "began_at": "timestamp with time zone", "rows_returned": "bigint",
                     "search_path": "text[]"}


def test_activity_log_and_sessions_show_what_a_session_did(server, conn):
    conn.execute("CREATE TABLE intro_t (a int, b text)")
    conn.execute("INSERT INTO intro_t VALUES (1, 'hush'), (2, 'hush'), (3, 'other')")
    assert conn.execute("SELECT a FROM intro_t WHERE b = 'hush' ORDER BY a").fetchall() == [(1,), (2,)]
    with pytest.raises(psycopg.errors.UndefinedColumn):
        conn.execute("SELECT nope FROM intro_t")
    # bound parameters: their text (the type's output), NULL for NULL; never in the redacted view
    when = datetime.date(2024, 7, 5)
    assert conn.execute("SELECT a FROM intro_t WHERE a = %s AND b = %s AND %s::date = %s AND %s IS NULL",
                        (2, "hush", when, when, None)).fetchall() == [(2,)]
    with server.connect() as other:
        sid, role, ip = other.execute("SELECT id, role_id, client_ip FROM mz_internal.mz_sessions"
                                      " WHERE connection_id = %s", (conn.info.backend_pid,)).fetchone()
        assert (role, ip) == ("u1", "127.0.0.1")
        log = other.execute(
            "SELECT sql, finished_status, rows_returned, execution_strategy, error_message, cluster_name,"
            " statement_type, finished_at >= began_at FROM mz_internal.mz_recent_activity_log"
            " WHERE session_id = %s ORDER BY began_at", (sid,)).fetchall()
        by_sql = {row[0]: row[1:] for row in log}
        assert by_sql["SELECT a FROM intro_t WHERE b = 'hush' ORDER BY a"] == (
            "success", 2, "standard", None, "quickstart", "select", True)
        status, rows, _, error, *_ = by_sql["SELECT nope FROM intro_t"]
        assert (status, rows) == ("error", None) and 'column "nope" does not exist' in error
        assert by_sql["CREATE TABLE intro_t (a int, b text)"][:2] == ("success", None)
        (params,) = other.execute("SELECT params FROM mz_internal.mz_recent_activity_log WHERE session_id = %s"
                                  " AND sql LIKE '%%AND %%::date = %%'", (sid,)).fetchone()
        assert params == ["2", "hush", "2024-07-05", "2024-07-05", None]
        redacted = [r[0] for r in other.execute("SELECT redacted_sql FROM mz_internal.mz_recent_activity_log_redacted"
                                                " WHERE session_id = %s", (sid,)).fetchall()]
        assert "SELECT a FROM intro_t WHERE b = '<REDACTED>' ORDER BY a" in redacted
        assert not any("hush" in r for r in redacted)
    # another role sees its own sessions' statements only (the log holds literals)
    conn.execute("CREATE ROLE intro_user LOGIN")
    with psycopg.connect(f"postgresql://intro_user@127.0.0.1:{server.port}/materialize", autocommit=True) as c:
        c.execute("SELECT 'mine'")
        for rel, col in (("mz_recent_activity_log", "sql"), ("mz_recent_activity_log_redacted", "redacted_sql")):
            seen = [r[0] for r in c.execute(f"SELECT {col} FROM mz_internal.{rel}").fetchall()]
            assert any("mine" in q or "<REDACTED>" in q for q in seen) and not any("intro_t" in q for q in seen)
    conn.execute("DROP ROLE intro_user")
    # the session leaves mz_sessions with its connection
    c2 = server.connect()
    pid = c2.info.backend_pid
    c2.close()
    assert wait_for(lambda: not conn.execute("SELECT 1 FROM mz_internal.mz_sessions WHERE connection_id = %s",
                                             (pid,)).fetchall(), 10)


def test_catalog_relations_follow_ddl(conn):
    conn.execute("CREATE TABLE intro_dep (a int, b text)")
    conn.execute("INSERT INTO intro_dep VALUES (1, 'x')")
    conn.execute("CREATE VIEW intro_v AS SELECT a FROM intro_dep")
    conn.execute("CREATE INDEX intro_i ON intro_dep (a)")
    conn.execute("COMMENT ON TABLE intro_dep IS 'dependencies'")
    conn.execute("COMMENT ON COLUMN intro_dep.b IS 'bee'")
    ids = dict(conn.execute("SELECT name, id FROM mz_objects WHERE name LIKE 'intro_%'").fetchall())
    deps = set(conn.execute("SELECT object_id, referenced_object_id FROM mz_internal.mz_object_dependencies"
                            " WHERE referenced_object_id = %s", (ids["intro_dep"],)).fetchall())
    assert deps == {(ids["intro_v"], ids["intro_dep"]), (ids["intro_i"], ids["intro_dep"])}
    assert conn.execute("SELECT object_type, object_sub_id, comment FROM mz_internal.mz_comments WHERE id = %s"
                        " ORDER BY object_sub_id NULLS FIRST", (ids["intro_dep"],)).fetchall() == [
        ("table", None, "dependencies"), ("table", 2, "bee")]
    assert conn.execute("SELECT oid, category FROM mz_types WHERE name = 'int4'").fetchone() == (23, "base")
    assert conn.execute("SELECT category FROM mz_types WHERE name = '_int4'").fetchone() == ("array",)
    int4, text = (conn.execute("SELECT id FROM mz_types WHERE name = %s", (n,)).fetchone()[0] for n in ("int4", "text"))
    assert [text, int4, int4] in [r[0] for r in conn.execute(
        "SELECT argument_type_ids FROM mz_functions WHERE name = 'substr'").fetchall()]
    sizes = conn.execute("SELECT size_bytes FROM mz_internal.mz_storage_usage_by_shard").fetchall()
    assert sizes and all(s[0] >= 0 for s in sizes) and any(s[0] > 0 for s in sizes)


def test_object_arrangement_sizes_show_each_view_and_index_state_until_dropped(conn):
    """A materialized view's and an index's state (their dataflows' checkpoints in the
    replica's Spark block manager), and an index on a table's (the table's cached parts),
    are in mz_object_arrangement_sizes, per replica, with bytes > 0; dropped, they leave it."""
    conn.execute("CREATE TABLE intro_sz (k int, v int)")
    # a part of its own (not inline in the shard's state): the table's index caches it
    conn.execute("INSERT INTO intro_sz SELECT g % 7, g FROM generate_series(1, 2000) g")
    conn.execute("CREATE INDEX intro_sz_ti ON intro_sz (k)")
    conn.execute("CREATE MATERIALIZED VIEW intro_sz_mv AS SELECT k, sum(v) AS s, count(*) AS n FROM intro_sz GROUP BY k")
    conn.execute("CREATE VIEW intro_sz_v AS SELECT k, max(v) AS m FROM intro_sz GROUP BY k")
    conn.execute("CREATE INDEX intro_sz_i ON intro_sz_v (k)")
    ids = dict(conn.execute("SELECT id, name FROM mz_objects WHERE name IN ('intro_sz_mv', 'intro_sz_i', 'intro_sz_ti')"
                            ).fetchall())
    replica = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                           " WHERE c.name = 'quickstart'").fetchall()

    def sizes() -> dict:
        rows = conn.execute("SELECT replica_id, object_id, size FROM mz_internal.mz_object_arrangement_sizes").fetchall()
        return {(r, ids[o]): size for r, o, size in rows if o in ids}

    want = {(r, n) for (r,) in replica for n in ids.values()}
    assert wait_for(lambda: set(sizes()) == want, 300), sizes()
    assert all(size > 0 for size in sizes().values())
    conn.execute("DROP MATERIALIZED VIEW intro_sz_mv")
    conn.execute("DROP VIEW intro_sz_v CASCADE")
    conn.execute("DROP INDEX intro_sz_ti")
    assert wait_for(lambda: not sizes(), 60), sizes()
    conn.execute("DROP TABLE intro_sz")


def test_relations_are_readable_from_psql(server):
    out = psql(server, "SELECT status FROM mz_internal.mz_cluster_replica_statuses")
    assert out.returncode == 0 and "online" in out.stdout, out.stderr


def test_console_pages_and_api(server, conn):
    status, ctype, body = _get(server, "/")
    assert status == 200 and ctype.startswith("text/html") and b"sqlfront console" in body
    status, ctype, body = _get(server, "/static/plotly.min.js")
    assert status == 200 and len(body) > 1_000_000  # the charting library, served locally
    conn.execute("CREATE CLUSTER intro_console REPLICAS ()")
    conn.execute("CREATE TABLE intro_console_t (a int)")
    clusters = _records(_api(server, "/api/clusters"))
    assert {"quickstart", "intro_console"} <= {c["cluster"] for c in clusters}
    quickstart = next(c for c in clusters if c["cluster"] == "quickstart")
    assert quickstart["status"] == "online" and quickstart["spark_ui"].startswith("http://127.0.0.1:")
    with urllib.request.urlopen(quickstart["spark_ui"], timeout=30) as r:  # the replica's own Spark UI
        assert r.status == 200
    assert wait_for(lambda: _api(server, "/api/utilization")["rows"], 30)
    sessions = _records(_api(server, "/api/sessions"))
    assert str(conn.info.backend_pid) in {s["connection_id"] for s in sessions}
    result = _api(server, "/api/sql", {"sql": "SELECT 1 + 1 AS two"})
    assert (result["columns"], result["rows"]) == (["two"], [["2"]])
    plan = _api(server, "/api/sql", {"sql": "SELECT a FROM intro_console_t", "explain": True})
    assert plan["rows"] and "intro_console_t" in "\n".join(r[0] for r in plan["rows"])
    bad = _api(server, "/api/sql", {"sql": "SELECT nope"})
    assert bad["status"] == 400 and bad["error"]["sqlstate"] == "42703"
    conn.execute("DROP CLUSTER intro_console")


def test_console_cancels_a_running_query(server):
    t, outcome = run_in_background(server, LONG)

    def running():
        rows = _records(_api(server, "/api/queries"))
        return next((r for r in rows if r["sql"] == LONG and r["finished_at"] is None), None)

    query = wait_for(running, 30)
    assert query is not None
    assert _api(server, "/api/cancel", {"session_id": query["session_id"]}) == {"canceled": True}
    t.join(60)
    assert outcome == {"sqlstate": "57014"}
    done = [r for r in _records(_api(server, "/api/queries")) if r["execution_id"] == query["execution_id"]]
    assert done[0]["finished_status"] == "canceled"


def test_sigkilled_replica_goes_offline_with_a_reason_then_online(server, conn):
    # a cluster of its own: the shared server's quickstart is not disturbed
    conn.execute("CREATE CLUSTER intro_kill REPLICAS (r1 (SIZE '1'))")
    try:
        rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                           " WHERE c.name = 'intro_kill'").fetchone()[0]
        statuses = "SELECT status, reason FROM mz_internal.mz_cluster_replica_statuses WHERE replica_id = %s"
        assert wait_for(lambda: conn.execute(statuses, (rid,)).fetchone() == ("online", None), 240, 1.0)
        # sampled: memory of a live JVM, CPU within the replica's allocation
        metrics = wait_for(lambda: conn.execute(
            "SELECT memory_bytes, cpu_nano_cores FROM mz_internal.mz_cluster_replica_metrics"
            " WHERE replica_id = %s AND process_id = 0", (rid,)).fetchone(), 30)
        assert metrics[0] > 10 << 20 and metrics[1] >= 0
        assert conn.execute("SELECT memory_percent > 0 FROM mz_internal.mz_cluster_replica_utilization"
                            " WHERE replica_id = %s", (rid,)).fetchone() == (True,)
        os.kill(int((server.data_dir / "replicas" / rid / "pid").read_text()), signal.SIGKILL)
        assert wait_for(lambda: conn.execute(statuses, (rid,)).fetchone() == ("offline", "killed by signal 9"), 30)
        assert wait_for(lambda: conn.execute(statuses, (rid,)).fetchone() == ("online", None), 240, 1.0)
    finally:
        conn.execute("DROP CLUSTER intro_kill")


def test_sqlfront_top_prints_the_overview(server):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "sqlfront.cli", "top", "--once", "--url", server.url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "quickstart" in out.stdout and "running (" in out.stdout and "recent" in out.stdout


def test_backend_pid_and_signaling_other_sessions(server, conn):
    """pg_backend_pid is the connection's id (mz_sessions.connection_id, the cancel key's
    pid), on table data too; pg_cancel_backend and pg_terminate_backend signal another
    session with PostgreSQL's permission rules (PostgreSQL 9.27.2)."""
    me = conn.info.backend_pid
    assert conn.execute("SELECT pg_backend_pid()").fetchone() == (me,)
    conn.execute("CREATE TABLE sig_t (k int)")
    conn.execute("INSERT INTO sig_t VALUES (1), (2)")
    assert conn.execute("SELECT k, pg_backend_pid() FROM sig_t ORDER BY k").fetchall() == [(1, me), (2, me)]
    assert conn.execute("SELECT count(*) FROM mz_internal.mz_sessions WHERE connection_id = pg_backend_pid()"
                        ).fetchone() == (1,)
    warnings = []
    conn.add_notice_handler(lambda d: warnings.append((d.severity_nonlocalized, d.message_primary)))
    assert conn.execute("SELECT pg_cancel_backend(0), pg_terminate_backend(NULL)").fetchone() == (False, None)
    assert warnings == [("WARNING", "PID 0 is not a PostgreSQL backend process")]
    with pytest.raises(psycopg.errors.InvalidParameterValue, match='"timeout" must not be negative'):
        conn.execute("SELECT pg_terminate_backend(%s, -1)", (me,))

    # a running statement of another session is canceled (its session found in mz_sessions)
    sql = long_query(301)
    t, outcome = run_in_background(server, sql)
    sid = wait_for(lambda: conn.execute("SELECT session_id FROM mz_internal.mz_recent_activity_log WHERE sql = %s "
                                        "AND finished_at IS NULL", (sql,)).fetchone(), 30)
    assert conn.execute("SELECT pg_cancel_backend(connection_id) FROM mz_internal.mz_sessions WHERE id = %s",
                        (sid[0],)).fetchone() == (True,)
    t.join(60)
    assert outcome == {"sqlstate": "57014"}

    # a role signals its own sessions, not a superuser's nor another role's; a superuser any
    conn.execute("CREATE ROLE sig_a LOGIN")
    conn.execute("CREATE ROLE sig_b LOGIN")
    url = f"postgresql://{{}}@127.0.0.1:{server.port}/materialize"
    a1, a2, b = (psycopg.connect(url.format(r), autocommit=True) for r in ("sig_a", "sig_a", "sig_b"))
    try:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied to cancel query") as e:
            a1.execute("SELECT pg_cancel_backend(%s)", (me,))
        assert "SUPERUSER attribute may cancel queries" in e.value.diag.message_detail
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied to terminate process") as e:
            a1.execute("SELECT pg_terminate_backend(%s)", (b.info.backend_pid,))
        assert '"pg_signal_backend" role may terminate this process' in e.value.diag.message_detail
        assert a1.execute("SELECT pg_terminate_backend(%s, 10000)", (a2.info.backend_pid,)).fetchone() == (True,)
        with pytest.raises(psycopg.OperationalError, match="terminating connection due to administrator command"):
            a2.execute("SELECT 1")
        assert conn.execute("SELECT pg_terminate_backend(%s)", (b.info.backend_pid,)).fetchone() == (True,)
        with pytest.raises(psycopg.OperationalError):
            b.execute("SELECT 1")
        assert a1.execute("SELECT 1").fetchone() == (1,)
        # pg_reload_conf is a superuser's (PostgreSQL revokes EXECUTE from PUBLIC)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for function pg_reload_conf"):
            a1.execute("SELECT pg_reload_conf()")
        assert conn.execute("SELECT pg_reload_conf()").fetchone() == (True,)
        # so are the server's directory listings (superusers and pg_monitor), in FROM or not
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for function pg_ls_tmpdir"):
            a1.execute("SELECT * FROM pg_ls_tmpdir()")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for function pg_ls_logdir"):
            a1.execute("SELECT pg_ls_logdir()")
        assert conn.execute("SELECT * FROM pg_ls_tmpdir()").fetchall() == []
    finally:
        for c in (a1, a2, b):
            c.close()
        conn.execute("DROP TABLE sig_t")
        conn.execute("DROP ROLE sig_a")
        conn.execute("DROP ROLE sig_b")
