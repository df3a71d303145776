"""Sources (Materialize's "CREATE SOURCE"): their catalog transactions, and their
ingestion, which appends the data of a load generator (``sqlfront.loadgen``) to the
source's persist shards tick by tick.

Catalog: a source is a :class:`catalog.snapshot.Source` (a table nobody INSERTs into),
with a :class:`~catalog.snapshot.Subsource` per output (``FOR ALL TABLES``: AUCTION's
``accounts``, ``auctions``, ``bids``, ``organizations``, ``users``; MARKETING's ``customers``,
``impressions``, ``clicks``, ``leads``, ``coupons``, ``conversion_predictions``; TPCH's eight
tables) and one for its
progress (``<source>_progress``, column ``offset``). Reads, views, materialized views,
indexes and SUBSCRIBE treat them as tables.

Ingestion: one thread per source (:class:`SourceRunner`), never the Coordinator's loop.
Each tick is ONE group commit (``sqlfront.group_commit``: the append path of INSERT, one
timestamp from the oracle, several shards atomically) holding the tick's rows and the
progress offset moving from ``t - 1`` to ``t``, conditional on the progress shard's upper:
a tick is in persist entirely or not at all, and a runner that starts again (after DROP
of nothing, a restart, a crash) reads the offset at the shard's upper and goes on with
the next tick, so no tick is lost or repeated.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from catalog import durable
from catalog.errors import (
    SqlError, DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_OBJECT, FEATURE_NOT_SUPPORTED,
    INVALID_PARAMETER_VALUE, SYNTAX_ERROR, UNDEFINED_OBJECT, WRONG_OBJECT_TYPE,
)
from catalog.snapshot import CatalogSnapshot, Source, Subsource
from catalog.types import arrow_schema
from persist.state import DIFF_COLUMN
from sqlfront import loadgen
from sqlfront import source_parse as sp
from sqlfront.loadgen_tpch import TpchTicks

if TYPE_CHECKING:
    from sqlfront.environment import Environment

log = logging.getLogger(__name__)

#: LOAD GENERATOR options this server implements, per generator (others are refused, 0A000)
GENERATOR_OPTIONS = {"COUNTER": {"TICK INTERVAL", "AS OF", "UP TO", "MAX CARDINALITY"},
                     "AUCTION": {"TICK INTERVAL", "AS OF", "UP TO"},
                     "MARKETING": {"TICK INTERVAL", "AS OF", "UP TO"},
                     "TPCH": {"SCALE FACTOR", "TICK INTERVAL"}}
#: Materialize's default TICK INTERVAL
DEFAULT_TICK_MS = 1000


def _int_option(name: str, text: str) -> int:
    if not text.isdigit():
        raise SqlError(INVALID_PARAMETER_VALUE, f"invalid {name}: {text} (a non-negative integer)")
    return int(text)


def generator_spec(stmt: sp.CreateSource) -> dict:
    """The options of a LOAD GENERATOR source as stored (``Source.spec``): ``generator``,
    ``tick_ms``, ``as_of``, ``up_to`` (None: no end), ``max_cardinality`` (None: none).

    Raises:
        SqlError 0A000 for a generator or an option not implemented; 22023 for a bad
        value; 42601 for FOR ALL TABLES missing on a generator with several outputs, or
        given to one with one (Materialize's rules)."""
    from catalog.intervalio import parse_interval

    gen = stmt.generator
    if gen not in GENERATOR_OPTIONS:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"LOAD GENERATOR {gen} is not supported",
                       hint="COUNTER, AUCTION, MARKETING and TPCH are.")
    multi = len(loadgen.OUTPUTS[gen]) > 1
    if multi and not stmt.all_tables:
        raise SqlError(SYNTAX_ERROR, "multi-output sources require a FOR TABLES (..) or FOR ALL TABLES statement")
    if not multi and stmt.all_tables:
        raise SqlError(SYNTAX_ERROR, "FOR ALL TABLES is only valid for multi-output sources")
    spec = {"generator": gen, "tick_ms": DEFAULT_TICK_MS, "as_of": 0, "up_to": None, "max_cardinality": None}
    seen = set()
    for name, value in stmt.options:
        if name in seen:
            raise SqlError(INVALID_PARAMETER_VALUE, f"{name} specified more than once")
        seen.add(name)
        if name not in GENERATOR_OPTIONS[gen]:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"LOAD GENERATOR {gen} option {name} is not supported")
        if name == "TICK INTERVAL":
            try:
                iv = parse_interval(value)
            except (SqlError, ValueError):
                raise SqlError(INVALID_PARAMETER_VALUE, f"invalid TICK INTERVAL: '{value}'") from None
            ms = ((iv.months * 30 + iv.days) * 86_400_000_000 + iv.micros) // 1000
            if ms <= 0:
                raise SqlError(INVALID_PARAMETER_VALUE, f"TICK INTERVAL must be positive: '{value}'")
            spec["tick_ms"] = ms
        elif name == "SCALE FACTOR":
            try:
                sf = float(value)
            except ValueError:
                sf = 0.0
            if not 0 < sf <= 100:
                raise SqlError(INVALID_PARAMETER_VALUE, f"invalid SCALE FACTOR: {value} (above 0, at most 100)")
            spec["scale_factor"] = sf
        else:
            spec[name.lower().replace(" ", "_")] = _int_option(name, value)
    if gen == "TPCH":  # without TICK INTERVAL, one tick: the snapshot (Materialize's TPCH)
        spec.update(up_to=None if "TICK INTERVAL" in seen else 1, scale_factor=spec.get("scale_factor", 1.0))
    if spec["up_to"] is not None and spec["up_to"] < spec["as_of"]:
        raise SqlError(INVALID_PARAMETER_VALUE, f"UP TO ({spec['up_to']}) must be at least AS OF ({spec['as_of']})")
    return spec


@dataclass(frozen=True)
class Plan:
    """What CREATE SOURCE stores for a source planned outside the catalog transaction
    (a PostgreSQL source reads its upstream, a webhook plans its CHECK): ``kind``
    (``mz_sources.type``), ``spec``, the progress subsource's columns (None: it has
    none, as a webhook) and the outputs ``(subsource name or None for the source's own
    columns, columns, output key)``."""

    kind: str
    spec: dict
    progress_columns: tuple | None
    outputs: list


def create_source(stmt: sp.CreateSource, session_cluster: str, plan: Plan | None = None):
    """CREATE SOURCE: the source, its subsources and its progress subsource, in the
    schema given (or the first of the search path), run by cluster ``IN CLUSTER`` (else
    the session's). The source's op comes last: when it commits, every shard it writes
    exists (``Environment._apply`` makes them in op order).

    ``plan``: a PostgreSQL or webhook source's :class:`Plan`; None for a load generator.

    Raises (from ``build``): 42710 for a taken name (nothing with IF NOT EXISTS); 42704
    for an unknown cluster; :func:`generator_spec`'s errors."""
    if plan is None:
        spec = generator_spec(stmt)
        kind, progress_columns = "load-generator", loadgen.PROGRESS_COLUMNS
        # (subsource name or None: the source's own columns, columns, output key)
        outputs = [(o.name, o.columns, o.name) for o in loadgen.OUTPUTS[spec["generator"]]]
    else:
        spec, kind, progress_columns, outputs = plan.spec, plan.kind, plan.progress_columns, plan.outputs

    def build(snap: CatalogSnapshot, ids) -> list:
        cluster = snap.resolve_cluster(stmt.cluster or session_cluster)
        s = snap.creation_schema(stmt.schema)
        progress = stmt.progress_name or f"{stmt.name}_progress"
        names = [stmt.name] + ([progress] if progress_columns else []) + \
            [name for name, _, _ in outputs if name is not None]
        if snap.name_taken(s, stmt.name) and stmt.if_not_exists:
            return []
        for n in names:
            if snap.name_taken(s, n) or names.count(n) > 1:
                raise SqlError(DUPLICATE_OBJECT, f"catalog item '{n}' already exists")
        source_id = ids.allocate("item")

        shard = ids.allocate_shard
        ops = [durable.CreateTable(Subsource(ids.allocate("item"), s, name, columns, shard(),
                                             source_id=source_id, output=key))
               for name, columns, key in outputs if name is not None]
        if progress_columns:
            ops.append(durable.CreateTable(Subsource(ids.allocate("item"), s, progress, progress_columns,
                                                     shard(), source_id=source_id, output="", kind="progress")))
        own = next((columns for name, columns, _ in outputs if name is None), ())
        ops.append(durable.CreateTable(Source(source_id, s, stmt.name, own, shard(), cluster_id=cluster.id,
                                              kind=kind, spec=json.dumps(spec | {"sql": stmt.sql}))))
        return ops

    return build


def source_of(snap: CatalogSnapshot, rel) -> Source | None:
    """The source that writes ``rel`` (itself, or its subsource's source), or None."""
    if isinstance(rel, Source):
        return rel
    if isinstance(rel, Subsource):
        return snap.tables.get(rel.source_id)
    return None


def subsources(snap: CatalogSnapshot, source_id: str) -> list[Subsource]:
    return [t for t in snap.tables.values() if isinstance(t, Subsource) and t.source_id == source_id]


def drop_sources(stmt: sp.DropItems):
    """DROP SOURCE [IF EXISTS] name, ... [CASCADE]: a source goes with its progress
    subsource; its other subsources, and views over any of them, need CASCADE
    (Materialize's rule). A subsource may be dropped alone (its source stops writing it).

    Raises (from ``build``): 42704 for an unknown name (nothing with IF EXISTS); 42809
    for something that is not a source; 2BP01 for dependents without CASCADE."""
    from sqlfront.sequence.objects import _drop_dependents, find_item

    def build(snap: CatalogSnapshot, ids) -> list:
        dropped: list = []
        for schema, name in stmt.names:
            rel = find_item(snap, schema, name)
            if rel is None:
                if stmt.if_exists:
                    continue
                raise SqlError(UNDEFINED_OBJECT, f"unknown catalog item '{name}'")
            if not isinstance(rel, (Source, Subsource)):
                raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a source')
            if isinstance(rel, Source):
                subs = subsources(snap, rel.id)
                data = [t for t in subs if t.kind != "progress" and t not in dropped]
                if data and not stmt.cascade:
                    raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                                   f'cannot drop source "{rel.name}": still depended upon by subsource '
                                   f'"{data[0].name}"', hint="Use DROP ... CASCADE to drop the dependent objects too.")
                dropped += [t for t in subs if t not in dropped]
            if rel not in dropped:
                dropped.append(rel)
        ops = _drop_dependents(snap, dropped, stmt.cascade, "source")
        for rel in dropped:
            ops += [durable.DropIndex(i.id) for i in snap.indexes.values() if i.on_id == rel.id]
            ops.append(durable.DropTable(rel.id))
        seen: set = set()
        return [op for op in ops if not (op in seen or seen.add(op))]

    return build


# -- ingestion --------------------------------------------------------------------------------

class Runner:
    """The ingestion of one source on its own thread (``_run``, a subclass's): what every
    kind shares: start, stop, its progress subsource and its status."""

    def __init__(self, env: Environment, source: Source):
        self.env = env
        self.source = source
        self.spec = json.loads(source.spec)
        self._stop = threading.Event()
        self._dropped = False
        self._thread = threading.Thread(target=self._run, name=f"source-{source.id}", daemon=True)
        #: Materialize's status (starting, running, stalled) and the error that stalled it
        self.status, self.error = "starting", None
        self.status_changed_at = time.time()
        #: counters (mz_source_statistics' columns)
        self.stats = {"messages_received": 0, "bytes_received": 0, "updates_staged": 0, "updates_committed": 0,
                      "snapshot_records_known": None, "snapshot_records_staged": None, "snapshot_committed": False,
                      "offset_known": None, "offset_committed": None}

    def _run(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait_s: float = 0, dropped: bool = False) -> None:
        """Stop; ``dropped``: the source is gone for good (a PostgreSQL source then drops
        its replication slot upstream)."""
        self._dropped = self._dropped or dropped
        self._stop.set()
        if wait_s and self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(wait_s)

    def _set_status(self, status: str, error: str | None = None) -> None:
        if (status, error) != (self.status, self.error):
            self.status, self.error, self.status_changed_at = status, error, time.time()

    def _progress(self) -> Subsource | None:
        return next((t for t in subsources(self.env.snapshot, self.source.id) if t.kind == "progress"), None)

    def error_of(self, output: str) -> str | None:
        """The error of the subsource with output key ``output``, or None (none here)."""
        return None


class SourceRunner(Runner):
    """The ingestion of one load generator source, on its own thread."""

    def __init__(self, env: Environment, source: Source):
        super().__init__(env, source)
        #: ticks committed (the progress offset), and the progress shard's upper after them
        self.offset = 0
        self._upper: int | None = None
        #: a TPCH source's orders as its ticks left them (made at its first tick)
        self._tpch: TpchTicks | None = None

    def _resume(self, progress: Subsource) -> None:
        """Read the offset committed (the progress shard's row at its upper)."""
        self.offset, self._upper = committed_offset(self.env, progress)

    def _run(self) -> None:
        tick_s = self.spec["tick_ms"] / 1000
        up_to = self.spec["up_to"]
        resumed = False
        while not self._stop.is_set():
            try:
                progress = self._progress()
                if progress is None or self.source.id not in self.env.snapshot.tables:
                    return  # dropped
                if not resumed:
                    self._resume(progress)
                    resumed = True
                    clock = (time.monotonic(), self.offset)
                if up_to is not None and self.offset >= up_to:
                    return
                # the ticks due by the clock since it resumed: a tick interval shorter than
                # a commit makes commits of several ticks, not a slower clock
                due = clock[1] + int((time.monotonic() - clock[0]) / tick_s)
                target = max(self.offset + 1, self.spec["as_of"], due)
                if up_to is not None:
                    target = min(target, up_to)
                self._commit(progress, target)
                self._set_status("running")
            except Exception as e:  # noqa: BLE001 - a dropped shard, a conflict: read the progress again
                if self._stop.is_set():
                    return
                self._set_status("stalled", f"tick failed: {type(e).__name__}")
                log.warning("source %s: tick failed (%s); resuming from its progress", self.source.name,
                            type(e).__name__)
                resumed = False
            self._stop.wait(tick_s)

    def _commit(self, progress: Subsource, target: int) -> None:
        """Commit ticks ``offset + 1 .. target`` as one group commit, with the progress."""
        now = dt.datetime.now(dt.UTC)
        tick_s = self.spec["tick_ms"] / 1000
        by_output: dict[str | None, list[tuple[tuple, int]]] = {}
        for tick in range(self.offset + 1, target + 1):
            # ticks caught up at once (AS OF) happened one interval apart, up to now
            at = now - dt.timedelta(seconds=(target - tick) * tick_s)
            if self.spec["generator"] == "TPCH":
                if self._tpch is None:
                    self._tpch = TpchTicks(self.source.id,
                                           functools.partial(loadgen.tpch_snapshot, self.spec["scale_factor"]))
                ups = self._tpch.updates(tick)
            else:
                ups = loadgen.updates(self.spec["generator"], self.source.id, tick, at,
                                      self.spec.get("max_cardinality"))
            for output, row, diff in ups:
                by_output.setdefault(output, []).append((row, diff))
        ts = commit_updates(self.env, self.source, by_output, progress, "offset", self.offset, target, self._upper)
        n = sum(len(u) for u in by_output.values())
        st = self.stats
        st["messages_received"] += target - self.offset  # a load generator's message is a tick
        st["updates_staged"] += n
        st["updates_committed"] += n
        st["offset_known"] = st["offset_committed"] = target
        st["snapshot_committed"] = target >= self.spec["as_of"]
        if target - self.offset > 1:  # a catch-up (AS OF, or ticks missed while down): worth a line
            log.info("source %s: ticks %d to %d committed at %d", self.source.name, self.offset + 1, target, ts)
        self.offset, self._upper = target, ts + 1

    def ready(self) -> bool:
        """Whether its snapshot (the AS OF ticks) is committed, or it stopped."""
        return not self._thread.is_alive() or self.offset >= max(1, self.spec["as_of"])


def committed_offset(env: Environment, progress: Subsource) -> tuple[int, int]:
    """(the offset committed: the progress shard's value at its upper, 0 if none; that upper)."""
    persist = env.persist
    upper = persist.state(progress.shard_id).upper
    schema = arrow_schema([c.name for c in progress.columns], [c.type for c in progress.columns])
    rows = persist.read_table(progress.shard_id, schema).column(0).to_pylist() if upper > 0 else []
    return max((r for r in rows if r is not None), default=0), upper


def commit_updates(env: Environment, source: Source, by_output: dict, progress: Subsource, progress_column: str,
                   old: int, new: int, expected_upper: int | None) -> int:
    """Append ``by_output`` (output key -> ``[(row, diff)]``; key None: the source's own
    shard) to the source's subsources and move its progress from ``old`` to ``new``, as
    ONE group commit conditional on the progress shard's upper being ``expected_upper``:
    all of it is in persist or none. Outputs whose subsource was dropped are skipped.
    Returns the commit's timestamp.

    Raises:
        the group commit's errors (a conflict when another writer moved the progress)."""
    from sqlfront.group_commit import Write
    from sqlfront.sequence.result import storable_to_arrow

    snap = env.snapshot
    targets = {t.output: t for t in subsources(snap, source.id) if t.kind != "progress"}
    targets[None] = source
    persist = env.persist
    writes = []
    for output, updates in by_output.items():
        rel = targets.get(output)
        if rel is None or not updates:  # a subsource dropped alone
            continue
        data = storable_to_arrow(rel, [r for r, _ in updates])
        if all(d == 1 for _, d in updates):  # inserts only: a plain batch, as an INSERT's
            writes.append(Write(rel.shard_id, batch=persist.batch(rel.shard_id, data)))
            continue
        data = data.append_column(DIFF_COLUMN, pa.array([d for _, d in updates], pa.int64()))
        writes.append(Write(rel.shard_id, batch=persist.updates_batch(rel.shard_id, data)))
    moves = [(new, 1)] + ([(old, -1)] if old else [])
    data = pa.table({progress_column: pa.array([o for o, _ in moves], pa.int64()),
                     DIFF_COLUMN: pa.array([d for _, d in moves], pa.int64())})
    writes.append(Write(progress.shard_id, batch=persist.updates_batch(progress.shard_id, data),
                        expected_upper=expected_upper))
    return env.storage.writer.commit(writes)
