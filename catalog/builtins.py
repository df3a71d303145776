"""Builtin system tables and how their rows are computed.

Columns follow Materialize's ``mz_catalog`` documentation ("System catalog"), with
the seed's ``mz_cluster_replicas`` (seeds/cluster-replicas.md) plus ``id``.
Rows are derived from a catalog snapshot and the live replica statuses, so they are
always current; they are never stored.
"""

from __future__ import annotations

from typing import Callable

from catalog.snapshot import BuiltinTable, CatalogSnapshot, Column
from catalog.types import TEXT

MZ_CLUSTERS = BuiltinTable(
    "s1",
    "mz_catalog",
    "mz_clusters",
    (Column("id", TEXT, False), Column("name", TEXT, False)),
)

MZ_CLUSTER_REPLICAS = BuiltinTable(
    "s2",
    "mz_catalog",
    "mz_cluster_replicas",
    (
        Column("id", TEXT, False),
        Column("name", TEXT, False),
        Column("cluster_id", TEXT, False),
        Column("size", TEXT, True),
        Column("availability_zone", TEXT, True),
        Column("status", TEXT, False),
    ),
)

BUILTIN_TABLES = (MZ_CLUSTERS, MZ_CLUSTER_REPLICAS)

#: replica id -> "healthy" | "unhealthy"
StatusFn = Callable[[str], str]


def builtin_rows(table: BuiltinTable, snap: CatalogSnapshot, status: StatusFn) -> list[tuple]:
    """The current rows of ``table`` as tuples in column order."""
    if table.id == MZ_CLUSTERS.id:
        return [(c.id, c.name) for c in sorted(snap.clusters.values(), key=_id_order)]
    if table.id == MZ_CLUSTER_REPLICAS.id:
        return [
            (r.id, r.name, r.cluster_id, r.size, r.availability_zone, status(r.id))
            for r in sorted(snap.replicas.values(), key=_id_order)
        ]
    raise KeyError(table.id)


def _id_order(obj) -> tuple[str, int]:
    return obj.id[0], int(obj.id[1:])
