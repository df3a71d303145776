"""The wrong answers of issue 15, each pinned over table rows (so nothing is folded at
plan time and Spark computes them), through the wire."""

from __future__ import annotations

import psycopg
import pytest


@pytest.fixture(scope="module")
def rows(server):
    with server.connect() as c:
        c.autocommit = True
        c.execute("DROP TABLE IF EXISTS wa_t")
        c.execute("CREATE TABLE wa_t (k int, x int, s text, d date, j jsonb, b bool)")
        c.execute("""INSERT INTO wa_t VALUES (1, 1, 'Hello World', '2024-01-05', '{"a": 1}', true),
                     (2, 2, 'xx', '2024-01-06', '{"b": 2}', false), (3, 3, NULL, NULL, NULL, NULL),
                     (4, NULL, 'ab', '2024-01-07', '[1]', true), (5, 5, 'dl', '2024-01-08', '{}', true)""")
        c.execute("DROP TABLE IF EXISTS wa_v")
        c.execute("CREATE TABLE wa_v (v varchar(3))")
    return server


def one(server, sql):
    with server.connect() as c:
        c.autocommit = True
        return c.execute(sql).fetchall()


def test_count_star_filter_counts_only_matching_rows(rows):
    assert one(rows, "SELECT count(*) FILTER (WHERE x > 1), count(*) FROM wa_t") == [(3, 5)]


def test_jsonb_concat_merges_objects(rows):
    assert one(rows, "SELECT j || '{\"c\": 3}' FROM wa_t WHERE k = 1") == [({"a": 1, "c": 3},)]


def test_ltrim_rtrim_use_their_characters(rows):
    assert one(rows, "SELECT ltrim(s, 'He'), rtrim(s, 'dl') FROM wa_t WHERE k = 1") == [("llo World", "Hello Wor")]


def test_concat_prints_booleans_as_t_and_f(rows):
    assert one(rows, "SELECT concat(s, b) FROM wa_t WHERE k IN (1, 2) ORDER BY k") == [("Hello Worldt",), ("xxf",)]


def test_extract_dow_of_a_friday_is_5(rows):
    r = one(rows, "SELECT extract(dow FROM d)::text, extract(year FROM d)::text FROM wa_t WHERE k = 1")
    assert r == [("5", "2024")]


def test_array_agg_order_by_places_nulls_last(rows):
    assert one(rows, "SELECT array_agg(x ORDER BY b, x) FROM wa_t") == [([2, 1, 5, None, 3],)]
    assert one(rows, "SELECT array_agg(x ORDER BY x) FROM wa_t") == [([1, 2, 3, 5, None],)]
    assert one(rows, "SELECT array_agg(x ORDER BY x DESC) FROM wa_t") == [([None, 5, 3, 2, 1],)]


def test_negative_substring_length_is_22011(rows):
    with pytest.raises(psycopg.errors.SubstringError):
        one(rows, "SELECT substr(s, 2, -1) FROM wa_t")


def test_insert_select_into_varchar_too_long_is_22001(rows):
    with pytest.raises(psycopg.errors.StringDataRightTruncation):
        one(rows, "INSERT INTO wa_v SELECT s FROM wa_t WHERE k = 1")
    with rows.connect() as c:
        c.autocommit = True
        c.execute("INSERT INTO wa_v SELECT s FROM wa_t WHERE k = 2")
    assert one(rows, "SELECT v FROM wa_v") == [("xx",)]


def test_upper_with_two_arguments_is_undefined(rows):
    with pytest.raises(psycopg.errors.UndefinedFunction):
        one(rows, "SELECT upper(s, 'b') FROM wa_t")


def test_sign_and_avg_scale(rows):
    assert one(rows, "SELECT sign(x - 2)::text FROM wa_t WHERE k = 1") == [("-1",)]
    assert one(rows, "SELECT avg(x)::text FROM wa_t") == [("2.7500000000000000",)]


def test_numeric_transcendentals_on_table_data_have_postgresql_digits(rows):
    """Issue 26: Spark has these in double precision only (exp(1.5) is 4.4816890703380648,
    the double 4.4816890703380645); the replica runs the Python implementation, so each
    value has PostgreSQL's digits and scale, as a result column and as text."""
    got = one(rows, "SELECT exp(x::numeric), ln(x::numeric), log(x::numeric), x ^ 0.5, log(2, x::numeric), "
                    "exp(x::numeric)::text, sqrt(x::numeric + 3)::text FROM wa_t WHERE k = 2")
    assert [str(v) for v in got[0]] == ["7.3890560989306502", "0.6931471805599453", "0.3010299956639812",
                                        "1.4142135623730950", "1.0000000000000000", "7.3890560989306502",
                                        "2.236067977499790"]


def test_float_transcendentals_on_table_data_answer(rows):
    """An integer argument takes the double precision function, as in PostgreSQL (float8 is
    the preferred numeric type), so exp(x) over table data answers."""
    assert one(rows, "SELECT exp(x - 1), sqrt(x), x::float8 ^ 0.5, pg_typeof(exp(x))::text FROM wa_t WHERE k = 1") \
        == [(1.0, 1.0, 1.0, "double precision")]


def test_overflow_checks_pass_nulls_through(rows):
    """Issue 26: exp and cosh check for overflow; a NULL argument (here from the rows a
    LEFT JOIN's ON clause leaves out) is NULL, not 22003."""
    assert one(rows, "SELECT a.k, exp(b.x - 1), cosh(b.x - 1) FROM wa_t a LEFT JOIN wa_t b ON a.k = b.k AND b.x < 2 "
                     "ORDER BY 1") == [(1, 1.0, 1.0)] + [(k, None, None) for k in (2, 3, 4, 5)]
