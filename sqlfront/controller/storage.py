"""The storage controller: persist and what keeps it, as Materialize's storage controller.

It opens persist (Blob, Consensus, PubSub) and the group commit's writer, creates the
shards of new tables and materialized views (:meth:`StorageController.create_shard`, the one
place that does) and deletes dropped ones (``sqlfront.finalize``), keeps transactions'
read holds (:meth:`~StorageController.hold_time`), runs the maintenance loop (readers'
leases, since, garbage collection, the process registry's heartbeat) and the compaction
loop, and recovers persist at boot (:meth:`~StorageController.recover`).
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import logging
import secrets
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from catalog.snapshot import CatalogSnapshot, Table
from persist import Batch, FileBlob, PersistClient, SqliteConsensus, open_consensus
from persist import compact as compaction
from persist.binding import BlobMismatch, bind_blob
from persist.blob import part_writer
from persist.postgres import PostgresConsensus
from persist.pubsub import PubSubServer
from persist.shard_id import ShardId
from pgconn import is_postgres_url, redact_url
from sqlfront import group_commit, heap
from sqlfront.finalize import finalize
from sqlfront.group_commit import GroupCommitter
from spark_exec.orchestrator import write_private

if TYPE_CHECKING:
    from pgconn.registry import ProcessRegistry
    from spark_exec.cluster_coordinator import ClusterCoordinator
    from sqlfront.config import Config
    from sqlfront.coordinator import Coordinator
    from sqlfront.metrics import Metrics

log = logging.getLogger(__name__)

#: the data directory's file naming where persist PubSub listens (while it runs)
PUBSUB_ADDRESS_FILE = "persist_pubsub"


class StorageController:
    """Persist for one environmentd. ``snapshot`` returns the catalog the caller's thread
    sees; ``clusters`` the ClusterCoordinators this process runs (a merge too big for
    memory runs on one of their replicas); ``on_write`` is told of each table whose shard
    took new parts; ``builtin_rows`` serves system tables to such a merge's peek."""

    #: seconds an unreferenced part of a dead process stays in a shared Blob (well above
    #: the time from writing a part to its compare-and-append, and the registry's 30 s)
    LEAKED_PART_GRACE_S = 600.0
    #: seconds between persist maintenance rounds
    MAINTENANCE_S = 1.0
    #: seconds between sweeps of the seal marks of dropped shards (``GroupCommitter.sweep_marks``)
    SWEEP_MARKS_S = 60.0
    #: how far since lags the read timestamp (Materialize's default compaction window for
    #: tables is 1 s); AS OF and transactions may read that far back
    COMPACTION_WINDOW_MS = 1000
    #: a consolidation that runs on a replica waits until the shard had no write this long
    RETRACTION_QUIET_S = 3.0

    def __init__(self, config: Config, data_dir: Path, process_id: str, metrics: Metrics,
                 registry: ProcessRegistry | None, oracle, snapshot: Callable[[], CatalogSnapshot],
                 clusters: Callable[[], list[ClusterCoordinator]], on_write: Callable[[Table], None],
                 builtin_rows: Callable, view_holds: Callable[[], dict[str, int]] | None = None):
        self.config = config
        self.data_dir = d = data_dir
        self.process_id = process_id
        self.registry = registry
        self.oracle = oracle
        self._snapshot = snapshot
        self._clusters = clusters
        self._on_write = on_write
        self._builtin_rows = builtin_rows
        #: set by the wiring once the Coordinator runs (finalizing dropped shards commits)
        self.coordinator: Coordinator | None = None
        #: shard -> the oldest time a materialized view still reads it at
        #: (``ComputeController.view_input_holds``); compaction keeps since at or below
        self.view_holds = view_holds
        blob = config.persist_blob_url.removeprefix("file://") if config.persist_blob_url else d / "blob"
        if config.persist_consensus_url:
            log.info("persist consensus: %s, blob: %s", redact_url(config.persist_consensus_url), blob)
        consensus = open_consensus(config.persist_consensus_url or str(d / "consensus.db"))
        # with a shared Blob, part keys name their writer (leaked-part clean-up, _leaked_part)
        blob_store = FileBlob(blob, self.process_id if config.shared_persist else None)
        try:  # before any thread starts: a BlobMismatch ends the process at once
            bind_blob(consensus, blob_store)
        except BlobMismatch:
            consensus.close()
            raise
        pubsub_metrics = metrics.persist_pubsub()
        #: the persist PubSub service (None when off)
        self.pubsub_server: PubSubServer | None = None
        (d / PUBSUB_ADDRESS_FILE).unlink(missing_ok=True)
        token = self._pubsub_token = secrets.token_hex(16)
        if config.persist_pubsub:
            tls = config.peer_tls
            self.pubsub_server = PubSubServer(
                *config.persist_pubsub_listen, metrics=pubsub_metrics, token=token, advertise=config.advertise_host,
                server_credentials=tls.grpc_server_credentials() if tls else None,
                channel_credentials=tls.grpc_channel_credentials() if tls else None).start()
            # a third line: the CA bundle a client of this TLS PubSub trusts (sqlfront persist-write)
            write_private(d / PUBSUB_ADDRESS_FILE, f"{self.pubsub_server.address}\n{token}"
                          + (f"\n{tls.ca or tls.cert}" if tls else ""))
        self.persist = PersistClient(blob_store, consensus,
                                     reader_id=f"{self.process_id}:{uuid.uuid4().hex[:12]}",
                                     pubsub_server=self.pubsub_server, metrics=pubsub_metrics,
                                     # a shared oracle's read_ts may pass another process's write in flight
                                     fence_reads=is_postgres_url(config.timestamp_oracle_url))
        #: the multi-shard transaction record of the group commit, and its seals' marks:
        #: shared by the processes that share persist (a seal of one must see the others'
        #: transactions, ``group_commit``)
        self.txns = (PostgresConsensus(config.persist_consensus_url, table="txns") if config.shared_persist
                     else SqliteConsensus(str(d / "txns.db")))
        self.writer: GroupCommitter | None = None
        #: shards written since the last maintenance round
        self._dirty: set[str] = set()
        #: read timestamps transactions hold (since stays at or below the oldest)
        self._time_holds: collections.Counter = collections.Counter()
        self._time_lock = threading.Lock()
        self._table_locks: dict[str, threading.Lock] = {}
        self._maintenance_stop = threading.Event()
        self._to_compact: set[str] = set()
        #: shard -> when a write last landed (monotonic seconds)
        self._last_write: dict[str, float] = {}
        #: consolidations of retractions, one at a time, as Spark jobs on a replica
        self._replica_merges = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="replica-merge")
        self._replica_merging: set[str] = set()
        #: each shard's since at the last maintenance round (a rise may let a merge run)
        self._since_seen: dict[str, int] = {}
        self._compact_cv = threading.Condition()

    # -- shards -------------------------------------------------------------------------

    def create_shard(self, shard_id: ShardId, since: int | None = None) -> None:
        """Create the shard of a new table, materialized view or rewritten table. ``since``
        None: readable from the read timestamp on (a table starts empty now); a
        materialized view's is 0, with upper 0: no time is readable until its cluster
        computes its first contents (reads wait for that, as in Materialize)."""
        self.persist.create_shard(shard_id, self.oracle.read_ts() if since is None else since)

    def drop_shard(self, shard_id: ShardId) -> None:
        """Delete a shard no catalog names (a rewrite's copy that lost its race)."""
        self.persist.drop_shard(shard_id)

    def forget_shard(self, shard_id: ShardId) -> None:
        """Delete a shard only a transaction block that did not commit knew, leaving no
        tombstone (its id is handed out again)."""
        self.persist.forget_shard(shard_id)

    def finalize_soon(self) -> None:
        """Delete the dropped shards the catalog lists (``sqlfront.finalize``), off the loop."""
        threading.Thread(target=self._finalize, name="drop-shard", daemon=True).start()

    def _finalize(self) -> None:
        try:
            finalize(self.persist, self.coordinator, self.writer.seal if self.writer is not None else None)
        except Exception as e:  # listed still: the next maintenance round tries again
            log.warning("deleting dropped shards: %s", e)

    def row_count(self, relation) -> int | None:
        """Rows of a user table now, from its shard's part metadata (persist keeps each
        part's row count); None for other relations. The optimizer's join ordering
        statistics (``planner.optimize.RowCount``)."""
        if not isinstance(relation, Table):
            return None
        return self.persist.state(relation.shard_id).row_count()

    def storage_usage_rows(self) -> list[tuple]:
        """``mz_recent_storage_usage``: bytes of the Parquet parts in each table's shard now
        (before compaction frees any)."""
        return [(t.id, sum(p.bytes for p in self.persist.state(t.shard_id).parts))
                for t in self._snapshot().storage_relations()]

    # -- read holds and table locks -------------------------------------------------------

    def table_lock(self, shard_id: str) -> threading.Lock:
        """The lock UPDATE and DELETE of one table take (so they rarely conflict)."""
        with self._time_lock:
            return self._table_locks.setdefault(shard_id, threading.Lock())

    def hold_time(self, ts: int) -> int:
        """Keep every shard's since at or below ``ts`` until :meth:`release_time` (a
        transaction's read timestamp). Returns ``ts``."""
        with self._time_lock:
            self._time_holds[ts] += 1
        return ts

    def release_time(self, ts: int) -> None:
        with self._time_lock:
            self._time_holds[ts] -= 1
            if self._time_holds[ts] <= 0:
                del self._time_holds[ts]

    # -- the process registry -------------------------------------------------------------

    def registry_info(self) -> dict:
        """What this process tells its peers: its PubSub address and token, when it shares
        Consensus with them (they forward their compare-and-sets' pushes to it)."""
        if self.pubsub_server is None or not self.config.shared_persist:
            return {}
        return {"pubsub": self.pubsub_server.address, "pubsub_token": self._pubsub_token}

    def heartbeat(self) -> None:
        """Renew this process's registry row and follow its peers' PubSub addresses."""
        self.registry.heartbeat()
        if self.pubsub_server is not None and self.config.shared_persist:
            self.pubsub_server.set_peers({i["pubsub"]: i.get("pubsub_token")
                                          for i in self.registry.live_peers().values() if i.get("pubsub")})

    # -- recovery -------------------------------------------------------------------------

    def recover(self, snap: CatalogSnapshot) -> None:
        """Before any session: drop the leased readers of our earlier run, finish the
        transactions a crash left half applied, and delete what no state refers to (parts
        of writers that died, shards of tables whose DROP a crash interrupted). Opens the
        group commit's :attr:`writer`."""
        self.persist.expire_previous_readers()
        live = {t.shard_id for t in snap.storage_relations()}
        # A table's shard sealed by an ALTER TABLE that a crash cut short: the catalog
        # still names it, so writes must land there again. With shared persist, only the
        # seals this process's earlier run marked (another process's ALTER may be under
        # way; a mark of before marks had owners is left alone too).
        # A mark of ours on a shard left open (a crash between the mark and the seal) goes too.
        marks = group_commit.marks(self.txns)
        for shard in live:
            mine = marks.get(shard, {}).get("owner") == self.process_id
            if mine or (not self.config.shared_persist and self.persist.state(shard).sealed):
                log.info("persist: unsealing shard %s (an ALTER TABLE a crash interrupted)", shard)
                group_commit.unseal(self.persist, self.txns, shard)
        gone = None
        if self.config.shared_persist:
            alive = self.registry.live() - {self.process_id}
            gone = lambda owner: owner not in alive  # noqa: E731 (ours of an earlier run, or dead)
        n = group_commit.recover(self.persist, self.txns, live, gone)
        if n:
            log.info("persist: finished %d transaction(s) a crash interrupted", n)
        if self.config.shared_persist:
            # Other processes' parts in flight are in no state yet, and shards of tables
            # another process is creating in no catalog we have read: only parts whose
            # writer is known gone are deleted (``_leaked_part``); whole shards never.
            live_processes = self.registry.live() - {self.process_id}
            removed = self.persist.gc_orphans(None, functools.partial(self._leaked_part, live_processes, time.time()))
        else:
            removed = self.persist.gc_orphans(live)
        if removed:
            log.info("persist: deleted %d unreferenced part(s)", removed)
        self.writer = GroupCommitter(self.persist, self.txns, self.oracle, self.applied, owner=self.process_id)

    def _leaked_part(self, live_processes: set[str], now: float, key: str) -> bool:
        """Whether an unreferenced part in a Blob shared with other processes is leaked
        (deleted at boot): one written by an earlier run of this process (nothing of this
        run is in flight yet), or by a process the registry says is dead, written more than
        ``LEAKED_PART_GRACE_S`` ago (a stalled writer's heartbeat resumes with it). A part
        of a live process, or whose key names no writer, is never deleted here."""
        writer = part_writer(key)
        if writer is None or writer in live_processes:
            return False
        if writer == self.process_id:
            return True
        written = self.persist.blob.modified_at(key)
        return written is not None and now - written > self.LEAKED_PART_GRACE_S

    # -- maintenance and compaction -------------------------------------------------------

    def applied(self, shards: set[str]) -> None:
        """New parts landed in ``shards`` (the group commit's and materializations' writes)."""
        now = time.monotonic()
        for shard in shards:
            self._last_write[shard] = now
        self._dirty |= shards
        full = {s for s in shards if self.persist.latest(s).inline_bytes() >= compaction.INLINE_FLUSH_BYTES}
        if full and self.config.persist_compaction:
            # Move the inline parts to Blob now, not at the next maintenance round: the
            # state stays small and writes keep going inline.
            with self._compact_cv:
                self._to_compact |= full
                self._compact_cv.notify()
        tables = [t for t in self._snapshot().storage_relations() if t.shard_id in shards]
        for t in tables:
            self._on_write(t)

    def start(self, each_round: Callable[[], None]) -> None:
        """Start the maintenance loop (which also calls ``each_round``: the other
        controllers' once-a-second work) and the compaction loop."""
        threading.Thread(target=self._maintenance_loop, args=(each_round,), name="persist-maintenance",
                         daemon=True).start()
        threading.Thread(target=self._compaction_loop, name="persist-compaction", daemon=True).start()

    def _maintenance_loop(self, each_round: Callable[[], None]) -> None:
        """Persist's background work, off every session's thread: heartbeat this process's
        leased readers, advance each shard's since, collect garbage, compact; and now and
        then give the C heap's free memory back (``sqlfront.heap``)."""
        trimmer = heap.Trimmer()
        next_sweep = 0.0
        while not self._maintenance_stop.wait(self.MAINTENANCE_S):
            trimmer.maybe()
            try:
                self.maintain()
            except Exception as e:  # next round tries again
                log.warning("persist maintenance: %s", e)
            if self.coordinator.snapshot.to_finalize:  # a drop a crash (or a failure) left undone
                self._finalize()
            if time.monotonic() >= next_sweep and self.writer is not None:
                next_sweep = time.monotonic() + self.SWEEP_MARKS_S
                try:
                    self.writer.sweep_marks({t.shard_id for t in self._snapshot().storage_relations()})
                except Exception as e:  # the next sweep tries again
                    log.warning("sweeping seal marks: %s", e)
            if self.registry is not None:
                try:
                    self.heartbeat()
                except Exception as e:  # next round tries again; peers' lists age out
                    log.warning("environmentd registry: %s", e)
            try:
                each_round()
            except Exception as e:  # the loop outlives it: without it nothing above runs again
                log.warning("persist maintenance round: %s", e)

    def maintain(self) -> None:
        """One maintenance round over the shards this process reads or wrote."""
        dirty, self._dirty = self._dirty, set()
        shards = set(self.persist.leases.registered()) | dirty
        snap = self._snapshot()
        live = {t.shard_id for t in snap.storage_relations()}
        # Dropped shards too until finalized: their parts wait for every process's reader
        # to pass the tombstone (``PersistClient.drop_shard``), ours moves at its heartbeat.
        held = live | set(snap.to_finalize)
        desired = self.oracle.read_ts() - self.COMPACTION_WINDOW_MS
        with self._time_lock:
            desired = min([desired] + list(self._time_holds))
        # From the catalog and the views' shards, not from the views' maintainers' leases:
        # after a restart those come back only once a replica is healthy, and an input
        # compacted past a view's upper meanwhile could never be read at it again.
        view_holds = self.view_holds() if self.view_holds is not None else {}
        due = dirty & live
        for shard in sorted(shards & held):
            st = self.persist.maintain(shard, min(desired, view_holds.get(shard, desired)))
            if st is not None and st.since > self._since_seen.get(shard, st.since) and compaction.choose(st):
                # a merge that waited for since to pass its parts' updates can run now
                due.add(shard)
            if st is not None:
                self._since_seen[shard] = st.since
        for gone in self._since_seen.keys() - live:
            del self._since_seen[gone]
        if due and self.config.persist_compaction:
            with self._compact_cv:
                self._to_compact |= due
                self._compact_cv.notify()

    def _compaction_loop(self) -> None:
        """Compact the shards written lately, one at a time, on this thread (a merge with
        retractions runs as a Spark job on a replica)."""
        while not self._maintenance_stop.is_set():
            with self._compact_cv:
                while not self._to_compact and not self._maintenance_stop.is_set():
                    self._compact_cv.wait(1.0)
                shards, self._to_compact = self._to_compact, set()
            waiting = False
            for shard in sorted(shards):
                try:
                    waiting |= self._compact_one(shard)
                except Exception as e:  # noqa: BLE001 - Consensus unreachable: the shard waits its turn again
                    log.warning("compacting shard %s: %s", shard, e)
                    with self._compact_cv:
                        self._to_compact.add(shard)
                    waiting = True
            if waiting:
                self._maintenance_stop.wait(0.5)

    def _compact_one(self, shard: str) -> bool:
        """Compact ``shard`` now, or hand it to a replica; True when it waits for its
        writes to pause (it is queued again). Raises what reading its state raises (the
        caller, the compaction loop, must outlive a PostgreSQL restart)."""
        table = next((t for t in self._snapshot().storage_relations() if t.shard_id == shard), None)
        if table is None:
            return False
        chosen = compaction.choose(self.persist.state(shard))
        if not chosen:
            return False
        if compaction.needs_replica(chosen):
            if time.monotonic() - self._last_write.get(shard, 0) < self.RETRACTION_QUIET_S:
                # A consolidation too big for memory is a Spark job: wait until
                # the shard's writes pause, so one job covers them all.
                with self._compact_cv:
                    self._to_compact.add(shard)
                return True
            # A Spark job on a replica, off this thread: a replica that is slow or
            # frozen must not hold up the other shards' merges.
            with self._compact_cv:
                if shard in self._replica_merging:
                    return False
                self._replica_merging.add(shard)
            self._replica_merges.submit(self._compact_on_replica, shard, table)
            return False
        try:
            self.persist.compact(shard)
        except Exception as e:  # a later write brings the shard back here
            log.warning("compacting %s: %s", table.name, e)
        return False

    def _compact_on_replica(self, shard: str, table: Table) -> None:
        try:
            self.persist.compact(shard, functools.partial(self._merge_on_replica, table))
        except Exception as e:  # a later write brings the shard back here
            log.warning("compacting %s: %s", table.name, e)
        finally:
            with self._compact_cv:
                self._replica_merging.discard(shard)

    def _merge_on_replica(self, table: Table, parts) -> Batch:
        """Consolidate ``parts`` of ``table`` (``spark_exec.lower.consolidated_updates``)
        with a Spark job on a healthy replica of any cluster; the replica writes the new
        part, updates with diffs, to Blob.

        Raises:
            RuntimeError when no cluster has a healthy replica (compaction waits)."""
        from persist import ShardSnapshot
        from planner.plan import Get
        from spark_exec.lower import consolidated_updates
        from spark_exec.writes import PartUrls, write_job

        snap = ShardSnapshot(table.shard_id, 0, (1 << 63) - 1, tuple(parts), True, 0)
        plan = Get(table, tuple((c.name, c.type) for c in table.columns))  # unused: the job reads the parts
        for cc in self._clusters():
            if not cc.has_healthy_replica():
                continue
            urls = PartUrls(lambda: self.persist.new_part_url(table.shard_id))
            write = write_job(table, urls.url_for, diffs=True)
            winner = None
            try:
                winner = cc.peek(plan, lambda t: snap, self._builtin_rows, self.config.replica_wait_s, None, None,
                                 lambda df, rid: write(consolidated_updates(df.sparkSession, table, snap), rid))
            finally:
                for key in urls.keys_except(winner):
                    self.persist.blob.delete(key)
            return self.persist.written_batch(urls.parts[winner][0], diffs=True)
        raise RuntimeError("no healthy replica to compact on")

    # -- shutdown -------------------------------------------------------------------------

    def stop_loops(self) -> None:
        """Stop the maintenance and compaction loops (without waiting for them)."""
        self._maintenance_stop.set()
        self._replica_merges.shutdown(wait=False, cancel_futures=True)

    def stop_writer(self) -> None:
        if self.writer is not None:
            self.writer.stop()

    def close(self) -> None:
        """Close persist and stop PubSub (after the writer and the Coordinator stopped)."""
        self.persist.close()
        if self.pubsub_server is not None:
            self.pubsub_server.stop()
            (self.data_dir / PUBSUB_ADDRESS_FILE).unlink(missing_ok=True)
