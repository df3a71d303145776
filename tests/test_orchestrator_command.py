"""The replica command line the orchestrator builds (no process is started here)."""

from __future__ import annotations

from spark_exec.orchestrator import PROFILE_UI_ENV, Orchestrator, ReplicaSpec


def _conf(tmp_path) -> dict[str, str]:
    cmd = Orchestrator(tmp_path, instance="t").command(ReplicaSpec("u1", "c.r1", workers=2), 1234, tmp_path)
    return dict(cmd[i + 1].split("=", 1) for i, a in enumerate(cmd) if a == "--conf")


def test_replica_spark_ui_is_off_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv(PROFILE_UI_ENV, raising=False)
    assert _conf(tmp_path)["spark.ui.enabled"] == "false"


def test_profiling_env_gives_replicas_a_loopback_spark_ui_on_a_free_port(tmp_path, monkeypatch):
    monkeypatch.setenv(PROFILE_UI_ENV, "1")
    conf = _conf(tmp_path)
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.ui.port"] == "0"  # Spark picks a free port and logs it in replica.log
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
