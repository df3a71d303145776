"""EXPLAIN INCREMENTAL PLAN: an incremental plan, one operator per line, indented: how
each operator's change is computed, the state it keeps (arrangements, with their keys)
and what it reads. Columns print as ``#i`` as in the other EXPLAINs."""

from __future__ import annotations

from planner.explain import explain, expr_text
from planner.incremental.nodes import (
    Accumulate, Arrangement, Constant, DeltaJoin, Input, Linear, Recompute, Temporal, UnionAll, inc_inputs,
)
from planner.scalar import conjoin


def _op(plan) -> str:
    """The first line of ``plan``'s EXPLAIN: its own operator."""
    return explain(plan)[0].strip()


def _state(a: Arrangement) -> str:
    keys = ", ".join(expr_text(k) for k in a.keys)
    return f"arrangement {a.id} keys=[{keys}]"


def explain_incremental(n) -> list[str]:
    """The lines of ``EXPLAIN INCREMENTAL PLAN`` for incremental plan ``n``."""
    lines: list[str] = []

    def emit(n, depth: int) -> None:
        pad = "  " * depth
        if isinstance(n, Input):
            lines.append(f"{pad}Changes of {n.plan.relation.schema}.{n.plan.relation.name}")
        elif isinstance(n, Constant):
            lines.append(f"{pad}Constant (at hydration only): {_op(n.plan)}")
        elif isinstance(n, Linear):
            lines.append(f"{pad}Linear {_op(n.plan)}")
        elif isinstance(n, UnionAll):
            lines.append(f"{pad}Linear Union all")
        elif isinstance(n, DeltaJoin):
            on = conjoin(list(n.conditions))
            lines.append(f"{pad}DeltaJoin {'inner on=' + expr_text(on) if on is not None else 'cross'} "
                         f"state=[{'; '.join(_state(a) for a in n.states)}]")
        elif isinstance(n, Recompute):
            lines.append(f"{pad}Recompute {n.operator} per group: {_op(n.template)} "
                         f"state=[{'; '.join(_state(a) for a in n.states)}]")
        elif isinstance(n, Accumulate):
            lines.append(f"{pad}Accumulate {_op(n.plan)} state=[{_state(n.state)}: sums per group]")
        elif isinstance(n, Temporal):
            def bound(b):
                return expr_text(b[0]) + (f" + {b[1]}" if b[1] else "")
            lines.append(f"{pad}Temporal from=[{', '.join(bound(b) for b in n.lowers)}] "
                         f"until=[{', '.join(bound(b) for b in n.uppers)}] state=[pending updates by time]")
        for i in inc_inputs(n):
            emit(i, depth + 1)

    emit(n, 0)
    return lines
