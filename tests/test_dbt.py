"""dbt against the server, as a data team would point it at us: the sample project in
tests/dbt_project (seeds, a source, staging views, a table model, an incremental model, a
materialized view model, schema and singular tests) through dbt-materialize (target
``materialize``) and dbt-postgres (target ``postgres``), then the results read back through
psycopg.

dbt lives in its own venv (``make dbt-venv``: dbt pins protobuf<7, Spark Connect needs 7)
and runs as one long-lived process per target (tests/dbt_project/run_dbt.py) that takes its
commands one by one, so the seconds of dbt's start-up and parsing are paid once per target
(dbt parses the project again whenever the target changes).
"""

from __future__ import annotations

import json
import os
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

#: dbt's start-up, parsing and a peek per model and data test: over a minute on 2 cores
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "dbt_project"
DBT_PYTHON = ROOT / ".venv-dbt" / "bin" / "python"
TARGETS = ("materialize", "postgres")
#: each target's schema (tests/dbt_project/profiles.yml)
SCHEMA = {"materialize": "dbt_mz", "postgres": "dbt_pg"}


class Dbt:
    """One dbt process for ``target``; ``invoke(args)`` runs one dbt command in it and
    returns its answer (run_dbt.py's JSON). Raises AssertionError with the failing nodes and
    the tail of dbt's debug log (which has every statement dbt sent) when ``check`` and the
    command failed."""

    def __init__(self, target: str, port: int, workdir: Path):
        self.target = target
        self.log_dir = workdir / "logs"
        env = {**os.environ, "DBT_HOST": "127.0.0.1", "DBT_PORT": str(port),
               "DBT_PROFILES_DIR": str(PROJECT), "DBT_PROJECT_DIR": str(PROJECT),
               "DBT_TARGET_PATH": str(workdir / "target"), "DBT_LOG_PATH": str(self.log_dir),
               "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_VERSION_CHECK": "false",
               "DBT_USE_COLORS": "false"}
        self.stderr = open(workdir / "dbt-console.log", "w")
        self.proc = subprocess.Popen([str(DBT_PYTHON), str(PROJECT / "run_dbt.py")], cwd=PROJECT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)

    def invoke(self, *args: str, check: bool = True) -> dict:
        self.proc.stdin.write(json.dumps([*args, "--target", self.target, "--threads", "1"]) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"dbt process died during {args}:\n{self.tail()}")
        answer = json.loads(line)
        if check and not answer["success"]:
            bad = [n for n in answer["nodes"] if n["status"] not in ("success", "pass", "warn")]
            raise AssertionError(f"dbt {' '.join(args)} failed: {answer['exception']}\n"
                                 f"{json.dumps(bad, indent=1)}\n--- dbt.log ---\n{self.tail()}")
        return answer

    def tail(self, n: int = 12000) -> str:
        log = self.log_dir / "dbt.log"
        return log.read_text(errors="replace")[-n:] if log.exists() else ""

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(60)
        self.stderr.close()


@pytest.fixture(scope="module")
def dbt(server, tmp_path_factory):
    """A dbt process per target: ``{target: Dbt}``."""
    subprocess.run(["make", "-s", "dbt-venv"], cwd=ROOT, check=True)
    procs = {t: Dbt(t, server.port, tmp_path_factory.mktemp(f"dbt-{t}")) for t in TARGETS}
    yield procs
    for d in procs.values():
        d.close()


@pytest.fixture(scope="module")
def built(dbt, server):
    """Both targets built: seed and run, new and changed source rows, the incremental model
    run again, the tests. Gives ``{target: [answers]}``; drops what it made at the end."""
    with server.connect() as c:
        c.execute("CREATE SCHEMA IF NOT EXISTS raw")
        c.execute("CREATE TABLE raw.events (id int NOT NULL, customer_id int, kind text, occurred_at timestamp)")
        c.execute("INSERT INTO raw.events VALUES (1, 1, 'view', '2024-01-01 10:00'), (2, 1, 'buy', '2024-01-01 11:00'),"
                  " (3, 2, 'buy', '2024-01-02 09:00'), (4, 3, 'view', '2024-01-02 10:00')")
    answers: dict[str, list] = {t: [] for t in TARGETS}
    for t in TARGETS:
        answers[t].append(dbt[t].invoke("seed"))
        answers[t].append(dbt[t].invoke("run"))
    with server.connect() as c:
        # event 3 is refunded later (so it is newer than what the model holds) and two arrive
        c.execute("UPDATE raw.events SET kind = 'refund', occurred_at = '2024-01-03 08:00' WHERE id = 3")
        c.execute("INSERT INTO raw.events VALUES (5, 4, 'buy', '2024-01-03 09:00'), (6, 2, 'view', '2024-01-04 12:00')")
    for t in TARGETS:
        answers[t].append(dbt[t].invoke("run", "--select", "events_incremental"))
        answers[t].append(dbt[t].invoke("test"))
    yield answers
    with server.connect() as c:  # the shared server goes on to other suites
        c.execute("DROP SCHEMA IF EXISTS raw, dbt_mz, dbt_pg CASCADE")


@pytest.mark.parametrize("target", TARGETS)
def test_dbt_builds_every_node(built, target):
    seed, run, rerun, tests = built[target]
    assert sorted(n["id"] for n in seed["nodes"]) == ["seed.shop.customers", "seed.shop.orders"]
    assert sorted(n["id"].rsplit(".", 1)[1] for n in run["nodes"]) == [
        "customer_orders", "events_incremental", "order_totals", "stg_customers", "stg_events", "stg_orders"]
    assert [n["id"] for n in rerun["nodes"]] == ["model.shop.events_incremental"]
    # every schema test kind and the singular test ran, and passed
    names = {n["id"].split(".")[2] for n in tests["nodes"]}
    assert {"order_totals_match_orders", "source_unique_raw_events_id"} <= names
    for kind in ("unique_", "not_null_", "accepted_values_", "relationships_"):
        assert any(name.startswith(kind) for name in names), kind
    assert all(n["status"] == "pass" for n in tests["nodes"]), tests["nodes"]


@pytest.mark.parametrize("target", TARGETS)
def test_dbt_models_hold_the_expected_rows(built, server, target):
    s = SCHEMA[target]
    with server.connect() as c:
        assert c.execute(f"SELECT customer_id, name, country, order_count, total_amount FROM {s}.customer_orders"
                         " ORDER BY customer_id").fetchall() == [
            (1, "Ada", "GB", 2, Decimal("19.75")), (2, "Grace", "US", 2, Decimal("118.00")),
            (3, "Linus", "FI", 1, Decimal("40.00")), (4, "Margaret", "US", 1, Decimal("3.99"))]
        assert c.execute(f"SELECT status, order_count, total_amount FROM {s}.order_totals ORDER BY status").fetchall() == [
            ("placed", 2, Decimal("25.25")), ("returned", 1, Decimal("40.00")), ("shipped", 3, Decimal("116.49"))]
        events = c.execute(f"SELECT id, kind, loaded_by FROM {s}.events_incremental ORDER BY id").fetchall()
    assert [(i, k) for i, k, _ in events] == [(1, "view"), (2, "buy"), (3, "refund"), (4, "view"), (5, "buy"),
                                              (6, "view")]
    if target == "postgres":
        # the second run merged only the new and changed events: the others keep the first run's id
        first, second = events[0][2], events[4][2]
        assert first != second
        assert [lb for _, _, lb in events] == [first, first, second, first, second, second]


def test_dbt_postgres_persists_docs_as_comments(built, server):
    with server.connect() as c:
        assert c.execute("SELECT obj_description('dbt_pg.customer_orders'::regclass, 'pg_class')").fetchone() == (
            "One row per customer with their order count and total.",)
        assert c.execute("SELECT col_description('dbt_pg.customer_orders'::regclass, 1)").fetchone() == (
            "The customer's id (stg_customers.id).",)


def test_dbt_materialize_creates_indexes_in_the_cluster(built, server):
    with server.connect() as c:
        rows = c.execute("SELECT o.name, i.cluster_id FROM mz_indexes i JOIN mz_objects o ON o.id = i.on_id"
                         " JOIN mz_schemas s ON s.id = o.schema_id WHERE s.name = 'dbt_mz' ORDER BY 1").fetchall()
        quickstart = c.execute("SELECT id FROM mz_clusters WHERE name = 'quickstart'").fetchone()[0]
    assert [name for name, _ in rows] == ["customer_orders", "stg_orders"]
    assert {cluster for _, cluster in rows} == {quickstart}


def test_dbt_test_reports_a_failing_test(built, dbt, server):
    """The tests are not vacuous: a status outside the accepted values fails its test."""
    with server.connect() as c:
        c.execute("INSERT INTO dbt_pg.orders VALUES (16, 3, 'lost', 1.00, '2024-01-07 10:00')")
        try:
            answer = dbt["postgres"].invoke("test", "--select", "stg_orders", check=False)
        finally:
            c.execute("DELETE FROM dbt_pg.orders WHERE id = 16")
    assert not answer["success"]
    failed = [n for n in answer["nodes"] if n["status"] == "fail"]
    assert [n["id"].split(".")[2] for n in failed] == [
        "accepted_values_stg_orders_status__placed__shipped__returned"]
    assert failed[0]["failures"] == 1
