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
  after the process's pid in ``skew_dir``); only when the topology started with it set;
- ``fill-disk``: a file takes every free byte of the small disk (``chaos.disk``) the data
  directories (and ``two``'s Blob) are on, for 2-6 s, then is deleted: writes fail with
  53100 meanwhile (a definite failure: the workload counts them ``fail``, and the checker
  finds any that did commit); only when the run mounted that disk (root);
- ``cut-link``: an environmentd's link (its network namespace's veth, ``two`` built with
  ``net``) goes down for 2-8 s (below the 10 s cluster lease), then up: its sessions,
  its PostgreSQL calls and PubSub stall, the balancer cannot reach it; only when the
  topology has :attr:`~chaos.topology.Topology.links` (root: ``ip netns``).

``iptables``/``nft`` are not installed here: link cuts go through network namespaces.
"""

from __future__ import annotations

import os
import random
import signal
import threading
from pathlib import Path

import psutil
from netns import ip

from chaos.disk import fill
from chaos.topology import Topology
from chaos.workload import History

#: what tests/test_chaos.py injects (its runs' length is fixed by the suite's budget)
KINDS = ("kill-replica", "pause-replica", "kill-envd", "restart-pg", "pause-pg", "skew-clock")
#: every kind: what bench/chaos.py injects (those the run can set up)
ALL_KINDS = KINDS + ("fill-disk", "cut-link")


class Nemesis:
    """Injects a fault every ``interval`` (min, max) seconds from ``kinds`` until stopped;
    ``weights`` makes rare kinds rare (an environmentd restart costs tens of seconds).
    ``skew_dir``: the oracle skew hook's directory; ``disk``: the small disk's mount
    point (each enables its kind)."""

    def __init__(self, topo: Topology, history: History, rng: random.Random,
                 interval: tuple[float, float] = (4, 10), kinds: tuple[str, ...] = KINDS,
                 weights: dict[str, float] | None = None, skew_dir: Path | None = None,
                 disk: Path | None = None):
        self.topo, self.history, self.rng, self.interval = topo, history, rng, interval
        self.skew_dir, self.disk = skew_dir, disk
        able = {"restart-pg": topo.pg is not None, "pause-pg": topo.pg is not None,
                "skew-clock": skew_dir is not None, "fill-disk": disk is not None, "cut-link": bool(topo.links)}
        self.kinds = [k for k in kinds if able.get(k, True)]
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

    def _fill_disk(self):
        filler = fill(self.disk)
        size = filler.stat().st_size
        try:
            self._stop.wait(self.rng.uniform(2, 6))
        finally:
            filler.unlink()
        return f"{size >> 20} MiB"

    def _cut_link(self):
        name = self.rng.choice(sorted(self.topo.links))
        ns, link = self.topo.links[name]
        seconds = self.rng.uniform(2, 8)
        ip("-n", ns, "link", "set", link, "down")
        try:
            self._stop.wait(seconds)
        finally:
            ip("-n", ns, "link", "set", link, "up")
        return f"{name} for {seconds:.1f} s"

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
