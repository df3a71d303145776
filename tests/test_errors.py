"""Bad input gets ErrorResponse with the right SQLSTATE, and the session stays usable."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors


def expect(conn, sql, sqlstate, match=None):
    with pytest.raises(psycopg.Error) as ei:
        conn.execute(sql)
    assert ei.value.sqlstate == sqlstate, (sql, ei.value.sqlstate, str(ei.value))
    if match:
        assert match in str(ei.value), str(ei.value)
    # The connection stays usable after every error.
    assert conn.execute("SELECT 1").fetchone() == (1,)
    return ei.value


def test_column_lists_of_new_relations_as_postgresql_checks_them(conn):
    """CREATE VIEW, CREATE MATERIALIZED VIEW and CREATE TABLE AS take a column list over
    their query's first columns (``sequence.objects.output_names``): PostgreSQL's
    messages for more names than columns (42601) and a name twice (42701); nothing is
    created."""
    expect(conn, "CREATE VIEW ocl_v (a, b) AS SELECT 1", "42601",
           "CREATE VIEW specifies more column names than columns")
    expect(conn, "CREATE MATERIALIZED VIEW ocl_m (a, b) AS SELECT 1", "42601",
           "CREATE MATERIALIZED VIEW specifies more column names than columns")
    expect(conn, "CREATE TABLE ocl_t (a, b) AS SELECT 1", "42601", "too many column names were specified")
    for sql in ("CREATE VIEW ocl_v (a) AS SELECT 1, 2 AS a", "CREATE MATERIALIZED VIEW ocl_m AS SELECT 1 AS a, 2 AS a",
                "CREATE TABLE ocl_t (a, a) AS SELECT 1, 2"):
        expect(conn, sql, "42701", 'column "a" specified more than once')
    conn.execute("CREATE VIEW ocl_v (x) AS SELECT 1 AS a, 2 AS b")
    try:
        assert [d.name for d in conn.execute("SELECT * FROM ocl_v").description] == ["x", "b"]
    finally:
        conn.execute("DROP VIEW ocl_v")
    assert conn.execute("SELECT count(*) FROM mz_objects WHERE name LIKE 'ocl_%'").fetchone() == (0,)

def test_error_sqlstates(conn):
    e = expect(conn, "SELEC 1", "42601", 'syntax error at or near "SELEC"')
    assert e.diag.statement_position == "1"
    assert e.diag.severity == "ERROR"
    expect(conn, "SELECT * FROM nope", "42P01", "unknown catalog item 'nope'")
    expect(conn, "SELECT nope FROM mz_clusters", "42703", 'column "nope" does not exist')
    expect(conn, "SELECT 1/0", "22012", "division by zero")
    expect(conn, "CREATE CLUSTER quickstart REPLICAS ()", "42710", "cluster 'quickstart' already exists")
    expect(conn, "DROP CLUSTER nope", "42704", "unknown cluster 'nope'")
    expect(conn, "DROP CLUSTER REPLICA quickstart.nope", "42704", 'CLUSTER quickstart has no CLUSTER REPLICA named "nope"')
    e = expect(conn, "CREATE CLUSTER bad REPLICAS (r1 (SIZE 'huge'))", "22023", "unknown cluster replica size huge")
    assert e.diag.message_detail == "Valid sizes are: 1, 2, 2-1, 2-2, 2-4, 4, 8, 16, 32"
    expect(conn, "CREATE CLUSTER REPLICA quickstart.r1 SIZE '1'", "55000", "cannot modify managed cluster quickstart")
    expect(conn, "CREATE CLUSTER x REPLICAS (r1 (SIZE '1', SIZE '2'))", "42601", "SIZE specified more than once")
    expect(conn, "SELECT 'abc'::int", "22P02", 'invalid input syntax for type integer: "abc"')
    expect(conn, "SELECT 2147483647::int + 1", "22003", "integer out of range")
    expect(conn, "SELECT name FROM mz_clusters GROUP BY id", "42803")
    expect(conn, "SELECT 1 + 'a'::text", "42883", "operator does not exist: integer + text")


def test_failed_ddl_leaves_no_trace(conn):
    before = conn.execute("SELECT count(*) FROM mz_clusters").fetchone()
    expect(conn, "CREATE CLUSTER half REPLICAS (r1 (SIZE '1'), r2 (SIZE 'nope'))", "22023")
    assert conn.execute("SELECT count(*) FROM mz_clusters").fetchone() == before
    assert conn.execute("SELECT count(*) FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                        " WHERE c.name = 'half'").fetchone() == (0,)


def test_unknown_cluster_in_session(conn):
    conn.execute("CREATE TABLE uc (a int)")
    try:
        conn.execute("SET cluster = nowhere")
        expect(conn, "SELECT * FROM uc", "42704", "unknown cluster 'nowhere'")
        conn.execute("SET cluster = quickstart")
        assert conn.execute("SELECT count(*) FROM uc").fetchone() == (0,)
    finally:
        conn.execute("SET cluster = quickstart")
        conn.execute("DROP TABLE uc")


def test_reads_without_a_table_on_an_unknown_or_empty_cluster(conn):
    """Materialize's target cluster rule: a query naming only system relations, or
    none and running no function, is answered whatever the session's cluster; a view
    (even a constant one) or a table function needs that cluster, known and with a
    replica (cluster.slt's records)."""
    conn.execute("CREATE VIEW uc_const AS SELECT 1 AS one")
    conn.execute("CREATE CLUSTER uc_empty REPLICAS ()")
    try:
        conn.execute("SET cluster = nowhere")
        expect(conn, "SELECT * FROM uc_const", "42704", "unknown cluster 'nowhere'")
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.execute("SELECT count(*) > 0 FROM mz_catalog.mz_clusters").fetchone() == (True,)
        conn.execute("SET cluster = uc_empty")
        expect(conn, "SELECT generate_series(1, 1)", "55000",
               'CLUSTER "uc_empty" has no replicas available to service request')
        expect(conn, "SELECT * FROM uc_const", "55000",
               'CLUSTER "uc_empty" has no replicas available to service request')
        assert conn.execute("SELECT 1").fetchone() == (1,)
        conn.execute("SET cluster = quickstart")
        assert conn.execute("SELECT * FROM uc_const").fetchone() == (1,)
    finally:
        conn.execute("SET cluster = quickstart")
        conn.execute("DROP VIEW uc_const")
        conn.execute("DROP CLUSTER uc_empty")


def test_bad_insert_loses_nothing(conn):
    conn.execute("CREATE TABLE bi (a int NOT NULL, v varchar(3))")
    try:
        conn.execute("INSERT INTO bi VALUES (1, 'abc')")
        expect(conn, "INSERT INTO bi VALUES (2, 'abcd')", "22001", "value too long for type character varying(3)")
        expect(conn, "INSERT INTO bi VALUES (NULL, 'x')", "23502", 'null value in column "a"')
        expect(conn, "INSERT INTO bi VALUES (3, 'x'), ('y', 'z')", "22P02")
        assert conn.execute("SELECT a, v FROM bi").fetchall() == [(1, "abc")]
    finally:
        conn.execute("DROP TABLE bi")


def test_transactions_buffer_writes(server):
    with server.connect(autocommit=False) as c:
        c.execute("CREATE TABLE tx (a int)")
        c.commit()
        c.execute("INSERT INTO tx VALUES (1)")
        c.rollback()
        c.execute("INSERT INTO tx VALUES (2)")
        c.commit()
        assert c.execute("SELECT a FROM tx").fetchall() == [(2,)]
        c.commit()
        c.execute("INSERT INTO tx VALUES (3)")
        assert c.execute("SELECT a FROM tx ORDER BY a").fetchall() == [(2,), (3,)]  # its own write
        with pytest.raises(psycopg.Error) as ei:
            c.execute("SELECT 1/0")
        assert ei.value.sqlstate == "22012"
        with pytest.raises(errors.InFailedSqlTransaction):
            c.execute("SELECT 1")
        c.rollback()
        assert c.execute("SELECT a FROM tx").fetchall() == [(2,)]
        c.commit()
        c.autocommit = True
        c.execute("DROP TABLE tx")
