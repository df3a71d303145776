"""``sqlfront serve``'s settings (:class:`Config`), read by environmentd and its controllers.

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

from dataclasses import dataclass, field
from pathlib import Path

from catalog.sizes import ReplicaSize, default_sizes
from pgconn import is_postgres_url
from sqlfront.tls import PeerTls


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
    #: where local replicas keep their scratch space (``--scratch-dir``;
    #: ``spark_exec.orchestrator``), None for the system's temp directory
    scratch_dir: Path | None = None

    @property
    def shared_persist(self) -> bool:
        """Other processes may write this persist (its Consensus is in PostgreSQL)."""
        return is_postgres_url(self.persist_consensus_url)

    def server_vars(self) -> dict[str, str]:
        """Session variables' defaults on this server: the operator's ``session_defaults``
        and the read-only variables that show server settings (``SHOW max_connections``)."""
        return {**self.session_defaults, "max_connections": str(self.max_connections),
                "max_copy_from_size": str(self.max_copy_from_size)}
