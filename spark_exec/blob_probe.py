"""The Blob probe: before a replica whose executors may run on other hosts (a Spark
standalone size, a REMOTE replica) takes work, one of its executors must read a part
environmentd wrote to persist's Blob. A Blob directory that only environmentd's host sees
otherwise fails every read of a table later, as "Path does not exist" (issue 27).

The probe is a one-row Parquet file under ``sqlfront-probe/`` in Blob, read back through
the replica's session with its schema given, so the read is a task on an executor (Spark
lists the file on the driver, reads it on an executor), then deleted. A key left behind by
a crash is an orphan the next start's clean-up removes (``persist.gc.orphans``: it is no
live shard).
"""

from __future__ import annotations

import io
import secrets
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from persist.blob import Blob

#: the Blob "shard" probe parts are written under
PROBE_PREFIX = "sqlfront-probe"
#: how much of Spark's error the failure message keeps (characters)
ERROR_CHARS = 400


class BlobUnreachable(Exception):
    """The replica's executors cannot read persist Blob; the message says where and why."""


def probe_blob(session, blob: Blob) -> None:
    """Write a probe part to ``blob`` and read it back on ``session``'s executors.

    Raises:
        BlobUnreachable naming the part's URL and Spark's error, with what to change."""
    key = f"{PROBE_PREFIX}/{uuid.uuid4().hex}.parquet"
    value = secrets.randbits(62)
    out = io.BytesIO()
    pq.write_table(pa.table({"probe": pa.array([value], pa.int64())}), out)
    blob.put(key, out.getvalue())
    url = blob.url(key)
    try:
        rows = session.read.schema("probe BIGINT").parquet(url).collect()
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BlobUnreachable(_message(url, first[:ERROR_CHARS])) from None
    finally:
        blob.delete(key)
    if [r[0] for r in rows] != [value]:
        raise BlobUnreachable(_message(url, f"it read {len(rows)} row(s), not the one written"))


def _message(url: str, why: str) -> str:
    return (f"its executors cannot read persist Blob (probe part {url}): {why}. Every host of the replica's "
            "Spark cluster must see the Blob at the same path (a shared mount, NFS), or --persist-blob-url must "
            "be a URL Spark and pyarrow both read")
