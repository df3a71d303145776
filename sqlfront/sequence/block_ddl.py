"""DDL in a transaction block: PostgreSQL's transactional DDL, for the tools that rely on
it (psycopg's test fixtures create tables in a block and roll it back; dbt-postgres swaps
tables in one). Materialize refuses most DDL in a block; decided (issue 16): PostgreSQL's
behaviour, for the statements whose effect is only a catalog change.

A catalog change of an explicit block is not sent to the Coordinator: its ops are applied
to the block's *pending catalog* (the committed catalog as of the block's first DDL, plus
the block's own ops), which every later statement of the block plans against
(``Environment.snapshot`` returns it in the session's thread, :data:`BLOCK_CATALOG`).
Nobody else sees it. COMMIT sends all the ops to the Coordinator as one catalog
transaction, which applies them only if the catalog has not changed since the block's
first DDL (else 40001, and nothing of the block happens); ROLLBACK forgets them.

Refused in a block with 25001 (their effect is more than a catalog change, or is outside
the catalog's tables and views): cluster, replica and role statements, and ALTER TABLE
that rewrites a table's rows (``sqlfront.sequence.alter``). A sequence made in the block
gets its value row at once (nextval works in the block), removed again on ROLLBACK.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from catalog import durable
from catalog.errors import SqlError
from catalog.snapshot import CatalogSnapshot, Sequence
from sqlfront.coordinator import IdAllocator
from sqlfront.environment import BLOCK_CATALOG

if TYPE_CHECKING:
    from sqlfront.session import Session

#: SQLSTATE of a statement that may not run in a transaction block (PostgreSQL's)
ACTIVE_SQL_TRANSACTION = "25001"

#: catalog ops a block may buffer: their side effects (creating a shard, poking the
#: indexes' arrangements, dropping a shard) all happen after the COMMIT's catalog commit
BLOCK_OPS = (durable.CreateTable, durable.DropTable, durable.UpdateTable, durable.CreateView, durable.DropView,
             durable.CreateIndex, durable.DropIndex, durable.CreateSequence, durable.DropSequence,
             durable.UpdateSequence, durable.CreateSchema, durable.DropSchema, durable.RenameSchema,
             durable.SetComment, durable.SetOwner, durable.SetPrivileges, durable.CreateMaterializedView,
             durable.UpdateMaterializedView, durable.DropMaterializedView)

#: versions of pending catalogs: negative, never a committed catalog's (caches keyed by
#: version must not mix a block's catalog with a committed one)
_versions = itertools.count(-1, -1)


@dataclass
class BlockCatalog:
    """The catalog changes of one transaction block, not yet committed."""

    #: the committed catalog the block's first DDL planned against
    base: CatalogSnapshot
    #: the committed catalog with the block's ops applied: what the block's statements see
    catalog: CatalogSnapshot
    #: the ops, in order, as COMMIT sends them
    ops: list = field(default_factory=list)
    #: applies ops to snapshots without touching the real catalog (an in-memory store)
    scratch: durable.CatalogStore | None = None
    #: sequences made in the block (their value rows exist already)
    sequences: list[Sequence] = field(default_factory=list)
    #: shards of the block's tables that exist already (CREATE TABLE AS fills at once)
    shards: list[str] = field(default_factory=list)


def in_block(s: Session) -> bool:
    """Whether DDL of the session is buffered (an explicit transaction block)."""
    return s.in_transaction and not s._implicit


def apply(s: Session, build) -> None:
    """Run catalog transaction ``build(snapshot, ids) -> ops`` against the block's pending
    catalog and add its ops to the block.

    Raises:
        SqlError 25001 for a statement whose ops may not be buffered; ``build``'s errors
        (nothing is added then)."""
    b: BlockCatalog | None = s._block_catalog
    snap = b.catalog if b is not None else s.env.coordinator.snapshot
    ids = IdAllocator(snap.next_ids)
    ops = build(snap, ids)
    for op in ops:
        if not isinstance(op, BLOCK_OPS):
            raise SqlError(ACTIVE_SQL_TRANSACTION, "this statement cannot run inside a transaction block "
                           f"({type(op).__name__} is not transactional here)")
    if not ops:
        return
    if b is None:
        b = BlockCatalog(snap, snap, scratch=durable.CatalogStore(":memory:"))
    new = b.scratch.transact(snap, ops, ids.next)
    for op in ops:
        if isinstance(op, durable.CreateSequence):
            s.env.sequences.create(op.sequence)
            b.sequences.append(op.sequence)
    b.catalog = new.with_changes(version=next(_versions))
    b.ops += ops
    s._block_catalog = b
    BLOCK_CATALOG.set(b.catalog)  # the rest of this statement sees it too


def commit(s: Session, check=lambda: None) -> CatalogSnapshot | None:
    """Commit the block's catalog ops as one catalog transaction; returns the committed
    catalog (None: the block made no catalog change). ``check()`` runs in the catalog
    transaction, before anything is committed: its error stops the commit (the block's
    writes would conflict).

    Raises:
        SqlError 40001 when the catalog changed since the block's first DDL (another
        session's DDL); ``check``'s errors. Nothing of the block is committed then."""
    b: BlockCatalog | None = s._block_catalog
    if b is None:
        return None
    forget(s)
    values = {}
    for q in b.sequences:
        try:
            values[q.id] = s.env.sequences.state(q)
        except SqlError:  # dropped again in the block
            pass

    def build(snap: CatalogSnapshot, ids: IdAllocator) -> list:
        if snap.version != b.base.version:
            raise SqlError("40001", "could not serialize access: the catalog changed since this transaction's "
                                    "first DDL statement")
        check()
        ids.next.clear()
        ids.next.update(b.catalog.next_ids)  # the ids the block's ops took
        return list(b.ops)

    try:
        new = s.env.coordinator.transact(build)
    except BaseException:
        _drop_made(s, b)
        raise
    for q in b.sequences:  # the commit made their value rows afresh: keep what the block took
        if q.id in new.sequences and values.get(q.id) is not None:
            last, called = values[q.id]
            s.env.sequences.setval(q, last, called)
    return new


def rollback(s: Session) -> None:
    """Forget the block's catalog changes."""
    b: BlockCatalog | None = s._block_catalog
    if b is not None:
        forget(s)
        _drop_made(s, b)


def mark(s: Session):
    """The block's catalog changes so far (a SAVEPOINT's), for :func:`rollback_to`."""
    b: BlockCatalog | None = s._block_catalog
    return None if b is None else (b.catalog, len(b.ops), len(b.sequences), len(b.shards))


def rollback_to(s: Session, mark) -> None:
    """ROLLBACK TO a savepoint: forget the catalog changes made since ``mark``."""
    b: BlockCatalog | None = s._block_catalog
    if b is None:
        return
    if mark is None:
        rollback(s)
        return
    b.catalog, n_ops, n_seq, n_shards = mark
    del b.ops[n_ops:]
    for shard in b.shards[n_shards:]:
        s.env.persist.forget_shard(shard)
    del b.shards[n_shards:]
    # a fresh scratch store holding only the ops kept (its rows constrain later ops)
    b.scratch.close()
    b.scratch = durable.CatalogStore(":memory:")
    b.scratch.transact(b.base, b.ops, dict(b.catalog.next_ids))
    for q in b.sequences[n_seq:]:
        s.env.sequences.forget([q.id])
    del b.sequences[n_seq:]
    BLOCK_CATALOG.set(b.catalog)


def forget(s: Session) -> None:
    b: BlockCatalog | None = s._block_catalog
    s._block_catalog = None
    BLOCK_CATALOG.set(None)
    if b is not None and b.scratch is not None:
        b.scratch.close()


def create_shard_now(s: Session, shard_id: str) -> None:
    """Create the shard of a table the block made, before COMMIT (CREATE TABLE AS fills
    it at once, so the block's UPDATE and DELETE read its rows as committed ones). Only
    the block knows the shard until COMMIT; ROLLBACK deletes it."""
    b: BlockCatalog | None = s._block_catalog
    s.env.persist.create_shard(shard_id, s.env.oracle.read_ts())
    if b is not None:
        b.shards.append(shard_id)


def _drop_made(s: Session, b: BlockCatalog) -> None:
    """Undo what a block that did not commit made outside the catalog."""
    for q in b.sequences:
        s.env.sequences.forget([q.id])
    for shard in b.shards:  # nobody else knew it: no tombstone (its id is handed out again)
        s.env.persist.forget_shard(shard)
