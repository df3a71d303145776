"""Units of materialized views: which input updates a view has not covered yet
(``spark_exec.materializations.changed_time``), and the statements' parsing."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from catalog.errors import SqlError
from persist.state import Part, ShardState
from spark_exec.materializations import _release_when_done, changed_time
from sqlfront import mzparse as mz


def _part(lower: int, upper: int, ts: int | None) -> Part:
    return Part(f"k{lower}-{upper}", lower, upper, 1, 1, ts=ts)


def test_changed_time_is_the_newest_update_the_view_has_not_covered():
    appended = ShardState(parts=(_part(0, 11, 10), _part(11, 21, 20), _part(21, 31, 30)))

    def at(states, upper, target, seen=None):
        return changed_time(states, upper, target, seen)[0]

    # Without memory (a restarted process): parts' times decide.
    assert at([appended], 0, 100) == 30
    assert at([appended], 21, 100) == 30
    assert at([appended], 31, 100) is None          # all covered
    assert at([appended], 15, 25) == 20             # 30 is past the target
    assert at([appended], 25, 29) is None
    # A compacted part knows only its bounds: straddling the target counts as the target.
    compacted = ShardState(parts=(_part(5, 50, None),))
    assert at([compacted], 10, 30) == 30
    assert at([compacted], 10, 60) == 49
    assert at([compacted], 50, 60) is None
    assert at([appended, compacted], 31, 60) == 49
    # With memory: a part not seen before is a change even at times below upper (compaction
    # moves times back to since), put at upper; parts past the target stay unseen.
    _, seen = changed_time([appended], 0, 25)
    assert seen == {"k0-11", "k11-21"}
    assert at([appended], 26, 40, seen) == 30
    relabeled = ShardState(parts=(_part(3, 4, 3),))  # compaction's output, at since 3
    assert at([relabeled], 26, 40, seen) == 26
    assert at([relabeled], 26, 40, frozenset({"k3-4"})) is None


def test_parse_materialized_view_statements():
    st = mz.parse_mz("CREATE OR REPLACE MATERIALIZED VIEW IF NOT EXISTS s.mv (a, b) IN CLUSTER c2 AS "
                     "SELECT x, y FROM t;")
    assert st == mz.CreateMaterializedView("s", "mv", "SELECT x, y FROM t", ("a", "b"), "c2", True, True)
    assert mz.parse_mz("CREATE OR REPLACE VIEW v AS SELECT 1") is None
    assert mz.parse_mz("SHOW MATERIALIZED VIEWS IN CLUSTER c") == mz.ShowMaterializedViews(None, "c")
    assert mz.parse_mz("SHOW MATERIALIZED VIEWS FROM public LIKE 'm%'") == \
        mz.ShowMaterializedViews("public", None, "m%")
    assert mz.parse_mz("SHOW CREATE MATERIALIZED VIEW materialize.public.mv") == \
        mz.ShowCreate("materialized view", "public", "mv")
    with pytest.raises(SqlError) as e:
        mz.parse_mz("CREATE MATERIALIZED VIEW mv WITH (REFRESH EVERY '1 day') AS SELECT 1")
    assert e.value.sqlstate == "0A000"
    with pytest.raises(SqlError) as e:
        mz.parse_mz("CREATE MATERIALIZED VIEW mv SELECT 1")
    assert e.value.sqlstate == "42601"


class _Group:
    def __init__(self):
        self.released = 0

    def release(self):
        self.released += 1


def test_a_rounds_holds_are_released_when_the_last_replica_is_done_not_the_first():
    """The winner of a round returns first; a replica still hydrating reads its snapshot
    under the round's holds, so they go only when every replica's run ended."""
    slow = threading.Event()
    group = _Group()
    with ThreadPoolExecutor(2) as pool:
        fast = pool.submit(lambda: "winner")
        loser = pool.submit(slow.wait, 10)
        fast.result()
        _release_when_done([fast, loser], group)
        assert group.released == 0
        slow.set()
        loser.result()
    assert group.released == 1
    done = _Group()
    _release_when_done([fast, loser], done)  # all done already: at once
    assert done.released == 1


def test_a_query_planned_again_to_an_equal_plan_keeps_its_incremental_plan():
    # Each catalog version (any DDL) plans a view's query again; an equal plan must give
    # the same incremental plan, or every dataflow of the cluster hydrates again
    from types import SimpleNamespace

    import pglast

    from planner.query import QueryPlanner
    from spark_exec.materializations import MaterializationMaintainer
    from sqlfront import tpch

    snap = tpch.catalog()
    sql = "SELECT o_orderpriority, count(*) FROM orders JOIN lineitem ON l_orderkey = o_orderkey GROUP BY 1"

    def planned(q):
        return SimpleNamespace(view=SimpleNamespace(id="u9"), plan=QueryPlanner(snap).plan_select(pglast.parse_sql(q)[0].stmt).plan)

    mm = MaterializationMaintainer.__new__(MaterializationMaintainer)
    mm._plans = {}
    first = mm._incremental(planned(sql))
    assert mm._incremental(planned(sql)) is first
    assert mm._incremental(planned(sql.replace("count(*)", "sum(l_quantity)"))) is not first
    assert len(mm._plans) == 1
