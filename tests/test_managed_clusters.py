"""Managed clusters through the wire (Materialize's "CREATE CLUSTER" / "ALTER CLUSTER"):
SIZE and REPLICATION FACTOR, pausing with 0, the catalog columns, SHOW CLUSTERS,
SWAP WITH, refused replica DDL, and a graceful reconfiguration. Most clusters here have
no replica (REPLICATION FACTOR 0): replica processes are slow to start."""

from __future__ import annotations

import psycopg
import pytest


def _cluster(conn, name):
    return conn.execute("SELECT managed, size, replication_factor, availability_zones FROM mz_clusters"
                        " WHERE name = %s", (name,)).fetchone()


def _replicas(conn, name):
    return conn.execute("SELECT r.name, r.size FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                        " WHERE c.name = %s ORDER BY r.name", (name,)).fetchall()


def test_managed_cluster_statements_and_catalog(conn):
    conn.autocommit = True
    conn.execute("CREATE CLUSTER mc_a (SIZE = '2', REPLICATION FACTOR = 0)")
    conn.execute("CREATE CLUSTER mc_b SIZE 'xsmall', REPLICATION FACTOR 0")
    conn.execute("CREATE CLUSTER mc_u REPLICAS ()")
    try:
        assert _cluster(conn, "mc_a") == (True, "2", 0, [])
        assert _cluster(conn, "mc_b") == (True, "xsmall", 0, [])
        assert _cluster(conn, "mc_u") == (False, None, None, None)
        assert _replicas(conn, "mc_a") == []
        conn.execute("ALTER CLUSTER mc_a SET (SIZE '4', AVAILABILITY ZONES ('az2'))")
        conn.execute("ALTER CLUSTER mc_a RESET (AVAILABILITY ZONES)")
        assert _cluster(conn, "mc_a") == (True, "4", 0, [])
        assert conn.execute("SHOW CLUSTERS LIKE 'mc_%'").fetchall() == [
            ("mc_a", None, ""), ("mc_b", None, ""), ("mc_u", None, "")]
        assert [d.name for d in conn.execute("SHOW CLUSTERS").description] == ["name", "replicas", "comment"]

        conn.execute("ALTER CLUSTER mc_a SWAP WITH mc_b")
        assert _cluster(conn, "mc_a") == (True, "xsmall", 0, [])
        assert _cluster(conn, "mc_b") == (True, "4", 0, [])

        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="cannot modify managed cluster mc_a"):
            conn.execute("CREATE CLUSTER REPLICA mc_a.r9 SIZE '1'")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="not supported for unmanaged"):
            conn.execute("ALTER CLUSTER mc_u SET (REPLICATION FACTOR 1)")
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute("CREATE CLUSTER mc_x (SIZE '1', INTROSPECTION INTERVAL = '1s')")
        with pytest.raises(psycopg.errors.SyntaxError):
            conn.execute("ALTER CLUSTER mc_a SET REPLICATION FACTOR 2")
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="unknown cluster replica size nope"):
            conn.execute("ALTER CLUSTER mc_a SET (SIZE 'nope')")
        with pytest.raises(psycopg.errors.ActiveSqlTransaction), conn.transaction():
            conn.execute("ALTER CLUSTER mc_a SET (SIZE '1') WITH (WAIT FOR '0s')")
        # a timed-out graceful reconfiguration with ON TIMEOUT ROLLBACK changes nothing
        with pytest.raises(psycopg.errors.QueryCanceled, match="rolled back"):
            conn.execute("ALTER CLUSTER mc_b SET (SIZE '1', REPLICATION FACTOR 1)"
                         " WITH (WAIT UNTIL READY (TIMEOUT = '0s', ON TIMEOUT = 'ROLLBACK'))")
        assert _cluster(conn, "mc_b") == (True, "4", 0, [])
        assert _replicas(conn, "mc_b") == []
    finally:
        conn.execute("DROP CLUSTER IF EXISTS mc_a, mc_b, mc_u, mc_x CASCADE")


def test_graceful_reconfiguration_returns_once_the_replica_is_ready(conn):
    """ALTER CLUSTER ... WITH (WAIT UNTIL READY ...) returns when the new replica (made
    as r1-pending, promoted to r1) is healthy, so the cluster answers at once. (The
    replacement of an old replica is pinned by the unit test: one replica process
    here, they are slow to start.)"""
    conn.autocommit = True
    conn.execute("CREATE CLUSTER mc_g (SIZE '1', REPLICATION FACTOR 0)")
    try:
        conn.execute("SET cluster = mc_g")
        conn.execute("CREATE TABLE mc_t (a int)")
        conn.execute("INSERT INTO mc_t VALUES (1), (2)")
        conn.execute("ALTER CLUSTER mc_g SET (SIZE 'small', REPLICATION FACTOR 1)"
                     " WITH (WAIT UNTIL READY (TIMEOUT '300s', ON TIMEOUT COMMIT))")
        assert conn.execute("SELECT r.name, r.size, r.status FROM mz_cluster_replicas r"
                            " JOIN mz_clusters c ON c.id = r.cluster_id WHERE c.name = 'mc_g'").fetchall() == \
            [("r1", "small", "healthy")]
        assert conn.execute("SHOW CLUSTERS LIKE 'mc_g'").fetchall() == [("mc_g", "r1 (small)", "")]
        assert conn.execute("SELECT sum(a) FROM mc_t").fetchone() == (3,)
        conn.execute("ALTER CLUSTER mc_g SET (REPLICATION FACTOR 0)")
        assert _replicas(conn, "mc_g") == []
    finally:
        conn.execute("RESET cluster")
        conn.execute("DROP TABLE IF EXISTS mc_t")
        conn.execute("DROP CLUSTER IF EXISTS mc_g CASCADE")
