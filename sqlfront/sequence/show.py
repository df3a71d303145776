"""Materialize's SHOW statements (SHOW CLUSTERS, CLUSTER REPLICAS, TABLES, VIEWS,
MATERIALIZED VIEWS, CREATE MATERIALIZED VIEW, COLUMNS, SCHEMAS, DATABASES, INDEXES) as queries over the system catalog, run as
peeks. SHOW of a session variable is ``sqlfront.sequence.vars``'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pglast

from catalog.errors import SqlError
from sqlfront import mzparse as mz
from sqlfront.parse import parse_generated, quote_literal
from sqlfront.sequence.peek import select
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session


def show(s: Session, stmt, sql: str, params) -> Result:
    """Run a SHOW statement; its command tag is SHOW."""
    return select(s, parse_generated(show_query(s, stmt)), None, None, tag="SHOW")


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
            s.env.snapshot.resolve_cluster(stmt.cluster)
            base += " WHERE c.name = " + quote_literal(stmt.cluster)
        col = "replica"
    return _show_filtered("*", base, col, stmt, "1" if isinstance(stmt, mz.ShowClusters) else "1, 2")


def _show_indexes_query(s: Session, stmt: mz.ShowIndexes) -> str:
    """SHOW INDEXES [ON obj] [IN CLUSTER c]: name, on, cluster, key (the key
    expressions as a text array), as in Materialize's SQL reference."""
    snap = s.env.snapshot
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
    snap = s.env.snapshot
    schema = stmt.schema or snap.search_path()[0]
    if not snap.schema_exists(snap.schema_name(schema)):
        raise SqlError("3F000", f"unknown schema '{schema}'")
    base = ("SELECT m.name, c.name AS cluster, '' AS comment"
            " FROM mz_catalog.mz_materialized_views m JOIN mz_catalog.mz_clusters c ON c.id = m.cluster_id"
            " JOIN mz_catalog.mz_schemas sc ON sc.id = m.schema_id"
            f" WHERE sc.name = {quote_literal(snap.schema_name(schema))}")
    if stmt.cluster is not None:
        base += f" AND c.id = {quote_literal(snap.resolve_cluster(stmt.cluster).id)}"
    return _show_filtered("*", base, "name", stmt, "1")


def _show_create_query(s: Session, stmt: mz.ShowCreate) -> str:
    """SHOW CREATE MATERIALIZED VIEW name: its qualified name and the statement that
    makes it (Materialize's ``name``, ``create_sql`` columns).

    Raises:
        SqlError 42P01 for an unknown name; 42809 for another kind of object."""
    from catalog.snapshot import MaterializedView

    rel = s.env.snapshot.resolve_relation(stmt.schema, stmt.name)
    if not isinstance(rel, MaterializedView):
        raise SqlError("42809", f"{stmt.name} is not a {stmt.kind}")
    return ("SELECT 'materialize.' || sc.name || '.' || m.name AS name, m.create_sql"
            " FROM mz_catalog.mz_materialized_views m JOIN mz_catalog.mz_schemas sc ON sc.id = m.schema_id"
            f" WHERE m.id = {quote_literal(rel.id)}")


def _show_objects_query(s: Session, stmt: mz.ShowObjects) -> str:
    """SHOW TABLES/VIEWS/COLUMNS/SCHEMAS/DATABASES/ROLES as queries over mz_catalog (their
    columns as in Materialize's SQL reference)."""
    k = stmt.kind
    if k in ("tables", "views"):
        # FROM schema, else the current schema (Materialize: the first schema of the
        # search_path that exists), so a session in a schema of its own sees its tables
        snap = s.env.snapshot
        schema = snap.schema_name(stmt.target) if stmt.target else snap.creation_schema(None)
        if not snap.schema_exists(schema):
            raise SqlError("3F000", f"unknown schema '{stmt.target}'")
        table = "mz_tables" if k == "tables" else "mz_views"
        base = f"SELECT name, '' AS comment FROM mz_catalog.{table} WHERE schema = {quote_literal(schema)}"
        col = "name"
    elif k == "columns":
        rel = s.env.snapshot.resolve_relation(None, stmt.target)
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


def _show_filtered(columns: str, base: str, col: str, stmt, order: str) -> str:
    """A SHOW statement's query: ``columns`` of ``base``, narrowed by its ``LIKE`` pattern
    (on ``col``) or its ``WHERE`` condition (Materialize's SHOW ... [LIKE | WHERE])."""
    q = f"SELECT {columns} FROM ({base}) AS show"
    if stmt.like is not None:
        q += f" WHERE {col} LIKE {quote_literal(stmt.like)}"
    elif stmt.where is not None:
        q += f" WHERE {stmt.where}"
    return f"{q} ORDER BY {order}"
