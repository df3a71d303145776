"""The compute controller: the clusters this process runs, as Materialize's compute controller.

It decides with the cluster leases which clusters run here (``sqlfront.ownership``),
keeps one ``ClusterCoordinator`` per such cluster with its replicas, wires each one's
arrangements (the tables its indexes cover) and dataflows (the materialized views it
hosts and its indexes on views with an incremental plan, planned once per catalog
version), and answers for replicas' statuses, here or as another process's lease
publishes them.
"""

from __future__ import annotations

import copy
import functools
import logging
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pglast

from catalog.cluster_leases import PostgresClusterLeases
from catalog.errors import SqlError, OBJECT_NOT_IN_PREREQUISITE_STATE
from catalog.sizes import ReplicaSize
from catalog.snapshot import CatalogSnapshot, Cluster, Index, MaterializedView, Replica, Table
from pgconn import is_postgres_url
from planner.context import MAINTAINED, PlanContext
from planner.plan import relations_read
from planner.query import QueryPlanner
from spark_exec.blob_probe import probe_blob
from spark_exec.cluster_coordinator import ClusterCoordinator
from spark_exec.lower import arranged_units
from spark_exec.materializations import Materialization
from spark_exec.orchestrator import Orchestrator
from spark_exec.replica import HEALTHY
from spark_exec.state_sizes import StateSizes, parts_key
from sqlfront.ownership import LeasedOwnership, LocalOwnership
from sqlfront.replica_monitor import ReplicaMonitor

if TYPE_CHECKING:
    from persist import PersistClient
    from sqlfront.config import Config
    from sqlfront.coordinator import Coordinator
    from sqlfront.metrics import Metrics

log = logging.getLogger(__name__)


class ComputeController:
    """The clusters of one environmentd. ``snapshot`` returns the catalog the caller's
    thread sees; ``applied`` is told of the shards materializations wrote;
    ``builtin_rows`` serves system tables to peeks; ``sync_sources`` starts and stops
    sources' ingestions as clusters come and go."""

    #: longest wait (seconds) for replicas' Spark UIs when ``mz_object_arrangement_sizes``
    #: is read, and each request's timeout: a replica slower than that is left out (the
    #: first request to a replica's REST API starts it, which takes seconds on a busy host)
    STATE_SIZES_WAIT_S = 5.0
    #: seconds between the background looks at replicas' state (``start_state_sizes``)
    STATE_SIZES_LOOK_S = 30.0

    def __init__(self, config: Config, data_dir: Path, metrics: Metrics, persist: PersistClient, oracle,
                 snapshot: Callable[[], CatalogSnapshot], applied: Callable[[set[str]], None],
                 builtin_rows: Callable, sync_sources: Callable[[], None]):
        self.config = config
        self.persist = persist
        self.oracle = oracle
        self._snapshot = snapshot
        self._applied = applied
        self._builtin_rows = builtin_rows
        self._sync_sources = sync_sources
        #: set by the wiring once the Coordinator runs
        self.coordinator: Coordinator | None = None
        self.orchestrator = Orchestrator(data_dir, instance=uuid.uuid4().hex[:8], scratch_dir=config.scratch_dir)
        self.clusters: dict[str, ClusterCoordinator] = {}
        self._clusters_lock = threading.Lock()
        #: which clusters this process runs (every one without a shared catalog)
        self.ownership = LocalOwnership(config.address)
        if is_postgres_url(config.catalog_url):
            self.ownership = LeasedOwnership(
                PostgresClusterLeases(config.catalog_url, config.address or f"pid:{os.getpid()}",
                                      config.cluster_lease_s),
                config.clusters, config.takeover, snapshot, self.gain_cluster,
                self.lose_cluster, self._replica_statuses)
        #: (catalog version, view id) -> the tables it reads (None: it does not plan)
        self._view_tables: dict[tuple[int, str], tuple[Table, ...] | None] = {}
        #: (catalog version, materialized view id) -> its planned query (None: does not plan)
        self._mv_plans: dict[tuple[int, str], Materialization | None] = {}
        self._mv_plans_lock = threading.Lock()
        metrics.track_replicas(self._all_statuses)
        metrics.track_materializations(self._materialization_rounds)
        #: replica statuses and sampled metrics (mz_cluster_replica_statuses, ..._metrics)
        self.replica_monitor = ReplicaMonitor(self.replica_handles, config.replica_metrics_interval_s)
        #: objects' state on replicas, from their Spark UIs (mz_object_arrangement_sizes)
        self.state_sizes = StateSizes(timeout_s=self.STATE_SIZES_WAIT_S)
        self._state_pool = ThreadPoolExecutor(4, thread_name_prefix="state-sizes")
        self._state_stop = threading.Event()

    # -- clusters this process runs -------------------------------------------------------

    def cluster_coordinator(self, cluster_id: str) -> ClusterCoordinator | None:
        return self.clusters.get(cluster_id)

    def gain_cluster(self, cluster_id: str) -> None:
        """This process now owns the cluster: start its ClusterCoordinator and replicas.
        Registered before the snapshot is read, so a replica the Coordinator loop adds
        meanwhile is started by one of the two (``ensure_replica`` is idempotent)."""
        c = self._snapshot().clusters.get(cluster_id)
        if c is None:
            return
        cc = self.start_cluster(c)
        self.reconcile_replicas(cluster_id, cc)
        self._sync_sources()

    def lose_cluster(self, cluster_id: str) -> None:
        """This process no longer owns the cluster (lease taken, not renewed, or the
        cluster dropped): stop its replicas."""
        with self._clusters_lock:
            cc = self.clusters.pop(cluster_id, None)
        self._sync_sources()
        if cc is not None:
            log.info("stopping the replicas of cluster %s", cc.name)
            threading.Thread(target=cc.shutdown, name="lose-cluster", daemon=True).start()

    def drop_cluster(self, cluster_id: str) -> None:
        """The cluster was dropped: stop its replicas (off the caller's thread) and give up
        its lease."""
        with self._clusters_lock:
            cc = self.clusters.pop(cluster_id, None)
        if cc:
            threading.Thread(target=cc.shutdown, name="drop-cluster", daemon=True).start()
        self.ownership.poke()  # gives up its lease

    def reconcile_replicas(self, cluster_id: str, cc: ClusterCoordinator) -> None:
        """Make ``cc`` run exactly the replicas the current catalog gives its cluster."""
        snap = self._snapshot()
        want = {r.id: r for r in snap.replicas_of(cluster_id)}
        for rid in set(cc.replica_ids()) - set(want):
            cc.drop_replica(rid)
        for r in want.values():
            cc.ensure_replica(r, self.size(r))

    def each_round(self) -> None:
        """The maintenance loop's once-a-second work: a cluster taken while its replicas
        changed converges on the catalog."""
        if not self.ownership.local:
            for cid, cc in list(self.clusters.items()):
                self.reconcile_replicas(cid, cc)

    def start_cluster(self, c: Cluster) -> ClusterCoordinator:
        """``c``'s ClusterCoordinator, started (with its arrangements and materializations)
        unless it runs already."""
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
                                             functools.partial(self.dataflows, c.id), self._builtin_rows,
                                             self.request_materialization, self._applied)
                self.clusters[c.id] = cc
            return cc

    def drop_pending_replicas(self) -> None:
        """A graceful reconfiguration this process ran when it stopped did not finish:
        its pending replicas go (Materialize's rule: the statement failed, the cluster is
        as it was)."""
        from sqlfront.sequence.clusters import drop_pending

        pending = [r.id for r in self._snapshot().replicas.values() if r.pending]
        if pending:
            log.warning("dropping %d replica(s) of an unfinished ALTER CLUSTER ... WITH (WAIT ...)", len(pending))
            self.coordinator.transact(drop_pending(pending))

    def size(self, r: Replica) -> ReplicaSize | None:
        if r.size is None:
            return None
        return self.config.sizes.get(r.size) or ReplicaSize(r.size, workers=1)

    # -- replica status -------------------------------------------------------------------

    def replica_status(self, replica_id: str) -> str:
        """``healthy`` or ``unhealthy``: from the replica's process when this environmentd
        runs its cluster, else as the cluster's owner published it in its lease (at most
        one renewal old; ``unhealthy`` when no live process owns the cluster)."""
        r = self._snapshot().replicas.get(replica_id)
        cc = self.clusters.get(r.cluster_id) if r else None
        if cc is not None:
            return cc.status(replica_id)
        lease = self.ownership.lease(r.cluster_id) if r else None
        if lease is not None and lease.live:
            return lease.replica_statuses.get(replica_id, "unhealthy")
        return "unhealthy"

    def _replica_statuses(self, cluster_id: str) -> dict[str, str]:
        cc = self.clusters.get(cluster_id)
        return {r.id: cc.status(r.id) for r in self._snapshot().replicas_of(cluster_id)} if cc else {}

    def _all_statuses(self) -> list[str]:
        """Statuses of the replicas this environmentd runs (its replica metrics)."""
        if not self.coordinator:
            return []
        return [self.replica_status(r.id) for r in list(self._snapshot().replicas.values())
                if r.cluster_id in self.clusters]

    def _materialization_rounds(self) -> dict[str, int]:
        """Cluster name -> dataflow rounds of its materialized views (its metric)."""
        return {cc.name: cc.materializations.dataflow_rounds for cc in list(self.clusters.values())
                if cc.materializations is not None}

    def _replica_status_changed(self, cluster_id: str, replica_id: str, status: str) -> None:
        self.ownership.poke()  # other processes read statuses from the lease: publish now
        cc = self.clusters.get(cluster_id)
        h = next((h for h in cc.handles() if h.id == replica_id), None) if cc is not None else None
        if h is not None:
            self.replica_monitor.status_changed(h, status == "healthy")

    def replica_handles(self) -> list:
        """(handle, size) of every replica this environmentd runs (``ReplicaMonitor``)."""
        snap = self._snapshot()
        return [(h, self.size(snap.replicas[h.id]) if h.id in snap.replicas else None)
                for cc in list(self.clusters.values()) for h in cc.handles()]

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

    # -- arrangements (indexes) -----------------------------------------------------------

    def note_write(self, table: Table) -> None:
        """New parts landed in ``table``'s shard: arrangements that cover it catch up now."""
        for cc in list(self.clusters.values()):
            if cc.arrangements is not None and table.id in cc.arrangements.arranged():
                cc.arrangements.poke()

    def indexes_changed(self) -> None:
        """An index was created or dropped: every cluster's arrangements catch up now."""
        for cc in list(self.clusters.values()):
            if cc.arrangements is not None:
                cc.arrangements.poke()

    def _arranged_tables(self, cluster_id: str) -> dict[str, tuple[Table, list[tuple[str, ...]]]]:
        """The tables the indexes of cluster ``cluster_id`` cover (an index on a view
        covers the tables the view reads), each with the units its shard's parts are
        cached in now (``lower.arranged_units``)."""
        snap = self._snapshot()
        out = {}
        for idx in snap.indexes_in_cluster(cluster_id):
            if self._index_dataflow(snap, idx) is not None:
                continue  # its dataflow keeps the view's contents, not its inputs' parts
            for t in self._tables_under(snap, idx.on_id):
                # Plain parts only: the ones a peek reads as they are stored.
                st = self.persist.state(t.shard_id)
                # Inline parts are no files: peeks send them along as local relations.
                out[t.id] = (t, arranged_units([(self.persist.blob.url(p.key), p.updates)
                                                for p in st.parts if not p.diffs and p.inline is None]))
        return out

    def hydration_rows(self) -> list[tuple]:
        """``mz_hydration_statuses``: each materialization's and index's, per replica."""
        return sorted([row for cc in list(self.clusters.values()) if cc.materializations is not None
                       for row in cc.materializations.hydration_rows(cc.replica_ids())]
                      + self._index_hydration_rows())

    def arrangement_size_rows(self) -> list[tuple]:
        """``mz_object_arrangement_sizes``: ``(replica id, object id, size in bytes)`` of
        each materialized view and index of a cluster this process runs, on each healthy
        local replica of it: the bytes its dataflow's checkpoints, or the cached parts of
        the tables it covers, hold in the replica's Spark block manager, in memory or
        spilled to the replica's disk (``spark_exec.state_sizes``). Parts cached for
        several indexes count for the first of them (they are kept once). A replica whose
        Spark UI does not answer within ``STATE_SIZES_WAIT_S`` (or has none: REMOTE
        replicas, the UI turned off) is left out; so is an object that holds nothing yet.
        """
        snap = self._snapshot()
        asked = {}
        for cid, cc in list(self.clusters.items()):
            owners = self._state_owners(snap, cid)
            if not owners:  # no view or index here: nothing to attribute, no replica UI to ask
                continue
            for h in cc.handles():
                proc = getattr(h, "process", None)
                url = proc.spark_ui_url() if proc is not None and proc.alive() and h.status == HEALTHY else None
                if url:
                    asked[self._state_pool.submit(self.state_sizes.sizes, url)] = (h.id, owners)
        done, _ = wait(asked, timeout=self.STATE_SIZES_WAIT_S)
        sizes: dict[tuple[str, str], int] = {}
        for f in done:
            rid, owners = asked[f]
            if f.exception() is not None:
                log.debug("state sizes of replica %s: %s", rid, f.exception())
                continue
            for key, state in f.result().items():
                if key in owners:
                    sizes[(rid, owners[key])] = sizes.get((rid, owners[key]), 0) + state.bytes
        return sorted((rid, oid, size) for (rid, oid), size in sizes.items())

    def start_state_sizes(self) -> None:
        """Look at the replicas' state every ``STATE_SIZES_LOOK_S`` seconds in the
        background, so each new RDD is attributed to its object while Spark's UI still
        holds the jobs that built it (``spark_exec.state_sizes``: the last 1,000 stages,
        about 160 rounds of a dataflow), whether or not anyone reads the relation."""
        def loop() -> None:
            while not self._state_stop.wait(self.STATE_SIZES_LOOK_S):
                try:
                    self.arrangement_size_rows()
                except Exception as e:  # the catalog may be mid-change: the next look catches up
                    log.debug("state sizes: %s", e)

        threading.Thread(target=loop, name="state-sizes-look", daemon=True).start()

    def _state_owners(self, snap: CatalogSnapshot, cluster_id: str) -> dict[str, str]:
        """The keys state is tagged with on cluster ``cluster_id``'s replicas
        (``state_sizes.state_tag``) -> the object it is of: a materialized view's and an
        index's dataflow, their own ids; cached parts of a table, the first index of the
        cluster that covers the table."""
        out = {m.id: m.id for m in snap.materialized_views_in_cluster(cluster_id)}
        for idx in snap.indexes_in_cluster(cluster_id):
            if self._index_dataflow(snap, idx) is not None:
                out[idx.id] = idx.id
            else:
                for t in self._tables_under(snap, idx.on_id):
                    out.setdefault(parts_key(t.id), idx.id)
        return out

    def _index_hydration_rows(self) -> list[tuple]:
        """``(index id, replica id, hydrated, None)`` for each index of a cluster this
        process runs and each replica of it: hydrated once the replica holds the parts of
        every table the index covers (false while its maintenance fails: the failure is
        in the log, once)."""
        snap = self._snapshot()
        rows = []
        for cid, cc in list(self.clusters.items()):
            arr = getattr(cc, "arrangements", None)
            if arr is None:
                continue
            for idx in snap.indexes_in_cluster(cid):
                if self._index_dataflow(snap, idx) is not None:
                    continue  # a dataflow's: the maintainer's rows
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
                try:
                    plan = QueryPlanner(snap.searching_from(view.schema),
                                        ctx=PlanContext.starting(self.oracle.read_ts)).plan_raw(
                        pglast.parse_sql(view.sql)[0].stmt).plan
                    tables = tuple(r for r in relations_read(plan) if isinstance(r, Table))
                except Exception as e:
                    log.warning("indexes on view %s keep nothing in memory: planning it: %s", view.name, e)
                    tables = None
            self._view_tables = {k: v for k, v in self._view_tables.items() if k[0] == snap.version}
            self._view_tables[key] = tables  # None: it does not plan
        return self._view_tables[key] or ()

    # -- materializations (materialized views) --------------------------------------------

    def materializations(self, cluster_id: str) -> list[Materialization]:
        """The materialized views cluster ``cluster_id`` hosts, with their queries planned
        against the current catalog (once per catalog version), in dependency order. A
        view whose query no longer plans is left out (logged)."""
        snap = self._snapshot()
        out = []
        for m in snap.materialized_views_in_cluster(cluster_id):
            key = (snap.version, m.id)
            with self._mv_plans_lock:  # each cluster's maintainer asks from its own thread
                if key not in self._mv_plans:
                    try:
                        # mz_now(): its temporal filters'
                        plan = QueryPlanner(snap.searching_from(m.schema), ctx=PlanContext.starting(MAINTAINED)
                                            ).plan_select(pglast.parse_sql(m.sql)[0].stmt).plan
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

    def dataflows(self, cluster_id: str) -> list[Materialization]:
        """What cluster ``cluster_id`` maintains by dataflows: its materialized views (in
        dependency order), then its indexes on views (``index_dataflows``)."""
        return self.materializations(cluster_id) + self.index_dataflows(cluster_id)

    def index_dataflows(self, cluster_id: str) -> list[Materialization]:
        """The indexes on views of cluster ``cluster_id`` that a dataflow keeps current
        (``Materialization.index``): those whose view's query has an incremental plan.
        An index on a view without one keeps, as before issue 25, the Parquet parts of
        the tables the view reads in memory (``_arranged_tables``), and a peek runs the
        view's query over them: refusing such an index (0A000, as a materialized view is
        refused) would break the indexes that exist on such views already, whose peeks
        were always answered by recomputation."""
        snap = self._snapshot()
        return [m for idx in snap.indexes_in_cluster(cluster_id)
                if (m := self._index_dataflow(snap, idx)) is not None]

    def indexed_views(self, cluster_id: str) -> dict[str, Index]:
        """The views whose index on cluster ``cluster_id`` is a dataflow this process
        runs, view id -> its first such index (the one EXPLAIN names; a peek reads any
        that serves it, ``index_state``): a peek on that cluster reads them from it
        (``planner.context.PlanContext.indexed_views``)."""
        if cluster_id not in self.clusters:
            return {}
        out: dict[str, Index] = {}
        for m in self.index_dataflows(cluster_id):
            out.setdefault(m.view.on_id, m.view)
        return out

    def index_state(self, cluster_id: str, view_id: str, as_of: int) -> tuple[str, str | None]:
        """``(state, index id)``: how the best index on view ``view_id`` of cluster
        ``cluster_id`` serves a peek at ``as_of`` (``MaterializationMaintainer.index_state``:
        ``ready``, ``behind`` or ``unavailable``)."""
        cc = self.clusters.get(cluster_id)
        if cc is None or cc.materializations is None:
            return "unavailable", None
        best = ("unavailable", None)
        for m in self.index_dataflows(cluster_id):
            if m.view.on_id == view_id:
                state = cc.materializations.index_state(m.view.id, as_of)
                if state == "ready":
                    return state, m.view.id
                if state == "behind":
                    best = (state, m.view.id)
        return best

    def _index_dataflow(self, snap: CatalogSnapshot, idx) -> Materialization | None:
        """Index ``idx`` as a dataflow (``index_dataflows``), or None: it is on a table or
        a materialized view, or its view has no incremental plan (or does not plan).
        Planned once per catalog version."""
        view = snap.views.get(idx.on_id)
        if view is None:
            return None
        key = (snap.version, idx.id)
        with self._mv_plans_lock:
            if key not in self._mv_plans:
                from planner.incremental import incremental_plan

                try:
                    plan = QueryPlanner(snap.searching_from(view.schema), ctx=PlanContext.starting(MAINTAINED)
                                        ).plan_select(pglast.parse_sql(view.sql)[0].stmt).plan
                    incremental_plan(plan)  # 0A000 when it has none
                    inputs = tuple(dict.fromkeys(r for r in relations_read(plan) if isinstance(r, Table)))
                    planned = Materialization(idx, plan, inputs, index=True)
                except SqlError as e:
                    log.info("index %s keeps its view's inputs in memory (no dataflow): %s", idx.name, e)
                    planned = None
                except Exception as e:
                    log.warning("index %s: planning its view: %s", idx.name, e)
                    planned = None
                self._mv_plans = {k: v for k, v in self._mv_plans.items() if k[0] == snap.version}
                self._mv_plans[key] = planned
            return self._mv_plans[key]

    def view_input_holds(self) -> dict[str, int]:
        """Shard id -> the oldest time a materialized view (of any cluster) still has to
        read that input at: its upper - 1, the next round's lower (Materialize: a
        dataflow's as_of holds back its inputs' since). Views never computed yet (upper
        0) hold nothing: they start at their inputs' newest complete time.

        Each view's upper is read from Consensus: a view another process maintains is
        written there, and the state known here (``latest``) may be one seen long ago (a
        read of the view through this process), whose old upper held the inputs' since
        back without bound (948 s behind on the chaos run's table, two processes)."""
        holds: dict[str, int] = {}
        for cluster_id in {m.cluster_id for m in self._snapshot().materialized_views.values()}:
            for m in self.materializations(cluster_id):
                upper = self.persist.state(m.view.shard_id).upper
                if upper == 0:
                    continue
                for inp in m.inputs:
                    holds[inp.shard_id] = min(holds.get(inp.shard_id, upper - 1), upper - 1)
        return holds

    def request_materialization(self, view: MaterializedView, ts: int) -> None:
        """A reader waits for ``view``'s upper to pass ``ts``: tell the cluster hosting it."""
        cc = self.clusters.get(view.cluster_id)
        if cc is not None and cc.materializations is not None:
            cc.materializations.request(view.id, ts)

    def request_index(self, cluster_id: str, index_id: str, ts: int) -> None:
        """A peek waits for index ``index_id`` (a dataflow of cluster ``cluster_id``) to
        serve ``ts``: bring its dataflows there soon."""
        cc = self.clusters.get(cluster_id)
        if cc is not None and cc.materializations is not None:
            cc.materializations.request(index_id, ts)

    def materialization_error(self, view: MaterializedView, as_of: int):
        """The SqlError a read of ``view`` at ``as_of`` answers, when its query fails
        there (``MaterializationMaintainer.error``), or that of a materialized view it
        reads (an error flows to the views over it, as in Materialize); else None. A
        copy of the maintainer's shared error: each caller raises its own."""
        cc = self.clusters.get(view.cluster_id)
        err = cc.materializations.error(view.id, as_of) if cc is not None and cc.materializations is not None \
            else None
        if err is None:
            with self._mv_plans_lock:
                planned = next((p for (_, vid), p in reversed(self._mv_plans.items()) if vid == view.id and p), None)
            for inp in planned.inputs if planned is not None else ():
                if isinstance(inp, MaterializedView) and (err := self.materialization_error(inp, as_of)):
                    return err
        return copy.copy(err) if err is not None else None

    def materialization_lag(self) -> list[tuple]:
        """``(view id, local lag, global lag)``: how far each materialized view's upper - 1
        is behind what its inputs are complete for (a table: the read timestamp; a
        materialized view: its upper - 1), and behind the read timestamp."""
        from catalog.types import Interval

        snap = self._snapshot()
        now = self.oracle.read_ts()

        def frontier(rel) -> int:
            return self.persist.latest(rel.shard_id).upper - 1

        out = []
        for cluster_id in {m.cluster_id for m in snap.materialized_views.values()}:
            for planned in self.materializations(cluster_id):
                mine = frontier(planned.view)
                ready = min([now] + [frontier(i) for i in planned.inputs if isinstance(i, MaterializedView)])
                out.append((planned.view.id, Interval(micros=max(0, ready - mine) * 1000),
                            Interval(micros=max(0, now - mine) * 1000)))
        return sorted(out, key=lambda r: r[0])

    # -- shutdown -------------------------------------------------------------------------

    def stop_background(self) -> None:
        """Stop sampling replicas and renewing leases (first, at shutdown)."""
        self.replica_monitor.stop()
        self.ownership.stop()
        self._state_stop.set()
        self._state_pool.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:
        """Stop every cluster's replicas (waits for them to exit, 30 s each at most), then
        release the leases: another process may take the clusters over now."""
        with self._clusters_lock:
            ccs = list(self.clusters.values())
            self.clusters.clear()
        threads = [threading.Thread(target=cc.shutdown, daemon=True) for cc in ccs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.orchestrator.close()
        self.ownership.release()
