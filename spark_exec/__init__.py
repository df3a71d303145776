"""spark_exec: runs plans on replicas.

Owns replica orchestration (``orchestrator``: Spark Connect server processes),
per-replica health (``replica``), the per-cluster ClusterCoordinator that sequences
peeks onto replicas (``cluster_coordinator``), lowering plans to DataFrames
(``lower``, the only module that knows DataFrames), mapping Spark errors to
SQLSTATEs (``errors``) and reading files for COPY (``load``). It parses no SQL.
"""
