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
