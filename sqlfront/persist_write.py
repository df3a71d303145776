"""A persist writer outside environmentd: ``sqlfront persist-write`` appends rows to a
table's shard of a data directory while a server runs on it (or not). It is the second
process the persist PubSub seed is about: its compare-and-sets are pushed to the server's
PubSub, so subscriptions there see its rows in milliseconds.

Timestamps (``catalog.oracle.fenced_write_ts``): a write takes a timestamp above the
oracle's durable high-water mark (above every timestamp environmentd handed out, reads
included), above the wall clock and at or above the shard's upper, publishes its part by
compare-and-append at it, and then waits for the wall clock to pass it before it reports
the commit (commit wait), so any read environmentd starts afterwards, at its read
timestamp (which follows the clock), sees the rows; environmentd's own later writes to
the shard go above it (group commit observes the upper). The cost is up to the oracle's
window (1 s) of wait per commit, in the writer only. One table per commit: there is no
multi-shard transaction record here.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from catalog.durable import CatalogStore
from catalog.errors import SqlError
from catalog.oracle import commit_wait, fenced_write_ts
from catalog.snapshot import Table
from persist import FileBlob, PersistClient, SqliteConsensus, UpperMismatch
from sqlfront.environment import PUBSUB_ADDRESS_FILE


@dataclass(frozen=True)
class Commit:
    """One append: its timestamp (ms), rows, and the wall clock (seconds since the epoch)
    when its compare-and-append won (before the commit wait)."""

    ts: int
    rows: int
    committed_at: float


class StandaloneWriter:
    """Appends rows to tables of the data directory ``data_dir``.

    ``pubsub``: the PubSub address (``HOST:PORT``) to push to; ``"auto"`` reads it from the
    data directory (``persist_pubsub``, written by a running server, with the token the
    service wants); ``"off"`` or None: no pushes (followers then find the writes by
    polling).

    Raises:
        FileNotFoundError when ``data_dir`` has no catalog."""

    def __init__(self, data_dir: Path, pubsub: str | None = "auto", connect_timeout_s: float = 2.0):
        d = Path(data_dir).resolve()
        if not (d / "catalog.db").exists():
            raise FileNotFoundError(f"{d} has no catalog.db: not a data directory")
        self.data_dir = d
        self._catalog = CatalogStore(str(d / "catalog.db"))
        f = d / PUBSUB_ADDRESS_FILE
        served = f.read_text().split() if f.exists() else []
        token = served[1] if len(served) > 1 else None
        if pubsub == "auto":
            pubsub = served[0] if served else None
        if pubsub == "off":
            pubsub = None
        self.persist = PersistClient(FileBlob(d / "blob"), SqliteConsensus(str(d / "consensus.db")),
                                     reader_id=f"writer-{uuid.uuid4().hex[:8]}:1", pubsub_address=pubsub,
                                     pubsub_token=token)
        if self.persist.pubsub is not None:
            self.persist.pubsub.connected.wait(connect_timeout_s)  # else the first pushes are lost

    def table(self, name: str) -> Table:
        """The user table ``name`` (``schema.name`` or a name in ``public``).

        Raises:
            SqlError 42P01 when there is no such table."""
        schema, _, rel = name.rpartition(".")
        for t in self._catalog.load().tables.values():
            if t.name == rel and t.schema == (schema or "public"):
                return t
        raise SqlError("42P01", f'relation "{name}" does not exist')

    def append(self, table: Table, rows: list[tuple]) -> Commit:
        """Append ``rows`` (Python values in the table's column order) in one commit."""
        from sqlfront.sequence.result import rows_to_arrow

        shard = table.shard_id
        batch = self.persist.write_batch(shard, rows_to_arrow(table, rows)) if rows else None
        try:
            while True:
                upper = self.persist.state(shard).upper
                ts = fenced_write_ts(str(self.data_dir / "catalog.db"), not_below=upper)
                r = self.persist.compare_and_append(shard, [batch] if batch else [], upper, ts)
                if not isinstance(r, UpperMismatch):
                    break
        except BaseException:
            if batch is not None:
                self.persist.delete_batch(batch)
            raise
        committed_at = time.time()
        commit_wait(ts)
        return Commit(ts, len(rows), committed_at)

    def close(self) -> None:
        self.persist.close()
        self._catalog.close()
