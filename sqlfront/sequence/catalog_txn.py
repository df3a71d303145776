"""Running a DDL statement's catalog transaction as the session's role, in or outside a
transaction block: the one way every DDL statement of ``sqlfront.sequence`` changes the
catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING

from catalog.errors import SqlError, INVALID_TRANSACTION_STATE, READ_ONLY_SQL_TRANSACTION

if TYPE_CHECKING:
    from sqlfront.session import Session


def run(s: Session, txn) -> None:
    """Run a catalog transaction, checked as the session's current role (privileges and
    ownership, ``sqlfront.rbac.authorize_ddl``; what it creates, that role owns). In a
    transaction block it takes effect at COMMIT and is undone by ROLLBACK, as in
    PostgreSQL (``sqlfront.sequence.block_ddl``); it may not follow reads of user data
    there (Materialize's transactions that read are read-only). In the implicit
    transaction of a multi-statement query it takes effect at once, before any write.

    Raises:
        SqlError 25000 after reads in a block or writes in an implicit transaction;
        25006 in a READ ONLY one; 25001 for DDL a block cannot hold."""
    from sqlfront.rbac import authorize_ddl
    from sqlfront.sequence import block_ddl

    if s.transaction.read:
        raise SqlError(INVALID_TRANSACTION_STATE, "DDL cannot follow reads in a transaction")
    if s.transaction.read_only:
        raise SqlError(READ_ONLY_SQL_TRANSACTION, "cannot execute DDL in a read-only transaction")
    if block_ddl.in_block(s):
        block_ddl.apply(s, authorize_ddl(txn))
        return
    if s.transaction.pending_writes:
        raise SqlError(INVALID_TRANSACTION_STATE, "DDL cannot follow writes in a transaction")
    s.env.coordinator.transact(authorize_ddl(txn), s.scope)
