"""The RBAC rules (``catalog.rbac``) and the catalog state behind them, without a server:
roles, memberships, owners and ACLs survive a reload of the sqlite catalog and a round
trip through the PostgreSQL catalog log's op encoding (so both backends hold them)."""

from __future__ import annotations

import json

import pytest

from catalog import durable, rbac
from catalog.durable_postgres import decode_op, encode_op
from catalog.errors import SqlError
from catalog.snapshot import AclItem, Cluster, Column, Role, Table
from catalog.types import SqlType


def _catalog(tmp_path):
    store = durable.CatalogStore(str(tmp_path / "catalog.db"))
    snap = store.transact(store.load(), [
        durable.CreateRole(Role("u1", "materialize", login=True, superuser=True)),
        durable.CreateRole(Role("u2", "joe", login=True)),
        durable.CreateRole(Role("u3", "readers")),
        durable.CreateCluster(Cluster("u1", "quickstart")),
        durable.CreateTable(Table("u1", "public", "t", (Column("a", SqlType("int4")),), "s1")),
    ], {"role": 4, "item": 2, "cluster": 2})
    return store, snap


RBAC_OPS = [
    durable.GrantRole("u3", "u2", "u1"),
    durable.SetOwner("item:u1", "u3"),
    durable.SetPrivileges("item:u1", (AclItem("u3", "u3", "arwd"), AclItem("p", "u3", "r"))),
    durable.SetDefaultPrivileges("u1||TABLE", (AclItem("u2", "", "r"),)),
    durable.UpdateRole(Role("u2", "joe", login=True, password="SCRAM-SHA-256$4096:c2FsdA==$a2V5:a2V5")),
]


def test_rbac_state_survives_a_reload(tmp_path):
    store, snap = _catalog(tmp_path)
    snap = store.transact(snap, RBAC_OPS, dict(snap.next_ids))
    store.close()
    again = durable.CatalogStore(str(tmp_path / "catalog.db")).load()
    for f in ("roles", "role_members", "owners", "privileges", "default_privileges"):
        assert dict(getattr(again, f)) == dict(getattr(snap, f)), f
    assert again.roles["u2"].password.startswith("SCRAM-SHA-256$")


def test_rbac_ops_round_trip_through_the_catalog_log_encoding():
    for op in RBAC_OPS + [durable.DropRole("u2"), durable.RevokeRole("u3", "u2"), durable.RevokeAll("u2")]:
        assert decode_op(json.loads(json.dumps(encode_op(op)))) == op


def test_membership_ownership_and_public(tmp_path):
    store, snap = _catalog(tmp_path)
    t = rbac.relation_ref(snap.tables["u1"])
    assert rbac.owner_of(snap, t) == "u1" and not rbac.has_privilege(snap, "u2", t, "r")
    assert rbac.has_privilege(snap, "u1", t, "arwd")  # superuser
    snap = store.transact(snap, RBAC_OPS[:3], dict(snap.next_ids))
    assert rbac.memberships(snap, "u2") == {"u2", "u3", "p"}
    assert rbac.has_privilege(snap, "u2", t, "arwd")  # through readers, the owner
    assert rbac.is_owner(snap, "u2", t)
    rbac.require(snap, t, "r", "u9")  # PUBLIC's grant
    with pytest.raises(SqlError) as e:
        rbac.require(snap, t, "a", "u9")
    assert (e.value.sqlstate, e.value.message) == ("42501", 'permission denied for TABLE "materialize.public.t"')
    assert [rbac.mz_aclitem_text(a) for a in rbac.acl_of(snap, t)] == ["u3=arwd/u3", "=r/u3"]
    assert [rbac.aclitem_text(snap, a) for a in rbac.acl_of(snap, t)] == ["readers=arwd/readers", "=r/readers"]


def test_dropping_a_role_takes_its_grants_and_memberships(tmp_path):
    store, snap = _catalog(tmp_path)
    snap = store.transact(snap, RBAC_OPS[:4] + [durable.SetPrivileges("cluster:u1", (AclItem("u2", "u1", "U"),))],
                          dict(snap.next_ids))
    snap = store.transact(snap, [durable.DropRole("u2")], dict(snap.next_ids))
    assert "u2" not in snap.roles and not snap.role_members
    assert snap.privileges["cluster:u1"] == () and not snap.default_privileges


def test_owners_and_acls_go_with_their_objects(tmp_path):
    store, snap = _catalog(tmp_path)
    snap = store.transact(snap, RBAC_OPS[1:3], dict(snap.next_ids))
    snap = store.transact(snap, [durable.DropTable("u1")], dict(snap.next_ids))
    assert "item:u1" not in snap.owners and "item:u1" not in snap.privileges


def test_default_acl_of_objects_made_before_roles():
    from catalog.snapshot import CatalogSnapshot

    snap = CatalogSnapshot()
    c = rbac.cluster_ref(Cluster("u1", "quickstart"))
    assert [rbac.mz_aclitem_text(a) for a in rbac.acl_of(snap, c)] == ["u1=UC/u1", "=U/s1"]
    assert [rbac.mz_aclitem_text(a) for a in rbac.acl_of(snap, rbac.schema_ref(snap, "public"))] == \
        ["u1=UC/u1", "=U/s1"]
    assert rbac.parse_privileges(["ALL"], "VIEW") == "r"
    with pytest.raises(SqlError, match="invalid privilege types INSERT for VIEW"):
        rbac.parse_privileges(["INSERT"], "VIEW")


def test_grant_and_role_statements_parse():
    from sqlfront import mzparse as mz

    assert mz.parse_mz('GRANT SELECT, INSERT ON TABLE t, "S".u TO joe, PUBLIC') == mz.GrantPrivileges(
        False, ("SELECT", "INSERT"), "TABLE", (("t",), ("S", "u")), ("joe", "PUBLIC"))
    assert mz.parse_mz("REVOKE ALL PRIVILEGES ON SCHEMA materialize.public FROM joe CASCADE") == mz.GrantPrivileges(
        True, ("ALL",), "SCHEMA", (("materialize", "public"),), ("joe",))
    assert mz.parse_mz("GRANT CREATECLUSTER ON SYSTEM TO joe").kind == "SYSTEM"
    assert mz.parse_mz("GRANT a, b TO c") == mz.GrantRoles(False, ("a", "b"), ("c",))
    assert mz.parse_mz("CREATE ROLE joe WITH LOGIN, SUPERUSER PASSWORD 'x'") == mz.CreateRole(
        "joe", (("LOGIN", None), ("SUPERUSER", None), ("PASSWORD", "x")))
    assert mz.parse_mz("ALTER CLUSTER c OWNER TO joe") == mz.AlterOwner("CLUSTER", ("c",), "joe")
    for bad, state in (("GRANT USAGE ON TYPE t TO joe", "0A000"), ("CREATE ROLE r WITH NOPE", "42601"),
                       ("GRANT SELECT ON t TO joe WITH GRANT OPTION", "0A000")):
        with pytest.raises(SqlError) as e:
            mz.parse_mz(bad)
        assert e.value.sqlstate == state, bad


# -- one authorization point (issue 33) ----------------------------------------------------------

def test_every_dispatched_statement_declares_its_privileges():
    from sqlfront.rbac import STATEMENT_PRIVILEGES
    from sqlfront.session import HANDLERS

    assert set(HANDLERS) == set(STATEMENT_PRIVILEGES)


def test_a_statement_or_op_that_declares_no_privileges_is_refused(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from sqlfront import rbac as stmt_rbac

    _, snap = _catalog(tmp_path)

    class NewStatement:
        pass

    session = SimpleNamespace(env=SimpleNamespace(snapshot=snap))
    with pytest.raises(SqlError) as e:
        stmt_rbac.authorize_statement(session, NewStatement())  # even for a superuser's
    assert e.value.sqlstate == "XX000"

    class NewOp:
        pass

    with pytest.raises(SqlError) as e:
        stmt_rbac.check_ops(snap, [NewOp()], "u1")
    assert e.value.sqlstate == "XX000"


def test_materialized_views_are_objects_of_their_own_kind(tmp_path):
    from catalog.snapshot import MaterializedView

    store, snap = _catalog(tmp_path)
    mv = MaterializedView("u2", "public", "mv", (Column("a", SqlType("int4")),), "s2", sql="SELECT 1", cluster_id="u1")
    snap = store.transact(snap, [durable.CreateMaterializedView(mv), durable.SetOwner("item:u2", "u2"),
                                 durable.SetPrivileges("item:u2", (AclItem("u2", "u2", "r"), AclItem("u3", "u2", "r")))],
                          dict(snap.next_ids))
    ref = rbac.ref_for_key(snap, "item:u2")
    assert ref == rbac.relation_ref(mv) and ref.kind == "MATERIALIZED VIEW"
    # the owner and ACL stay (they were dropped as if the object were gone)
    assert rbac.owner_of(snap, ref) == "u2" and rbac.has_privilege(snap, "u3", ref, "r")
    assert not rbac.has_privilege(snap, "u3", ref, "a")
    with pytest.raises(SqlError) as e:
        rbac.parse_privileges(["INSERT"], ref.kind, ref.name)
    assert e.value.sqlstate == "0LP01"


def test_another_sessions_temporary_schema_is_hidden(tmp_path):
    from catalog.snapshot import Schema, Scope

    store, snap = _catalog(tmp_path)
    mine, theirs = "mz_temp_p1_aaaa", "mz_temp_p1_bbbb"
    snap = store.transact(snap, [
        durable.CreateSchema(Schema("u5", mine, temp=True)), durable.CreateSchema(Schema("u6", theirs, temp=True)),
        durable.CreateTable(Table("u7", theirs, "t", (Column("a", SqlType("int4")),), "s7")),
    ], dict(snap.next_ids))

    assert snap.resolve_relation(theirs, "t").id == "u7"  # the environment's own work sees them all
    snap = snap.scoped(Scope(("public",), mine))  # a session: its own only
    assert snap.schema_by_name(mine) is not None and not snap.schema_exists(theirs)
    with pytest.raises(SqlError) as e:
        snap.resolve_relation(theirs, "t")
    assert e.value.sqlstate == "42P01"
