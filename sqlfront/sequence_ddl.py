"""DDL sequencing: validate a DDL statement against a snapshot and return catalog ops.

Every function here returns a ``build(snapshot, ids) -> ops`` closure that the
Coordinator runs on its loop, so validation and commit see the same snapshot. They
are pure: no I/O, no waiting. Messages follow Materialize's where it has one
(``unknown cluster 'x'``, ``cluster 'x' already exists``).
"""

from __future__ import annotations

from catalog import durable
from catalog.errors import (
    SqlError, DUPLICATE_OBJECT, UNDEFINED_OBJECT, SYNTAX_ERROR, INVALID_PARAMETER_VALUE, DUPLICATE_TABLE,
    UNDEFINED_TABLE, WRONG_OBJECT_TYPE, DEPENDENT_OBJECTS_STILL_EXIST,
)
from catalog.sizes import ReplicaSize, validate_size
from catalog.snapshot import USER_SCHEMA, CatalogSnapshot, Cluster, Column, Index, Replica, Table, View
from sqlfront import mzparse as mz


def _replica_config(
    snap: CatalogSnapshot,
    cluster_name: str,
    rdef: mz.ReplicaDef,
    sizes: dict[str, ReplicaSize],
    zones: list[str],
    taken_zones: list[str | None],
) -> tuple[str | None, str | None, tuple[str, ...], str | None]:
    """(size, availability zone, remote addresses, token) of a replica definition.

    ``taken_zones`` are the zones of the cluster's other replicas, for the
    fewest-replicas-first assignment (seeds/cluster-replicas.md)."""
    seen: dict[str, mz.ReplicaOption] = {}
    for o in rdef.options:
        if o.name in seen:
            raise SqlError(SYNTAX_ERROR, f"{o.name} specified more than once", position=o.position)
        seen[o.name] = o
    size = seen.get("SIZE")
    remote = seen.get("REMOTE")
    az = seen.get("AVAILABILITY ZONE")
    if size and remote:
        raise SqlError(SYNTAX_ERROR, "only one of SIZE or REMOTE may be specified", position=remote.position)
    if not size and not remote:
        raise SqlError(SYNTAX_ERROR, f"SIZE or REMOTE option must be specified for replica {rdef.name}")
    token = seen.get("TOKEN")
    if token and not remote:
        raise SqlError(SYNTAX_ERROR, "TOKEN may only be specified with REMOTE", position=token.position)
    if size:
        validate_size(sizes, size.value)
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
    return (size.value if size else None), zone, addrs, (token.value if token else None)


def create_cluster(stmt: mz.CreateCluster, sizes, zones):
    def build(snap: CatalogSnapshot, ids) -> list:
        if snap.cluster_by_name(stmt.name) is not None:
            raise SqlError(DUPLICATE_OBJECT, f"cluster '{stmt.name}' already exists")
        cluster = Cluster(ids.allocate("cluster"), stmt.name)
        ops: list = [durable.CreateCluster(cluster)]
        names = [r.name for r in stmt.replicas]
        for n in names:
            if names.count(n) > 1:
                raise SqlError(DUPLICATE_OBJECT, f"cluster replica '{stmt.name}.{n}' specified more than once")
        taken: list[str | None] = []
        for rdef in stmt.replicas:
            size, zone, remote, token = _replica_config(snap, stmt.name, rdef, sizes, zones, taken)
            taken.append(zone)
            ops.append(durable.CreateReplica(
                Replica(ids.allocate("replica"), cluster.id, rdef.name, size, zone, remote, token)))
        return ops

    return build


def create_replica(stmt: mz.CreateClusterReplica, sizes, zones):
    def build(snap: CatalogSnapshot, ids) -> list:
        cluster = snap.resolve_cluster(stmt.cluster)
        if snap.replica_by_name(cluster.id, stmt.replica.name) is not None:
            raise SqlError(DUPLICATE_OBJECT, f"cluster replica '{stmt.cluster}.{stmt.replica.name}' already exists")
        taken = [r.availability_zone for r in snap.replicas_of(cluster.id)]
        size, zone, remote, token = _replica_config(snap, cluster.name, stmt.replica, sizes, zones, taken)
        return [durable.CreateReplica(
            Replica(ids.allocate("replica"), cluster.id, stmt.replica.name, size, zone, remote, token))]

    return build


def drop_clusters(stmt: mz.DropClusters):
    """DROP CLUSTER; a cluster that hosts indexes needs CASCADE, which drops them too
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
            if hosted and not stmt.cascade:
                raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                               "cannot drop cluster with active indexes or materialized views",
                               hint="Use DROP ... CASCADE to drop the dependent objects too.")
            ops += [durable.DropIndex(i.id) for i in hosted]
            ops.append(durable.DropCluster(c.id))
        return ops

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
                raise SqlError(UNDEFINED_OBJECT, f"unknown cluster replica '{cname}.{rname}'")
            ops.append(durable.DropReplica(r.id))
        return ops

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


def _check_schema(schema: str | None) -> str:
    if schema not in (None, USER_SCHEMA):
        raise SqlError("3F000", f"unknown schema '{schema}'")
    return USER_SCHEMA


def create_table(schema: str | None, name: str, columns: tuple[Column, ...], if_not_exists: bool):
    def build(snap: CatalogSnapshot, ids) -> list:
        s = _check_schema(schema)
        existing = snap.relation_by_name(s, name)
        if existing is not None:
            if if_not_exists:
                return []
            raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        tid = ids.allocate("item")
        shard = "s" + ids.allocate("shard")[1:]
        return [durable.CreateTable(Table(tid, s, name, columns, f"shard-{shard}"))]

    return build


def create_view(schema: str | None, name: str, sql: str, columns: tuple[Column, ...], or_replace: bool):
    def build(snap: CatalogSnapshot, ids) -> list:
        s = _check_schema(schema)
        existing = snap.relation_by_name(s, name)
        ops = []
        if existing is not None:
            if not (or_replace and isinstance(existing, View)):
                raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
            ops.append(durable.DropView(existing.id))
        return ops + [durable.CreateView(View(ids.allocate("item"), s, name, sql, columns))]

    return build


def create_index(stmt: mz.CreateIndex, session_cluster: str):
    """CREATE [DEFAULT] INDEX (Materialize's "CREATE INDEX"): the index lives in
    ``stmt.cluster``, else the session's cluster. A DEFAULT index keys on every column.
    Unnamed indexes are named as Materialize names them, ``<obj>_primary_idx`` for a
    default index and ``<obj>_<key>_..._idx`` otherwise (``expr`` for a key that is
    not a column), with 1, 2, ... appended while the name is taken.

    Raises (from ``build``): 42704 unknown cluster, 42P01 unknown object, 42809 for a
    system table, 42703 for a key column the object lacks, 42P07 for a taken name."""

    def build(snap: CatalogSnapshot, ids) -> list:
        cluster = snap.resolve_cluster(stmt.cluster or session_cluster)
        rel = snap.resolve_relation(stmt.schema, stmt.on)
        if rel.builtin:
            raise SqlError(WRONG_OBJECT_TYPE, f'cannot create index on system table "{stmt.on}"')
        columns = [c.name for c in rel.columns]
        keys = tuple(columns) if stmt.keys is None else stmt.keys
        if stmt.name is not None:
            name = stmt.name
            if snap.index_by_name(rel.schema, name) is not None or snap.relation_by_name(rel.schema, name):
                if stmt.if_not_exists:
                    return []
                raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        else:
            base = f"{rel.name}_primary_idx" if stmt.keys is None else \
                "_".join([rel.name] + [k if k in columns else "expr" for k in keys] + ["idx"])
            name, n = base, 0
            while snap.index_by_name(rel.schema, name) is not None or snap.relation_by_name(rel.schema, name):
                n += 1
                name = f"{base}{n}"
        return [durable.CreateIndex(Index(ids.allocate("item"), rel.schema, name, rel.id, stmt.definition,
                                          cluster.id, keys))]

    return build


def drop_indexes(names: list[tuple[str | None, str]], if_exists: bool):
    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        for schema, name in names:
            idx = snap.index_by_name(schema or USER_SCHEMA, name)
            if idx is None:
                if if_exists:
                    continue
                raise SqlError(UNDEFINED_OBJECT, f'index "{name}" does not exist')
            ops.append(durable.DropIndex(idx.id))
        return ops

    return build


def _reads(view: View) -> list[tuple[str | None, str]]:
    """The relation names a view's query mentions (CTE names too: harmless here)."""
    import pglast
    from pglast.visitors import Visitor

    class Names(Visitor):
        def __init__(self):
            self.names = []

        def visit_RangeVar(self, ancestors, node):
            self.names.append((node.schemaname, node.relname))

    v = Names()
    v(pglast.parse_sql(view.sql))
    return v.names


def dependents(snap: CatalogSnapshot, ids: set[str]) -> list[View]:
    """The views that read any of ``ids``, directly or through other views, dependents
    after what they depend on."""
    out: list[View] = []
    found = set(ids)
    changed = True
    while changed:
        changed = False
        for v in snap.views.values():
            if v.id in found:
                continue
            for schema, name in _reads(v):
                rel = snap.relation_by_name(schema or USER_SCHEMA, name)
                if rel is not None and rel.id in found:
                    out.append(v)
                    found.add(v.id)
                    changed = True
                    break
    return out


def _drop_dependents(snap: CatalogSnapshot, objs: list, cascade: bool, kind: str) -> list:
    """Ops dropping the views over ``objs`` (with CASCADE), or SqlError 2BP01
    (Materialize: "cannot drop table "t": still depended upon by view "v"")."""
    deps = [v for v in dependents(snap, {o.id for o in objs}) if v.id not in {o.id for o in objs}]
    if not deps:
        return []
    if not cascade:
        reads = {r for v in deps for r in _reads(v)}
        on = next((o for o in objs if (None, o.name) in reads or (USER_SCHEMA, o.name) in reads), objs[0])
        raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                       f'cannot drop {kind} "{on.name}": still depended upon by view "{deps[0].name}"',
                       hint="Use DROP ... CASCADE to drop the dependent objects too.")
    ops = []
    for v in reversed(deps):
        ops.append(durable.DropView(v.id))
        ops += [durable.DropIndex(i.id) for i in snap.indexes.values() if i.on_id == v.id]
    return ops


def drop_views(names: list[tuple[str | None, str]], if_exists: bool, cascade: bool = False):
    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        dropped = []
        for schema, name in names:
            rel = snap.relation_by_name(schema or USER_SCHEMA, name)
            if rel is None:
                if if_exists:
                    continue
                raise SqlError(UNDEFINED_TABLE, f'view "{name}" does not exist')
            if not isinstance(rel, View):
                raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a view')
            dropped.append(rel)
        ops += _drop_dependents(snap, dropped, cascade, "view")
        for rel in dropped:
            ops.append(durable.DropView(rel.id))
            ops += [durable.DropIndex(i.id) for i in snap.indexes.values() if i.on_id == rel.id]
        return ops

    return build


def drop_tables(names: list[tuple[str | None, str]], if_exists: bool, cascade: bool = False):
    """DROP TABLE: fails with 2BP01 while views read a table, unless CASCADE (which drops
    them, Materialize's and PostgreSQL's rule)."""
    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        dropped = []
        for schema, name in names:
            rel = None
            for s in ((schema,) if schema else (USER_SCHEMA, "mz_catalog")):
                rel = snap.relation_by_name(s, name)
                if rel is not None:
                    break
            if rel is None:
                if if_exists:
                    continue
                raise SqlError(UNDEFINED_TABLE, f'table "{name}" does not exist')
            if rel.builtin:
                raise SqlError(WRONG_OBJECT_TYPE, f'cannot drop system table "{name}"')
            if isinstance(rel, View):
                raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a table', hint="Use DROP VIEW to remove a view.")
            dropped.append(rel)
        ops += _drop_dependents(snap, dropped, cascade, "table")
        for rel in dropped:
            ops.append(durable.DropTable(rel.id))
            ops += [durable.DropIndex(i.id) for i in snap.indexes.values() if i.on_id == rel.id]
        return ops

    return build
