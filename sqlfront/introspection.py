"""The rows of the introspection relations that come from environmentd's live state
(issue 29; their columns: ``catalog.introspection``): sessions and statements
(``sqlfront.activity``), replica statuses and metrics (``sqlfront.replica_monitor``),
persist shards' sizes, object dependencies, the function registry, the Coordinator's
metrics, and hydration, lag and state sizes of materializations and indexes (the
controllers').

Everything here is read when a query reads the relation; nothing runs on the
Coordinator's thread.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from catalog import introspection as t
from catalog import rbac
from catalog.builtins import (
    MZ_COORDINATOR_LOOP, MZ_HYDRATION_STATUSES, MZ_MATERIALIZATION_LAG, MZ_PEEK_DURATIONS, MZ_RECENT_STORAGE_USAGE,
)
from catalog.snapshot import BuiltinTable, CatalogSnapshot
from sqlfront import activity
from catalog.settings import MZ_VERSION

if TYPE_CHECKING:  # pragma: no cover
    from sqlfront.environment import Environment

#: functions' ids are ``s<FUNCTION_ID_BASE + n>``, n numbering the registry's signatures
FUNCTION_ID_BASE = 40000


#: the relations whose rows depend on who reads them (``rows``' ``viewer``)
VIEWER_TABLES = frozenset({t.MZ_RECENT_ACTIVITY_LOG.id, t.MZ_RECENT_ACTIVITY_LOG_REDACTED.id})


def rows(env: "Environment", table: BuiltinTable, viewer: str | None = None,
         snap: CatalogSnapshot | None = None) -> list[tuple] | None:
    """The rows of ``table`` if it is one of this module's, else None, over catalog
    ``snap`` (a session's, ``Session.catalog``; None: the latest committed one).

    The activity log holds other users' statements, literals and all: a superuser (or
    ``viewer`` None, environmentd itself) reads every statement, any other role only its
    own sessions' (Materialize opens the log to superusers and ``mz_monitor`` only;
    PostgreSQL's pg_stat_activity shows others' query text to superusers only)."""
    tid = table.id
    snap = env.snapshot if snap is None else snap
    if tid in VIEWER_TABLES and viewer is not None and not rbac.is_superuser(snap, viewer):
        return activity.activity_rows(env.activity, snap, MZ_VERSION,
                                      tid == t.MZ_RECENT_ACTIVITY_LOG_REDACTED.id, role_id=viewer)
    if tid == MZ_COORDINATOR_LOOP.id:
        return env.metrics.coordinator_loop_rows()
    if tid == MZ_PEEK_DURATIONS.id:
        return env.metrics.peek_duration_rows()
    if tid == MZ_HYDRATION_STATUSES.id:
        return env.compute.hydration_rows()
    if tid == MZ_MATERIALIZATION_LAG.id:
        return env.compute.materialization_lag()
    if tid == t.MZ_OBJECT_ARRANGEMENT_SIZES.id:
        return env.compute.arrangement_size_rows()
    if tid == MZ_RECENT_STORAGE_USAGE.id:
        return env.storage.storage_usage_rows()
    mon = env.compute.replica_monitor
    if tid == t.MZ_CLUSTER_REPLICA_STATUSES.id:
        return mon.status_rows()
    if tid == t.MZ_CLUSTER_REPLICA_METRICS.id:
        return mon.metric_rows()
    if tid == t.MZ_CLUSTER_REPLICA_METRICS_HISTORY.id:
        return mon.metric_history_rows()
    if tid == t.MZ_CLUSTER_REPLICA_UTILIZATION.id:
        return mon.utilization_rows()
    if tid == t.MZ_CLUSTER_REPLICA_UTILIZATION_HISTORY.id:
        return mon.utilization_history_rows()
    if tid == t.MZ_SESSIONS.id:
        return activity.session_rows(env.activity)
    if tid == t.MZ_RECENT_ACTIVITY_LOG.id:
        return activity.activity_rows(env.activity, snap, MZ_VERSION, redacted=False)
    if tid == t.MZ_RECENT_ACTIVITY_LOG_REDACTED.id:
        return activity.activity_rows(env.activity, snap, MZ_VERSION, redacted=True)
    if tid == t.MZ_STORAGE_USAGE_BY_SHARD.id:
        now = dt.datetime.now(dt.timezone.utc)
        shards = sorted({r.shard_id for r in snap.storage_relations()})
        return [(i, shard, sum(p.bytes for p in env.persist.state(shard).parts), now)
                for i, shard in enumerate(shards, 1)]
    if tid == t.MZ_OBJECT_DEPENDENCIES.id:
        return dependency_rows(snap)
    if tid == t.MZ_FUNCTIONS.id:
        return function_rows()
    if tid == t.MZ_SOURCE_STATUSES.id:
        return env.sources.status_rows(snap)
    if tid == t.MZ_SOURCE_STATISTICS.id:
        return env.sources.statistics_rows(snap)
    return None


def dependency_rows(snap: CatalogSnapshot) -> list[tuple]:
    """``mz_object_dependencies``: (object, what it references directly): a view or
    materialized view references the relations its query names, an index its relation."""
    from sqlfront.sequence.objects import direct_references

    out = {(i.id, i.on_id) for i in snap.indexes.values()}
    for v in [*snap.views.values(), *snap.materialized_views.values()]:
        out |= {(v.id, ref) for ref in direct_references(snap, v)}
    return sorted(out)


def function_rows() -> list[tuple]:
    """``mz_functions``: one row per signature of the function registry (its scalar,
    aggregate, window and set-returning functions, under each SQL name). A result type
    computed from the arguments has no fixed ``return_type_id`` (NULL)."""
    from planner.functions import FUNCTIONS

    out = []
    entries = sorted(((n, f) for f in FUNCTIONS.values() for n in f.sql_names), key=lambda e: e[0])
    n = 0
    for name, f in entries:
        for s in f.sigs:
            n += 1
            fid = f"s{FUNCTION_ID_BASE + n}"
            # an aggregate's signature is a rule over its argument's type: ``any``
            args = [t.type_id(_type_name(a)) for a in getattr(s, "args", ("any",))]
            result = getattr(s, "result", None)
            ret = t.type_id(_type_name(result)) if isinstance(result, str) else None
            variadic = args[-1] if getattr(s, "variadic", False) and args else None
            out.append((fid, 10000 + FUNCTION_ID_BASE + n, "s2", name, args, variadic, ret, f.kind == "srf",
                        rbac.MZ_SYSTEM.id))
    return out


def _type_name(name: str) -> str:
    """A registry type name as pg_type names it (``text[]`` is ``_text``)."""
    return "_" + name[:-2] if name.endswith("[]") else name
