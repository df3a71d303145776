"""Several hosts, as network namespaces joined by a bridge (issue 27): environmentd A and B,
the balancer, the Spark master (with a first worker: ``spark-cluster up`` starts at least
one) and a second worker each in a namespace of its own, PostgreSQL on the bridge's
address, Blob in one directory all of them see. A's cluster ``quickstart`` has a local
replica; B's cluster ``cb`` a replica of a size naming that master, its driver on B and
an executor on each worker.

Through the balancer with sslmode=require (TLS on the client's hop and on the hop to
environmentd): DDL through A is seen by B, a write through A is read on B's replica, and a
SUBSCRIBE in B sees a write through A by a PubSub push across the namespaces (TLS), not by
polling. Spark's RPC between the hosts is encrypted. TPC-H at scale 0.1, loaded through A, answers all 22 queries on B's replica as
PostgreSQL does, with executors on both worker hosts (the replica's Spark executor list);
a TPC-H query answers right when the second worker's host dies under it (SIGKILL of its
process group: worker and executor). Last, A's link is cut: its cluster moves to B with
every acknowledged write (the seconds it took are printed).

Needs root (``ip netns``); skipped otherwise."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from conftest import new_database
from netns import bridged_namespaces
from netns import ip as _ip
from netns import netns_works as _netns_works
from server import (
    ROOT,
    Balancer,
    Server,
    fetch_until,
    free_port,
    replica_jvms,
    self_signed,
    start_owner_pair,
    wait_for,
)
from test_tpch import QUERY_DIR, same

from spark_exec.orchestrator import spark_ui_url
from sqlfront import tpch

pytestmark = pytest.mark.slow

CLEAN = 'persist_pubsub_received_total{applied="clean"}'
HOSTS = ("a", "b", "lb", "master", "worker")  # at 10.27.N.2, .3, ... in this order
SCALE = 0.1


@pytest.fixture(scope="module")
def hosts():
    """A namespace per name of HOSTS on a bridge (``bridged_namespaces``)."""
    if not _netns_works():
        pytest.skip("needs root and ip netns")
    with bridged_namespaces(HOSTS) as net:
        yield net


def _address(prefix: str, host: str) -> str:
    return f"{prefix}.{HOSTS.index(host) + 2}"


def _cli(ns: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "sqlfront.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def spark(hosts, tmp_path_factory):
    """The standalone master and worker 1 in namespace master, worker 2 in namespace
    worker, each of one core and 1g. Yields (master URL, master's dir, worker 2's dir)."""
    prefix, ns, _ = hosts
    d = tmp_path_factory.mktemp("netns-spark")
    master_dir, worker_dir = d / "sc", d / "w"
    url = f"spark://{_address(prefix, 'master')}:{free_port()}"
    started = []
    try:
        up = _cli(ns["master"], "spark-cluster", "up", "--dir", str(master_dir), "--listen",
                  url.removeprefix("spark://"), "--workers", "1", "--cores", "1", "--memory", "1g")
        started.append((ns["master"], master_dir))
        assert up.returncode == 0, up.stdout + up.stderr
        w = _cli(ns["worker"], "spark-cluster", "worker", "--dir", str(worker_dir), "--master", url,
                 "--properties", str(master_dir / "spark.properties"), "--host", _address(prefix, "worker"),
                 "--memory", "1g")
        started.append((ns["worker"], worker_dir))
        assert w.returncode == 0, w.stdout + w.stderr
        yield url, master_dir, worker_dir
    finally:
        for n, directory in started:
            _cli(n, "spark-cluster", "down", "--dir", str(directory))


@pytest.fixture(scope="module")
def tpch_data():
    """TPC-H at SCALE (tpchgen-cli), kept in tpch-data/ for the next run, as bench/tpch.py."""
    return tpch.generate(SCALE, ROOT / "tpch-data", echo=lambda s: None).resolve()


@pytest.fixture(scope="module")
def cluster(hosts, spark, tpch_data, tmp_path_factory):
    from pg_reference import PostgresReference

    prefix, ns, _ = hosts
    master_url, master_dir, _ = spark
    d = tmp_path_factory.mktemp("netns")
    cert, key = self_signed(d, tuple([f"{prefix}.1"] + [_address(prefix, h) for h in ("a", "b", "lb")]))
    (d / "pw").write_text("netns-pw\n")
    pg = PostgresReference(host=f"{prefix}.1", trust_network=f"{prefix}.0/24")
    envds: dict[str, Server] = {}
    balancer = None
    try:
        pg.start()
        url = new_database(pg)
        shared = ("--catalog-url", url, "--persist-consensus-url", url, "--timestamp-oracle-url", url,
                  "--persist-blob-url", str(d / "blob"), "--catalog-key-file", str(d / "catalog.key"),
                  "--password-file", str(d / "pw"), "--tls-cert", cert, "--tls-key", key, "--tls-mode", "require",
                  "--copy-from-dir", str(tpch_data), "--bootstrap-replica-size", "1")
        # B takes over A's clusters when A's lease expires (a cut link, below)
        for h, clusters in (("a", ("--clusters", "quickstart")), ("b", ("--clusters", "cb", "--takeover"))):
            (d / h).mkdir()
            metrics = free_port()
            addr = _address(prefix, h)
            # a size per host: its driver_host is this host's address, which the executors dial
            sizes = {"1": {"workers": 1},
                     "sa": {"master": master_url, "executors": 2, "cores": 1, "memory": "1g",
                            "memory_limit": "1GiB", "secret_file": str(master_dir / "secret"), "driver_host": addr}}
            s = Server(d / h / "mzdata", *shared, *clusters, "--cluster-replica-sizes", json.dumps(sizes),
                       "--persist-pubsub-listen", f"{addr}:{free_port()}",
                       "--metrics-listen", f"127.0.0.1:{metrics}", password="netns-pw", host=addr,
                       prefix=("ip", "netns", "exec", ns[h]), sslmode="require")
            s.metrics = (ns[h], metrics)  # its metrics listen on its own namespace's loopback
            envds[h] = s
        a, b = envds["a"], envds["b"]
        start_owner_pair(a, b, size="sa")  # cb's replica: its executors on the two workers
        balancer = Balancer(d / "balancer.log", None, "--catalog-url", url, "--tls-cert", cert, "--tls-key", key,
                            "--tls-mode", "require", "--backend-tls-ca", cert, host=_address(prefix, "lb"),
                            prefix=("ip", "netns", "exec", ns["lb"]))
        for s in (a, b):
            with s.connect() as c:
                assert wait_for(lambda: {r[0] for r in c.execute("SELECT status FROM mz_cluster_replicas "
                                                                 "WHERE cluster_id IN (SELECT id FROM mz_clusters "
                                                                 "WHERE environmentd IS NOT NULL)")}
                                == {"healthy"}, 300, 0.5)
        yield balancer, a, b, prefix, pg
    finally:
        if balancer is not None:
            balancer.stop()
        for s in envds.values():
            s.stop()
        pg.stop()


def _http(ns: str, url: str) -> str:
    """GET ``url`` from inside namespace ``ns`` (a listener on its own loopback)."""
    code = "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=60).read().decode())"
    done = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code, url],
                          check=False, capture_output=True, text=True)
    assert done.returncode == 0, f"GET {url} in {ns}: {done.stderr[-2000:]}"
    return done.stdout


def _metric(server: Server, name: str) -> float:
    ns, port = server.metrics
    text = _http(ns, f"http://127.0.0.1:{port}/metrics")
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def _connect(balancer: Balancer, cluster: str) -> psycopg.Connection:
    return balancer.connect(cluster, sslmode="require", password="netns-pw")


def test_clusters_are_owned_by_the_address_each_process_registered(cluster):
    balancer, a, b, prefix, _ = cluster
    with _connect(balancer, "quickstart") as c:
        assert c.pgconn.ssl_in_use
        owners = dict(c.execute("SELECT name, environmentd FROM mz_clusters WHERE name IN ('quickstart', 'cb')"))
    assert owners == {"quickstart": f"{prefix}.2:{a.port}", "cb": f"{prefix}.3:{b.port}"}


def test_ddl_and_writes_through_a_are_read_on_b(cluster):
    balancer = cluster[0]
    with _connect(balancer, "quickstart") as ca, _connect(balancer, "cb") as cb:
        ca.execute("CREATE TABLE across (id int, note text)")
        ca.execute("INSERT INTO across VALUES (1, 'from a'), (2, 'from a')")
        assert wait_for(lambda: cb.execute("SELECT count(*) FROM mz_tables WHERE name = 'across'").fetchone()[0], 30)
        assert cb.execute("SELECT id, note FROM across ORDER BY id").fetchall() == [(1, "from a"), (2, "from a")]


def test_a_subscribe_in_b_sees_a_write_through_a_by_a_push(cluster):
    balancer, _, b, _, _ = cluster
    with _connect(balancer, "quickstart") as ca, _connect(balancer, "cb") as cb:
        ca.execute("CREATE TABLE pushed (x int)")
        assert wait_for(lambda: cb.execute("SELECT count(*) FROM mz_tables WHERE name = 'pushed'").fetchone()[0], 30)
        cb.execute("SELECT count(*) FROM pushed")  # B reads the shard: it follows it by PubSub
        cb.execute("BEGIN")
        cb.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT x FROM pushed) WITH (PROGRESS)")
        assert fetch_until(cb, "c", 0) == []
        before = _metric(b, CLEAN)
        # B's own reads race the push (a state B already read counts as unclean): a few
        # writes, and at least one must arrive by push across the namespaces
        for i in range(5):
            ca.execute("INSERT INTO pushed VALUES (%s)", (i,))
            assert [r[3] for r in fetch_until(cb, "c", 1, timeout=60)] == [i]
            if wait_for(lambda: _metric(b, CLEAN) > before, 2, 0.2):
                break
        assert _metric(b, CLEAN) > before, "no PubSub push from A reached B"
        cb.execute("ROLLBACK")


def test_spark_rpc_between_hosts_is_encrypted(cluster, spark):
    """The master and workers read the cluster's spark.properties, and each executor of
    cb's replica was launched with its driver's settings: Spark's RPC encryption on, its
    unencrypted SASL fallback off (``spark_auth_properties``)."""
    _, master_dir, worker_dir = spark
    wanted = ("spark.network.crypto.enabled=true", "spark.network.crypto.saslFallback=false")
    assert set(wanted) <= set((master_dir / "spark.properties").read_text().splitlines())
    for work in (master_dir / "work-1", worker_dir / "work-1"):
        launches = [p.read_text(errors="replace").partition("\n")[0] for p in work.glob("app-*/*/stderr")]
        assert launches and all("Spark Executor Command:" in c and all(f"-D{w}" in c for w in wanted)
                                for c in launches), launches


@pytest.fixture(scope="module")
def loaded(cluster, tpch_data):
    """TPC-H loaded through A (COPY of the shared files), seen by B; and the same files in
    a database of the PostgreSQL (keys, indexes: ../shared/tpch/TIMES.md), whose answers
    are the reference. Yields a connection to that database."""
    balancer, _, _, _, pg = cluster
    with _connect(balancer, "quickstart") as ca, _connect(balancer, "cb") as cb:
        tpch.load("", tpch_data, echo=lambda s: None, conn=ca)
        assert wait_for(lambda: cb.execute("SELECT count(*) FROM mz_tables WHERE name = ANY(%s)",
                                           (list(tpch.TABLES),)).fetchone()[0] == len(tpch.TABLES), 60)
    with psycopg.connect(new_database(pg), autocommit=True) as ref:
        tpch.load_postgres(ref, tpch_data)
        yield ref


def _answers_match(ours: list, theirs: list, ordered: bool) -> bool:
    if not ordered:
        ours, theirs = sorted(ours, key=repr), sorted(theirs, key=repr)
    try:
        same(ours, theirs)
    except AssertionError:
        return False
    return True


def _executor_hosts(b: Server, cb: psycopg.Connection) -> set[str]:
    """The hosts of the live executors of cb's replica, from its Spark UI's REST API
    (``/api/v1/applications/<app>/executors``), asked inside B's namespace."""
    rid = cb.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id "
                     "WHERE c.name = 'cb'").fetchone()[0]
    ui = spark_ui_url(b.data_dir / "replicas" / rid / "replica.log")
    assert ui, "cb's replica logged no Spark UI address"
    ns = b.metrics[0]
    app = json.loads(_http(ns, ui + "/api/v1/applications"))[0]["id"]
    executors = json.loads(_http(ns, f"{ui}/api/v1/applications/{app}/executors"))
    return {e["hostPort"].rsplit(":", 1)[0] for e in executors if e["id"] != "driver"}


@pytest.mark.skipif(not QUERY_DIR.exists(), reason="the TPC-H queries live in ../shared/tpch")
def test_tpch_loaded_through_a_answers_right_on_b_with_executors_on_both_workers(cluster, loaded):
    balancer, _, b, prefix, _ = cluster
    wrong = []
    with _connect(balancer, "cb") as cb:
        assert _executor_hosts(b, cb) == {_address(prefix, "master"), _address(prefix, "worker")}
        cb.execute("SET statement_timeout = '300s'")
        start = time.monotonic()
        for q in range(1, 23):
            sql = (QUERY_DIR / f"q{q:02d}.sql").read_text()
            ours = cb.execute(sql).fetchall()
            if not _answers_match(ours, loaded.execute(sql).fetchall(), "order by" in sql.lower()):
                wrong.append(q)
        print(f"\nTPC-H {SCALE:g}: {22 - len(wrong)}/22 as PostgreSQL on cb, {time.monotonic() - start:.0f} s")
        assert wrong == [], f"TPC-H queries answered unlike PostgreSQL: {wrong}"


def test_a_worker_killed_during_a_query_leaves_it_answered_right(cluster, spark, loaded):
    """Worker 2's host dies (its process group: worker and executor) once the query runs a
    task there: Spark re-runs the lost tasks (and the map outputs lost with them) on the
    executor left, and the answer is PostgreSQL's."""
    balancer, _, b, prefix, _ = cluster
    _, _, worker_dir = spark
    want = loaded.execute(tpch.Q1).fetchall()
    answer: dict = {}

    def run():
        with _connect(balancer, "cb") as c:
            answer["rows"] = c.execute(tpch.Q1).fetchall()

    # the executor on the second worker logs each task it starts
    def tasks_started() -> int:
        return sum(p.read_bytes().count(b"Running task") for p in (worker_dir / "work-1").glob("app-*/*/stderr"))

    before = tasks_started()
    q = threading.Thread(target=run)
    q.start()
    assert wait_for(lambda: tasks_started() > before, 120, 0.02), "the query ran no task on the second worker"
    os.killpg(int((worker_dir / "worker-1.pid").read_text()), signal.SIGKILL)
    q.join(timeout=300)
    assert not q.is_alive(), "the query did not finish after a worker died"
    assert _answers_match(answer.get("rows", []), want, ordered=True)
    # the driver saw the executor on the dead host go (Spark's TaskSchedulerImpl)
    lost = b"Lost executor", f"on {_address(prefix, 'worker')}".encode()
    logs = list(Path(b.data_dir).glob("replicas/*/replica.log"))
    assert wait_for(lambda: any(all(m in line for m in lost) for p in logs for line in p.read_bytes().splitlines()),
                    60), "the replica's driver never noticed the dead worker's executor"
    with _connect(balancer, "cb") as c:  # and the replica goes on answering on the worker left
        assert _answers_match(c.execute(tpch.Q1).fetchall(), want, ordered=True)


def test_cutting_as_link_moves_its_clusters_to_b_with_no_acknowledged_write_lost(cluster, hosts):
    """``ip link set down`` on A's link: A can no longer renew its lease and steps down, B
    takes quickstart over when the lease expires (10 s) and starts its replica, and the
    balancer sends quickstart's sessions to B, where every write A acknowledged is read.
    Prints how long the lease's move and the first answer on B took. Runs last: A stays
    cut off."""
    balancer, a, b, prefix, _ = cluster
    _, ns, links = hosts
    acked = []
    with _connect(balancer, "quickstart") as ca:
        ca.execute("CREATE TABLE kept (i int)")
        for i in range(20):
            ca.execute("INSERT INTO kept VALUES (%s)", (i,))
            acked.append(i)  # acknowledged: it must survive the cut
    cut = time.monotonic()
    _ip("-n", ns["a"], "link", "set", links["a"], "down")

    def answered_by_b() -> bool:
        try:
            with _connect(balancer, "quickstart") as c:
                owner = c.execute("SELECT environmentd FROM mz_clusters WHERE name = 'quickstart'").fetchone()[0]
                return owner == f"{prefix}.3:{b.port}" and [r[0] for r in c.execute(
                    "SELECT i FROM kept ORDER BY i")] == acked
        except psycopg.Error:
            return False

    def owned_by_b() -> bool:  # B's catalog: the lease moved, B's replica may still be starting
        try:
            with _connect(balancer, "cb") as c:
                return c.execute("SELECT environmentd FROM mz_clusters WHERE name = 'quickstart'"
                                 ).fetchone()[0] == f"{prefix}.3:{b.port}"
        except psycopg.Error:
            return False

    try:
        assert wait_for(owned_by_b, 240, 0.5), "B never took quickstart's lease"
        moved = time.monotonic() - cut
        assert wait_for(answered_by_b, 240, 1.0), "quickstart did not move to B with every acknowledged write"
        print(f"\nquickstart's lease on B {moved:.1f} s after A's link went down (lease 10 s), "
              f"answered by B {time.monotonic() - cut:.1f} s after")
    finally:
        # cut off, A cannot deregister: SIGTERM would wait out its timeouts
        a.stop(signal.SIGKILL)
        for pid in replica_jvms(a.data_dir):  # none once A stepped down; a parent-death signal otherwise
            os.kill(pid, signal.SIGKILL)
