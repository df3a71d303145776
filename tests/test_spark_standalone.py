"""Replicas on a Spark standalone cluster (issue 27): ``sqlfront spark-cluster up|down``
starts a master and a worker from the installed pyspark; a size naming the master runs a
replica's driver here and its executor on the worker. A replica whose executors cannot read
persist Blob fails with a clear status reason and peek error, not "Path does not exist" later.

One small cluster (1 worker, 1 core, 512 MiB): the machine is shared."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import psycopg
import pytest
from server import ROOT, Server, free_port, wait_for


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sqlfront.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    d = tmp_path_factory.mktemp("spark-cluster")
    # the master and worker on 127.0.0.3, the driver on 127.0.0.2: every process is dialed at
    # the address it was given, none at an assumed 127.0.0.1
    url = f"spark://127.0.0.3:{free_port()}"
    up = _cli("spark-cluster", "up", "--dir", str(d), "--listen", url.removeprefix("spark://"), "--workers", "1",
              "--cores", "1", "--memory", "512m")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "worker-1 registered" in up.stdout
    yield d, url
    down = _cli("spark-cluster", "down", "--dir", str(d))
    assert down.returncode == 0, down.stderr


@pytest.fixture(scope="module")
def sa_server(standalone, tmp_path_factory):
    d, url = standalone
    sizes = {"sa": {"master": url, "executors": 1, "cores": 1, "memory": "512m", "memory_limit": "1GiB",
                    "secret_file": str(d / "secret"), "driver_host": "127.0.0.2"}}
    # quickstart's r1 is the standalone replica: no local replica JVM next to it
    s = Server(tmp_path_factory.mktemp("env") / "mzdata", "--cluster-replica-sizes", json.dumps(sizes),
               "--bootstrap-replica-size", "sa").start()
    yield s
    s.stop()


def test_a_worker_on_another_address_joins_the_cluster_and_leaves_with_down(standalone, tmp_path):
    """``spark-cluster worker``: one more worker (another host's, here 127.0.0.4) for the
    master, authenticated with the cluster's properties; ``down`` on its directory stops it."""
    d, url = standalone
    out = _cli("spark-cluster", "worker", "--dir", str(tmp_path / "w"), "--master", url, "--properties",
               str(d / "spark.properties"), "--host", "127.0.0.4", "--memory", "512m")
    try:
        assert out.returncode == 0 and "worker-1 on 127.0.0.4 registered" in out.stdout, out.stdout + out.stderr
        assert b"Registering worker 127.0.0.4:" in (d / "master.log").read_bytes()
    finally:
        down = _cli("spark-cluster", "down", "--dir", str(tmp_path / "w"))
    assert "stopped 1 process(es)" in down.stdout


def test_spark_cluster_up_refuses_a_second_cluster_in_its_directory(standalone):
    d, _ = standalone
    again = _cli("spark-cluster", "up", "--dir", str(d), "--listen", f"127.0.0.1:{free_port()}")
    assert again.returncode != 0 and "is running" in again.stderr


def test_query_runs_with_its_executor_on_the_standalone_worker(standalone, sa_server):
    d, _ = standalone
    with sa_server.connect() as c:
        c.execute("CREATE TABLE t (a int, b text)")
        c.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'x')")
        assert c.execute("SELECT b, sum(a) FROM t GROUP BY b ORDER BY b").fetchall() == [("x", 4), ("y", 2)]
        assert c.execute("SELECT size, status FROM mz_cluster_replicas").fetchall() == [("sa", "healthy")]
    # the executor was launched by the worker (its log and its work directory), not in the driver
    assert b"Asked to launch executor app-" in (d / "worker-1.log").read_bytes()
    assert list((d / "work-1").glob("app-*/*/stderr"))


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root for a mount namespace")
def test_replica_whose_executors_cannot_read_blob_fails_with_a_clear_message(standalone, sa_server):
    """The worker is replaced by one in a mount namespace whose Blob directory is an empty
    tmpfs: a host that does not mount the Blob. A new replica's probe part is then listed by
    its driver but unreadable on its executor."""
    from spark_exec.standalone import start_worker, wait_registered

    d, url = standalone
    with sa_server.connect() as c:
        c.execute("CREATE TABLE u (a int)")
        c.execute("ALTER CLUSTER quickstart SET (MANAGED = false)")
        c.execute("DROP CLUSTER REPLICA quickstart.r1")
        os.killpg(int((d / "worker-1.pid").read_text()), signal.SIGTERM)
        blob = sa_server.data_dir.resolve() / "blob"
        hide = ("unshare", "--mount", "--propagation", "private",
                "sh", "-c", 'mount -t tmpfs sqlfront-test "$0" && exec "$@"', str(blob))
        w = start_worker(d, 2, url, "127.0.0.3", 1, "512m", wrap=hide)
        wait_registered(d, 2, w)
        c.execute("CREATE CLUSTER REPLICA quickstart.r2 SIZE 'sa'")
        reason = wait_for(lambda: c.execute(
            "SELECT s.reason FROM mz_internal.mz_cluster_replica_statuses s JOIN mz_cluster_replicas r "
            "ON r.id = s.replica_id WHERE r.name = 'r2' AND s.reason IS NOT NULL").fetchone(), timeout=240)
        assert reason, "no status reason for a replica that cannot read Blob"
        assert "cannot read persist Blob" in reason[0] and str(blob) in reason[0], reason[0]
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as e:
            c.execute("SELECT count(*) FROM u")
        assert "every one failed" in str(e.value) and "cannot read persist Blob" in e.value.diag.message_detail
