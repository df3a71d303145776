"""Schemas (Materialize's "CREATE SCHEMA", "DROP SCHEMA", "ALTER SCHEMA ... RENAME"):
the catalog transactions of each (DROP and RENAME are dispatched with the other kinds'
by ``sqlfront.sequence.ddl.drop`` and ``sqlfront.sequence.alter.rename``), CREATE
SCHEMA's session half (``sequence_create_schema``), and the drop of a session's
temporary schema when it ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from catalog import durable
from catalog.errors import (
    SqlError, DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_SCHEMA, FEATURE_NOT_SUPPORTED, INSUFFICIENT_PRIVILEGE,
    INVALID_SCHEMA_NAME, RESERVED_NAME,
)
from catalog.snapshot import (
    DATABASE, SYSTEM_SCHEMAS, TEMP_SCHEMA_ALIASES, CatalogSnapshot, Schema, Scope,
)
from sqlfront.rename_refs import rename_schema_references
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.result import Result
from sqlfront.sequence.objects import _drop_dependents, _drop_relation, _id_order, _reads, _replace_definition, _unique

if TYPE_CHECKING:
    from pglast import ast

    from sqlfront.session import Session


def create_schema(name: str, if_not_exists: bool):
    """CREATE SCHEMA [IF NOT EXISTS] (Materialize's "CREATE SCHEMA").

    Raises (from ``build``): 42P06 ``schema 'x' already exists``; 42939 for a name
    starting ``mz_`` or ``pg_`` (reserved: Materialize's "unacceptable schema name")."""
    def build(snap: CatalogSnapshot, ids) -> list:
        if snap.schema_exists(name) or name in TEMP_SCHEMA_ALIASES:
            if if_not_exists:
                return []
            raise SqlError(DUPLICATE_SCHEMA, f"schema '{name}' already exists")
        if name.startswith(("mz_", "pg_")):
            raise SqlError(RESERVED_NAME, f'unacceptable schema name "{name}"',
                           detail='The prefixes "mz_" and "pg_" are reserved for system schemas.')
        return [durable.CreateSchema(Schema(ids.allocate("item"), name))]

    return build


def _objects_in(snap: CatalogSnapshot, schema: str) -> list:
    return [o for objs in (snap.tables, snap.views, snap.materialized_views, snap.sequences, snap.indexes)
            for o in objs.values() if o.schema == schema]


def drop_schemas(names: list[str], if_exists: bool, cascade: bool):
    """DROP SCHEMA [IF EXISTS] ... [CASCADE]: with CASCADE, everything in it goes too
    (and the views elsewhere that read it).

    Raises (from ``build``): 3F000 ``unknown schema 'x'``; 2BP01 for a schema with
    objects without CASCADE (Materialize: "schema 'materialize.x' cannot be dropped
    without CASCADE while it contains objects"); 42501 for a system schema."""
    def build(snap: CatalogSnapshot, ids) -> list:
        ops: list = []
        for name in names:
            sc = snap.schema_by_name(snap.schema_name(name))
            if sc is None:
                if name in SYSTEM_SCHEMAS:
                    raise SqlError(INSUFFICIENT_PRIVILEGE, f"system schema '{name}' cannot be modified")
                if if_exists:
                    continue
                raise SqlError(INVALID_SCHEMA_NAME, f"unknown schema '{name}'")
            objs = _objects_in(snap, sc.name)
            if objs and not cascade:
                raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                               f"schema '{DATABASE}.{name}' cannot be dropped without CASCADE while it contains "
                               "objects")
            ops += drop_contents(snap, sc.name)
            ops.append(durable.DropSchema(sc.id))
        return _unique(ops)

    return build


def drop_contents(snap: CatalogSnapshot, schema: str) -> list:
    """Ops dropping every object in ``schema`` and the views elsewhere that read them."""
    tables = [t for t in snap.tables.values() if t.schema == schema]
    views = [v for v in snap.views.values() if v.schema == schema]
    mvs = [m for m in snap.materialized_views.values() if m.schema == schema]
    ops = _drop_dependents(snap, tables + views + mvs, True, "table")
    for v in reversed(sorted(views + mvs, key=_id_order)):
        ops += _drop_relation(snap, v)
    for t in tables:
        ops.append(durable.DropTable(t.id))
    ops += [durable.DropIndex(i.id) for i in snap.indexes.values()
            if i.schema == schema or i.on_id in {o.id for o in tables + views}]
    ops += [durable.DropSequence(q.id) for q in snap.sequences.values()
            if q.schema == schema or (q.owned_by and q.owned_by[0] in {t.id for t in tables})]
    return ops


def rename_schema(name: str, new_name: str):
    """ALTER SCHEMA name RENAME TO new_name (Materialize's "ALTER SCHEMA ... RENAME"); the
    views and materialized views naming the schema in their queries are rewritten to
    the new name, as for a renamed relation (``_rename_in_readers``).

    Raises (from ``build``): 3F000 unknown schema; 42P06 for a taken name; 42501 for a
    system schema."""
    def build(snap: CatalogSnapshot, ids) -> list:
        sc = snap.schema_by_name(name)
        if sc is None or sc.temp:
            if name in SYSTEM_SCHEMAS:
                raise SqlError(INSUFFICIENT_PRIVILEGE, f"system schema '{name}' cannot be modified")
            raise SqlError(INVALID_SCHEMA_NAME, f"unknown schema '{name}'")
        if snap.schema_exists(new_name):
            raise SqlError(DUPLICATE_SCHEMA, f"schema '{new_name}' already exists")
        # the views reading its objects by the schema's name read them by the new one
        # (their rewritten definitions go first: RenameSchema then moves those in it)
        ops: list = []
        for v in sorted([*snap.views.values(), *snap.materialized_views.values()], key=_id_order):
            if any(sc_ == name for sc_, _ in _reads(v)):
                ops += _replace_definition(v, rename_schema_references(v.sql, name, new_name))
        return ops + [durable.RenameSchema(sc.id, new_name)]

    return build


def sequence_create_schema(s: Session, stmt: ast.CreateSchemaStmt, sql: str, params) -> Result:
    """CREATE SCHEMA [IF NOT EXISTS] name. Raises SqlError 0A000 for AUTHORIZATION and
    for schema elements (CREATE SCHEMA s CREATE TABLE ...)."""
    if stmt.schemaElts or stmt.authrole is not None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE SCHEMA with AUTHORIZATION or schema elements is not supported")
    run(s, create_schema(stmt.schemaname, bool(stmt.if_not_exists)))
    return Result("CREATE SCHEMA")


def drop_temp_schema(s: Session) -> None:
    """The session ended: drop its temporary schema and everything in it, if it made one."""
    if s.catalog.schema_by_name(s.temp_schema) is None:
        return
    # as the session's own work: its temporary schema is the one it sees
    s.env.coordinator.transact(drop_schemas([s.temp_schema], True, True), Scope((), s.temp_schema))
