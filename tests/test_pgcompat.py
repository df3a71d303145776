"""What psycopg's own test suite needs of the server (issue 16), one behaviour per test,
through the wire with psycopg: a transaction block reading its own writes, DateStyle,
timetz, multi-dimensional arrays, binary parameters.

``make psycopg-suite`` (bench/psycopg_suite.py) runs psycopg's suite itself; these tests
do not depend on it."""

from __future__ import annotations

import psycopg
import pytest


def test_block_reads_its_own_writes_once(server):
    """PostgreSQL: a transaction sees its own writes. A block that wrote first reads its
    buffered rows exactly once (rows buffered as Arrow and rows a replica wrote for
    INSERT ... SELECT), ROLLBACK TO drops a savepoint's rows from what it reads, COMMIT
    shows the rest to others once, ROLLBACK shows nothing."""
    with server.connect() as admin, server.connect(autocommit=False) as c:
        admin.execute("CREATE TABLE own_w (a int)")
        admin.execute("INSERT INTO own_w VALUES (1)")
        try:
            c.execute("INSERT INTO own_w VALUES (2)")
            # a replica writes 11 and 12: INSERT ... SELECT reads the block's own row 2 too
            c.execute("INSERT INTO own_w SELECT a + 10 FROM own_w")
            assert c.execute("SELECT a FROM own_w ORDER BY a").fetchall() == [(1,), (2,), (11,), (12,)]
            c.execute("SAVEPOINT s")
            c.execute("INSERT INTO own_w VALUES (3)")
            assert c.execute("SELECT count(*) FROM own_w").fetchone() == (5,)
            c.execute("ROLLBACK TO SAVEPOINT s")
            c.execute("INSERT INTO own_w VALUES (4)")  # writing after a read goes on
            assert c.execute("SELECT a FROM own_w ORDER BY a").fetchall() == [(1,), (2,), (4,), (11,), (12,)]
            assert admin.execute("SELECT count(*) FROM own_w").fetchone() == (1,)
            c.commit()
            assert admin.execute("SELECT a FROM own_w ORDER BY a").fetchall() == [(1,), (2,), (4,), (11,), (12,)]
            c.execute("INSERT INTO own_w VALUES (5)")
            assert c.execute("SELECT count(*) FROM own_w WHERE a = 5").fetchone() == (1,)
            c.rollback()
            assert admin.execute("SELECT count(*) FROM own_w").fetchone() == (5,)
            # a block that read first is still read-only (Materialize)
            c.execute("SELECT * FROM own_w")
            with pytest.raises(psycopg.Error) as e:
                c.execute("INSERT INTO own_w VALUES (6)")
            assert e.value.sqlstate == "25000"
            c.rollback()
        finally:
            admin.execute("DROP TABLE own_w")


def test_datestyle_output_and_report(server):
    """PostgreSQL 8.5.2: ``SET datestyle`` changes how text dates and timestamps look,
    is reported to the client (ParameterStatus DateStyle, which psycopg's loaders read),
    and keeps what a partial setting leaves out."""
    import datetime as dt

    with server.connect() as c:
        q = "SELECT '1997-12-17'::date, '1997-12-17 07:37:16.5'::timestamp, '1997-12-17 07:37:16'::timestamptz"
        expected = {
            "ISO, MDY": ("1997-12-17", "1997-12-17 07:37:16.5", "1997-12-17 07:37:16+00"),
            "SQL, DMY": ("17/12/1997", "17/12/1997 07:37:16.5", "17/12/1997 07:37:16 UTC"),
            "SQL, MDY": ("12/17/1997", "12/17/1997 07:37:16.5", "12/17/1997 07:37:16 UTC"),
            "Postgres, DMY": ("17-12-1997", "Wed 17 Dec 07:37:16.5 1997", "Wed 17 Dec 07:37:16 1997 UTC"),
            "German, DMY": ("17.12.1997", "17.12.1997 07:37:16.5", "17.12.1997 07:37:16 UTC"),
        }
        for setting, want in expected.items():
            c.execute(f"SET datestyle = {setting}")
            assert c.info.parameter_status("DateStyle") == setting
            raw = c.pgconn.exec_(q.encode())
            assert tuple(raw.get_value(0, i).decode() for i in range(3)) == want
            # psycopg reads them back through the reported style
            assert c.execute(q.rsplit(",", 1)[0]).fetchone() == (dt.date(1997, 12, 17),
                                                                 dt.datetime(1997, 12, 17, 7, 37, 16, 500000))
        c.execute("SET datestyle = Postgres")  # the order stays DMY
        assert c.execute("SHOW datestyle").fetchone() == ("Postgres, DMY",)
        c.execute("SET datestyle = German, MDY")
        assert c.execute("SHOW datestyle").fetchone() == ("German, MDY",)
        with pytest.raises(psycopg.Error) as e:
            c.execute("SET datestyle = ISO, SQL")
        assert e.value.sqlstate == "22023"
        with pytest.raises(psycopg.Error) as e:
            c.execute("SET datestyle = nope")
        assert e.value.sqlstate == "22023"
        c.execute("RESET datestyle")
        assert c.info.parameter_status("DateStyle") == "ISO, MDY"


def test_multidimensional_arrays(conn):
    """PostgreSQL 8.15: arrays of several dimensions in text and binary, both ways;
    ARRAY[[...]], array_dims/array_ndims/array_length per dimension; explicit bounds
    read (and dropped: arrays here start at 1); ragged ones refused with PostgreSQL's
    errors; a table refuses to store them (0A000) and the session goes on."""
    a = [[1, 2, 3], [4, None, 6]]
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        assert cur.execute("SELECT %s::int[]", (a,)).fetchone() == (a,)  # parameter and result
        assert cur.execute("SELECT %b::int[] = '{{1,2,3},{4,NULL,6}}'", (a,)).fetchone() == (True,)  # NULLs equal here
        assert cur.execute("SELECT ARRAY[[1,2],[3,4]], ARRAY[ARRAY['a'], ARRAY['b']]").fetchone() \
            == ([[1, 2], [3, 4]], [["a"], ["b"]])
        assert cur.execute("SELECT '[1:1][-2:-1][3:5]={{{1,2,3},{4,5,6}}}'::int[]").fetchone() \
            == ([[[1, 2, 3], [4, 5, 6]]],)
    assert conn.execute("SELECT array_dims(ARRAY[[1,2,3],[4,5,6]]), array_ndims('{{1},{2}}'::int[]), "
                        "array_length('{{1,2,3},{4,5,6}}'::int[], 1), array_length('{{1,2,3},{4,5,6}}'::int[], 2), "
                        "array_length('{{1,2,3},{4,5,6}}'::int[], 3), cardinality('{{1,2},{3,4}}'::int[])").fetchone() \
        == ("[1:2][1:3]", 2, 2, 3, None, 4)
    raw = conn.pgconn.exec_(b"SELECT '{{a,\"b c\"},{NULL,d}}'::text[]")
    assert raw.get_value(0, 0) == b'{{a,"b c"},{NULL,d}}'
    for bad, state in (("SELECT '{{1,2},{3}}'::int[]", "22P02"), ("SELECT ARRAY[ARRAY[1], ARRAY[2,3]]", "2202E")):
        with pytest.raises(psycopg.Error) as e:
            conn.execute(bad)
        assert e.value.sqlstate == state
    conn.execute("CREATE TABLE md_arr (a int[])")
    try:
        with pytest.raises(psycopg.Error) as e:
            conn.execute("INSERT INTO md_arr VALUES ('{{1,2},{3,4}}')")
        assert e.value.sqlstate == "0A000"
        conn.execute("INSERT INTO md_arr VALUES ('{1,2}')")
        assert conn.execute("SELECT a, array_dims(a) FROM md_arr").fetchone() == ([1, 2], "[1:2]")
    finally:
        conn.execute("DROP TABLE md_arr")


def test_timetz(conn):
    """``time with time zone`` (PostgreSQL 8.5.1.3, OID 1266): text and binary, as a
    parameter and a result, offsets written as timetz_out does, casts to and from time,
    arrays of it, a table column; an offset past 15:59 is 22009."""
    import datetime as dt

    tz = dt.timezone(dt.timedelta(hours=-5, minutes=-30))
    v = dt.time(10, 20, 30, 500000, tzinfo=tz)
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        assert cur.execute("SELECT %s, %s::timetz::time", (v, v)).fetchone() == (v, dt.time(10, 20, 30, 500000))
        assert cur.execute("SELECT '10:20:30.5-05:30'::time with time zone").fetchone() == (v,)
    raw = conn.pgconn.exec_(b"SELECT '01:02:03+01:02:03'::timetz, '01:02'::time::timetz, '{10:20+01}'::timetz[]")
    assert [raw.get_value(0, i) for i in range(3)] == [b"01:02:03+01:02:03", b"01:02:00+00", b"{10:20:00+01}"]
    assert raw.ftype(0) == 1266 and raw.ftype(2) == 1270
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT '10:20+16'::timetz")
    assert e.value.sqlstate == "22009"
    conn.execute("CREATE TABLE ttz (t timetz)")
    try:
        conn.execute("INSERT INTO ttz VALUES (%s), (NULL)", (v,))
        assert conn.execute("SELECT t FROM ttz WHERE t IS NOT NULL").fetchall() == [(v,)]
    finally:
        conn.execute("DROP TABLE ttz")


def test_time_zone(conn):
    """PostgreSQL 8.5.3: the session's TimeZone (an IANA name, hours east of UTC, or a
    POSIX-style offset, which counts hours *west*) sets what a timestamptz without an
    offset means and how timestamptz text looks; it is reported to the client; casts
    between timestamp and timestamptz use it; a bad zone is 22023."""
    import datetime as dt

    q = "SELECT '2000-07-01 12:00'::timestamptz, '2000-07-01 12:00+00'::timestamptz::text, " \
        "'2000-07-01 12:00+00'::timestamptz::timestamp"
    cases = {
        "Europe/Rome": ("2000-07-01 12:00:00+02", "2000-07-01 12:00:00+00", "2000-07-01 14:00:00+02", "14:00"),
        "-02:00": ("2000-07-01 12:00:00+02", "2000-07-01 12:00:00+00", "2000-07-01 14:00:00+02", "14:00"),
        "+05:30": ("2000-07-01 12:00:00-05:30", "2000-07-01 12:00:00+00", "2000-07-01 06:30:00-05:30", "06:30"),
        "UTC": ("2000-07-01 12:00:00+00", "2000-07-01 12:00:00+00", "2000-07-01 12:00:00+00", "12:00"),
    }
    try:
        for zone, (local, _, utc_noon, hm) in cases.items():
            conn.execute(f"SET timezone = '{zone}'")
            assert conn.info.parameter_status("TimeZone") == zone
            raw = conn.pgconn.exec_(q.encode())
            assert raw.get_value(0, 0).decode() == local
            assert raw.get_value(0, 1).decode() == utc_noon
            assert raw.get_value(0, 2).decode() == f"2000-07-01 {hm}:00"
            for binary in (False, True):
                got = conn.cursor(binary=binary).execute("SELECT '2000-07-01 12:00+00'::timestamptz").fetchone()[0]
                assert got == dt.datetime(2000, 7, 1, 12, tzinfo=dt.timezone.utc)
        assert conn.execute("SELECT 'epoch'::timestamptz::text").fetchone() == ("1970-01-01 00:00:00+00",)
        conn.execute("SET timezone = 'Europe/Rome'")
        # a query evaluated in a worker process (its backreference needs Python's
        # backtracking engine, planner.guard) follows the session's TimeZone as well
        worker_sql = r"SELECT (v || CASE WHEN v ~ '(0)\1' THEN '' END)::timestamptz::text " \
                     "FROM (VALUES ('2000-07-01 12:00+00')) t(v)"
        assert conn.execute(worker_sql).fetchone() == ("2000-07-01 14:00:00+02",)
        conn.execute("SELECT set_config('TimeZone', 'Asia/Kolkata', false)")
        assert conn.execute("SELECT '1900-01-01'::timestamptz::text").fetchone() == ("1900-01-01 00:00:00+05:21:10",)
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SET timezone = 'Nowhere/Atall'")
        assert e.value.sqlstate == "22023"
    finally:
        conn.execute("RESET timezone")


def test_parameters_have_their_declared_types(conn):
    """PostgreSQL 55.2.3: a parameter whose type the client gave in Parse has that type,
    text or binary (psycopg declares int2/int4/int8/numeric for ints by size, numeric
    for Decimal): ``SELECT $1`` returns it as such; bad text for the type fails the Bind
    with 22P02 and the session goes on; json, name and "char" arrive binary as text."""
    from decimal import Decimal

    from psycopg.types.json import Json

    for fmt in ("s", "t", "b"):
        cur = conn.cursor()
        for v, typ in ((1, "smallint"), (2**20, "integer"), (2**40, "bigint"), (2**70, "numeric"),
                       (Decimal("1.50"), "numeric")):
            assert cur.execute(f"SELECT %{fmt}, pg_typeof(%{fmt})", (v, v)).fetchone() == (v, typ)
        assert cur.execute(f"SELECT %{fmt}::text, %{fmt} || 'x'", (Json({"a": 1}), "y")).fetchone() \
            == ('{"a": 1}', "yx")
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT %s::int + 1", ("nope",))  # an untyped one: 22P02 from the cast
    assert e.value.sqlstate == "22P02"
    # a typed constant folds where another type is wanted; arrays of several dimensions cast
    assert conn.execute("SELECT i FROM generate_series(1, %s) AS i", (2,)).fetchall() == [(1,), (2,)]
    assert conn.execute("SELECT %s::int[], 'NaN'::float8 = %s", ([[1, 2], [3, 4]], float("nan"))).fetchone() \
        == ([[1, 2], [3, 4]], True)  # NaN equals NaN among floats (PostgreSQL's float order)
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT %b", ("a\x00b",))  # in text psycopg refuses it itself
    assert e.value.sqlstate == "22021"
    res = conn.pgconn.exec_params(b"SELECT $1", [b"12x"], [21])
    assert res.error_field(psycopg.pq.DiagnosticField.SQLSTATE) == b"22P02"
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_set_config_is_reported_and_copy_runs_in_the_extended_protocol(server, conn):
    """ParameterStatus follows every change of a reported variable, set_config()'s too
    (psycopg reads TimeZone from it for binary timestamptz); COPY TO STDOUT answers an
    Execute with CopyOutResponse, as PostgreSQL does (psycopg's stream() then refuses it
    with ProgrammingError, not an internal error)."""
    try:
        conn.execute("SELECT set_config('TimeZone', 'Europe/Rome', false)")
        assert conn.info.parameter_status("TimeZone") == "Europe/Rome"
        got = conn.cursor(binary=True).execute("SELECT '2000-07-01 12:00+00'::timestamptz").fetchone()[0]
        assert got.utcoffset().total_seconds() == 7200
    finally:
        conn.execute("RESET timezone")
    c = server.connect()  # psycopg leaves this connection busy after refusing the COPY: closed, not reused
    try:
        with pytest.raises(psycopg.ProgrammingError):
            for _ in c.cursor().stream("COPY (SELECT 1) TO STDOUT"):
                pass
    finally:
        c.close()


def test_dates_outside_python_years(conn):
    """PostgreSQL 8.5.1: dates and timestamps before year 1 (BC), after 9999 and
    ``infinity`` are values: read, written in text (DateStyle's form, `` BC``) and binary
    (PostgreSQL's day and microsecond counts; psycopg then raises DataError, as against
    PostgreSQL), compared, and reached by arithmetic; tables refuse them (0A000)."""
    raw = conn.pgconn.exec_(b"SELECT 'infinity'::date, '1000-01-01 BC'::date, '9999-12-31'::date + 1, "
                            b"'-infinity'::timestamp, '9999-12-31 23:59:59'::timestamp + '1s'::interval, "
                            b"'1000-01-01 12:00+00 BC'::timestamptz, 'infinity'::date > '2000-01-01'::date")
    assert [raw.get_value(0, i).decode() for i in range(7)] == [
        "infinity", "1000-01-01 BC", "10000-01-01", "-infinity", "10000-01-01 00:00:00",
        "1000-01-01 12:00:00+00 BC", "t"]
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        cur.execute("SELECT %s::date + 1", ("9999-12-31",))
        with pytest.raises(psycopg.DataError, match="date too large"):
            cur.fetchone()
        cur.execute("SELECT '-infinity'::timestamptz")
        with pytest.raises(psycopg.DataError, match="timestamp too small"):
            cur.fetchone()
    assert conn.execute("SELECT 'epoch'::timestamp + '1d 3h'::interval").fetchone()[0].isoformat() == "1970-01-02T03:00:00"
    conn.execute("CREATE TABLE far_d (d date)")
    try:
        with pytest.raises(psycopg.Error) as e:
            conn.execute("INSERT INTO far_d VALUES ('infinity')")
        assert e.value.sqlstate == "0A000"
    finally:
        conn.execute("DROP TABLE far_d")


def test_transaction_modes(server):
    """PostgreSQL 19.11.1: default_transaction_read_only/deferrable are what BEGIN starts
    with; transaction_read_only/deferrable show the running block's modes (and the
    defaults outside one); a read-only block refuses writes (25006)."""
    with server.connect(autocommit=False) as c:
        c.read_only = True
        assert c.execute("SELECT current_setting('transaction_read_only')").fetchone() == ("on",)
        c.rollback()
        c.read_only = None
        c.execute("SELECT set_config('default_transaction_read_only', 'on', false)")
        c.commit()
        assert c.execute("SELECT current_setting('transaction_read_only'), "
                         "current_setting('default_transaction_read_only')").fetchone() == ("on", "on")
        with pytest.raises(psycopg.Error) as e:
            c.execute("CREATE TABLE never_made (a int)")
        assert e.value.sqlstate == "25006"
        c.rollback()
        c.execute("SET default_transaction_read_only = off")
        c.commit()
        c.deferrable = True
        assert c.execute("SELECT current_setting('transaction_deferrable'), current_setting('transaction_read_only')"
                         ).fetchone() == ("on", "off")
        c.rollback()


def test_pg_get_indexdef_and_psql_shows_it(server):
    """pg_get_indexdef as Materialize answers it (USING arrangement); psql's \\d of the
    index shows its definition."""
    from server import psql

    with server.connect() as c:
        c.execute("CREATE TABLE gid (a int, b text)")
        c.execute("CREATE INDEX gid_ab ON gid (a, b)")
        oid = c.execute("SELECT oid FROM pg_class WHERE relname = 'gid_ab'").fetchone()[0]
        assert c.execute("SELECT pg_get_indexdef(%s::oid)", (oid,)).fetchone() == (
            "CREATE INDEX gid_ab ON gid USING arrangement (a,b)",)
        assert c.execute("SELECT pg_get_indexdef(%s::oid, 2, true), pg_get_indexdef(%s::oid, 0, true)",
                         (oid, oid)).fetchone() == ("b", "CREATE INDEX gid_ab ON gid USING arrangement (a,b)")
        assert c.execute("SELECT pg_get_indexdef(c.oid) FROM pg_class c WHERE relname = 'gid'").fetchone() == (None,)
        # what the index allows (an arrangement: read whole, no order): its access method's,
        # its own and its key columns' properties; NULL past its keys and for the table
        assert c.execute("SELECT pg_indexam_has_property(relam, 'can_multi_col'), pg_indexam_has_property(relam, "
                         "'CAN_ORDER'), pg_index_has_property(oid, 'index_scan'), pg_index_column_has_property(oid, 2, "
                         "'orderable'), pg_index_column_has_property(oid, 2, 'asc'), pg_index_column_has_property(oid, "
                         "3, 'orderable'), pg_index_has_property('gid'::regclass, 'clusterable') FROM pg_class "
                         "WHERE relname = 'gid_ab'").fetchone() == (True, False, False, False, None, None, None)
    out = psql(server, r"\d gid")  # the table lists its index with the text after USING
    assert out.returncode == 0, out.stderr
    assert 'Indexes:\n    "gid_ab" arrangement (a,b)' in out.stdout, out.stdout
    out = psql(server, r"\d gid_ab")
    assert out.returncode == 0, out.stderr
    assert 'Index "public.gid_ab"' in out.stdout and 'arrangement, for table "public.gid"' in out.stdout, out.stdout
