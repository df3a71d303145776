"""A client session: parses statements and sequences them.

DDL goes to the Coordinator; SELECTs are peeks sequenced here, in the session's own
thread, against the latest catalog snapshot and the cluster's ClusterCoordinator
(Materialize's frontend peek sequencing); writes go straight to persist.

Transactions follow Materialize's rules: a transaction that has written may not
read (25000), writes are buffered and applied at COMMIT, ROLLBACK discards them, and
a failed statement leaves the transaction aborted (25P02) until it ends.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

import pglast
import pyarrow as pa
from pglast import ast
from pglast.enums import ObjectType, TransactionStmtKind, VariableSetKind

from catalog.errors import (
    SqlError, SYNTAX_ERROR, FEATURE_NOT_SUPPORTED, INVALID_TRANSACTION_STATE, IN_FAILED_SQL_TRANSACTION,
    QUERY_CANCELED, UNDEFINED_COLUMN, READ_ONLY_SQL_TRANSACTION, UNDEFINED_PARAMETER,
)
from catalog.snapshot import Table
from catalog.textio import parse_jsonb
from catalog.types import Interval, SqlType, TEXT, BOOL, arrow_schema
from planner import interpret
from planner.ddl import plan_columns
from planner.query import QueryPlanner
from planner.writes import check_not_null, plan_insert
from spark_exec.load import read_file
from sqlfront import mzparse as mz
from sqlfront import sequence_ddl as ddl
from sqlfront.copy import allowed_copy_from_path
from sqlfront.environment import Environment
from sqlfront.pyworker import INLINE_HEAP_BYTES
from sqlfront.vars import SessionVars, display_name

log = logging.getLogger(__name__)

#: a shard with more parts than this is compacted into one after a write
COMPACT_AFTER_PARTS = 8


@dataclass
class CopyIn:
    """``COPY t FROM STDIN``: the wire layer collects the data, then calls ``finish``."""

    table: Table
    fmt: str
    delimiter: str | None
    null: str | None
    header: bool
    #: positions of the columns the data carries (a COPY column list), None for all
    positions: tuple[int, ...] | None = None
    tag: str = "COPY"
    columns: None = None


@dataclass
class Result:
    """One statement's outcome: a command tag and, for row-returning statements, the
    columns (name, SqlType) and rows (tuples of Python values)."""

    tag: str
    columns: list[tuple[str, SqlType]] | None = None
    rows: list[tuple] = field(default_factory=list)


def split_statements(sql: str) -> list[str]:
    """Split a query string into statements at top-level semicolons, using PostgreSQL's
    scanner so that semicolons in strings, identifiers and comments do not count.

    Raises:
        SqlError 42601 for text the scanner rejects (an unterminated quote, say).
    """
    try:
        tokens = pglast.parser.scan(sql)
    except pglast.parser.ParseError as e:
        raise _syntax_error(e) from None
    out, start, depth = [], 0, 0
    for t in tokens:
        if t.name == "ASCII_40":
            depth += 1
        elif t.name == "ASCII_41":
            depth = max(0, depth - 1)
        elif t.name == "ASCII_59" and depth == 0:
            out.append(sql[start : t.start])
            start = t.end + 1
    out.append(sql[start:])
    return [p for p in out if _has_tokens(p)]


#: the most parameters a statement can have: Parse and Bind count them in an Int16
#: (PostgreSQL 55.7 "Message Formats")
MAX_PARAMS = 65535


def param_count(sql: str) -> int:
    """The highest ``$n`` parameter number in ``sql`` (0 if none), from PostgreSQL's
    scanner: ``$1`` inside a string literal, a quoted identifier or a comment is text,
    not a parameter.

    Raises:
        SqlError 42601 for text the scanner rejects; 42P02 for a parameter number above
        ``MAX_PARAMS`` (one no client could bind).
    """
    try:
        tokens = pglast.parser.scan(sql)
    except pglast.parser.ParseError as e:
        raise _syntax_error(e) from None
    n = max((int(sql[t.start + 1 : t.end + 1]) for t in tokens if t.name == "PARAM"), default=0)
    if n > MAX_PARAMS:
        raise SqlError(UNDEFINED_PARAMETER, f"there is no parameter ${n}")
    return n


def _has_tokens(text: str) -> bool:
    return any(t.name not in ("SQL_COMMENT", "C_COMMENT") for t in pglast.parser.scan(text))


def _syntax_error(e: pglast.parser.ParseError) -> SqlError:
    msg, pos = (e.args + (None,))[:2] if e.args else (str(e), None)
    return SqlError(SYNTAX_ERROR, str(msg), position=(pos + 1) if isinstance(pos, int) else None)


@functools.lru_cache(maxsize=512)
def parse_one(sql: str):
    """Parse one statement: a Materialize statement (``mzparse``) or a PostgreSQL one.

    Cached: drivers send the same text again and again (and Describe, then Execute, of
    each); the planner never changes an AST."""
    stmt = mz.parse_mz(sql)
    if stmt is not None:
        return stmt
    try:
        parsed = pglast.parse_sql(sql)
    except pglast.parser.ParseError as e:
        raise _syntax_error(e) from None
    if len(parsed) != 1:
        raise SqlError(SYNTAX_ERROR, "cannot insert multiple commands into a prepared statement")
    return parsed[0].stmt


class Session:
    """Per-connection state. Not thread-safe: one connection drives it."""

    def __init__(self, env: Environment, startup: dict[str, str] | None = None):
        self.env = env
        self.vars = SessionVars(startup, env.config.server_vars())
        self.in_transaction = False
        self.failed = False
        self._pending_writes: list[tuple[Table, pa.Table]] = []
        #: a transaction that read a user table is read-only (Materialize's rule)
        self._txn_read = False
        #: BEGIN READ ONLY
        self._txn_read_only = False
        #: savepoint name -> how many buffered writes it keeps on ROLLBACK TO
        self._savepoints: list[tuple[str, int]] = []
        #: prepared statements of the extended protocol, name -> (sql, param OIDs);
        #: shared with the pgwire layer so DEALLOCATE can drop them.
        self.prepared: dict[str, tuple[str, list[int]]] = {}
        #: set by a CancelRequest: the running peek stops with 57014
        self.cancel_event = threading.Event()
        #: the last described SELECT: (AST, params, snapshot, PlannedQuery)
        self._described = None

    # -- entry points -----------------------------------------------------------------

    def execute(self, sql: str, params: list | None = None) -> Iterator[Result]:
        """Run every statement of ``sql`` in order, yielding each Result; stops at the
        first error, which propagates as SqlError."""
        self._described = None  # a plan kept from a Describe belongs to its portal only
        for text in split_statements(sql):
            yield self.execute_one(text, params)

    def cancel(self) -> None:
        """Cancel the statement running now, if any (PostgreSQL 55.2.7 "Canceling Requests
        in Progress"); the Spark job is interrupted through its operation tag."""
        self.cancel_event.set()

    def execute_one(self, sql: str, params: list | None = None) -> Result:
        self.cancel_event.clear()
        t0 = time.perf_counter()
        try:
            return self._execute_one(sql, params, t0)
        finally:
            self.env.metrics.phase("server", time.perf_counter() - t0)

    def _execute_one(self, sql: str, params, t0: float) -> Result:
        from planner.expr import begin_statement

        begin_statement()
        stmt = parse_one(sql)
        self.env.metrics.phase("parse", time.perf_counter() - t0)
        if self.failed and not _ends_transaction(stmt) and not _is_rollback_to(stmt):
            raise SqlError(IN_FAILED_SQL_TRANSACTION,
                           "current transaction is aborted, commands ignored until end of transaction block")
        try:
            return self._dispatch(stmt, sql, params)
        except SqlError:
            if self.in_transaction:
                self.failed = True
            raise

    def describe(self, sql: str, n_params: int = 0, given: dict[int, SqlType] | None = None):
        """Describe ``sql`` without executing it.

        Returns ``(columns or None, parameter types)``: the columns it would return
        (None: no rows) and the type of each ``$n``, inferred from its use where the
        client left it unspecified (text when nothing constrains it)."""
        from planner.expr import DescribeParams, describing
        from planner.writes import plan_delete, plan_insert, plan_update

        stmt = parse_one(sql)
        params = DescribeParams(n_params, given)
        cols = None
        with describing(params):
            if isinstance(stmt, ast.SelectStmt):
                cols = self._columns(QueryPlanner(self.env.snapshot, params).plan_raw(stmt))
            elif isinstance(stmt, (mz.ShowClusters, mz.ShowClusterReplicas, mz.ShowObjects, mz.ShowIndexes)):
                q = self._show_query(stmt)
                cols = self._columns(QueryPlanner(self.env.snapshot).plan_raw(_parse_generated(q)))
            elif isinstance(stmt, ast.VariableShowStmt):
                cols = [("name", TEXT), ("setting", TEXT)] if stmt.name.lower() == "all" else [(stmt.name.lower(), TEXT)]
            elif isinstance(stmt, ast.InsertStmt):
                plan_insert(self.env.snapshot, stmt, params)
            elif isinstance(stmt, ast.UpdateStmt):
                plan_update(self.env.snapshot, stmt, params)
            elif isinstance(stmt, ast.DeleteStmt):
                plan_delete(self.env.snapshot, stmt, params)
            elif isinstance(stmt, ast.ExplainStmt):
                cols = [("Optimized Plan", TEXT)]
            elif isinstance(stmt, mz.ExplainPlan):
                cols = [(f"{stmt.stage.capitalize()} Plan", TEXT)]
        types = [params.types.get(i + 1, TEXT) for i in range(len(params))]
        return cols, types

    def describe_bound(self, sql: str, params: list):
        """The columns of ``sql`` with its parameters bound (Describe of a portal). A
        SELECT's plan is kept for the Execute that follows, if the catalog stays put."""
        stmt = parse_one(sql)
        if isinstance(stmt, ast.SelectStmt):
            snap = self.env.snapshot
            pq = QueryPlanner(snap, params, row_count=self.env.row_count).plan_select(stmt)
            self._described = (stmt, tuple(params or ()), snap, pq)
            return self._columns(pq)
        return self.describe(sql, len(params))[0]

    def _plan_select(self, stmt, params):
        d, self._described = self._described, None
        snap = self.env.snapshot
        if d is not None and d[0] is stmt and d[1] == tuple(params or ()) and d[2] is snap:
            return d[3]
        return QueryPlanner(snap, params, row_count=self.env.row_count).plan_select(stmt)

    # -- dispatch ---------------------------------------------------------------------

    def _dispatch(self, stmt, sql: str, params) -> Result:
        if isinstance(stmt, mz.CreateCluster):
            self._ddl(ddl.create_cluster(stmt, self.env.config.sizes, self.env.config.availability_zones))
            return Result("CREATE CLUSTER")
        if isinstance(stmt, mz.CreateClusterReplica):
            self._ddl(ddl.create_replica(stmt, self.env.config.sizes, self.env.config.availability_zones))
            return Result("CREATE CLUSTER REPLICA")
        if isinstance(stmt, mz.DropClusters):
            self._ddl(ddl.drop_clusters(stmt))
            return Result("DROP CLUSTER")
        if isinstance(stmt, mz.DropClusterReplicas):
            self._ddl(ddl.drop_replicas(stmt))
            return Result("DROP CLUSTER REPLICA")
        if isinstance(stmt, mz.AlterClusterRename):
            self._ddl(ddl.rename_cluster(stmt))
            return Result("ALTER CLUSTER")
        if isinstance(stmt, (mz.ShowClusters, mz.ShowClusterReplicas, mz.ShowObjects, mz.ShowIndexes)):
            return self._select(_parse_generated(self._show_query(stmt)), None, tag="SHOW")
        if isinstance(stmt, ast.SelectStmt):
            return self._select(stmt, params)
        if isinstance(stmt, ast.InsertStmt):
            return self._insert(stmt, params)
        if isinstance(stmt, ast.CreateStmt):
            return self._create_table(stmt)
        if isinstance(stmt, ast.ViewStmt):
            return self._create_view(stmt)
        if isinstance(stmt, (ast.IndexStmt, mz.CreateIndex)):
            return self._create_index(stmt, sql)
        if isinstance(stmt, (ast.UpdateStmt, ast.DeleteStmt)):
            return self._rewrite(stmt, params)
        if isinstance(stmt, ast.ExplainStmt):
            return self._explain(stmt.query, "optimized", params)
        if isinstance(stmt, mz.ExplainPlan):
            return self._explain(parse_one(stmt.query), stmt.stage, params)
        if isinstance(stmt, ast.DropStmt):
            return self._drop(stmt)
        if isinstance(stmt, ast.CopyStmt):
            return self._copy(stmt)
        if isinstance(stmt, ast.VariableSetStmt):
            return self._set(stmt)
        if isinstance(stmt, ast.VariableShowStmt):
            return self._show_var(stmt)
        if isinstance(stmt, ast.TransactionStmt):
            return self._transaction(stmt)
        if isinstance(stmt, ast.DeallocateStmt):
            if stmt.name is None:
                self.prepared.clear()
            elif self.prepared.pop(stmt.name, None) is None:
                raise SqlError("26000", f'prepared statement "{stmt.name}" does not exist')
            return Result("DEALLOCATE ALL" if stmt.name is None else "DEALLOCATE")
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{type(stmt).__name__} is not supported")

    def _ddl(self, build) -> None:
        """Run a catalog transaction. In a transaction block, DDL takes effect at once (it is
        not undone by ROLLBACK) and may not follow reads or writes (Materialize's
        transactions are read-only, insert-only or DDL-only)."""
        if self._pending_writes:
            raise SqlError(INVALID_TRANSACTION_STATE, "DDL cannot follow writes in a transaction")
        if self._txn_read:
            raise SqlError(INVALID_TRANSACTION_STATE, "DDL cannot follow reads in a transaction")
        if self._txn_read_only:
            raise SqlError(READ_ONLY_SQL_TRANSACTION, "cannot execute DDL in a read-only transaction")
        self.env.coordinator.transact(build)

    # -- SELECT (peeks) ---------------------------------------------------------------

    @staticmethod
    def _columns(pq) -> list[tuple[str, SqlType]]:
        return [(n, t) for n, (_, t) in zip(pq.names, pq.plan.columns)]

    def _select(self, stmt: ast.SelectStmt, params, tag: str = "SELECT") -> Result:
        if self._pending_writes:
            raise SqlError(INVALID_TRANSACTION_STATE, "transaction in write-only mode")
        t = time.perf_counter()
        pq = self._plan_select(stmt, params)
        t1 = time.perf_counter()
        self.env.metrics.phase("plan", t1 - t)
        if self.in_transaction and not interpret.is_fast_path(pq.plan):
            # Materialize: a transaction that reads user data is read-only. Catalog reads
            # (which drivers and ORMs issue before writing) do not count.
            self._txn_read = True
        rows = self.peek(pq.plan)
        self.env.metrics.phase("execute", time.perf_counter() - t1)
        return Result(f"SELECT {len(rows)}", self._columns(pq), rows)

    def peek(self, plan, pinned: dict | None = None) -> list[tuple]:
        """Run a plan: in Python when it reads no user table (fast path), else on a
        replica of the session's cluster at the oracle's read timestamp. ``pinned`` maps
        shard ids to a ShardState to read instead of the current one."""
        start = time.perf_counter()
        cluster_name = self.vars.get("cluster")
        outcome = "error"
        try:
            rows = self._peek(plan, pinned)
            outcome = "success"
            return rows
        except SqlError as e:
            outcome = "canceled" if e.sqlstate == QUERY_CANCELED else "error"
            raise
        finally:
            self.env.metrics.observe_peek(cluster_name, outcome, time.perf_counter() - start)

    def _peek(self, plan, pinned: dict | None) -> list[tuple]:
        if interpret.is_fast_path(plan):
            return self._evaluate(plan)
        snap = self.env.snapshot
        cluster = snap.resolve_cluster(self.vars.get("cluster"))
        cc = self.env.cluster_coordinator(cluster.id)
        if cc is None:
            raise SqlError("55000", f"cluster '{cluster.name}' is not running")
        as_of = self.env.oracle.read_ts()
        persist = self.env.persist

        def scan(table: Table) -> list[str]:
            if pinned and table.shard_id in pinned:
                return list(persist.snapshot_of(table.shard_id, pinned[table.shard_id]).urls)
            return list(persist.snapshot(table.shard_id, as_of).urls)

        result = cc.peek(plan, scan, self.env.builtin_rows, self.env.config.replica_wait_s,
                         self.vars.statement_timeout_s(), self.cancel_event)
        rows = arrow_rows(result)
        jsonb = [i for i, (_, t) in enumerate(plan.columns) if t.name == "jsonb"]
        if jsonb and rows:
            # Spark's JSON text (to_json of a VARIANT) is compact, with its own key order.
            rows = [tuple(parse_jsonb(v) if i in jsonb and v is not None else v for i, v in enumerate(r))
                    for r in rows]
        return rows

    def _evaluate(self, plan) -> list[tuple]:
        """Evaluate a fast-path plan in Python, under the session's statement_timeout,
        cancel flag and max_query_heap_size: here while it stays small, else again in a
        worker process (``sqlfront.pyworker``) so that big work does not stall the
        other sessions."""
        timeout = self.vars.statement_timeout_s()
        deadline = time.monotonic() + timeout if timeout else None
        budget = self.vars.max_query_heap_bytes()
        limits = interpret.Limits(deadline=deadline, cancelled=self.cancel_event.is_set, max_heap_bytes=budget,
                                  outgrow_bytes=INLINE_HEAP_BYTES)
        try:
            return interpret.run(plan, self.env.builtin_rows, limits)
        except interpret.Outgrown:
            pass
        tables = {t.id: list(self.env.builtin_rows(t)) for t in interpret.builtins_read(plan)}
        return self.env.python_workers.run(plan, tables, budget, deadline, self.cancel_event)

    def _show_query(self, stmt) -> str:
        if isinstance(stmt, mz.ShowObjects):
            return self._show_objects_query(stmt)
        if isinstance(stmt, mz.ShowIndexes):
            return self._show_indexes_query(stmt)
        if isinstance(stmt, mz.ShowClusters):
            base = "SELECT name FROM mz_catalog.mz_clusters"
            col = "name"
        else:
            base = (
                "SELECT c.name AS cluster, r.name AS replica, r.size AS size, r.status = 'healthy' AS ready"
                " FROM mz_catalog.mz_cluster_replicas r JOIN mz_catalog.mz_clusters c ON r.cluster_id = c.id"
            )
            if stmt.cluster is not None:
                self.env.snapshot.resolve_cluster(stmt.cluster)
                base += " WHERE c.name = " + _quote_literal(stmt.cluster)
            col = "replica"
        return _show_filtered("*", base, col, stmt, "1" if isinstance(stmt, mz.ShowClusters) else "1, 2")

    def _show_indexes_query(self, stmt: mz.ShowIndexes) -> str:
        """SHOW INDEXES [ON obj] [IN CLUSTER c]: name, on, cluster, key (the key
        expressions as a text array), as in Materialize's SQL reference."""
        snap = self.env.snapshot
        base = ("SELECT i.name, o.name AS on, c.name AS cluster, k.key"
                " FROM mz_catalog.mz_indexes i JOIN mz_catalog.mz_objects o ON o.id = i.on_id"
                " JOIN mz_catalog.mz_clusters c ON c.id = i.cluster_id"
                " JOIN (SELECT ic.index_id, array_agg(coalesce(col.name, ic.on_expression) ORDER BY ic.index_position)"
                " AS key FROM mz_catalog.mz_index_columns ic JOIN mz_catalog.mz_indexes ii ON ii.id = ic.index_id"
                " LEFT JOIN mz_catalog.mz_columns col ON col.id = ii.on_id AND col.position = ic.on_position"
                " GROUP BY ic.index_id) k ON k.index_id = i.id")
        conds = []
        if stmt.on is not None:
            conds.append(f"i.on_id = {_quote_literal(snap.resolve_relation(None, stmt.on).id)}")
        if stmt.cluster is not None:
            conds.append(f"c.id = {_quote_literal(snap.resolve_cluster(stmt.cluster).id)}")
        if conds:
            base += " WHERE " + " AND ".join(conds)
        if stmt.where is not None:
            # Materialize's column "on" is a reserved word to PostgreSQL's grammar.
            where = "".join(('"on"' if t.name == "ON" else stmt.where[t.start:t.end + 1]) + " "
                            for t in pglast.parser.scan(stmt.where))
            stmt = mz.ShowIndexes(stmt.on, stmt.cluster, stmt.like, where)
        return _show_filtered("*", base, "name", stmt, "1")

    def _show_objects_query(self, stmt: mz.ShowObjects) -> str:
        """SHOW TABLES/VIEWS/COLUMNS/SCHEMAS/DATABASES as queries over mz_catalog (their
        columns as in Materialize's SQL reference)."""
        k = stmt.kind
        if k in ("tables", "views"):
            schema = stmt.target or "public"
            if schema not in ("public", "mz_catalog", "mz_internal", "pg_catalog", "information_schema"):
                raise SqlError("3F000", f"unknown schema '{schema}'")
            table = "mz_tables" if k == "tables" else "mz_views"
            base = f"SELECT name, '' AS comment FROM mz_catalog.{table} WHERE schema = {_quote_literal(schema)}"
            col = "name"
        elif k == "columns":
            rel = self.env.snapshot.resolve_relation(None, stmt.target)
            base = ("SELECT name, nullable, type, '' AS comment, position FROM mz_catalog.mz_columns"
                    f" WHERE id = {_quote_literal(rel.id)}")
            return _show_filtered("name, nullable, type, comment", base, "name", stmt, "position")
        elif k == "schemas":
            base = "SELECT name, '' AS comment FROM mz_catalog.mz_schemas"
            col = "name"
        else:
            base = "SELECT name, '' AS comment FROM mz_catalog.mz_databases"
            col = "name"
        return _show_filtered("*", base, col, stmt, "1")

    # -- writes -------------------------------------------------------------------------

    def _insert(self, stmt: ast.InsertStmt, params) -> Result:
        snap = self.env.snapshot
        pi = plan_insert(snap, stmt, params)
        if pi.rows is not None:
            rows = list(pi.rows)
        else:
            rows = self.peek(pi.query)
            for r in rows:
                check_not_null(pi.table, r)
        self._write(pi.table, rows_to_arrow(pi.table, rows))
        return Result(f"INSERT 0 {len(rows)}")

    def _write(self, table: Table, data: pa.Table) -> None:
        if self._txn_read_only:
            raise SqlError(READ_ONLY_SQL_TRANSACTION, "cannot execute INSERT in a read-only transaction")
        if self.in_transaction:
            if self._txn_read:
                raise SqlError(INVALID_TRANSACTION_STATE, "transaction in read-only mode")
            self._pending_writes.append((table, data))
            return
        self._append(table, data)

    def _append(self, table: Table, data: pa.Table) -> None:
        oracle = self.env.oracle
        ts = oracle.write_ts()
        try:
            state = self.env.persist.append(table.shard_id, data, ts)
        finally:
            oracle.apply_write(ts)
        self.env.note_write(table)
        if len(state.parts) > COMPACT_AFTER_PARTS:
            self.env.persist.compact(table.shard_id, COMPACT_AFTER_PARTS)

    def _copy(self, stmt: ast.CopyStmt):
        opts = _copy_options(stmt)
        if not stmt.is_from:
            if stmt.filename is not None:
                raise SqlError(FEATURE_NOT_SUPPORTED, "COPY TO a file is not supported; use COPY ... TO STDOUT")
            if opts.get("format", "text") not in ("text", "csv", "binary"):
                raise SqlError(FEATURE_NOT_SUPPORTED, f"COPY format \"{opts['format']}\" not recognized")
            if stmt.query is not None:
                select = stmt.query
            else:
                select = pglast.parse_sql(f"SELECT * FROM {_quote_ident(stmt.relation.relname)}")[0].stmt
            r = self._select(select, None)
            return CopyOut(r.columns, r.rows, opts.get("format", "text"), opts.get("delimiter"), opts.get("null"),
                           opts.get("header", "false") in ("true", "on", "1"))
        snap = self.env.snapshot
        rel = snap.resolve_relation(stmt.relation.schemaname, stmt.relation.relname)
        if rel.builtin:
            raise SqlError("42809", f'cannot copy to system table "{rel.name}"')
        fmt = opts.get("format", "text").lower()
        positions = None
        if stmt.attlist:
            if stmt.filename is not None:
                raise SqlError(FEATURE_NOT_SUPPORTED, "COPY FROM a file with a column list is not supported")
            names = [c.name for c in rel.columns]
            positions = []
            for a in stmt.attlist:
                if a.sval not in names:
                    raise SqlError(UNDEFINED_COLUMN, f'column "{a.sval}" of relation "{rel.name}" does not exist')
                if names.index(a.sval) in positions:
                    raise SqlError("42701", f'column "{a.sval}" specified more than once')
                positions.append(names.index(a.sval))
            positions = tuple(positions)
        if stmt.filename is None:
            if fmt not in ("text", "csv", "binary"):
                raise SqlError(FEATURE_NOT_SUPPORTED, f"COPY FROM STDIN supports text, csv and binary, not {fmt}")
            return CopyIn(rel, fmt, opts.get("delimiter"), opts.get("null"),
                          opts.get("header", "false").lower() in ("true", "on", "1"), positions)
        if fmt == "text":
            fmt, delimiter = "csv", opts.get("delimiter", "\t")
            null = opts.get("null", "\\N")
        else:
            delimiter, null = opts.get("delimiter", ","), opts.get("null")
        path = allowed_copy_from_path(stmt.filename, self.env.config.copy_from_dirs)
        data = read_file(rel, path, fmt, header=opts.get("header", "false").lower() in ("true", "on", "1"),
                         delimiter=delimiter, null=null)
        self._write(rel, data)
        return Result(f"COPY {data.num_rows}")

    def finish_copy(self, c: CopyIn, data: bytes) -> Result:
        """Parse the data of ``COPY ... FROM STDIN`` and write it: all rows or none."""
        from sqlfront.copy import parse_copy

        rows = parse_copy(c.table, data, c.fmt, c.delimiter, c.null, c.header, c.positions)
        for r in rows:
            check_not_null(c.table, r)
        self._write(c.table, rows_to_arrow(c.table, rows))
        return Result(f"COPY {len(rows)}")

    # -- tables -----------------------------------------------------------------------

    def _create_table(self, stmt: ast.CreateStmt) -> Result:
        rv = stmt.relation
        if rv.relpersistence == "t":
            raise SqlError(FEATURE_NOT_SUPPORTED, "temporary tables are not supported")
        cols = plan_columns(stmt)
        self._ddl(ddl.create_table(rv.schemaname, rv.relname, cols, bool(stmt.if_not_exists)))
        return Result("CREATE TABLE")

    def _drop(self, stmt: ast.DropStmt) -> Result:
        names = []
        for obj in stmt.objects:
            parts = [p.sval for p in obj]
            names.append((parts[-2] if len(parts) > 1 else None, parts[-1]))
        kinds = {ObjectType.OBJECT_TABLE: (ddl.drop_tables, "DROP TABLE"),
                 ObjectType.OBJECT_VIEW: (ddl.drop_views, "DROP VIEW"),
                 ObjectType.OBJECT_INDEX: (ddl.drop_indexes, "DROP INDEX")}
        if stmt.removeType not in kinds:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"DROP {stmt.removeType.name.removeprefix('OBJECT_')} is not supported")
        build, tag = kinds[stmt.removeType]
        self._ddl(build(names, bool(stmt.missing_ok)))
        return Result(tag)

    def _create_view(self, stmt: ast.ViewStmt) -> Result:
        from pglast.stream import RawStream

        rv = stmt.view
        if rv.relpersistence == "t":
            raise SqlError(FEATURE_NOT_SUPPORTED, "temporary views are not supported")
        pq = QueryPlanner(self.env.snapshot).plan_raw(stmt.query)
        names = list(pq.names)
        if stmt.aliases:
            aliases = [a.sval for a in stmt.aliases]
            if len(aliases) > len(names):
                raise SqlError("42601", "CREATE VIEW specifies more column names than columns")
            names = aliases + names[len(aliases):]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise SqlError("42701", f'column "{dup}" specified more than once')
        from catalog.snapshot import Column

        cols = tuple(Column(n, t) for n, (_, t) in zip(names, pq.plan.columns))
        self._ddl(ddl.create_view(rv.schemaname, rv.relname, RawStream()(stmt.query), cols, bool(stmt.replace)))
        return Result("CREATE VIEW")

    def _create_index(self, stmt: ast.IndexStmt | mz.CreateIndex, sql: str) -> Result:
        """CREATE INDEX, Materialize's form or PostgreSQL's (whose UNIQUE, USING, INCLUDE
        and WHERE are accepted and ignored: the index is an in-memory arrangement). Key
        expressions are checked by planning them against the object."""
        from pglast.stream import RawStream

        if isinstance(stmt, ast.IndexStmt):
            rv = stmt.relation
            keys = tuple(e.name if e.name is not None else RawStream()(e.expr) for e in stmt.indexParams)
            stmt = mz.CreateIndex(stmt.idxname, rv.schemaname, rv.relname, keys, None, bool(stmt.if_not_exists),
                                  sql.strip().rstrip(";").strip())
        if stmt.keys:
            target = (_quote_ident(stmt.schema) + "." if stmt.schema else "") + _quote_ident(stmt.on)
            probe = f"SELECT {', '.join(stmt.keys)} FROM {target}"
            try:
                QueryPlanner(self.env.snapshot).plan_select(pglast.parse_sql(probe)[0].stmt)
            except pglast.parser.ParseError as e:
                raise _syntax_error(e) from None
        self._ddl(ddl.create_index(stmt, self.vars.get("cluster")))
        return Result("CREATE INDEX")

    def _rewrite(self, stmt, params) -> Result:
        """UPDATE/DELETE: compute the table's new contents on the cluster, then replace the
        shard's parts by compare-and-set against the state that was read (retrying if a
        concurrent write got in between)."""
        from planner.writes import plan_delete, plan_update

        if self.in_transaction:
            raise SqlError(FEATURE_NOT_SUPPORTED, "UPDATE and DELETE are not supported inside a transaction yet")
        is_delete = isinstance(stmt, ast.DeleteStmt)
        for _ in range(10):
            snap = self.env.snapshot
            pr = plan_delete(snap, stmt, params) if is_delete else plan_update(snap, stmt, params)
            state = self.env.persist.state(pr.table.shard_id)
            rows = self.peek(pr.plan, pinned={pr.table.shard_id: state})
            affected = sum(1 for r in rows if r[-1])
            if is_delete:
                kept = [r[:-1] for r in rows if not r[-1]]
            else:
                kept = [r[:-1] for r in rows]
                for r in kept:
                    check_not_null(pr.table, r)
            if affected == 0:
                return Result(("DELETE " if is_delete else "UPDATE ") + "0")
            oracle = self.env.oracle
            ts = oracle.write_ts()
            try:
                done = self.env.persist.replace(pr.table.shard_id, rows_to_arrow(pr.table, kept), ts, state.seqno)
            finally:
                oracle.apply_write(ts)
            if done is not None:
                return Result(("DELETE " if is_delete else "UPDATE ") + str(affected))
        raise SqlError("40001", "could not serialize access due to concurrent update")

    def _explain(self, q, stage: str, params) -> Result:
        """EXPLAIN of a SELECT at ``stage`` (raw, decorrelated or optimized): one row per
        line of the plan (Materialize's ``EXPLAIN ... PLAN FOR``; plain EXPLAIN is the
        optimized plan)."""
        from planner.explain import explain
        from planner.optimize import DECORRELATION, optimize

        if not isinstance(q, ast.SelectStmt):
            raise SqlError(FEATURE_NOT_SUPPORTED, "EXPLAIN supports SELECT only")
        planner = QueryPlanner(self.env.snapshot, params, row_count=self.env.row_count)
        plan = planner.plan_raw(q).plan
        if stage == "decorrelated":
            plan = optimize(plan, rules=DECORRELATION)
        elif stage == "optimized":
            plan = optimize(plan, self.env.row_count)
        return Result("EXPLAIN", [(f"{stage.capitalize()} Plan", TEXT)], [(line,) for line in explain(plan)])

    # -- variables and transactions ----------------------------------------------------

    def _set(self, stmt: ast.VariableSetStmt) -> Result:
        k = stmt.kind
        if k == VariableSetKind.VAR_SET_MULTI or (stmt.name or "").startswith("transaction"):
            return Result("SET")
        if k == VariableSetKind.VAR_RESET_ALL:
            for name in list(self.vars.values):
                try:
                    self.vars.set(name, None)
                except SqlError:
                    pass
            return Result("RESET")
        name = stmt.name.lower()
        if k in (VariableSetKind.VAR_RESET, VariableSetKind.VAR_SET_DEFAULT):
            self.vars.set(name, None)
            return Result("RESET" if k == VariableSetKind.VAR_RESET else "SET")
        values = []
        for a in stmt.args or ():
            if isinstance(a, ast.A_Const):
                v = a.val
                values.append(v.sval if isinstance(v, ast.String) else str(getattr(v, "ival", None) if isinstance(v, ast.Integer) else v.fval if isinstance(v, ast.Float) else v.boolval))
            elif isinstance(a, ast.TypeCast) and isinstance(a.arg, ast.A_Const):
                values.append(a.arg.val.sval)
            else:
                raise SqlError(SYNTAX_ERROR, f"invalid value for parameter \"{name}\"")
        if stmt.is_local:
            pass  # SET LOCAL lasts for the transaction; treated like SET
        self.vars.set(name, ", ".join(values))
        return Result("SET")

    def _show_var(self, stmt: ast.VariableShowStmt) -> Result:
        name = stmt.name.lower()
        if name == "all":
            rows = [(display_name(k), v) for k, v in sorted(self.vars.values.items())]
            return Result("SHOW", [("name", TEXT), ("setting", TEXT)], rows)
        return Result("SHOW", [(name, TEXT)], [(self.vars.get(name),)])

    def _transaction(self, stmt: ast.TransactionStmt) -> Result:
        k = stmt.kind
        K = TransactionStmtKind
        if k in (K.TRANS_STMT_BEGIN, K.TRANS_STMT_START):
            if self.in_transaction:
                # PostgreSQL warns and stays in the transaction (WARNING 25001).
                return Result("BEGIN")
            self.in_transaction = True
            for o in stmt.options or ():
                if o.defname == "transaction_read_only":
                    self._txn_read_only = bool(o.arg.val.ival)
            return Result("BEGIN")
        if k in (K.TRANS_STMT_SAVEPOINT, K.TRANS_STMT_RELEASE, K.TRANS_STMT_ROLLBACK_TO):
            return self._savepoint(k, stmt.savepoint_name)
        if k == TransactionStmtKind.TRANS_STMT_COMMIT:
            tag = "ROLLBACK" if self.failed else "COMMIT"
            writes, self._pending_writes = self._pending_writes, []
            failed = self.failed
            self._end_transaction()
            if not failed:
                for table, data in writes:
                    self._append(table, data)
            return Result(tag)
        if k == TransactionStmtKind.TRANS_STMT_ROLLBACK:
            self._pending_writes = []
            self._end_transaction()
            return Result("ROLLBACK")
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{k.name} is not supported")

    def _end_transaction(self) -> None:
        self.in_transaction = self.failed = self._txn_read = self._txn_read_only = False
        self._savepoints = []

    def _savepoint(self, k, name: str) -> Result:
        """SAVEPOINT, RELEASE [SAVEPOINT], ROLLBACK TO [SAVEPOINT] (PostgreSQL's SAVEPOINT
        reference page): writes are buffered until COMMIT, so a savepoint is a position in
        the buffer. Raises 25P01 outside a transaction block, 3B001 for an unknown name."""
        K = TransactionStmtKind
        if not self.in_transaction:
            raise SqlError("25P01", f"{'SAVEPOINT' if k == K.TRANS_STMT_SAVEPOINT else 'ROLLBACK TO SAVEPOINT' if k == K.TRANS_STMT_ROLLBACK_TO else 'RELEASE SAVEPOINT'} can only be used in transaction blocks")
        if k == K.TRANS_STMT_SAVEPOINT:
            self._savepoints.append((name, len(self._pending_writes)))
            return Result("SAVEPOINT")
        idx = next((i for i in range(len(self._savepoints) - 1, -1, -1) if self._savepoints[i][0] == name), None)
        if idx is None:
            self.failed = True
            raise SqlError("3B001", f'savepoint "{name}" does not exist')
        if k == K.TRANS_STMT_RELEASE:
            del self._savepoints[idx:]
            return Result("RELEASE")
        del self._savepoints[idx + 1 :]
        del self._pending_writes[self._savepoints[idx][1] :]
        self.failed = False
        return Result("ROLLBACK")

    def close(self) -> None:
        self._pending_writes = []


@dataclass
class CopyOut:
    """``COPY (query) TO STDOUT``: rows the wire layer sends as CopyData."""

    columns: list
    rows: list
    #: text, csv or binary, with the options that shape them
    fmt: str = "text"
    delimiter: str | None = None
    null: str | None = None
    header: bool = False
    tag: str = "COPY"


def _copy_options(stmt: ast.CopyStmt) -> dict[str, str]:
    opts = {}
    for o in stmt.options or ():
        v = o.arg
        if isinstance(v, ast.String):
            v = v.sval
        elif isinstance(v, ast.Integer):
            v = str(v.ival)
        elif isinstance(v, ast.Boolean):
            v = "true" if v.boolval else "false"
        elif v is None:
            v = "true"
        opts[o.defname.lower()] = str(v).lower() if o.defname.lower() in ("format", "header") else str(v)
    return opts


def _show_filtered(columns: str, base: str, col: str, stmt, order: str) -> str:
    """A SHOW statement's query: ``columns`` of ``base``, narrowed by its ``LIKE`` pattern
    (on ``col``) or its ``WHERE`` condition (Materialize's SHOW ... [LIKE | WHERE])."""
    q = f"SELECT {columns} FROM ({base}) AS show"
    if stmt.like is not None:
        q += f" WHERE {col} LIKE {_quote_literal(stmt.like)}"
    elif stmt.where is not None:
        q += f" WHERE {stmt.where}"
    return f"{q} ORDER BY {order}"


def _parse_generated(sql: str):
    """Parse a query built from a SHOW statement (whose LIKE/WHERE text is the user's).

    Raises:
        SqlError 42601 for a syntax error in the user's part."""
    try:
        return pglast.parse_sql(sql)[0].stmt
    except pglast.parser.ParseError as e:
        raise SqlError(SYNTAX_ERROR, f"syntax error in SHOW filter: {e.args[0] if e.args else e}") from None


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _is_rollback_to(stmt) -> bool:
    return isinstance(stmt, ast.TransactionStmt) and stmt.kind == TransactionStmtKind.TRANS_STMT_ROLLBACK_TO


def _ends_transaction(stmt) -> bool:
    return isinstance(stmt, ast.TransactionStmt) and stmt.kind in (
        TransactionStmtKind.TRANS_STMT_COMMIT, TransactionStmtKind.TRANS_STMT_ROLLBACK)


def _quote_literal(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def arrow_rows(t: pa.Table) -> list[tuple]:
    """Rows of an Arrow table as tuples of Python values."""
    if t.num_columns == 0:
        return [()] * t.num_rows
    cols = [_from_arrow(c) for c in t.columns]
    return list(zip(*cols))


def _to_storage(v: Interval | None):
    # An interval is stored as a (months, days, micros) struct (catalog.types).
    return None if v is None else {"months": v.months, "days": v.days, "micros": v.micros}


def _from_arrow(c: pa.ChunkedArray) -> list:
    values = c.to_pylist()
    if pa.types.is_interval(c.type):
        return [None if v is None else Interval(v.months, v.days, v.nanoseconds // 1000) for v in values]
    if pa.types.is_struct(c.type) and [f.name for f in c.type] == ["months", "days", "micros"]:
        return [None if v is None else Interval(v["months"], v["days"], v["micros"]) for v in values]
    return values


def rows_to_arrow(table: Table, rows: list[tuple]) -> pa.Table:
    """Rows in ``table``'s column order as an Arrow table in its storage schema."""
    schema = arrow_schema([c.name for c in table.columns], [c.type for c in table.columns])
    arrays = [pa.array([_to_storage(r[i]) for r in rows] if c.type.name == "interval" else [r[i] for r in rows],
                       type=f.type) for i, (f, c) in enumerate(zip(schema, table.columns))]
    return pa.Table.from_arrays(arrays, schema=schema)
