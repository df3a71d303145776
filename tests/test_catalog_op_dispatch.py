"""Every catalog op class has a handler in each dispatcher over ops: the durable
catalog's (``catalog.durable._APPLY``, used by ``CatalogStore.transact``), the side
effects of committed ops (``sqlfront.controller.effects.SIDE_EFFECTS``) and the
privileges a role needs to submit it (``sqlfront.rbac._OP_PRIVILEGES``, used by
``check_ops``), so a new op cannot be forgotten in any. Pure Python: no server."""

from __future__ import annotations

import dataclasses
import inspect
import typing

import pytest
from cryptography.fernet import Fernet

from catalog import durable
from catalog.errors import SqlError
from catalog.secretbox import SecretBox
from catalog.snapshot import (
    AclItem, Cluster, Column, Connection, Index, MaterializedView, Replica, Role, Schema, Secret, Sequence, Table,
    View,
)
from catalog.types import SqlType
from sqlfront import rbac as stmt_rbac
from sqlfront.controller.effects import SIDE_EFFECTS


def _op_classes() -> set[type]:
    """The op classes: the members of ``durable.Op``, and every dataclass of the module
    that is none of the snapshot's value classes (so one left out of ``Op`` counts too)."""
    in_union = set(typing.get_args(durable.Op))
    defined = {v for v in vars(durable).values()
               if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == durable.__name__}
    return in_union | defined


def test_op_union_lists_every_op_class_of_the_module():
    assert _op_classes() == set(typing.get_args(durable.Op))


def test_every_op_class_has_a_durable_handler():
    assert _op_classes() - set(durable._APPLY) == set()


def test_every_op_class_has_a_side_effect_handler():
    assert _op_classes() - set(SIDE_EFFECTS) == set()


def test_every_op_class_declares_its_privileges():
    """An op needing no check would be listed too; one no role may submit is listed as refused."""
    assert _op_classes() - set(stmt_rbac._OP_PRIVILEGES) == set()


def test_an_op_the_system_submits_is_refused_to_every_role():
    store = durable.CatalogStore(":memory:")
    try:
        snap = store.load()
        with pytest.raises(SqlError) as e:
            stmt_rbac.check_ops(snap, [durable.FinalizeShards(("s1",))], "u1")
        assert e.value.sqlstate == "XX000"
        assert stmt_rbac.check_ops(snap, [durable.FinalizeShards(("s1",))], None) == []  # the system's own
    finally:
        store.close()


def test_seal_and_unseal_go_through_the_secret_table_and_leave_other_ops_alone():
    box = SecretBox(Fernet.generate_key())
    ops = [durable.CreateReplica(Replica("u1", "u1", "r1", "xsmall", token="tok")),
           # a rename or promotion carries the whole replica, its REMOTE token too
           durable.UpdateReplica(Replica("u1", "u1", "r2", "xsmall", token="tok")),
           durable.CreateSecret(Secret("u2", "s", "x", "pw1")), durable.UpdateSecret(Secret("u2", "s", "x", "pw2"))]
    assert set(map(type, ops)) == set(durable._SECRET_OF)
    for op in ops:
        sealed = durable.seal_op(op, box)
        text = sealed.replica.token if hasattr(sealed, "replica") else sealed.secret.value
        assert type(sealed) is type(op) and SecretBox.is_sealed(text)
        assert durable.seal_op(sealed, box) == sealed  # sealed once only
        assert durable.unseal_op(sealed, box) == op
        assert durable.unseal_op(op, box) == op  # stored in clear by an older version
    tokenless = durable.CreateReplica(Replica("u1", "u1", "r1", "xsmall"))
    other = durable.RenameCluster("u1", "c2")
    for op in (tokenless, other):
        assert durable.seal_op(op, box) is op and durable.unseal_op(op, box) is op


def test_transact_is_under_200_lines():
    assert len(inspect.getsource(durable.CatalogStore.transact).splitlines()) < 200


def test_transact_applies_ops_through_their_handlers():
    store = durable.CatalogStore(":memory:")
    try:
        snap = store.load()
        snap = store.transact(snap, [durable.CreateCluster(Cluster("u1", "c1")),
                                     durable.CreateSchema(Schema("u2", "s1"))], {"cluster": 2})
        assert snap.clusters["u1"].name == "c1" and snap.schemas["u2"].name == "s1"
        snap = store.transact(snap, [durable.RenameCluster("u1", "c2"), durable.DropSchema("u2")], {})
        assert snap.clusters["u1"].name == "c2" and "u2" not in snap.schemas
        assert store.load().clusters["u1"].name == "c2" and snap.version == 2
    finally:
        store.close()


def test_transact_refuses_a_value_that_is_no_op_and_applies_nothing():
    store = durable.CatalogStore(":memory:")
    try:
        snap = store.load()
        with pytest.raises(TypeError, match="unknown catalog op"):
            store.transact(snap, [durable.CreateCluster(Cluster("u1", "c1")), object()], {})
        assert "u1" not in store.load().clusters and store.load().version == 0
    finally:
        store.close()


#: the maps of a snapshot that CatalogStore.transact changes
_MAPS = ("clusters", "replicas", "tables", "views", "indexes", "sequences", "schemas", "materialized_views",
         "secrets", "connections", "comments", "roles", "role_members", "owners", "privileges",
         "default_privileges", "to_finalize")


def test_every_op_class_applied_in_memory_matches_what_is_stored(tmp_path):
    """Each handler's change to the snapshot is what a reload from sqlite reads back."""
    cols = (Column("a", SqlType("int4"), True),)
    acl = (AclItem("u7", "u7", "r"),)
    steps = [
        [durable.CreateCluster(Cluster("u1", "c1")),
         durable.CreateReplica(Replica("u1", "u1", "r1", "xsmall", pending=True)),
         durable.CreateSchema(Schema("u2", "s1")),
         durable.CreateTable(Table("u3", "s1", "t", cols, "s-t")),
         durable.CreateView(View("u4", "s1", "v", "SELECT 1", cols)),
         durable.CreateMaterializedView(MaterializedView("u5", "s1", "m", cols, "s-m", "SELECT 1", "u1")),
         durable.CreateIndex(Index("u6", "s1", "i", "u3", "CREATE INDEX i ON t (a)", "u1", ("a",))),
         durable.CreateSequence(Sequence("u8", "s1", "q")),
         durable.CreateSecret(Secret("u9", "s1", "x", "hunter2")),
         durable.CreateConnection(Connection("u10", "s1", "k", "postgres", (("HOST", "h", False),))),
         durable.CreateRole(Role("u7", "alice")), durable.CreateRole(Role("u11", "bob")),
         durable.GrantRole("u7", "u11", "u7"),
         durable.SetOwner("item:u3", "u7"), durable.SetPrivileges("item:u3", acl),
         durable.SetDefaultPrivileges("u7|s1|tables", acl),
         durable.SetComment("u3", 0, "a table")],
        [durable.RenameCluster("u1", "c2"), durable.UpdateCluster(Cluster("u1", "c3", True, "xsmall", 1)),
         durable.UpdateReplica(Replica("u1", "u1", "r2", "xsmall")),
         durable.RenameSchema("u2", "s2"),
         durable.UpdateTable(Table("u3", "s2", "t2", cols, "s-t2")),
         durable.UpdateMaterializedView(MaterializedView("u5", "s2", "m2", cols, "s-m", "SELECT 1", "u1")),
         durable.UpdateSequence(Sequence("u8", "s2", "q2", increment=2)),
         durable.UpdateSecret(Secret("u9", "s2", "x", "second")),
         durable.UpdateRole(Role("u11", "bob", login=True)),
         durable.RevokeRole("u7", "u11"), durable.SetComment("u3", 0, None),
         durable.FinalizeShards(("s-t",))],
        [durable.DropIndex("u6"), durable.DropView("u4"), durable.DropMaterializedView("u5"),
         durable.DropSequence("u8"), durable.DropSecret("u9"), durable.DropConnection("u10"),
         durable.DropTable("u3"), durable.DropSchema("u2"), durable.RevokeAll("u11"), durable.DropRole("u7"),
         durable.DropReplica("u1"), durable.DropCluster("u1")],
    ]
    assert {type(op) for ops in steps for op in ops} == _op_classes()
    store = durable.CatalogStore(str(tmp_path / "catalog.db"))
    try:
        snap = store.load()
        for ops in steps:
            snap = store.transact(snap, ops, dict(snap.next_ids))
            loaded = store.load()
            assert loaded.version == snap.version
            for name in _MAPS:
                assert getattr(loaded, name) == getattr(snap, name), name
    finally:
        store.close()
