"""ALTER CLUSTER ... SET / RESET [WITH (WAIT ...)] and ALTER CLUSTER ... SWAP WITH
(Materialize's "ALTER CLUSTER"); the catalog transactions are ``sqlfront.cluster_ddl``'s.

A graceful reconfiguration (``WITH (WAIT UNTIL READY (...))`` or ``WITH (WAIT FOR ...)``)
runs in the session's thread, never on the Coordinator loop: a first transaction starts
the new replicas (``rK-pending``) next to the old ones, the session waits, and a second
one promotes them and drops the old ones. A replica is ready when its Spark Connect
server is up and answers (status ``healthy``): a query needs nothing more of it (its
cache of the cluster's index arrangements fills in afterwards, and queries read persist
meanwhile), where Materialize waits for its dataflows to hydrate. On a timeout with ON TIMEOUT ROLLBACK, a cancel or any error,
the pending replicas are dropped and the cluster is as it was; so they are when the
client goes away meanwhile."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from catalog.errors import SqlError, ACTIVE_SQL_TRANSACTION, QUERY_CANCELED, query_canceled
from sqlfront import cluster_ddl
from sqlfront import mzparse as mz
from sqlfront.sequence import block_ddl
from sqlfront.sequence.ddl import run
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session

#: how often a graceful reconfiguration looks at its new replicas' status
_POLL_S = 0.2


def alter_cluster_set(s: Session, stmt: mz.AlterClusterSet, sql: str, params) -> Result:
    """ALTER CLUSTER name SET (...) | RESET (...) [WITH (WAIT ...)].

    Raises:
        ``cluster_ddl.altered_cluster``'s errors; 25001 for WAIT in a transaction
        block; 57014 when the new replicas are not ready in time with ON TIMEOUT
        ROLLBACK, or on a cancel (the cluster stays as it was)."""
    cfg = s.env.config
    if stmt.wait is None:
        run(s, cluster_ddl.alter_cluster(stmt, cfg.sizes, cfg.availability_zones))
        return Result("ALTER CLUSTER")
    if block_ddl.in_block(s):
        raise SqlError(ACTIVE_SQL_TRANSACTION, "ALTER CLUSTER ... WITH (WAIT ...) cannot run inside a transaction block")
    out: dict = {}
    run(s, cluster_ddl.begin_reconfiguration(stmt, cfg.sizes, cfg.availability_zones, out))
    pending, done = out["pending"], False
    try:
        if not _wait(s, pending, stmt.wait) and not stmt.wait.commit_on_timeout:
            raise SqlError(QUERY_CANCELED, f"the new replicas of cluster '{stmt.name}' were not ready within "
                                    f"{stmt.wait.timeout_s:g} s: ALTER CLUSTER rolled back (ON TIMEOUT ROLLBACK)")
        run(s, cluster_ddl.finish_reconfiguration(out["old"], out["cluster"], pending, cfg.sizes,
                                                  cfg.availability_zones))
        done = True
    finally:
        if not done and pending:
            s.env.coordinator.transact(cluster_ddl.drop_pending(pending))
    return Result("ALTER CLUSTER")


def _wait(s: Session, replica_ids: list[str], wait: mz.ClusterWait) -> bool:
    """Wait until every replica of ``replica_ids`` is healthy (``wait.until_ready``) or
    ``wait.timeout_s`` passed; True when they all are (WAIT FOR: always, at the end).

    Raises:
        SqlError 57014 on a cancel of the statement or when the client went away
        (Materialize: either rolls the reconfiguration back)."""
    deadline = time.monotonic() + wait.timeout_s
    while True:
        if s.cancel_event.is_set() or s.client_gone():
            raise query_canceled(timeout=False)
        if wait.until_ready and all(s.env.compute.replica_status(r) == "healthy" for r in replica_ids):
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return not wait.until_ready
        s.cancel_event.wait(min(_POLL_S, left))


def swap_clusters(s: Session, stmt: mz.AlterClusterSwap, sql: str, params) -> Result:
    """ALTER CLUSTER a SWAP WITH b: the clusters exchange names."""
    run(s, cluster_ddl.swap_clusters(stmt))
    return Result("ALTER CLUSTER")
