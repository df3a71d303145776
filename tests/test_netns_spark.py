"""A Spark standalone cluster across hosts (issue 27), as network namespaces joined by a
bridge: environmentd (with its replica's driver) in one, the master and a first worker in
another, a second worker in a third. A replica of a size naming that master runs its two
1-core executors one on each worker, answers a join and aggregate right, and answers it
right again when the second worker's host dies (SIGKILL of its process group: worker and
executor) once the query runs a task there: Spark re-runs the lost work on the executor left.

Needs root (``ip netns``); skipped otherwise. Blob is the data directory's, on the one
filesystem every namespace sees (a shared mount between hosts)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from netns import bridged_namespaces
from netns import netns_works as _netns_works
from server import ROOT, Server, free_port, wait_for

pytestmark = pytest.mark.slow

ROWS = 200_000
QUERY = ("SELECT t.k, count(*), sum(t.v * d.w) FROM t JOIN d ON d.k = t.k "
         "GROUP BY t.k ORDER BY t.k")


def expected() -> list[tuple]:
    """QUERY's answer, computed here: t holds (g % 10, g) for g in 1..ROWS, d (k, k + 1)."""
    out = {}
    for g in range(1, ROWS + 1):
        n, s = out.get(g % 10, (0, 0))
        out[g % 10] = (n + 1, s + g * (g % 10 + 1))
    return [(k, n, s) for k, (n, s) in sorted(out.items())]


@pytest.fixture(scope="module")
def namespaces():
    """Namespaces env (10.28.N.2), master (.3) and worker (.4) on a bridge."""
    if not _netns_works():
        pytest.skip("needs root and ip netns")
    with bridged_namespaces(("env", "master", "worker"), octet=28) as (prefix, names, _):
        yield prefix, names


def _cli(ns: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "sqlfront.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def spread(namespaces, tmp_path_factory):
    """The master and worker 1 in the master's namespace, worker 2 in the worker's, and
    environmentd in its own with the standalone size as quickstart's replica size."""
    prefix, ns = namespaces
    d = tmp_path_factory.mktemp("netns-spark")
    master_dir, worker_dir = d / "sc", d / "w"
    url = f"spark://{prefix}.3:{free_port()}"
    started = []
    srv = None
    try:
        up = _cli(ns["master"], "spark-cluster", "up", "--dir", str(master_dir), "--listen",
                  url.removeprefix("spark://"), "--workers", "1", "--cores", "1", "--memory", "512m")
        started.append((ns["master"], master_dir))
        assert up.returncode == 0, up.stdout + up.stderr
        w = _cli(ns["worker"], "spark-cluster", "worker", "--dir", str(worker_dir), "--master", url,
                 "--properties", str(master_dir / "spark.properties"), "--host", f"{prefix}.4", "--memory", "512m")
        started.append((ns["worker"], worker_dir))
        assert w.returncode == 0, w.stdout + w.stderr
        sizes = {"sa": {"master": url, "executors": 2, "cores": 1, "memory": "512m", "memory_limit": "1GiB",
                        "secret_file": str(master_dir / "secret"), "driver_host": f"{prefix}.2"}}
        (d / "pw").write_text("spark-pw\n")
        (d / "env").mkdir()
        srv = Server(d / "env" / "mzdata", "--cluster-replica-sizes", json.dumps(sizes),
                     "--bootstrap-replica-size", "sa", "--password-file", str(d / "pw"), password="spark-pw",
                     host=f"{prefix}.2", prefix=("ip", "netns", "exec", ns["env"])).start(timeout=300)
        yield srv, master_dir, worker_dir, prefix
    finally:
        if srv is not None:
            srv.stop()
        for n, directory in started:
            _cli(n, "spark-cluster", "down", "--dir", str(directory))


def test_a_replica_runs_its_executors_on_workers_in_other_namespaces_and_survives_losing_one(spread):
    srv, master_dir, worker_dir, prefix = spread
    with srv.connect() as c:
        c.execute("CREATE TABLE t (k int, v bigint)")
        c.execute("CREATE TABLE d (k int, w bigint)")
        c.execute(f"INSERT INTO t SELECT g % 10, g FROM generate_series(1, {ROWS}) AS g")
        c.execute("INSERT INTO d SELECT k, k + 1 FROM generate_series(0, 9) AS k")
        want = expected()
        assert c.execute(QUERY).fetchall() == want
    # one executor on each worker: each was asked to launch one, at its own address
    assert b"Asked to launch executor app-" in (master_dir / "worker-1.log").read_bytes()
    assert b"Asked to launch executor app-" in (worker_dir / "worker-1.log").read_bytes()
    assert f"Registering worker {prefix}.4:".encode() in (master_dir / "master.log").read_bytes()

    answer: dict = {}

    def run():
        with srv.connect() as c2:
            answer["rows"] = c2.execute(QUERY).fetchall()

    # the executor on the second worker logs each task it starts
    def tasks_started() -> int:
        return sum(p.read_bytes().count(b"Running task") for p in (worker_dir / "work-1").glob("app-*/*/stderr"))

    before = tasks_started()
    q = threading.Thread(target=run)
    q.start()
    # the second worker's host dies once the query runs a task there: worker and executor at once
    assert wait_for(lambda: tasks_started() > before, 120, 0.02), "the query ran no task on the second worker"
    os.killpg(int((worker_dir / "worker-1.pid").read_text()), signal.SIGKILL)
    q.join(timeout=300)
    assert not q.is_alive(), "the query did not finish after a worker died"
    assert answer.get("rows") == want
    # the driver saw the executor on the dead host go (Spark's TaskSchedulerImpl)
    lost = b"Lost executor", f"on {prefix}.4".encode()
    logs = list(srv.data_dir.glob("replicas/*/replica.log"))
    assert wait_for(lambda: any(all(m in line for m in lost) for p in logs for line in p.read_bytes().splitlines()),
                    60), "the replica's driver never noticed the dead worker's executor"
    with srv.connect() as c:  # and the replica goes on answering on the worker left
        assert c.execute(QUERY).fetchall() == want
