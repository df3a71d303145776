"""DDL sequencing: CREATE of tables, views and materialized views, COMMENT, and DROP of
every kind (the other families' statements: ``sqlfront.sequence.clusters``,
``.sequences``, ``.indexes``, ``.schemas``). Each statement is checked against the
session's transaction, turned into a catalog transaction by ``sqlfront.sequence_ddl``
(or its family's module), run as the session's role
(``sqlfront.sequence.catalog_txn.run``) and applied by the Coordinator main loop (the
only catalog writer)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import pglast
from pglast import ast
from pglast.enums import DropBehavior, ObjectType

from catalog.errors import (
    SqlError, DUPLICATE_COLUMN, FEATURE_NOT_SUPPORTED, OBJECT_NOT_IN_PREREQUISITE_STATE, SYNTAX_ERROR,
)
from planner.ddl import plan_table
from planner.query import QueryPlanner
from sqlfront import mzparse as mz
from sqlfront import sequence_ddl as build
from sqlfront.parse import syntax_error
from sqlfront.sequence import indexes, schemas, sequences
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session


def create_table(s: Session, stmt: ast.CreateStmt, sql: str, params) -> Result:
    """CREATE [TEMP | TEMPORARY] TABLE. A temporary table goes into the session's
    temporary schema (Materialize's ``mz_temp``), seen by this session only and dropped
    when it ends; ``ON COMMIT`` other than PRESERVE ROWS is refused (0A000)."""
    from pglast.enums import OnCommitAction

    rv = stmt.relation
    temp = rv.relpersistence == "t"
    if stmt.oncommit not in (OnCommitAction.ONCOMMIT_NOOP, OnCommitAction.ONCOMMIT_PRESERVE_ROWS):
        raise SqlError(FEATURE_NOT_SUPPORTED, "ON COMMIT DELETE ROWS / DROP is not supported")
    tdef = plan_table(stmt, s.catalog, s.statement.plan)
    run(s, build.create_table(rv.schemaname, rv.relname, tdef, bool(stmt.if_not_exists), temp))
    return Result("CREATE TABLE")


def comment(s: Session, stmt: ast.CommentStmt, sql: str, params) -> Result:
    """COMMENT ON TABLE | VIEW | SEQUENCE | INDEX | COLUMN | SCHEMA ... IS 'text' | NULL,
    shown by obj_description/col_description and psql's ``\\d+``."""
    obj = stmt.object
    names = [obj.sval] if isinstance(obj, ast.String) else [p.sval for p in obj]
    kind = stmt.objtype.name.removeprefix("OBJECT_")
    run(s, build.comment_on(kind, names, stmt.comment))
    return Result("COMMENT")


def drop(s: Session, stmt: ast.DropStmt, sql: str, params) -> Result:
    """DROP TABLE / VIEW / MATERIALIZED VIEW / INDEX / SEQUENCE / SCHEMA [IF EXISTS] ...
    [CASCADE]. Raises SqlError 0A000 for other objects."""
    if stmt.removeType == ObjectType.OBJECT_SCHEMA:
        run(s, schemas.drop_schemas([o.sval for o in stmt.objects], bool(stmt.missing_ok),
                                  stmt.behavior == DropBehavior.DROP_CASCADE))
        return Result("DROP SCHEMA")
    names = []
    for obj in stmt.objects:
        parts = [p.sval for p in obj]
        names.append((parts[-2] if len(parts) > 1 else None, parts[-1]))
    kinds = {ObjectType.OBJECT_TABLE: (build.drop_tables, "DROP TABLE"),
             ObjectType.OBJECT_VIEW: (build.drop_views, "DROP VIEW"),
             ObjectType.OBJECT_MATVIEW: (functools.partial(build.drop_views, materialized=True),
                                         "DROP MATERIALIZED VIEW"),
             ObjectType.OBJECT_INDEX: (indexes.drop_indexes, "DROP INDEX"),
             ObjectType.OBJECT_SEQUENCE: (sequences.drop_sequences, "DROP SEQUENCE")}
    if stmt.removeType not in kinds:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"DROP {stmt.removeType.name.removeprefix('OBJECT_')} is not supported")
    txn, tag = kinds[stmt.removeType]
    if stmt.removeType == ObjectType.OBJECT_INDEX:
        run(s, txn(names, bool(stmt.missing_ok)))
    else:
        run(s, txn(names, bool(stmt.missing_ok), stmt.behavior == DropBehavior.DROP_CASCADE))
    return Result(tag)


def create_view(s: Session, stmt: ast.ViewStmt | mz.CreateViewIfNotExists, sql: str, params) -> Result:
    """CREATE [OR REPLACE] VIEW [IF NOT EXISTS] [(aliases)] AS query.

    Raises:
        SqlError 0A000 for a temporary view; 42601 for more aliases than columns; 42701
        for a duplicate column name."""
    from pglast.stream import RawStream

    if_not_exists = isinstance(stmt, mz.CreateViewIfNotExists)
    stmt = stmt.view if if_not_exists else stmt
    rv = stmt.view
    if rv.relpersistence == "t":
        raise SqlError(FEATURE_NOT_SUPPORTED, "temporary views are not supported")
    pq = QueryPlanner(s.catalog, ctx=s.statement.plan).plan_raw(stmt.query)
    names = list(pq.names)
    if stmt.aliases:
        aliases = [a.sval for a in stmt.aliases]
        if len(aliases) > len(names):
            raise SqlError(SYNTAX_ERROR, "CREATE VIEW specifies more column names than columns")
        names = aliases + names[len(aliases):]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise SqlError(DUPLICATE_COLUMN, f'column "{dup}" specified more than once')
    from catalog.snapshot import Column

    cols = tuple(Column(n, t) for n, (_, t) in zip(names, pq.plan.columns))
    run(s, build.create_view(rv.schemaname, rv.relname, RawStream()(stmt.query), cols, bool(stmt.replace),
                             if_not_exists))
    return Result("CREATE VIEW")


#: functions whose value depends on when or by whom a query runs: a materialized view
#: cannot keep them current (Materialize: "cannot materialize call to now")
UNMATERIALIZABLE = frozenset({
    "now", "current_timestamp", "localtimestamp", "current_date", "current_time", "localtime", "mz_now",
    "random", "gen_random_uuid", "nextval", "currval", "lastval", "setval", "set_config", "current_setting",
    "current_user", "session_user", "user", "current_role", "pg_backend_pid", "clock_timestamp",
    "statement_timestamp", "transaction_timestamp", "timeofday", "current_schema", "current_schemas",
    "current_database", "current_catalog",
    # read the catalog or the session at plan time (planner.functions.lookup_args): a
    # maintained view would keep the answer of its creation
    "has_table_privilege", "has_any_column_privilege", "has_column_privilege", "has_sequence_privilege",
    "has_schema_privilege", "has_database_privilege", "has_function_privilege", "has_type_privilege",
    "has_cluster_privilege", "pg_has_role", "pg_get_userbyid", "pg_get_indexdef", "pg_my_temp_schema",
    "pg_is_other_temp_schema",
})


def _result_scales(s: Session, plan) -> list[int | None]:
    """The scale of each column of ``plan``'s result as a query prints it: Spark's decimal
    scale of the lowered plan's column (None for a column that is not a decimal), asked of
    a replica of the session's cluster (Spark analyses the plan; nothing runs). All None
    when the plan has no unconstrained numeric column, or the session's cluster has no
    replica here or none becomes healthy (the view then stores them as
    ``catalog.types.UNCONSTRAINED_NUMERIC``).

    Raises: the query's own errors other than 55000 (no healthy replica)."""
    from pyspark.sql import types as T

    from planner.incremental.temporal import without_temporal
    from sqlfront.sequence.peek import peek

    none = [None] * len(plan.columns)
    if not any(t.name == "numeric" and t.precision is None for _, t in plan.columns):
        return none
    cluster = s.catalog.cluster_by_name(s.vars.get("cluster"))
    cc = s.env.compute.cluster_coordinator(cluster.id) if cluster is not None else None
    if cc is None or not cc.replica_ids():  # no replica to wait for (CREATE needs none)
        return none
    try:
        # A temporal filter's mz_now() has no value to lower; filters keep the types.
        schema = peek(s, without_temporal(plan), job=lambda df, replica_id: df.schema)
    except SqlError as e:
        if e.sqlstate != OBJECT_NOT_IN_PREREQUISITE_STATE:
            raise
        return none
    return [f.dataType.scale if isinstance(f.dataType, T.DecimalType) else None for f in schema.fields]


def create_materialized_view(s: Session, stmt: mz.CreateMaterializedView, sql: str, params) -> Result:
    """CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS] name [(cols)] [IN CLUSTER c]
    AS query (Materialize's "CREATE MATERIALIZED VIEW"): the query is planned here (its
    columns, its inputs); the cluster (default: the session's) computes its contents
    into the view's shard and keeps them current (``spark_exec.materializations``).

    Raises:
        SqlError 42601 for a query that is not one SELECT; the planner's errors; 0A000
        for a query that reads system tables or temporary tables, or calls a function
        whose value changes with the time or the session (``UNMATERIALIZABLE``) or a plan
        with no incremental rule (``planner.incremental``); 42601
        for more column names than columns; 42701 for a duplicate column name; the
        catalog's (``sequence_ddl.create_materialized_view``)."""
    from pglast.enums import SQLValueFunctionOp
    from pglast.stream import RawStream

    from catalog.snapshot import Column, Table
    from catalog.types import stored_numeric
    from planner.context import MAINTAINED
    from planner.expr import ast_nodes
    from planner.incremental import incremental_plan
    from planner.plan import relations_read

    try:
        parsed = pglast.parse_sql(stmt.query)
    except pglast.parser.ParseError as e:
        raise syntax_error(e) from None
    if len(parsed) != 1 or not isinstance(parsed[0].stmt, ast.SelectStmt):
        raise SqlError(SYNTAX_ERROR, "CREATE MATERIALIZED VIEW needs one SELECT")
    query = parsed[0].stmt
    for n in ast_nodes(query):
        fname = None
        if isinstance(n, ast.FuncCall):
            fname = n.funcname[-1].sval.lower()
        elif isinstance(n, ast.SQLValueFunction):
            fname = SQLValueFunctionOp(n.op).name.removeprefix("SVFOP_").lower().removesuffix("_n")
        if fname in UNMATERIALIZABLE and fname != "mz_now":  # mz_now(): temporal filters
            raise SqlError(FEATURE_NOT_SUPPORTED, f"cannot materialize call to {fname}")
    snap = s.catalog
    ctx = s.statement.plan.with_mz_now(MAINTAINED)
    planner = QueryPlanner(snap, ctx=ctx)
    pq = planner.plan_raw(query)
    names = list(pq.names)
    if stmt.columns:
        if len(stmt.columns) > len(names):
            raise SqlError(SYNTAX_ERROR, "CREATE MATERIALIZED VIEW specifies more column names than columns")
        names = list(stmt.columns) + names[len(stmt.columns):]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise SqlError(DUPLICATE_COLUMN, f'column "{dup}" specified more than once')
    optimized = QueryPlanner(snap, ctx=ctx).plan_select(query).plan
    reads = relations_read(optimized)
    temps = {sc.name for sc in snap.schemas.values() if sc.temp}
    for r in reads:
        if r.builtin:
            raise SqlError(FEATURE_NOT_SUPPORTED,
                           f'materialized views over system tables are not supported: "{r.name}"')
        if r.schema in temps:
            raise SqlError(FEATURE_NOT_SUPPORTED,
                           f'materialized view "{stmt.name}" cannot depend on temporary table "{r.name}"')
    incremental_plan(optimized)  # 0A000 for a shape with no incremental rule yet
    scales = _result_scales(s, optimized)
    cols = tuple(Column(n, stored_numeric(t, sc)) for n, (_, t), sc in zip(names, pq.plan.columns, scales))
    ids = frozenset(r.id for r in reads if isinstance(r, Table))
    run(s, build.create_materialized_view(stmt.schema, stmt.name, RawStream()(query), cols,
                                          stmt.cluster or s.vars.get("cluster"), ids, stmt.or_replace,
                                          stmt.if_not_exists))
    return Result("CREATE MATERIALIZED VIEW")
