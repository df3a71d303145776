"""Builtin system tables and how their rows are computed.

Columns follow Materialize's ``mz_catalog`` documentation ("System catalog"), with
the seed's ``mz_cluster_replicas`` (seeds/cluster-replicas.md) plus ``id``.
Rows are derived from a catalog snapshot and the live replica statuses, so they are
always current; they are never stored.
"""

from __future__ import annotations

from typing import Callable

from catalog.sizes import ReplicaSize
from catalog.snapshot import (
    BuiltinTable, CatalogSnapshot, Column, Connection, MaterializedView, Source, Subsource, Table,
)
from catalog.pg_catalog import DATABASE_OID, PG_CATALOG_TABLES, namespace_oid, object_oid, pg_catalog_rows
from catalog import rbac
from catalog.introspection import INTROSPECTION_TABLES, introspection_rows
from catalog.types import BOOL, FLOAT8, INT4, INT8, INTERVAL, OID, TEXT, array_of

#: ``mz_aclitem[]`` columns, shown as their text form (``u1=arwd/u1``)
ACL_ARRAY = array_of(TEXT)
#: the ownership columns Materialize's catalog tables end with
_OWNED = (Column("owner_id", TEXT, False), Column("privileges", ACL_ARRAY, False))

MZ_CLUSTERS = BuiltinTable(
    "s1",
    "mz_catalog",
    "mz_clusters",
    # ``managed`` .. ``availability_zones`` as Materialize's (NULL for an unmanaged
    # cluster; the zones a text[] where Materialize has a text list; its ``disk`` and
    # introspection columns left out: nothing here has them). ``environmentd`` is ours
    # (Materialize has no such column): the pgwire address (HOST:PORT) of the
    # environmentd that runs the cluster now, NULL when no process holds a live lease
    # on it (issue 13; sqlfront.ownership).
    (Column("id", TEXT, False), Column("name", TEXT, False), *_OWNED, Column("managed", BOOL, False),
     Column("size", TEXT, True), Column("replication_factor", INT4, True),
     Column("availability_zones", array_of(TEXT), True), Column("environmentd", TEXT, True)),
)

MZ_CLUSTER_REPLICAS = BuiltinTable(
    "s2",
    "mz_catalog",
    "mz_cluster_replicas",
    (
        Column("id", TEXT, False),
        Column("name", TEXT, False),
        Column("cluster_id", TEXT, False),
        Column("size", TEXT, True),
        Column("availability_zone", TEXT, True),
        Column("status", TEXT, False),
    ),
)

MZ_CLUSTER_REPLICA_SIZES = BuiltinTable(
    "s3",
    "mz_catalog",
    "mz_cluster_replica_sizes",
    (
        Column("size", TEXT, False),
        Column("workers", INT8, False),
        Column("scale", INT8, False),
        Column("cpu_limit", FLOAT8, True),
        Column("memory_limit", TEXT, True),
    ),
)

MZ_TABLES = BuiltinTable(
    "s4",
    "mz_catalog",
    "mz_tables",
    (Column("id", TEXT, False), Column("oid", OID, False), Column("schema", TEXT, False), Column("name", TEXT, False),
     *_OWNED),
)

MZ_VIEWS = BuiltinTable(
    "s5",
    "mz_catalog",
    "mz_views",
    (Column("id", TEXT, False), Column("schema", TEXT, False), Column("name", TEXT, False),
     Column("definition", TEXT, False), *_OWNED),
)

MZ_COORDINATOR_LOOP = BuiltinTable(
    "s6",
    "mz_internal",
    "mz_coordinator_loop",
    (Column("busy_seconds", FLOAT8, False), Column("wall_seconds", FLOAT8, False), Column("commands", INT8, False),
     Column("errors", INT8, False)),
)

MZ_PEEK_DURATIONS = BuiltinTable(
    "s7",
    "mz_internal",
    "mz_peek_durations",
    (Column("cluster", TEXT, False), Column("outcome", TEXT, False), Column("le_seconds", FLOAT8, True),
     Column("count", INT8, False)),
)

MZ_COLUMNS = BuiltinTable(
    "s8",
    "mz_catalog",
    "mz_columns",
    (Column("id", TEXT, False), Column("name", TEXT, False), Column("position", INT8, False),
     Column("nullable", BOOL, False), Column("type", TEXT, False), Column("default", TEXT, True),
     Column("type_oid", OID, False), Column("type_mod", INT4, False)),
)

MZ_SCHEMAS = BuiltinTable("s9", "mz_catalog", "mz_schemas",
                          (Column("id", TEXT, False), Column("oid", OID, False), Column("database_id", TEXT, True),
                           Column("name", TEXT, False), *_OWNED))
MZ_DATABASES = BuiltinTable("s10", "mz_catalog", "mz_databases",
                            (Column("id", TEXT, False), Column("oid", OID, False), Column("name", TEXT, False),
                             *_OWNED))
#: roles (Materialize's mz_roles; ``rolcanlogin`` and ``rolsuper`` as self-managed
#: Materialize shows them)
MZ_ROLES = BuiltinTable(
    "s70", "mz_catalog", "mz_roles",
    (Column("id", TEXT, False), Column("oid", OID, False), Column("name", TEXT, False), Column("inherit", BOOL, False),
     Column("rolcanlogin", BOOL, False), Column("rolsuper", BOOL, False)),
)
#: ALTER DEFAULT PRIVILEGES (Materialize's mz_default_privileges: ``role_id`` ``p`` is ALL
#: ROLES, NULL schema_id any schema)
MZ_DEFAULT_PRIVILEGES = BuiltinTable(
    "s72", "mz_catalog", "mz_default_privileges",
    (Column("role_id", TEXT, False), Column("database_id", TEXT, True), Column("schema_id", TEXT, True),
     Column("object_type", TEXT, False), Column("grantee", TEXT, False), Column("privileges", TEXT, False)),
)
_GRANT_COLUMNS = (Column("grantor", TEXT, False), Column("grantee", TEXT, False), Column("table_catalog", TEXT, False),
                  Column("table_schema", TEXT, False), Column("table_name", TEXT, False),
                  Column("privilege_type", TEXT, False), Column("is_grantable", TEXT, False),
                  Column("with_hierarchy", TEXT, False))
#: PostgreSQL's information_schema.table_privileges and role_table_grants (37.56, 37.41):
#: one row per privilege in a table's or view's ACL (what dbt-postgres reads for grants)
IS_TABLE_PRIVILEGES = BuiltinTable("s73", "information_schema", "table_privileges", _GRANT_COLUMNS)
IS_ROLE_TABLE_GRANTS = BuiltinTable("s74", "information_schema", "role_table_grants", _GRANT_COLUMNS)
MZ_ROLE_MEMBERS = BuiltinTable(
    "s71", "mz_catalog", "mz_role_members",
    (Column("role_id", TEXT, False), Column("member", TEXT, False), Column("grantor", TEXT, False)),
)

IS_TABLES = BuiltinTable(
    "s11", "information_schema", "tables",
    (Column("table_catalog", TEXT, False), Column("table_schema", TEXT, False), Column("table_name", TEXT, False),
     Column("table_type", TEXT, False)),
)
IS_COLUMNS = BuiltinTable(
    "s12", "information_schema", "columns",
    (Column("table_catalog", TEXT, False), Column("table_schema", TEXT, False), Column("table_name", TEXT, False),
     Column("column_name", TEXT, False), Column("ordinal_position", INT8, False), Column("column_default", TEXT, True),
     Column("is_nullable", TEXT, False), Column("data_type", TEXT, False),
     Column("character_maximum_length", INT8, True), Column("numeric_precision", INT8, True),
     Column("numeric_scale", INT8, True)),
)
IS_SCHEMATA = BuiltinTable(
    "s13", "information_schema", "schemata",
    (Column("catalog_name", TEXT, False), Column("schema_name", TEXT, False), Column("schema_owner", TEXT, False)),
)

MZ_RECENT_STORAGE_USAGE = BuiltinTable(
    "s45", "mz_catalog", "mz_recent_storage_usage",
    (Column("object_id", TEXT, False), Column("size_bytes", INT8, True)),
)

MZ_INDEXES = BuiltinTable(
    "s46", "mz_catalog", "mz_indexes",
    (Column("id", TEXT, False), Column("oid", OID, False), Column("name", TEXT, False),
     Column("on_id", TEXT, False), Column("cluster_id", TEXT, True), Column("owner_id", TEXT, False),
     Column("create_sql", TEXT, False)),
)
MZ_INDEX_COLUMNS = BuiltinTable(
    "s47", "mz_catalog", "mz_index_columns",
    (Column("index_id", TEXT, False), Column("index_position", INT8, False), Column("on_position", INT8, True),
     Column("on_expression", TEXT, True), Column("nullable", BOOL, False)),
)
MZ_OBJECTS = BuiltinTable(
    "s48", "mz_catalog", "mz_objects",
    (Column("id", TEXT, False), Column("oid", OID, False), Column("schema_id", TEXT, False),
     Column("name", TEXT, False), Column("type", TEXT, False), Column("owner_id", TEXT, False),
     Column("cluster_id", TEXT, True)),
)

#: Every relation of any kind (Materialize's mz_relations: tables, sources, views, materialized
#: views), with its schema's id: what clients join their catalog queries through
#: (dbt-materialize's column lookup joins mz_columns to it).
MZ_RELATIONS = BuiltinTable(
    "s49", "mz_catalog", "mz_relations",
    (Column("id", TEXT, False), Column("oid", OID, False), Column("schema_id", TEXT, False),
     Column("name", TEXT, False), Column("type", TEXT, False), Column("owner_id", TEXT, False),
     Column("cluster_id", TEXT, True)),
)
#: Sources and sinks (Materialize's mz_sources, mz_sinks): this server has neither, so they
#: are empty, with Materialize's columns for the queries that join them (dbt-materialize
#: leaves subsources out of its relation list through mz_sources).
MZ_SOURCES = BuiltinTable(
    "s50", "mz_catalog", "mz_sources",
    (Column("id", TEXT, False), Column("oid", OID, False), Column("schema_id", TEXT, False),
     Column("name", TEXT, False), Column("type", TEXT, False), Column("connection_id", TEXT, True),
     Column("size", TEXT, True), Column("envelope_type", TEXT, True), Column("key_format", TEXT, True),
     Column("value_format", TEXT, True), Column("cluster_id", TEXT, True), Column("owner_id", TEXT, False),
     Column("create_sql", TEXT, True), Column("redacted_create_sql", TEXT, True)),
)
MZ_SINKS = BuiltinTable(
    "s51", "mz_catalog", "mz_sinks",
    (Column("id", TEXT, False), Column("oid", OID, False), Column("schema_id", TEXT, False),
     Column("name", TEXT, False), Column("type", TEXT, False), Column("connection_id", TEXT, True),
     Column("size", TEXT, True), Column("envelope_type", TEXT, True), Column("format", TEXT, True),
     Column("key_format", TEXT, True), Column("value_format", TEXT, True), Column("cluster_id", TEXT, True),
     Column("owner_id", TEXT, False), Column("create_sql", TEXT, True), Column("redacted_create_sql", TEXT, True)),
)
#: secrets (Materialize's mz_secrets): never their values
MZ_SECRETS = BuiltinTable(
    "s213", "mz_catalog", "mz_secrets",
    (Column("id", TEXT, False), Column("oid", OID, False), Column("schema_id", TEXT, False),
     Column("name", TEXT, False), Column("owner_id", TEXT, False), Column("privileges", array_of(TEXT), False)),
)
#: connections (Materialize's mz_connections): their statements name secrets, never their values
MZ_CONNECTIONS = BuiltinTable(
    "s214", "mz_catalog", "mz_connections",
    (Column("id", TEXT, False), Column("oid", OID, False), Column("schema_id", TEXT, False),
     Column("name", TEXT, False), Column("type", TEXT, False), Column("owner_id", TEXT, False),
     Column("privileges", array_of(TEXT), False), Column("create_sql", TEXT, False),
     Column("redacted_create_sql", TEXT, False)),
)
MZ_MATERIALIZED_VIEWS = BuiltinTable(
    "s60", "mz_catalog", "mz_materialized_views",
    (Column("id", TEXT, False), Column("oid", OID, False), Column("schema_id", TEXT, False),
     Column("name", TEXT, False), Column("cluster_id", TEXT, False), Column("definition", TEXT, False),
     *_OWNED, Column("create_sql", TEXT, False), Column("redacted_create_sql", TEXT, False)),
)

#: each materialized view's dataflow on each replica of its cluster: whether its state is
#: built (Materialize's mz_internal.mz_hydration_statuses), and how long building it took
MZ_HYDRATION_STATUSES = BuiltinTable(
    "s75", "mz_internal", "mz_hydration_statuses",
    (Column("object_id", TEXT, False), Column("replica_id", TEXT, False), Column("hydrated", BOOL, False),
     Column("hydration_seconds", FLOAT8, True)),
)

#: how far each materialized view is behind its inputs (``local_lag``) and behind the
#: present (``global_lag``: the timestamp oracle's read timestamp), Materialize's
#: mz_internal.mz_materialization_lag
MZ_MATERIALIZATION_LAG = BuiltinTable(
    "s76", "mz_internal", "mz_materialization_lag",
    (Column("object_id", TEXT, False), Column("local_lag", INTERVAL, True), Column("global_lag", INTERVAL, True)),
)

#: Materialize's ids of the schemas (mz_schemas)
SCHEMA_IDS = {"public": "u3", "mz_catalog": "s1", "pg_catalog": "s2", "mz_internal": "s4", "information_schema": "s5"}
#: ids the id allocator never hands out, per kind: user schemas (CREATE SCHEMA) take
#: ``item`` ids, so ``public``'s fixed one is never another object's
RESERVED_IDS = {"item": frozenset(i for i in SCHEMA_IDS.values() if i.startswith("u"))}


def _owned(snap: CatalogSnapshot, obj: rbac.ObjectRef) -> tuple[str, list[str]]:
    """(owner_id, privileges) of an object, as Materialize's catalog tables show them."""
    return rbac.owner_of(snap, obj), [rbac.mz_aclitem_text(a) for a in rbac.acl_of(snap, obj)]

#: builtin tables whose rows come from environmentd's state (metrics, persist), not the catalog
METRICS_TABLES = (MZ_COORDINATOR_LOOP, MZ_PEEK_DURATIONS, MZ_RECENT_STORAGE_USAGE)

BUILTIN_TABLES = PG_CATALOG_TABLES + (IS_TABLES, IS_COLUMNS, IS_SCHEMATA, MZ_COLUMNS, MZ_SCHEMAS, MZ_DATABASES, MZ_COORDINATOR_LOOP, MZ_PEEK_DURATIONS, MZ_CLUSTERS, MZ_CLUSTER_REPLICAS, MZ_CLUSTER_REPLICA_SIZES, MZ_TABLES, MZ_VIEWS, MZ_RECENT_STORAGE_USAGE, MZ_INDEXES, MZ_INDEX_COLUMNS, MZ_OBJECTS, MZ_ROLES, MZ_ROLE_MEMBERS, MZ_DEFAULT_PRIVILEGES, IS_TABLE_PRIVILEGES, IS_ROLE_TABLE_GRANTS, MZ_RELATIONS, MZ_SOURCES, MZ_SINKS, MZ_SECRETS, MZ_CONNECTIONS, MZ_MATERIALIZED_VIEWS, MZ_HYDRATION_STATUSES, MZ_MATERIALIZATION_LAG) + INTROSPECTION_TABLES

#: replica id -> "healthy" | "unhealthy"
StatusFn = Callable[[str], str]


def builtin_rows(table: BuiltinTable, snap: CatalogSnapshot, status: StatusFn,
                 sizes: dict[str, ReplicaSize] | None = None, settings: dict[str, str] | None = None,
                 owner: Callable[[str], str | None] | None = None) -> list[tuple]:
    """The current rows of ``table`` as tuples in column order; ``settings`` are the
    default session variables, for ``pg_settings``; ``owner(cluster_id)`` is the pgwire
    address of the environmentd that runs a cluster (``mz_clusters.environmentd``)."""
    pg = pg_catalog_rows(table, snap, settings or {})
    if pg is not None:
        return pg
    found = introspection_rows(table, snap)
    if found is not None:
        return found
    if table.id == MZ_CLUSTER_REPLICA_SIZES.id:
        return [
            (s.name, s.workers, s.scale, s.cpu_limit, f"{s.memory_limit}MiB" if s.memory_limit else None)
            for s in (sizes or {}).values()
        ]
    if table.id == IS_TABLES.id:
        rels = [(r, "BASE TABLE") for r in snap.tables.values()] + [(r, "VIEW") for r in snap.views.values()] + \
               [(r, "MATERIALIZED VIEW") for r in snap.materialized_views.values()] + \
               [(r, "SYSTEM TABLE") for r in snap.builtins.values()]
        return sorted(("materialize", r.schema, r.name, kind) for r, kind in rels)
    if table.id == IS_COLUMNS.id:
        rels = _relations(snap)
        out = []
        for r in rels:
            for i, c in enumerate(r.columns):
                t = c.type
                charlen = t.precision if t.name in ("varchar", "bpchar") else None
                prec = t.precision if t.name == "numeric" else {"int2": 16, "int4": 32, "int8": 64, "float4": 24,
                                                                "float8": 53}.get(t.name)
                scale = t.scale if t.name == "numeric" else (0 if t.is_integer else None)
                out.append(("materialize", r.schema, r.name, c.name, i + 1, None, "YES" if c.nullable else "NO",
                            t.unconstrained().sql(), charlen, prec, scale))
        return out
    if table.id == IS_SCHEMATA.id:
        names = ["public", "mz_catalog", "mz_internal", "pg_catalog", "information_schema"] + \
            [sc.name for sc in snap.schemas.values()]
        # system schemas belong to the bootstrap superuser, as in pg_namespace
        refs = [rbac.schema_ref(snap, n) for n in names]
        return [("materialize", n, rbac.role_name(snap, rbac.BOOTSTRAP_ROLE_ID if r.builtin else rbac.owner_of(snap, r)))
                for n, r in zip(names, refs)]
    if table.id == MZ_COLUMNS.id:
        rels = _relations(snap)
        return [(r.id, c.name, i + 1, c.nullable, c.type.sql(), c.default, c.type.oid, c.type.typmod)
                for r in rels for i, c in enumerate(r.columns)]
    if table.id == MZ_SCHEMAS.id:
        # the system schemas belong to no database (Materialize's ambient schemas)
        return [(i, namespace_oid(snap, n), None if i.startswith("s") else rbac.DATABASE_ID, n,
                 *_owned(snap, rbac.schema_ref(snap, n)))
                for n, i in sorted(SCHEMA_IDS.items(), key=lambda kv: kv[0] != "public")] + \
            [(sc.id, object_oid(sc.id), rbac.DATABASE_ID, sc.name, *_owned(snap, rbac.schema_ref(snap, sc.name)))
             for sc in sorted(snap.schemas.values(), key=_id_order)]
    if table.id == MZ_RELATIONS.id:
        return [row for row in _objects(snap) if row[4] in ("table", "source", "view", "materialized-view")]
    if table.id == MZ_SOURCES.id:
        return [(t.id, object_oid(t.id), _schema_id(snap, t.schema), t.name, t.kind, None, None,
                 None, None, None, _source_cluster(snap, t), rbac.owner_of(snap, rbac.relation_ref(t)), create,
                 create)
                for t in snap.sources() for create in (source_create_sql(t),)]
    if table.id == MZ_SINKS.id:
        return []
    if table.id == MZ_SECRETS.id:
        return [(x.id, object_oid(x.id), _schema_id(snap, x.schema), x.name, *_owned(snap, rbac.relation_ref(x)))
                for x in sorted(snap.secrets.values(), key=_id_order)]
    if table.id == MZ_CONNECTIONS.id:
        return [(x.id, object_oid(x.id), _schema_id(snap, x.schema), x.name, x.kind,
                 *_owned(snap, rbac.relation_ref(x)), create, create)
                for x in sorted(snap.connections.values(), key=_id_order)
                for create in (connection_create_sql(snap, x),)]
    if table.id == MZ_ROLES.id:
        return [(r.id, rbac.role_oid(r.id), r.name, r.inherit, r.login, r.superuser) for r in rbac.all_roles(snap)]
    if table.id in (IS_TABLE_PRIVILEGES.id, IS_ROLE_TABLE_GRANTS.id):
        names = {v: k for k, v in rbac.PRIVILEGE_LETTERS.items()}
        out = []
        for r in sorted([*snap.tables.values(), *snap.views.values()], key=_id_order):
            for a in rbac.acl_of(snap, rbac.relation_ref(r)):
                for ch in a.privileges:
                    out.append((rbac.role_name(snap, a.grantor), rbac.role_name(snap, a.grantee), "materialize",
                                r.schema, r.name, names[ch], "NO", "YES" if ch == "r" else "NO"))
        return out
    if table.id == MZ_DEFAULT_PRIVILEGES.id:
        out = []
        for key, acl in sorted(snap.default_privileges.items()):
            role, schema_key, kind = rbac.split_default_privileges_key(key)
            schema_id = None
            if schema_key is not None:
                name = schema_key.split(":")[1]
                schema_id = SCHEMA_IDS.get(name, name)
            out += [(role, rbac.DATABASE_ID, schema_id, kind.lower(), a.grantee, a.privileges) for a in acl]
        return out
    if table.id == MZ_ROLE_MEMBERS.id:
        return [(role, member, grantor) for (role, member), grantor in sorted(snap.role_members.items())]
    if table.id == MZ_INDEXES.id:
        return [(i.id, object_oid(i.id), i.name, i.on_id, i.cluster_id, rbac.owner_of(snap, rbac.relation_ref(i)),
                 i.definition)
                for i in sorted(snap.indexes.values(), key=_id_order)]
    if table.id == MZ_INDEX_COLUMNS.id:
        return _index_columns(snap)
    if table.id == MZ_OBJECTS.id:
        return _objects(snap)
    if table.id == MZ_DATABASES.id:
        return [(rbac.DATABASE_ID, DATABASE_OID, "materialize", *_owned(snap, rbac.DATABASE_OBJ))]
    if table.id == MZ_TABLES.id:
        return [(t.id, object_oid(t.id), t.schema, t.name, *_owned(snap, rbac.relation_ref(t)))
                for t in sorted(snap.tables.values(), key=_id_order) if type(t) is Table]
    if table.id == MZ_VIEWS.id:
        return [(v.id, v.schema, v.name, v.sql, *_owned(snap, rbac.relation_ref(v)))
                for v in sorted(snap.views.values(), key=_id_order)]
    if table.id == MZ_MATERIALIZED_VIEWS.id:
        schema_ids = SCHEMA_IDS | {sc.name: sc.id for sc in snap.schemas.values()}
        # (literals are not redacted: the column is there for tools that read it)
        return [(m.id, object_oid(m.id), schema_ids.get(m.schema, "u3"), m.name, m.cluster_id, m.sql,
                 *_owned(snap, rbac.relation_ref(m)), create, create)
                for m in sorted(snap.materialized_views.values(), key=_id_order)
                for create in (materialized_view_create_sql(snap, m),)]
    if table.id == MZ_CLUSTERS.id:
        return [(c.id, c.name, *_owned(snap, rbac.cluster_ref(c)), c.managed, c.size, c.replication_factor,
                 list(c.availability_zones) if c.managed else None, owner(c.id) if owner else None)
                for c in sorted(snap.clusters.values(), key=_id_order)]
    if table.id == MZ_CLUSTER_REPLICAS.id:
        return [
            (r.id, r.name, r.cluster_id, r.size, r.availability_zone, status(r.id))
            for r in sorted(snap.replicas.values(), key=_id_order)
        ]
    raise KeyError(table.id)


def _objects(snap: CatalogSnapshot) -> list[tuple]:
    """mz_objects' rows: (id, oid, schema_id, name, type, owner_id, cluster_id), by id."""
    objs = [(t, "table" if type(t) is Table else "source", getattr(t, "cluster_id", None) or None)
            for t in snap.tables.values()] + [(v, "view", None) for v in snap.views.values()] \
        + [(x, "secret", None) for x in snap.secrets.values()] \
        + [(x, "connection", None) for x in snap.connections.values()] \
        + [(i, "index", i.cluster_id) for i in snap.indexes.values()] \
        + [(m, "materialized-view", m.cluster_id) for m in snap.materialized_views.values()] \
        + [(b, "table", None) for b in snap.builtins.values()]
    schema_ids = SCHEMA_IDS | {sc.name: sc.id for sc in snap.schemas.values()}
    return [(o.id, object_oid(o.id), schema_ids.get(o.schema, "u3"), o.name, kind,
             rbac.owner_of(snap, rbac.relation_ref(o)), cluster)
            for o, kind, cluster in sorted(objs, key=lambda x: _id_order(x[0]))]


def _index_columns(snap: CatalogSnapshot) -> list[tuple]:
    """mz_index_columns: a key that names a column of the object has its 1-based
    ``on_position`` (and that column's nullability); any other key is an ``on_expression``."""
    out = []
    for i in sorted(snap.indexes.values(), key=_id_order):
        rel = snap.tables.get(i.on_id) or snap.views.get(i.on_id) or snap.materialized_views.get(i.on_id)
        cols = [c.name for c in rel.columns] if rel else []
        for pos, key in enumerate(i.keys, 1):
            if key in cols:
                out.append((i.id, pos, cols.index(key) + 1, None, rel.columns[cols.index(key)].nullable))
            else:
                out.append((i.id, pos, None, key, True))
    return out


def _relations(snap: CatalogSnapshot) -> list:
    """Every relation with columns: tables, views, materialized views, system tables."""
    return [*snap.tables.values(), *snap.views.values(), *snap.materialized_views.values(), *snap.builtins.values()]


def materialized_view_create_sql(snap: CatalogSnapshot, m: MaterializedView) -> str:
    """The statement that makes ``m`` as it is now, fully qualified (Materialize's
    ``mz_materialized_views.create_sql`` and ``SHOW CREATE MATERIALIZED VIEW``)."""
    cluster = snap.clusters.get(m.cluster_id)
    name = ".".join(_quoted(p) for p in ("materialize", m.schema, m.name))
    return (f"CREATE MATERIALIZED VIEW {name} IN CLUSTER {_quoted(cluster.name if cluster else m.cluster_id)}"
            f" AS {m.sql}")


def connection_create_sql(snap: CatalogSnapshot, c: Connection) -> str:
    """The statement that makes connection ``c`` (``mz_connections.create_sql``, SHOW
    CREATE CONNECTION): its secrets by name, never by value."""
    parts = []
    for name, value, secret in c.options:
        if secret:
            x = snap.secrets.get(value)
            parts.append(f"{name} = SECRET {qualified_name(x.schema, x.name) if x else value}")
        elif name == "PORT":
            parts.append(f"{name} = {value}")
        else:
            parts.append(f"{name} = '" + value.replace("'", "''") + "'")
    return f"CREATE CONNECTION {qualified_name(c.schema, c.name)} TO {c.kind.upper()} ({', '.join(parts)})"


def source_create_sql(rel: Source | Subsource) -> str:
    """The statement that made a source (``mz_sources.create_sql``): as given, for a
    source; for a subsource, Materialize's ``CREATE SUBSOURCE`` form naming its source."""
    import json

    if isinstance(rel, Source):
        return json.loads(rel.spec).get("sql", "")
    cols = ", ".join(f"{_quoted(c.name)} {c.type.sql()}" for c in rel.columns)
    return f"CREATE SUBSOURCE {qualified_name(rel.schema, rel.name)} ({cols})"


def _source_cluster(snap: CatalogSnapshot, rel: Source | Subsource) -> str | None:
    """The cluster that runs a source and its subsources (none for its progress
    subsource, as Materialize shows it)."""
    if isinstance(rel, Subsource) and rel.kind == "progress":
        return None
    src = rel if isinstance(rel, Source) else snap.tables.get(rel.source_id)
    return src.cluster_id if isinstance(src, Source) else None


def qualified_name(schema: str, name: str) -> str:
    """``materialize.schema.name``, each part quoted when it must be."""
    return ".".join(_quoted(p) for p in ("materialize", schema, name))


def _schema_id(snap: CatalogSnapshot, schema: str) -> str:
    return (SCHEMA_IDS | {sc.name: sc.id for sc in snap.schemas.values()}).get(schema, "u3")


def _quoted(ident: str) -> str:
    """``ident`` as SQL names it: bare when it is a plain lower-case name, else quoted."""
    import re

    return ident if re.fullmatch(r"[a-z_][a-z0-9_$]*", ident) else '"' + ident.replace('"', '""') + '"'


def _id_order(obj) -> tuple[str, int]:
    return obj.id[0], int(obj.id[1:])
