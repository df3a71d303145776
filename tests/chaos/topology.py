"""The systems under test: one environmentd on sqlite files (``one``), or two environmentd
processes sharing a PostgreSQL (catalog, Consensus, timestamp oracle) and a Blob directory
behind the balancer (``two``: A runs cluster quickstart, B cluster cb). Each cluster has one
replica (a Spark Connect JVM): the machine is shared.
"""

from __future__ import annotations

import os
import signal
from functools import partial
from pathlib import Path

import psutil
import psycopg
from server import (
    Balancer,
    Server,
    free_port,
    replica_jvms,
    seen_by,
    start_owner_pair,
    wait_for,
)

from chaos.workload import SETUP


def setup(s: Server) -> None:
    """Create the workload's tables and view (:data:`chaos.workload.SETUP`) through ``s``."""
    with s.connect() as c:
        for sql in SETUP:
            c.execute(sql)


class Topology:
    """``nodes``: ``(name, connect)`` pairs clients use; ``envds``: the environmentd
    servers; ``pg``: the shared PostgreSQL (None for ``one``)."""

    envds: list[Server]
    pg = None
    nodes: list[tuple[str, object]]

    def replica_pids(self) -> list[int]:
        return [pid for s in self.envds for pid in replica_jvms(s.data_dir)]

    def envd_rss(self) -> int:
        """Resident bytes of the environmentd processes now."""
        total = 0
        for s in self.envds:
            if s.proc is not None:
                try:
                    total += psutil.Process(s.proc.pid).memory_info().rss
                except psutil.Error:
                    pass
        return total

    def kill_envd(self, s: Server) -> None:
        """SIGKILL ``s`` and its replicas (a crash of its machine), then start it again."""
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait(30)
        for pid in replica_jvms(s.data_dir):
            os.kill(pid, signal.SIGKILL)
        s.stop()
        s.start(wait_replicas=False)

    def wait_healthy(self, timeout: float = 240) -> None:
        for s in self.envds:
            with s.connect() as c:
                assert wait_for(lambda c=c: {r[0] for r in c.execute("SELECT status FROM mz_cluster_replicas")}
                                == {"healthy"}, timeout, 0.5), f"replicas of {s.data_dir} not healthy"

    def stop(self) -> None:
        for s in self.envds:
            s.stop()
            for pid in replica_jvms(s.data_dir):
                os.kill(pid, signal.SIGKILL)
        if self.pg is not None:
            self.pg.stop()


class One(Topology):
    def __init__(self, d: Path):
        self.envds = [Server(Path(d) / "mzdata").start()]
        self.nodes = [("a", self.envds[0].connect)]
        setup(self.envds[0])


class Two(Topology):
    def __init__(self, d: Path):
        from pg_reference import PostgresReference

        d = Path(d)
        self.pg = PostgresReference(d / "pg", free_port()).start()
        url = self.pg.url
        shared = ("--catalog-url", url, "--persist-consensus-url", url, "--timestamp-oracle-url", url,
                  "--persist-blob-url", str(d / "blob"), "--catalog-key-file", str(d / "catalog.key"))
        (d / "a").mkdir()
        (d / "b").mkdir()
        a = Server(d / "a" / "mzdata", *shared, "--clusters", "quickstart")
        b = Server(d / "b" / "mzdata", *shared, "--clusters", "cb")
        self.envds = [a, b]
        start_owner_pair(a, b)
        self.balancer = Balancer(d / "balancer.log", None, "--catalog-url", url)
        setup(a)
        seen_by(b, "mv")
        self.wait_healthy()
        self.nodes = [("a", partial(self._via_balancer, "quickstart")), ("b", partial(self._via_balancer, "cb"))]

    def _via_balancer(self, cluster: str) -> psycopg.Connection:
        return self.balancer.connect(cluster)

    def stop(self) -> None:
        self.balancer.stop()
        super().stop()
