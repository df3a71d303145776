"""The SQL the console (and ``sqlfront top``) reads: only the introspection relations,
so whatever they show a user can query too."""

#: the console's own polling sessions' application_name (left out of its query lists)
INTERNAL_APP = "sqlfront_console_internal"

CLUSTERS_SQL = """
SELECT c.id AS cluster_id, c.name AS cluster, r.id AS replica_id, r.name AS replica, r.size,
       s.status, s.reason, s.updated_at, u.cpu_percent, u.memory_percent, m.memory_bytes
FROM mz_catalog.mz_clusters c
LEFT JOIN mz_catalog.mz_cluster_replicas r ON r.cluster_id = c.id
LEFT JOIN mz_internal.mz_cluster_replica_statuses s ON s.replica_id = r.id
LEFT JOIN mz_internal.mz_cluster_replica_utilization u ON u.replica_id = r.id AND u.process_id = 0
LEFT JOIN mz_internal.mz_cluster_replica_metrics m ON m.replica_id = r.id AND m.process_id = 0
ORDER BY c.name, r.name"""

UTILIZATION_SQL = """
SELECT c.name || '.' || r.name AS replica, h.occurred_at, h.cpu_percent, h.memory_percent
FROM mz_internal.mz_cluster_replica_utilization_history h
JOIN mz_catalog.mz_cluster_replicas r ON r.id = h.replica_id
JOIN mz_catalog.mz_clusters c ON c.id = r.cluster_id
WHERE h.process_id = 0
ORDER BY h.occurred_at"""

QUERIES_SQL = f"""
SELECT sql, authenticated_user, cluster_name, began_at, finished_at, finished_status, rows_returned,
       execution_strategy, error_message, application_name, execution_id, session_id
FROM mz_internal.mz_recent_activity_log
WHERE application_name <> '{INTERNAL_APP}'
ORDER BY began_at DESC
LIMIT 200"""

MATERIALIZED_VIEWS_SQL = """
SELECT m.id, m.name, c.name AS cluster, l.local_lag, l.global_lag,
       (SELECT count(*) FROM mz_internal.mz_hydration_statuses h WHERE h.object_id = m.id AND h.hydrated)
         AS hydrated_replicas
FROM mz_catalog.mz_materialized_views m
JOIN mz_catalog.mz_clusters c ON c.id = m.cluster_id
LEFT JOIN mz_internal.mz_materialization_lag l ON l.object_id = m.id
ORDER BY m.name"""

SESSIONS_SQL = """
SELECT s.id, s.connection_id, r.name AS role, s.client_ip, s.connected_at
FROM mz_internal.mz_sessions s
LEFT JOIN mz_catalog.mz_roles r ON r.id = s.role_id
ORDER BY s.connected_at"""
