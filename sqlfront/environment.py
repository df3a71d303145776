"""environmentd: wires the catalog, the Coordinator, persist and one ClusterCoordinator
per cluster together, boots them from a data directory and shuts them down.

Data directory layout::

    catalog.db        durable catalog and timestamp oracle (sqlite)
    consensus.db      persist Consensus (sqlite)
    txns.db           the group commit's record of multi-table transactions (sqlite)
    blob/             persist Blob: Parquet parts, one folder per shard
    environment_id    this environment's id (names its persist readers across restarts)
    persist_pubsub    HOST:PORT of the persist PubSub service while it runs and, on the
                      next line, its token (mode 0600; for other processes of this data
                      directory: ``sqlfront persist-write``)
    replicas/<id>/    each local replica's log, pid file and Spark scratch space

Several environmentd processes share persist and the timestamp oracle when they are
started with ``persist_consensus_url`` and ``timestamp_oracle_url`` naming one PostgreSQL
database and ``persist_blob_url`` naming one directory; consensus.db and the oracle's
row in catalog.db are then unused. With ``catalog_url`` they share the catalog too (a
versioned log in PostgreSQL that each process follows), and each cluster's
ClusterCoordinator and replicas run in the one process that holds the cluster's lease
(``sqlfront.ownership``; ``clusters`` and ``takeover`` say which it takes). Without a
shared catalog this process runs every cluster.
"""

from __future__ import annotations

import datetime as dt

import collections
import contextvars
import concurrent.futures
import functools
import logging
import os
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pglast

from catalog import durable
from catalog.builtins import (
    MZ_COORDINATOR_LOOP, MZ_HYDRATION_STATUSES, MZ_MATERIALIZATION_LAG, MZ_PEEK_DURATIONS, MZ_RECENT_STORAGE_USAGE,
    builtin_rows,
)
from catalog.cluster_leases import PostgresClusterLeases
from catalog.durable import CatalogStore
from catalog.secretbox import SecretBox
from catalog.errors import SqlError, INVALID_AUTHORIZATION_SPECIFICATION, OBJECT_NOT_IN_PREREQUISITE_STATE
from catalog.oracle import open_oracle
from catalog.sequences import SequenceStore
from catalog.sizes import ReplicaSize, default_sizes
from catalog.snapshot import searching_from
from catalog.snapshot import BuiltinTable, CatalogSnapshot, Cluster, MaterializedView, Replica, Source, Table, \
    temp_schema_process
from planner.expr import MAINTAINED, set_query_timestamp
from planner.plan import relations_read
from planner.query import QueryPlanner
from persist import Batch, FileBlob, PersistClient, SqliteConsensus, open_consensus
from persist import compact as compaction
from persist.binding import BlobMismatch, bind_blob
from persist.blob import part_writer
from pgconn import is_postgres_url, redact_url
from pgconn.registry import ProcessRegistry
from persist.pubsub import PubSubServer
from sqlfront import group_commit, heap
from sqlfront.group_commit import GroupCommitter
from spark_exec.blob_probe import probe_blob
from spark_exec.cluster_coordinator import ClusterCoordinator
from spark_exec.lower import arranged_units
from spark_exec.materializations import Materialization
from spark_exec.orchestrator import Orchestrator, write_private
from sqlfront.coordinator import Coordinator
from sqlfront.finalize import finalize
from sqlfront.metrics import Metrics
from sqlfront.memory_budget import MemoryBudget, default_copy_memory_budget
from sqlfront.ownership import LeasedOwnership, LocalOwnership
from sqlfront.pyworker import PythonWorkers
from sqlfront import introspection
from sqlfront.activity import ActivityLog
from sqlfront.replica_monitor import ReplicaMonitor
from sqlfront.tls import PeerTls
from sqlfront.vars import server_defaults

log = logging.getLogger(__name__)

#: the key of the catalog's encrypted secrets (``catalog.secretbox``), in the data directory
CATALOG_KEY_FILE = "catalog.key"

#: the pending catalog of the running statement's transaction block, if it holds
#: uncommitted DDL (``sqlfront.sequence.block_ddl``); set per statement by the session
BLOCK_CATALOG: contextvars.ContextVar[CatalogSnapshot | None] = contextvars.ContextVar("block_catalog",
                                                                                      default=None)

#: the data directory's file naming where persist PubSub listens (while it runs)
PUBSUB_ADDRESS_FILE = "persist_pubsub"


@dataclass
class Config:
    """Server settings (``sqlfront serve`` options)."""

    data_dir: Path
    sizes: dict[str, ReplicaSize] = field(default_factory=default_sizes)
    availability_zones: list[str] = field(default_factory=list)
    bootstrap_replica_size: str = "1"
    #: the superuser role a catalog without roles gets (id ``u1``: it owns every object
    #: made before roles existed)
    bootstrap_role: str = "materialize"
    #: a user without a role gets one (LOGIN, nothing else) at its first login
    #: (``--auto-create-roles``, as Materialize Cloud does); off: only roles made with
    #: CREATE ROLE ... LOGIN may log in
    auto_create_roles: bool = False
    #: how long a peek waits for a healthy replica before failing (seconds)
    replica_wait_s: float = 120.0
    #: peeks running at once on one replica; more wait in line
    max_peeks_per_replica: int = 8
    #: (host, port) to serve Prometheus metrics on, or None
    metrics_listen: tuple[str, int] | None = None
    #: directories (already resolved with realpath) whose files ``COPY t FROM 'path'`` may
    #: read; empty: no server file may be read (COPY FROM STDIN is always allowed)
    copy_from_dirs: tuple[Path, ...] = ()
    #: client connections at once; one more gets FATAL 53300 (PostgreSQL's max_connections)
    max_connections: int = 100
    #: largest frontend message accepted, in bytes (the length field included)
    max_message_size: int = 64 << 20
    #: most bytes one COPY FROM STDIN may send (Materialize's max_copy_from_size)
    max_copy_from_size: int = 256 << 20
    #: bytes every COPY FROM STDIN stream together may hold (``sqlfront.memory_budget``);
    #: None: a quarter of the machine's memory
    copy_memory_budget: int | None = None
    #: seconds a client has from its connection to the end of startup and authentication
    #: (PostgreSQL's authentication_timeout)
    authentication_timeout_s: float = 60.0
    #: connections in startup or authentication at once; more are refused with 53300
    max_startup_connections: int = 100
    #: session variables' defaults on this server, over ``sqlfront.vars.DEFAULTS``
    session_defaults: dict[str, str] = field(default_factory=dict)
    #: compact persist shards in the background
    persist_compaction: bool = True
    #: serve persist PubSub and connect persist to it (False: followers poll Consensus)
    persist_pubsub: bool = True
    #: where PubSub listens; a taken port falls back to a free one (see ``persist_pubsub``)
    persist_pubsub_listen: tuple[str, int] = ("127.0.0.1", 6879)
    #: the host other processes reach this one's PubSub at (None: the listen host)
    advertise_host: str | None = None
    #: TLS for PubSub, served and dialed (``sqlfront.tls.PeerTls``; None: clear text)
    peer_tls: PeerTls | None = None
    #: persist Consensus: ``postgres://...`` (shared by several processes) or None for
    #: DATA_DIR/consensus.db
    persist_consensus_url: str | None = None
    #: timestamp oracle: ``postgres://...`` (shared) or None for the one in catalog.db
    timestamp_oracle_url: str | None = None
    #: persist Blob directory (a path or ``file://`` URL; shared by processes that share
    #: Consensus) or None for DATA_DIR/blob
    persist_blob_url: str | None = None
    #: the catalog: ``postgres://...`` (a versioned log shared by several processes) or
    #: None for DATA_DIR/catalog.db
    catalog_url: str | None = None
    #: the key the catalog's secrets are encrypted under (``catalog.secretbox``), None for
    #: DATA_DIR/catalog.key: processes that share ``catalog_url`` must share it
    catalog_key_file: Path | None = None
    #: this environmentd's pgwire address, ``HOST:PORT``: how other processes and the
    #: balancer name it as a cluster's owner (``mz_clusters.environmentd``)
    address: str | None = None
    #: names of the clusters to run (``--clusters``; needs a shared catalog), None for all
    clusters: tuple[str, ...] | None = None
    #: also run clusters whose owner's lease expired (``--takeover``)
    takeover: bool = False
    #: seconds a cluster lease lasts without renewal (``sqlfront.ownership``)
    cluster_lease_s: float = 10.0
    #: record every statement in ``mz_internal.mz_recent_activity_log`` (``sqlfront.activity``)
    activity_log: bool = True
    #: seconds between samples of the replicas' CPU and memory (``sqlfront.replica_monitor``)
    replica_metrics_interval_s: float = 5.0

    @property
    def shared_persist(self) -> bool:
        """Other processes may write this persist (its Consensus is in PostgreSQL)."""
        return is_postgres_url(self.persist_consensus_url)

    def server_vars(self) -> dict[str, str]:
        """Session variables' defaults on this server: the operator's ``session_defaults``
        and the read-only variables that show server settings (``SHOW max_connections``)."""
        return {**self.session_defaults, "max_connections": str(self.max_connections),
                "max_copy_from_size": str(self.max_copy_from_size)}


class Environment:
    """One environmentd. ``start()`` boots it; ``shutdown()`` stops every replica."""

    def __init__(self, config: Config):
        self.config = config
        #: when this environmentd started, having read its configuration
        #: (pg_postmaster_start_time, pg_conf_load_time)
        self.started_at = dt.datetime.now(dt.timezone.utc)
        d = Path(config.data_dir).resolve()
        d.mkdir(parents=True, exist_ok=True)
        self.data_dir = d
        #: names this environmentd across restarts (its data directory's environment id)
        self.process_id = _environment_id(d)
        #: encrypts the catalog's secrets at rest, whichever catalog backend keeps them
        self.secret_box = SecretBox.at(config.catalog_key_file or d / CATALOG_KEY_FILE)
        if is_postgres_url(config.catalog_url):
            from catalog.durable_postgres import PostgresCatalogStore

            log.info("catalog: %s", redact_url(config.catalog_url))
            self.store = PostgresCatalogStore(config.catalog_url, self.secret_box)
        else:
            self.store = CatalogStore(str(d / "catalog.db"), self.secret_box)
        self.oracle = open_oracle(config.timestamp_oracle_url, str(d / "catalog.db"))
        if config.timestamp_oracle_url:
            log.info("timestamp oracle: %s", redact_url(config.timestamp_oracle_url))
        #: sequences' current values (nextval/setval write them, not the Coordinator): in the
        #: shared catalog's database when there is one, so nextval is unique across processes
        if is_postgres_url(config.catalog_url):
            from catalog.sequences_postgres import PostgresSequenceStore

            self.sequences = PostgresSequenceStore(config.catalog_url)
        else:
            self.sequences = SequenceStore(str(d / "catalog.db"))
        #: the live environmentd processes of the shared store (None with sqlite only): in
        #: the catalog's database, else in Consensus's (PubSub peers)
        shared_url = next((u for u in (config.catalog_url, config.persist_consensus_url) if is_postgres_url(u)), None)
        self.registry = ProcessRegistry(shared_url, self.process_id) if shared_url else None
        self.metrics = Metrics()
        #: the memory all COPY FROM STDIN streams together draw from
        self.copy_budget = MemoryBudget(config.copy_memory_budget or default_copy_memory_budget())
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
        pubsub_metrics = self.metrics.persist_pubsub()
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
        #: the multi-shard transaction record of the group commit
        self.txns = SqliteConsensus(str(d / "txns.db"))
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
        self.orchestrator = Orchestrator(d, instance=uuid.uuid4().hex[:8])
        self.clusters: dict[str, ClusterCoordinator] = {}
        from sqlfront.sources import SourceRunners

        #: the ingestions of the sources of the clusters this process runs
        self.sources = SourceRunners(self)
        self._clusters_lock = threading.Lock()
        self.coordinator: Coordinator | None = None
        #: which clusters this process runs (every one without a shared catalog)
        self.ownership = LocalOwnership(config.address)
        if is_postgres_url(config.catalog_url):
            self.ownership = LeasedOwnership(
                PostgresClusterLeases(config.catalog_url, config.address or f"pid:{os.getpid()}",
                                      config.cluster_lease_s),
                config.clusters, config.takeover, lambda: self.snapshot, self._gain_cluster,
                self._lose_cluster, self._replica_statuses)
        #: (catalog version, view id) -> the tables the view reads (for arrangements)
        #: (catalog version, view id) -> the tables it reads (None: it does not plan)
        self._view_tables: dict[tuple[int, str], tuple[Table, ...] | None] = {}
        #: (catalog version, materialized view id) -> its planned query (None: does not plan)
        self._mv_plans: dict[tuple[int, str], Materialization | None] = {}
        self._mv_plans_lock = threading.Lock()
        self.metrics.track_replicas(self._all_statuses)
        #: processes for fast-path queries too big for a session's thread
        self.python_workers = PythonWorkers()
        #: live sessions and recent statements (mz_sessions, mz_recent_activity_log)
        self.activity = ActivityLog(enabled=config.activity_log)
        #: replica statuses and sampled metrics (mz_cluster_replica_statuses, ..._metrics)
        self.replica_monitor = ReplicaMonitor(self.replica_handles, config.replica_metrics_interval_s)

    # -- boot and shutdown ------------------------------------------------------------

    def start(self) -> None:
        if self.config.metrics_listen:
            self.metrics.serve(*self.config.metrics_listen)
        reaped = self.orchestrator.reap_orphans()
        if reaped:
            log.warning("killed %d replica process group(s) left by an earlier run", reaped)
        if self.registry is not None:
            # before any session: other processes now know this one is alive
            self.registry.register(self._registry_info())
            self._heartbeat()
        new = self.store.is_new()
        snap = self.store.load()
        self._recover_persist(snap)
        self.coordinator = Coordinator(self.store, snap, self._on_commit, self.metrics.observe_command,
                                       self.metrics.coordinator_errors.inc)
        self.coordinator.start()
        if new:
            self._bootstrap()
        self._bootstrap_role()
        if not new:
            self._drop_leftover_temp_schemas(snap)
            if self.ownership.local:
                self._drop_pending_replicas()
                for c in snap.clusters.values():
                    self._gain_cluster(c.id)
        self.ownership.start()  # takes the leases of the clusters this process runs
        self.sources.sync(self.snapshot)
        threading.Thread(target=self._maintenance_loop, name="persist-maintenance", daemon=True).start()
        self.replica_monitor.start()
        threading.Thread(target=self._compaction_loop, name="persist-compaction", daemon=True).start()
        log.info("environment ready: %d cluster(s), %d replica(s), %d table(s)",
                 len(self.snapshot.clusters), len(self.snapshot.replicas), len(self.snapshot.tables))

    def _registry_info(self) -> dict:
        """What this process tells its peers: its PubSub address and token, when it shares
        Consensus with them (they forward their compare-and-sets' pushes to it)."""
        if self.pubsub_server is None or not self.config.shared_persist:
            return {}
        return {"pubsub": self.pubsub_server.address, "pubsub_token": self._pubsub_token}

    def _heartbeat(self) -> None:
        """Renew this process's registry row and follow its peers' PubSub addresses."""
        self.registry.heartbeat()
        if self.pubsub_server is not None and self.config.shared_persist:
            self.pubsub_server.set_peers({i["pubsub"]: i.get("pubsub_token")
                                          for i in self.registry.live_peers().values() if i.get("pubsub")})

    def _drop_leftover_temp_schemas(self, snap: CatalogSnapshot) -> None:
        """Temporary schemas of sessions an earlier run did not see end (a crash): drop
        them and their tables, as PostgreSQL cleans its pg_temp schemas. With a shared
        catalog, only those of this process's earlier runs and of processes the registry
        says are dead (``temp_schema_process``): a live process's sessions keep theirs."""
        from sqlfront import sequence_ddl

        left = [sc.name for sc in snap.schemas.values() if sc.temp]
        if is_postgres_url(self.config.catalog_url):
            left = leftover_temp_schemas(left, self.registry.live() - {self.process_id})
        if left:
            log.info("dropping %d temporary schema(s) left by an earlier run", len(left))
            self.coordinator.transact(sequence_ddl.drop_schemas(left, True, True))

    def _recover_persist(self, snap: CatalogSnapshot) -> None:
        """Before any session: drop the leased readers of our earlier run, finish the
        transactions a crash left half applied, and delete what no state refers to (parts
        of writers that died, shards of tables whose DROP a crash interrupted)."""
        self.persist.expire_previous_readers()
        live = {t.shard_id for t in snap.storage_relations()}
        if not self.config.shared_persist:
            # A table's shard sealed by an ALTER TABLE that a crash cut short: the
            # catalog still names it, so writes must land there again. (With shared
            # persist another process's ALTER may be under way: left alone.)
            for shard in live:
                if self.persist.state(shard).sealed:
                    log.info("persist: unsealing shard %s (an ALTER TABLE a crash interrupted)", shard)
                    self.persist.unseal(shard)
        n = group_commit.recover(self.persist, self.txns, live)
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
        self.writer = GroupCommitter(self.persist, self.txns, self.oracle, self._applied)

    #: seconds an unreferenced part of a dead process stays in a shared Blob (well above
    #: the time from writing a part to its compare-and-append, and the registry's 30 s)
    LEAKED_PART_GRACE_S = 600.0

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

    def _applied(self, shards: set[str]) -> None:
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
        tables = [t for t in self.snapshot.storage_relations() if t.shard_id in shards]
        for t in tables:
            self.note_write(t)

    #: seconds between persist maintenance rounds
    MAINTENANCE_S = 1.0
    #: how far since lags the read timestamp (Materialize's default compaction window for
    #: tables is 1 s); AS OF and transactions may read that far back
    COMPACTION_WINDOW_MS = 1000

    def _maintenance_loop(self) -> None:
        """Persist's background work, off every session's thread: heartbeat this process's
        leased readers, advance each shard's since, collect garbage, compact; and now and
        then give the C heap's free memory back (``sqlfront.heap``)."""
        trimmer = heap.Trimmer()
        while not self._maintenance_stop.wait(self.MAINTENANCE_S):
            trimmer.maybe()
            try:
                self.maintain_persist()
            except Exception as e:  # next round tries again
                log.warning("persist maintenance: %s", e)
            if self.coordinator.snapshot.to_finalize:  # a drop a crash (or a failure) left undone
                self._finalize()
            if self.registry is not None:
                try:
                    self._heartbeat()
                except Exception as e:  # next round tries again; peers' lists age out
                    log.warning("environmentd registry: %s", e)
            if not self.ownership.local:
                # a cluster taken while its replicas changed: converge on the catalog
                for cid, cc in list(self.clusters.items()):
                    self.reconcile_replicas(cid, cc)

    def _finalize_soon(self) -> None:
        """Delete the dropped shards the catalog lists (``sqlfront.finalize``), off the loop."""
        threading.Thread(target=self._finalize, name="drop-shard", daemon=True).start()

    def _finalize(self) -> None:
        try:
            finalize(self.persist, self.coordinator)
        except Exception as e:  # listed still: the next maintenance round tries again
            log.warning("deleting dropped shards: %s", e)

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

    def maintain_persist(self) -> None:
        """One maintenance round over the shards this process reads or wrote."""
        dirty, self._dirty = self._dirty, set()
        shards = set(self.persist.leases.registered()) | dirty
        live = {t.shard_id for t in self.snapshot.storage_relations()}
        desired = self.oracle.read_ts() - self.COMPACTION_WINDOW_MS
        with self._time_lock:
            desired = min([desired] + list(self._time_holds))
        due = dirty & live
        for shard in sorted(shards & live):
            st = self.persist.maintain(shard, desired)
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

    #: a consolidation that runs on a replica waits until the shard had no write this long
    RETRACTION_QUIET_S = 3.0

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
                table = next((t for t in self.snapshot.storage_relations() if t.shard_id == shard), None)
                if table is None:
                    continue
                chosen = compaction.choose(self.persist.state(shard))
                if not chosen:
                    continue
                if compaction.needs_replica(chosen):
                    if time.monotonic() - self._last_write.get(shard, 0) < self.RETRACTION_QUIET_S:
                        # A consolidation too big for memory is a Spark job: wait until
                        # the shard's writes pause, so one job covers them all.
                        with self._compact_cv:
                            self._to_compact.add(shard)
                        waiting = True
                        continue
                    # A Spark job on a replica, off this thread: a replica that is slow or
                    # frozen must not hold up the other shards' merges.
                    with self._compact_cv:
                        if shard in self._replica_merging:
                            continue
                        self._replica_merging.add(shard)
                    self._replica_merges.submit(self._compact_on_replica, shard, table)
                    continue
                try:
                    self.persist.compact(shard)
                except Exception as e:  # a later write brings the shard back here
                    log.warning("compacting %s: %s", table.name, e)
            if waiting:
                self._maintenance_stop.wait(0.5)

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
        for cc in list(self.clusters.values()):
            if not cc.has_healthy_replica():
                continue
            urls = PartUrls(lambda: self.persist.new_part_url(table.shard_id))
            write = write_job(table, urls.url_for, diffs=True)
            winner = None
            try:
                winner = cc.peek(plan, lambda t: snap, self.builtin_rows, self.config.replica_wait_s, None, None,
                                 lambda df, rid: write(consolidated_updates(df.sparkSession, table, snap), rid))
            finally:
                for key in urls.keys_except(winner):
                    self.persist.blob.delete(key)
            return self.persist.written_batch(urls.parts[winner][0], diffs=True)
        raise RuntimeError("no healthy replica to compact on")

    def _drop_pending_replicas(self) -> None:
        """A graceful reconfiguration this process ran when it stopped did not finish:
        its pending replicas go (Materialize's rule: the statement failed, the cluster is
        as it was)."""
        from sqlfront.cluster_ddl import drop_pending

        pending = [r.id for r in self.snapshot.replicas.values() if r.pending]
        if pending:
            log.warning("dropping %d replica(s) of an unfinished ALTER CLUSTER ... WITH (WAIT ...)", len(pending))
            self.coordinator.transact(drop_pending(pending))

    def _bootstrap(self) -> None:
        size = self.config.bootstrap_replica_size
        zones = self.config.availability_zones

        def build(snap, ids):
            if snap.clusters:  # a shared catalog another environmentd bootstrapped first
                return []
            # managed, as Materialize's quickstart: ALTER CLUSTER quickstart SET (SIZE ...) works
            c = Cluster(ids.allocate("cluster"), "quickstart", managed=True, size=size, replication_factor=1)
            r = Replica(ids.allocate("replica"), c.id, "r1", size, zones[0] if zones else None)
            return [durable.CreateCluster(c), durable.CreateReplica(r)]

        self.coordinator.transact(build)

    def _bootstrap_role(self) -> None:
        """A catalog without roles (new, or written before roles existed) gets the
        bootstrap role: a superuser that can log in, id ``u1``, which ``catalog.rbac``
        takes as the owner of every object without a recorded one."""
        from catalog import rbac
        from catalog.snapshot import Role

        def build(snap, ids):
            if snap.roles:  # done already (or by another environmentd on a shared catalog)
                return []
            role_id = ids.allocate("role")
            assert role_id == rbac.BOOTSTRAP_ROLE_ID, role_id
            return [durable.CreateRole(Role(role_id, self.config.bootstrap_role, login=True, superuser=True))]

        if not self.snapshot.roles:
            self.coordinator.transact(build)

    def login_role(self, name: str) -> str:
        """The id of the role user ``name`` logs in as (a name ``sqlfront.auth.
        check_login_name`` let through). With ``auto_create_roles`` a user without one
        gets a role (LOGIN, no other attribute, PUBLIC's privileges only) at its first
        login, as Materialize Cloud creates roles for new users.

        Raises:
            SqlError FATAL 28000 ``role "x" does not exist`` (PostgreSQL's message) without
            ``auto_create_roles``; FATAL 28000 ``role "x" is not permitted to log in`` for
            a NOLOGIN role."""
        from catalog.errors import SqlError
        from catalog.snapshot import Role

        r = self.snapshot.role_by_name(name)
        if r is None:
            if not self.config.auto_create_roles:
                raise SqlError(INVALID_AUTHORIZATION_SPECIFICATION, f'role "{name}" does not exist', severity="FATAL")

            def build(snap, ids):
                if snap.role_by_name(name) is not None:
                    return []
                return [durable.CreateRole(Role(ids.allocate("role"), name, login=True))]

            r = self.coordinator.transact(build).role_by_name(name)
        if not r.login:
            raise SqlError(INVALID_AUTHORIZATION_SPECIFICATION, f'role "{name}" is not permitted to log in', severity="FATAL")
        return r.id

    def shutdown(self) -> None:
        """Stop the Coordinator and every replica process (waits for them to exit)."""
        self._maintenance_stop.set()
        self.replica_monitor.stop()
        self.ownership.stop()
        self._replica_merges.shutdown(wait=False, cancel_futures=True)
        self.sources.stop_all()
        if self.writer is not None:
            self.writer.stop()
        if self.coordinator is not None:
            self.coordinator.stop()
        self.python_workers.shutdown()
        self.persist.close()
        if self.pubsub_server is not None:
            self.pubsub_server.stop()
            (self.data_dir / PUBSUB_ADDRESS_FILE).unlink(missing_ok=True)
        with self._clusters_lock:
            ccs = list(self.clusters.values())
            self.clusters.clear()
        threads = [threading.Thread(target=cc.shutdown, daemon=True) for cc in ccs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.ownership.release()  # the replicas are gone: another process may take over now
        if self.registry is not None:
            try:
                self.registry.deregister()
            except Exception as e:  # its heartbeat ages out instead
                log.warning("environmentd registry: %s", e)
            self.registry.close()
        log.info("environment stopped")

    # -- state --------------------------------------------------------------------------

    @property
    def snapshot(self) -> CatalogSnapshot:
        """The latest committed catalog; in a session's thread while its transaction
        block holds uncommitted DDL, that block's pending catalog (:data:`BLOCK_CATALOG`)."""
        pending = BLOCK_CATALOG.get()
        return pending if pending is not None else self.coordinator.snapshot

    def cluster_coordinator(self, cluster_id: str) -> ClusterCoordinator | None:
        return self.clusters.get(cluster_id)

    def replica_status(self, replica_id: str) -> str:
        """``healthy`` or ``unhealthy``: from the replica's process when this environmentd
        runs its cluster, else as the cluster's owner published it in its lease (at most
        one renewal old; ``unhealthy`` when no live process owns the cluster)."""
        r = self.snapshot.replicas.get(replica_id)
        cc = self.clusters.get(r.cluster_id) if r else None
        if cc is not None:
            return cc.status(replica_id)
        lease = self.ownership.lease(r.cluster_id) if r else None
        if lease is not None and lease.live:
            return lease.replica_statuses.get(replica_id, "unhealthy")
        return "unhealthy"

    def _replica_statuses(self, cluster_id: str) -> dict[str, str]:
        cc = self.clusters.get(cluster_id)
        return {r.id: cc.status(r.id) for r in self.snapshot.replicas_of(cluster_id)} if cc else {}

    def not_owned_error(self, cluster: Cluster) -> SqlError:
        """The error of a peek on a cluster this environmentd does not run: 55000
        (object_not_in_prerequisite_state, as for a cluster that is not running: the
        session stays usable and the statement may succeed elsewhere), naming the owner.
        Class 08 would tell drivers the connection broke, which it did not; the peek is not
        forwarded, because running it through another process's pgwire would cost a
        second round trip and a second plan for every row batch."""
        if self.ownership.local:
            return SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"cluster '{cluster.name}' is not running")
        owner = self.ownership.owner_of(cluster.id)
        if owner == self.config.address:  # taken a moment ago: its coordinator is starting
            return SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"cluster '{cluster.name}' is not running yet",
                            hint="This environmentd took its lease a moment ago.")
        if owner is None:
            return SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"cluster '{cluster.name}' is not running: no environmentd owns it now",
                            hint="Its environmentd may be restarting, or a process started with --takeover "
                                 "takes it over once its lease expires.")
        return SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"cluster '{cluster.name}' is owned by the environmentd at {owner}",
                        detail=f"This environmentd ({self.config.address}) does not run it.",
                        hint=f"Connect through the balancer with options '-c cluster={cluster.name}', "
                             f"or to {owner}.")

    def cluster_owner(self, cluster_id: str) -> str | None:
        """``mz_clusters.environmentd``: the pgwire address of the cluster's owner now."""
        if cluster_id in self.clusters:
            return self.config.address
        return self.ownership.owner_of(cluster_id)

    def row_count(self, relation) -> int | None:
        """Rows of a user table now, from its shard's part metadata (persist keeps each
        part's row count); None for other relations. The optimizer's join ordering
        statistics (``planner.optimize.RowCount``)."""
        if not isinstance(relation, Table):
            return None
        return self.persist.state(relation.shard_id).row_count()

    def builtin_rows(self, table: BuiltinTable) -> list[tuple]:
        found = introspection.rows(self, table)
        if found is not None:
            return found
        if table.id == MZ_COORDINATOR_LOOP.id:
            return self.metrics.coordinator_loop_rows()
        if table.id == MZ_PEEK_DURATIONS.id:
            return self.metrics.peek_duration_rows()
        if table.id == MZ_HYDRATION_STATUSES.id:
            return sorted([row for cc in list(self.clusters.values()) if cc.materializations is not None
                           for row in cc.materializations.hydration_rows(cc.replica_ids())]
                          + self._index_hydration_rows())
        if table.id == MZ_MATERIALIZATION_LAG.id:
            return self._materialization_lag()
        if table.id == MZ_RECENT_STORAGE_USAGE.id:
            # Bytes of the Parquet parts in each table's shard now (before compaction frees any).
            return [(t.id, sum(p.bytes for p in self.persist.state(t.shard_id).parts))
                    for t in self.snapshot.storage_relations()]
        return builtin_rows(table, self.snapshot, self.replica_status, self.config.sizes,
                            server_defaults(self.config.server_vars()), self.cluster_owner)

    def _materialization_lag(self) -> list[tuple]:
        """``(view id, local lag, global lag)``: how far each materialized view's upper - 1
        is behind what its inputs are complete for (a table: the read timestamp; a
        materialized view: its upper - 1), and behind the read timestamp."""
        from catalog.types import Interval

        snap = self.snapshot
        now = self.oracle.read_ts()

        def frontier(rel) -> int:
            return self.persist.latest(rel.shard_id).upper - 1

        out = []
        for cluster_id in {m.cluster_id for m in snap.materialized_views.values()}:
            for planned in self._materializations(cluster_id):
                mine = frontier(planned.view)
                ready = min([now] + [frontier(i) for i in planned.inputs if isinstance(i, MaterializedView)])
                out.append((planned.view.id, Interval(micros=max(0, ready - mine) * 1000),
                            Interval(micros=max(0, now - mine) * 1000)))
        return sorted(out, key=lambda r: r[0])

    def _all_statuses(self) -> list[str]:
        """Statuses of the replicas this environmentd runs (its replica metrics)."""
        if not self.coordinator:
            return []
        return [self.replica_status(r.id) for r in list(self.snapshot.replicas.values()) if r.cluster_id in self.clusters]

    def _size(self, r: Replica) -> ReplicaSize | None:
        if r.size is None:
            return None
        return self.config.sizes.get(r.size) or ReplicaSize(r.size, workers=1)

    def _gain_cluster(self, cluster_id: str) -> None:
        """This process now owns the cluster: start its ClusterCoordinator and replicas.
        Registered before the snapshot is read, so a replica the Coordinator loop adds
        meanwhile is started by one of the two (``ensure_replica`` is idempotent)."""
        c = self.snapshot.clusters.get(cluster_id)
        if c is None:
            return
        cc = self._cluster_coordinator(c)
        self.reconcile_replicas(cluster_id, cc)
        self.sources.sync(self.snapshot)

    def _lose_cluster(self, cluster_id: str) -> None:
        """This process no longer owns the cluster (lease taken, not renewed, or the
        cluster dropped): stop its replicas."""
        with self._clusters_lock:
            cc = self.clusters.pop(cluster_id, None)
        self.sources.sync(self.snapshot)
        if cc is not None:
            log.info("stopping the replicas of cluster %s", cc.name)
            threading.Thread(target=cc.shutdown, name="lose-cluster", daemon=True).start()

    def reconcile_replicas(self, cluster_id: str, cc: ClusterCoordinator) -> None:
        """Make ``cc`` run exactly the replicas the current catalog gives its cluster."""
        snap = self.snapshot
        want = {r.id: r for r in snap.replicas_of(cluster_id)}
        for rid in set(cc.replica_ids()) - set(want):
            cc.drop_replica(rid)
        for r in want.values():
            cc.ensure_replica(r, self._size(r))

    def _cluster_coordinator(self, c: Cluster) -> ClusterCoordinator:
        with self._clusters_lock:
            cc = self.clusters.get(c.id)
            if cc is None:
                cc = ClusterCoordinator(c.id, c.name, self.orchestrator,
                                        # other processes read statuses from the lease: publish now
                                        on_status=functools.partial(self._replica_status_changed, c.id),
                                        max_peeks_per_replica=self.config.max_peeks_per_replica,
                                        blob_probe=functools.partial(probe_blob, blob=self.persist.blob))
                cc.maintain_arrangements(functools.partial(self._arranged_tables, c.id))
                cc.maintain_materializations(self.persist, self.oracle.read_ts,
                                             functools.partial(self._materializations, c.id), self.builtin_rows,
                                             self.request_materialization, self._applied)
                self.clusters[c.id] = cc
            return cc

    def _replica_status_changed(self, cluster_id: str, replica_id: str, status: str) -> None:
        self.ownership.poke()  # other processes read statuses from the lease: publish now
        cc = self.clusters.get(cluster_id)
        h = next((h for h in cc.handles() if h.id == replica_id), None) if cc is not None else None
        if h is not None:
            self.replica_monitor.status_changed(h, status == "healthy")

    def replica_handles(self) -> list:
        """(handle, size) of every replica this environmentd runs (``ReplicaMonitor``)."""
        snap = self.snapshot
        return [(h, self._size(snap.replicas[h.id]) if h.id in snap.replicas else None)
                for cc in list(self.clusters.values()) for h in cc.handles()]

    def _arranged_tables(self, cluster_id: str) -> dict[str, tuple[Table, list[tuple[str, ...]]]]:
        """The tables the indexes of cluster ``cluster_id`` cover (an index on a view
        covers the tables the view reads), each with the units its shard's parts are
        cached in now (``lower.arranged_units``)."""
        snap = self.snapshot
        out = {}
        for idx in snap.indexes_in_cluster(cluster_id):
            for t in self._tables_under(snap, idx.on_id):
                # Plain parts only: the ones a peek reads as they are stored.
                st = self.persist.state(t.shard_id)
                # Inline parts are no files: peeks send them along as local relations.
                out[t.id] = (t, arranged_units([(self.persist.blob.url(p.key), p.updates)
                                                for p in st.parts if not p.diffs and p.inline is None]))
        return out

    def _index_hydration_rows(self) -> list[tuple]:
        """``(index id, replica id, hydrated, None)`` for each index of a cluster this
        process runs and each replica of it: hydrated once the replica holds the parts of
        every table the index covers (false while its maintenance fails: the failure is
        in the log, once)."""
        snap = self.snapshot
        rows = []
        for cid, cc in list(self.clusters.items()):
            arr = getattr(cc, "arrangements", None)
            if arr is None:
                continue
            for idx in snap.indexes_in_cluster(cid):
                tables = [t.id for t in self._tables_under(snap, idx.on_id)]
                plans = self._view_tables.get((snap.version, idx.on_id), ()) is not None
                rows += [(idx.id, rid, plans and arr.hydrated(rid, tables), None) for rid in cc.replica_ids()]
        return rows

    def _tables_under(self, snap: CatalogSnapshot, object_id: str) -> tuple[Table, ...]:
        if object_id in snap.tables:
            return (snap.tables[object_id],)
        if object_id in snap.materialized_views:
            return (snap.materialized_views[object_id],)
        key = (snap.version, object_id)
        if key not in self._view_tables:
            view = snap.views.get(object_id)
            tables: tuple[Table, ...] | None = ()
            if view is not None:
                # mz_now() in the view takes a value when planned: the tables read do not
                # depend on it. Planned once per catalog version, so a view that does not
                # plan is reported once (its index then keeps nothing in memory).
                set_query_timestamp(self.oracle.read_ts)
                try:
                    with searching_from(view.schema):
                        plan = QueryPlanner(snap).plan_raw(pglast.parse_sql(view.sql)[0].stmt).plan
                    tables = tuple(r for r in relations_read(plan) if isinstance(r, Table))
                except Exception as e:
                    log.warning("indexes on view %s keep nothing in memory: planning it: %s", view.name, e)
                    tables = None
                finally:
                    set_query_timestamp(None)
            self._view_tables = {k: v for k, v in self._view_tables.items() if k[0] == snap.version}
            self._view_tables[key] = tables  # None: it does not plan
        return self._view_tables[key] or ()

    def _materializations(self, cluster_id: str) -> list[Materialization]:
        """The materialized views cluster ``cluster_id`` hosts, with their queries planned
        against the current catalog (once per catalog version), in dependency order. A
        view whose query no longer plans is left out (logged)."""
        snap = self.snapshot
        out = []
        for m in snap.materialized_views_in_cluster(cluster_id):
            key = (snap.version, m.id)
            with self._mv_plans_lock:  # each cluster's maintainer asks from its own thread
                if key not in self._mv_plans:
                    try:
                        set_query_timestamp(MAINTAINED)  # mz_now(): its temporal filters'
                        with searching_from(m.schema):
                            plan = QueryPlanner(snap).plan_select(pglast.parse_sql(m.sql)[0].stmt).plan
                        inputs = tuple(dict.fromkeys(r for r in relations_read(plan) if isinstance(r, Table)))
                        planned = Materialization(m, plan, inputs)
                    except Exception as e:
                        log.warning("materialized view %s: planning its query: %s", m.name, e)
                        planned = None
                    self._mv_plans = {k: v for k, v in self._mv_plans.items() if k[0] == snap.version}
                    self._mv_plans[key] = planned
                planned = self._mv_plans[key]
            if planned is not None:
                out.append(planned)
        return out

    def request_materialization(self, view: MaterializedView, ts: int) -> None:
        """A reader waits for ``view``'s upper to pass ``ts``: tell the cluster hosting it."""
        cc = self.clusters.get(view.cluster_id)
        if cc is not None and cc.materializations is not None:
            cc.materializations.request(view.id, ts)

    def materialization_error(self, view: MaterializedView):
        """The SqlError ``view``'s query raised the last time its cluster ran it, while
        that is its latest outcome; else None."""
        cc = self.clusters.get(view.cluster_id)
        return cc.materializations.error(view.id) if cc is not None and cc.materializations is not None else None

    def note_write(self, table: Table) -> None:
        """New parts landed in ``table``'s shard: arrangements that cover it catch up now."""
        for cc in list(self.clusters.values()):
            if cc.arrangements is not None and table.id in cc.arrangements.arranged():
                cc.arrangements.poke()

    # -- applying committed catalog changes (on the Coordinator loop; must not block) --

    def _on_commit(self, old: CatalogSnapshot, new: CatalogSnapshot, ops: list) -> None:
        """Apply the side effects of committed ``ops``, each on its own: one that fails is
        logged and counted (``coordinator_errors_total``) and the others still happen."""
        made = {op.table.id: op.table for op in ops if isinstance(op, durable.CreateTable)}
        made_mvs = {op.view.id: op.view for op in ops if isinstance(op, durable.CreateMaterializedView)}
        if made or made_mvs:
            # a transaction block's ops may drop what they made: its drop finds it in ``old``
            old = old.with_changes(tables={**old.tables, **made},
                                   materialized_views={**old.materialized_views, **made_mvs})
        for op in ops:
            try:
                self._apply(old, new, op)
            except Exception as e:
                log.error("applying %s failed: %s", type(op).__name__, e, exc_info=e)
                self.metrics.coordinator_errors.inc()

    def _apply(self, old: CatalogSnapshot, new: CatalogSnapshot, op) -> None:
        """The side effect of one committed op (must not block: it runs on the loop), by its
        handler in :attr:`_SIDE_EFFECTS` (a value of no op class there has none)."""
        handler = self._SIDE_EFFECTS.get(type(op))
        if handler is not None:
            handler(self, old, op)

    def _on_create_cluster(self, old: CatalogSnapshot, op: durable.CreateCluster) -> None:
        if self.ownership.local:
            self._cluster_coordinator(op.cluster)
        else:
            self.ownership.poke()  # the lease loop decides who runs it

    def _on_create_replica(self, old: CatalogSnapshot, op: durable.CreateReplica) -> None:
        cc = self.clusters.get(op.replica.cluster_id)  # only a cluster this process runs
        if cc is not None:
            cc.ensure_replica(op.replica, self._size(op.replica))

    def _on_drop_replica(self, old: CatalogSnapshot, op: durable.DropReplica) -> None:
        r = old.replicas[op.replica_id]
        cc = self.clusters.get(r.cluster_id)
        if cc:
            cc.drop_replica(r.id)

    def _on_drop_cluster(self, old: CatalogSnapshot, op: durable.DropCluster) -> None:
        with self._clusters_lock:
            cc = self.clusters.pop(op.cluster_id, None)
        if cc:
            threading.Thread(target=cc.shutdown, name="drop-cluster", daemon=True).start()
        self.ownership.poke()  # gives up its lease

    def _on_rename_cluster(self, old: CatalogSnapshot, op: durable.RenameCluster) -> None:
        cc = self.clusters.get(op.cluster_id)
        if cc:
            cc.rename(op.new_name)

    def _on_update_cluster(self, old: CatalogSnapshot, op: durable.UpdateCluster) -> None:
        cc = self.clusters.get(op.cluster.id)
        if cc:
            cc.rename(op.cluster.name)

    def _on_index_change(self, old: CatalogSnapshot, op: durable.CreateIndex | durable.DropIndex) -> None:
        for cc in list(self.clusters.values()):
            if cc.arrangements is not None:
                cc.arrangements.poke()

    def _on_create_table(self, old: CatalogSnapshot, op: durable.CreateTable) -> None:
        self.persist.create_shard(op.table.shard_id, self.oracle.read_ts())
        if isinstance(op.table, Source):  # its shards exist now (it is its transaction's last op)
            self.sources.ensure(op.table)

    def _on_update_table(self, old: CatalogSnapshot, op: durable.UpdateTable) -> None:
        was = old.tables.get(op.table.id)
        if was is not None and was.shard_id != op.table.shard_id:  # rewritten into a new shard
            self._finalize_soon()

    def _on_drop_sequence(self, old: CatalogSnapshot, op: durable.DropSequence) -> None:
        threading.Thread(target=self.sequences.forget, args=([op.sequence_id],), name="drop-sequence",
                         daemon=True).start()

    def _on_drop_table(self, old: CatalogSnapshot, op: durable.DropTable) -> None:
        self.sources.stop(op.table_id, dropped=True)  # (no runner: nothing to stop)
        self._finalize_soon()

    def _on_create_materialized_view(self, old: CatalogSnapshot, op: durable.CreateMaterializedView) -> None:
        # Empty, with since and upper at 0: no time is readable until its cluster
        # computes its first contents (reads wait for that, as in Materialize).
        self.persist.create_shard(op.view.shard_id, 0)
        cc = self.clusters.get(op.view.cluster_id)
        if cc is not None and cc.materializations is not None:
            cc.materializations.request(op.view.id, 0)

    def _on_drop_materialized_view(self, old: CatalogSnapshot, op: durable.DropMaterializedView) -> None:
        self._finalize_soon()

    def _no_side_effect(self, old: CatalogSnapshot, op) -> None:
        """Committing the op is all there is to it (readers see the new snapshot)."""

    #: op class -> its side effect here; every class of ``durable.Op`` has one, if only
    #: :meth:`_no_side_effect` (tests/test_catalog_op_dispatch.py checks it)
    _SIDE_EFFECTS = {
        durable.CreateCluster: _on_create_cluster, durable.DropCluster: _on_drop_cluster,
        durable.RenameCluster: _on_rename_cluster, durable.UpdateCluster: _on_update_cluster,
        durable.CreateReplica: _on_create_replica, durable.DropReplica: _on_drop_replica,
        durable.CreateIndex: _on_index_change, durable.DropIndex: _on_index_change,
        durable.CreateTable: _on_create_table, durable.UpdateTable: _on_update_table,
        durable.DropTable: _on_drop_table, durable.DropSequence: _on_drop_sequence,
        durable.CreateMaterializedView: _on_create_materialized_view,
        durable.DropMaterializedView: _on_drop_materialized_view,
        **dict.fromkeys((
            durable.UpdateReplica, durable.CreateSecret, durable.UpdateSecret, durable.DropSecret,
            durable.CreateConnection, durable.DropConnection, durable.SetComment,
            durable.CreateSchema, durable.DropSchema, durable.RenameSchema,
            durable.CreateSequence, durable.UpdateSequence, durable.CreateView, durable.DropView,
            durable.UpdateMaterializedView, durable.FinalizeShards,
            durable.CreateRole, durable.UpdateRole, durable.DropRole, durable.RevokeAll,
            durable.GrantRole, durable.RevokeRole, durable.SetOwner, durable.SetPrivileges,
            durable.SetDefaultPrivileges,
        ), _no_side_effect),
    }


def leftover_temp_schemas(names: list[str], live_processes: set[str]) -> list[str]:
    """Of the temporary schemas ``names`` in a catalog shared by several processes, those
    a booting process drops: every one whose process (``temp_schema_process``) is not in
    ``live_processes`` (the others alive now; this process's earlier run is not one of
    them). A name that carries no process is kept: it cannot be told whose it is."""
    return [n for n in names if (p := temp_schema_process(n)) is not None and p not in live_processes]


def _environment_id(d: Path) -> str:
    """This data directory's environment id, made once and kept in ``environment_id``."""
    f = d / "environment_id"
    try:
        return f.read_text().strip()
    except FileNotFoundError:
        eid = uuid.uuid4().hex[:12]
        f.write_text(eid + "\n")
        return eid
