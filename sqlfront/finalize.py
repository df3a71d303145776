"""Deleting the shards of dropped tables and materialized views, durably.

A DROP TABLE (or DROP MATERIALIZED VIEW, or an ALTER TABLE/TRUNCATE that moved a table's
rows to a new shard) records the shard it leaves in the catalog's ``to_finalize`` in the
same catalog transaction (``catalog.durable``). After the commit, :func:`finalize`
deletes the shard's parts (``PersistClient.drop_shard``: its state becomes a tombstone;
parts a read in flight still holds wait until it is done, so a shard may stay listed for
a few runs) and then removes the shard from ``to_finalize`` in a catalog transaction of
its own. A crash between the two leaves the shard listed, and the next :func:`finalize` (the
maintenance loop's, at boot or within a second; any process sharing the catalog) deletes
it: nothing leaks, and a shard is never deleted before the drop committed. Materialize
finalizes dropped shards the same way (its catalog's ``storage_collections_to_finalize``).
"""

from __future__ import annotations

import logging
import threading

from catalog import durable

log = logging.getLogger(__name__)

_lock = threading.Lock()


def finalize(persist, coordinator, seal=None) -> int:
    """Delete the parts of every shard the committed catalog lists in ``to_finalize``, then
    unlist them. One run at a time per process (another that finds one running returns 0:
    the running one, or the next maintenance round, does the work). Returns how many
    shards were finalized. ``seal(shard)`` (the group commit's) seals each first, so a
    transaction of another table and this one, planned before the DROP, lands whole
    before the tombstone or not at all (``sqlfront.group_commit``).

    Raises what persist or the catalog raise (the shards stay listed; the next run tries
    again)."""
    if not _lock.acquire(blocking=False):
        return 0
    try:
        # idempotent: another process may have done it already; a shard whose parts a
        # read in flight still holds stays listed until a later run finds them deleted
        shards = [s for s in sorted(coordinator.snapshot.to_finalize) if _sealed(seal, s) and persist.drop_shard(s)]
        if shards:
            coordinator.transact(lambda snap, ids: [durable.FinalizeShards(tuple(s for s in shards
                                                                                 if s in snap.to_finalize))]
                                 if any(s in snap.to_finalize for s in shards) else [])
        return len(shards)
    finally:
        _lock.release()


def _sealed(seal, shard: str) -> bool:
    if seal is not None:
        seal(shard)
    return True
