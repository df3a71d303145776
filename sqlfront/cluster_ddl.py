"""Cluster DDL as catalog transactions: CREATE CLUSTER (managed and unmanaged), ALTER
CLUSTER ... SET / RESET / SWAP WITH, and the steps of a graceful reconfiguration.

Rules from Materialize's SQL reference ("CREATE CLUSTER", "ALTER CLUSTER") and its
managed-clusters design: a managed cluster declares SIZE and REPLICATION FACTOR and the
system keeps its replicas ``r1`` .. ``rN`` of that size (0: paused, no replica); users
do not create or drop them. ALTER CLUSTER ... SET (SIZE ...) replaces every replica
(downtime until the new ones are up) unless run WITH (WAIT ...): then new replicas
``rN-pending`` start next to the old ones and take their place once ready.

Like ``sqlfront.sequence_ddl``, every function returns a ``build(snapshot, ids) -> ops``
closure the Coordinator runs on its loop: pure, no I/O, no waiting.
"""

from __future__ import annotations

import re
from dataclasses import replace

from catalog import durable
from catalog.errors import (
    SqlError, DUPLICATE_OBJECT, INVALID_PARAMETER_VALUE, PROGRAM_LIMIT_EXCEEDED, SERIALIZATION_FAILURE,
    SYNTAX_ERROR, UNDEFINED_OBJECT,
)
from catalog.sizes import ReplicaSize, validate_size
from catalog.snapshot import CatalogSnapshot, Cluster, Replica
from sqlfront import mzparse as mz
from sqlfront.sequence_ddl import WRONG_CLUSTER_KIND, replica_config

#: Materialize's ``max_replicas_per_cluster`` default: a managed cluster's replication
#: factor is at most this (each replica is a process of its own here)
MAX_REPLICAS_PER_CLUSTER = 5
#: program_limit_exceeded
LIMIT_EXCEEDED = PROGRAM_LIMIT_EXCEEDED
#: a replica name a managed cluster keeps (r1, r2, ...)
_MANAGED_NAME = re.compile(r"r([1-9][0-9]*)")
#: the options only a managed cluster has
_MANAGED_ONLY = ("SIZE", "REPLICATION FACTOR", "AVAILABILITY ZONES")
#: Materialize's options sqlfront has nothing for: RESET of them on a managed cluster
#: leaves it as it is (at their defaults, the only state it has)
_ALWAYS_DEFAULT = ("INTROSPECTION INTERVAL", "INTROSPECTION DEBUGGING", "DISK", "SCHEDULE", "WORKLOAD CLASS",
                   "IDLE ARRANGEMENT MERGE EFFORT")


def _size_name(sizes: dict[str, ReplicaSize], value: str) -> str:
    """The size map's name for SIZE ``value`` (22023 for an unknown one)."""
    return validate_size(sizes, value).name


def _zones(options: dict, server_zones: list[str]) -> tuple[str, ...]:
    zones = options.get("AVAILABILITY ZONES", ())
    for z in zones:
        if z not in server_zones:
            shown = ", ".join(server_zones) if server_zones else "(none configured)"
            raise SqlError(INVALID_PARAMETER_VALUE, f"unknown availability zone '{z}'",
                           detail=f"Valid availability zones are: {shown}")
    return tuple(zones)


def _check_factor(n: int, current: int) -> None:
    if n > MAX_REPLICAS_PER_CLUSTER:
        raise SqlError(LIMIT_EXCEEDED, "creating cluster replica would violate max_replicas_per_cluster limit "
                                       f"(desired: {n}, limit: {MAX_REPLICAS_PER_CLUSTER}, current: {current})")


def _new_replicas(ids, cluster: Cluster, names: list[str], kept: list[Replica], sizes, server_zones,
                  pending: bool = False) -> list:
    """CreateReplica ops for replicas ``names`` of managed ``cluster`` (its size), each
    in the zone of its zones (or the server's) with the fewest of the cluster's replicas
    (``kept`` and those made before it), as for an unmanaged cluster."""
    zones = list(cluster.availability_zones) or server_zones
    taken = [r.availability_zone for r in kept]
    ops = []
    for name in names:
        rdef = mz.ReplicaDef(name, (mz.ReplicaOption("SIZE", cluster.size, 0),))
        size, zone, _, _ = replica_config(rdef, sizes, zones, taken)
        taken.append(zone)
        ops.append(durable.CreateReplica(Replica(ids.allocate("replica"), cluster.id, name, size, zone,
                                                 pending=pending)))
    return ops


def _reconcile(snap: CatalogSnapshot, ids, old: Cluster, new: Cluster, sizes, server_zones) -> list:
    """Ops turning managed ``old``'s replicas into those ``new`` declares: all replaced
    when the size or zones change, else the missing ``rK`` made and those past the
    factor dropped."""
    have = [r for r in snap.replicas_of(old.id) if not r.pending]
    if new.size != old.size or new.availability_zones != old.availability_zones:
        keep: list[Replica] = []
    else:
        keep = [r for r in have if (m := _MANAGED_NAME.fullmatch(r.name)) and int(m.group(1)) <= new.replication_factor]
    ops: list = [durable.DropReplica(r.id) for r in have if r not in keep]
    names = {r.name for r in keep}
    missing = [f"r{k}" for k in range(1, new.replication_factor + 1) if f"r{k}" not in names]
    return ops + _new_replicas(ids, new, missing, keep, sizes, server_zones)


def create_cluster(stmt: mz.CreateCluster, sizes, server_zones, default_size: str):
    """CREATE CLUSTER. With REPLICAS (or MANAGED = false) an unmanaged cluster with those
    replicas; with SIZE, REPLICATION FACTOR, MANAGED or AVAILABILITY ZONES a managed one
    (SIZE defaults to ``default_size``, the server's ``--bootstrap-replica-size``;
    REPLICATION FACTOR to 1). Without any option an empty unmanaged cluster, as before
    managed clusters.

    Raises (from ``build``): 42710 for a taken name; 42601 for options that do not go
    together; 22023 for an unknown size or zone; 54000 past MAX_REPLICAS_PER_CLUSTER."""
    opts = {o.name: o.value for o in stmt.options}
    managed = opts.get("MANAGED", bool(opts) and not stmt.has_replicas_clause)
    if managed and stmt.has_replicas_clause:
        raise SqlError(SYNTAX_ERROR, "REPLICAS not supported for managed clusters")
    if not managed:
        for name in _MANAGED_ONLY:
            if name in opts:
                raise SqlError(SYNTAX_ERROR, f"{name} not supported for unmanaged clusters")

    def build(snap: CatalogSnapshot, ids) -> list:
        if snap.cluster_by_name(stmt.name) is not None:
            raise SqlError(DUPLICATE_OBJECT, f"cluster '{stmt.name}' already exists")
        if not managed:
            return _create_unmanaged(snap, ids, stmt, sizes, server_zones)
        factor = opts.get("REPLICATION FACTOR", 1)
        size = _size_name(sizes, opts.get("SIZE", default_size))
        _check_factor(factor, 0)
        cluster = Cluster(ids.allocate("cluster"), stmt.name, True, size, factor, _zones(opts, server_zones))
        names = [f"r{k}" for k in range(1, factor + 1)]
        return [durable.CreateCluster(cluster)] + _new_replicas(ids, cluster, names, [], sizes, server_zones)

    return build


def _create_unmanaged(snap: CatalogSnapshot, ids, stmt: mz.CreateCluster, sizes, zones) -> list:
    cluster = Cluster(ids.allocate("cluster"), stmt.name)
    ops: list = [durable.CreateCluster(cluster)]
    names = [r.name for r in stmt.replicas]
    for n in names:
        if names.count(n) > 1:
            raise SqlError(DUPLICATE_OBJECT, f"cannot create multiple replicas named '{n}' on cluster '{stmt.name}'")
    taken: list[str | None] = []
    for rdef in stmt.replicas:
        size, zone, remote, token = replica_config(rdef, sizes, zones, taken)
        taken.append(zone)
        ops.append(durable.CreateReplica(Replica(ids.allocate("replica"), cluster.id, rdef.name, size, zone, remote,
                                                 token)))
    return ops


def altered_cluster(snap: CatalogSnapshot, stmt: mz.AlterClusterSet, sizes, server_zones) -> tuple[Cluster, Cluster]:
    """(the cluster as it is, as ``stmt`` makes it): ALTER CLUSTER ... SET / RESET's
    checks (Materialize's messages).

    Raises:
        SqlError 42704 unknown cluster; 55000 for an option of the other kind of
        cluster, an unmanaged cluster that cannot become managed, or a cluster a
        graceful reconfiguration is running on; 22023 unknown
        size or zone, SIZE reset; 54000 past MAX_REPLICAS_PER_CLUSTER."""
    c = snap.resolve_cluster(stmt.name)
    if any(r.pending for r in snap.replicas_of(c.id)):
        raise SqlError(WRONG_CLUSTER_KIND, f"cluster '{c.name}' is being reconfigured already",
                       hint="An ALTER CLUSTER ... WITH (WAIT ...) of it is running.")
    opts = {o.name: o.value for o in stmt.options}
    for name in stmt.reset:
        if name == "MANAGED":
            opts["MANAGED"] = True
        elif name == "SIZE":
            if c.managed:
                raise SqlError(INVALID_PARAMETER_VALUE, "SIZE has no default value")
            raise SqlError(WRONG_CLUSTER_KIND, "Cannot change SIZE of unmanaged clusters")
        elif name == "REPLICAS":
            if c.managed:
                raise SqlError(WRONG_CLUSTER_KIND, "REPLICAS not supported for managed clusters")
        elif not c.managed and "MANAGED" not in opts:
            raise SqlError(WRONG_CLUSTER_KIND, f"Cannot change {name} of unmanaged clusters")
        elif name == "REPLICATION FACTOR":
            opts["REPLICATION FACTOR"] = 1
        elif name == "AVAILABILITY ZONES":
            opts["AVAILABILITY ZONES"] = ()
        # the others (_ALWAYS_DEFAULT) are at their defaults already
    managed = opts.get("MANAGED", c.managed)
    if not managed:
        for name in _MANAGED_ONLY:
            if name in opts:
                raise SqlError(WRONG_CLUSTER_KIND, f"{name} not supported for unmanaged clusters")
        return c, replace(c, managed=False, size=None, replication_factor=None, availability_zones=())
    zones = _zones(opts, server_zones) if "AVAILABILITY ZONES" in opts else c.availability_zones
    if c.managed:
        size = _size_name(sizes, opts["SIZE"]) if "SIZE" in opts else c.size
        factor = opts.get("REPLICATION FACTOR", c.replication_factor)
        _check_factor(factor, c.replication_factor)
        return c, replace(c, size=size, replication_factor=factor, availability_zones=zones)
    return c, _to_managed(snap, c, opts, sizes, zones)


def _to_managed(snap: CatalogSnapshot, c: Cluster, opts: dict, sizes, zones) -> Cluster:
    """Unmanaged ``c`` as a managed cluster (Materialize's "Converting unmanaged to managed
    clusters"): replicas named r1 .. rN, all of one size (SIZE, if given, that one), and
    REPLICATION FACTOR, if given, their number."""
    have = snap.replicas_of(c.id)
    size = opts.get("SIZE")
    if size is not None and not have:
        size = _size_name(sizes, size)  # (with replicas, it must be theirs: checked below)
    bad = [r.name for r in have if not _MANAGED_NAME.fullmatch(r.name)]
    if bad:
        raise SqlError(WRONG_CLUSTER_KIND, "Cannot convert unmanaged cluster to managed, invalid replica names: "
                       + ", ".join(bad))
    if any(r.remote for r in have):
        raise SqlError(WRONG_CLUSTER_KIND, "Cannot convert unmanaged cluster with REMOTE replicas to managed")
    have_sizes = sorted({r.size for r in have})
    if len(have_sizes) > 1:
        raise SqlError(WRONG_CLUSTER_KIND, "Cannot convert unmanaged cluster to managed, non-unique replica sizes: "
                       + ", ".join(have_sizes))
    if not have and size is None:
        raise SqlError(WRONG_CLUSTER_KIND, "Missing SIZE for empty cluster")
    if have and size is not None and have_sizes[0] != size:
        raise SqlError(WRONG_CLUSTER_KIND, f"Cluster replicas of size {have_sizes[0]} do not match expected SIZE "
                       f"{opts['SIZE']}")
    factor = opts.get("REPLICATION FACTOR", len(have))
    if factor != len(have):
        raise SqlError(WRONG_CLUSTER_KIND, f"REPLICATION FACTOR {factor} does not match number of replicas "
                       f"({len(have)})")
    return replace(c, managed=True, size=size or have_sizes[0], replication_factor=factor, availability_zones=zones)


def alter_cluster(stmt: mz.AlterClusterSet, sizes, server_zones):
    """ALTER CLUSTER ... SET / RESET, at once: the cluster's settings change and its
    replicas follow (``altered_cluster`` says what is refused)."""
    def build(snap: CatalogSnapshot, ids) -> list:
        old, new = altered_cluster(snap, stmt, sizes, server_zones)
        if new == old:
            return []
        ops: list = [durable.UpdateCluster(new)]
        if old.managed and new.managed:
            ops += _reconcile(snap, ids, old, new, sizes, server_zones)
        return ops

    return build


def begin_reconfiguration(stmt: mz.AlterClusterSet, sizes, server_zones, out: dict):
    """The first step of a graceful ALTER CLUSTER ... SET (...) WITH (WAIT ...): the new
    replicas, ``rK-pending``, start next to the old ones; the cluster's settings stay.
    ``out`` receives ``old`` and ``cluster`` (the cluster as it is and the settings to
    apply at the end) and ``pending`` (the new replicas' ids). A change that needs no new replica makes none.

    Raises (from ``build``): ``altered_cluster``'s errors; 55000 for an unmanaged
    cluster (either side)."""
    def build(snap: CatalogSnapshot, ids) -> list:
        old, new = altered_cluster(snap, stmt, sizes, server_zones)
        if not (old.managed and new.managed):
            raise SqlError(WRONG_CLUSTER_KIND, "WAIT options are supported only for managed clusters"
                           " staying managed")
        out["old"], out["cluster"], out["pending"] = old, new, []
        if new.size == old.size and new.availability_zones == old.availability_zones:
            return []  # only the factor changes: finishing makes or drops replicas
        names = [f"r{k}-pending" for k in range(1, new.replication_factor + 1)]
        ops = _new_replicas(ids, new, names, [], sizes, server_zones, pending=True)
        out["pending"] = [op.replica.id for op in ops]
        return ops

    return build


def finish_reconfiguration(old: Cluster, new: Cluster, pending: list[str], sizes, server_zones):
    """The last step of a graceful reconfiguration: the cluster takes its new settings,
    its old replicas go and the pending ones become ``r1`` .. ``rN``.

    Raises (from ``build``): 42704 when the cluster or a pending replica is gone;
    40001 when the cluster changed meanwhile."""
    def build(snap: CatalogSnapshot, ids) -> list:
        cur = snap.clusters.get(old.id)
        if cur is None:
            raise SqlError(UNDEFINED_OBJECT, f"unknown cluster '{old.name}'")
        if replace(cur, name=old.name) != old:
            raise SqlError(SERIALIZATION_FAILURE, f"cluster '{cur.name}' was changed by a concurrent statement")
        new_ = replace(new, name=cur.name)
        if not pending:
            return [durable.UpdateCluster(new_)] + _reconcile(snap, ids, cur, new_, sizes, server_zones)
        ops: list = [durable.UpdateCluster(new_)]
        ops += [durable.DropReplica(r.id) for r in snap.replicas_of(old.id) if not r.pending]
        for rid in pending:
            r = snap.replicas.get(rid)
            if r is None:
                raise SqlError(UNDEFINED_OBJECT, f"pending replica {rid} of cluster '{cur.name}' is gone")
            ops.append(durable.UpdateReplica(replace(r, name=r.name.removesuffix("-pending"), pending=False)))
        return ops

    return build


def drop_pending(replica_ids: list[str]):
    """Drop a reconfiguration's pending replicas (a rollback); those gone already are skipped."""
    def build(snap: CatalogSnapshot, ids) -> list:
        return [durable.DropReplica(r) for r in replica_ids if r in snap.replicas]

    return build


def swap_clusters(stmt: mz.AlterClusterSwap):
    """ALTER CLUSTER a SWAP WITH b (Materialize's "ALTER ... SWAP WITH"): the two clusters
    exchange names, and with them what sessions and objects naming them reach.

    Raises (from ``build``): 42704 for an unknown cluster."""
    def build(snap: CatalogSnapshot, ids) -> list:
        a, b = snap.resolve_cluster(stmt.name), snap.resolve_cluster(stmt.other)
        if a.id == b.id:
            return []
        # through a name no cluster has: names are unique at every step
        return [durable.UpdateCluster(replace(a, name=f"{a.id}-swap")), durable.UpdateCluster(replace(b, name=a.name)),
                durable.UpdateCluster(replace(a, name=b.name))]

    return build
