"""Garbage collection: delete what no reader can reach any more, by seqno alone.

A part retired at seqno ``s`` (compaction replaced it) is referenced only by states
before ``s``; once every live leased reader is at ``s`` or later, nothing can read it and
it is deleted. Consensus versions below the oldest live reader's seqno are truncated
(each version is a full state, a rollup, so nothing is lost). Materialize persist's GC
works the same way; the sharded-persist-reads seed is the bug this avoids.
"""

from __future__ import annotations

import logging
from typing import Callable

from persist.blob import Blob
from persist.consensus import Consensus
from persist.lease import now_ms
from persist.state import ShardState

log = logging.getLogger(__name__)


def collectable(state: ShardState) -> tuple[list[str], tuple]:
    """(keys to delete now, retired entries to keep) for ``state``."""
    oldest = state.oldest_reader_seqno(now_ms())
    keys = [k for r in state.retired if r.seqno <= oldest for k in r.keys]
    keep = tuple(r for r in state.retired if r.seqno > oldest)
    return keys, keep


def delete_and_truncate(consensus: Consensus, blob: Blob, shard_id: str, keys: list[str], oldest_seqno: int) -> None:
    """After a state without the retired entries of ``keys`` was committed: delete those
    parts, then truncate Consensus below ``oldest_seqno``. A crash in between leaks the
    parts, which :func:`orphans` finds at the next start."""
    for k in keys:
        blob.delete(k)
    consensus.truncate(shard_id, oldest_seqno)


def orphans(consensus: Consensus, blob: Blob, live_shards: set[str] | None = None,
            deletable: Callable[[str], bool] | None = None) -> list[str]:
    """Keys in Blob that no current state refers to (written by a writer that died
    before its compare-and-append, retired parts whose deletion a crash interrupted),
    plus every key of a shard not in ``live_shards`` (when given). Call it only when no
    writer of these shards runs (at startup), or pass ``deletable(key)``: only the
    unreferenced keys it accepts are returned (with several processes writing: parts of
    writers known to be gone, see ``sqlfront.environment``)."""
    out = []
    by_shard: dict[str, list[str]] = {}
    for key in blob.list_keys():
        by_shard.setdefault(key.split("/", 1)[0], []).append(key)
    for shard, keys in by_shard.items():
        if live_shards is not None and shard not in live_shards:
            out.extend(keys)
            continue
        head = consensus.head(shard)
        st = ShardState.decode(head[1]) if head else ShardState()
        referenced = st.blob_keys()
        out.extend(k for k in keys if k not in referenced and (deletable is None or deletable(k)))
    return out
