"""What committed catalog ops do outside the catalog (Materialize's catalog implications):
start and stop clusters and replicas, create shards and finalize dropped ones, start
sources. :func:`on_commit` runs on the Coordinator loop, after each commit: a side
effect must not block (slow work goes to a thread of its own).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from catalog import durable
from catalog.snapshot import CatalogSnapshot, Source

if TYPE_CHECKING:
    from sqlfront.environment import Environment

log = logging.getLogger(__name__)


def on_commit(env: Environment, old: CatalogSnapshot, new: CatalogSnapshot, ops: list) -> None:
    """Apply the side effects of committed ``ops``, each on its own: one that fails is
    logged and counted (``coordinator_errors_total``) and the others still happen."""
    made = {op.table.id: op.table for op in ops if isinstance(op, durable.CreateTable)}
    made_mvs = {op.view.id: op.view for op in ops if isinstance(op, durable.CreateMaterializedView)}
    if made or made_mvs:
        # a transaction block's ops may drop what they made: its drop finds it in ``old``
        old = old.with_changes(tables={**old.tables, **made},
                               materialized_views={**old.materialized_views, **made_mvs})
    for op in ops:
        try:
            apply(env, old, op)
        except Exception as e:
            log.error("applying %s failed: %s", type(op).__name__, e, exc_info=e)
            env.metrics.coordinator_errors.inc()


def apply(env: Environment, old: CatalogSnapshot, op) -> None:
    """The side effect of one committed op (must not block: it runs on the loop), by its
    handler in :data:`SIDE_EFFECTS` (a value of no op class there has none)."""
    handler = SIDE_EFFECTS.get(type(op))
    if handler is not None:
        handler(env, old, op)


def _create_cluster(env: Environment, old: CatalogSnapshot, op: durable.CreateCluster) -> None:
    if env.compute.ownership.local:
        env.compute.start_cluster(op.cluster)
    else:
        env.compute.ownership.poke()  # the lease loop decides who runs it


def _create_replica(env: Environment, old: CatalogSnapshot, op: durable.CreateReplica) -> None:
    cc = env.compute.clusters.get(op.replica.cluster_id)  # only a cluster this process runs
    if cc is not None:
        cc.ensure_replica(op.replica, env.compute.size(op.replica))


def _drop_replica(env: Environment, old: CatalogSnapshot, op: durable.DropReplica) -> None:
    r = old.replicas[op.replica_id]
    cc = env.compute.clusters.get(r.cluster_id)
    if cc:
        cc.drop_replica(r.id)


def _drop_cluster(env: Environment, old: CatalogSnapshot, op: durable.DropCluster) -> None:
    env.compute.drop_cluster(op.cluster_id)


def _rename_cluster(env: Environment, old: CatalogSnapshot, op: durable.RenameCluster) -> None:
    cc = env.compute.clusters.get(op.cluster_id)
    if cc:
        cc.rename(op.new_name)


def _update_cluster(env: Environment, old: CatalogSnapshot, op: durable.UpdateCluster) -> None:
    cc = env.compute.clusters.get(op.cluster.id)
    if cc:
        cc.rename(op.cluster.name)


def _index_change(env: Environment, old: CatalogSnapshot, op: durable.CreateIndex | durable.DropIndex) -> None:
    env.compute.indexes_changed()


def _create_table(env: Environment, old: CatalogSnapshot, op: durable.CreateTable) -> None:
    env.storage.create_shard(op.table.shard_id)
    if isinstance(op.table, Source):  # its shards exist now (it is its transaction's last op)
        env.sources.ensure(op.table)


def _update_table(env: Environment, old: CatalogSnapshot, op: durable.UpdateTable) -> None:
    was = old.tables.get(op.table.id)
    if was is not None and was.shard_id != op.table.shard_id:  # rewritten into a new shard
        env.storage.finalize_soon()


def _drop_sequence(env: Environment, old: CatalogSnapshot, op: durable.DropSequence) -> None:
    threading.Thread(target=env.sequences.forget, args=([op.sequence_id],), name="drop-sequence",
                     daemon=True).start()


def _drop_table(env: Environment, old: CatalogSnapshot, op: durable.DropTable) -> None:
    env.sources.stop(op.table_id, dropped=True)  # (no runner: nothing to stop)
    env.storage.finalize_soon()


def _create_materialized_view(env: Environment, old: CatalogSnapshot, op: durable.CreateMaterializedView) -> None:
    # Empty, with since and upper at 0: no time is readable until its cluster
    # computes its first contents (reads wait for that, as in Materialize).
    env.storage.create_shard(op.view.shard_id, 0)
    env.compute.request_materialization(op.view, 0)


def _drop_materialized_view(env: Environment, old: CatalogSnapshot, op: durable.DropMaterializedView) -> None:
    env.storage.finalize_soon()


def _no_side_effect(env: Environment, old: CatalogSnapshot, op) -> None:
    """Committing the op is all there is to it (readers see the new snapshot)."""


#: op class -> its side effect; every class of ``durable.Op`` has one, if only
#: :func:`_no_side_effect` (tests/test_catalog_op_dispatch.py checks it)
SIDE_EFFECTS = {
    durable.CreateCluster: _create_cluster, durable.DropCluster: _drop_cluster,
    durable.RenameCluster: _rename_cluster, durable.UpdateCluster: _update_cluster,
    durable.CreateReplica: _create_replica, durable.DropReplica: _drop_replica,
    durable.CreateIndex: _index_change, durable.DropIndex: _index_change,
    durable.CreateTable: _create_table, durable.UpdateTable: _update_table,
    durable.DropTable: _drop_table, durable.DropSequence: _drop_sequence,
    durable.CreateMaterializedView: _create_materialized_view,
    durable.DropMaterializedView: _drop_materialized_view,
    **dict.fromkeys((
        durable.UpdateReplica, durable.CreateSecret, durable.UpdateSecret, durable.DropSecret,
        durable.CreateConnection, durable.DropConnection, durable.SetComment,
        durable.CreateSchema, durable.DropSchema, durable.RenameSchema,
        durable.CreateSequence, durable.UpdateSequence, durable.CreateView, durable.DropView,
        durable.UpdateMaterializedView, durable.FinalizeShards,
        durable.CreateRole, durable.UpdateRole, durable.DropRole, durable.RevokeAll,
        durable.GrantRole, durable.RevokeRole, durable.SetOwner, durable.SetPrivileges,
        durable.SetDefaultPrivileges,
    ), _no_side_effect),
}
