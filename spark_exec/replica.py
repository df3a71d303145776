"""One replica as environmentd sees it: its process (if local), its Spark Connect client
session, its own peek threads, and its health, kept current by a monitor thread.

Status is ``healthy`` once the Spark Connect server answers a trivial query, and
``unhealthy`` otherwise: when the process has exited, is stopped (SIGSTOP), or does
not answer a ping within ``PING_TIMEOUT_S`` (pings run every ``PING_EVERY_S``). A local replica whose process dies is restarted with
exponential backoff (0.5 s doubling to 30 s); events are logged as
``replica <cluster.replica> <event>`` with event created, ready, crashed, restarted,
dropped.

Canceled work must stop, not only its reply: Spark's tasks see an interrupt only
between input rows or batches, so a task deep in a loop (a hash aggregate over a
cross product, say) runs on for minutes after its job is canceled. After a peek on
this replica is interrupted, the monitor watches the replica's CPU; if the replica
stays busy while none of our peeks runs on it, the work is orphaned and the replica
is restarted (a local one; the cluster's other replicas answer meanwhile).
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

from pyspark.sql.connect.client.core import RpcDeadlines

from catalog.snapshot import Replica
from spark_exec import rpcs
from spark_exec.orchestrator import Orchestrator, ReplicaProcess, ReplicaSpec

log = logging.getLogger(__name__)

HEALTHY = "healthy"
UNHEALTHY = "unhealthy"

_session_lock = threading.Lock()


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def _is_loopback(url: str) -> bool:
    """Whether ``url`` (``sc://host:port[/...]``) names this host's loopback interface."""
    address = url.removeprefix("sc://").partition("/")[0]
    return address.rpartition(":")[0] in LOOPBACK_HOSTS


def connection_url(url: str, token: str | None) -> str:
    """The Spark Connect connection string for ``url`` (``sc://host:port[/;k=v...]``)
    carrying bearer ``token`` (Spark Connect's ``;token=`` parameter), or ``url`` itself
    when ``token`` is None.

    pyspark's client sends a token only over a secure channel: TLS, or for the host
    ``localhost`` gRPC's local credentials, which accept loopback peers only. A
    loopback address is therefore spelled ``localhost``; any other host needs TLS on
    the server (pyspark's ChannelBuilder, "secure" and "toChannel")."""
    if not token:
        return url
    address, _, params = url.removeprefix("sc://").partition("/")
    port = address.rpartition(":")[2]
    if _is_loopback(url):
        address = f"localhost:{port}"
    params = params.lstrip(";")
    return f"sc://{address}/;" + (f"{params};" if params else "") + f"token={token}"


def connect_session(url: str, token: str | None = None):
    """A new Spark Connect client session for ``url`` (``sc://host:port``), presenting
    ``token`` when the server requires one (see ``connection_url``)."""
    from pyspark.sql.connect.session import SparkSession

    with _session_lock:
        session = SparkSession.builder.remote(connection_url(url, token)).create()
    rpcs.instrument(session)  # (counted only inside ``rpcs.counted()``: the debug log's figures)
    # Control RPCs get short deadlines so that none waits forever on a frozen server
    # (pyspark's defaults are 10 min to 1 h; the builder has no parameter for them).
    session.client._rpc_deadlines = RpcDeadlines(
        config=CONTROL_RPC_DEADLINE_S, interrupt=CONTROL_RPC_DEADLINE_S, release_session=CONTROL_RPC_DEADLINE_S,
        get_status=CONTROL_RPC_DEADLINE_S, fetch_error_details=CONTROL_RPC_DEADLINE_S, analyze_plan=120.0)
    if _is_loopback(url):
        # Reattachable execution survives a dropped stream at the cost of a ReleaseExecute
        # RPC per response and a server-side buffer; over loopback no stream drops, and a
        # small query is ~9% faster without it (measured interleaved, 300 queries each).
        session.client.disable_reattachable_execute()
    return session




#: seconds a config, interrupt or status RPC to a replica may take
CONTROL_RPC_DEADLINE_S = 10.0


class CpuMeter:
    """The cores a replica's processes used (``ReplicaProcess.cpu_seconds``) between two
    samples at least ``window_s`` seconds apart: ``cores``, None until two samples."""

    def __init__(self, window_s: float):
        self.window_s = window_s
        self.cores: float | None = None
        self._mark: tuple[float, float] | None = None  # (monotonic seconds, CPU seconds)

    @property
    def started(self) -> bool:
        """Whether a sample was taken since the last ``reset``."""
        return self._mark is not None

    def reset(self) -> None:
        self.cores = self._mark = None

    def sample(self, process: ReplicaProcess, now: float) -> bool:
        """Take a sample at ``now`` (monotonic seconds) unless the last is younger than
        the window; whether ``cores`` was measured anew."""
        if self._mark is not None and now - self._mark[0] < self.window_s:
            return False
        cpu = process.cpu_seconds()
        measured = self._mark is not None
        if measured:
            then, cpu_then = self._mark
            self.cores = (cpu - cpu_then) / (now - then)
        self._mark = (now, cpu)
        return measured


class ReplicaHandle:
    """Health and client of one replica; ``on_change`` is called on every status change."""

    POLL_S = 0.25
    PING_EVERY_S = 1.0
    PING_TIMEOUT_S = 5.0  # generous: a replica busy with big peeks answers slowly, not never

    #: a canceled task that checks its interrupt flag stops within this many seconds
    CANCEL_GRACE_S = 3.0
    #: CPU (cores) above which a replica with no peek of ours running is doing orphaned work
    BUSY_CORES = 0.25
    #: how long orphaned work may go on before the replica is restarted (seconds)
    BUSY_FOR_S = 3.0
    #: how long after a cancel the replica's CPU is watched (seconds)
    WATCH_FOR_S = 120.0
    #: window over which ``frozen`` measures a replica's CPU use (seconds)
    WORK_WINDOW_S = 1.0

    def __init__(
        self,
        replica: Replica,
        label: str,
        spec: ReplicaSpec | None,
        orchestrator: Orchestrator | None,
        on_change: Callable[["ReplicaHandle"], None],
        max_peeks: int = 8,
        blob_probe: Callable[[object], None] | None = None,
    ):
        self.replica = replica
        self.label = label
        self.spec = spec
        self.orchestrator = orchestrator
        self.on_change = on_change
        self.status = UNHEALTHY
        self.session = None
        #: (the session it belongs with, the dataflows' session): see ``dataflow_session``
        self._dataflow: tuple[object, object] | None = None
        self._dataflow_lock = threading.Lock()
        self.process: ReplicaProcess | None = None
        #: restarts of this replica because canceled work did not stop
        self.cancel_restarts = 0
        #: ``blob_probe(session)`` raises BlobUnreachable when the replica's executors
        #: cannot read persist Blob (spark_exec.blob_probe); None: not checked (local[N])
        self.blob_probe = blob_probe
        self._blob_ok = blob_probe is None
        #: why the replica cannot take work although its server answers (None: nothing
        #: known): shown as its status reason and in "no replica is healthy" errors
        self.failure: str | None = None
        #: monotonic time before which a failed replica is not probed again
        self._retry_at = 0.0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._monitor, name=f"replica-{label}", daemon=True)
        # Pings run here so a frozen server never blocks the monitor itself.
        self._pinger = ThreadPoolExecutor(1, thread_name_prefix=f"ping-{label}")
        self._ping: Future | None = None
        # Peeks run on the replica's own threads, at most max_peeks at once and as many
        # queued: a hung replica holds only its own share, never another replica's.
        self.max_peeks = max_peeks
        self._peeks = ThreadPoolExecutor(max_peeks, thread_name_prefix=f"peek-{label}")
        self._pending = 0
        self._running = 0
        #: the process's CPU use while a peek runs or it misses pings: see ``frozen``
        self._work = CpuMeter(self.WORK_WINDOW_S)
        # Interrupts run here, so a frozen server blocks none of the callers.
        self._control = ThreadPoolExecutor(1, thread_name_prefix=f"control-{label}")
        #: when a peek on this replica was last interrupted (monotonic seconds), None if
        #: no canceled work is being watched
        self._canceled_at: float | None = None
        #: the process's CPU use after a cancel, and since when it has stayed busy
        self._after_cancel = CpuMeter(1.0)
        self._busy_since: float | None = None

    @property
    def id(self) -> str:
        return self.replica.id

    @property
    def url(self) -> str | None:
        """Where the replica's Spark Connect server listens (no secrets: safe to log)."""
        if self.replica.remote:
            return self.replica.remote[0]
        return self.process.url if self.process else None

    @property
    def token(self) -> str | None:
        """The bearer token the server requires: the local process's own, or the REMOTE
        replica's TOKEN option."""
        if self.replica.remote:
            return self.replica.token
        return self.process.token if self.process else None

    # -- peeks ------------------------------------------------------------------------

    def submit_peek(self, fn: Callable[[], object]) -> Future | None:
        """Run ``fn()`` on one of this replica's peek threads. Returns its Future, or None
        when ``max_peeks`` run and as many more wait already (the caller tries another
        replica, or this one again later)."""
        with self._lock:
            if self._pending >= 2 * self.max_peeks:
                return None
            self._pending += 1

        def run():
            with self._lock:
                self._running += 1
            try:
                return fn()
            finally:
                with self._lock:
                    self._running -= 1

        def finished(_):  # also called for a peek canceled before it started
            with self._lock:
                self._pending -= 1

        try:
            fut = self._peeks.submit(run)
        except RuntimeError:  # shut down: the replica was dropped
            finished(None)
            return None
        fut.add_done_callback(finished)
        return fut

    def interrupt(self, tag: str) -> None:
        """Interrupt the operations tagged ``tag`` (Spark Connect's ``interruptTag``), in
        the background, and watch that their work really stops (see the module doc)."""
        sess = self.session
        if sess is None:
            return
        with self._lock:
            self._canceled_at = time.monotonic()
            self._after_cancel.reset()

        flows = self._dataflow_of(sess)

        def run():
            for x in (sess, flows) if flows is not None else (sess,):
                try:
                    x.interruptTag(tag)
                except Exception as e:  # the replica may be gone or frozen
                    log.debug("interrupting %s on %s failed: %s", tag, self.label, e)

        try:
            self._control.submit(run)
        except RuntimeError:
            pass

    def _watch_canceled_work(self) -> None:
        """Restart the replica when it stays busy after a cancel with no peek of ours
        running on it (called from the monitor loop)."""
        canceled = self._canceled_at
        if canceled is None or self.process is None:
            return
        now = time.monotonic()
        if now - canceled > self.WATCH_FOR_S:
            self._canceled_at = None
            return
        if now - canceled < self.CANCEL_GRACE_S:
            return
        if self._running:
            self._after_cancel.reset()  # a live peek explains any CPU use: measure afresh later
            return
        if not self._after_cancel.started:
            self._busy_since = now
        if not self._after_cancel.sample(self.process, now):
            return
        cores = self._after_cancel.cores
        if cores < self.BUSY_CORES:
            log.debug("replica %s: canceled work stopped", self.label)
            self._canceled_at = None
            self._after_cancel.reset()
            return
        if now - self._busy_since < self.BUSY_FOR_S:
            return
        log.warning("replica %s still uses %.1f cores %.0f s after a canceled peek with none running:"
                    " its tasks ignore the interrupt; restarting it", self.label, cores, now - canceled)
        self._canceled_at = None
        self._after_cancel.reset()
        self.cancel_restarts += 1
        self._set_status(UNHEALTHY)
        self._drop_sessions()
        self.orchestrator.stop(self.process)
        if not self._stopping.is_set():
            self.process = self.orchestrator.start(self.spec)
            log.info("replica %s restarted", self.label)

    def start(self) -> None:
        if self.spec is not None:
            self.process = self.orchestrator.start(self.spec)
        log.info("replica %s created", self.label)
        self._thread.start()

    def stop(self) -> None:
        """Stop monitoring and stop the process (blocks up to ~10 s for a local replica)."""
        self._stopping.set()
        self._set_status(UNHEALTHY)
        self._peeks.shutdown(wait=False, cancel_futures=True)
        self._control.shutdown(wait=False, cancel_futures=True)
        self._drop_sessions()
        if self.process is not None:
            self.orchestrator.stop(self.process)
        log.info("replica %s dropped", self.label)

    @property
    def stopping(self) -> bool:
        """The replica was dropped (or its cluster shut down): it will not come back."""
        return self._stopping.is_set()

    def frozen(self, process: ReplicaProcess | None = None) -> bool:
        """Whether the replica misses its pings while its process lives on without
        working: stopped (SIGSTOP), or using less than ``BUSY_CORES`` over the last
        ``WORK_WINDOW_S``. A replica that is busy (misses pings but works) or has died
        (its peeks end with its crash) is not frozen; one without a local process
        (REMOTE) is frozen whenever it is not healthy. ``process``: the one a peek was
        sent to; once the monitor has replaced it (it died), not frozen either. A lone
        peek moves on only from a frozen replica (``ClusterCoordinator._race``)."""
        if self.status == HEALTHY:
            return False
        proc = self.process
        if process is not None and process is not proc:
            return False  # a restarting replica's new JVM is not the one running the peek
        if proc is None:
            return True
        if not proc.alive():
            return False
        return _is_stopped(proc.popen.pid) or (self._work.cores or 0.0) < self.BUSY_CORES

    def _sample_cpu(self) -> None:
        """Measure the process's CPU use for ``frozen`` (monitor loop, while a peek runs
        or the replica does not answer)."""
        proc = self.process
        if proc is None or (not self._running and self.status == HEALTHY):
            self._work.reset()
            return
        self._work.sample(proc, time.monotonic())

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
                self._drop_sessions()
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
                    self._sample_cpu()  # first, so that a lone peek sees busy, not frozen
                    self._set_status(UNHEALTHY)
                else:
                    self._watch_canceled_work()
            self._sample_cpu()
            self._stopping.wait(self.POLL_S)

    #: Spark SQL settings of the dataflows' session. Constraint propagation off: Spark's
    #: Union.rewriteConstraints fails on some plans of a dataflow's step (a DISTINCT ON
    #: over a join under a temporal filter: NoSuchElementException "key not found: _d#..."
    #: while PruneFilters reads a consolidation's constraints), and the inferred filters it
    #: would add have nothing to prune in a step's small changes and in-memory arrangements.
    #:
    #: Generated code the same round after round, so Spark's cache of compiled classes
    #: (keyed by the code) answers instead of Janino: a round reads an arrangement as a
    #: union of its batches, whose number changes every round (``dataflow.Spine``). Fused
    #: into one codegen stage, that union's code (a method per batch) and every stage's
    #: number after it change with it; unfused, each batch is a stage of its own whose code
    #: is the same for every batch and round once the stage's number is left out of the
    #: class's name (Spark's ``spark.sql.codegen.wholeStage.union.enabled`` and
    #: ``spark.sql.codegen.useIdInClassName``).
    DATAFLOW_CONF = {"spark.sql.constraintPropagation.enabled": "false",
                     "spark.sql.codegen.wholeStage.union.enabled": "false",
                     "spark.sql.codegen.useIdInClassName": "false"}

    def _drop_sessions(self) -> None:
        """Close the replica's client sessions (its own and the dataflows'): a call in
        flight on one then fails at once instead of retrying against a process that is
        gone (pyspark retries an unreachable server for minutes)."""
        sess, self.session = self.session, None
        with self._dataflow_lock:
            flows, self._dataflow = self._dataflow, None
        for s in (sess, flows[1] if flows is not None else None):
            if s is not None:
                _close_session(s)

    def _dataflow_of(self, sess):
        """The dataflows' session made for replica session ``sess``, if there is one."""
        got = self._dataflow
        return got[1] if got is not None and got[0] is sess else None

    def dataflow_session(self):
        """The Spark session incremental dataflows (``spark_exec.dataflow``) run in on this
        replica, or None when it has no session: a second client session of the same
        server (its own session id and settings, ``DATAFLOW_CONF``), made when first
        asked for and made anew once the replica's session was replaced (a restart: the
        dataflows' checkpoints went with the server). Its settings never touch peeks'.

        Raises:
            Exception: pyspark's, when the replica cannot be reached."""
        with self._dataflow_lock:  # one session per replica session, however many views ask at once
            main = self.session
            if main is None or self.url is None:
                return None
            got = self._dataflow
            if got is not None and got[0] is main:
                return got[1]
            sess = connect_session(self.url, self.token)
            try:
                for k, v in self.DATAFLOW_CONF.items():
                    sess.conf.set(k, v)
            except BaseException:
                _close_session(sess)
                raise
            old, self._dataflow = self._dataflow, (main, sess)
        if old is not None:
            _close_session(old[1])
        return sess

    def dataflow_session_now(self):
        """``dataflow_session`` if it is made already and still of the replica's current
        session, else None (never makes one: for introspection)."""
        got, main = self._dataflow, self.session
        return got[1] if got is not None and main is not None and got[0] is main and self.status == HEALTHY else None

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
        flows = self._dataflow_of(sess)

        def ping():
            sess.conf.get("spark.app.name")
            if flows is not None:  # (used, so Spark Connect never expires it as idle)
                try:
                    flows.conf.get("spark.app.name")
                except Exception as e:  # the replica's health is its own session's: this
                    # one is forgotten, and made anew when a dataflow next asks for it
                    log.debug("replica %s: its dataflow session failed a ping: %s", self.label, e)
                    with self._dataflow_lock:
                        if self._dataflow is not None and self._dataflow[1] is flows:
                            self._dataflow = None
                    _close_session(flows)

        work = (lambda: sess.range(1).collect()) if full else ping
        self._ping = self._pinger.submit(work)
        try:
            self._ping.result(timeout=self.PING_TIMEOUT_S)
            return True
        except FutureTimeout:
            return False
        except Exception as e:
            log.debug("replica %s ping failed: %s", self.label, e)
            return False

    #: seconds the Blob probe may take (a standalone job retries a failing task 4 times)
    BLOB_PROBE_TIMEOUT_S = 120.0
    #: seconds between Blob probes of a replica whose executors could not read Blob
    BLOB_RETRY_S = 30.0

    def _blob_readable(self) -> bool:
        """Run the Blob probe once (then the replica is healthy), or again every
        ``BLOB_RETRY_S`` after a failure, which stays in ``failure``."""
        if self._blob_ok:
            return True
        from spark_exec.blob_probe import BlobUnreachable

        sess = self.session
        self._ping = self._pinger.submit(self.blob_probe, sess)
        try:
            self._ping.result(timeout=self.BLOB_PROBE_TIMEOUT_S)
        except BlobUnreachable as e:
            failure = f"replica {self.label}: {e}"
        except FutureTimeout:
            failure = f"replica {self.label}: reading a probe part from persist Blob took over " \
                      f"{self.BLOB_PROBE_TIMEOUT_S:g} s"
        except Exception as e:  # the server itself failed: probed again with a fresh session
            log.debug("replica %s blob probe failed: %s", self.label, e)
            return False
        else:
            self._blob_ok, self.failure = True, None
            return True
        if failure != self.failure:
            log.error("%s; probing again every %.0f s", failure, self.BLOB_RETRY_S)
        self.failure = failure
        self._retry_at = time.monotonic() + self.BLOB_RETRY_S
        return False

    def _probe(self) -> bool:
        url = self.url
        if url is None or time.monotonic() < self._retry_at:
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
                self.session = connect_session(url, self.token)
        except Exception as e:
            log.debug("replica %s connect failed: %s", self.label, e)
            return False
        if self._ping_ok(full=True):
            return self._blob_readable()
        if self._ping is not None and self._ping.done():
            # The server answered with an error: start over with fresh sessions.
            self._drop_sessions()
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
