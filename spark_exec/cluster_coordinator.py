"""ClusterCoordinator: one per cluster; owns the cluster's replicas and runs its peeks.

Sessions call ``peek`` directly from their own threads; the Coordinator main loop is
never involved in a SELECT (seeds/small-coordinator.md). Replica changes arrive from
the Coordinator through ``ensure_replica``/``drop_replica``, which never block on a
replica: processes start in the background and stop on a reaper thread.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
from pyspark.sql.connect.dataframe import DataFrame

from catalog.errors import SqlError, OBJECT_NOT_IN_PREREQUISITE_STATE, SYSTEM_ERROR, query_canceled
from catalog.sizes import ReplicaSize
from catalog.textio import DEFAULT_FORMAT, TextFormat
from catalog.snapshot import Replica
from spark_exec.arrangements import ArrangementMaintainer, WantedFn
from spark_exec.arrow_results import arrow_schema, arrow_tables, to_arrow
from spark_exec.crashes import Crash, CrashMemory, crash_error, fingerprint
from spark_exec.errors import is_connection_error, to_sql_error
from spark_exec.lower import BuiltinFn, Lowerer, ScanFn, memo_scan, result_layout_of
from spark_exec.materializations import MaterializationMaintainer
from spark_exec.orchestrator import Orchestrator, ReplicaProcess, ReplicaSpec
from spark_exec.replica import HEALTHY, ReplicaHandle
from spark_exec.spill import ResultSpill

log = logging.getLogger(__name__)

NO_REPLICAS = OBJECT_NOT_IN_PREREQUISITE_STATE


def no_replicas_error(cluster_name: str) -> SqlError:
    """Materialize's error for a read on a cluster that has no replica (its
    ``NoClusterReplicasAvailable``; sqlfront's SQLSTATE is 55000)."""
    return SqlError(NO_REPLICAS, f'CLUSTER "{cluster_name}" has no replicas available to service request')


class ClusterCoordinator:
    def __init__(self, cluster_id: str, name: str, orchestrator: Orchestrator,
                 on_status: Callable[[str, str], None] | None = None, max_peeks_per_replica: int = 8,
                 blob_probe: Callable[[object], None] | None = None):
        self.cluster_id = cluster_id
        #: checks that a replica's executors read persist Blob (spark_exec.blob_probe); run on
        #: the replicas whose executors may be on other hosts (standalone sizes, REMOTE)
        self.blob_probe = blob_probe
        self.name = name
        self.orchestrator = orchestrator
        self.on_status = on_status
        self._replicas: dict[str, ReplicaHandle] = {}
        self._cond = threading.Condition()
        #: shut down: starts no replica any more (a late ensure_replica is a no-op)
        self._shut_down = False
        #: peeks running at once on one replica (each replica has its own threads)
        self.max_peeks_per_replica = max_peeks_per_replica
        #: the arrangements of this cluster's indexes (set by ``maintain_arrangements``)
        self.arrangements: ArrangementMaintainer | None = None
        #: keeps this cluster's materialized views current (set by ``maintain_materializations``)
        self.materializations = None
        #: plans during which one of this cluster's replicas died (``spark_exec.crashes``)
        self.crashes = CrashMemory()

    def maintain_arrangements(self, wanted: WantedFn) -> None:
        """Keep what ``wanted()`` lists (the tables this cluster's indexes cover, with
        their parts) in memory on every replica; see spark_exec.arrangements."""
        self.arrangements = ArrangementMaintainer(self.name, lambda: list(self._replicas.values()), wanted)
        self.arrangements.start()

    def maintain_materializations(self, persist, read_ts, wanted, builtin_rows, request_input, on_append) -> None:
        """Keep the materialized views ``wanted()`` lists current, on this cluster's
        replicas, from a thread of its own (see ``spark_exec.materializations``)."""
        self.materializations = MaterializationMaintainer(self, persist, read_ts, wanted, builtin_rows, request_input,
                                                          on_append)
        self.materializations.start()

    # -- replica lifecycle (called by the Coordinator; never blocks) -----------------

    def ensure_replica(self, replica: Replica, size: ReplicaSize | None) -> None:
        with self._cond:
            if replica.id in self._replicas or self._shut_down:
                return
            spec = None
            if not replica.remote:
                spec = ReplicaSpec(
                    replica_id=replica.id,
                    label=f"{self.name}.{replica.name}",
                    workers=size.workers,
                    scale=size.scale,
                    memory_mb=size.memory_limit,
                    availability_zone=replica.availability_zone,
                    master=size.master,
                    executor_memory_mb=size.executor_memory,
                    secret_file=size.secret_file,
                    driver_host=size.driver_host,
                )
            off_host = replica.remote or (size is not None and size.master is not None)
            h = ReplicaHandle(replica, f"{self.name}.{replica.name}", spec, self.orchestrator, self._changed,
                              max_peeks=self.max_peeks_per_replica, blob_probe=self.blob_probe if off_host else None)
            self._replicas[replica.id] = h
        h.start()

    def replica_ids(self) -> list[str]:
        """The replicas this coordinator runs (started or starting)."""
        with self._cond:
            return list(self._replicas)

    def drop_replica(self, replica_id: str) -> None:
        with self._cond:
            h = self._replicas.pop(replica_id, None)
            self._cond.notify_all()
        if h is not None:
            threading.Thread(target=h.stop, name=f"stop-{h.label}", daemon=True).start()

    def rename(self, name: str) -> None:
        self.name = name

    def shutdown(self) -> None:
        """Stop every replica and wait for their processes to exit."""
        with self._cond:
            self._shut_down = True
            handles = list(self._replicas.values())
            self._replicas.clear()
        if self.arrangements is not None:
            self.arrangements.stop()
        if self.materializations is not None:
            self.materializations.stop()
        threads = [threading.Thread(target=h.stop, daemon=True) for h in handles]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)

    def handles(self) -> list[ReplicaHandle]:
        """The handles of this cluster's replicas now (for introspection: statuses, processes)."""
        return list(self._replicas.values())

    def status(self, replica_id: str) -> str:
        h = self._replicas.get(replica_id)
        return h.status if h is not None else "unhealthy"

    def _changed(self, h: ReplicaHandle) -> None:
        with self._cond:
            self._cond.notify_all()
        if self.arrangements is not None and h.status == HEALTHY:
            self.arrangements.poke()  # a restarted replica's cache starts empty
        if self.on_status:
            self.on_status(h.id, h.status)

    # -- peeks ------------------------------------------------------------------------

    def run_on_replica(self, fn: Callable, prefer: str | None, replica_wait_s: float,
                       cancel: threading.Event | None = None, dataflow: bool = False):
        """``(h, fn(h, session))`` run on one healthy replica ``h`` (``prefer``'s, when it is
        healthy) on its peek threads: work that keeps state on one replica (a
        subscription's dataflow: ``dataflow`` gives it the replica's dataflow session,
        ``ReplicaHandle.dataflow_session``). A replica failure is SqlError 58000 naming it
        (the caller may go on on another replica); the work's own errors keep their SQLSTATE.

        Raises:
            SqlError 55000 when no replica is healthy for ``replica_wait_s``; 57014 on
            ``cancel``."""
        deadline = time.monotonic() + replica_wait_s
        tag = f"sqlfront-dataflow-{uuid.uuid4().hex}"
        while True:
            healthy = self.healthy_replicas()
            h = next((x for x in healthy if x.id == prefer), healthy[0] if healthy else None)
            fut = None
            if h is not None:
                fut = h.submit_peek(lambda h=h: _run_with_session(h, fn, tag, dataflow))
            if fut is not None:
                break
            if cancel is not None and cancel.is_set():
                raise query_canceled(timeout=False)
            if time.monotonic() >= deadline:
                raise SqlError(NO_REPLICAS, f'no replica of cluster "{self.name}" is healthy '
                                            f"(waited {replica_wait_s:g} s)", detail=self._failures())
            time.sleep(0.1)
        while True:
            try:
                return h, fut.result(timeout=0.1)
            except TimeoutError:
                if cancel is not None and cancel.is_set():
                    h.interrupt(tag)
                    raise query_canceled(timeout=False)

    def healthy_replicas(self) -> list[ReplicaHandle]:
        """The replicas that are healthy and have a session now."""
        with self._cond:
            return self._healthy()

    def _failures(self, every: bool = False) -> str | None:
        """What is known to keep this cluster's replicas from work (``ReplicaHandle.failure``),
        one line each, or None; with ``every``, None unless every replica has one."""
        handles = list(self._replicas.values())
        failures = [f for h in handles if (f := h.failure)]
        if every and len(failures) < len(handles):
            return None
        return "\n".join(failures) or None

    def _healthy(self) -> list[ReplicaHandle]:
        return [h for h in self._replicas.values() if h.status == HEALTHY and h.session is not None]

    def peek(self, plan, scan: ScanFn, builtin_rows: BuiltinFn, replica_wait_s: float,
             deadline: float | None = None, cancel: threading.Event | None = None,
             job: Job | None = None, indexed: IndexedRead | None = None, text: TextFormat = DEFAULT_FORMAT):
        """Run ``plan`` on every healthy replica (active replication) and return the first
        whole answer as Arrow; the other replicas' runs are interrupted (Spark Connect tags).
        ``job(df, replica_id)`` does something else with the lowered DataFrame (a write to
        Blob) and returns what the peek returns. ``indexed``: the same query reading
        views from their indexes, which each replica whose indexes serve the peek's
        time runs instead of ``plan`` (``IndexedRead``). ``text``: the session's text
        settings (``catalog.textio.TextFormat``), which the lowering follows (``Lowerer.text``).

        A replica that crashes or hangs mid-peek does not fail the peek while another
        replica answers; replicas that become healthy later join in. Each replica runs
        peeks on its own bounded threads: a replica whose queue is full is tried again
        on the next round, so a hung replica never takes another replica's capacity.

        A risky peek (a large result, or a plan during which a replica died before:
        ``spark_exec.crashes``) runs on one replica at a time instead: another starts it
        only when that one stops being healthy without dying, and if that one dies
        running it the peek fails (53200 or XX000) rather than kill the others too.

        Raises:
            SqlError 55000 if the cluster has no replicas, or has had no healthy replica
            for ``replica_wait_s``; 57014 when ``deadline`` (``time.monotonic()`` seconds: the
            statement's, PostgreSQL's statement_timeout) passes or ``cancel`` is set; 53200 or
            XX000 when the replica running a risky peek dies (``crashes.crash_error``);
            the query's own errors (the first replica's) with their SQLSTATE.
        """
        tag = f"sqlfront-peek-{uuid.uuid4().hex}"
        scan = memo_scan(scan)
        layout = result_layout_of(plan, scan)
        run = functools.partial(self._run_on, plan=plan, scan=scan, builtin_rows=builtin_rows, tag=tag,
                                job=job or _collect, layout=layout, indexed=indexed, text=text)
        key = fingerprint(plan)
        h, result = self._race(run, tag, replica_wait_s, deadline, cancel, key=key,
                               alone=self._alone(key, layout))
        if indexed is not None:
            indexed.winner = h.id
        return result

    def _alone(self, key: int, layout: tuple[int | None, bool]) -> str | None:
        """Why a peek runs on one replica at a time (``spark_exec.crashes``), None if it
        does not: its result is large (``layout``: ``lower.result_layout``'s, it spills),
        or a replica died during the same plan (``key``) before."""
        if layout[1]:
            return "a large result"
        crash = self.crashes.recall(key)
        return f"replica {crash.replica} died running it ({crash.reason})" if crash is not None else None

    def peek_stream(self, plan, scan: ScanFn, builtin_rows: BuiltinFn, replica_wait_s: float,
                    deadline: float | None = None, cancel: threading.Event | None = None,
                    on_close: Callable[[], None] | None = None, spill: ResultSpill | None = None,
                    indexed: IndexedRead | None = None, text: TextFormat = DEFAULT_FORMAT) -> PeekStream:
        """Run ``plan`` as ``peek`` does, but return its answer as a stream of Arrow tables
        (Spark Connect's result batches, pulled as the caller asks for them, so that
        environmentd holds one batch at a time whatever the result's size).

        Replicas race until one delivers its first batch and the next one or the end (a
        one-batch answer is then whole here); from then on the stream stays with that
        replica, and the others are interrupted (its first rows may already be with the
        client, so no other replica can take over). A replica that dies before a
        longer answer's end fails the stream (58000); one that only
        stops answering pings (frozen by SIGSTOP, overloaded) is waited for while its
        pull is in flight, up to ``replica_wait_s`` (as a peek waits for a healthy
        replica), and the stream goes on when it recovers. ``on_close`` runs once when the stream closes: at its end, on
        an error, or on ``close()``; it also runs if opening fails. ``spill``: where a
        result too large for a replica to send goes instead (``spark_exec.spill``).

        Raises:
            as ``peek``, while opening.
        """
        tag = f"sqlfront-peek-{uuid.uuid4().hex}"
        key = fingerprint(plan)
        try:
            scan = memo_scan(scan)
            layout = result_layout_of(plan, scan)
            run = functools.partial(self._open_on, plan=plan, scan=scan, builtin_rows=builtin_rows, tag=tag,
                                    spill=spill, layout=layout, indexed=indexed, text=text)
            h, (gen, first) = self._race(run, tag, replica_wait_s, deadline, cancel,
                                         discard=lambda opened: _close_quietly(opened[0]), key=key,
                                         alone=self._alone(key, layout))
            if indexed is not None:
                indexed.winner = h.id
        except BaseException:
            if on_close is not None:
                on_close()
            raise
        return PeekStream(self.name, h, gen, first, tag, on_close, grace_s=replica_wait_s,
                          on_crash=functools.partial(self.crashes.remember, key))

    def _race(self, run: Callable, tag: str, replica_wait_s: float, deadline: float | None,
              cancel: threading.Event | None, discard: Callable[[object], None] | None = None,
              key: int | None = None, alone: str | None = None):
        """Submit ``run(h, over)`` to every healthy replica ``h`` and return ``(h, result)``
        of the first that succeeds; the others are canceled or interrupted by ``tag``, and
        ``discard(result)`` is called on any result they still produce. ``alone`` (why, or None):
        submit to one replica at a time, the next only while every one running it is
        frozen (``ReplicaHandle.frozen``).
        A replica's death during ``run`` is remembered under the plan's ``key``
        (``self.crashes``); ``alone``, it fails the race. ``deadline``: the statement's
        (``time.monotonic()`` seconds; None: none), past which the race ends with 57014."""
        attempts: dict[str, _Attempt] = {}
        # attempts whose replica died under them while pyspark may still retry: their
        # futures end later, and any result they produce is discarded
        abandoned: list[_Attempt] = []
        winner: str | None = None
        no_healthy_since: float | None = None
        # Set when the race is over: an attempt still queued then never starts its job.
        over = threading.Event()
        try:
            while True:
                with self._cond:
                    if not self._replicas:
                        raise no_replicas_error(self.name)
                    healthy = self._healthy()
                for rid, a in list(attempts.items()):
                    h, fut = a.h, a.fut
                    if not fut.done():
                        # pyspark retries an unreachable server for a while: a process seen
                        # dead ends its attempt now, as the attempt's own error would
                        crash = a.died()
                        if crash is None:
                            continue
                        err: BaseException | None = _ReplicaUnreachable("process exited", crash)
                        abandoned.append(attempts.pop(rid))
                    else:
                        err = fut.exception()
                    if err is None:
                        winner = rid
                        if alone and key is not None:
                            self.crashes.forget(key)  # it ran without killing its replica
                        return h, fut.result()
                    if isinstance(err, _ReplicaUnreachable):
                        if err.crash is not None:
                            if key is not None:
                                self.crashes.remember(key, err.crash)
                            if alone:
                                log.warning("replica %s died running a peek (%s); not sending it to other replicas",
                                            h.label, err.crash.reason)
                                raise crash_error(err.crash, self.name)
                        log.warning("peek could not reach replica %s (%s); other replicas carry on", h.label, err)
                        h.mark_suspect()
                        attempts.pop(rid, None)  # may run again once the replica is healthy
                        continue
                    raise err
                for h in healthy:
                    # A busy replica may miss pings, and a dead one's attempt ends with its
                    # crash: only a frozen one loses a lone peek.
                    if alone and any(not a.frozen() for a in attempts.values()):
                        break  # (a finished attempt is looked at on the next round)
                    if h.id not in attempts:
                        process = h.process  # before submitting: the one the attempt starts on
                        fut = h.submit_peek(functools.partial(run, h, over=over))
                        if fut is not None:
                            attempts[h.id] = _Attempt(h, fut, process)
                            if alone:
                                log.info("peek %s runs alone on replica %s: %s", tag, h.label, alone)
                now = time.monotonic()
                if cancel is not None and cancel.is_set():
                    raise query_canceled(timeout=False)
                if deadline is not None and now >= deadline:
                    raise query_canceled(timeout=True)
                live = [a.h for a in attempts.values() if not a.fut.done() and not a.frozen()]
                if live or healthy:
                    no_healthy_since = None
                else:
                    no_healthy_since = no_healthy_since or now
                    # every replica known unable to work (its executors cannot read Blob): say so now
                    failures = self._failures(every=True)
                    if now - no_healthy_since >= replica_wait_s or failures:
                        raise SqlError(
                            NO_REPLICAS,
                            f'no replica of cluster "{self.name}" is healthy '
                            + (f"(waited {replica_wait_s:g} s)" if not failures else "(every one failed)"),
                            detail=failures or self._failures(),
                            hint="SHOW CLUSTER REPLICAS shows each replica's status.",
                        )
                pending = [a.fut for a in attempts.values() if not a.fut.done()]
                if pending:
                    wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                else:
                    with self._cond:
                        self._cond.wait(0.1)
        finally:
            over.set()
            for a in [a for rid, a in attempts.items() if rid != winner] + abandoned:
                h, fut = a.h, a.fut
                if not fut.cancel() and not fut.done():
                    h.interrupt(tag)
                if discard is not None:
                    fut.add_done_callback(lambda f: discard(f.result()) if not f.cancelled() and f.exception() is None
                                          else None)

    def _session(self, h: ReplicaHandle, over: threading.Event):
        session = h.session
        if over.is_set():
            raise _ReplicaUnreachable("the peek is over")
        if session is None:
            raise _ReplicaUnreachable("no session")
        return session

    def _lowerer(self, session, scan: ScanFn, builtin_rows: BuiltinFn, text: TextFormat) -> Lowerer:
        arranged = self.arrangements.arranged() if self.arrangements is not None else frozenset()
        return Lowerer(session, scan, builtin_rows, arranged, text)

    def _choose(self, h: ReplicaHandle, over: threading.Event, plan, scan: ScanFn, builtin_rows: BuiltinFn,
                indexed: IndexedRead | None, text: TextFormat) -> tuple[object, Lowerer, object]:
        """``(session, lowerer, plan)`` of a peek on ``h``: ``indexed``'s plan on the
        replica's dataflow session (where the indexes' arrangements are) when each of its
        views' index serves the peek's time there, else ``plan`` on the peek session."""
        if indexed is not None and self.materializations is not None:
            frames = {}
            try:
                session = h.dataflow_session()
                for vid, iid in indexed.views.items():
                    df = self.materializations.index_contents(iid, h.id, session, indexed.as_of)
                    if df is None:
                        break
                    frames[vid] = df
            except Exception as e:  # the replica is failing: the plan's own run says how
                log.debug("peek on %s: indexes not read: %s", h.label, e)
                frames = {}
            if frames and len(frames) == len(indexed.views):
                if over.is_set():
                    raise _ReplicaUnreachable("the peek is over")
                indexed.read_on[h.id] = True
                lowerer = self._lowerer(session, scan, builtin_rows, text)
                lowerer.indexed = frames
                return session, lowerer, indexed.plan
            indexed.read_on[h.id] = False
        session = self._session(h, over)
        return session, self._lowerer(session, scan, builtin_rows, text), plan

    def has_healthy_replica(self) -> bool:
        with self._cond:
            return bool(self._healthy())

    def _run_on(self, h: ReplicaHandle, plan, scan: ScanFn, builtin_rows: BuiltinFn, tag: str,
                over: threading.Event, job: "Job", layout=None, indexed: IndexedRead | None = None,
                text: TextFormat = DEFAULT_FORMAT):
        with _replica_errors(h, over):
            session, lowerer, plan = self._choose(h, over, plan, scan, builtin_rows, indexed, text)
            session.addTag(tag)  # tags apply to operations started by this thread
            try:
                return job(lowerer.lower_result(plan, layout), h.id)
            finally:
                session.removeTag(tag)

    def _open_on(self, h: ReplicaHandle, plan, scan: ScanFn, builtin_rows: BuiltinFn, tag: str,
                 over: threading.Event, spill: ResultSpill | None = None, layout=None,
                 indexed: IndexedRead | None = None, text: TextFormat = DEFAULT_FORMAT):
        """Start ``plan`` on ``h`` and wait for its first batch and the one after it (or
        the end): ``(batches, first)``, ``first`` None for an empty answer. Looking one
        batch ahead means an answer of one batch (most are) is whole before this replica
        wins the race: a crash of the winner after that fails no query. A result the
        lowering finds large (``lower.spills``) is written to Blob through ``spill`` first, and read from there
        (``spark_exec.spill``)."""
        with _replica_errors(h, over):
            session, lowerer, plan = self._choose(h, over, plan, scan, builtin_rows, indexed, text)
            session.addTag(tag)  # the request, made by the first next(), carries the tag
            try:
                df = lowerer.lower_result(plan, layout)
                if lowerer.spill and spill is not None:
                    gen = spill.write(df, arrow_schema(df.schema))
                else:
                    gen = arrow_tables(session, df)
                try:
                    first = next(gen, None)
                    return (_Ahead(next(gen, None), gen) if first is not None else gen), first
                except BaseException:
                    _close_quietly(gen)
                    raise
            finally:
                session.removeTag(tag)


@dataclass
class IndexedRead:
    """A peek's query planned to read views from their indexes (``plan``: with a ``Get``
    of each view of ``views``, view id -> index id; ``planner.context.PlanContext.indexed_views``),
    at ``as_of``. A replica whose indexes all serve ``as_of``
    (``MaterializationMaintainer.index_contents``) runs it on its dataflow session;
    any other runs the peek's own plan, the views' queries inlined (Materialize reads
    an index's arrangement once its frontier is past the peek's time). ``read_on``
    records, per replica id, which one it ran; ``winner`` the replica that answered."""

    plan: object
    views: dict[str, str]
    as_of: int
    read_on: dict[str, bool] = field(default_factory=dict)
    winner: str | None = None

    def read_index(self) -> bool:
        """Whether the answer came from the indexes (the winner read them)."""
        return bool(self.read_on.get(self.winner))


#: ``job(df, replica_id)``: what a peek does with its lowered DataFrame on one replica
Job = Callable[[DataFrame, str], object]


def _collect(df: DataFrame, replica_id: str) -> pa.Table:
    return to_arrow(df)


class PeekStream:
    """The answer of a peek as Arrow tables, pulled from the one replica that won the race
    (``ClusterCoordinator.peek_stream``). Not thread-safe: one session drives it."""

    def __init__(self, cluster: str, h: ReplicaHandle, gen, first: pa.Table | None, tag: str,
                 on_close: Callable[[], None] | None, grace_s: float = 120.0,
                 on_crash: Callable[[Crash], None] | None = None):
        self.cluster = cluster
        #: called when the replica dies while sending (the plan is remembered: ``crashes``)
        self._on_crash = on_crash
        #: set on close: a pull failing after it is not a crash to investigate
        self._over = threading.Event()
        #: how long (seconds) the replica may stay unhealthy while a pull waits on it
        self.grace_s = grace_s
        self._unhealthy_since: float | None = None
        self._h = h
        self._gen = gen
        self._first = first
        self._tag = tag
        self._on_close = on_close
        #: the pull running on a replica thread, if any
        self._pull: Future | None = None
        self.done = first is None
        self.closed = False
        if self.done:
            self.close()

    def next_batch(self, deadline: float | None = None, cancel: threading.Event | None = None) -> pa.Table | None:
        """The next batch, or None at the end (the stream is then closed). ``deadline``:
        the pulling statement's (``time.monotonic()`` seconds; None: none).

        Raises:
            SqlError 57014 when ``cancel`` is set or ``deadline`` passes; 58000 when the
            replica fails mid-stream (dies, is dropped, or stays unhealthy ``grace_s``);
            the query's own errors. The stream is closed then.
        """
        if self._first is not None:
            first, self._first = self._first, None
            return first
        if self.done or self.closed:
            return None
        try:
            table = self._next(deadline, cancel)
        except BaseException:
            self.close()
            raise
        if table is None:
            self.done = True
            self.close()
        return table

    def _next(self, deadline: float | None, cancel: threading.Event | None) -> pa.Table | None:
        h = self._h
        while self._pull is None:
            self._pull = h.submit_peek(functools.partial(_pull_on, h, self._gen, self._over))
            if self._pull is None:  # the replica's queue is full: its own share, wait for it
                time.sleep(0.05)
            self._check(cancel, deadline)
        while not self._pull.done():
            wait([self._pull], timeout=0.1)
            if not self._pull.done():
                self._check(cancel, deadline)
        pull, self._pull = self._pull, None
        try:
            return pull.result()
        except _ReplicaUnreachable as e:
            if e.crash is not None and self._on_crash is not None:
                self._on_crash(e.crash)
            if e.crash is not None and e.crash.out_of_memory:
                raise crash_error(e.crash, self.cluster, streaming=True) from None
            raise SqlError(SYSTEM_ERROR, f"replica {h.label} failed while sending the query's results: {e}") from None

    def _check(self, cancel: threading.Event | None, deadline: float | None) -> None:
        if cancel is not None and cancel.is_set():
            raise query_canceled(timeout=False)
        if deadline is not None and time.monotonic() >= deadline:
            raise query_canceled(timeout=True)
        if self._h.status == HEALTHY:
            self._unhealthy_since = None
            return
        # Unhealthy by its pings: a dead replica fails the pull itself (connection error);
        # a frozen one may come back, with the pull intact. Wait for it, within bounds.
        now = time.monotonic()
        self._unhealthy_since = self._unhealthy_since or now
        if self._h.stopping or now - self._unhealthy_since >= self.grace_s:
            raise SqlError(SYSTEM_ERROR, f'replica {self._h.label} of cluster "{self.cluster}" failed while sending '
                                    "the query's results", hint="Run the query again: another replica will answer.")

    def close(self) -> None:
        """Stop the replica's work if it is still producing (interrupt by tag), release
        the result, and run ``on_close``. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self._over.set()
        self._first = None
        gen, pull = self._gen, self._pull
        if not self.done:
            self._h.interrupt(self._tag)
        if pull is not None and not pull.done():
            # next() runs on the replica's thread: close the generator once it returns.
            pull.add_done_callback(lambda _: _close_quietly(gen))
        else:
            _close_quietly(gen)
        if self._on_close is not None:
            self._on_close()


class _Ahead:
    """A result stream whose next batch (``ahead``; None: the stream had ended) was
    already pulled from ``gen``."""

    def __init__(self, ahead: pa.Table | None, gen):
        self._ahead, self._gen = ahead, gen

    def __iter__(self):
        return self

    def __next__(self) -> pa.Table:
        if self._ahead is not None:
            t, self._ahead = self._ahead, None
            return t
        return next(self._gen)

    def close(self) -> None:
        self._gen.close()


def _pull_on(h: ReplicaHandle, gen, over: threading.Event) -> pa.Table | None:
    with _replica_errors(h, over):
        return next(gen, None)


#: how long a replica whose connection failed mid-peek is given to exit (seconds): a JVM
#: out of memory runs Spark's shutdown hooks first, closing its connections meanwhile
CRASH_WAIT_S = 10.0
#: texts of the errors a replica's JVM gives its running queries while it dies
_DYING = ("SparkContext was shut down", "stopped SparkContext", "OutOfMemoryError")


class _replica_errors:
    """Context manager: a replica's failure as ``_ReplicaUnreachable`` (another replica
    may answer; with ``crash`` set when its process died meanwhile, ``spark_exec.crashes``);
    the query's own errors as SqlError with their SQLSTATE. Once ``over`` is set (the
    peek no longer needs this replica's answer) no crash is looked for."""

    def __init__(self, h: ReplicaHandle, over: threading.Event):
        self.h, self.over = h, over
        self.process = h.process  # the one running this peek: the monitor may start another

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if e is None or isinstance(e, (SqlError, _ReplicaUnreachable)) or not isinstance(e, Exception):
            return False
        lost = is_connection_error(e) or self.h.status != HEALTHY
        if lost or any(d in str(e) for d in _DYING):
            crash = self._crash()
            if lost or crash is not None:  # else the replica lives on: the query's own error
                raise _ReplicaUnreachable(type(e).__name__, crash) from e
        raise to_sql_error(e) from None

    def _crash(self) -> Crash | None:
        if self.process is None or self.over.is_set():
            return None
        ended = self.process.exit_reason(CRASH_WAIT_S)
        return Crash(self.h.label, *ended) if ended is not None else None


def _run_with_session(h: ReplicaHandle, fn, tag: str, dataflow: bool = False):
    try:
        with _replica_errors(h, threading.Event()):
            session = h.dataflow_session() if dataflow else h.session
            if session is None:
                raise SqlError(SYSTEM_ERROR, f"replica {h.label} has no session")
            session.addTag(tag)  # tags apply to operations started by this thread
            try:
                return fn(h, session)
            finally:
                session.removeTag(tag)
    except _ReplicaUnreachable as e:
        raise SqlError(SYSTEM_ERROR, f"replica {h.label} failed: {e}") from None


def _close_quietly(gen) -> None:
    try:
        gen.close()
    except Exception as e:  # a generator running on another thread, or a gone replica
        log.debug("closing a result stream: %s", e)


@dataclass
class _Attempt:
    """One replica's try at a peek in ``ClusterCoordinator._race``: its future, and the
    replica process it was submitted to (None: REMOTE), which the monitor may replace
    by a new one when it dies."""

    h: ReplicaHandle
    fut: Future
    process: ReplicaProcess | None

    def died(self) -> Crash | None:
        """The attempt's process's death, None while it lives (or for REMOTE)."""
        if self.process is None or self.process.alive():
            return None
        return Crash(self.h.label, *self.process.exit_reason())

    def frozen(self) -> bool:
        return self.h.frozen(self.process)


class _ReplicaUnreachable(Exception):
    """The replica could not run the peek (crashed, stopped, connection lost); ``crash``:
    its process died meanwhile."""

    def __init__(self, message: str, crash: Crash | None = None):
        super().__init__(message)
        self.crash = crash
