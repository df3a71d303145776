"""The list-append workload: client threads run random transactions over table
``t (k int, v int)`` and write every operation's invocation and completion to a history
(JSON lines) for :mod:`chaos.elle`.

A transaction appends 0-3 values (``INSERT INTO t VALUES (k, v)``), then reads 0-3 keys
(``SELECT k, v FROM t WHERE k IN (...) ORDER BY k, v``: one statement), in an explicit block (``BEGIN`` ...
``COMMIT``), or alone in autocommit. Appends come first: a block that read may not write
(Materialize's read-only transactions, 25000). Values are unique over the run; a key
retires after ``appends_per_key`` appends so reads stay small.

Outcomes: ``ok``; ``fail`` when the transaction cannot have committed (an error before
COMMIT of a block, whose writes are buffered until then; a read-only transaction; an
error whose SQLSTATE class says the statement did nothing: :data:`DEFINITE`); ``info``
otherwise (the connection died, a canceled or internal error at COMMIT).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

#: SQLSTATE classes of errors after which a write is known not to have happened: data
#: exceptions, integrity, invalid transaction state, serialization failure (40001),
#: syntax/access, feature not supported, insufficient resources (53100 disk full).
DEFINITE = ("22", "23", "25", "40", "42", "0A", "53")

#: the reads of a transaction, in one statement (one Spark job, not one per key)
READ = "SELECT k, v FROM t WHERE k IN ({}) ORDER BY k, v"


class History:
    """A JSON-lines history file that many threads append to, one flushed line per event;
    ``time`` is ``time.monotonic()`` (one clock for every client: real-time order)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._f = open(self.path, "a")  # noqa: SIM115 - open for the whole run, closed by close()
        self._lock = threading.Lock()

    def write(self, **event) -> dict:
        event.setdefault("time", time.monotonic())
        with self._lock:
            self._f.write(json.dumps(event) + "\n")
            self._f.flush()
        return event

    def close(self) -> None:
        self._f.close()


@dataclass
class Generator:
    """Random transactions (lists of ``[f, k, v]``) from a seeded RNG, thread-safe."""
    rng: random.Random
    keys: int = 5
    appends_per_key: int = 30
    _next_value: int = 1
    _next_key: int = 0
    _active: list = field(default_factory=list)
    _appended: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    used: set = field(default_factory=set)

    def txn(self) -> tuple[list[list], bool]:
        """``(ops, in_block)``: a transaction and whether it runs in an explicit block."""
        with self._lock:
            while len(self._active) < self.keys:
                self._active.append(self._next_key)
                self._next_key += 1
            n_app, n_read = self.rng.randint(0, 3), self.rng.randint(0, 3)
            if n_app + n_read == 0:
                n_read = 1
            ops = []
            for _ in range(n_app):
                k = self.rng.choice(self._active)
                ops.append(["append", k, self._next_value])
                self._next_value += 1
                self.used.add(k)
                self._appended[k] = self._appended.get(k, 0) + 1
                if self._appended[k] >= self.appends_per_key:
                    self._active.remove(k)
                    self._active.append(self._next_key)
                    self._next_key += 1
            for k in self.rng.sample(self._active, min(n_read, len(self._active))):
                ops.append(["r", k, None])
            in_block = len(ops) > 1 or self.rng.random() < 0.3
            return ops, in_block


def classify(e: psycopg.Error, committing: bool, writes: bool) -> str:
    """``fail`` or ``info`` for an error (see the module docstring)."""
    if not writes or not committing:
        return "fail"
    state = e.sqlstate or ""
    return "fail" if state[:2] in DEFINITE else "info"


def execute(conn: psycopg.Connection, ops: list[list], in_block: bool) -> list[list]:
    """Run one transaction; returns ``ops`` with the reads' results. Raises psycopg.Error
    with ``committing`` set on it when the error came from the statement that commits."""
    out = []
    committing = False
    try:
        if in_block:
            conn.execute("BEGIN")
        for f, k, v in ops:
            if f == "append":
                committing = not in_block
                conn.execute("INSERT INTO t VALUES (%s, %s)", (k, v))
                out.append([f, k, v])
        keys = [k for f, k, _ in ops if f == "r"]
        if keys:
            committing = False
            got: dict[int, list[int]] = {k: [] for k in keys}
            for k, v in conn.execute(READ.format(", ".join(str(int(k)) for k in keys))):
                got[k].append(v)
            out += [["r", k, got[k]] for k in keys]
        if in_block:
            committing = True
            conn.execute("COMMIT")
        return out
    except psycopg.Error as e:
        e.committing = committing  # type: ignore[attr-defined]
        if in_block and not conn.closed:
            try:
                conn.execute("ROLLBACK")
            except psycopg.Error:
                pass
        raise


class Clients:
    """``n`` client threads; client ``i`` connects with ``nodes[i % len(nodes)]`` (a
    ``(name, connect)`` pair) and runs transactions until :meth:`stop`."""

    def __init__(self, nodes: list[tuple[str, Callable[[], psycopg.Connection]]], n: int, gen: Generator,
                 history: History):
        self.nodes, self.gen, self.history = nodes, gen, history
        self._stop = threading.Event()
        self._ids = iter(range(1, 1 << 62))
        self._id_lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True, name=f"client-{i}")
                        for i in range(n)]

    def next_id(self) -> int:
        with self._id_lock:
            return next(self._ids)

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self, timeout: float = 60) -> None:
        self._stop.set()
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))

    def _run(self, i: int) -> None:
        node, connect = self.nodes[i % len(self.nodes)]
        conn = None
        process = i
        while not self._stop.is_set():
            if conn is None or conn.closed:
                try:
                    conn = connect()
                    conn.execute("SET statement_timeout = '20s'")
                except psycopg.Error:
                    conn = None
                    time.sleep(0.5)
                    continue
            ops, in_block = self.gen.txn()
            op_id = self.next_id()
            invoke = [[f, k, None if f == "r" else v] for f, k, v in ops]
            self.history.write(id=op_id, process=process, node=node, type="invoke", value=invoke, block=in_block)
            try:
                result = execute(conn, ops, in_block)
            except psycopg.Error as e:
                writes = any(f == "append" for f, _, _ in ops)
                typ = "info" if conn.closed and writes and e.committing else classify(e, e.committing, writes)
                self.history.write(id=op_id, process=process, node=node, type=typ, value=invoke,
                                   error=f"{e.sqlstate}: {str(e).splitlines()[0][:200] if str(e) else ''}")
                if conn.closed or isinstance(e, psycopg.OperationalError):
                    conn.close()
                    conn = None
                    process += 1000  # a new process after an unknown outcome, as Jepsen does
                    time.sleep(0.2)
                continue
            self.history.write(id=op_id, process=process, node=node, type="ok", value=result)
        if conn is not None:
            conn.close()


def final_read(history: History, node: str, connect, keys: set[int], op_id: int, timeout: float = 180) -> bool:
    """Read every key in one statement through ``node`` (retried until it answers, for
    at most ``timeout`` seconds) and record it as a transaction of reads; False if it never did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        try:
            with connect() as c:
                rows = c.execute("SELECT k, v FROM t ORDER BY k, v").fetchall()
        except psycopg.Error:
            time.sleep(1)
            continue
        by_key: dict[int, list[int]] = {k: [] for k in keys}
        for k, v in rows:
            by_key.setdefault(k, []).append(v)
        history.write(id=op_id, process=f"final-{node}", node=node, type="invoke", time=t0,
                      value=[["r", k, None] for k in sorted(by_key)])
        history.write(id=op_id, process=f"final-{node}", node=node, type="ok",
                      value=[["r", k, vs] for k, vs in sorted(by_key.items())])
        return True
    return False
