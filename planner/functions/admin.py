"""System administration functions (PostgreSQL 9.27, "System Administration Functions")
whose PostgreSQL answer follows from what sqlfront has none of: no event triggers,
extensions, replication slots or origins, standby servers, log collector, partitioned
tables, LISTEN channels, locks, TOAST, loadable modules, asynchronous I/O or XML support
(libxml). Each answers as a PostgreSQL primary without such
objects does: the same error, NULL, false or no rows. Nothing here has state."""

from __future__ import annotations

from catalog.errors import (
    SqlError, FEATURE_NOT_SUPPORTED, INSUFFICIENT_PRIVILEGE, INVALID_PARAMETER_VALUE, INVALID_SCHEMA_NAME,
    OBJECT_NOT_IN_PREREQUISITE_STATE, UNDEFINED_COLUMN, UNDEFINED_FILE, UNDEFINED_OBJECT, UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
)
from planner.functions.registry import (
    Function, by_python, lookup_args, lookup_map, lookup_table, register, sig,
)
from planner.functions.system import constant_entry

#: PostgreSQL's SQLSTATE for an event trigger function called outside one
E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED = "39P03"


def _failing(name: str, sigs: tuple, sqlstate: str, message: str, doc: str, samples: tuple[str, ...] = (),
             hint: str | None = None, arg: bool = False, strict: bool | None = None) -> Function:
    """An entry that fails as PostgreSQL does without such objects. ``message`` may hold
    ``{}``: the first argument's text (``arg``), a name that names nothing; a NULL one
    gives NULL (the function is strict). ``strict`` (default: ``arg``): a NULL argument
    gives NULL rather than the error."""
    strict = arg if strict is None else strict

    def py(a, e):
        raise SqlError(sqlstate, message.format(*a[:1]) if arg else message, hint=hint)

    def spark(S, a, e):
        F = S.F
        if not strict:
            return S.fail(sqlstate, message)
        error = S.fail(sqlstate, message)
        if arg:
            before, after = message.split("{}")
            error = S.fail(sqlstate, F.concat(F.lit(before), a[0].cast("string"), F.lit(after)))
        # strict: NULL for a NULL argument (the call names nothing)
        return F.when(F.greatest(*[x.isNull() for x in a]) if len(a) > 1 else a[0].isNull(), F.lit(None)).otherwise(
            error)

    return Function(name, sigs, py, spark, sql_names=(name,), strict=strict, volatility="volatile", doc=doc,
                    samples=samples)


def _constant(name: str, sigs: tuple, value, spark_type: str, doc: str, samples: tuple[str, ...] = (),
              differs: str = "") -> Function:
    return constant_entry(name, sigs, value, spark_type, samples, doc, volatility="volatile", differs=differs)


def _no_rows(name: str, args: tuple[str, ...], columns: tuple[tuple[str, str], ...], doc: str,
             samples: tuple[str, ...] = ()) -> list[Function]:
    """A set-returning function of ``args`` (type names) with no rows: its ``columns``
    (name, type name), each an empty array entry (``Function``'s ``extra["columns"]``)."""
    from catalog.types import SqlType, array_of

    parts = [Function(f"{name}:{col}", (sig(*args, ret="_" + t),), lambda a, e: [],
                      lambda S, a, e, t=t: S.empty_array(array_of(SqlType(t))), strict=False, volatility="volatile", doc=doc)
             for col, t in columns]
    srf = Function(name, (sig(*args, ret=columns[0][1]),), None, None, sql_names=(name,),
                   kind="srf", volatility="volatile", doc=doc, samples=samples,
                   extra={"columns": tuple((col, f"{name}:{col}") for col, _ in columns)})
    return [*parts, srf]


_NO_SLOT = 'replication slot "{}" does not exist'
_NO_ORIGIN = 'replication origin "{}" does not exist'

register(
    # no event triggers (PostgreSQL 9.30): outside one, these are errors
    _failing("pg_event_trigger_ddl_commands", (sig(ret="record"),), E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED,
             "pg_event_trigger_ddl_commands() can only be called in an event trigger function", "9.30.1",
             ("pg_event_trigger_ddl_commands()",)),
    _failing("pg_event_trigger_dropped_objects", (sig(ret="record"),), E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED,
             "pg_event_trigger_dropped_objects() can only be called in a sql_drop event trigger function", "9.30.2",
             ("pg_event_trigger_dropped_objects()",)),
    *[_failing(n, (sig(ret=t),), E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED,
               f"{n}() can only be called in a table_rewrite event trigger function", "9.30.3", (f"{n}()",))
      for n, t in (("pg_event_trigger_table_rewrite_oid", "oid"), ("pg_event_trigger_table_rewrite_reason", "int4"))],
    # no extensions (CREATE EXTENSION is not supported)
    _failing("pg_extension_config_dump", (sig("oid", "text", ret="void"),), FEATURE_NOT_SUPPORTED,
             "pg_extension_config_dump() can only be called from an SQL script executed by CREATE EXTENSION", "9.27.10",
             ("pg_extension_config_dump(k::oid, s)",)),
    _failing("pg_extension_update_paths", (sig("name", ret="record"),), FEATURE_NOT_SUPPORTED,
             'extension "{}" is not available', "9.27.10", ("pg_extension_update_paths('ext')",), arg=True,
             hint="The extension must first be installed on the system where PostgreSQL is running."),
    # no replication slots or origins: SUBSCRIBE streams a view's changes instead
    _failing("pg_drop_replication_slot", (sig("name", ret="void"),), UNDEFINED_OBJECT, _NO_SLOT, "9.27.6",
             ("pg_drop_replication_slot('slot')",), arg=True),
    _failing("pg_copy_logical_replication_slot", (sig("name", "name", ret="record"),
                                                  sig("name", "name", "bool", ret="record"),
                                                  sig("name", "name", "bool", "name", ret="record")),
             UNDEFINED_OBJECT, _NO_SLOT, "9.27.6", ("pg_copy_logical_replication_slot('a', 'b', k > 2)",), arg=True),
    _failing("pg_copy_physical_replication_slot", (sig("name", "name", ret="record"),
                                                   sig("name", "name", "bool", ret="record")),
             UNDEFINED_OBJECT, _NO_SLOT, "9.27.6", arg=True),
    _failing("pg_sync_replication_slots", (sig(ret="void"),), OBJECT_NOT_IN_PREREQUISITE_STATE,
             "replication slots can only be synchronized to a standby server", "9.27.6", ("pg_sync_replication_slots()",)),
    _constant("pg_replication_origin_oid", (sig("text", ret="oid"),), None, "long", "9.27.6",
              ("pg_replication_origin_oid(s)",)),
    _failing("pg_replication_origin_drop", (sig("text", ret="void"),), UNDEFINED_OBJECT, _NO_ORIGIN, "9.27.6",
             ("pg_replication_origin_drop(s)",), arg=True),
    _failing("pg_replication_origin_session_setup", (sig("text", ret="void"),), UNDEFINED_OBJECT, _NO_ORIGIN,
             "9.27.6", arg=True),
    _constant("pg_replication_origin_session_is_setup", (sig(ret="bool"),), False, "boolean", "9.27.6",
              ("pg_replication_origin_session_is_setup() OR k > 3",)),
    _failing("pg_replication_origin_session_reset", (sig(ret="void"),), OBJECT_NOT_IN_PREREQUISITE_STATE,
             "no replication origin is configured", "9.27.6", ("pg_replication_origin_session_reset()",)),
    # the transaction's replay origin (LSN and time) is reset: none was ever set up here
    _constant("pg_replication_origin_xact_reset", (sig(ret="void"),), "", "string", "9.27.6",
              ("pg_replication_origin_xact_reset()", "pg_replication_origin_xact_reset() || k")),
    # environmentd logs to its standard output: no log collector to rotate (PostgreSQL
    # also WARNs "rotation not possible because log collection not active")
    _constant("pg_rotate_logfile", (sig(ret="bool"),), False, "boolean", "9.27.2",
              ("pg_rotate_logfile() OR k > 3",), "no WARNING with the false"),
    _constant("pg_numa_available", (sig(ret="bool"),), False, "boolean", "9.27.5",
              ("pg_numa_available() OR k > 3",)),
    # no session ever waits for another's lock (writes are compare-and-append)
    _constant("pg_isolation_test_session_is_blocked", (sig("int4", "_int4", ret="bool"),), False, "boolean",
              "9.27", ("pg_isolation_test_session_is_blocked(k, a)",)),
    # tables are persist shards, not files; values are not stored as TOASTed datums
    # (PostgreSQL's answers for a value stored uncompressed in line)
    _constant("pg_filenode_relation", (sig("oid", "oid", ret="oid"),), None, "long", "9.27.7",
              ("pg_filenode_relation(0, k::oid)",), "NULL for every filenode, system catalogs' too"),
    _constant("pg_column_compression", (sig("any", ret="text"),), None, "string", "9.27.7",
              ("pg_column_compression(s)", "pg_column_compression(j)", "pg_column_compression(k)")),
    _constant("pg_column_toast_chunk_id", (sig("any", ret="oid"),), None, "long", "9.27.7",
              ("pg_column_toast_chunk_id(s)",)),
    *_no_rows("pg_listening_channels", (), (("pg_listening_channels", "text"),), "9.26",
              ("pg_listening_channels()",)),
    # no loadable modules (PostgreSQL lists the shared libraries its backend loaded: none
    # in a session that loaded none), no asynchronous I/O handles in flight
    *_no_rows("pg_get_loaded_modules", (), (("module_name", "text"), ("version", "text"), ("file_name", "text")),
              "9.27.5", ("pg_get_loaded_modules()",)),
    *_no_rows("pg_get_aios", (), (("pid", "int4"), ("io_id", "int4"), ("io_generation", "int8"), ("state", "text"),
                                  ("operation", "text"), ("off", "int8"), ("length", "int8"), ("target", "text"),
                                  ("handle_data_len", "int2"), ("raw_result", "int4"), ("result", "text"),
                                  ("target_desc", "text"), ("f_sync", "bool"), ("f_localmem", "bool"),
                                  ("f_buffered", "bool")), "9.27.5", ("pg_get_aios()",)),
    # no xml type: the XML functions over text answer as a PostgreSQL built without libxml
    # (its DETAIL: "This functionality requires the server to be built with libxml support.")
    *[_failing(n, (sig("text", ret="bool"),), FEATURE_NOT_SUPPORTED, "unsupported XML feature", "9.15.2",
               (f"{n}(s)", f"{n}('<a>' || k || '</a>')", f"{n}(CASE WHEN k > 9 THEN s END)"), strict=True)
      for n in ("xml_is_well_formed", "xml_is_well_formed_content", "xml_is_well_formed_document")],
    # no partitioned tables: no relation has partition ancestors or a partition tree
    *_no_rows("pg_partition_ancestors", ("oid",), (("relid", "oid"),), "9.27.9",
              ("pg_partition_ancestors(k::oid)",)),
    *_no_rows("pg_partition_tree", ("oid",), (("relid", "oid"), ("parentrelid", "oid"), ("isleaf", "bool"),
                                                   ("level", "int4")), "9.27.9", ("pg_partition_tree(k::oid)",)),
)


#: the version of the collations' rules: code-point order, PostgreSQL's builtin provider's
#: C.UTF-8, whose version is "1"; the "C" collation has none
_COLLATION_VERSION = "1"


def _collation_version(a, e):
    from catalog.pg_catalog import COLLATION_OIDS, DEFAULT_COLLATION_OID

    if a[0] not in COLLATION_OIDS:
        raise SqlError(UNDEFINED_OBJECT, f"collation with OID {a[0]} does not exist")
    return _COLLATION_VERSION if a[0] == DEFAULT_COLLATION_OID else None


def _collation_version_spark(S, a, e):
    from catalog.pg_catalog import COLLATION_OIDS, DEFAULT_COLLATION_OID

    F = S.F
    missing = S.fail(UNDEFINED_OBJECT, F.concat(F.lit("collation with OID "), a[0].cast("string"),
                                                F.lit(" does not exist")))
    return (F.when(a[0].isNull(), F.lit(None).cast("string")).when(a[0] == DEFAULT_COLLATION_OID, F.lit(_COLLATION_VERSION))
            .when(a[0].isin(*COLLATION_OIDS), F.lit(None).cast("string")).otherwise(missing))


def _database_collation_version(a, e):
    from catalog.pg_catalog import DATABASE_OID

    if a[0] != DATABASE_OID:
        raise SqlError(UNDEFINED_OBJECT, f"database with OID {a[0]} does not exist")
    return _COLLATION_VERSION


def _database_collation_version_spark(S, a, e):
    from catalog.pg_catalog import DATABASE_OID

    F = S.F
    return F.when(a[0].isNull(), F.lit(None).cast("string")).when(a[0] == DATABASE_OID, F.lit(_COLLATION_VERSION)).otherwise(S.fail(UNDEFINED_OBJECT, F.concat(
        F.lit("database with OID "), a[0].cast("string"), F.lit(" does not exist"))))


register(
    Function("pg_collation_actual_version", (sig("oid", ret="text"),), _collation_version, _collation_version_spark,
             sql_names=("pg_collation_actual_version",), volatility="volatile", doc="9.27.8",
             samples=("pg_collation_actual_version(CASE WHEN k < 3 THEN 100 ELSE 950 END::oid)",
                      "pg_collation_actual_version(k::oid)")),
    Function("pg_database_collation_actual_version", (sig("oid", ret="text"),), _database_collation_version,
             _database_collation_version_spark, sql_names=("pg_database_collation_actual_version",),
             volatility="volatile", doc="9.27.8",
             samples=(("pg_database_collation_actual_version((SELECT oid FROM pg_database "
                       "WHERE datname = current_database()))"), "pg_database_collation_actual_version(k::oid)")),
)


def _superuser_arg(args: list, ctx) -> list:
    """``plan_args_in`` of ``pg_reload_conf``: whether the statement's current role is a
    superuser, as a constant argument (read once, at plan time)."""
    if args:
        return args  # no signature takes arguments: 42883
    from catalog import rbac
    from catalog.types import BOOL
    from planner.scalar import Literal

    snap = ctx.catalog()
    return [Literal(snap is None or rbac.is_superuser(snap, rbac.current_role(snap)), BOOL)]


_NO_RELOAD = "permission denied for function pg_reload_conf"


def _reload_conf(a, e):
    if not a[0]:
        raise SqlError(INSUFFICIENT_PRIVILEGE, _NO_RELOAD)
    return True


register(
    # PostgreSQL signals the postmaster to reread postgresql.conf and answers true; here
    # the configuration is environmentd's command-line flags and the session defaults
    # (catalog.settings), read when it starts and changed per session with SET:
    # nothing is pending, so a reload succeeds at once. Only superusers may call it
    # (PostgreSQL revokes EXECUTE from PUBLIC).
    Function("pg_reload_conf", (sig("bool", ret="bool"),), _reload_conf,
             lambda S, a, e: S.F.when(a[0], S.F.lit(True)).otherwise(S.fail(INSUFFICIENT_PRIVILEGE, _NO_RELOAD)),
             sql_names=("pg_reload_conf",), strict=False, volatility="volatile", doc="9.27.2",
             samples=("pg_reload_conf() OR k > 3", "pg_reload_conf()"), extra={"plan_args_in": _superuser_arg}),
)


def _flags_py(a, e):
    from catalog.settings import FLAGS

    flags = FLAGS.get(a[0].lower())
    return None if flags is None else list(flags)


def _flags_spark(S, a, e):
    from catalog.settings import FLAGS
    from planner.functions.registry import static_map

    F = S.F
    flags = static_map(S, {name: ",".join(f) for name, f in FLAGS.items()})[F.lower(a[0])]
    return F.when(flags == "", F.array().cast("array<string>")).otherwise(F.split(flags, ","))


register(
    # a setting's flags (catalog.settings.FLAGS), by its name in any case; NULL for a name
    # that names no setting
    Function("pg_settings_get_flags", (sig("text", ret="_text"),), _flags_py, _flags_spark,
             sql_names=("pg_settings_get_flags",), volatility="stable", doc="9.27.1",
             samples=("pg_settings_get_flags('TimeZone')",
                      ("pg_settings_get_flags(CASE k WHEN 1 THEN 'search_path' WHEN 2 THEN 'is_superuser' WHEN 3 THEN "
                       "'transaction_isolation' ELSE 'server_version' END)"),
                      "pg_settings_get_flags(s)", "pg_settings_get_flags('nosuch' || k)")),
)


def _tablespace_databases(a, e):
    from catalog.pg_catalog import DATABASE_OID, TABLESPACE_OIDS

    return [DATABASE_OID] if a[0] == TABLESPACE_OIDS["pg_default"] else []


def _tablespace_databases_spark(S, a, e):
    from catalog.pg_catalog import DATABASE_OID, TABLESPACE_OIDS

    F = S.F
    return F.when(a[0] == TABLESPACE_OIDS["pg_default"], F.array(F.lit(DATABASE_OID).cast("long"))).otherwise(
        F.array().cast("array<bigint>"))


register(
    # the databases with objects in a tablespace: the one database in pg_default (its
    # default tablespace), none in pg_global or an OID that names no tablespace
    Function("pg_tablespace_databases:pg_tablespace_databases", (sig("oid", ret="_oid"),), _tablespace_databases,
             _tablespace_databases_spark, strict=False, volatility="stable", doc="9.26"),
    Function("pg_tablespace_databases", (sig("oid", ret="oid"),), None, None, sql_names=("pg_tablespace_databases",),
             kind="srf", volatility="stable", doc="9.26", samples=("pg_tablespace_databases(k::oid)", "pg_tablespace_databases(1664::oid)"),
             extra={"columns": (("pg_tablespace_databases", "pg_tablespace_databases:pg_tablespace_databases"),)}),
)


def _monitor_only(name: str):
    """``plan_args_in`` of a function PostgreSQL revokes EXECUTE on from PUBLIC, leaving it
    to superusers and pg_monitor (sqlfront has no pg_monitor role): the arguments as they
    are for a superuser, at plan time.

    Raises:
        SqlError 42501 ``permission denied for function NAME`` for another role."""

    def check(args: list, ctx) -> list:
        from catalog import rbac

        snap = ctx.catalog()
        if snap is not None and not rbac.is_superuser(snap, rbac.current_role(snap)):
            raise SqlError(INSUFFICIENT_PRIVILEGE, f"permission denied for function {name}")
        return args

    return check


#: pg_ls_*dir's columns (PostgreSQL 9.27.11)
_FILE_COLUMNS = (("name", "text"), ("size", "int8"), ("modification", "timestamptz"))


def _listing(name: str, sigs: tuple, samples: tuple[str, ...], py=None, spark=None) -> list[Function]:
    """A directory listing of PostgreSQL's (``pg_ls_tmpdir`` and co.) whose directory
    sqlfront does not have: no rows, as PostgreSQL lists a missing (``missing_ok``) or
    empty one; ``py``/``spark``: a column entry's implementations instead, one that checks
    the argument (an unknown tablespace, a slot) first. Superusers only."""
    parts = [Function(f"{name}:{col}", tuple(sig(*s.args, ret="_" + t) for s in sigs), py or (lambda a, e: []),
                      spark or (lambda S, a, e: S.empty_array(e.type)), strict=False, volatility="volatile", doc="9.27.11") for col, t in _FILE_COLUMNS]
    srf = Function(name, tuple(sig(*s.args, ret="text") for s in sigs), None, None, sql_names=(name,), kind="srf",
                   volatility="volatile", doc="9.27.11", samples=samples,
                   extra={"columns": tuple((col, f"{name}:{col}") for col, _ in _FILE_COLUMNS),
                          "plan_args_in": _monitor_only(name)})
    return [*parts, srf]


def _tmpdir_py(a, e):
    """pg_ls_tmpdir([tablespace]): no temporary files (environmentd writes none: sorts and
    spills are Spark's, on the replicas); 42704 for an OID that names no tablespace."""
    from catalog.pg_catalog import TABLESPACE_OIDS

    if a and a[0] is not None and a[0] not in TABLESPACE_OIDS.values():
        raise SqlError(UNDEFINED_OBJECT, f"tablespace with OID {a[0]} does not exist")
    return []


def _tmpdir_spark(S, a, e):
    from catalog.pg_catalog import TABLESPACE_OIDS

    F = S.F
    empty = S.empty_array(e.type)
    if not a:
        return empty
    return F.when(a[0].isNull() | a[0].isin(*TABLESPACE_OIDS.values()), empty).otherwise(
        S.fail(UNDEFINED_OBJECT, F.concat(F.lit("tablespace with OID "), a[0].cast("string"),
                                          F.lit(" does not exist"))))


def _slot_py(a, e):
    if a[0] is None:
        return []
    raise SqlError(UNDEFINED_OBJECT, _NO_SLOT.format(a[0]))


def _slot_spark(S, a, e):
    F = S.F
    return F.when(a[0].isNull(), S.empty_array(e.type)).otherwise(
        S.fail(UNDEFINED_OBJECT, F.concat(F.lit('replication slot "'), a[0], F.lit('" does not exist'))))


#: environmentd logs to its standard output: there is no log directory (PostgreSQL's
#: answer without one: its logging collector off and log_directory never created)
_NO_LOGDIR = 'could not open directory "log": No such file or directory'


def _no_logdir(a, e):
    raise SqlError(UNDEFINED_FILE, _NO_LOGDIR)

register(
    # the server's directories that sqlfront has none of, or none with files in: no
    # temporary files, WAL archive status, WAL summaries, logical decoding snapshots or
    # mappings (PostgreSQL lists these with no rows too on a server that has none)
    *_listing("pg_ls_tmpdir", (sig(ret="text"), sig("oid", ret="text")),
              ("pg_ls_tmpdir()", "pg_ls_tmpdir(1663)", "pg_ls_tmpdir(k::oid)", "pg_ls_tmpdir(CASE WHEN k < 3 THEN 1663 ELSE 1664 END::oid)"),
              _tmpdir_py, _tmpdir_spark),
    *_listing("pg_ls_archive_statusdir", (sig(ret="text"),), ("pg_ls_archive_statusdir()",)),
    *_listing("pg_ls_summariesdir", (sig(ret="text"),), ("pg_ls_summariesdir()",)),
    *_listing("pg_ls_logicalsnapdir", (sig(ret="text"),), ("pg_ls_logicalsnapdir()",)),
    *_listing("pg_ls_logicalmapdir", (sig(ret="text"),), ("pg_ls_logicalmapdir()",)),
    *_listing("pg_ls_replslotdir", (sig("text", ret="text"),),
              ("pg_ls_replslotdir('slot')", "pg_ls_replslotdir(s)", "pg_ls_replslotdir(NULL)"), _slot_py, _slot_spark),
    *_listing("pg_ls_logdir", (sig(ret="text"),), ("pg_ls_logdir()",),
              _no_logdir,
              lambda S, a, e: S.fail(UNDEFINED_FILE, _NO_LOGDIR)),
)


#: PostgreSQL's limits of a notification (async.c): a channel name shorter than
#: NAMEDATALEN bytes, a payload shorter than 8000 bytes
_CHANNEL_MAX, _PAYLOAD_MAX = 64, 8000


def _notify_py(a, e):
    """pg_notify(channel, payload): checked as PostgreSQL checks it, then delivered to the
    sessions listening on the channel: none, as sqlfront has no LISTEN
    (``pg_listening_channels`` gives no rows), so PostgreSQL's answer for a channel no one
    listens on. A NULL payload is the empty one; void's value is ''.

    Raises:
        SqlError 22023 for an empty or NULL channel, a channel of 64 bytes or more, or a
        payload of 8000 bytes or more."""
    channel, payload = a[0], a[1] or ""
    if not channel:
        raise SqlError(INVALID_PARAMETER_VALUE, "channel name cannot be empty")
    if len(channel.encode()) >= _CHANNEL_MAX:
        raise SqlError(INVALID_PARAMETER_VALUE, "channel name too long")
    if len(payload.encode()) >= _PAYLOAD_MAX:
        raise SqlError(INVALID_PARAMETER_VALUE, "payload string too long")
    return ""


def _notify_spark(S, a, e):
    F = S.F
    return (F.when(a[0].isNull() | (a[0] == ""), S.fail(INVALID_PARAMETER_VALUE, "channel name cannot be empty"))
            .when(F.octet_length(a[0]) >= _CHANNEL_MAX, S.fail(INVALID_PARAMETER_VALUE, "channel name too long"))
            .when(F.coalesce(F.octet_length(a[1]), F.lit(0)) >= _PAYLOAD_MAX,
                  S.fail(INVALID_PARAMETER_VALUE, "payload string too long"))
            .otherwise(F.lit("")))


#: the segment size of WAL file names: PostgreSQL's default (sqlfront has no WAL of its
#: own; the names are those of a PostgreSQL server's archive)
_WAL_SEGMENT_BYTES = 16 * 1024 * 1024


def _walfile_row(a, ctx=None) -> tuple:
    """(segment_number, timeline_id) of a WAL file name (xlog_internal.h's
    XLogFromFileName): 24 hexadecimal digits, timeline, log and segment, 8 each.

    Raises:
        SqlError 22023 ``invalid WAL file name`` for anything else."""
    from decimal import Decimal

    name = a[0]
    if name is None:
        return None, None
    upper = name.upper()
    if len(upper) != 24 or upper.strip("0123456789ABCDEF"):
        raise SqlError(INVALID_PARAMETER_VALUE, f'invalid WAL file name "{name}"')
    tli, log, seg = (int(upper[i:i + 8], 16) for i in (0, 8, 16))
    return Decimal(log * (0x100000000 // _WAL_SEGMENT_BYTES) + seg), tli


def _walfile_py(a, e):
    from planner.functions.logic import record_text

    return record_text(None if v is None else str(v) for v in _walfile_row(a))


def _walfile_columns() -> tuple:
    from catalog.types import INT8, NUMERIC

    return (("segment_number", NUMERIC), ("timeline_id", INT8))


register(
    Function("pg_notify", (sig("text", "text", ret="void"),), _notify_py, _notify_spark, sql_names=("pg_notify",),
             strict=False, volatility="volatile", doc="9.27",
             samples=("pg_notify('chan', 'payload')", "pg_notify('c' || k, s)", "pg_notify(s, 'x')",
                      "pg_notify(repeat('c', 60 + k), 'x')", "pg_notify('c', repeat(s, 1000 * k))",
                      "pg_notify('', 'x')")),
    # tables are persist shards (Parquet parts in a blob store), not files: no relation
    # has a filenode or a file path, PostgreSQL's answer for a relation without storage
    # (and for an OID that names none)
    _constant("pg_relation_filenode", (sig("oid", ret="oid"),), None, "long", "9.27.7",
              ("pg_relation_filenode(k::oid)", "pg_relation_filenode(0)"),
              "NULL for every relation, system catalogs' too: no relation is a file"),
    _constant("pg_relation_filepath", (sig("oid", ret="text"),), None, "string", "9.27.7",
              ("pg_relation_filepath(k::oid)", "pg_relation_filepath(0)"),
              "NULL for every relation, system catalogs' too: no relation is a file"),
    # a WAL file name's parts, for names of a PostgreSQL server's WAL archive (by its
    # default segment size: 16MB); on table data through the same Python (by_python)
    Function("pg_split_walfile_name", (sig("text", ret="record"),), _walfile_py, by_python,
             sql_names=("pg_split_walfile_name",), volatility="immutable", doc="9.27.4",
             extra={"row_in_from": (_walfile_columns(), _walfile_row)},
             samples=("pg_split_walfile_name('000000010000000100000002')",
                      "pg_split_walfile_name('0000000' || k || '0000000A000000FF')",
                      "pg_split_walfile_name('00000001000000010000000' || s)",
                      "pg_split_walfile_name(lower('0000000' || k || '0000000A000000fF'))")),
)


# -- statistics manipulation (PostgreSQL 9.27.13) ---------------------------------------

#: a lookup key's separator between a schema, a relation and a column name
_SEP = "\x1f"
#: what pg_clear_relation_stats says of a relation kind that has no statistics
_NO_STATS_KIND = {"v": "views", "S": "sequences"}


def _stats_targets(args: list, ctx) -> dict[str, str] | None:
    """The lookup table (``lookup_args``) of pg_clear_relation_stats and
    pg_clear_attribute_stats: ``s:<schema>`` for each schema; ``r:<schema>␟<relation>``
    -> ``ok``, ``denied`` (the current role neither owns it nor is a superuser:
    PostgreSQL's owner or MAINTAIN check) or the plural of a kind without statistics
    (views, sequences); ``c:<schema>␟<relation>␟<column>`` for each column of a relation
    (only the relation named when both names are constants). None outside a session."""
    from catalog import rbac
    from catalog.snapshot import SYSTEM_SCHEMAS
    from planner.scalar import Literal

    snap = ctx.catalog()
    if snap is None:
        return None
    role = rbac.current_role(snap)
    named = None
    if len(args) >= 2 and all(isinstance(a, Literal) for a in args[:2]):
        named = (args[0].value, args[1].value)
    table = {f"s:{s}": "1" for s in SYSTEM_SCHEMAS}
    table |= {f"s:{s.name}": "1" for s in snap.schemas.values() if snap.visible_schema(s.name)}
    for kind, objects in (("r", snap.tables), ("v", snap.views), ("m", snap.materialized_views), ("r", snap.builtins),
                          ("S", snap.sequences), ("i", snap.indexes)):
        for o in objects.values():
            if not snap.visible_schema(o.schema):
                continue
            key = f"{o.schema}{_SEP}{o.name}"
            table[f"r:{key}"] = _NO_STATS_KIND.get(kind) or (
                "ok" if rbac.is_owner(snap, role, rbac.relation_ref(o)) else "denied")
            if named is None or named == (o.schema, o.name):
                columns = o.keys if kind == "i" else [c.name for c in getattr(o, "columns", ())]
                table |= {f"c:{key}{_SEP}{c}": "1" for c in columns}
    return table


_REQUIRED = ("schemaname", "relname", "attname", "inherited")


def _clear_stats_py(a, e):
    """pg_clear_relation_stats(schema, relation) / pg_clear_attribute_stats(schema,
    relation, column, inherited): sqlfront gathers no planner statistics (pg_class shows
    reltuples -1, relpages 0: never analyzed; pg_statistic has no rows), so after
    PostgreSQL's checks there is nothing to clear; void's value is ''.

    Raises:
        SqlError 22023 for a NULL argument, 3F000 for a schema, 42P01 for a relation,
        42703 for a column that does not exist, 42809 for a view or sequence, 42501 for a
        relation the current role does not own."""
    *values, table = a
    for name, v in zip(_REQUIRED, values):
        if v is None:
            raise SqlError(INVALID_PARAMETER_VALUE, f'argument "{name}" must not be null')
    t = lookup_table(table, e.func)
    schema, relation = values[0], values[1]
    if f"s:{schema}" not in t:
        raise SqlError(INVALID_SCHEMA_NAME, f'schema "{schema}" does not exist')
    state = t.get(f"r:{schema}{_SEP}{relation}")
    if state is None:
        raise SqlError(UNDEFINED_TABLE, f'relation "{schema}.{relation}" does not exist')
    if state == "denied":
        raise SqlError(INSUFFICIENT_PRIVILEGE, f"permission denied for table {relation}")
    if state != "ok":
        raise SqlError(WRONG_OBJECT_TYPE, f'cannot modify statistics for relation "{relation}"',
                       detail=f"This operation is not supported for {state}.")
    if len(values) > 2 and f"c:{schema}{_SEP}{relation}{_SEP}{values[2]}" not in t:
        raise SqlError(UNDEFINED_COLUMN, f'column "{values[2]}" of relation "{relation}" does not exist')
    return ""


def _clear_stats_spark(S, a, e):
    F = S.F
    *values, table = a
    t = lookup_map(S, table)
    schema, relation = values[0], values[1]
    rel_key = F.concat(schema, F.lit(_SEP), relation)
    state = t[F.concat(F.lit("r:"), rel_key)]
    out = F.when(values[0].isNull(), S.fail(INVALID_PARAMETER_VALUE, f'argument "{_REQUIRED[0]}" must not be null'))
    for name, v in zip(_REQUIRED[1:], values[1:]):
        out = out.when(v.isNull(), S.fail(INVALID_PARAMETER_VALUE, f'argument "{name}" must not be null'))
    out = (out.when(t[F.concat(F.lit("s:"), schema)].isNull(),
                    S.fail(INVALID_SCHEMA_NAME, F.concat(F.lit('schema "'), schema, F.lit('" does not exist'))))
           .when(state.isNull(), S.fail(UNDEFINED_TABLE, F.concat(F.lit('relation "'), schema, F.lit("."), relation,
                                                                  F.lit('" does not exist'))))
           .when(state == "denied", S.fail(INSUFFICIENT_PRIVILEGE, F.concat(F.lit("permission denied for table "),
                                                                            relation)))
           .when(state != "ok", S.fail(WRONG_OBJECT_TYPE, F.concat(F.lit('cannot modify statistics for relation "'),
                                                                    relation, F.lit('"')))))
    if len(values) > 2:
        column = t[F.concat(F.lit("c:"), rel_key, F.lit(_SEP), values[2])]
        out = out.when(column.isNull(), S.fail(UNDEFINED_COLUMN, F.concat(
            F.lit('column "'), values[2], F.lit('" of relation "'), relation, F.lit('" does not exist'))))
    return out.otherwise(F.lit(""))


register(
    Function("pg_clear_relation_stats", (sig("text", "text", "internal", ret="void"),), _clear_stats_py,
             _clear_stats_spark, sql_names=("pg_clear_relation_stats",), strict=False, volatility="volatile",
             doc="9.27.13", extra={"plan_args_in": lookup_args("pg_clear_relation_stats", _stats_targets)},
             samples=("pg_clear_relation_stats('public', 'fx_t')", "pg_clear_relation_stats('pg_catalog', 'pg_class')",
                      "pg_clear_relation_stats('public', CASE WHEN k < 3 THEN 'fx_t' ELSE s END)",
                      "pg_clear_relation_stats(CASE WHEN k > 1 THEN 'public' END, 'fx_t')",
                      "pg_clear_relation_stats('nosuch', 'fx_t')")),
    Function("pg_clear_attribute_stats", (sig("text", "text", "text", "bool", "internal", ret="void"),),
             _clear_stats_py, _clear_stats_spark, sql_names=("pg_clear_attribute_stats",), strict=False,
             volatility="volatile", doc="9.27.13",
             extra={"plan_args_in": lookup_args("pg_clear_attribute_stats", _stats_targets)},
             samples=("pg_clear_attribute_stats('public', 'fx_t', 'k', false)",
                      "pg_clear_attribute_stats('public', 'fx_t', CASE WHEN k < 3 THEN 's' ELSE 'nosuch' END, true)",
                      "pg_clear_attribute_stats('public', 'fx_t', 'i', b)",
                      "pg_clear_attribute_stats('public', 'nosuch' || k, 'a', false)")),
)
