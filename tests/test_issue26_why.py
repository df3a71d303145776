"""Issue 26's "Why" list over table data: each expression the issue names, as a column of
a query over a table (so it runs on Spark, not folded at plan time), on sqlfront and on a
real PostgreSQL, compared on PostgreSQL's text output (errors by SQLSTATE).

The table has every type the list touches: unconstrained numerics (``n``, ``y``: their
values typed without trailing zeros, which a stored unconstrained numeric does not keep,
docs/differences.md), ``numeric(10,3)`` and ``numeric(6,1)`` (``m``, ``q``: 1.0, 100.0,
2.5), float8, int, text, timestamp, timestamptz, date, jsonb and int[].
Scalar samples run batched in one query, aggregates in others (a batch that errors is
split until each sample runs alone: ``pg_reference.batched_answers``); FROM forms and
grouped aggregates are whole queries.
"""

from __future__ import annotations

import pytest

from pg_reference import batched_answers, differential_pair, text_answer

TABLE = "why26"
ROWS = 5
SETUP = [
    f"CREATE TABLE {TABLE} (k int, i int, n numeric, m numeric(10,3), q numeric(6,1), f float8, s text, "
    "t timestamp, tz timestamptz, d date, j jsonb, a int[], b text[], x int, y numeric)",
    f"""INSERT INTO {TABLE} VALUES
    (1, 1, 1, 1.0, 1.0, 0.5, 'Thomas Wolf', '2024-01-05 12:00', '2024-07-05 12:00+00', '2001-02-16',
     '{{"a": 1, "b": 2}}', '{{1,2,3}}', '{{x,y}}', 1, 2.5),
    (2, 12, 100, 100.0, 100.0, 1.5, 'Txxxxas', '2020-02-11 15:44:17', '2024-01-05 23:30+00', '9999-12-31',
     '{{"a": "b", "c": "d"}}', '{{4,5}}', '{{p,q,r}}', 2, 3.5),
    (3, -3, 2.5, 2.5, 2.5, -2.25, 'xx~~yy~~zz', '1999-12-31 23:59:59.5', '1999-12-31 23:59:59.5+00', '2000-02-29',
     '[1, "a", 2]', '{{}}', '{{}}', 4, 1),
    (4, 7, 0.125, 12.345, 0.5, 10000000000, 'Weird Wonder', '2001-01-01 00:30', '2001-01-01 00:30-05',
     '1999-07-04', '{{"a": {{"c": null}}, "b": [1, 2]}}', '{{7}}', '{{z}}', 4, 1),
    (5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 7)""",
]

#: scalar expressions over the table's columns, by the issue's groups
SCALARS = [
    # math
    "sin(f)", "cos(f)", "atan2(f, i)", "gcd(i, 18)", "lcm(i, 4)", "gcd(n, 1.5)", "lcm(m, 0.25)", "gcd(i::int8, 6)",
    "log(2, n)", "log(n + 1, 1000)", "log(q + 1, m + 1)", "log(2.5, q)",
    "width_bucket(f, 0, 10, 5)", "width_bucket(n, 0, 200, 4)", "width_bucket(m, 200, 0, 3)", "width_bucket(i, 0, 20, 4)",
    "i << 2", "i & 3", "i >> 1", "i | 4", "i # 5", "~i", "i::int8 << 40", "i::int2 & 3::int2",
    "exp(n)", "exp(m)", "exp(q)", "exp(y)", "log(n)", "log(m)", "log(q)", "log(y)", "ln(n)", "ln(m)", "ln(q)",
    "log10(q)", "exp(sin(f))", "ln(abs(f))", "log(abs(f))",
    # date/time
    "t AT TIME ZONE 'America/New_York'", "tz AT TIME ZONE 'America/New_York'", "timezone('Asia/Tokyo', tz)",
    "t AT TIME ZONE 'UTC'", "to_timestamp(i)", "to_timestamp(f)", "to_timestamp(0 * k)",
    "justify_hours(make_interval(hours => i * 10))", "justify_hours(t - timestamp '1999-12-01')",
    "date_bin(interval '15 minutes', t, timestamp '2001-01-01')",
    "date_bin(interval '1 hour', tz, timestamptz '2001-01-01 00:00+00')",
    "isfinite(d)", "isfinite(t)", "isfinite(d + 1)",
    # formatting
    "to_char(n, '999.99')", "to_char(m, '999.99')", "to_char(q, '999.99')", "to_char(y, 'FM999.99')",
    "to_char(m, '99999.9')",
    # strings and bytes
    r"substring(s from 'W\w+')", "substring(s from 'x(y+)')", "overlay(s placing 'hom' from 2 for 4)",
    "overlay(s placing 'ab' from k)", "bit_length(s)", "convert_to(s, 'UTF8')", "string_to_array(s, '~~')",
    "string_to_array(s, '~~', 'yy')", "string_to_array(s, NULL)", "string_to_array(s, '')",
    # arrays
    "array_append(a, i)", "array_prepend(i, a)", "array_append(b, s)", "array_prepend(s, b)",
    # jsonb
    "jsonb_build_array(k, n, s, j)", "jsonb_build_array(m, f, t, a)", "to_jsonb(n)", "to_jsonb(m)", "to_jsonb(s)",
    "to_jsonb(a)", "to_jsonb(t)", "to_jsonb(tz)", "to_jsonb(f)", "jsonb_set(j, '{0}', to_jsonb(i))",
    "jsonb_set(jsonb_build_object('a', j), '{a}', to_jsonb(i))",
    "jsonb_set(j, '{0}', '[2,3]', false)", "jsonb_pretty(j)", "j - 'a'", "j @> '{\"a\": 1}'", "'{\"a\": 1}' <@ j",
    "j ? 'a'", "j @> j", "j <@ '{\"a\": 1, \"b\": 2, \"c\": \"d\"}'", "j ? s",
    # system
    "pg_typeof(m)", "pg_typeof(n)", "pg_typeof(q * 2)",
]

#: aggregates over the table
AGGREGATES = [
    "corr(y, x)", "regr_slope(y, x)", "regr_intercept(y, x)", "regr_count(y, x)", "regr_r2(y, x)",
    "regr_avgx(y, x)", "regr_avgy(y, x)", "regr_sxx(y, x)", "regr_syy(y, x)", "regr_sxy(y, x)",
    "covar_pop(y, x)", "covar_samp(y, x)", "corr(f, i)", "regr_slope(f, k)", "covar_samp(f, n)",
    "bit_and(i)", "bit_or(i)", "bit_and(x::int8)", "bit_or(x::int2)",
    "jsonb_object_agg(k, n)", "jsonb_object_agg(k, m)", "jsonb_object_agg(s, m) FILTER (WHERE s IS NOT NULL)",
    "stddev(n)", "stddev_pop(n)", "variance(n)", "var_pop(n)", "var_samp(y)", "stddev_samp(y)",
    "stddev(m)", "variance(m)", "stddev(q)", "var_pop(q)",
    "stddev(f)", "stddev_pop(f)", "variance(f)", "var_pop(f)", "stddev(f * 3)", "variance(f / 7)",
    "stddev(i)", "variance(i)", "stddev(x::float8)",
]

#: aggregates that sort their input (DISTINCT): batched apart from ``AGGREGATES``, as PostgreSQL
#: (16 and later) may sort a query's whole input for them (presorted aggregates), and the
#: order of a float's sums is the order of its input
SORTED_AGGREGATES = ["string_agg(DISTINCT s, ';')", "string_agg(DISTINCT x::text, ';')",
                     "string_agg(DISTINCT y::text, ',')", "string_agg(DISTINCT s, ',') FILTER (WHERE k > 1)"]

#: whole queries, ``{t}`` the table
QUERIES = [
    "SELECT k, u, v FROM {t}, unnest(a, b) AS z(u, v) ORDER BY 1, 2, 3",
    "SELECT k, u, v, w FROM {t}, unnest(a, b, ARRAY[k, k + 1]) AS z(u, v, w) ORDER BY 1, 2, 3, 4",
    "SELECT * FROM {t}, unnest(a, b) WITH ORDINALITY AS z(u, v, o) WHERE k < 3 ORDER BY k, o",
    "SELECT k % 2 AS g, stddev(f), variance(f), stddev(n), variance(m), corr(y, x), regr_slope(f, x), bit_or(i), "
    "jsonb_object_agg(k, q) FROM {t} GROUP BY 1 ORDER BY 1",
    "SELECT k % 2 AS g, string_agg(DISTINCT s, ';'), string_agg(DISTINCT y::text, ';') FROM {t} GROUP BY 1 ORDER BY 1",
    "SELECT k, stddev(f) OVER w, var_pop(f * 3) OVER w, variance(n) OVER w FROM {t} "
    "WINDOW w AS (ORDER BY k ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) ORDER BY k",
]


@pytest.fixture(scope="module")
def both(server):
    with differential_pair(server, SETUP, [TABLE]) as pair:
        yield pair


@pytest.fixture(scope="module")
def answers(both):
    """sample -> (sqlfront's answer, PostgreSQL's answer), each batched."""
    ours, theirs = both
    out = {}
    for samples, aggregate in ((SCALARS, False), (AGGREGATES, True), (SORTED_AGGREGATES, True)):
        pg = batched_answers(theirs, samples, TABLE, ROWS, aggregate, batch=len(samples))
        mine = batched_answers(ours, samples, TABLE, ROWS, aggregate, batch=len(samples))
        out.update({s: (mine[s], pg[s]) for s in samples})
    return out


@pytest.mark.parametrize("sample", SCALARS + AGGREGATES + SORTED_AGGREGATES)
def test_why_expression_matches_postgres(answers, sample):
    got, expected = answers[sample]
    assert expected[1] is None, f"the sample errs on PostgreSQL: {expected}"
    assert got == expected, sample


@pytest.mark.parametrize("sql", QUERIES)
def test_why_query_matches_postgres(both, sql):
    ours, theirs = both
    sql = sql.format(t=TABLE)
    expected = text_answer(theirs, sql)
    assert expected[1] is None, f"the query errs on PostgreSQL: {expected}"
    assert text_answer(ours, sql) == expected, sql


def test_txid_current_is_a_growing_bigint(both):
    """txid_current() has no PostgreSQL value to compare with: a bigint, the same within a
    statement, that does not go back between statements."""
    ours, _ = both
    rows, state = text_answer(ours, f"SELECT k, txid_current(), pg_typeof(txid_current()) FROM {TABLE} ORDER BY k")
    assert state is None
    assert {r[2] for r in rows} == {"bigint"} and len({r[1] for r in rows}) == 1
    first = int(rows[0][1])
    rows, state = text_answer(ours, f"SELECT txid_current() FROM {TABLE} WHERE k = 1")
    assert state is None and int(rows[0][0]) >= first > 0
