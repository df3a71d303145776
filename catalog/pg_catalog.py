"""``pg_catalog``: PostgreSQL's system catalogs as tools read them (psql's ``\\d`` family,
SQLAlchemy's and DBeaver's reflection, drivers' type lookups).

Columns and their meaning follow PostgreSQL's "System Catalogs" chapter (section 53)
for the columns those tools query; rows are derived from a catalog snapshot on every
read. User objects get OID 20000 + their id number, system objects 10000 + theirs
(``object_oid``); type OIDs are PostgreSQL's.
Catalogs for features this product does not have (constraints, triggers, rules,
inheritance, policies) exist and are empty, so the
queries that join them answer as PostgreSQL does for objects without any.
"""

from __future__ import annotations

from catalog import rbac
from catalog.snapshot import BuiltinTable, CatalogSnapshot, Column
from catalog.types import ARRAY_OIDS, BOOL, FLOAT4, INT2, INT4, INT8, OID, TEXT, TIMESTAMPTZ, SqlType, all_type_names, array_of

NAMESPACE_OIDS = {"pg_catalog": 11, "public": 2200, "mz_catalog": 16001, "mz_internal": 16002,
                  "information_schema": 16003}
OWNER_OID = 10
#: pg_class's own OID (PostgreSQL's RelationRelationId): pg_depend's classid of relations
PG_CLASS_OID = 1259
#: pg_namespace's own OID (NamespaceRelationId): pg_description's classoid of schemas
PG_NAMESPACE_OID = 2615
DATABASE_OID = 16384
#: pg_collation's "default" collation: what string columns report as attcollation
DEFAULT_COLLATION_OID = 100
#: pg_collation's rows: "default" and "C" (the same code-point order here)
COLLATION_OIDS = (DEFAULT_COLLATION_OID, 950)
#: first OID of a user object; pg_table_is_visible is true from here on
FIRST_USER_OID = 20000

TEXT_ARRAY = array_of(TEXT)
INT2_ARRAY = array_of(INT2)
OID_ARRAY = array_of(OID)


def namespace_oid(snap: CatalogSnapshot, schema: str) -> int:
    """pg_namespace's OID of ``schema``: a system schema's fixed one, else its object's."""
    if schema in NAMESPACE_OIDS:
        return NAMESPACE_OIDS[schema]
    sc = snap.schema_by_name(schema)
    return object_oid(sc.id) if sc is not None else NAMESPACE_OIDS["public"]


def object_oid(object_id: str) -> int:
    """A stable OID for a catalog id (``u5`` -> 20005, ``s3`` -> 10003)."""
    return (FIRST_USER_OID if object_id[0] == "u" else 10000) + int(object_id[1:])


def index_definition(snap, oid: int | None, column: int = 0) -> str | None:
    """``pg_get_indexdef(oid [, column])`` as Materialize answers it: ``CREATE INDEX i ON t
    USING arrangement (k1,k2)`` (its indexes are arrangements, where PostgreSQL names
    an access method such as btree; psql's ``\\d`` shows what follows ``USING``); with
    ``column`` > 0, that key's text alone (PostgreSQL's rule). None for an OID that
    names no index, or a column past the keys."""
    index = next((i for i in snap.indexes.values() if object_oid(i.id) == oid), None)
    if index is None:
        return None
    if column:
        return index.keys[column - 1] if 0 < column <= len(index.keys) else None
    rel = snap.tables.get(index.on_id) or snap.views.get(index.on_id) or snap.materialized_views.get(index.on_id)
    on = rel.name if rel is not None else index.on_id
    return f"CREATE INDEX {index.name} ON {on} USING arrangement ({','.join(index.keys)})"


def _table(id_: str, name: str, spec: str) -> BuiltinTable:
    """A pg_catalog table from ``"col:type col:type ..."`` (types: oid, text, bool, int2,
    int4, int8, float4, text[], int2[], oid[]); every column may be NULL, as in PostgreSQL."""
    types = {"timestamptz": TIMESTAMPTZ, "oid": OID, "text": TEXT, "bool": BOOL, "int2": INT2, "int4": INT4, "int8": INT8, "float4": FLOAT4,
             "text[]": TEXT_ARRAY, "int2[]": INT2_ARRAY, "oid[]": OID_ARRAY}
    cols = tuple(Column(c, types[t]) for c, t in (item.split(":") for item in spec.split()))
    return BuiltinTable(id_, "pg_catalog", name, cols)


PG_NAMESPACE = _table("s14", "pg_namespace", "oid:oid nspname:text nspowner:oid nspacl:text[]")
PG_CLASS = _table(
    "s15", "pg_class",
    "oid:oid relname:text relnamespace:oid reltype:oid reloftype:oid relowner:oid relam:oid relfilenode:oid "
    "reltablespace:oid relpages:int4 reltuples:float4 reltoastrelid:oid relhasindex:bool relisshared:bool "
    "relpersistence:text relkind:text relnatts:int2 relchecks:int2 relhasoids:bool relhasrules:bool "
    "relhastriggers:bool relhassubclass:bool relrowsecurity:bool relforcerowsecurity:bool relispopulated:bool "
    "relreplident:text relispartition:bool relacl:text[] reloptions:text[]")
PG_DATABASE = _table(
    "s16", "pg_database",
    "oid:oid datname:text datdba:oid encoding:int4 datcollate:text datctype:text datistemplate:bool "
    "datallowconn:bool datconnlimit:int4 dattablespace:oid datacl:text[]")
PG_ATTRIBUTE = _table(
    "s17", "pg_attribute",
    "attrelid:oid attname:text atttypid:oid attlen:int2 attnum:int2 attndims:int4 atttypmod:int4 "
    "attnotnull:bool atthasdef:bool attidentity:text attgenerated:text attisdropped:bool attislocal:bool "
    "attcollation:oid attstattarget:int4 attstorage:text attcompression:text attacl:text[] attoptions:text[] "
    "attfdwoptions:text[]")
PG_TYPE = _table(
    "s18", "pg_type",
    "oid:oid typname:text typnamespace:oid typowner:oid typlen:int2 typbyval:bool typtype:text "
    "typcategory:text typispreferred:bool typisdefined:bool typdelim:text typrelid:oid typelem:oid "
    "typarray:oid typinput:oid typoutput:oid typbasetype:oid typtypmod:int4 typnotnull:bool typndims:int4 "
    "typcollation:oid typdefault:text")
PG_INDEX = _table(
    "s19", "pg_index",
    "indexrelid:oid indrelid:oid indnatts:int2 indisunique:bool indisprimary:bool indisexclusion:bool "
    "indimmediate:bool indisclustered:bool indisvalid:bool indisready:bool indislive:bool "
    "indisreplident:bool indkey:int2[] indclass:oid[] indoption:int2[] indexprs:text indpred:text")
PG_DESCRIPTION = _table("s20", "pg_description", "objoid:oid classoid:oid objsubid:int4 description:text")
PG_SETTINGS = _table("s21", "pg_settings", "name:text setting:text unit:text category:text short_desc:text "
                                             "context:text vartype:text source:text")
PG_ROLES = _table(
    "s22", "pg_roles",
    "oid:oid rolname:text rolsuper:bool rolinherit:bool rolcreaterole:bool rolcreatedb:bool rolcanlogin:bool "
    "rolreplication:bool rolconnlimit:int4 rolpassword:text rolvaliduntil:timestamptz rolbypassrls:bool "
    "rolconfig:text[]")
PG_COLLATION = _table("s23", "pg_collation", "oid:oid collname:text collnamespace:oid collprovider:text "
                                             "collcollate:text collctype:text")
PG_ATTRDEF = _table("s24", "pg_attrdef", "oid:oid adrelid:oid adnum:int2 adbin:text")
PG_CONSTRAINT = _table(
    "s25", "pg_constraint",
    "oid:oid conname:text connamespace:oid contype:text condeferrable:bool condeferred:bool convalidated:bool "
    "conrelid:oid contypid:oid conindid:oid confrelid:oid confupdtype:text confdeltype:text "
    "confmatchtype:text conislocal:bool coninhcount:int4 connoinherit:bool conkey:int2[] confkey:int2[] "
    "conbin:text")
PG_INHERITS = _table("s26", "pg_inherits", "inhrelid:oid inhparent:oid inhseqno:int4")
PG_TRIGGER = _table("s27", "pg_trigger", "oid:oid tgrelid:oid tgname:text tgenabled:text tgisinternal:bool")
PG_REWRITE = _table("s28", "pg_rewrite", "oid:oid rulename:text ev_class:oid ev_type:text is_instead:bool")
PG_POLICY = _table("s29", "pg_policy", "oid:oid polname:text polrelid:oid polcmd:text polpermissive:bool "
                                         "polroles:oid[] polqual:text polwithcheck:text")
PG_AM = _table("s30", "pg_am", "oid:oid amname:text amtype:text")
#: pg_tablespace's rows, PostgreSQL's two: tables are persist shards, in neither
TABLESPACE_OIDS = {"pg_default": 1663, "pg_global": 1664}
PG_TABLESPACE = _table("s31", "pg_tablespace", "oid:oid spcname:text spcowner:oid")
PG_USER = _table("s32", "pg_user", "usename:text usesysid:oid usecreatedb:bool usesuper:bool")
PG_PROC = _table("s33", "pg_proc", "oid:oid proname:text pronamespace:oid prorettype:oid proisagg:bool "
                                   "proiswindow:bool prokind:text proretset:bool pronargs:int2 proargtypes:oid[]")
PG_SEQUENCE = _table("s34", "pg_sequence", "seqrelid:oid seqtypid:oid seqstart:int8 seqincrement:int8 "
                                           "seqmax:int8 seqmin:int8 seqcache:int8 seqcycle:bool")
PG_STATISTIC_EXT = _table("s35", "pg_statistic_ext", "oid:oid stxrelid:oid stxname:text stxnamespace:oid")
PG_PUBLICATION = _table("s36", "pg_publication", "oid:oid pubname:text puballtables:bool")
PG_PUBLICATION_REL = _table("s37", "pg_publication_rel", "oid:oid prpubid:oid prrelid:oid")
PG_DEPEND = _table("s38", "pg_depend", "classid:oid objid:oid objsubid:int4 refclassid:oid refobjid:oid "
                                       "refobjsubid:int4 deptype:text")
PG_ENUM = _table("s39", "pg_enum", "oid:oid enumtypid:oid enumsortorder:float4 enumlabel:text")
PG_RANGE = _table("s40", "pg_range", "rngtypid:oid rngsubtype:oid")
PG_FOREIGN_TABLE = _table("s41", "pg_foreign_table", "ftrelid:oid ftserver:oid")
PG_OPCLASS = _table("s43", "pg_opclass", "oid:oid opcname:text opcnamespace:oid opcdefault:bool opcmethod:oid")
PG_AUTH_MEMBERS = _table("s44", "pg_auth_members", "roleid:oid member:oid grantor:oid admin_option:bool")
PG_EXTENSION = _table("s42", "pg_extension", "oid:oid extname:text extowner:oid extnamespace:oid "
                                             "extversion:text")
#: materialized views (PostgreSQL 54.13 "pg_matviews")
PG_MATVIEWS = _table("s61", "pg_matviews", "schemaname:text matviewname:text matviewowner:text tablespace:text "
                                           "hasindexes:bool ispopulated:bool definition:text")
#: open cursors (PostgreSQL 54.6 "pg_cursors"): a session's own, so its rows come from the
#: session (``sqlfront.sequence.cursors``); read from anywhere else it is empty
PG_CURSORS = _table("s90", "pg_cursors", "name:text statement:text is_holdable:bool is_binary:bool "
                                         "is_scrollable:bool creation_time:timestamptz")

#: the session's prepared statements (PostgreSQL 54.16): rows from the session
#: (``sqlfront.sequence.prepared``), as pg_cursors
PG_PREPARED_STATEMENTS = _table("s91", "pg_prepared_statements",
                                "name:text statement:text prepare_time:timestamptz parameter_types:text[] "
                                "from_sql:bool generic_plans:int8 custom_plans:int8")

#: PostgreSQL's views over pg_class (54.31 pg_tables, 54.34 pg_views; pg_matviews above), which
#: Materialize also has: tools list a schema's relations by kind with them (dbt-postgres's
#: ``list_relations_without_caching``).
PG_TABLES = _table("s92", "pg_tables", "schemaname:text tablename:text tableowner:text tablespace:text "
                                       "hasindexes:bool hasrules:bool hastriggers:bool rowsecurity:bool")
PG_VIEWS = _table("s93", "pg_views", "schemaname:text viewname:text viewowner:text definition:text")

PG_CATALOG_TABLES = (
    PG_NAMESPACE, PG_CLASS, PG_DATABASE, PG_ATTRIBUTE, PG_TYPE, PG_INDEX, PG_DESCRIPTION, PG_SETTINGS, PG_ROLES,
    PG_COLLATION, PG_ATTRDEF, PG_CONSTRAINT, PG_INHERITS, PG_TRIGGER, PG_REWRITE, PG_POLICY, PG_AM, PG_TABLESPACE,
    PG_USER, PG_PROC, PG_SEQUENCE, PG_STATISTIC_EXT, PG_PUBLICATION, PG_PUBLICATION_REL, PG_DEPEND, PG_ENUM,
    PG_RANGE, PG_FOREIGN_TABLE, PG_EXTENSION, PG_OPCLASS, PG_AUTH_MEMBERS, PG_CURSORS, PG_PREPARED_STATEMENTS,
    PG_TABLES, PG_VIEWS, PG_MATVIEWS,
)


def _relations(snap: CatalogSnapshot):
    """(relation, relkind) for every table, view, materialized view and system table."""
    return [(r, "r") for r in snap.tables.values()] + [(r, "v") for r in snap.views.values()] + \
        [(r, "m") for r in snap.materialized_views.values()] + [(r, "r") for r in snap.builtins.values()]


#: pg_am's OID of "arrangement", the access method of every index (Materialize's indexes)
ARRANGEMENT_AM_OID = 9999


def _class_row(oid: int, name: str, nsp: int, kind: str, natts: int, has_index: bool, persistence: str = "p",
               owner: int = OWNER_OID, acl: list[str] | None = None, am: int = 0) -> tuple:
    # relpages 0, reltuples -1: never analyzed (sqlfront gathers no planner statistics)
    return (oid, name, nsp, 0, 0, owner, am, 0, 0, 0, -1.0, 0, has_index, False, persistence, kind, natts, 0, False,
            False, False, False, False, False, True, "d", False, acl, None)


def _ownership(snap: CatalogSnapshot, obj: rbac.ObjectRef) -> tuple[int, list[str] | None]:
    """(owner's OID, ACL as aclitem texts) of an object, as PostgreSQL shows them: system
    objects belong to the bootstrap superuser (OID 10); an ACL nobody granted or revoked
    on is NULL ("default privileges", which psql's \\dp and \\l show empty)."""
    owner = OWNER_OID if obj.builtin else rbac.role_oid(rbac.owner_of(snap, obj))
    stored = snap.privileges.get(obj.key)
    return owner, None if stored is None else [rbac.aclitem_text(snap, a) for a in stored]


#: type name -> its input and output functions in PostgreSQL's pg_proc, as (OID, name)
TYPE_IO_PROCS = {
    "bool": ((1242, "boolin"), (1243, "boolout")), "int2": ((38, "int2in"), (39, "int2out")),
    "int4": ((42, "int4in"), (43, "int4out")), "int8": ((460, "int8in"), (461, "int8out")),
    "oid": ((1798, "oidin"), (1799, "oidout")), "numeric": ((1701, "numeric_in"), (1702, "numeric_out")),
    "float4": ((200, "float4in"), (201, "float4out")), "float8": ((214, "float8in"), (215, "float8out")),
    "text": ((46, "textin"), (47, "textout")), "name": ((34, "namein"), (35, "nameout")), "varchar": ((1046, "varcharin"), (1047, "varcharout")),
    "bpchar": ((1044, "bpcharin"), (1045, "bpcharout")), "date": ((1084, "date_in"), (1085, "date_out")),
    "time": ((1143, "time_in"), (1144, "time_out")), "timetz": ((1350, "timetz_in"), (1351, "timetz_out")), "timestamp": ((1312, "timestamp_in"), (1313, "timestamp_out")),
    "timestamptz": ((1150, "timestamptz_in"), (1151, "timestamptz_out")),
    "interval": ((1160, "interval_in"), (1161, "interval_out")), "bytea": ((1244, "byteain"), (31, "byteaout")),
    "uuid": ((2952, "uuid_in"), (2953, "uuid_out")), "jsonb": ((3806, "jsonb_in"), (3804, "jsonb_out")),
    "unknown": ((109, "unknownin"), (110, "unknownout")), "array": ((750, "array_in"), (751, "array_out")),
    "record": ((2290, "record_in"), (2291, "record_out")), "void": ((2298, "void_in"), (2299, "void_out")),
    # Materialize's type: OIDs of its own range, beside the type's 16552
    "mz_timestamp": ((16555, "mz_timestamp_in"), (16556, "mz_timestamp_out")),
}
#: pg_proc's rows here: OID -> name of those functions (for ``'array_in'::regproc``)
PROC_NAMES = {oid: name for procs in TYPE_IO_PROCS.values() for oid, name in procs}
#: pg_proc's rows of SQL functions: (oid, proname, prorettype, proisagg, proiswindow,
#: prokind, proretset, pronargs, proargtypes), given by ``planner.functions`` from its
#: registry when it is imported (the catalog cannot import the planner)
FUNCTION_PROCS: list[tuple] = []
#: the same rows by OID
FUNCTION_PROC_BY_OID: dict[int, tuple] = {}


def register_procs(rows: list[tuple]) -> None:
    """Set the rows pg_proc shows for SQL functions (see ``FUNCTION_PROCS``)."""
    FUNCTION_PROCS[:] = rows
    FUNCTION_PROC_BY_OID.clear()
    FUNCTION_PROC_BY_OID.update((r[0], r) for r in rows)


#: pseudo-types (pg_type.dat) that catalog queries name with ::regtype
PSEUDO_TYPE_OIDS = {"trigger": 2279, "void": 2278, "record": 2249, "cstring": 2275, "any": 2276,
                    "anyelement": 2283, "anyarray": 2277, "internal": 2281, "event_trigger": 3838,
                    "anycompatible": 5077, "anynonarray": 2776}
def _collation(t: SqlType) -> int:
    """typcollation/attcollation: the default collation for string types (and arrays of them)."""
    base = t.element if t.is_array else t
    return DEFAULT_COLLATION_OID if base.is_string and base.name != "unknown" else 0


def _type_row(name: str) -> tuple:
    t = SqlType(name)
    elem = t.element.oid if t.is_array else 0
    array = 0 if t.is_array else ARRAY_OIDS.get(name, 0)
    (typin, _), (typout, _) = TYPE_IO_PROCS["array" if t.is_array else name]
    return (t.oid, name, NAMESPACE_OIDS["pg_catalog"], OWNER_OID, t.typlen, 0 < t.typlen <= 8,
            "p" if t.category == "P" else "b",
            t.category, False, True, ",", 0, elem, array, typin, typout, 0, -1, False, 0, _collation(t), None)


def pg_catalog_rows(table: BuiltinTable, snap: CatalogSnapshot, settings: dict[str, str]) -> list[tuple] | None:
    """Rows of a pg_catalog table, or None if ``table`` is not one. ``settings`` are the
    server's default session variables (``pg_settings``)."""
    tid = table.id
    if tid in (PG_CURSORS.id, PG_PREPARED_STATEMENTS.id):
        return []  # a session's own rows (Session.builtin_rows)
    if tid == PG_NAMESPACE.id:
        return [(oid, name, *_ownership(snap, rbac.schema_ref(snap, name))) for name, oid in NAMESPACE_OIDS.items()] + \
            [(object_oid(sc.id), sc.name, *_ownership(snap, rbac.schema_ref(snap, sc.name)))
             for sc in snap.schemas.values()]
    if tid == PG_CLASS.id:
        # Indexes are relations whose access method is "arrangement" (Materialize's indexes
        # are maintained arrangements, not btrees); relhasindex marks the indexed relations,
        # so psql's \d lists their indexes with pg_get_indexdef's text.
        temps = {sc.name for sc in snap.schemas.values() if sc.temp}
        indexed = {i.on_id for i in snap.indexes.values()}
        out = [_class_row(object_oid(r.id), r.name, namespace_oid(snap, r.schema), kind, len(r.columns),
                          r.id in indexed, "t" if r.schema in temps else "p", *_ownership(snap, rbac.relation_ref(r)))
               for r, kind in _relations(snap)]
        out += [_class_row(object_oid(i.id), i.name, namespace_oid(snap, i.schema), "i", len(i.keys), False,
                           owner=_ownership(snap, rbac.relation_ref(i))[0], am=ARRANGEMENT_AM_OID)
                for i in snap.indexes.values()]
        out += [_class_row(object_oid(q.id), q.name, namespace_oid(snap, q.schema), "S", 3, False, "p",
                           *_ownership(snap, rbac.relation_ref(q)))
                for q in snap.sequences.values()]
        return out
    if tid == PG_TABLES.id:
        indexed = {i.on_id for i in snap.indexes.values()}
        return [(r.schema, r.name, "materialize", None, r.id in indexed, False, False, False)
                for r, kind in _relations(snap) if kind == "r"]
    if tid == PG_VIEWS.id:
        return [(v.schema, v.name, "materialize", v.sql) for v in snap.views.values()]
    if tid == PG_INDEX.id:
        # Materialize's indexes are arrangements, not btrees: never unique or primary;
        # indkey holds the 1-based column numbers of plain column keys, 0 for an expression
        out = []
        for i in snap.indexes.values():
            rel = snap.tables.get(i.on_id) or snap.views.get(i.on_id) or snap.materialized_views.get(i.on_id)
            cols = [c.name for c in rel.columns] if rel is not None else []
            keys = [cols.index(k) + 1 if k in cols else 0 for k in i.keys]
            out.append((object_oid(i.id), object_oid(i.on_id), len(keys), False, False, False, True, False, True,
                        True, True, False, keys, [0] * len(keys), [0] * len(keys), None, None))
        return out
    if tid == PG_MATVIEWS.id:
        indexed = {i.on_id for i in snap.indexes.values()}
        return [(m.schema, m.name, "materialize", None, m.id in indexed, True, m.sql)
                for m in snap.materialized_views.values()]
    if tid == PG_DESCRIPTION.id:
        schema_ids = {sc.id for sc in snap.schemas.values()}
        return [(object_oid(oid), PG_NAMESPACE_OID if oid in schema_ids else PG_CLASS_OID, sub, text)
                for (oid, sub), text in snap.comments.items()]
    if tid == PG_SEQUENCE.id:
        return [(object_oid(q.id), SqlType(q.type).oid, q.start, q.increment, q.maxvalue, q.minvalue, q.cache,
                 q.cycle) for q in snap.sequences.values()]
    if tid == PG_ATTRDEF.id:
        # identity columns have no pg_attrdef row in PostgreSQL: attidentity says it all
        return [(object_oid(r.id) * 1000 + i + 1, object_oid(r.id), i + 1, c.default)
                for r in snap.tables.values() for i, c in enumerate(r.columns)
                if c.default is not None and c.identity is None]
    if tid == PG_DEPEND.id:
        # a serial/identity sequence depends on its column ('a' auto, 'i' internal for identity)
        out = []
        for q in snap.sequences.values():
            t = snap.tables.get(q.owned_by[0]) if q.owned_by else None
            if t is None:
                continue
            attnum = next((i + 1 for i, c in enumerate(t.columns) if c.name == q.owned_by[1]), 0)
            ident = any(c.identity for c in t.columns if c.name == q.owned_by[1])
            out.append((PG_CLASS_OID, object_oid(q.id), 0, PG_CLASS_OID, object_oid(t.id), attnum,
                        "i" if ident else "a"))
        return out
    if tid == PG_DATABASE.id:
        owner, acl = _ownership(snap, rbac.DATABASE_OBJ)
        return [(DATABASE_OID, "materialize", owner, 6, "C", "C", False, True, -1, 0, acl)]
    if tid == PG_ATTRIBUTE.id:
        return [(object_oid(r.id), c.name, c.type.oid, c.type.typlen, i + 1, int(c.type.is_array), c.type.typmod,
                 not c.nullable, c.default is not None and c.identity is None, c.identity or "", "", False, True,
                 _collation(c.type), -1,
                 "p" if c.type.typlen > 0 else "x", "", None, None, None)
                for r, _ in _relations(snap) for i, c in enumerate(r.columns)]
    if tid == PG_TYPE.id:
        return [_type_row(n) for n in all_type_names()]
    if tid == PG_SETTINGS.id:
        return [(name, value, None, "Client Connection Defaults", "", "user", "string", "default")
                for name, value in sorted(settings.items())]
    if tid == PG_ROLES.id:
        out = []
        for r in rbac.all_roles(snap):
            sys_priv = lambda ch: rbac.has_privilege(snap, r.id, rbac.SYSTEM, ch)  # noqa: E731
            out.append((rbac.role_oid(r.id), r.name, r.superuser, r.inherit, sys_priv("R"), sys_priv("B"), r.login,
                        False, -1, "********", None, r.superuser, None))
        return out
    if tid == PG_USER.id:
        return [(r.name, rbac.role_oid(r.id), rbac.has_privilege(snap, r.id, rbac.SYSTEM, "B"), r.superuser)
                for r in rbac.all_roles(snap) if r.login]
    if tid == PG_AUTH_MEMBERS.id:
        return [(rbac.role_oid(role), rbac.role_oid(member), rbac.role_oid(grantor), False)
                for (role, member), grantor in sorted(snap.role_members.items())]
    if tid == PG_COLLATION.id:
        return [(DEFAULT_COLLATION_OID, "default", NAMESPACE_OIDS["pg_catalog"], "d", "", ""),
                (COLLATION_OIDS[1], "C", NAMESPACE_OIDS["pg_catalog"], "c", "C", "C")]
    if tid == PG_AM.id:
        return [(2, "heap", "t"), (403, "btree", "i"), (ARRANGEMENT_AM_OID, "arrangement", "i")]
    if tid == PG_PROC.id:
        # a type's input function reads cstring; its output function, the type (any here)
        io = [(oid, name, NAMESPACE_OIDS["pg_catalog"], 2275 if name.endswith("out") else 0, False, False, "f",
               False, 1, [PSEUDO_TYPE_OIDS["any" if name.endswith("out") else "cstring"]])
              for oid, name in sorted(PROC_NAMES.items())]
        return io + [(oid, name, NAMESPACE_OIDS["pg_catalog"], *rest) for oid, name, *rest in FUNCTION_PROCS]
    if tid == PG_TABLESPACE.id:
        return [(oid, name, OWNER_OID) for name, oid in TABLESPACE_OIDS.items()]
    if any(tid == t.id for t in PG_CATALOG_TABLES):
        return []
    return None
