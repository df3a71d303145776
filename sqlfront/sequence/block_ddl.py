"""DDL in a transaction block: PostgreSQL's transactional DDL, for the tools that rely on
it (psycopg's test fixtures create tables in a block and roll it back; dbt-postgres swaps
tables in one). Materialize refuses most DDL in a block; decided (issue 16): PostgreSQL's
behaviour, for the statements whose effect is only a catalog change.

A catalog change of an explicit block is not sent to the Coordinator: its ops are applied
to the block's *pending catalog* (the committed catalog as of the block's first DDL, plus
the block's own ops), which every later statement of the block plans against
(``Session.catalog`` returns it while the block holds uncommitted DDL).
Nobody else sees it. COMMIT sends all the ops to the Coordinator as one catalog
transaction, which applies them to the catalog of then unless another transaction
committed since the block's first DDL changed what the block changed or read (the same
object, name or schema, an object a view of one side names, an index's relation or
cluster): then 40001, and nothing of the block happens (:func:`conflict`). DDL on
unrelated objects does not conflict, as in PostgreSQL, whose DDL locks only the objects
it touches. The block's ids are taken from the Coordinator at once
(``Coordinator.reserve_id``), so what others create meanwhile never takes them.
ROLLBACK forgets the ops.

Refused in a block with 25001 (their effect is more than a catalog change, or is outside
the catalog's tables and views): cluster, replica and role statements, and ALTER TABLE
that rewrites a table's rows (``sqlfront.sequence.alter``). A sequence made in the block
gets its value row at once (nextval works in the block), removed again on ROLLBACK.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from catalog import durable
from catalog.errors import SqlError, ACTIVE_SQL_TRANSACTION, SERIALIZATION_FAILURE
from catalog.snapshot import CatalogSnapshot, Sequence
from sqlfront.coordinator import IdAllocator

if TYPE_CHECKING:
    from sqlfront.session import Session


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
    return s.transaction.in_block


def apply(s: Session, build) -> None:
    """Run catalog transaction ``build(snapshot, ids) -> ops`` against the block's pending
    catalog, as the session reads it (``Session.scope``), and add its ops to the block.

    Raises:
        SqlError 25001 for a statement whose ops may not be buffered; ``build``'s errors
        (nothing is added then)."""
    b: BlockCatalog | None = s.transaction.block_catalog
    snap = b.catalog if b is not None else s.env.coordinator.snapshot
    ids = _ReservedIds(s.env.coordinator, snap.next_ids)
    ops = build(snap.scoped(s.scope), ids)
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
    s.transaction.block_catalog = b  # the rest of this statement sees it too (Session.catalog)


def commit(s: Session, check=lambda: None) -> CatalogSnapshot | None:
    """Commit the block's catalog ops as one catalog transaction; returns the committed
    catalog (None: the block made no catalog change). ``check()`` runs in the catalog
    transaction, before anything is committed: its error stops the commit (the block's
    writes would conflict).

    Raises:
        SqlError 40001 when the catalog changed since the block's first DDL (another
        session's DDL); ``check``'s errors. Nothing of the block is committed then."""
    b: BlockCatalog | None = s.transaction.block_catalog
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
            why = conflict(b.base, b.catalog, snap)
            if why is not None:
                raise SqlError(SERIALIZATION_FAILURE, "could not serialize access: a concurrent transaction changed "
                                        f"{why} since this transaction's first DDL statement")
        check()
        return list(b.ops)  # their ids were reserved: below ``snap.next_ids`` already

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


class _ReservedIds(IdAllocator):
    """The ids of a block's ops: each reserved in the committed catalog when taken."""

    def __init__(self, coordinator, next_ids):
        super().__init__(next_ids)
        self._coordinator = coordinator

    def allocate(self, kind: str) -> str:
        got = self._coordinator.reserve_id(kind)
        self.next[kind] = max(self.next.get(kind, 1), int(got[1:]) + 1)
        return got


#: CatalogSnapshot fields that are not catalog objects
_NOT_OBJECTS = ("version", "next_ids", "builtins", "to_finalize", "scope")
#: the key kind of each field's objects (an item's id is unique among all items)
_KINDS = {"clusters": "cluster", "replicas": "replica", "roles": "role", "role_members": "role_member",
          "default_privileges": "default_privileges"}


def footprint(before: CatalogSnapshot, after: CatalogSnapshot) -> tuple[set, set]:
    """What the change from ``before`` to ``after`` wrote and read, as keys:
    ``(kind, id)`` of each object it created, dropped or changed (owners, privileges and
    comments count as their object's), the ``(schema, name)`` and cluster, schema and role
    names it took or freed; and what those objects depend on: their schema and cluster,
    an index's relation, the relations a view's query names (as ``after`` resolves them)."""
    from sqlfront.sequence.objects import _reads

    writes: set = set()
    reads: set = set()
    for f in dataclasses.fields(CatalogSnapshot):
        if f.name in _NOT_OBJECTS:
            continue
        old, new = getattr(before, f.name), getattr(after, f.name)
        for k in old.keys() | new.keys():
            a, b = old.get(k), new.get(k)
            if a is b or a == b:
                continue
            writes.add(_object_key(f.name, k))
            for obj in (a, b):
                writes |= _names(obj)
            if b is None:
                continue
            if isinstance(getattr(b, "schema", None), str):
                reads.add(("schema", b.schema))
            for attr, kind in (("cluster_id", "cluster"), ("on_id", "item")):
                if getattr(b, attr, None):
                    reads.add((kind, getattr(b, attr)))
            if hasattr(b, "sql") and f.name in ("views", "materialized_views"):
                for schema, name in _reads(b):
                    rel = _resolve(after, schema or b.schema, name)
                    reads.add(("name", schema or b.schema, name))
                    if rel is not None:
                        reads.add(("item", rel.id))
    return writes, reads


def _object_key(field_name: str, k) -> tuple:
    if field_name in ("owners", "privileges"):  # "item:u5", "schema:u2", "cluster:u1"
        kind, _, oid = k.partition(":")
        return ("cluster" if kind == "cluster" else "item", oid)
    if field_name == "comments":  # (object id, column)
        return ("item", k[0])
    return (_KINDS.get(field_name, "item"), k)


def _names(obj) -> set:
    """The names ``obj`` holds: an item's (schema, name), a schema's, cluster's or role's."""
    from catalog.snapshot import Cluster, Role, Schema

    if obj is None:
        return set()
    if isinstance(obj, Schema):
        return {("schema", obj.name)}
    if isinstance(obj, (Cluster, Role)):
        return {(type(obj).__name__.lower() + "_name", obj.name)}
    if isinstance(getattr(obj, "schema", None), str) and isinstance(getattr(obj, "name", None), str):
        return {("name", obj.schema, obj.name)}
    return set()


def _resolve(snap: CatalogSnapshot, schema: str, name: str):
    try:
        return snap.relation_by_name(schema, name)
    except SqlError:
        return None


def conflict(base: CatalogSnapshot, mine: CatalogSnapshot, now: CatalogSnapshot) -> str | None:
    """Whether a block's catalog change (``base`` to ``mine``) conflicts with what others
    committed since (``base`` to ``now``): one side wrote what the other wrote or read.
    Returns what both touched, for the 40001's message, or None (the block's ops apply to
    ``now`` as they stand)."""
    my_writes, my_reads = footprint(base, mine)
    their_writes, their_reads = footprint(base, now)
    both = (my_writes & (their_writes | their_reads)) | (my_reads & their_writes)
    if not both:
        return None
    kind, *key = min(both, key=repr)
    return f"{kind} {'.'.join(map(str, key))}"


def rollback(s: Session) -> None:
    """Forget the block's catalog changes."""
    b: BlockCatalog | None = s.transaction.block_catalog
    if b is not None:
        forget(s)
        _drop_made(s, b)


def mark(s: Session):
    """The block's catalog changes so far (a SAVEPOINT's), for :func:`rollback_to`."""
    b: BlockCatalog | None = s.transaction.block_catalog
    return None if b is None else (b.catalog, len(b.ops), len(b.sequences), len(b.shards))


def rollback_to(s: Session, mark) -> None:
    """ROLLBACK TO a savepoint: forget the catalog changes made since ``mark``."""
    b: BlockCatalog | None = s.transaction.block_catalog
    if b is None:
        return
    if mark is None:
        rollback(s)
        return
    b.catalog, n_ops, n_seq, n_shards = mark
    del b.ops[n_ops:]
    for shard in b.shards[n_shards:]:
        s.env.storage.forget_shard(shard)
    del b.shards[n_shards:]
    # a fresh scratch store holding only the ops kept (its rows constrain later ops)
    b.scratch.close()
    b.scratch = durable.CatalogStore(":memory:")
    b.scratch.transact(b.base, b.ops, dict(b.catalog.next_ids))
    for q in b.sequences[n_seq:]:
        s.env.sequences.forget([q.id])
    del b.sequences[n_seq:]


def forget(s: Session) -> None:
    b: BlockCatalog | None = s.transaction.block_catalog
    s.transaction.block_catalog = None
    if b is not None and b.scratch is not None:
        b.scratch.close()


def create_shard_now(s: Session, shard_id: str) -> None:
    """Create the shard of a table the block made, before COMMIT (CREATE TABLE AS fills
    it at once, so the block's UPDATE and DELETE read its rows as committed ones). Only
    the block knows the shard until COMMIT; ROLLBACK deletes it."""
    b: BlockCatalog | None = s.transaction.block_catalog
    s.env.storage.create_shard(shard_id)
    if b is not None:
        b.shards.append(shard_id)


def _drop_made(s: Session, b: BlockCatalog) -> None:
    """Undo what a block that did not commit made outside the catalog."""
    for q in b.sequences:
        s.env.sequences.forget([q.id])
    for shard in b.shards:  # nobody else knew it: no tombstone (its id is handed out again)
        s.env.storage.forget_shard(shard)
