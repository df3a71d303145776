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
    out = Runner(server.url).run_file(CORPUS / "select1.test")
    assert out.failed == 0, out.failures[:5]
    assert out.passed >= 1031
