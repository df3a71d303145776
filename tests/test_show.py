"""Materialize's SHOW statements through the wire (issue 32): SHOW CREATE of each kind
with Materialize's columns (name, create_sql), and the SHOW forms of objects this server
has none of, which answer with Materialize's columns and no rows."""

from __future__ import annotations

import shutil
import subprocess

import psycopg
import pytest


def show(conn, sql: str) -> tuple[list[str], list[tuple]]:
    cur = conn.execute(sql)
    return [d.name for d in cur.description], cur.fetchall()


def test_show_create_of_each_kind(conn):
    conn.execute('CREATE TABLE "Shown" (a int NOT NULL DEFAULT 3, b numeric(10,2), c text)')
    conn.execute('CREATE VIEW shown_v AS SELECT a FROM "Shown"')
    conn.execute('CREATE INDEX shown_idx IN CLUSTER quickstart ON "Shown" (a, upper(c))')
    cols, rows = show(conn, 'SHOW CREATE TABLE "Shown"')
    assert cols == ["name", "create_sql"]
    assert rows == [('materialize.public."Shown"',
                     'CREATE TABLE materialize.public."Shown" (a integer NOT NULL DEFAULT 3, b numeric(10,2), c text)')]
    assert show(conn, "SHOW CREATE VIEW shown_v")[1] == [
        ("materialize.public.shown_v", 'CREATE VIEW materialize.public.shown_v AS SELECT a FROM "Shown"')]
    assert show(conn, "SHOW CREATE INDEX shown_idx")[1] == [
        ("materialize.public.shown_idx",
         'CREATE INDEX shown_idx IN CLUSTER quickstart ON materialize.public."Shown" (a, upper(c))')]
    name, sql = show(conn, "SHOW CREATE CLUSTER quickstart")[1][0]
    # quickstart is managed: its size and replication factor, not its replicas
    size = conn.execute("SELECT size FROM mz_clusters WHERE name = 'quickstart'").fetchone()[0]
    assert (name, sql) == ("quickstart", f"CREATE CLUSTER quickstart (SIZE = '{size}', REPLICATION FACTOR = 1)")
    conn.execute("CREATE CLUSTER shown_c REPLICAS ()")  # an unmanaged one: its replicas
    assert show(conn, "SHOW CREATE CLUSTER shown_c")[1] == [("shown_c", "CREATE CLUSTER shown_c REPLICAS ()")]
    conn.execute("DROP CLUSTER shown_c")
    # what SHOW CREATE TABLE gives makes the same table again
    conn.execute("CREATE SCHEMA shown_copy")
    conn.execute(rows[0][1].replace("public", "shown_copy"))
    assert show(conn, 'SHOW CREATE TABLE shown_copy."Shown"')[1][0][1] == rows[0][1].replace("public", "shown_copy")
    with pytest.raises(psycopg.errors.WrongObjectType):
        conn.execute('SHOW CREATE VIEW "Shown"')
    for sql in ("SHOW CREATE TABLE nope", "SHOW CREATE INDEX nope", "SHOW CREATE SOURCE nope"):
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute(sql)
    with pytest.raises(psycopg.errors.UndefinedObject):
        conn.execute("SHOW CREATE CLUSTER nope")
    conn.execute("DROP SCHEMA shown_copy CASCADE")
    conn.execute('DROP TABLE "Shown" CASCADE')


def test_show_objects_and_kinds_there_are_none_of(conn):
    conn.execute("CREATE SCHEMA listed")
    conn.execute("CREATE TABLE listed.lt (a int)")
    conn.execute("CREATE VIEW listed.lv AS SELECT a FROM listed.lt")
    assert show(conn, "SHOW OBJECTS FROM listed") == (["name", "type", "comment"], [("lt", "table", ""), ("lv", "view", "")])
    assert show(conn, "SHOW OBJECTS FROM listed WHERE type = 'view'")[1] == [("lv", "view", "")]
    for sql, cols in (("SHOW SOURCES", ["name", "type", "cluster", "comment"]),
                      ("SHOW SINKS FROM listed", ["name", "type", "cluster", "comment"]),
                      ("SHOW SECRETS", ["name", "comment"]), ("SHOW TYPES", ["name", "comment"]),
                      ("SHOW CONNECTIONS", ["name", "type", "comment"])):
        assert show(conn, sql) == (cols, []), sql
    with pytest.raises(psycopg.errors.InvalidSchemaName):
        conn.execute("SHOW OBJECTS FROM nope")
    conn.execute("DROP SCHEMA listed CASCADE")


def test_show_role_membership(conn):
    conn.execute("CREATE ROLE shown_group")
    conn.execute("CREATE ROLE shown_member")
    conn.execute("GRANT shown_group TO shown_member")
    cols, rows = show(conn, "SHOW ROLE MEMBERSHIP FOR shown_member")
    assert cols == ["role", "member", "grantor"] and rows == [("shown_group", "shown_member", "materialize")]
    with pytest.raises(psycopg.errors.UndefinedObject):
        conn.execute("SHOW ROLE MEMBERSHIP FOR nobody")
    conn.execute("DROP ROLE shown_member")
    conn.execute("DROP ROLE shown_group")


def test_pg_proc_lists_the_function_registry(conn):
    """psql's tab completion (and \\df) read pg_proc: the registry's functions are there."""
    rows = conn.execute("SELECT p.proname FROM pg_catalog.pg_proc p WHERE (p.proname) LIKE 'subs%'"
                        " AND pg_catalog.pg_function_is_visible(p.oid)").fetchall()
    assert {"substr", "substring"} <= {r[0] for r in rows}
    assert conn.execute("SELECT prokind, proisagg FROM pg_proc WHERE proname = 'sum' LIMIT 1").fetchone() == ("a", True)
    assert conn.execute("SELECT count(*) = count(DISTINCT oid) FROM pg_proc").fetchone() == (True,)
    # \df's columns: argument and result types from the registry's signatures
    df = conn.execute(
        "SELECT p.proname, pg_catalog.pg_get_function_result(p.oid), pg_catalog.pg_get_function_arguments(p.oid),"
        " p.pronargs, cardinality(p.proargtypes) FROM pg_catalog.pg_proc p"
        " WHERE p.proname IN ('substr', 'generate_series') ORDER BY 1, 3").fetchall()
    assert ("substr", "text", "text, integer", 2, 2) in df
    assert ("generate_series", "SETOF integer", "integer, integer", 2, 2) in df
    assert conn.execute("SELECT proargtypes FROM pg_proc WHERE proname = 'substr' AND pronargs = 3"
                        " AND prorettype = 'text'::regtype").fetchone() == ([25, 23, 23],)
    assert conn.execute("SELECT pg_get_function_arguments(0), pg_get_function_result(0)").fetchone() == (None, None)
    # \sf: a function's definition (LANGUAGE internal, AS the registry entry implementing
    # it); an aggregate has none
    assert conn.execute("SELECT pg_get_functiondef(min(oid)) FROM pg_proc WHERE proname = 'upper'").fetchone() == (
        "CREATE OR REPLACE FUNCTION pg_catalog.upper(text)\n RETURNS text\n LANGUAGE internal\n IMMUTABLE STRICT\n"
        "AS $function$upper$function$\n",)
    with pytest.raises(psycopg.errors.WrongObjectType, match='"sum" is an aggregate function'):
        conn.execute("SELECT pg_get_functiondef(min(oid)) FROM pg_proc WHERE proname = 'sum'")


def test_show_privileges_and_default_privileges(conn):
    conn.execute("CREATE ROLE priv_r")
    conn.execute("CREATE TABLE priv_t (a int)")
    conn.execute("GRANT SELECT ON priv_t TO priv_r")
    cols, rows = show(conn, "SHOW PRIVILEGES FOR priv_r")
    assert cols == ["grantor", "grantee", "database", "schema", "name", "object_type", "privilege_type"]
    assert ("materialize", "priv_r", "materialize", "public", "priv_t", "table", "SELECT") in rows
    assert ("mz_system", "PUBLIC", "materialize", None, "public", "schema", "USAGE") in rows  # as PUBLIC
    assert all(r[5] == "table" for r in show(conn, "SHOW PRIVILEGES ON TABLES FOR priv_r")[1])
    conn.execute("ALTER DEFAULT PRIVILEGES FOR ROLE materialize GRANT INSERT ON TABLES TO priv_r")
    cols, rows = show(conn, "SHOW DEFAULT PRIVILEGES FOR priv_r")
    assert cols == ["object_owner", "database", "schema", "object_type", "grantee", "privilege_type"]
    assert ("materialize", "materialize", None, "table", "priv_r", "INSERT") in rows
    with pytest.raises(psycopg.errors.UndefinedObject):
        conn.execute("SHOW PRIVILEGES FOR nobody")
    conn.execute("ALTER DEFAULT PRIVILEGES FOR ROLE materialize REVOKE INSERT ON TABLES FROM priv_r")
    conn.execute("DROP TABLE priv_t")
    conn.execute("DROP ROLE priv_r")


def test_show_as_a_subquery(conn):
    """Materialize reads a SHOW as a subquery: ``SELECT ... FROM (SHOW ...)``, with its
    own LIKE/WHERE, joined like any relation, with parameters around it."""
    conn.execute("CREATE CLUSTER shown_c REPLICAS ()")
    try:
        assert show(conn, "SELECT name FROM (SHOW CLUSTERS) WHERE name = 'shown_c'") == (["name"], [("shown_c",)])
        assert conn.execute("SELECT cluster, replica FROM (SHOW CLUSTER REPLICAS) WHERE cluster = %s",
                            ("quickstart",)).fetchall() == [("quickstart", "r1")]
        assert conn.execute("SELECT c.name, count(r.replica) FROM (SHOW CLUSTERS LIKE 'shown%') c"
                            " LEFT JOIN (SHOW CLUSTER REPLICAS) r ON r.cluster = c.name GROUP BY 1").fetchall() == [
            ("shown_c", 0)]
        with pytest.raises(psycopg.errors.UndefinedObject, match="unknown cluster 'nope'"):
            conn.execute("SELECT * FROM (SHOW CLUSTER REPLICAS FOR nope)")
        with pytest.raises(psycopg.errors.SyntaxError):
            conn.execute("SELECT * FROM (SHOW CLUSTERS) WHERE")
    finally:
        conn.execute("DROP CLUSTER shown_c")


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")
def test_psql_df_shows_argument_types(server):
    """psql's \\df lists a function's signatures with their argument and result types."""
    out = subprocess.run(["psql", "-X", "-d", server.url, "-c", r"\df substr"], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert "text, integer, integer" in out.stdout and "bytea, integer" in out.stdout, out.stdout
