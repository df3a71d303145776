"""The ``sqlfront`` command: ``serve`` runs environmentd; ``load-tpch`` loads TPC-H data."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path

import click

from catalog.sizes import default_sizes, parse_sizes
from sqlfront.addresses import WILDCARD_HOSTS, is_loopback

DEFAULT_LISTEN = "127.0.0.1:6875"
#: the seed's persist PubSub port
DEFAULT_PUBSUB_LISTEN = "127.0.0.1:6879"

#: How long (seconds) a thread running Python may keep the GIL while another waits for it.
#: CPython's 5 ms default means a session whose query is evaluated in Python (the fast
#: path) adds up to 5 ms to every GIL hand-over of every other session (a SELECT 1 takes
#: several: socket read, planning, socket write): measured, SELECT 1 p99 went from 0.6 ms
#: idle to 16 ms next to a constant cross join. A thread waking every 0.2 ms next to that
#: cross join (on an idle machine) saw p99 1.3 ms at 0.5 ms and 0.84 ms at 0.2 ms, for
#: 14 % more CPU time of the cross join; contention is when the switches happen at all.
GIL_SWITCH_INTERVAL_S = 0.0002


def parse_listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise click.BadParameter(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


class ByteSize(click.ParamType):
    """A size in bytes: a plain number, or one with a unit as PostgreSQL's memory settings
    take them (``kB``, ``MB``, ``GB``, multiples of 1024; ``KiB``, ``MiB``, ``GiB`` too)."""

    name = "size"
    UNITS = {"": 1, "b": 1, "kb": 1 << 10, "kib": 1 << 10, "mb": 1 << 20, "mib": 1 << 20,
             "gb": 1 << 30, "gib": 1 << 30}

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip()
        digits = text.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ").strip()
        unit = text[len(digits):].strip().lower()
        if not digits.isdigit() or unit not in self.UNITS or int(digits) * self.UNITS[unit] < 1:
            self.fail(f"expected a positive size such as 65536, 64MB or 1GB, got {value!r}", param, ctx)
        return int(digits) * self.UNITS[unit]


@click.group()
def main() -> None:
    """sqlfront: a PostgreSQL-wire SQL front end whose clusters run on Spark."""


@main.command()
@click.option("--listen", default=DEFAULT_LISTEN, show_default=True, help="pgwire address (HOST:PORT).")
@click.option("--data-dir", default="mzdata", show_default=True, type=click.Path(file_okay=False),
              help="Catalog, persist blobs and replica logs.")
@click.option("--scratch-dir", default=None, envvar="SQLFRONT_SCRATCH_DIR", type=click.Path(file_okay=False),
              help="Where local replicas keep their scratch space (Spark's shuffle and spill files) in a "
                   "private directory of this run's, removed at shutdown. Default: the system's temp "
                   "directory. Keep it off the data directory's disk: reads go on when that disk is full.")
@click.option("--cluster-replica-sizes", default=None,
              help='Replica size map: JSON ({"name": {"workers": N, "scale": S, ...}}) or a file holding it.')
@click.option("--availability-zone", "availability_zones", multiple=True,
              help="An availability zone replicas may be placed in (repeatable).")
@click.option("--bootstrap-replica-size", default="1", show_default=True,
              help="Size of quickstart's replica r1 in a new data directory.")
@click.option("--bootstrap-role", default="materialize", show_default=True,
              help="The superuser role a new catalog makes; it owns what was made before roles existed. With "
                   "--password-file it logs in with the server password until it has a password of its own.")
@click.option("--auto-create-roles", is_flag=True, default=False,
              help="Give a user without a role one (LOGIN, no privileges) at its first login, as Materialize "
                   "Cloud does. Off: only roles made with CREATE ROLE ... LOGIN can log in.")
@click.option("--metrics-listen", default=None, help="Serve Prometheus metrics on HOST:PORT (e.g. 127.0.0.1:6878).")
@click.option("--console-listen", default=None,
              help="Serve the web console on HOST:PORT (e.g. 127.0.0.1:6876), behind the same password as pgwire.")
@click.option("--activity-log/--no-activity-log", default=True, show_default=True,
              help="Record every statement in mz_internal.mz_recent_activity_log.")
@click.option("--max-peeks-per-replica", default=8, show_default=True, type=click.IntRange(1),
              help="Peeks running at once on one replica; more wait in line.")
@click.option("--password-file", default=None, type=click.Path(dir_okay=False, exists=True),
              help="File holding the password clients must give (SCRAM-SHA-256). Also: $SQLFRONT_PASSWORD.")
@click.option("--copy-from-dir", "copy_from_dirs", multiple=True, type=click.Path(file_okay=False),
              help="A directory whose files COPY t FROM 'path' may read (repeatable). Without one, "
                   "clients can COPY only FROM STDIN.")
@click.option("--max-connections", default=100, show_default=True, type=click.IntRange(1),
              help="Client connections at once; one more is refused with 53300 (SHOW max_connections).")
@click.option("--max-message-size", default="64MB", show_default=True, type=ByteSize(),
              help="Largest protocol message a client may send (bytes, or with kB/MB/GB).")
@click.option("--max-copy-from-size", default="256MB", show_default=True, type=ByteSize(),
              help="Most data one COPY FROM STDIN may send (SHOW max_copy_from_size).")
@click.option("--copy-memory-budget", default=None, type=ByteSize(),
              help="Memory every COPY FROM STDIN together may hold (bytes, or with kB/MB/GB); a COPY that "
                   "cannot get its share waits, then fails with 53200. Default: a quarter of the machine's memory.")
@click.option("--authentication-timeout", default=60.0, show_default=True, type=click.FloatRange(0.1, 600),
              help="Seconds a client has from connecting to the end of startup and authentication "
                   "(PostgreSQL's authentication_timeout).")
@click.option("--max-startup-connections", default=None, type=click.IntRange(1),
              help="Connections still in startup or authentication at once; more are refused with 53300. "
                   "Default: --max-connections.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"]))
@click.option("--tls-cert", default=None, type=click.Path(exists=True, dir_okay=False),
              help="PEM certificate (chain) of the server: clients may connect with TLS (sslmode=require).")
@click.option("--tls-key", default=None, type=click.Path(exists=True, dir_okay=False),
              help="PEM private key of --tls-cert.")
@click.option("--tls-mode", default="allow", show_default=True, type=click.Choice(["allow", "require"]),
              help="With --tls-cert: 'require' refuses clients that do not use TLS (FATAL 28000).")
@click.option("--max-query-heap-size", default=None,
              help="Default of the session variable max_query_heap_size: server memory a query evaluated in "
                   "Python may hold (e.g. 256MB; 0 for no limit).")
@click.option("--persist-compaction/--no-persist-compaction", default=True, show_default=True,
              help="Compact persist shards in the background (off: parts accumulate; for benchmarks).")
@click.option("--persist-pubsub", "persist_pubsub", default="on", show_default=True, type=click.Choice(["on", "off"]),
              help="Serve persist PubSub and follow shards through it (off: followers poll Consensus).")
@click.option("--persist-pubsub-listen", default=DEFAULT_PUBSUB_LISTEN, show_default=True,
              help="Persist PubSub address (HOST:PORT; off loopback only with --tls-cert, which PubSub then "
                   "serves and dials peers with); a taken port falls back to a free one, written to "
                   "DATA_DIR/persist_pubsub.")
@click.option("--advertise-host", default=None,
              help="The host other processes (PubSub peers, the balancer) reach this one's pgwire and PubSub at, "
                   "as it registers them in the shared store (default: the host of each listen address; "
                   "required when one is a wildcard such as 0.0.0.0).")
@click.option("--tls-ca", default=None, type=click.Path(exists=True, dir_okay=False),
              help="PEM bundle of the CAs that sign the other processes' certificates, for PubSub between "
                   "processes (default: --tls-cert itself, a certificate all of them share).")
@click.option("--persist-consensus-url", default=None, envvar="SQLFRONT_PERSIST_CONSENSUS_URL",
              help="persist Consensus: postgres://USER[:PASSWORD]@HOST:PORT/DB, shared by several environmentd "
                   "processes (default: DATA_DIR/consensus.db, sqlite). Also $SQLFRONT_PERSIST_CONSENSUS_URL, "
                   "which keeps a password out of the process list.")
@click.option("--timestamp-oracle-url", default=None, envvar="SQLFRONT_TIMESTAMP_ORACLE_URL",
              help="Timestamp oracle: postgres://... shared by several environmentd processes "
                   "(default: in DATA_DIR/catalog.db, sqlite). Also $SQLFRONT_TIMESTAMP_ORACLE_URL.")
@click.option("--catalog-url", default=None, envvar="SQLFRONT_CATALOG_URL",
              help="Catalog: postgres://... shared by several environmentd processes, as a versioned log each "
                   "follows (default: DATA_DIR/catalog.db, sqlite). Also $SQLFRONT_CATALOG_URL.")
@click.option("--catalog-key-file", default=None, envvar="SQLFRONT_CATALOG_KEY_FILE",
              type=click.Path(dir_okay=False),
              help="The key the catalog's secrets (REMOTE replicas' tokens) are encrypted under, made 0600 if "
                   "missing (default: DATA_DIR/catalog.key). Processes sharing --catalog-url must share it.")
@click.option("--persist-blob-url", default=None,
              help="persist Blob directory (path or file:// URL), shared by the processes that share Consensus "
                   "(default: DATA_DIR/blob).")
@click.option("--clusters", default=None, metavar="NAME[,NAME...]",
              help="Run the replicas of these clusters only (needs --catalog-url postgres://...): this process "
                   "takes their leases when no live process holds them (default: every cluster).")
@click.option("--takeover", is_flag=True, default=False,
              help="Also run clusters not in --clusters whose owner's lease expired (it died).")
@click.option("--cluster-lease-duration", default=10.0, show_default=True, type=click.FloatRange(1, 3600),
              help="Seconds a cluster lease lasts without renewal: how long a dead owner's clusters wait for "
                   "a takeover (renewed every fifth of it).")
def serve(listen, data_dir, scratch_dir, cluster_replica_sizes, availability_zones, bootstrap_replica_size, bootstrap_role,
          auto_create_roles, metrics_listen, console_listen, activity_log,
          max_peeks_per_replica, password_file, copy_from_dirs, max_connections, max_message_size,
          max_copy_from_size, copy_memory_budget, authentication_timeout, max_startup_connections, log_level,
          tls_cert, tls_key, tls_mode, max_query_heap_size, persist_compaction, persist_pubsub,
          persist_pubsub_listen, advertise_host, tls_ca, persist_consensus_url, timestamp_oracle_url, persist_blob_url,
          catalog_url, catalog_key_file, clusters, takeover, cluster_lease_duration) -> None:
    """Run the server until SIGINT or SIGTERM; stops every replica process on the way out."""
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    from sqlfront.heap import limit_fragmentation
    from sqlfront.memtrace import start_from_env

    limit_fragmentation()  # before threads allocate: what they free goes back to the OS

    start_from_env()  # SQLFRONT_TRACEMALLOC=<dir>: memory snapshots for finding a leak (off by default)
    import pyarrow as pa

    # Arrow memory from malloc, not pyarrow's default mimalloc, whose per-thread heaps keep
    # what each session thread freed: 4 COPY streams of 40 MB, 2 at a time, peaked at
    # 88 MB of RSS growth with mimalloc and 37 MB with malloc (bench/copy_memory.py).
    pa.set_memory_pool(pa.system_memory_pool())
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("py4j", "pyspark", "grpc"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from catalog.errors import SqlError
    from persist.binding import BlobMismatch
    from pgconn import is_postgres_url
    from sqlfront.datadir import make_private
    from sqlfront.environment import Config, Environment
    from sqlfront.pgwire import PgServer
    from sqlfront.tls import PeerTls
    from sqlfront.vars import validate

    host, port = parse_listen(listen)
    tls = _server_tls(tls_cert, tls_key)
    password = os.environ.get("SQLFRONT_PASSWORD") or None
    if password_file:
        password = Path(password_file).read_text().rstrip("\n")
        if not password:
            raise click.BadParameter("the password file is empty", param_hint="--password-file")
    if password is None and not is_loopback(host):
        raise click.ClickException(
            f"refusing to listen on {listen} without a password: anyone who can reach it could connect. "
            "Set --password-file (or SQLFRONT_PASSWORD), or listen on 127.0.0.1.")
    metrics_address = parse_listen(metrics_listen) if metrics_listen else None
    if metrics_address and not is_loopback(metrics_address[0]):
        raise click.ClickException(
            f"refusing to serve metrics on {metrics_listen}: the metrics endpoint has no authentication, "
            "so anyone who can reach it could read it. Listen on 127.0.0.1 (--metrics-listen 127.0.0.1:PORT) "
            "and let the scraper reach it through a tunnel or an authenticating proxy.")
    console_address = parse_listen(console_listen) if console_listen else None
    if console_address and password is None and not is_loopback(console_address[0]):
        raise click.ClickException(
            f"refusing to serve the console on {console_listen} without a password: anyone who can reach it "
            "could run SQL. Set --password-file (or SQLFRONT_PASSWORD), or listen on 127.0.0.1.")
    pubsub_address = parse_listen(persist_pubsub_listen)
    if not is_loopback(pubsub_address[0]) and tls is None:
        raise click.ClickException(
            f"refusing to serve persist pubsub on {persist_pubsub_listen} in clear text: its token and the "
            "shard states it carries would cross the network readable. Give --tls-cert/--tls-key, or listen "
            "on 127.0.0.1.")
    for flag, h in (("--listen", host), ("--persist-pubsub-listen", pubsub_address[0])):
        if h in WILDCARD_HOSTS and advertise_host is None and (persist_consensus_url or catalog_url):
            raise click.BadParameter(f"{h} names no host other processes can reach this one at: give "
                                     "--advertise-host", param_hint=flag)
    peer_tls = PeerTls(tls_cert, tls_key, tls_ca) if tls is not None else None
    scram = None
    if password is not None:
        from sqlfront.auth import ScramVerifier

        try:
            scram = ScramVerifier(password)  # the one PBKDF2 derivation; the plaintext is not kept
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--password-file")
        del password
    try:
        sizes = parse_sizes(cluster_replica_sizes) if cluster_replica_sizes else default_sizes()
    except (ValueError, OSError) as e:
        raise click.BadParameter(str(e), param_hint="--cluster-replica-sizes")
    if bootstrap_replica_size not in sizes:
        raise click.BadParameter(f"size {bootstrap_replica_size!r} is not in the size map",
                                 param_hint="--bootstrap-replica-size")
    session_defaults = {}
    if max_query_heap_size is not None:
        try:
            validate("max_query_heap_size", max_query_heap_size)
        except SqlError as e:
            raise click.BadParameter(e.message, param_hint="--max-query-heap-size")
        session_defaults["max_query_heap_size"] = max_query_heap_size
    _check_postgres_urls(persist_consensus_url, timestamp_oracle_url, catalog_url)
    cluster_names = None
    if clusters is not None:
        cluster_names = tuple(dict.fromkeys(n.strip() for n in clusters.split(",") if n.strip()))
        if not cluster_names:
            raise click.BadParameter("expected cluster names separated by commas", param_hint="--clusters")
    if (cluster_names is not None or takeover) and not is_postgres_url(catalog_url):
        raise click.BadParameter("cluster ownership lives in the shared catalog: give --catalog-url postgres://...",
                                 param_hint="--clusters" if cluster_names is not None else "--takeover")
    config = Config(Path(data_dir), sizes=sizes, availability_zones=list(availability_zones),
                    bootstrap_replica_size=bootstrap_replica_size, bootstrap_role=bootstrap_role,
                    auto_create_roles=auto_create_roles,
                    metrics_listen=metrics_address, max_peeks_per_replica=max_peeks_per_replica,
                    # resolved now, so a symlink swapped in later cannot widen what is allowed
                    copy_from_dirs=tuple(Path(os.path.realpath(d)) for d in copy_from_dirs),
                    max_connections=max_connections, max_message_size=max_message_size,
                    max_copy_from_size=max_copy_from_size, copy_memory_budget=copy_memory_budget,
                    authentication_timeout_s=authentication_timeout,
                    max_startup_connections=max_startup_connections or max_connections,
                    session_defaults=session_defaults,
                    persist_compaction=persist_compaction, persist_pubsub=persist_pubsub == "on",
                    persist_pubsub_listen=pubsub_address, persist_consensus_url=persist_consensus_url,
                    timestamp_oracle_url=timestamp_oracle_url, persist_blob_url=persist_blob_url,
                    catalog_url=catalog_url, catalog_key_file=Path(catalog_key_file) if catalog_key_file else None,
                    address=f"{advertise_host or host}:{port}", clusters=cluster_names,
                    advertise_host=advertise_host, peer_tls=peer_tls,
                    takeover=takeover, cluster_lease_s=cluster_lease_duration, activity_log=activity_log,
                    scratch_dir=Path(scratch_dir) if scratch_dir else None)
    make_private(Path(data_dir))
    try:
        env = Environment(config)
    except SqlError as e:  # a shared catalog refusing this process's key, say
        raise click.ClickException(" ".join(filter(None, (e.message + ".", e.hint)))) from None
    except BlobMismatch as e:  # a shared Consensus with a private Blob, or the reverse
        raise click.ClickException(str(e)) from None
    except Exception as e:
        _unreachable_postgres(e)
    stop = threading.Event()

    def on_signal(signum, frame):
        logging.getLogger("sqlfront").info("received signal %d, shutting down", signum)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        server = PgServer((host, port), env, scram=scram, tls=tls, tls_required=tls_mode == "require")
    except OSError as e:
        raise click.ClickException(f"cannot listen on {listen}: {e}")
    env.start()
    console = None
    if console_address:
        from sqlfront.console import ConsoleServer

        try:
            console = ConsoleServer(env, *console_address, scram=scram).start()
        except OSError as e:
            env.shutdown()
            raise click.ClickException(f"cannot serve the console on {console_listen}: {e}")
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="pgwire", daemon=True)
    t.start()
    logging.getLogger("sqlfront").info("listening on %s (psql -h %s -p %d -U materialize materialize)", listen, host, port)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        if console is not None:
            console.stop()
        server.shutdown()
        server.server_close()
        env.shutdown()
        logging.shutdown()
        # Spark Connect client threads are not daemons; the replicas are already stopped.
        os._exit(0)


@main.command()
@click.option("--listen", default=DEFAULT_LISTEN, show_default=True,
              help="pgwire address of the balancer (HOST:PORT). Off loopback it forwards only to environmentd "
                   "processes off loopback (they require a password there).")
@click.option("--route", "routes", multiple=True, metavar="CLUSTER=HOST:PORT",
              help="Send connections whose options set cluster CLUSTER (-c cluster=CLUSTER) to the "
                   "environmentd at HOST:PORT (repeatable).")
@click.option("--default", "default", default=None, metavar="HOST:PORT",
              help="The environmentd of every other connection (no cluster in the options, or no route). "
                   "Required without --catalog-url; with it, the default is the owner of quickstart.")
@click.option("--catalog-url", default=None, envvar="SQLFRONT_CATALOG_URL",
              help="The environmentd processes' shared catalog (postgres://...): route each cluster to the "
                   "process that owns it now (its lease), including after a takeover. Also $SQLFRONT_CATALOG_URL.")
@click.option("--tls-cert", default=None, type=click.Path(exists=True, dir_okay=False),
              help="PEM certificate (chain) the balancer presents: clients may connect with TLS (sslmode=require); "
                   "it terminates their TLS.")
@click.option("--tls-key", default=None, type=click.Path(exists=True, dir_okay=False),
              help="PEM private key of --tls-cert.")
@click.option("--tls-mode", default="allow", show_default=True, type=click.Choice(["allow", "require"]),
              help="With --tls-cert: 'require' refuses clients that do not use TLS (FATAL 28000).")
@click.option("--backend-tls-ca", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Speak TLS to environmentd, trusting the certificates of this PEM bundle (each must name the "
                   "address it is dialed at); an environmentd without TLS is then unreachable.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"]))
def balancer(listen, routes, default, catalog_url, tls_cert, tls_key, tls_mode, backend_tls_ca, log_level) -> None:
    """Run the pgwire balancer: route each connection to the environmentd of its cluster,
    forward CancelRequests to it, answer FATAL 08006 when it cannot be reached."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from sqlfront.balancer import Routes, serve as serve_balancer

    host, port = parse_listen(listen)
    tls = _server_tls(tls_cert, tls_key)
    backend_tls = None
    if backend_tls_ca:
        import ssl

        from sqlfront.tls import client_context

        try:
            backend_tls = client_context(backend_tls_ca)
        except (OSError, ssl.SSLError) as e:
            raise click.ClickException(f"cannot load --backend-tls-ca: {e}") from None
    clusters = {}
    for r in routes:
        name, eq, address = r.partition("=")
        if not eq or not name:
            raise click.BadParameter(f"expected CLUSTER=HOST:PORT, got {r!r}", param_hint="--route")
        clusters[name] = parse_listen(address)
    from pgconn import is_postgres_url, redact_url

    if catalog_url and not is_postgres_url(catalog_url):
        raise click.BadParameter(f"expected a postgres:// URL, got {redact_url(catalog_url)!r}",
                                 param_hint="--catalog-url")
    if default is None and not catalog_url:
        raise click.BadParameter("give --default HOST:PORT (or --catalog-url to route by cluster owner)",
                                 param_hint="--default")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        serve_balancer((host, port), Routes(parse_listen(default) if default else None, clusters),
                       catalog_url=catalog_url, tls=tls, tls_required=tls is not None and tls_mode == "require",
                       backend_tls=backend_tls)
    except OSError as e:
        raise click.ClickException(f"cannot listen on {listen}: {e}")
    except KeyboardInterrupt:
        pass


@main.command()
@click.option("--url", default="postgresql://materialize@127.0.0.1:6875/materialize", show_default=True,
              help="pgwire connection string of the environmentd to watch.")
@click.option("--interval", default=2.0, show_default=True, type=click.FloatRange(0.2, 3600),
              help="Seconds between refreshes.")
@click.option("--once", is_flag=True, default=False, help="Print the overview once and exit.")
def top(url, interval, once) -> None:
    """The console's overview in the terminal: replicas with status and utilization,
    running and recent statements (from the mz_internal relations), refreshed."""
    import time

    import psycopg

    from pgconn import redact_url
    from sqlfront.top import TOP_APP, render

    try:
        conn = psycopg.connect(url, autocommit=True, application_name=TOP_APP)
    except psycopg.Error as e:
        raise click.ClickException(f"cannot connect to {redact_url(url)}: {e}")
    with conn:
        while True:
            text = render(conn)
            if once:
                click.echo(text)
                return
            click.clear()
            click.echo(text)
            time.sleep(interval)


@main.group("spark-cluster")
def spark_cluster() -> None:
    """A Spark standalone cluster from the installed pyspark, for replicas whose executors
    run on its workers (a size with "master": "spark://HOST:PORT")."""


@spark_cluster.command("up")
@click.option("--dir", "directory", default="spark-cluster", show_default=True, type=click.Path(file_okay=False),
              help="Where the cluster's logs, pid files and secret are kept.")
@click.option("--listen", default="127.0.0.1:7077", show_default=True,
              help="The master's address (HOST:PORT); the workers bind to the same host.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1), help="Worker processes.")
@click.option("--cores", default=1, show_default=True, type=click.IntRange(1), help="Cores each worker offers.")
@click.option("--memory", default="1g", show_default=True,
              help="Memory each worker offers its executors (Spark's notation: 512m, 2g).")
def spark_cluster_up(directory, listen, workers, cores, memory) -> None:
    """Start a master and WORKERS workers; prints the size entry that runs replicas on them."""
    import json

    from spark_exec.standalone import ClusterError, up

    host, port = parse_listen(listen)
    try:
        url = up(Path(directory), host, port, workers, cores, memory, echo=click.echo)
    except ClusterError as e:
        raise click.ClickException(str(e))
    secret = str((Path(directory) / "secret").resolve())
    size = {"master": url, "executors": workers, "cores": cores, "memory": memory, "secret_file": secret}
    click.echo(f"cluster up: {url}; a size for it: --cluster-replica-sizes '{json.dumps({'sa': size})}'")


@spark_cluster.command("worker")
@click.option("--dir", "directory", default="spark-worker", show_default=True, type=click.Path(file_okay=False),
              help="Where this host's worker keeps its log, pid file and scratch space.")
@click.option("--master", "master_url", required=True, help="The master's URL (spark://HOST:PORT).")
@click.option("--properties", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The cluster's spark.properties (from spark-cluster up's --dir; it holds the secret).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address of this host the worker binds to and the master and drivers reach it at.")
@click.option("--cores", default=1, show_default=True, type=click.IntRange(1), help="Cores it offers.")
@click.option("--memory", default="1g", show_default=True, help="Memory it offers its executors (512m, 2g).")
def spark_cluster_worker(directory, master_url, properties, host, cores, memory) -> None:
    """Start one more worker, on this host, for a cluster started elsewhere with spark-cluster up;
    stop it with spark-cluster down --dir DIR."""
    from spark_exec.standalone import ClusterError, join

    try:
        n = join(Path(directory), master_url, Path(properties), host, cores, memory)
    except ClusterError as e:
        raise click.ClickException(str(e))
    click.echo(f"worker-{n} on {host} registered with {master_url} ({cores} core(s), {memory})")


@spark_cluster.command("down")
@click.option("--dir", "directory", default="spark-cluster", show_default=True, type=click.Path(file_okay=False),
              help="The directory given to spark-cluster up.")
def spark_cluster_down(directory) -> None:
    """Stop the master and workers started with spark-cluster up."""
    from spark_exec.standalone import down

    click.echo(f"stopped {down(Path(directory))} process(es)")


@main.command("load-tpch")
@click.option("--scale", default=0.1, show_default=True, type=float, help="TPC-H scale factor.")
@click.option("--url", default="postgresql://materialize@127.0.0.1:6875/materialize", show_default=True,
              help="Server to load into (it must be running).")
@click.option("--data", "data_root", default="tpch-data", show_default=True, type=click.Path(file_okay=False),
              help="Where generated Parquet files are kept (reused if present).")
def load_tpch(scale, url, data_root) -> None:
    """Generate TPC-H data (tpchgen-cli) and load the eight tables with COPY ... (FORMAT PARQUET)."""
    import psycopg

    from sqlfront.tpch import generate, load

    d = generate(scale, Path(data_root), echo=click.echo)
    try:
        load(url, d, echo=click.echo)
    except psycopg.errors.InsufficientPrivilege:
        raise click.ClickException(
            f"the server may not read {d.resolve()}: start it with --copy-from-dir {Path(data_root).resolve()} "
            "(make serve does)")


def _server_tls(cert: str | None, key: str | None):
    """The ``ssl`` server context of ``--tls-cert``/``--tls-key``, None without them.

    Raises:
        click.UsageError for one without the other; click.ClickException when they do not load."""
    if not (cert or key):
        return None
    import ssl

    from sqlfront.tls import server_context

    if not (cert and key):
        raise click.UsageError("--tls-cert and --tls-key go together")
    try:
        return server_context(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise click.ClickException(f"cannot load --tls-cert/--tls-key: {e}") from None


def _check_postgres_urls(consensus_url: str | None, oracle_url: str | None, catalog_url: str | None) -> None:
    """Raises click.BadParameter naming the flag whose URL is not ``postgres://``."""
    from pgconn import is_postgres_url, redact_url

    for flag, url in (("--persist-consensus-url", consensus_url), ("--timestamp-oracle-url", oracle_url),
                      ("--catalog-url", catalog_url)):
        if url and not is_postgres_url(url):
            raise click.BadParameter(f"expected a postgres:// URL, got {redact_url(url)!r}", param_hint=flag)


def _unreachable_postgres(e: Exception):
    """Re-raise ``e``, as a click error when it says a shared store's PostgreSQL is unreachable."""
    import psycopg

    if not isinstance(e, psycopg.OperationalError):
        raise e
    # libpq's message names host and port, never the password
    raise click.ClickException(f"cannot reach the PostgreSQL of --catalog-url, --persist-consensus-url or "
                               f"--timestamp-oracle-url: {e}")


@main.command("persist-write")
@click.option("--data-dir", default="mzdata", show_default=True, type=click.Path(file_okay=False),
              help="The data directory of the server whose table to write (with --catalog-url: only where a "
                   "running server's PubSub address is looked for first).")
@click.option("--table", "table_name", required=True, help="The table to append to (NAME or SCHEMA.NAME).")
@click.option("--format", "fmt", default="text", show_default=True, type=click.Choice(["text", "csv"]),
              help="Input format, as COPY FROM STDIN takes it.")
@click.option("--rows-per-commit", default=0, show_default=True, type=click.IntRange(0),
              help="Commit every N input rows as they arrive (0: one commit at the end of the input).")
@click.option("--pubsub", default="auto", show_default=True,
              help="Persist PubSub address to push commits to: HOST:PORT, 'auto' (the running server's, from "
                   "DATA_DIR/persist_pubsub, else a live environmentd's from the shared store) or 'off'.")
@click.option("--catalog-url", default=None, envvar="SQLFRONT_CATALOG_URL",
              help="The shared catalog, as serve's (postgres://...; default: DATA_DIR/catalog.db).")
@click.option("--persist-consensus-url", default=None, envvar="SQLFRONT_PERSIST_CONSENSUS_URL",
              help="The shared persist Consensus, as serve's (postgres://...; default: DATA_DIR/consensus.db).")
@click.option("--timestamp-oracle-url", default=None, envvar="SQLFRONT_TIMESTAMP_ORACLE_URL",
              help="The shared timestamp oracle, as serve's (postgres://...; default: in DATA_DIR/catalog.db).")
@click.option("--persist-blob-url", default=None,
              help="The shared persist Blob directory, as serve's (default: DATA_DIR/blob).")
@click.argument("source", type=click.File("rb"), default="-")
def persist_write(data_dir, table_name, fmt, rows_per_commit, pubsub, catalog_url, persist_consensus_url,
                  timestamp_oracle_url, persist_blob_url, source) -> None:
    """Append rows from SOURCE (default: stdin) to a table's persist shard from this
    process, by compare-and-append, while the server runs (see sqlfront.persist_write for
    the timestamps). Prints one JSON line per commit: {"ts", "rows", "committed_at"}."""
    import json

    from catalog.errors import SqlError
    from sqlfront.copy import parse_copy
    from sqlfront.persist_write import StandaloneWriter

    _check_postgres_urls(persist_consensus_url, timestamp_oracle_url, catalog_url)
    try:
        writer = StandaloneWriter(Path(data_dir), pubsub, catalog_url=catalog_url,
                                  consensus_url=persist_consensus_url, oracle_url=timestamp_oracle_url,
                                  blob_url=persist_blob_url)
        table = writer.table(table_name)
    except (FileNotFoundError, SqlError) as e:
        raise click.ClickException(str(e))
    except Exception as e:
        _unreachable_postgres(e)
    pending: list[bytes] = []

    def commit() -> None:
        try:
            rows = parse_copy(table, b"".join(pending), fmt, None, None, False)
        except SqlError as e:
            raise click.ClickException(e.message)
        pending.clear()
        c = writer.append(table, rows)
        click.echo(json.dumps({"ts": c.ts, "rows": c.rows, "committed_at": c.committed_at}))
        sys.stdout.flush()

    try:
        while line := source.readline():
            pending.append(line)
            if rows_per_commit and len(pending) >= rows_per_commit:
                commit()
        if pending or not rows_per_commit:
            commit()
    finally:
        writer.close()


if __name__ == "__main__":
    sys.exit(main())
