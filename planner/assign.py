"""PostgreSQL's assignment casts (10.4 "Value Storage"; pg_cast's castcontext 'a'): which
types a column of another type accepts, and an expression cast to store it in one.

Shared by the writes (``planner.writes``: INSERT, UPDATE) and the DDL (``planner.ddl``:
a column's DEFAULT), below both: it must not plan statements.
"""

from __future__ import annotations

from catalog.errors import SqlError, DATATYPE_MISMATCH
from catalog.textio import DEFAULT_FORMAT, TextFormat
from catalog.types import SqlType, TEXT
from planner.expr import coerce, infer_param
from planner.scalar import Call, Cast, Literal


def check_assignable(src: SqlType, dst: SqlType, column: str, what: str = "expression"):
    """Raises SqlError 42804 when a value of type ``src`` cannot be assigned to column
    ``column`` of type ``dst`` (``what``: how the message names the value)."""
    # Assignment casts exist between numbers, between strings, from anything to text,
    # between date and timestamp; not e.g. from boolean to integer (PostgreSQL's pg_cast).
    if src.is_array and dst.is_array:  # arrays assign element by element (array_coerce)
        return check_assignable(src.element, dst.element, column, what)
    ok = (
        src.name == "unknown"
        or src.name == dst.name
        or (src.is_numeric and dst.is_numeric)
        or dst.is_string
        or {src.name, dst.name} <= {"date", "timestamp", "timestamptz"}
    )
    if not ok:
        raise SqlError(
            DATATYPE_MISMATCH,
            f'column "{column}" is of type {dst.sql()} but {what} is of type {src.sql()}',
            hint="You will need to rewrite or cast the expression.",
        )


def assign_expr(e, t: SqlType, column: str, what: str = "expression", fmt: TextFormat = DEFAULT_FORMAT):
    """``e`` assigned to a column of type ``t`` (PostgreSQL's assignment cast); an untyped
    literal is read in the session's text settings ``fmt`` (``planner.expr.coerce``).

    Raises:
        SqlError 42804 when there is no assignment cast from ``e``'s type."""
    p = infer_param(e, t)
    if p is not None:
        return p
    if isinstance(e, Literal) and (e.type.name == "unknown" or e.value is None):
        return coerce(e, t, fmt=fmt)
    check_assignable(e.type, t, column, what)
    if e.type == t:
        return e
    if t.name in ("varchar", "bpchar") and t.precision is not None:
        # An assignment cast: too long is 22001, unlike an explicit cast, which cuts.
        return Call("assign_string", (e if e.type.is_string else Cast(e, TEXT),), t)
    return Cast(e, t)
