"""Builtin system tables and how their rows are computed.

Columns follow Materialize's ``mz_catalog`` documentation ("System catalog"), with
the seed's ``mz_cluster_replicas`` (seeds/cluster-replicas.md) plus ``id``.
Rows are derived from a catalog snapshot and the live replica statuses, so they are
always current; they are never stored.
"""

from __future__ import annotations

from typing import Callable

from catalog.sizes import ReplicaSize
from catalog.snapshot import BuiltinTable, CatalogSnapshot, Column
from catalog.types import BOOL, FLOAT8, INT8, TEXT

MZ_CLUSTERS = BuiltinTable(
    "s1",
    "mz_catalog",
    "mz_clusters",
    (Column("id", TEXT, False), Column("name", TEXT, False)),
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
    (Column("id", TEXT, False), Column("schema", TEXT, False), Column("name", TEXT, False)),
)

MZ_VIEWS = BuiltinTable(
    "s5",
    "mz_catalog",
    "mz_views",
    (Column("id", TEXT, False), Column("schema", TEXT, False), Column("name", TEXT, False),
     Column("definition", TEXT, False)),
)

MZ_COORDINATOR_LOOP = BuiltinTable(
    "s6",
    "mz_internal",
    "mz_coordinator_loop",
    (Column("busy_seconds", FLOAT8, False), Column("wall_seconds", FLOAT8, False), Column("commands", INT8, False)),
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
     Column("nullable", BOOL, False), Column("type", TEXT, False)),
)

MZ_SCHEMAS = BuiltinTable("s9", "mz_catalog", "mz_schemas", (Column("id", TEXT, False), Column("name", TEXT, False)))
MZ_DATABASES = BuiltinTable("s10", "mz_catalog", "mz_databases", (Column("id", TEXT, False), Column("name", TEXT, False)))

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

# pg_catalog: enough of PostgreSQL's catalogs for psql's \dt and \dn and simple reflection.
# OIDs are int8 here; user objects get 20000 + their id number, system objects 10000 + theirs.
PG_NAMESPACE = BuiltinTable(
    "s14", "pg_catalog", "pg_namespace",
    (Column("oid", INT8, False), Column("nspname", TEXT, False), Column("nspowner", INT8, False)),
)
PG_CLASS = BuiltinTable(
    "s15", "pg_catalog", "pg_class",
    (Column("oid", INT8, False), Column("relname", TEXT, False), Column("relnamespace", INT8, False),
     Column("relkind", TEXT, False), Column("relowner", INT8, False), Column("relnatts", INT8, False),
     Column("relhasindex", BOOL, False)),
)
PG_DATABASE = BuiltinTable(
    "s16", "pg_catalog", "pg_database",
    (Column("oid", INT8, False), Column("datname", TEXT, False), Column("datdba", INT8, False),
     Column("encoding", INT8, False), Column("datcollate", TEXT, False), Column("datctype", TEXT, False)),
)
PG_ATTRIBUTE = BuiltinTable(
    "s17", "pg_catalog", "pg_attribute",
    (Column("attrelid", INT8, False), Column("attname", TEXT, False), Column("atttypid", INT8, False),
     Column("attnum", INT8, False), Column("atttypmod", INT8, False), Column("attnotnull", BOOL, False),
     Column("attisdropped", BOOL, False)),
)
PG_TYPE = BuiltinTable(
    "s18", "pg_catalog", "pg_type",
    (Column("oid", INT8, False), Column("typname", TEXT, False), Column("typnamespace", INT8, False),
     Column("typlen", INT8, False), Column("typtype", TEXT, False), Column("typcategory", TEXT, False)),
)

NAMESPACE_OIDS = {"pg_catalog": 11, "public": 2200, "mz_catalog": 16001, "mz_internal": 16002,
                  "information_schema": 16003}
OWNER_OID = 10


def object_oid(object_id: str) -> int:
    """A stable OID for a catalog id (``u5`` -> 20005, ``s3`` -> 10003)."""
    return (20000 if object_id[0] == "u" else 10000) + int(object_id[1:])


#: builtin tables whose rows come from environmentd's metrics, not from the catalog
METRICS_TABLES = (MZ_COORDINATOR_LOOP, MZ_PEEK_DURATIONS)

BUILTIN_TABLES = (PG_NAMESPACE, PG_CLASS, PG_DATABASE, PG_ATTRIBUTE, PG_TYPE, IS_TABLES, IS_COLUMNS, IS_SCHEMATA, MZ_COLUMNS, MZ_SCHEMAS, MZ_DATABASES, MZ_COORDINATOR_LOOP, MZ_PEEK_DURATIONS, MZ_CLUSTERS, MZ_CLUSTER_REPLICAS, MZ_CLUSTER_REPLICA_SIZES, MZ_TABLES, MZ_VIEWS)

#: replica id -> "healthy" | "unhealthy"
StatusFn = Callable[[str], str]


def builtin_rows(table: BuiltinTable, snap: CatalogSnapshot, status: StatusFn,
                 sizes: dict[str, ReplicaSize] | None = None) -> list[tuple]:
    """The current rows of ``table`` as tuples in column order."""
    if table.id == MZ_CLUSTER_REPLICA_SIZES.id:
        return [
            (s.name, s.workers, s.scale, s.cpu_limit, f"{s.memory_limit}MiB" if s.memory_limit else None)
            for s in (sizes or {}).values()
        ]
    if table.id == PG_NAMESPACE.id:
        return [(oid, name, OWNER_OID) for name, oid in NAMESPACE_OIDS.items()]
    if table.id == PG_CLASS.id:
        rels = [(r, "r") for r in snap.tables.values()] + [(r, "v") for r in snap.views.values()] + \
               [(r, "r") for r in snap.builtins.values()]
        out = [(object_oid(r.id), r.name, NAMESPACE_OIDS[r.schema], kind, OWNER_OID, len(r.columns),
                any(i.on_id == r.id for i in snap.indexes.values())) for r, kind in rels]
        out += [(object_oid(i.id), i.name, NAMESPACE_OIDS.get(i.schema, 2200), "i", OWNER_OID, 0, False)
                for i in snap.indexes.values()]
        return out
    if table.id == PG_DATABASE.id:
        return [(16384, "materialize", OWNER_OID, 6, "C", "C")]
    if table.id == PG_ATTRIBUTE.id:
        rels = list(snap.tables.values()) + list(snap.views.values()) + list(snap.builtins.values())
        return [(object_oid(r.id), c.name, c.type.oid, i + 1, c.type.typmod, not c.nullable, False)
                for r in rels for i, c in enumerate(r.columns)]
    if table.id == PG_TYPE.id:
        from catalog.types import _INFO

        return [(info[0], name, 11, info[1], "b", info[2]) for name, info in _INFO.items()]
    if table.id == IS_TABLES.id:
        rels = [(r, "BASE TABLE") for r in snap.tables.values()] + [(r, "VIEW") for r in snap.views.values()] + \
               [(r, "SYSTEM TABLE") for r in snap.builtins.values()]
        return sorted(("materialize", r.schema, r.name, kind) for r, kind in rels)
    if table.id == IS_COLUMNS.id:
        rels = list(snap.tables.values()) + list(snap.views.values()) + list(snap.builtins.values())
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
        return [("materialize", n, "materialize") for n in ("public", "mz_catalog", "mz_internal", "pg_catalog",
                                                            "information_schema")]
    if table.id == MZ_COLUMNS.id:
        rels = list(snap.tables.values()) + list(snap.views.values()) + list(snap.builtins.values())
        return [(r.id, c.name, i + 1, c.nullable, c.type.sql()) for r in rels for i, c in enumerate(r.columns)]
    if table.id == MZ_SCHEMAS.id:
        return [("u3", "public"), ("s1", "mz_catalog"), ("s2", "pg_catalog"), ("s4", "mz_internal"),
                ("s5", "information_schema")]
    if table.id == MZ_DATABASES.id:
        return [("u1", "materialize")]
    if table.id == MZ_TABLES.id:
        return [(t.id, t.schema, t.name) for t in sorted(snap.tables.values(), key=_id_order)]
    if table.id == MZ_VIEWS.id:
        return [(v.id, v.schema, v.name, v.sql) for v in sorted(snap.views.values(), key=_id_order)]
    if table.id == MZ_CLUSTERS.id:
        return [(c.id, c.name) for c in sorted(snap.clusters.values(), key=_id_order)]
    if table.id == MZ_CLUSTER_REPLICAS.id:
        return [
            (r.id, r.name, r.cluster_id, r.size, r.availability_zone, status(r.id))
            for r in sorted(snap.replicas.values(), key=_id_order)
        ]
    raise KeyError(table.id)


def _id_order(obj) -> tuple[str, int]:
    return obj.id[0], int(obj.id[1:])
