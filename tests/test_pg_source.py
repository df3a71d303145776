"""PostgreSQL sources through the wire: a real upstream PostgreSQL (the session's
``postgres`` fixture, wal_level=logical), its publication followed by CREATE SOURCE ...
FROM POSTGRES CONNECTION, random changes upstream compared with the subsources."""

from __future__ import annotations

import random
import signal

import psycopg
import pytest
from conftest import new_database
from server import wait_for

UPSTREAM_SETUP = [
    "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2), at timestamptz, ok boolean)",
    "CREATE TABLE other.tags (id bigint, tag varchar(20))",
    "ALTER TABLE items REPLICA IDENTITY FULL",
    "ALTER TABLE other.tags REPLICA IDENTITY FULL",
    ("INSERT INTO items SELECT g, 'item ' || g, g * 1.5, '2024-01-01 00:00:00+00'::timestamptz"
     " + g * interval '1 hour', g % 2 = 0 FROM generate_series(1, 200) g"),
    "INSERT INTO other.tags VALUES (1, 'red'), (2, NULL)",
    "CREATE PUBLICATION mz_pub FOR ALL TABLES",
]


@pytest.fixture(scope="module")
def upstream(postgres):
    """(libpq URL of a database with the tables above and publication ``mz_pub``, its port)."""
    url = new_database(postgres)
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("CREATE SCHEMA other")
        for sql in UPSTREAM_SETUP:
            c.execute(sql)
    return url


def _connect_upstream(conn, url: str, name: str = "pg_up") -> None:
    info = psycopg.conninfo.conninfo_to_dict(url)
    conn.execute(f"CREATE SECRET IF NOT EXISTS {name}_pw AS 'unused'")
    conn.execute(f"CREATE CONNECTION {name} TO POSTGRES (HOST '{info['host']}', PORT {info['port']}, "
                 f"USER '{info['user']}', PASSWORD SECRET {name}_pw, DATABASE '{info['dbname']}')")


def _same(conn, up, ours: str, theirs: str, order: str = "1") -> bool:
    a = conn.execute(f"SELECT * FROM {ours} ORDER BY {order}").fetchall()
    b = up.execute(f"SELECT * FROM {theirs} ORDER BY {order}").fetchall()
    return a == b


def _random_batch(up, rng: random.Random, next_id: list[int]) -> None:
    with up.transaction():
        for _ in range(rng.randint(1, 8)):
            op = rng.random()
            if op < 0.4:
                next_id[0] += 1
                up.execute("INSERT INTO items VALUES (%s, %s, %s, now(), %s)",
                           (next_id[0], f"new {next_id[0]}", rng.randint(0, 10_000) / 100, rng.random() < 0.5))
            elif op < 0.75:
                up.execute("UPDATE items SET price = price + 1, name = name || '!' "
                           "WHERE id = (SELECT id FROM items ORDER BY random() LIMIT 1)")
            else:
                up.execute("DELETE FROM items WHERE id = (SELECT id FROM items ORDER BY random() LIMIT 1)")


def test_postgres_source_follows_upstream(server, conn, upstream):
    conn.autocommit = True
    _connect_upstream(conn, upstream)
    conn.execute("CREATE SOURCE pg_src FROM POSTGRES CONNECTION pg_up (PUBLICATION 'mz_pub') FOR ALL TABLES")
    shown = dict(conn.execute("SELECT name, type FROM mz_sources WHERE name LIKE 'pg_src%' OR name IN "
                              "('items', 'tags')").fetchall())
    assert shown == {"pg_src": "postgres", "pg_src_progress": "progress", "items": "subsource", "tags": "subsource"}
    with psycopg.connect(upstream, autocommit=True) as up:
        # the snapshot, with the upstream types
        assert _same(conn, up, "items", "items")
        assert _same(conn, up, "tags", "other.tags")
        assert conn.execute("SELECT pg_typeof(price)::text, pg_typeof(at)::text FROM items LIMIT 1").fetchone() == \
            ("numeric", "timestamp with time zone")
        # its status and statistics: the snapshot's 202 rows read and committed, the LSN lag
        statuses = "SELECT name, status, error FROM mz_internal.mz_source_statuses WHERE name IN " \
                   "('pg_src', 'items', 'tags', 'pg_src_progress') ORDER BY 1"
        wait_for(lambda: {r[1] for r in conn.execute(statuses).fetchall()} == {"running"}, timeout=30)
        assert [r[0] for r in conn.execute(statuses).fetchall()] == ["items", "pg_src", "pg_src_progress", "tags"]
        stats = conn.execute(
            "SELECT snapshot_records_known, snapshot_records_staged, snapshot_committed, offset_committed > 0, "
            "offset_known - offset_committed >= 0 FROM mz_internal.mz_source_statistics s "
            "JOIN mz_sources m ON m.id = s.id WHERE m.name = 'pg_src'").fetchall()
        assert stats == [(202, 202, True, True, True)]
        # then the stream: random INSERT/UPDATE/DELETE transactions
        rng = random.Random(30)
        next_id = [200]
        up.execute("INSERT INTO other.tags VALUES (3, 'blue')")
        for _ in range(5):
            _random_batch(up, rng, next_id)
        wait_for(lambda: _same(conn, up, "items", "items"), timeout=60)
        assert _same(conn, up, "tags", "other.tags")  # (committed before items' last change)
        # an upstream schema change: the table is in error, the other goes on
        up.execute("ALTER TABLE other.tags ADD COLUMN extra int")
        up.execute("INSERT INTO other.tags VALUES (4, 'green', 1)")
        up.execute("INSERT INTO items VALUES (100000, 'after', 1, now(), true)")
        wait_for(lambda: _same(conn, up, "items", "items"), timeout=60)

        def tags_error():
            try:
                conn.execute("SELECT * FROM tags").fetchall()
            except psycopg.Error as e:
                return e
            return None

        err = wait_for(tags_error, timeout=60)
        assert "incompatible schema change" in str(err)
        with pytest.raises(psycopg.errors.InternalError, match="incompatible schema change"), conn.transaction():
            conn.execute("DECLARE c CURSOR FOR SUBSCRIBE tags")
        assert conn.execute(statuses).fetchall()[-1][:2] == ("tags", "stalled")
        assert "incompatible schema change" in conn.execute(statuses).fetchall()[-1][2]
        assert conn.execute("SELECT updates_committed > 202 FROM mz_internal.mz_source_statistics s "
                            "JOIN mz_sources m ON m.id = s.id WHERE m.name = 'pg_src'").fetchone() == (True,)
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):
            conn.execute("DROP CONNECTION pg_up")
        conn.execute("DROP SOURCE pg_src CASCADE")
        # the replication slot goes with the source
        wait_for(lambda: up.execute("SELECT count(*) FROM pg_replication_slots WHERE database = current_database()").fetchone() == (0,), timeout=30)
    assert conn.execute("SELECT count(*) FROM mz_sources WHERE name LIKE 'pg_src%'").fetchone() == (0,)
    conn.execute("DROP CONNECTION pg_up")
    conn.execute("DROP SECRET pg_up_pw")


def test_postgres_source_refusals(server, conn, postgres):
    conn.autocommit = True
    url = new_database(postgres)
    with psycopg.connect(url, autocommit=True) as up:
        up.execute("CREATE TABLE plain (id int PRIMARY KEY, v text)")
        up.execute("CREATE TABLE weird (id int, p point)")
        up.execute("ALTER TABLE weird REPLICA IDENTITY FULL")
        up.execute("CREATE PUBLICATION p_plain FOR TABLE plain")
        up.execute("CREATE PUBLICATION p_weird FOR TABLE weird")
    _connect_upstream(conn, url, "pg_ref")
    try:
        with pytest.raises(psycopg.errors.UndefinedObject):
            conn.execute("CREATE SOURCE s1 FROM POSTGRES CONNECTION pg_ref (PUBLICATION 'nope') FOR ALL TABLES")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="REPLICA IDENTITY FULL"):
            conn.execute("CREATE SOURCE s1 FROM POSTGRES CONNECTION pg_ref (PUBLICATION 'p_plain') FOR ALL TABLES")
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="point"):
            conn.execute("CREATE SOURCE s1 FROM POSTGRES CONNECTION pg_ref (PUBLICATION 'p_weird') FOR ALL TABLES")
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("CREATE SOURCE s1 FROM POSTGRES CONNECTION pg_ref (PUBLICATION 'p_weird') "
                         "FOR TABLES (public.missing)")
        with pytest.raises(psycopg.errors.SyntaxError):
            conn.execute("CREATE SOURCE s1 FROM POSTGRES CONNECTION pg_ref (PUBLICATION 'p_weird')")
        assert conn.execute("SELECT count(*) FROM mz_sources WHERE name LIKE 's1%'").fetchone() == (0,)
    finally:
        conn.execute("DROP CONNECTION pg_ref")
        conn.execute("DROP SECRET pg_ref_pw")


@pytest.mark.slow
def test_postgres_source_exactly_once_across_sigkill(tmp_path, postgres):
    """SIGKILL of environmentd while upstream changes stream in, then a restart: every
    change is there once (the subsource equals the upstream table), none twice."""
    from server import Server

    url = new_database(postgres)
    with psycopg.connect(url, autocommit=True) as up:
        up.execute("CREATE TABLE counts (k int, n int)")
        up.execute("ALTER TABLE counts REPLICA IDENTITY FULL")
        up.execute("INSERT INTO counts SELECT g, 0 FROM generate_series(1, 50) g")
        up.execute("CREATE PUBLICATION p_counts FOR TABLE counts")
        s = Server(tmp_path / "mzdata").start()
        try:
            with s.connect(autocommit=True) as c:
                _connect_upstream(c, url, "pg_k")
                c.execute("CREATE SOURCE k_src FROM POSTGRES CONNECTION pg_k (PUBLICATION 'p_counts') "
                          "FOR TABLES (counts AS k_counts)")
                assert _same(c, up, "k_counts", "counts")
                rng = random.Random(7)
                for i in range(60):  # upstream keeps changing while environmentd dies
                    up.execute("UPDATE counts SET n = n + 1 WHERE k = %s", (rng.randint(1, 50),))
                    up.execute("INSERT INTO counts VALUES (%s, %s)", (1000 + i, i))
                    if i == 30:
                        wait_for(lambda: c.execute("SELECT count(*) FROM k_counts").fetchone()[0] > 50, timeout=60)
                        s.stop(sig=signal.SIGKILL)
            s.start()
            with s.connect(autocommit=True) as c:
                wait_for(lambda: _same(c, up, "k_counts", "counts", "1, 2"), timeout=90)
                # (the comparison is of multisets: a change applied twice would show)
                assert c.execute("SELECT count(*) FROM k_counts").fetchone() == (110,)
                assert c.execute("SELECT count(*) FROM k_src_progress").fetchone() == (1,)
                c.execute("DROP SOURCE k_src CASCADE")
        finally:
            s.stop()
