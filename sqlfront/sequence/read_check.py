"""What a transaction block that wrote, then read, must re-check at COMMIT (issue 28).

The block reads at its read timestamp and writes at COMMIT's, later: were another
session's write that the block's read would have seen to land in between, the block
would be ordered both before that write and after it (Adya's G-single). COMMIT therefore
validates each table the block read (optimistic concurrency control, Kung and Robinson,
1981): when the table's upper moved past the read's timestamp, the updates that landed
since are its updates between the read's timestamp and its upper now; if
none of them passes the filter the block's reads of the table selected rows by, the
read is unchanged at the later time, and the COMMIT's appends are made conditional on
the table's new upper (group commit's ``expected_upper``), so nothing lands in between.
Any other case is a conflict (40001): a read that is not a filter of that one table
(a join, an aggregate, LIMIT, a subquery), a table with a column type outside
:data:`EXACT_TYPES` (its rows' Python values might not compare as the interpreter's),
more than :data:`MAX_UPDATES` updates since the read, or a since past the read's timestamp.

Before this, any write to a table the block read failed the COMMIT, which on the chaos
workload's one table failed 140 of 327 transactions on two processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from catalog.snapshot import Table
from catalog.types import BOOL, INT2, INT4, INT8, TEXT, arrow_schema
from persist import SinceError
from planner import interpret
from planner.context import PlanContext
from planner.plan import Constant, Filter, Get, OrderBy, Project
from planner.scalar import OuterRef, Subquery, walk

if TYPE_CHECKING:
    from sqlfront.session import Session

#: column types whose stored values are the planner's own (ints, text, bool)
EXACT_TYPES = frozenset({BOOL, INT2, INT4, INT8, TEXT})
#: more updates than this landed since the read (counted by the parts holding them):
#: not re-read at COMMIT, a conflict
MAX_UPDATES = 10_000


@dataclass
class ReadCheck:
    """The reads of one table by a block that had written: ``as_of`` its read timestamp,
    ``predicates`` the filters they selected rows by (None: some read was not a filter of
    this one table, so any change conflicts)."""

    table: Table
    as_of: int
    predicates: list | None = field(default_factory=list)


def row_filter(plan, table: Table):
    """The predicate ``plan`` selects ``table``'s rows by, when ``plan`` is a filter of
    that table alone (under a projection and an ORDER BY); True for the whole table; None
    otherwise."""
    while isinstance(plan, (Project, OrderBy)):
        plan = plan.input
    if isinstance(plan, Get):
        return True if getattr(plan.relation, "shard_id", None) == table.shard_id else None
    if isinstance(plan, Filter) and isinstance(plan.input, Get) \
            and getattr(plan.input.relation, "shard_id", None) == table.shard_id \
            and not any(isinstance(e, (Subquery, OuterRef)) for e in walk(plan.predicate)):
        return plan
    return None


def note(checks: dict, table: Table, as_of: int, plan) -> None:
    """Add a read of ``table`` at ``as_of`` by ``plan`` to ``checks`` (shard -> ReadCheck)."""
    c = checks.setdefault(table.shard_id, ReadCheck(table, as_of))
    f = row_filter(plan, table)
    if isinstance(f, Filter) and c.predicates is not None:
        c.predicates.append(f)
    else:  # the whole table, or a read of another shape: any change conflicts
        c.predicates = None


def expected_upper(persist, c: ReadCheck, ctx: PlanContext) -> int | None:
    """The upper COMMIT may append at for ``c`` (its table's upper now), or None when a
    write since the read changed what the block read (a conflict). The read's predicates
    are evaluated in the COMMIT's context ``ctx`` (``planner.context.PlanContext``).
    Reads only the updates that landed after the read (``PersistClient.read_changes``):
    the cost is the change's, not the table's."""
    st = persist.state(c.table.shard_id)
    if st.upper <= c.as_of + 1:
        return st.upper  # nothing landed after the read
    if c.predicates is None or any(col.type not in EXACT_TYPES for col in c.table.columns):
        return None
    schema = arrow_schema([col.name for col in c.table.columns], [col.type for col in c.table.columns])
    try:
        changes = persist.read_changes(c.table.shard_id, schema, c.as_of, st.upper - 1, max_updates=MAX_UPDATES)
    except SinceError:
        return None
    if changes is None:
        return None
    changed = tuple(zip(*(changes.column(i).to_pylist() for i in range(len(schema))))) if changes.num_rows else ()
    for f in c.predicates:
        try:
            selected = interpret.run(Filter(Constant(changed, f.input.columns), f.predicate), lambda t: [], ctx=ctx)
        except Exception:  # noqa: BLE001 - a predicate the interpreter cannot evaluate: cannot tell, so a conflict
            return None
        if selected:
            return None
    return st.upper


def note_read(s: Session, table, as_of: int, plan) -> None:
    """Remember that a block with buffered writes read ``table`` at ``as_of`` by ``plan``:
    COMMIT checks that no write since changed what it read (``read_check``), and appends
    only while that holds.

    Why: the block's reads are at its read timestamp and its writes at COMMIT's, later.
    Were another session's write to what it read to land in between, the block would be
    serialized before that write (it did not see it) and after it (its writes come
    later): not serializable (Adya's G-single). Materialize forbids reads after writes in
    a block; sqlfront allows them (issue 16) and so validates them at COMMIT."""
    note(s.transaction.read_uppers, table, as_of, plan)
