"""Views and materialized views (Materialize's "CREATE VIEW", "CREATE MATERIALIZED VIEW",
"DROP VIEW", "DROP MATERIALIZED VIEW"): both halves of each statement
(``sequence_<statement>`` plans it in the session, ``<statement>`` builds the catalog
transaction the Coordinator runs). A materialized view's contents are computed and kept
current by its cluster (``spark_exec.materializations``); here it is a catalog object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pglast
from pglast import ast

from catalog import durable
from catalog.errors import (
    SqlError, DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_TABLE, FEATURE_NOT_SUPPORTED,
    OBJECT_NOT_IN_PREREQUISITE_STATE, SERIALIZATION_FAILURE, SYNTAX_ERROR, UNDEFINED_TABLE, WRONG_OBJECT_TYPE,
)
from catalog.snapshot import CatalogSnapshot, Column, MaterializedView, View
from planner.query import QueryPlanner
from sqlfront import mzparse as mz
from sqlfront.parse import quote_ident, syntax_error
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.objects import (
    _creation_schema, _drop_dependents, _drop_relation, _kind, _lookup, _unique, lookup_each, output_names,
)
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session


def create_view(schema: str | None, name: str, sql: str, columns: tuple[Column, ...], or_replace: bool,
                if_not_exists: bool = False, temp: bool = False):
    """CREATE [OR REPLACE] [TEMP | TEMPORARY] VIEW [IF NOT EXISTS] (Materialize's "CREATE
    VIEW"; IF NOT EXISTS: a taken name is a no-op). A temporary view goes into the
    session's temporary schema (``mz_temp``, made now if need be), seen by this session
    only and dropped when it ends (``schemas.drop_temp_schema``).

    Raises (from ``build``): 42P07 for a taken name; 42P16 for a temporary view in a
    schema that is not the temporary one (``CatalogSnapshot.creation_schema``)."""
    def build(snap: CatalogSnapshot, ids) -> list:
        s, ops = _creation_schema(snap, ids, schema, temp)
        existing = snap.relation_by_name(s, name)
        if (existing is not None or snap.name_taken(s, name)) and if_not_exists:
            return []
        if existing is None and snap.name_taken(s, name):
            raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        if existing is not None:
            if not (or_replace and isinstance(existing, View)):
                raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
            ops.append(durable.DropView(existing.id))
        return ops + [durable.CreateView(View(ids.allocate("item"), s, name, sql, columns))]

    return build


def create_materialized_view(schema: str | None, name: str, sql: str, columns: tuple[Column, ...], cluster: str,
                             reads: frozenset[str], or_replace: bool, if_not_exists: bool):
    """CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS] (Materialize's "CREATE
    MATERIALIZED VIEW"): a new object with a new shard, maintained by ``cluster``.
    ``reads`` are the ids of the relations its query reads (planned by the caller); OR
    REPLACE drops the one it replaces (and its indexes), which nothing may depend on.

    Raises (from ``build``): 42704 ``unknown cluster 'c'``; 42P07 for a taken name (a
    no-op with IF NOT EXISTS); 2BP01 when the replaced view has dependents or the new
    query reads it; 40001 when an input was dropped since the query was planned."""
    def build(snap: CatalogSnapshot, ids) -> list:
        c = snap.resolve_cluster(cluster)
        s, ops = _creation_schema(snap, ids, schema)
        if ops or s == snap.scope.temp_schema:
            raise SqlError(FEATURE_NOT_SUPPORTED, "materialized views cannot be temporary")
        existing = snap.relation_by_name(s, name)
        if existing is None and snap.name_taken(s, name) or existing is not None and not or_replace:
            if if_not_exists:
                return []
            raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        if existing is not None:
            if not isinstance(existing, MaterializedView):
                raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
            if existing.id in reads:
                raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                               f'cannot replace materialized view "{name}": the new definition reads it')
            ops += _drop_dependents(snap, [existing], False, "materialized view")
            ops += _drop_relation(snap, existing)
        live = set(snap.tables) | set(snap.materialized_views)
        gone = [r for r in reads if r not in live]
        if gone:
            raise SqlError(SERIALIZATION_FAILURE, f"an input of materialized view \"{name}\" was dropped concurrently")
        mid = ids.allocate("item")
        shard = ids.allocate_shard()
        return ops + [durable.CreateMaterializedView(MaterializedView(mid, s, name, columns, shard, sql, c.id))]

    return build


def drop_views(names: list[tuple[str | None, str]], if_exists: bool, cascade: bool = False,
               materialized: bool = False):
    """DROP VIEW, or with ``materialized`` DROP MATERIALIZED VIEW (Materialize's "DROP
    MATERIALIZED VIEW": its shard goes with it). What reads it needs CASCADE.

    Raises (from ``build``): 42P01 for an unknown name (nothing with IF EXISTS); 42809
    for an object of the other kind; 2BP01 for dependents without CASCADE."""
    cls, kind = (MaterializedView, "materialized view") if materialized else (View, "view")

    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        dropped = []
        for name, rel in lookup_each(snap, names, if_exists, snap.relation_by_name,
                                     lambda _, n: SqlError(UNDEFINED_TABLE, f'{kind} "{n}" does not exist')):
            if not isinstance(rel, cls):
                hint = (f"Use DROP {_kind(rel).upper()} to remove a {_kind(rel)}."
                        if not rel.builtin else None)
                raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a {kind}', hint=hint)
            dropped.append(rel)
        ops += _drop_dependents(snap, dropped, cascade, kind)
        for rel in dropped:
            ops += _drop_relation(snap, rel)
        return _unique(ops)

    return build



def sequence_create_view(s: Session, stmt: ast.ViewStmt | mz.CreateViewIfNotExists, sql: str, params) -> Result:
    """CREATE [OR REPLACE] [TEMP | TEMPORARY] VIEW [IF NOT EXISTS] [(aliases)] AS query.

    Raises:
        SqlError 42601 for more aliases than columns; 42701 for a duplicate column name;
        the catalog's (:func:`create_view`)."""
    from pglast.stream import RawStream

    if_not_exists = isinstance(stmt, mz.CreateViewIfNotExists)
    stmt = stmt.view if if_not_exists else stmt
    rv = stmt.view
    pq = QueryPlanner(s.catalog, ctx=s.statement.plan).plan_raw(stmt.query)
    names = output_names(list(pq.names), [a.sval for a in stmt.aliases or ()],
                         "CREATE VIEW specifies more column names than columns")
    cols = tuple(Column(n, t) for n, (_, t) in zip(names, pq.plan.columns))
    run(s, create_view(rv.schemaname, rv.relname, RawStream()(stmt.query), cols, bool(stmt.replace), if_not_exists,
                       rv.relpersistence == "t"))
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


def sequence_create_materialized_view(s: Session, stmt: mz.CreateMaterializedView, sql: str, params) -> Result:
    """CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS] name [(cols)] [IN CLUSTER c]
    AS query (Materialize's "CREATE MATERIALIZED VIEW"): the query is planned here (its
    columns, its inputs); the cluster (default: the session's) computes its contents
    into the view's shard and keeps them current (``spark_exec.materializations``).

    Raises:
        SqlError 42601 for a query that is not one SELECT; the planner's errors; 0A000
        for a query that reads system tables or temporary tables or views, or calls a function
        whose value changes with the time or the session (``UNMATERIALIZABLE``) or a plan
        with no incremental rule (``planner.incremental``); 42601
        for more column names than columns; 42701 for a duplicate column name; the
        catalog's (:func:`create_materialized_view`)."""
    from pglast.enums import SQLValueFunctionOp
    from pglast.stream import RawStream

    from catalog.snapshot import Table
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
    temps = {sc.name for sc in snap.schemas.values() if sc.temp}
    for n in ast_nodes(query):  # a temporary view (inlined: not among the reads below)
        v = _lookup(snap, n.schemaname, n.relname, snap.relation_by_name) if isinstance(n, ast.RangeVar) else None
        if isinstance(v, View) and v.schema in temps:
            raise SqlError(FEATURE_NOT_SUPPORTED,
                           f'materialized view "{stmt.name}" cannot depend on temporary view "{v.name}"')
    ctx = s.statement.plan.with_mz_now(MAINTAINED)
    planner = QueryPlanner(snap, ctx=ctx)
    pq = planner.plan_raw(query)
    names = output_names(list(pq.names), list(stmt.columns or ()),
                         "CREATE MATERIALIZED VIEW specifies more column names than columns")
    optimized = QueryPlanner(snap, ctx=ctx).plan_select(query).plan
    reads = relations_read(optimized)
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
    run(s, create_materialized_view(stmt.schema, stmt.name, RawStream()(query), cols,
                                    stmt.cluster or s.vars.get("cluster"), ids, stmt.or_replace, stmt.if_not_exists))
    return Result("CREATE MATERIALIZED VIEW")


def sequence_refresh_materialized_view(s: Session, stmt: ast.RefreshMatViewStmt, sql: str, params) -> Result:
    """REFRESH MATERIALIZED VIEW [CONCURRENTLY] v (PostgreSQL's statement; Materialize has
    none, its views being always current). A view here is maintained as its inputs
    change, so refreshing it is waiting until it reflects every write acknowledged
    before the statement began: its shard's upper past the timestamp oracle's read
    timestamp (``peek.await_materialized``, asking its cluster to get there). Readers
    are never blocked, so CONCURRENTLY changes nothing and needs no unique index.

    Raises:
        SqlError 42P01 unknown view; 42809 for another kind of relation; 0A000 WITH NO
        DATA (a maintained view cannot be left unpopulated); 42501 for a role that does
        not own it (``sqlfront.rbac``); 57014 at statement_timeout or cancel; the error
        of the view's query while its cluster cannot compute it."""
    from sqlfront.sequence.peek import await_materialized

    rv = stmt.relation
    rel = s.catalog.resolve_relation(rv.schemaname, rv.relname)
    if not isinstance(rel, MaterializedView):
        raise SqlError(WRONG_OBJECT_TYPE, f'"{rv.relname}" is not a materialized view')
    if stmt.skipData:
        raise SqlError(FEATURE_NOT_SUPPORTED, "REFRESH MATERIALIZED VIEW ... WITH NO DATA is not supported",
                       detail="A materialized view is maintained as its inputs change; it cannot be left unpopulated.")
    name = f"{quote_ident(rel.schema)}.{quote_ident(rel.name)}"
    plan = QueryPlanner(s.catalog, ctx=s.statement.plan).plan_select(pglast.parse_sql(f"SELECT * FROM {name}")[0].stmt).plan
    await_materialized(s, plan, s.env.oracle.read_ts())
    return Result("REFRESH MATERIALIZED VIEW")
