"""A client session: its state, and the dispatch of each statement to the module of its
family in ``sqlfront.sequence`` through one table, ``HANDLERS``.

DDL goes to the Coordinator; SELECTs are peeks sequenced in the session's own thread,
against the latest catalog snapshot and the cluster's ClusterCoordinator (Materialize's
frontend peek sequencing); writes go straight to persist.

Transactions follow Materialize's rules: a transaction that has read may not write
(25000), writes are buffered and applied at COMMIT, ROLLBACK discards them, and a
failed statement leaves the transaction aborted (25P02) until it ends. A transaction
that wrote first reads its own buffered writes, as PostgreSQL's do.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import sqlite3
import threading
import time
import uuid
from typing import Callable, Iterator

import psycopg
from pglast import ast

from catalog.errors import (
    query_canceled,
    SqlError, CONNECTION_FAILURE, DISK_FULL, FEATURE_NOT_SUPPORTED, IN_FAILED_SQL_TRANSACTION, STATEMENT_TOO_COMPLEX, SYNTAX_ERROR,
)
from catalog.rbac import BOOTSTRAP_ROLE_ID, is_superuser, role_name
from catalog.snapshot import CatalogSnapshot, Scope, temp_schema_name
from catalog.types import SqlType, TEXT
from planner.query import QueryPlanner
from planner.writes import plan_insert
from sqlfront import activity, introspection
from sqlfront import mzparse as mz
from sqlfront.environment import Environment
from sqlfront.rbac import authorize_statement
from sqlfront.identifiers import truncation_notices
from sqlfront.parse import param_count, parse_generated, parse_one, split_as_of, split_statements
from catalog.pg_catalog import PG_CURSORS, PG_PREPARED_STATEMENTS
from catalog.snapshot import BuiltinTable
from sqlfront.sequence import roles
from sqlfront.sequence import block_ddl
from sqlfront.sequence import alter, clusters, copy, cursors, ddl, explain, prepared, peek, show, subscribe, txn, vars as var_stmts, writes
from sqlfront.sequence import sources
from sqlfront import source_parse as sp
from sqlfront.sequence.result import CopyIn, CopyOut, Result, arrow_rows, rows_to_arrow
from sqlfront.sequence import comments, indexes, schemas, sequences, tables, views
from sqlfront.sequence.sequences import SessionSequences
from sqlfront.statement import StatementContext
from sqlfront.advisory import SessionLocks
from sqlfront.vars import SessionVars

__all__ = ["Session", "Result", "resource_error", "store_error", "CopyIn", "CopyOut", "HANDLERS", "split_statements", "param_count", "parse_one",
           "arrow_rows", "rows_to_arrow"]

log = logging.getLogger(__name__)


def resource_error(e: BaseException) -> SqlError | None:
    """The error PostgreSQL reports when a statement runs out of a resource, for the
    Python exception that says so; None for any other exception.

    - RecursionError (a statement, or an array or expression in it, nested deeper than
      the interpreter's stack allows): 54001 "stack depth limit exceeded", as
      PostgreSQL's check_stack_depth (max_stack_depth);
    - OSError ENOSPC/EDQUOT, and sqlite's "database or disk is full": 53100 disk_full.
    """
    if isinstance(e, RecursionError):
        return SqlError(STATEMENT_TOO_COMPLEX, "stack depth limit exceeded",
                        hint="The statement nests too deeply (expressions, arrays or subqueries); "
                             "write it with less nesting.")
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return SqlError(DISK_FULL, f"could not write to file \"{e.filename or '?'}\": {e.strerror}",
                        hint="Free some space on the server's data directory's disk.")
    if isinstance(e, sqlite3.OperationalError) and "disk is full" in str(e):
        return SqlError(DISK_FULL, f"could not write to the catalog: {e}",
                        hint="Free some space on the server's data directory's disk.")
    return None


def store_error(e: BaseException) -> SqlError | None:
    """The error for a shared store (``--catalog-url``, ``--persist-consensus-url``,
    ``--timestamp-oracle-url``: PostgreSQL) that could not be reached or went away
    mid-call (psycopg.OperationalError): 08006 connection_failure, the SQLSTATE
    PostgreSQL's postgres_fdw and dblink report for a lost remote server; the store's own
    class-53 error (its disk full) as it is. None for any other exception. A write that
    fails so may or may not have committed (a compare-and-set whose answer was lost)."""
    if not isinstance(e, psycopg.OperationalError):
        return None
    said = str(e).strip() or type(e).__name__
    if e.sqlstate and e.sqlstate.startswith("53"):
        return SqlError(e.sqlstate, f"the shared store is out of resources: {said}",
                        hint="Free some space (or memory) on the shared store's PostgreSQL.")
    return SqlError(CONNECTION_FAILURE, f"lost the connection to the shared store: {said}",
                    hint="Its PostgreSQL may be restarting; retry once it is back.")


class Session:
    """Per-connection state. Not thread-safe: one connection drives it."""

    def __init__(self, env: Environment, startup: dict[str, str] | None = None, role_id: str = BOOTSTRAP_ROLE_ID):
        self.env = env
        #: the role the session logged in as (``session_user``; ``Environment.login_role``)
        self.session_role_id = role_id
        #: the role privileges are checked against (``current_user``; SET ROLE changes it)
        self.current_role_id = role_id
        self.vars = SessionVars(startup, env.config.server_vars(), superuser=is_superuser(env.snapshot, role_id))
        #: the transaction's state, its rules in ``sequence.txn`` (``txn.Transaction``)
        self.transaction = txn.Transaction()
        #: (catalog, scope, that catalog scoped) of the last ``catalog``
        self._scoped: tuple | None = None
        #: prepared statements of the extended protocol, name -> (sql, param OIDs);
        #: shared with the pgwire layer so DEALLOCATE can drop them.
        self.prepared: dict[str, tuple[str, list[int]]] = prepared.PreparedStatements()
        #: name -> the PREPARE statement's text, for pg_prepared_statements (from_sql)
        self.prepared_meta: dict[str, str] = {}
        #: set by a CancelRequest: the running peek stops with 57014
        self.cancel_event = threading.Event()
        #: the running statement's deadline and cancel flag, made when it starts
        #: (``begin_statement``) and passed down to every wait of the statement
        self.statement = StatementContext.start(None, self.cancel_event, session=self)
        #: NOTICEs the running statement raised (SqlErrors of severity NOTICE), for the
        #: wire layer to send (``take_notices``)
        self.notices: list[SqlError] = []
        #: the last described SELECT: (AST, params, snapshot, PlannedQuery)
        self._described = None
        #: sql -> ((stmt, snapshot, search_path), InsertTemplate or None) (sequence.writes.planned_insert)
        self._insert_templates: dict = {}
        #: the running statement's ``AS OF`` clause, if any
        self._as_of = None
        #: () -> whether the client has closed its connection (set by the wire layer)
        self.client_gone = lambda: False
        #: pg_terminate_backend ended this session (``terminate``), and what closes its
        #: connection then (set by the wire layer)
        self.terminated = False
        self.on_terminate: Callable[[], None] = lambda: None
        #: the connection as PostgreSQL's 9.26 functions show it (set by the wire layer):
        #: system_user ("method:identity", None without authentication), inet_client_port
        #: and inet_server_port (None without a TCP connection)
        self.system_user: str | None = None
        self.client_port: int | None = None
        self.server_port: int | None = None
        #: the client's text of the running statement (current_query(): a simple Query's
        #: whole string)
        self.query: str | None = None
        #: open cursors by name (DECLARE); they end with the transaction
        self.cursors: dict[str, cursors.Cursor] = {}
        #: nextval/setval and this session's currval/lastval
        self.sequences = SessionSequences(self)
        #: the advisory locks this session holds (pg_advisory_lock: ``sqlfront.advisory``)
        self.advisory = SessionLocks(env.advisory_locks, self, self.notices_append, self.check_waiting)
        #: this session's temporary schema (``mz_temp``), made by its first CREATE TEMP
        #: TABLE and dropped with everything in it when the session ends
        self.temp_schema = temp_schema_name(env.process_id, uuid.uuid4().hex[:12])
        #: this session in mz_sessions (the wire layer adds its connection id and address)
        self.activity = env.activity.connect(self, role_name(env.snapshot, role_id))
        #: the running statement's entry in mz_recent_activity_log (None: the log is off)
        self.execution: activity.Execution | None = None

    # -- entry points -----------------------------------------------------------------

    def execute(self, sql: str, params: list | None = None) -> Iterator[Result]:
        """Run every statement of ``sql`` in order, yielding each Result; stops at the
        first error, which propagates as SqlError."""
        self._described = None  # a plan kept from a Describe belongs to its portal only
        texts = split_statements(sql)
        if len(texts) < 2 or self.in_transaction:
            for text in texts:
                yield self.execute_one(text, params, sql)
            return
        # PostgreSQL 55.2.2.1: the statements of one simple Query are one implicit
        # transaction, unless they hold transaction control themselves.
        self.transaction.begin_implicit()
        try:
            for text in texts:
                yield self.execute_one(text, params, sql)
        except BaseException:
            if self.transaction.implicit:
                txn.rollback(self)
            raise
        if self.transaction.implicit:
            txn.commit(self)

    def read_ts(self) -> int:
        """The timestamp a read of user data runs at: the oracle's read timestamp, taken
        once per statement (``StatementContext.read_ts``: its ``mz_now()`` and its peek
        agree), or in a transaction the one its first read took (Materialize: every read
        of a transaction is at one timestamp)."""
        if not self.in_transaction:
            return self.statement.read_ts.get(self.env.oracle.read_ts)
        t = self.transaction
        if t.ts is None:
            t.ts = self.env.storage.hold_time(self.env.oracle.read_ts())
        return t.ts

    def release_read_ts(self) -> None:
        """Let since move past the transaction's read timestamp (:meth:`read_ts`) again."""
        t = self.transaction
        if t.ts is not None:
            self.env.storage.release_time(t.ts)
            t.ts = None

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (``transaction.active``: the wire layer's
        ReadyForQuery status and the sequencing modules read it)."""
        return self.transaction.active

    @in_transaction.setter
    def in_transaction(self, on: bool) -> None:
        self.transaction.active = on

    @property
    def failed(self) -> bool:
        """Whether the open transaction is aborted (``transaction.failed``)."""
        return self.transaction.failed

    @failed.setter
    def failed(self, on: bool) -> None:
        self.transaction.failed = on

    @property
    def scope(self) -> Scope:
        """Who this session's statements read the catalog as (``catalog.snapshot.Scope``):
        its ``search_path``, its temporary schema, its login and current roles."""
        login = self.session_role_id
        return Scope(self.vars.search_path(), self.temp_schema,
                     None if login is None else (login, self.current_role_id or login))

    @property
    def catalog(self) -> CatalogSnapshot:
        """The catalog this session's statements plan and check against, scoped to it
        (:attr:`scope`): the latest committed one, or, while its transaction block holds
        uncommitted DDL, the block's pending catalog (``sequence.block_ddl``), which
        nobody else sees."""
        b = self.transaction.block_catalog
        base = b.catalog if b is not None else self.env.snapshot
        scope = self.scope
        cached = self._scoped
        if cached is not None and cached[0] is base and cached[1] == scope:
            return cached[2]
        snap = base.scoped(scope)
        self._scoped = (base, scope, snap)
        return snap

    @property
    def as_of(self):
        """The running statement's ``AS OF`` clause, or None."""
        return self._as_of

    @contextlib.contextmanager
    def without_as_of(self):
        """Within: no ``AS OF`` clause (a query planned for a SUBSCRIBE's later times)."""
        saved, self._as_of = self._as_of, None
        try:
            yield
        finally:
            self._as_of = saved

    @property
    def insert_templates(self) -> dict:
        """``sequence.writes.planned_insert``'s cache: sql -> ((stmt, snapshot,
        search_path), InsertTemplate or None)."""
        return self._insert_templates

    def commit_implicit(self) -> None:
        """Commit the implicit transaction of a multi-statement Query now (``txn.commit``):
        a statement of it that must see its earlier writes (a read of a user table, an
        UPDATE or DELETE) runs after them, as in PostgreSQL. Here, not in the sequencing
        modules that need it, because committing closes cursors, which read."""
        txn.commit(self)

    def check_waiting(self) -> None:
        """What a statement that waits for another session checks between its waits.

        Raises:
            SqlError 57014 once the statement is canceled or past its statement_timeout,
            or its client closed the connection (nobody to answer: what it would take
            would be held by a session that is gone)."""
        self.statement.check()
        if self.client_gone():
            raise query_canceled(timeout=False)

    def notices_append(self, notice: SqlError) -> None:
        """Send ``notice`` (a NOTICE or WARNING) to the client with the statement's answer."""
        self.notices.append(notice)

    def take_notices(self) -> list[SqlError]:
        """The NOTICEs and WARNINGs raised since the last call, to send to the client:
        those at or above its ``client_min_messages`` (PostgreSQL 19.11.3)."""
        out, self.notices = self.notices, []
        level = self.vars.get("client_min_messages").lower()
        least = 0 if level.startswith("debug") or level == "log" else _MESSAGE_LEVELS.get(level, 1)
        return [n for n in out if _MESSAGE_LEVELS.get(n.severity.lower(), 1) >= least]

    def cancel(self) -> None:
        """Cancel the statement running now, if any (PostgreSQL 55.2.7 "Canceling Requests
        in Progress"); the Spark job is interrupted through its operation tag."""
        self.cancel_event.set()

    def terminate(self) -> None:
        """End this session's connection (pg_terminate_backend): its running statement
        is canceled and the wire layer closes the connection with FATAL 57P01
        (``on_terminate``); a session without a connection is only canceled."""
        self.terminated = True
        self.cancel()
        self.on_terminate()

    @property
    def started_at(self):
        """pg_postmaster_start_time(), pg_conf_load_time(): when environmentd started."""
        return self.env.started_at

    @property
    def pid(self) -> int:
        """pg_backend_pid(): the connection's cancel-key process id (mz_sessions'
        connection_id); 0 for a session without a connection."""
        return self.activity.connection_id

    def signal(self, pid: int, terminate: bool, timeout_ms: int) -> bool:
        """pg_cancel_backend / pg_terminate_backend of this session's statement
        (``activity.signal_session``), as its current role."""
        return activity.signal_session(self.env.activity, self.catalog, self.current_role_id, pid, terminate,
                                       timeout_ms, self.notices, self.cancel_event.is_set)

    def execute_one(self, sql: str, params: list | None = None, query: str | None = None) -> Result:
        """Run one statement. Raises SqlError (including :func:`resource_error`'s for a
        statement nested too deeply or a full disk); in a transaction block an error
        leaves the transaction aborted (25P02 for what follows, until COMMIT/ROLLBACK).
        The statement is in mz_recent_activity_log from now until its last row is sent.
        ``query``: the client's whole text (a simple Query's) that current_query() shows."""
        self.query = query or sql
        ex = self.execution = self.env.activity.begin(self, self.activity, sql, params)
        try:
            result = self._execute_logged(sql, params)
        except BaseException as e:
            if ex is not None:
                ex.finish_with(e)
            raise
        finally:
            if not self.in_transaction:  # a statement outside a transaction is one (pg_advisory_xact_lock)
                self.advisory.end_transaction()
        if ex is not None:
            activity.track(ex, result)
        return result

    def begin_statement(self) -> StatementContext:
        """Start a statement (an Execute, a Describe, each statement of a simple Query, the
        resumption of a suspended portal: PostgreSQL's statement_timeout starts at each):
        a cancel sent while idle is spent, and its one deadline is its statement_timeout
        from now."""
        self.cancel_event.clear()
        self.statement = StatementContext.start(self.vars.statement_timeout_s(), self.cancel_event,
                                                mz_now=self.read_ts, session=self,
                                                heap_bytes=self.vars.max_query_heap_bytes(),
                                                text=self.vars.text_format())
        return self.statement

    def _execute_logged(self, sql: str, params: list | None) -> Result:
        self.begin_statement()
        t0 = time.perf_counter()
        try:
            return self._execute_one(sql, params, t0)
        except (RecursionError, OSError, sqlite3.Error, psycopg.OperationalError) as e:
            err = resource_error(e) or store_error(e)
            if err is None:
                raise
            if self.in_transaction:
                self.failed = True
            raise err from e
        finally:
            self.env.metrics.phase("server", time.perf_counter() - t0)

    def _execute_one(self, sql: str, params, t0: float) -> Result:
        body, self._as_of = split_as_of(sql)
        stmt = parse_one(body)
        self.notices.extend(truncation_notices(body))  # the scanner's, as PostgreSQL's raises them
        if self._as_of is not None and not isinstance(stmt, (ast.SelectStmt, mz.Subscribe, mz.DeclareSubscribe, mz.CopySubscribe)):
            raise SqlError(SYNTAX_ERROR, "AS OF is only allowed after SELECT and SUBSCRIBE")
        self.env.metrics.phase("parse", time.perf_counter() - t0)
        if self.failed and not txn.ends_transaction(stmt) and not txn.is_rollback_to(stmt):
            raise SqlError(IN_FAILED_SQL_TRANSACTION,
                           "current transaction is aborted, commands ignored until end of transaction block")
        try:
            handler = HANDLERS.get(type(stmt))
            if handler is None:
                raise SqlError(FEATURE_NOT_SUPPORTED, f"{statement_name(stmt)} is not supported")
            authorize_statement(self, stmt)
            return handler(self, stmt, sql, params)
        except SqlError:
            if self.in_transaction:
                self.failed = True
            raise

    def start_copy(self, c: CopyIn) -> copy.CopyLoad:
        """The load of a ``COPY ... FROM STDIN``'s data (``feed``, ``finish``: all rows or
        none; ``close`` however it ends), with the data in the client's encoding. Waits
        for its share of the COPY memory budget (53200 past the budget's wait time)."""
        # it waits for its first share of the COPY budget within the COPY's deadline; then
        # its data streams as long as the client sends it
        first_wait_s = self.statement.remaining()
        self.statement = self.statement.unbounded()
        return copy.CopyLoad(self, c, self.vars.get("client_encoding"), first_wait_s)

    def describe(self, sql: str, n_params: int = 0, given: dict[int, SqlType] | None = None):
        """Describe ``sql`` without executing it.

        Returns ``(columns or None, parameter types)``: the columns it would return
        (None: no rows) and the type of each ``$n``, inferred from its use where the
        client left it unspecified (text when nothing constrains it)."""
        from planner.expr import DescribeParams
        from planner.writes import plan_delete, plan_update

        stmt = parse_one(sql)
        self.begin_statement()
        self.query = sql
        params = DescribeParams(n_params, given)
        cols = None
        if isinstance(stmt, ast.SelectStmt):
            cols = peek.columns(QueryPlanner(self.catalog, params, ctx=self.statement.plan).plan_raw(stmt))
        elif isinstance(stmt, mz.SHOW_QUERIES):
            q = show.show_query(self, stmt)
            cols = peek.columns(QueryPlanner(self.catalog, ctx=self.statement.plan).plan_raw(parse_generated(q)))
        elif isinstance(stmt, mz.SelectWithShows):
            cols = peek.columns(QueryPlanner(self.catalog, params, ctx=self.statement.plan)
                                .plan_raw(show.expand_shows(self, stmt)))
        elif isinstance(stmt, ast.VariableShowStmt):
            cols = var_stmts.show_var_columns(stmt)
        elif isinstance(stmt, (ast.InsertStmt, ast.UpdateStmt, ast.DeleteStmt)):
            plan = {ast.InsertStmt: plan_insert, ast.UpdateStmt: plan_update, ast.DeleteStmt: plan_delete}
            planned = plan[type(stmt)](self.catalog, stmt, params, self.statement.plan)
            cols = list(planned.returning.columns) if planned.returning is not None else None
        elif isinstance(stmt, ast.ExplainStmt):
            cols = [("Optimized Plan", TEXT)]
        elif isinstance(stmt, mz.ExplainPlan):
            cols = [("Timestamp" if stmt.stage == "timestamp" else f"{stmt.stage.capitalize()} Plan", TEXT)]
        elif isinstance(stmt, ast.DeclareCursorStmt) and isinstance(stmt.query, ast.SelectStmt):
            QueryPlanner(self.catalog, params, ctx=self.statement.plan).plan_raw(stmt.query)  # the types of its $n
        elif isinstance(stmt, (ast.FetchStmt, mz.FetchWith)):
            fetch = parse_one(stmt.fetch) if isinstance(stmt, mz.FetchWith) else stmt
            c = self.cursors.get(fetch.portalname) if isinstance(fetch, ast.FetchStmt) else None
            cols = c.columns if c is not None and not fetch.ismove else None
        types = [params.types.get(i + 1, TEXT) for i in range(len(params))]
        return cols, types

    def describe_bound(self, sql: str, params: Callable[[], list]):
        """The columns of ``sql`` with its parameters (``params()``) bound (Describe of a
        portal). A SELECT's plan is kept for the Execute that follows, if the catalog
        stays put and the plan took no read timestamp (``mz_now()``)."""
        stmt = parse_one(sql)
        if isinstance(stmt, (ast.InsertStmt, ast.UpdateStmt, ast.DeleteStmt)) and stmt.returningClause is None:
            # No rows whatever the plan: a driver describes every execute of an INSERT, and
            # planning it here too (or reading its parameters) would add to its cost;
            # Execute raises the planner's errors.
            return None
        params = params()
        self.begin_statement()
        self.query = sql
        if isinstance(stmt, ast.SelectStmt):
            snap = self.catalog
            pq = QueryPlanner(snap, params, row_count=self.env.storage.row_count,
                              ctx=self.statement.plan).plan_select(stmt)
            if not self.statement.read_ts.taken:
                # a plan holding mz_now()'s value is planned again at Execute, which reads
                # at its own timestamp
                self._described = (stmt, tuple(params or ()), snap, pq)
            return peek.columns(pq)
        return self.describe(sql, len(params))[0]

    def plan_select(self, stmt, params, mz_now=None, indexed_views: frozenset = frozenset()):
        """The plan of a SELECT: the one Describe kept for this portal if it still
        applies (same AST, parameters and catalog snapshot), else a fresh one, whose
        ``mz_now()`` is ``mz_now`` (``planner.context.PlanContext``'s; default: the
        statement's, its :meth:`read_ts`), reading the views ``indexed_views`` (ids) from
        their indexes (``PlanContext.indexed_views``)."""
        d, self._described = self._described, None
        snap = self.catalog
        if d is not None and d[0] is stmt and d[1] == tuple(params or ()) and d[2] is snap and not indexed_views:
            return d[3]
        ctx = self.statement.plan if mz_now is None else self.statement.plan.with_mz_now(mz_now)
        if indexed_views:
            ctx = ctx.with_indexed_views(indexed_views)
        return QueryPlanner(snap, params, row_count=self.env.storage.row_count, ctx=ctx).plan_select(stmt)

    def builtin_rows(self, table: BuiltinTable) -> list[tuple]:
        """The rows of a builtin table as this session sees them: its own cursors in
        ``pg_cursors``, the activity log as its role may see it, the environment's rows
        for the rest, over its catalog (``catalog``)."""
        if table.id == PG_CURSORS.id:
            return cursors.pg_cursors_rows(self)
        if table.id == PG_PREPARED_STATEMENTS.id:
            return prepared.pg_prepared_statements_rows(self)
        if table.id in introspection.VIEWER_TABLES:
            return introspection.rows(self.env, table, self.current_role_id, self.catalog)
        return self.env.builtin_rows(table, self.catalog)

    def close(self) -> None:
        """The connection ended: drop what the session holds (buffered writes, cursors
        and their peeks, the transaction's read timestamp). Each step runs even when one
        before it failed (the catalog unreachable for the temporary schema's drop, say):
        a cursor left open would keep its read holds, and the shards' since, forever."""
        steps = (lambda: txn.discard(self, self.transaction.take_pending_writes()),
                 lambda: block_ddl.rollback(self), lambda: cursors.close_all(self), self.release_read_ts,
                 self.advisory.close, lambda: schemas.drop_temp_schema(self),
                 lambda: self.env.activity.disconnect(self.activity))
        for step in steps:
            try:
                step()
            except Exception as e:  # noqa: BLE001 - the next steps still run
                log.warning("closing session %s: %s: %s", self.activity.id, type(e).__name__, e)


#: the levels of ``client_min_messages`` a notice may have (PostgreSQL 19.11.3), in order
_MESSAGE_LEVELS = {"notice": 1, "warning": 2, "error": 3}


#: statement type -> handler(session, stmt, sql, params) -> Result (or CopyIn/CopyOut).
#: A statement whose type is not here is 0A000 "not supported".
HANDLERS: dict[type, Callable] = {
    # peeks
    # a read of a shard another process's ALTER TABLE sealed waits for its catalog, as a write does
    ast.SelectStmt: writes.replanned(peek.select),
    mz.SelectWithShows: show.select_with_shows,
    ast.ExplainStmt: explain.explain_stmt,
    mz.ExplainPlan: explain.explain_plan,
    # SHOW (catalog queries)
    mz.ShowClusters: show.show,
    mz.ShowClusterReplicas: show.show,
    mz.ShowObjects: show.show,
    mz.ShowIndexes: show.show,
    mz.ShowMaterializedViews: show.show,
    mz.ShowCreate: show.show,
    # writes
    ast.InsertStmt: writes.insert,
    ast.UpdateStmt: writes.rewrite,
    ast.DeleteStmt: writes.rewrite,
    ast.CopyStmt: copy.copy,
    # DDL
    mz.CreateCluster: clusters.sequence_create_cluster,
    mz.CreateClusterReplica: clusters.sequence_create_replica,
    mz.DropClusters: clusters.sequence_drop_clusters,
    mz.DropClusterReplicas: clusters.sequence_drop_replicas,
    mz.AlterClusterRename: clusters.sequence_rename_cluster,
    mz.AlterClusterReplicaRename: clusters.sequence_rename_replica,
    mz.AlterClusterSet: clusters.sequence_alter_cluster_set,
    mz.AlterClusterSwap: clusters.sequence_swap_clusters,
    ast.CreateStmt: tables.sequence_create_table,
    ast.ViewStmt: views.sequence_create_view,
    mz.CreateViewIfNotExists: views.sequence_create_view,
    ast.IndexStmt: indexes.sequence_create_index,
    mz.CreateIndex: indexes.sequence_create_index,
    mz.CreateMaterializedView: views.sequence_create_materialized_view,
    ast.RefreshMatViewStmt: views.sequence_refresh_materialized_view,
    ast.DropStmt: ddl.drop,
    ast.CreateSeqStmt: sequences.sequence_create_sequence,
    ast.CreateSchemaStmt: schemas.sequence_create_schema,
    ast.CommentStmt: comments.sequence_comment,
    ast.RenameStmt: alter.rename,
    ast.AlterTableStmt: alter.alter_table,
    ast.TruncateStmt: alter.truncate,
    ast.CreateTableAsStmt: alter.create_table_as,
    ast.AlterSeqStmt: sequences.sequence_alter_sequence,
    # secrets, connections, sources
    sp.CreateSecret: sources.create_secret,
    sp.AlterSecret: sources.alter_secret,
    sp.CreateConnection: sources.create_connection,
    sp.ValidateConnection: sources.validate_connection,
    sp.DropItems: sources.drop_items,
    sp.CreateSource: sources.create_source,
    # roles and privileges
    mz.CreateRole: roles.create_role,
    mz.AlterRole: roles.alter_role,
    ast.DropRoleStmt: roles.drop_role,
    mz.GrantRoles: roles.grant_roles,
    mz.GrantPrivileges: roles.grant_privileges,
    mz.AlterOwner: roles.alter_cluster_owner,
    ast.AlterOwnerStmt: roles.alter_owner,
    mz.AlterDefaultPrivileges: roles.alter_default_privileges,
    ast.ReassignOwnedStmt: roles.reassign_owned,
    ast.DropOwnedStmt: roles.drop_owned,
    # variables, transactions, prepared statements
    ast.VariableSetStmt: var_stmts.set_var,
    ast.VariableShowStmt: var_stmts.show_var,
    ast.TransactionStmt: txn.transaction,
    ast.DeallocateStmt: prepared.deallocate,
    ast.PrepareStmt: prepared.prepare,
    ast.ExecuteStmt: prepared.execute,
    ast.DiscardStmt: prepared.discard,
    # cursors
    ast.DeclareCursorStmt: cursors.declare,
    mz.DeclareSubscribe: cursors.declare_subscribe,
    mz.Subscribe: subscribe.subscribe,
    mz.CopySubscribe: subscribe.copy_subscribe,
    ast.FetchStmt: cursors.fetch,
    mz.FetchWith: cursors.fetch,
    ast.ClosePortalStmt: cursors.close,
}


#: statements whose parser node name does not spell their SQL (pglast's class names)
_STATEMENT_NAMES = {"CreatedbStmt": "CREATE DATABASE", "DropdbStmt": "DROP DATABASE", "AlterSystemStmt": "ALTER SYSTEM",
                    "CreateFunctionStmt": "CREATE FUNCTION", "DoStmt": "DO", "VacuumStmt": "VACUUM",
                    "ListenStmt": "LISTEN", "NotifyStmt": "NOTIFY", "LockStmt": "LOCK", "CreatePLangStmt": "CREATE LANGUAGE",
                    "CreateTrigStmt": "CREATE TRIGGER", "RuleStmt": "CREATE RULE", "CallStmt": "CALL",
                    "CompositeTypeStmt": "CREATE TYPE", "CheckPointStmt": "CHECKPOINT", "CreateEnumStmt": "CREATE TYPE",
                    "CreateRangeStmt": "CREATE TYPE", "DefineStmt": "CREATE"}


def statement_name(stmt) -> str:
    """The SQL a statement node stands for, for messages: ``CREATE DATABASE`` for
    pglast's ``CreatedbStmt``, else its class name split into words (``AlterSystemStmt``
    -> ``ALTER SYSTEM``)."""
    import re

    name = type(stmt).__name__
    if name in _STATEMENT_NAMES:
        return _STATEMENT_NAMES[name]
    return " ".join(re.findall(r"[A-Z][a-z]*", name.removesuffix("Stmt"))).upper()
