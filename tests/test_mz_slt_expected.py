"""Materialize's cluster.slt, managed_cluster.slt, list.slt and map.slt through the project's runner: exactly
the records listed in tests/mz_slt/expected_failures.txt fail, each there with its reason
(Materialize internals, old-version records, deliberate differences). A record that starts
to pass, or one that starts to fail, fails this test: the list can only shrink."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sqllogictest.runner import Runner

HERE = Path(__file__).resolve().parent
LISTED = HERE / "mz_slt" / "expected_failures.txt"
#: where Materialize's files are looked for (they are not kept in this repository: see
#: tests/mz_slt/README.md)
DIRS = [Path(d) for d in (os.environ.get("SQLFRONT_MZ_SLT_DIR"),) if d] + [HERE.parent.parent / "shared" / "mz-slt"]


def _found(name: str) -> Path:
    return next((d / name for d in DIRS if (d / name).exists()), DIRS[-1] / name)


FILES = {name: _found(name) for name in ("cluster.slt", "managed_cluster.slt", "list.slt", "map.slt")}


#: records that list every user index of the server (Materialize's file ran alone on its
#: server): on the shared test server they pass only when no other test left an index
GLOBAL_INDEX_RECORDS = {"cluster.slt": {181, 219, 282}}


def expected_failures() -> dict[str, dict[int, str]]:
    """file name -> {line of the record: reason}, from ``expected_failures.txt``
    (``file:line  reason`` per line; ``#`` starts a comment)."""
    out: dict[str, dict[int, str]] = {name: {} for name in FILES}
    for raw in LISTED.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where, reason = line.split(None, 1)
        name, lineno = where.split(":")
        assert reason.strip(), f"{where} has no reason"
        assert int(lineno) not in out[name], f"{where} listed twice"
        out[name][int(lineno)] = reason.strip()
    return out


def test_every_listed_record_has_a_reason():
    listed = expected_failures()
    assert sum(map(len, listed.values())) > 0


@pytest.mark.parametrize("name", sorted(FILES))
def test_exactly_the_listed_records_fail(server, name):
    path = FILES[name]
    if not path.exists():
        pytest.skip(f"{path} absent (Materialize's files: ../shared/mz-slt or $SQLFRONT_MZ_SLT_DIR)")
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as c:
        others = c.execute("SELECT count(*) FROM mz_catalog.mz_indexes WHERE id LIKE 'u%'").fetchone()[0]
    out = Runner(server.url, out=lambda s: None).run_file(path)
    failed = {f["line"]: f for f in out.failures}
    listed = expected_failures()[name]
    if others:  # another test's indexes are in the server-wide lists these records read
        for line in GLOBAL_INDEX_RECORDS.get(name, ()):
            failed.pop(line, None)
    new = {n: (f["sql"], f.get("expected"), f.get("actual")) for n, f in failed.items() if n not in listed}
    fixed = sorted(set(listed) - set(failed))
    assert not new, f"records of {name} that fail and are not listed: {new}"
    assert not fixed, f"records of {name} listed as failing that pass now (remove them from the list): {fixed}"
    assert out.passed > 0
