"""SUBSCRIBE: follow a table, view or query as it changes (Materialize's SQL reference,
"SUBSCRIBE").

Output columns: ``mz_timestamp``, ``mz_progressed`` (WITH (PROGRESS)), ``mz_diff``, then
the query's columns; ``ENVELOPE UPSERT (KEY (k))`` gives ``mz_timestamp, mz_state, k...,
rest...`` and ``ENVELOPE DEBEZIUM (KEY (k))`` gives ``mz_timestamp, mz_state, k...,
before_*, after_*``. The snapshot (unless ``WITH (SNAPSHOT = false)``) comes at the
subscription's as_of (a peek on the session's cluster). After it:

- a subscription to a table, or to a query that only filters and projects one table
  (``listen_input``), follows the table's shard with persist's ``listen``: each new
  part's updates are emitted at their own times as they land, the filter and projection
  evaluated here on those rows (they are linear: a row's diff carries over);
- any other query over tables and materialized views is a dataflow on a replica of the
  session's cluster (``_QueryDataflow``: the incremental plan of ``planner.incremental``,
  rendered by ``spark_exec.dataflow`` as materialized views are): each time an input
  has updates at comes out as the query's change at that time, computed from the
  inputs' changes; environmentd holds no copy of the answer, only each change on its
  way to the client. A query with no incremental rule is refused (0A000), as CREATE
  MATERIALIZED VIEW refuses it;
- a query that also reads system tables (which are not in persist: their changes
  cannot be followed) runs again on the session's cluster each time an input shard's
  upper moves, and the difference from the last answer is emitted at that timestamp.

Either way, new data is learned through persist (``PersistClient.wait_for_change``):
pushed through PubSub in milliseconds, else by polling Consensus with backoff. A query that reads no table is complete at once: its rows come
at the greatest timestamp, as in Materialize, and the subscription ends.

While the shared store (``--persist-consensus-url`` PostgreSQL) cannot be reached, a
subscription waits for it, as a Materialize SUBSCRIBE waits out a blip of its metadata
store (persist retries): only the calls that change nothing when they fail (waiting for
a change, the idle frontier's advance) are retried, and for at most
:data:`STORE_GRACE_S`; past that, or when a step fails half-way, the subscription ends
with 08006 (``sqlfront.session.store_error``).

Delivered through ``DECLARE c CURSOR FOR SUBSCRIBE ...`` + ``FETCH`` (a FETCH waits for at
least one row, up to its ``TIMEOUT``) and as a bare statement (rows stream until it ends,
is canceled, or the connection drops). While it runs, the subscription holds its frontier
(``StorageController.hold_time``) so since cannot pass it; closing releases it.
"""

from __future__ import annotations

import collections
import time
from decimal import Decimal
from typing import TYPE_CHECKING

import pglast
import psycopg

from catalog import mztime
from catalog.errors import (
    SqlError, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SYNTAX_ERROR, UNDEFINED_COLUMN, query_canceled,
)
from catalog.snapshot import Table
from catalog.types import BOOL, INT8, TEXT, SqlType
from persist import DIFF_COLUMN, TIME_COLUMN, Backoff, HoldGroup, SinceError
from planner.context import MAINTAINED
from planner.incremental import incremental_plan
from planner.incremental.nodes import walk
from planner.incremental.temporal import plan_mentions_now
from planner.interpret import hashable_row
from planner.plan import Filter, Get, Project, relations_read
from sqlfront import mzparse as mz
from sqlfront.sequence.result import Result, ResultStream, chunk_rows

if TYPE_CHECKING:
    from sqlfront.session import Session

#: Materialize's greatest timestamp: the time of a constant collection's updates
MAX_TIMESTAMP = mztime.MAX
#: the type of SUBSCRIBE's mz_timestamp column (Materialize's SQL reference, "SUBSCRIBE":
#: numeric, not the mz_timestamp type)
MZ_TIMESTAMP_COLUMN = SqlType("numeric", 20, 0)
#: longest a FETCH waits for data between checks of its cancel flag and connection
WAIT_S = 0.25
#: how often an idle subscription's frontier advances to the read timestamp, in seconds
#: (Materialize advances table uppers about once a second, so WITH (PROGRESS) sends a
#: progress row about once a second when nothing is written)
PROGRESS_INTERVAL_S = 1.0
#: longest a subscription waits for an unreachable shared store, in seconds
STORE_GRACE_S = 30.0


class StoreOutage:
    """How long the shared store has been unreachable for one follower: :meth:`call`
    runs a call that changes nothing when it fails, and answers ``default`` instead of
    its psycopg.OperationalError until the failures have lasted ``grace_s`` seconds.
    Not thread-safe."""

    def __init__(self, grace_s: float = STORE_GRACE_S):
        self.grace_s = grace_s
        #: monotonic seconds of the first failure of the outage (None: the store answers)
        self.since: float | None = None

    def call(self, fn, default, pause_s: float):
        """``fn()``; on a psycopg.OperationalError within the grace, ``default`` after
        ``pause_s`` seconds (a refused connection fails at once: no busy loop).

        Raises:
            psycopg.OperationalError: the store has been unreachable for ``grace_s``."""
        try:
            out = fn()
        except psycopg.OperationalError:
            now = time.monotonic()
            self.since = now if self.since is None else self.since
            if now - self.since >= self.grace_s:
                raise
            time.sleep(pause_s)
            return default
        self.since = None
        return out


class Subscription:
    """One running SUBSCRIBE of a session. Not thread-safe: its session drives it."""

    def __init__(self, s: Session, stmt: mz.Subscribe, as_of):
        from sqlfront.sequence import as_of as as_of_clause
        from sqlfront.sequence.peek import plan_read

        self.s = s
        self.stmt = stmt
        query = pglast.parse_sql(_show_query(s, stmt.query))[0].stmt
        ts = as_of_clause.evaluate(s, as_of) if as_of is not None else None
        up_to = as_of_clause.evaluate(s, mz_as_of(stmt.up_to)) if stmt.up_to else None
        with s.without_as_of():
            # mz_now() is each moment's time, as in a materialized view (temporal filters)
            pq, _, _ = plan_read(s, query, None, None, own_writes=False, mz_now=MAINTAINED)
        self.plan = pq.plan
        #: the query has a temporal filter: only a dataflow follows it (or, over constants,
        #: ``_temporal_constant``)
        self.temporal = plan_mentions_now(self.plan)
        self.data_columns = [(n, t) for n, (_, t) in zip(pq.names, pq.plan.columns)]
        self.tables = [r for r in relations_read(self.plan) if isinstance(r, Table)]
        for t in self.tables:  # a subsource in error (a table altered upstream): XX000, as a SELECT
            s.env.sources.check_readable(t)
        if ts is not None and up_to is not None:
            lower = ts if self.tables else MAX_TIMESTAMP  # a constant query is complete at the greatest time
            if lower > up_to:
                raise SqlError(INVALID_PARAMETER_VALUE, "subscription lower bound (`AS OF`) is greater than its "
                                                        f"upper bound (`UP TO`): {lower} > {up_to}")
        self.up_to = up_to
        self.columns = self._columns()
        names = [n for n, _ in self.columns]
        for name, _, _ in stmt.order_by:
            if name not in names:
                raise SqlError(UNDEFINED_COLUMN, f'column "{name}" does not exist')
        self.frontier = ts if ts is not None else s.env.oracle.read_ts()
        if as_of is not None and as_of.at_least and self.tables:
            self.frontier = max([self.frontier] + [s.env.persist.state(t.shard_id).since for t in self.tables])
        self._held = s.env.storage.hold_time(self.frontier) if self.tables else None
        self._last: collections.Counter | None = None
        self._uppers: dict[str, int] = {}
        #: the one table read, when the query follows it incrementally (see the module doc)
        self.listen_input: Get | None = None if self.temporal else listen_input(self.plan)
        self._dataflow = None
        if self.temporal and any(r.builtin for r in relations_read(self.plan)):
            raise SqlError(FEATURE_NOT_SUPPORTED, "temporal filters over system tables are not supported")
        if self.listen_input is None and self.tables and not any(r.builtin for r in relations_read(self.plan)):
            self._dataflow = _QueryDataflow(s, self.plan)  # 0A000 for a shape with no rule
        elif self.temporal:
            incremental_plan(self.plan)  # 0A000 for mz_now() outside a temporal filter
        self._listen = None
        #: shard -> the seqno of its state last looked at (re-running subscriptions)
        self._seqnos: dict[str, int] = {}
        self._poll = Backoff()
        self._watched: list[str] = []
        self._buffer: collections.deque = collections.deque()
        self.done = False
        self._started = False
        #: the greatest progress time reported (emitted with PROGRESS, or not)
        self._progressed = 0
        self._last_progress = time.monotonic()
        self._outage = StoreOutage()

    def _columns(self) -> list[tuple[str, SqlType]]:
        cols = [("mz_timestamp", MZ_TIMESTAMP_COLUMN)]
        if self.stmt.progress:
            cols.append(("mz_progressed", BOOL))
        names = [n for n, _ in self.data_columns]
        if self.stmt.envelope is None:
            return cols + [("mz_diff", INT8)] + self.data_columns
        for k in self.stmt.keys:
            if k not in names:
                raise SqlError(UNDEFINED_COLUMN, f'column "{k}" does not exist')
        keys = [c for k in self.stmt.keys for c in self.data_columns if c[0] == k]
        rest = [c for c in self.data_columns if c[0] not in self.stmt.keys]
        cols.append(("mz_state", TEXT))
        if self.stmt.envelope == "upsert":
            return cols + keys + rest
        return cols + keys + [(f"before_{n}", t) for n, t in rest] + [(f"after_{n}", t) for n, t in rest]

    # -- producing updates --------------------------------------------------------------

    def _run(self, ts: int) -> collections.Counter:
        from sqlfront.sequence.peek import peek

        rows = peek(self.s, self.plan, as_of=ts if self.tables else None)
        return collections.Counter(Row(r) for r in rows)

    def _emit(self, ts: int, diffs: collections.Counter) -> None:
        if self.up_to is not None and ts > self.up_to:
            self.done = True
            return
        out = []
        if self.stmt.envelope is None:
            for row, d in sorted(diffs.items(), key=lambda kv: (kv[1] > 0, _sort_key(kv[0]))):
                if d:
                    out.append(self._row(ts, [d], row))
        else:
            out = self._enveloped(ts, diffs)
        self._buffer.extend(self._ordered(out))

    def _ordered(self, rows: list[tuple]) -> list[tuple]:
        """``rows`` (of one timestamp) in WITHIN TIMESTAMP ORDER BY's order: stable sorts
        from the last key to the first, NULLs placed as each key says."""
        names = [n for n, _ in self.columns]
        for name, desc, nulls_first in reversed(self.stmt.order_by):
            i, null_rank = names.index(name), int(nulls_first == desc)
            rows.sort(key=lambda r: (null_rank, None) if r[i] is None else (1 - null_rank, r[i]), reverse=desc)
        return rows

    def _row(self, ts: int, middle: list, data) -> tuple:
        head = [Decimal(ts)] + ([False] if self.stmt.progress else [])
        return tuple(head + middle + list(data))

    def _enveloped(self, ts: int, diffs: collections.Counter) -> list[tuple]:
        names = [n for n, _ in self.data_columns]
        kpos = [names.index(k) for k in self.stmt.keys]
        rpos = [i for i in range(len(names)) if i not in kpos]
        by_key: dict[tuple, dict[str, list]] = {}
        for row, d in diffs.items():
            k = tuple(row[i] for i in kpos)
            slot = by_key.setdefault(k, {"old": [], "new": []})
            (slot["new"] if d > 0 else slot["old"]).extend([row] * abs(d))
        out = []
        for k, slot in sorted(by_key.items(), key=lambda kv: _sort_key(kv[0])):
            new = slot["new"][-1] if slot["new"] else None
            old = slot["old"][-1] if slot["old"] else None
            rest = lambda r: [r[i] if r is not None else None for i in rpos]  # noqa: E731
            if self.stmt.envelope == "upsert":
                out.append(self._row(ts, ["upsert" if new is not None else "delete"], list(k) + rest(new)))
            else:
                state = "upsert" if new is not None and old is not None else "insert" if new is not None else "delete"
                out.append(self._row(ts, [state], list(k) + rest(old) + rest(new)))
        return out

    def _progress(self, ts: int) -> None:
        """The subscription is complete below ``ts``: a progress row (WITH (PROGRESS)),
        and the end of the subscription once ``ts`` passes ``UP TO``."""
        if ts <= self._progressed:
            return
        self._progressed = ts
        self._last_progress = time.monotonic()
        if self.up_to is not None and ts > self.up_to:
            self.done = True
            return
        if self.stmt.progress:
            width = len(self.columns) - 2
            self._buffer.append(tuple([Decimal(ts), True] + [None] * width))

    def _idle_progress(self) -> None:
        """With no input change for ``PROGRESS_INTERVAL_S``, advance the frontier to the
        time the inputs are known complete through: the oracle's read timestamp (every
        write at or below it is applied) for tables, ``upper - 1`` for materialized views;
        only when every input's latest state has been consumed, so no update at or below
        that time is still on its way."""
        from catalog.snapshot import MaterializedView

        if time.monotonic() - self._last_progress < PROGRESS_INTERVAL_S or not self.tables:
            return
        self._last_progress = time.monotonic()
        persist = self.s.env.persist
        ts = self.s.env.oracle.read_ts()
        for t in self.tables:
            if persist.fence_reads and not isinstance(t, MaterializedView):
                # another process may still write at or below ts: fence it off, as a peek does
                persist.advance_upper(t.shard_id, ts)
            upper = persist.state(t.shard_id).upper
            seen = self._listen.frontier if self._listen is not None else self._uppers.get(t.shard_id)
            if upper != seen and not (self._listen is not None and upper <= seen):
                return  # updates not consumed yet: the next step emits them first
            if isinstance(t, MaterializedView):
                ts = min(ts, upper - 1)
        if ts > self.frontier:
            self._advance(ts)
            self._progress(ts + 1)

    def _start(self) -> None:
        self._started = True
        if not self.tables:
            # A constant collection: complete at once, at the greatest timestamp; with a
            # temporal filter, each row at the times it enters and leaves.
            if self.temporal:
                for t, diffs in temporal_constant(self.s, self.plan, self.frontier):
                    if t > self.frontier or self.stmt.snapshot:
                        self._emit(t, diffs)
            elif self.stmt.snapshot:
                self._emit(MAX_TIMESTAMP, self._run(self.frontier))
            self.done = True
            return
        persist = self.s.env.persist
        if self.listen_input is not None:
            table = self.listen_input.relation
            try:  # before the snapshot: its read hold keeps since at or below as_of
                self._listen = persist.listen(table.shard_id, self.frontier)
            except SinceError as e:
                from sqlfront.sequence.peek import invalid_timestamp

                raise invalid_timestamp(self.frontier, table, e) from None
        else:
            for t in self.tables:
                persist.watch(t.shard_id)
                self._watched.append(t.shard_id)
            self._seqnos = {t.shard_id: persist.state(t.shard_id).seqno for t in self.tables}
            self._uppers = self._read_uppers()
        if self._dataflow is not None:
            snapshot = self._dataflow.hydrate(self.frontier)
            if self.stmt.snapshot:
                self._emit(self.frontier, snapshot)
            self._progress(self.frontier + 1)
            return
        snapshot = self._run(self.frontier) if self.stmt.snapshot or self._listen is None else None
        self._last = snapshot if self._listen is None else None
        if self.stmt.snapshot:
            self._emit(self.frontier, snapshot)
        self._progress(self.frontier + 1)

    def _read_uppers(self) -> dict[str, int]:
        return {t.shard_id: self.s.env.persist.latest(t.shard_id).upper for t in self.tables}

    def _step(self, wait_s: float) -> bool:
        """Wait up to ``wait_s`` seconds for the inputs to change; emit what changed.
        Returns whether anything did.

        Raises:
            SqlError: the error of a materialized view read here whose query fails at
            the next time (Materialize ends a SUBSCRIBE with its input's error)."""
        self._raise_input_error()
        if self._listen is not None:
            return self._step_listen(wait_s)
        persist = self.s.env.persist
        event = self._dataflow.next_event if self._dataflow is not None else None
        if event is not None:  # a temporal filter's update comes due with time, not a write
            wait_s = min(wait_s, max(0.0, (event - self.s.env.oracle.read_ts()) / 1000))
        if not self._outage.call(lambda: persist.wait_for_change(self._seqnos, wait_s, self._poll), False, wait_s):
            if event is None or self.s.env.oracle.read_ts() < event:
                return False
        states = {shard: persist.latest(shard) for shard in self._seqnos}
        self._seqnos = {shard: st.seqno for shard, st in states.items()}
        uppers = {shard: st.upper for shard, st in states.items()}
        if uppers == self._uppers and event is None:
            return False
        if self._dataflow is not None:
            return self._step_dataflow(states)
        ts = max([self.s.env.oracle.read_ts()] + [u - 1 for u in uppers.values()])
        self._uppers = uppers
        now = self._run(ts)
        diffs = collections.Counter(now)
        diffs.subtract(self._last)
        self._last = now
        self._emit(ts, collections.Counter({k: v for k, v in diffs.items() if v}))
        self._advance(ts)
        self._progress(ts + 1)
        return True

    def _raise_input_error(self) -> None:
        from catalog.snapshot import MaterializedView

        for t in self.tables:
            if isinstance(t, MaterializedView):
                err = self.s.env.compute.materialization_error(t, self.frontier + 1)
                if err is not None:
                    raise err

    def _step_dataflow(self, states: dict) -> bool:
        """The query's changes at each time its inputs have updates at, up to what every
        input is complete for (a table: the read timestamp; a materialized view: its
        upper - 1)."""
        from catalog.snapshot import MaterializedView

        ts = self.s.env.oracle.read_ts()
        for t in self.tables:
            if isinstance(t, MaterializedView):
                ts = min(ts, states[t.shard_id].upper - 1)
        if ts <= self.frontier:
            return False
        self._uppers = {shard: st.upper for shard, st in states.items()}
        # The step reads states held before they were read (``held_state``): compaction may
        # replace parts meanwhile (a source writes every tick), and GC keeps the parts of
        # held states only. Such a state may be newer than ``states``; the step reads its
        # updates up to ``ts`` only.
        persist = self.s.env.persist
        holds = []
        try:
            for shard in list(states):
                states[shard], h = persist.held_state(shard, self.frontier)
                holds.append(h)
            for t, diffs in self._dataflow.step(self.frontier, ts, states):
                self._emit(t, diffs)
                if self.done:
                    return True
        finally:
            for h in holds:
                persist.release(h)
        self._advance(ts)
        self._progress(ts + 1)
        return True

    def _step_listen(self, wait_s: float) -> bool:
        batch = self._outage.call(lambda: self._listen.next(wait_s), None, wait_s)
        if batch is None:
            return False
        if batch.updates is not None:
            get = self.listen_input
            names, types = [n for n, _ in get.columns], [t for _, t in get.columns]
            rows = chunk_rows(batch.updates.select(names), types)
            by_time: dict[int, list] = {}
            for row, t, d in zip(rows, batch.updates.column(TIME_COLUMN).to_pylist(),
                                 batch.updates.column(DIFF_COLUMN).to_pylist()):
                by_time.setdefault(t, []).append((row, d))
            for t in sorted(by_time):
                self._emit(t, self._evaluate(by_time[t]))
                if self.done:
                    return True
        self._advance(batch.upper - 1)
        self._progress(batch.upper)
        return True

    def _evaluate(self, updates: list[tuple[tuple, int]]) -> collections.Counter:
        """The query's output updates for input ``updates`` (row, diff) at one time: the
        plan (filters and projections) runs over the rows added and over those removed,
        as a fast-path SELECT's does (``evaluate.evaluate_over``: the running statement's
        deadline, a FETCH's; cancel; max_query_heap_size; a backtracking regex or a big value in a worker process)."""
        from sqlfront.sequence.evaluate import evaluate_over

        table_id = self.listen_input.relation.id
        out: collections.Counter = collections.Counter()
        for sign in (1, -1):
            rows = [row for row, d in updates if d * sign > 0 for _ in range(abs(d))]
            if rows:
                for r in evaluate_over(self.s, self.plan, lambda _relation, rows=rows: rows,
                                       lambda rows=rows: {table_id: rows}):
                    out[Row(r)] += sign
        return collections.Counter({k: v for k, v in out.items() if v})

    def _advance(self, ts: int) -> None:
        if ts <= self.frontier and self._held is not None:
            return
        if self._held is not None:
            self.s.env.storage.release_time(self._held)
        self._held = self.s.env.storage.hold_time(ts)
        self.frontier = ts

    # -- consuming ----------------------------------------------------------------------

    def fetch(self, limit: int | None, timeout_s: float | None) -> list[tuple]:
        """Up to ``limit`` rows (all available when None): at once if some are ready, else
        waiting up to ``timeout_s`` (forever when None) for at least one.

        Raises:
            SqlError 57014 when the session's cancel flag is set."""
        if not self._started:
            self._start()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self._buffer and not self.done and limit != 0:
            if self.s.cancel_event.is_set():
                raise query_canceled(timeout=False)
            if self.s.client_gone():  # nobody is listening: free what the subscription holds
                self.close()
                raise query_canceled(timeout=False)
            wait = WAIT_S if deadline is None else max(0.0, min(WAIT_S, deadline - time.monotonic()))
            if self._step(wait):
                continue
            self._outage.call(self._idle_progress, None, wait)
            if deadline is not None and time.monotonic() >= deadline:
                break
        n = len(self._buffer) if limit is None else min(limit, len(self._buffer))
        return [self._buffer.popleft() for _ in range(n)]

    def close(self) -> None:
        """Release what the subscription holds (its time hold, its listen's read hold,
        its PubSub subscriptions). Idempotent."""
        if self._held is not None:
            self.s.env.storage.release_time(self._held)
            self._held = None
        if self._listen is not None:
            self._listen.close()
        for shard in self._watched:
            self.s.env.persist.unwatch(shard)
        self._watched = []
        self.done = True


class _QueryDataflow:
    """A subscription's query as a dataflow (``spark_exec.dataflow``) on one replica of the
    session's cluster; on another one, hydrated at the subscription's frontier, when that
    replica fails or restarts. Its changes come back as ``{row: diff}`` per time."""

    def __init__(self, s: Session, plan):

        self.s = s
        self.types = [t for _, t in plan.columns]
        self.columns = plan.columns
        self.inc = incremental_plan(plan)
        self._flow = None
        self._replica: str | None = None

    def _run(self, fn):
        s = self.s
        cluster = s.catalog.resolve_cluster(s.vars.get("cluster"))
        cc = s.env.compute.cluster_coordinator(cluster.id)
        if cc is None:
            raise s.env.compute.not_owned_error(cluster)
        _, out = cc.run_on_replica(fn, self._replica, s.env.config.replica_wait_s, s.cancel_event, dataflow=True)
        return out

    def _scan(self, holds: HoldGroup):
        """A snapshot reader for a hydration whose read holds go to ``holds`` (a run the
        wait gave up on may still read after ``holds`` were released: its hold is
        released at once then)."""
        persist = self.s.env.persist

        def scan(table: Table, as_of: int):
            snap, hold = persist.read(table.shard_id, as_of)
            holds.add(hold)
            return snap
        return scan

    def _new(self, h, session, as_of: int, scan):
        from spark_exec.dataflow import Dataflow

        flow = Dataflow(session, self.inc, self.s.env.persist.blob.url, self.s.builtin_rows)
        out = flow.hydrate(as_of, scan)
        self._flow, self._replica = flow, h.id
        return out

    def hydrate(self, as_of: int) -> collections.Counter:
        """Build the dataflow at ``as_of``; the query's rows there."""
        from spark_exec.arrow_results import to_arrow
        from spark_exec.dataflow import change_result

        holds = self.s.env.persist.hold_group()
        try:
            table = self._run(lambda h, session: to_arrow(change_result(self._new(h, session, as_of, self._scan(holds)),
                                                                        self.columns)))
        finally:
            holds.release()
        return self._counter(table)

    def step(self, frontier: int, ts: int, states: dict) -> list[tuple[int, collections.Counter]]:
        """The query's changes at each time in ``(frontier, ts]`` an input (``states``: their
        shard states) has updates at, in time order."""
        from persist.read import change_parts, shards_change_times
        from spark_exec.dataflow import change_result, collect_timed

        url = self.s.env.persist.blob.url
        holds = self.s.env.persist.hold_group()

        def changes(table: Table, lo: int, t: int):
            return change_parts(states[table.shard_id], lo, t)

        def run(h, session):
            flow = self._flow
            if flow is None or flow.session is not session:  # another replica, or restarted
                self._new(h, session, frontier, self._scan(holds))
                flow = self._flow
            times = shards_change_times(states.values(), flow.frontier, ts, url)
            out = flow.advance(times, ts, changes)
            if out is None:
                return None
            return collect_timed(flow, out, lambda d, timed: change_result(d, self.columns, timed=timed))

        try:
            table = self._run(run)
        finally:
            holds.release()
        if table is None:
            return []
        out: dict[int, collections.Counter] = {}
        times = table.column("_t").to_pylist()
        for t, (row, d) in zip(times, self._pairs(table)):
            out.setdefault(t, collections.Counter())[Row(row)] += d
        return [(t, collections.Counter({k: v for k, v in c.items() if v})) for t, c in sorted(out.items())]

    @property
    def next_event(self) -> int | None:
        """The earliest time after the frontier a temporal filter has updates at."""
        return self._flow.next_event if self._flow is not None else None

    def _pairs(self, table):
        rows = chunk_rows(table.select([f"c{i}" for i in range(len(self.types))]), self.types)
        return zip(rows, table.column("_d").to_pylist())

    def _counter(self, table) -> collections.Counter:
        c: collections.Counter = collections.Counter()
        for row, d in self._pairs(table):
            c[Row(row)] += d
        return collections.Counter({k: v for k, v in c.items() if v})


def temporal_constant(s: Session, plan, frontier: int) -> list[tuple[int, collections.Counter]]:
    """A query over constants with temporal filters, as its updates from ``frontier`` on:
    its rows at ``frontier``, then its change at each time a row enters or leaves (a
    bound of a temporal filter over its rows; Materialize's SQL reference, "Temporal
    filters"). Constants are small: computed here, the query run once per such time
    with ``mz_now()`` that time."""
    from planner.consteval import evaluate
    from planner.incremental.nodes import Temporal
    from planner.plan import map_plan_exprs
    from planner.scalar import Call, Literal
    from sqlfront.sequence.peek import peek

    times = set()
    for n in walk(incremental_plan(plan)):
        if isinstance(n, Temporal):
            for row in peek(s, n.input.plan, as_of=None):
                for e, offset in n.lowers + n.uppers:
                    v = evaluate(e, tuple(row), ctx=s.statement.plan)
                    if v is not None and int(v) + offset > frontier:
                        times.add(min(int(v) + offset, MAX_TIMESTAMP))

    def at(ts: int) -> collections.Counter:
        now = map_plan_exprs(plan, lambda e: Literal(ts, e.type) if isinstance(e, Call) and e.func == "mz_now" else e)
        return collections.Counter(Row(r) for r in peek(s, now, as_of=None))

    last = at(frontier)
    out = [(frontier, collections.Counter({k: v for k, v in last.items() if v}))]
    for ts in sorted(times):
        now = at(ts)
        diffs = collections.Counter(now)
        diffs.subtract(last)
        last = now
        out.append((ts, collections.Counter({k: v for k, v in diffs.items() if v})))
    return [(t, d) for t, d in out if d]


def listen_input(plan) -> Get | None:
    """The Get of the one user table ``plan`` reads, when the plan is only filters and
    projections over it with no subquery and no volatile or stable function (so each
    input row maps to output rows on its own, whatever the time); else None."""
    from planner.consteval import is_volatile
    from planner.functions import FUNCTIONS
    from planner.scalar import Call, has_subquery, walk

    def pure(e) -> bool:
        if has_subquery(e) or is_volatile(e):
            return False
        return all(not isinstance(n, Call) or getattr(FUNCTIONS.get(n.func), "volatility", "immutable") == "immutable"
                   for n in walk(e))

    p = plan
    while isinstance(p, (Filter, Project)):
        if not all(pure(e) for e in ((p.predicate,) if isinstance(p, Filter) else p.exprs)):
            return None
        p = p.input
    return p if isinstance(p, Get) and isinstance(p.relation, Table) else None


def mz_as_of(text: str):
    from sqlfront.parse import AsOf

    return AsOf(text, False)


def _show_query(s: Session, query: str) -> str:
    """The SQL a subscribed query runs: a SHOW statement becomes its catalog query."""
    if query.upper().startswith("SHOW"):
        from sqlfront.parse import parse_one
        from sqlfront.sequence.show import show_query

        return show_query(s, parse_one(query))
    return query


class Row(tuple):
    """A row as a key of a subscription's update counters: equal and hashed by value
    when it holds arrays or lists (Python lists) or maps (dicts), which are not
    hashable (``planner.interpret.hashable_row``'s rule, as DISTINCT's in the interpreter)."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(hashable_row(self))

    def __eq__(self, other) -> bool:
        return isinstance(other, tuple) and hashable_row(self) == hashable_row(other)

    def __ne__(self, other) -> bool:
        return not self == other


def _sort_key(row) -> tuple:
    return tuple((v is None, str(v)) for v in row)


def unbounded_stream(s: Session) -> None:
    """The running statement streams a subscription from now on: as COPY FROM STDIN's
    data, it lasts as long as the client keeps it (a cancel or the connection's end stops
    it), so its deadline goes (``StatementContext.unbounded``). A FETCH from a
    subscription's cursor is bounded as any statement."""
    s.statement = s.statement.unbounded()


def _stream(sub: Subscription) -> ResultStream:
    def pull():
        if sub.done and not sub._buffer and sub._started:
            return None
        rows = sub.fetch(None, None)
        return rows if rows else (None if sub.done else [])

    return ResultStream(sub.columns, pull, on_close=sub.close)


def subscribe(s: Session, stmt: mz.Subscribe, sql: str, params) -> Result:
    """A bare SUBSCRIBE: its rows stream to the client until it completes, is canceled
    (57014) or the connection drops. Its statement_timeout bounds it until it streams
    (``unbounded_stream``)."""
    sub = Subscription(s, stmt, s.as_of)
    unbounded_stream(s)
    return Result("SUBSCRIBE", sub.columns, stream=_stream(sub))


def copy_subscribe(s: Session, stmt: mz.CopySubscribe, sql: str, params):
    """``COPY (SUBSCRIBE ...) TO STDOUT [WITH (FORMAT ...)]``: what psql uses to follow a
    subscription; each row goes out as CopyData as soon as it comes.

    Raises:
        SqlError 42601 for a malformed COPY; 0A000 for COPY ... TO a file or FROM."""
    from sqlfront.sequence.copy import _copy_options
    from sqlfront.sequence.result import CopyOut

    try:
        copy_stmt = pglast.parse_sql(f"COPY (SELECT 1) {stmt.rest}")[0].stmt
    except pglast.parser.ParseError as e:
        raise SqlError(SYNTAX_ERROR, str(e.args[0] if e.args else e)) from None
    if copy_stmt.is_from or copy_stmt.filename is not None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "COPY (SUBSCRIBE ...) supports only TO STDOUT")
    from sqlfront.parse import split_as_of

    opts = _copy_options(copy_stmt)
    body, as_of = split_as_of(stmt.subscribe)
    sub = Subscription(s, mz.parse_mz(body), as_of or s.as_of)
    unbounded_stream(s)
    return CopyOut(sub.columns, [], opts.get("format", "text"), opts.get("delimiter"), opts.get("null"),
                   opts.get("header", "false") in ("true", "on", "1"), stream=_stream(sub), live=True)
