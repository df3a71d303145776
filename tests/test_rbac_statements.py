"""Every statement kind against another role's objects, as a role with no grants (issue 33,
item 1): for each type of the session's dispatch table (``sqlfront.session.HANDLERS``) the
cases below say what an unprivileged role gets — 42501 where Materialize's privilege table
(or PostgreSQL's, for what Materialize lacks: sequences, TRUNCATE) denies it, 42P01 for
another session's temporary table, success for statements that touch no object. A new
statement kind without a case here fails :func:`test_every_statement_kind_has_a_case`.

After each denial the session stays usable and the catalog and the sequences' values are
as they were; after all of them, the tables' rows too.

Then the positive halves of the same rules: what ALTER MATERIALIZED VIEW ... OWNER TO and
GRANT on a materialized view change, TRUNCATE with DELETE granted, sequence functions
with USAGE / UPDATE granted, a setval denied leaving the owner's serial ids alone."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from pglast import ast

import sqlfront.mzparse as mz
import sqlfront.source_parse as sp
from sqlfront.session import HANDLERS

DENIED = "42501"


def _login(server, user: str) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=server.port, user=user, dbname="materialize", autocommit=True,
                           connect_timeout=10)


@pytest.fixture(scope="module")
def world(server):
    """Objects of the bootstrap superuser (``materialize``) and of a second role, and a
    login role ``nobody`` granted nothing. Yields the names; drops it all at the end."""
    x = uuid.uuid4().hex[:6]
    n = {k: f"rb_{k}_{x}" for k in ("t", "v", "mv", "s", "i", "sc", "c", "nobody", "other", "reader", "sec", "conn")}
    with server.connect() as admin:
        admin.execute("SET statement_timeout = '120s'")
        admin.execute(f"CREATE TABLE {n['t']} (id serial, a int)")
        admin.execute(f"INSERT INTO {n['t']} (a) VALUES (1), (2)")
        admin.execute(f"CREATE VIEW {n['v']} AS SELECT a FROM {n['t']}")
        admin.execute(f"CREATE MATERIALIZED VIEW {n['mv']} AS SELECT a FROM {n['t']}")
        admin.execute(f"CREATE SEQUENCE {n['s']}")
        admin.execute(f"CREATE INDEX {n['i']} ON {n['t']} (a)")
        admin.execute(f"CREATE SCHEMA {n['sc']}")
        admin.execute(f"CREATE TABLE {n['sc']}.t2 (a int)")
        admin.execute(f"INSERT INTO {n['sc']}.t2 VALUES (1)")
        # an unmanaged cluster with a replica (REMOTE to nowhere: no process) to drop
        admin.execute(f"CREATE CLUSTER {n['c']} REPLICAS (rb_r (REMOTE ('sc://127.0.0.1:9')))")
        admin.execute(f"CREATE SECRET {n['sec']} AS 'rb-secret'")
        admin.execute(f"CREATE CONNECTION {n['conn']} TO POSTGRES (HOST '127.0.0.1', PORT 9, USER 'u',"
                      f" PASSWORD SECRET {n['sec']}) WITH (VALIDATE = false)")
        admin.execute(f"CREATE ROLE {n['other']}")
        admin.execute(f"CREATE ROLE {n['reader']} LOGIN")
        admin.execute(f"CREATE ROLE {n['nobody']} LOGIN")
        # what nobody holds in the schema it may not use: the schema's USAGE still rules
        admin.execute(f"GRANT DELETE, SELECT ON {n['sc']}.t2 TO {n['nobody']}")
        n["rows"] = _rows(admin, n)
        with server.connect() as temp_owner:  # another session's temporary table
            temp_owner.execute(f"CREATE TEMP TABLE rb_tt_{x} (a int)")
            n["temp"] = admin.execute("SELECT schema FROM mz_tables WHERE name = %s",
                                      (f"rb_tt_{x}",)).fetchone()[0] + f".rb_tt_{x}"
            yield n, temp_owner
        for stmt in (f"DROP SECRET IF EXISTS {n['sec']} CASCADE", f"DROP MATERIALIZED VIEW IF EXISTS {n['mv']}", f"DROP TABLE IF EXISTS {n['t']} CASCADE",
                     f"DROP SEQUENCE IF EXISTS {n['s']}", f"DROP SCHEMA IF EXISTS {n['sc']} CASCADE",
                     f"DROP CLUSTER IF EXISTS {n['c']} CASCADE", f"DROP ROLE IF EXISTS {n['nobody']}",
                     f"DROP ROLE IF EXISTS {n['other']}", f"DROP ROLE IF EXISTS {n['reader']}"):
            admin.execute(stmt)


#: statement type -> cases: (statements, expected SQLSTATE of the last; None: it succeeds).
#: The statements before the last must succeed. ``{t}`` etc. are the world's names.
CASES: dict[type, list[tuple[tuple[str, ...], str | None]]] = {
    ast.SelectStmt: [(("SELECT * FROM {t}",), DENIED), (("SELECT * FROM {mv}",), DENIED),
                     (("SELECT * FROM {v}",), DENIED), (("SELECT last_value FROM {s}",), DENIED),
                     (("SELECT nextval('{s}')",), DENIED), (("SELECT setval('{s}', 100)",), DENIED),
                     (("SELECT setval('{t}_id_seq', 1)",), DENIED), (("SELECT currval('{s}')",), DENIED),
                     (("SELECT * FROM {sc}.t2",), DENIED)],
    ast.DeclareCursorStmt: [(("BEGIN", "DECLARE rb_cur CURSOR FOR SELECT * FROM {t}"), DENIED)],
    ast.ExplainStmt: [(("EXPLAIN SELECT * FROM {t}",), DENIED)],
    mz.ExplainPlan: [(("EXPLAIN OPTIMIZED PLAN FOR SELECT * FROM {mv}",), DENIED),
                     (("EXPLAIN PLAN FOR MATERIALIZED VIEW {mv}",), DENIED)],
    ast.CreateTableAsStmt: [(("CREATE TABLE rb_ctas AS SELECT * FROM {t}",), DENIED)],
    mz.Subscribe: [(("SUBSCRIBE {t}",), DENIED)],
    mz.DeclareSubscribe: [(("BEGIN", "DECLARE rb_cur CURSOR FOR SUBSCRIBE {mv}"), DENIED)],
    mz.CopySubscribe: [(("COPY (SUBSCRIBE {t}) TO STDOUT",), DENIED)],
    ast.InsertStmt: [(("INSERT INTO {t} (a) VALUES (3)",), DENIED), (("INSERT INTO {mv} VALUES (3)",), DENIED)],
    ast.UpdateStmt: [(("UPDATE {t} SET a = 0",), DENIED)],
    ast.DeleteStmt: [(("DELETE FROM {t}",), DENIED), (("DELETE FROM {sc}.t2",), DENIED)],
    ast.CopyStmt: [(("COPY {t} TO STDOUT",), DENIED), (("COPY (SELECT * FROM {v}) TO STDOUT",), DENIED)],
    ast.TruncateStmt: [(("TRUNCATE {t}",), DENIED), (("TRUNCATE TABLE {sc}.t2",), DENIED),
                       (("TRUNCATE {temp}",), "42P01")],
    mz.CreateCluster: [(("CREATE CLUSTER rb_nc REPLICAS ()",), DENIED)],
    mz.CreateClusterReplica: [(("CREATE CLUSTER REPLICA {c}.r1 SIZE '1'",), DENIED)],
    mz.DropClusters: [(("DROP CLUSTER {c}",), DENIED)],
    mz.DropClusterReplicas: [(("DROP CLUSTER REPLICA {c}.rb_r",), DENIED)],
    mz.AlterClusterRename: [(("ALTER CLUSTER {c} RENAME TO rb_renamed",), DENIED)],
    mz.AlterClusterSet: [(("ALTER CLUSTER quickstart SET (REPLICATION FACTOR 2)",), DENIED)],
    mz.AlterClusterSwap: [(("ALTER CLUSTER {c} SWAP WITH quickstart",), DENIED)],
    mz.AlterClusterReplicaRename: [(("ALTER CLUSTER REPLICA {c}.rb_r RENAME TO rb_renamed",), DENIED)],
    mz.SelectWithShows: [(("SELECT count(*) FROM (SHOW CLUSTERS)",), None),
                         (("SELECT * FROM (SHOW CLUSTERS) AS s, {t}",), DENIED)],
    ast.CreateStmt: [(("CREATE TABLE rb_new (a int)",), DENIED), (("CREATE TABLE {sc}.rb_new (a int)",), DENIED),
                     (("CREATE TABLE {temp_schema}.rb_new (a int)",), "3F000")],
    ast.ViewStmt: [(("CREATE VIEW rb_new AS SELECT 1",), DENIED), (("CREATE OR REPLACE VIEW {v} AS SELECT 1",), DENIED)],
    mz.CreateViewIfNotExists: [(("CREATE VIEW IF NOT EXISTS rb_new AS SELECT 1",), DENIED)],
    ast.IndexStmt: [(("CREATE INDEX rb_new ON {t} (a)",), DENIED)],
    mz.CreateIndex: [(("CREATE INDEX rb_new IN CLUSTER {c} ON {t} (a)",), DENIED)],
    mz.CreateMaterializedView: [(("CREATE MATERIALIZED VIEW rb_new AS SELECT 1 AS a",), DENIED)],
    ast.DropStmt: [(("DROP TABLE {t}",), DENIED), (("DROP VIEW {v}",), DENIED),
                   (("DROP MATERIALIZED VIEW {mv}",), DENIED), (("DROP INDEX {i}",), DENIED),
                   (("DROP SEQUENCE {s}",), DENIED), (("DROP SCHEMA {sc} CASCADE",), DENIED),
                   (("DROP TABLE {temp}",), "42P01")],
    ast.RefreshMatViewStmt: [(("REFRESH MATERIALIZED VIEW {mv}",), DENIED)],
    ast.CreateSeqStmt: [(("CREATE SEQUENCE rb_new",), DENIED)],
    ast.CreateSchemaStmt: [(("CREATE SCHEMA rb_new",), DENIED)],
    ast.CommentStmt: [(("COMMENT ON TABLE {t} IS 'x'",), DENIED), (("COMMENT ON MATERIALIZED VIEW {mv} IS 'x'",), DENIED),
                      (("COMMENT ON COLUMN {t}.a IS 'x'",), DENIED), (("COMMENT ON SEQUENCE {s} IS 'x'",), DENIED)],
    ast.RenameStmt: [(("ALTER TABLE {t} RENAME TO rb_renamed",), DENIED),
                     (("ALTER MATERIALIZED VIEW {mv} RENAME TO rb_renamed",), DENIED),
                     (("ALTER VIEW {v} RENAME TO rb_renamed",), DENIED),
                     (("ALTER SEQUENCE {s} RENAME TO rb_renamed",), DENIED),
                     (("ALTER INDEX {i} RENAME TO rb_renamed",), DENIED),
                     (("ALTER TABLE {t} RENAME COLUMN a TO b",), DENIED),
                     (("ALTER SCHEMA {sc} RENAME TO rb_renamed",), DENIED)],
    ast.AlterTableStmt: [(("ALTER TABLE {t} ADD COLUMN b int",), DENIED),
                         (("ALTER TABLE {t} ALTER COLUMN a SET DEFAULT 5",), DENIED),
                         (("ALTER TABLE {t} OWNER TO {nobody}",), DENIED),
                         (("ALTER MATERIALIZED VIEW {mv} OWNER TO {nobody}",), DENIED),
                         (("ALTER SEQUENCE {s} OWNER TO {nobody}",), DENIED)],
    ast.AlterSeqStmt: [(("ALTER SEQUENCE {s} RESTART",), DENIED), (("ALTER SEQUENCE {t}_id_seq RESTART WITH 1",), DENIED),
                       (("ALTER SEQUENCE {s} INCREMENT BY 5",), DENIED)],
    mz.CreateRole: [(("CREATE ROLE rb_new",), DENIED)],
    mz.AlterRole: [(("ALTER ROLE {other} LOGIN",), DENIED)],
    ast.DropRoleStmt: [(("DROP ROLE {other}",), DENIED)],
    mz.GrantRoles: [(("GRANT {other} TO {nobody}",), DENIED)],
    mz.GrantPrivileges: [(("GRANT SELECT ON {t} TO {nobody}",), DENIED), (("GRANT SELECT ON {mv} TO {nobody}",), DENIED),
                         (("GRANT USAGE ON SCHEMA {sc} TO {nobody}",), DENIED),
                         (("REVOKE DELETE ON {sc}.t2 FROM {nobody}",), DENIED)],
    mz.AlterOwner: [(("ALTER CLUSTER {c} OWNER TO {nobody}",), DENIED)],
    ast.AlterOwnerStmt: [(("ALTER SCHEMA {sc} OWNER TO {nobody}",), DENIED)],
    mz.AlterDefaultPrivileges: [(("ALTER DEFAULT PRIVILEGES FOR ROLE materialize GRANT SELECT ON TABLES TO {nobody}",),
                                 DENIED)],
    ast.ReassignOwnedStmt: [(("REASSIGN OWNED BY {other} TO {nobody}",), DENIED)],
    ast.DropOwnedStmt: [(("DROP OWNED BY {other}",), DENIED)],
    ast.VariableSetStmt: [(("SET ROLE materialize",), DENIED), (("SET search_path = public",), None)],
    ast.VariableShowStmt: [(("SHOW search_path",), None)],
    ast.TransactionStmt: [(("BEGIN", "ROLLBACK"), None)],
    ast.PrepareStmt: [(("PREPARE rb_p AS SELECT * FROM {t}",), None)],  # PostgreSQL: checked at EXECUTE
    ast.ExecuteStmt: [(("PREPARE rb_p AS SELECT * FROM {t}", "EXECUTE rb_p"), DENIED)],
    ast.DeallocateStmt: [(("DEALLOCATE ALL",), None)],
    ast.DiscardStmt: [(("DISCARD ALL",), None)],
    ast.FetchStmt: [(("BEGIN", "DECLARE rb_cur CURSOR FOR SELECT 1", "FETCH ALL rb_cur"), None)],
    mz.FetchWith: [(("BEGIN", "DECLARE rb_cur CURSOR FOR SELECT 1", "FETCH ALL rb_cur WITH (timeout = '1s')"), None)],
    ast.ClosePortalStmt: [(("BEGIN", "DECLARE rb_cur CURSOR FOR SELECT 1", "CLOSE rb_cur"), None)],
    mz.ShowClusters: [(("SHOW CLUSTERS",), None)],
    mz.ShowClusterReplicas: [(("SHOW CLUSTER REPLICAS",), None)],
    mz.ShowObjects: [(("SHOW TABLES",), None)],
    mz.ShowIndexes: [(("SHOW INDEXES",), None)],
    mz.ShowMaterializedViews: [(("SHOW MATERIALIZED VIEWS",), None)],
    mz.ShowCreate: [(("SHOW CREATE MATERIALIZED VIEW {mv}",), None)],
    sp.CreateSecret: [(("CREATE SECRET rb_new AS 'x'",), DENIED)],
    sp.AlterSecret: [(("ALTER SECRET {sec} AS 'y'",), DENIED)],
    sp.CreateConnection: [(("CREATE CONNECTION rb_new TO POSTGRES (HOST '127.0.0.1', PORT 9, USER 'u')",), DENIED)],
    sp.ValidateConnection: [(("VALIDATE CONNECTION {conn}",), DENIED)],
    sp.DropItems: [(("DROP SECRET {sec} CASCADE",), DENIED), (("DROP CONNECTION {conn}",), DENIED)],
    sp.CreateSource: [(("CREATE SOURCE rb_new FROM LOAD GENERATOR COUNTER",), DENIED)],
}


def _catalog_state(admin, n) -> list:
    """What a denied statement must leave alone, cheaply (system tables and sequence
    values, no cluster work): objects, owners, ACLs, columns, comments, roles."""
    queries = [
        "SELECT id, name, owner_id, privileges FROM mz_tables ORDER BY id",
        "SELECT id, name, owner_id, privileges FROM mz_views ORDER BY id",
        "SELECT id, name, owner_id, privileges FROM mz_materialized_views ORDER BY id",
        "SELECT id, name, owner_id FROM mz_indexes ORDER BY id",
        "SELECT id, name, owner_id, privileges FROM mz_schemas ORDER BY id",
        "SELECT id, name, owner_id, privileges FROM mz_clusters ORDER BY id",
        "SELECT id, name FROM mz_cluster_replicas ORDER BY id",
        'SELECT id, name, position, nullable, "default" FROM mz_columns ORDER BY id, position',
        "SELECT * FROM mz_roles ORDER BY id",
        "SELECT * FROM mz_role_members ORDER BY 1, 2",
        "SELECT * FROM mz_default_privileges ORDER BY 1, 2, 3, 4, 5",
        "SELECT objoid, objsubid, description FROM pg_description ORDER BY 1, 2",
        f"SELECT last_value, is_called FROM {n['s']}",
        f"SELECT last_value, is_called FROM {n['t']}_id_seq",
    ]
    return [admin.execute(q).fetchall() for q in queries]


def _rows(admin, n) -> list:
    """The rows of the world's tables and materialized view (peeks: checked once, after
    every denial, by :func:`test_the_denials_left_every_row_alone`)."""
    return [sorted(admin.execute(f"SELECT * FROM {rel}").fetchall()) for rel in (n["t"], f"{n['sc']}.t2", n["mv"])]


def test_every_statement_kind_has_a_case():
    assert sorted(t.__name__ for t in set(HANDLERS) - set(CASES)) == []


#: one test per case: (statement type, index of the case)
_CASE_IDS = [(kind, i) for kind in sorted(HANDLERS, key=lambda t: t.__name__) for i in range(len(CASES.get(kind, ())))]


@pytest.mark.parametrize(("kind", "i"), _CASE_IDS, ids=[f"{k.__name__}-{i}" for k, i in _CASE_IDS])
def test_an_unprivileged_role_is_refused_and_changes_nothing(server, world, kind, i):
    n, _ = world
    names = n | {"temp_schema": n["temp"].split(".")[0]}
    stmts, expected = CASES[kind][i]
    *setup, last = [s.format(**names) for s in stmts]
    with server.connect() as admin, _login(server, n["nobody"]) as c:
        before = _catalog_state(admin, n)
        for s in setup:
            c.execute(s)
        if expected is None:
            c.execute(last)
        else:
            with pytest.raises(psycopg.Error) as e:
                c.execute(last)
            assert e.value.sqlstate == expected, (last, e.value.sqlstate, str(e.value))
        if c.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            c.execute("ROLLBACK")
        assert c.execute("SELECT 1").fetchone() == (1,)  # the session stays usable
        assert _catalog_state(admin, n) == before, last


def test_the_denials_left_every_row_alone(server, world):
    n, _ = world
    with server.connect() as admin:
        assert _rows(admin, n) == n["rows"]


def test_materialized_view_owner_and_grants_take_effect(server, world):
    n, _ = world
    with server.connect() as admin, _login(server, n["reader"]) as r:
        mv = n["mv"]
        reader_id = admin.execute("SELECT id FROM mz_roles WHERE name = %s", (n["reader"],)).fetchone()[0]
        with pytest.raises(psycopg.Error) as e:
            r.execute(f"SELECT * FROM {mv}")
        assert e.value.sqlstate == DENIED
        assert e.value.diag.message_primary == f'permission denied for MATERIALIZED VIEW "materialize.public.{mv}"'
        admin.execute(f"GRANT SELECT ON {mv} TO {n['reader']}")
        assert admin.execute("SELECT privileges FROM mz_materialized_views WHERE name = %s", (mv,)).fetchone()[0] \
            == ["u1=r/u1", f"{reader_id}=r/u1"]
        assert sorted(r.execute(f"SELECT a FROM {mv}").fetchall()) == [(1,), (2,)]
        with pytest.raises(psycopg.Error) as e:
            admin.execute(f"GRANT INSERT ON {mv} TO {n['reader']}")
        assert e.value.sqlstate == "0LP01"  # a materialized view has SELECT only
        admin.execute(f"REVOKE SELECT ON {mv} FROM {n['reader']}")
        with pytest.raises(psycopg.Error):
            r.execute(f"SELECT * FROM {mv}")
        # OWNER TO: the new owner holds it (and may rename and comment on it)
        admin.execute(f"ALTER MATERIALIZED VIEW {mv} OWNER TO {n['reader']}")
        assert admin.execute("SELECT owner_id, privileges FROM mz_materialized_views WHERE name = %s",
                             (mv,)).fetchone() == (reader_id, [f"{reader_id}=r/{reader_id}"])
        assert sorted(r.execute(f"SELECT a FROM {mv}").fetchall()) == [(1,), (2,)]
        r.execute(f"COMMENT ON MATERIALIZED VIEW {mv} IS 'mine'")
        admin.execute(f"ALTER MATERIALIZED VIEW {mv} OWNER TO materialize")
        with pytest.raises(psycopg.Error) as e:
            r.execute(f"DROP MATERIALIZED VIEW {mv}")
        assert e.value.sqlstate == DENIED


def test_truncate_needs_delete_and_the_schema(server, world):
    n, temp_owner = world
    with server.connect() as admin, _login(server, n["reader"]) as r:
        admin.execute(f"CREATE TABLE rb_tr_{n['t']} (a int)")
        try:
            admin.execute(f"INSERT INTO rb_tr_{n['t']} VALUES (1)")
            admin.execute(f"GRANT DELETE ON rb_tr_{n['t']} TO {n['reader']}")
            r.execute(f"TRUNCATE rb_tr_{n['t']}")  # no SELECT needed: it reads nothing
            assert admin.execute(f"SELECT count(*) FROM rb_tr_{n['t']}").fetchone() == (0,)
        finally:
            admin.execute(f"DROP TABLE rb_tr_{n['t']}")
        # the temporary table's own session truncates it
        temp = n["temp"].split(".")[1]
        temp_owner.execute(f"INSERT INTO {temp} VALUES (1)")
        temp_owner.execute(f"TRUNCATE {temp}")
        assert temp_owner.execute(f"SELECT count(*) FROM {temp}").fetchone() == (0,)


def test_sequence_functions_follow_postgresql_privileges(server, world):
    n, _ = world
    with server.connect() as admin, _login(server, n["reader"]) as r:
        s, t = n["s"], n["t"]
        admin.execute(f"GRANT USAGE ON {s} TO {n['reader']}")
        try:
            v = r.execute(f"SELECT nextval('{s}')").fetchone()[0]
            assert r.execute(f"SELECT currval('{s}'), lastval()").fetchone() == (v, v)
            with pytest.raises(psycopg.Error) as e:
                r.execute(f"SELECT setval('{s}', 100)")
            assert e.value.sqlstate == DENIED
            admin.execute(f"GRANT UPDATE ON {s} TO {n['reader']}")
            assert r.execute(f"SELECT setval('{s}', 100)").fetchone() == (100,)
        finally:
            admin.execute(f"REVOKE ALL ON {s} FROM {n['reader']}")
        # a serial column's sequence: INSERT needs USAGE on it too (PostgreSQL's rule),
        # and a denied setval leaves the owner's next id alone
        before = admin.execute(f"SELECT max(id) FROM {t}").fetchone()[0]
        with pytest.raises(psycopg.Error) as e:
            r.execute(f"SELECT setval('{t}_id_seq', 1)")
        assert e.value.sqlstate == DENIED
        admin.execute(f"GRANT INSERT ON {t} TO {n['reader']}")
        try:
            with pytest.raises(psycopg.Error) as e:
                r.execute(f"INSERT INTO {t} (a) VALUES (9)")
            assert e.value.sqlstate == DENIED
            assert "SEQUENCE" in e.value.diag.message_primary
        finally:
            admin.execute(f"REVOKE ALL ON {t} FROM {n['reader']}")
        got = admin.execute(f"INSERT INTO {t} (a) VALUES (3) RETURNING id").fetchone()[0]
        assert got == before + 1
        admin.execute(f"DELETE FROM {t} WHERE id = {got}")
