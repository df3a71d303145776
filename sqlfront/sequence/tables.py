"""Tables (PostgreSQL's and Materialize's "CREATE TABLE", "DROP TABLE"): both halves of
each statement (``sequence_<statement>`` checks it against the session and runs the
catalog transaction ``<statement>`` builds on the Coordinator). ALTER TABLE, renames,
CREATE TABLE AS and TRUNCATE: ``sqlfront.sequence.alter``; DROP's dispatch over every
kind: ``sqlfront.sequence.ddl``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pglast import ast

from catalog import durable
from catalog.errors import (
    SqlError, DUPLICATE_TABLE, FEATURE_NOT_SUPPORTED, SERIALIZATION_FAILURE, UNDEFINED_TABLE, WRONG_OBJECT_TYPE,
)
from catalog.snapshot import CatalogSnapshot, MaterializedView, Sequence, Table, View
from planner.ddl import TableDef, plan_table
from sqlfront.parse import quote_literal
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.objects import _creation_schema, _drop_dependents, _free_name, _kind, lookup_each
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session


def create_table(schema: str | None, name: str, tdef: TableDef, if_not_exists: bool, temp: bool = False):
    """CREATE TABLE, with a sequence for each serial/identity column, named
    ``<table>_<column>_seq`` (PostgreSQL's naming; 1, 2, ... appended while taken),
    owned by its column (dropped with the table) and used by its default
    ``nextval('<name>'::regclass)`` (PostgreSQL 8.1.4 "Serial Types").

    Raises (from ``build``): 42P07 for a taken name (a notice-free no-op with IF NOT
    EXISTS); 3F000 for an unknown schema."""
    def build(snap: CatalogSnapshot, ids) -> list:
        s, ops = _creation_schema(snap, ids, schema, temp)
        if snap.name_taken(s, name):
            if if_not_exists:
                return []
            raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        tid = ids.allocate("item")
        shard = ids.allocate_shard()
        columns = list(tdef.columns)
        chosen: set[str] = set()
        for o in tdef.owned:
            col = columns[o.column]
            seq_name = _free_name(snap, s, f"{name}_{col.name}_seq", chosen | {name})
            chosen.add(seq_name)
            opts = {k: v for k, v in o.options.items() if k not in ("owned_by", "restart")}
            ops.append(durable.CreateSequence(Sequence(ids.allocate("item"), s, seq_name, **opts,
                                                       owned_by=(tid, col.name))))
            columns[o.column] = replace(col, default=f"nextval({quote_literal(seq_name)}::regclass)")
        return ops + [durable.CreateTable(Table(tid, s, name, tuple(columns), shard))]

    return build


def drop_tables(names: list[tuple[str | None, str]], if_exists: bool, cascade: bool = False):
    """DROP TABLE: fails with 2BP01 while views read a table, unless CASCADE (which drops
    them, Materialize's and PostgreSQL's rule)."""
    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        dropped = []
        for name, rel in lookup_each(snap, names, if_exists, snap.relation_by_name,
                                     lambda _, n: SqlError(UNDEFINED_TABLE, f'table "{n}" does not exist')):
            if rel.builtin:
                raise SqlError(WRONG_OBJECT_TYPE, f'cannot drop system table "{name}"')
            if isinstance(rel, (View, MaterializedView)) or type(rel) is not Table:
                raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a table',
                               hint=f"Use DROP {_kind(rel).upper()} to remove a {_kind(rel)}.")
            dropped.append(rel)
        ops += _drop_dependents(snap, dropped, cascade, "table")
        for rel in dropped:
            ops.append(durable.DropTable(rel.id))
            ops += [durable.DropIndex(i.id) for i in snap.indexes.values() if i.on_id == rel.id]
            # its serial/identity sequences go with it (PostgreSQL: OWNED BY)
            ops += [durable.DropSequence(q.id) for q in snap.sequences.values()
                    if q.owned_by and q.owned_by[0] == rel.id]
        return ops

    return build


def update_table(old: Table, new: Table):
    """Replace table ``old``'s definition with ``new`` (same id; a new shard when its rows
    were rewritten: the caller sealed the old one).

    Raises (from ``build``): 42P01 when the table is gone; 40001 when its definition
    changed meanwhile."""
    def build(snap: CatalogSnapshot, ids) -> list:
        cur = snap.tables.get(old.id)
        if cur is None:
            raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{old.name}'")
        if cur != old:
            raise SqlError(SERIALIZATION_FAILURE, f'table "{old.name}" was changed by a concurrent statement')
        return [durable.UpdateTable(new)] if new != old else []

    return build



def sequence_create_table(s: Session, stmt: ast.CreateStmt, sql: str, params) -> Result:
    """CREATE [TEMP | TEMPORARY] TABLE. A temporary table goes into the session's
    temporary schema (Materialize's ``mz_temp``), seen by this session only and dropped
    when it ends; ``ON COMMIT`` other than PRESERVE ROWS is refused (0A000)."""
    from pglast.enums import OnCommitAction

    rv = stmt.relation
    temp = rv.relpersistence == "t"
    if stmt.oncommit not in (OnCommitAction.ONCOMMIT_NOOP, OnCommitAction.ONCOMMIT_PRESERVE_ROWS):
        raise SqlError(FEATURE_NOT_SUPPORTED, "ON COMMIT DELETE ROWS / DROP is not supported")
    tdef = plan_table(stmt, s.catalog, s.statement.plan)
    run(s, create_table(rv.schemaname, rv.relname, tdef, bool(stmt.if_not_exists), temp))
    return Result("CREATE TABLE")

