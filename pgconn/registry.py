"""Which environmentd processes of a shared store are alive, and what they serve.

Table (created if missing)::

    environmentd_processes (process_id text PRIMARY KEY, incarnation text, info jsonb,
                            heartbeat_at timestamptz)

- ``process_id`` names a process across restarts (environmentd's data directory's
  environment id); ``incarnation`` names one run of it.
- ``info`` is what the process tells its peers (environmentd: its persist PubSub
  address and token).
- ``heartbeat_at`` is the database server's clock at the last :meth:`heartbeat`: only
  the database's clock decides liveness, as for cluster leases.

A process is *dead* when its row is gone (it stopped cleanly) or its heartbeat is older
than ``dead_after_s``; what it left (temporary schemas of its sessions) may then be
cleaned up by another process. Like ``cluster_leases``, a registry lives in the
catalog's database; several registries may share a database (one table).
"""

from __future__ import annotations

import json
import uuid

from pgconn import ConnectionPool, create_once

_DDL = ["CREATE TABLE IF NOT EXISTS environmentd_processes ("
        " process_id text PRIMARY KEY, incarnation text NOT NULL, info jsonb NOT NULL,"
        " heartbeat_at timestamptz NOT NULL DEFAULT now())"]


class ProcessRegistry:
    """This process (``process_id``) in the registry of the PostgreSQL database at ``url``.

    ``dead_after_s``: seconds without a heartbeat after which a process counts as dead
    (well above the heartbeat interval: a process that misses a few is not declared
    dead). Thread-safe.

    Raises psycopg.OperationalError from any call when the server is unreachable."""

    def __init__(self, url: str, process_id: str, dead_after_s: float = 30.0):
        self.process_id = process_id
        self.incarnation = uuid.uuid4().hex[:12]
        self.dead_after_s = dead_after_s
        self._pool = ConnectionPool(url, setup=lambda c: create_once(c, _DDL), max_idle=2)
        self._info: dict = {}

    def register(self, info: dict) -> None:
        """Say this run is alive, with ``info`` (JSON-able) for the others; replaces the
        row of an earlier run of this process."""
        self._info = dict(info)
        with self._pool.connection() as c:
            c.execute("INSERT INTO environmentd_processes (process_id, incarnation, info, heartbeat_at)"
                      " VALUES (%s, %s, %s, now()) ON CONFLICT (process_id) DO UPDATE SET"
                      " incarnation = EXCLUDED.incarnation, info = EXCLUDED.info, heartbeat_at = now()",
                      (self.process_id, self.incarnation, json.dumps(self._info)))

    def heartbeat(self) -> None:
        """Renew this run's heartbeat (registering again if its row went away)."""
        with self._pool.connection() as c:
            n = c.execute("UPDATE environmentd_processes SET heartbeat_at = now()"
                          " WHERE process_id = %s AND incarnation = %s",
                          (self.process_id, self.incarnation)).rowcount
        if n == 0:
            self.register(self._info)

    def live_peers(self) -> dict[str, dict]:
        """``{process_id: info}`` of the other processes alive now."""
        with self._pool.connection() as c:
            rows = c.execute("SELECT process_id, info FROM environmentd_processes WHERE process_id <> %s"
                             " AND heartbeat_at > now() - make_interval(secs => %s)",
                             (self.process_id, self.dead_after_s)).fetchall()
        return {pid: info for pid, info in rows}

    def live(self) -> set[str]:
        """Ids of every process alive now, this one included when registered."""
        with self._pool.connection() as c:
            rows = c.execute("SELECT process_id FROM environmentd_processes"
                             " WHERE heartbeat_at > now() - make_interval(secs => %s)",
                             (self.dead_after_s,)).fetchall()
        return {r[0] for r in rows}

    def deregister(self) -> None:
        """This run stops: delete its row (what it leaves may be cleaned up at once)."""
        with self._pool.connection() as c:
            c.execute("DELETE FROM environmentd_processes WHERE process_id = %s AND incarnation = %s",
                      (self.process_id, self.incarnation))

    def close(self) -> None:
        self._pool.close()
