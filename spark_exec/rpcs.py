"""Counting the Spark Connect requests a piece of work makes (the debug log's figures for
a dataflow's rounds, which ``bench/ivm_round.py`` prints).

``instrument(session)`` wraps a Spark Connect session's gRPC stub once; ``counted()``
then gathers, for the calling thread only, each RPC it makes on any instrumented
session: how many of each method, the seconds spent in them (a streamed result's time
is the time its iteration takes), and which code made each. RPCs pyspark sends from its own threads
(``ReleaseExecute`` after a result was read, asynchronous) are not the caller's and are
not counted. Nothing here changes what is sent.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager

_local = threading.local()


class RpcCounts:
    """RPCs one thread made inside ``counted()``: ``calls[method]`` and ``seconds[method]``."""

    def __init__(self):
        self.calls: Counter = Counter()
        self.seconds: Counter = Counter()
        #: [method, seconds, what made it] of each call, in order
        self.each: list[list] = []

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def add(self, method: str, seconds: float, calls: int = 1) -> None:
        self.calls[method] += calls
        self.seconds[method] += seconds

    def __str__(self) -> str:
        """``2 RPCs 0.31 s (ExecutePlan 1 0.29 s, Config 1 0.02 s) [Config 0.020 s dataflow.changes_frame<...;
        ExecutePlan 0.290 s dataflow.checkpoint<...]``"""
        parts = ", ".join(f"{m} {n} {self.seconds[m]:.2f} s" for m, n in self.calls.most_common())
        each = "; ".join(f"{m} {s:.3f} s {w}" for m, s, w in self.each)
        return f"{self.total} RPCs {sum(self.seconds.values()):.2f} s ({parts}) [{each}]"


@contextmanager
def counted():
    """Yields an ``RpcCounts`` that the calling thread's RPCs on instrumented sessions
    are added to until the block ends (nested blocks each count them)."""
    counts = RpcCounts()
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(counts)
    try:
        yield counts
    finally:
        stack.remove(counts)


def _record(method: str, seconds: float, calls: int = 1) -> None:
    stack = getattr(_local, "stack", ())
    where = _caller() if calls and stack else ""
    for c in stack:
        c.add(method, seconds, calls)
        if calls:
            c.each.append([method, seconds, where])
        elif c.each:  # (a stream's iteration: the time of its call)
            c.each[-1][1] += seconds


def _caller() -> str:
    """``module.function`` of the two innermost frames of this project's ``spark_exec``
    outside this module, inner first: what made the request."""
    f, out = sys._getframe(2), []
    while f is not None and len(out) < 2:
        name = f.f_code.co_filename
        if "/spark_exec/" in name and not name.endswith("/rpcs.py"):
            out.append(f"{name.rsplit('/', 1)[1].removesuffix('.py')}.{f.f_code.co_name}")
        f = f.f_back
    return "<".join(out)


def instrument(session) -> None:
    """Count the RPCs of ``session`` (a pyspark Spark Connect session) from now on;
    idempotent."""
    client = session.client
    if not isinstance(client._internal_stub, _CountingStub):
        client._internal_stub = _CountingStub(client._internal_stub)


class _CountingStub:
    """A gRPC stub whose calls are recorded (``_record``) on the calling thread."""

    def __init__(self, stub):
        self._stub = stub

    def __getattr__(self, method: str):
        call = getattr(self._stub, method)
        if not callable(call):
            return call

        def counting(*args, **kwargs):
            if not getattr(_local, "stack", None):
                return call(*args, **kwargs)
            t0 = time.perf_counter()
            try:
                out = call(*args, **kwargs)
            finally:
                _record(method, time.perf_counter() - t0)
            return _TimedStream(method, out) if hasattr(out, "__next__") else out

        return counting


class _TimedStream:
    """A streamed response whose iteration's time is added to ``method``'s (on the
    thread that iterates it)."""

    def __init__(self, method: str, stream):
        self._method, self._stream = method, stream

    def __iter__(self):
        return self

    def __next__(self):
        t0 = time.perf_counter()
        try:
            return next(self._stream)
        finally:
            _record(self._method, time.perf_counter() - t0, calls=0)

    def __getattr__(self, name):  # cancel(), trailing_metadata(), ... of the gRPC call
        return getattr(self._stream, name)
