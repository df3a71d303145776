"""What drivers rely on: prepared statements, parameters, binary results, cancel."""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import asyncpg
import psycopg
import pytest

from server import psql, require_psql


def test_prepared_insert_runs_exactly_n_times(conn):
    conn.execute("CREATE TABLE prep (a int, b text)")
    try:
        for i in range(7):
            conn.execute("INSERT INTO prep VALUES (%s, %s)", (i, f"v{i}"), prepare=True)
        assert conn.execute("SELECT count(*), sum(a) FROM prep").fetchone() == (7, 21)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO prep VALUES (%s, %s)", [(100 + i, None) for i in range(5)])
        assert conn.execute("SELECT count(*) FROM prep WHERE b IS NULL").fetchone() == (5,)
    finally:
        conn.execute("DROP TABLE prep")


def test_psycopg_parameters_and_binary(conn):
    assert conn.execute("SELECT %s::int + 1, %s || 'x', %s::date", (41, "a", dt.date(2024, 1, 2))).fetchone() == \
        (42, "ax", dt.date(2024, 1, 2))
    cur = conn.cursor(binary=True)
    row = cur.execute("SELECT 1::int2, 2::int4, 3::int8, 1.5::float4, 2.5::float8, 1.25::numeric(5,2),"
                      " 'x'::text, 'y'::varchar(3), 'z'::char(2), true, date '2024-02-29',"
                      " timestamp '2024-02-29 12:34:56.5', interval '1 day 2 hours'").fetchone()
    assert row == (1, 2, 3, 1.5, 2.5, Decimal("1.25"), "x", "y", "z ", True, dt.date(2024, 2, 29),
                   dt.datetime(2024, 2, 29, 12, 34, 56, 500000), dt.timedelta(days=1, hours=2))


def test_asyncpg_prepare_parameters_and_cancel(server, conn):
    conn.execute("CREATE TABLE ap (a int, d date, n numeric(10,2))")
    conn.execute("CREATE TABLE big (x int)")
    conn.execute("INSERT INTO big SELECT * FROM (VALUES " + ",".join(f"({i})" for i in range(2000)) + ") v")

    async def run():
        c = await asyncpg.connect(host="127.0.0.1", port=server.port, user="materialize", database="materialize")
        try:
            ins = await c.prepare("INSERT INTO ap VALUES ($1, $2, $3)")
            for i in range(4):
                await ins.fetch(i, dt.date(2024, 1, 1 + i), Decimal("1.50") * i)
            await c.executemany("INSERT INTO ap VALUES ($1, $2, $3)", [(10, None, None), (11, None, Decimal("2"))])
            assert await c.fetchval("SELECT count(*) FROM ap") == 6
            rows = await c.fetch("SELECT a, d FROM ap WHERE a > $1 AND d < $2 ORDER BY a", 0, dt.date(2024, 1, 4))
            assert [tuple(r) for r in rows] == [(1, dt.date(2024, 1, 2)), (2, dt.date(2024, 1, 3))]
            assert await c.fetchval("SELECT sum(n) FROM ap WHERE a = ANY (SELECT a FROM ap WHERE a < $1)", 3) == \
                Decimal("4.50")
            # A query that would run for minutes is cancelled by the driver's timeout.
            with pytest.raises(asyncio.TimeoutError):
                await c.fetchval("SELECT count(*) FROM big a, big b, big c WHERE a.x + b.x + c.x = -1", timeout=2)
            assert await c.fetchval("SELECT 1 + 1") == 2
        finally:
            await c.close()

    try:
        asyncio.run(run())
        # The session that was cancelled keeps working, and so does the replica.
        assert conn.execute("SELECT count(*) FROM big").fetchone() == (2000,)
    finally:
        conn.execute("DROP TABLE ap")
        conn.execute("DROP TABLE big")


def test_copy_from_stdin_and_to_stdout(conn):
    conn.execute("CREATE TABLE cp (a int, b text, c numeric(6,2))")
    try:
        with conn.cursor().copy("COPY cp FROM STDIN") as copy:
            copy.write("1\tone\t1.5\n2\t\\N\t2.25\n3\ttab\\there\t\\N\n")
        with conn.cursor().copy("COPY cp FROM STDIN (FORMAT CSV, HEADER true)") as copy:
            copy.write('a,b,c\n4,"quoted, comma",4.00\n5,,\n')
        rows = conn.execute("SELECT a, b, c FROM cp ORDER BY a").fetchall()
        assert rows == [(1, "one", Decimal("1.50")), (2, None, Decimal("2.25")), (3, "tab\there", None),
                        (4, "quoted, comma", Decimal("4.00")), (5, None, None)]
        out = bytearray()
        with conn.cursor().copy("COPY (SELECT a, b FROM cp WHERE a <= 3 ORDER BY a) TO STDOUT") as copy:
            for chunk in copy:
                out += chunk
        assert bytes(out) == b"1\tone\n2\t\\N\n3\ttab\\there\n"
        out = bytearray()
        with conn.cursor().copy("COPY (SELECT a, b FROM cp WHERE a >= 3 ORDER BY a) TO STDOUT (FORMAT CSV, HEADER)") as copy:
            for chunk in copy:
                out += chunk
        assert bytes(out) == b'a,b\n3,tab\there\n4,"quoted, comma"\n5,\n'
        with conn.cursor().copy("COPY (SELECT a, b, c FROM cp ORDER BY a) TO STDOUT (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "text", "numeric"])
            assert list(copy.rows()) == rows
        # A bad row rejects the whole COPY, and the session stays usable.
        with pytest.raises(psycopg.Error) as ei:
            with conn.cursor().copy("COPY cp FROM STDIN") as copy:
                copy.write("6\tsix\t6\nseven\tx\t7\n")
        assert ei.value.sqlstate == "22P02"
        assert conn.execute("SELECT count(*) FROM cp").fetchone() == (5,)
    finally:
        conn.execute("DROP TABLE cp")


def test_copy_written_in_batches_is_all_or_nothing(server):
    """A COPY big enough to write a batch to Blob before its end (every 8 MB of Arrow
    columns): a bad row after it fails the COPY whole and the batch is deleted; in a
    transaction block the rows are seen by the block, gone after ROLLBACK, there once
    after COMMIT."""
    n = 500_000  # ~8.9 MB of Arrow: one batch written before the end
    data = b"".join(b"%d\trow %d\n" % (i, i) for i in range(n))
    blob = server.data_dir / "blob"

    def copy(c, tail=b""):
        with c.cursor().copy("COPY cpb FROM STDIN") as cp:
            for i in range(0, len(data), 1 << 20):
                cp.write(data[i : i + (1 << 20)])
            cp.write(tail)

    def count(c):
        return c.execute("SELECT count(*), count(DISTINCT a), sum(a) FROM cpb").fetchone()

    with server.connect() as c:
        c.autocommit = True
        c.execute("CREATE TABLE cpb (a int, b text)")
        try:
            before = set(blob.rglob("*.parquet"))
            with pytest.raises(psycopg.errors.InvalidTextRepresentation):
                copy(c, b"bad\trow\n")
            assert count(c) == (0, 0, None)
            # what the failed COPY wrote is gone (other shards' compactions may add parts)
            assert not {p for p in set(blob.rglob("*.parquet")) - before if p.parent not in {q.parent for q in before}}
            with c.transaction():
                copy(c)
                assert count(c) == (n, n, n * (n - 1) // 2)
                raise psycopg.Rollback
            assert count(c) == (0, 0, None)
            with c.transaction():
                copy(c)
            assert count(c) == (n, n, n * (n - 1) // 2)
        finally:
            c.execute("DROP TABLE cpb")


def test_psql_copy_meta_command(server, tmp_path):
    import subprocess

    require_psql()
    src = tmp_path / "rows.csv"
    src.write_text("1,a\n2,b\n")
    cmd = ["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(server.port),
           "-U", "materialize", "materialize"]
    script = (f"CREATE TABLE pc (a int, b text);\n\\copy pc FROM '{src}' WITH (FORMAT csv)\n"
              "SELECT a, b FROM pc ORDER BY a;\nDROP TABLE pc;\n")
    out = subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "1|a\n2|b" in out.stdout


def test_portal_suspended_and_resumed(server, conn):
    conn.execute("CREATE TABLE cur (a int)")
    conn.execute("INSERT INTO cur SELECT * FROM (VALUES " + ",".join(f"({i})" for i in range(25)) + ") v")

    async def run():
        c = await asyncpg.connect(host="127.0.0.1", port=server.port, user="materialize", database="materialize")
        try:
            async with c.transaction():
                seen = [r["a"] async for r in c.cursor("SELECT a FROM cur ORDER BY a", prefetch=10)]
            return seen
        finally:
            await c.close()

    try:
        assert asyncio.run(run()) == list(range(25))  # fetched 10 rows at a time: Execute, PortalSuspended, ...
    finally:
        conn.execute("DROP TABLE cur")


def test_error_in_extended_batch_skips_to_sync(server):
    import socket
    import struct

    def msg(t: bytes, body: bytes) -> bytes:
        return t + struct.pack("!i", len(body) + 4) + body

    params = b"user\x00materialize\x00database\x00materialize\x00\x00"
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
        buf = b""
        while not buf.endswith(b"Z\x00\x00\x00\x05I"):
            buf += s.recv(4096)
        batch = (msg(b"P", b"\x00SELEC 1\x00\x00\x00") + msg(b"B", b"\x00\x00\x00\x00\x00\x00\x00\x00")
                 + msg(b"E", b"\x00\x00\x00\x00\x00") + msg(b"S", b"")
                 + msg(b"P", b"\x00SELECT 7\x00\x00\x00") + msg(b"B", b"\x00\x00\x00\x00\x00\x00\x00\x00")
                 + msg(b"E", b"\x00\x00\x00\x00\x00") + msg(b"S", b""))
        s.sendall(batch)
        buf = b""
        while buf.count(b"Z\x00\x00\x00\x05") < 2:
            buf += s.recv(4096)
    first, second = buf.split(b"Z\x00\x00\x00\x05I", 1)
    # The syntax error is Parse's; Bind and Execute are skipped until Sync.
    assert b"C42601" in first and b"1\x00\x00\x00\x04" not in first and b"2\x00\x00\x00\x04" not in first
    assert b"D\x00" in second and b"SELECT 1" in second  # the batch after Sync runs normally


def test_psql_dt_and_dn_golden(server, conn):
    conn.execute("CREATE TABLE golden_a (x int)")
    conn.execute("CREATE VIEW golden_v AS SELECT x FROM golden_a")
    try:
        out = psql(server, r"\dt golden*")
        assert out.returncode == 0, out.stderr
        assert out.stdout == (
            "            List of relations\n"
            " Schema |   Name   | Type  |    Owner    \n"
            "--------+----------+-------+-------------\n"
            " public | golden_a | table | materialize\n"
            "(1 row)\n\n"
        )
        out = psql(server, r"\dn")
        assert out.returncode == 0, out.stderr
        assert out.stdout == (
            "      List of schemas\n"
            "    Name     |    Owner    \n"
            "-------------+-------------\n"
            " mz_catalog  | materialize\n"
            " mz_internal | materialize\n"
            " public      | materialize\n"
            "(3 rows)\n\n"
        )
    finally:
        conn.execute("DROP VIEW golden_v")
        conn.execute("DROP TABLE golden_a")


def test_psql_lists_views_indexes_sequences_and_schemas(server, conn):
    """psql's \\dv, \\di, \\ds and \\dn list the objects made here as PostgreSQL's psql
    shows them (name, type, owner; an index with its table)."""
    conn.execute("CREATE SCHEMA golden_s")
    conn.execute("CREATE TABLE golden_s.t (x int)")
    conn.execute("CREATE VIEW golden_s.v AS SELECT x FROM golden_s.t")
    conn.execute("CREATE INDEX golden_i ON golden_s.t (x)")
    conn.execute("CREATE SEQUENCE golden_s.q")
    try:
        for command, row in ((r"\dv golden_s.*", ["golden_s", "v", "view", "materialize"]),
                             (r"\di golden_s.*", ["golden_s", "golden_i", "index", "materialize", "t"]),
                             (r"\ds golden_s.*", ["golden_s", "q", "sequence", "materialize"]),
                             (r"\dn golden*", ["golden_s", "materialize"])):
            out = psql(server, command)
            assert out.returncode == 0, out.stderr
            rows = [[c.strip() for c in line.split("|")] for line in out.stdout.splitlines() if "|" in line]
            assert row in rows, (command, out.stdout)
    finally:
        conn.execute("DROP SCHEMA golden_s CASCADE")


def test_psql_describe_table_and_list_databases_golden(server, conn):
    conn.execute("CREATE TABLE golden_d (a int NOT NULL, b text, c numeric(10,2), d varchar(5), e int[], f jsonb)")
    try:
        out = psql(server, r"\d golden_d")
        assert out.returncode == 0, out.stderr
        # What PostgreSQL 15 prints for the same table.
        assert out.stdout == (
            '                    Table "public.golden_d"\n'
            " Column |         Type         | Collation | Nullable | Default \n"
            "--------+----------------------+-----------+----------+---------\n"
            " a      | integer              |           | not null | \n"
            " b      | text                 |           |          | \n"
            " c      | numeric(10,2)        |           |          | \n"
            " d      | character varying(5) |           |          | \n"
            " e      | integer[]            |           |          | \n"
            " f      | jsonb                |           |          | \n\n"
        )
        out = psql(server, r"\l")
        assert out.returncode == 0, out.stderr
        assert out.stdout == (
            "                                             List of databases\n"
            "    Name     |    Owner    | Encoding | Collate | Ctype | ICU Locale | Locale Provider | Access privileges \n"
            "-------------+-------------+----------+---------+-------+------------+-----------------+-------------------\n"
            " materialize | materialize | UTF8     | C       | C     |            | libc            | \n"
            "(1 row)\n\n"
        )
        out = psql(server, r"\d golden_missing")
        assert "Did not find any relation named" in out.stderr
    finally:
        conn.execute("DROP TABLE golden_d")


def test_savepoints_and_transaction_modes(server):
    import psycopg

    with server.connect() as c:
        c.execute("CREATE TABLE sp (a int)")
        try:
            c.autocommit = False
            c.execute("INSERT INTO sp VALUES (1)")
            c.execute("SAVEPOINT s1")
            c.execute("INSERT INTO sp VALUES (2)")
            with pytest.raises(psycopg.Error) as e:
                c.execute("INSERT INTO sp VALUES (1/0)")
            assert e.value.sqlstate == "22012"
            c.execute("ROLLBACK TO SAVEPOINT s1")  # leaves the failed state, drops the second row
            c.execute("INSERT INTO sp VALUES (3)")
            c.commit()
            c.autocommit = True
            assert c.execute("SELECT a FROM sp ORDER BY a").fetchall() == [(1,), (3,)]
            # Materialize: a transaction that read a table is read-only; one that wrote
            # first reads its own writes (PostgreSQL), and they go at ROLLBACK.
            c.autocommit = False
            c.execute("SELECT * FROM sp")
            with pytest.raises(psycopg.Error) as e:
                c.execute("INSERT INTO sp VALUES (4)")
            assert e.value.sqlstate == "25000" and "read-only" in str(e.value)
            c.rollback()
            c.execute("INSERT INTO sp VALUES (4)")
            assert c.execute("SELECT a FROM sp ORDER BY a").fetchall() == [(1,), (3,), (4,)]
            c.rollback()
            with pytest.raises(psycopg.Error) as e:
                c.execute("RELEASE SAVEPOINT nope")
            assert e.value.sqlstate == "3B001"
            c.rollback()
            c.autocommit = True
            c.execute("BEGIN READ ONLY")
            with pytest.raises(psycopg.Error) as e:
                c.execute("INSERT INTO sp VALUES (5)")
            assert e.value.sqlstate == "25006"
            c.execute("ROLLBACK")
            c.execute("BEGIN")
            c.execute("SELECT * FROM sp")
            with pytest.raises(psycopg.Error) as e:
                c.execute("CREATE TABLE sp2 (a int)")
            assert e.value.sqlstate == "25000"
            c.execute("ROLLBACK")
            assert c.execute("SELECT count(*) FROM sp").fetchone() == (2,)
        finally:
            c.autocommit = True
            c.execute("DROP TABLE sp")


def test_psql_plus_variants_and_table_size(server, conn):
    """\\d+ and \\dt+ (sizes from persist: the bytes of the table's Parquet parts)."""
    import re

    conn.execute("CREATE TABLE golden_p (a int, b text)")
    conn.execute("INSERT INTO golden_p VALUES (1, 'x'), (2, 'y')")
    try:
        out = psql(server, r"\d+ golden_p")
        assert out.returncode == 0, out.stderr
        assert " a      | integer |           |          |         | plain    |              | " in out.stdout
        assert " b      | text    |           |          |         | extended |              | " in out.stdout
        out = psql(server, r"\dt+ golden_p")
        assert out.returncode == 0, out.stderr
        size = re.search(r"golden_p \| table \| materialize \| permanent   \| (\d+) bytes", out.stdout)
        assert size and int(size.group(1)) > 0, out.stdout
        stored = conn.execute("SELECT size_bytes FROM mz_recent_storage_usage u JOIN mz_tables t ON t.id = u.object_id"
                              " WHERE t.name = 'golden_p'").fetchone()[0]
        assert int(size.group(1)) == stored
        assert conn.execute("SELECT pg_size_pretty(10240::bigint), pg_table_size('golden_p'::regclass) = %s,"
                            " pg_table_size(0)", (stored,)).fetchone() == ("10 kB", True, None)
        # a name literal is a regclass, as PostgreSQL reads the unknown literal
        assert conn.execute("SELECT pg_table_size('golden_p') = %s, pg_total_relation_size('public.golden_p') = %s, "
                            "pg_relation_size('golden_p') = %s, pg_indexes_size('golden_p')",
                            (stored, stored, stored)).fetchone() == (True, True, True, 0)
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("SELECT pg_table_size('no_such_table_here')")
        # indexes are arrangements in memory: no bytes of their own, so the total is the table's
        assert conn.execute("SELECT pg_indexes_size('golden_p'::regclass), pg_indexes_size(0), "
                            "pg_total_relation_size('golden_p'::regclass) = %s", (stored,)).fetchone() == (0, None, True)
        # the database (and its default tablespace) holds every shard's parts; pg_global none
        total = conn.execute("SELECT sum(size_bytes) FROM mz_recent_storage_usage").fetchone()[0]
        assert conn.execute(
            "SELECT pg_database_size(current_database()) = %s, pg_database_size(oid) = %s, "
            "pg_tablespace_size('pg_default') = %s, pg_tablespace_size(1663::oid) = %s, pg_tablespace_size('pg_global'), "
            "pg_database_size(oid + 1) FROM pg_database",
            (total, total, total, total)).fetchone() == (True, True, True, True, 0, None)
        for call, state in (("pg_database_size('nosuch')", "3D000"), ("pg_database_size(0::oid)", "42704"),
                            ("pg_tablespace_size('nosuch')", "42704")):
            with pytest.raises(psycopg.Error) as err:
                conn.execute(f"SELECT {call}")
            assert err.value.sqlstate == state, call
        # only tables take writes; no relation has row security
        conn.execute("CREATE VIEW golden_v AS SELECT a FROM golden_p")
        assert conn.execute(
            "SELECT pg_relation_is_updatable('golden_p'::regclass, false), pg_relation_is_updatable('golden_v'::regclass, "
            "false), pg_column_is_updatable('golden_p'::regclass, 1::int2, false), pg_column_is_updatable("
            "'golden_v'::regclass, 1::int2, false), pg_relation_is_publishable('golden_p'::regclass), "
            "pg_relation_is_publishable('golden_v'::regclass), row_security_active('golden_v')").fetchone() == \
            (28, 0, True, False, True, False, False)
        conn.execute("DROP VIEW golden_v")
    finally:
        conn.execute("DROP TABLE golden_p")
