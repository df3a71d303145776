"""The systems under test: one environmentd on sqlite files (``one``), or two environmentd
processes sharing a PostgreSQL (catalog, Consensus, timestamp oracle) and a Blob directory
behind the balancer (``two``: A runs cluster quickstart, B cluster cb). Each cluster has one
replica (a Spark Connect JVM): the machine is shared.

``data``: where the data directories (and ``two``'s Blob) go, when not in the run's
directory: a small disk the nemesis fills (``chaos.disk``); the logs stay in the run's
directory. ``two`` with ``net`` (``netns.bridged_namespaces``' yield for hosts ``a`` and
``b``): each environmentd and its replica in a network namespace of its own, PostgreSQL
and the balancer on the bridge, so the nemesis can cut an environmentd's link
(:attr:`Topology.links`).
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
    self_signed,
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
    #: environmentd name -> (its network namespace, its link's name there): links that can be cut
    links: dict[str, tuple[str, str]]

    def replica_pids(self) -> list[int]:
        return [pid for s in self.envds for pid in replica_jvms(s.data_dir)]

    def envd_rss(self) -> dict[int, int]:
        """Resident bytes of each environmentd process now, by pid (a restarted
        environmentd is a new pid)."""
        out = {}
        for s in self.envds:
            if s.proc is not None:
                try:
                    out[s.proc.pid] = psutil.Process(s.proc.pid).memory_info().rss
                except psutil.Error:
                    pass
        return out

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
        if self.pg is not None and self.pg.proc is not None:
            self.pg.stop()


def _server(d: Path, data: Path | None, name: str, *args: str, **kw) -> Server:
    """An environmentd whose data directory is ``data/name/mzdata`` (``d/...`` when
    ``data`` is None) and whose log is ``d/name-server.log``."""
    (Path(data or d) / name).mkdir(parents=True, exist_ok=True)
    s = Server(Path(data or d) / name / "mzdata", *args, **kw)
    s.log_path = Path(d) / f"{name}-server.log"
    return s


class One(Topology):
    def __init__(self, d: Path, data: Path | None = None):
        self.links = {}
        self.envds = [_server(d, data, "a").start()]
        self.nodes = [("a", self.envds[0].connect)]
        setup(self.envds[0])


class Two(Topology):
    #: the password of ``net`` runs: environmentd refuses to listen beyond loopback without one
    PASSWORD = "chaos-pw"

    def __init__(self, d: Path, data: Path | None = None, net: tuple | None = None):
        self.envds, self.links, self.balancer, self._password = [], {}, None, None
        try:
            self._start(Path(d), data, net)
        except BaseException:
            self.stop()  # what started (PostgreSQL first): nothing left running
            raise

    def _start(self, d: Path, data: Path | None, net: tuple | None) -> None:
        from pg_reference import PostgresReference

        host = f"{net[0]}.1" if net else "127.0.0.1"
        self.pg = PostgresReference(d / "pg", free_port(), host=host,
                                    trust_network=f"{net[0]}.0/24" if net else None).start()
        url = self.pg.url
        shared = ("--catalog-url", url, "--persist-consensus-url", url, "--timestamp-oracle-url", url,
                  "--persist-blob-url", str(Path(data or d) / "blob"), "--catalog-key-file", str(d / "catalog.key"))
        tls: tuple[str, ...] = ()
        if net:  # beyond loopback: a password, and TLS (PubSub, the balancer's hops), as tests/test_netns.py
            self._password = self.PASSWORD
            (d / "pw").write_text(self.PASSWORD + "\n")
            cert, key = self_signed(d, (f"{net[0]}.1", f"{net[0]}.2", f"{net[0]}.3"))
            tls = ("--tls-cert", cert, "--tls-key", key, "--tls-mode", "require")
            shared += ("--password-file", str(d / "pw"), *tls)
        for n, (name, cluster) in enumerate((("a", "quickstart"), ("b", "cb")), 2):
            kw, args = {}, ()
            if net:
                prefix, ns, links = net
                kw = {"host": f"{prefix}.{n}", "prefix": ("ip", "netns", "exec", ns[name]), "password": self.PASSWORD,
                      "sslmode": "require"}
                args = ("--persist-pubsub-listen", f"{prefix}.{n}:{free_port()}")
                self.links[name] = (ns[name], links[name])
            self.envds.append(_server(d, data, name, *shared, "--clusters", cluster, *args, **kw))
        a, b = self.envds
        start_owner_pair(a, b)
        self.balancer = Balancer(d / "balancer.log", None, "--catalog-url", url, *tls,
                                 *(("--backend-tls-ca", tls[1]) if tls else ()), host=host)
        setup(a)
        seen_by(b, "mv")
        self.wait_healthy()
        self.nodes = [("a", partial(self._via_balancer, "quickstart")), ("b", partial(self._via_balancer, "cb"))]

    def _via_balancer(self, cluster: str) -> psycopg.Connection:
        if self._password is None:
            return self.balancer.connect(cluster)
        return self.balancer.connect(cluster, password=self._password, sslmode="require")

    def stop(self) -> None:
        if self.balancer is not None:
            self.balancer.stop()
        super().stop()
