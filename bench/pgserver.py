"""A throwaway PostgreSQL server for benchmarks: Debian's packages
(``/usr/lib/postgresql/*/bin``), ``initdb`` in a temporary directory, ``pg_ctl`` on a free
loopback port, run as the ``postgres`` user when the bench runs as root (initdb refuses root).
Stopped with ``-m immediate`` and its directory removed by ``stop()``.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from server import free_port  # noqa: E402


class Postgres:
    """A throwaway PostgreSQL cluster on 127.0.0.1; ``settings`` are ``-c name=value`` pairs
    given to the postmaster (fsync is always off: the data is thrown away)."""

    def __init__(self, settings: dict[str, str] | None = None):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        self.bin = Path(bins[-1]).parent if bins else None
        self.version = self.bin.parent.name if self.bin else None
        self.dir = Path(tempfile.mkdtemp(prefix="bench-pg-"))
        self.port = free_port()
        self.settings = {"fsync": "off", **(settings or {})}

    def _run(self, *args):
        cmd = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
            cmd = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self) -> "Postgres | None":
        """The started server, or None when no PostgreSQL is installed."""
        if self.bin is None:
            return None
        data = self.dir / "data"
        self._run("initdb", "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync",
                  "--locale=C.UTF-8", "--encoding=UTF8")
        opts = " ".join(f"-c {k}={v}" for k, v in self.settings.items())
        self._run("pg_ctl", "-D", str(data), "-l", str(self.dir / "log"), "-w", "-o",
                  f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 {opts}", "start")
        return self

    def connect(self, **kw):
        return psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                               autocommit=True, **kw)

    def stop(self):
        try:
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
