"""DROP of every kind of catalog object (``DROP TABLE | VIEW | MATERIALIZED VIEW | INDEX |
SEQUENCE | SCHEMA``): one statement whose removeType picks the family module that builds
its catalog transaction (``tables``, ``views``, ``indexes``, ``sequences``, ``schemas``).
Each statement is checked against the session's transaction, turned into a catalog
transaction by its family's module, run as the session's role
(``sqlfront.sequence.catalog_txn.run``) and applied by the Coordinator main loop (the
only catalog writer). CREATE and the other statements live in their family's module
(``tables``, ``views``, ``comments``, ``indexes``, ``sequences``, ``schemas``,
``clusters``, ``roles``, ``alter``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from pglast import ast
from pglast.enums import DropBehavior, ObjectType

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, SUCCESSFUL_COMPLETION
from sqlfront.sequence import indexes, schemas, sequences, tables, views
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.objects import _lookup
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session


def drop(s: Session, stmt: ast.DropStmt, sql: str, params) -> Result:
    """DROP TABLE / VIEW / MATERIALIZED VIEW / INDEX / SEQUENCE / SCHEMA [IF EXISTS] ...
    [CASCADE]. Raises SqlError 0A000 for other objects."""
    if stmt.removeType == ObjectType.OBJECT_SCHEMA:
        names = [o.sval for o in stmt.objects]
        if stmt.missing_ok:
            _notice_skipped(s, "schema", [n for n in names if s.catalog.schema_by_name(s.catalog.schema_name(n)) is None])
        run(s, schemas.drop_schemas(names, bool(stmt.missing_ok), stmt.behavior == DropBehavior.DROP_CASCADE))
        return Result("DROP SCHEMA")
    names = []
    for obj in stmt.objects:
        parts = [p.sval for p in obj]
        names.append((parts[-2] if len(parts) > 1 else None, parts[-1]))
    kinds = {ObjectType.OBJECT_TABLE: (tables.drop_tables, "DROP TABLE"),
             ObjectType.OBJECT_VIEW: (views.drop_views, "DROP VIEW"),
             ObjectType.OBJECT_MATVIEW: (functools.partial(views.drop_views, materialized=True),
                                         "DROP MATERIALIZED VIEW"),
             ObjectType.OBJECT_INDEX: (indexes.drop_indexes, "DROP INDEX"),
             ObjectType.OBJECT_SEQUENCE: (sequences.drop_sequences, "DROP SEQUENCE")}
    if stmt.removeType not in kinds:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"DROP {stmt.removeType.name.removeprefix('OBJECT_')} is not supported")
    txn, tag = kinds[stmt.removeType]
    if stmt.missing_ok:
        snap = s.catalog
        find = {ObjectType.OBJECT_INDEX: snap.index_by_name,
                ObjectType.OBJECT_SEQUENCE: snap.sequence_by_name}.get(stmt.removeType, snap.relation_by_name)
        _notice_skipped(s, tag.removeprefix("DROP ").lower(),
                        [n for schema, n in names if _lookup(snap, schema, n, find) is None])
    if stmt.removeType == ObjectType.OBJECT_INDEX:
        run(s, txn(names, bool(stmt.missing_ok)))
    else:
        run(s, txn(names, bool(stmt.missing_ok), stmt.behavior == DropBehavior.DROP_CASCADE))
    return Result(tag)


def _notice_skipped(s: Session, kind: str, missing: list[str]) -> None:
    """PostgreSQL's NOTICE for each name a DROP ... IF EXISTS skips (``DROP TABLE IF
    EXISTS nope``: 'table "nope" does not exist, skipping', tablecmds.c
    DropErrorMsgNonExistent), read from the statement's catalog before its transaction
    runs (an object created meanwhile only loses its notice)."""
    for name in missing:
        s.notices.append(SqlError(SUCCESSFUL_COMPLETION, f'{kind} "{name}" does not exist, skipping',
                                  severity="NOTICE"))
