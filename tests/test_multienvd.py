"""Two environmentd processes sharing persist Consensus and the timestamp oracle on a
real PostgreSQL (and one Blob directory): concurrent writes to one table through both,
none lost, each acknowledged write visible through the other process's next read.

The first test keeps the catalog per process: each process has its own data directory
and catalog.db, and the test creates the table in both with the same DDL, in the same
order, so both catalogs give it the same id and persist shard (ids and shard ids are
allocated in sequence). The second CREATE finds the shard already in Consensus and keeps
it (``PersistClient.create_shard`` is a no-op then). The second test shares the catalog
too (``--catalog-url``).
"""

from __future__ import annotations

import threading

import psycopg
import pytest

from conftest import new_database
from server import Server, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def two_envds(tmp_path, postgres):
    # the test server trusts every local connection: the password is only there to be
    # kept out of the logs
    url = new_database(postgres).replace("postgresql://postgres@", "postgresql://postgres:pw-not-logged@")
    shared = ("--persist-consensus-url", url, "--timestamp-oracle-url", url,
              "--persist-blob-url", str(tmp_path / "blob"))
    a = Server(tmp_path / "a" / "mzdata", *shared)
    b = Server(tmp_path / "b" / "mzdata", *shared)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    try:
        a.start()
        b.start()
        yield a, b
    finally:
        a.stop()
        b.stop()
    for s in (a, b):
        log = s.log_path.read_text(errors="replace")
        assert "persist consensus: postgresql://postgres:****@" in log and "pw-not-logged" not in log


def test_concurrent_inserts_through_two_envds_are_all_visible_through_the_other(two_envds):
    a, b = two_envds
    for s in (a, b):
        with s.connect() as c:
            c.execute("CREATE TABLE shared (writer int, i int)")
    per_writer = 12
    missing, errors = [], []

    def writer(k, mine, other):
        try:
            with mine.connect() as w, other.connect() as r:
                for i in range(per_writer):
                    w.execute("INSERT INTO shared VALUES (%s, %s)", (k, i))
                    # acknowledged: the other process's next read must see it
                    n = r.execute("SELECT count(*) FROM shared WHERE writer = %s AND i = %s", (k, i)).fetchone()[0]
                    if n != 1:
                        missing.append((k, i, n))
        except Exception as e:  # reported below, not lost in the thread
            errors.append(repr(e))

    threads = [threading.Thread(target=writer, args=(k, *((a, b) if k % 2 == 0 else (b, a)))) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and missing == []
    for s in (a, b):
        with s.connect() as c:
            rows = c.execute("SELECT writer, i FROM shared ORDER BY 1, 2").fetchall()
        assert rows == [(k, i) for k in range(4) for i in range(per_writer)]
    # UPDATE and DELETE (compare-and-append on the upper they read) through each process
    with a.connect() as ca, b.connect() as cb:
        assert ca.execute("UPDATE shared SET i = i + 100 WHERE writer = 1").rowcount == per_writer
        assert cb.execute("SELECT count(*) FROM shared WHERE i >= 100").fetchone() == (per_writer,)
        assert cb.execute("DELETE FROM shared WHERE writer = 0").rowcount == per_writer
        assert ca.execute("SELECT count(*) FROM shared").fetchone() == (3 * per_writer,)


def test_a_shared_catalog_is_followed_by_the_other_envd(tmp_path, postgres):
    """With --catalog-url too: both processes boot at once on an empty catalog (one
    bootstraps quickstart, the other's bootstrap conflicts, follows and finds it there),
    DDL through one is seen by the other, and writes through either reach both. Neither
    lists clusters (--clusters): one of them takes quickstart's lease and runs it, the
    other names it as the owner."""
    url = new_database(postgres)
    shared = ("--catalog-url", url, "--persist-consensus-url", url, "--timestamp-oracle-url", url,
              "--persist-blob-url", str(tmp_path / "blob"), "--catalog-key-file", str(tmp_path / "catalog.key"))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = Server(tmp_path / "a" / "mzdata", *shared), Server(tmp_path / "b" / "mzdata", *shared)
    errors = []

    def start(s):
        try:
            s.start()
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=start, args=(s,)) for s in (a, b)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        owners = {f"127.0.0.1:{s.port}": s for s in (a, b)}
        with a.connect() as c:
            owner = owners[c.execute("SELECT environmentd FROM mz_clusters WHERE name = 'quickstart'").fetchone()[0]]
        other = b if owner is a else a
        with owner.connect() as ca, other.connect() as cb:
            for c in (ca, cb):
                assert c.execute("SELECT name, environmentd FROM mz_clusters").fetchall() == \
                    [("quickstart", f"127.0.0.1:{owner.port}")]
            ca.execute("CREATE TABLE from_a (x int)")
            assert wait_for(lambda: cb.execute("SELECT count(*) FROM mz_tables WHERE name = 'from_a'").fetchone()[0],
                            10, 0.05)
            cb.execute("INSERT INTO from_a VALUES (1), (2)")
            assert ca.execute("SELECT sum(x) FROM from_a").fetchone() == (3,)
            cb.execute("CREATE TABLE from_b (y int)")
            assert wait_for(lambda: ca.execute("SELECT count(*) FROM mz_tables WHERE name = 'from_b'").fetchone()[0],
                            10, 0.05)
            ca.execute("INSERT INTO from_b VALUES (5)")
            assert ca.execute("SELECT y FROM from_b").fetchall() == [(5,)]
            with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as e:
                cb.execute("SELECT y FROM from_b")  # quickstart runs in the owner only
            assert f"owned by the environmentd at 127.0.0.1:{owner.port}" in str(e.value)
            # ids come from the one log: no table id was handed out twice
            ids = ca.execute("SELECT id FROM mz_tables WHERE name IN ('from_a', 'from_b')").fetchall()
            assert len(set(ids)) == 2
    finally:
        a.stop()
        b.stop()


def test_a_shared_consensus_with_a_private_blob_is_refused_at_start(tmp_path, postgres):
    """Issue 27: two ``sqlfront serve`` with one --persist-consensus-url and no
    --persist-blob-url (each its DATA_DIR/blob): the second is refused at once, naming the
    flag, instead of failing every read of the first's writes with "Path does not exist"."""
    import subprocess
    import sys

    from server import ROOT

    url = new_database(postgres)
    a = Server(tmp_path / "a" / "mzdata", "--persist-consensus-url", url)
    (tmp_path / "a").mkdir()
    try:
        a.start(wait_replicas=False)
        b = subprocess.run([sys.executable, "-m", "sqlfront.cli", "serve", "--listen", "127.0.0.1:0",
                            "--data-dir", str(tmp_path / "b" / "mzdata"), "--persist-consensus-url", url],
                           cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    finally:
        a.stop()
    assert b.returncode != 0
    assert f"processes whose Blob is {(tmp_path / 'a' / 'mzdata' / 'blob').resolve().as_uri()}" in b.stderr, b.stderr
    assert "--persist-blob-url" in b.stderr
