"""The distributed timestamp oracle in PostgreSQL (Materialize's ``PostgresTimestampOracle``,
``--timestamp-oracle-url postgres://...``): what makes reads and writes linearizable
across several environmentd processes.

One row per timeline::

    timestamp_oracle (timeline text PRIMARY KEY, read_ts bigint, write_ts bigint)

- ``write_ts()``: ``write_ts = GREATEST(write_ts + 1, now)`` and return it: strictly
  above every write and read timestamp any process was handed (``read_ts <= write_ts``
  always holds).
- ``apply_write(ts)``: raise ``read_ts`` and ``write_ts`` to ``ts`` (the write is durable
  in persist), so any read that starts afterwards, through any process, reads at >= ``ts``.
- ``read_ts()``: raise ``read_ts`` (and ``write_ts``) to the wall clock, held below this
  process's own writes in flight, and return it. Materialize advances its timelines every
  second with an empty write; following the clock on each read is the same thing at a
  finer grain, and keeps ``AS OF now() + ...`` and the local oracle's behaviour.
  Concurrent ``read_ts()`` calls of one process share one round trip (batched: a caller
  waits for a query that *starts* after it arrived, which keeps the answer linearizable).

A write in flight in *another* process may be passed by ``read_ts``; the read side
advances each shard's upper past its as_of before reading (``PersistClient(fence_reads=True)``),
so that write's compare-and-append fails and is retried at a new ``write_ts`` above the read.

Timestamps are milliseconds since the Unix epoch, as the local oracle's
(:class:`catalog.oracle.TimestampOracle`), whose interface this one has.
"""

from __future__ import annotations

import threading

from catalog.clock import wall_ms

#: Materialize's name of the one timeline of tables
TIMELINE = "EpochMilliseconds"

_DDL = ["CREATE TABLE IF NOT EXISTS timestamp_oracle ("
        " timeline text PRIMARY KEY, read_ts bigint NOT NULL, write_ts bigint NOT NULL)"]
_INIT = ("INSERT INTO timestamp_oracle (timeline, read_ts, write_ts) VALUES (%(tl)s, %(ts)s, %(ts)s)"
         " ON CONFLICT (timeline) DO NOTHING")
_WRITE_TS = ("UPDATE timestamp_oracle SET write_ts = GREATEST(write_ts + 1, %(now)s)"
             " WHERE timeline = %(tl)s RETURNING write_ts")
_APPLY = ("UPDATE timestamp_oracle SET write_ts = GREATEST(write_ts, %(ts)s), read_ts = GREATEST(read_ts, %(ts)s)"
          " WHERE timeline = %(tl)s")
_READ_TS = ("UPDATE timestamp_oracle SET read_ts = GREATEST(read_ts, %(target)s),"
            " write_ts = GREATEST(write_ts, %(target)s) WHERE timeline = %(tl)s RETURNING read_ts")
_OBSERVE = "UPDATE timestamp_oracle SET write_ts = GREATEST(write_ts, %(ts)s) WHERE timeline = %(tl)s"


class PostgresTimestampOracle:
    """The timestamp oracle of timeline ``timeline`` in the PostgreSQL database at
    ``url``. Same methods as :class:`catalog.oracle.TimestampOracle`; thread-safe.

    Raises psycopg.OperationalError when the server is unreachable (a write that could
    not get a timestamp fails; nothing was written)."""

    def __init__(self, url: str, timeline: str = TIMELINE):
        from pgconn import ConnectionPool, create_once

        self.url = url
        self.timeline = timeline
        self._pool = ConnectionPool(url, setup=lambda c: create_once(c, _DDL))
        with self._pool.connection() as c:
            c.execute(_INIT, {"tl": timeline, "ts": _now()})
        self._lock = threading.Lock()
        #: this process's write timestamps handed out and not yet applied
        self._pending: set[int] = set()
        # read_ts batching: callers wait for a round trip that starts after they arrived
        self._batch_cv = threading.Condition()
        self._batch_running = False
        #: round trips started / finished so far, and the answer of the last finished one
        self._started = 0
        self._finished = 0
        self._answer: int | BaseException = 0

    def _execute(self, sql: str, ts: int | None = None, **params) -> int | None:
        """Run one statement on the timeline's row; its RETURNING value, if any."""
        with self._pool.connection() as c:
            cur = c.execute(sql, {"tl": self.timeline, "ts": ts, **params})
            row = cur.fetchone() if cur.description else None
        return row[0] if row else None

    def write_ts(self) -> int:
        """A new write timestamp, above every timestamp any process was handed. The
        caller must call :meth:`apply_write` with it (written or abandoned)."""
        with self._lock:
            # registered first: a concurrent read_ts of this process stays below it
            now = _now()
            self._pending.add(now)
        try:
            ts = self._execute(_WRITE_TS, now=now)
        finally:
            with self._lock:
                self._pending.discard(now)
        with self._lock:
            self._pending.add(ts)
        return ts

    def apply_write(self, ts: int) -> None:
        """The write at ``ts`` is durable (or abandoned): reads that start now, through
        any process, read at >= ``ts``."""
        try:
            self._execute(_APPLY, ts)
        finally:
            with self._lock:
                self._pending.discard(ts)

    def read_ts(self) -> int:
        """The timestamp a read should use: >= every write applied (by any process)
        before this call, below this process's writes in flight, following the clock."""
        with self._batch_cv:
            ticket = self._started + 1  # the first round trip that starts after now
            while self._finished < ticket:
                if not self._batch_running:
                    self._batch_running = True
                    self._started += 1
                    mine = self._started
                    self._batch_cv.release()
                    try:
                        answer = self._read_round_trip()
                    except BaseException as e:
                        answer = e
                    finally:
                        self._batch_cv.acquire()
                    self._answer, self._finished, self._batch_running = answer, mine, False
                    self._batch_cv.notify_all()
                else:
                    self._batch_cv.wait()
            answer = self._answer
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def _read_round_trip(self) -> int:
        with self._lock:
            target = min([_now()] + [p - 1 for p in self._pending])
        return self._execute(_READ_TS, target=target)

    def observe(self, ts: int) -> None:
        """Another process's write at ``ts`` is visible: later write timestamps go above."""
        self._execute(_OBSERVE, ts)

    def close(self) -> None:
        self._pool.close()


def _now() -> int:
    return wall_ms()
