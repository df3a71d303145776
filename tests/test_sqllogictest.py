"""sqllogictest over the wire: the project's own suites, and a part of the SQLite corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqllogictest.runner import Runner

ROOT = Path(__file__).resolve().parent.parent
SUITES = sorted((ROOT / "sqllogictest" / "suites").glob("*.slt"))
CORPUS = ROOT.parent / "shared" / "slt" / "sqlite"


@pytest.mark.parametrize("path", SUITES, ids=[p.name for p in SUITES])
def test_own_suite(server, path):
    out = Runner(server.url).run_file(path)
    assert out.failed == 0, out.failures
    assert out.passed > 0


@pytest.mark.slow
@pytest.mark.skipif(not (CORPUS / "select1.test").exists(),
                    reason="the SQLite corpus lives in ../shared/slt, next to the repository")
def test_sqlite_corpus_select1(server):
    # Its queries only read: two connections run them at once (Spark plans each on one
    # core; bench/slt.py prints the ratio).
    out = Runner(server.url, jobs=2).run_file(CORPUS / "select1.test")
    assert out.failed == 0, out.failures[:5]
    assert out.passed >= 1031


MZ_SLT = ROOT.parent / "shared" / "mz-slt"
# files with simple conn=/user=, reset-server, colnames, halt and cockroach mode
MZ_FILES = ("show_clusters.slt", "table.slt", "subscribe_outputs.slt", "update.slt")

FILE_THAT_CREATES = """\
statement ok
CREATE TABLE keep (a int)

statement ok
INSERT INTO keep VALUES (10)

statement ok
CREATE VIEW keep_v AS SELECT a FROM keep

statement ok
CREATE CLUSTER slt_runner_c REPLICAS ()

reset-server

query I
SELECT count(*) FROM keep
----
9
"""


def test_url_leaves_user_objects_alone(server, tmp_path):
    """Pointed at a server with --url, the runner leaves a user's table (same name as the
    file's), its rows and a view on it as they were, and drops what the file created."""
    import psycopg

    from sqllogictest.__main__ import main

    with psycopg.connect(server.url, autocommit=True) as c:
        c.execute("CREATE TABLE keep (a int, b text)")
        c.execute("INSERT INTO keep VALUES (1, 'x'), (2, 'y')")
        c.execute("CREATE VIEW keep_view AS SELECT a FROM keep")
        try:
            slt = tmp_path / "creates.slt"
            slt.write_text(FILE_THAT_CREATES)
            # the last record fails: after reset-server the file's own `keep` is gone
            assert main(["--url", server.url, str(slt)]) == 1
            assert sorted(c.execute("SELECT a, b FROM keep").fetchall()) == [(1, "x"), (2, "y")]
            assert c.execute("SELECT * FROM keep_view ORDER BY 1").fetchall() == [(1,), (2,)]
            assert c.execute("SELECT name FROM mz_schemas WHERE name LIKE 'slt_%'").fetchall() == []
            assert c.execute("SELECT name FROM mz_clusters WHERE name = 'slt_runner_c'").fetchall() == []
        finally:
            c.execute("DROP VIEW IF EXISTS keep_view")
            c.execute("DROP TABLE IF EXISTS keep")


def _records_in(text: str) -> int:
    """Records counted from the text alone: the lines that start one."""
    return sum(line.split(" ", 1)[0] in ("statement", "query", "simple") for line in text.splitlines())


@pytest.mark.skipif(not (MZ_SLT / MZ_FILES[0]).exists(), reason="Materialize's files live in ../shared/mz-slt")
@pytest.mark.parametrize("name", MZ_FILES)
def test_materialize_files_drop_no_record(server, name):
    """Every record of a Materialize file is passed, failed or skipped with a reason."""
    path = MZ_SLT / name
    out = Runner(server.url, out=lambda s: None).run_file(path)
    assert out.passed + out.failed + out.skipped == _records_in(path.read_text())
    assert sum(out.skip_reasons.values()) == out.skipped
    assert out.passed > 0


JOBS_FILE = """\
statement ok
CREATE TABLE j (a int)

statement ok
INSERT INTO j VALUES (1), (2), (3)

query I
SELECT count(*) FROM j
----
3

query I
SELECT sum(a) FROM j
----
7

query I rowsort
SELECT a FROM j WHERE a > 1
----
2
3

statement ok
INSERT INTO j VALUES (4)

query I
SELECT count(*) FROM j
----
4
"""


def test_jobs_run_queries_at_once_and_statements_in_order(server, tmp_path):
    """``Runner(jobs=N)``: the queries between two statements run on N connections at
    once; a statement still sees every earlier record done, and failures keep their
    records' lines."""
    slt = tmp_path / "jobs.slt"
    slt.write_text(JOBS_FILE)
    out = Runner(server.url, out=lambda s: None, jobs=3).run_file(slt)
    assert (out.passed, out.failed) == (6, 1)
    # (the 1-based line of its "query" header: the line before its SQL)
    assert [f["line"] for f in out.failures] == [JOBS_FILE.splitlines().index("SELECT sum(a) FROM j")]
