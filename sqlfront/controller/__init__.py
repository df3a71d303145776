"""The controllers environmentd wires together, as Materialize's adapter has them:

- ``storage``: persist (its shards, Blob, Consensus and PubSub), the group commit's
  writer, read holds, table locks, the maintenance and compaction loops, and recovery
  at boot (Materialize's storage controller);
- ``compute``: which clusters this process runs (cluster leases), one
  ``ClusterCoordinator`` per cluster with its arrangements and materializations, and
  replica status (Materialize's compute controller);
- ``effects``: what each committed catalog op does to the two (Materialize's catalog
  implications).

``sqlfront.environment.Environment`` builds them and hands each the few callables it
needs of the other; neither imports the other.
"""
