"""One replica as environmentd sees it: its process (if local), its Spark Connect client
session, and its health, kept current by a monitor thread.

Status is ``healthy`` once the Spark Connect server answers a trivial query, and
``unhealthy`` otherwise: when the process has exited, is stopped (SIGSTOP), or does
not answer a ping within ``PING_TIMEOUT_S`` (pings run every ``PING_EVERY_S``). A local replica whose process dies is restarted with
exponential backoff (0.5 s doubling to 30 s); events are logged as
``replica <cluster.replica> <event>`` with event created, ready, crashed, restarted,
dropped.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Callable

from catalog.snapshot import Replica
from spark_exec.orchestrator import Orchestrator, ReplicaProcess, ReplicaSpec

log = logging.getLogger(__name__)

HEALTHY = "healthy"
UNHEALTHY = "unhealthy"

_session_lock = threading.Lock()


def connect_session(url: str):
    """A new Spark Connect client session for ``url`` (``sc://host:port``)."""
    from pyspark.sql.connect.session import SparkSession

    with _session_lock:
        return SparkSession.builder.remote(url).create()


class ReplicaHandle:
    """Health and client of one replica; ``on_change`` is called on every status change."""

    POLL_S = 0.25
    PING_EVERY_S = 1.0
    PING_TIMEOUT_S = 5.0  # generous: a replica busy with big peeks answers slowly, not never

    def __init__(
        self,
        replica: Replica,
        label: str,
        spec: ReplicaSpec | None,
        orchestrator: Orchestrator | None,
        on_change: Callable[["ReplicaHandle"], None],
    ):
        self.replica = replica
        self.label = label
        self.spec = spec
        self.orchestrator = orchestrator
        self.on_change = on_change
        self.status = UNHEALTHY
        self.session = None
        #: bounds the peeks running at once on this replica (set by the ClusterCoordinator)
        self.slots = threading.BoundedSemaphore(8)
        self.process: ReplicaProcess | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._monitor, name=f"replica-{label}", daemon=True)
        # Pings run here so a frozen server never blocks the monitor itself.
        self._pinger = ThreadPoolExecutor(1, thread_name_prefix=f"ping-{label}")
        self._ping: Future | None = None

    @property
    def id(self) -> str:
        return self.replica.id

    @property
    def url(self) -> str | None:
        if self.replica.remote:
            return self.replica.remote[0]
        return self.process.url if self.process else None

    def start(self) -> None:
        if self.spec is not None:
            self.process = self.orchestrator.start(self.spec)
        log.info("replica %s created", self.label)
        self._thread.start()

    def stop(self) -> None:
        """Stop monitoring and stop the process (blocks up to ~10 s for a local replica)."""
        self._stopping.set()
        self._set_status(UNHEALTHY)
        sess, self.session = self.session, None
        if sess is not None:
            _close_session(sess)
        if self.process is not None:
            self.orchestrator.stop(self.process)
        log.info("replica %s dropped", self.label)

    def mark_suspect(self) -> None:
        """A peek could not reach the replica: treat it as unhealthy until it answers again."""
        if self.status == HEALTHY:
            log.warning("replica %s unreachable during a peek", self.label)
            self._set_status(UNHEALTHY)

    def _set_status(self, status: str) -> None:
        with self._lock:
            changed = self.status != status
            self.status = status
        if changed:
            self.on_change(self)

    def _monitor(self) -> None:
        backoff = 0.5
        last_ping = 0.0
        while not self._stopping.is_set():
            if self.process is not None and not self.process.alive():
                code = self.process.popen.returncode
                log.warning("replica %s crashed (exit code %s); restarting in %.1fs", self.label, code, backoff)
                self._set_status(UNHEALTHY)
                sess, self.session = self.session, None
                if sess is not None:
                    _close_session(sess)
                if self._stopping.wait(backoff):
                    return
                backoff = min(backoff * 2, 30.0)
                self.process = self.orchestrator.start(self.spec)
                log.info("replica %s restarted", self.label)
                continue
            if self.process is not None and _is_stopped(self.process.popen.pid):
                if self.status == HEALTHY:
                    log.warning("replica %s is stopped (SIGSTOP)", self.label)
                self._set_status(UNHEALTHY)
            elif self.status != HEALTHY:
                if self._probe():
                    backoff = 0.5
                    last_ping = time.monotonic()
                    self._set_status(HEALTHY)
                    log.info("replica %s ready at %s", self.label, self.url)
            elif time.monotonic() - last_ping >= self.PING_EVERY_S:
                last_ping = time.monotonic()
                if not self._ping_ok():
                    log.warning("replica %s did not answer a ping within %.0fs", self.label, self.PING_TIMEOUT_S)
                    self._set_status(UNHEALTHY)
            self._stopping.wait(self.POLL_S)

    def _ping_ok(self, full: bool = False) -> bool:
        """Ping with a timeout; a ping still pending from before fails. The periodic ping
        is a config RPC, answered by the server's RPC threads without a Spark job, so a
        replica busy with long peeks is not mistaken for a dead one; ``full`` runs a
        trivial job (readiness: the replica can execute, not only answer)."""
        if self._ping is not None and not self._ping.done():
            return False
        sess = self.session
        if sess is None:
            return False
        work = (lambda: sess.range(1).collect()) if full else (lambda: sess.conf.get("spark.app.name"))
        self._ping = self._pinger.submit(work)
        try:
            self._ping.result(timeout=self.PING_TIMEOUT_S)
            return True
        except FutureTimeout:
            return False
        except Exception as e:
            log.debug("replica %s ping failed: %s", self.label, e)
            return False

    def _probe(self) -> bool:
        url = self.url
        if url is None:
            return False
        host, port = url.removeprefix("sc://").split("/")[0].split(":")
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                pass
        except OSError:
            return False
        if self._ping is not None and not self._ping.done():
            return False
        try:
            if self.session is None:
                self.session = connect_session(url)
        except Exception as e:
            log.debug("replica %s connect failed: %s", self.label, e)
            return False
        if self._ping_ok(full=True):
            return True
        if self._ping is not None and self._ping.done():
            # The server answered with an error: start over with a fresh session.
            sess, self.session = self.session, None
            if sess is not None:
                _close_session(sess)
        return False


def _is_stopped(pid: int) -> bool:
    """True if process ``pid`` is stopped by a signal (state T in /proc/<pid>/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].startswith(("T", "t"))


def _close_session(sess) -> None:
    try:
        sess.client.close()
    except Exception:
        pass
