"""Rendering incremental plans (``planner.incremental``) as Spark jobs on a replica.

A :class:`Dataflow` is one maintained query on one replica: its incremental plan, the
arrangements its operators keep (:class:`Spine`: Spark-side batches of updates, held in
the replica's memory), and its *frontier*: the time its arrangements are complete for.

- ``hydrate(as_of)``: the arrangements are built from the inputs' snapshots at ``as_of``
  (Materialize's hydration), and the query's contents at ``as_of`` come out as updates.
- ``step(t)``: the inputs' updates at time ``t`` (just after the frontier) go through
  the plan: each operator's change follows from its inputs' changes and its
  arrangements (``planner.incremental.nodes``'s rules); each arrangement then takes its
  input's change as a new batch. The output's change at ``t`` comes out as updates.
- ``advance(times, target)``: every time waiting, in one round. A plan of linear
  operators, delta joins and accumulating reductions takes all the inputs' updates in
  ``(frontier, target]`` at once, each keeping its time (``_t``): a join's pair of
  updates counts at the later of their times, a reduction's group changes at each time
  its updates have (its sums before and after each time are running sums over the
  times, a window per group); an operator recomputed per group is recomputed per group
  and time (``planner.incremental.timed``); a temporal filter's updates keep their own
  times. So a burst of writes costs one round, not one per write (Materialize's and
  DBSP's batches of many times). An operator of one group (TopK, an aggregate without
  GROUP BY that no accumulation covers) is recomputed per time too, its one group the
  whole input; an aggregate without GROUP BY answers its row over no rows at the times
  its input is empty.

Changes are DataFrames of the node's columns ``c0 .. cN-1`` and ``_d`` (the diff; rows
need not be consolidated). The change of an arrangement's input is checkpointed
(``localCheckpoint``: computed once, kept in the replica's memory, its lineage cut) and
is then both used by the operator and kept as the arrangement's new batch. Batches are
merged, consolidated, when a spine has more than ``Spine.MAX_BATCHES`` of them.

Everything here runs on the thread that owns the replica's Spark session for this
dataflow; nothing here holds a row in environmentd (inline input parts excepted: they
are in persist's state already, and go to Spark as local relations).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from functools import reduce
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.connect.functions as F
from pyspark.sql import types as ST
from pyspark.sql.connect.dataframe import DataFrame

from catalog.snapshot import Table
from catalog.types import INT8
from persist import DIFF_COLUMN, TIME_COLUMN, Part
from persist.write import decode_inline
from planner.incremental.joins import with_leaves
from planner.incremental.nodes import (
    Accumulate, Arrangement, Constant, DeltaJoin, Hole, Input, Linear, Recompute, Temporal, UnionAll, arrangements,
    inc_inputs, walk,
)
from planner.incremental.timed import answers_no_rows, timed_template
from planner.plan import Project, Unnest
from planner.scalar import ColRef, column_refs, conjoin
from spark_exec.lower import (
    Lowerer, _file_schema, _from_storage, maps_groupable, maps_restored_column, numbered_maps, read_layout, summed_diffs,
)

log = logging.getLogger(__name__)

#: the diff column of a change
D = "_d"

#: a step whose inputs' changes hold at most this many updates computes every change in
#: one partition: one Spark task per operator and no exchange (a single partition is
#: what every grouping and join needs already), where the default partitioning would
#: cost a shuffle stage (a job of its own with adaptive execution) per GROUP BY
NARROW_UPDATES = 100_000

#: (table, lower, upper) -> the parts of the table's shard with updates at times in
#: ``(lower, upper]``
ChangesFn = Callable[[Table, int, int], list[Part]]

#: the time column of a change of several times (``Dataflow.advance``)
T = "_t"


def _names(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


class Spine:
    """One arrangement's contents on one replica: batches of updates (``c0 .. cN-1``,
    ``_d``) whose sum is the arrangement's input up to the dataflow's frontier: the
    hydration's checkpoint, then each step's change (checkpointed too, unless it is rows
    sent inside the plan). Immutable: ``with_batch`` gives the next spine, so a change
    computed against the old one stays valid."""

    #: batches past the first before they are merged into one
    MAX_BATCHES = 8

    def __init__(self, columns: int, batches: tuple[DataFrame, ...] = (), merge=None, maps=None):
        self.columns = columns
        self.batches = batches
        #: batches -> one batch with the same contents (default: ``consolidate``, its
        #: columns ``maps`` holding maps: ``lower.numbered_maps``)
        self.merge = merge or (lambda df: consolidate(df, columns, maps))

    def frame(self) -> DataFrame | None:
        """Every update of the arrangement (not consolidated), or None when it has none."""
        return reduce(DataFrame.unionAll, self.batches) if self.batches else None

    def with_batch(self, df: DataFrame) -> "Spine":
        """This spine with ``df`` (checkpointed already) added; the batches after the
        first merged into one, consolidated, when there are too many."""
        batches = self.batches + (df,)
        if len(batches) > self.MAX_BATCHES + 1:
            rest = checkpoint(self.merge(reduce(DataFrame.unionAll, batches[1:])))
            batches = (batches[0], rest)
        return Spine(self.columns, batches, self.merge)


class Contents:
    """A maintained query's output kept on its replica, with times: the arrangement of an
    index on a view (Materialize: an index is its dataflow's output arrangement, and a
    peek at ``as_of`` reads it there). A spine of updates ``c0 .. cN-1``, ``cN`` (their
    time), ``_d``: the hydration's contents at their time, then each round's changes
    with theirs. Its contents at any time in ``[since, frontier]`` are exact (``at``).
    A merge of its batches compacts the times up to ``since`` into ``since``, and moves
    ``since`` to the frontier of the merge before it (so a peek chosen a little before
    a round still finds its time). Immutable batches, as ``Spine``'s: a peek reading it
    while a round adds to it reads the batches it took."""

    def __init__(self, columns: int, since: int, maps=None):
        self.columns = columns
        #: its columns holding maps (``lower.numbered_maps``), consolidated by their entries
        self.maps = maps or {}
        #: the earliest time the contents are exact for
        self.since = since
        #: the time ``since`` moves to at the next merge
        self._next_since = since
        #: the latest time added (the dataflow's frontier, once its round is done)
        self.frontier = since
        #: the time of the latest change taken (the contents are the same from it on)
        self._changed = since
        #: ``(time of the latest change, the rows from it on, consolidated and kept)``:
        #: made by the first peek after a change, read by the next ones
        self._current: tuple[int, DataFrame] | None = None
        self._current_lock = threading.Lock()
        k = columns
        self.spine = Spine(k + 1, merge=lambda df: consolidate(
            df.select(*_names(k), F.greatest(F.col(f"c{k}"), F.lit(self.since)).alias(f"c{k}"), D), k + 1, self.maps))

    def add(self, d: DataFrame | None, frontier: int, t: int | None = None) -> None:
        """Take a change (``c0 .. cN-1``, ``_t``, ``_d``; or without ``_t``, all at ``t``),
        checkpointed here, and note the contents complete for ``frontier``."""
        if d is not None:
            k = self.columns
            at = F.col(T) if t is None else F.lit(t).cast("long")
            batch = checkpoint(d.select(*_names(k), at.alias(f"c{k}"), D))
            if len(self.spine.batches) + 1 > Spine.MAX_BATCHES + 1:  # this batch merges them
                self.since, self._next_since = self._next_since, self.frontier
            self.spine = self.spine.with_batch(batch)
            self._changed = frontier
        self.frontier = frontier

    def serves(self, as_of: int) -> bool:
        """Whether the contents at ``as_of`` can be read here."""
        return self.since <= as_of <= self.frontier

    def at(self, as_of: int) -> DataFrame:
        """The rows at ``as_of`` (``serves`` it): ``c0 .. cN-1``, each row its count
        times."""
        k = self.columns
        changed, df = self._changed, self.spine.frame()
        assert df is not None, "read before hydration"  # (hydration adds a batch, empty or not)
        if as_of >= changed:  # the current contents: consolidated once, by the first peek to want them
            with self._current_lock:
                if self._current is None or self._current[0] != changed:
                    self._current = (changed, checkpoint(consolidate(df.select(*_names(k), D), k, self.maps).filter(F.col(D) > 0)))
                rows = self._current[1]
            return _repeat(rows, k)
        # updates after as_of left out (the time as data: ``time_relation``)
        df = df.crossJoin(time_relation(df.sparkSession, as_of)).filter(F.col(f"c{k}") <= F.col("_tv"))
        return _expand(df.select(*_names(k), D), k, self.maps)


def checkpoint(df: DataFrame) -> DataFrame:
    """``df`` computed now and kept in its replica's memory, its lineage cut
    (``localCheckpoint``), bound to ``df``'s own session. pyspark's client binds a
    checkpoint to the thread's *active* session, which on a thread that serves several
    replicas is any of them (or none, after a restart): made active here for the call."""
    from pyspark.sql.connect.session import SparkSession

    local = SparkSession._active_session
    saved = getattr(local, "session", None)
    local.session = df.sparkSession
    try:
        return df.localCheckpoint(eager=True)
    finally:
        local.session = saved


def consolidate(df: DataFrame, columns: int, maps: dict | None = None, by: tuple = ()) -> DataFrame:
    """``df``'s updates with equal rows (``c0 .. cN-1``, and the columns ``by``) summed,
    those summing to 0 left out (Materialize's consolidation). ``maps``: the columns
    holding maps (``lower.numbered_maps``), grouped by their entries in key order as a
    table's read groups them (``lower.maps_groupable``)."""
    return summed_diffs(df, [*_names(columns), *by], D, maps).filter(F.col(D) != 0)


def _expand(df: DataFrame, columns: int, maps: dict | None = None) -> DataFrame:
    """The rows of a collection of updates (``c0 .. cN-1``, ``_d``): consolidated, each
    row repeated its count times."""
    return _repeat(consolidate(df, columns, maps).filter(F.col(D) > 0), columns)


def _repeat(counted: DataFrame, columns: int) -> DataFrame:
    """Rows with their positive counts (``c0 .. cN-1``, ``_d``) as the rows, each its
    count times."""
    return counted.select(*_names(columns), F.explode(F.array_repeat(F.lit(0), F.col(D).cast("int"))).alias("_n")
                          ).select(*_names(columns))


def _signed(df: DataFrame, columns: int, diff: int) -> DataFrame:
    return df.select(*_names(columns), F.lit(diff).cast("long").alias(D))


class BoundFrame:
    """A plan leaf whose lowering is a given DataFrame (a change, an arrangement's rows)."""

    def __init__(self, df: DataFrame, columns):
        self.df = df
        self.columns = columns


class _DataflowLowerer(Lowerer):
    """The Lowerer, with ``BoundFrame`` leaves and ``Hole``s bound to DataFrames."""

    holes: dict[int, DataFrame] = {}

    def _BoundFrame(self, p: "BoundFrame") -> DataFrame:
        # its unconstrained numerics are values as stored (a table's, an arrangement's):
        # products and texts take each value's own scale (``Lowerer.numeric_scale``), as a
        # peek's of the same query do
        self._stored[id(p)] = frozenset(i for i, (_, t) in enumerate(p.columns) if t.name == "numeric"
                                        and t.precision is None and t.stored_scale is None)
        return p.df

    def _Hole(self, p: Hole) -> DataFrame:
        return self.holes[p.index]


class Dataflow:
    """One incremental plan (``inc``) maintained on one replica's Spark session (see the
    module doc). ``url(key)`` is Blob's URL of a part. Not thread-safe: one thread
    drives it."""

    def __init__(self, session, inc, url, builtin_rows):
        self.session = session
        self.inc = inc
        self.url = url
        self.builtin_rows = builtin_rows
        #: the time the arrangements are complete for (None: not hydrated)
        self.frontier: int | None = None
        self.spines: dict[int, Spine] = {}
        #: id of a temporal filter -> its pending updates (``c0 .. cN-1``, ``cN``: their
        #: time, ``_d``), kept until the frontier reaches them
        self.pending: dict[int, Spine] = {}
        #: the earliest time after the frontier at which a temporal filter has updates
        #: (None: none): the caller steps there even when no input changes
        self.next_event: int | None = None
        #: rounds run since it was made (``step``s and ``advance``s of several times;
        #: hydration not counted): Spark plans of its own each, what a burst of writes costs
        self.rounds = 0
        #: the output kept in the replica's memory, for an index (None: the output goes
        #: elsewhere, a materialized view's shard or a SUBSCRIBE)
        self.contents: Contents | None = None
        #: ``(t, change)`` when the last ``advance``'s output was the change of one time
        #: ``t`` (``c0 .. cN-1``, ``_d``: no time column), else None (``collect_timed``)
        self.single_output: tuple[int, DataFrame] | None = None

    # -- the two entry points ------------------------------------------------------------

    def hydrate(self, as_of: int, scan) -> DataFrame:
        """Build every arrangement from the inputs at ``as_of`` (``scan(table, as_of)``
        gives a table's snapshot); returns the query's contents there as updates (lazy:
        the caller decides whether to compute them)."""
        self.scan = scan
        self.spines = {a.id: Spine(len(a.columns), maps=numbered_maps(a.columns)) for a in arrangements(self.inc)}
        self._memo: dict[int, DataFrame | None] = {}
        self._lowerer = self._make_lowerer(as_of)
        self._sums = {n.state.id: _Sums(n, self._lowerer) for n in _accumulations(self.inc)}
        for sid, sums in self._sums.items():
            self.spines[sid] = Spine(0, merge=sums.merge)
        for n in walk(self.inc):
            if isinstance(n, Temporal):
                k = len(n.columns)
                # merged: consolidated by (row, time), the times already passed left out
                self.pending[id(n)] = Spine(k + 1, merge=lambda df, k=k, n=n: consolidate(
                    df.filter(F.col(f"c{k}") > F.lit(self._time)), k + 1, numbered_maps(n.columns)))
        self._time, self._hydrating, self.narrow, self._lo = as_of, True, False, None
        self._from, self._collapse = as_of - 1, False
        #: ids of nodes whose change is all rows sent inside the plan (no job to read)
        self._local: set[int] = set()
        out = self._delta(self.inc)
        self.frontier = as_of
        self._hydrating = False
        self._next_event()
        return out if out is not None else self._empty(self.inc.columns)

    def step(self, t: int, changes: ChangesFn) -> DataFrame | None:
        """Bring the arrangements from the frontier to ``t`` (> frontier, and no input has
        an update between the two; ``changes(table, lower, upper)`` gives the parts with
        a table's updates in ``(lower, upper]``); returns the output's change at ``t``
        (lazy), or None when it is empty for sure."""
        assert self.frontier is not None and t > self.frontier
        return self._round(None, t, changes)

    def _round(self, lo: int | None, t: int, changes: ChangesFn, collapse: bool = False) -> DataFrame | None:
        """One round to ``t``: the updates at ``t`` alone (``lo`` None), or at every time
        in ``(lo, t]`` with their times (``_t`` in every change); with ``collapse``, every
        update (and temporal event) after the frontier as if at ``t``, each input's
        change consolidated first."""
        self.changes = changes
        self.rounds += 1
        self._time, self._lo, self._hydrating = t, lo, False
        #: the updates of this round are those in ``(_from, t]``
        self._from = self.frontier if collapse else t - 1 if lo is None else lo
        self._collapse = collapse
        self._memo = {}
        self._local = set()
        self._lowerer = self._make_lowerer(t)
        updates = sum(p.updates for n in walk(self.inc) if isinstance(n, Input)
                      for p in changes(n.plan.relation, self._from, t))
        #: this step's changes are small (``NARROW_UPDATES``): computed in one partition
        self.narrow = updates <= NARROW_UPDATES
        out = self._delta(self.inc)
        self.frontier = t
        self._next_event()
        return out

    @property
    def batches_times(self) -> bool:
        """Whether one round can take updates of several times (``advance``): every
        operator of the plan recomputed per group can take the time as a key
        (``planner.incremental.timed``)."""
        return not any(isinstance(n, Recompute) and timed_template(n) is None for n in walk(self.inc))

    def advance(self, times: list[int], target: int, changes: ChangesFn, after: int | None = None,
                collapse: bool = False) -> DataFrame | None:
        """Bring the arrangements from the frontier to ``target``, taking the inputs'
        updates at ``times`` (ascending; those in ``(frontier, target]`` count) and the
        temporal filters' events; returns the output's changes (``c0 .. cN-1``, ``_t``:
        their time, ``_d``) at the times after ``after`` (all when None), lazy, or None
        when there are none for sure. Several times go through one round when the plan
        allows (``batches_times``), else one round per time (``steps``); ``narrow``
        then tells whether every round was narrow.

        With ``collapse`` every update and event in ``(frontier, target]`` counts as at
        ``target``, in one round whose inputs' changes are consolidated first: the
        times between are skipped, and an update retracted by a later one is never seen
        (how a view gets past a time its query fails at: Materialize retracts an error
        with the row that caused it)."""
        todo = [t for t in times if self.frontier < t <= target]
        columns = len(self.inc.columns)
        events = self.next_event is not None and self.next_event <= target
        self.single_output = None
        if collapse:
            out = self._round(None, target, changes, collapse=True)
            if out is None:
                return None
            self.single_output = (target, out)
            return timed_frame(out, columns, target)
        if len(todo) + events > 1 and self.batches_times:
            lo = self.frontier
            out = self._round(lo, target, changes)
            if out is not None and after is not None and after > lo:
                out = out.filter(F.col(T) > F.lit(after))
            return None if out is None else out.select(*_names(columns), T, D)
        outs, narrow = [], True
        for t, d in self.steps(todo, target, changes):
            narrow = narrow and self.narrow
            if d is not None and (after is None or t > after):
                outs.append((t, d))
        self.narrow = narrow
        if len(outs) == 1:
            self.single_output = outs[0]
        return reduce(DataFrame.unionAll, [timed_frame(d, columns, t) for t, d in outs]) if outs else None

    def steps(self, times: list[int], target: int, changes: ChangesFn):
        """Step through ``times`` (the inputs' update times, ascending) and the times the
        temporal filters have updates at, in order, up to ``target``; yields ``(t,
        output's change at t or None)`` and leaves the frontier at ``target``."""
        todo = [t for t in times if self.frontier < t <= target]
        i = 0
        while True:
            due = [x for x in (todo[i] if i < len(todo) else None, self.next_event) if x is not None and x <= target]
            if not due:
                break
            t = min(due)
            if i < len(todo) and todo[i] == t:
                i += 1
            yield t, self.step(t, changes)
        self.frontier = max(self.frontier, target)

    def _next_event(self) -> None:
        """``next_event`` after the frontier (one small job per temporal filter)."""
        found = []
        for n in walk(self.inc):
            spine = self.pending.get(id(n))
            if spine is not None and spine.batches:
                k = len(n.columns)
                row = spine.frame().filter(F.col(f"c{k}") > F.lit(self.frontier)).agg(F.min(f"c{k}")).collect()
                if row and row[0][0] is not None:
                    found.append(int(row[0][0]))
        self.next_event = min(found) if found else None

    # -- changes of each node ------------------------------------------------------------

    def _make_lowerer(self, as_of: int) -> _DataflowLowerer:
        lw = _DataflowLowerer(self.session, lambda rel: self.scan(rel, as_of), self.builtin_rows)
        lw.holes = {}
        return lw

    def _empty(self, columns) -> DataFrame:
        """No updates, of ``columns`` ((name, SqlType) pairs)."""
        from pyspark.sql import types as T

        schema = self._lowerer._schema(columns)
        return self.session.createDataFrame([], T.StructType(schema.fields + [T.StructField(D, T.LongType())]))

    def _delta(self, n) -> DataFrame | None:
        key = id(n)
        if key not in self._memo:
            d = getattr(self, "_d_" + type(n).__name__)(n)
            if d is not None and not self._hydrating and self.narrow:
                d = d.coalesce(1)
            self._memo[key] = d
        return self._memo[key]

    def _d_Input(self, n: Input) -> DataFrame | None:
        rel = n.plan.relation
        k = len(n.columns)
        if self._hydrating:
            return _signed(self._lowerer.lower(n.plan), k, 1)
        parts = self.changes(rel, self._from, self._time)
        if not parts:
            return None
        if all(p.inline is not None for p in parts):
            self._local.add(id(n))
        if self._collapse:  # an update and its retraction cancel before any expression sees them
            d = changes_frame(self.session, rel, parts, self._time, self.url, lower=self._from)
            return consolidate(d.select(*_names(k), D), k, numbered_maps(n.columns))
        return changes_frame(self.session, rel, parts, self._time, self.url, lower=self._lo)

    def _d_Constant(self, n: Constant) -> DataFrame | None:
        return _signed(self._lowerer.lower(n.plan), len(n.columns), 1) if self._hydrating else None

    def _d_Linear(self, n: Linear) -> DataFrame | None:
        d = self._delta(n.input)
        if d is None:
            return None
        if id(n.input) in self._local:
            self._local.add(id(n))
        k = len(n.input.columns)
        # The diff (and the time) ride along as more input columns: Filter keeps them,
        # Project is given them as more outputs, Unnest keeps them before its new columns.
        extra = self._extra()
        e = len(extra)
        # (a select, not withColumnRenamed: Spark Connect analyses a rename's input
        # eagerly, so each rename costs an analysis of the whole change's plan)
        d = d.select(*_names(k), *[F.col(c).alias(f"c{k + j}") for j, c in enumerate(extra)])
        leaf = BoundFrame(d, n.input.columns + tuple((c, INT8) for c in extra))
        p = replace(n.plan, input=leaf)
        if isinstance(p, Project):
            p = Project(leaf, p.exprs + tuple(ColRef(k + j, INT8) for j in range(e)), p.names + tuple(extra))
        out = self._lowerer.lower(p)
        m = len(n.columns)
        if isinstance(p, Unnest):
            return out.select(*[f"c{i}" for i in range(k)], *[F.col(f"c{k + e + j}").alias(f"c{k + j}")
                                                              for j in range(m - k)],
                              *[F.col(f"c{k + j}").alias(c) for j, c in enumerate(extra)])
        base = m if isinstance(p, Project) else k
        return out.select(*_names(m), *[F.col(f"c{base + j}").alias(c) for j, c in enumerate(extra)])

    def _extra(self) -> list[str]:
        """The columns a change has after its row's: its diff, and before it its time in a
        round of several times."""
        return [D] if self._lo is None or self._hydrating else [T, D]

    def _d_UnionAll(self, n: UnionAll) -> DataFrame | None:
        parts = [d for d in (self._delta(n.left), self._delta(n.right)) if d is not None]
        if all(id(i) in self._local or self._delta(i) is None for i in (n.left, n.right)):
            self._local.add(id(n))
        return reduce(DataFrame.unionAll, parts) if parts else None

    def _d_Temporal(self, n: Temporal) -> DataFrame | None:
        """The temporal filter's change in this round: its pending updates due in it, and
        of the input's change ``(row, t, d)`` (``t``: the round's time, or the update's
        own in a round of several) the updates ``(row, max(t, lower), d)`` and ``(row,
        max(t, upper), -d)`` due by the round's time; the later ones (the rows' entry
        and exit times still to come) join the pending updates."""
        k, hi = len(n.columns), self._time
        timed = len(self._extra()) == 2
        lo = self._from
        spine = self.pending[id(n)]
        before = spine.frame()
        out = []

        def due(df, when, diff):
            x = df.filter((when > F.lit(lo)) & (when <= F.lit(hi)))
            return x.select(*_names(k), *([when.alias(T)] if timed else []), diff.alias(D))

        if before is not None and not self._hydrating:
            out.append(due(before, F.col(f"c{k}"), F.col(D)))
        d = self._delta(n.input)
        if d is not None:
            low, high, known = self._bounds(n)
            at = F.col(T) if timed else F.lit(hi).cast("long")
            b = checkpoint(d.select(*_names(k), D, at.alias("_at"), low.alias("_lo"), high.alias("_hi"))
                           .filter(known & (F.col("_lo") < F.col("_hi"))))
            enter, leave = F.greatest("_at", "_lo"), F.greatest("_at", "_hi")
            if self._hydrating:  # the snapshot's rows in the output at its time
                out.append(b.filter((F.col("_lo") <= F.lit(hi)) & (F.col("_hi") > F.lit(hi))).select(*_names(k), D))
            else:
                out += [due(b, enter, F.col(D)), due(b, leave, -F.col(D))]
            future = b.filter(enter > F.lit(hi)).select(*_names(k), enter.alias(f"c{k}"), D).unionAll(
                b.filter(leave > F.lit(hi)).select(*_names(k), leave.alias(f"c{k}"), (-F.col(D)).alias(D)))
            self.pending[id(n)] = spine.with_batch(checkpoint(future))
        return reduce(DataFrame.unionAll, out) if out else None

    def _bounds(self, n: Temporal):
        """``(lower, upper, known)``: the time a row enters the output, the time it leaves
        it (as longs: a bound past the greatest long is never reached), and whether no
        bound is NULL."""
        cap = F.lit((1 << 63) - 1).cast("decimal(20,0)")

        raw = {b: self._lowerer.scalar(b[0]) for b in n.lowers + n.uppers}

        def value(b):
            x = raw[b] + F.lit(b[1]) if b[1] else raw[b]
            return F.least(x, cap)  # (least and greatest skip NULLs: ``known`` keeps them out)

        lows, highs = [value(b) for b in n.lowers], [value(b) for b in n.uppers]
        known = reduce(lambda a, b: a & b, [x.isNotNull() for x in raw.values()], F.lit(True))
        lo = (lows[0] if len(lows) == 1 else F.greatest(*lows)) if lows else F.lit(0)
        hi = (highs[0] if len(highs) == 1 else F.least(*highs)) if highs else cap
        return lo.cast("long"), hi.cast("long"), known

    def _arranged(self, a: Arrangement) -> tuple[DataFrame | None, DataFrame | None]:
        """``(rows before the change, the change)`` of arrangement ``a``'s input, the
        change checkpointed and added to ``a``'s spine (from the next step on)."""
        d = self._delta(a.source)
        spine = self.spines[a.id]
        before = spine.frame()
        if d is not None:
            if id(a.source) not in self._local or self._hydrating:
                # A checkpoint, not Spark's cache: later plans over it have a leaf where
                # the cache would keep the whole plan that made it, which Spark analyses
                # and matches against its cache again in every round.
                if self.narrow and not self._hydrating:
                    # consolidated first: a recomputed group whose rows did not change
                    # retracts and adds the same rows, and a change that sums to nothing
                    # is empty, so the joins that look it up read no arrangement (Spark
                    # skips a join whose broadcast side came out empty)
                    d = consolidate(d, len(a.columns), numbered_maps(a.columns), by=(T,) if len(self._extra()) == 2 else ())
                d = checkpoint(d)
            # else: a change of rows sent inside the plan (persist's inline parts) through
            # linear operators is as cheap to read again as a checkpoint, and needs no job
            self.spines[a.id] = spine.with_batch(d if len(self._extra()) == 1 else d.select(*_names(len(a.columns)), D))
            self._memo[id(a.source)] = d  # the source's change is computed once
        return before, d

    def _d_DeltaJoin(self, n: DeltaJoin) -> DataFrame | None:
        """The sum over the inputs ``i`` that changed of ``dA_i`` looked up in the other
        inputs' arrangements: those before ``i`` with their change (``A + dA``), those
        after without (``nodes.DeltaJoin``); a pair of updates counts at the later of
        their times in a round of several."""
        got = [self._arranged(a) for a in n.states]
        if self._hydrating:  # every input whole: the join as the optimizer ordered it
            if any(d is None for _, d in got):
                return None
            leaves = iter(BoundFrame(d.select(*_names(len(i.columns))), i.columns) for (_, d), i in zip(got, n.inputs))
            return _signed(self._lowerer.lower(with_leaves(n.plan, leaves)), len(n.columns), 1)
        timed = len(self._extra()) == 2
        terms = [t for i in range(len(got)) if got[i][1] is not None
                 for t in [self._delta_term(n, got, i, timed)] if t is not None]
        return reduce(DataFrame.unionAll, terms) if terms else None

    def _delta_term(self, n: DeltaJoin, got: list, i: int, timed: bool) -> DataFrame | None:
        """Input ``i``'s change joined with the other inputs (``_d_DeltaJoin``), or None
        when some side is empty for sure. The other inputs join one at a time, each the
        first of ``i - 1 .. 0, i + 1 .. n - 1`` that a condition links to what is joined
        already (the optimizer's join order, walked out from ``i``: the inputs next to
        ``i`` in it are the ones its rows were joined with), each condition applied as
        soon as the columns it reads are there."""
        offsets = n.offsets()
        sides = {}
        for j, ((before, d), inp) in enumerate(zip(got, n.inputs)):
            cols = [F.col(f"c{c}").alias(f"c{offsets[j] + c}") for c in range(len(inp.columns))]
            # a change keeps its time; the arrangement's rows before the round, joined
            # with a change of another input, count at the round's lower bound
            at = F.col(T) if timed else None
            parts = []
            if before is not None and j != i:
                parts.append((before, F.lit(self._lo).cast("long") if timed and j < i else None))
            if d is not None and j <= i:
                parts.append((d, at))
            if not parts:
                return None
            sides[j] = reduce(DataFrame.unionAll, [x.select(*cols, *([t.alias(f"_t{j}")] if t is not None else []),
                                                            F.col(D).alias(f"_d{j}")) for x, t in parts])
        spans = {j: set(range(offsets[j], offsets[j] + len(x.columns))) for j, x in enumerate(n.inputs)}
        refs = [column_refs(c) for c in n.conditions]
        applied = [False] * len(refs)
        have, cur = set(spans[i]), sides[i]
        own = [c for c, r in enumerate(refs) if r <= have]
        for c in own:
            applied[c] = True
        if own:
            cur = cur.filter(self._lowerer.scalar(conjoin([n.conditions[c] for c in own])))
        left, first = [*range(i - 1, -1, -1), *range(i + 1, len(n.inputs))], True
        while left:
            if self.narrow or first:
                # the change (and in a narrow round what it found so far) is small next to
                # an arrangement: it is what is hashed and sent, the arrangement streamed
                cur = F.broadcast(cur)
            first = False
            linked = [j for j in left if any(not applied[c] and r & spans[j] and r <= have | spans[j]
                                             for c, r in enumerate(refs))]
            j = linked[0] if linked else left[0]
            left.remove(j)
            have |= spans[j]
            now = [c for c, r in enumerate(refs) if not applied[c] and r <= have]
            for c in now:
                applied[c] = True
            cond = conjoin([n.conditions[c] for c in now])
            cur = cur.crossJoin(sides[j]) if cond is None else cur.join(sides[j], on=self._lowerer.scalar(cond), how="inner")
        width = sum(len(x.columns) for x in n.inputs)
        diff = reduce(lambda a, b: a * b, [F.col(f"_d{j}") for j in range(len(n.inputs))])
        when = []
        if timed:
            ts = [f"_t{j}" for j in range(i + 1)]
            when = [(F.greatest(*ts) if len(ts) > 1 else F.col(ts[0])).alias(T)]
        return cur.select(*_names(width), *when, diff.alias(D))

    def _d_Recompute(self, n: Recompute) -> DataFrame | None:
        got = [self._arranged(a) for a in n.states]
        if all(d is None for _, d in got):
            return None
        m = len(n.columns)
        if self._lo is not None and not self._hydrating:
            return self._recompute_timed(n, got)
        if self._hydrating:  # nothing before: the operator over all of its input
            new = [d if d is not None else self._empty(i.columns) for (_, d), i in zip(got, n.inputs)]
            return _signed(self._template(n, new), m, 1)
        touched = self._touched(n, [d for _, d in got])
        before, after = [], []
        for (old, d), a, i in zip(got, n.states, n.inputs):
            old = self._restrict(old, a, touched) if old is not None else None
            if old is not None and touched is None:
                old = self._one(old)
            rows = [x for x in (old, d) if x is not None]  # a change is all of touched groups
            before.append(old if old is not None else self._empty(i.columns))
            after.append(reduce(DataFrame.unionAll, rows) if rows else self._empty(i.columns))
        return _signed(self._template(n, after), m, 1).unionAll(_signed(self._template(n, before), m, -1))

    def _template(self, n: Recompute, inputs: list[DataFrame], template=None, more: int = 0) -> DataFrame:
        """``n.template`` (or ``template``, whose inputs have ``more`` columns after each
        input's own) over the rows of the updates ``inputs`` (one per input)."""
        lw = self._lowerer
        saved = lw.holes
        # At hydration every update is a +1 (a snapshot's rows, and what operators make of
        # them): the rows are the updates' rows, no consolidation needed.
        lw.holes = {i: df.select(*_names(len(inp.columns) + more)) if self._hydrating
                    else _expand(df, len(inp.columns) + more, numbered_maps(inp.columns))
                    for i, (df, inp) in enumerate(zip(inputs, n.inputs))}
        try:
            return lw.lower(template if template is not None else n.template)
        finally:
            lw.holes = saved

    def _recompute_timed(self, n: Recompute, got: list) -> DataFrame:
        """The operator's changes over a round of several times (``planner.incremental.
        timed``): each touched group's rows through each time it changed at (the state's
        rows, and the round's changes up to that time) tagged with that time ``t`` and
        the group's next one ``tn``, and the round's lower bound as a group's first
        ``t`` (its rows before the round); the operator over them per ``(group, t)``
        gives its answer at ``t``, added at ``t`` (unless ``t`` is the lower bound: it is
        in the output already) and taken back at ``tn``."""
        from pyspark.sql.connect.window import Window as W

        template = timed_template(n)
        lo = self._lo
        keyed = [self._keyed(d, a) if d is not None else None for (_, d), a in zip(got, n.states)]
        width = len(n.states[0].keys)
        ks = [f"_k{j}" for j in range(width)]
        times = reduce(DataFrame.unionAll, [d.select(*ks, T) for d in keyed if d is not None]).distinct()
        # (an operator of one group, no keys: its one group's first time, if it has times)
        firsts = (times.select(*ks).distinct() if ks else times.limit(1)).select(*ks, F.lit(lo).cast("long").alias(T))
        order = W.partitionBy(*ks).orderBy(T)
        at = checkpoint(self._one(times.unionAll(firsts).select(*ks, F.col(T).alias("_at"),
                                                                F.lead(T).over(order).alias("_tn"))))
        rows = []
        for (old, _), d, a, i in zip(got, keyed, n.states, n.inputs):
            k = len(i.columns)
            s = F.broadcast(at.select(*[F.col(c).alias(f"_s{j}") for j, c in enumerate(ks)], "_at", "_tn"))
            parts = []
            if old is not None:
                o = self._keyed(old, a)
                on = reduce(lambda x, y: x & y, [o[c].eqNullSafe(s[f"_s{j}"]) for j, c in enumerate(ks)], F.lit(True))
                parts.append(o.join(s, on, "inner").select(*_names(k), "_at", "_tn", D))
            if d is not None:
                on = reduce(lambda x, y: x & y, [d[c].eqNullSafe(s[f"_s{j}"]) for j, c in enumerate(ks)], s["_at"] >= d[T])
                parts.append(d.join(s, on, "inner").select(*_names(k), "_at", "_tn", D))
            both = reduce(DataFrame.unionAll, parts) if parts else self._empty_timed(i.columns)
            rows.append(self._one(both.select(*_names(k), F.col("_at").alias(f"c{k}"), F.col("_tn").alias(f"c{k + 1}"), D)))
        m = len(n.columns)
        out = self._template(n, rows, template, more=2)
        if answers_no_rows(n):
            out = self._no_rows_answered(n, out, at)
        t, tn = F.col(f"c{m}"), F.col(f"c{m + 1}")
        return out.filter(t != F.lit(lo)).select(*_names(m), t.alias(T), F.lit(1).cast("long").alias(D)).unionAll(
            out.filter(tn.isNotNull()).select(*_names(m), tn.alias(T), F.lit(-1).cast("long").alias(D)))

    def _no_rows_answered(self, n: Recompute, out: DataFrame, at: DataFrame) -> DataFrame:
        """``out`` (the timed template's answers: ``c0 .. cM-1``, ``_t`` and ``_tn`` as
        ``cM``, ``cM+1``; at most one row per time, the operator having one group) with
        the template's answer over no rows at each time of ``at`` (``_at``, ``_tn``)
        that ``out`` has no row for (``timed.answers_no_rows``): an aggregate without
        GROUP BY whose input is empty at that time."""
        m = len(n.columns)
        empty = self._template(n, [self._empty(i.columns) for i in n.inputs])
        got = out.select("*", F.lit(True).alias("_h"))
        both = F.broadcast(at.select("_at", "_tn")).join(got, F.col("_at") == got[f"c{m}"], "left").crossJoin(
            F.broadcast(empty.select(*[F.col(f"c{i}").alias(f"_e{i}") for i in range(m)])))
        has = F.col("_h").isNotNull()
        return both.select(*[F.when(has, F.col(f"c{i}")).otherwise(F.col(f"_e{i}")).alias(f"c{i}") for i in range(m)],
                           F.col("_at").alias(f"c{m}"), F.col("_tn").alias(f"c{m + 1}"))

    def _empty_timed(self, columns) -> DataFrame:
        """No rows of ``columns`` with ``_at``, ``_tn`` and the diff."""
        return self._empty(tuple(columns) + (("_at", INT8), ("_tn", INT8))).select(
            *_names(len(columns)), F.col(f"c{len(columns)}").alias("_at"), F.col(f"c{len(columns) + 1}").alias("_tn"), D)

    def _keyed(self, df: DataFrame, a: Arrangement) -> DataFrame:
        """``df`` with ``a``'s keys as ``_k0 ..`` (maps as their entries, to compare)."""
        return maps_groupable(df.select("*", *[self._lowerer.scalar(k).alias(f"_k{j}") for j, k in enumerate(a.keys)]),
                              _numbered_key_maps(a.keys))

    def _touched(self, n: Recompute, changes: list[DataFrame | None]) -> DataFrame | None:
        """The distinct keys (``_k0 ..``) of the changes' rows: the groups to recompute;
        None for an operator of one group."""
        if not n.states[0].keys:
            return None
        # (no DISTINCT: duplicate keys only repeat a row of the broadcast side)
        keys = [self._keyed(d, a).select(*[f"_k{j}" for j in range(len(a.keys))])
                for d, a in zip(changes, n.states) if d is not None]
        return reduce(DataFrame.unionAll, keys)

    def _restrict(self, df: DataFrame, a: Arrangement, touched: DataFrame | None) -> DataFrame:
        """The updates of ``df`` whose keys are among ``touched`` (NULL equal to NULL)."""
        if touched is None:
            return df
        keyed = self._keyed(df, a)
        t = F.broadcast(touched.select(*[F.col(f"_k{j}").alias(f"_t{j}") for j in range(len(a.keys))]))
        on = reduce(lambda x, y: x & y, [keyed[f"_k{j}"].eqNullSafe(t[f"_t{j}"]) for j in range(len(a.keys))])
        return self._one(keyed.join(t, on, "left_semi").select(*_names(len(a.columns)), D))

    def _one(self, df: DataFrame) -> DataFrame:
        """``df`` in one partition in a narrow step (``NARROW_UPDATES``)."""
        return df.coalesce(1) if self.narrow and not self._hydrating else df


    def _d_Accumulate(self, n: Accumulate) -> DataFrame | None:
        d = self._delta(n.input)
        if d is None:
            return None
        sums = self._sums[n.state.id]
        lw = self._lowerer
        p = n.plan
        # The change's sums per group: each update's row counted with its diff's sign,
        # |diff| times.
        rows = d.select("*", F.explode(F.array_repeat(F.signum(F.col(D)).cast("long"), F.abs(F.col(D)).cast("int")))
                        .alias("_s"))
        xs = sums.arguments(lw)
        timed = len(self._extra()) == 2
        at = [T] if timed else []
        keyed = maps_groupable(rows.select(*[lw.scalar(k).alias(f"_k{j}") for j, k in enumerate(p.keys)],
                                           *[x.alias(f"_x{j}") for j, (_, x) in enumerate(xs)], "_s", *at),
                               _numbered_key_maps(p.keys))  # kept as their entries: grouped and compared
        change = keyed.groupBy(*sums.keys, *at).agg(*sums.of_rows(xs))
        spine = self.spines[n.state.id]
        # Kept once (a job) when read twice below and dear to read again: a big change, or a
        # small one out of lookups (a delta join). The two reads (the touched groups' keys,
        # and the change itself) are pruned to different columns, so Spark would run the
        # change's plan twice, each lookup a broadcast job of its own: TPC-H Q5's round ran
        # 12 jobs, and its 1-row INSERT's round took 0.62 s with the change kept, 1.03 s without.
        if (self._hydrating or not self.narrow
                or (p.keys and spine.batches and id(n.input) not in self._local)):
            change = checkpoint(change)
        if self._hydrating:
            self.spines[n.state.id] = spine.with_batch(change)
            return _signed(sums.final(lw, sums.total(change), "new_"), len(n.columns), 1)
        before = spine.frame()
        if before is not None and not p.keys:
            before = self._one(before)
        if before is not None and p.keys:
            touched = F.broadcast(change.select(*[F.col(k).alias(f"_t{j}") for j, k in enumerate(sums.keys)]))
            on = reduce(lambda x, y: x & y, [before[k].eqNullSafe(touched[f"_t{j}"]) for j, k in enumerate(sums.keys)])
            before = self._one(before.join(touched, on, "left_semi"))
        # Old and new sums of the touched groups, and the change's own sums, in one
        # aggregation (the state's rows count for the old and new sums, the change's for
        # the new ones and its own), computed by one job and kept (checkpointed): the
        # change's sums are the arrangement's new batch, and the view's change is read
        # from the kept totals by a plan Spark analyses in no time (the plan that makes
        # them is analysed once per step, not once for the batch and again for the output).
        # With several times, a group's sums before and after each of its times are running
        # sums over its times (a window), the state's rows first.
        if timed:
            both = change.select(*sums.keys, T, *sums.names, F.lit(True).alias("_new"))
            if before is not None:
                both = self._one(before.select(*sums.keys, F.lit(-1).cast("long").alias(T), *sums.names,
                                               F.lit(False).alias("_new")).unionAll(both))
            totals = checkpoint(both.select("*", *sums.running(sums.keys)).filter(F.col("_new")))
        else:
            both = change.select("*", F.lit(True).alias("_new"))  # (select: see _d_Linear)
            if before is not None:
                # (one partition in a narrow step: the grouping then needs no exchange, a stage
                # and a job of its own under adaptive execution)
                both = self._one(before.select("*", F.lit(False).alias("_new")).unionAll(both))
            totals = checkpoint(both.groupBy(*sums.keys).agg(*sums.old_and_new()))
        self.spines[n.state.id] = spine.with_batch(
            totals.select(*sums.keys, *[F.col("chg_" + c).alias(c) for c in sums.names]))
        # Each touched group's old row (retracted) and new row from one pass over the
        # totals (two selects of them would make Spark plan the totals twice).
        m = len(n.columns)
        old, new = sums.final_columns(lw, "old_"), sums.final_columns(lw, "new_")
        pair = F.array(F.struct(*[c.alias(f"c{i}") for i, c in enumerate(old[0])], F.lit(-1).cast("long").alias(D),
                                old[1].alias("_e")),
                       F.struct(*[c.alias(f"c{i}") for i, c in enumerate(new[0])], F.lit(1).cast("long").alias(D),
                                new[1].alias("_e")))
        rows = totals.select(*at, F.explode(pair).alias("_r")).select(*at, "_r.*")
        return rows.filter(F.col("_e")).select(*_names(m), *at, D)


class _Sums:
    """The sums an accumulating GROUP BY keeps (``planner.incremental.accumulate``):
    its aggregates' registry lowerings are run with a toolkit whose ``F.sum`` and
    ``F.count`` are recorded (``arguments``) or read back from the kept sums
    (``final``), so the value of each aggregate comes from the very expression a query
    computes it with. Columns: ``_k*`` (the group's keys), ``_v{j}`` (the sum of the
    j-th recorded argument), ``_n{j}`` (how many of its values are not NULL), ``_rows``
    (the group's row count). An argument several calls take (``avg(x)`` and ``sum(x)``
    are both ``sum(x)`` and ``count(x)``) is summed once: each aggregate of the kept sums
    is planned by Spark in every round."""

    def __init__(self, n: Accumulate, lw):
        self.n = n
        self.keys = [f"_k{j}" for j in range(len(n.plan.keys))]
        kit = self._recorded(lw)
        #: per sum or count call of the lowerings, in order: its argument's j
        self.slots = tuple(kit.F.slots)
        self.names = [c for j in range(len(kit.F.calls)) for c in (f"_v{j}", f"_n{j}")] + ["_rows"]

    def _recorded(self, lw) -> "_SumsToolkit":
        kit = _SumsToolkit(lw, record=True)
        for a in self.n.plan.aggregates:
            lw.aggregate(a, toolkit=kit)
        return kit

    def arguments(self, lw) -> list[tuple[str, object]]:
        """(``sum`` or ``count``, argument column) of each distinct argument of the Spark
        sums and counts the aggregates' lowerings take, in order of first use."""
        return self._recorded(lw).F.calls

    def of_rows(self, xs) -> list:
        """The sums of signed rows (``_x{j}``, and ``_s``: +1 or -1)."""
        s = F.col("_s")
        out = []
        for j in range(len(xs)):
            x = F.col(f"_x{j}")
            out.append(F.sum(F.when(s > 0, x).otherwise(-x)).alias(f"_v{j}"))
            out.append(F.coalesce(F.sum(F.when(x.isNotNull(), s).otherwise(F.lit(0).cast("long"))),
                                  F.lit(0).cast("long")).alias(f"_n{j}"))
        # coalesce: a GROUP BY without keys over no rows has its one row, counting 0
        return out + [F.coalesce(F.sum(s), F.lit(0).cast("long")).alias("_rows")]

    def merge(self, df: DataFrame) -> DataFrame:
        """Batches of sums as one: summed per group."""
        return df.groupBy(*self.keys).agg(*[F.sum(c).alias(c) for c in self.names])

    def total(self, df: DataFrame) -> DataFrame:
        """Sums as the ``new_`` columns ``final`` reads."""
        return df.select(*self.keys, *[F.col(c).alias("new_" + c) for c in self.names])

    def old_and_new(self) -> list:
        """Aggregates over kept sums (``_new`` false) and the change's (``_new`` true, one
        row per group): ``old_*`` the kept ones alone, ``new_*`` both, ``chg_*`` the
        change's."""
        out = []
        for c in self.names:
            v = F.col(c)
            old = F.sum(F.when(~F.col("_new"), v))
            if not c.startswith("_v"):  # counts of nothing are 0 (a sum of nothing stays NULL)
                old = F.coalesce(old, F.lit(0).cast("long"))
            out += [old.alias("old_" + c), F.sum(v).alias("new_" + c), F.sum(F.when(F.col("_new"), v)).alias("chg_" + c)]
        return out

    def running(self, keys: list[str]) -> list:
        """Over rows of kept sums (``_t`` -1) and of a change's sums per time (``_t``),
        ``old_*``, ``new_*`` and ``chg_*`` as ``old_and_new`` has them, for each time: the
        running sums over the group's rows in time order before the row, through it, and
        the row's own."""
        from pyspark.sql.connect.window import Window

        w = Window.partitionBy(*keys).orderBy(T)
        through = w.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        before = w.rowsBetween(Window.unboundedPreceding, -1)
        out = []
        for c in self.names:
            v = F.col(c)
            old = F.sum(v).over(before)
            if not c.startswith("_v"):  # counts of nothing are 0 (a sum of nothing stays NULL)
                old = F.coalesce(old, F.lit(0).cast("long"))
            out += [old.alias("old_" + c), F.sum(v).over(through).alias("new_" + c), v.alias("chg_" + c)]
        return out

    def final_columns(self, lw, prefix: str) -> tuple[list, object]:
        """``(the GROUP BY's columns, whether the group has a row)`` from sums ``prefix +
        _v{j}`` etc. of one row (a group with no rows left has none; a GROUP BY without
        keys always has its one row)."""
        kit = _SumsToolkit(lw, record=False, prefix=prefix, slots=self.slots)
        maps = _numbered_key_maps(self.n.plan.keys)
        cols = [maps_restored_column(F.col(c), maps[c]) if c in maps else F.col(c) for c in self.keys] + [
            lw.aggregate(a, toolkit=kit) for a in self.n.plan.aggregates]
        exists = F.col(prefix + "_rows") > 0 if self.keys else F.lit(True)
        return cols, exists

    def final(self, lw, totals: DataFrame, prefix: str) -> DataFrame:
        """The GROUP BY's rows of ``totals`` from sums ``prefix + _v{j}`` etc.
        (``final_columns``)."""
        cols, exists = self.final_columns(lw, prefix)
        return totals.filter(exists).select(*[c.alias(f"c{i}") for i, c in enumerate(cols)])


class _SumsF:
    """``F`` for ``_Sums``: ``sum`` and ``count`` recorded or read back; the rest Spark's.
    Recording, ``calls`` gets each distinct argument once (the same expression, compared
    as Spark Connect's protocol message of it) and ``slots`` each call's argument's
    index in ``calls``; reading back, ``slots`` says which sums a call reads."""

    def __init__(self, record: bool, prefix: str, client=None, slots: tuple = ()):
        self.record = record
        self.prefix = prefix
        self.client = client
        self.calls: list[tuple[str, object]] = []
        self.slots: list[int] = list(slots)
        self._seen: dict[object, int] = {}
        self._next = 0

    def __getattr__(self, name):
        if name in ("sum", "count"):
            return lambda x: self._take(name, x)
        return getattr(F, name)

    def _take(self, name: str, x):
        if self.record:
            try:
                key = x._expr.to_plan(self.client).SerializeToString(deterministic=True)
            except Exception:  # an expression with no message of its own: summed apart
                key = id(x)
            if key not in self._seen:
                self._seen[key] = len(self.calls)
                self.calls.append((name, x))
            self.slots.append(self._seen[key])
            return F.lit(0)
        j = self.slots[self._next]
        self._next += 1
        n = F.col(f"{self.prefix}_n{j}")
        return n if name == "count" else F.when(n > 0, F.col(f"{self.prefix}_v{j}"))


class _SumsToolkit:
    """The Lowerer as an aggregate's registry entry sees it, with ``_SumsF`` as ``F``."""

    def __init__(self, lowerer, record: bool, prefix: str = "", slots: tuple = ()):
        self._lowerer = lowerer
        self.F = _SumsF(record, prefix, lowerer.spark.client, slots)

    def __getattr__(self, name):
        return getattr(self._lowerer, name)


def _numbered_key_maps(keys) -> dict:
    """The keys ``_k<j>`` of ``keys`` (scalar expressions) that hold maps: name -> type."""
    return {f"_k{j}": k.type for j, k in enumerate(keys) if k.type.holds_map}


def _accumulations(n) -> list[Accumulate]:
    out = [n] if isinstance(n, Accumulate) else []
    for i in inc_inputs(n):
        out.extend(_accumulations(i))
    return out


def changes_frame(spark, table: Table, parts: list[Part], t: int, url, lower: int | None = None) -> DataFrame:
    """The updates of ``table``'s ``parts`` at time ``t`` as a change: ``c0 .. cN-1`` (the
    table's columns, as lowered plans have them) and ``_d``; with ``lower``, the updates
    at every time in ``(lower, t]``, their time as ``_t`` before ``_d``."""
    names = [c.name for c in table.columns]
    ranged = lower is not None
    frames = []
    inline = []
    by_layout: dict[tuple[bool, bool, int | None], list[str]] = {}
    for p in parts:
        timed = p.diffs and p.ts is None
        if p.inline is not None:
            tbl = decode_inline(p.inline)
            times = tbl.column(TIME_COLUMN) if TIME_COLUMN in tbl.column_names else pa.repeat(
                pa.scalar(p.ts, pa.int64()), tbl.num_rows)
            keep = pc.and_(pc.greater(times, lower), pc.less_equal(times, t)) if ranged else pc.equal(times, t)
            diff = tbl.column(DIFF_COLUMN) if DIFF_COLUMN in tbl.column_names else pa.repeat(
                pa.scalar(1, pa.int64()), tbl.num_rows)
            part = tbl.select(names)
            if ranged:
                part = part.append_column(TIME_COLUMN, times.cast(pa.int64()))
            inline.append(part.append_column(DIFF_COLUMN, diff).filter(keep))
        elif timed or not ranged or lower < p.ts <= t:
            by_layout.setdefault((p.diffs, timed, p.ts if ranged and not timed else None), []).append(url(p.key))
    time = [F.col(TIME_COLUMN)] if ranged else []
    for (diffs, timed, at), urls in by_layout.items():
        df = read_layout(spark, table, urls, diffs, timed)
        if timed and ranged:
            df = df.crossJoin(range_relation(spark, lower, t)).filter(
                (F.col(TIME_COLUMN) > F.col("_lo")) & (F.col(TIME_COLUMN) <= F.col("_tv")))
        elif timed:
            df = df.crossJoin(time_relation(spark, t)).filter(F.col(TIME_COLUMN) == F.col("_tv"))
        elif ranged:  # a part of one time: that time as data (``time_relation``)
            df = df.crossJoin(time_relation(spark, at)).select("*", F.col("_tv").alias(TIME_COLUMN))
        diff = F.col(DIFF_COLUMN) if diffs else F.lit(1).cast("long")
        frames.append(df.select(*[f"`{n}`" for n in names], *time, diff.alias(DIFF_COLUMN)))
    if inline:
        from pyspark.sql import types as T_

        fields = _file_schema(table).fields + [T_.StructField(TIME_COLUMN, T_.LongType(), True)] * ranged
        schema = T_.StructType(fields + [T_.StructField(DIFF_COLUMN, T_.LongType(), True)])
        frames.append(spark.createDataFrame(pa.concat_tables(inline, promote_options="permissive"), schema=schema))
    df = reduce(DataFrame.unionAll, frames)
    return df.select(*[_from_storage(F.col(f"`{n}`"), c.type).alias(f"c{i}") for i, (n, c) in
                       enumerate(zip(names, table.columns))], *[c.alias(T) for c in time], F.col(DIFF_COLUMN).alias(D))


def collect_timed(flow: Dataflow, out: DataFrame, shape: Callable[[DataFrame, bool], DataFrame],
                  limit: int | None = None) -> pa.Table:
    """``shape(out, True)`` (``out``: the output ``flow.advance`` returned; ``shape``
    turns a change into what is collected, ``_t`` before ``_d`` when asked for) as an
    Arrow table, at most ``limit`` rows. When ``out`` is the change of one time the
    change is collected without its time and the time column added here: the time as
    data (``time_relation``) is a broadcast cross join in Spark's plan, 40-100 ms of a
    narrow round's output plan (measured on a replica), and as a literal new code to
    compile every round."""
    from spark_exec.arrow_results import to_arrow

    one = flow.single_output
    if one is None:
        df = shape(out, True)
        return to_arrow(df.limit(limit) if limit is not None else df)
    t, d = one
    df = shape(d.coalesce(1) if flow.narrow else d, False)
    table = to_arrow(df.limit(limit) if limit is not None else df)
    return table.add_column(table.num_columns - 1, T, pa.repeat(pa.scalar(t, pa.int64()), table.num_rows))


def change_result(d: DataFrame, columns, timed: bool = False) -> DataFrame:
    """A change (``c0 .. cN-1``, ``_t`` when ``timed``, ``_d``) of columns ``columns``
    ((name, SqlType) pairs) as it is sent to a client: consolidated (rows whose diffs sum
    to 0 at a time left out), interval columns as the structs the result reader decodes
    (``lower.lower_result``'s rule)."""
    from spark_exec.lower import _interval_struct

    names = _names(len(columns))
    summed = consolidate(d, len(columns), numbered_maps(columns), by=(T,) if timed else ())
    return summed.select(*[_interval_struct(F.col(c)).alias(c) if t.name == "interval" else F.col(c)
                           for c, (_, t) in zip(names, columns)], *([T] if timed else []), D)


# (schemas as types, not DDL strings: pyspark asks the server to parse a DDL string, one
# more request per round)
_TIME = ST.StructType([ST.StructField("_tv", ST.LongType())])
_RANGE = ST.StructType([ST.StructField("_lo", ST.LongType()), ST.StructField("_tv", ST.LongType())])


def time_relation(spark, t: int) -> DataFrame:
    """One row, one column ``_tv`` = ``t``: a time given to a plan as data, not as a
    literal. Spark compiles literals into its generated code, so a plan with a new time
    in each round would be compiled anew each round (hundreds of ms); with the time as
    data, each round's plan compiles to the code of the last one and reuses it."""
    return F.broadcast(spark.createDataFrame([(t,)], _TIME))


def range_relation(spark, lower: int, t: int) -> DataFrame:
    """One row: ``_lo`` = ``lower``, ``_tv`` = ``t`` (a range of times as data, for the
    reason ``time_relation`` gives)."""
    return F.broadcast(spark.createDataFrame([(lower, t)], _RANGE))


def timed_frame(d: DataFrame, columns: int, t: int | None) -> DataFrame:
    """A change (``c0 .. cN-1``, ``_d``) with its time as ``_t`` before ``_d`` (``t`` None:
    no time column, for contents appended at one time)."""
    if t is None:
        return d.select(*_names(columns), D)
    return d.crossJoin(time_relation(d.sparkSession, t)).select(*_names(columns), F.col("_tv").alias("_t"), D)

