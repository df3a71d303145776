"""Issue 28: a full disk under the data directory (a small tmpfs; root only). Writes fail
with 53100 (disk_full) and lose nothing, reads keep working, and once space is freed
writes succeed again with every acknowledged row still there.

Reads on a full disk: the timestamp oracle's durable mark cannot rise, so reads stay at
or below it (still above every applied write); a process's first read of a table
registers its reader in Consensus, which a full disk refuses (53100) like a write. A
read the replica shuffles writes shuffle files to its scratch space, which is not in the
data directory (``--scratch-dir``, default the system's temp directory:
``spark_exec.orchestrator``), as Materialize's clusterd scratch is apart from persist's."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psycopg
import pytest
from chaos.disk import fill, small_disk
from server import Server, replica_jvms

from catalog.oracle import TimestampOracle
from spark_exec.orchestrator import SCRATCH_RECORD

pytestmark = pytest.mark.slow

#: the data directory's tmpfs: room for the catalog, Consensus and the replica's files
TMPFS_BYTES = 64 << 20


@pytest.fixture
def on_small_disk(tmp_path):
    d = tmp_path / "disk"
    with small_disk(d, TMPFS_BYTES) as mounted:
        if not mounted:
            pytest.skip("needs root (mount) for a small tmpfs")
        # two cores: the replica shuffles an aggregate of a table in Blob parts into two
        # partitions, writing shuffle files
        s = Server(d / "mzdata", "--bootstrap-replica-size", "2")
        s.log_path = tmp_path / "server.log"  # kept after the tmpfs goes
        s.start()
        try:
            yield s, d
        finally:
            s.stop()
            for pid in replica_jvms(s.data_dir):
                os.kill(pid, signal.SIGKILL)


def test_writes_fail_with_53100_on_a_full_disk_reads_go_on_and_nothing_is_lost(on_small_disk):
    s, d = on_small_disk
    scratch = Path((s.data_dir / "replicas" / SCRATCH_RECORD).read_text().strip())
    assert scratch.is_dir() and d not in scratch.parents
    with s.connect() as c:
        c.execute("CREATE TABLE df (a int)")
        c.execute("INSERT INTO df VALUES (1), (2)")
        # 5000 rows the replica writes as Parquet parts in Blob: a scan of several
        # partitions, which an aggregate's exchange shuffles
        c.execute("CREATE TABLE g (n int)")
        c.execute("INSERT INTO g SELECT generate_series(1, 1000)")
        c.execute("CREATE TABLE big (a int)")
        c.execute("INSERT INTO big SELECT x.n * 1000 + y.n FROM g x, g y WHERE x.n <= 5")
        shuffled = "SELECT a % 3, count(*) FROM big GROUP BY 1 ORDER BY 1"
        expected = c.execute(shuffled).fetchall()
        assert sum(n for _, n in expected) == 5000
        # this process's first read of the table registers its reader in the shard's
        # state (a Consensus write, which a full disk refuses); later reads write nothing
        assert c.execute("SELECT count(*) FROM df").fetchone() == (2,)
        filler = fill(d)
        acked = [1, 2]
        try:
            with pytest.raises(psycopg.errors.DiskFull):
                for i in range(3, 200):  # small writes may fit in what the filler left
                    c.execute("INSERT INTO df VALUES (%s)", (i,))
                    acked.append(i)
            # past the oracle's durable window (WINDOW_MS): the read's timestamp would
            # need the mark raised, on a full disk
            time.sleep(1.5 * TimestampOracle.WINDOW_MS / 1000)
            assert [r[0] for r in c.execute("SELECT a FROM df ORDER BY a")] == acked
            # before the scratch space left the data directory: 53100 "could not write
            # to the replica's scratch space"
            assert c.execute(shuffled).fetchall() == expected
        finally:
            os.unlink(filler)
        c.execute("INSERT INTO df VALUES (1000)")
        assert [r[0] for r in c.execute("SELECT a FROM df ORDER BY a")] == acked + [1000]
    s.stop()
    assert not scratch.exists()  # removed at shutdown
