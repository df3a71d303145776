"""SELECT and EXPLAIN: peeks (Materialize's frontend peek sequencing).

A plan that reads no user table runs in Python (the fast path: here, or in a worker
process once it outgrows ``INLINE_HEAP_BYTES``); any other runs on a replica of the
session's cluster at the timestamp oracle's read timestamp, through that cluster's
ClusterCoordinator. The Coordinator main loop is never involved.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pglast import ast

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, INVALID_TRANSACTION_STATE, QUERY_CANCELED
from catalog.snapshot import Table
from catalog.textio import parse_jsonb
from catalog.types import SqlType, TEXT
from persist import ShardSnapshot, SinceError
from planner import interpret
from planner.query import QueryPlanner
from sqlfront.parse import parse_one
from sqlfront.pyworker import INLINE_HEAP_BYTES
from sqlfront.sequence.result import Result, arrow_rows

if TYPE_CHECKING:
    from sqlfront.session import Session


def columns(pq) -> list[tuple[str, SqlType]]:
    """A planned query's output columns as (name, SqlType)."""
    return [(n, t) for n, (_, t) in zip(pq.names, pq.plan.columns)]


def select(s: Session, stmt: ast.SelectStmt, sql: str | None, params, tag: str = "SELECT") -> Result:
    """Plan and run a SELECT.

    Raises:
        SqlError 25000 in a transaction that has written (Materialize's write-only
        transactions); the planner's and the peek's errors."""
    t = time.perf_counter()
    as_of = None
    if s._as_of is not None:
        from planner.expr import set_query_timestamp
        from sqlfront.sequence import as_of as as_of_clause

        from sqlfront.parse import split_as_of

        as_of = as_of_clause.evaluate(s, s._as_of)
        as_of_clause.check_query(split_as_of(sql or "")[0])
        set_query_timestamp(lambda: as_of)
    pq = s._plan_select(stmt, params)
    if as_of is not None:
        as_of = as_of_clause.choose(s, s._as_of, as_of, pq.plan)
    if s._pending_writes and not interpret.is_fast_path(pq.plan):
        if not s._implicit:
            raise SqlError(INVALID_TRANSACTION_STATE, "transaction in write-only mode")
        from sqlfront.sequence.txn import commit

        commit(s)  # an implicit transaction shows a script its own writes (see txn)
    t1 = time.perf_counter()
    s.env.metrics.phase("plan", t1 - t)
    if s.in_transaction and not interpret.is_fast_path(pq.plan):
        # Materialize: a transaction that reads user data is read-only. Catalog reads
        # (which drivers and ORMs issue before writing) do not count.
        s._txn_read = True
    rows = peek(s, pq.plan, as_of=as_of)
    s.env.metrics.phase("execute", time.perf_counter() - t1)
    return Result(f"SELECT {len(rows)}", columns(pq), rows)


def peek(s: Session, plan, as_of: int | None = None, job=None):
    """Run a plan: in Python when it reads no user table (fast path), else on a
    replica of the session's cluster at ``as_of`` (default: the session's read
    timestamp), each table read under a persist read hold released when the job ends.
    ``job`` (see ``ClusterCoordinator.peek``) replaces collecting the rows.

    Raises:
        SqlError 40001-like "could not find a valid timestamp" when ``as_of`` is below a
        table's since; the replica's errors."""
    start = time.perf_counter()
    cluster_name = s.vars.get("cluster")
    outcome = "error"
    try:
        rows = _peek(s, plan, as_of, job)
        outcome = "success"
        return rows
    except SqlError as e:
        outcome = "canceled" if e.sqlstate == QUERY_CANCELED else "error"
        raise
    finally:
        s.env.metrics.observe_peek(cluster_name, outcome, time.perf_counter() - start)


def _peek(s: Session, plan, as_of: int | None, job):
    if interpret.is_fast_path(plan) and job is None:
        return evaluate(s, plan)
    snap = s.env.snapshot
    cluster = snap.resolve_cluster(s.vars.get("cluster"))
    cc = s.env.cluster_coordinator(cluster.id)
    if cc is None:
        raise SqlError("55000", f"cluster '{cluster.name}' is not running")
    as_of = s.read_ts() if as_of is None else as_of
    persist = s.env.persist
    holds = []

    def scan(table: Table) -> ShardSnapshot:
        try:
            snapshot, hold = persist.read(table.shard_id, as_of)
        except SinceError as e:
            raise SqlError("22000", "could not find a valid timestamp for the query",
                           detail=f"Timestamp ({as_of}) is not valid for all inputs: "
                                  f"[{table.name}] has since {e.since}") from None
        holds.append(hold)
        return snapshot

    try:
        result = cc.peek(plan, scan, s.env.builtin_rows, s.env.config.replica_wait_s,
                         s.vars.statement_timeout_s(), s.cancel_event, job)
    finally:
        for h in holds:
            persist.release(h)
    if job is not None:
        return result
    rows = arrow_rows(result)
    jsonb = [i for i, (_, t) in enumerate(plan.columns) if t.name == "jsonb"]
    if jsonb and rows:
        # Spark's JSON text (to_json of a VARIANT) is compact, with its own key order.
        rows = [tuple(parse_jsonb(v) if i in jsonb and v is not None else v for i, v in enumerate(r))
                for r in rows]
    return rows


def evaluate(s: Session, plan) -> list[tuple]:
    """Evaluate a fast-path plan in Python, under the session's statement_timeout,
    cancel flag and max_query_heap_size: here while it stays small, else again in a
    worker process (``sqlfront.pyworker``) so that big work does not stall the
    other sessions."""
    timeout = s.vars.statement_timeout_s()
    deadline = time.monotonic() + timeout if timeout else None
    budget = s.vars.max_query_heap_bytes()
    limits = interpret.Limits(deadline=deadline, cancelled=s.cancel_event.is_set, max_heap_bytes=budget,
                              outgrow_bytes=INLINE_HEAP_BYTES)
    try:
        return interpret.run(plan, s.env.builtin_rows, limits)
    except interpret.Outgrown:
        pass
    tables = {t.id: list(s.env.builtin_rows(t)) for t in interpret.builtins_read(plan)}
    return s.env.python_workers.run(plan, tables, budget, deadline, s.cancel_event)


def explain_stmt(s: Session, stmt, sql: str, params) -> Result:
    """PostgreSQL's ``EXPLAIN query``: the optimized plan."""
    return explain(s, stmt.query, "optimized", params)


def explain_plan(s: Session, stmt, sql: str, params) -> Result:
    """Materialize's ``EXPLAIN [RAW | DECORRELATED | OPTIMIZED] PLAN FOR query``."""
    return explain(s, parse_one(stmt.query), stmt.stage, params)


def explain(s: Session, q, stage: str, params) -> Result:
    """EXPLAIN of a SELECT at ``stage`` (raw, decorrelated or optimized): one row per
    line of the plan (Materialize's ``EXPLAIN ... PLAN FOR``; plain EXPLAIN is the
    optimized plan).

    Raises:
        SqlError 0A000 for anything but a SELECT."""
    from planner.explain import explain as explain_lines
    from planner.optimize import DECORRELATION, optimize

    if not isinstance(q, ast.SelectStmt):
        raise SqlError(FEATURE_NOT_SUPPORTED, "EXPLAIN supports SELECT only")
    planner = QueryPlanner(s.env.snapshot, params, row_count=s.env.row_count)
    plan = planner.plan_raw(q).plan
    if stage == "decorrelated":
        plan = optimize(plan, rules=DECORRELATION)
    elif stage == "optimized":
        plan = optimize(plan, s.env.row_count)
    return Result("EXPLAIN", [(f"{stage.capitalize()} Plan", TEXT)], [(line,) for line in explain_lines(plan)])
