"""Worker processes for queries evaluated in Python that outgrow the session's thread.

A fast-path query (``planner.interpret``: constants, system tables) runs in the session's
own thread while it stays small (``INLINE_HEAP_BYTES``). One that grows past that is run
again here, in a separate process, so that its CPU time, its garbage collections and its
memory are not environmentd's: a thread of environmentd evaluating millions of rows holds
the GIL and makes the collector walk its lists, and every other session waits (measured
with bench/coordinator.py --section python). A statement_timeout or cancel kills the
worker, which stops the work and returns its memory at once; the next query starts a new
one. Work too costly for a session's thread whatever its size (a backtracking regular
expression, ``planner.guard``) comes here too; here it runs under an address-space cap.

This module owns the workers' lifecycle and the pipe protocol (length-prefixed pickles
over stdin/stdout); the evaluation itself is ``planner.interpret.run``, unchanged.
"""

from __future__ import annotations

import logging
import os
import pickle
import resource
import select
import struct
import subprocess
import sys
import threading

from catalog.errors import SqlError, INTERNAL_ERROR, OUT_OF_MEMORY
from catalog.textio import DEFAULT_FORMAT, TextFormat
from planner.context import NO_STATEMENT
from planner.guard import Guard, heap_exceeded
from planner.interpret import Limits, run

log = logging.getLogger(__name__)

#: bytes of rows (``interpret.Limits`` estimate) a query may build in the session's
#: thread before it is moved to a worker: ~40,000 narrow rows, a few milliseconds of
#: work, far above any catalog query and small enough that its lists cost the
#: garbage collector and the other sessions nothing measurable
INLINE_HEAP_BYTES = 4 << 20

#: worker processes running at once; more queries wait for one (the machine's cores are
#: for replicas and sessions too)
MAX_WORKERS = 2

#: how often (seconds) a session waiting on a worker looks at its cancel flag and deadline
_POLL_S = 0.05

#: a worker whose query built more than this (bytes) exits after answering: CPython keeps
#: freed memory for reuse, and an idle worker should not sit on hundreds of megabytes
RETIRE_AFTER_BYTES = 64 << 20

#: bytes of address space a worker may map beyond its own and twice its query's heap
#: budget (``_limit_address_space``): the interpreter's arenas, lazily imported libraries
AS_HEADROOM_BYTES = 512 << 20

#: workers run at a lower CPU priority than environmentd's sessions (nice(2) increment)
_NICE = 10

_LEN = struct.Struct("!Q")


def _send(f, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(_LEN.pack(len(data)))
    f.write(data)
    f.flush()


def _recv(f):
    head = f.read(_LEN.size)
    if len(head) < _LEN.size:
        raise EOFError
    (n,) = _LEN.unpack(head)
    data = f.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)


class _Worker:
    def __init__(self):
        # one BLAS thread: numpy (imported by casts to float4) would map memory per thread
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
        # niced before its imports too (a second of CPU): a worker restarted after each
        # stopped query must not take the CPU from the sessions
        launch = f"import os; os.nice({_NICE}); from sqlfront.pyworker import _serve; _serve()"
        self.proc = subprocess.Popen([sys.executable, "-c", launch], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd=os.path.dirname(os.path.dirname(__file__)), env=env)
        log.info("started Python evaluation worker (pid %d)", self.proc.pid)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


class PythonWorkers:
    """A small pool of worker processes evaluating plans in Python. Thread-safe."""

    def __init__(self, max_workers: int = MAX_WORKERS):
        self.max_workers = max_workers
        self._idle: list[_Worker] = []
        self._busy = 0
        self._cond = threading.Condition()
        self._closed = False

    def run(self, plan, tables: dict[str, list[tuple]], max_heap_bytes: int | None, deadline: float | None,
            cancel: threading.Event, text: TextFormat = DEFAULT_FORMAT) -> list[tuple]:
        """The rows of ``plan``, evaluated by ``planner.interpret.run`` in a worker process.

        Args:
            tables: the rows of every system table the plan reads, by table id.
            max_heap_bytes: the query's ``max_query_heap_size`` in bytes, or None.
            deadline: ``time.monotonic()`` value of the statement timeout, or None.
            cancel: set by a CancelRequest.
            text: the session's DateStyle, TimeZone and IntervalStyle, which casts and
                functions there follow (``planner.guard.Guard.text``).

        Raises:
            SqlError 57014 on timeout or cancel (the worker is killed: the work stops);
            the query's own errors, 53200 past ``max_heap_bytes`` included; XX000 if the
            worker dies.
        """
        stopped = Limits(deadline=deadline, cancelled=cancel.is_set)  # its check() raises the 57014s
        worker = self._acquire(stopped)
        keep = False  # the worker for the next query: not if it is mid-query or retiring
        try:
            _send(worker.proc.stdin, (plan, tables, max_heap_bytes, deadline, text))
            fd = worker.proc.stdout.fileno()
            while not select.select([fd], [], [], _POLL_S)[0]:
                stopped.check()
            reply, retire = _recv(worker.proc.stdout)
            keep = not retire
        except (EOFError, BrokenPipeError, OSError) as e:
            raise SqlError(INTERNAL_ERROR, f"the process evaluating the query exited ({e!r})") from None
        finally:
            self._release(worker, keep)
        if reply[0] == "error":
            _, sqlstate, message, detail, hint = reply
            raise SqlError(sqlstate, message, detail=detail, hint=hint)
        return reply[1]

    def _acquire(self, stopped: Limits) -> _Worker:
        with self._cond:
            while self._busy >= self.max_workers:
                stopped.check()
                self._cond.wait(_POLL_S)
            self._busy += 1
            if self._idle:
                return self._idle.pop()
        try:
            return _Worker()
        except BaseException:
            with self._cond:
                self._busy -= 1
                self._cond.notify()
            raise

    def _release(self, worker: _Worker, keep: bool) -> None:
        if not keep:
            # Mid-query, killing it is what stops the work and frees its memory; a retiring
            # worker is exiting anyway.
            worker.kill()
        with self._cond:
            self._busy -= 1
            if keep and not self._closed:
                self._idle.append(worker)
            elif keep:
                worker.kill()
            self._cond.notify()

    def shutdown(self) -> None:
        """Kill every idle worker; busy ones are killed as their queries end."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
        for w in idle:
            w.kill()


def _limit_address_space(max_heap_bytes: int | None) -> None:
    """Cap this process's address space (RLIMIT_AS) for the next query: what it maps
    now, plus twice the query's heap budget (its values, and the pickled reply), plus
    ``AS_HEADROOM_BYTES``; no cap without a budget (``max_query_heap_size = 0``, which only
    a superuser sets). What the heap estimates miss then fails as MemoryError (53200)
    instead of growing the machine's memory."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = hard
    if max_heap_bytes is not None:
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        soft = mapped + 2 * max_heap_bytes + AS_HEADROOM_BYTES
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _serve() -> None:
    """The worker (niced by its launcher): evaluate requests from stdin until it closes
    (environmentd exited)."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            plan, tables, max_heap_bytes, deadline, text = _recv(stdin)
        except EOFError:
            return
        _limit_address_space(max_heap_bytes)
        # The deadline is on the machine's monotonic clock, the same in every process.
        limits = Limits(deadline=deadline, max_heap_bytes=max_heap_bytes)
        out_of_memory = False
        try:
            # Here big values and backtracking are allowed: environmentd kills this
            # process on a timeout or cancel, and the address space is capped.
            ctx = NO_STATEMENT.with_guard(Guard(max_bytes=max_heap_bytes, inline_bytes=None, text=text))
            reply = ("rows", run(plan, lambda t: tables[t.id], limits, ctx))
        except SqlError as e:
            reply = ("error", e.sqlstate, e.message, e.detail, e.hint)
        except MemoryError:
            out_of_memory = True
            e = heap_exceeded(max_heap_bytes) if max_heap_bytes is not None else SqlError(OUT_OF_MEMORY, "out of memory")
            reply = ("error", e.sqlstate, e.message, e.detail, e.hint)
        except Exception as e:  # a bug: report it like the session would, keep serving
            reply = ("error", INTERNAL_ERROR, f"{type(e).__name__}: {e}", None, None)
        retire = out_of_memory or limits.held > RETIRE_AFTER_BYTES
        _send(stdout, (reply, retire))
        if retire:
            return


if __name__ == "__main__":
    os.nice(_NICE)
    _serve()
