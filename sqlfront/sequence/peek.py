"""SELECT and EXPLAIN: peeks (Materialize's frontend peek sequencing).

A plan that reads no user table runs in Python (the fast path: here, or in a worker
process once it outgrows ``INLINE_HEAP_BYTES``); any other runs on a replica of the
session's cluster at the timestamp oracle's read timestamp, through that cluster's
ClusterCoordinator. The Coordinator main loop is never involved. A read (a SELECT, AS OF
or not, or a cursor's) of a view with an index on that cluster, named in the query or in
a view it reads, reads the index's dataflow output once it is complete for the read
timestamp, when the index still keeps that time (``indexed_plan``, ``await_indexes``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from typing import TYPE_CHECKING

from pglast import ast

from catalog.errors import (
    SqlError, DATA_EXCEPTION, INVALID_TRANSACTION_STATE, QUERY_CANCELED, UNDEFINED_TABLE, query_canceled,
)
from catalog.snapshot import Index, Table, View
from catalog.types import SqlType
from persist import Batch, HoldGroup, PartRead, ShardSnapshot, SinceError
from planner import interpret, session_split
from planner.plan import relations_read
from sqlfront.activity import note_strategy
from sqlfront.sequence import as_of as as_of_clause, read_check
from sqlfront.sequence.evaluate import evaluate
from sqlfront.sequence.result import Result, ResultStream, chunk_rows
from spark_exec.spill import ResultSpill

if TYPE_CHECKING:
    from sqlfront.session import Session


def columns(pq) -> list[tuple[str, SqlType]]:
    """A planned query's output columns as (name, SqlType)."""
    return [(n, t) for n, (_, t) in zip(pq.names, pq.plan.columns)]


def select(s: Session, stmt: ast.SelectStmt, sql: str | None, params, tag: str = "SELECT") -> Result:
    """Plan a SELECT and open its peek; the rows stream to the client as it takes them
    (``Result.stream``).

    Raises:
        SqlError 25000 in a transaction that has written (Materialize's write-only
        transactions); the planner's and the peek's errors (those found before the
        first rows)."""
    pq, as_of, indexed = plan_read(s, stmt, sql, params, indexes=True)
    t1 = time.perf_counter()
    cols = columns(pq)
    stream = peek_stream(s, pq.plan, cols, as_of, indexed=indexed)
    s.env.metrics.phase("execute", time.perf_counter() - t1)
    return Result(tag, cols, stream=stream)


def plan_read(s: Session, stmt: ast.SelectStmt, sql: str | None, params, own_writes: bool = True, mz_now=None,
              indexes: bool = False):
    """Plan a SELECT that the session is about to read (a query or a cursor's), marking
    the transaction as reading (Materialize: a transaction that reads user data is
    read-only; catalog reads, which drivers issue before writing, do not count).
    Returns ``(planned query, as_of, indexed)``: the timestamp of its ``AS OF`` clause
    (None: the session's read timestamp), and with ``indexes`` the same query planned
    to read views from their indexes (``indexed_plan``; else None). ``mz_now()`` is that
    timestamp, or ``mz_now`` given (``planner.expr.MAINTAINED``, say), in both plans.

    A transaction block that wrote before it read sees its own buffered writes, as in
    PostgreSQL (``pending_parts``); Materialize refuses that read (25000). Its reads
    stay at the block's one read timestamp and its writes land at COMMIT, which fails
    with 40001 if a table it read was written meanwhile (``read_check.note_read``). A read that cannot include
    them (``own_writes`` False: SUBSCRIBE; an ``AS OF`` read) is still 25000.

    Raises:
        SqlError 25000 as above; the planner's errors; the AS OF clause's
        (``sqlfront.sequence.as_of``)."""
    as_of = None
    if s.as_of is not None:
        from sqlfront.parse import split_as_of

        as_of = as_of_clause.evaluate(s, s.as_of)
        as_of_clause.check_query(split_as_of(sql or "")[0])
        mz_now = lambda: as_of  # noqa: E731
    t = time.perf_counter()
    pq = s.plan_select(stmt, params, mz_now)
    s.env.metrics.phase("plan", time.perf_counter() - t)
    if as_of is not None:
        as_of = as_of_clause.choose(s, s.as_of, as_of, pq.plan)
    fast = interpret.is_fast_path(pq.plan)
    if fast:
        check_target_cluster(s, stmt, pq.plan)
    if s.transaction.pending_writes and not fast:
        if s.transaction.implicit:
            s.commit_implicit()  # an implicit transaction shows a script its own writes (see txn)
            # planned again: a mz_now() of the plan was the timestamp before them
            s.statement.read_ts.forget()
            pq = s.plan_select(stmt, params, mz_now)
        elif not own_writes or as_of is not None or any(p.expected_upper is not None for p in s.transaction.pending_writes):
            # a buffered UPDATE/DELETE holds retractions that pending_parts does not read
            raise SqlError(INVALID_TRANSACTION_STATE, "transaction in write-only mode")
    if s.in_transaction and not fast and not s.transaction.wrote:
        s.transaction.read = True
    indexed = indexed_plan(s, stmt, params, pq.plan, mz_now) if indexes else None
    return pq, as_of, indexed


def indexed_plan(s: Session, stmt, params, plan, mz_now=None):
    """``stmt`` planned to read the views it reads from their indexes on the session's
    cluster (``planner.context.PlanContext.indexed_views``; ``index_reads``), its
    ``mz_now()`` being ``mz_now`` (as ``Session.plan_select``), when it reads such a
    view and ``plan`` (its usual plan) runs on a replica; else None. A transaction block
    that wrote reads its own buffered writes, which no index holds: None then too."""
    if interpret.is_fast_path(plan) or s.transaction.pending_writes:
        return None
    views = index_reads(s, stmt)
    if not views:
        return None
    indexed = s.plan_select(stmt, params, mz_now, indexed_views=frozenset(views)).plan
    return indexed if views_read(indexed) else None


def index_reads(s: Session, stmt) -> dict[str, Index]:
    """The views with an index dataflow on the session's cluster, view id -> index
    (``ComputeController.indexed_views``), when ``stmt`` reads one of them: named in it,
    or in a view it reads, at any depth (Materialize reads a view's index wherever the
    optimizer meets the view); else empty. Empty too for an unknown cluster (the peek
    says so). A view's names resolve as its planning resolves them (``searching_from``
    its schema)."""
    from sqlfront.parse import parse_one
    from sqlfront.rbac import MAX_VIEW_DEPTH, relations_named

    snap = s.catalog
    try:
        cluster = snap.resolve_cluster(s.vars.get("cluster"))
    except SqlError:
        return {}
    views = s.env.compute.indexed_views(cluster.id)
    if not views:
        return {}
    seen: set[str] = set()

    def reads(snap, node, depth: int) -> bool:
        for r in relations_named(snap, node):
            if r.id in views:
                return True
            if isinstance(r, View) and r.id not in seen and depth < MAX_VIEW_DEPTH:
                seen.add(r.id)
                if reads(snap.searching_from(r.schema), parse_one(r.sql), depth + 1):
                    return True
        return False

    return views if reads(snap, stmt, 0) else {}


def views_read(plan) -> dict[str, View]:
    """The views ``plan`` reads as relations (``Get``s of views, subqueries' included):
    id -> view."""
    from planner.plan import relations_read_deep

    return {r.id: r for r in relations_read_deep(plan) if isinstance(r, View)}


def await_indexes(s: Session, cluster_id: str, indexed_plan, as_of: int):
    """The ``IndexedRead`` of a peek at ``as_of`` whose query reads views from their
    indexes (``indexed_plan``), once each index serves ``as_of`` on some replica,
    asking its cluster to get there (Materialize: a peek waits for its indexes'
    frontiers to pass its timestamp); None when some index cannot (not hydrated on any
    replica yet, its query failed, or ``as_of`` is before what it keeps): the peek then
    runs the views' queries, as it would without the index.

    Raises:
        SqlError 57014 when the statement's deadline passes or it is canceled."""
    from spark_exec.cluster_coordinator import IndexedRead

    compute = s.env.compute
    deadline = s.statement.deadline
    chosen = {}
    for vid in views_read(indexed_plan):
        while True:
            state, index_id = compute.index_state(cluster_id, vid, as_of)
            if state == "unavailable":
                return None
            if state == "ready":
                chosen[vid] = index_id
                break
            compute.request_index(cluster_id, index_id, as_of)
            if s.cancel_event.is_set() or s.client_gone():
                raise query_canceled(timeout=False)
            wait = 0.02 if deadline is None else min(0.02, deadline - time.monotonic())
            if wait <= 0:
                raise query_canceled(timeout=True)
            time.sleep(wait)
    return IndexedRead(indexed_plan, chosen, as_of)


def check_target_cluster(s: Session, stmt, plan) -> None:
    """Refuse a fast-path read that Materialize would run on the session's cluster when
    that cluster is unknown or has no replica (a read of a user table finds out in
    ``_read_at``). Materialize's rule (adapter, "catalog serving"): a query that names
    only system relations, or none and runs no function (``could_run_expensive_function``),
    is answered whatever the session's cluster; any other, a constant view's included,
    runs on that cluster.

    Raises:
        SqlError 42704 ``unknown cluster 'c'``; 55000 ``CLUSTER "c" has no replicas
        available to service request``."""
    from planner.plan import could_run_expensive_function
    from spark_exec.cluster_coordinator import no_replicas_error
    from sqlfront.rbac import relations_named

    snap = s.catalog
    named = relations_named(snap, stmt)
    if all(r.builtin for r in named) and (named or not could_run_expensive_function(plan)):
        return
    cluster = snap.resolve_cluster(s.vars.get("cluster"))
    if not snap.replicas_of(cluster.id):
        raise no_replicas_error(cluster.name)


#: rows per chunk of a fast-path result
FAST_PATH_CHUNK_ROWS = 4096


def peek_stream(s: Session, plan, cols: list[tuple[str, SqlType]], as_of: int | None = None,
                indexed=None) -> ResultStream:
    """Open a peek of ``plan`` as a ResultStream: the fast path's rows in chunks, or a
    replica's Arrow batches pulled on demand (``ClusterCoordinator.peek_stream``; an
    answer too large for a replica to hold comes through Blob: ``spark_exec.spill``). The
    wait for materialized views, the race of replicas and each pull are bounded by one
    deadline: the running statement's (``s.statement``; a FETCH pulling from a cursor
    opened earlier runs under its own). ``peek_finished`` runs when the stream closes,
    however it does. ``indexed``: the same query reading views from their indexes
    (``indexed_plan``), which replicas whose indexes serve the read timestamp run
    (``await_indexes``).

    Raises:
        as ``peek``, for errors before the first rows."""
    with _observed(s):
        note_strategy(s, "constant" if interpret.is_fast_path(plan) else "standard")
        split = None if interpret.is_fast_path(plan) else session_split.split(plan)
        if interpret.is_fast_path(plan) or split is not None:
            try:
                rows = evaluate(s, plan) if split is None else _split_peek(s, split, as_of)
            except BaseException:
                if split is None:
                    peek_finished(s, None)
                raise
            chunks = iter([rows[i : i + FAST_PATH_CHUNK_ROWS] for i in range(0, len(rows), FAST_PATH_CHUNK_ROWS)])
            # a split peek finished with its Spark part (``_split_peek``)
            finished = functools.partial(peek_finished, s, None) if split is None else (lambda: None)
            stream = ResultStream(cols, lambda: next(chunks, None), on_close=finished)
        else:
            cc, as_of, scan, holds = _read_at(s, plan, as_of)
            proposed = indexed is not None
            try:
                await_materialized(s, plan, as_of)
                if indexed is not None:
                    indexed = await_indexes(s, cc.cluster_id, indexed, as_of)
            except BaseException:
                peek_finished(s, as_of, holds)
                raise
            ps = cc.peek_stream(plan, scan, s.builtin_rows, s.env.config.replica_wait_s,
                                s.statement.deadline, s.cancel_event,
                                on_close=functools.partial(peek_finished, s, as_of, holds),
                                spill=ResultSpill(s.env.persist.blob), indexed=indexed,
                                text=s.statement.plan.guard.text)
            if proposed:
                s.env.metrics.index_peeks.labels("arrangement" if indexed is not None and indexed.read_index()
                                                 else "rerun").inc()
            # read at each pull: the statement pulling (this one, or a later FETCH)
            stream = ResultStream(cols, lambda: ps.next_batch(s.statement.deadline, s.cancel_event),
                                  on_close=ps.close)
        return stream


@contextlib.contextmanager
def _observed(s: Session):
    """Count the peek run inside in the peek metrics of the session's cluster, by outcome."""
    start = time.perf_counter()
    cluster_name = s.vars.get("cluster")
    outcome = "error"
    try:
        yield
        outcome = "success"
    except SqlError as e:
        outcome = "canceled" if e.sqlstate == QUERY_CANCELED else "error"
        raise
    finally:
        s.env.metrics.observe_peek(cluster_name, outcome, time.perf_counter() - start)


def peek_finished(s: Session, as_of: int | None, holds: "HoldGroup | None" = None) -> None:
    """The one place a peek ends: called exactly once per peek, when its stream is
    exhausted, fails, or is closed by the client (portal Close, CLOSE of a cursor,
    transaction end, connection end), and after a whole-result ``peek``. ``as_of`` is
    the read timestamp (None for the fast path). What a peek holds while it runs (its
    persist read holds, ``holds``) is released here."""
    if holds is not None:
        holds.release()


def peek(s: Session, plan, as_of: int | None = None, job=None):
    """Run a plan to its whole result: in Python when it reads no user table (fast
    path), else on a replica of the session's cluster at ``as_of`` (default: the
    session's read timestamp). ``job`` (``ClusterCoordinator.peek``) replaces collecting
    the rows (a replica writing them to Blob). For writes that need every row (INSERT ...
    SELECT, UPDATE, DELETE); SELECT streams.

    Raises:
        SqlError "could not find a valid timestamp" when ``as_of`` is below a table's
        since; the replica's errors."""
    with _observed(s):
        return _peek(s, plan, as_of, job)


def invalid_timestamp(as_of: int, relation: Table, e: SinceError) -> SqlError:
    """Materialize's error for a read at ``as_of`` below ``relation``'s since (22000)."""
    return SqlError(DATA_EXCEPTION, "could not find a valid timestamp for the query",
                    detail=f"Timestamp ({as_of}) is not valid for all inputs: [{relation.name}] has since {e.since}")


def _read_at(s: Session, plan, as_of: int | None):
    """The session's cluster's coordinator, the read timestamp, the scan function giving
    each table's snapshot at it under a persist read hold, and the holds (``persist.HoldGroup``;
    ``peek_finished`` releases them). Every stored relation ``plan`` reads is held at
    the read timestamp here, when it is picked (Materialize's timestamp selection takes
    read holds on all inputs): waiting for a materialized view's upper or for a healthy
    replica cannot let a since pass it before the scan.

    Raises:
        SqlError 55000 for a stopped cluster; 22000 when ``as_of`` is below an input's
        since; XX000 for a subsource in error (``source_runners.SourceRunners.check_readable``)."""
    snap = s.catalog
    cluster = snap.resolve_cluster(s.vars.get("cluster"))
    cc = s.env.compute.cluster_coordinator(cluster.id)
    if cc is None:
        raise s.env.compute.not_owned_error(cluster)
    pending = pending_parts(s) if as_of is None else {}
    # a block that wrote, then reads: COMMIT checks that nobody wrote what it read since
    validate = bool(s.transaction.pending_writes) and s.transaction.in_block
    as_of = s.read_ts() if as_of is None else as_of
    persist = s.env.persist
    holds = persist.hold_group()
    try:
        for rel in dict.fromkeys(r for r in relations_read(plan) if isinstance(r, Table)):
            s.env.sources.check_readable(rel)
            try:
                holds.add(persist.hold(rel.shard_id, as_of))
            except SinceError as e:
                raise invalid_timestamp(as_of, rel, e) from None
    except BaseException:
        holds.release()
        raise

    def scan(table: Table) -> ShardSnapshot:
        try:
            snapshot, hold = persist.read(table.shard_id, as_of)
        except SinceError as e:
            raise invalid_timestamp(as_of, table, e) from None
        holds.add(hold)
        if validate:
            read_check.note_read(s, table, as_of, plan)
        own = pending.get(table.shard_id)
        if own:
            snapshot = dataclasses.replace(snapshot, parts=snapshot.parts + tuple(own),
                                           rows=snapshot.rows + sum(p.updates for p in own))
        return snapshot

    return cc, as_of, scan, holds


def pending_parts(s: Session) -> dict[str, list[PartRead]]:
    """The writes a transaction block buffered (``Transaction.pending_writes``), as parts to
    read along with each shard's snapshot: shard id -> parts. Rows buffered as Arrow are
    written to Blob first, once, and the buffer keeps the Batch instead (COMMIT appends
    it as it is; ROLLBACK and ROLLBACK TO delete it), so a read sees each buffered row
    exactly once. The parts are inserts (``+1`` updates, no retractions): the snapshot's
    consolidation needs no change."""
    if not s.transaction.pending_writes or s.transaction.implicit:
        return {}
    persist = s.env.persist
    out: dict[str, list[PartRead]] = {}
    for i, p in enumerate(s.transaction.pending_writes):
        data = p.data
        if not isinstance(data, Batch):
            data = persist.write_batch(p.table.shard_id, data)
            s.transaction.pending_writes[i] = p._replace(data=data)
        out.setdefault(p.table.shard_id, []).append(PartRead(persist.blob.url(data.key), data.diffs,
                                                             updates=data.updates))
    return out


def await_materialized(s: Session, plan, as_of: int) -> None:
    """Wait until every materialized view ``plan`` reads is complete for ``as_of`` (its
    shard's upper is past it), asking the clusters that host them to get there: a read
    after a write into a view's input sees the write (Materialize's reads wait for their
    inputs' uppers). A view whose cluster has no healthy replica makes the read wait.

    Raises:
        SqlError 57014 when the statement's deadline (``s.statement``) passes or it is
        canceled; the error a view's query raises at ``as_of`` (an error is the data of
        the times it holds at: a read before the write that caused it, or after the one
        that retracted it, answers rows)."""
    from catalog.snapshot import MaterializedView
    from persist import Backoff
    views = list(dict.fromkeys(r for r in relations_read(plan) if isinstance(r, MaterializedView)))
    if not views:
        return
    env, persist = s.env, s.env.persist
    deadline = s.statement.deadline
    for view in views:
        poll = Backoff()
        st = persist.state(view.shard_id)
        while True:
            err = env.compute.materialization_error(view, as_of)
            if err is not None:
                raise err
            if st.upper > as_of:
                break
            env.compute.request_materialization(view, as_of)
            if s.cancel_event.is_set() or s.client_gone():
                raise query_canceled(timeout=False)
            if view.id not in s.catalog.materialized_views:  # dropped while we waited
                raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{view.name}'")
            wait = 0.25 if deadline is None else min(0.25, deadline - time.monotonic())
            if wait <= 0:
                raise query_canceled(timeout=True)
            persist.wait_for_change({view.shard_id: st.seqno}, wait, poll)
            st = persist.latest(view.shard_id)


def _split_peek(s: Session, split, as_of: int | None) -> list[tuple]:
    """The rows of a plan whose select list acts on the session (``session_split``):
    its input on Spark, then the select list (and the ORDER BY and LIMIT above it) here,
    over those rows."""
    inner, rebuild = split
    return evaluate(s, rebuild(_peek(s, inner, as_of, None)))


def _peek(s: Session, plan, as_of: int | None, job):
    note_strategy(s, "constant" if interpret.is_fast_path(plan) and job is None else "standard")
    if interpret.is_fast_path(plan) and job is None:
        try:
            return evaluate(s, plan)
        finally:
            peek_finished(s, None)
    split = session_split.split(plan) if job is None else None
    if split is not None:
        return _split_peek(s, split, as_of)
    cc, as_of, scan, holds = _read_at(s, plan, as_of)
    try:
        await_materialized(s, plan, as_of)
        result = cc.peek(plan, scan, s.builtin_rows, s.env.config.replica_wait_s,
                         s.statement.deadline, s.cancel_event, job, text=s.statement.plan.guard.text)
    finally:
        peek_finished(s, as_of, holds)
    if job is not None:
        return result
    return chunk_rows(result, [t for _, t in plan.columns])
