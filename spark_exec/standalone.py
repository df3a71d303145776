"""A Spark standalone cluster (Spark's "Spark Standalone Mode") started from the installed
pyspark: one master and N workers, for replicas whose executors run off environmentd's
host (``sqlfront spark-cluster up|down``; a size with ``"master": "spark://..."``).

Everything lives in one directory, private to its user (mode 0700)::

    secret            spark.authenticate.secret of the cluster (0600): a replica's size
                      names it as its ``secret_file``
    spark.properties  the master's and workers' Spark settings, the secret among them (0600)
    master            the master's URL (spark://HOST:PORT)
    master.pid/.log   the master JVM
    worker-N.pid/.log the workers' JVMs; work-N/ their executors' scratch space

The processes are started in their own sessions, so they outlive the command that started
them; ``down`` stops the process groups its pid files name, after checking that each is
still ours (the marker property on its command line), never by name.

Bound to 127.0.0.1 unless told otherwise. Every RPC port requires the secret (Spark's
"Security", "Authentication") and encrypts what it carries with a key agreed from it
("Encryption", ``spark.network.crypto.enabled``; no SASL fallback); the master's REST submission server is off, and its web UI
(no authentication) listens on the same address on a free port.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from spark_exec.orchestrator import (
    SPARK_HOME,
    signal_group,
    spark_auth_properties,
    write_private,
)

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
#: marks the JVMs of a cluster on their command line (``-D...=<directory>``)
MARKER_PROPERTY = "spark.sqlfront.standalone"
#: heap of the master and worker daemons (they only schedule; executors have their own)
DAEMON_MEMORY = "256m"
#: what a worker logs once the master has accepted it
REGISTERED = b"Successfully registered with master"
#: what the master logs once it can accept workers
LEADER = b"I have been elected leader"


class ClusterError(Exception):
    """The cluster could not start or stop; the message says why (and which log to read)."""


def up(directory: Path, host: str = "127.0.0.1", port: int = 7077, workers: int = 1, cores: int = 1,
       memory: str = "1g", timeout_s: float = 180.0, echo: Callable[[str], None] = print) -> str:
    """Start a master on ``host:port`` and ``workers`` workers of ``cores`` cores and
    ``memory`` (Spark's notation: ``512m``, ``2g``) for executors each, and wait until every
    worker has registered. Returns the master's URL (``spark://host:port``).

    Raises:
        ClusterError when a cluster of ``directory`` still runs, or a process exits or does
        not get ready within ``timeout_s`` (what was started is stopped again)."""
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    if _live_pids(directory):
        raise ClusterError(f"a cluster of {directory} is running: stop it with sqlfront spark-cluster down "
                           f"--dir {directory}")
    secret = secrets.token_hex(32)
    write_private(directory / "secret", secret)
    props = spark_auth_properties(secret, encrypt=True) + "\nspark.master.rest.enabled=false\n"
    write_private(directory / "spark.properties", props)
    url = f"spark://{host}:{port}"
    started: list[tuple[str, subprocess.Popen]] = []
    try:
        master = _start(directory, "master", [MASTER_CLASS, "--host", host, "--port", str(port),
                                              "--webui-port", "0"], host)
        started.append(("master", master))
        _wait_for(directory / "master.log", LEADER, master, timeout_s)
        echo(f"master ready at {url}")
        for n in range(1, workers + 1):
            started.append((f"worker-{n}", start_worker(directory, n, url, host, cores, memory)))
        for n, (name, w) in enumerate(started[1:], 1):
            wait_registered(directory, n, w, timeout_s)
            echo(f"{name} registered ({cores} core(s), {memory})")
    except BaseException:
        down(directory)
        raise
    (directory / "master").write_text(url + "\n")
    return url


def join(directory: Path, master_url: str, properties: Path, host: str = "127.0.0.1", cores: int = 1,
         memory: str = "1g", timeout_s: float = 180.0) -> int:
    """Start a worker on this host for the master at ``master_url`` (a cluster another
    host's ``up`` started), with that cluster's ``properties`` file (its secret: read it
    from a shared mount, or copy it over privately). Its files live in ``directory`` of
    this host; ``down`` stops it. Returns the worker's number there.

    Raises:
        ClusterError when it exits or does not register within ``timeout_s``; OSError
        when ``properties`` cannot be read."""
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    write_private(directory / "spark.properties", Path(properties).read_text())
    n = 1 + max((int(f.stem.split("-")[1]) for f in directory.glob("worker-*.pid")), default=0)
    w = start_worker(directory, n, master_url, host, cores, memory)
    try:
        wait_registered(directory, n, w, timeout_s)
    except ClusterError:
        signal_group(w.pid, signal.SIGKILL)
        raise
    return n


def start_worker(directory: Path, n: int, url: str, host: str, cores: int, memory: str,
                 wrap: tuple[str, ...] = ()) -> subprocess.Popen:
    """Start worker ``n`` of the cluster in ``directory`` (whose ``up`` wrote its
    properties) for the master at ``url``; ``wrap`` is a command the JVM runs under (a test's
    ``unshare``). Returns at once; the worker logs ``REGISTERED`` in ``worker-N.log``."""
    work = Path(directory) / f"work-{n}"
    work.mkdir(exist_ok=True)
    return _start(Path(directory), f"worker-{n}", [WORKER_CLASS, "--host", host, "--cores", str(cores), "--memory",
                                                   memory, "--webui-port", "0", "--work-dir", str(work), url],
                  host, wrap)


def wait_registered(directory: Path, n: int, popen: subprocess.Popen, timeout_s: float = 180.0) -> None:
    """Wait until worker ``n`` has registered with its master.

    Raises:
        ClusterError when it exits first or does not within ``timeout_s``."""
    _wait_for(Path(directory) / f"worker-{n}.log", REGISTERED, popen, timeout_s)


def down(directory: Path, grace_s: float = 10.0) -> int:
    """Stop the processes of the cluster in ``directory`` (SIGTERM, then SIGKILL after
    ``grace_s``). Returns how many were running."""
    directory = Path(directory).resolve()
    pids = _live_pids(directory)
    for pid in pids:
        signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        if _alive(pid):
            signal_group(pid, signal.SIGKILL)
    for f in directory.glob("*.pid"):
        f.unlink(missing_ok=True)
    (directory / "master").unlink(missing_ok=True)
    return len(pids)


def _start(directory: Path, name: str, args: list[str], host: str, wrap: tuple[str, ...] = ()) -> subprocess.Popen:
    env = dict(os.environ)
    env["SPARK_HOME"] = str(SPARK_HOME)
    env["SPARK_LOCAL_IP"] = host
    env["SPARK_DAEMON_MEMORY"] = DAEMON_MEMORY
    env["SPARK_DAEMON_JAVA_OPTS"] = f"-D{MARKER_PROPERTY}={directory}"
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    cmd = [*wrap, str(SPARK_HOME / "bin" / "spark-class"), *args, "--properties-file", str(directory / "spark.properties")]
    with open(directory / f"{name}.log", "ab") as logf:
        popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                 cwd=directory, env=env, start_new_session=True)
    (directory / f"{name}.pid").write_text(f"{popen.pid}\n")
    return popen


def _wait_for(log_path: Path, line: bytes, popen: subprocess.Popen, timeout_s: float) -> None:
    """Wait until ``log_path`` holds ``line``. Raises ClusterError when the process exits
    first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        if line in log_path.read_bytes():
            return
        if popen.poll() is not None:
            raise ClusterError(f"{log_path.stem} exited (code {popen.returncode}) before it was ready; see {log_path}")
        if time.monotonic() >= deadline:
            raise ClusterError(f"{log_path.stem} was not ready after {timeout_s:g} s; see {log_path}")
        time.sleep(0.25)


def _live_pids(directory: Path) -> list[int]:
    """The pids of ``directory``'s pid files whose process is still one of its JVMs."""
    out = []
    for f in sorted(directory.glob("*.pid")):
        try:
            pid = int(f.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except (ValueError, OSError):
            continue
        if f"-D{MARKER_PROPERTY}={directory} ".encode() in cmdline + b" ":
            out.append(pid)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours (the starting process is still its parent) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
