"""ClusterCoordinator: one per cluster; owns the cluster's replicas and runs its peeks.

Sessions call ``peek`` directly from their own threads; the Coordinator main loop is
never involved in a SELECT (seeds/small-coordinator.md). Replica changes arrive from
the Coordinator through ``ensure_replica``/``drop_replica``, which never block on a
replica: processes start in the background and stop on a reaper thread.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Callable

import pyarrow as pa
from pyspark.sql.connect.dataframe import DataFrame

from catalog.errors import SqlError, query_canceled
from catalog.sizes import ReplicaSize
from catalog.snapshot import Replica
from spark_exec.arrangements import ArrangementMaintainer, WantedFn
from spark_exec.errors import is_connection_error, to_sql_error
from spark_exec.lower import BuiltinFn, Lowerer, ScanFn
from spark_exec.orchestrator import Orchestrator, ReplicaSpec
from spark_exec.replica import HEALTHY, ReplicaHandle

log = logging.getLogger(__name__)

NO_REPLICAS = "55000"


class ClusterCoordinator:
    def __init__(self, cluster_id: str, name: str, orchestrator: Orchestrator,
                 on_status: Callable[[str, str], None] | None = None, max_peeks_per_replica: int = 8):
        self.cluster_id = cluster_id
        self.name = name
        self.orchestrator = orchestrator
        self.on_status = on_status
        self._replicas: dict[str, ReplicaHandle] = {}
        self._cond = threading.Condition()
        #: peeks running at once on one replica (each replica has its own threads)
        self.max_peeks_per_replica = max_peeks_per_replica
        #: the arrangements of this cluster's indexes (set by ``maintain_arrangements``)
        self.arrangements: ArrangementMaintainer | None = None

    def maintain_arrangements(self, wanted: WantedFn) -> None:
        """Keep what ``wanted()`` lists (the tables this cluster's indexes cover, with
        their parts) in memory on every replica; see spark_exec.arrangements."""
        self.arrangements = ArrangementMaintainer(self.name, lambda: list(self._replicas.values()), wanted)
        self.arrangements.start()

    # -- replica lifecycle (called by the Coordinator; never blocks) -----------------

    def ensure_replica(self, replica: Replica, size: ReplicaSize | None) -> None:
        with self._cond:
            if replica.id in self._replicas:
                return
            spec = None
            if not replica.remote:
                spec = ReplicaSpec(
                    replica_id=replica.id,
                    label=f"{self.name}.{replica.name}",
                    workers=size.workers,
                    scale=size.scale,
                    memory_mb=size.memory_limit,
                    availability_zone=replica.availability_zone,
                )
            h = ReplicaHandle(replica, f"{self.name}.{replica.name}", spec, self.orchestrator, self._changed,
                              max_peeks=self.max_peeks_per_replica)
            self._replicas[replica.id] = h
        h.start()

    def drop_replica(self, replica_id: str) -> None:
        with self._cond:
            h = self._replicas.pop(replica_id, None)
            self._cond.notify_all()
        if h is not None:
            threading.Thread(target=h.stop, name=f"stop-{h.label}", daemon=True).start()

    def rename(self, name: str) -> None:
        self.name = name

    def shutdown(self) -> None:
        """Stop every replica and wait for their processes to exit."""
        with self._cond:
            handles = list(self._replicas.values())
            self._replicas.clear()
        if self.arrangements is not None:
            self.arrangements.stop()
        threads = [threading.Thread(target=h.stop, daemon=True) for h in handles]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)

    def status(self, replica_id: str) -> str:
        h = self._replicas.get(replica_id)
        return h.status if h is not None else "unhealthy"

    def _changed(self, h: ReplicaHandle) -> None:
        with self._cond:
            self._cond.notify_all()
        if self.arrangements is not None and h.status == HEALTHY:
            self.arrangements.poke()  # a restarted replica's cache starts empty
        if self.on_status:
            self.on_status(h.id, h.status)

    # -- peeks ------------------------------------------------------------------------

    def has_healthy_replica(self) -> bool:
        with self._cond:
            return bool(self._healthy())

    def _healthy(self) -> list[ReplicaHandle]:
        return [h for h in self._replicas.values() if h.status == HEALTHY and h.session is not None]

    def peek(self, plan, scan: ScanFn, builtin_rows: BuiltinFn, replica_wait_s: float,
             statement_timeout_s: float | None = None, cancel: threading.Event | None = None,
             job: Job | None = None):
        """Run ``plan`` on every healthy replica (active replication) and return the first
        answer as Arrow; the other replicas' runs are interrupted (Spark Connect tags).
        ``job(df, replica_id)`` does something else with the lowered DataFrame (a write to
        Blob) and returns what the peek returns.

        A replica that crashes or hangs mid-peek does not fail the peek while another
        replica answers; replicas that become healthy later join in. Each replica runs
        peeks on its own bounded threads: a replica whose queue is full is tried again
        on the next round, so a hung replica never takes another replica's capacity.

        Raises:
            SqlError 55000 if the cluster has no replicas, or has had no healthy replica
            for ``replica_wait_s``; 57014 when ``statement_timeout_s`` passes; the query's
            own errors (the first replica's) with their SQLSTATE.
        """
        start = time.monotonic()
        deadline = start + statement_timeout_s if statement_timeout_s else None
        tag = f"sqlfront-peek-{uuid.uuid4().hex}"
        attempts: dict[str, tuple[ReplicaHandle, Future]] = {}
        no_healthy_since: float | None = None
        # Set when the peek is over: an attempt still queued then never starts its job.
        over = threading.Event()
        try:
            while True:
                with self._cond:
                    if not self._replicas:
                        raise SqlError(NO_REPLICAS, f'CLUSTER "{self.name}" has no replicas available to service request')
                    healthy = self._healthy()
                for h in healthy:
                    if h.id not in attempts:
                        fut = h.submit_peek(functools.partial(self._run_on, h, plan, scan, builtin_rows, tag, over,
                                                                  job or _collect))
                        if fut is not None:
                            attempts[h.id] = (h, fut)
                for rid, (h, fut) in list(attempts.items()):
                    if not fut.done():
                        continue
                    err = fut.exception()
                    if err is None:
                        return fut.result()
                    if isinstance(err, _ReplicaUnreachable):
                        log.warning("peek could not reach replica %s (%s); other replicas carry on", h.label, err)
                        h.mark_suspect()
                        del attempts[rid]  # may run again once the replica is healthy
                        continue
                    raise err
                now = time.monotonic()
                if cancel is not None and cancel.is_set():
                    raise query_canceled(timeout=False)
                if deadline is not None and now >= deadline:
                    raise query_canceled(timeout=True)
                live = [h for h, f in attempts.values() if not f.done() and h.status == HEALTHY]
                if live or healthy:
                    no_healthy_since = None
                else:
                    no_healthy_since = no_healthy_since or now
                    if now - no_healthy_since >= replica_wait_s:
                        raise SqlError(
                            NO_REPLICAS,
                            f'no replica of cluster "{self.name}" is healthy (waited {replica_wait_s:g} s)',
                            hint="SHOW CLUSTER REPLICAS shows each replica's status.",
                        )
                pending = [f for _, f in attempts.values() if not f.done()]
                if pending:
                    wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                else:
                    with self._cond:
                        self._cond.wait(0.1)
        finally:
            over.set()
            for h, fut in attempts.values():
                if not fut.cancel() and not fut.done():
                    h.interrupt(tag)

    def _run_on(self, h: ReplicaHandle, plan, scan: ScanFn, builtin_rows: BuiltinFn, tag: str,
                over: threading.Event, job: "Job"):
        session = h.session
        if over.is_set():
            raise _ReplicaUnreachable("the peek is over")
        if session is None:
            raise _ReplicaUnreachable("no session")
        try:
            session.addTag(tag)  # tags apply to operations started by this thread
            try:
                arranged = self.arrangements.arranged() if self.arrangements is not None else frozenset()
                return job(Lowerer(session, scan, builtin_rows, arranged).lower_result(plan), h.id)
            finally:
                session.removeTag(tag)
        except SqlError:
            raise
        except Exception as e:
            if is_connection_error(e) or h.status != HEALTHY:
                raise _ReplicaUnreachable(type(e).__name__) from e
            raise to_sql_error(e) from None


#: ``job(df, replica_id)``: what a peek does with its lowered DataFrame on one replica
Job = Callable[[DataFrame, str], object]


def _collect(df: DataFrame, replica_id: str) -> pa.Table:
    return df.toArrow()


class _ReplicaUnreachable(Exception):
    """The replica could not run the peek (crashed, stopped, connection lost)."""
