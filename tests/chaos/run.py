"""One chaos run: start a topology, run the workload with the nemesis for a while, heal,
read every key through every node, check the history. Used by bench/chaos.py and
tests/test_chaos.py."""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import time
from pathlib import Path

from netns import bridged_namespaces, netns_works

from catalog.oracle import SKEW_DIR_ENV
from chaos.disk import small_disk
from chaos.elle import check, read_history
from chaos.nemesis import KINDS, Nemesis, unavailability
from chaos.observed import Ddl, Observer
from chaos.topology import One, Two
from chaos.workload import Clients, Generator, History, final_read

#: the small disk of ``fill-disk`` runs (data directories and Blob; replicas' scratch space is elsewhere)
DISK_BYTES = 512 << 20


def run(directory: Path, topology: str = "one", seconds: float = 60, seed: int = 28, clients: int = 4,
        nemesis: bool = True, kinds: tuple[str, ...] = KINDS, interval: tuple[float, float] = (15, 30),
        log=print) -> dict:
    """Returns the figures of the run: ``operations`` (by outcome), ``faults`` (by kind),
    ``anomalies`` (by name, from :func:`chaos.elle.check`; ``lost-write`` among them),
    ``examples``, ``ddl`` (statements by kind and outcome), ``checks`` (view and
    SUBSCRIBE comparisons made, subscriptions restarted), ``unavailability`` (kind ->
    (p50, max) seconds), ``envd_rss_mb`` (at boot, warm, end, max: see :func:`_sample_rss`),
    ``envd_lives_mb`` (each environmentd process: RSS once warm or None, at its last
    sample, seconds seen) and ``history`` (the file's path)."""
    directory = Path(directory)
    rng = random.Random(seed)
    with contextlib.ExitStack() as stack:
        skew_dir = disk = net = None
        if nemesis and "skew-clock" in kinds:  # environmentd processes started from now on (restarts too) read it
            skew_dir = directory / "oracle-skew"
            skew_dir.mkdir()
            os.environ[SKEW_DIR_ENV] = str(skew_dir)
            stack.callback(os.environ.pop, SKEW_DIR_ENV, None)
        if nemesis and "fill-disk" in kinds:
            if stack.enter_context(small_disk(directory / "disk", DISK_BYTES)):
                disk = directory / "disk"
            else:
                log("fill-disk left out: mounting a tmpfs needs root")
        if nemesis and "cut-link" in kinds and topology == "two":
            if netns_works():
                net = stack.enter_context(bridged_namespaces(("a", "b"), octet=29))
            else:
                log("cut-link left out: network namespaces need root and ip")
        log(f"starting topology {topology} in {directory} ...")
        topo = One(directory, disk) if topology == "one" else Two(directory, disk, net)
        history = History(directory / "history.jsonl")
        try:
            rss_start = sum(topo.envd_rss().values())
            gen = Generator(random.Random(rng.random()))
            cl = Clients(topo.nodes, clients, gen, history)
            nem = Nemesis(topo, history, random.Random(rng.random()), interval, kinds,
                          skew_dir=skew_dir, disk=disk) if nemesis else None
            ddl = Ddl(topo.nodes[0][1], history, random.Random(rng.random()))
            obs = Observer(topo.nodes[-1][1], topo.nodes[0][1], history, random.Random(rng.random()))
            log(f"running {seconds:.0f} s with {clients} clients"
                f"{' and the nemesis (' + ', '.join(nem.kinds) + ')' if nem else ''} ...")
            for part in (cl, ddl, obs, nem):
                if part:
                    part.start()
            rss = _sample_rss(topo, seconds, directory / "rss.jsonl")
            for part in (nem, cl, ddl, obs):
                if part:
                    part.stop()
            log("healed; waiting for the replicas, then the final reads ...")
            topo.wait_healthy()
            finals = [final_read(history, node, connect, gen.used, cl.next_id()) for node, connect in topo.nodes]
        finally:
            history.close()
            topo.stop()
    events = read_history(directory / "history.jsonl")
    rep = check(events)
    faults: dict[str, int] = {}
    for kind, _, _ in (nem.faults if nem else []):
        faults[kind] = faults.get(kind, 0) + 1
    unavail = {k: (round(statistics.median(v), 2), round(max(v), 2))
               for k, v in unavailability(events, nem.faults if nem else []).items()}
    return {"topology": topology, "seed": seed, "seconds": seconds, "operations": rep.stats, "faults": faults,
            "anomalies": rep.counts, "examples": rep.anomalies, "final_reads": finals,
            "ddl": dict(ddl.counts), "checks": dict(obs.checks),
            "unavailability": unavail,
            "envd_rss_mb": (round(rss_start / 2**20), round(rss["warm"] / 2**20), round(rss["end"] / 2**20),
                            round(rss["max"] / 2**20)),
            "envd_lives_mb": [(None if life["warm"] is None else round(life["warm"] / 2**20),
                               round(life["end"] / 2**20), round(life["seen"])) for life in rss["lives"].values()],
            "history": str(directory / "history.jsonl")}


#: seconds between two samples of the environmentd processes' RSS
RSS_EVERY_S = 5.0


def _sample_rss(topo, seconds: float, samples: Path | None = None) -> dict:
    """Sleep ``seconds`` while sampling the environmentd processes' resident bytes:
    ``warm`` is the first sample after ``max(60 s, a tenth of the run)`` (a process's
    first minutes load the Spark Connect client, gRPC and Arrow and grow its thread
    pool: growth that is not a leak), ``end`` the last, ``max`` the largest, each the sum
    over the processes running then. A sample taken while an environmentd restarts (the
    nemesis) counts what runs.

    ``lives``: pid -> ``{"warm", "end", "seen"}`` for each environmentd process: its first
    sample as long after it was first seen (None when it died sooner), its last, and
    seconds between its first and last. The nemesis's kill-envd replaces the process,
    so the sums compare different processes (a new one loads a catalog and shards that
    grew meanwhile); growth from ``warm`` to ``end`` within one process is what a leak
    shows. ``samples``: each sample also goes there, one JSON line ``{"s": seconds since the
    start, "mib": {pid: RSS}}``, so a run shows whether a process levels off."""
    t0 = time.monotonic()
    warm_s = max(60.0, seconds / 10)
    out: dict = {"warm": 0, "end": 0, "max": 0, "lives": {}}
    booted = set(topo.envd_rss())  # running since before t0
    while (left := t0 + seconds - time.monotonic()) > 0:
        time.sleep(min(RSS_EVERY_S, left))
        now, by_pid = time.monotonic(), topo.envd_rss()
        out["end"] = sum(by_pid.values())
        if samples is not None:
            with samples.open("a") as f:
                f.write(json.dumps({"s": round(now - t0, 1), "mib": {str(k): round(v / 2**20, 1) for k, v in by_pid.items()}}) + "\n")
        out["max"] = max(out["max"], out["end"])
        if not out["warm"] and now >= t0 + warm_s:
            out["warm"] = out["end"]
        for pid, rss in by_pid.items():
            life = out["lives"].setdefault(pid, {"first": t0 if pid in booted else now, "warm": None})
            life["end"], life["seen"] = rss, now - life["first"]
            if life["warm"] is None and life["seen"] >= warm_s:
                life["warm"] = rss
    out["warm"] = out["warm"] or out["end"]
    return out
