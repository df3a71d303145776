"""The rule for temporal filters: ``mz_now()`` in a maintained query's WHERE
(Materialize's SQL reference, "Temporal filters").

A Filter whose predicate mentions ``mz_now()`` splits into its other conjuncts (a plain
Filter, linear) and a ``Temporal`` node over them, whose bounds come from the conjuncts
that compare ``mz_now()`` directly with an expression of the row:

- ``mz_now() >= e`` (``e <= mz_now()``): lower bound ``e``; ``>``: ``e + 1``;
- ``mz_now() < e``: upper bound ``e``; ``<=``: ``e + 1``;
- ``mz_now() = e``: both, ``e`` and ``e + 1``.

Any other use of ``mz_now()`` in a maintained query (in an OR, in the SELECT list, a
join condition, ``<>``) is refused with 0A000, as Materialize refuses it.
"""

from __future__ import annotations

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED
from planner.explain import expr_text
from planner.incremental.nodes import Temporal
from planner.plan import Filter, filtered, map_inputs, map_node_exprs, map_plan_exprs
from planner.scalar import Call, conjoin, conjuncts, walk

#: comparison -> (its mirror image, with mz_now() moved to the left)
_MIRROR = {"ge": "le", "gt": "lt", "le": "ge", "lt": "gt", "eq": "eq"}


def mentions_now(e) -> bool:
    """Whether scalar expression ``e`` calls ``mz_now()``."""
    return any(isinstance(n, Call) and n.func == "mz_now" for n in walk(e))


def plan_mentions_now(p) -> bool:
    """Whether some node of plan ``p`` calls ``mz_now()``."""
    found = []
    map_plan_exprs(p, lambda e: found.append(e) or e)
    return any(isinstance(e, Call) and e.func == "mz_now" for e in found)


def without_temporal(p):
    """Plan ``p`` with every conjunct that mentions ``mz_now()`` left out of its Filters:
    the same columns and types (a filter changes neither), and a plan Spark can lower,
    where ``mz_now()`` has no single value. For a question about the result's schema
    only (``sqlfront.sequence.views``: a view's numeric scales), never for its rows."""
    p = map_inputs(p, without_temporal)
    if isinstance(p, Filter) and mentions_now(p.predicate):
        return filtered(p.input, [c for c in conjuncts(p.predicate) if not mentions_now(c)])
    return p


def _is_now(e) -> bool:
    return isinstance(e, Call) and e.func == "mz_now"


def _unsupported(c) -> SqlError:
    return SqlError(FEATURE_NOT_SUPPORTED, "Unsupported temporal predicate. Note: `mz_now()` must be directly "
                    f"compared to a non-temporal expression of mz_timestamp-castable type. Expression found: "
                    f"{expr_text(c)}")


def bounds(c) -> tuple[list, list]:
    """``(lower bounds, upper bounds)`` of temporal conjunct ``c``, each ``(e, offset)``.

    Raises:
        SqlError 0A000 when ``c`` is not ``mz_now() <op> e`` (or mirrored) with ``e``
        free of ``mz_now()``."""
    if not isinstance(c, Call) or c.func not in _MIRROR or len(c.args) != 2:
        raise _unsupported(c)
    op, (a, b) = c.func, c.args
    if _is_now(b) and not _is_now(a):
        op, a, b = _MIRROR[op], b, a
    if not _is_now(a) or mentions_now(b):
        raise _unsupported(c)
    if op == "ge":
        return [(b, 0)], []
    if op == "gt":
        return [(b, 1)], []
    if op == "lt":
        return [], [(b, 0)]
    if op == "le":
        return [], [(b, 1)]
    return [(b, 0)], [(b, 1)]


def temporal(p, rec, arrange):
    if not isinstance(p, Filter):
        found = []
        map_node_exprs(p, lambda e: found.append(e) or e)
        for e in found:
            if mentions_now(e):
                raise SqlError(FEATURE_NOT_SUPPORTED, "mz_now() in a materialized view or SUBSCRIBE is only "
                               "supported in a temporal filter (WHERE mz_now() compared with the row)")
        return None
    if not mentions_now(p.predicate):
        return None
    plain, lowers, uppers = [], [], []
    for c in conjuncts(p.predicate):
        if not mentions_now(c):
            plain.append(c)
            continue
        lo, hi = bounds(c)
        lowers += lo
        uppers += hi
    rest = conjoin(plain)
    inner = p.input if rest is None else Filter(p.input, rest)
    return Temporal(p, rec(inner), tuple(lowers), tuple(uppers))
