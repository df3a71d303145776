"""bench/function_coverage.py (issue 26, item 1): it reads a real PostgreSQL's catalog,
every entry it counts as implemented resolves in sqlfront's planner, and every reason of
planner/functions/unsupported.json names entries that PostgreSQL has and sqlfront lacks
(no stale reasons). Needs the reference PostgreSQL only, not a sqlfront server."""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import function_coverage as cov  # noqa: E402
from pg_reference import PostgresReference  # noqa: E402
from planner import functions as fn  # noqa: E402


@pytest.fixture(scope="module")
def entries():
    pg = PostgresReference().start()
    try:
        with pg.connect() as conn:
            yield cov.catalog_entries(conn)
    finally:
        pg.stop()


def test_coverage_report_per_chapter(entries):
    report = cov.coverage(entries, cov.load_reasons())
    text = cov.report(report, show_missing=True)
    print(text)
    for chapter in ("9.3 mathematical", "9.9 date/time", "9.16 JSON", "9.21 aggregate"):
        assert chapter in text
    implemented = [e for c in report.values() for e in c["implemented"]]
    assert len(implemented) > 750
    names = {e.name for e in implemented}
    for name in ("sind", "gcd", "width_bucket", "date_bin", "jsonb_set", "corr", "regr_slope", "bit_and", "&", "<<"):
        assert name in names


def test_implemented_entries_exist_in_the_registry(entries):
    """What the script counts as implemented is a registry entry, an operator the typing
    resolves, or one of the planner's own functions (never a name alone)."""
    for e in entries:
        if cov.chapter(e) is None or not cov.implemented(e):
            continue
        if e.kind == "operator" or e.name in cov.PLANNED:
            continue
        known = fn.BY_SQL_NAME.get(e.name) or fn.AGGREGATES.get(e.name) or fn.WINDOW_FUNCTIONS.get(e.name) \
            or fn.SET_RETURNING.get(e.name)
        assert known, e


def test_every_reason_names_a_missing_entry(entries):
    reasons = cov.load_reasons()
    listed = [e for e in entries if cov.chapter(e) is not None]
    for key in reasons:
        if cov.is_pattern(key):
            hits = [e for e in listed if fnmatch.fnmatchcase(e.name, key)]
            assert any(not cov.implemented(e) for e in hits), f"stale pattern {key!r}"
        else:
            hits = [e for e in listed if key in (str(e), e.name)]
            assert hits, f"{key!r} names no PostgreSQL entry"
            assert not any(cov.implemented(e) for e in hits), f"{key!r} is implemented: drop its reason"


def test_refused_on_table_data_is_not_implemented(entries):
    """An entry whose Spark lowering refuses its argument types with 0A000 counts as
    constants only, not implemented (a stand-in entry that refuses numeric arguments);
    numeric exp, ln, sqrt and power, which run their Python implementation on the
    replicas (planner.functions.by_python), count as implemented with their float8
    overloads."""
    from catalog.errors import FEATURE_NOT_SUPPORTED, SqlError
    from catalog.types import SqlType

    def refuse_numeric(S, a, e):
        if e.type.name == "numeric":
            raise SqlError(FEATURE_NOT_SUPPORTED, "not on table data")
        return a[0]

    stand_in = fn.Function("stand_in", (fn.sig("numeric", ret="numeric"),), None, refuse_numeric)
    assert cov._where(stand_in, [SqlType("numeric")], SqlType("numeric")) == "python"
    assert cov._where(stand_in, [SqlType("float8")], SqlType("float8")) == "spark"
    report = cov.coverage(entries, cov.load_reasons())
    implemented = {str(e) for e in report["9.3"]["implemented"]}
    for spark in ("exp(numeric)", "ln(numeric)", "sqrt(numeric)", "power(numeric, numeric)", "numeric ^ numeric",
                  "log(numeric, numeric)", "exp(float8)", "ln(float8)", "sqrt(float8)", "power(float8, float8)",
                  "gcd(numeric, numeric)", "gamma(float8)", "erf(float8)"):
        assert spark in implemented


def test_every_entry_is_implemented_or_has_a_reason(entries):
    """Issue 26's done-when: each listed entry runs on table data, runs over constants only
    (shown as such), or is named in unsupported.json with its reason: none is missing."""
    report = cov.coverage(entries, cov.load_reasons())
    missing = {c: [str(e) for e in d["missing"]] for c, d in report.items() if d["missing"]}
    assert not missing
