"""Writes computed on a replica: a plan's rows written by Spark straight to Blob.

UPDATE and DELETE plans yield updates (the table's columns, then ``_mz_diff``); INSERT ...
SELECT yields rows. The replica writes them as a Parquet part (a directory of files) at a
URL persist handed out; environmentd then only publishes the part's metadata
(``persist.write.written_batch``). Data never passes through environmentd, so the cost
grows with the rows changed, not with the table.
"""

from __future__ import annotations

import threading
from typing import Callable

from pyspark.sql.connect.dataframe import DataFrame

from catalog.snapshot import Table
from persist import DIFF_COLUMN
from persist.write import COMPRESSION

#: Parquet row group size of the parts a replica writes (bytes, before compression)
PARQUET_BLOCK_BYTES = 16 << 20


def write_job(table: Table, url_for: Callable[[str], str], diffs: bool):
    """A ClusterCoordinator job that writes the lowered plan's rows (``diffs``: plus a
    last ``_mz_diff`` column) as a part at ``url_for(replica_id)``; returns the replica id.
    Each replica racing the job writes its own URL, so the loser's files never mix in."""
    names = [c.name for c in table.columns] + ([DIFF_COLUMN] if diffs else [])

    def job(df: DataFrame, replica_id: str) -> str:
        spark = df.sparkSession
        # Timestamps as Parquet's INT64 micros (Spark's default INT96 is deprecated).
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        # Row groups of ~16 MiB (Parquet's default is 128 MiB): finer column statistics for
        # point reads to skip by, and as persist.write.ROW_GROUP_ROWS for parts written here.
        (df.toDF(*names).write.mode("overwrite").option("compression", COMPRESSION)
         .option("parquet.block.size", PARQUET_BLOCK_BYTES).parquet(url_for(replica_id)))
        return replica_id

    return job


class PartUrls:
    """One fresh part (key, URL) per replica racing a write job: ``new_part()`` gives a
    (key, url) pair; ``url_for`` is what :func:`write_job` calls."""

    def __init__(self, new_part: Callable[[], tuple[str, str]]):
        self._new_part = new_part
        self._lock = threading.Lock()
        self.parts: dict[str, tuple[str, str]] = {}

    def url_for(self, replica_id: str) -> str:
        with self._lock:
            if replica_id not in self.parts:
                self.parts[replica_id] = self._new_part()
            return self.parts[replica_id][1]

    def keys_except(self, winner: str | None) -> list[str]:
        """Keys of the parts of every replica but ``winner`` (to delete)."""
        with self._lock:
            return [k for rid, (k, _) in self.parts.items() if rid != winner]
