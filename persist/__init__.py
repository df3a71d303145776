"""persist: durable shards of updates ``(row, time, diff)``, in the style of Materialize's persist.

A shard's updates are immutable Parquet *parts* in a :class:`~persist.blob.Blob`; its
*state* (seqno, parts with their time ranges, since, upper, leased readers, retired parts)
lives in :class:`~persist.consensus.Consensus`, advanced only by compare-and-set on seqno.
Modules by concern: ``state``, ``write`` (compare-and-append), ``read`` (snapshots,
consolidation), ``lease`` (leased readers, read holds), ``compact``, ``gc``, ``pubsub`` (state pushed
between processes); ``client`` ties them together (and listens). This package imports nothing else of the project.
"""

from persist.blob import Blob, FileBlob
from persist.consensus import Consensus, SqliteConsensus, open_consensus
from persist.state import DIFF_COLUMN, TIME_COLUMN, Part, ShardState
from persist.read import ListenBatch, PartRead, ShardSnapshot, SinceError
from persist.write import Batch, ShardSealed, UpperMismatch
from persist.lease import ReadHold
from persist.client import Backoff, Listen, PersistClient

__all__ = [
    "Blob",
    "FileBlob",
    "Consensus",
    "SqliteConsensus",
    "open_consensus",
    "DIFF_COLUMN",
    "TIME_COLUMN",
    "Part",
    "ShardState",
    "PartRead",
    "ShardSnapshot",
    "SinceError",
    "Batch",
    "UpperMismatch",
    "ShardSealed",
    "ReadHold",
    "PersistClient",
    "Backoff",
    "Listen",
    "ListenBatch",
]
