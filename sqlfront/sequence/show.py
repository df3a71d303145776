"""Materialize's SHOW statements (SHOW CLUSTERS, CLUSTER REPLICAS, TABLES, VIEWS,
MATERIALIZED VIEWS, CREATE MATERIALIZED VIEW, COLUMNS, SCHEMAS, DATABASES, INDEXES) as queries over the system catalog, run as
peeks. SHOW of a session variable is ``sqlfront.sequence.vars``'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pglast

from catalog import rbac
from catalog.errors import (
    SqlError, FEATURE_NOT_SUPPORTED, INVALID_SCHEMA_NAME, SYNTAX_ERROR, UNDEFINED_OBJECT, UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
)
from planner.functions.string import quote_ident
from sqlfront import mzparse as mz
from sqlfront.parse import parse_generated, quote_literal
from sqlfront.sequence.peek import select
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session


def show(s: Session, stmt, sql: str, params) -> Result:
    """Run a SHOW statement; its command tag is SHOW."""
    return select(s, parse_generated(show_query(s, stmt)), None, None, tag="SHOW")


def select_with_shows(s: Session, stmt: mz.SelectWithShows, sql: str, params) -> Result:
    """A query reading SHOW statements as subqueries (Materialize's ``SELECT ... FROM
    (SHOW CLUSTERS)``): each SHOW is read as its catalog query."""
    return select(s, expand_shows(s, stmt), None, params)


def expand_shows(s: Session, stmt: mz.SelectWithShows):
    """The SELECT of ``stmt`` with each SHOW replaced by its query (``show_query``).

    Raises:
        SqlError 42601 for a syntax error around the SHOWs, or a statement other than a
        SELECT; the SHOWs' errors (``show_query``)."""
    from pglast import ast

    from sqlfront.parse import syntax_error

    try:
        parsed = pglast.parse_sql(stmt.text(lambda show: show_query(s, show)))
    except pglast.parser.ParseError as e:
        raise syntax_error(e) from None
    if len(parsed) != 1 or not isinstance(parsed[0].stmt, ast.SelectStmt):
        raise SqlError(SYNTAX_ERROR, "SHOW is only allowed as a subquery of a SELECT")
    return parsed[0].stmt


def show_query(s: Session, stmt) -> str:
    """The SQL text of a SHOW statement's query.

    Raises:
        SqlError for an unknown cluster, relation or schema named in it."""
    if isinstance(stmt, mz.ShowObjects):
        return _show_objects_query(s, stmt)
    if isinstance(stmt, mz.ShowIndexes):
        return _show_indexes_query(s, stmt)
    if isinstance(stmt, mz.ShowMaterializedViews):
        return _show_materialized_views_query(s, stmt)
    if isinstance(stmt, mz.ShowCreate):
        return _show_create_query(s, stmt)
    if isinstance(stmt, mz.ShowClusters):
        # Materialize's columns: name, replicas ("r1 (size), r2 (size)", NULL for none;
        # a REMOTE replica's size shows as REMOTE), comment
        base = ("SELECT c.name, string_agg(r.name || ' (' || coalesce(r.size, 'REMOTE') || ')', ', '"
                " ORDER BY r.name) AS replicas, '' AS comment FROM mz_catalog.mz_clusters c"
                " LEFT JOIN mz_catalog.mz_cluster_replicas r ON r.cluster_id = c.id GROUP BY c.name")
        col = "name"
    else:
        base = (
            "SELECT c.name AS cluster, r.name AS replica, r.size AS size, r.status = 'healthy' AS ready"
            " FROM mz_catalog.mz_cluster_replicas r JOIN mz_catalog.mz_clusters c ON r.cluster_id = c.id"
        )
        if stmt.cluster is not None:
            s.catalog.resolve_cluster(stmt.cluster)
            base += " WHERE c.name = " + quote_literal(stmt.cluster)
        col = "replica"
    return _show_filtered("*", base, col, stmt, "1" if isinstance(stmt, mz.ShowClusters) else "1, 2")


def _show_indexes_query(s: Session, stmt: mz.ShowIndexes) -> str:
    """SHOW INDEXES [ON obj] [IN CLUSTER c]: name, on, cluster, key (the key
    expressions as a text array), as in Materialize's SQL reference."""
    snap = s.catalog
    base = ("SELECT i.name, o.name AS on, c.name AS cluster, k.key"
            " FROM mz_catalog.mz_indexes i JOIN mz_catalog.mz_objects o ON o.id = i.on_id"
            " JOIN mz_catalog.mz_clusters c ON c.id = i.cluster_id"
            " JOIN (SELECT ic.index_id, array_agg(coalesce(col.name, ic.on_expression) ORDER BY ic.index_position)"
            " AS key FROM mz_catalog.mz_index_columns ic JOIN mz_catalog.mz_indexes ii ON ii.id = ic.index_id"
            " LEFT JOIN mz_catalog.mz_columns col ON col.id = ii.on_id AND col.position = ic.on_position"
            " GROUP BY ic.index_id) k ON k.index_id = i.id")
    conds = []
    if stmt.on is not None:
        conds.append(f"i.on_id = {quote_literal(snap.resolve_relation(None, stmt.on).id)}")
    if stmt.cluster is not None:
        conds.append(f"c.id = {quote_literal(snap.resolve_cluster(stmt.cluster).id)}")
    if conds:
        base += " WHERE " + " AND ".join(conds)
    if stmt.where is not None:
        # Materialize's column "on" is a reserved word to PostgreSQL's grammar.
        where = "".join(('"on"' if t.name == "ON" else stmt.where[t.start:t.end + 1]) + " "
                        for t in pglast.parser.scan(stmt.where))
        stmt = mz.ShowIndexes(stmt.on, stmt.cluster, stmt.like, where)
    return _show_filtered("*", base, "name", stmt, "1")


def _show_materialized_views_query(s: Session, stmt: mz.ShowMaterializedViews) -> str:
    """SHOW MATERIALIZED VIEWS [FROM schema] [IN CLUSTER c]: name, cluster, comment (as
    in Materialize's SQL reference).

    Raises:
        SqlError 3F000 for an unknown schema; 42704 for an unknown cluster."""
    snap = s.catalog
    schema = stmt.schema or snap.search_path()[0]
    if not snap.schema_exists(snap.schema_name(schema)):
        raise SqlError(INVALID_SCHEMA_NAME, f"unknown schema '{schema}'")
    base = ("SELECT m.name, c.name AS cluster, '' AS comment"
            " FROM mz_catalog.mz_materialized_views m JOIN mz_catalog.mz_clusters c ON c.id = m.cluster_id"
            " JOIN mz_catalog.mz_schemas sc ON sc.id = m.schema_id"
            f" WHERE sc.name = {quote_literal(snap.schema_name(schema))}")
    if stmt.cluster is not None:
        base += f" AND c.id = {quote_literal(snap.resolve_cluster(stmt.cluster).id)}"
    return _show_filtered("*", base, "name", stmt, "1")


def _show_create_query(s: Session, stmt: mz.ShowCreate) -> str:
    """SHOW CREATE TABLE | VIEW | MATERIALIZED VIEW | INDEX | CLUSTER name: its qualified
    name and a statement that makes it again (Materialize's ``name``, ``create_sql``
    columns; names qualified with the database, as Materialize's are).

    Raises:
        SqlError 42P01 for an unknown relation or index (and for sources, sinks,
        connections, secrets and types: there are none); 42704 for an unknown cluster;
        42809 for an object of another kind."""
    from catalog.snapshot import MaterializedView, Table, View

    snap = s.catalog
    if stmt.kind == "cluster":
        c = snap.resolve_cluster(stmt.name)
        return _name_and_sql(quote_ident(c.name), _create_cluster_sql(snap, c))
    if stmt.kind == "index":
        idx = resolve_index(snap, stmt.schema, stmt.name)
        on = relation_by_id(snap, idx.on_id)
        cluster = snap.clusters.get(idx.cluster_id)
        sql = (f"CREATE INDEX {quote_ident(idx.name)}" + (f" IN CLUSTER {quote_ident(cluster.name)}" if cluster else "")
               + f" ON {_qualified(on.schema, on.name)} ({', '.join(idx.keys)})")
        return _name_and_sql(_qualified(idx.schema, idx.name), sql)
    if stmt.kind == "connection":
        from sqlfront.secrets import resolve_connection

        c = resolve_connection(snap, stmt.schema, stmt.name)
        return ("SELECT 'materialize.' || sc.name || '.' || x.name AS name, x.create_sql"
                " FROM mz_catalog.mz_connections x JOIN mz_catalog.mz_schemas sc ON sc.id = x.schema_id"
                f" WHERE x.id = {quote_literal(c.id)}")
    if stmt.kind == "source":
        from catalog.snapshot import Source, Subsource

        rel = snap.resolve_relation(stmt.schema, stmt.name)
        if not isinstance(rel, (Source, Subsource)):
            raise SqlError(WRONG_OBJECT_TYPE, f"{_qualified(rel.schema, rel.name)} is not a source")
        return ("SELECT 'materialize.' || sc.name || '.' || x.name AS name, x.create_sql"
                " FROM mz_catalog.mz_sources x JOIN mz_catalog.mz_schemas sc ON sc.id = x.schema_id"
                f" WHERE x.id = {quote_literal(rel.id)}")
    if stmt.kind == "secret":  # Materialize has no SHOW CREATE SECRET: it would show the value
        raise SqlError(FEATURE_NOT_SUPPORTED, "SHOW CREATE SECRET is not supported: a secret's value is never shown")
    if stmt.kind not in ("table", "view", "materialized view"):
        shown = f"{stmt.schema}.{stmt.name}" if stmt.schema else stmt.name
        raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{shown}'")
    rel = snap.resolve_relation(stmt.schema, stmt.name)
    kind = {MaterializedView: "materialized view", View: "view", Table: "table"}.get(type(rel))
    if kind != stmt.kind:
        raise SqlError(WRONG_OBJECT_TYPE, f"{_qualified(rel.schema, rel.name)} is not a {stmt.kind}")
    name = _qualified(rel.schema, rel.name)
    if kind == "materialized view":
        return ("SELECT 'materialize.' || sc.name || '.' || m.name AS name, m.create_sql"
                " FROM mz_catalog.mz_materialized_views m JOIN mz_catalog.mz_schemas sc ON sc.id = m.schema_id"
                f" WHERE m.id = {quote_literal(rel.id)}")
    if kind == "view":
        return _name_and_sql(name, f"CREATE VIEW {name} AS {rel.sql}")
    cols = ", ".join(quote_ident(c.name) + " " + c.type.sql() + ("" if c.nullable else " NOT NULL")
                     + (f" DEFAULT {c.default}" if c.default is not None else "") for c in rel.columns)
    return _name_and_sql(name, f"CREATE TABLE {name} ({cols})")


def _qualified(schema: str, name: str) -> str:
    return f"materialize.{quote_ident(schema)}.{quote_ident(name)}"


def _name_and_sql(name: str, sql: str) -> str:
    return f"SELECT {quote_literal(name)} AS name, {quote_literal(sql)} AS create_sql"


def resolve_index(snap, schema: str | None, name: str):
    for sc in ((snap.schema_name(schema),) if schema else snap.search_path()):
        idx = snap.index_by_name(sc, name)
        if idx is not None:
            return idx
    raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{f'{schema}.{name}' if schema else name}'")


def relation_by_id(snap, object_id: str):
    for kind in (snap.tables, snap.views, snap.materialized_views):
        if object_id in kind:
            return kind[object_id]
    raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{object_id}'")


def _create_cluster_sql(snap, cluster) -> str:
    """A managed cluster's ``CREATE CLUSTER name (SIZE = ..., REPLICATION FACTOR = n[,
    AVAILABILITY ZONES = (...)])``; an unmanaged one's ``CREATE CLUSTER name REPLICAS
    (...)`` with each replica's options (never a REMOTE replica's TOKEN: SHOW CREATE shows
    no secret)."""
    if cluster.managed:
        opts = [f"SIZE = {quote_literal(cluster.size)}", f"REPLICATION FACTOR = {cluster.replication_factor}"]
        if cluster.availability_zones:
            opts.append("AVAILABILITY ZONES = (" + ", ".join(quote_literal(z) for z in cluster.availability_zones) + ")")
        return f"CREATE CLUSTER {quote_ident(cluster.name)} ({', '.join(opts)})"
    replicas = []
    for r in sorted((r for r in snap.replicas.values() if r.cluster_id == cluster.id), key=lambda r: r.name):
        opts = []
        if r.remote:
            opts.append("REMOTE (" + ", ".join(quote_literal(a) for a in r.remote) + ")")
        if r.size is not None:
            opts.append(f"SIZE {quote_literal(r.size)}")
        if r.availability_zone:
            opts.append(f"AVAILABILITY ZONE {quote_literal(r.availability_zone)}")
        replicas.append(quote_ident(r.name) + (f" ({', '.join(opts)})" if opts else ""))
    return f"CREATE CLUSTER {quote_ident(cluster.name)} REPLICAS ({', '.join(replicas)})"


def _show_objects_query(s: Session, stmt: mz.ShowObjects) -> str:
    """SHOW TABLES/VIEWS/COLUMNS/SCHEMAS/DATABASES/ROLES as queries over mz_catalog (their
    columns as in Materialize's SQL reference)."""
    k = stmt.kind
    if k in _SCHEMA_ITEMS:
        schema = _show_schema(s, stmt.target)
        select, source = _SCHEMA_ITEMS[k]
        base = f"{select} FROM {source} WHERE sc.name = {quote_literal(schema)}"
        return _show_filtered("*", base, "name", stmt, "1")
    if k in ("privileges", "default privileges"):
        return _show_privileges_query(s, stmt)
    if k == "role membership":  # Materialize's columns: role, member, grantor
        base = ("SELECT r.name AS role, m.name AS member, g.name AS grantor FROM mz_catalog.mz_role_members rm"
                " JOIN mz_catalog.mz_roles r ON r.id = rm.role_id JOIN mz_catalog.mz_roles m ON m.id = rm.member"
                " LEFT JOIN mz_catalog.mz_roles g ON g.id = rm.grantor")
        if stmt.target is not None:
            if s.catalog.role_by_name(stmt.target) is None:
                raise SqlError(UNDEFINED_OBJECT, f"unknown role '{stmt.target}'")
            base += f" WHERE m.name = {quote_literal(stmt.target)}"
        return _show_filtered("*", base, "role", stmt, "1, 2")
    if k in ("tables", "views"):
        # FROM schema, else the current schema (Materialize: the first schema of the
        # search_path that exists), so a session in a schema of its own sees its tables
        schema = _show_schema(s, stmt.target)
        table = "mz_tables" if k == "tables" else "mz_views"
        base = f"SELECT name, '' AS comment FROM mz_catalog.{table} WHERE schema = {quote_literal(schema)}"
        col = "name"
    elif k == "columns":
        rel = s.catalog.resolve_relation(None, stmt.target)
        base = ("SELECT name, nullable, type, '' AS comment, position FROM mz_catalog.mz_columns"
                f" WHERE id = {quote_literal(rel.id)}")
        return _show_filtered("name, nullable, type, comment", base, "name", stmt, "position")
    elif k == "schemas":
        base = "SELECT name, '' AS comment FROM mz_catalog.mz_schemas"
        col = "name"
    elif k == "roles":  # the catalog's roles, not the system ones (Materialize's SHOW ROLES)
        base = "SELECT name, '' AS comment FROM mz_catalog.mz_roles WHERE id LIKE 'u%'"
        col = "name"
    else:
        base = "SELECT name, '' AS comment FROM mz_catalog.mz_databases"
        col = "name"
    return _show_filtered("*", base, col, stmt, "1")


#: SHOW <kind> [FROM schema] of the kinds besides tables and views: the query before its
#: schema condition (``sc`` is the schema), with Materialize's columns for each
#: (Materialize's SQL reference, "SHOW OBJECTS", "SHOW SOURCES", ...). There are no
#: sources, sinks, secrets, connections or user-defined types here: those come back empty.
_NONE = "(SELECT NULL::text AS name, NULL::text AS schema_id, NULL::text AS cluster_id WHERE false) x"
_SCHEMA_ITEMS = {
    "objects": ("SELECT o.name, o.type, '' AS comment",
                "mz_catalog.mz_objects o JOIN mz_catalog.mz_schemas sc ON sc.id = o.schema_id"),
    "sources": ("SELECT x.name, x.type, c.name AS cluster, '' AS comment",
                ("mz_catalog.mz_sources x JOIN mz_catalog.mz_schemas sc ON sc.id = x.schema_id"
                " LEFT JOIN mz_catalog.mz_clusters c ON c.id = x.cluster_id")),
    "sinks": ("SELECT x.name, x.type, c.name AS cluster, '' AS comment",
              ("mz_catalog.mz_sinks x JOIN mz_catalog.mz_schemas sc ON sc.id = x.schema_id"
              " LEFT JOIN mz_catalog.mz_clusters c ON c.id = x.cluster_id")),
    "secrets": ("SELECT x.name, '' AS comment", "mz_catalog.mz_secrets x JOIN mz_catalog.mz_schemas sc ON sc.id = x.schema_id"),
    "types": ("SELECT x.name, '' AS comment", f"{_NONE} JOIN mz_catalog.mz_schemas sc ON sc.id = x.schema_id"),
    "connections": ("SELECT x.name, x.type, '' AS comment",
                    "mz_catalog.mz_connections x JOIN mz_catalog.mz_schemas sc ON sc.id = x.schema_id"),
}


#: SHOW [DEFAULT] PRIVILEGES ON <word>: the object type it keeps
_PRIVILEGE_OBJECT_TYPES = {"tables": "table", "types": "type", "secrets": "secret", "connections": "connection",
                           "databases": "database", "schemas": "schema", "clusters": "cluster", "system": "system"}
_PRIVILEGE_NAMES = {letter: name for name, letter in rbac.PRIVILEGE_LETTERS.items()}


def _show_privileges_query(s: Session, stmt: mz.ShowObjects) -> str:
    """SHOW PRIVILEGES [ON types] [FOR role] (grantor, grantee, database, schema, name,
    object_type, privilege_type) and SHOW DEFAULT PRIVILEGES [ON types] [FOR role]
    (object_owner, database, schema, object_type, grantee, privilege_type), one row per
    privilege, as Materialize's SQL reference shows them; FOR keeps what the role holds
    directly, through its roles, or as PUBLIC.

    Raises:
        SqlError 42704 for an unknown role; 42601 for an unknown object type."""
    from catalog.snapshot import MaterializedView, View

    snap = s.catalog
    if stmt.on is not None and stmt.on not in _PRIVILEGE_OBJECT_TYPES:
        raise SqlError(SYNTAX_ERROR, f"unknown object type in SHOW PRIVILEGES ON: {stmt.on.upper()}",
                       hint="One of " + ", ".join(w.upper() for w in _PRIVILEGE_OBJECT_TYPES) + ".")
    holders = None
    if stmt.target is not None:
        role = snap.role_by_name(stmt.target)
        if role is None:
            raise SqlError(UNDEFINED_OBJECT, f"unknown role '{stmt.target}'")
        holders = rbac.memberships(snap, role.id)

    def name(role_id: str) -> str:
        return "PUBLIC" if role_id == rbac.PUBLIC else rbac.role_name(snap, role_id)

    def lit(v) -> str:
        return "NULL::text" if v is None else quote_literal(v)

    rows = []
    if stmt.kind == "privileges":
        columns = ("grantor", "grantee", "database", "schema", "name", "object_type", "privilege_type")
        objects = [(rbac.DATABASE_OBJ, None, rbac.DATABASE, "database")]
        # public (whose id is a system one) and the user's schemas; not the system schemas
        schemas = ["public"] + sorted(sc.name for sc in snap.schemas.values() if not sc.temp)
        objects += [(rbac.schema_ref(snap, sc), None, sc, "schema") for sc in schemas]
        objects += [(rbac.cluster_ref(c), None, c.name, "cluster") for c in sorted(snap.clusters.values(), key=lambda c: c.name)]
        for rel in sorted([*snap.tables.values(), *snap.views.values(), *snap.materialized_views.values()],
                          key=lambda r: (r.schema, r.name)):
            kind = "materialized view" if isinstance(rel, MaterializedView) else "view" if isinstance(rel, View) else "table"
            objects.append((rbac.relation_ref(rel), rel.schema, rel.name, kind))
        objects.append((rbac.SYSTEM, None, None, "system"))
        for obj, schema, objname, kind in objects:
            for a in rbac.acl_of(snap, obj):
                if holders is not None and a.grantee not in holders:
                    continue
                for letter in a.privileges:
                    db = None if kind in ("database", "cluster", "system") else rbac.DATABASE
                    rows.append((name(a.grantor), name(a.grantee), db, schema,
                                 objname, kind, _PRIVILEGE_NAMES.get(letter, letter)))
    else:
        columns = ("object_owner", "database", "schema", "object_type", "grantee", "privilege_type")
        for key, acl in sorted(snap.default_privileges.items()):
            owner, schema_key, kind = rbac.split_default_privileges_key(key)
            schema = None
            if schema_key is not None:
                sc = snap.schemas.get(schema_key.split(":")[1])
                schema = sc.name if sc is not None else schema_key.split(":")[1]
            for a in acl:
                if holders is not None and a.grantee not in holders and owner not in holders:
                    continue
                for letter in a.privileges:
                    rows.append(("PUBLIC" if owner == rbac.PUBLIC else name(owner), rbac.DATABASE, schema,
                                 kind.lower(), name(a.grantee), _PRIVILEGE_NAMES.get(letter, letter)))
    if stmt.on is not None:
        keep = _PRIVILEGE_OBJECT_TYPES[stmt.on]
        i = columns.index("object_type")
        rows = [r for r in rows if r[i] == keep or (keep == "table" and r[i] in ("view", "materialized view"))]
    if rows:
        values = ", ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows)
        base = f"SELECT * FROM (VALUES {values}) AS p({', '.join(columns)})"
    else:
        base = "SELECT " + ", ".join(f"NULL::text AS {c}" for c in columns) + " WHERE false"
    return _show_filtered("*", base, columns[0], stmt, ", ".join(str(i + 1) for i in range(len(columns))))


def _show_schema(s: Session, target: str | None) -> str:
    """The schema a SHOW ... [FROM schema] lists: the one given, else the current schema
    (Materialize: the first schema of the search_path that exists).

    Raises:
        SqlError 3F000 for an unknown schema."""
    snap = s.catalog
    schema = snap.schema_name(target) if target else snap.creation_schema(None)
    if not snap.schema_exists(schema):
        raise SqlError(INVALID_SCHEMA_NAME, f"unknown schema '{target}'")
    return schema


def _show_filtered(columns: str, base: str, col: str, stmt, order: str) -> str:
    """A SHOW statement's query: ``columns`` of ``base``, narrowed by its ``LIKE`` pattern
    (on ``col``) or its ``WHERE`` condition (Materialize's SHOW ... [LIKE | WHERE])."""
    q = f"SELECT {columns} FROM ({base}) AS show"
    if stmt.like is not None:
        q += f" WHERE {col} LIKE {quote_literal(stmt.like)}"
    elif stmt.where is not None:
        q += f" WHERE {stmt.where}"
    return f"{q} ORDER BY {order}"
