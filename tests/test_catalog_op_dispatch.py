"""Every catalog op class has a handler in both dispatchers over ops: the durable
catalog's (``catalog.durable._APPLY``, used by ``CatalogStore.transact``) and the side
effects of committed ops (``sqlfront.environment.Environment._SIDE_EFFECTS``), so a new op
cannot be forgotten in either. Pure Python: no server."""

from __future__ import annotations

import dataclasses
import inspect
import typing

import pytest

from catalog import durable
from catalog.snapshot import Cluster, Schema
from sqlfront.environment import Environment


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
    assert _op_classes() - set(Environment._SIDE_EFFECTS) == set()


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
