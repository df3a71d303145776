"""The workload: client threads run random transactions over two tables and write every
operation's invocation and completion to a history (JSON lines) for :mod:`chaos.elle`.

- ``t (k int, v int)``, list-append: an ``append`` is ``INSERT INTO t VALUES (k, v)``, or,
  for all of a transaction's appends at once, one ``COPY t (k, v) FROM STDIN``; a read
  ``r`` of keys is ``SELECT k, v FROM t WHERE k IN (...) ORDER BY k, v`` (one statement).
- ``r (k int, v int)``, registers: one row per key from the start (``v = 0``); a write
  ``w`` is ``UPDATE r SET v = ... WHERE k = ...``, a write ``d`` is ``DELETE FROM r WHERE
  k = ...`` then ``INSERT INTO r VALUES (k, v)`` in the same block (the row replaced); a
  read ``rr`` of keys is one ``SELECT k, v FROM r WHERE k IN (...)``. At most one register
  write per transaction (a block may not UPDATE/DELETE a table it wrote), and a
  transaction that writes one reads nothing (a block with a buffered UPDATE/DELETE may
  not read: 25000, "write-only mode").

A transaction writes 0-3 times, then reads 0-3 keys of each table, in an explicit block
(``BEGIN`` ... ``COMMIT``), or alone in autocommit. Writes come first: a block that read may not write
(Materialize's read-only transactions, 25000). Values are unique over the run; a key of
``t`` retires after ``appends_per_key`` appends so reads stay small.

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
READ_REGISTERS = "SELECT k, v FROM r WHERE k IN ({}) ORDER BY k, v"

#: the micro-operations that write
WRITES = ("append", "w", "d")


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


#: the register table's keys (fixed: each has one row from the start)
REGISTER_KEYS = 4

#: statements that create what the workload uses (run once, through the first node)
SETUP = ("CREATE TABLE t (k int, v int)",
         "CREATE TABLE r (k int, v int)",
         "INSERT INTO r VALUES " + ", ".join(f"({k}, 0)" for k in range(REGISTER_KEYS)),
         "CREATE MATERIALIZED VIEW mv AS SELECT k, count(*) AS n FROM t GROUP BY k")


@dataclass
class Txn:
    """A generated transaction: its micro-operations ``[f, k, v]``, whether it runs in
    an explicit block, and whether its appends go through one COPY."""
    ops: list[list]
    in_block: bool
    copy: bool = False


@dataclass
class Generator:
    """Random transactions from a seeded RNG, thread-safe."""
    rng: random.Random
    keys: int = 5
    appends_per_key: int = 30
    _next_value: int = 1
    _next_key: int = 0
    _active: list = field(default_factory=list)
    _appended: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    used: set = field(default_factory=set)

    def _value(self) -> int:
        self._next_value += 1
        return self._next_value - 1

    def txn(self) -> Txn:
        """A transaction (see the module docstring)."""
        with self._lock:
            while len(self._active) < self.keys:
                self._active.append(self._next_key)
                self._next_key += 1
            n_app, n_read = self.rng.randint(0, 3), self.rng.randint(0, 3)
            ops = []
            for _ in range(n_app):
                k = self.rng.choice(self._active)
                ops.append(["append", k, self._value()])
                self.used.add(k)
                self._appended[k] = self._appended.get(k, 0) + 1
                if self._appended[k] >= self.appends_per_key:
                    self._active.remove(k)
                    self._active.append(self._next_key)
                    self._next_key += 1
            written = None
            if self.rng.random() < 0.3:
                written = self.rng.randrange(REGISTER_KEYS)
                ops.append([self.rng.choice(("w", "d")), written, self._value()])
            if written is None:  # a block with an UPDATE/DELETE may not read (25000 write-only mode)
                for k in self.rng.sample(self._active, min(n_read, len(self._active))):
                    ops.append(["r", k, None])
                for k in self.rng.sample(range(REGISTER_KEYS), self.rng.randint(0, 2)):
                    ops.append(["rr", k, None])
            if not ops:
                ops.append(["r", self.rng.choice(self._active), None])
            # a delete-and-insert is two statements: atomic only in a block
            in_block = len(ops) > 1 or self.rng.random() < 0.3 or any(f == "d" for f, _, _ in ops)
            return Txn(ops, in_block, copy=n_app > 0 and self.rng.random() < 0.25)


def classify(e: psycopg.Error, committing: bool, writes: bool) -> str:
    """``fail`` or ``info`` for an error (see the module docstring)."""
    if not writes or not committing:
        return "fail"
    state = e.sqlstate or ""
    return "fail" if state[:2] in DEFINITE else "info"


def _read(conn: psycopg.Connection, sql: str, f: str, keys: list[int]) -> list[list]:
    got: dict[int, list[int]] = {k: [] for k in keys}
    for k, v in conn.execute(sql.format(", ".join(str(int(k)) for k in keys))):
        got[k].append(v)
    return [[f, k, got[k]] for k in keys]


def execute(conn: psycopg.Connection, txn: Txn) -> list[list]:
    """Run one transaction; returns its ops with the reads' results. Raises psycopg.Error
    with ``committing`` set on it when the error came from the statement that commits."""
    ops, in_block = txn.ops, txn.in_block
    out = []
    committing = False
    try:
        if in_block:
            conn.execute("BEGIN")
        appends = [(k, v) for f, k, v in ops if f == "append"]
        committing = not in_block
        if appends and txn.copy:
            with conn.cursor() as cur, cur.copy("COPY t (k, v) FROM STDIN") as cp:
                for row in appends:
                    cp.write_row(row)
        else:
            for k, v in appends:
                conn.execute("INSERT INTO t VALUES (%s, %s)", (k, v))
        out += [["append", k, v] for k, v in appends]
        for f, k, v in ops:
            if f == "w":
                conn.execute("UPDATE r SET v = %s WHERE k = %s", (v, k))
            elif f == "d":
                conn.execute("DELETE FROM r WHERE k = %s", (k,))
                conn.execute("INSERT INTO r VALUES (%s, %s)", (k, v))
            if f in ("w", "d"):
                out.append([f, k, v])
        committing = False
        for f, sql in (("r", READ), ("rr", READ_REGISTERS)):
            keys = [k for g, k, _ in ops if g == f]
            if keys:
                out += _read(conn, sql, f, keys)
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
            txn = self.gen.txn()
            op_id = self.next_id()
            invoke = [[f, k, None if f in ("r", "rr") else v] for f, k, v in txn.ops]
            self.history.write(id=op_id, process=process, node=node, type="invoke", value=invoke, block=txn.in_block,
                               copy=txn.copy)
            try:
                result = execute(conn, txn)
            except psycopg.Error as e:
                writes = any(f in WRITES for f, _, _ in txn.ops)
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
    """Read every key of both tables through ``node`` (retried until it answers, for at
    most ``timeout`` seconds) and record it as a transaction of reads; False if it never did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        try:
            with connect() as c:
                c.execute("BEGIN")
                rows = c.execute("SELECT k, v FROM t ORDER BY k, v").fetchall()
                registers = c.execute("SELECT k, v FROM r ORDER BY k, v").fetchall()
                c.execute("COMMIT")
        except psycopg.Error:
            time.sleep(1)
            continue
        value = []
        for f, got, known in (("r", rows, keys), ("rr", registers, range(REGISTER_KEYS))):
            by_key: dict[int, list[int]] = {k: [] for k in known}
            for k, v in got:
                by_key.setdefault(k, []).append(v)
            value += [[f, k, vs] for k, vs in sorted(by_key.items())]
        history.write(id=op_id, process=f"final-{node}", node=node, type="invoke", time=t0,
                      value=[[f, k, None] for f, k, _ in value])
        history.write(id=op_id, process=f"final-{node}", node=node, type="ok", value=value)
        return True
    return False
