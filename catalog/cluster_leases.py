"""Cluster ownership across several environmentd processes: a lease with an epoch per
cluster, in the catalog's PostgreSQL database (``--catalog-url postgres://...``).

Materialize runs each cluster's controller in exactly one environmentd; so do we. A
process owns a cluster while it holds the cluster's lease: it runs that cluster's
ClusterCoordinator and replica processes, and no other process does. Table (created if
missing)::

    cluster_leases (cluster_id text PRIMARY KEY, cluster_name text, owner text,
                    epoch bigint, expires_at timestamptz, replica_statuses jsonb)

- ``owner`` is the environmentd's pgwire address ``HOST:PORT`` (what the balancer
  connects to). It names the process across restarts: a process that could bind that
  address is the only one there, so a restarted environmentd may take back a lease its
  earlier incarnation left (``acquire`` with ``reclaim``) without waiting for it to expire.
- ``epoch`` grows by one on every change of hands (takeover or reclaim). Renewals name
  the epoch they hold; one that finds a higher epoch has been fenced: the process stops
  the cluster's replicas at once (:meth:`PostgresClusterLeases.renew` returns which
  leases are still held).
- ``expires_at`` is the database server's clock plus the lease duration at the last
  renewal. Only the database's clock decides expiry, so processes' clocks may disagree;
  a holder that cannot renew fences itself on its own monotonic clock well before
  (``sqlfront.ownership``).
- ``replica_statuses`` (``{replica id: status}``) is the owner's view of its replicas at
  its last renewal: how ``mz_cluster_replicas`` in other processes shows them.

Every change of hands sends ``NOTIFY cluster_leases`` (payload: the cluster name), so the
balancer re-reads routes at once (polling is the fallback).

One process with the sqlite catalog has no leases: it owns every cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pgconn import ConnectionPool, create_once

#: the NOTIFY channel of lease changes of hands
CHANNEL = "cluster_leases"

_DDL = ["CREATE TABLE IF NOT EXISTS cluster_leases ("
        " cluster_id text PRIMARY KEY, cluster_name text NOT NULL, owner text NOT NULL,"
        " epoch bigint NOT NULL, expires_at timestamptz NOT NULL,"
        " replica_statuses jsonb NOT NULL DEFAULT '{}')"]

# One statement: a new row at epoch 1, or the next epoch of a row whose lease expired
# (or that our own earlier incarnation held, when reclaiming). The row lock of ON
# CONFLICT DO UPDATE re-evaluates the WHERE on the newest version: of two processes
# racing for one cluster, one gets a row back.
_ACQUIRE = ("INSERT INTO cluster_leases AS l (cluster_id, cluster_name, owner, epoch, expires_at)"
            " VALUES (%(id)s, %(name)s, %(me)s, 1, now() + make_interval(secs => %(d)s))"
            " ON CONFLICT (cluster_id) DO UPDATE SET cluster_name = EXCLUDED.cluster_name,"
            " owner = EXCLUDED.owner, epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at,"
            " replica_statuses = '{}'"
            " WHERE l.expires_at < now() OR (l.owner = %(me)s AND %(reclaim)s)"
            " RETURNING epoch")

_RENEW = ("UPDATE cluster_leases AS l SET expires_at = now() + make_interval(secs => %(d)s),"
          " cluster_name = v.name, replica_statuses = v.statuses::jsonb"
          " FROM unnest(%(ids)s::text[], %(epochs)s::bigint[], %(names)s::text[], %(statuses)s::text[])"
          "   AS v(id, epoch, name, statuses)"
          " WHERE l.cluster_id = v.id AND l.epoch = v.epoch AND l.owner = %(me)s"
          " RETURNING l.cluster_id")

_LIST = ("SELECT cluster_id, cluster_name, owner, epoch, expires_at > now(), replica_statuses"
         " FROM cluster_leases")


@dataclass(frozen=True)
class Lease:
    """One row of ``cluster_leases`` as read at one moment.

    Attributes:
        cluster_id, cluster_name: the cluster (the name as of the owner's last renewal).
        owner: the holder's pgwire address, ``HOST:PORT``.
        epoch: how many times the lease changed hands (1 for the first holder).
        live: the lease had not expired when read (by the database's clock).
        replica_statuses: ``{replica id: status}`` at the owner's last renewal.
    """

    cluster_id: str
    cluster_name: str
    owner: str
    epoch: int
    live: bool
    replica_statuses: dict[str, str] = field(default_factory=dict)


class PostgresClusterLeases:
    """The ``cluster_leases`` table of the PostgreSQL database at ``url``, used by the
    environmentd whose pgwire address is ``owner`` (``HOST:PORT``), with leases of
    ``duration_s`` seconds. Thread-safe.

    Every method raises psycopg.OperationalError when the server is unreachable, and
    psycopg.errors.QueryCanceled when a statement runs past a quarter of the lease
    (PostgreSQL's ``statement_timeout``); nothing is half-done (each call is one statement)."""

    def __init__(self, url: str, owner: str, duration_s: float):
        if duration_s <= 0:
            raise ValueError("the lease duration must be positive")
        self.url = url
        self.owner = owner
        self.duration_s = duration_s
        self._pool = ConnectionPool(url, setup=self._setup, max_idle=2)
        with self._pool.connection():
            pass  # a wrong URL fails at startup

    def _setup(self, conn) -> None:
        create_once(conn, _DDL)
        # A statement stuck on a lock or a stalled server fails within a quarter lease,
        # so the lease loop goes on and steps down on time instead of hanging in it.
        conn.execute(f"SET statement_timeout = {max(500, int(self.duration_s * 250))}")

    def acquire(self, cluster_id: str, cluster_name: str, reclaim: bool) -> int | None:
        """Take the lease of ``cluster_id`` if no live process holds it (or, with
        ``reclaim``, if this process's address held it: an earlier incarnation). Returns
        the new epoch, or None when another process holds it."""
        with self._pool.connection() as c:
            row = c.execute(_ACQUIRE, {"id": cluster_id, "name": cluster_name, "me": self.owner,
                                       "d": self.duration_s, "reclaim": reclaim}).fetchone()
            if row is not None:
                c.execute("SELECT pg_notify(%s, %s)", (CHANNEL, cluster_name))
        return row[0] if row else None

    def renew(self, held: dict[str, tuple[int, str, dict[str, str]]]) -> set[str]:
        """Extend the leases this process holds, ``{cluster id: (epoch, cluster name,
        replica statuses)}``, by the lease duration from now, and publish the names and
        statuses. Returns the cluster ids still held: a missing one was taken (a higher
        epoch) and its replicas must stop."""
        if not held:
            return set()
        ids = list(held)
        with self._pool.connection() as c:
            rows = c.execute(_RENEW, {
                "d": self.duration_s, "me": self.owner, "ids": ids,
                "epochs": [held[i][0] for i in ids], "names": [held[i][1] for i in ids],
                "statuses": [json.dumps(held[i][2]) for i in ids]}).fetchall()
        return {r[0] for r in rows}

    def release(self, held: dict[str, int]) -> None:
        """Give up the leases ``{cluster id: epoch}`` at once (a clean shutdown, after the
        replicas stopped): another process may take them over without waiting."""
        if not held:
            return
        with self._pool.connection() as c:
            names = c.execute("UPDATE cluster_leases SET expires_at = now() - interval '1 second'"
                              " WHERE owner = %s AND cluster_id = ANY(%s) AND epoch = ANY(%s)"
                              " RETURNING cluster_name",
                              (self.owner, list(held), list(held.values()))).fetchall()
            for (name,) in names:
                c.execute("SELECT pg_notify(%s, %s)", (CHANNEL, name))

    def forget(self, cluster_ids: list[str]) -> None:
        """Delete the leases of dropped clusters."""
        if cluster_ids:
            with self._pool.connection() as c:
                c.execute("DELETE FROM cluster_leases WHERE cluster_id = ANY(%s)", (cluster_ids,))

    def all(self) -> dict[str, Lease]:
        """Every lease now, by cluster id."""
        with self._pool.connection() as c:
            rows = c.execute(_LIST).fetchall()
        return {r[0]: Lease(r[0], r[1], r[2], r[3], r[4], dict(r[5] or {})) for r in rows}

    def close(self) -> None:
        self._pool.close()


def read_routes(conn) -> dict[str, str]:
    """``{cluster name: owner HOST:PORT}`` from the ``cluster_leases`` table, on the
    autocommit psycopg connection ``conn`` (the balancer's view). A lease that expired
    still names its last owner: it may be restarting, and a client sent there learns that
    it is down. Empty when the table does not exist yet. Raises psycopg.Error."""
    import psycopg

    try:
        rows = conn.execute("SELECT cluster_name, owner FROM cluster_leases ORDER BY expires_at").fetchall()
    except psycopg.errors.UndefinedTable:
        return {}
    # ordered by expiry: the freshest lease of a name wins (a cluster dropped and created again)
    return {name: owner for name, owner in rows}
