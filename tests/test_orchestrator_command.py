"""The replica command line the orchestrator builds (no process is started here)."""

from __future__ import annotations

from pathlib import Path

from spark_exec.orchestrator import PROFILE_UI_ENV, SCRATCH_RECORD, Orchestrator, ReplicaSpec


def _conf(tmp_path) -> dict[str, str]:
    orch = Orchestrator(tmp_path, instance="t", scratch_dir=tmp_path / "scratch")
    return _conf_of(orch.command(ReplicaSpec("u1", "c.r1", workers=2), 1234, tmp_path))


def _conf_of(cmd: list[str]) -> dict[str, str]:
    return dict(cmd[i + 1].split("=", 1) for i, a in enumerate(cmd) if a == "--conf")


def test_a_replicas_scratch_space_is_off_the_data_directory_and_removed(tmp_path):
    """Issue 28: shuffle and spill files go to a private directory under --scratch-dir,
    not the data directory (a full data directory must not fail reads); it is removed
    at shutdown (``close``), or by the next start after a crash (``reap_orphans``)."""
    data, parent = tmp_path / "data", tmp_path / "scratch"
    orch = Orchestrator(data, instance="t", scratch_dir=parent)
    local = Path(_conf_of(orch.command(ReplicaSpec("u1", "c.r1", workers=1), 1234, data))["spark.local.dir"])
    root = local.parent
    assert local == orch.scratch("u1") and root.parent == parent and data not in local.parents
    assert root.stat().st_mode & 0o777 == 0o700
    assert (data / "replicas" / SCRATCH_RECORD).read_text().strip() == str(root)
    local.mkdir()
    (local / "shuffle_0_0_0.data").write_bytes(b"x")
    # environmentd killed: the next one on the data directory removes what it left
    Orchestrator(data, instance="t2", scratch_dir=parent).reap_orphans()
    assert not root.exists() and not (data / "replicas" / SCRATCH_RECORD).exists()
    # a directory the record names that is not ours stays
    other = tmp_path / "not-ours"
    other.mkdir()
    (data / "replicas" / SCRATCH_RECORD).write_text(str(other))
    Orchestrator(data, instance="t3", scratch_dir=parent).reap_orphans()
    assert other.is_dir()
    orch = Orchestrator(data, instance="t4", scratch_dir=parent)
    root = orch.scratch("u1").parent
    orch.close()
    assert not root.exists() and not (data / "replicas" / SCRATCH_RECORD).exists()


def test_env_turns_the_replica_spark_ui_off(tmp_path, monkeypatch):
    monkeypatch.setenv(PROFILE_UI_ENV, "0")
    assert _conf(tmp_path)["spark.ui.enabled"] == "false"


def test_replicas_have_a_loopback_spark_ui_on_a_free_port_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv(PROFILE_UI_ENV, raising=False)
    conf = _conf(tmp_path)
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.ui.port"] == "0"  # Spark picks a free port and logs it in replica.log
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"


def test_a_standalone_size_runs_its_executors_on_the_master_it_names(tmp_path):
    """Issue 27: ``{"master": "spark://...", "executors": 2, "cores": 1, "memory": "1g"}``."""
    from catalog.sizes import parse_sizes
    from spark_exec.orchestrator import replica_properties

    secret = tmp_path / "secret"
    secret.write_text("abc123\n")
    size = parse_sizes('{"sa-4": {"master": "spark://10.0.0.5:7077", "executors": 2, "cores": 1, "memory": "1g", '
                       f'"secret_file": "{secret}", "driver_host": "10.0.0.2"}}}}')["sa-4"]
    spec = ReplicaSpec("u1", "c.r1", workers=size.workers, scale=size.scale, master=size.master,
                       executor_memory_mb=size.executor_memory, secret_file=size.secret_file,
                       driver_host=size.driver_host)
    cmd = Orchestrator(tmp_path, instance="t", scratch_dir=tmp_path / "scratch").command(spec, 1234, tmp_path)
    conf = _conf_of(cmd)
    assert cmd[cmd.index("--master") + 1] == "spark://10.0.0.5:7077"
    assert (conf["spark.executor.cores"], conf["spark.cores.max"], conf["spark.executor.memory"]) == ("1", "2", "1024m")
    # executors on other hosts dial the driver there; Connect stays on loopback (environmentd is local)
    assert (conf["spark.driver.host"], conf["spark.driver.bindAddress"]) == ("10.0.0.2", "10.0.0.2")
    assert conf["spark.connect.grpc.binding.address"] == "127.0.0.1"
    # the cluster's secret goes to the properties file, never the command line
    assert "abc123" not in " ".join(cmd)
    props = replica_properties(spec).splitlines()
    assert "spark.authenticate.secret=abc123" in props
    # its traffic crosses hosts: encrypted, with no unencrypted (SASL) fallback
    assert {"spark.network.crypto.enabled=true", "spark.network.crypto.saslFallback=false"} <= set(props)
    local_cluster = ReplicaSpec("u2", "c.r2", workers=1, scale=2)
    assert not any(p.startswith("spark.network.crypto") for p in replica_properties(local_cluster).splitlines())


def test_a_standalone_size_with_a_bad_master_or_an_unknown_key_is_refused():
    import pytest

    from catalog.sizes import parse_sizes

    with pytest.raises(ValueError, match="spark://HOST:PORT"):
        parse_sizes('{"sa": {"master": "local[2]"}}')
    with pytest.raises(ValueError, match="takes no workers"):
        parse_sizes('{"sa": {"master": "spark://h:7077", "workers": 2}}')
    with pytest.raises(ValueError, match="readable file"):
        parse_sizes('{"sa": {"master": "spark://h:7077", "secret_file": "/nonexistent/secret"}}')


def test_replicas_map_the_class_data_archive_once_it_is_built(tmp_path, monkeypatch):
    """spark_exec.cds: the driver JVM maps the archive for this JDK and Spark when it
    exists (built by ``make setup``), and starts as before without it or with
    SQLFRONT_REPLICA_CDS=0."""
    from spark_exec.orchestrator import CDS_DIR_ENV, CDS_ENV, archive_path

    monkeypatch.setenv(CDS_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(CDS_ENV, raising=False)
    assert "SharedArchiveFile" not in _conf(tmp_path)["spark.driver.extraJavaOptions"]
    path = archive_path()
    assert path.parent == tmp_path / "cache" and path.suffix == ".jsa"
    path.parent.mkdir()
    path.write_bytes(b"x")
    assert _conf(tmp_path)["spark.driver.extraJavaOptions"].endswith(f" -XX:SharedArchiveFile={path}")
    monkeypatch.setenv(CDS_ENV, "0")
    assert "SharedArchiveFile" not in _conf(tmp_path)["spark.driver.extraJavaOptions"]


def test_the_spark_ui_address_is_read_from_the_replica_log_of_this_run(tmp_path):
    from spark_exec.orchestrator import spark_ui_url

    log = tmp_path / "replica.log"
    earlier = b"Start Jetty 127.0.0.1:0 for SparkUI\nSuccessfully started service 'SparkUI' on port 4040\n"
    log.write_bytes(earlier + b"=== starting ===\n")
    assert spark_ui_url(log) == "http://127.0.0.1:4040"
    assert spark_ui_url(log, len(earlier)) is None  # this run has not logged its UI yet
    assert spark_ui_url(tmp_path / "missing.log") is None
