"""Results spilled to Blob: a peek's answer that a replica cannot hold in memory.

Spark Connect's driver sends a result by turning each partition into Arrow batches in
memory and keeping every batch the client has not read yet: nothing paces the job by
the client, so an answer of gigabytes exhausts the replica's heap and kills its JVM
(and, raced by active replication, every replica of the cluster). An answer that the
lowering finds large (``lower.spills``: one that multiplies its inputs' rows into
millions, or is estimated at millions of rows) is therefore not collected: the replica writes it as Parquet into Blob, which
executors do row group by row group in bounded memory, and environmentd reads the files
back one record batch at a time, in partition order, then deletes them. Kyuubi's
``kyuubi.operation.result.saveToFile`` takes the same path for large results. Such a
peek also runs on one replica at a time, not raced by all (``spark_exec.crashes``).

Spilled results live under the Blob "shard" ``SPILL_SHARD`` with keys naming their
writer, so the orphan sweep at start (``persist.gc.orphans``) removes any that a crash
left behind.
"""

from __future__ import annotations

import logging
from typing import Iterator

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql.connect.dataframe import DataFrame

from persist.blob import Blob

log = logging.getLogger(__name__)

#: the Blob prefix of spilled results (no shard has this id)
SPILL_SHARD = "peek-results"
#: rows per record batch read back from a spilled result
READ_BATCH_ROWS = 65_536


class ResultSpill:
    """Writes a spread peek's result to Blob from a replica and reads it back here."""

    def __init__(self, blob: Blob):
        self.blob = blob

    def write(self, df: DataFrame, schema: pa.Schema) -> "SpilledResult":
        """Run ``df`` on its replica, writing its rows to a new key; the result to read.

        Raises:
            the job's errors (the key is deleted first)."""
        key = self.blob.new_part_key(SPILL_SHARD)
        try:
            df.sparkSession.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
            df.write.mode("overwrite").parquet(self.blob.url(key))
        except BaseException:
            self.blob.delete(key)
            raise
        return SpilledResult(self.blob, key, schema)


class SpilledResult:
    """A spilled result: an iterator of Arrow tables in partition order, each cast to
    ``schema``; ``close()`` deletes the files (also at the end)."""

    def __init__(self, blob: Blob, key: str, schema: pa.Schema):
        self.blob, self.key, self.schema = blob, key, schema
        self._batches = self._read()

    def _read(self) -> Iterator[pa.Table]:
        fs, root = pafs.FileSystem.from_uri(self.blob.url(self.key))
        # Spark names files part-<partition>-...: sorted names are the partitions' order
        files = sorted(f.path for f in fs.get_file_info(pafs.FileSelector(root))
                       if f.type == pafs.FileType.File and f.base_name.startswith("part-"))
        for path in files:
            with fs.open_input_file(path) as f:
                for batch in pq.ParquetFile(f).iter_batches(batch_size=READ_BATCH_ROWS):
                    if batch.num_rows:
                        yield pa.Table.from_batches([batch]).rename_columns(self.schema.names).cast(self.schema)

    def __iter__(self):
        return self

    def __next__(self) -> pa.Table:
        try:
            return next(self._batches)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Delete the spilled files. Idempotent."""
        self._batches.close()
        try:
            self.blob.delete(self.key)
        except OSError as e:  # the orphan sweep at the next start removes it
            log.warning("could not delete spilled result %s: %s", self.key, e)
