"""The process orchestrator: starts and stops replica processes (Spark Connect servers).

A local replica is ``spark-submit --class ...SparkConnectServer`` from the installed
pyspark, bound to 127.0.0.1 on a free port, with its own process group, its log in
``<data-dir>/replicas/<replica-id>/replica.log`` and its pid in a pid file next to it.

Its scratch space (Spark's ``spark.local.dir``: shuffle and spill files, which a read
may need) is not in the data directory but in a private directory of this
environmentd's (``Orchestrator.scratch``) under ``--scratch-dir`` (default: the system's
temp directory), as Materialize's process orchestrator gives its services a scratch
directory of their own (``--orchestrator-process-scratch-directory``) apart from
persist's: a full data directory fails writes (53100) but not the reads that shuffle.
A replica's scratch is emptied when it starts and removed when it stops; the whole
directory when environmentd shuts down, or at its next start after a crash.

No Java process may outlive environmentd: every replica is started with a parent-death
signal (``setpriv --pdeathsig KILL``) from one long-lived spawner thread (the signal
fires when the *thread* that forked the child exits), and ``reap_orphans`` kills the
process groups left by an environmentd that was killed before it could clean up.

Every local replica requires a secret token of its own (Spark Connect's
``spark.connect.authenticate.token``, given to the JVM through its environment
variable ``SPARK_CONNECT_AUTHENTICATE_TOKEN`` so it never appears on a command line
or in a log). Only environmentd knows it, and the file ``token`` (mode 0600) next to
the pid file, for the operator of the data directory: other local users cannot run
work on a replica.

Spark's own ports (the driver's RPC port, the block transfer service, and for
``local-cluster`` sizes the master's, workers' and executors') answer only peers that
prove a per-replica secret (Spark's "Authentication": ``spark.authenticate``).
A ``local[N]`` replica draws its secret itself; a ``local-cluster`` one (scale > 1)
gets one in ``spark.properties`` (mode 0600), read by spark-submit
(``--properties-file``), so it is on no command line; executors get it from their
worker through the environment (``_SPARK_AUTH_SECRET``), as Spark's standalone mode does.

A replica JVM maps the class-data archive of Spark's classes once ``python -m
spark_exec.cds`` has built it (``java_options``; ``archive_path`` names it): it starts in
about half the CPU time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

log = logging.getLogger(__name__)

SPARK_HOME = Path(pyspark.__file__).resolve().parent
#: the source tree of this sqlfront (its packages: planner, catalog, ...)
SOURCE_ROOT = Path(__file__).resolve().parent.parent
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: JVM memory of a replica whose size sets no memory_limit (Spark's own default is 1 GiB)
DEFAULT_MEMORY_MB = 2048
# Marks our replica JVMs so orphan reaping never touches anyone else's processes.
MARKER_PROPERTY = "spark.sqlfront.replica"
#: the environment variable the Spark Connect server reads its token from (Connect.scala)
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
#: the replica's spark-submit properties file (mode 0600): Spark's authentication settings
PROPERTIES_FILE = "spark.properties"
#: the exit code of a Spark JVM that ran out of memory (SparkExitCode.OOM)
SPARK_OOM_EXIT_CODE = 52
#: how much of a dead replica's log end is searched for its OutOfMemoryError (bytes)
OOM_LOG_TAIL = 1 << 20
#: set to 0 in environmentd's environment to run local replicas without the Spark UI
PROFILE_UI_ENV = "SQLFRONT_REPLICA_SPARK_UI"
#: how much of a replica's log start is searched for its Spark UI's address (bytes)
SPARK_UI_LOG_HEAD = 1 << 20
#: the name prefix of an environmentd's scratch directory (``Orchestrator.scratch``)
SCRATCH_PREFIX = "sqlfront-scratch-"
#: the file under ``<data-dir>/replicas`` naming that directory while it exists, so the
#: next start removes what a killed environmentd left there
SCRATCH_RECORD = "scratch_dir"
#: where class-data archives (built by ``spark_exec.cds``) are kept (default:
#: ``$XDG_CACHE_HOME/sqlfront`` or ``~/.cache/sqlfront``)
CDS_DIR_ENV = "SQLFRONT_CDS_DIR"
#: set to 0 to start replicas without the archive
CDS_ENV = "SQLFRONT_REPLICA_CDS"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(p) if (p := shutil.which("java")) else None)
    return found.resolve() if found is not None and found.exists() else None


def archive_path() -> Path | None:
    """The class-data archive (``spark_exec.cds``) for this JDK and Spark install (named by a hash of the java binary's
    path and modification time and of Spark's jars directory and version); None without
    a java binary."""
    java = _java()
    if java is None:
        return None
    key = f"{java}:{java.stat().st_mtime_ns}:{SPARK_HOME}:{pyspark.__version__}"
    base = os.environ.get(CDS_DIR_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sqlfront"
    return Path(base) / f"replica-{pyspark.__version__}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def java_options() -> str:
    """The replica JVM's option that maps the archive (with a leading space), or "" when
    there is none or ``SQLFRONT_REPLICA_CDS=0``."""
    if os.environ.get(CDS_ENV) == "0":
        return ""
    path = archive_path()
    return f" -XX:SharedArchiveFile={path}" if path is not None and path.is_file() else ""


@dataclass(frozen=True)
class ReplicaSpec:
    """What to start.

    Attributes:
        replica_id: catalog id (``u3``), used for the directory and the marker.
        label: ``cluster.replica`` for logs.
        workers: cores per process; scale: executor processes (``local-cluster`` when > 1).
        memory_mb: JVM memory per process, None for Spark's default.
        availability_zone: passed as the Spark property ``spark.sqlfront.availability_zone``.
        master: a Spark standalone master (``spark://HOST:PORT``): the driver runs here,
            ``scale`` executors of ``workers`` cores on the master's workers; None for
            ``local[N]`` / ``local-cluster``.
        executor_memory_mb: memory of each standalone executor (None: Spark's default).
        secret_file: the standalone cluster's ``spark.authenticate.secret`` (None: the
            cluster runs without authentication).
        driver_host: the address the driver's RPC and block manager bind to and executors
            dial (Spark's ``spark.driver.host``); the Connect port and the UI stay on 127.0.0.1.
    """

    replica_id: str
    label: str
    workers: int
    scale: int = 1
    memory_mb: int | None = None
    availability_zone: str | None = None
    master: str | None = None
    executor_memory_mb: int | None = None
    secret_file: str | None = None
    driver_host: str = "127.0.0.1"


@dataclass
class ReplicaProcess:
    spec: ReplicaSpec
    popen: subprocess.Popen
    port: int
    log_path: Path
    #: the bearer token its Spark Connect server requires (never logged: repr=False)
    token: str = field(default="", repr=False)
    #: where this process's lines begin in ``log_path`` (earlier runs' come before)
    log_offset: int = 0

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.popen.poll() is None

    def exit_reason(self, wait_s: float = 0.0) -> tuple[str, bool] | None:
        """``(reason, out_of_memory)`` once the process has exited, waiting up to
        ``wait_s`` seconds for it; None while it runs. ``reason``: ``exit code N`` or
        ``killed by signal N``; ``out_of_memory``: Spark's exit code for an
        OutOfMemoryError (``SparkExitCode.OOM``, 52) or the error in its log."""
        try:
            code = self.popen.wait(wait_s)
        except subprocess.TimeoutExpired:
            return None
        reason = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return reason, code == SPARK_OOM_EXIT_CODE or _logged_oom(self.log_path, self.log_offset)

    def spark_ui_url(self) -> str | None:
        """The Spark UI's address (``http://127.0.0.1:PORT``) as this process logged it,
        None before it has (or with the UI off)."""
        return spark_ui_url(self.log_path, self.log_offset)

    def cpu_seconds(self) -> float:
        """CPU time (user + system, seconds) used so far by the live processes of the
        replica's process group: the driver JVM and, for ``local-cluster`` sizes, its
        executor JVMs. 0.0 once the group is gone."""
        return group_cpu_seconds(self.popen.pid)


def spark_ui_url(log_path: Path, offset: int = 0) -> str | None:
    """The Spark UI's address (``http://HOST:PORT``) a replica logged in ``log_path``
    from byte ``offset`` on (its run's start), None before it has (or with the UI off)."""
    try:
        with open(log_path, "rb") as f:
            f.seek(offset)
            text = f.read(SPARK_UI_LOG_HEAD).decode("utf-8", "replace")
    except OSError:
        return None
    # Spark logs "Start Jetty 127.0.0.1:0 for SparkUI", then the port it took
    host = re.search(r"Start Jetty ([^\s:]+):\d+ for SparkUI", text)
    port = re.search(r"Successfully started service 'SparkUI' on port (\d+)", text)
    return f"http://{host.group(1) if host else '127.0.0.1'}:{port.group(1)}" if port else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Orchestrator:
    """Starts and stops local replica processes under ``<data_dir>/replicas``, their
    scratch space under ``scratch_dir`` (None: the system's temp directory; created if
    missing)."""

    def __init__(self, data_dir: Path, instance: str, scratch_dir: Path | None = None):
        self.root = Path(data_dir).resolve() / "replicas"
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)  # replica logs and tokens are environmentd's alone
        self.instance = instance
        self._scratch_parent = Path(scratch_dir) if scratch_dir is not None else None
        self._scratch: Path | None = None
        self._scratch_lock = threading.Lock()
        self._requests: queue.Queue = queue.Queue()
        self._spawner = threading.Thread(target=self._spawn_loop, name="orchestrator-spawner", daemon=True)
        self._spawner.start()
        self._setpriv = shutil.which("setpriv")

    # -- scratch space ----------------------------------------------------------------

    def scratch(self, replica_id: str) -> Path:
        """The scratch directory of replica ``replica_id`` (not created here): under this
        environmentd's own directory, made on first use (mode 0700, a fresh name under
        the scratch parent, ``tempfile.mkdtemp``) and named in ``SCRATCH_RECORD``.

        Raises:
            OSError when the directory cannot be made."""
        with self._scratch_lock:
            if self._scratch is None:
                if self._scratch_parent is not None:
                    self._scratch_parent.mkdir(parents=True, exist_ok=True)
                self._scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=self._scratch_parent))
                try:
                    write_private(self.root / SCRATCH_RECORD, str(self._scratch))
                except OSError as e:  # a full data directory: only a crash's leftovers depend on it
                    log.warning("could not record the scratch directory %s: %s", self._scratch, e)
            return self._scratch / replica_id

    def close(self) -> None:
        """Remove this environmentd's scratch directory (its replicas are stopped)."""
        with self._scratch_lock:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                (self.root / SCRATCH_RECORD).unlink(missing_ok=True)
                self._scratch = None

    def _remove_stale_scratch(self) -> None:
        """Remove the scratch directory an earlier environmentd of this data directory
        left when it was killed (named in ``SCRATCH_RECORD``): only a real directory of
        this user's whose name is ours."""
        record = self.root / SCRATCH_RECORD
        try:
            old = Path(record.read_text().strip())
        except (FileNotFoundError, ValueError):
            return
        if old == self._scratch:
            return
        try:
            st = old.lstat()
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() \
                and old.name.startswith(SCRATCH_PREFIX):
            log.warning("removing the scratch directory %s left by an earlier run", old)
            shutil.rmtree(old, ignore_errors=True)
        record.unlink(missing_ok=True)

    # -- starting ---------------------------------------------------------------------

    def start(self, spec: ReplicaSpec) -> ReplicaProcess:
        """Start a replica process; returns at once (the server answers seconds later)."""
        fut: Future = Future()
        self._requests.put((spec, fut))
        return fut.result()

    def _spawn_loop(self) -> None:
        while True:
            spec, fut = self._requests.get()
            try:
                fut.set_result(self._spawn(spec))
            except BaseException as e:  # reported to the caller
                fut.set_exception(e)

    def command(self, spec: ReplicaSpec, port: int, workdir: Path) -> list[str]:
        if spec.master:
            master = spec.master
        elif spec.scale > 1:
            mem = spec.memory_mb or 1024
            master = f"local-cluster[{spec.scale},{spec.workers},{mem}]"
        else:
            master = f"local[{spec.workers}]"
        total_cores = spec.workers * spec.scale
        scratch = self.scratch(spec.replica_id)
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port),
            "spark.driver.host": spec.driver_host,
            "spark.driver.bindAddress": spec.driver_host,
            # The Spark UI and its REST API (stage and task times; the state sizes of
            # mz_object_arrangement_sizes, spark_exec.state_sizes) on a free port of 127.0.0.1
            # (SPARK_LOCAL_IP below), named in replica.log and linked from the console; it has
            # no authentication, so never on another address. PROFILE_UI_ENV=0 turns it off.
            "spark.ui.enabled": "false" if os.environ.get(PROFILE_UI_ENV) == "0" else "true",
            "spark.ui.port": "0",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.ansi.enabled": "true",
            # PostgreSQL's time type is stored as Parquet TIME(MICROS); Spark 4 reads it only with this.
            "spark.sql.timeType.enabled": "true",
            "spark.sql.shuffle.partitions": str(total_cores),
            # Our lowering names every projection's outputs c0, c1, ... like its inputs: a
            # reference to input c1 inside a lambda (initcap's transform) must never resolve
            # to the same SELECT list's output c1 (Spark's lateral column alias).
            "spark.sql.lateralColumnAlias.enableImplicitResolution": "false",
            # Cancel: tasks that ignore the interrupt are reported and, in executor JVMs
            # (local-cluster sizes), killed with their executor after the timeout. In
            # local[N] mode Spark never kills its own JVM: ReplicaHandle's watchdog
            # restarts the replica instead.
            "spark.task.reaper.enabled": "true",
            "spark.task.reaper.killTimeout": "10s",
            # Hash tables of broadcast joins take one page each at least; Spark's default page
            # (up to 64 MiB) lets a 26-way join of ten-row tables exhaust the heap.
            "spark.buffer.pageSize": "2m",
            # shuffle and spill files: off the data directory's disk (``scratch``)
            "spark.local.dir": str(scratch),
            "spark.sql.warehouse.dir": str(scratch / "warehouse"),
            # Files Spark writes through Hadoop (Parquet parts in persist's Blob) are the
            # owner's alone, as everything else in the data directory (Hadoop's
            # fs.permissions.umask-mode; its default 022 leaves them readable to all).
            "spark.hadoop.fs.permissions.umask-mode": "077",
            # the class-data archive of Spark's classes, when built: half the start's CPU (spark_exec.cds)
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={scratch}" + java_options(),
            MARKER_PROPERTY: f"{self.instance}/{spec.replica_id}",
            # Python UDFs (``Lowerer.python_text``: functions Spark has no equivalent of)
            # run in environmentd's interpreter, which has pyarrow and sqlfront's packages
            "spark.pyspark.python": sys.executable,
            # ... in executor processes too (local-cluster and standalone sizes)
            "spark.executorEnv.PYTHONPATH": str(SOURCE_ROOT),
        }
        if spec.availability_zone:
            conf["spark.sqlfront.availability_zone"] = spec.availability_zone
        if spec.master:
            # Spark standalone: at most `scale` executors of `workers` cores ("Spark
            # Standalone Mode", "Executors Scheduling"); executor memory is the size's own
            conf["spark.executor.cores"] = str(spec.workers)
            conf["spark.cores.max"] = str(total_cores)
            if spec.executor_memory_mb:
                conf["spark.executor.memory"] = f"{spec.executor_memory_mb}m"
        elif spec.scale > 1 and spec.memory_mb:
            conf["spark.executor.memory"] = f"{spec.memory_mb}m"
        cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS, "--master", master,
               "--properties-file", str(workdir / PROPERTIES_FILE)]
        cmd += ["--driver-memory", f"{spec.memory_mb or DEFAULT_MEMORY_MB}m"]
        for k, v in conf.items():
            cmd += ["--conf", f"{k}={v}"]
        cmd += ["--name", f"sqlfront-{spec.label}", "spark-internal"]
        if self._setpriv:
            cmd = [self._setpriv, "--pdeathsig", "KILL", "--"] + cmd
        return cmd

    def _spawn(self, spec: ReplicaSpec) -> ReplicaProcess:
        workdir = self.root / spec.replica_id
        workdir.mkdir(parents=True, exist_ok=True)
        scratch = self.scratch(spec.replica_id)
        shutil.rmtree(scratch, ignore_errors=True)  # an earlier run's, killed before its stop
        # (parents: a temp directory cleaner may have removed this environmentd's directory)
        scratch.mkdir(mode=0o700, parents=True)
        log_path = workdir / "replica.log"
        port = free_port()
        env = dict(os.environ)
        env["SPARK_HOME"] = str(SPARK_HOME)
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        env.pop("SPARK_REMOTE", None)
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)
        # the replica's Python workers import the registry (planner.functions.call_text)
        # from this source tree, before any other installed copy
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SOURCE_ROOT), env.get("PYTHONPATH", "")) if p)
        env["PYSPARK_PYTHON"] = sys.executable  # Spark Connect's UDFs read it, not spark.pyspark.python
        token = secrets.token_urlsafe(32)
        env[TOKEN_ENV] = token
        write_private(workdir / PROPERTIES_FILE, replica_properties(spec))
        logf = open(log_path, "ab")
        log_offset = logf.tell()
        logf.write(f"\n=== starting {spec.label} on 127.0.0.1:{port} at {time.ctime()} ===\n".encode())
        logf.flush()
        popen = subprocess.Popen(
            self.command(spec, port, workdir),
            stdin=subprocess.DEVNULL,
            stdout=logf,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env=env,
            start_new_session=True,  # own process group: stop() signals the whole tree
        )
        logf.close()
        (workdir / "pid").write_text(f"{popen.pid}\n")
        (workdir / "port").write_text(f"{port}\n")  # for operators and tests: sc://127.0.0.1:<port>
        write_private(workdir / "token", token)
        log.info("replica %s (%s) starting: pid %d, port %d, log %s", spec.label, spec.replica_id, popen.pid, port, log_path)
        return ReplicaProcess(spec, popen, port, log_path, token, log_offset)

    # -- stopping ---------------------------------------------------------------------

    def stop(self, proc: ReplicaProcess, grace_s: float = 5.0) -> None:
        """Stop a replica's process group: SIGTERM, then SIGKILL after ``grace_s``."""
        pgid = proc.popen.pid
        signal_group(pgid, signal.SIGTERM)
        try:
            proc.popen.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
        signal_group(pgid, signal.SIGKILL)
        try:
            proc.popen.wait(5)
        except subprocess.TimeoutExpired:
            log.warning("replica %s did not exit after SIGKILL", proc.spec.label)
        for name in ("pid", "token", PROPERTIES_FILE):
            (self.root / proc.spec.replica_id / name).unlink(missing_ok=True)
        if self._scratch is not None:
            shutil.rmtree(self._scratch / proc.spec.replica_id, ignore_errors=True)

    def reap_orphans(self) -> int:
        """Kill replica process groups left behind by an earlier environmentd on this data
        dir (their pid files remain), and the scratch directory it left. Returns how many
        groups were killed."""
        killed = 0
        for pidfile in self.root.glob("*/pid"):
            try:
                pid = int(pidfile.read_text().strip())
            except ValueError:
                pidfile.unlink(missing_ok=True)
                continue
            if _is_our_replica(pid, pidfile.parent.name):
                log.warning("killing orphaned replica process group %d (%s)", pid, pidfile.parent.name)
                signal_group(pid, signal.SIGKILL)
                killed += 1
            pidfile.unlink(missing_ok=True)
        self._remove_stale_scratch()
        return killed


def spark_auth_properties(secret: str | None, encrypt: bool = False) -> str:
    """A spark-submit properties file (Java properties) that turns on Spark's RPC
    authentication: Spark's "Security" page, "Authentication" (``spark.authenticate``:
    a peer proves the shared secret, SASL DIGEST-MD5, before any message of its reaches
    an RPC handler). ``secret`` (hex, so it needs no escaping) is
    ``spark.authenticate.secret``: a ``local-cluster`` or standalone master requires one
    (SecurityManager.initializeAuth); ``""`` turns authentication off (a standalone
    cluster started without a secret); None for ``local[N]``, where Spark draws a random
    secret of its own at startup that never leaves the JVM.

    ``encrypt`` (with a secret) also turns on Spark's "Encryption" of RPC traffic
    (``spark.network.crypto.enabled``: an AES key agreed from the secret, every RPC and
    block transfer encrypted with it) and turns its SASL fallback off
    (``spark.network.crypto.saslFallback``), so that no peer gets in unencrypted: for a
    standalone cluster (``standalone.up``, whose ``spark.properties`` its master and every
    worker read) and the replicas of sizes naming one, whose traffic crosses hosts. The
    driver hands ``spark.network.*`` and ``spark.authenticate`` on to its executors
    (SparkConf.isExecutorStartupConf), so all of a replica's JVMs speak it.

    Not for ``local-cluster`` replicas, whose traffic stays on loopback (tried twice):
    with it, a replica's first task sometimes never finishes. The executor
    fetches Spark Connect's session classes from its own driver over the RPC env
    (Executor "Using REPL class URI: spark://127.0.0.1:PORT/artifacts/..."); the log
    then shows "TransportClientFactory: Successfully created connection to
    /127.0.0.1:PORT after 355 ms (305 ms spent in bootstraps)" (the AES key exchange
    done) and nothing more: the task stayed in "Running task 0.0 in stage 0.0" for over
    70 s until the replica was dropped, while its sibling started at the same moment
    finished the same task in 3 s, so the replica never became healthy. Seen on Spark
    4 with a load average of 14 to 24 on 2 cores in tests/test_result_limits.py (two
    replicas starting while one runs a large query): 2 of 3 runs, the other failure
    the same symptom (a replica still unhealthy minutes later); test_private_data (3
    runs), test_replicas (1 run) and a lone ``local[1]`` and ``local-cluster`` replica
    passed (these runs had ``spark.network.crypto.saslFallback`` off). Not looked into
    further: a jstack of the stuck task's thread is the next step. The traffic stays on
    the loopback interface, which other users cannot sniff."""
    props = {
        "spark.authenticate": "true" if secret != "" else "false",
        # its "took N ms" line prints a slow job's properties, the secret among them
        "spark.scheduler.listenerbus.logSlowEvent": "false",
    }
    if secret:
        props["spark.authenticate.secret"] = secret
        if encrypt:
            props["spark.network.crypto.enabled"] = "true"
            props["spark.network.crypto.saslFallback"] = "false"
    return "\n".join(f"{k}={v}" for k, v in props.items())


def replica_properties(spec: ReplicaSpec) -> str:
    """The properties file of a replica's driver (``spark_auth_properties``): its secret,
    and RPC encryption for a standalone size (executors on other hosts).

    Raises:
        OSError when a standalone size's secret file cannot be read."""
    return spark_auth_properties(_auth_secret(spec), encrypt=bool(spec.master))


def _auth_secret(spec: ReplicaSpec) -> str | None:
    """The ``spark.authenticate.secret`` of a replica (see ``spark_auth_properties``): a
    standalone cluster's from its secret file, a fresh one for ``local-cluster``, None for
    ``local[N]``.

    Raises:
        OSError when a standalone size's secret file cannot be read."""
    if spec.master:
        return Path(spec.secret_file).read_text().strip() if spec.secret_file else ""
    return secrets.token_hex(32) if spec.scale > 1 else None


def _logged_oom(log_path: Path, offset: int) -> bool:
    """Whether a JVM's log from ``offset`` on (its last ``OOM_LOG_TAIL`` bytes) shows a
    java.lang.OutOfMemoryError."""
    try:
        with open(log_path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(offset, size - OOM_LOG_TAIL))
            return b"java.lang.OutOfMemoryError" in f.read()
    except OSError:
        return False


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by this user only (mode 0600 from the start)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")


def group_cpu_seconds(pgid: int) -> float:
    """CPU time (user + system, seconds) of the live processes in process group ``pgid``,
    from /proc/<pid>/stat (proc(5): fields utime and stime, in clock ticks)."""
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # field 5 of stat, pgrp (fields[0] is the state, field 3)
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to process group ``pgid``; a group that is gone is ignored."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _is_our_replica(pid: int, replica_id: str) -> bool:
    """True if any process of group ``pid`` is one of our replica JVMs for ``replica_id``."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getpgid(int(proc.name)) != pid:
                continue
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, ProcessLookupError):
            continue
        if MARKER_PROPERTY.encode() in cmdline and f"/{replica_id}".encode() in cmdline:
            return True
    return False
