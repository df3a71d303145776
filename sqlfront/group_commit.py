"""Group commit: every table write of this environmentd goes through one committer.

Sessions hand in their writes (rows to append, or batches a replica already wrote) and
wait. The committer takes everything queued, makes one batch per table of the small
appends (inline in the shard's state when small enough: one Consensus compare-and-set
then publishes it, with no Blob write; ``persist.write``), takes ONE write timestamp
from the oracle and publishes every part by compare-and-append at that timestamp; then
it tells the oracle the write is applied, so reads that start afterwards see all of it,
and wakes the writers. (Materialize's coordinator commits table writes the same way:
group commit at one timestamp.) The INSERTs' ``values`` of a group become one Arrow
table per shard here, not one per INSERT in the sessions.

A group that writes several shards is first recorded in a Consensus of its own (the
``txns`` key of ``txns.db``, or of PostgreSQL's ``txns`` table when several processes share
persist; Materialize's txn-wal idea): if the process dies after applying some shards, startup
(:func:`recover`) applies the rest at the same timestamp, so a transaction's tables become
visible together or not at all.

Seals go through the same record (:meth:`GroupCommitter.seal`), as Materialize's txn-wal
makes a shard's "forget" a write to its txns shard: the seal first applies every recorded
transaction's part of the shard, then marks the shard sealed in the record with one
compare-and-set, and only then seals it in persist. A transaction records itself only if
none of its shards is marked, with a compare-and-set on the same key: so either it was
recorded first and its part of the sealed shard is in the shard before the seal, or it
finds the mark and fails before anything of it is applied. Without that, another
process's ALTER TABLE could seal one shard of a transaction between its check and its
append: its other tables' parts landed while its client got 40001 (issue 28's run).
A mark goes when the seal is undone (:meth:`GroupCommitter.unseal`), or, for a shard no
catalog names any more, ``MARK_GRACE_S`` after it was made (:meth:`GroupCommitter.sweep_marks`). A write conditional on the shard's upper (UPDATE and
DELETE computed the diffs from a snapshot; a block's read validated at COMMIT is one
with no rows) that finds the upper moved fails with :class:`Conflict`; the caller
recomputes. In a recorded transaction the conditional shards are appended first (those
with no rows before those with) and, while none of its parts has landed, one that
another process wrote since the check takes the record back (``_abort``): applying it at
the moved upper instead lost an update (issue 28's run, seed 48 on two processes). A write to a sealed shard (its table's rows
moved to a new shard, or the table was dropped) fails with
:class:`~persist.write.ShardSealed`, alone: the rest of its group still commits. Seals
(:meth:`GroupCommitter.seal`) take turns with the groups, so a group never finds one of
its shards sealed halfway through.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field

import pyarrow as pa

from catalog.oracle import TimestampOracle
from catalog.snapshot import Table
from persist import Batch, Consensus, PersistClient, ShardSealed, ShardState, UpperMismatch
from persist.state import Part

log = logging.getLogger(__name__)

#: Consensus key of the multi-shard transaction record
TXNS_KEY = "txns"

#: a transaction whose shards were checked open longer ago than this (seconds) checks
#: them again before it records itself: a mark older than ``MARK_GRACE_S`` may be gone
CHECK_MAX_AGE_S = 60.0

#: how long (seconds) the mark of a dropped shard (a tombstone) stays in the record
MARK_GRACE_S = 600.0


class Conflict(Exception):
    """A conditional write found the shard's upper moved since its snapshot."""


@dataclass
class Write:
    """One shard's share of a transaction: ``rows`` to append as +1s, or a ``batch``
    already in Blob, or ``values``: rows of ``table`` as Python tuples (checked by
    ``result.check_storable``), which the committer converts together with the other
    such writes of its group to the shard (one Arrow table, not one per INSERT).
    ``expected_upper``: commit only if the shard's upper is still this."""

    shard_id: str
    rows: pa.Table | None = None
    batch: Batch | None = None
    expected_upper: int | None = None
    values: list[tuple] | None = None
    table: Table | None = None


@dataclass
class _Prepared:
    """A group's batches, made and not yet appended: by shard, with each shard's expected
    upper (conditional writes), and the batches made for it (deleted if it fails)."""

    batches: dict[str, list[Batch]] = field(default_factory=dict)
    expected: dict[str, int | None] = field(default_factory=dict)
    written: list[Batch] = field(default_factory=list)


@dataclass(eq=False)  # compared by identity: == would compare the rows
class _Pending:
    writes: list[Write]
    done: Future = field(default_factory=Future)


class GroupCommitter:
    """The committer thread of one environmentd. ``on_applied(shards)`` runs after each
    group is visible (arrangements catch up)."""

    def __init__(self, persist: PersistClient, txns: Consensus, oracle: TimestampOracle, on_applied=None,
                 owner: str = ""):
        self.persist = persist
        self.txns = txns
        self.oracle = oracle
        #: this process's id: the owner named in the seals it marks (``marks``)
        self.owner = owner
        self.on_applied = on_applied or (lambda shards: None)
        self._queue: list[_Pending] = []
        self._cv = threading.Condition()
        self._stop = False
        self.groups = 0
        #: held while a group or a seal is applied (they take turns)
        self._apply_lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="group-commit", daemon=True)
        self._thread.start()

    def commit(self, writes: list[Write]) -> int:
        """Make ``writes`` durable and visible together; returns their timestamp.

        Raises:
            Conflict: a conditional write's shard moved on.
            Exception: what persist raised (nothing of the group is visible then)."""
        writes = [w for w in writes if w.batch is not None or (w.rows is not None and w.rows.num_rows)
                  or w.values or w.expected_upper is not None]
        if not writes:
            return self.oracle.read_ts()
        p = _Pending(writes)
        with self._cv:
            self._queue.append(p)
            self._cv.notify()
        return p.done.result()

    def seal(self, shard_id: str, expected_upper: int | None = None) -> ShardState | UpperMismatch:
        """Seal ``shard_id`` (``PersistClient.seal``, when its upper is still
        ``expected_upper`` if given) so that a transaction of any process sharing the
        record either commits entirely before the seal or fails before anything of it is
        applied (module docstring). Between two groups of this process.

        Returns the sealed state, or :class:`UpperMismatch` when a write landed first (the
        shard is left open and unmarked).

        Raises what Consensus raises (the shard may be left marked but open: writes of
        one shard go on; transactions that write it fail with ShardSealed until
        :meth:`unseal`)."""
        with self._apply_lock:
            while True:
                seqno, rec = _txns(self.txns)
                for e in rec["pending"]:
                    if shard_id in e["writes"]:  # recorded before the mark: in the shard first
                        try:
                            _apply_recorded(self.persist, e["ts"], shard_id, e["writes"][shard_id])
                        except ShardSealed:  # sealed by a seal of before the marks (a record of then)
                            log.error("txn at %d: shard %s is sealed; its part of the transaction is lost",
                                      e["ts"], shard_id)
                marks = {**rec["sealed"], shard_id: {"owner": self.owner, "at": time.time()}}
                if _put(self.txns, seqno, {**rec, "sealed": marks}):
                    break
            r = self.persist.seal(shard_id, expected_upper)
            if isinstance(r, UpperMismatch):
                _unmark(self.txns, shard_id)
            return r

    def unseal(self, shard_id: str) -> None:
        """Undo :meth:`seal` (``PersistClient.unseal``), then drop its mark: in that
        order, a transaction never records itself for a shard still sealed.

        Raises what Consensus raises (call again)."""
        unseal(self.persist, self.txns, shard_id)

    def marks(self) -> dict[str, dict]:
        """The record's sealed shards (:func:`marks`)."""
        return marks(self.txns)

    def sweep_marks(self, live: set[str], now: float | None = None) -> int:
        """Drop the marks older than ``MARK_GRACE_S`` of sealed shards no catalog names
        (``live``: the shards it does; a dropped table's, a rewritten table's old one):
        nothing may be recorded for them any more, and a transaction that checked them
        open before is past ``CHECK_MAX_AGE_S``. Returns how many went."""
        now = time.time() if now is None else now
        gone = []
        for shard, m in self.marks().items():
            if shard in live or now - m.get("at", now) < MARK_GRACE_S:
                continue
            head = self.persist.consensus.head(shard)
            if head is None or ShardState.decode(head[1]).sealed:
                gone.append(shard)
        for shard in gone:
            _unmark(self.txns, shard)
        return len(gone)

    def stop(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._queue and not self._stop:
                    self._cv.wait()
                if self._stop and not self._queue:
                    return
                group, self._queue = self._queue, []
            # Conditional writes go alone: their conflict must not fail anyone else.
            conditional = [any(w.expected_upper is not None for w in p.writes) for p in group]
            plain = [p for p, c in zip(group, conditional) if not c]
            todo = ([plain] if plain else []) + [[p] for p, c in zip(group, conditional) if c]
            while todo:
                g = todo.pop(0)
                try:
                    with self._apply_lock:
                        ts = self._commit_group(g)
                except (ShardSealed, _BadValues) as e:
                    # only the writers of the sealed shard plan again (or the writer whose
                    # values Arrow refused fails); the others commit
                    if isinstance(e, _BadValues):
                        hit, e = [e.pending], e.error
                    else:
                        hit = [p for p in g if any(w.shard_id == e.shard_id for w in p.writes)]
                    for p in hit:
                        p.done.set_exception(e)
                    rest = [p for p in g if all(p is not h for h in hit)]  # by identity, as above
                    if rest:
                        todo.insert(0, rest)
                    continue
                except BaseException as e:  # every waiter learns; the loop goes on
                    for p in g:
                        p.done.set_exception(e)
                    continue
                for p in g:
                    p.done.set_result(ts)

    def _commit_group(self, group: list[_Pending]) -> int:
        return self._publish(self._prepare(group))

    def _prepare(self, group: list[_Pending]) -> _Prepared:
        """The batches of ``group``, by shard (small appends made one batch per shard).

        Raises:
            _BadValues: a writer's values do not convert (nothing is left written)."""
        by_shard: dict[str, list[Write]] = {}
        for p in group:
            for w in p.writes:
                by_shard.setdefault(w.shard_id, []).append(w)
        prepared = _Prepared()
        try:
            for shard, ws in by_shard.items():
                bs = [w.batch for w in ws if w.batch is not None]
                small = [w.rows for w in ws if w.rows is not None and w.rows.num_rows]
                small += _values_tables(group, [w for w in ws if w.values])
                if small:
                    b = self.persist.batch(shard, pa.concat_tables(small))
                    prepared.written.append(b)
                    bs.append(b)
                prepared.batches[shard] = bs
                prepared.expected[shard] = next((w.expected_upper for w in ws if w.expected_upper is not None), None)
        except BaseException:
            self._forget(prepared)
            raise
        return prepared

    def _forget(self, prepared: _Prepared) -> None:
        for b in prepared.written:
            self.persist.delete_batch(b)

    def _publish(self, prepared: _Prepared) -> int:
        """Append ``prepared`` at one timestamp (:meth:`_apply`); its batches are deleted
        when that fails. Returns the timestamp."""
        try:
            ts = self._apply(prepared.batches, prepared.expected)
        except BaseException:
            self._forget(prepared)
            raise
        self.groups += 1
        try:
            self.on_applied(set(prepared.batches))
        except Exception as e:
            log.warning("after a group commit: %s", e)
        return ts

    def _apply(self, batches: dict[str, list[Batch]], expected: dict[str, int | None]) -> int:
        # A plain append to one shard starts from the latest state this process knows
        # (its own last compare-and-set, usually): a stale one costs a lost
        # compare-and-set and a retry from Consensus. Conditional writes (their Conflict
        # must be real) and multi-shard groups (their record names the uppers) read
        # Consensus first.
        fresh = len(batches) > 1 or any(e is not None for e in expected.values())
        while True:
            checked = time.monotonic()
            states = {s: self.persist.state(s) if fresh else self.persist.latest(s) for s in batches}
            fresh = True
            for s, st in states.items():
                if st.sealed:  # before anything is recorded or applied
                    raise ShardSealed(s)
            uppers = {s: st.upper for s, st in states.items()}
            for s, e in expected.items():
                if e is not None and uppers[s] != e:
                    raise Conflict(f"shard {s} moved from {e} to {uppers[s]}")
            ts = self.oracle.write_ts()
            try:
                if any(u > ts for u in uppers.values()):
                    # Another process wrote past our timestamp: take one above its write.
                    self.oracle.observe(max(uppers.values()) - 1)
                    continue
                txn = None
                if len(batches) > 1:
                    if time.monotonic() - checked > CHECK_MAX_AGE_S:
                        continue  # a mark made since may be swept already: check again
                    txn = _record(self.txns, ts, batches, uppers, self.owner)
                mismatch = False
                # A recorded transaction's conditional shards go first, those with no parts
                # (a read's validation) before those with: while none of its parts has
                # landed, a conditional shard that another process wrote since the check
                # aborts it (``_abort``); applied anyway at the moved upper, an UPDATE
                # computed from rows that changed since lost the other's update, and a
                # validated read went unchecked (the chaos checker's duplicate and G2).
                landed = False
                for s in sorted(batches, key=lambda s: (expected.get(s) is None, bool(batches[s]))):
                    bs = batches[s]
                    try:
                        r = self.persist.compare_and_append(s, bs, uppers[s], ts, known=states[s])
                    except ShardSealed:
                        if txn is None:
                            raise
                        # a seal of another process applied our recorded part first
                        _apply_recorded(self.persist, ts, s, bs)
                        landed = landed or bool(bs)
                        continue
                    if isinstance(r, UpperMismatch) and txn is not None and expected.get(s) is not None:
                        if not landed and _abort(self.persist, self.txns, txn, batches):
                            raise Conflict(f"shard {s} moved from {uppers[s]} to {r.current}")
                        log.error("txn at %d: shard %s moved since its check after a part of the transaction "
                                  "landed: applied at its new upper", ts, s)
                    landed = landed or bool(bs)
                    if isinstance(r, UpperMismatch):
                        if len(batches) > 1:
                            # Recorded: the startup recovery (or the retry below) finishes it.
                            _apply_recorded(self.persist, ts, s, bs)
                        elif expected[s] is not None:
                            raise Conflict(f"shard {s} moved to {r.current}")
                        else:
                            mismatch = True
                if mismatch:
                    continue
                if txn is not None:
                    _clear(self.txns, txn)
                return ts
            finally:
                self.oracle.apply_write(ts)


class _BadValues(Exception):
    """The values of ``pending`` that Arrow could not convert (``error``): it alone fails."""

    def __init__(self, pending: _Pending, error: BaseException):
        super().__init__(str(error))
        self.pending, self.error = pending, error


def _values_tables(group: list[_Pending], ws: list[Write]) -> list[pa.Table]:
    """The ``values`` of ``ws`` (writes of one shard) as Arrow tables: one for all the
    writes with the same columns (all of them, unless a concurrent ALTER renamed some).

    Raises:
        _BadValues: for the first pending whose values do not convert."""
    from sqlfront.sequence.result import storable_to_arrow

    out = []
    while ws:
        cols = ws[0].table.columns
        same = [w for w in ws if w.table.columns is cols or w.table.columns == cols]
        ws = [w for w in ws if not (w.table.columns is cols or w.table.columns == cols)]
        try:
            out.append(storable_to_arrow(same[0].table, [r for w in same for r in w.values]))
        except Exception:
            for w in same:  # which one? each on its own
                try:
                    storable_to_arrow(w.table, w.values)
                except Exception as e:
                    raise _BadValues(next(p for p in group if any(x is w for x in p.writes)), e) from e
            raise
    return out


def _txns(txns: Consensus) -> tuple[int | None, dict]:
    """The record's seqno and contents: ``pending`` transactions (``id``, ``ts``,
    ``writes``: shard -> parts) and ``sealed`` marks (shard -> owner, time). A record
    of before the marks was the list of pending transactions."""
    head = txns.head(TXNS_KEY)
    if head is None:
        return None, {"pending": [], "sealed": {}}
    rec = json.loads(head[1])
    if isinstance(rec, list):
        rec = {"pending": rec, "sealed": {}}
    return head[0], rec


def _put(txns: Consensus, seqno: int | None, rec: dict) -> bool:
    """Replace the record read at ``seqno`` by ``rec``; False when another got there first."""
    if not txns.compare_and_set(TXNS_KEY, seqno, (seqno or 0) + 1, json.dumps(rec).encode()):
        return False
    txns.truncate(TXNS_KEY, (seqno or 0) + 1)
    return True


def _record(txns: Consensus, ts: int, batches: dict[str, list[Batch]], uppers: dict[str, int],
            owner: str = "") -> str:
    """Record a transaction of process ``owner`` at ``ts``; returns its id.

    Raises:
        ShardSealed: one of its shards is marked sealed (nothing was recorded)."""
    entry = {"id": uuid.uuid4().hex, "ts": ts, "owner": owner,
             "writes": {s: [_part_dict(b.part(uppers[s], ts + 1, ts)) for b in bs] for s, bs in batches.items()}}
    while True:
        seqno, rec = _txns(txns)
        for s in batches:
            if s in rec["sealed"]:
                raise ShardSealed(s)
        if _put(txns, seqno, {**rec, "pending": rec["pending"] + [entry]}):
            return entry["id"]


def _abort(persist: PersistClient, txns: Consensus, txn_id: str, batches: dict[str, list[Batch]]) -> bool:
    """Take back recorded transaction ``txn_id`` none of whose parts its writer applied:
    its entry leaves the record; True unless a seal of another process applied one of
    its parts while it was recorded (then it must be finished, not taken back)."""
    _clear(txns, txn_id)
    for s, bs in batches.items():
        keys = {b.key for b in bs}
        if keys and keys & {p.key for p in persist.state(s).parts}:
            return False
    return True


def _clear(txns: Consensus, txn_id: str) -> None:
    while True:
        seqno, rec = _txns(txns)
        rest = [e for e in rec["pending"] if e.get("id") != txn_id]
        if len(rest) == len(rec["pending"]) or _put(txns, seqno, {**rec, "pending": rest}):
            return


def unseal(persist: PersistClient, txns: Consensus, shard_id: str) -> None:
    """Unseal ``shard_id`` in persist, then drop its mark from the record (in that order:
    a transaction never records itself for a shard still sealed)."""
    persist.unseal(shard_id)
    _unmark(txns, shard_id)


def marks(txns: Consensus) -> dict[str, dict]:
    """The record's sealed shards: shard -> ``{"owner": process id, "at": epoch s}``."""
    return _txns(txns)[1]["sealed"]


def _unmark(txns: Consensus, shard_id: str) -> None:
    while True:
        seqno, rec = _txns(txns)
        if shard_id not in rec["sealed"]:
            return
        marks = {k: v for k, v in rec["sealed"].items() if k != shard_id}
        if _put(txns, seqno, {**rec, "sealed": marks}):
            return


def _part_dict(p: Part) -> dict:
    return {k: getattr(p, k) for k in Part.__dataclass_fields__}


def _apply_recorded(persist: PersistClient, ts: int, shard: str, parts) -> None:
    """Apply a recorded transaction's parts to ``shard`` if they are not there yet: at
    ``ts`` when the upper allows, else at the shard's upper (only possible when another
    process wrote the shard meanwhile)."""
    keys = {p.key if isinstance(p, Batch) else p["key"] for p in parts}
    batches = [p if isinstance(p, Batch) else Batch(p["key"], p["updates"], p["bytes"], p["diffs"],
                                                      p["retractions"], p["net"], inline=p.get("inline"))
               for p in parts]
    while True:
        st: ShardState = persist.state(shard)
        if keys <= {p.key for p in st.parts}:
            return
        at = max(ts, st.upper)
        if at != ts:
            log.warning("txn at %d applied to shard %s at %d: its upper moved on", ts, shard, at)
        if not isinstance(persist.compare_and_append(shard, batches, st.upper, at), UpperMismatch):
            return


def recover(persist: PersistClient, txns: Consensus, live_shards: set[str], gone=None) -> int:
    """Finish the transactions recorded in ``txns`` whose shards a crash left half
    applied (at startup, before any write; shards not in ``live_shards`` were dropped).
    With ``gone(owner)`` (a record shared by several processes) only those of owners
    it says are gone (this process's earlier run, or a dead one): a live process
    finishes its own. Returns how many there were."""
    _, rec = _txns(txns)
    pending = [e for e in rec["pending"] if gone is None or gone(e.get("owner", ""))]
    for e in pending:
        for shard, parts in e["writes"].items():
            if shard in live_shards:
                try:
                    _apply_recorded(persist, e["ts"], shard, parts)
                except ShardSealed:  # a seal applies recorded parts first: a record of before the marks
                    log.error("txn at %d: shard %s is sealed; its part of the transaction is lost", e["ts"], shard)
        _clear_entry(txns, e)
    return len(pending)


def _clear_entry(txns: Consensus, entry: dict) -> None:
    """Clear ``entry`` (one of a record of before ids: by its timestamp)."""
    if "id" in entry:
        _clear(txns, entry["id"])
        return
    while True:
        seqno, rec = _txns(txns)
        rest = [e for e in rec["pending"] if "id" in e or e["ts"] != entry["ts"]]
        if len(rest) == len(rec["pending"]) or _put(txns, seqno, {**rec, "pending": rest}):
            return
