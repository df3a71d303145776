"""One replica as environmentd sees it: its process (if local), its Spark Connect client
session, and its health, kept current by a monitor thread.

Status is ``healthy`` once the Spark Connect server answers a trivial query, and
``unhealthy`` otherwise. A local replica whose process dies is restarted with
exponential backoff (0.5 s doubling to 30 s); events are logged as
``replica <cluster.replica> <event>`` with event created, ready, crashed, restarted,
dropped.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
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
        self.process: ReplicaProcess | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._monitor, name=f"replica-{label}", daemon=True)

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
            if self.status != HEALTHY:
                if self._probe():
                    backoff = 0.5
                    self._set_status(HEALTHY)
                    log.info("replica %s ready at %s", self.label, self.url)
            self._stopping.wait(self.POLL_S)

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
        try:
            if self.session is None:
                self.session = connect_session(url)
            self.session.range(1).collect()
            return True
        except Exception as e:  # not up yet, or broken: try again later
            log.debug("replica %s probe failed: %s", self.label, e)
            sess, self.session = self.session, None
            if sess is not None:
                _close_session(sess)
            return False


def _close_session(sess) -> None:
    try:
        sess.client.close()
    except Exception:
        pass
