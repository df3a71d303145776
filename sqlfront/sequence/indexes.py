"""Indexes (Materialize's "CREATE INDEX", "DROP INDEX"): both halves of each statement
(``sequence_<statement>`` runs the catalog transaction ``<statement>`` builds). An
index is an in-memory arrangement of its object on the replicas of its cluster
(``spark_exec`` keeps it); here it is only a catalog object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pglast
from pglast import ast
from pglast.stream import RawStream

from catalog import durable
from catalog.errors import SqlError, DUPLICATE_TABLE, UNDEFINED_OBJECT, WARNING, WRONG_OBJECT_TYPE
from catalog.snapshot import CatalogSnapshot, Index
from planner.query import QueryPlanner
from sqlfront import mzparse as mz
from sqlfront.parse import quote_ident, syntax_error
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.result import Result
from sqlfront.sequence.objects import lookup_each

if TYPE_CHECKING:
    from sqlfront.session import Session


def create_index(stmt: mz.CreateIndex, session_cluster: str):
    """CREATE [DEFAULT] INDEX (Materialize's "CREATE INDEX"): the index lives in
    ``stmt.cluster``, else the session's cluster. A DEFAULT index keys on every column.
    Unnamed indexes are named as Materialize names them, ``<obj>_primary_idx`` for a
    default index and ``<obj>_<key>_..._idx`` otherwise (``expr`` for a key that is
    not a column), with 1, 2, ... appended while the name is taken.

    Raises (from ``build``): 42704 unknown cluster, 42P01 unknown object, 42809 for a
    system table, 42703 for a key column the object lacks, 42P07 for a taken name."""

    def build(snap: CatalogSnapshot, ids) -> list:
        cluster = snap.resolve_cluster(stmt.cluster or session_cluster)
        rel = snap.resolve_relation(stmt.schema, stmt.on)
        if rel.builtin:
            raise SqlError(WRONG_OBJECT_TYPE, f'cannot create index on system table "{stmt.on}"')
        columns = [c.name for c in rel.columns]
        keys = tuple(columns) if stmt.keys is None else stmt.keys
        if stmt.name is not None:
            name = stmt.name
            if snap.index_by_name(rel.schema, name) is not None or snap.relation_by_name(rel.schema, name):
                if stmt.if_not_exists:
                    return []
                raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        else:
            base = f"{rel.name}_primary_idx" if stmt.keys is None else \
                "_".join([rel.name] + [k if k in columns else "expr" for k in keys] + ["idx"])
            name, n = base, 0
            while snap.index_by_name(rel.schema, name) is not None or snap.relation_by_name(rel.schema, name):
                n += 1
                name = f"{base}{n}"
        return [durable.CreateIndex(Index(ids.allocate("item"), rel.schema, name, rel.id, stmt.definition,
                                          cluster.id, keys))]

    return build


def drop_indexes(names: list[tuple[str | None, str]], if_exists: bool):
    def build(snap: CatalogSnapshot, ids) -> list:
        return [durable.DropIndex(idx.id) for _, idx in lookup_each(
            snap, names, if_exists, snap.index_by_name,
            lambda _, n: SqlError(UNDEFINED_OBJECT, f'index "{n}" does not exist'))]

    return build


def sequence_create_index(s: Session, stmt: ast.IndexStmt | mz.CreateIndex, sql: str, params) -> Result:
    """CREATE INDEX, Materialize's form or PostgreSQL's (the index is an in-memory
    arrangement of every row and column: its USING and INCLUDE change nothing, and
    UNIQUE and WHERE, which would, are ignored with a NOTICE saying so, as PRIMARY KEY and
    UNIQUE constraints are not enforced). Key expressions are checked by planning them
    against the object."""
    if isinstance(stmt, ast.IndexStmt):
        for given, what in ((stmt.unique, "UNIQUE is not enforced"),
                            (stmt.whereClause is not None, "WHERE is ignored: the index keeps every row")):
            if given:
                s.notices.append(SqlError(WARNING, f"CREATE INDEX: {what}", severity="NOTICE",
                                          detail="An index is an in-memory arrangement of its object (Materialize)."))
        rv = stmt.relation
        keys = tuple(e.name if e.name is not None else RawStream()(e.expr) for e in stmt.indexParams)
        stmt = mz.CreateIndex(stmt.idxname, rv.schemaname, rv.relname, keys, None, bool(stmt.if_not_exists),
                              sql.strip().rstrip(";").strip())
    if stmt.keys:
        target = (quote_ident(stmt.schema) + "." if stmt.schema else "") + quote_ident(stmt.on)
        probe = f"SELECT {', '.join(stmt.keys)} FROM {target}"
        try:
            QueryPlanner(s.catalog, ctx=s.statement.plan).plan_select(pglast.parse_sql(probe)[0].stmt)
        except pglast.parser.ParseError as e:
            raise syntax_error(e) from None
    run(s, create_index(stmt, s.vars.get("cluster")))
    return Result("CREATE INDEX")
