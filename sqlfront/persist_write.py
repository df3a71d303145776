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

With a shared store (the flags of ``sqlfront serve``: ``catalog_url``, ``consensus_url``,
``oracle_url`` on PostgreSQL, ``blob_url``) it writes the tables of several environmentd
processes: the table comes from the shared catalog, and with the shared timestamp
oracle a commit takes ``write_ts`` (above every timestamp any process handed out),
appends at it and calls ``apply_write``: any read that starts afterwards, through any
process, sees it, without the commit wait. ``pubsub="auto"`` then pushes to a live
environmentd's PubSub from the shared registry (``pgconn.registry``), which forwards
to its peers.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from catalog.durable import CatalogStore
from catalog.errors import SqlError, UNDEFINED_TABLE
from catalog.oracle import commit_wait, fenced_write_ts
from catalog.snapshot import Table
from persist import FileBlob, PersistClient, UpperMismatch, open_consensus
from pgconn import is_postgres_url
from sqlfront.environment import PUBSUB_ADDRESS_FILE
from sqlfront.tls import grpc_channel_credentials


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

    ``catalog_url``, ``consensus_url``, ``oracle_url`` (``postgres://...``) and
    ``blob_url`` (a directory) replace the data directory's catalog.db, consensus.db,
    oracle and blob/ (as ``sqlfront serve``'s flags do).

    Raises:
        FileNotFoundError when there is no catalog (no ``catalog_url`` and ``data_dir``
        has no catalog.db); psycopg.OperationalError when a PostgreSQL is unreachable."""

    def __init__(self, data_dir: Path, pubsub: str | None = "auto", connect_timeout_s: float = 2.0,
                 catalog_url: str | None = None, consensus_url: str | None = None,
                 oracle_url: str | None = None, blob_url: str | None = None):
        d = Path(data_dir).resolve()
        if is_postgres_url(catalog_url):
            from catalog.durable_postgres import PostgresCatalogStore

            self._catalog = PostgresCatalogStore(catalog_url)
        elif (d / "catalog.db").exists():
            self._catalog = CatalogStore(str(d / "catalog.db"))
        else:
            raise FileNotFoundError(f"{d} has no catalog.db: not a data directory (or give --catalog-url)")
        self.data_dir = d
        #: the shared timestamp oracle (None: the data directory's, by ``fenced_write_ts``)
        self._oracle = None
        if is_postgres_url(oracle_url):
            from catalog.oracle_postgres import PostgresTimestampOracle

            self._oracle = PostgresTimestampOracle(oracle_url)
        f = d / PUBSUB_ADDRESS_FILE
        served = f.read_text().split() if f.exists() else []
        if not served and pubsub == "auto" and is_postgres_url(consensus_url):
            served = _registered_pubsub(catalog_url if is_postgres_url(catalog_url) else consensus_url)
        token = served[1] if len(served) > 1 else None
        # a TLS PubSub's file names the CA bundle its clients trust (sqlfront.environment)
        credentials = grpc_channel_credentials(served[2]) if len(served) > 2 else None
        if pubsub == "auto":
            pubsub = served[0] if served else None
        if pubsub == "off":
            pubsub = None
        blob = Path(blob_url.removeprefix("file://")) if blob_url else d / "blob"
        writer = uuid.uuid4().hex[:8]
        self.persist = PersistClient(FileBlob(blob, f"w{writer}" if is_postgres_url(consensus_url) else None),
                                     open_consensus(consensus_url or str(d / "consensus.db")),
                                     reader_id=f"writer-{writer}:1", pubsub_address=pubsub, pubsub_token=token,
                                     pubsub_credentials=credentials)
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
        raise SqlError(UNDEFINED_TABLE, f'relation "{name}" does not exist')

    def append(self, table: Table, rows: list[tuple]) -> Commit:
        """Append ``rows`` (Python values in the table's column order) in one commit."""
        from sqlfront.sequence.result import rows_to_arrow

        shard = table.shard_id
        batch = self.persist.write_batch(shard, rows_to_arrow(table, rows)) if rows else None
        try:
            while True:
                upper = self.persist.state(shard).upper
                if self._oracle is None:
                    ts = fenced_write_ts(str(self.data_dir / "catalog.db"), not_below=upper)
                    won = not isinstance(self.persist.compare_and_append(shard, [batch] if batch else [], upper, ts),
                                         UpperMismatch)
                else:
                    ts, won = self._append_shared(shard, batch, upper)
                if won:
                    break
        except BaseException:
            if batch is not None:
                self.persist.delete_batch(batch)
            raise
        committed_at = time.time()
        if self._oracle is None:
            commit_wait(ts)
        return Commit(ts, len(rows), committed_at)

    def _append_shared(self, shard: str, batch, upper: int) -> tuple[int, bool]:
        """One compare-and-append at a timestamp of the shared oracle: ``(ts, won)``."""
        ts = self._oracle.write_ts()
        try:
            if ts < upper:  # another process wrote above the oracle's mark: go above it
                self._oracle.observe(upper)
                return ts, False
            r = self.persist.compare_and_append(shard, [batch] if batch else [], upper, ts)
            return ts, not isinstance(r, UpperMismatch)
        finally:
            self._oracle.apply_write(ts)  # written or abandoned, as environmentd's writes

    def close(self) -> None:
        self.persist.close()
        self._catalog.close()
        if self._oracle is not None:
            self._oracle.close()


def _registered_pubsub(url: str) -> list[str]:
    """``[address, token]`` of a live environmentd's PubSub from the registry at ``url``
    (it forwards pushes to its peers), or ``[]`` when none serves one."""
    from pgconn.registry import ProcessRegistry

    registry = ProcessRegistry(url, f"writer{uuid.uuid4().hex[:8]}")
    try:
        for info in registry.live_peers().values():
            if info.get("pubsub"):
                return [info["pubsub"], info.get("pubsub_token") or ""]
        return []
    finally:
        registry.close()
