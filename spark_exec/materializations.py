"""Materialized views: the cluster that hosts one keeps its shard current (Materialize's
"CREATE MATERIALIZED VIEW": the view's results persisted in durable storage, "incrementally
updated as new data arrives" by the cluster it was created in).

One thread per cluster (``MaterializationMaintainer``, owned by its ClusterCoordinator;
never the Coordinator main loop) follows the shards its views read (persist's
``wait_for_change``: PubSub pushes and this process's own compare-and-sets wake it, polling
is the fallback) and, for each view in dependency order, in rounds:

1. picks ``target``: the newest timestamp every input is complete for. A table is
   complete for the oracle's read timestamp (``read_ts`` never passes an unapplied
   write); a materialized view for its upper - 1.
2. A view never computed gets its contents at ``target`` from its dataflow's hydration
   (appended at the newest input update's time, or at 0 when its inputs have none: they
   hold from the start).
3. Otherwise the times in ``(upper - 1, target]`` at which some input has updates go,
   in order, through the view's *dataflow* on every healthy replica
   (``spark_exec.dataflow``: the incremental plan of ``planner.incremental`` over
   arrangements held in the replica's memory): each time's change of the view comes
   out of the inputs' changes at that time, and the first replica to finish writes
   them all as one part with their times (``_mz_time``) straight to Blob, appended by
   compare-and-append with the upper moved to ``target + 1``. Waiting writes are one
   round, but each keeps its own time: a read ``AS OF`` any of them is exact.
4. With no input update, the upper moves to ``target + 1`` by an empty
   compare-and-append, when a reader asks for it (``request``) or every ``ADVANCE_S``
   seconds.

A round that fails with the query's error (a division by zero in some row) makes the view
fail from the first time it fails at (``_first_failing``): reads at and after that time
answer the error, reads before it answer rows. While it fails, each later write is tried
as one round that takes every update since the error as at that write, each input's
change consolidated first (``_get_past``): once the row that caused the error is deleted
the view answers rows again, and reads at the times in between still answer the error
(Materialize keeps errors as data, retracted with the rows that caused them).

A replica's dataflow is hydrated (its arrangements built from the inputs' snapshots) the
first time it runs on that replica's session, at the view's upper - 1, and again after
the replica restarts or a round fails on it; the inputs' since is held at the view's
frontier so that is always possible and the inputs' updates after it keep their times.
All state is the shard's: a restarted process resumes from the upper it finds. A cluster
without a healthy replica advances nothing (reads wait, as in Materialize).

An index on a view (``Materialization.index``) is maintained by the same loop and the
same dataflows, but its output is no shard: each replica keeps the view's contents, with
their times, in memory (``dataflow.Contents``) and brings its own dataflow to the
inputs' newest complete time each round (``_step_index``); a peek of the view on the
cluster reads them there (``index_state``, ``index_contents``). A replica restarted, or
whose round failed, hydrates again.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

import pyarrow as pa

from catalog.errors import SqlError, INTERNAL_ERROR, OBJECT_NOT_IN_PREREQUISITE_STATE
from catalog.snapshot import MaterializedView, Table
from catalog.types import INT8, arrow_schema
from persist import DIFF_COLUMN, TIME_COLUMN, Backoff, HoldGroup, PersistClient, SinceError, UpperMismatch
from persist.read import change_parts, shards_change_times
from planner.incremental import incremental_plan
from planner.incremental.temporal import plan_mentions_now
from planner.plan import Plan
from spark_exec import rpcs
from spark_exec.dataflow import Contents, Dataflow, collect_timed, timed_frame
from spark_exec.errors import is_connection_error, to_sql_error
from spark_exec.replica import HEALTHY
from spark_exec.state_sizes import state_tag
from spark_exec.lower import BuiltinFn, numbered_maps
from spark_exec.writes import PartUrls, holds_intervals, stored_updates, write_job

if TYPE_CHECKING:
    from spark_exec.cluster_coordinator import ClusterCoordinator

log = logging.getLogger(__name__)

#: a step's change of at most this many updates comes back to environmentd to be appended
#: (``persist.PersistClient.updates_batch``) instead of being written by a Spark job
COLLECT_UPDATES = 10_000


@dataclass(frozen=True)
class Materialization:
    """One materialized view as its cluster maintains it: the view (shard, columns), the
    optimized plan of its query, and the stored relations the plan reads (tables and
    materialized views; views are already expanded into the plan).

    With ``index``, ``view`` is an index on a (non-materialized) view (``catalog.snapshot.Index``)
    and ``plan`` that view's query: the same dataflow keeps it current, but its output
    stays in each replica's memory (``dataflow.Contents``), where peeks of the view read
    it (Materialize: an index is a dataflow whose output arrangement lives in its
    cluster), instead of being appended to a shard."""

    view: MaterializedView
    plan: Plan
    inputs: tuple[Table, ...]
    index: bool = False


@dataclass(frozen=True)
class _Failure:
    """A view's query failing: with ``error`` at every time in ``[lo, hi]`` (as far as
    the rounds that ran tell), tried again without an input change at ``retry_at``
    (monotonic seconds), ``pause`` seconds after the last try."""

    error: SqlError
    lo: int
    hi: int
    retry_at: float
    pause: float


#: () -> the materialized views the cluster hosts now, in dependency order
WantedFn = Callable[[], list[Materialization]]


class MaterializationMaintainer:
    """Keeps the materialized views of one cluster current (see the module doc).

    ``wanted()`` lists them; ``read_ts()`` is the timestamp oracle's read timestamp;
    ``request_input(view, ts)`` asks the cluster hosting ``view`` (maybe another one) to
    advance it past ``ts`` (a view over a view); ``on_append({shard})`` hears of each
    append of data. Thread-safe: ``request`` and ``error`` are called from sessions."""

    #: seconds between advancing idle views' uppers to the read timestamp
    ADVANCE_S = 1.0
    #: longest wait for input changes between looks at requests (seconds)
    WAIT_S = 0.05
    #: views of one cluster stepped at once
    CONCURRENT_VIEWS = 4
    #: longest pause before computing a view again after its query failed (seconds)
    MAX_RETRY_S = 10.0
    #: spans of times a recovered view's query failed at, kept per view for reads AS OF them
    ERROR_SPANS = 16

    def __init__(self, cc: "ClusterCoordinator", persist: PersistClient, read_ts: Callable[[], int],
                 wanted: WantedFn, builtin_rows: BuiltinFn, request_input: Callable[[MaterializedView, int], None],
                 on_append: Callable[[set[str]], None] | None = None, replica_wait_s: float = 5.0):
        self.cc = cc
        self.persist = persist
        self.read_ts = read_ts
        self.wanted = wanted
        self.builtin_rows = builtin_rows
        self.request_input = request_input
        self.replica_wait_s = replica_wait_s
        #: called with {shard} after new data was appended to a view's shard (compaction follows)
        self.on_append = on_append
        self._lock = threading.Lock()
        #: view id -> the greatest timestamp a reader waits for the view to pass
        self._requests: dict[str, int] = {}
        #: view id -> how its query fails now
        self._errors: dict[str, _Failure] = {}
        #: view id -> [(lo, hi, error)]: the times its query failed at before it recovered
        self._spans: dict[str, list[tuple[int, int, SqlError]]] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._watched: set[str] = set()
        self._pool = ThreadPoolExecutor(self.CONCURRENT_VIEWS, thread_name_prefix=f"materialize-{cc.name}")
        #: (view id, replica id) -> the view's dataflow on that replica
        self._flows: dict[tuple[str, str], Dataflow] = {}
        self._flow_locks: dict[tuple[str, str], threading.Lock] = {}
        #: (view id, id of its plan) -> (the plan, its incremental plan)
        self._plans: dict = {}
        #: view id -> [(time, read hold)] on its inputs
        self._holds: dict[str, list] = {}
        #: when the loop last advanced every view (``ADVANCE_S``), and its wait's backoff
        self._last_advance = 0.0
        self._poll = Backoff()
        #: (view id, replica id) -> seconds its last hydration took
        self.hydrations: dict[tuple[str, str], float] = {}
        self._thread: threading.Thread | None = None
        #: view id -> its last round (a view has one round at a time)
        self._steps: dict = {}
        #: rounds that ran the query on a replica (for tests and metrics)
        self.computations = 0
        #: dataflow rounds (``Dataflow.rounds``) the views ran on this cluster's replicas,
        #: hydrations not counted: the Prometheus counter ``materialization_dataflow_rounds``
        self.dataflow_rounds = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"materialize-{self.cc.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop maintaining (the cluster is dropped, or this process stepped down as its
        owner): the views' read holds on their inputs go with it (kept, they would pin
        the inputs' since and every part retired after it until this process exits)."""
        self._stop.set()
        self._wake.set()
        for shard in list(self._watched):
            self.persist.unwatch(shard)
        self._watched.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            held, self._holds = self._holds, {}
        for _, h in (x for hs in held.values() for x in hs):
            self.persist.release(h)

    def request(self, view_id: str, ts: int) -> None:
        """A reader waits for view ``view_id``'s upper to pass ``ts``: advance it soon."""
        with self._lock:
            if self._requests.get(view_id, -1) < ts:
                self._requests[view_id] = ts
        self._wake.set()

    def hydration_rows(self, replica_ids: list[str]) -> list[tuple]:
        """``(view id, replica id, hydrated, seconds its last hydration took)`` for each
        view maintained here and each replica of the cluster (Materialize's
        mz_internal.mz_hydration_statuses)."""
        with self._lock:
            flows = dict(self._flows)
        sessions = {h.id: h.dataflow_session_now() for h in self.cc.handles()}
        views = {vid for vid, _ in flows} | set(self._holds)

        def hydrated(vid: str, rid: str) -> bool:
            f = flows.get((vid, rid))
            # (a dataflow of a replica's session that is gone, killed or restarted, is no more)
            return f is not None and f.frontier is not None and sessions.get(rid) is f.session

        return [(vid, rid, hydrated(vid, rid), self.hydrations.get((vid, rid))) for vid in views for rid in replica_ids]

    def error(self, view_id: str, as_of: int) -> SqlError | None:
        """The error a read of view ``view_id`` at ``as_of`` answers, if its query fails
        there (as far as the rounds that ran tell; a time past them is not known yet)."""
        with self._lock:
            f = self._errors.get(view_id)
            if f is not None and f.lo <= as_of <= f.hi:
                return f.error
            return next((e for lo, hi, e in self._spans.get(view_id, ()) if lo <= as_of <= hi), None)

    # -- the loop ---------------------------------------------------------------------

    def _loop(self) -> None:
        """Look at the views and start their rounds until stopped. The loop survives any
        error of a look (Consensus or the catalog unreachable: PostgreSQL restarting):
        were it to end, the views would stop advancing and the read holds they keep on
        their inputs would pin those shards' since until this process exits."""
        failing = None
        while not self._stop.is_set():
            try:
                self._look()
                if failing is not None:
                    log.info("materialized views of cluster %s: maintained again", self.cc.name)
                failing = None
            except Exception as e:  # noqa: BLE001 - the next look tries again
                if str(e) != failing:  # reported once, not every look
                    log.warning("materialized views of cluster %s: %s (retrying every %g s)",
                                self.cc.name, e, self.WAIT_S)
                failing = str(e)
                self._stop.wait(self.WAIT_S)

    def _look(self) -> None:
        """One look of :meth:`_loop`: start the rounds that are due, then wait for a
        change of an input, a reader's request, or the next periodic advance."""
        try:
            mats = self.wanted()
        except Exception as e:  # the catalog is changing under us: next round
            log.warning("materialized views of cluster %s: %s", self.cc.name, e)
            mats = []
        self._follow({i.shard_id for m in mats for i in m.inputs})
        live_ids = {m.view.id for m in mats}
        for gone in {vid for vid, _ in list(self._flows)} | set(self._holds):
            if gone not in live_ids and not self._running(gone):  # dropped (or moved to another cluster)
                self._steps.pop(gone, None)
                with self._lock:
                    self._errors.pop(gone, None)
                    self._spans.pop(gone, None)
                self._drop(gone)
        # Before looking at the inputs: a change during the round wakes the next one.
        seen = {s: self.persist.latest(s).seqno for s in self._watched}
        self._wake.clear()
        with self._lock:
            requests, self._requests = self._requests, {}
        periodic = time.monotonic() - self._last_advance >= self.ADVANCE_S
        if periodic:
            self._last_advance = time.monotonic()
        if mats and self.cc.has_healthy_replica():
            # Each view steps on its own (Materialize runs every dataflow at once): one
            # whose round is still running is left for the next look, so a slow view
            # never holds back the others; views over views after the views they read.
            for m in (m for level in _levels(mats) for m in level):
                if self._stop.is_set():
                    return
                if self._running(m.view.id):
                    continue
                f = self._pool.submit(self._step_logged, m, requests.get(m.view.id), periodic)
                self._steps[m.view.id] = f
                f.add_done_callback(lambda _: self._wake.set())  # its next round may be due
        # What readers asked for and did not get yet (an input view of another
        # cluster is behind, no healthy replica) is asked again next round.
        live = {m.view.id: m for m in mats}
        behind = {vid: ts for vid, ts in requests.items() if vid in live and self._behind(live[vid], ts)}
        with self._lock:
            for vid, ts in behind.items():
                self._requests[vid] = max(ts, self._requests.get(vid, -1))
        self._wait(seen, self._poll)

    def _behind(self, m: Materialization, ts: int) -> bool:
        """Whether ``m`` is not complete for ``ts`` yet (an index: on no replica)."""
        if m.index:
            return self.index_state(m.view.id, ts) != "ready"
        return self.persist.latest(m.view.shard_id).upper <= ts

    def _running(self, view_id: str) -> bool:
        """Whether a round of ``view_id`` is running (or waiting for a thread)."""
        f = self._steps.get(view_id)
        return f is not None and not f.done()

    def _step_logged(self, m: Materialization, requested: int | None, periodic: bool) -> None:
        try:
            self._step(m, requested, periodic)
        except Exception as e:
            log.warning("maintaining materialized view %s: %s", m.view.name, e)

    def _wait(self, seen: dict[str, int], poll: Backoff) -> None:
        """Until an input shard changes (``seen``: its seqnos now), a reader asks, the
        next periodic advance is due, or the maintainer stops."""
        deadline = time.monotonic() + self.ADVANCE_S
        while not self._stop.is_set() and not self._wake.is_set() and time.monotonic() < deadline:
            with self._lock:
                pending = bool(self._requests)
            if pending:
                self._stop.wait(self.WAIT_S)
                return
            if seen:
                if self.persist.wait_for_change(seen, self.WAIT_S, poll):
                    return
            else:
                self._wake.wait(self.WAIT_S)

    def _follow(self, shards: set[str]) -> None:
        """Subscribe to the pushes of ``shards`` (and only those)."""
        for s in shards - self._watched:
            self.persist.watch(s)
        for s in self._watched - shards:
            self.persist.unwatch(s)
        self._watched = set(shards)

    def _step(self, m: Materialization, requested: int | None, periodic: bool) -> None:
        """Bring view ``m`` up to what its inputs are complete for (see the module doc)."""
        persist, view = self.persist, m.view
        with self._lock:
            failed = self._errors.get(view.id)
        if m.index:
            if failed is None or time.monotonic() >= failed.retry_at:
                self._step_index(m, requested)
            return
        ts = self.read_ts()
        st = persist.state(view.shard_id)
        if not st.seqno or st.sealed:  # dropped (or not created yet)
            self._drop(view.id)
            return
        upper = st.upper
        target, states = self._input_states(m, ts, requested)
        if target < upper:
            return  # an input view is behind this one's upper
        fresh = []
        if failed is not None:
            # The query fails at the times [lo, hi]. Inputs unchanged since: it still
            # fails (its errors are the data's), until a change can retract the error.
            fresh = self._times(states, failed.hi, target)
            if not fresh and time.monotonic() < failed.retry_at:
                if not plan_mentions_now(m.plan):  # (a temporal filter's events change it without a write)
                    self._failed(view.id, failed.error, failed.lo, target, again=False)
                return
        if upper == 0:  # never computed: its contents at target
            changed_at, _ = changed_time(states.values(), 0, target)
            at = target
            if plan_mentions_now(m.plan):
                # Its contents change with time, not only with its inputs: they are computed
                # at the inputs' last change (or their since, if later), and the next rounds
                # step from there through the temporal filters' times to target.
                at = max([changed_at or 0] + [st.since for st in states.values()])
                changed_at = at
            try:
                batch = self._compute(m, states, None, at)
            except SqlError as e:
                if e.sqlstate != OBJECT_NOT_IN_PREREQUISITE_STATE:
                    self._failed(view.id, e, 0, at)
                raise
            self._recovered(view.id, None)
            self._append(m, batch, upper, changed_at if changed_at is not None else 0, at)
            return
        if failed is not None:
            self._get_past(m, states, upper, failed, fresh[0] if fresh else target)
            return
        times = self._times(states, upper - 1, target)
        due = self._next_event(view.id)
        if not times and (due is None or due > target):
            if periodic or (requested is not None and upper <= requested):
                persist.compare_and_append(view.shard_id, [], upper, target)
            self._hold(m, target)
            return
        try:
            batch = self._compute(m, states, upper - 1, target)
        except SqlError as e:
            if e.sqlstate == OBJECT_NOT_IN_PREREQUISITE_STATE:
                raise
            self._first_failing(m, states, upper, times, target, e)
            return
        self._append_change(m, batch, upper, target)

    def _append_change(self, m: Materialization, batch, upper: int, target: int) -> None:
        """Append a round's change (its updates at their times in ``[upper, target]``)."""
        if batch is not None:
            batch = replace(batch, timed=(upper, target + 1))
        self._append(m, batch, upper, target, target)

    def _first_failing(self, m: Materialization, states: dict, upper: int, times: list[int], target: int,
                       e: SqlError) -> None:
        """The round from ``upper`` to ``target`` failed with ``e`` (the query's error, at
        one of the inputs' update ``times`` or a temporal event): the view errs from the
        first time it fails at. Of several times, the first alone is computed again: the
        view's change there is appended when it succeeds (the next round goes on from
        it), else the view errs from that time on. Up to that time the view is as it was
        (no input changed), so its upper moves there: a read before the bad write
        answers as before (Materialize: an error is the data of the times it holds at).

        Raises:
            SqlError: the error, recorded for readers (``error``)."""
        view = m.view
        temporal = plan_mentions_now(m.plan)  # (its contents may change between the inputs' times)
        if len(times) > 1 and not temporal:
            try:
                batch = self._compute(m, states, upper - 1, times[0])
            except SqlError as again:
                if again.sqlstate == OBJECT_NOT_IN_PREREQUISITE_STATE:
                    raise
                e, target = again, times[0]
            else:
                self._append_change(m, batch, upper, times[0])
                return
        lo = times[0] if times and not temporal else upper
        self._failed(view.id, e, lo, target)
        if lo > upper:
            self.persist.compare_and_append(view.shard_id, [], upper, lo - 1)
        raise e

    def _get_past(self, m: Materialization, states: dict, upper: int, failed: "_Failure", at: int) -> None:
        """The view's query fails at the times ``[failed.lo, failed.hi]``: one round from
        ``upper`` to ``at`` that takes every update in between as at ``at``
        (``Dataflow.advance(collapse=True)``), so a row inserted and deleted again since
        the error is never seen. When it succeeds the view's change to ``at`` is appended
        there, and reads at the times before it still answer the error; when it fails
        the view errs at ``at`` too.

        Raises:
            SqlError: the query's error, recorded for readers (``error``)."""
        try:
            batch = self._compute(m, states, upper - 1, at, collapse=True)
        except SqlError as e:
            if e.sqlstate != OBJECT_NOT_IN_PREREQUISITE_STATE:
                self._failed(m.view.id, e, failed.lo, at)
            raise
        self._recovered(m.view.id, (failed.lo, at - 1))
        self._append_change(m, batch, upper, at)

    def _input_states(self, m: Materialization, ts: int, requested: int | None) -> tuple[int, dict]:
        """``(target, states)``: the newest time every input of ``m`` is complete for (at
        most ``ts``, the read timestamp: see the module doc), and each input's shard state
        (shard id -> state). An input view behind ``requested`` is asked to catch up."""
        persist = self.persist
        target = ts
        states = {}
        for inp in m.inputs:
            if isinstance(inp, MaterializedView):
                ist = persist.state(inp.shard_id)
                if ist.upper - 1 < target:
                    target = ist.upper - 1
                    if requested is not None and ist.upper <= requested:
                        self.request_input(inp, requested)
            elif persist.fence_reads:  # other processes write it: nothing may land at or below ts later
                ist = persist.advance_upper(inp.shard_id, ts)
            else:
                ist = persist.state(inp.shard_id)
            states[inp.shard_id] = ist
        return target, states

    # -- indexes on views ---------------------------------------------------------------

    def _step_index(self, m: Materialization, requested: int | None) -> None:
        """Bring the dataflow of index ``m`` on every healthy replica to what its inputs
        are complete for: hydrated there first (its contents at that time), then the
        inputs' waiting updates in one round (``Dataflow.advance``); the output's changes,
        with their times, join the replica's ``Contents`` (no shard: nothing is
        appended). A round with no input update and no temporal event only moves the
        frontiers, without a Spark job."""
        target, states = self._input_states(m, self.read_ts(), requested)
        with self._lock:
            flows = {rid: f for (vid, rid), f in self._flows.items() if vid == m.view.id}
        live = self.cc.healthy_replicas()
        hydrated = {h.id: flows.get(h.id) for h in live}
        if live and all(f is not None and f.frontier is not None and f.contents is not None
                        and f.session is h.dataflow_session() for f, h in zip(hydrated.values(), live)):
            low = min(f.frontier for f in hydrated.values())
            due = [f.next_event for f in hydrated.values() if f.next_event is not None]
            if low >= target or (not self._times(states, low, target) and not (due and min(due) <= target)):
                for rid, f in hydrated.items():
                    lock = self._flow_locks.setdefault((m.view.id, rid), threading.Lock())
                    if lock.acquire(blocking=False):  # (a round running there moves it itself)
                        try:
                            if f.frontier < target:
                                f.frontier = f.contents.frontier = target
                        finally:
                            lock.release()
                self._hold(m, target)
                return
        self._compute_index(m, states, target)
        self._hold(m, target)

    def _compute_index(self, m: Materialization, states: dict, target: int) -> None:
        """One round of index ``m``'s dataflow on each healthy replica, to ``target``
        (``_step_index``); returns once one replica is done (the others finish on
        their own, each under its dataflow's lock).

        Raises:
            SqlError: as ``_compute``."""
        index = m.view
        try:
            inc = self._incremental(m)
        except SqlError as e:
            self._failed(index.id, e)
            raise
        columns = len(m.plan.columns)
        holds, scan, changes = self._readers(m, states, target)

        def run(h) -> str:
            key = (index.id, h.id)
            with self._flow_locks.setdefault(key, threading.Lock()):
                session = h.dataflow_session()
                if session is None:
                    raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"replica {h.label} has no session")
                with self._lock:
                    flow = self._flows.get(key)
                started = time.monotonic()
                try:
                    # its checkpoints are the index's state (mz_object_arrangement_sizes)
                    with rpcs.counted() as calls, state_tag(session, index.id):
                        if (flow is None or flow.session is not session or flow.inc is not inc
                                or flow.frontier is None or flow.contents is None):
                            flow = Dataflow(session, inc, self.persist.blob.url, self.builtin_rows)
                            contents = Contents(columns, target, numbered_maps(m.plan.columns))
                            contents.add(flow.hydrate(target, scan), target, t=target)
                            flow.contents = contents
                            self.hydrations[key] = time.monotonic() - started
                            kind = "hydration"
                        elif flow.frontier < target:
                            out = flow.advance(self._times(states, flow.frontier, target), target, changes)
                            flow.contents.add(out, flow.frontier)
                            kind = "narrow" if flow.narrow else "wide"
                        else:
                            return ""
                    with self._lock:
                        self._flows[key] = flow
                    log.debug("index %s on replica %s: %s round %.3f s, %s", index.name, h.label, kind,
                              time.monotonic() - started, calls)
                    return ""
                except BaseException:
                    with self._lock:
                        if self._flows.get(key) is flow:
                            del self._flows[key]
                    raise

        try:
            self._race(run, holds)
        except SqlError as e:
            if e.sqlstate != OBJECT_NOT_IN_PREREQUISITE_STATE:
                self._failed(index.id, e)
            raise
        with self._lock:
            self._errors.pop(index.id, None)
        self.computations += 1

    def _readers(self, m: Materialization, states: dict, target: int) -> tuple[HoldGroup, Callable, Callable]:
        """What a round of ``m``'s dataflow reads its inputs with: ``(holds, scan,
        changes)``: the read holds taken (on the inputs at ``target``, and one per
        snapshot ``scan`` reads; ``_race`` releases them once every replica's run
        ended), ``scan(table, as_of)`` (a snapshot) and ``changes(table, lower, upper)``
        (the parts of the table's updates in ``(lower, upper]``, from its state in
        ``states``)."""
        holds = self.persist.hold_group()
        try:
            for r in m.inputs:
                holds.add(self.persist.hold(r.shard_id, target))
        except BaseException:
            holds.release()
            raise

        def scan(rel: Table, as_of: int):
            snap, hold = self.persist.read(rel.shard_id, as_of)
            holds.add(hold)
            return snap

        def changes(rel: Table, lo: int, t: int):
            return change_parts(states[rel.shard_id], lo, t)

        return holds, scan, changes

    def index_state(self, index_id: str, as_of: int) -> str:
        """How index ``index_id`` can serve a peek at ``as_of``: ``ready`` (some replica's
        contents are exact there), ``behind`` (a replica's are exact from before
        ``as_of`` on, and its next rounds get there), or ``unavailable`` (not hydrated
        anywhere, its query failed last, or ``as_of`` is before every replica's since:
        the peek runs the view's query instead)."""
        sessions = {h.id: h.dataflow_session_now() for h in self.cc.handles()}
        with self._lock:
            if index_id in self._errors:
                return "unavailable"
            contents = [f.contents for (vid, rid), f in self._flows.items()
                        if vid == index_id and f.contents is not None and sessions.get(rid) is f.session]
        if any(c.serves(as_of) for c in contents):
            return "ready"
        return "behind" if any(c.since <= as_of for c in contents) else "unavailable"

    def index_contents(self, index_id: str, replica_id: str, session, as_of: int):
        """The contents of index ``index_id`` at ``as_of`` on replica ``replica_id`` (a
        DataFrame of its dataflow ``session``: ``c0 .. cN-1``), or None when that replica
        cannot serve ``as_of`` (``index_state``)."""
        with self._lock:
            flow = self._flows.get((index_id, replica_id))
        contents = flow.contents if flow is not None and flow.session is session else None
        if contents is None or not contents.serves(as_of):
            return None
        with state_tag(session, index_id):  # the consolidated contents it keeps are the index's state
            return contents.at(as_of)

    def _append(self, m: Materialization, batch, upper: int, at: int, target: int) -> None:
        """Append ``batch`` (or nothing) at ``at`` and move the view's upper past ``target``."""
        view = m.view
        r = self.persist.compare_and_append(view.shard_id, [batch] if batch is not None else [], upper, at)
        if isinstance(r, UpperMismatch):  # someone else advanced it (a dropped and re-made cluster?)
            if batch is not None:
                self.persist.delete_batch(batch)
            self._drop(view.id)  # the dataflows' state may be ahead of the view now
            return
        if batch is not None and self.on_append is not None:
            self.on_append({view.shard_id})
        if target > at:
            self.persist.compare_and_append(view.shard_id, [], at + 1, target)
        self._hold(m, target)

    def _next_event(self, view_id: str) -> int | None:
        """The earliest time a temporal filter of the view's dataflows has updates at."""
        with self._lock:
            events = [f.next_event for (vid, _), f in self._flows.items() if vid == view_id]
        return min([e for e in events if e is not None], default=None)

    def _times(self, states: dict, lower: int, upper: int) -> list[int]:
        """The times in ``(lower, upper]`` at which some input has updates."""
        return shards_change_times(states.values(), lower, upper, self.persist.blob.url)

    def _hold(self, m: Materialization, at: int) -> None:
        """Hold the inputs' since at ``at`` (and no later than any dataflow's frontier), so
        their updates after ``at`` keep their times (compaction moves only times at or
        below since) and a replica can hydrate there."""
        with self._lock:
            flows = [f for (vid, _), f in self._flows.items() if vid == m.view.id]
        frontiers = [f.frontier for f in flows if f.frontier is not None]
        at = min([at] + frontiers)
        old = self._holds.get(m.view.id, [])
        if old and old[0][0] == at:
            return
        new = []
        try:
            for inp in m.inputs:
                new.append((at, self.persist.hold(inp.shard_id, at)))
        except SinceError as e:  # an input compacted past the view (after a restart): hydrate later
            log.info("materialized view %s: %s", m.view.name, e)
        except BaseException:
            for _, h in new:
                self.persist.release(h)
            raise
        with self._lock:
            if self._stop.is_set():  # stopped meanwhile: nobody would release them
                old, new = old + new, []
            else:
                self._holds[m.view.id] = new
        for _, h in old:
            self.persist.release(h)

    def _drop(self, view_id: str) -> None:
        """Forget the dataflows and holds of ``view_id`` (dropped, or its state is wrong)."""
        with self._lock:
            for key in [k for k in self._flows if k[0] == view_id]:
                del self._flows[key]
            for key in [k for k in self.hydrations if k[0] == view_id]:
                del self.hydrations[key]
        for _, h in self._holds.pop(view_id, []):
            self.persist.release(h)

    def _incremental(self, m: Materialization):
        key = (m.view.id, id(m.plan))
        if key not in self._plans:
            # The query is planned again at each catalog version (any DDL): a plan equal to
            # the last one keeps its incremental plan, so the dataflows running it go on
            # (a new one would hydrate every view of the cluster again after any DDL).
            last = next((v for k, v in self._plans.items() if k[0] == m.view.id), None)
            self._plans = {k: v for k, v in self._plans.items() if k[0] != m.view.id}
            self._plans[key] = last if last is not None and last[0] == m.plan else (m.plan, incremental_plan(m.plan))
        return self._plans[key][1]

    def _compute(self, m: Materialization, states: dict, lower: int | None, target: int, collapse: bool = False):
        """The view's change from ``lower`` to ``target`` (its contents at ``target`` when
        ``lower`` is None), computed by the view's dataflow on each healthy replica and
        written by the first to finish as a batch of updates; None when it is empty.
        With ``collapse`` every update in between counts as at ``target``
        (``Dataflow.advance``).

        Raises:
            SqlError: the query's errors; 55000 when the cluster has no healthy replica;
            0A000 when the query has no incremental plan."""
        view = m.view
        cols = tuple((c.name, c.type) for c in view.columns)
        if len(m.plan.columns) != len(cols):
            raise SqlError(INTERNAL_ERROR, f'the query of materialized view "{view.name}" no longer has its columns')
        inc = self._incremental(m)
        urls = PartUrls(lambda: self.persist.new_part_url(view.shard_id))
        # interval columns are Spark intervals in a change, which Arrow cannot carry
        collectable = not any(holds_intervals(t) for _, t in cols)
        schema = arrow_schema([n for n, _ in cols] + [TIME_COLUMN, DIFF_COLUMN],
                              [t for _, t in cols] + [INT8, INT8])
        write = write_job(view, urls.url_for, diffs=True, timed=lower is not None)
        holds, scan, changes = self._readers(m, states, target)

        def run(h) -> str:
            key = (view.id, h.id)
            with self._lock:
                flow = self._flows.get(key)
            with self._flow_locks.setdefault(key, threading.Lock()):
                session = h.dataflow_session()
                if session is None:
                    raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"replica {h.label} has no session")
                if (flow is None or flow.session is not session or flow.inc is not inc or flow.frontier is None
                        or (lower is not None and flow.frontier > lower) or lower is None
                        or (collapse and flow.frontier != lower)):  # (a collapsed round starts at lower)
                    flow = Dataflow(session, inc, self.persist.blob.url, self.builtin_rows)
                with self._lock:
                    self._flows[key] = flow
                started_round, rounds_before = time.monotonic(), flow.rounds
                try:
                    # its checkpoints are the view's state (mz_object_arrangement_sizes)
                    with rpcs.counted() as calls, state_tag(session, view.id):
                        got = round_on(h, flow, key, started_round)
                    log.debug("view %s on replica %s: %s round %.3f s, %s", view.name, h.label,
                              "hydration" if lower is None else "narrow" if flow.narrow else "wide",
                              time.monotonic() - started_round, calls)
                    return got
                except BaseException:
                    with self._lock:
                        if self._flows.get(key) is flow:
                            del self._flows[key]
                    raise
                finally:
                    with self._lock:
                        self.dataflow_rounds += flow.rounds - rounds_before

        def round_on(h, flow: Dataflow, key, started_round: float):
            """One round of ``flow``: its change written (a part's key), collected (an
            Arrow table), or "" when there is none."""
            if lower is None:
                out = timed_frame(flow.hydrate(target, scan), len(cols), None)
                self.hydrations[key] = time.monotonic() - started_round
            else:
                if flow.frontier is None:
                    started = time.monotonic()
                    flow.hydrate(lower, scan)
                    self.hydrations[key] = time.monotonic() - started
                out = flow.advance(self._times(states, flow.frontier, target), target, changes, after=lower,
                                   collapse=collapse)
                if out is None:
                    return ""
                if flow.narrow:  # small changes: consolidated in one partition, no exchange
                    out = out.coalesce(1)
                    if collectable:
                        # A small change comes back to be appended from here (inline
                        # in the shard's state when it is small): a Spark write job
                        # costs seconds of commit protocol for a few rows.
                        rows = collect_timed(flow, out, lambda d, timed: stored_updates(d, cols, timed=timed),
                                             COLLECT_UPDATES + 1)
                        if rows.num_rows <= COLLECT_UPDATES:
                            return rows
            t0 = time.monotonic()
            written = write(stored_updates(out, cols, timed=lower is not None), h.id)
            log.info("view %s on replica %s: round %.2f s, its write %.2f s", view.name, h.label,
                     time.monotonic() - started_round, time.monotonic() - t0)
            return written

        winner = None
        try:
            winner = self._race(run, holds)
        finally:
            for key in urls.keys_except(winner if isinstance(winner, str) else None):
                self.persist.blob.delete(key)
        self.computations += 1
        if winner is None:
            return None
        if isinstance(winner, pa.Table):  # a small change, collected
            if winner.num_rows == 0:
                return None
            return self.persist.updates_batch(view.shard_id, winner.rename_columns(schema.names).cast(schema))
        batch = self.persist.written_batch(urls.parts[winner][0], diffs=True)
        if batch.updates == 0:
            self.persist.delete_batch(batch)
            return None
        return batch

    def _race(self, run, holds: HoldGroup) -> str | None:
        """Run ``run(h)`` on every healthy replica (each keeps its own dataflow current);
        the first to succeed wins. The others finish on their own (their parts are not
        appended); a replica that fails drops its dataflow and hydrates again later.
        ``holds`` (the round's read holds) are released once every run has ended: a
        replica still hydrating after the winner reads its snapshot under them.

        Raises:
            SqlError: the query's error when every replica that ran it failed; 55000 when
            no replica was healthy for ``replica_wait_s``."""
        deadline = time.monotonic() + self.replica_wait_s
        try:
            while True:
                futures = {}
                for h in self.cc.healthy_replicas():
                    f = h.submit_peek(functools.partial(_on_replica, h, run))
                    if f is not None:
                        futures[f] = h
                if futures:
                    break
                if time.monotonic() >= deadline or self._stop.is_set():
                    raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE,
                                   f'no replica of cluster "{self.cc.name}" is healthy')
                self._stop.wait(0.1)
        except BaseException:
            holds.release()
            raise
        _release_when_done(list(futures), holds)
        error = None
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                e = f.exception()
                if e is None:
                    r = f.result()
                    return r if isinstance(r, pa.Table) else r or None
                # a query's error wins over a replica's failure (55000)
                if error is None or (isinstance(e, SqlError) and getattr(error, "sqlstate", None) == OBJECT_NOT_IN_PREREQUISITE_STATE):
                    error = e
        raise error if isinstance(error, SqlError) else SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"maintaining the view failed: {error}")

    def _failed(self, view_id: str, e: SqlError, lo: int = 0, hi: int = -1, again: bool = True) -> None:
        """Record that the view's query fails with ``e`` at the times ``[lo, hi]`` (joined
        to what was known); ``again``: a new failure, so the next try without an input
        change waits twice as long (up to ``MAX_RETRY_S``)."""
        with self._lock:
            old = self._errors.get(view_id)
            if old is not None:
                lo, hi = min(lo, old.lo), max(hi, old.hi)
            if old is not None and not again:
                self._errors[view_id] = replace(old, error=e, lo=lo, hi=hi)
                return
            pause = min(self.MAX_RETRY_S, 2 * old.pause) if old is not None else 0.5
            self._errors[view_id] = _Failure(e, lo, hi, time.monotonic() + pause, pause)

    def _recovered(self, view_id: str, span: tuple[int, int] | None) -> None:
        """The view's query succeeded again: the error it raised stays the answer of
        reads at the times of ``span`` (``error``)."""
        with self._lock:
            old = self._errors.pop(view_id, None)
            if old is not None and span is not None and span[0] <= span[1]:
                spans = self._spans.setdefault(view_id, [])
                spans.append((span[0], span[1], old.error))
                del spans[:-self.ERROR_SPANS]


def _release_when_done(futures: list, holds: HoldGroup) -> None:
    """Release ``holds`` when the last of ``futures`` is done (at once if all are)."""
    left = [len(futures)]
    lock = threading.Lock()

    def done(_) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            holds.release()

    for f in futures:
        f.add_done_callback(done)


def changed_time(states, upper: int, target: int, seen: frozenset[str] | None = None
                 ) -> tuple[int | None, frozenset[str]]:
    """When the inputs (their shard ``states``) changed after a view computed up to
    ``upper - 1``: the newest time in ``[upper, target]`` to put the difference at, or None
    when nothing changed; and the keys of the parts that answer accounts for (those whose
    updates are all at or before ``target``).

    A part whose key is not in ``seen`` (the keys accounted for last time) is a change:
    compaction rewrites parts with their times moved to the shard's since, so a new part
    may hold updates the view has not seen at times below ``upper``. Without ``seen`` (a
    restarted process), parts' time bounds decide: an append's time, else a part whose
    bounds reach ``upper``. A part straddling ``target`` counts as ``target``."""
    out = None
    considered = set()
    for st in states:
        for p in st.parts:
            first, last = (p.ts, p.ts) if p.ts is not None else (p.lower, p.upper - 1)
            if first > target:
                continue  # lands after target: the next round's
            if last <= target:  # a part straddling target still has news for the next round
                considered.add(p.key)
            if (p.key in seen) if seen is not None else last < upper:
                continue
            t = min(max(last, upper), target)
            out = t if out is None else max(out, t)
    return out, frozenset(considered)


def _levels(mats: list[Materialization]) -> list[list[Materialization]]:
    """``mats`` (in dependency order) in levels: a view's level is one more than the
    highest level of the views among ``mats`` it reads."""
    level: dict[str, int] = {}
    out: list[list[Materialization]] = []
    for m in mats:
        k = 1 + max([level[i.id] for i in m.inputs if i.id in level], default=-1)
        level[m.view.id] = k
        while len(out) <= k:
            out.append([])
        out[k].append(m)
    return out


def _on_replica(h, run):
    """``run(h)`` with a replica's failure (connection lost, crashed, restarted) as
    SqlError 55000 (not the view's error: another replica, or this one once restarted
    and hydrated again, carries on) and Spark's errors as SqlError."""
    try:
        return run(h)
    except SqlError:
        raise
    except Exception as e:
        if is_connection_error(e) or h.status != HEALTHY:
            raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"replica {h.label} failed while maintaining the view: {type(e).__name__}") \
                from None
        raise to_sql_error(e) from None
