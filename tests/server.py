"""Run ``sqlfront serve`` as a subprocess for tests, the way a user runs it."""

from __future__ import annotations

import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent


def startup_packet(user: str = "materialize") -> bytes:
    """A protocol 3.0 StartupMessage for ``user`` and database materialize."""
    params = b"user\x00" + user.encode() + b"\x00database\x00materialize\x00\x00"
    return struct.pack("!ii", 8 + len(params), 196608) + params


def read_message(sock: socket.socket) -> tuple[bytes, bytes]:
    """One backend message: (type byte, body); (b"", b"") at end of stream."""
    def exact(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                return buf
            buf += chunk
        return buf

    header = exact(5)
    if len(header) < 5:
        return b"", b""
    return header[:1], exact(struct.unpack("!I", header[1:])[0] - 4)


def error_fields(body: bytes) -> dict[str, str]:
    """An ErrorResponse body's fields by code letter (``C``: SQLSTATE, ``M``: message)."""
    return {f[:1]: f[1:] for f in body.decode(errors="replace").split("\x00") if f}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: servers started and not stopped: a failing test's report shows what they logged
RUNNING: set["Server"] = set()


class Server:
    """A server process on a free port with its own data directory."""

    def __init__(self, data_dir: Path, *extra_args: str, password: str | None = None, host: str = "127.0.0.1",
                 prefix: tuple[str, ...] = (), sslmode: str | None = None):
        """``host``: the address it listens on and is reached at; ``prefix``: a command it
        runs under (``ip netns exec NS``); ``sslmode``: libpq's, for connections to it."""
        self.password = password
        self.sslmode = sslmode
        self.host = host
        self.prefix = prefix
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.extra_args = extra_args
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-server.log"

    @property
    def url(self) -> str:
        auth = f"materialize:{self.password}" if self.password else "materialize"
        return f"postgresql://{auth}@{self.host}:{self.port}/materialize" + (
            f"?sslmode={self.sslmode}" if self.sslmode else "")

    def start(self, wait_replicas: bool = True, timeout: float = 180) -> "Server":
        cmd = [*self.prefix, sys.executable, "-m", "sqlfront.cli", "serve", "--listen", f"{self.host}:{self.port}",
               "--data-dir", str(self.data_dir), *self.extra_args]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        RUNNING.add(self)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""
                raise RuntimeError(f"server exited with {self.proc.returncode}; see {self.log_path}:\n{tail}")
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=2) as c:
                    if not wait_replicas:
                        break
                    rows = c.execute("SELECT status FROM mz_cluster_replicas").fetchall()
                    if all(r[0] == "healthy" for r in rows):
                        break
            except psycopg.OperationalError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"server not ready after {timeout}s; see {self.log_path}")
            time.sleep(0.3)
        return self

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc is None:
            return 0
        RUNNING.discard(self)
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.proc = None
        self.log.close()
        return code

    def connect(self, **kw) -> psycopg.Connection:
        kw.setdefault("autocommit", True)
        return psycopg.connect(self.url, **kw)

    def replica_url(self, replica_id: str) -> str:
        """The Spark Connect connection string of a local replica, with the token the
        server wrote (mode 0600) next to its port file."""
        from spark_exec.replica import connection_url

        d = self.data_dir / "replicas" / replica_id
        port = (d / "port").read_text().strip()
        return connection_url(f"sc://127.0.0.1:{port}", (d / "token").read_text().strip())

    def remote_options(self, replica_id: str) -> str:
        """``REMOTE ('127.0.0.1:PORT'), TOKEN '...'``: the options of a REMOTE replica that
        is the local replica ``replica_id``'s Spark Connect server again (no second JVM)."""
        d = self.data_dir / "replicas" / replica_id
        port = (d / "port").read_text().strip()
        return f"REMOTE ('127.0.0.1:{port}'), TOKEN '{(d / 'token').read_text().strip()}'"


class Balancer:
    """``sqlfront balancer`` as a subprocess on a free port, sending connections to
    environmentd ports: ``default`` (None: none), and ``routes`` (cluster name -> port);
    ``extra_args`` go to the command line (``--catalog-url URL``)."""

    def __init__(self, log_path, default: int | None, *extra_args: str, host: str = "127.0.0.1",
                 prefix: tuple[str, ...] = (), **routes: int):
        """``host``: the address it listens on; ``prefix``: a command it runs under (``ip
        netns exec NS``)."""
        self.port = free_port()
        self.host = host
        args = [f"--route={c}=127.0.0.1:{p}" for c, p in routes.items()]
        if default is not None:
            args += ["--default", f"127.0.0.1:{default}"]
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen([*prefix, sys.executable, "-m", "sqlfront.cli", "balancer", "--listen",
                                      f"{host}:{self.port}", *args, *extra_args],
                                     cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection((host, self.port), 1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the balancer did not start; see {log_path}")
                time.sleep(0.1)

    def connect(self, cluster: str | None = None, **kw) -> psycopg.Connection:
        if cluster is not None:
            kw["options"] = f"-c cluster={cluster}"
        return psycopg.connect(host=self.host, port=self.port, user="materialize", dbname="materialize",
                               autocommit=True, connect_timeout=10, **kw)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)
        self.log.close()


def metric_value(url: str, name: str) -> float:
    """The sum of the samples of Prometheus metric ``name`` (with its labels, if given:
    ``name{label="v"}``) that ``url`` (a ``/metrics`` endpoint) serves now."""
    import urllib.request

    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and line[len(name):len(name) + 1] in (" ", "{"))


def replica_jvms(data_dir: Path) -> list[int]:
    """PIDs of live Java processes that belong to replicas of ``data_dir``."""
    marker = str(Path(data_dir).resolve() / "replicas").encode()
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes()
            stat = (p / "stat").read_text()
        except OSError:
            continue
        if b"SparkConnectServer" in cmd and marker in cmd and ") Z" not in stat:
            pids.append(int(p.name))
    return pids


def require_psql() -> None:
    """Skip the calling test when psql (PostgreSQL's client) is not installed."""
    import shutil

    import pytest

    if shutil.which("psql") is None:
        pytest.skip("psql (PostgreSQL's client) is not installed")


def psql(server, command: str) -> subprocess.CompletedProcess:
    """Run one psql command (``-c``) against ``server``; skips the test without psql."""
    require_psql()
    cmd = ["psql", "-X", "-h", "127.0.0.1", "-p", str(server.port), "-U", "materialize", "materialize", "-c", command]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def index_peeks(metrics_url: str) -> dict[str, float]:
    """How the server's peeks of indexed views were answered so far (its
    ``index_peeks_total`` metric): ``arrangement`` (read from an index's dataflow) and
    ``rerun`` (the view's query run) -> count."""
    import re
    import urllib.request

    text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    return {m[1]: float(m[2]) for m in re.finditer(r'index_peeks_total\{how="(\w+)"\} (\S+)', text)}


def wait_for(pred, timeout: float = 30, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    return pred()


def long_query(last: int = 300) -> str:
    """A query that runs for minutes unless canceled, answered in environmentd (no replica
    is disturbed by its cancel) as a streamed cross join in little memory: one that
    materializes its rows stops at max_query_heap_size within a second. ``last`` tells
    one test's from another's in the activity log."""
    return ("SELECT count(*) FROM generate_series(1, 300) a, generate_series(1, 300) b, "
            f"generate_series(1, {last}) c WHERE md5((a * b * c)::text) = ''")


def run_in_background(server, sql: str):
    """``(thread, outcome)``: ``sql`` running on a connection of its own in ``thread``;
    ``outcome`` gets ``sqlstate`` when it fails."""
    import threading

    outcome: dict = {}

    def run():
        with server.connect() as c:
            try:
                c.execute(sql)
            except psycopg.Error as e:
                outcome["sqlstate"] = e.sqlstate

    t = threading.Thread(target=run)
    t.start()
    return t, outcome


def seen_by(server, table: str) -> None:
    """Wait until ``server`` followed the catalog past the creation of ``table``."""
    with server.connect() as c:
        assert wait_for(lambda: c.execute("SELECT count(*) FROM pg_class WHERE relname = %s", (table,)).fetchone()[0],
                        10, 0.05)


def fetch_until(conn, cursor: str, n: int, timeout: float = 20) -> list[tuple]:
    """FETCH from ``cursor`` (a SUBSCRIBE WITH (PROGRESS); at least once) until ``n`` data
    rows came or ``timeout`` passed."""
    rows: list[tuple] = []
    deadline = time.monotonic() + timeout
    while True:
        rows += [r for r in conn.execute(f"FETCH ALL {cursor} WITH (TIMEOUT = '1s')").fetchall() if not r[1]]
        if len(rows) >= n or time.monotonic() >= deadline:
            return rows


def shared_shard_state(url: str, table: str) -> dict:
    """The since, upper and readers of ``table``'s shard, from the shared catalog and Consensus."""
    import json

    with psycopg.connect(url, autocommit=True) as pc:
        ops = [op for (log,) in pc.execute("SELECT ops FROM catalog_log ORDER BY version") for op in log]
        shard = next(op["table"]["shard_id"] for op in ops
                     if op.get("_t") == "CreateTable" and op["table"]["name"] == table)
        data = pc.execute("SELECT data FROM consensus WHERE shard = %s ORDER BY seqno DESC LIMIT 1",
                          (shard,)).fetchone()[0]
    d = json.loads(bytes(data))
    return {"since": d["since"], "upper": d["upper"], "readers": d["readers"]}


def start_owner_pair(a: "Server", b: "Server", size: str = "1") -> None:
    """Start ``a`` (it bootstraps quickstart and takes its lease), then ``b`` (``--clusters
    cb``) while ``a`` creates cluster ``cb`` with one replica of ``size``, which ``b`` waits
    for to boot."""
    import threading

    a.start(wait_replicas=False)
    starting = threading.Thread(target=b.start, kwargs={"wait_replicas": False})
    starting.start()
    with a.connect() as c:
        c.execute(f"CREATE CLUSTER cb REPLICAS (r1 (SIZE '{size}'))")
    starting.join()
    assert b.proc is not None and b.proc.poll() is None


def self_signed(directory: Path, hosts: tuple[str, ...] = ("127.0.0.1",)) -> tuple[str, str]:
    """A self-signed certificate (made with ``cryptography``) naming ``hosts`` (IP
    addresses, as subjectAltName entries: what TLS clients between processes check) and
    its key, written as PEM files in ``directory``; returns their paths (cert, key)."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    now = dt.datetime.now(dt.timezone.utc)
    san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(h)) for h in hosts])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1)).add_extension(san, critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = Path(directory) / "server.crt", Path(directory) / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return str(cert_path), str(key_path)
