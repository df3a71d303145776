"""Cluster and replica DDL (Materialize's "CREATE CLUSTER", "ALTER CLUSTER", "DROP
CLUSTER", "CREATE CLUSTER REPLICA", ...), both halves of each statement in one place:
``sequence_<statement>(s, stmt, sql, params)`` checks it against the session and runs its
catalog transaction, which ``<statement>(...)`` builds as a ``build(snapshot, ids) ->
ops`` closure the Coordinator runs on its loop (pure: no I/O, no waiting).

Rules from Materialize's SQL reference and its managed-clusters design: a managed
cluster declares SIZE and REPLICATION FACTOR and the system keeps its replicas ``r1`` ..
``rN`` of that size (0: paused, no replica); users do not create or drop them. ALTER
CLUSTER ... SET (SIZE ...) replaces every replica (downtime until the new ones are up)
unless run WITH (WAIT ...): then new replicas ``rN-pending`` start next to the old ones
and take their place once ready.

A graceful reconfiguration (``WITH (WAIT UNTIL READY (...))`` or ``WITH (WAIT FOR ...)``)
runs in the session's thread, never on the Coordinator loop: a first transaction starts
the new replicas (``rK-pending``) next to the old ones, the session waits, and a second
one promotes them and drops the old ones. A replica is ready when its Spark Connect
server is up and answers (status ``healthy``): a query needs nothing more of it (its
cache of the cluster's index arrangements fills in afterwards, and queries read persist
meanwhile), where Materialize waits for its dataflows to hydrate. On a timeout with ON
TIMEOUT ROLLBACK, a cancel or any error, the pending replicas are dropped and the
cluster is as it was; so they are when the client goes away meanwhile.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from catalog import durable
from catalog.errors import (
    SqlError, ACTIVE_SQL_TRANSACTION, DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_OBJECT, INVALID_PARAMETER_VALUE,
    OBJECT_NOT_IN_PREREQUISITE_STATE, PROGRAM_LIMIT_EXCEEDED, QUERY_CANCELED, SERIALIZATION_FAILURE, SYNTAX_ERROR,
    UNDEFINED_OBJECT, query_canceled,
)
from catalog.sizes import ReplicaSize, validate_size
from catalog.snapshot import CatalogSnapshot, Cluster, Replica
from planner.functions.string import quote_ident
from sqlfront import mzparse as mz
from sqlfront.sequence import block_ddl
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.result import Result
from sqlfront.sequence.objects import _drop_dependents, _drop_relation, _unique

if TYPE_CHECKING:
    from sqlfront.session import Session


#: object_not_in_prerequisite_state: a statement for the other kind of cluster (managed
#: or unmanaged)
WRONG_CLUSTER_KIND = OBJECT_NOT_IN_PREREQUISITE_STATE


def replica_config(
    rdef: mz.ReplicaDef,
    sizes: dict[str, ReplicaSize],
    zones: list[str],
    taken_zones: list[str | None],
) -> tuple[str | None, str | None, tuple[str, ...], str | None]:
    """(size, availability zone, remote addresses, token) of a replica definition; the
    size as the size map names it.

    ``taken_zones`` are the zones of the cluster's other replicas, for the
    fewest-replicas-first assignment (seeds/cluster-replicas.md)."""
    seen = {o.name: o for o in rdef.options}  # each once: the parser refuses repeats
    size = seen.get("SIZE")
    remote = seen.get("REMOTE")
    az = seen.get("AVAILABILITY ZONE")
    if size and remote:
        # Materialize's wording (cluster.slt)
        raise SqlError(SYNTAX_ERROR, "only one of REMOTE or SIZE may be specified", position=remote.position)
    if not size and not remote:
        raise SqlError(SYNTAX_ERROR, f"SIZE or REMOTE option must be specified for replica {rdef.name}")
    token = seen.get("TOKEN")
    if token and not remote:
        raise SqlError(SYNTAX_ERROR, "TOKEN may only be specified with REMOTE", position=token.position)
    size_name = validate_size(sizes, size.value).name if size else None
    addrs: tuple[str, ...] = ()
    if remote:
        # host:port (Materialize's form) means the Spark Connect server there
        addrs = tuple(a if a.startswith("sc://") else f"sc://{a}" for a in remote.value)
        for a in addrs:
            if ":" not in a.removeprefix("sc://"):
                raise SqlError(INVALID_PARAMETER_VALUE, f"invalid REMOTE address {a!r}: expected sc://host:port")
    zone = None
    if az:
        if az.value not in zones:
            shown = ", ".join(zones) if zones else "(none configured)"
            raise SqlError(
                INVALID_PARAMETER_VALUE,
                f"unknown availability zone '{az.value}'",
                detail=f"Valid availability zones are: {shown}",
            )
        zone = az.value
    elif zones:
        counts = {z: taken_zones.count(z) for z in zones}
        zone = min(zones, key=lambda z: counts[z])  # min() keeps the first listed on ties
    return size_name, zone, addrs, (token.value if token else None)


def refuse_managed(cluster: Cluster, dropping: bool) -> None:
    """CREATE / DROP CLUSTER REPLICA on a managed cluster is refused, as in Materialize
    (its replicas are the system's to make and drop).

    Raises:
        SqlError 55000 when ``cluster`` is managed."""
    if cluster.managed:
        msg = "cannot drop replica of managed cluster" if dropping else f"cannot modify managed cluster {cluster.name}"
        raise SqlError(WRONG_CLUSTER_KIND, msg,
                       hint=f"Use ALTER CLUSTER to change the cluster's size and replication factor, or convert it "
                            f"to an unmanaged cluster by running ALTER CLUSTER {cluster.name} SET (MANAGED = false).")


def create_replica(stmt: mz.CreateClusterReplica, sizes, zones):
    def build(snap: CatalogSnapshot, ids) -> list:
        cluster = snap.resolve_cluster(stmt.cluster)
        refuse_managed(cluster, False)
        if snap.replica_by_name(cluster.id, stmt.replica.name) is not None:
            raise SqlError(DUPLICATE_OBJECT, f"cluster replica '{stmt.cluster}.{stmt.replica.name}' already exists")
        taken = [r.availability_zone for r in snap.replicas_of(cluster.id)]
        size, zone, remote, token = replica_config(stmt.replica, sizes, zones, taken)
        return [durable.CreateReplica(
            Replica(ids.allocate("replica"), cluster.id, stmt.replica.name, size, zone, remote, token))]

    return build


def drop_clusters(stmt: mz.DropClusters):
    """DROP CLUSTER; a cluster that hosts indexes or materialized views needs CASCADE,
    which drops them too (and what depends on the materialized views)
    (Materialize: "cannot drop cluster with active indexes or materialized views",
    2BP01)."""

    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        for name in stmt.names:
            c = snap.cluster_by_name(name)
            if c is None:
                if stmt.if_exists:
                    continue
                raise SqlError(UNDEFINED_OBJECT, f"unknown cluster '{name}'")
            hosted = snap.indexes_in_cluster(c.id)
            mvs = snap.materialized_views_in_cluster(c.id)
            sources = [t for t in snap.sources() if getattr(t, "cluster_id", None) == c.id]
            if (hosted or mvs or sources) and not stmt.cascade:
                raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                               "cannot drop cluster with active indexes or materialized views" if hosted or mvs
                               else "cannot drop cluster with active sources",
                               hint="Use DROP ... CASCADE to drop the dependent objects too.")
            if sources:  # they go with their subsources and what reads them
                from sqlfront import source_parse
                from sqlfront.sources import drop_sources

                ops += drop_sources(source_parse.DropItems("source", tuple((t.schema, t.name) for t in sources),
                                                           False, True))(snap, ids)
            ops += _drop_dependents(snap, mvs, True, "materialized view")
            ops += [op for m in mvs for op in _drop_relation(snap, m)]
            ops += [durable.DropIndex(i.id) for i in hosted]
            ops.append(durable.DropCluster(c.id))
        return _unique(ops)

    return build


def drop_replicas(stmt: mz.DropClusterReplicas):
    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        for cname, rname in stmt.names:
            c = snap.cluster_by_name(cname)
            if c is None:
                if stmt.if_exists:
                    continue
                raise SqlError(UNDEFINED_OBJECT, f"unknown cluster '{cname}'")
            r = snap.replica_by_name(c.id, rname)
            if r is None:
                if stmt.if_exists:
                    continue
                raise no_such_replica(cname, rname)
            refuse_managed(c, True)
            ops.append(durable.DropReplica(r.id))
        return ops

    return build


def no_such_replica(cluster: str, replica: str) -> SqlError:
    """Materialize's error for a replica name its cluster does not have (42704)."""
    return SqlError(UNDEFINED_OBJECT, f'CLUSTER {quote_ident(cluster)} has no CLUSTER REPLICA named "{replica}"')


def rename_replica(stmt: mz.AlterClusterReplicaRename):
    """ALTER CLUSTER REPLICA c.r RENAME TO n: the replica keeps its id and process.

    Raises (from ``build``): 42704 for an unknown cluster or replica (none with IF
    EXISTS); 55000 on a managed cluster (its replicas' names are the system's); 42710
    for a name the cluster's replicas already use."""
    def build(snap: CatalogSnapshot, ids) -> list:
        c = snap.cluster_by_name(stmt.cluster)
        r = snap.replica_by_name(c.id, stmt.replica) if c is not None else None
        if r is None:
            if stmt.if_exists:
                return []
            if c is None:
                raise SqlError(UNDEFINED_OBJECT, f"unknown cluster '{stmt.cluster}'")
            raise no_such_replica(stmt.cluster, stmt.replica)
        refuse_managed(c, False)
        if stmt.new_name == r.name:
            return []
        if snap.replica_by_name(c.id, stmt.new_name) is not None:
            raise SqlError(DUPLICATE_OBJECT, f"cluster replica '{stmt.cluster}.{stmt.new_name}' already exists")
        return [durable.UpdateReplica(replace(r, name=stmt.new_name))]

    return build


def rename_cluster(stmt: mz.AlterClusterRename):
    def build(snap: CatalogSnapshot, ids) -> list:
        c = snap.resolve_cluster(stmt.name)
        if stmt.new_name == stmt.name:
            return []
        if snap.cluster_by_name(stmt.new_name) is not None:
            raise SqlError(DUPLICATE_OBJECT, f"cluster '{stmt.new_name}' already exists")
        return [durable.RenameCluster(c.id, stmt.new_name)]

    return build


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


# -- the statements, as a session runs them ------------------------------------

def sequence_create_cluster(s: Session, stmt: mz.CreateCluster, sql: str, params) -> Result:
    """Materialize's CREATE CLUSTER."""
    cfg = s.env.config
    run(s, create_cluster(stmt, cfg.sizes, cfg.availability_zones, cfg.bootstrap_replica_size))
    return Result("CREATE CLUSTER")


def sequence_create_replica(s: Session, stmt: mz.CreateClusterReplica, sql: str, params) -> Result:
    """Materialize's CREATE CLUSTER REPLICA."""
    run(s, create_replica(stmt, s.env.config.sizes, s.env.config.availability_zones))
    return Result("CREATE CLUSTER REPLICA")


def sequence_drop_clusters(s: Session, stmt: mz.DropClusters, sql: str, params) -> Result:
    """Materialize's DROP CLUSTER."""
    run(s, drop_clusters(stmt))
    return Result("DROP CLUSTER")


def sequence_drop_replicas(s: Session, stmt: mz.DropClusterReplicas, sql: str, params) -> Result:
    """Materialize's DROP CLUSTER REPLICA."""
    run(s, drop_replicas(stmt))
    return Result("DROP CLUSTER REPLICA")


def sequence_rename_cluster(s: Session, stmt: mz.AlterClusterRename, sql: str, params) -> Result:
    """Materialize's ALTER CLUSTER ... RENAME TO."""
    run(s, rename_cluster(stmt))
    return Result("ALTER CLUSTER")


def sequence_rename_replica(s: Session, stmt: mz.AlterClusterReplicaRename, sql: str, params) -> Result:
    """Materialize's ALTER CLUSTER REPLICA ... RENAME TO."""
    run(s, rename_replica(stmt))
    return Result("ALTER CLUSTER REPLICA")


#: how often a graceful reconfiguration looks at its new replicas' status
_POLL_S = 0.2


def sequence_alter_cluster_set(s: Session, stmt: mz.AlterClusterSet, sql: str, params) -> Result:
    """ALTER CLUSTER name SET (...) | RESET (...) [WITH (WAIT ...)].

    Raises:
        ``altered_cluster``'s errors; 25001 for WAIT in a transaction
        block; 57014 when the new replicas are not ready in time with ON TIMEOUT
        ROLLBACK, or on a cancel (the cluster stays as it was)."""
    cfg = s.env.config
    if stmt.wait is None:
        run(s, alter_cluster(stmt, cfg.sizes, cfg.availability_zones))
        return Result("ALTER CLUSTER")
    if block_ddl.in_block(s):
        raise SqlError(ACTIVE_SQL_TRANSACTION, "ALTER CLUSTER ... WITH (WAIT ...) cannot run inside a transaction block")
    out: dict = {}
    run(s, begin_reconfiguration(stmt, cfg.sizes, cfg.availability_zones, out))
    pending, done = out["pending"], False
    try:
        if not _wait(s, pending, stmt.wait) and not stmt.wait.commit_on_timeout:
            raise SqlError(QUERY_CANCELED, f"the new replicas of cluster '{stmt.name}' were not ready within "
                                    f"{stmt.wait.timeout_s:g} s: ALTER CLUSTER rolled back (ON TIMEOUT ROLLBACK)")
        run(s, finish_reconfiguration(out["old"], out["cluster"], pending, cfg.sizes,
                                                  cfg.availability_zones))
        done = True
    finally:
        if not done and pending:
            s.env.coordinator.transact(drop_pending(pending))
    return Result("ALTER CLUSTER")


def _wait(s: Session, replica_ids: list[str], wait: mz.ClusterWait) -> bool:
    """Wait until every replica of ``replica_ids`` is healthy (``wait.until_ready``) or
    ``wait.timeout_s`` passed; True when they all are (WAIT FOR: always, at the end).

    Raises:
        SqlError 57014 on a cancel of the statement or when the client went away
        (Materialize: either rolls the reconfiguration back)."""
    deadline = time.monotonic() + wait.timeout_s
    while True:
        if s.cancel_event.is_set() or s.client_gone():
            raise query_canceled(timeout=False)
        if wait.until_ready and all(s.env.compute.replica_status(r) == "healthy" for r in replica_ids):
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return not wait.until_ready
        s.cancel_event.wait(min(_POLL_S, left))


def sequence_swap_clusters(s: Session, stmt: mz.AlterClusterSwap, sql: str, params) -> Result:
    """ALTER CLUSTER a SWAP WITH b: the clusters exchange names."""
    run(s, swap_clusters(stmt))
    return Result("ALTER CLUSTER")
