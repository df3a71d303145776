"""persist through the wire: acknowledged writes are visible, UPDATE/DELETE as updates
computed on the replica, transactions at one timestamp, implicit transactions."""

from __future__ import annotations

import threading

import psycopg
import pytest


def test_every_acknowledged_insert_is_visible_to_the_next_read(server):
    with server.connect() as c:
        c.execute("CREATE TABLE acked (client int, i int)")
    missing = []

    def client(k):
        with server.connect() as c:
            for i in range(15):
                c.execute("INSERT INTO acked VALUES (%s, %s)", (k, i))
                n = c.execute("SELECT count(*) FROM acked WHERE client = %s AND i = %s", (k, i)).fetchone()[0]
                if n != 1:
                    missing.append((k, i, n))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert missing == []
    with server.connect() as c:
        assert c.execute("SELECT count(*) FROM acked").fetchone()[0] == 90


def test_update_and_delete_write_updates(conn):
    conn.execute("CREATE TABLE upd (k int NOT NULL, v text)")
    conn.execute("INSERT INTO upd VALUES (1, 'a'), (2, 'b'), (3, 'c'), (3, 'c')")
    cur = conn.execute("UPDATE upd SET v = v || '!' WHERE k >= 2")
    assert cur.rowcount == 3
    assert conn.execute("SELECT k, v FROM upd ORDER BY k, v").fetchall() == [(1, "a"), (2, "b!"), (3, "c!"), (3, "c!")]
    assert conn.execute("DELETE FROM upd WHERE k = 3").rowcount == 2
    assert conn.execute("DELETE FROM upd WHERE k = 42").rowcount == 0
    assert conn.execute("SELECT k, v FROM upd ORDER BY k").fetchall() == [(1, "a"), (2, "b!")]
    with pytest.raises(psycopg.errors.NotNullViolation):
        conn.execute("UPDATE upd SET k = NULL WHERE k = 1")
    assert conn.execute("UPDATE upd SET k = NULL WHERE false").rowcount == 0
    assert conn.execute("SELECT count(*) FROM upd").fetchone()[0] == 2
    conn.execute("INSERT INTO upd VALUES (4, NULL)")
    assert conn.execute("UPDATE upd SET v = 'x' WHERE v IS NULL").rowcount == 1
    assert conn.execute("SELECT k, v FROM upd ORDER BY k").fetchall() == [(1, "a"), (2, "b!"), (4, "x")]


def test_concurrent_updates_of_one_row_serialize(server):
    with server.connect() as c:
        c.execute("CREATE TABLE counter (n int)")
        c.execute("INSERT INTO counter VALUES (0)")

    def bump():
        with server.connect() as c:
            for _ in range(3):
                c.execute("UPDATE counter SET n = n + 1")

    threads = [threading.Thread(target=bump) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with server.connect() as c:
        assert c.execute("SELECT n FROM counter").fetchall() == [(9,)]


def test_commit_of_two_tables_is_one_timestamp(conn):
    conn.execute("CREATE TABLE ta (a int)")
    conn.execute("CREATE TABLE tb (b int)")
    conn.autocommit = False
    conn.execute("INSERT INTO ta VALUES (1)")
    conn.execute("INSERT INTO tb VALUES (2)")
    conn.commit()
    conn.autocommit = True
    assert conn.execute("SELECT (SELECT count(*) FROM ta), (SELECT count(*) FROM tb)").fetchone() == (1, 1)


def test_reads_in_a_transaction_share_one_timestamp(server, conn):
    conn.execute("CREATE TABLE snap (a int)")
    conn.execute("INSERT INTO snap VALUES (1)")
    conn.autocommit = False
    assert conn.execute("SELECT count(*) FROM snap").fetchone()[0] == 1
    with server.connect() as other:
        other.execute("INSERT INTO snap VALUES (2)")
    assert conn.execute("SELECT count(*) FROM snap").fetchone()[0] == 1
    conn.commit()
    assert conn.execute("SELECT count(*) FROM snap").fetchone()[0] == 2
    conn.commit()


def test_a_simple_query_is_one_implicit_transaction(conn):
    conn.execute("CREATE TABLE implicit (a int)")
    r = conn.pgconn.exec_(b"INSERT INTO implicit VALUES (1); SELECT 1/0")
    assert r.error_field(psycopg.pq.DiagnosticField.SQLSTATE) == b"22012"
    assert conn.execute("SELECT count(*) FROM implicit").fetchone()[0] == 0
    # A script sees its own writes.
    r = conn.pgconn.exec_(b"INSERT INTO implicit VALUES (1); SELECT count(*) FROM implicit")
    assert r.get_value(0, 0) == b"1"


def test_drop_table_under_a_view_needs_cascade(conn):
    conn.execute("CREATE TABLE base (a int)")
    conn.execute("CREATE VIEW over_base AS SELECT a FROM base")
    conn.execute("CREATE VIEW over_view AS SELECT a FROM over_base")
    with pytest.raises(psycopg.errors.DependentObjectsStillExist, match="still depended upon by view"):
        conn.execute("DROP TABLE base")
    with pytest.raises(psycopg.errors.DependentObjectsStillExist):
        conn.execute("DROP VIEW over_base")
    conn.execute("DROP TABLE base CASCADE")
    for name in ("base", "over_base", "over_view"):
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute(f"SELECT * FROM {name}")


def test_as_of_reads_at_a_timestamp(conn):
    import time

    conn.execute("CREATE TABLE asof (a int)")
    conn.execute("INSERT INTO asof VALUES (1)")
    t1 = int(conn.execute("SELECT mz_now()").fetchone()[0])
    time.sleep(0.05)
    conn.execute("INSERT INTO asof VALUES (2)")
    assert conn.execute(f"SELECT a FROM asof AS OF {t1}").fetchall() == [(1,)]
    assert int(conn.execute(f"SELECT mz_now() AS OF {t1}").fetchone()[0]) == t1  # mz_timestamp: text
    assert sorted(conn.execute(f"SELECT a FROM asof AS OF AT LEAST {t1}").fetchall()) in ([(1,)], [(1,), (2,)])
    with pytest.raises(psycopg.Error, match="could not find a valid timestamp"):
        conn.execute("SELECT a FROM asof AS OF 1")
    with pytest.raises(psycopg.Error, match="castable to a"):
        conn.execute("SELECT a FROM asof AS OF -1")
    assert conn.execute("SELECT count(*) FROM asof AS OF AT LEAST 1").fetchone()[0] in (0, 1, 2)


def test_insert_select_is_written_by_the_replica(conn):
    conn.execute("CREATE TABLE src (a int, b text)")
    conn.execute("CREATE TABLE dst (a int NOT NULL, b text)")
    conn.execute("INSERT INTO src VALUES (1, 'x'), (2, NULL), (3, 'z')")
    assert conn.execute("INSERT INTO dst SELECT a, b FROM src WHERE a > 1").rowcount == 2
    assert conn.execute("SELECT a, b FROM dst ORDER BY a").fetchall() == [(2, None), (3, "z")]
    conn.execute("INSERT INTO src VALUES (NULL, 'n')")
    with pytest.raises(psycopg.errors.NotNullViolation):
        conn.execute("INSERT INTO dst SELECT a, b FROM src")
    assert conn.execute("SELECT count(*) FROM dst").fetchone()[0] == 2
    conn.autocommit = False
    conn.execute("INSERT INTO dst SELECT a, b FROM src WHERE a = 1")
    conn.rollback()
    conn.autocommit = True
    assert conn.execute("SELECT count(*) FROM dst").fetchone()[0] == 2


def test_compaction_merges_small_parts_and_consolidates_retractions(server, conn):
    from server import wait_for
    from persist import ShardState, SqliteConsensus

    conn.execute("CREATE TABLE compacted (a int)")
    for i in range(12):
        conn.execute("INSERT INTO compacted VALUES (%s)", (i,))
    conn.execute("DELETE FROM compacted WHERE a < 6")
    expected = [(i,) for i in range(6, 12)]
    assert conn.execute("SELECT a FROM compacted ORDER BY a").fetchall() == expected
    import sqlite3

    catalog = sqlite3.connect(str(server.data_dir / "catalog.db"))
    shard = catalog.execute("SELECT shard_id FROM tables WHERE name = 'compacted'").fetchone()[0]
    catalog.close()
    c = SqliteConsensus(str(server.data_dir / "consensus.db"))

    def consolidated():
        # 13 parts (12 INSERTs and a DELETE) become one part of plain rows.
        st = ShardState.decode(c.head(shard)[1])
        return st.row_count() == 6 and len(st.parts) == 1 and not st.parts[0].retractions

    assert wait_for(consolidated, timeout=90)
    c.close()
    assert conn.execute("SELECT a FROM compacted ORDER BY a").fetchall() == expected


@pytest.fixture(scope="module")
def frozen_server(tmp_path_factory):
    """A server of its own for the SIGSTOP tests: nothing else may run on the replica
    they freeze."""
    from server import Server

    server = Server(tmp_path_factory.mktemp("frozen") / "mzdata").start()
    yield server
    server.stop()


def test_a_frozen_peek_survives_compaction_and_gc(frozen_server):
    """The sharded-persist-reads seed's bug: a read whose replica is frozen (SIGSTOP) while
    compaction replaces its parts and GC runs still returns the right rows: its read hold
    keeps the retired parts until it ends."""
    with frozen_server.connect() as conn:
        _frozen_peek(frozen_server, conn)


def test_a_streaming_peek_survives_its_replica_frozen_mid_stream(frozen_server):
    """A replica frozen (SIGSTOP) for longer than its ping timeout while a client is
    half-way through a streamed result: the stream waits for it and goes on after SIGCONT
    (it used to fail with 58000 as soon as the replica looked unhealthy)."""
    import os
    import signal

    import psycopg

    from server import replica_jvms

    server = frozen_server
    with server.connect() as conn:
        conn.execute("CREATE TABLE streamed (x int)")
        conn.execute("INSERT INTO streamed SELECT * FROM generate_series(1, 300000)")
    pids = replica_jvms(server.data_dir)
    with psycopg.connect(server.url) as c:
        cur = c.cursor(name="frozen_stream")
        cur.execute("SELECT x FROM streamed")
        n = len(cur.fetchmany(1000))
        for p in pids:
            os.kill(p, signal.SIGSTOP)
        timer = threading.Timer(7, lambda: [os.kill(p, signal.SIGCONT) for p in pids])
        timer.start()
        try:
            while rows := cur.fetchmany(50_000):
                n += len(rows)
        finally:
            timer.join()
    assert n == 300_000


def _frozen_peek(server, conn):
    import os
    import signal
    import time

    from persist import FileBlob
    from server import replica_jvms, wait_for

    # Rows too big to be inline: the parts are files in Blob, which GC must keep for the read.
    conn.execute("CREATE TABLE frozen (a int, pad text)")
    for i in range(8):
        conn.execute("INSERT INTO frozen VALUES (%s, repeat('x', 5000))", (i,))
    consensus, state = _shard_state(server, "frozen")
    blob = FileBlob(server.data_dir / "blob")
    before = {p.key for p in state().parts}
    pids = replica_jvms(server.data_dir)
    assert pids
    result = {}
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    try:
        def read():
            with server.connect() as c:
                result["rows"] = c.execute("SELECT a FROM frozen ORDER BY a").fetchall()

        # No read of the new table yet: the server's leased reader appears in the shard's
        # state when the peek takes its read hold (then it waits on the frozen replica).
        assert state().readers == ()
        reader = threading.Thread(target=read)
        reader.start()
        assert wait_for(lambda: state().readers != (), timeout=60), "the peek took no read hold"
        for i in range(8, 12):
            conn.execute("INSERT INTO frozen VALUES (%s, repeat('x', 5000))", (i,))
        assert wait_for(lambda: not before & {p.key for p in state().parts}, timeout=30), "no compaction"
        time.sleep(3)  # maintenance rounds: GC would delete the retired parts now
        assert before <= {k for r in state().retired for k in r.keys}
        assert all(blob.get(k) is not None for k in before), "GC deleted parts a read holds"
    finally:
        for p in pids:
            os.kill(p, signal.SIGCONT)
    reader.join(120)
    assert result["rows"] == [(i,) for i in range(8)]
    assert wait_for(lambda: not state().retired, timeout=30), "retired parts never collected"
    # GC commits the state without the retired entries first, then deletes their parts
    # (persist.gc.delete_and_truncate): the deletes may trail the state by a moment
    assert wait_for(lambda: all(blob.get(k) is None for k in before), timeout=30), "retired parts never deleted"
    consensus.close()


def _shard_state(server, table: str):
    """The server's Consensus (to close) and a function reading ``table``'s shard state."""
    import sqlite3

    from persist import ShardState, SqliteConsensus

    catalog = sqlite3.connect(str(server.data_dir / "catalog.db"))
    shard = catalog.execute("SELECT shard_id FROM tables WHERE name = ?", (table,)).fetchone()[0]
    catalog.close()
    consensus = SqliteConsensus(str(server.data_dir / "consensus.db"))
    return consensus, lambda: ShardState.decode(consensus.head(shard)[1])


def test_a_read_waiting_for_a_replica_keeps_its_timestamp(server, conn):
    """A peek holds its inputs at its timestamp when it picks it (Materialize's timestamp
    selection), not when a replica scans them: while it waits for a replica (or a
    materialized view's upper), writes and maintenance rounds move past that timestamp,
    and the read still answers at it instead of failing with "could not find a valid
    timestamp" (CI saw that after a restart, waiting for a view)."""
    import time

    from server import wait_for

    conn.execute("CREATE TABLE waited (a int)")
    conn.execute("INSERT INTO waited VALUES (1)")
    # Its one replica is a Spark Connect address nothing listens on: never healthy.
    conn.execute("CREATE CLUSTER waiting REPLICAS (gone (REMOTE ('127.0.0.1:9'), TOKEN 'x'))")
    consensus, state = _shard_state(server, "waited")
    result = {}

    def read():
        try:
            with server.connect(options="-c cluster=waiting") as c:
                result["rows"] = c.execute("SELECT sum(a) FROM waited").fetchall()
        except psycopg.Error as e:
            result["error"] = e

    reader = threading.Thread(target=read)
    try:
        assert state().readers == ()  # no read of the new table yet
        reader.start()
        assert wait_for(lambda: state().readers != (), timeout=60), "the peek took no read hold"
        later = int(conn.execute("SELECT mz_now()::text").fetchone()[0])  # after the peek's timestamp
        # Past the compaction window and persist's since step (1 s + 5 s): without the
        # hold, since would now be above the peek's timestamp.
        end = time.monotonic() + 8
        while time.monotonic() < end:
            conn.execute("INSERT INTO waited VALUES (10)")
            time.sleep(0.25)
        assert state().since < later
        rid = conn.execute("SELECT r.id FROM mz_cluster_replicas r JOIN mz_clusters c ON c.id = r.cluster_id"
                           " WHERE c.name = 'quickstart' AND r.name = 'r1'").fetchone()[0]
        d = server.data_dir / "replicas" / rid
        port, token = (d / "port").read_text().strip(), (d / "token").read_text().strip()
        conn.execute(f"CREATE CLUSTER REPLICA waiting.r REMOTE ('127.0.0.1:{port}'), TOKEN '{token}'")
        reader.join(120)
        assert result == {"rows": [(1,)]}  # its timestamp: before the writes
    finally:
        conn.execute("DROP CLUSTER waiting CASCADE")
        reader.join(120)
        conn.execute("DROP TABLE waited")
        consensus.close()


def test_reads_consolidate_retractions_of_every_type(conn):
    """A retraction cancels its row whatever the column types (NULLs equal NULLs)."""
    conn.execute("CREATE TABLE typed (i int, n numeric(10,2), t text, d date, ts timestamp, iv interval, "
                 "b bool, arr int[])")
    conn.execute("INSERT INTO typed VALUES (1, 1.50, 'x', '2024-01-02', '2024-01-02 03:04:05', '1 day', true, "
                 "ARRAY[1,2]), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL), (2, NULL, NULL, NULL, NULL, NULL, "
                 "NULL, NULL), (3, 3.00, 'z', '2024-03-04', '2024-03-04 00:00:00', '2 hours', false, ARRAY[3])")
    assert conn.execute("DELETE FROM typed WHERE i = 2").rowcount == 2
    assert conn.execute("UPDATE typed SET t = 'y' WHERE i = 1").rowcount == 1
    rows = conn.execute("SELECT i, t, arr FROM typed ORDER BY i").fetchall()
    assert rows == [(1, "y", [1, 2]), (3, "z", [3])]


def test_parameterized_writes_through_the_extended_protocol(conn):
    """psycopg sends Parse/Bind/Describe/Execute for each execute: a write without
    RETURNING is described as returning no rows without being planned twice, and its
    errors still come from Execute with their SQLSTATE; with RETURNING the columns are
    described."""
    conn.execute("CREATE TABLE xp (k int NOT NULL, v text)")
    for i in range(8):  # past psycopg's prepare threshold: prepared statements too
        conn.execute("INSERT INTO xp VALUES (%s, %s)", (i, f"v{i}"))
    cur = conn.execute("INSERT INTO xp VALUES (%s, %s) RETURNING k, v", (100, "r"))
    assert [d.name for d in cur.description] == ["k", "v"] and cur.fetchall() == [(100, "r")]
    cur = conn.execute("UPDATE xp SET v = %s WHERE k = %s", ("u", 3))
    assert cur.description is None and cur.rowcount == 1
    with pytest.raises(psycopg.errors.UndefinedTable):
        conn.execute("INSERT INTO no_such_table VALUES (%s)", (1,))
    with pytest.raises(psycopg.errors.NotNullViolation):
        conn.execute("INSERT INTO xp VALUES (%s, %s)", (None, "x"))
    assert conn.execute("SELECT count(*), sum(k) FROM xp").fetchone() == (9, 128)
    assert conn.execute("SELECT v FROM xp WHERE k = 3").fetchone() == ("u",)


def test_a_prepared_insert_follows_search_path_and_catalog_changes(conn):
    """A session keeps the plan of a prepared INSERT of parameters for its next
    Executes; a new search_path or catalog makes it plan again."""
    conn.execute("CREATE SCHEMA sp1")
    conn.execute("CREATE SCHEMA sp2")
    try:
        conn.execute("CREATE TABLE sp1.t (k int)")
        conn.execute("CREATE TABLE sp2.t (k int, v text NOT NULL DEFAULT 'd')")
        conn.execute("SET search_path = sp1")
        for i in range(6):  # past psycopg's prepare threshold
            conn.execute("INSERT INTO t VALUES (%s)", (i,))
        conn.execute("SET search_path = sp2")
        conn.execute("INSERT INTO t VALUES (%s)", (100,))
        assert conn.execute("SELECT k, v FROM sp2.t").fetchall() == [(100, "d")]
        conn.execute("SET search_path = sp1")
        conn.execute("DROP TABLE sp1.t")
        conn.execute("CREATE TABLE sp1.t (k text)")
        conn.execute("INSERT INTO t VALUES (%s)", (7,))
        assert conn.execute("SELECT k FROM sp1.t").fetchall() == [("7",)]
    finally:  # the server is shared: leave no schema behind (psql's \dn golden test lists them)
        conn.execute("SET search_path = public")
        conn.execute("DROP SCHEMA sp1 CASCADE")
        conn.execute("DROP SCHEMA sp2 CASCADE")
