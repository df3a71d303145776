"""Differential suite for intervals and datetime typmods: the same statements on sqlfront
(through the wire) and on a real PostgreSQL (tests/pg_reference.py), compared on
PostgreSQL's text output, errors by SQLSTATE.

Constants (``SELECT INTERVAL '1-3' YEAR TO MONTH``) are evaluated in environmentd (the
interpreter path), in each IntervalStyle; the same values read from a table go through
Spark (``spark_exec/lower.py``): typmod casts, EXTRACT, interval to text, timestamp(p).
"""

from __future__ import annotations

import pytest

from pg_reference import differential_pair, text_answer

TABLE = "ivx_t"
#: (interval, timestamp) rows of the table; k is the row number
ROWS = [
    ("1 year 2 mons 3 days 04:05:06.789", "2024-05-06 07:08:09.5"),
    ("-1 year -2 mons +3 days -04:05:06.5", "1999-12-31 23:59:59.5"),
    ("-00:01:00", "2000-01-01 00:00:00.45"),
    ("25:30:00", "1970-01-01 00:00:00.55"),
    ("-25:30:00.000001", "1900-05-06 07:08:09.45"),
    ("0", "2000-01-01 00:00:00"),
    ("-13 months", "2024-02-29 23:59:59.999999"),
    ("1 day -1 second", "1999-12-31 23:59:58.5"),
    ("-1 days +1 second", "2024-05-06 07:08:09.05"),
    ("100 years 1.5 seconds", "2024-05-06 07:08:09.25"),
    ("7 days 05:04:03.2", "2024-05-06 07:08:09.35"),
    ("-0.5 seconds", "1969-12-31 23:59:59.5"),
    (None, None),
]


def _lit(v: str | None) -> str:
    return "NULL" if v is None else f"'{v}'"


SETUP = [
    f"CREATE TABLE {TABLE} (k int, s text, iv interval, ts timestamp, tz timestamptz)",
    f"INSERT INTO {TABLE} VALUES " + ", ".join(f"({k}, {_lit(iv)}, {_lit(iv)}, {_lit(ts)}, {_lit(ts)})"
                                               for k, (iv, ts) in enumerate(ROWS, 1)),
]

#: literals, as ``INTERVAL 'text' qualifier``: the issue's examples and the input forms
LITERALS = [
    ("1-3", "YEAR TO MONTH"), ("7 5:4:3.2", "DAY TO SECOND"), ("-1", "MINUTE"), ("100-13", ""), ("-1-3", ""),
    ("1 year 2 months 3 days 4 hours 5 minutes 6 seconds", ""), ("@ 1 year 2 mons ago", ""),
    ("@ 1 year 2 mons -3 days ago", ""), ("1 year -2 mons", ""), ("-1 2:03:04", ""), ("+1 -2:03:04", ""),
    ("P1Y2M3DT4H5M6S", ""), ("P0001-02-03T04:05:06", ""), ("P1Y2M3DT4H5M6.5S", ""), ("PT-1.5S", ""),
    ("P1.5Y", ""), ("P1W", ""), ("P00010203T040506", ""), ("p1y", ""), ("1 ago", ""), ("1:70", ""),
    ("+1:70", ""), ("75:30.5", ""), ("1:59:60.5", ""), ("10:00", "MINUTE TO SECOND"), ("10:00.5", ""),
    ("1.5 years", ""), ("1.5 months", ""), ("1.5 weeks", ""), ("-0.5 days", ""), ("0.0000015 seconds", ""),
    ("1 day 1 day", ""), ("1 2", ""), ("1 2", "DAY TO HOUR"), ("1 2:03", "DAY TO MINUTE"),
    ("1 2:03:04.5678", "DAY TO SECOND(2)"), ("1.234567", "SECOND(3)"), ("-2.5", "SECOND(0)"),
    ("1 day 2 hours 3 minutes", "HOUR"), ("1 year 2 months 3 days", "YEAR"), ("-13 months", "YEAR"),
    ("1.5", "MINUTE"), ("1.5", "DAY"), ("1.5", "MONTH"), ("1:02", "HOUR TO MINUTE"), ("1:02", "MINUTE TO SECOND"),
    ("2147483648 days", ""), ("178956971 years", ""), ("9223372036854775808 microseconds", ""),
    ("1 qtr", ""), ("1d2h", ""), ("1 day,2 hours", ""), ("- 1 day", ""), ("1 mon -1 day +01:00:00", ""),
    ("-1 mons -1 days -1 mins -1 secs", ""), ("12345678:00:00", ""), ("0", ""),
]
STYLES = ("postgres", "postgres_verbose", "sql_standard", "iso_8601")

#: queries over the table, ``{t}`` the table: each runs on Spark (over the table) and in
#: the interpreter (over the same rows as VALUES)
TABLE_QUERIES = [
    "SELECT k, iv, iv::text, iv::interval minute, iv::interval hour, iv::interval day, iv::interval year, "
    "iv::interval month, iv::interval day to minute, iv::interval second(1), iv::interval day to second(0) "
    "FROM {t} ORDER BY k",
    "SELECT k, extract(year from iv), extract(month from iv), extract(day from iv), extract(hour from iv), "
    "extract(minute from iv), extract(second from iv), extract(milliseconds from iv), extract(microseconds from iv), "
    "extract(epoch from iv), extract(quarter from iv), extract(week from iv), extract(decade from iv), "
    "extract(century from iv), date_part('minute', iv), date_part('second', iv) FROM {t} ORDER BY k",
    "SELECT k, ts::timestamp(0), ts::timestamp(1), ts::timestamp(5), tz::timestamptz(0), tz::timestamptz(2), "
    "ts::timestamptz(0), ts + iv FROM {t} ORDER BY k",
]


def _values_table() -> str:
    """The table's rows as VALUES typed like the table: a query over it (a WITH query
    named like the table) runs in the interpreter."""
    rows = ", ".join(f"({k}, {_lit(iv)}, {_lit(ts)})" for k, (iv, ts) in enumerate(ROWS, 1))
    return (f"(SELECT k::int AS k, iv::text AS s, iv::interval AS iv, ts::timestamp AS ts, ts::timestamptz AS tz "
            f"FROM (VALUES {rows}) AS v(k, iv, ts))")


@pytest.fixture(scope="module")
def both(server):
    with differential_pair(server, SETUP, [TABLE]) as pair:
        yield pair


_run = text_answer  # (rows as PostgreSQL's text, or None), (SQLSTATE or None)


@pytest.mark.parametrize("style", STYLES)
def test_interval_literals_match_postgres_in_each_style(both, style):
    """Constants, evaluated in environmentd: input read and output written in ``style``."""
    ours, theirs = both
    mismatches = []
    try:
        for conn in (ours, theirs):
            conn.execute(f"SET IntervalStyle = {style}")
        for text, qualifier in LITERALS:
            sql = f"SELECT INTERVAL '{text}' {qualifier}"
            got, expected = _run(ours, sql), _run(theirs, sql)
            if got != expected:
                mismatches.append((sql, got, expected))
    finally:
        for conn in (ours, theirs):
            conn.execute("RESET IntervalStyle")
    assert not mismatches


@pytest.mark.parametrize("engine", ("spark", "python"))
@pytest.mark.parametrize("sql", TABLE_QUERIES)
def test_table_data_matches_postgres(both, sql, engine):
    """The same values as data: typmod casts, EXTRACT and output on Spark (over the
    table) and in the interpreter (over VALUES), each equal to PostgreSQL's answer."""
    ours, theirs = both
    sql = sql.format(t=TABLE)
    expected = _run(theirs, sql)
    got = _run(ours, sql if engine == "spark" else f"WITH {TABLE} AS {_values_table()} {sql}")
    assert got == expected, sql


def test_text_to_interval_on_table_data_is_refused_not_guessed(both):
    """Spark's interval syntax is not PostgreSQL's: a text column cast to interval is an
    error (0A000) on table data rather than another answer."""
    ours, theirs = both
    sql = f"SELECT s::interval FROM {TABLE}"
    assert _run(ours, sql)[1] == "0A000"
    assert _run(theirs, sql)[1] is None


def test_interval_style_is_validated_and_reported(both):
    ours, theirs = both
    for conn in (ours, theirs):
        assert _run(conn, "SET IntervalStyle = 'nonsense'")[1] == "22023"
    ours.execute("SET IntervalStyle = 'ISO_8601'")
    try:
        assert ours.execute("SHOW IntervalStyle").fetchone()[0] == "iso_8601"
        assert ours.info.parameter_status("IntervalStyle") == "iso_8601"
        # the Spark lowering follows the session's style too (it runs on a replica's
        # thread, given the statement's text settings): refused there, not answered in
        # postgres style
        assert _run(ours, f"SELECT iv::text FROM {TABLE}")[1] == "0A000"
    finally:
        ours.execute("RESET IntervalStyle")


def test_typmod_columns_round_stored_values_and_report_their_typmod(both):
    """Columns declared ``timestamp(0)``, ``interval day to second(1)`` ...: an INSERT
    rounds and truncates as PostgreSQL's assignment does, RowDescription and pg_attribute
    carry the typmod, and the stored values read back (from Spark) as PostgreSQL's."""
    ours, theirs = both
    setup = [
        "CREATE TABLE ivx_mod (k int, a interval day to second(1), b interval hour, c timestamp(0), "
        "d timestamptz(2), e interval year)",
        "INSERT INTO ivx_mod VALUES (1, '1 day 02:03:04.56', '1 day 02:03:04', '2024-05-06 07:08:09.5', "
        "'2024-05-06 07:08:09.555+00', '1 year 13 months'), (2, '-1 day -00:00:00.05', '-90 minutes', "
        "'1999-12-31 23:59:59.5', '1999-12-31 23:59:59.995+00', '-13 months')",
    ]
    queries = ["SELECT * FROM ivx_mod ORDER BY k",
               "SELECT attname, atttypmod, format_type(atttypid, atttypmod) FROM pg_attribute "
               "WHERE attrelid = 'ivx_mod'::regclass AND attnum > 1 ORDER BY attnum"]
    try:
        for conn in (ours, theirs):
            for stmt in setup:
                conn.execute(stmt)
        for sql in queries:
            assert _run(ours, sql) == _run(theirs, sql), sql
        described = [[(d.type_code, d.precision, d.scale) for d in conn.execute("SELECT a, b, c, d, e FROM ivx_mod")
                      .description] for conn in (ours, theirs)]
        assert described[0] == described[1]
    finally:
        for conn in (ours, theirs):
            conn.execute("DROP TABLE IF EXISTS ivx_mod")
