"""Issue 28: strict serializability under faults, checked as Jepsen does. Four clients run
random list-append transactions (tests/chaos/workload.py) while the nemesis kills and
pauses replicas, kills and restarts environmentd and (two processes) restarts and pauses
PostgreSQL; then every key is read through every process and the history is checked
(tests/chaos/elle.py): no anomaly, no acknowledged write lost. Fixed seed; about two
minutes each. ``bench/chaos.py`` runs the same for longer and prints the figures.

The two runs (one environmentd; two behind the balancer) run at the same time, each in a
process of its own (the nemesis's clock skew is set through the environment of the
processes it starts): most of a run is waiting, for faults to heal and for the
workload's pauses, so together they take little longer than one. Each checks alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SEED = 2026
SECONDS = 120

#: runs ``chaos.run.run`` for one topology and prints its figures as JSON on the last line
_RUN = """
import json, sys
from pathlib import Path
from chaos.run import run
topology, directory, seconds, seed = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
res = run(directory, topology, seconds=seconds, seed=seed, interval=(10, 20),
          log=lambda m: print(m, file=sys.stderr, flush=True))
print(json.dumps(res, default=str))
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict]:
    """Topology -> the figures of its run (``chaos.run.run``)."""
    tests = Path(__file__).resolve().parent
    procs = {}
    for topology in ("one", "two"):
        d = tmp_path_factory.mktemp(f"chaos-{topology}")
        with open(d / "run.log", "w") as log:  # the child keeps its own copy of the file
            procs[topology] = (d, subprocess.Popen(
                [sys.executable, "-c", _RUN, topology, str(d), str(SECONDS), str(SEED)],
                cwd=tests, stdout=subprocess.PIPE, stderr=log, text=True))
    out = {}
    for topology, (d, proc) in procs.items():
        stdout, _ = proc.communicate(timeout=SECONDS + 900)
        lines = stdout.strip().splitlines()
        assert proc.returncode == 0 and lines, \
            f"the {topology} run failed ({proc.returncode}): {(d / 'run.log').read_text()[-3000:]}"
        out[topology] = json.loads(lines[-1])
    return out


def _clean(res: dict) -> None:
    print({k: res[k] for k in ("operations", "faults", "ddl", "checks", "anomalies", "envd_rss_mb")})
    assert res["final_reads"] == [True] * len(res["final_reads"]), res
    assert res["operations"].get("ok", 0) > 0, res
    assert res["anomalies"] == {}, (res["anomalies"], res["examples"], res["history"])


def test_one_environmentd_under_faults_is_strict_serializable(runs):
    _clean(runs["one"])


def test_two_environmentd_behind_the_balancer_under_faults_are_strict_serializable(runs):
    _clean(runs["two"])
