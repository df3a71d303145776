"""EXPLAIN: PostgreSQL's ``EXPLAIN query`` and Materialize's ``EXPLAIN [stage] PLAN FOR``
and ``EXPLAIN TIMESTAMP FOR``: the plan of a query (or of a view's, a materialized view's
or an index's definition) at each stage, without running it (the physical plan is the
Spark job a peek would run, asked of a replica).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pglast import ast

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, WRONG_OBJECT_TYPE
from catalog.snapshot import Table
from catalog.types import TEXT
from planner import interpret
from planner.plan import relations_read
from planner.query import QueryPlanner
from sqlfront.parse import parse_one
from sqlfront.sequence.peek import peek
from sqlfront.sequence.result import Result
from sqlfront.sequence.show import relation_by_id, resolve_index

if TYPE_CHECKING:
    from sqlfront.session import Session


def explain_stmt(s: Session, stmt, sql: str, params) -> Result:
    """PostgreSQL's ``EXPLAIN query``: the optimized plan.

    Raises:
        SqlError 0A000 for any option (``ANALYZE``, ``VERBOSE``, ``FORMAT``, ...): none is
        implemented, and Materialize's EXPLAIN takes none of PostgreSQL's."""
    if stmt.options:
        names = ", ".join(o.defname.upper() for o in stmt.options)
        raise SqlError(FEATURE_NOT_SUPPORTED, f"EXPLAIN option {names} is not supported",
                       hint="EXPLAIN [RAW | DECORRELATED | OPTIMIZED | PHYSICAL] PLAN FOR shows each stage.")
    return explain(s, stmt.query, "optimized", params)


def explain_plan(s: Session, stmt, sql: str, params) -> Result:
    """Materialize's ``EXPLAIN [stage] PLAN [WITH (...)] [AS TEXT | JSON] FOR ...`` and
    ``EXPLAIN TIMESTAMP FOR query`` (see ``mzparse.ExplainPlan``): the plan of a query, of
    a view's or materialized view's definition, or of what an index arranges (the indexed
    object's definition); ``EXPLAIN INCREMENTAL PLAN`` shows how a materialized view (of
    that query) is kept current (``planner.incremental``).

    Raises:
        SqlError 0A000 for WITH options and AS JSON (none is implemented); 42P01 / 42809
        for a name that is no object of the kind named; 0A000 for a query with no
        incremental plan."""
    if stmt.options:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"EXPLAIN option {', '.join(stmt.options)} is not supported")
    if stmt.format != "text":
        raise SqlError(FEATURE_NOT_SUPPORTED, "EXPLAIN ... AS JSON is not supported", hint="Use AS TEXT.")
    if stmt.view is None:
        q = parse_one(stmt.query)
    else:
        q = parse_one(_explained_definition(s, stmt))
    if stmt.stage == "timestamp":
        return explain_timestamp(s, q, params)
    return explain(s, q, stmt.stage, params)


def _explained_definition(s: Session, stmt) -> str:
    """The SQL whose plan EXPLAIN ... FOR VIEW | MATERIALIZED VIEW | INDEX shows: the
    view's definition, or the indexed object's (a table's: a SELECT of it). The index's
    object is checked for privileges here, as the object named is by ``sqlfront.rbac``.

    Raises:
        SqlError 42P01 for an unknown name; 42809 for an object of another kind."""
    from dataclasses import replace

    from catalog.snapshot import MaterializedView, View
    from sqlfront.rbac import authorize_statement

    snap = s.catalog
    if stmt.kind == "index":
        rel = relation_by_id(snap, resolve_index(snap, *stmt.view).on_id)
    else:
        rel = snap.resolve_relation(*stmt.view)
    if stmt.kind in ("view", "materialized view"):
        want = View if stmt.kind == "view" else MaterializedView
        if not isinstance(rel, want):
            raise SqlError(WRONG_OBJECT_TYPE, f"{stmt.view[1]} is not a {stmt.kind}")
    else:  # an index's object: its reads are checked as a SELECT of it
        authorize_statement(s, replace(stmt, query=f"SELECT * FROM {rel.schema}.{rel.name}", view=None, kind=None))
    return rel.sql if isinstance(rel, (View, MaterializedView)) else f"SELECT * FROM {rel.schema}.{rel.name}"


def explain_timestamp(s: Session, q, params) -> Result:
    """``EXPLAIN TIMESTAMP FOR query`` (Materialize's): the timestamp the query would read
    at and why, one line each (column ``Timestamp``): the oracle's read timestamp, and
    each stored input's since (the earliest readable time) and upper (the first time not
    yet complete). The query does not run.

    Raises:
        SqlError 0A000 for anything but a SELECT."""
    from catalog.snapshot import MaterializedView

    if not isinstance(q, ast.SelectStmt):
        raise SqlError(FEATURE_NOT_SUPPORTED, "EXPLAIN TIMESTAMP supports SELECT only")
    plan = QueryPlanner(s.catalog, params, ctx=s.statement.plan).plan_raw(q).plan
    ts = s.read_ts()
    inputs = sorted({r.id: r for r in relations_read(plan) if isinstance(r, Table)}.values(), key=lambda r: r.id)
    states = [s.env.persist.state(r.shard_id) for r in inputs]
    # a table's upper below ts is advanced when read; a materialized view's is waited for
    ready = all(st.upper > ts for r, st in zip(inputs, states) if isinstance(r, MaterializedView))
    lines = [f"                query timestamp: {ts}", f"          oracle read timestamp: {s.env.oracle.read_ts()}",
             f"        can respond immediately: {'true' if ready else 'false'}", ""]
    for r, st in zip(inputs, states):
        kind = "materialized view" if isinstance(r, MaterializedView) else "table"
        lines += [f"source materialize.{r.schema}.{r.name} ({r.id}, {kind}):",
                  f"                  read frontier: [{st.since}]", f"                 write frontier: [{st.upper}]", ""]
    return Result("EXPLAIN", [("Timestamp", TEXT)], [(line,) for line in lines[:-1]])


def explain(s: Session, q, stage: str, params) -> Result:
    """EXPLAIN of a SELECT at ``stage`` (raw, decorrelated, optimized or physical): one row
    per line of the plan (Materialize's ``EXPLAIN ... PLAN FOR``; plain EXPLAIN is the
    optimized plan). The physical plan is Spark's, of the optimized plan as lowered on a
    replica of the session's cluster (Materialize's physical plan is its LIR; ours is the
    Spark job a peek runs); the query itself does not run.

    Raises:
        SqlError 0A000 for anything but a SELECT; for the physical plan, what a peek raises
        when the cluster has no healthy replica."""
    from planner.explain import explain as explain_lines
    from planner.optimize import DECORRELATION, optimize

    if not isinstance(q, ast.SelectStmt):
        raise SqlError(FEATURE_NOT_SUPPORTED, "EXPLAIN supports SELECT only")
    ctx = s.statement.plan
    if stage == "incremental":  # as a materialized view has it: mz_now() of each moment
        from planner.context import MAINTAINED

        ctx = ctx.with_mz_now(MAINTAINED)
    planner = QueryPlanner(s.catalog, params, row_count=s.env.storage.row_count, ctx=ctx)
    plan = planner.plan_raw(q).plan
    if stage == "decorrelated":
        plan = optimize(plan, rules=DECORRELATION, ctx=ctx)
    elif stage in ("optimized", "physical", "incremental"):
        plan = optimize(plan, s.env.storage.row_count, ctx=ctx)
    if stage == "incremental":
        from planner.incremental import incremental_plan
        from planner.incremental.explain import explain_incremental

        lines = explain_incremental(incremental_plan(plan))
        return Result("EXPLAIN", [("Incremental Plan", TEXT)], [(line,) for line in lines])
    if stage == "physical" and interpret.is_fast_path(plan):
        return Result("EXPLAIN", [("Physical Plan", TEXT)], [("Evaluated in environmentd: the query reads no table",)])
    if stage == "physical":
        text = peek(s, plan, job=lambda df, replica_id: df._explain_string(extended=False))
        return Result("EXPLAIN", [("Physical Plan", TEXT)], [(line,) for line in text.splitlines() if line])
    lines = explain_lines(plan)
    if stage == "optimized":
        lines = _read_indexes(s, q, params, plan) or lines
    return Result("EXPLAIN", [(f"{stage.capitalize()} Plan", TEXT)], [(line,) for line in lines])


def _read_indexes(s: Session, q, params, plan) -> list[str] | None:
    """The optimized plan's lines as a peek of ``q`` would run it when it reads views
    from their indexes on the session's cluster (``peek.indexed_plan``): each such view
    ``ReadIndex on=... idx=...``, then Materialize's ``Used Indexes:`` footer; None when
    the peek would read no index. Which replica's index answers is the peek's choice
    (one whose index serves its timestamp; else it runs the view's query)."""
    from planner.explain import explain as explain_lines
    from sqlfront.sequence.peek import index_reads, indexed_plan, views_read

    indexed = indexed_plan(s, q, params, plan)
    if indexed is None:
        return None
    used = {vid: idx for vid, idx in index_reads(s, q).items() if vid in views_read(indexed)}
    return (explain_lines(indexed, {vid: idx.name for vid, idx in used.items()}) + ["", "Used Indexes:"]
            + sorted(f"  - {idx.schema}.{idx.name}" for idx in used.values()))
