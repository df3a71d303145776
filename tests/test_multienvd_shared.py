"""What two environmentd processes share beyond tables (issue 13's remaining gaps), on a
real PostgreSQL, through the wire:

- sequences: concurrent ``nextval`` and serial INSERTs through both processes never hand
  out one value twice (the values live in the shared catalog's database);
- PubSub: a SUBSCRIBE in B sees a write through A by a push (B's
  ``persist_pubsub_received_total{applied="clean"}`` grows), A's server forwarding its
  pushes to B's; and ``sqlfront persist-write`` on the shared store reaches both;
- a restart of A (after SIGKILL) drops the temporary schemas of A's earlier run, never
  those of B's live sessions, and deletes only the leaked parts its rule allows.

A runs ``--clusters quickstart``, B ``--clusters cb``: one replica JVM each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psycopg
import pytest

from conftest import new_database
from server import (ROOT, Server, fetch_until, free_port, metric_value, replica_jvms, seen_by,
                    shared_shard_state, start_owner_pair, wait_for)

pytestmark = pytest.mark.slow

CLEAN = 'persist_pubsub_received_total{applied="clean"}'


@pytest.fixture(scope="module")
def envds(tmp_path_factory, postgres):
    d = tmp_path_factory.mktemp("shared")
    url = new_database(postgres)
    # The default lease (10 s), and B takes no expired lease (no --takeover): no test here
    # moves a cluster, and A's restart must find quickstart still its own.
    shared = ("--catalog-url", url, "--persist-consensus-url", url, "--timestamp-oracle-url", url,
              "--persist-blob-url", str(d / "blob"), "--catalog-key-file", str(d / "catalog.key"))
    (d / "a").mkdir()
    (d / "b").mkdir()
    ports = {"a": free_port(), "b": free_port()}
    a = Server(d / "a" / "mzdata", *shared, "--clusters", "quickstart", "--metrics-listen", f"127.0.0.1:{ports['a']}")
    b = Server(d / "b" / "mzdata", *shared, "--clusters", "cb", "--metrics-listen", f"127.0.0.1:{ports['b']}")
    for s, p in ((a, ports["a"]), (b, ports["b"])):
        s.metrics_url = f"http://127.0.0.1:{p}/metrics"
    try:
        start_owner_pair(a, b)  # a bootstraps quickstart; b waits for cluster cb
        for s in (a, b):
            with s.connect() as c:
                assert wait_for(lambda: {r[0] for r in c.execute("SELECT status FROM mz_cluster_replicas")}
                                == {"healthy"}, 180, 0.3)
        yield a, b, url, d
    finally:
        for s in (a, b):
            s.stop()
            for pid in replica_jvms(s.data_dir):
                os.kill(pid, signal.SIGKILL)


def on_b(b: Server, **kw) -> psycopg.Connection:
    return psycopg.connect(b.url, autocommit=True, options="-c cluster=cb", **kw)



def test_nextval_and_serial_through_both_processes_never_repeat(envds):
    a, b, url, _ = envds
    with a.connect() as c:
        c.execute("CREATE SEQUENCE shared_seq")
        c.execute("CREATE TABLE ser (id serial, w int)")
    seen_by(b, "ser")
    seen_by(b, "shared_seq")
    values, errors = [], []

    def run(k: int, s: Server) -> None:
        try:
            with (s.connect() if s is a else on_b(s)) as c:
                for _ in range(25):
                    values.append(c.execute("SELECT nextval('shared_seq')").fetchone()[0])
                    c.execute("INSERT INTO ser (w) VALUES (%s), (%s)", (k, k))
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=run, args=(k, a if k % 2 else b)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(values) == list(range(1, 101))  # 100 values, none twice
    with a.connect() as c:
        ids = [r[0] for r in c.execute("SELECT id FROM ser").fetchall()]
        assert sorted(ids) == list(range(1, 201))
        # setval through one process is what the other's next nextval continues from
        c.execute("SELECT setval('shared_seq', 1000)")
    with on_b(b) as c:
        assert c.execute("SELECT nextval('shared_seq')").fetchone() == (1001,)
        c.execute("DROP SEQUENCE shared_seq")
    with psycopg.connect(url, autocommit=True) as c:  # the dropped sequence's value goes with it
        assert wait_for(lambda: c.execute("SELECT count(*) FROM sequence_values").fetchone() == (1,), 10, 0.05)


def test_alter_table_add_column_keeps_the_rows_when_reads_fence_the_upper(envds):
    # Found by the chaos workload (issue 28): with a shared oracle a read advances the
    # shard's upper past its as_of, so the copy's own read moved the upper its seal
    # expected, and the sealed retry read above a sealed shard: XX000 "shard is sealed"
    a, b, _, _ = envds
    with a.connect() as c:
        c.execute("CREATE TABLE widen (k int, v int)")
        c.execute("INSERT INTO widen VALUES (1, 10), (2, 20)")
        assert c.execute("SELECT count(*) FROM widen").fetchone() == (2,)
        c.execute("ALTER TABLE widen ADD COLUMN w int")
        c.execute("INSERT INTO widen VALUES (3, 30, 300)")
    seen_by(b, "widen")
    with on_b(b) as c:
        assert wait_for(lambda: c.execute("SELECT k, v, w FROM widen ORDER BY k").fetchall()
                        == [(1, 10, None), (2, 20, None), (3, 30, 300)], 30, 0.2)
        c.execute("DROP TABLE widen")


def test_a_read_in_b_of_a_table_a_is_rewriting_waits_for_the_rewrite(envds):
    """Found by the chaos workload (issue 28): an ALTER TABLE in A seals the table's shard,
    copies its rows, then commits the catalog; a read in B meanwhile (B's catalog still
    names the sealed shard) fenced it and failed with XX000 "shard is sealed". It waits
    for the catalog as a write does (``writes.replanned``): here the rewrite fails and
    unseals the shard (``alter._reopen``), and the read answers from it."""
    from catalog.durable_postgres import PostgresCatalogStore
    from persist import open_consensus
    from persist.write import seal, unseal

    a, b, url, _ = envds
    with a.connect() as c:
        c.execute("CREATE TABLE rewritten (x int)")
        c.execute("INSERT INTO rewritten VALUES (1)")
    seen_by(b, "rewritten")
    store = PostgresCatalogStore(url)
    shard = next(t.shard_id for t in store.load().tables.values() if t.name == "rewritten")
    store.close()
    consensus = open_consensus(url)
    seal(consensus, shard, None)  # as A's ALTER TABLE does before its copy
    got: list = []
    with on_b(b) as c:
        reading = threading.Thread(target=lambda: got.append(_answer(c, "SELECT x FROM rewritten")))
        reading.start()
        try:
            reading.join(3)  # time for the read to meet the seal (before the fix: XX000 at once)
        finally:
            unseal(consensus, shard)
            reading.join(60)
        assert got == [[(1,)]]
    consensus.close()


def test_a_cursor_and_an_insert_select_in_b_of_a_table_a_is_rewriting_wait_for_it(envds):
    """As the SELECT above (issue 28): a cursor's first FETCH (its peek opens there, over
    the plan DECLARE made; before: XX000 "shard is sealed") and an INSERT ... SELECT
    (``writes.insert`` is ``replanned``) reading the table whose shard A's ALTER TABLE
    sealed wait for the catalog and plan again."""
    from catalog.durable_postgres import PostgresCatalogStore
    from persist import open_consensus
    from persist.write import seal, unseal

    a, b, url, _ = envds
    with a.connect() as c:
        c.execute("CREATE TABLE resealed (x int)")
        c.execute("INSERT INTO resealed VALUES (1), (2)")
        c.execute("CREATE TABLE copied (x int)")
    seen_by(b, "resealed")
    seen_by(b, "copied")
    store = PostgresCatalogStore(url)
    shard = next(t.shard_id for t in store.load().tables.values() if t.name == "resealed")
    store.close()
    consensus = open_consensus(url)
    got: dict[str, object] = {}

    def cursor(c: psycopg.Connection):
        with c.transaction():
            c.execute("DECLARE cur CURSOR FOR SELECT x FROM resealed ORDER BY x")
            return c.execute("FETCH ALL cur").fetchall()

    def insert_select(c: psycopg.Connection):
        c.execute("INSERT INTO copied SELECT x * 10 FROM resealed")
        return c.execute("SELECT x FROM copied ORDER BY x").fetchall()

    with on_b(b) as c1, on_b(b) as c2:
        c1.autocommit = False
        seal(consensus, shard, None)  # as A's ALTER TABLE does before its copy
        threads = [threading.Thread(target=lambda f=f, c=c: got.update({f.__name__: _run(c, f)}))
                   for f, c in ((cursor, c1), (insert_select, c2))]
        for t in threads:
            t.start()
        try:
            threads[0].join(3)  # time for both to meet the seal (before the fix: XX000 at once)
        finally:
            unseal(consensus, shard)
            for t in threads:
                t.join(60)
    assert got == {"cursor": [(1,), (2,)], "insert_select": [(10,), (20,)]}
    consensus.close()


def _run(c: psycopg.Connection, f):
    try:
        return f(c)
    except psycopg.Error as e:
        return e.sqlstate, str(e)


def _answer(c: psycopg.Connection, sql: str):
    return _run(c, lambda c: c.execute(sql).fetchall())


def test_a_write_through_a_reaches_a_subscription_in_b_by_pubsub(envds):
    a, b, url, d = envds
    with a.connect() as c:
        c.execute("CREATE TABLE pushed (x int, src text)")
    seen_by(b, "pushed")
    with on_b(b) as cb:
        cb.execute("SELECT count(*) FROM pushed")
    with psycopg.connect(b.url, options="-c cluster=cb") as follower:
        follower.execute("DECLARE c CURSOR FOR SUBSCRIBE (SELECT x, src FROM pushed) WITH (PROGRESS)")
        assert fetch_until(follower, "c", 0) == []
        before = metric_value(b.metrics_url, CLEAN)
        # B's own reads race the push (a push of a state B already read counts as
        # unclean): a few writes, and at least one must arrive by push
        with a.connect() as c:
            for i in range(5):
                c.execute("INSERT INTO pushed VALUES (%s, 'a')", (i,))
                rows = fetch_until(follower, "c", 1)
                assert [(r[3], r[4]) for r in rows] == [(i, "a")]
                if wait_for(lambda: metric_value(b.metrics_url, CLEAN) > before, 1, 0.05):
                    break
        assert metric_value(b.metrics_url, CLEAN) > before
        # sqlfront persist-write on the shared store, no data directory: found from the
        # shared catalog, timestamped by the shared oracle, pushed to a live process
        before = metric_value(b.metrics_url, CLEAN)
        p = subprocess.run([sys.executable, "-m", "sqlfront.cli", "persist-write", "--data-dir", str(d / "none"),
                            "--table", "pushed", "--catalog-url", url, "--persist-consensus-url", url,
                            "--timestamp-oracle-url", url, "--persist-blob-url", str(d / "blob")],
                           input="100\twriter\n", cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        commit = json.loads(p.stdout.splitlines()[0])
        assert commit["rows"] == 1
        # acknowledged: a read that starts now, through either process, sees it
        with a.connect() as c:
            assert (100, "writer") in c.execute("SELECT x, src FROM pushed").fetchall()
        rows = fetch_until(follower, "c", 1)
        assert [(int(r[0]), r[3], r[4]) for r in rows] == [(commit["ts"], 100, "writer")]
        assert wait_for(lambda: metric_value(b.metrics_url, CLEAN) > before, 10, 0.1)



def test_a_remote_replicas_token_is_encrypted_in_the_shared_catalog(envds):
    """The TOKEN is sealed in the catalog's PostgreSQL (issue 33: secrets encrypted at
    rest), and the other process, sharing --catalog-key-file, still reads the replica."""
    a, b, url, _ = envds
    token = f"shared-token-{os.getpid()}-{time.monotonic_ns()}"
    with a.connect() as c:
        c.execute(f"CREATE CLUSTER sealed REPLICAS (r (REMOTE ('127.0.0.1:9'), TOKEN '{token}'))")
    try:
        with psycopg.connect(url) as pg:
            stored = "".join(r[0] for r in pg.execute("SELECT ops::text FROM catalog_log"))
        assert "CreateReplica" in stored and token not in stored
        with on_b(b) as c:
            assert wait_for(lambda: c.execute("SELECT count(*) FROM mz_cluster_replicas r JOIN mz_clusters c"
                                              " ON r.cluster_id = c.id WHERE c.name = 'sealed'").fetchone()[0] == 1,
                            30, 0.2)
    finally:
        with a.connect() as c:
            c.execute("DROP CLUSTER sealed CASCADE")


def test_a_restart_drops_only_its_own_temp_schemas_and_leaked_parts(envds):
    """Last in this module: it kills and restarts A."""
    a, b, url, d = envds
    with a.connect() as c:
        c.execute("CREATE TABLE parts_here (x int)")
        c.execute("INSERT INTO parts_here SELECT * FROM generate_series(1, 20000)")  # a part in Blob
    blob = d / "blob"
    shard = "sleaked"  # no state refers to anything in it
    (blob / shard).mkdir()
    a_id = (a.data_dir / "environment_id").read_text().strip()
    b_id = (b.data_dir / "environment_id").read_text().strip()
    leaked = {name: blob / shard / f"{writer}-{'0' * 31}{i}.parquet"
              for i, (name, writer) in enumerate([("a_earlier", a_id), ("b_live", b_id), ("dead_old", "deadbeef0000"),
                                                  ("dead_new", "deadbeef0001"), ("unnamed", None)])}
    leaked["unnamed"] = blob / shard / f"{'1' * 32}.parquet"
    for f in leaked.values():
        f.write_bytes(b"not referenced by any state")
    hour_ago = time.time() - 3600
    os.utime(leaked["dead_old"], (hour_ago, hour_ago))
    os.utime(leaked["unnamed"], (hour_ago, hour_ago))
    with a.connect() as ca:
        ca.execute("CREATE TEMP TABLE a_tmp (x int)")
        ca.execute("INSERT INTO a_tmp VALUES (1)")
        with on_b(b) as cb:
            cb.execute("CREATE TEMP TABLE b_tmp (x int)")
            cb.execute("INSERT INTO b_tmp VALUES (7)")
            b_schema = cb.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'mz_temp%%'"
                                  " AND nspname LIKE %s", (f"mz_temp_{b_id}_%",)).fetchone()[0]
            a.proc.send_signal(signal.SIGKILL)  # A's session never ends: its temp schema is left
            a.proc.wait(30)
            a.stop()
            a.start(wait_replicas=False)
            with a.connect() as c:
                temp = [r[0] for r in c.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'mz_temp%'")]
            assert temp == [b_schema]  # A's earlier run's is gone, B's live session's kept
            assert cb.execute("SELECT x FROM b_tmp").fetchall() == [(7,)]
    gone = {name for name, f in leaked.items() if not f.exists()}
    assert gone == {"a_earlier", "dead_old"}
    with a.connect() as c:
        assert c.execute("SELECT count(*) FROM parts_here").fetchone() == (20000,)


def test_a_table_both_processes_read_has_its_since_follow_their_readers(envds):
    """Issue 28 (chaos, two processes: the table's since 948 s behind its upper). With
    two processes reading a shard, its since is the older of their readers' sinces, and
    a maintenance round wrote its reader's new since only when the *shard's* since would
    move by a step (5 s): it could not, the other reader being behind, so neither process
    wrote, and the since moved only when a heartbeat fell due (a quarter of the 15-minute
    lease). Now a round writes when its own reader's since moved by a step."""
    a, b, url, _ = envds
    with a.connect() as c:
        c.execute("CREATE TABLE vin (x int)")
        c.execute("CREATE MATERIALIZED VIEW vout AS SELECT count(*) AS n FROM vin")
        c.execute("INSERT INTO vin VALUES (1)")
        assert wait_for(lambda: c.execute("SELECT n FROM vout").fetchall() == [(1,)], 60, 0.3)
    seen_by(b, "vin")
    with on_b(b) as cb:
        assert cb.execute("SELECT count(*) FROM vin").fetchone() == (1,)  # B's reader on vin
        time.sleep(2)  # B's maintenance rounds see vout as it is now
    mark = None
    with a.connect() as c:
        for i in range(2, 6):
            time.sleep(3)
            c.execute(f"INSERT INTO vin VALUES ({i})")
            assert c.execute("SELECT n FROM vout").fetchall() == [(i,)]
            mark = mark or int(str(c.execute("SELECT mz_now()").fetchone()[0]))
    with on_b(b) as cb:
        cb.execute("INSERT INTO vin VALUES (6)")  # B's maintenance looks at vin again
    assert wait_for(lambda: shared_shard_state(url, "vin")["since"] > mark, 60, 1), f"since stayed behind {mark}: {shared_shard_state(url, 'vin')}"
