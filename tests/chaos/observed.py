"""What the workload's materialized view and a SUBSCRIBE must agree on, checked while the
clients run (issue 28: "A SUBSCRIBE's output, summed, must equal a read at its timestamps").

:class:`Observer` holds one ``SUBSCRIBE (SELECT k, v FROM t) WITH (PROGRESS)`` open
through one node and, every few seconds, reads ``SELECT k, v, mz_now() FROM t`` through
another (``U`` is the read's timestamp), then:

- ``SELECT k, n FROM mv AS OF U``: the view ``mv`` (``count(*)`` of ``t`` per ``k``)
  must give, for every key, the number of rows the read gave (``view-mismatch``);
- once the subscription's progress passed ``U``, the sum of its updates at times up to
  ``U`` (its snapshot included) must be the read's rows, with no negative count
  (``subscribe-mismatch``).

Each comparison goes to the history as an event of process ``observer`` (``type`` ``view``
or ``subscribe``) with the timestamp, the number of rows, and what differed (``diff``,
empty when they agree): :func:`check` turns a non-empty ``diff`` into the anomaly. A
fault that breaks the subscription starts a new one (its snapshot at its own as_of); a
read whose timestamp is before the subscription's first is not compared.

Also :class:`Ddl`: DDL mixed into the run (CREATE/DROP INDEX on ``t``, ALTER TABLE ``r``
ADD COLUMN), each statement an event of process ``ddl``.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable

import psycopg

from chaos.workload import History

#: how many differing keys or rows an event keeps
SHOWN = 20


class Observer:
    """The view and SUBSCRIBE checks; ``subscribe_via`` and ``read_via`` are connection
    factories (the same node or two), a check every ``interval`` (min, max) seconds."""

    def __init__(self, subscribe_via: Callable[[], psycopg.Connection], read_via: Callable[[], psycopg.Connection],
                 history: History, rng: random.Random, interval: tuple[float, float] = (8, 16)):
        self.subscribe_via, self.read_via, self.history, self.rng = subscribe_via, read_via, history, rng
        self.interval = interval
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="observer")
        self.checks: Counter = Counter()

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(120)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._subscribed()
            except psycopg.Error as e:
                self.checks["restarts"] += 1
                self.history.write(process="observer", type="error", error=f"{e.sqlstate}: {e}"[:200])
                self._stop.wait(1)

    def _subscribed(self) -> None:
        with self.subscribe_via() as sub:
            sub.execute("SET statement_timeout = '60s'")
            sub.execute("BEGIN")
            sub.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT k, v FROM t) WITH (PROGRESS)")
            updates: list[tuple[int, int, int, int]] = []
            first: int | None = None
            progress = 0
            pending: list[tuple[int, Counter]] = []
            next_check = time.monotonic() + self.rng.uniform(*self.interval)
            while not self._stop.is_set():
                for ts, progressed, diff, k, v in sub.execute("FETCH ALL c WITH (timeout = '1s')"):
                    ts = int(str(ts))
                    first = ts if first is None else first
                    if progressed:
                        progress = max(progress, ts)
                    else:
                        updates.append((ts, int(diff), k, v))
                while pending and progress > pending[0][0]:
                    u, read = pending.pop(0)
                    self._compare_subscribe(u, read, updates)
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + self.rng.uniform(*self.interval)
                    got = self._read()
                    if got is not None and first is not None and got[0] >= first:
                        pending.append(got)

    def _read(self) -> tuple[int, Counter] | None:
        """Read ``t`` and ``mv`` at one timestamp and record the view check; ``(U, rows
        of t)``, or None when the read failed (a fault) or ``t`` is empty."""
        try:
            with self.read_via() as c:
                c.execute("SET statement_timeout = '60s'")
                rows = c.execute("SELECT k, v, mz_now() FROM t").fetchall()
                if not rows:
                    return None
                u = int(str(rows[0][2]))
                view = dict(c.execute(f"SELECT k, n FROM mv AS OF {u}").fetchall())
        except psycopg.Error:
            self.checks["view-failed"] += 1
            return None
        read = Counter((k, v) for k, v, _ in rows)
        per_key = Counter(k for k, _ in read.elements())
        diff = {k: [per_key.get(k, 0), view.get(k, 0)] for k in set(per_key) | set(view)
                if per_key.get(k, 0) != view.get(k, 0)}
        self.checks["view"] += 1
        self.history.write(process="observer", type="view", ts=u, rows=len(rows),
                           diff=dict(sorted(diff.items())[:SHOWN]))
        return u, read

    def _compare_subscribe(self, u: int, read: Counter, updates: list) -> None:
        state: Counter = Counter()
        for ts, diff, k, v in updates:
            if ts <= u:
                state[(k, v)] += diff
        diff = [[k, v, read.get((k, v), 0), n] for (k, v), n in (read | state).items()
                if read.get((k, v), 0) != state.get((k, v), 0)]
        diff += [[k, v, read.get((k, v), 0), n] for (k, v), n in state.items() if n < 0]
        self.checks["subscribe"] += 1
        self.history.write(process="observer", type="subscribe", ts=u, rows=sum(read.values()),
                           diff=sorted(diff)[:SHOWN])


class Ddl:
    """DDL every ``interval`` (min, max) seconds through ``connect``: CREATE INDEX on
    ``t (k)`` (at most two at once), DROP INDEX of one, ALTER TABLE r ADD COLUMN (at most
    ``max_columns``: each copies the table's rows to a new shard). ``counts`` by outcome."""

    def __init__(self, connect: Callable[[], psycopg.Connection], history: History, rng: random.Random,
                 interval: tuple[float, float] = (12, 24), max_columns: int = 4):
        self.connect, self.history, self.rng, self.interval = connect, history, rng, interval
        self.max_columns = max_columns
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="ddl")
        self.counts: Counter = Counter()
        self._indexes: list[str] = []
        self._n = 0
        self._columns = 0

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(120)

    def _statement(self) -> tuple[str, str]:
        kinds = ["create-index"] if len(self._indexes) < 2 else []
        kinds += ["drop-index"] if self._indexes else []
        kinds += ["add-column"] if self._columns < self.max_columns else []
        kind = self.rng.choice(kinds)
        self._n += 1
        if kind == "create-index":
            return kind, f"CREATE INDEX t_i{self._n} ON t (k)"
        if kind == "drop-index":
            return kind, f"DROP INDEX {self.rng.choice(self._indexes)}"
        return kind, f"ALTER TABLE r ADD COLUMN c{self._n} int"

    def _run(self) -> None:
        while not self._stop.wait(self.rng.uniform(*self.interval)):
            kind, sql = self._statement()
            try:
                with self.connect() as c:
                    c.execute("SET statement_timeout = '60s'")
                    c.execute(sql)
            except psycopg.Error as e:
                self.counts[f"{kind} failed"] += 1
                if kind == "drop-index":  # gone or not, never dropped twice
                    self._indexes.remove(sql.split()[2])
                self.history.write(process="ddl", type="fail", f=kind, sql=sql, error=f"{e.sqlstate}: {e}"[:200])
                continue
            self.counts[kind] += 1
            self.history.write(process="ddl", type="ok", f=kind, sql=sql)
            if kind == "create-index":
                self._indexes.append(sql.split()[2])
            elif kind == "drop-index":
                self._indexes.remove(sql.split()[2])
            else:
                self._columns += 1


def check(events, rep) -> None:
    """Add a ``view-mismatch`` or ``subscribe-mismatch`` to ``rep`` for each observer event
    whose ``diff`` is not empty."""
    for e in events:
        if e.get("process") == "observer" and e.get("diff"):
            rep.add(f"{e['type']}-mismatch", {"ts": e["ts"], "rows": e["rows"], "diff": e["diff"]})
