"""The nemesis: faults at random moments (seeded), each recorded in the history as two
events of ``process`` ``"nemesis"`` (``f`` the kind, ``phase`` ``start`` / ``end``).

Kinds (those the topology has):

- ``kill-replica``: SIGKILL a replica's JVM (the orchestrator restarts it);
- ``pause-replica``: SIGSTOP a replica's JVM for 1-4 s, then SIGCONT;
- ``kill-envd``: SIGKILL an environmentd and its replicas (its machine crashed), then
  start it again on the same data directory;
- ``restart-pg``: fast shutdown of the shared PostgreSQL, then start it again (``two``);
- ``pause-pg``: SIGSTOP every PostgreSQL process for 1-4 s, then SIGCONT (``two``);
- ``skew-clock``: an environmentd's timestamp-oracle clock jumps 0.5-5 s ahead or behind
  for 2-6 s, then back (``catalog.oracle.SKEW_DIR_ENV``, a debug hook: the file named
  after the process's pid in ``skew_dir``); only when the topology started with it set.

Not injected, and why: cut links need ``iptables``/``nft`` (not installed
here) or the topology rebuilt in network namespaces (``tests/test_netns.py`` cuts one
link that way, outside this workload); a full disk has its own test
(``tests/test_disk_full.py``).
"""

from __future__ import annotations

import os
import random
import signal
import threading
from pathlib import Path

import psutil

from chaos.topology import Topology
from chaos.workload import History

KINDS = ("kill-replica", "pause-replica", "kill-envd", "restart-pg", "pause-pg", "skew-clock")


class Nemesis:
    """Injects a fault every ``interval`` (min, max) seconds from ``kinds`` until stopped;
    ``weights`` makes rare kinds rare (an environmentd restart costs tens of seconds)."""

    def __init__(self, topo: Topology, history: History, rng: random.Random,
                 interval: tuple[float, float] = (4, 10), kinds: tuple[str, ...] = KINDS,
                 weights: dict[str, float] | None = None, skew_dir: Path | None = None):
        self.topo, self.history, self.rng, self.interval = topo, history, rng, interval
        self.skew_dir = skew_dir
        self.kinds = [k for k in kinds if (topo.pg is not None or not k.endswith("-pg"))
                      and (skew_dir is not None or k != "skew-clock")]
        self.weights = {"kill-envd": 0.25, **(weights or {})}
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="nemesis")
        #: (kind, start, end) of each fault, monotonic seconds
        self.faults: list[tuple[str, float, float]] = []
        self._paused: list[int] = []

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Stop injecting and heal: whatever is paused continues."""
        self._stop.set()
        self.thread.join(300)
        self._resume()

    def _run(self) -> None:
        while not self._stop.wait(self.rng.uniform(*self.interval)):
            kind = self.rng.choices(self.kinds, [self.weights.get(k, 1.0) for k in self.kinds])[0]
            start = self.history.write(process="nemesis", type="info", f=kind, phase="start")["time"]
            try:
                target = getattr(self, "_" + kind.replace("-", "_"))()
            except Exception as e:  # noqa: BLE001 - a fault that could not be injected is recorded, not fatal
                target = f"not injected: {e!r}"
            end = self.history.write(process="nemesis", type="info", f=kind, phase="end", value=str(target))["time"]
            self.faults.append((kind, start, end))

    def _pause(self, pids: list[int]) -> None:
        self._paused = pids
        for p in pids:
            os.kill(p, signal.SIGSTOP)
        self._stop.wait(self.rng.uniform(1, 4))
        self._resume()

    def _resume(self) -> None:
        for p in self._paused:
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self._paused = []

    def _skew_clock(self):
        s = self.rng.choice(self.topo.envds)
        skew = round(self.rng.choice((-1, 1)) * self.rng.uniform(500, 5000))
        f = self.skew_dir / str(s.proc.pid)
        f.write_text(str(skew))
        try:
            self._stop.wait(self.rng.uniform(2, 6))
        finally:
            f.write_text("0")
        return f"{s.proc.pid} {skew:+d} ms"

    def _kill_replica(self):
        pid = self.rng.choice(self.topo.replica_pids())
        os.kill(pid, signal.SIGKILL)
        return pid

    def _pause_replica(self):
        pid = self.rng.choice(self.topo.replica_pids())
        self._pause([pid])
        return pid

    def _kill_envd(self):
        s = self.rng.choice(self.topo.envds)
        self.topo.kill_envd(s)
        return str(s.data_dir)

    def _restart_pg(self):
        self.topo.pg.stop()
        self.topo.pg.start()
        return self.topo.pg.url

    def _pause_pg(self):
        root = psutil.Process(self.topo.pg.proc.pid)
        self._pause([root.pid] + [c.pid for c in root.children(recursive=True)])
        return root.pid


def unavailability(events: list[dict], faults: list[tuple[str, float, float]]) -> dict[str, list[float]]:
    """Seconds from each fault's start until the first ``ok`` completion of a transaction
    invoked after it, by fault kind."""
    invoked = {e["id"]: e["time"] for e in events if e.get("type") == "invoke" and e.get("process") != "nemesis"}
    oks = sorted((e["time"], invoked[e["id"]]) for e in events
                 if e.get("type") == "ok" and e.get("id") in invoked)
    out: dict[str, list[float]] = {}
    for kind, start, _ in faults:
        first = next((done for done, inv in oks if inv >= start), None)
        if first is not None:
            out.setdefault(kind, []).append(first - start)
    return out
