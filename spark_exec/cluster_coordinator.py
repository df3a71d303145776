"""ClusterCoordinator: one per cluster; owns the cluster's replicas and runs its peeks.

Sessions call ``peek`` directly from their own threads; the Coordinator main loop is
never involved in a SELECT (seeds/small-coordinator.md). Replica changes arrive from
the Coordinator through ``ensure_replica``/``drop_replica``, which never block on a
replica: processes start in the background and stop on a reaper thread.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

import pyarrow as pa

from catalog.errors import SqlError
from catalog.sizes import ReplicaSize
from catalog.snapshot import Replica
from spark_exec.errors import is_connection_error, to_sql_error
from spark_exec.lower import BuiltinFn, Lowerer, ScanFn
from spark_exec.orchestrator import Orchestrator, ReplicaSpec
from spark_exec.replica import HEALTHY, ReplicaHandle

log = logging.getLogger(__name__)

NO_REPLICAS = "55000"


class ClusterCoordinator:
    def __init__(self, cluster_id: str, name: str, orchestrator: Orchestrator,
                 on_status: Callable[[str, str], None] | None = None):
        self.cluster_id = cluster_id
        self.name = name
        self.orchestrator = orchestrator
        self.on_status = on_status
        self._replicas: dict[str, ReplicaHandle] = {}
        self._cond = threading.Condition()

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
            h = ReplicaHandle(replica, f"{self.name}.{replica.name}", spec, self.orchestrator, self._changed)
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
        if self.on_status:
            self.on_status(h.id, h.status)

    # -- peeks ------------------------------------------------------------------------

    def _healthy(self) -> list[ReplicaHandle]:
        return [h for h in self._replicas.values() if h.status == HEALTHY and h.session is not None]

    def peek(self, plan, scan: ScanFn, builtin_rows: BuiltinFn, timeout_s: float) -> pa.Table:
        """Run ``plan`` on a healthy replica and return its rows as Arrow.

        Waits up to ``timeout_s`` for a replica to be healthy. If a replica cannot be
        reached mid-peek, the peek moves on to another one.

        Raises:
            SqlError 55000 if the cluster has no replicas, or none became healthy in time;
            the query's own errors with their SQLSTATE.
        """
        deadline = time.monotonic() + timeout_s
        tried: set[str] = set()
        while True:
            with self._cond:
                if not self._replicas:
                    raise SqlError(NO_REPLICAS, f'CLUSTER "{self.name}" has no replicas available to service request')
                candidates = [h for h in self._healthy() if h.id not in tried] or self._healthy()
                while not candidates:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise SqlError(
                            NO_REPLICAS,
                            f'no replica of cluster "{self.name}" became healthy within {timeout_s:g} s',
                            hint="SHOW CLUSTER REPLICAS shows each replica's status.",
                        )
                    self._cond.wait(min(left, 0.5))
                    if not self._replicas:
                        raise SqlError(NO_REPLICAS, f'CLUSTER "{self.name}" has no replicas available to service request')
                    candidates = self._healthy()
            h = candidates[0]
            tried.add(h.id)
            try:
                session = h.session
                if session is None:
                    continue
                df = Lowerer(session, scan, builtin_rows).lower(plan)
                return df.toArrow()
            except SqlError:
                raise
            except Exception as e:
                if is_connection_error(e) and time.monotonic() < deadline:
                    log.warning("peek on replica %s failed to connect (%s); trying another", h.label, type(e).__name__)
                    h.mark_suspect()
                    continue
                raise to_sql_error(e) from None
