"""The data directory is environmentd's alone (issue 33, item 6): its catalog, persist
state and parts, replica logs and tokens are readable by no other local user.

Files are made private as they are created, by the process umask (inherited by the
replica processes; Spark's own Parquet writes follow Hadoop's ``fs.permissions.umask-mode``,
which the orchestrator sets to the same), not by fixing modes afterwards, so nothing is
readable even for a moment. A data directory written by an earlier version is tightened
once at startup.

Data directory layout::

    catalog.db        durable catalog and timestamp oracle (sqlite)
    consensus.db      persist Consensus (sqlite)
    txns.db           the group commit's record of multi-table transactions (sqlite)
    blob/             persist Blob: Parquet parts, one folder per shard
    environment_id    this environment's id (names its persist readers across restarts)
    persist_pubsub    HOST:PORT of the persist PubSub service while it runs and, on the
                      next line, its token (mode 0600; for other processes of this data
                      directory: ``sqlfront persist-write``)
    replicas/<id>/    each local replica's log and pid file (its Spark scratch space is
                      elsewhere: ``--scratch-dir``, ``spark_exec.orchestrator``)
"""

from __future__ import annotations

import os
from pathlib import Path

#: no permission for group and others: new files are 0600, new directories 0700
PRIVATE_UMASK = 0o077


def make_private(data_dir: Path) -> None:
    """Set this process's umask to ``PRIVATE_UMASK``, create ``data_dir`` (mode 0700) if
    it is missing, and take the group and other permissions off it and everything under
    it (symlinks are not followed).

    Raises:
        OSError if ``data_dir`` cannot be created or a mode cannot be changed (a file
        owned by another user)."""
    os.umask(PRIVATE_UMASK)
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    for root, dirs, files in os.walk(data_dir):
        for name in (root, *(os.path.join(root, n) for n in dirs + files)):
            st = os.lstat(name)
            if st.st_mode & PRIVATE_UMASK and not os.path.islink(name):
                os.chmod(name, st.st_mode & 0o7700)
