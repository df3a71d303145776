"""What environmentd writes to the catalog on its own: at boot, the ``quickstart`` cluster of
a new catalog, the bootstrap role and the drop of temporary schemas an earlier run left;
at login, the role of a user who has none (``auto_create_roles``). Each is a catalog
transaction through the Coordinator, so several processes sharing a catalog do it once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from catalog import durable
from catalog.errors import SqlError, INVALID_AUTHORIZATION_SPECIFICATION
from catalog.snapshot import CatalogSnapshot, Cluster, Replica, Role, temp_schema_process

if TYPE_CHECKING:
    from sqlfront.config import Config
    from sqlfront.coordinator import Coordinator

log = logging.getLogger(__name__)


def bootstrap(coordinator: Coordinator, config: Config) -> None:
    """A new catalog's ``quickstart`` cluster with one replica ``r1`` of
    ``bootstrap_replica_size``."""
    size = config.bootstrap_replica_size
    zones = config.availability_zones

    def build(snap, ids):
        if snap.clusters:  # a shared catalog another environmentd bootstrapped first
            return []
        # managed, as Materialize's quickstart: ALTER CLUSTER quickstart SET (SIZE ...) works
        c = Cluster(ids.allocate("cluster"), "quickstart", managed=True, size=size, replication_factor=1)
        r = Replica(ids.allocate("replica"), c.id, "r1", size, zones[0] if zones else None)
        return [durable.CreateCluster(c), durable.CreateReplica(r)]

    coordinator.transact(build)


def bootstrap_role(coordinator: Coordinator, config: Config) -> None:
    """A catalog without roles (new, or written before roles existed) gets the
    bootstrap role: a superuser that can log in, id ``u1``, which ``catalog.rbac``
    takes as the owner of every object without a recorded one."""
    from catalog import rbac

    def build(snap, ids):
        if snap.roles:  # done already (or by another environmentd on a shared catalog)
            return []
        role_id = ids.allocate("role")
        assert role_id == rbac.BOOTSTRAP_ROLE_ID, role_id
        return [durable.CreateRole(Role(role_id, config.bootstrap_role, login=True, superuser=True))]

    if not coordinator.snapshot.roles:
        coordinator.transact(build)


def drop_leftover_temp_schemas(coordinator: Coordinator, snap: CatalogSnapshot,
                               live_processes: set[str] | None) -> None:
    """Temporary schemas of sessions an earlier run did not see end (a crash): drop
    them and their tables, as PostgreSQL cleans its pg_temp schemas. With a shared
    catalog (``live_processes``: the other processes alive now), only those of this
    process's earlier runs and of processes the registry says are dead
    (:func:`leftover_temp_schemas`): a live process's sessions keep theirs."""
    from sqlfront.sequence.schemas import drop_schemas

    left = [sc.name for sc in snap.schemas.values() if sc.temp]
    if live_processes is not None:
        left = leftover_temp_schemas(left, live_processes)
    if left:
        log.info("dropping %d temporary schema(s) left by an earlier run", len(left))
        coordinator.transact(drop_schemas(left, True, True))


def leftover_temp_schemas(names: list[str], live_processes: set[str]) -> list[str]:
    """Of the temporary schemas ``names`` in a catalog shared by several processes, those
    a booting process drops: every one whose process (``temp_schema_process``) is not in
    ``live_processes`` (the others alive now; this process's earlier run is not one of
    them). A name that carries no process is kept: it cannot be told whose it is."""
    return [n for n in names if (p := temp_schema_process(n)) is not None and p not in live_processes]


def login_role(coordinator: Coordinator, snap: CatalogSnapshot, auto_create_roles: bool, name: str) -> str:
    """The id of the role user ``name`` logs in as (a name ``sqlfront.auth.
    check_login_name`` let through). With ``auto_create_roles`` a user without one
    gets a role (LOGIN, no other attribute, PUBLIC's privileges only) at its first
    login, as Materialize Cloud creates roles for new users.

    Raises:
        SqlError FATAL 28000 ``role "x" does not exist`` (PostgreSQL's message) without
        ``auto_create_roles``; FATAL 28000 ``role "x" is not permitted to log in`` for
        a NOLOGIN role."""
    r = snap.role_by_name(name)
    if r is None:
        if not auto_create_roles:
            raise SqlError(INVALID_AUTHORIZATION_SPECIFICATION, f'role "{name}" does not exist', severity="FATAL")

        def build(snap, ids):
            if snap.role_by_name(name) is not None:
                return []
            return [durable.CreateRole(Role(ids.allocate("role"), name, login=True))]

        r = coordinator.transact(build).role_by_name(name)
    if not r.login:
        raise SqlError(INVALID_AUTHORIZATION_SPECIFICATION, f'role "{name}" is not permitted to log in', severity="FATAL")
    return r.id
