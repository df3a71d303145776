"""persist: durable shards of updates, in the style of Materialize's persist.

A shard's data are immutable Parquet *parts* in a :class:`~persist.blob.Blob`; its
*state* (seqno, parts with their timestamps, since, upper) lives in
:class:`~persist.consensus.Consensus`, advanced only by compare-and-set on seqno.
This package imports nothing else of the project.
"""

from persist.blob import Blob, FileBlob
from persist.consensus import Consensus, SqliteConsensus
from persist.state import Part, ShardState
from persist.client import PersistClient, ShardSnapshot

__all__ = [
    "Blob",
    "FileBlob",
    "Consensus",
    "SqliteConsensus",
    "Part",
    "ShardState",
    "PersistClient",
    "ShardSnapshot",
]
