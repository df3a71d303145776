"""The replica command line the orchestrator builds (no process is started here)."""

from __future__ import annotations

from spark_exec.orchestrator import PROFILE_UI_ENV, Orchestrator, ReplicaSpec


def _conf(tmp_path) -> dict[str, str]:
    cmd = Orchestrator(tmp_path, instance="t").command(ReplicaSpec("u1", "c.r1", workers=2), 1234, tmp_path)
    return dict(cmd[i + 1].split("=", 1) for i, a in enumerate(cmd) if a == "--conf")


def test_env_turns_the_replica_spark_ui_off(tmp_path, monkeypatch):
    monkeypatch.setenv(PROFILE_UI_ENV, "0")
    assert _conf(tmp_path)["spark.ui.enabled"] == "false"


def test_replicas_have_a_loopback_spark_ui_on_a_free_port_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv(PROFILE_UI_ENV, raising=False)
    conf = _conf(tmp_path)
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.ui.port"] == "0"  # Spark picks a free port and logs it in replica.log
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
