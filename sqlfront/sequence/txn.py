"""Transaction control: BEGIN/START TRANSACTION, COMMIT, ROLLBACK, SAVEPOINT, RELEASE,
ROLLBACK TO.

Materialize's rules: a transaction that has read may not write (25000), writes are
buffered in the session's :class:`Transaction` and appended at COMMIT, all at one
timestamp (the group commit), ROLLBACK discards them, and a failed statement leaves the
transaction aborted (25P02) until it ends. Every read of a transaction is at one timestamp. Decided (issue 16): a
block that wrote before it read may read, and sees its own buffered writes once each, as
in PostgreSQL (Materialize refuses the read with 25000); see
``sqlfront.sequence.peek.plan_read``.

The statements of a multi-statement simple query form an *implicit* transaction
(PostgreSQL 55.2.2.1): it commits after the last statement and rolls back at the first
error. Decided: in an implicit transaction a read of user data after writes commits the
writes first (PostgreSQL shows a script its own writes; Materialize's write-only rule is
for explicit blocks); from there on each statement commits by itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from pglast import ast
from pglast.enums import TransactionStmtKind

from catalog.errors import (
    SqlError, FEATURE_NOT_SUPPORTED, INVALID_SAVEPOINT_SPECIFICATION, NO_ACTIVE_SQL_TRANSACTION,
    SERIALIZATION_FAILURE,
)
from persist import Batch, ShardSealed
from sqlfront.group_commit import Conflict
from sqlfront.sequence import block_ddl, read_check
from sqlfront.sequence.cursors import close_all
from sqlfront.sequence.read_check import ReadCheck
from sqlfront.sequence.result import Result
from sqlfront.sequence.writes import Pending, append_all

if TYPE_CHECKING:
    from sqlfront.session import Session

K = TransactionStmtKind


class Transaction:
    """A session's transaction state (``Session.transaction``): whether one is open and
    how (implicit, READ ONLY, aborted), its buffered writes, what it read, its savepoints,
    its uncommitted DDL and its read timestamp. This module owns its rules; the other
    sequencing modules read its fields and change them through its methods. Not
    thread-safe: its session's connection drives it."""

    def __init__(self):
        #: a transaction is open (a block, or the implicit one of a multi-statement Query)
        self.active = False
        #: a statement of it failed: it is aborted until it ends (25P02)
        self.failed = False
        #: it is the implicit one of a multi-statement simple Query (PostgreSQL 55.2.2.1)
        self.implicit = False
        #: it read a user table, so it may not write (Materialize's rule)
        self.read = False
        #: the block wrote before it read: its reads see its buffered writes
        #: (``sqlfront.sequence.peek.pending_parts``) and it may go on writing
        self.wrote = False
        #: BEGIN READ ONLY / SET TRANSACTION READ ONLY
        self.read_only = False
        #: writes buffered until COMMIT (``sequence.writes.Pending``), oldest first. A
        #: caller may replace an entry in place (``sequence.peek.pending_parts``); it adds
        #: and drops them with :meth:`buffer_writes` and :meth:`take_pending_writes`
        self.pending_writes: list[Pending] = []
        #: shard id -> what the block read after it wrote (``sequence.read_check.note_read``
        #: adds to it; COMMIT checks the uppers did not move)
        self.read_uppers: dict = {}
        #: savepoints, oldest first: (name, how many buffered writes it keeps on ROLLBACK
        #: TO, the block's catalog mark then: ``sequence.block_ddl.mark``)
        self.savepoints: list[tuple[str, int, object]] = []
        #: the block's uncommitted DDL (``sequence.block_ddl.BlockCatalog``), or None
        self.block_catalog = None
        #: the read timestamp, fixed at its first read and held in ``env.storage`` while
        #: it lasts (``Session.read_ts``, ``Session.release_read_ts``), or None
        self.ts: int | None = None

    @property
    def in_block(self) -> bool:
        """Whether it is an explicit transaction block (BEGIN ... COMMIT)."""
        return self.active and not self.implicit

    def begin_implicit(self) -> None:
        """Open the implicit transaction of a multi-statement simple Query."""
        self.active = self.implicit = True

    def buffer_writes(self, pending: Iterable[Pending]) -> None:
        """Buffer ``pending`` until COMMIT: the transaction has written."""
        self.pending_writes.extend(pending)
        self.wrote = True

    def take_pending_writes(self, keep: int = 0) -> list[Pending]:
        """Drop the buffered writes after the first ``keep`` and return them (COMMIT and
        ROLLBACK take all, ROLLBACK TO a savepoint those made since it)."""
        out = self.pending_writes[keep:]
        del self.pending_writes[keep:]
        return out

    def add_savepoint(self, name: str, catalog_mark) -> None:
        """SAVEPOINT ``name``: remembers the buffered writes so far and ``catalog_mark``
        (``sequence.block_ddl.mark``)."""
        self.savepoints.append((name, len(self.pending_writes), catalog_mark))

    def unwind_savepoints(self, name: str, keep: bool) -> tuple[str, int, object] | None:
        """Forget the savepoints made after the latest one named ``name``, and that one too
        unless ``keep`` (RELEASE: not kept, ROLLBACK TO: kept); returns it as ``(name,
        buffered writes it keeps, catalog mark)``, or None (nothing changed) when there is
        no such savepoint."""
        idx = next((i for i in range(len(self.savepoints) - 1, -1, -1) if self.savepoints[i][0] == name), None)
        if idx is None:
            return None
        found = self.savepoints[idx]
        del self.savepoints[idx + 1 if keep else idx :]
        return found

    def reset(self) -> None:
        """Forget the transaction's flags, savepoints and reads to check (its buffered
        writes, DDL and read timestamp are :func:`end_transaction`'s callers' business)."""
        self.active = self.failed = False
        self.read = self.wrote = self.read_only = self.implicit = False
        self.savepoints = []
        self.read_uppers = {}


def transaction(s: Session, stmt: ast.TransactionStmt, sql: str, params) -> Result:
    """Sequence one transaction-control statement (PostgreSQL's BEGIN, COMMIT, ROLLBACK
    and SAVEPOINT reference pages).

    Raises:
        SqlError 0A000 for PREPARE TRANSACTION and the like; see ``savepoint``."""
    k = stmt.kind
    if k in (K.TRANS_STMT_BEGIN, K.TRANS_STMT_START):
        if s.transaction.implicit:
            s.transaction.implicit = False  # BEGIN inside a multi-statement query: an explicit block
            return Result("BEGIN")
        if s.transaction.active:
            # PostgreSQL warns and stays in the transaction (WARNING 25001).
            return Result("BEGIN")
        s.transaction.active = True
        from sqlfront.sequence.vars import transaction_modes

        s.transaction.read_only = s.vars.get("default_transaction_read_only") == "on"
        # what current_setting('transaction_read_only') shows while the block lasts
        s.vars.values["transaction_read_only"] = "on" if s.transaction.read_only else "off"
        s.vars.values["transaction_deferrable"] = s.vars.get("default_transaction_deferrable")
        transaction_modes(s, stmt.options or (), session=False)
        return Result("BEGIN")
    if k in (K.TRANS_STMT_SAVEPOINT, K.TRANS_STMT_RELEASE, K.TRANS_STMT_ROLLBACK_TO):
        return savepoint(s, k, stmt.savepoint_name)
    if k == K.TRANS_STMT_COMMIT:
        tag = "ROLLBACK" if s.transaction.failed else "COMMIT"
        if s.transaction.failed:
            rollback(s)
        else:
            commit(s)
        return Result(tag)
    if k == K.TRANS_STMT_ROLLBACK:
        rollback(s)
        return Result("ROLLBACK")
    raise SqlError(FEATURE_NOT_SUPPORTED, f"{k.name} is not supported")


def commit(s: Session) -> None:
    """End the transaction: commit its DDL (``block_ddl``), then make its buffered writes
    visible together at one timestamp (or none of them, if the commit fails). The DDL
    commits only if no conditional write of the block (UPDATE/DELETE, a read after a
    write: ``read_check.note_read``) would conflict then (:func:`check_unmoved`, in the catalog
    transaction). Known gap: a write landing between the catalog commit and the append
    (from another environmentd, or an INSERT of this one) still fails the append after
    the DDL committed.

    Raises:
        SqlError 40001 when a table an UPDATE/DELETE of the block changed was written by
        someone else since, or a write since changed what the block read after it wrote
        (``read_check``; validated again, at most ``MAX_REVALIDATIONS`` times, when its
        table moves between the validation and the append), or when an ALTER
        TABLE or DROP moved a written table's rows since the block planned its writes
        (PostgreSQL's serialization failure; the block's writes are discarded: the client
        runs the block again)."""
    writes = s.transaction.take_pending_writes()
    checks = list(s.transaction.read_uppers.values())
    end_transaction(s)
    try:
        reads = _validated(s, checks)
        catalog = block_ddl.commit(s, check=lambda: check_unmoved(s, writes + reads))
    except BaseException:
        discard(s, writes)
        raise
    if catalog is not None:  # writes to tables the block dropped go with them
        live = {t.shard_id for t in catalog.storage_relations()}
        discard(s, [p for p in writes if p.table.shard_id not in live])
        writes = [p for p in writes if p.table.shard_id in live]
        checks = [c for c in checks if c.table.shard_id in live]
        reads = [p for p in reads if p.table.shard_id in live]
    for attempt in range(MAX_REVALIDATIONS):
        try:
            append_all(s, writes + reads)
            return
        except Conflict:
            # a table the block read moved again: validated anew (an UPDATE/DELETE's is final)
            try:
                if attempt + 1 == MAX_REVALIDATIONS:
                    raise _conflict() from None
                check_unmoved(s, writes)
                reads = _validated(s, checks)
            except BaseException:
                discard(s, writes)
                raise
        except ShardSealed:  # append_all deleted the batches
            raise SqlError(SERIALIZATION_FAILURE, "could not serialize access due to a concurrent ALTER TABLE or DROP") from None


#: how often COMMIT validates the block's reads again when a table it read moved meanwhile
MAX_REVALIDATIONS = 5


def _validated(s: Session, checks: list[ReadCheck]) -> list[Pending]:
    """Conditional appends of nothing, one per table the block read after it wrote, at
    the upper its reads are still valid at (``read_check``).

    Raises:
        SqlError 40001 when another session's write changed what the block read."""
    out = []
    for c in checks:
        upper = read_check.expected_upper(s.env.persist, c, s.statement.plan)
        if upper is None:
            raise _conflict()
        out.append(Pending(c.table, None, upper))
    return out


def _conflict() -> SqlError:
    return SqlError(SERIALIZATION_FAILURE, "could not serialize access due to concurrent update")


def check_unmoved(s: Session, writes: list[Pending]) -> None:
    """Whether every conditional write of ``writes`` would still commit now (its table's
    upper is the expected one).

    Raises:
        SqlError 40001 when one would not."""
    for p in writes:
        if p.expected_upper is not None and s.env.persist.state(p.table.shard_id).upper != p.expected_upper:
            raise _conflict()


def rollback(s: Session) -> None:
    """End the transaction, discarding its buffered writes and its DDL."""
    discard(s, s.transaction.take_pending_writes())
    block_ddl.rollback(s)
    end_transaction(s)


def discard(s: Session, writes: list) -> None:
    """Delete the parts replicas wrote for buffered writes (``writes.Pending``) that will
    never commit."""
    for p in writes:
        if isinstance(p.data, Batch):
            s.env.persist.delete_batch(p.data)


def end_transaction(s: Session) -> None:
    """Leave the transaction block, closing its cursors (its buffered writes are the
    caller's business)."""
    s.transaction.reset()
    s.release_read_ts()
    s.advisory.end_transaction()
    for mode in ("read_only", "deferrable"):  # outside a transaction: the defaults
        s.vars.values[f"transaction_{mode}"] = s.vars.get(f"default_transaction_{mode}")
    close_all(s)


def savepoint(s: Session, k, name: str) -> Result:
    """SAVEPOINT, RELEASE [SAVEPOINT], ROLLBACK TO [SAVEPOINT] (PostgreSQL's SAVEPOINT
    reference page): writes are buffered until COMMIT, so a savepoint is a position in
    the buffer. Raises 25P01 outside a transaction block, 3B001 for an unknown name."""
    if not s.transaction.active:
        raise SqlError(NO_ACTIVE_SQL_TRANSACTION, f"{'SAVEPOINT' if k == K.TRANS_STMT_SAVEPOINT else 'ROLLBACK TO SAVEPOINT' if k == K.TRANS_STMT_ROLLBACK_TO else 'RELEASE SAVEPOINT'} can only be used in transaction blocks")
    if k == K.TRANS_STMT_SAVEPOINT:
        s.transaction.add_savepoint(name, block_ddl.mark(s))
        return Result("SAVEPOINT")
    found = s.transaction.unwind_savepoints(name, keep=k != K.TRANS_STMT_RELEASE)
    if found is None:
        s.transaction.failed = True
        raise SqlError(INVALID_SAVEPOINT_SPECIFICATION, f'savepoint "{name}" does not exist')
    if k == K.TRANS_STMT_RELEASE:
        return Result("RELEASE")
    _, kept_writes, catalog_mark = found
    discard(s, s.transaction.take_pending_writes(kept_writes))
    block_ddl.rollback_to(s, catalog_mark)
    s.transaction.failed = False
    return Result("ROLLBACK")


def is_rollback_to(stmt) -> bool:
    """Whether ``stmt`` is ROLLBACK TO [SAVEPOINT] (allowed in an aborted transaction)."""
    return isinstance(stmt, ast.TransactionStmt) and stmt.kind == K.TRANS_STMT_ROLLBACK_TO


def ends_transaction(stmt) -> bool:
    """Whether ``stmt`` is COMMIT or ROLLBACK (allowed in an aborted transaction)."""
    return isinstance(stmt, ast.TransactionStmt) and stmt.kind in (K.TRANS_STMT_COMMIT, K.TRANS_STMT_ROLLBACK)
