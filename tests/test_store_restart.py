"""Issue 28: the shared store (PostgreSQL: catalog, Consensus, timestamp oracle) restarts
under a running server. A SUBSCRIBE keeps going through the restart, as a Materialize
SUBSCRIBE does through a blip of its metadata store (persist retries), and every write
acknowledged around it comes out once; a statement that needs the store while it is down
fails with 08006 connection_failure (a lost upstream, as postgres_fdw reports one), not
XX000. One environmentd that runs no replica (``--clusters`` names none): nothing here
needs one."""

from __future__ import annotations

import os
import signal

import psycopg
import pytest
from conftest import new_database
from server import Server, fetch_until, free_port, replica_jvms, wait_for

from pgconn import ConnectionPool, _closed_by_server

pytestmark = pytest.mark.slow


@pytest.fixture
def on_own_postgres(tmp_path):
    from pg_reference import PostgresReference

    pg = PostgresReference(tmp_path / "pg", free_port()).start()  # a fixed port: it restarts on it
    url = pg.url
    s = Server(tmp_path / "mzdata", "--catalog-url", url, "--persist-consensus-url", url,
               "--timestamp-oracle-url", url, "--persist-blob-url", str(tmp_path / "blob"),
               "--catalog-key-file", str(tmp_path / "catalog.key"), "--clusters", "none")
    try:
        s.start(wait_replicas=False)
        yield s, pg
    finally:
        s.stop()
        for pid in replica_jvms(s.data_dir):
            os.kill(pid, signal.SIGKILL)
        pg.stop()


def test_a_subscribe_keeps_going_through_a_store_restart_and_a_write_meanwhile_fails_with_08006(on_own_postgres):
    s, pg = on_own_postgres
    with s.connect() as sub, s.connect() as w:
        w.execute("CREATE TABLE followed (x int)")
        sub.execute("BEGIN")
        # no snapshot: it would be a peek, and no replica runs
        sub.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT x FROM followed) WITH (PROGRESS, SNAPSHOT = false)")
        w.execute("INSERT INTO followed VALUES (1)")
        assert [(r[2], r[3]) for r in fetch_until(sub, "c", 1)] == [(1, 1)]
        pg.stop()
        try:
            with pytest.raises(psycopg.Error) as e:
                w.execute("INSERT INTO followed VALUES (2)")
            assert e.value.sqlstate == "08006", e.value
            # the subscription waits for the store meanwhile: no rows, no error
            assert [r for r in sub.execute("FETCH ALL c WITH (timeout = '1s')") if not r[1]] == []
        finally:
            pg.start()
        w.execute("INSERT INTO followed VALUES (3)")
        assert [(r[2], r[3]) for r in fetch_until(sub, "c", 1)] == [(1, 3)]
        sub.execute("ROLLBACK")


def test_the_pool_drops_an_idle_connection_its_server_closed(postgres):
    """A restart closes every connection idle in the pool: the next call gets a new one
    instead of failing with 57P01 (here the backend is terminated, as a restart does)."""
    pool = ConnectionPool(new_database(postgres))
    try:
        with pool.connection() as c:
            pid = c.info.backend_pid
        with postgres.connect() as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        assert wait_for(lambda: _closed_by_server(pool._idle[0]), 10, 0.05)
        with pool.connection() as c:
            assert c.info.backend_pid != pid and c.execute("SELECT 1").fetchone() == (1,)
    finally:
        pool.close()
