"""spark_exec.dataflow's kept sums of an accumulating GROUP BY, without a replica: which
sums a view's state holds (each one is aggregated by Spark in every round)."""

from __future__ import annotations

from types import SimpleNamespace

import pglast

from catalog.durable import CatalogStore
from catalog.snapshot import Table
from planner.ddl import plan_columns
from planner.incremental import incremental_plan
from planner.incremental.nodes import Accumulate, walk
from planner.query import QueryPlanner
from spark_exec.dataflow import _Sums
from spark_exec.lower import Lowerer


def _sums(sql: str) -> _Sums:
    cols = plan_columns(pglast.parse_sql("CREATE TABLE t (a int, b int, n numeric)")[0].stmt)
    snap = CatalogStore(":memory:").load().with_changes(tables={"u1": Table("u1", "public", "t", cols, "s1")})
    inc = incremental_plan(QueryPlanner(snap).plan_select(pglast.parse_sql(sql)[0].stmt).plan)
    (acc,) = [n for n in walk(inc) if isinstance(n, Accumulate)]
    # (the expressions are only built and compared, never sent: no session needed)
    return _Sums(acc, Lowerer(SimpleNamespace(client=None), None, None))


def test_an_argument_several_aggregates_take_is_summed_once():
    """sum(n), avg(n) (sum and count of n) and count(n) read one sum and one count of n;
    count(*) and count(1) one of a constant."""
    s = _sums("SELECT a, sum(n), avg(n), count(n), count(*), count(1) FROM t GROUP BY a")
    assert s.names == ["_v0", "_n0", "_v1", "_n1", "_rows"]
    assert s.slots == (0, 0, 0, 0, 1, 1)


def test_different_arguments_keep_their_own_sums():
    s = _sums("SELECT a, sum(n), sum(b), avg(b + 1) FROM t GROUP BY a")
    assert len(s.names) == 2 * len(set(s.slots)) + 1 and s.slots[:2] == (0, 1)
    assert len(set(s.slots)) == 3
