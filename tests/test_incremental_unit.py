"""The incremental rules (planner.incremental): which rule keeps each plan shape, the
state and keys each operator gets, refusals with 0A000, and EXPLAIN INCREMENTAL PLAN's
lines. Pure Python; the rules' answers are checked through the wire by
tests/test_ivm_differential.py."""

from __future__ import annotations

from pathlib import Path

import pglast
import pytest

from catalog.durable import CatalogStore
from catalog.errors import SqlError
from catalog.snapshot import Table
from planner.ddl import plan_columns
from planner.incremental import incremental_plan
from planner.incremental.explain import explain_incremental
from planner.incremental.nodes import (
    Accumulate, Constant, DeltaJoin, Input, Recompute, UnionAll, arrangements, inc_inputs,
)
from planner.query import QueryPlanner
from planner.scalar import ColRef
from sqlfront import tpch

QUERY_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "tpch" / "queries"


@pytest.fixture(scope="module")
def snap():
    s = CatalogStore(":memory:").load()
    ddl = {"t": "a int, b int, f float8, n numeric", "u": "a int, c text"}
    tables = {}
    for i, (name, cols) in enumerate(ddl.items()):
        c = plan_columns(pglast.parse_sql(f"CREATE TABLE {name} ({cols})")[0].stmt)
        tables[f"u{i + 1}"] = Table(f"u{i + 1}", "public", name, c, f"s{i + 1}")
    return s.with_changes(tables=tables)


def inc(snap, sql, ctx=None):
    return incremental_plan(QueryPlanner(snap, ctx=ctx).plan_select(pglast.parse_sql(sql)[0].stmt).plan)


def kinds(n) -> list[str]:
    out = [type(n).__name__]
    for i in inc_inputs(n):
        out += kinds(i)
    return out


def test_linear_operators_apply_to_the_change_as_they_are(snap):
    n = inc(snap, "SELECT a + 1, b FROM t WHERE b > 2 UNION ALL SELECT a, 0 FROM u ORDER BY 1")
    assert isinstance(n, UnionAll)
    assert set(kinds(n)) == {"UnionAll", "Linear", "Input"} and not arrangements(n)


def test_inner_join_is_a_delta_join_keyed_by_its_equi_join_columns(snap):
    n = inc(snap, "SELECT t.b, u.c FROM t JOIN u ON t.a = u.a AND t.b < 3")
    (j,) = [x for x in _nodes(n) if isinstance(x, DeltaJoin)]
    assert j.states[0].keys == (ColRef(0, j.inputs[0].columns[0][1]),)
    assert [k.index for k in j.states[1].keys] == [0]


@pytest.mark.skipif(not QUERY_DIR.exists(), reason="the TPC-H queries live in ../shared/tpch")
def test_a_tree_of_inner_joins_is_one_delta_join_over_its_leaves():
    # Q5 joins six tables: one n-way delta join arranging each table's rows (past its
    # filters) and nothing of any join of some of them (Materialize's delta query)
    n = inc(tpch.catalog(), (QUERY_DIR / "q05.sql").read_text())
    (j,) = [x for x in _nodes(n) if isinstance(x, DeltaJoin)]
    assert [i.plan.relation.name for x in j.inputs for i in _nodes(x) if isinstance(i, Input)] == [
        "customer", "orders", "lineitem", "supplier", "nation", "region"]
    assert len(arrangements(n)) == 7  # the six inputs' and the GROUP BY's sums
    assert all(a.keys for a in j.states)  # each looked up by the columns that link it


def test_a_delta_join_keeps_every_condition_over_its_inputs_columns(snap):
    n = inc(snap, "SELECT t.b, u.c, v.f FROM t JOIN u ON t.a = u.a CROSS JOIN t v WHERE v.b + t.b > u.a")
    (j,) = [x for x in _nodes(n) if isinstance(x, DeltaJoin)]
    assert len(j.inputs) == 3
    text = "\n".join(explain_incremental(n))
    assert text.count("DeltaJoin") == 1 and "arrangement 3" in text


def test_accumulable_group_by_keeps_sums_and_the_rest_recomputes_groups(snap):
    n = top(inc(snap, "SELECT a, count(*), sum(b), avg(n), count(f) FROM t GROUP BY a"), Accumulate)
    assert [k.index for k in n.state.keys] == [0]
    for sql in ("SELECT a, max(b) FROM t GROUP BY a", "SELECT a, sum(f) FROM t GROUP BY a",
                "SELECT a, count(DISTINCT b) FROM t GROUP BY a", "SELECT DISTINCT a FROM t"):
        r = inc(snap, sql)
        assert top(r, Recompute) is not None and top(r, Accumulate) is None, sql
    assert top(inc(snap, "SELECT count(*) FROM t"), Accumulate).state.keys == ()  # one group


def test_outer_semi_anti_joins_recompute_the_groups_of_their_equi_join_keys(snap):
    for sql, op in [("SELECT * FROM t LEFT JOIN u ON t.a = u.a", "LeftJoin"),
                    ("SELECT * FROM t FULL JOIN u ON t.a = u.a", "FullJoin"),
                    ("SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a)", "SemiJoin"),
                    ("SELECT * FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.a = t.a)", "AntiJoin")]:
        (r,) = [x for x in _nodes(inc(snap, sql)) if isinstance(x, Recompute)]
        assert r.operator == op, sql
        assert all(len(a.keys) == 1 for a in r.states), sql


def test_topk_breaks_ties_by_every_column(snap):
    r = inc(snap, "SELECT a, b FROM t ORDER BY a LIMIT 3")
    assert isinstance(r, Recompute) and r.operator == "TopK"
    assert [k.index for k in r.template.input.keys] == [0, 1, 2, 3][:len(r.template.input.keys)]


def test_constants_arrive_once(snap):
    assert isinstance(inc(snap, "SELECT 1 AS x"), Constant)
    n = inc(snap, "SELECT a FROM t UNION ALL VALUES (1)")
    assert top(n, Constant) is not None and top(n, Input) is not None


def test_shapes_without_a_rule_are_refused_with_0a000_naming_them(snap):
    with pytest.raises(SqlError) as e:
        inc(snap, "WITH RECURSIVE r(x) AS (SELECT a FROM t UNION ALL SELECT x + 1 FROM r WHERE x < 3) SELECT * FROM r")
    assert e.value.sqlstate == "0A000" and "WITH RECURSIVE" in e.value.message


def test_a_dataflow_reads_only_the_columns_its_query_uses(snap):
    from dataclasses import replace

    from catalog.types import INT4, list_of, map_of

    cols = plan_columns(pglast.parse_sql("CREATE TABLE mt (k int, v int, m int)")[0].stmt)
    cols = tuple(cols[:2]) + (replace(cols[2], type=map_of(INT4)), replace(cols[2], name="lm", type=list_of(map_of(INT4))))
    s = snap.with_changes(tables={**snap.tables, "u9": Table("u9", "public", "mt", cols, "s9")})
    # an unused map column enters no arrangement (issue 25: such a view was refused)
    n = inc(s, "SELECT k, sum(v) FROM mt GROUP BY k")
    assert [len(a.columns) for a in arrangements(n)] == [2]
    assert len(inc(s, "SELECT count(*) FROM mt WHERE v > 0").columns) == 1
    (r,) = [x for x in _nodes(inc(s, "SELECT k, max(v) FROM mt WHERE m -> 'a' = 1 GROUP BY k"))
            if isinstance(x, Recompute)]
    assert [t.name for _, t in r.states[0].columns] == ["int4", "int4"]  # the map only in the Filter below
    # a join's inputs keep their keys and what is above reads
    (j,) = [x for x in _nodes(inc(snap, "SELECT u.c FROM t JOIN u ON t.a = u.a")) if isinstance(x, DeltaJoin)]
    assert [len(a.columns) for a in j.states] == [1, 2]
    # maps are arranged by their entries (SqlType.map_groupable); a list of maps is not yet
    for sql in ("SELECT k, m FROM mt", "SELECT m, count(*) FROM mt GROUP BY m", "SELECT m, max(v) FROM mt GROUP BY m"):
        inc(s, sql)
    with pytest.raises(SqlError) as e:
        inc(s, "SELECT k, lm FROM mt")
    assert e.value.sqlstate == "0A000" and "map[text=>integer] list" in e.value.message


def test_explain_names_each_operator_its_state_and_keys(snap):
    lines = explain_incremental(inc(snap, "SELECT t.a, count(*) FROM t JOIN u ON t.a = u.a GROUP BY t.a"))
    text = "\n".join(lines)
    assert "Accumulate Reduce group_by=[#0]" in text
    assert "DeltaJoin inner on=(#0 = #1)" in text and "keys=[#0]" in text  # each input narrowed to its a
    assert "Changes of public.t" in text and "Changes of public.u" in text


@pytest.mark.skipif(not QUERY_DIR.exists(), reason="the TPC-H queries live in ../shared/tpch")
@pytest.mark.parametrize("q", range(1, 23))
def test_every_tpch_query_has_an_incremental_plan(q):
    s = tpch.catalog()
    n = inc(s, (QUERY_DIR / f"q{q:02d}.sql").read_text())
    assert any(isinstance(x, Input) for x in _nodes(n))
    if q == 1:
        assert top(n, Accumulate) is not None and top(n, Recompute) is None  # sums; its ORDER BY goes


@pytest.mark.skipif(not QUERY_DIR.exists(), reason="the TPC-H queries live in ../shared/tpch")
def test_a_semi_join_over_a_join_arranges_the_one_input_its_condition_reads():
    # Q18: the IN over an aggregate reads orders' key only, so it joins orders alone; its
    # arrangements hold orders' rows, not the three-way join's (6 million wide rows at
    # scale 1); the joins above look the change up against its output
    n = inc(tpch.catalog(), (QUERY_DIR / "q18.sql").read_text())
    (semi,) = [x for x in _nodes(n) if isinstance(x, Recompute) and x.operator == "SemiJoin"]
    assert [i.plan.relation.name for i in _nodes(semi.inputs[0]) if isinstance(i, Input)] == ["orders"]
    assert [len(a.columns) for a in semi.states] == [4, 1]


@pytest.mark.parametrize("sql, side", [
    ("SELECT t.b, u.c FROM t JOIN u ON t.a = u.a WHERE t.b IN (SELECT a FROM u)", "t"),
    ("SELECT t.b, u.c FROM t JOIN u ON t.a = u.a WHERE NOT EXISTS (SELECT 1 FROM t t2 WHERE t2.f = length(u.c))", "u"),
])
def test_semi_and_anti_joins_move_into_the_join_side_they_read(snap, sql, side):
    n = inc(snap, sql)
    (j,) = [x for x in _nodes(n) if isinstance(x, DeltaJoin)]
    (r,) = [x for x in _nodes(n) if isinstance(x, Recompute)]
    assert r in list(_nodes(j.inputs[0 if side == "t" else 1]))


def test_a_semi_join_reading_both_join_sides_stays_above_the_join(snap):
    n = inc(snap, "SELECT t.b FROM t JOIN u ON t.a = u.a WHERE EXISTS (SELECT 1 FROM t t2 WHERE t2.b = t.b AND t2.f = length(u.c))")
    assert isinstance(top(n, Recompute).inputs[0], DeltaJoin)


def top(n, cls):
    """The first node of class ``cls`` from the top, or None."""
    return next((x for x in _nodes(n) if isinstance(x, cls)), None)


def _nodes(n):
    yield n
    for i in inc_inputs(n):
        yield from _nodes(i)


def _maintained(snap, sql):
    from planner.context import MAINTAINED, PlanContext

    return inc(snap, sql, PlanContext.starting(MAINTAINED))


def test_temporal_filter_takes_its_bounds_and_leaves_the_rest_linear(snap):
    from planner.incremental.nodes import Temporal

    n = _maintained(snap, "SELECT a FROM t WHERE mz_now() >= b AND b > 2 AND mz_now() < n + 5 AND a <= mz_now()")
    (tf,) = [x for x in _nodes(n) if isinstance(x, Temporal)]
    # >= b and a <= mz_now() are lower bounds (inclusive); < n + 5 an upper (exclusive)
    assert [off for _, off in tf.lowers] == [0, 0] and [off for _, off in tf.uppers] == [0]
    assert kinds(tf.input) == ["Linear", "Linear", "Input"]  # b > 2 stays a plain Filter (over t narrowed)
    assert "Temporal from=[" in "\n".join(explain_incremental(n))
    (eq,) = [x for x in _nodes(_maintained(snap, "SELECT a FROM t WHERE mz_now() = b")) if isinstance(x, Temporal)]
    assert [off for _, off in eq.lowers] == [0] and [off for _, off in eq.uppers] == [1]
    (gt,) = [x for x in _nodes(_maintained(snap, "SELECT a FROM t WHERE mz_now() > b AND mz_now() <= a"))
             if isinstance(x, Temporal)]
    assert [off for _, off in gt.lowers] == [1] and [off for _, off in gt.uppers] == [1]


@pytest.mark.parametrize("sql", [
    "SELECT mz_now(), a FROM t",
    "SELECT a FROM t WHERE mz_now() > b OR a = 1",
    "SELECT a FROM t WHERE mz_now() <> b",
    "SELECT a FROM t WHERE mz_now() < mz_now()",
    "SELECT 1 WHERE mz_now() > 5 OR true",
])
def test_mz_now_outside_a_temporal_filter_is_0A000(snap, sql):
    with pytest.raises(SqlError) as e:
        _maintained(snap, sql)
    assert e.value.sqlstate == "0A000"


def test_explain_shows_a_recomputed_operator_with_its_template(snap):
    # (the template's leaves are Holes, which EXPLAIN of a plan did not know: AttributeError)
    text = "\n".join(explain_incremental(inc(snap, "SELECT t.a, u.c FROM t LEFT JOIN u ON t.a = u.a")))
    assert "Recompute LeftJoin per group: Join left" in text and "keys=[#0]" in text


@pytest.mark.parametrize("sql, timed", [
    ("SELECT a, max(b) FROM t GROUP BY a", True),
    ("SELECT DISTINCT a, b FROM t", True),
    ("SELECT a FROM t EXCEPT SELECT a FROM u", True),
    ("SELECT t.b, u.c FROM t LEFT JOIN u ON t.a = u.a", True),
    ("SELECT t.b, u.c FROM t FULL JOIN u ON t.a = u.a", True),
    ("SELECT b FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a)", True),
    ("SELECT a, row_number() OVER (PARTITION BY a ORDER BY b) FROM t", True),
    ("SELECT max(b) FROM t", True),  # one group, answering a row over no rows
    ("SELECT a FROM t ORDER BY b LIMIT 3", True),  # TopK: one group
    ("SELECT a FROM t ORDER BY b DESC OFFSET 1", True),
    ("SELECT a, row_number() OVER (ORDER BY b) FROM t", True),  # a window of one partition
])
def test_a_recomputed_operator_takes_the_time_as_a_key(snap, sql, timed):
    """A round of several times recomputes each touched group once per time it changed
    at (planner.incremental.timed): the operator's template over inputs with ``_t`` and
    ``_tn`` after their own columns, answering the template's columns and then both.
    Operators of one group too; of them only an aggregate without GROUP BY answers a row
    over no rows (``answers_no_rows``), which the renderer fills in per time."""
    from planner.incremental.timed import TIME_COLUMNS, answers_no_rows, timed_template

    rec = [x for x in _nodes(inc(snap, sql)) if isinstance(x, Recompute)]
    assert rec
    got = [timed_template(r) for r in rec]
    assert all(g is not None for g in got) == timed
    assert any(answers_no_rows(r) for r in rec) == sql.startswith("SELECT max(b) FROM t")
    for r, g in zip(rec, got):
        if g is not None:
            assert [t for _, t in g.columns] == [t for _, t in r.template.columns] + [t for _, t in TIME_COLUMNS]
