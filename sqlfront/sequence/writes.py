"""INSERT, UPDATE and DELETE: writes to persist through the group commit.

INSERT ... VALUES builds its rows here and appends them as +1 updates. UPDATE and DELETE
are plans that yield ``(old row, -1)`` and ``(new row, +1)`` for the rows they touch; a
replica of the session's cluster runs the plan and writes the updates straight to Blob,
and this module only publishes the part, by compare-and-append at the upper the plan read
(a concurrent write to the table makes it plan again). A rewrite of few rows
(``SMALL_REWRITE_UPDATES``) brings its updates back instead and writes them from here,
inline in the shard's state when they fit. Their cost grows with the rows changed, not
with the table. In a transaction block writes are buffered on the session (``Pending``)
and committed together at COMMIT (``sqlfront.sequence.txn``).

UPDATE and DELETE in a transaction block are PostgreSQL's, not Materialize's (which
refuses them there): dbt-postgres's incremental models DELETE and INSERT in one block. Their
updates are computed at once, from the table as committed, and buffered with the upper
they were computed at; COMMIT publishes them only if the table is still there (else
40001, nothing of the block is written). Since an UPDATE or DELETE does not read the
block's own buffered writes, one of a table the block has already written is refused.

A write planned against a table whose shard an ALTER TABLE has since sealed (its rows
moved to a new shard) or a DROP TABLE has dropped fails with ``ShardSealed`` when it is
appended, never landing where nobody reads: a statement outside a block is planned again
against the catalog that replaced the shard (``replanned``); buffered writes of a block
fail its COMMIT with 40001.
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Callable, NamedTuple, TypeVar

import pyarrow as pa
from pglast import ast

from catalog.errors import (
    SqlError, FEATURE_NOT_SUPPORTED, INVALID_TRANSACTION_STATE, READ_ONLY_SQL_TRANSACTION,
    SERIALIZATION_FAILURE, query_canceled,
)
from catalog.snapshot import Table
from persist import Batch, ShardSealed
from persist.write import inline_room, write_updates
from planner.writes import PlannedInsert, check_not_null, insert_template, plan_insert
from sqlfront.group_commit import Conflict, Write
from sqlfront.sequence.peek import peek
from sqlfront.sequence.result import Result, check_storable, rows_to_arrow

if TYPE_CHECKING:
    from sqlfront.session import Session

#: how often an UPDATE/DELETE plans again after a concurrent write before giving up
MAX_CONFLICTS = 10
#: how long (seconds) a write waits for the catalog to replace a sealed shard (an ALTER
#: TABLE copying the table's rows holds its writers back as PostgreSQL's table lock does)
SEALED_WAIT_S = 120.0

R = TypeVar("R")


def replanned(handler: Callable[..., R]) -> Callable[..., R]:
    """``handler(s, ...)`` of a statement that writes or reads tables, run again against
    the current catalog while the shard it planned for turns out sealed (an append, or a
    read fencing the shard's upper: ``PersistClient.read``). The one rule for every such
    statement: writes here, SELECT (``session.HANDLERS``), a cursor's first FETCH
    (``cursors._open``). Nothing of a failed attempt is visible (the append is all or
    nothing) or kept (its batches are deleted).

    Raises:
        SqlError 40001 when the catalog still names the sealed shard after
        ``SEALED_WAIT_S``; 57014 when the statement is canceled meanwhile."""
    @functools.wraps(handler)
    def run(s: Session, *args, **kwargs) -> R:
        deadline = time.monotonic() + SEALED_WAIT_S
        while True:
            try:
                return handler(s, *args, **kwargs)
            except ShardSealed as e:
                wait_replaced(s, e.shard_id, deadline)
                s.statement.read_ts.forget()  # the new shard's rows are at a later time

    return run


def wait_replaced(s: Session, shard_id: str, deadline: float) -> None:
    """Return once the catalog no longer names sealed ``shard_id`` (the ALTER TABLE that
    sealed it committed, or a DROP did) or the shard is open again (the ALTER failed).

    Raises:
        SqlError 40001 after ``deadline`` (time.monotonic); 57014 when canceled."""
    pause = 0.002
    while True:
        if all(t.shard_id != shard_id for t in s.catalog.storage_relations()):
            return
        if not s.env.persist.state(shard_id).sealed:
            return
        if s.cancel_event.is_set() or s.client_gone():
            raise query_canceled(timeout=False)
        if time.monotonic() >= deadline:
            raise SqlError(SERIALIZATION_FAILURE, "could not serialize access due to a concurrent ALTER TABLE")
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


class Pending(NamedTuple):
    """One write of a transaction, until it is appended: ``data`` for ``table`` (rows in
    its storage schema, or a batch a replica wrote). ``expected_upper``: the table's upper
    an UPDATE/DELETE computed its diffs at; they may be appended only while it holds."""

    table: Table
    data: pa.Table | Batch
    expected_upper: int | None = None


@replanned
def insert(s: Session, stmt: ast.InsertStmt, sql: str, params, now: bool = False) -> Result:
    """INSERT ... VALUES (rows planned in Python) or INSERT ... SELECT (a peek). With
    ``now``, the rows are appended at once even in a transaction block (CREATE TABLE AS
    fills its table as part of the DDL, which takes effect at once).

    Raises:
        SqlError 23502 for a NULL in a NOT NULL column; the planner's errors."""
    from planner import interpret


    snap = s.catalog
    pi = planned_insert(s, snap, stmt, sql, params)
    if pi.rows is not None:
        rows = list(pi.rows)
    elif pi.fill or pi.returning is not None or interpret.is_fast_path(pi.query):
        # the rows come back here: volatile defaults (nextval) and RETURNING need them
        rows = peek(s, pi.query)
        if pi.fill:
            rows = fill_defaults(s, rows, pi.fill)
        for r in rows:
            check_not_null(pi.table, r)
    else:
        # INSERT ... SELECT over tables: the replica computes and writes the rows.
        batch = replica_write(s, pi.table, not_null_checked(pi.table, pi.query), diffs=False)
        append_all(s, [Pending(pi.table, batch)]) if now else write(s, pi.table, batch)
        return Result(f"INSERT 0 {batch.updates}")
    if not now and not s.in_transaction and len(rows) <= COMMITTER_ARROW_ROWS:
        # the committer makes one Arrow table of every such write of its group to the shard
        check_writable(s, "INSERT")
        check_storable(pi.table, rows)
        s.env.storage.writer.commit([Write(pi.table.shard_id, values=rows, table=pi.table)])
    else:
        data = rows_to_arrow(pi.table, rows)
        append_all(s, [Pending(pi.table, data)]) if now else write(s, pi.table, data)
    return returning_result(s, pi.returning, f"INSERT 0 {len(rows)}", rows)


#: an INSERT of at most this many rows outside a transaction block hands its rows to the
#: group commit as they are (``Write.values``); a bigger one converts them here, in its own thread
COMMITTER_ARROW_ROWS = 64
#: prepared INSERTs whose template (``planner.writes.InsertTemplate``) a session keeps
TEMPLATES_PER_SESSION = 16


def planned_insert(s: Session, snap, stmt: ast.InsertStmt, sql: str, params) -> PlannedInsert:
    """``plan_insert(snap, stmt, params)``, by way of the session's InsertTemplate of
    ``sql`` when it is an INSERT of parameters (a driver's prepared INSERT, executed again
    with new ones: only the parameters are assigned). A template holds while the catalog
    snapshot and the search_path it was planned with do."""
    if params is None or s.transaction.block_catalog is not None:  # a block's own DDL: names resolve elsewhere too
        return plan_insert(snap, stmt, params, s.statement.plan)
    key = (stmt, snap, s.vars.values.get("search_path"))
    cache = s.insert_templates
    hit = cache.get(sql)
    if hit is None or any(a is not b for a, b in zip(hit[0], key)):
        if len(cache) >= TEMPLATES_PER_SESSION:
            cache.clear()
        hit = cache[sql] = (key, insert_template(snap, stmt, s.statement.plan))
    return hit[1].bind(params, s.statement.plan) if hit[1] is not None else plan_insert(snap, stmt, params, s.statement.plan)


def fill_defaults(s: Session, rows, fill) -> list[tuple]:
    """``rows`` with each ``(column index, DEFAULT expression)`` of ``fill`` evaluated per
    row; a serial default (a sequence's nextval) takes all its values in one step."""
    from planner.consteval import cast_value, evaluate
    from planner.scalar import Call, Cast, Literal

    rows = [list(r) for r in rows]
    for j, e in fill:
        inner = e.expr if isinstance(e, Cast) else e
        if isinstance(inner, Call) and inner.func == "nextval" and isinstance(inner.args[0], Literal) and rows:
            values = s.sequences.nextval_many(inner.args[0].value, len(rows))
            for r, v in zip(rows, values):
                r[j] = cast_value(v, inner.type, e.type) if e is not inner else v
        else:
            for r in rows:
                r[j] = evaluate(e, ctx=s.statement.plan)
    return [tuple(r) for r in rows]


def returning_result(s: Session, returning, tag: str, rows: list[tuple]) -> Result:
    """The Result of a write of session ``s``: its command tag, and with RETURNING the
    returned rows (PostgreSQL: the tag counts the rows written, as without RETURNING)."""
    if returning is None:
        return Result(tag)
    return Result(tag, list(returning.columns), returning.rows(rows, s.statement.plan))


def not_null_checked(table: Table, plan):
    """``plan`` with each NOT NULL column of ``table`` checked where the rows are made."""
    from planner.plan import Project
    from planner.scalar import ColRef
    from planner.writes import not_null_guard

    if all(c.nullable for c in table.columns):
        return plan
    exprs = tuple(not_null_guard(ColRef(i, t), table, c) for i, ((_, t), c) in enumerate(zip(plan.columns, table.columns)))
    return Project(plan, exprs, tuple(n for n, _ in plan.columns))


def replica_write(s: Session, table: Table, plan, diffs: bool, as_of: int | None = None):
    """Run ``plan`` on the session's cluster with the replica writing its rows (with a
    last ``_mz_diff`` column when ``diffs``) as a part of ``table``'s shard; returns the
    Batch, not yet appended. Each replica racing the job writes its own part; the losers'
    are deleted."""
    from spark_exec.writes import PartUrls, write_job

    persist = s.env.persist
    urls = PartUrls(lambda: persist.new_part_url(table.shard_id))
    try:
        winner = peek(s, plan, as_of=as_of, job=write_job(table, urls.url_for, diffs=diffs))
    except BaseException:
        for key in urls.keys_except(None):
            persist.blob.delete(key)
        raise
    for key in urls.keys_except(winner):
        persist.blob.delete(key)
    return persist.written_batch(urls.parts[winner][0], diffs=diffs)


#: appends of at least this many bytes (Arrow) become a part in Blob before the group commit
BIG_APPEND_BYTES = 1 << 20


def write(s: Session, table: Table, data: pa.Table | Batch | list[Batch], keep_batches: bool = False) -> None:
    """Write ``data`` (rows in ``table``'s storage schema, or a batch a replica wrote, or
    several batches, appended together) now, or at COMMIT in a transaction.

    Raises:
        SqlError 25006 in a READ ONLY transaction; 25000 in one that read before it
        wrote (Materialize's read-only transactions). ShardSealed (``replanned``): the
        batches are then deleted, unless ``keep_batches`` (the caller reads them again)."""
    check_writable(s, "INSERT")
    if isinstance(data, pa.Table) and data.nbytes >= BIG_APPEND_BYTES:
        # Encoded and written to Blob here, in the session's thread: the group commit's
        # one thread then only publishes it, and other sessions' small writes do not
        # wait behind the encoding of a big COPY. (A ROLLBACK deletes it; a crash leaves
        # it to the startup GC.)
        data = s.env.persist.write_batch(table.shard_id, data)
    writes = [Pending(table, b) for b in data] if isinstance(data, list) else [Pending(table, data)]
    if s.in_transaction:
        s.transaction.buffer_writes(writes)
        return
    append_all(s, writes, keep_batches)


def check_writable(s: Session, verb: str) -> None:
    """Whether the session's transaction may write (any write: INSERT, UPDATE, DELETE).

    Raises:
        SqlError 25006 in a READ ONLY transaction (PostgreSQL's); 25000 in a block that
        has read user data (Materialize's: such a transaction is read-only)."""
    if s.transaction.read_only:
        raise SqlError(READ_ONLY_SQL_TRANSACTION, f"cannot execute {verb} in a read-only transaction")
    if s.transaction.in_block and s.transaction.read:
        raise SqlError(INVALID_TRANSACTION_STATE, "transaction in read-only mode")


def append_all(s: Session, writes: list[Pending], keep_batches: bool = False) -> None:
    """Append every write at one timestamp, visible together (group commit).

    Raises:
        group_commit.Conflict: an UPDATE/DELETE's table moved past its expected upper
        (nothing of ``writes`` is visible then).
        persist.ShardSealed: a table's shard was sealed (nothing of ``writes`` is
        visible; their batches are deleted unless ``keep_batches``)."""
    if writes:
        try:
            s.env.storage.writer.commit([Write(p.table.shard_id, batch=p.data, expected_upper=p.expected_upper)
                                 if isinstance(p.data, Batch) else
                                 Write(p.table.shard_id, rows=p.data, expected_upper=p.expected_upper)
                                 for p in writes])
        except ShardSealed:
            for p in writes:
                if isinstance(p.data, Batch) and not keep_batches:
                    s.env.persist.delete_batch(p.data)
            raise


@replanned
def rewrite(s: Session, stmt, sql: str, params) -> Result:
    """UPDATE/DELETE: the updates are computed and written by a replica at a snapshot of
    the table, then published only if the table's upper is still the snapshot's
    (compare-and-append); else planned again.

    In a transaction block the updates are buffered until COMMIT (see the module
    docstring).

    Raises:
        SqlError 40001 after ``MAX_CONFLICTS`` concurrent writes in a row; 23502 for a
        NULL into a NOT NULL column; ``check_writable``'s errors; in a transaction block,
        0A000 for a table the block has already written."""
    from planner.writes import plan_delete, plan_update

    is_delete = isinstance(stmt, ast.DeleteStmt)
    verb = "DELETE" if is_delete else "UPDATE"
    in_block = s.transaction.in_block
    check_writable(s, verb)
    if s.transaction.pending_writes and not in_block:  # an implicit transaction's earlier INSERTs come first
        s.commit_implicit()
    persist = s.env.persist
    for _ in range(MAX_CONFLICTS):
        snap = s.catalog
        plan_rewrite = plan_delete if is_delete else plan_update
        pr = plan_rewrite(snap, stmt, params, s.statement.plan)
        shard = pr.table.shard_id
        if in_block and any(p.table.shard_id == shard for p in s.transaction.pending_writes):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{verb} of a table this transaction has already written is "
                           "not supported (its buffered writes are not read back before COMMIT)")
        with s.env.storage.table_lock(shard):  # writers of one table take turns (Materialize's write lock)
            st = persist.state(shard)
            if st.sealed:  # its rows moved (ALTER TABLE) or the table is gone: plan again
                raise ShardSealed(shard)
            # the updates are computed at as_of and must land at upper: nothing between
            as_of, st = persist.read_point(shard, st, s.env.oracle.read_ts())
            upper = st.upper
            returned: list[tuple] = []
            if pr.returning is not None:
                # RETURNING needs the rows here: the updates come back, and are written from here
                updates = peek(s, pr.plan, as_of=as_of)
                if not updates:
                    return returning_result(s, pr.returning, f"{verb} 0", [])
                want = -1 if is_delete else 1
                returned = [tuple(u[:-1]) for u in updates if u[-1] == want]
                batch = write_updates(persist.blob, shard, rows_to_arrow_with_diffs(pr.table, updates),
                                      inline_room(persist.latest(shard)))
            elif (updates := small_updates(s, pr.plan, as_of)) is not None:
                if not updates:
                    return Result(f"{verb} 0")
                batch = write_updates(persist.blob, shard, rows_to_arrow_with_diffs(pr.table, updates),
                                      inline_room(persist.latest(shard)))
            else:
                batch = replica_write(s, pr.table, pr.plan, diffs=True, as_of=as_of)
            if batch.updates == 0:
                persist.delete_batch(batch)
                return Result(f"{verb} 0")
            if in_block:
                s.transaction.buffer_writes([Pending(pr.table, batch, upper)])
                return returning_result(s, pr.returning, f"{verb} {pr.affected(batch.updates)}", returned)
            try:
                s.env.storage.writer.commit([Write(shard, batch=batch, expected_upper=upper)])
            except Conflict:
                persist.delete_batch(batch)
                continue
            except BaseException:
                persist.delete_batch(batch)
                raise
        return returning_result(s, pr.returning, f"{verb} {pr.affected(batch.updates)}", returned)
    raise SqlError(SERIALIZATION_FAILURE, "could not serialize access due to concurrent update")


#: an UPDATE or DELETE of at most this many updates brings them back from the replica and
#: writes them from here (inline in the shard's state when small: no Spark write job, no
#: files to fsync); a bigger one is written by the replica straight to Blob
SMALL_REWRITE_UPDATES = 1000


def small_updates(s: Session, plan, as_of: int) -> list[tuple] | None:
    """The updates of a rewrite ``plan`` at ``as_of`` when there are at most
    ``SMALL_REWRITE_UPDATES`` of them; None when there are more (the caller has the
    replica write them). One streamed peek, closed (the replica's job interrupted) once
    one update too many has arrived: memory stays bounded whatever the statement
    touches. (A ``LIMIT`` would make Spark scan the table part by part, a job each.)"""
    from sqlfront.sequence.peek import peek_stream
    from sqlfront.sequence.result import chunk_rows

    cols = list(plan.columns)
    types = [t for _, t in cols]
    stream = peek_stream(s, plan, cols, as_of=as_of)
    updates: list[tuple] = []
    try:
        for chunk in stream.take(SMALL_REWRITE_UPDATES + 1):
            updates.extend(chunk_rows(chunk, types))
    finally:
        stream.close()
    return updates if len(updates) <= SMALL_REWRITE_UPDATES else None


def rows_to_arrow_with_diffs(table: Table, updates: list[tuple]) -> pa.Table:
    """Rows of ``table`` each followed by an int8 diff, as an update batch's Arrow table
    (the table's storage schema, then ``_mz_diff``)."""
    from persist.state import DIFF_COLUMN

    data = rows_to_arrow(table, [u[:-1] for u in updates])
    return data.append_column(pa.field(DIFF_COLUMN, pa.int64()), pa.array([u[-1] for u in updates], pa.int64()))
