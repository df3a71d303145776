"""The sources this environmentd ingests (``Environment.sources``): one runner per source
whose cluster this process runs, of the kind's class (a load generator's
``sqlfront.sources.SourceRunner``, a PostgreSQL source's
``sqlfront.pg_source.PgSourceRunner``), started, stopped and kept in step with the
catalog (:meth:`SourceRunners.sync`), and the rows of ``mz_source_statuses`` and
``mz_source_statistics``. Above both kinds' modules, so neither imports it.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import TYPE_CHECKING

from catalog.errors import SqlError, INTERNAL_ERROR
from catalog.snapshot import CatalogSnapshot, Source, Subsource
from sqlfront.sources import SourceRunner, source_of

if TYPE_CHECKING:
    from sqlfront.environment import Environment


class SourceRunners:
    """The running ingestions of this environmentd, by source id."""

    def __init__(self, env: Environment):
        self.env = env
        self._runners: dict[str, SourceRunner] = {}
        self._lock = threading.Lock()

    def ensure(self, source: Source) -> None:
        """Run ``source``'s ingestion if this process runs its cluster and it is not running."""
        if source.kind not in ("load-generator", "postgres") or source.cluster_id not in self.env.compute.clusters:
            return
        with self._lock:
            r = self._runners.get(source.id)
            if r is not None and r._thread.is_alive():
                return
            if source.kind == "postgres":
                from sqlfront.pg_source import PgSourceRunner

                r = self._runners[source.id] = PgSourceRunner(self.env, source)
            else:
                r = self._runners[source.id] = SourceRunner(self.env, source)
        r.start()

    def sync(self, snap: CatalogSnapshot) -> None:
        """Run every source of ``snap`` this process should run; stop the others."""
        live = {t.id: t for t in snap.tables.values() if isinstance(t, Source)}
        with self._lock:  # dropped, or its cluster is another process's now
            gone = [sid for sid in self._runners if sid not in live or live[sid].cluster_id not in self.env.compute.clusters]
        for sid in gone:
            self.stop(sid, dropped=sid not in live)
        for s in live.values():
            self.ensure(s)

    def wait_for_snapshot(self, source_id: str, timeout_s: float = 120) -> None:
        """Wait until source ``source_id``'s first commit (its AS OF ticks: its snapshot)
        is in persist, as a read of a new source in Materialize waits for its snapshot;
        at most ``timeout_s`` seconds (then reads find what there is). Returns at once for
        a source this process does not run."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                r = self._runners.get(source_id)
            if r is None or r.ready():
                return
            time.sleep(0.05)

    def stop(self, source_id: str, dropped: bool = False) -> None:
        """Stop ``source_id``'s ingestion; ``dropped``: the source is gone for good (a
        PostgreSQL source then drops its replication slot upstream)."""
        with self._lock:
            r = self._runners.pop(source_id, None)
        if r is not None:
            r.stop(dropped=dropped)

    def check_readable(self, rel) -> None:
        """Refuse to read a subsource whose source reported an error for it (a PostgreSQL
        table altered or truncated upstream: Materialize's subsource errors).

        Raises:
            SqlError XX000 with the error."""
        if not isinstance(rel, Subsource):
            return
        r = self.runner(rel.source_id)
        error = r.error_of(rel.output) if r is not None else None
        if error:
            raise SqlError(INTERNAL_ERROR, f'source "{rel.name}": {error}')

    def status_rows(self, snap: CatalogSnapshot) -> list[tuple]:
        """``mz_internal.mz_source_statuses``: a row per source and subsource (its
        source's status; a subsource in error ``stalled`` with its error). Sources this
        process does not run are ``starting`` here with no time (another process has
        their status); a webhook source is ``running``."""
        rows = []
        for rel in snap.tables.values():
            source = source_of(snap, rel)
            if source is None:
                continue
            r = self.runner(source.id)
            kind = source.kind if isinstance(rel, Source) else rel.kind
            if r is None:  # (a webhook has no ingestion: it runs while its HTTP listener does)
                rows.append((rel.id, rel.name, kind, None, "running" if source.kind == "webhook" else "starting",
                             None, None))
                continue
            at = dt.datetime.fromtimestamp(r.status_changed_at, dt.UTC)
            error = r.error_of(rel.output) if isinstance(rel, Subsource) and rel.kind != "progress" else None
            if error:
                rows.append((rel.id, rel.name, kind, at, "stalled", error, None))
            else:
                rows.append((rel.id, rel.name, kind, at, r.status, r.error, None))
        return sorted(rows)

    def statistics_rows(self, snap: CatalogSnapshot) -> list[tuple]:
        """``mz_internal.mz_source_statistics``: a row per source this process runs."""
        rows = []
        for source_id in sorted(self._runners):
            r = self.runner(source_id)
            if r is None or source_id not in snap.tables:
                continue
            st = dict(r.stats)
            rows.append((source_id, None, st["messages_received"], st["bytes_received"], st["updates_staged"],
                         st["updates_committed"], 0, 0, None, st["snapshot_records_known"],
                         st["snapshot_records_staged"], st["snapshot_committed"], st["offset_known"],
                         st["offset_committed"]))
        return rows

    def runner(self, source_id: str):
        """The running ingestion of ``source_id`` in this process, or None."""
        with self._lock:
            return self._runners.get(source_id)

    def stop_all(self, wait_s: float = 5) -> None:
        with self._lock:
            runners = list(self._runners.values())
            self._runners.clear()
        for r in runners:
            r.stop()
        for r in runners:
            r.stop(wait_s)

