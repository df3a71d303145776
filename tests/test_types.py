"""Every supported type through the wire: text and binary, OIDs and typmods, on the
Spark path (a user table) and the fast path (constants) alike."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from decimal import Decimal

import asyncpg
import pytest
from psycopg.types.json import Jsonb

ROW = (1, True, 2, 3, Decimal("1.25"), 1.5, 2.5, "txt", "vc", "c ", b"\x00\xffa", dt.date(2024, 2, 29),
       dt.time(12, 34, 56, 500000), dt.datetime(2024, 2, 29, 1, 2, 3, 4), dt.datetime(2024, 2, 29, 1, 2, 3, tzinfo=dt.timezone.utc),
       dt.timedelta(days=1, hours=2), uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), {"b": [1, 2], "a": None},
       [1, None, 3], ["a b", None, "", "NULL", 'q"x'], [Decimal("1.50")])
COLUMNS = ("i int4, bo bool, s int2, b int8, n numeric(5,2), f4 float4, f8 float8, t text, v varchar(3), c char(2), "
           "by bytea, d date, tm time, ts timestamp, tz timestamptz, iv interval, u uuid, j jsonb, ai int[], at text[], "
           "an numeric(4,2)[]")
#: (type OID, typmod) PostgreSQL reports for each column of COLUMNS
DESCRIPTION = [(23, -1), (16, -1), (21, -1), (20, -1), (1700, (5 << 16 | 2) + 4), (700, -1), (701, -1), (25, -1),
               (1043, 7), (1042, 6), (17, -1), (1082, -1), (1083, -1), (1114, -1), (1184, -1), (1186, -1),
               (2950, -1), (3802, -1), (1007, -1), (1009, -1), (1231, (4 << 16 | 2) + 4)]


def _insert_sql(n: int) -> str:
    return f"INSERT INTO alltypes VALUES ({', '.join(['%s'] * n)})"


@pytest.fixture
def alltypes(conn):
    conn.execute(f"CREATE TABLE alltypes ({COLUMNS})")
    yield conn
    conn.execute("DROP TABLE alltypes")


def test_psycopg_text_and_binary_round_trip(alltypes):
    conn = alltypes
    params = list(ROW)
    params[17] = Jsonb(params[17])
    conn.execute(_insert_sql(len(ROW)), params)  # text parameters
    params[0] = 2
    conn.cursor(binary=True).execute(_insert_sql(len(ROW)).replace("%s", "%b"), params)  # binary parameters
    conn.execute("INSERT INTO alltypes (i) VALUES (3)")
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        rows = cur.execute("SELECT * FROM alltypes ORDER BY i").fetchall()
        assert [(d.type_code, _typmod(d)) for d in cur.description] == DESCRIPTION
        assert rows[0] == ROW, binary
        assert rows[1] == (2,) + ROW[1:]
        assert rows[2] == (3,) + (None,) * (len(ROW) - 1)


def _typmod(d) -> int:
    # psycopg exposes the typmod through precision/scale/internal size; rebuild it.
    if d.type_code in (1700, 1231) and d.precision is not None:
        return (d.precision << 16 | d.scale) + 4
    if d.type_code in (1043, 1042) and d.display_size is not None:
        return d.display_size + 4
    return -1


def test_text_forms_match_postgresql(alltypes):
    conn = alltypes
    conn.execute("INSERT INTO alltypes (i, by, tm, u, j, ai, at) VALUES (1, '\\x00ff', '01:02:03.5',"
                 " '{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}', '{\"b\": 1, \"aa\": [1, 2.50], \"a\": \"x\"}',"
                 " '{1, 2 ,NULL}', '{a,\"b c\",\"\"}')")
    spark = conn.execute("SELECT by::text, tm::text, u::text, j::text, ai::text, at::text, ai[2], ai[9],"
                         " cardinality(ai), array_length(at, 1), 2 = ANY(ai), 5 = ANY(ai), array_to_string(at, '|'),"
                         " ai || 7 FROM alltypes").fetchone()
    const = conn.execute("SELECT '\\x00ff'::bytea::text, '01:02:03.5'::time::text,"
                         " 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid::text,"
                         " '{\"b\": 1, \"aa\": [1, 2.50], \"a\": \"x\"}'::jsonb::text, '{1,2,NULL}'::int[]::text,"
                         " '{a,\"b c\",\"\"}'::text[]::text, ('{1,2,NULL}'::int[])[2], ('{1,2,NULL}'::int[])[9],"
                         " cardinality('{1,2,NULL}'::int[]), array_length('{a,\"b c\",\"\"}'::text[], 1),"
                         " 2 = ANY('{1,2,NULL}'::int[]), 5 = ANY('{1,2,NULL}'::int[]),"
                         " array_to_string('{a,\"b c\",\"\"}'::text[], '|'), ARRAY[1,2,NULL] || 7").fetchone()
    expected = ("\\x00ff", "01:02:03.5", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", '{"a": "x", "b": 1, "aa": [1, 2.50]}',
                "{1,2,NULL}", '{a,"b c",""}', 2, None, 3, 3, True, None, "a|b c|", [1, 2, None, 7])
    assert spark == expected
    assert const == expected
    assert conn.execute("SELECT i FROM alltypes WHERE u = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'").fetchall() == [(1,)]
    assert conn.execute("SELECT unnest(ai), generate_subscripts(ai, 1) FROM alltypes").fetchall() == \
        [(1, 1), (2, 2), (None, 3)]


def test_bad_values_have_sqlstates(conn):
    import psycopg

    for sql, state in [("SELECT 'nope'::uuid", "22P02"), ("SELECT '{\"a\":'::jsonb", "22P02"),
                       ("SELECT '\\xzz'::bytea", "22P02"), ("SELECT '25:00'::time", "22008"),
                       ("SELECT '{1,2'::int[]", "22P02"), ("SELECT '{{1},{2,3}}'::int[]", "22P02"),
                       ("SELECT ARRAY[]", "42P18"), ("SELECT (1)[1]", "42804")]:
        with pytest.raises(psycopg.Error) as e:
            conn.execute(sql)
        assert e.value.sqlstate == state, sql
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_asyncpg_types_and_copy_records_to_table(server, conn):
    conn.execute("CREATE TABLE cr (a int, b text, c numeric(6,2), d date, u uuid, j jsonb, t time, by bytea)")

    async def run():
        c = await asyncpg.connect(host="127.0.0.1", port=server.port, user="materialize", database="materialize")
        try:
            recs = [(1, "x", Decimal("1.5"), dt.date(2024, 1, 2), uuid.UUID(int=1), '{"a": 1}', dt.time(1), b"\x00"),
                    (2, None, None, None, None, None, None, None)]
            assert await c.copy_records_to_table("cr", records=recs) == "COPY 2"
            assert await c.copy_records_to_table("cr", records=[(3, "y")], columns=["a", "b"]) == "COPY 1"
            rows = [tuple(r) for r in await c.fetch("SELECT * FROM cr ORDER BY a")]
            assert rows == [(1, "x", Decimal("1.50"), dt.date(2024, 1, 2), uuid.UUID(int=1), '{"a": 1}', dt.time(1),
                             b"\x00"), recs[1], (3, "y") + (None,) * 6]
            assert await c.fetchval("SELECT a FROM cr WHERE u = $1 AND by = $2", uuid.UUID(int=1), b"\x00") == 1
        finally:
            await c.close()

    try:
        asyncio.run(run())
    finally:
        conn.execute("DROP TABLE cr")


def test_array_aggregates_on_both_paths(conn):
    conn.execute("CREATE TABLE ag (g int, v text, o int)")
    try:
        conn.execute("INSERT INTO ag VALUES (1, 'a', 3), (1, 'b', 1), (1, 'c', 2), (2, 'z', 1)")
        rows = conn.execute("SELECT g, array_agg(v ORDER BY o), array_agg(v ORDER BY o DESC) FROM ag"
                            " GROUP BY g ORDER BY g").fetchall()
        assert rows == [(1, ["b", "c", "a"], ["a", "c", "b"]), (2, ["z"], ["z"])]
        const = conn.execute("SELECT array_agg(x ORDER BY x DESC), ARRAY(SELECT 1 WHERE false) AS e,"
                             " current_schemas(true) FROM (VALUES (1), (3), (2)) v(x)").fetchone()
        assert const == ([3, 2, 1], [], ["mz_catalog", "pg_catalog", "public"])
    finally:
        conn.execute("DROP TABLE ag")


def test_asyncpg_arrays_use_type_introspection(server, conn):
    """asyncpg learns array types from its WITH RECURSIVE introspection query over pg_type."""
    conn.execute("CREATE TABLE arr (i int, a int[], t text[], n numeric(5,2)[])")

    async def run():
        c = await asyncpg.connect(host="127.0.0.1", port=server.port, user="materialize", database="materialize")
        try:
            await c.execute("INSERT INTO arr VALUES ($1, $2, $3, $4)", 1, [1, None, 3], ["a b", None], [Decimal("1.5")])
            row = await c.fetchrow("SELECT * FROM arr")
            assert tuple(row) == (1, [1, None, 3], ["a b", None], [Decimal("1.50")])
            assert await c.fetchval("SELECT $1::int8[]", [2**40]) == [2**40]
        finally:
            await c.close()

    try:
        asyncio.run(run())
    finally:
        conn.execute("DROP TABLE arr")
