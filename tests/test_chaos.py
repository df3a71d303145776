"""Issue 28: strict serializability under faults, checked as Jepsen does. Four clients run
random list-append transactions (tests/chaos/workload.py) while the nemesis kills and
pauses replicas, kills and restarts environmentd and (two processes) restarts and pauses
PostgreSQL; then every key is read through every process and the history is checked
(tests/chaos/elle.py): no anomaly, no acknowledged write lost. Fixed seed; about two
minutes each. ``bench/chaos.py`` runs the same for longer and prints the figures."""

from __future__ import annotations

import pytest
from chaos.run import run

pytestmark = pytest.mark.slow

SEED = 2026


def _clean(res: dict) -> None:
    print({k: res[k] for k in ("operations", "faults", "ddl", "checks", "anomalies", "envd_rss_mb")})
    assert res["final_reads"] == [True] * len(res["final_reads"]), res
    assert res["operations"].get("ok", 0) > 0, res
    assert res["anomalies"] == {}, (res["anomalies"], res["examples"], res["history"])


def test_one_environmentd_under_faults_is_strict_serializable(tmp_path):
    _clean(run(tmp_path, "one", seconds=120, seed=SEED, interval=(10, 20), log=lambda m: None))


def test_two_environmentd_behind_the_balancer_under_faults_are_strict_serializable(tmp_path):
    _clean(run(tmp_path, "two", seconds=120, seed=SEED, interval=(10, 20), log=lambda m: None))
