"""Window functions (PostgreSQL 9.22): the ranking and offset functions; aggregates
over a window are the aggregate entries. Their frame logic lives with the Window
operator (``planner.interpret._window``, ``spark_exec.lower.Lowerer._window_fn``); the
entries here declare names, signatures and result types for planning."""

from __future__ import annotations

from planner.functions import Function, register, sig

register(
    Function("row_number", (sig(ret="int8"),), None, None, sql_names=("row_number",), kind="window", doc="9.22",
             samples=("row_number() over (order by k)",)),
    Function("rank", (sig(ret="int8"),), None, None, sql_names=("rank",), kind="window", doc="9.22",
             samples=("rank() over (order by b)",)),
    Function("dense_rank", (sig(ret="int8"),), None, None, sql_names=("dense_rank",), kind="window", doc="9.22",
             samples=("dense_rank() over (order by b)",)),
    Function("lag", (sig("anyelement", ret="anyelement"), sig("anyelement", "int4", ret="anyelement"),
                     sig("anycompatible", "int4", "anycompatible", ret="anycompatible")),
             None, None, sql_names=("lag",), kind="window", doc="9.22",
             samples=("lag(s) over (order by k)", "lag(i, 2, 0) over (order by k)")),
    Function("lead", (sig("anyelement", ret="anyelement"), sig("anyelement", "int4", ret="anyelement"),
                      sig("anycompatible", "int4", "anycompatible", ret="anycompatible")),
             None, None, sql_names=("lead",), kind="window", doc="9.22",
             samples=("lead(s) over (order by k)",)),
)
