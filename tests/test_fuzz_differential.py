"""Differential fuzzing against a real PostgreSQL (issue 31): random queries of
``sqlfuzz.QueryGen`` over three small random tables, each run on PostgreSQL and on
sqlfront twice: on Spark (over the tables) and in the Python interpreter (over the same
rows as VALUES in a WITH). Answers are compared as multisets of PostgreSQL's text
output (and by column names for ``SELECT *``, where the shape of USING and NATURAL
joins shows); errors by SQLSTATE. Then TLP (SQLancer's ternary logic partitioning) on
sqlfront alone: a query's answer is the union of its WHERE p, WHERE NOT p and WHERE p
IS NULL parts.

``make test`` runs a fixed seed and a small budget; ``pytest tests/test_fuzz_differential.py
--fuzz-seed N --fuzz-queries M`` runs a longer or another one. A difference is a bug
to fix, or a deliberate difference declared in ``DIFFERENCES`` with its reason.
"""

from __future__ import annotations

import pytest

import sqlfuzz
from pg_reference import PostgresReference, text_answer

#: substring of a query -> why sqlfront deliberately answers it differently (none yet)
DIFFERENCES: dict[str, str] = {}


def _settings(config) -> tuple[int, int]:
    return config.getoption("--fuzz-seed"), config.getoption("--fuzz-queries")


def pytest_generate_tests(metafunc):
    if "case" not in metafunc.fixturenames:
        return
    seed, count = _settings(metafunc.config)
    gen = sqlfuzz.QueryGen(seed)
    if metafunc.function.__name__ == "test_tlp_partitions_add_up":
        cases = [gen.tlp() for _ in range(max(1, count // 4))]
        metafunc.parametrize("case", cases, ids=[f"tlp{i:03d}" for i in range(len(cases))])
    else:
        cases = [(gen.query(), engine) for _ in range(count) for engine in ("spark", "python")]
        metafunc.parametrize("case", cases, ids=[f"q{i // 2:03d}-{e}" for i, (_, e) in enumerate(cases)])


@pytest.fixture(scope="module")
def setup(request):
    seed, _ = _settings(request.config)
    return sqlfuzz.setup_statements(seed)


@pytest.fixture(scope="module")
def fuzz_conns(server, setup):
    """(sqlfront connection, PostgreSQL connection), both holding the fuzz tables in a
    schema of their own."""
    pg = PostgresReference().start()
    ours = server.connect()
    ours.autocommit = True
    theirs = pg.connect()
    for c in (ours, theirs):
        c.execute("DROP SCHEMA IF EXISTS fuzz CASCADE")
        c.execute("CREATE SCHEMA fuzz")
        c.execute("SET search_path = fuzz")
        for stmt in setup:
            c.execute(stmt)
    yield ours, theirs
    ours.execute("DROP SCHEMA fuzz CASCADE")
    ours.close()
    theirs.close()
    pg.stop()


def _sorted(rows) -> list:
    return sorted(rows, key=lambda r: tuple((v is None, v or "") for v in r))


def _answer(conn, sql: str):
    """(None: the names slot ``test_query_matches_postgres`` fills for ``SELECT *``,
    sorted rows as text, SQLSTATE) of ``sql``."""
    rows, state = text_answer(conn, sql)
    return (None, None, state) if state is not None else (None, _sorted(rows), None)


def _names(conn, sql: str) -> list[str] | None:
    try:
        cur = conn.execute(sql)
    except Exception:  # compared by _answer's SQLSTATE
        return None
    return [d.name for d in cur.description or []]


def _on_python(setup: list[str], sql: str) -> str:
    withs = ", ".join(f"{t} AS ({sqlfuzz.values_relation(setup, t)})" for t in sqlfuzz.TABLES)
    return f"WITH {withs} {sql}"


def test_query_matches_postgres(fuzz_conns, setup, case):
    ours, theirs = fuzz_conns
    sql, engine = case
    expected = _answer(theirs, sql)
    mine_sql = sql if engine == "spark" else _on_python(setup, sql)
    got = _answer(ours, mine_sql)
    if sql.startswith("SELECT * ") and expected[2] is None:
        expected = (_names(theirs, sql),) + expected[1:]
        got = (_names(ours, mine_sql),) + got[1:]
    if got != expected:
        reason = next((r for k, r in DIFFERENCES.items() if k in sql), None)
        if reason:
            pytest.xfail(f"deliberate difference: {reason}")
    assert got == expected, f"{engine}: {sql}"


def test_tlp_partitions_add_up(fuzz_conns, case):
    ours, _ = fuzz_conns
    base, parts = case
    whole = _answer(ours, base)
    pieces = [_answer(ours, p) for p in parts]
    if whole[2] is not None or any(p[2] is not None for p in pieces):
        pytest.skip(f"the query errs: {whole[2] or [p[2] for p in pieces]}")
    union = _sorted(r for p in pieces for r in p[1])
    assert union == whole[1], base
