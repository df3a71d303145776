"""Materialize's introspection relations (issue 29): their columns, and the rows of those
that follow from the catalog alone (``mz_comments``, ``mz_types``).

Columns follow Materialize's system catalog reference ("mz_internal" and "mz_catalog"
pages), in its order. Materialize's unsigned types (``uint4``, ``uint8``) are ``int4`` and
``int8`` here, its ``text list`` is ``text[]``: this server has neither type.

The rows of the rest come from environmentd's live state (sessions, statements, replica
processes, persist shards, the function registry) and are computed in
``sqlfront.introspection``; this module must not import anything above ``catalog``.
"""

from __future__ import annotations

from catalog import rbac
from catalog.pg_catalog import PSEUDO_TYPE_OIDS
from catalog.snapshot import BuiltinTable, CatalogSnapshot, Column
from catalog.types import BOOL, BYTEA, FLOAT8, INT4, INT8, INTERVAL, JSONB, OID, TEXT, TIMESTAMPTZ, UUID, SqlType, \
    all_type_names, array_of

_TEXT_ARRAY = array_of(TEXT)


def _cols(spec: str) -> tuple[Column, ...]:
    """``"name:type name:type? ..."``: ``?`` marks a nullable column."""
    types = {"text": TEXT, "int4": INT4, "int8": INT8, "float8": FLOAT8, "bool": BOOL, "oid": OID, "uuid": UUID,
             "timestamptz": TIMESTAMPTZ, "bytea": BYTEA, "text[]": _TEXT_ARRAY, "jsonb": JSONB, "interval": INTERVAL}
    out = []
    for item in spec.split():
        name, typ = item.split(":")
        out.append(Column(name, types[typ.rstrip("?")], typ.endswith("?")))
    return tuple(out)


def _internal(id_: str, name: str, spec: str) -> BuiltinTable:
    return BuiltinTable(id_, "mz_internal", name, _cols(spec))


# Ids s200 and up: this family's own range, clear of the other builtins' ids.

#: each replica process's health: ``online`` or ``offline``, with the reason it went
#: offline (``oom-killed``, ``killed by signal 9``, ...) and when it last changed
MZ_CLUSTER_REPLICA_STATUSES = _internal(
    "s200", "mz_cluster_replica_statuses", "replica_id:text process_id:int8 status:text reason:text? "
                                           "updated_at:timestamptz")
_METRICS = "cpu_nano_cores:int8? memory_bytes:int8? disk_bytes:int8?"
_HEAP = "heap_bytes:int8? heap_limit:int8? swap_bytes:int8?"
#: the last CPU and memory sample of each replica process (Materialize samples about once a
#: minute; sqlfront every ``ReplicaMonitor.interval_s``)
MZ_CLUSTER_REPLICA_METRICS = _internal(
    "s201", "mz_cluster_replica_metrics", f"replica_id:text process_id:int8 {_METRICS} {_HEAP}")
MZ_CLUSTER_REPLICA_METRICS_HISTORY = _internal(
    "s202", "mz_cluster_replica_metrics_history",
    f"replica_id:text process_id:int8 {_METRICS} occurred_at:timestamptz {_HEAP} deployment_generation:int8?")
_PERCENTS = "cpu_percent:float8? memory_percent:float8? disk_percent:float8? heap_percent:float8? swap_percent:float8?"
#: the metrics as percentages of the replica size's allocation (cpu_limit, memory_limit)
MZ_CLUSTER_REPLICA_UTILIZATION = _internal(
    "s203", "mz_cluster_replica_utilization", f"replica_id:text process_id:int8 {_PERCENTS}")
MZ_CLUSTER_REPLICA_UTILIZATION_HISTORY = _internal(
    "s204", "mz_cluster_replica_utilization_history",
    f"replica_id:text process_id:int8 {_PERCENTS} occurred_at:timestamptz deployment_generation:int8?")
#: the sessions connected now
MZ_SESSIONS = _internal("s205", "mz_sessions",
                        "id:uuid connection_id:int4 role_id:text client_ip:text? connected_at:timestamptz")
_ACTIVITY = (
    "execution_id:uuid sample_rate:float8 cluster_id:text? application_name:text cluster_name:text? "
    "database_name:text search_path:text[] transaction_isolation:text execution_timestamp:int8? "
    "transient_index_id:text? {params}mz_version:text began_at:timestamptz finished_at:timestamptz? "
    "finished_status:text? {error} result_size:int8? rows_returned:int8? execution_strategy:text? "
    "transaction_id:int8 prepared_statement_id:uuid sql_hash:bytea prepared_statement_name:text "
    "session_id:uuid prepared_at:timestamptz statement_type:text? throttled_count:int8 "
    "connected_at:timestamptz initial_application_name:text authenticated_user:text {sql}")
#: every statement executed recently (bounded retention: ``sqlfront.activity``), running
#: ones with a NULL ``finished_at``; ``sql`` as the client sent it
MZ_RECENT_ACTIVITY_LOG = _internal("s206", "mz_recent_activity_log",
                                   _ACTIVITY.format(params="params:text[] ", error="error_message:text?", sql="sql:text"))
#: the same without the error messages and the bound parameters (values a statement's
#: literals would have been: Materialize's view leaves them out too), with each
#: statement's literals redacted
MZ_RECENT_ACTIVITY_LOG_REDACTED = _internal("s207", "mz_recent_activity_log_redacted",
                                            _ACTIVITY.format(params="", error="", sql="redacted_sql:text"))
#: which object reads (or is built on) which, directly
MZ_OBJECT_DEPENDENCIES = _internal("s208", "mz_object_dependencies", "object_id:text referenced_object_id:text")
#: bytes of each persist shard now (Materialize's columns; ``id`` numbers the rows)
MZ_STORAGE_USAGE_BY_SHARD = _internal("s209", "mz_storage_usage_by_shard",
                                      "id:int8 shard_id:text? size_bytes:int8 collection_timestamp:timestamptz")
#: COMMENT ON texts
MZ_COMMENTS = _internal("s210", "mz_comments", "id:text object_type:text object_sub_id:int4? comment:text")
#: every type (mz_catalog)
MZ_TYPES = BuiltinTable("s211", "mz_catalog", "mz_types", _cols(
    "id:text oid:oid schema_id:text name:text category:text owner_id:text privileges:text[] create_sql:text? "
    "redacted_create_sql:text?"))
#: every function signature of the function registry (mz_catalog)
MZ_FUNCTIONS = BuiltinTable("s212", "mz_catalog", "mz_functions", _cols(
    "id:text oid:oid schema_id:text name:text argument_type_ids:text[] variadic_argument_type_id:text? "
    "return_type_id:text? returns_set:bool owner_id:text"))
#: each source's and subsource's status (Materialize's: starting, running, stalled...;
#: ``error`` why it stalled, or why a subsource's table is in error), from the ingestion
#: of the process that runs it
MZ_SOURCE_STATUSES = _internal(
    "s215", "mz_source_statuses", "id:text name:text type:text last_status_change_at:timestamptz? status:text "
                                  "error:text? details:jsonb?")
#: each source's ingestion counters since this process started it: messages and bytes
#: read upstream, updates staged and committed, the snapshot's progress (records known
#: and read), and offsets: a PostgreSQL source's WAL LSNs (known upstream, committed; their
#: difference is the lag in bytes), a load generator's ticks
MZ_SOURCE_STATISTICS = _internal(
    "s216", "mz_source_statistics",
    "id:text replica_id:text? messages_received:int8 bytes_received:int8 updates_staged:int8 updates_committed:int8 "
    "records_indexed:int8 bytes_indexed:int8 rehydration_latency:interval? snapshot_records_known:int8? "
    "snapshot_records_staged:int8? snapshot_committed:bool offset_known:int8? offset_committed:int8?")
#: the bytes each materialized view's and index's state holds on each replica (Materialize's
#: ``mz_internal.mz_object_arrangement_sizes``: its arrangements' heap; here its dataflow's
#: checkpoints or its cached parts in the replica's Spark block manager, ``size`` in bytes)
MZ_OBJECT_ARRANGEMENT_SIZES = _internal("s217", "mz_object_arrangement_sizes", "replica_id:text object_id:text size:int8?")

INTROSPECTION_TABLES = (
    MZ_CLUSTER_REPLICA_STATUSES, MZ_CLUSTER_REPLICA_METRICS, MZ_CLUSTER_REPLICA_METRICS_HISTORY,
    MZ_CLUSTER_REPLICA_UTILIZATION, MZ_CLUSTER_REPLICA_UTILIZATION_HISTORY, MZ_SESSIONS, MZ_RECENT_ACTIVITY_LOG,
    MZ_RECENT_ACTIVITY_LOG_REDACTED, MZ_OBJECT_DEPENDENCIES, MZ_STORAGE_USAGE_BY_SHARD, MZ_COMMENTS, MZ_TYPES,
    MZ_FUNCTIONS, MZ_SOURCE_STATUSES, MZ_SOURCE_STATISTICS, MZ_OBJECT_ARRANGEMENT_SIZES,
)

#: types' ids are ``s<TYPE_ID_BASE + OID>``: stable, and clear of the builtin tables' ids
TYPE_ID_BASE = 20000
#: mz_catalog's schema id (``catalog.builtins.SCHEMA_IDS``; pg_catalog's is s2)
_PG_CATALOG_SCHEMA_ID = "s2"


def type_id(name: str) -> str | None:
    """The ``mz_types.id`` of a type or pseudo-type name (``int4``, ``_text``,
    ``anyelement``), None for a name that is neither."""
    if name in PSEUDO_TYPE_OIDS:
        return f"s{TYPE_ID_BASE + PSEUDO_TYPE_OIDS[name]}"
    if name in all_type_names():
        return f"s{TYPE_ID_BASE + SqlType(name).oid}"
    return None


def _type_rows() -> list[tuple]:
    # builtin types: owned by mz_system, usable by PUBLIC (Materialize's ``=U/s1``)
    acl = [rbac.mz_aclitem_text(rbac.AclItem(rbac.PUBLIC, rbac.MZ_SYSTEM.id, "U"))]
    out = [(type_id(n), SqlType(n).oid, _PG_CATALOG_SCHEMA_ID, n, "array" if SqlType(n).is_array else "base",
            rbac.MZ_SYSTEM.id, acl, None, None) for n in all_type_names() if n not in ("unknown", "void")]
    out += [(type_id(n), oid, _PG_CATALOG_SCHEMA_ID, n, "pseudo", rbac.MZ_SYSTEM.id, acl, None, None)
            for n, oid in PSEUDO_TYPE_OIDS.items()]
    return sorted(out, key=lambda r: r[1])


def _object_type(snap: CatalogSnapshot, object_id: str) -> str | None:
    """Materialize's ``mz_comments.object_type`` of a commented object (a column's
    comment has its relation's type)."""
    if any(sc.id == object_id for sc in snap.schemas.values()):
        return "schema"
    for mapping, kind in ((snap.tables, "table"), (snap.views, "view"), (snap.materialized_views, "materialized-view"),
                          (snap.indexes, "index"), (snap.sequences, "sequence")):
        if object_id in mapping:
            return kind
    return None


def introspection_rows(table: BuiltinTable, snap: CatalogSnapshot) -> list[tuple] | None:
    """The rows of ``mz_comments`` or ``mz_types``; None for any other table."""
    if table.id == MZ_COMMENTS.id:
        out = []
        for (object_id, sub), text in sorted(snap.comments.items()):
            kind = _object_type(snap, object_id)
            if kind is not None:
                out.append((object_id, kind, sub or None, text))
        return out
    if table.id == MZ_TYPES.id:
        return _type_rows()
    return None
