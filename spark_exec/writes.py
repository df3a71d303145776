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
from persist import DIFF_COLUMN, TIME_COLUMN
from persist.write import COMPRESSION

#: Parquet row group size of the parts a replica writes (bytes, before compression)
PARQUET_BLOCK_BYTES = 16 << 20


def write_job(table: Table, url_for: Callable[[str], str], diffs: bool, timed: bool = False):
    """A ClusterCoordinator job that writes the lowered plan's rows (``diffs``: plus a
    last ``_mz_diff`` column; ``timed``: ``_mz_time`` before it) as a part at
    ``url_for(replica_id)``; returns the replica id. Each replica racing the job writes
    its own URL, so the loser's files never mix in."""
    names = [c.name for c in table.columns] + ([TIME_COLUMN] if timed else []) + ([DIFF_COLUMN] if diffs else [])

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


def holds_intervals(t) -> bool:
    """Whether values of SqlType ``t`` are (or hold) intervals: Spark intervals in a
    change, structs in a part, and nothing Arrow can carry back from Spark."""
    return "interval" in (t.name, t.element.name if t.is_array else None)


def stored_updates(df: DataFrame, cols, timed: bool = False) -> DataFrame:
    """Updates (``c0 .. cN-1``, then ``_t`` when ``timed``, then ``_d``) as a part stores
    them for a relation of columns ``cols`` ((name, SqlType) pairs): each column cast to
    its storage type (a plan may type it more precisely, an unconstrained numeric's
    scale say), equal rows (at equal times) consolidated, and an addition of n copies
    written as n updates of +1 (persist reads a part without retractions one row per
    update; retractions make readers sum the diffs)."""
    from pyspark.sql.connect import functions as F

    from spark_exec.lower import numbered_maps, spark_type, summed_diffs

    keys = [f"c{i}" for i in range(len(cols))]
    stored = [F.col(k) if holds_intervals(t)
              else F.col(k).cast(spark_type(t)).alias(k) for k, (_, t) in zip(keys, cols)]
    group = keys + (["_t"] if timed else [])
    df = summed_diffs(df.select(*stored, *(["_t"] if timed else []), "_d"), group, "_d", numbered_maps(cols))
    d = F.col("_d")
    # one pass over the sums (a union of two filters of them would compute them twice)
    each = F.when(d > 0, F.array_repeat(F.lit(1).cast("long"), d.cast("int"))).otherwise(F.array(d))
    return df.where(d != 0).select(*group, F.explode(each).alias("_d"))
