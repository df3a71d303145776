"""Renames that keep their dependents (Materialize's "ALTER ... RENAME"): the views and
materialized views reading a renamed object are rewritten to its new name."""

from __future__ import annotations

import psycopg
import pytest

from sqlfront.rename_refs import (
    rename_index_relation,
    rename_references,
    rename_schema_references,
)


def _is_t(schema, name):
    return name == "t" and schema in (None, "public")


def test_rename_references_rewrites_only_the_relation():
    sql = "SELECT t.a, x.b FROM public.t JOIN x ON true, (SELECT 1 FROM t) s  -- t"
    assert rename_references(sql, _is_t, "t2") == \
        "SELECT t.a, x.b FROM public.t2 AS t JOIN x ON true, (SELECT 1 FROM t2 AS t) s  -- t"
    assert rename_references("WITH t AS (SELECT 1) SELECT * FROM t", _is_t, "t2") == \
        "WITH t AS (SELECT 1) SELECT * FROM t"
    assert rename_references('SELECT q.a FROM "t" q', _is_t, "Select") == 'SELECT q.a FROM "Select" q'
    assert rename_schema_references("SELECT * FROM s.t, materialize.s.u, t, x.s", "s", "S2") == \
        'SELECT * FROM "S2".t, materialize."S2".u, t, x.s'
    assert rename_index_relation("CREATE INDEX i IN CLUSTER c ON public.t (a)", "t2") == \
        "CREATE INDEX i IN CLUSTER c ON public.t2 (a)"


def test_rename_keeps_views_and_materialized_views_reading(conn):
    conn.autocommit = True
    conn.execute("CREATE TABLE rn_t (a int, b text)")
    conn.execute("INSERT INTO rn_t VALUES (1, 'x'), (2, 'y')")
    conn.execute("CREATE VIEW rn_v AS SELECT rn_t.a FROM rn_t WHERE b <> 'z'")
    conn.execute("CREATE MATERIALIZED VIEW rn_mv AS SELECT count(*) AS n FROM rn_t")
    conn.execute("CREATE VIEW rn_vv AS SELECT a FROM rn_v")
    conn.execute("CREATE INDEX rn_i ON rn_t (a)")
    try:
        conn.execute("ALTER TABLE rn_t RENAME TO rn_t2")
        conn.execute("INSERT INTO rn_t2 VALUES (3, 'z')")
        assert sorted(conn.execute("SELECT a FROM rn_v").fetchall()) == [(1,), (2,)]
        assert conn.execute("SELECT n FROM rn_mv").fetchall() == [(3,)]
        defn = conn.execute("SELECT definition FROM mz_views WHERE name = 'rn_v'").fetchone()[0]
        assert "rn_t2" in defn
        assert conn.execute("SELECT create_sql FROM mz_indexes WHERE name = 'rn_i'").fetchone() == \
            ("CREATE INDEX rn_i ON rn_t2 (a)",)
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):
            conn.execute("DROP TABLE rn_t2")

        # a renamed view and materialized view keep their own readers
        conn.execute("ALTER VIEW rn_v RENAME TO rn_v2")
        assert sorted(conn.execute("SELECT a FROM rn_vv").fetchall()) == [(1,), (2,)]
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):
            conn.execute("DROP VIEW rn_v2")
        conn.execute("CREATE VIEW rn_mvv AS SELECT n + 1 AS m FROM rn_mv")
        conn.execute("ALTER MATERIALIZED VIEW rn_mv RENAME TO rn_mv2")
        assert conn.execute("SELECT m FROM rn_mvv").fetchall() == [(4,)]
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):
            conn.execute("DROP MATERIALIZED VIEW rn_mv2")
    finally:
        conn.execute("DROP TABLE IF EXISTS rn_t2 CASCADE")
        conn.execute("DROP TABLE IF EXISTS rn_t CASCADE")


def test_schema_rename_keeps_views_reading(conn):
    conn.autocommit = True
    conn.execute("CREATE SCHEMA rn_s")
    conn.execute("CREATE TABLE rn_s.t (a int)")
    conn.execute("INSERT INTO rn_s.t VALUES (7)")
    conn.execute("CREATE VIEW rn_sv AS SELECT a FROM rn_s.t")
    try:
        conn.execute("ALTER SCHEMA rn_s RENAME TO rn_s2")
        assert conn.execute("SELECT a FROM rn_sv").fetchall() == [(7,)]
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):
            conn.execute("DROP TABLE rn_s2.t")
    finally:
        conn.execute("DROP VIEW IF EXISTS rn_sv")
        conn.execute("DROP SCHEMA IF EXISTS rn_s2 CASCADE")
        conn.execute("DROP SCHEMA IF EXISTS rn_s CASCADE")
