"""Window functions (PostgreSQL 9.22): the ranking, distribution and offset functions;
aggregates over a window are the aggregate entries.

A window entry's Python implementation is ``py(part)``: the function's value for each row
of one partition, given as a ``Partition`` (rows in window order, their peer groups, the
frame of each row, argument values); its Spark lowering ``spark(S, args, call)`` returns
a Spark column, putting the window (partition, order and, for ``extra["framed"]``
entries, the frame) on a window function with ``S.over(column)``. The Window operator
itself (``planner.interpret``, ``spark_exec.lower``) only partitions and orders rows.

Frames (PostgreSQL 4.2.8): ``ROWS`` and ``RANGE`` with ``UNBOUNDED``, ``n PRECEDING``,
``CURRENT ROW``, ``n FOLLOWING``; only first_value, last_value, nth_value and aggregates
read the frame, the others ignore it, as in PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from catalog.errors import (
    SqlError, FEATURE_NOT_SUPPORTED, INVALID_ARGUMENT_FOR_NTH_VALUE_FUNCTION,
    INVALID_ARGUMENT_FOR_NTILE_FUNCTION,
)
from planner.functions.registry import Function, register, sig


@dataclass(frozen=True)
class Frame:
    """A window frame: ``mode`` rows or range; ``start``/``end`` each (kind, offset) with
    kind one of unbounded_preceding, preceding, current, following, unbounded_following
    and offset a non-negative number (for preceding/following) or None."""

    mode: str
    start: tuple
    end: tuple


class Partition:
    """One partition of a window, in window order, for a window entry's ``py``.

    ``n``: the number of rows; ``nargs``: the number of arguments; ``arg(i, j)``: argument
    i's value at row j; ``peers[j]``: (first, last + 1) of row j's peer group (rows equal in
    the window's ORDER BY; all rows without one); ``frame(j)``: the row positions of row
    j's frame."""

    def __init__(self, n: int, nargs: int, arg: Callable[[int, int], object], peers: list[tuple[int, int]],
                 frame: Callable[[int], range]):
        self.n = n
        self.nargs = nargs
        self.arg = arg
        self.peers = peers
        self.frame = frame


def frame_rows(frame: Frame | None, j: int, peers: list[tuple[int, int]], keys: list | None,
               descending: bool, n: int) -> range:
    """Row positions of row ``j``'s frame (PostgreSQL 4.2.8). ``frame`` None is the
    default frame (``RANGE UNBOUNDED PRECEDING``: up to the last peer). ``keys``: the
    single ORDER BY key's value per row, for RANGE with an offset."""
    if frame is None:
        return range(0, peers[j][1])

    def bound(kind, off, is_start):
        if kind == "unbounded_preceding":
            return 0
        if kind == "unbounded_following":
            return n
        if kind == "current":
            if frame.mode == "rows":
                return j if is_start else j + 1
            return peers[j][0] if is_start else peers[j][1]
        sign = -1 if kind == "preceding" else 1
        if frame.mode == "rows":
            return min(max(j + sign * off + (0 if is_start else 1), 0), n)
        v = keys[j]
        if v is None:  # NULLs are peers of each other only
            return peers[j][0] if is_start else peers[j][1]
        target = v + sign * off if not descending else v - sign * off
        inside = (lambda x: x is not None and (x >= target if not descending else x <= target)) if is_start else \
            (lambda x: x is not None and (x <= target if not descending else x >= target))
        if is_start:
            return next((i for i in range(n) if inside(keys[i])), n)
        return next((i + 1 for i in range(n - 1, -1, -1) if inside(keys[i])), 0)

    lo = bound(*frame.start, True)
    hi = bound(*frame.end, False)
    return range(lo, max(lo, hi))


def _row_number(part: Partition) -> list:
    return list(range(1, part.n + 1))


def _rank(part: Partition) -> list:
    return [part.peers[j][0] + 1 for j in range(part.n)]


def _dense_rank(part: Partition) -> list:
    out, dense = [], 0
    for j in range(part.n):
        if part.peers[j][0] == j:
            dense += 1
        out.append(dense)
    return out


def _percent_rank(part: Partition) -> list:
    return [0.0 if part.n <= 1 else part.peers[j][0] / (part.n - 1) for j in range(part.n)]


def _cume_dist(part: Partition) -> list:
    return [part.peers[j][1] / part.n for j in range(part.n)]


def _ntile(part: Partition) -> list:
    """Buckets as equal as possible, the larger ones first (PostgreSQL's nodeWindowAgg).

    Raises:
        SqlError 22014 for a bucket count not greater than zero."""
    if not part.n:
        return []
    buckets = part.arg(0, 0)
    if buckets is None:
        return [None] * part.n
    if buckets <= 0:
        raise SqlError(INVALID_ARGUMENT_FOR_NTILE_FUNCTION, "argument of ntile must be greater than zero")
    size, extra = divmod(part.n, buckets)
    out = []
    for b in range(min(buckets, part.n)):
        out += [b + 1] * (size + (1 if b < extra else 0))
    return out


def _offset(direction: int):
    def py(part: Partition) -> list:
        out = []
        for j in range(part.n):
            off = part.arg(1, j) if part.nargs > 1 else 1
            if off is None:
                out.append(None)
                continue
            t = j + direction * off
            out.append(part.arg(0, t) if 0 <= t < part.n else (part.arg(2, j) if part.nargs > 2 else None))
        return out
    return py


def _first_value(part: Partition) -> list:
    return [part.arg(0, f[0]) if len(f := part.frame(j)) else None for j in range(part.n)]


def _last_value(part: Partition) -> list:
    return [part.arg(0, f[-1]) if len(f := part.frame(j)) else None for j in range(part.n)]


def _nth_value(part: Partition) -> list:
    """Raises: SqlError 22016 for a position not greater than zero."""
    out = []
    for j in range(part.n):
        k = part.arg(1, j)
        if k is not None and k <= 0:
            raise SqlError(INVALID_ARGUMENT_FOR_NTH_VALUE_FUNCTION, "argument of nth_value must be greater than zero")
        f = part.frame(j)
        out.append(part.arg(0, f[k - 1]) if k is not None and k <= len(f) else None)
    return out


def _constant_arg(call, i: int, what: str):
    """The value of window call argument ``i``, which Spark needs to be constant."""
    from planner.scalar import Literal

    a = call.args[i]
    if not isinstance(a, Literal):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{call.func} needs a constant {what} on table data")
    return a.value


def _ntile_spark(S, a, c):
    n = _constant_arg(c, 0, "bucket count")
    if n is None:
        return S.F.lit(None).cast("int")
    if n <= 0:
        return S.fail(INVALID_ARGUMENT_FOR_NTILE_FUNCTION, "argument of ntile must be greater than zero")
    return S.over(S.F.ntile(n))


def _offset_spark(kind: str):
    def spark(S, a, c):
        off = _constant_arg(c, 1, "offset")
        if off is None:
            return S.F.lit(None).cast(S.spark_type(c.type))
        f = S.F.lag if kind == "lag" else S.F.lead
        return S.over(f(a[0], off, a[2] if len(a) > 2 else None))
    return spark


def _nth_value_spark(S, a, c):
    k = _constant_arg(c, 1, "position")
    if k is None:
        return S.F.lit(None).cast(S.spark_type(c.type))
    if k <= 0:
        return S.fail(INVALID_ARGUMENT_FOR_NTH_VALUE_FUNCTION, "argument of nth_value must be greater than zero")
    return S.over(S.F.nth_value(a[0], k))


_RANKING = dict(kind="window", doc="9.22")
_FRAMED = dict(kind="window", doc="9.22", extra={"framed": True}, strict=False)

register(
    Function("row_number", (sig(ret="int8"),), _row_number, lambda S, a, c: S.over(S.F.row_number()),
             sql_names=("row_number",), **_RANKING,
             samples=("row_number() over (order by k)", "row_number() over (partition by b order by k desc)")),
    Function("rank", (sig(ret="int8"),), _rank, lambda S, a, c: S.over(S.F.rank()), sql_names=("rank",),
             **_RANKING, samples=("rank() over (order by b)",)),
    Function("dense_rank", (sig(ret="int8"),), _dense_rank, lambda S, a, c: S.over(S.F.dense_rank()),
             sql_names=("dense_rank",), **_RANKING, samples=("dense_rank() over (order by b)",)),
    Function("percent_rank", (sig(ret="float8"),), _percent_rank, lambda S, a, c: S.over(S.F.percent_rank()),
             sql_names=("percent_rank",), **_RANKING,
             samples=("percent_rank() over (order by b)", "percent_rank() over (partition by b order by i)")),
    Function("cume_dist", (sig(ret="float8"),), _cume_dist, lambda S, a, c: S.over(S.F.cume_dist()),
             sql_names=("cume_dist",), **_RANKING,
             samples=("cume_dist() over (order by b)", "cume_dist() over (order by k)")),
    Function("ntile", (sig("int4", ret="int4"),), _ntile, _ntile_spark, sql_names=("ntile",), **_RANKING,
             samples=("ntile(2) over (order by k)", "ntile(3) over (partition by b order by k)",
                      "ntile(0) over (order by k)", "ntile(10) over (order by k)")),
    Function("lag", (sig("anyelement", ret="anyelement"), sig("anyelement", "int4", ret="anyelement"),
                     sig("anycompatible", "int4", "anycompatible", ret="anycompatible")),
             _offset(-1), _offset_spark("lag"), sql_names=("lag",), **_RANKING,
             samples=("lag(s) over (order by k)", "lag(i, 2, 0) over (order by k)")),
    Function("lead", (sig("anyelement", ret="anyelement"), sig("anyelement", "int4", ret="anyelement"),
                      sig("anycompatible", "int4", "anycompatible", ret="anycompatible")),
             _offset(1), _offset_spark("lead"), sql_names=("lead",), **_RANKING,
             samples=("lead(s) over (order by k)", "lead(i, 1, -1) over (partition by b order by k)")),
    Function("first_value", (sig("anyelement", ret="anyelement"),), _first_value,
             lambda S, a, c: S.over(S.F.first_value(a[0])), sql_names=("first_value",), **_FRAMED,
             samples=("first_value(s) over (order by k)", "first_value(i) over (order by k desc)",
                      "first_value(i) over (order by k rows between 1 following and 2 following)")),
    Function("last_value", (sig("anyelement", ret="anyelement"),), _last_value,
             lambda S, a, c: S.over(S.F.last_value(a[0])), sql_names=("last_value",), **_FRAMED,
             samples=("last_value(i) over (order by b)",
                      "last_value(s) over (order by k rows between unbounded preceding and unbounded following)")),
    Function("nth_value", (sig("anyelement", "int4", ret="anyelement"),), _nth_value, _nth_value_spark,
             sql_names=("nth_value",), **_FRAMED,
             samples=("nth_value(i, 2) over (order by k)", "nth_value(s, 1) over (partition by b order by k)",
                      "nth_value(i, 2) over (order by k rows between current row and unbounded following)",
                      "nth_value(i, 0) over (order by k)")),
)
