"""Replica health and resource use, for ``mz_internal.mz_cluster_replica_statuses``,
``mz_cluster_replica_metrics`` and ``mz_cluster_replica_utilization`` (and their
``_history``), Materialize's system catalog reference ("mz_internal").

Statuses are recorded when a replica's handle reports a change (``status_changed``, from
the ClusterCoordinator's ``on_status``), with the reason a replica went offline read from
its dead process (``oom-killed`` as Materialize says it, else ``killed by signal 9`` or
``exit code 1``). Metrics are sampled by one background thread every ``interval_s``
seconds with psutil: CPU time and resident memory of each JVM of a local replica (the
driver is process 0, ``local-cluster`` executors 1, 2, ... by pid). A REMOTE replica has no
process here, so no metrics.

Nothing here runs on the Coordinator's thread.
"""

from __future__ import annotations

import collections
import datetime as dt
import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

import psutil

from catalog.sizes import ReplicaSize

log = logging.getLogger(__name__)

#: Materialize's reason for a replica killed for running out of memory
OOM_KILLED = "oom-killed"


@dataclass(frozen=True)
class Sample:
    """One process's resources at one time."""

    occurred_at: dt.datetime
    replica_id: str
    process_id: int
    cpu_nano_cores: int
    memory_bytes: int
    #: the process's allocation: cores (the size's cpu_limit, else its workers) and bytes
    cpu_limit: float
    memory_limit: int | None

    def metrics(self) -> tuple:
        """(cpu_nano_cores, memory_bytes, disk_bytes, heap_bytes, heap_limit, swap_bytes):
        disk and swap are not measured; the heap is the JVM's RSS out of its limit."""
        return self.cpu_nano_cores, self.memory_bytes, None, self.memory_bytes, self.memory_limit, None

    def percents(self) -> tuple:
        """(cpu, memory, disk, heap, swap) in percent of the allocation."""
        cpu = 100.0 * self.cpu_nano_cores / (self.cpu_limit * 1e9) if self.cpu_limit else None
        mem = 100.0 * self.memory_bytes / self.memory_limit if self.memory_limit else None
        return cpu, mem, None, mem, None


class ReplicaMonitor:
    """Statuses and sampled metrics of the replicas this environmentd runs.

    ``handles()`` yields ``(ReplicaHandle, ReplicaSize | None)`` for every replica now;
    ``history`` samples are kept per replica (the oldest go first)."""

    def __init__(self, handles: Callable[[], list], interval_s: float = 5.0, history: int = 720):
        self._handles = handles
        self.interval_s = interval_s
        self._lock = threading.Lock()
        #: replica id -> (online/offline, reason, updated_at)
        self._status: dict[str, tuple[str, str | None, dt.datetime]] = {}
        #: replica id -> the last sample of each of its processes
        self._last: dict[str, list[Sample]] = {}
        self._history: dict[str, collections.deque[list[Sample]]] = {}
        self._history_len = history
        #: pid -> (CPU seconds, monotonic time) at the previous sample
        self._cpu: dict[int, tuple[float, float]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "ReplicaMonitor":
        self._thread = threading.Thread(target=self._loop, name="replica-monitor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    # -- statuses ---------------------------------------------------------------------

    def status_changed(self, handle, healthy: bool) -> None:
        """A replica's handle changed status (called on the handle's monitor thread, while
        a dead process is still its ``process``)."""
        reason = None if healthy else _offline_reason(handle)
        with self._lock:
            self._status[handle.id] = ("online" if healthy else "offline", reason, _now())

    def _note_dead(self, handle) -> None:
        """An offline replica whose process is dead gets that as its reason, if its
        status change came before the death was seen (a ping failed first)."""
        reason = _offline_reason(handle)
        with self._lock:
            rec = self._status.get(handle.id)
            if reason is not None and rec is not None and rec[0] == "offline" and rec[1] is None:
                self._status[handle.id] = ("offline", reason, rec[2])

    def status_rows(self) -> list[tuple]:
        """``mz_cluster_replica_statuses``: (replica_id, process_id, status, reason, updated_at)."""
        out = []
        for h, _size in self._handles():
            healthy = h.status == "healthy"
            with self._lock:
                rec = self._status.get(h.id)
                if rec is None or (rec[0] == "online") != healthy:  # no change seen yet
                    rec = self._status[h.id] = ("online" if healthy else "offline", None, _now())
            if not healthy and h.failure:  # its server answers, but it cannot work (a Blob probe failed)
                rec = ("offline", h.failure, rec[2])
            out.append((h.id, 0, *rec))
        return sorted(out)

    # -- metrics ----------------------------------------------------------------------

    def metric_rows(self) -> list[tuple]:
        """``mz_cluster_replica_metrics``: the last sample of each live replica process."""
        return [(s.replica_id, s.process_id, *s.metrics()) for s in self._latest()]

    def utilization_rows(self) -> list[tuple]:
        """``mz_cluster_replica_utilization``: the last sample in percent of the allocation."""
        return [(s.replica_id, s.process_id, *s.percents()) for s in self._latest()]

    def metric_history_rows(self) -> list[tuple]:
        """``mz_cluster_replica_metrics_history`` (columns in Materialize's order)."""
        return [(s.replica_id, s.process_id, *s.metrics()[:3], s.occurred_at, *s.metrics()[3:], None)
                for s in self._all()]

    def utilization_history_rows(self) -> list[tuple]:
        """``mz_cluster_replica_utilization_history``."""
        return [(s.replica_id, s.process_id, *s.percents(), s.occurred_at, None) for s in self._all()]

    def _latest(self) -> list[Sample]:
        live = {h.id for h, _ in self._handles()}
        with self._lock:
            return sorted((s for rid, ss in self._last.items() if rid in live for s in ss),
                          key=lambda s: (s.replica_id, s.process_id))

    def _all(self) -> list[Sample]:
        live = {h.id for h, _ in self._handles()}
        with self._lock:
            return [s for rid, hist in self._history.items() if rid in live for ss in hist for s in ss]

    def sample(self) -> None:
        """Sample every live local replica's processes now (the thread's one step)."""
        seen, pids = set(), set()
        handles = self._handles()
        for h, size in handles:
            proc = getattr(h, "process", None)
            if proc is None or not proc.alive():
                self._note_dead(h)
                continue
            samples = self._sample_group(h.id, proc.popen.pid, size, pids)
            seen.add(h.id)
            with self._lock:
                self._last[h.id] = samples
                self._history.setdefault(h.id, collections.deque(maxlen=self._history_len)).append(samples)
        current = {h.id for h, _ in handles}
        with self._lock:
            for rid in [r for r in self._last if r not in seen]:
                del self._last[rid]
            for rid in [r for r in self._history if r not in current]:  # dropped replicas
                del self._history[rid]
        # forget the CPU marks of processes gone since (restarted replicas' old JVMs)
        self._cpu = {pid: v for pid, v in self._cpu.items() if pid in pids}

    def _sample_group(self, replica_id: str, pid: int, size: ReplicaSize | None, pids: set[int]) -> list[Sample]:
        """One sample of each JVM of the process group led by ``pid``; adds their pids to ``pids``."""
        try:
            root = psutil.Process(pid)
            procs = [root] + sorted((p for p in root.children(recursive=True) if _is_jvm(p)), key=lambda p: p.pid)
        except psutil.Error:
            return []
        cores = float((size.cpu_limit or size.workers) if size else 1)
        from spark_exec.orchestrator import DEFAULT_MEMORY_MB

        mem_limit = ((size.memory_limit if size and size.memory_limit else DEFAULT_MEMORY_MB) << 20)
        now, when = time.monotonic(), _now()
        out = []
        for i, p in enumerate(procs):
            try:
                with p.oneshot():
                    t = p.cpu_times()
                    cpu_s = t.user + t.system + t.children_user + t.children_system
                    rss = p.memory_info().rss
                    started = p.create_time()
            except psutil.Error:
                continue
            prev = self._cpu.get(p.pid)
            if prev is None:  # the first sample: the average since the process started
                elapsed = max(time.time() - started, 1e-3)
                rate = cpu_s / elapsed
            else:
                rate = max(cpu_s - prev[0], 0.0) / max(now - prev[1], 1e-3)
            self._cpu[p.pid] = (cpu_s, now)
            pids.add(p.pid)
            out.append(Sample(when, replica_id, i, int(rate * 1e9), rss, cores, mem_limit))
        return out

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sample()
            except Exception:  # a sample lost is no reason to stop sampling
                log.exception("replica metrics sample failed")
            self._stop.wait(self.interval_s)


def _is_jvm(p: psutil.Process) -> bool:
    try:
        return p.name() == "java"
    except psutil.Error:
        return False


def _offline_reason(handle) -> str | None:
    """Why a replica is offline: its dead process's end (``oom-killed`` for an
    OutOfMemoryError, else ``killed by signal N`` / ``exit code N``), None when its
    process is alive (starting, or not answering)."""
    proc = getattr(handle, "process", None)
    if proc is None or proc.alive():
        return None
    ended = proc.exit_reason()
    if ended is None:
        return None
    reason, oom = ended
    return OOM_KILLED if oom else reason


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)
