"""The statements dbt sends (tests/test_dbt.py runs dbt itself), each pinned on its own
through the wire: startup options, the catalog queries dbt-postgres and dbt-materialize
list relations and columns with, and the DDL and writes of their materializations."""

from __future__ import annotations

import psycopg
import pytest

from sqlfront.vars import parse_options


@pytest.fixture
def c(server):
    with server.connect() as conn:
        yield conn


@pytest.mark.parametrize("options, settings", [
    ("-c cluster=a", {"cluster": "a"}),
    ("-ccluster=a --search_path=x", {"cluster": "a", "search_path": "x"}),
    (r"--search-path=a,\ b  -c cluster=a -c cluster=b", {"search_path": "a, b", "cluster": "b"}),
    ("-c statement_timeout", {}),
    ("", {}),
])
def test_startup_options_are_split_as_postgresql_splits_them(options, settings):
    assert parse_options(options) == settings


def test_startup_options_set_session_variables_and_mz_version_is_reported(server):
    # what dbt-materialize sends: Materialize's own variables, as --name=value
    options = (r"--auto_route_catalog_queries=on --welcome_message=off --current_object_missing_warnings=off"
               r" -c search_path=dbt_x,\ public --cluster=quickstart")
    with psycopg.connect(server.url, autocommit=True, options=options) as conn:
        assert conn.execute("SHOW welcome_message").fetchone() == ("off",)
        assert conn.execute("SHOW search_path").fetchone() == ("dbt_x, public",)
        assert conn.execute("SHOW cluster").fetchone() == ("quickstart",)
        version = conn.info.parameter_status("mz_version")
        assert version is not None and version.startswith("v0.")
        assert conn.execute("SHOW mz_version").fetchone() == (version,)
        with pytest.raises(psycopg.errors.CantChangeRuntimeParam):
            conn.execute("SET mz_version = 'v1'")
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_pg_tables_views_and_matviews_list_a_schemas_relations_by_kind(c):
    """dbt-postgres's list_relations_without_caching (PostgreSQL 54.31, 54.34, 54.13)."""
    c.execute("CREATE SCHEMA lr")
    try:
        c.execute("CREATE TABLE lr.t (a int)")
        c.execute("CREATE VIEW lr.v AS SELECT a FROM lr.t")
        rows = c.execute(
            "SELECT tablename, 'table' FROM pg_tables WHERE schemaname ILIKE 'lr'"
            " UNION ALL SELECT viewname, 'view' FROM pg_views WHERE schemaname ILIKE 'lr'"
            " UNION ALL SELECT matviewname, 'materialized_view' FROM pg_matviews WHERE schemaname ILIKE 'lr'"
            " ORDER BY 1").fetchall()
        assert rows == [("t", "table"), ("v", "view")]
        assert c.execute("SELECT definition FROM pg_views WHERE viewname = 'v'").fetchone()[0].lower().startswith(
            "select")
        assert c.execute("SELECT tableowner, hasindexes FROM pg_tables WHERE tablename = 't'").fetchone() == (
            "materialize", False)
    finally:
        c.execute("DROP SCHEMA lr CASCADE")


def test_mz_catalog_joins_as_materialize_documents_them(c):
    """dbt-materialize's relation list (mz_objects, mz_sources, mz_schemas.database_id,
    mz_databases) and column lookup (mz_columns.type_oid through mz_relations)."""
    c.execute("CREATE SCHEMA mzc")
    try:
        c.execute("CREATE TABLE mzc.t (a int, b text)")
        c.execute("CREATE VIEW mzc.v AS SELECT b FROM mzc.t")
        rows = c.execute(
            "SELECT d.name, s.name, o.name, o.type FROM mz_objects o"
            " LEFT JOIN mz_sources so ON o.id = so.id"
            " JOIN mz_schemas s ON o.schema_id = s.id AND s.name = 'mzc'"
            " JOIN mz_databases d ON s.database_id = d.id AND d.name = 'materialize'"
            " WHERE o.type IN ('table', 'source', 'view', 'materialized-view', 'index', 'sink')"
            " AND coalesce(so.type, '') NOT IN ('subsource', 'progress') ORDER BY 3").fetchall()
        assert rows == [("materialize", "mzc", "t", "table"), ("materialize", "mzc", "v", "view")]
        cols = c.execute("SELECT c.name, c.type_oid, c.type FROM mz_columns c JOIN mz_relations r ON c.id = r.id"
                         " JOIN mz_schemas s ON s.id = r.schema_id WHERE s.name = 'mzc' AND r.name = 'v'").fetchall()
        assert cols == [("b", 25, "text")]
        assert c.execute("SELECT count(*) FROM mz_sinks").fetchone() == (0,)
        # the system schemas belong to no database
        assert c.execute("SELECT database_id FROM mz_schemas WHERE name = 'mz_catalog'").fetchone() == (None,)
    finally:
        c.execute("DROP SCHEMA mzc CASCADE")


def _err(conn, sql, sqlstate):
    with pytest.raises(psycopg.Error) as e:
        conn.execute(sql)
    assert e.value.sqlstate == sqlstate, (e.value.sqlstate, str(e.value))
    return e.value


def test_delete_and_insert_in_a_transaction_block_commit_together(c, server):
    """dbt-postgres's incremental merge (delete+insert strategy): a temp table made by
    CREATE TABLE AS, then DELETE and INSERT ... SELECT from it, in one block."""
    c.execute("CREATE TABLE inc (id int, v text)")
    try:
        c.execute("INSERT INTO inc VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        with server.connect() as other:
            with c.transaction():
                c.execute("CREATE TEMPORARY TABLE inc_tmp AS (SELECT * FROM (VALUES (2, 'B'), (4, 'D')) x(id, v))")
                # catalog reads (dbt reads the columns) do not make the block read-only
                assert c.execute("SELECT column_name FROM information_schema.columns"
                                 " WHERE table_name = 'inc_tmp' ORDER BY ordinal_position").fetchall() == [("id",), ("v",)]
                assert c.execute("DELETE FROM inc WHERE id IN (SELECT id FROM inc_tmp)").rowcount == 1
                # the block's own CREATE TABLE AS rows are read back within the block
                assert c.execute("INSERT INTO inc (id, v) (SELECT id, v FROM inc_tmp)").rowcount == 2
                # nothing is visible outside the block before COMMIT
                assert other.execute("SELECT id, v FROM inc ORDER BY id").fetchall() == [(1, "a"), (2, "b"), (3, "c")]
        assert c.execute("SELECT id, v FROM inc ORDER BY id").fetchall() == [(1, "a"), (2, "B"), (3, "c"), (4, "D")]
    finally:
        c.execute("DROP TABLE inc")


def test_update_and_delete_in_a_block_are_undone_by_rollback(c):
    c.execute("CREATE TABLE inc_rb (id int, v text)")
    c.execute("CREATE TABLE inc_rb2 (id int)")
    try:
        c.execute("INSERT INTO inc_rb VALUES (1, 'a'), (2, 'b')")
        c.execute("INSERT INTO inc_rb2 VALUES (1), (2)")
        c.execute("BEGIN")
        assert c.execute("UPDATE inc_rb SET v = 'z' WHERE id = 1 RETURNING id, v").fetchall() == [(1, "z")]
        c.execute("DELETE FROM inc_rb2 WHERE id = 2")
        c.execute("ROLLBACK")
        assert c.execute("SELECT id, v FROM inc_rb ORDER BY id").fetchall() == [(1, "a"), (2, "b")]
        assert c.execute("SELECT id FROM inc_rb2 ORDER BY id").fetchall() == [(1,), (2,)]
        # a savepoint drops what came after it
        c.execute("BEGIN")
        c.execute("UPDATE inc_rb SET v = 'y' WHERE id = 1")
        c.execute("SAVEPOINT s")
        c.execute("DELETE FROM inc_rb2 WHERE id = 2")
        c.execute("ROLLBACK TO SAVEPOINT s")
        c.execute("COMMIT")
        assert c.execute("SELECT id, v FROM inc_rb ORDER BY id").fetchall() == [(1, "y"), (2, "b")]
        assert c.execute("SELECT id FROM inc_rb2 ORDER BY id").fetchall() == [(1,), (2,)]
    finally:
        c.execute("DROP TABLE inc_rb, inc_rb2")


def test_a_block_whose_delete_was_overtaken_fails_at_commit_and_writes_nothing(c, server):
    c.execute("CREATE TABLE inc_cf (id int)")
    c.execute("CREATE TABLE inc_cf2 (id int)")
    try:
        c.execute("INSERT INTO inc_cf VALUES (1), (2)")
        c.execute("BEGIN")
        c.execute("DELETE FROM inc_cf WHERE id = 1")
        c.execute("INSERT INTO inc_cf2 VALUES (9)")
        with server.connect() as other:
            other.execute("DELETE FROM inc_cf WHERE id = 1")  # would be retracted twice
        e = _err(c, "COMMIT", "40001")
        assert "could not serialize" in str(e)
        assert c.execute("SELECT id FROM inc_cf ORDER BY id").fetchall() == [(2,)]
        assert c.execute("SELECT count(*) FROM inc_cf2").fetchone() == (0,)
    finally:
        c.execute("DROP TABLE inc_cf, inc_cf2")


def test_update_or_delete_of_a_table_the_block_wrote_is_refused(c):
    """Its buffered rows are not read back before COMMIT, so the DELETE could not see them:
    refused (0A000) rather than answered wrong; the block stays usable after ROLLBACK."""
    c.execute("CREATE TABLE inc_tw (id int)")
    try:
        c.execute("BEGIN")
        c.execute("INSERT INTO inc_tw VALUES (1)")
        _err(c, "DELETE FROM inc_tw", "0A000")
        c.execute("ROLLBACK")
        c.execute("INSERT INTO inc_tw VALUES (1)")
        c.execute("BEGIN")
        assert c.execute("DELETE FROM inc_tw").rowcount == 1
        _err(c, "UPDATE inc_tw SET id = 2", "0A000")
        c.execute("ROLLBACK")
        # Materialize's rule stays: a block that has read may not write; READ ONLY neither
        c.execute("BEGIN")
        c.execute("SELECT * FROM inc_tw")
        _err(c, "DELETE FROM inc_tw", "25000")
        c.execute("ROLLBACK")
        c.execute("BEGIN READ ONLY")
        _err(c, "UPDATE inc_tw SET id = 2", "25006")
        c.execute("ROLLBACK")
        assert c.execute("SELECT 1").fetchone() == (1,)
    finally:
        c.execute("DROP TABLE inc_tw")


def test_create_index_in_cluster_on_a_database_qualified_name(c):
    """dbt-materialize's index DDL: ``create index in cluster c on "db"."schema"."obj" (cols)``."""
    c.execute("CREATE TABLE ix_q (a int, b text)")
    try:
        c.execute('CREATE INDEX IN CLUSTER quickstart ON "materialize"."public"."ix_q" (a)')
        assert c.execute("SELECT count(*) FROM mz_indexes i JOIN mz_tables t ON t.id = i.on_id"
                         " WHERE t.name = 'ix_q'").fetchone() == (1,)
        _err(c, "CREATE INDEX IN CLUSTER quickstart ON nodb.public.ix_q (b)", "3D000")
        assert c.execute("SELECT a FROM ix_q").fetchall() == []
    finally:
        c.execute("DROP TABLE ix_q")
