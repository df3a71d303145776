"""Statement forms of Materialize's SQL reference a new user tries (issue 32): DELETE ...
USING, CREATE VIEW IF NOT EXISTS, ALTER INDEX ... OWNER TO, ALTER MATERIALIZED VIEW ...
SET CLUSTER, what is not supported said in SQL words, and the column names PostgreSQL
gives current_user and friends."""

from __future__ import annotations

import psycopg
import pytest


def test_delete_using(conn):
    conn.execute("CREATE TABLE del_t (a int, b text)")
    conn.execute("CREATE TABLE del_u (a int, ok bool)")
    conn.execute("INSERT INTO del_t VALUES (1, 'x'), (2, 'y'), (2, 'z'), (3, 'w')")
    conn.execute("INSERT INTO del_u VALUES (2, true), (2, true), (3, false)")
    cur = conn.execute("DELETE FROM del_t t USING del_u u WHERE t.a = u.a AND u.ok RETURNING t.b")
    assert sorted(cur.fetchall()) == [("y",), ("z",)]  # each row once, however many rows of u match
    assert conn.execute("SELECT a FROM del_t ORDER BY a").fetchall() == [(1,), (3,)]
    conn.execute("DROP TABLE del_t, del_u")


def test_create_view_if_not_exists(conn):
    conn.execute("CREATE VIEW ine_v AS SELECT 1 AS one")
    conn.execute("CREATE VIEW IF NOT EXISTS ine_v AS SELECT 2 AS two")  # exists: nothing changes
    assert conn.execute("SELECT * FROM ine_v").fetchall() == [(1,)]
    conn.execute("CREATE VIEW IF NOT EXISTS ine_w (n) AS SELECT 2")
    assert conn.execute("SELECT n FROM ine_w").fetchall() == [(2,)]
    conn.execute("DROP VIEW ine_v, ine_w")


def test_alter_index_owner_is_a_warning_and_changes_nothing(conn):
    conn.execute("CREATE TABLE own_t (a int)")
    conn.execute("CREATE INDEX own_idx ON own_t (a)")
    conn.execute("CREATE ROLE own_r")
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute("ALTER INDEX own_idx OWNER TO own_r")  # Materialize: its relation's owner owns it
    assert notices and "cannot change owner" in notices[0]
    assert conn.execute("SELECT r.name FROM mz_indexes i JOIN mz_roles r ON r.id = i.owner_id"
                        " WHERE i.name = 'own_idx'").fetchone() == ("materialize",)
    with pytest.raises(psycopg.errors.UndefinedObject):
        conn.execute("ALTER INDEX own_idx OWNER TO nobody")
    conn.execute("DROP TABLE own_t CASCADE")
    conn.execute("DROP ROLE own_r")


def test_unsupported_statements_are_named_in_sql(conn):
    for sql, name in (("CREATE DATABASE d", "CREATE DATABASE"), ("ALTER SYSTEM SET x = 1", "ALTER SYSTEM"),
                      ("ALTER MATERIALIZED VIEW m SET CLUSTER quickstart", "ALTER MATERIALIZED VIEW ... SET CLUSTER")):
        with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
            conn.execute(sql)
        assert str(e.value).startswith(f"{name} is not supported"), str(e.value)


def test_sql_value_functions_are_named_as_postgresql_names_them(conn):
    cur = conn.execute("SELECT current_user, current_timestamp, current_date, session_user, current_schema, user,"
                       " current_timestamp(2), current_catalog")
    assert [d.name for d in cur.description] == ["current_user", "current_timestamp", "current_date", "session_user",
                                                 "current_schema", "user", "current_timestamp", "current_catalog"]


def test_postgresql_index_options_that_do_nothing_say_so(conn):
    conn.execute("CREATE TABLE pgidx (a int)")
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute("CREATE UNIQUE INDEX pgidx_u ON pgidx (a) WHERE a > 0")
    assert notices == ["CREATE INDEX: UNIQUE is not enforced", "CREATE INDEX: WHERE is ignored: the index keeps every row"]
    conn.execute("INSERT INTO pgidx VALUES (1), (1)")  # not refused: nothing is unique
    conn.execute("DROP TABLE pgidx CASCADE")


def test_create_temp_view_is_the_sessions_own(server):
    """CREATE TEMP | TEMPORARY VIEW (Materialize's "CREATE VIEW"): in the session's
    mz_temp schema, unseen by others; 42P16 in another schema; a materialized view
    (kept after the session) may not read one (0A000). The session stays usable."""
    with server.connect() as a, server.connect() as b:
        a.execute("CREATE TEMP VIEW tv AS SELECT 1 AS one")
        assert a.execute("SELECT one FROM tv").fetchall() == [(1,)]
        assert a.execute("SELECT one FROM mz_temp.tv").fetchall() == [(1,)]
        assert a.execute("SELECT relpersistence, relkind FROM pg_class WHERE relname = 'tv'").fetchall() == [("t", "v")]
        with pytest.raises(psycopg.errors.UndefinedTable):
            b.execute("SELECT * FROM tv")
        b.execute("CREATE TEMPORARY VIEW tv AS SELECT 'b' AS s")  # its own, same name
        assert b.execute("SELECT s FROM tv").fetchall() == [("b",)]
        a.execute("CREATE OR REPLACE TEMP VIEW tv AS SELECT 2 AS one")
        a.execute("CREATE TEMP VIEW IF NOT EXISTS tv AS SELECT 3 AS one")  # exists: nothing changes
        assert a.execute("SELECT one FROM tv").fetchall() == [(2,)]
        with pytest.raises(psycopg.errors.InvalidTableDefinition) as e:
            a.execute("CREATE TEMP VIEW public.tv2 AS SELECT 1")
        assert e.value.sqlstate == "42P16"
        with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
            a.execute("CREATE MATERIALIZED VIEW tv_mv AS SELECT one FROM tv")
        assert 'temporary view "tv"' in str(e.value)
        assert a.execute("SELECT count(*) FROM mz_views WHERE name = 'tv2'").fetchone() == (0,)
        a.execute("DROP VIEW tv")
        with pytest.raises(psycopg.errors.UndefinedTable):
            a.execute("SELECT * FROM tv")


def test_drop_if_exists_says_what_it_skipped(conn):
    """PostgreSQL's NOTICE per missing name of DROP ... IF EXISTS (code 00000), and the
    names that exist are dropped by the same statement."""
    notices = []
    conn.add_notice_handler(lambda d: notices.append((d.severity_nonlocalized, d.sqlstate, d.message_primary)))
    conn.execute("CREATE TABLE dropped_t (a int)")
    conn.execute("CREATE INDEX dropped_i ON dropped_t (a)")
    conn.execute("DROP INDEX IF EXISTS no_such_i, dropped_i")
    conn.execute("DROP TABLE IF EXISTS no_such_t, dropped_t")
    conn.execute("DROP MATERIALIZED VIEW IF EXISTS no_such_mv")
    conn.execute("DROP SCHEMA IF EXISTS no_such_s")
    assert notices == [("NOTICE", "00000", 'index "no_such_i" does not exist, skipping'),
                       ("NOTICE", "00000", 'table "no_such_t" does not exist, skipping'),
                       ("NOTICE", "00000", 'materialized view "no_such_mv" does not exist, skipping'),
                       ("NOTICE", "00000", 'schema "no_such_s" does not exist, skipping')]
    assert conn.execute("SELECT count(*) FROM mz_tables WHERE name = 'dropped_t'").fetchone() == (0,)
