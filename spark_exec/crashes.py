"""Replica crashes under a peek, and the plans that were running then (issue 33: a result
too large for a replica killed its JVM, and active replication had sent it to every
replica of the cluster at once, so it killed them all).

A peek runs *alone* (on one replica at a time, ``ClusterCoordinator.peek``) when it is
risky: its result is estimated large (``lower.result_layout`` would spread or spill it),
or a replica died while running the same plan before (``CrashMemory``, a bounded map of
plan fingerprints whose entries expire). If the replica running a lone peek dies, the
peek fails with ``crash_error`` (53200 when the JVM ran out of memory, XX000 else, naming
the replica), and is not tried on the others; the orchestrator restarts the dead
replica as after any crash. A lone peek that succeeds clears its plan's entry.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from catalog.errors import INTERNAL_ERROR, OUT_OF_MEMORY, SqlError

#: plans remembered at most (the least recently used go first)
CAPACITY = 256
#: how long a crash is remembered (seconds)
TTL_S = 3600.0


@dataclass(frozen=True)
class Crash:
    """A replica's death while it ran a peek: its label (``cluster.replica``), and why:
    ``out_of_memory`` (its JVM ran out of heap) and ``reason`` (``exit code 52``,
    ``killed by signal 9``, or for a REMOTE replica ``connection lost``)."""

    replica: str
    reason: str
    out_of_memory: bool = False


def crash_error(crash: Crash, cluster: str, streaming: bool = False) -> SqlError:
    """The error of a peek whose replica died running it: 53200 (PostgreSQL's
    out_of_memory) when the replica's JVM ran out of memory, else XX000 (internal_error),
    both naming the replica. ``streaming``: the replica had begun sending the result."""
    doing = "sending the query's results" if streaming else "running the query"
    hint = ("The query was not sent to the cluster's other replicas; the replica restarts on its own. "
            "Reduce the result (LIMIT, aggregates) or use a larger replica size.")
    if crash.out_of_memory:
        return SqlError(OUT_OF_MEMORY, f'replica {crash.replica} of cluster "{cluster}" ran out of memory {doing}',
                        detail=f"The replica's process ended ({crash.reason}).", hint=hint)
    return SqlError(INTERNAL_ERROR, f'replica {crash.replica} of cluster "{cluster}" crashed {doing} ({crash.reason})',
                    hint=hint)


def fingerprint(plan) -> int:
    """A key equal for equal plans (plans are frozen dataclasses; their hash covers every
    node, expression and constant)."""
    try:
        return hash(plan)
    except TypeError:  # a node holding an unhashable value: its text stands for it
        return hash(repr(plan))


class CrashMemory:
    """Plan fingerprint -> the last ``Crash`` while it ran, at most ``capacity`` of them,
    each for ``ttl_s`` seconds. Thread-safe."""

    def __init__(self, capacity: int = CAPACITY, ttl_s: float = TTL_S, clock: Callable[[], float] = time.monotonic):
        self.capacity, self.ttl_s, self._clock = capacity, ttl_s, clock
        self._lock = threading.Lock()
        self._crashes: OrderedDict[int, tuple[float, Crash]] = OrderedDict()

    def remember(self, key: int, crash: Crash) -> None:
        with self._lock:
            self._crashes.pop(key, None)
            self._crashes[key] = (self._clock(), crash)
            while len(self._crashes) > self.capacity:
                self._crashes.popitem(last=False)

    def recall(self, key: int) -> Crash | None:
        """The crash remembered for ``key``, None if none or expired."""
        with self._lock:
            got = self._crashes.get(key)
            if got is None:
                return None
            if self._clock() - got[0] >= self.ttl_s:
                del self._crashes[key]
                return None
            self._crashes.move_to_end(key)
            return got[1]

    def forget(self, key: int) -> None:
        with self._lock:
            self._crashes.pop(key, None)

    def __len__(self) -> int:
        return len(self._crashes)
