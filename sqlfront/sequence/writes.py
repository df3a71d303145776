"""INSERT, UPDATE and DELETE, and appending to persist.

Writes go straight to the table's persist shard at a write timestamp from the oracle
(the Coordinator main loop is not involved). In a transaction block they are buffered
on the session and appended at COMMIT (``sqlfront.sequence.txn``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from pglast import ast

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, INVALID_TRANSACTION_STATE, READ_ONLY_SQL_TRANSACTION
from catalog.snapshot import Table
from planner.writes import check_not_null, plan_insert
from sqlfront.sequence.peek import peek
from sqlfront.sequence.result import Result, rows_to_arrow

if TYPE_CHECKING:
    from sqlfront.session import Session

#: a shard with more parts than this is compacted into one after a write
COMPACT_AFTER_PARTS = 8


def insert(s: Session, stmt: ast.InsertStmt, sql: str, params) -> Result:
    """INSERT ... VALUES (rows planned in Python) or INSERT ... SELECT (a peek).

    Raises:
        SqlError 23502 for a NULL in a NOT NULL column; the planner's errors."""
    snap = s.env.snapshot
    pi = plan_insert(snap, stmt, params)
    if pi.rows is not None:
        rows = list(pi.rows)
    else:
        rows = peek(s, pi.query)
        for r in rows:
            check_not_null(pi.table, r)
    write(s, pi.table, rows_to_arrow(pi.table, rows))
    return Result(f"INSERT 0 {len(rows)}")


def write(s: Session, table: Table, data: pa.Table) -> None:
    """Write ``data`` (in ``table``'s storage schema) now, or at COMMIT in a transaction.

    Raises:
        SqlError 25006 in a READ ONLY transaction; 25000 in one that has read."""
    if s._txn_read_only:
        raise SqlError(READ_ONLY_SQL_TRANSACTION, "cannot execute INSERT in a read-only transaction")
    if s.in_transaction:
        if s._txn_read:
            raise SqlError(INVALID_TRANSACTION_STATE, "transaction in read-only mode")
        s._pending_writes.append((table, data))
        return
    append(s, table, data)


def append(s: Session, table: Table, data: pa.Table) -> None:
    """Append ``data`` to ``table``'s shard at a fresh write timestamp, then mark the
    timestamp applied (even on failure, so reads never wait on it)."""
    oracle = s.env.oracle
    ts = oracle.write_ts()
    try:
        state = s.env.persist.append(table.shard_id, data, ts)
    finally:
        oracle.apply_write(ts)
    s.env.note_write(table)
    if len(state.parts) > COMPACT_AFTER_PARTS:
        s.env.persist.compact(table.shard_id, COMPACT_AFTER_PARTS)


def rewrite(s: Session, stmt, sql: str, params) -> Result:
    """UPDATE/DELETE: compute the table's new contents on the cluster, then replace the
    shard's parts by compare-and-set against the state that was read (retrying if a
    concurrent write got in between).

    Raises:
        SqlError 0A000 inside a transaction block; 40001 after 10 lost races."""
    from planner.writes import plan_delete, plan_update

    if s.in_transaction:
        raise SqlError(FEATURE_NOT_SUPPORTED, "UPDATE and DELETE are not supported inside a transaction yet")
    is_delete = isinstance(stmt, ast.DeleteStmt)
    for _ in range(10):
        snap = s.env.snapshot
        pr = plan_delete(snap, stmt, params) if is_delete else plan_update(snap, stmt, params)
        state = s.env.persist.state(pr.table.shard_id)
        rows = peek(s, pr.plan, pinned={pr.table.shard_id: state})
        affected = sum(1 for r in rows if r[-1])
        if is_delete:
            kept = [r[:-1] for r in rows if not r[-1]]
        else:
            kept = [r[:-1] for r in rows]
            for r in kept:
                check_not_null(pr.table, r)
        if affected == 0:
            return Result(("DELETE " if is_delete else "UPDATE ") + "0")
        oracle = s.env.oracle
        ts = oracle.write_ts()
        try:
            done = s.env.persist.replace(pr.table.shard_id, rows_to_arrow(pr.table, kept), ts, state.seqno)
        finally:
            oracle.apply_write(ts)
        if done is not None:
            return Result(("DELETE " if is_delete else "UPDATE ") + str(affected))
    raise SqlError("40001", "could not serialize access due to concurrent update")
