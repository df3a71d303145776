"""environmentd: wires the catalog, the Coordinator and the storage and compute controllers
(``sqlfront.controller``) together, boots them from a data directory (its layout:
``sqlfront.datadir``; several processes sharing one store: ``sqlfront.config``) and shuts
them down.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from pathlib import Path

from catalog.builtins import builtin_rows
from catalog.durable import CatalogStore
from catalog.oracle import open_oracle
from catalog.secretbox import SecretBox
from catalog.sequences import SequenceStore
from catalog.snapshot import BuiltinTable, CatalogSnapshot
from pgconn import is_postgres_url, redact_url
from pgconn.registry import ProcessRegistry
from sqlfront import bootstrap, introspection
from sqlfront.activity import ActivityLog
from sqlfront.advisory import LockTable
from sqlfront.bootstrap import leftover_temp_schemas
from sqlfront.config import Config
from sqlfront.controller import effects
from sqlfront.controller.compute import ComputeController
from sqlfront.controller.storage import PUBSUB_ADDRESS_FILE, StorageController
from sqlfront.coordinator import Coordinator
from sqlfront.memory_budget import MemoryBudget, default_copy_memory_budget
from sqlfront.metrics import Metrics
from sqlfront.pyworker import PythonWorkers
from sqlfront.vars import server_defaults

#: names other modules import from here (they moved to the modules named)
__all__ = ["CATALOG_KEY_FILE", "Config", "Environment", "PUBSUB_ADDRESS_FILE",
           "leftover_temp_schemas"]

log = logging.getLogger(__name__)

#: the key of the catalog's encrypted secrets (``catalog.secretbox``), in the data directory
CATALOG_KEY_FILE = "catalog.key"

class Environment:
    """One environmentd: the catalog, the Coordinator, the storage and compute controllers
    (``sqlfront.controller``) wired together. ``start()`` boots it; ``shutdown()`` stops
    every replica."""

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
        shared_catalog = is_postgres_url(config.catalog_url)
        if shared_catalog:
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
        if shared_catalog:
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
        self.storage = StorageController(config, d, self.process_id, self.metrics, self.registry, self.oracle,
                                         lambda: self.snapshot, lambda: list(self.compute.clusters.values()),
                                         lambda t: self.compute.note_write(t), self.builtin_rows,
                                         view_holds=lambda: self.compute.view_input_holds())
        self.persist = self.storage.persist
        from sqlfront.source_runners import SourceRunners
        #: the ingestions of the sources of the clusters this process runs
        self.sources = SourceRunners(self)
        self.compute = ComputeController(config, d, self.metrics, self.persist, self.oracle,
                                             lambda: self.snapshot, self.storage.applied, self.builtin_rows,
                                             lambda: self.sources.sync(self.snapshot))
        self.coordinator: Coordinator | None = None
        #: processes for fast-path queries too big for a session's thread
        self.python_workers = PythonWorkers()
        #: live sessions and recent statements (mz_sessions, mz_recent_activity_log)
        self.activity = ActivityLog(enabled=config.activity_log)
        #: the advisory locks of this process's sessions (pg_advisory_lock)
        self.advisory_locks = LockTable()

    # -- boot and shutdown ------------------------------------------------------------

    def start(self) -> None:
        if self.config.metrics_listen:
            self.metrics.serve(*self.config.metrics_listen)
        reaped = self.compute.orchestrator.reap_orphans()
        if reaped:
            log.warning("killed %d replica process group(s) left by an earlier run", reaped)
        if self.registry is not None:
            # before any session: other processes now know this one is alive
            self.registry.register(self.storage.registry_info())
            self.storage.heartbeat()
        new = self.store.is_new()
        snap = self.store.load()
        self.storage.recover(snap)
        self.coordinator = Coordinator(self.store, snap, lambda old, new, ops: effects.on_commit(self, old, new, ops),
                                       self.metrics.observe_command, self.metrics.coordinator_errors.inc)
        self.storage.coordinator = self.compute.coordinator = self.coordinator
        self.coordinator.start()
        if new:
            bootstrap.bootstrap(self.coordinator, self.config)
        bootstrap.bootstrap_role(self.coordinator, self.config)
        if not new:
            live = self.registry.live() - {self.process_id} if is_postgres_url(self.config.catalog_url) else None
            bootstrap.drop_leftover_temp_schemas(self.coordinator, snap, live)
            if self.compute.ownership.local:
                self.compute.drop_pending_replicas()
                for c in snap.clusters.values():
                    self.compute.gain_cluster(c.id)
        self.compute.ownership.start()  # takes the leases of the clusters this process runs
        self.sources.sync(self.snapshot)
        self.storage.start(self.compute.each_round)
        self.compute.replica_monitor.start()
        self.compute.start_state_sizes()
        log.info("environment ready: %d cluster(s), %d replica(s), %d table(s)",
                 len(self.snapshot.clusters), len(self.snapshot.replicas), len(self.snapshot.tables))

    def login_role(self, name: str) -> str:
        """The id of the role user ``name`` logs in as (``sqlfront.bootstrap.login_role``)."""
        return bootstrap.login_role(self.coordinator, self.snapshot, self.config.auto_create_roles, name)

    def shutdown(self) -> None:
        """Stop the Coordinator and every replica process (waits for them to exit)."""
        self.storage.stop_loops()
        self.compute.stop_background()
        self.sources.stop_all()
        self.storage.stop_writer()
        if self.coordinator is not None:
            self.coordinator.stop()
        self.python_workers.shutdown()
        self.storage.close()
        self.compute.shutdown()  # the replicas are gone: another process may take over now
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
        """The latest committed catalog, as the environment's own work reads it (a
        session's statements read ``Session.catalog``)."""
        return self.coordinator.snapshot

    def builtin_rows(self, table: BuiltinTable, snap: CatalogSnapshot | None = None) -> list[tuple]:
        """The rows of system table ``table`` now: environmentd's live state
        (``sqlfront.introspection``), else the catalog's: ``snap`` (a session's,
        ``Session.catalog``), by default the latest committed one."""
        snap = self.snapshot if snap is None else snap
        found = introspection.rows(self, table, None, snap)
        if found is not None:
            return found
        return builtin_rows(table, snap, self.compute.replica_status, self.config.sizes,
                            server_defaults(self.config.server_vars()), self.compute.cluster_owner)


def _environment_id(d: Path) -> str:
    """This data directory's environment id, made once and kept in ``environment_id``."""
    f = d / "environment_id"
    try:
        return f.read_text().strip()
    except FileNotFoundError:
        eid = uuid.uuid4().hex[:12]
        f.write_text(eid + "\n")
        return eid
