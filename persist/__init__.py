"""persist: durable shards of updates ``(row, time, diff)``, in the style of Materialize's persist.

A shard's updates are immutable Parquet *parts* in a :class:`~persist.blob.Blob`; its
*state* (seqno, parts with their time ranges, since, upper, leased readers, retired parts)
lives in :class:`~persist.consensus.Consensus`, advanced only by compare-and-set on seqno.
Modules by concern: ``state``, ``write`` (compare-and-append), ``read`` (snapshots,
consolidation), ``lease`` (leased readers, read holds), ``compact``, ``gc``, ``pubsub`` (state pushed
between processes); ``client`` ties them together (and listens); ``open_consensus`` picks the
Consensus (sqlite or :mod:`persist.postgres`) by URL. This package imports nothing else of the
project (but ``pgconn``, below every package).
"""

from persist.blob import Blob, FileBlob
from persist.consensus import Consensus, SqliteConsensus
from persist.state import DIFF_COLUMN, TIME_COLUMN, Part, ShardState
from persist.read import ListenBatch, PartRead, ShardSnapshot, SinceError
from persist.write import Batch, ShardSealed, UpperMismatch
from persist.lease import HoldGroup, ReadHold
from persist.client import Backoff, Listen, PersistClient


def open_consensus(target: str) -> Consensus:
    """The Consensus at ``target``: a ``postgres://`` URL (:class:`persist.postgres.PostgresConsensus`,
    shared by several processes) or else a sqlite file path (:class:`SqliteConsensus`, one
    process). Raises psycopg.OperationalError when the PostgreSQL server is unreachable."""
    # here, not at the top: importing persist does not load psycopg (pgconn imports it)
    from pgconn import is_postgres_url
    from persist.postgres import PostgresConsensus

    return PostgresConsensus(target) if is_postgres_url(target) else SqliteConsensus(target)


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
    "HoldGroup",
    "ReadHold",
    "PersistClient",
    "Backoff",
    "Listen",
    "ListenBatch",
]
