"""Differential suite: every function sample of the registry (``planner.functions``),
as an expression over table rows (so nothing is folded at plan time), run on sqlfront
(Spark) and on a real PostgreSQL, compared on PostgreSQL's text output; errors are
compared by SQLSTATE. Deliberate differences are listed in ``DIFFERENCES`` with their
reasons; entries that declare ``differs`` give theirs.
"""

from __future__ import annotations

import collections
import concurrent.futures
import queue

import pytest

from pg_reference import batched_answers, differential_pair, text_answer
from planner import functions as fn

TABLE = "fx_t"
SETUP = [
    f"CREATE TABLE {TABLE} (k int, i int, n numeric(10,3), f float8, s text, d date, ts timestamp, b bool, "
    "j jsonb, a int[])",
    f"""INSERT INTO {TABLE} VALUES
    (1, 1, 1.5, 1.5, 'Hello', '2024-01-05', '2024-01-05 13:45:30.5', true, '{{"a": 1, "b": [1, 2]}}', '{{1,2,3}}'),
    (2, -3, -2.25, -0.5, '  padded  ', '2023-12-31', '2023-12-31 23:59:59', false, '[1, "x", null]', '{{4,NULL}}'),
    (3, 0, 0, 0, 'a,b,,c', '2000-02-29', '2000-02-29 00:00:00', NULL, '"str"', '{{}}'),
    (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (5, 42, 12345.678, 10000000000, 'Äpfel ÖL', '1999-07-04', '1999-07-04 06:07:08.123456', true,
     '{{"a": {{"c": null}}}}', '{{7}}')""",
]

#: a table of unconstrained numerics, whose values have scales of their own in PostgreSQL
#: (numeric's dscale) where a Spark decimal column has one (issue 26): no value is typed
#: with trailing zeros, which a stored unconstrained numeric does not keep (docs/differences.md)
NUMERIC_TABLE = "fx_u"
NUMERIC_ROWS = "(1, 1, 2), (2, 1.5, 0.25), (3, 0.001, 3), (4, 123456.789, -7.5), (5, -2.25, 1.125), (6, NULL, NULL), " \
    "(7, 0, 0.5)"
SETUP += [f"CREATE TABLE {NUMERIC_TABLE} (k int, n numeric, m numeric)",
          f"INSERT INTO {NUMERIC_TABLE} VALUES {NUMERIC_ROWS}"]

#: queries over ``NUMERIC_TABLE`` (``{u}``): on Spark over the table, and in the Python
#: interpreter over the same rows as VALUES
NUMERIC_QUERIES = [
    "SELECT k, n, -n, abs(n), n + m, n - 0.25, n * 0.0000001, n * m, n * n * n, k * 0.0000001, n * 2 FROM {u} "
    "ORDER BY k",
    "SELECT k, to_jsonb(n), jsonb_build_array(n, m, k), jsonb_build_object('n', n * 10) FROM {u} ORDER BY k",
    "SELECT jsonb_object_agg(k, n), jsonb_agg(n ORDER BY k) FROM {u}",
    "SELECT stddev(n), stddev_pop(n), variance(n), var_pop(n), stddev(m), variance(m) FILTER (WHERE k > 2) FROM {u}",
    "SELECT avg(n), avg(m), sum(n), sum(m), min(n), max(m), avg(k) FROM {u}",
    "SELECT k > 3 AS big, avg(n), sum(n), stddev(m) FROM {u} GROUP BY 1 ORDER BY 1",
    "SELECT n, count(*) FROM {u} WHERE n <> 1 GROUP BY n ORDER BY n",
    "SELECT * FROM {u} WHERE k < 4 ORDER BY k",
    "SELECT k, n::text, 'x' || (n * m)::text FROM {u} ORDER BY k",
    "SELECT a.k, a.n, b.m, a.n * b.m FROM {u} a JOIN {u} b ON a.k = b.k + 1 ORDER BY 1",
]

#: sample -> why sqlfront deliberately answers differently from PostgreSQL
DIFFERENCES = {
    "pg_typeof(a)": "array types print as integer[] here too, but int[] columns are int4[]: same text expected",
    "pg_backend_pid() > 0": "the connection's cancel-key process id: true on both",
}


#: whole queries of the query forms (PostgreSQL 7.2-7.8), ``{t}`` the table; each runs on
#: Spark (over the table) and in the Python interpreter (over the same rows as VALUES)
QUERIES = {
    "7.2.5 window frames": [
        "SELECT k, sum(i) OVER (ORDER BY k ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM {t} ORDER BY k",
        "SELECT k, count(*) OVER (ORDER BY i RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM {t} ORDER BY k",
        "SELECT k, sum(i) OVER (ORDER BY i DESC RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM {t} ORDER BY k",
        "SELECT k, sum(i) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) FROM {t} ORDER BY k",
        "SELECT k, avg(n) OVER (ORDER BY k ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM {t} ORDER BY k",
        "SELECT k, max(s) OVER (PARTITION BY b ORDER BY k ROWS 1 PRECEDING) FROM {t} ORDER BY k",
        "SELECT k, first_value(i) OVER w, last_value(i) OVER w, nth_value(i, 2) OVER w FROM {t} "
        "WINDOW w AS (ORDER BY k ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) ORDER BY k",
        "SELECT k, sum(k) OVER (w ORDER BY k), max(k) OVER w FROM {t} WINDOW w AS (PARTITION BY b) ORDER BY k",
        "SELECT k, sum(k) OVER x FROM {t} WINDOW w AS (ORDER BY i), x AS (w ROWS 1 PRECEDING) ORDER BY k",
        "SELECT k, sum(k) OVER (w ORDER BY k) FROM {t} WINDOW w AS (PARTITION BY b ORDER BY i)",
        "SELECT sum(k) OVER w FROM {t}",
        "SELECT sum(k) OVER (ORDER BY k ROWS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM {t}",
        "SELECT sum(k) OVER (ORDER BY k, i RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM {t}",
    ],
    "7.3.3 DISTINCT ON": [
        "SELECT DISTINCT ON (b) b, k, s FROM {t} ORDER BY b, k DESC",
        "SELECT DISTINCT ON (b) b, k FROM {t} ORDER BY b, i NULLS FIRST",
        "SELECT DISTINCT ON (1) b, k FROM {t} ORDER BY 1, 2",
        "SELECT DISTINCT ON (i % 2) k, i FROM {t} ORDER BY i % 2, k",
        "SELECT DISTINCT ON (b, i) b, i, k FROM {t} ORDER BY i, b, k DESC",
        "SELECT DISTINCT ON (b) b, count(*) FROM {t} GROUP BY b, i ORDER BY b, count(*) DESC, i",
        "SELECT DISTINCT ON (b) b, k FROM {t} ORDER BY k",
    ],
    "7.2.4 grouping sets": [
        "SELECT b, i % 2 AS m, count(*), sum(k), grouping(b), grouping(b, i % 2) FROM {t} "
        "GROUP BY ROLLUP (b, i % 2) ORDER BY 1, 2, 5, 6",
        "SELECT b, k > 3 AS big, count(*), grouping(b, k > 3) FROM {t} GROUP BY CUBE (b, k > 3) ORDER BY 1, 2, 4",
        "SELECT b, i, sum(k) FROM {t} GROUP BY GROUPING SETS ((b), (i), ()) ORDER BY 1, 2, 3",
        "SELECT b, i, sum(k) FROM {t} GROUP BY b, ROLLUP (i) ORDER BY 1, 2, 3",
        "SELECT b, sum(k) FROM {t} GROUP BY DISTINCT GROUPING SETS ((), ()), ROLLUP (b) ORDER BY 1, 2",
        "SELECT b, count(*) FROM {t} GROUP BY ROLLUP (b) HAVING count(*) > 2 ORDER BY 1",
        "SELECT b, s, count(*) FROM {t} WHERE k < 4 GROUP BY GROUPING SETS ((b, s), (b), ROLLUP (s)) ORDER BY 1, 2, 3",
        "SELECT grouping(k) FROM {t} GROUP BY b",
    ],
    "7.2.1.5 LATERAL": [
        "SELECT k, g FROM {t}, generate_series(1, {t}.k) g ORDER BY 1, 2",
        "SELECT k, g FROM {t}, LATERAL generate_series({t}.k, 1, -2) AS g ORDER BY 1, 2",
        "SELECT k, x.* FROM {t}, jsonb_each({t}.j) x WHERE jsonb_typeof(j) = 'object' ORDER BY 1, 2",
        "SELECT k, key, value FROM {t}, jsonb_each_text(j) WHERE jsonb_typeof(j) = 'object' ORDER BY 1, 2",
        "SELECT k, e::text FROM {t} CROSS JOIN LATERAL jsonb_array_elements(j) e "
        "WHERE jsonb_typeof(j) = 'array' ORDER BY 1, 2",
        "SELECT k, jsonb_object_keys(j) FROM {t} WHERE jsonb_typeof(j) = 'object' ORDER BY 1, 2",
        "SELECT k, u, o FROM {t}, unnest({t}.a) WITH ORDINALITY AS x(u, o) ORDER BY 1, 3",
        "SELECT k, m FROM {t}, LATERAL (SELECT max(x) AS m FROM unnest({t}.a) x) s ORDER BY 1",
        "SELECT k, s.c FROM {t} LEFT JOIN LATERAL (SELECT count(*) AS c FROM {t} t2 WHERE t2.i < {t}.i) s ON true "
        "ORDER BY 1",
        "SELECT {t}.k, s.k2 FROM {t} JOIN LATERAL (SELECT t2.k AS k2 FROM {t} t2 WHERE t2.k > {t}.k "
        "ORDER BY t2.k LIMIT 2) s ON true ORDER BY 1, 2",
        "SELECT k, generate_series(1, k) FROM {t} ORDER BY 1, 2",
        "SELECT k, d2 FROM {t}, LATERAL (SELECT {t}.k * 2 AS d2) x WHERE k < 3 ORDER BY 1",
        "SELECT k, (SELECT sum(g) FROM generate_series(1, {t}.k) g) FROM {t} ORDER BY 1",
        "SELECT k, g FROM {t}, generate_series(1, {t}.k, 0) g",
        "SELECT k, e FROM {t}, jsonb_array_elements_text(j) e",
        "SELECT a.k, b.k, s.x FROM {t} a, {t} b JOIN LATERAL (SELECT a.k * 10 + b.k AS x) s ON true "
        "WHERE a.k < 3 AND b.k < 3 ORDER BY 1, 2",
        "SELECT a.k, b.k, g FROM {t} a, {t} b CROSS JOIN LATERAL generate_series(a.k, b.k) g "
        "WHERE a.k < 3 AND b.k < 4 ORDER BY 1, 2, 3",
        "SELECT a.k, b.k, s.c FROM {t} a, {t} b LEFT JOIN LATERAL (SELECT count(*) AS c FROM {t} c "
        "WHERE c.k BETWEEN a.k AND b.k) s ON true WHERE a.k <= 2 AND b.k <= 3 ORDER BY 1, 2",
        "SELECT a.k, b.k FROM {t} a, {t} b JOIN LATERAL (SELECT 1 AS one) s ON b.k = a.k + s.one",
    ],
    "9.25 set-returning functions": [
        "SELECT * FROM generate_series(timestamp '2024-01-30', timestamp '2024-05-01', interval '1 month')",
        "SELECT * FROM generate_series(date '2024-01-30', date '2024-02-02', interval '1 day') AS g",
        "SELECT * FROM generate_series(timestamp '2024-01-02', timestamp '2024-01-01', interval '-7 hours') "
        "WITH ORDINALITY AS s(t, n)",
        "SELECT generate_series(timestamp '2024-01-01', timestamp '2024-01-01 02:00', interval '1 hour')",
        "SELECT * FROM generate_series(timestamp '2024-01-01', timestamp '2024-01-02', interval '0 hours')",
        "SELECT k, t FROM {t}, generate_series(ts, ts + interval '1 day', interval '12 hours') t ORDER BY 1, 2",
        "SELECT g, o FROM generate_series(1, 3) WITH ORDINALITY AS x(g, o)",
        "SELECT * FROM generate_series(10, 4, -3) WITH ORDINALITY",
        "SELECT * FROM ROWS FROM (generate_series(1, 3), unnest(array['a', 'b'])) AS r(a, b)",
        "SELECT * FROM ROWS FROM (generate_series(1, 2), generate_series(5, 7)) WITH ORDINALITY",
        "SELECT k, r.* FROM {t}, ROWS FROM (generate_series(1, k), unnest(a)) r ORDER BY 1, 2, 3",
        "SELECT k, r.* FROM {t}, ROWS FROM (jsonb_each(j), generate_series(1, 1)) WITH ORDINALITY r "
        "WHERE jsonb_typeof(j) = 'object' ORDER BY 1, 2",
        "SELECT k, m FROM {t}, regexp_matches(s, '([a-z])l', 'g') WITH ORDINALITY m ORDER BY 1, 2",
    ],
    "8.14.4 jsonb ordering": [
        "SELECT k, j FROM {t} ORDER BY j, k",
        "SELECT k, j FROM {t} ORDER BY j DESC NULLS LAST, k",
        "SELECT k, e FROM {t}, jsonb_array_elements(j) e WHERE jsonb_typeof(j) = 'array' ORDER BY e DESC",
        "SELECT k, v FROM {t}, jsonb_each(j) x(key, v) WHERE jsonb_typeof(j) = 'object' ORDER BY v, k",
        "SELECT k, row_number() OVER (ORDER BY j, k) FROM {t} ORDER BY k",
        "SELECT e FROM {t}, jsonb_array_elements('[1, \"a\", null, true, false, [], [1], [1, 2], [0, 5], {{}}, "
        "{{\"a\": 1}}, {{\"b\": 0}}, {{\"aa\": 0}}, {{\"a\": 2}}, 10, 2.5, \"B\", [[1]], [\"x\"], [null], "
        "{{\"a\": 1, \"b\": 1}}, {{\"a\": \"x\"}}, 123456789012345678901234567890, -0.5]'::jsonb) e "
        "WHERE k = 1 ORDER BY e",
    ],
    "8.16.5 whole-row references": [
        "SELECT k, x FROM {t}, jsonb_each(j) x(key, v) WHERE jsonb_typeof(j) = 'object' ORDER BY k, key",
        "SELECT k, x FROM {t} JOIN (SELECT k AS kk, s || '\"(' AS s, NULL::int AS n, '' AS e FROM {t}) x "
        "ON x.kk = {t}.k ORDER BY 1",
        "SELECT s FROM (SELECT k, b, d, ts, f FROM {t}) s ORDER BY s.k",
        "SELECT k, {t} FROM {t} ORDER BY k",
    ],
    "9.9 interval comparison": [
        "SELECT k FROM {t} WHERE make_interval(days => k) > interval '2 days' ORDER BY k",
        "SELECT k, make_interval(months => k) = make_interval(days => 30 * k) FROM {t} ORDER BY k",
        "SELECT k, make_interval(hours => 24 * k) <= make_interval(days => k) FROM {t} ORDER BY k",
        "SELECT k, iv FROM (SELECT k, make_interval(months => 5 - k, days => 10 * k) AS iv FROM {t}) x "
        "ORDER BY iv, k",
        "SELECT k FROM {t} WHERE age(ts, timestamp '2000-01-01') < interval '1 year' ORDER BY k",
    ],
    "8.15.3 array slices": [
        "SELECT k, a[1:2], a[2:], a[:1], a[k:k+1], a[0:10], a[3:1] FROM {t} ORDER BY k",
    ],
    "issue 31: text forms under ||": [
        "SELECT k, '' || b || false, s || b, b::text, b::varchar(4), b::char(3), concat(b, k), format('%s', b), "
        "array_to_string(ARRAY[b], ','), ARRAY[b]::text, ARRAY[b]::text[], quote_literal(b) FROM {t} ORDER BY k",
        "SELECT k, 'x' || n || f || i || d || ts || j || a::text || (k * interval '-1 hour') || (f / 3)::float4 "
        "|| make_interval(months => k - 3, days => k, secs => 1.5) FROM {t} ORDER BY k",
        "SELECT k, (f * 1e10)::text, (f / 3)::float4::text, (make_interval(years => 2 - k, days => 1) "
        "- interval '1 hour')::text FROM {t} ORDER BY k",
        "SELECT k, 'x' || s::bytea, s::bytea || '\\x00' FROM {t} ORDER BY k",
        "SELECT s || a FROM {t}",
    ],
    "issue 31: string lengths and substrings": [
        "SELECT k, octet_length(s::char(12)), length(s::char(12)), bit_length(s::char(12)), octet_length(k::char(3)), "
        "char_length(k::char(3)), octet_length(s::bytea), bit_length(s) FROM {t} ORDER BY k",
        "SELECT k, substr(s, k, i), left(s, i), right(s, i), left(s, -k), right(s, -k), substr(s, i) FROM {t} "
        "WHERE i >= 0 OR i IS NULL ORDER BY k",
        "SELECT substr(s, 1, i) FROM {t} WHERE k = 2",
        "SELECT k, substr(s, nullif(k, 1)), substr(s, nullif(k, 1), 2), substr(s, 2, nullif(k, 1)), "
        "left(s, nullif(k, 1)), right(s, nullif(k, 1)), repeat(s, nullif(k, 1)) FROM {t} ORDER BY k",
    ],
    "issue 31: arrays of several dimensions": [
        "SELECT k, k = ANY(ARRAY[a, a]), 2 = ANY(ARRAY[ARRAY[k, 2], ARRAY[3, 4]]), k <> ALL(ARRAY[[1, 2], [3, k]]) "
        "FROM {t} WHERE cardinality(a) > 0 ORDER BY k",
        "SELECT k, ARRAY[a, a] || a, a || ARRAY[a, a], ARRAY[a, a] || ARRAY[a], ARRAY[[k, k]] || ARRAY[k, 5] "
        "FROM {t} WHERE cardinality(a) > 0 ORDER BY k",
        "SELECT ARRAY[a, a] || ARRAY[1, 2, 3, 4] FROM {t} WHERE k = 2",
        "SELECT ARRAY[a, a] || k FROM {t} WHERE k = 1",
        "SELECT ARRAY[a, ARRAY[k]] FROM {t} WHERE k = 1",
        "SELECT k, u, o FROM {t}, unnest(ARRAY[a, a]) WITH ORDINALITY AS x(u, o) WHERE cardinality(a) > 0 ORDER BY k, o",
        "SELECT k, unnest(ARRAY[[k, 2], [3, 4]]) FROM {t} ORDER BY 1, 2",
        "SELECT k, array_ndims(ARRAY[a, a]), array_dims(ARRAY[a, a, a]), array_length(ARRAY[a, a, a], 2), "
        "cardinality(ARRAY[a, a]), array_upper(ARRAY[ARRAY[a, a]], 3), array_lower(ARRAY[a, a], k) FROM {t} "
        "WHERE cardinality(a) > 0 ORDER BY k",
        "SELECT a FROM {t} UNION SELECT ARRAY[k] FROM {t} ORDER BY 1",
        "SELECT ARRAY[a, a] FROM {t} WHERE cardinality(a) > 0 UNION SELECT ARRAY[a, a] FROM {t} "
        "WHERE cardinality(a) > 0 ORDER BY 1",
        "SELECT a FROM {t} INTERSECT SELECT a FROM {t} WHERE k < 3 ORDER BY 1",
        "SELECT count(DISTINCT a), count(DISTINCT ARRAY[a, a]) FROM {t}",
        "SELECT k, array_to_string(ARRAY[a, a], ',', '*') FROM {t} WHERE cardinality(a) > 0 ORDER BY k",
        "SELECT array_position(ARRAY[a, a], 1) FROM {t} WHERE k = 1",
        "SELECT array_remove(ARRAY[a, a], 1) FROM {t} WHERE k = 1",
    ],
    "issue 31: jsonb keys": [
        "SELECT k, j -> '0', j ->> '1', j -> 1, j #> '{{1}}', j #>> '{{1}}', j -> 'a', j #> '{{a,c}}' FROM {t} ORDER BY k",
        "SELECT k, jsonb_build_object(b, 1, k, 2, d, 3, ts, 4, f * 1e10, 5, n, 6) FROM {t} WHERE b IS NOT NULL "
        "ORDER BY k",
        "SELECT jsonb_build_object(j, 1) FROM {t}",
        "SELECT jsonb_build_object(a, 1) FROM {t}",
        "SELECT jsonb_build_object(s, 1) FROM {t}",
    ],
    "issue 31: overflow and NaN": [
        "SELECT abs(i - 2147483645) FROM {t} WHERE k = 2",
        "SELECT -(i - 2147483645) FROM {t} WHERE k = 2",
        "SELECT @ (i::int2 - 32765::int2) FROM {t} WHERE k = 2",
        "SELECT abs(i::int8 - 9223372036854775805) FROM {t} WHERE k = 2",
        "SELECT k, @ i, @ n, @ f, abs(i::int2) FROM {t} ORDER BY k",
        "SELECT k, 'NaN'::numeric / (k - k), n / 'NaN', div('NaN'::numeric, k - k), mod(n, 'NaN') FROM {t} ORDER BY k",
    ],
    "issue 26: constants and FROM forms": [
        "SELECT sin(1.5), cos(1.5), tan(1), cot(1), asin(0.5), acos(0.5), atan(2), atan2(1, 2), sind(30), cosd(60), "
        "tand(45), cotd(45), asind(0.5), acosd(0.5), atand(1), atan2d(1, 1), sind(-390), cosd(200), tand(-135), "
        "cotd(300), sind(1e10)",
        "SELECT gcd(12, 18), lcm(4, 6), gcd(1.5, 0.25), lcm(-4::int8, 6), gcd(0, 0), log(2, 8.0), log(10, 100), "
        "log(2.5, 7), width_bucket(5.35, 0.024, 10.06, 5), width_bucket(5, 0, 10, 3), width_bucket(-1.5, 3, -3, 4)",
        "SELECT 1 << 2, 8 >> 1, 7 & 3, 1 | 4, 6 # 5, ~5, -8 >> 1, 1 << 31, 3::int8 << 62, ~0::int2, 2 ^ 10, 2.0 ^ 0.5, "
        "|/ 16, ||/ 27, to_char(0, 'FM9999.99'), to_char(-0.5, 'FM9999.99'), to_char(1234567, '9,999,999')",
        "SELECT exp(1.0), log(100.0), ln(2.0), exp(2.5), log(2.0), sqrt(2.0), sqrt(12345.678), ln(12345.678), "
        "log(0.5), exp(-3.5), sqrt(0.0001), exp(-7000.5), ln(1.0001)",
        "SELECT timestamp '2024-01-05 12:00' AT TIME ZONE 'America/New_York', "
        "timestamptz '2024-07-05 12:00+00' AT TIME ZONE 'Asia/Tokyo', to_timestamp(0), to_timestamp(1.5), "
        "to_timestamp(-1e9), justify_hours(interval '50 hours'), justify_days(interval '35 days'), "
        "justify_interval(interval '1 mon -1 hour'), justify_interval(interval '-1 mon 30 days 25 hours'), "
        "date_bin(interval '15 minutes', timestamp '2020-02-11 15:44:17', timestamp '2001-01-01'), "
        "date_bin(interval '1 hour', timestamp '2000-01-01 00:30', timestamp '2001-01-01'), "
        "isfinite(date '2001-02-16'), isfinite(timestamp 'infinity'), isfinite(interval '1 day')",
        r"SELECT substring('Thomas' from '...$'), substring('Thomas Wolf' from 'W\w+'), "
        "substring('foobar' from 'o(b)'), overlay('Txxxxas' placing 'hom' from 2 for 4), bit_length('jose'), "
        "convert_to('text_in_utf8', 'UTF8'), string_to_array('xx~~yy~~zz', '~~', 'yy'), string_to_array('abc', NULL)",
        "SELECT array_append(ARRAY[1,2], 3), array_prepend(1, ARRAY[2,3]), array_cat(ARRAY[1,2], ARRAY[3,4]), "
        "jsonb_build_array(1, 2, 'three', 4.5), to_jsonb('x'::text), to_jsonb(ARRAY[1,2]), "
        "jsonb_set('[{{\"f1\":1,\"f2\":null}},2,null,3]', '{{0,f1}}', '[2,3,4]', false), "
        "jsonb_pretty('{{\"a\":[1,2], \"bb\": {{\"c\": {{}}}}}}'), "
        "'{{\"a\": \"b\", \"c\": \"d\"}}'::jsonb - 'a', '{{\"a\":1, \"b\":2}}'::jsonb @> '{{\"b\":2}}', "
        "'{{\"b\":2}}' <@ '{{\"a\":1, \"b\":2}}'::jsonb, '{{\"a\":1}}'::jsonb ? 'a', "
        "'[1, \"a\", 2]'::jsonb - 1, '{{\"a\": 1, \"b\": 2}}'::jsonb ?| ARRAY['b', 'x'], "
        "'[\"a\", \"b\"]'::jsonb ?& ARRAY['a', 'b'], jsonb_strip_nulls('{{\"a\": null, \"b\": [null]}}')",
        "SELECT k, x, y FROM {t}, unnest(a, ARRAY[k, k + 1]) AS u(x, y) ORDER BY 1, 2, 3",
        "SELECT * FROM unnest(ARRAY[1,2], ARRAY['foo','bar','baz']) AS x(a,b)",
        "SELECT * FROM pg_input_error_info('42000000000', 'integer')",
        "SELECT name, setting FROM pg_show_all_settings() WHERE name IN ('client_encoding', "
        "'client_min_messages') ORDER BY 1",
        "SELECT * FROM pg_cursor()",
        "SELECT name, statement FROM pg_prepared_statement() AS p WHERE from_sql",
        "SELECT k, timetz '23:30:00+01', timetz '23:30:00+01' + interval '1 hour' FROM {t} ORDER BY k",
        "SELECT k, e.message, e.sql_error_code FROM {t}, pg_input_error_info('x', 'bool') AS e ORDER BY k",
        "SELECT corr(y, x), regr_slope(y, x), regr_intercept(y, x), covar_samp(y, x), bit_and(x), bit_or(x), "
        "jsonb_object_agg(x, y), string_agg(DISTINCT y::text, ';') FROM (VALUES (1, 2.5), (2, 3.5), (4, 1.0), "
        "(NULL, 7.0), (4, 1.0)) AS v(x, y)",
        "SELECT pg_typeof(n), pg_typeof(gcd(n, 1.5)), pg_typeof(i << 1), pg_typeof(bit_and(k)) FROM {t} GROUP BY n, i "
        "ORDER BY n LIMIT 1",
    ],
    "9.16 jsonb_to_record with a column definition list": [
        "SELECT k, x.* FROM {t}, jsonb_to_record(j) AS x(a jsonb, b jsonb, c text) WHERE jsonb_typeof(j) = 'object' "
        "ORDER BY k",
        "SELECT k, x.b, x.a FROM {t}, json_to_record(j::json) AS x(a int, b json) WHERE k = 1",
        "SELECT k, x.* FROM {t}, jsonb_to_record(j) AS x(a int) ORDER BY k",
        "SELECT k, x.* FROM {t}, jsonb_to_recordset(jsonb_build_array(jsonb_build_object('i', i, 's', s, 'n', n, "
        "'d', d), '{{\"i\": \"7\", \"b\": true}}')) AS x(i int, s text, n numeric(10,1), d date, b bool) "
        "ORDER BY k, i",
        "SELECT k, x.* FROM {t}, jsonb_to_recordset(j) AS x(a int) WHERE k = 2",
        "SELECT * FROM jsonb_to_recordset('[{{\"a\": 1}}, {{\"a\": 2, \"b\": \"x\"}}]') AS x(a int, b text)",
        "SELECT * FROM jsonb_to_record('{{\"a\": 1.5}}') AS x(a int)",
        "SELECT * FROM jsonb_to_record('{{\"a\": 1}}') AS x(a int, a text)",
        "SELECT * FROM generate_series(1, 2) AS x(a int)",
    ],
    "4.3 named arguments": [
        "SELECT k, make_interval(days => k), make_interval(k, 2, 1), make_interval(years => k, mins => 90) "
        "FROM {t} ORDER BY k",
        "SELECT make_interval(dayz => k) FROM {t}",
    ],
}


#: (query, engine) -> why sqlfront deliberately answers differently from PostgreSQL
QUERY_DIFFERENCES = {
    ("SELECT k, 'NaN'::numeric / (k - k), n / 'NaN', div('NaN'::numeric, k - k), mod(n, 'NaN') FROM {t} ORDER BY k",
     "spark"): "Spark decimals have no NaN: numeric NaN on table data is a clean 0A000",
    ("SELECT k, key, value FROM {t}, jsonb_each_text(j) WHERE jsonb_typeof(j) = 'object' ORDER BY 1, 2", "spark"):
        fn.FUNCTIONS["jsonb_each_text"].differs,
    ("SELECT k, x FROM {t}, jsonb_each(j) x(key, v) WHERE jsonb_typeof(j) = 'object' ORDER BY k, key", "spark"):
        fn.FUNCTIONS["record"].differs.rsplit("; ", 1)[1],
}


def _values_table() -> str:
    """The table's rows as a VALUES list, typed like the table: a query over it (a WITH
    query named like the table) runs in the interpreter."""
    rows = SETUP[1].split("VALUES", 1)[1]
    return (f"(SELECT k::int AS k, i::int AS i, n::numeric(10,3) AS n, f::float8 AS f, s::text AS s, d::date AS d, "
            f"ts::timestamp AS ts, b::bool AS b, j::jsonb AS j, a::int[] AS a FROM (VALUES {rows}) "
            f"AS v(k, i, n, f, s, d, ts, b, j, a))")


def _numeric_values() -> str:
    """``NUMERIC_TABLE``'s rows as VALUES typed like the table (``_values_table``)."""
    return (f"(SELECT k::int AS k, n::numeric AS n, m::numeric AS m FROM (VALUES {NUMERIC_ROWS}) AS v(k, n, m))")


@pytest.mark.parametrize("sql,engine", [pytest.param(q, e, id=f"{e}:{q[:70]}") for q in NUMERIC_QUERIES
                                        for e in ("spark", "python")])
def test_unconstrained_numeric_matches_postgres(both, sql, engine):
    """Issue 26: an unconstrained numeric's scale is each value's own, in results, in
    products (exact: ``n * 0.0000001`` of a Spark decimal(38,10) was 0.000000), in jsonb
    and in aggregates, on Spark as in PostgreSQL."""
    ours, theirs = both
    sql = sql.format(u=NUMERIC_TABLE)
    expected = _run(theirs, sql)
    got = _run(ours, sql if engine == "spark" else f"WITH {NUMERIC_TABLE} AS {_numeric_values()} {sql}")
    assert got == expected, sql


def test_a_product_spark_cannot_hold_exactly_is_an_error(both):
    """A product whose digits a Spark decimal cannot hold is an error (22003), not a
    rounded or truncated value; the session goes on."""
    ours, _ = both
    assert _run(ours, f"SELECT n * 1e30 FROM {NUMERIC_TABLE} WHERE k = 4") == (None, "22003")
    # a product of unconstrained numerics keeps 20 decimals and 18 integer digits on Spark
    assert _run(ours, f"SELECT n * n * n * n FROM {NUMERIC_TABLE} WHERE k = 4") == (None, "22003")
    assert _run(ours, f"SELECT n * 1e-10 * 1e-10 FROM {NUMERIC_TABLE} WHERE k = 3") == (None, "0A000")
    assert _run(ours, f"SELECT n * 0.0000001 FROM {NUMERIC_TABLE} WHERE k = 3") == ([("0.0000000001",)], None)


def _query_cases():
    return [pytest.param(sql, engine, id=f"{chapter}:{engine}:{sql[:60]}")
            for chapter, queries in QUERIES.items() for sql in queries for engine in ("spark", "python")]


def _cases():
    out = []
    for f in fn.FUNCTIONS.values():
        for sample in f.samples:
            out.append(pytest.param(f, sample, id=f"{f.doc or '?'}:{sample}"))
    return out


@pytest.fixture(scope="module")
def both(server):
    with differential_pair(server, SETUP, [TABLE, NUMERIC_TABLE]) as pair:
        yield pair


def _query(f, sample: str) -> str:
    if f.kind == "aggregate":
        return f"SELECT {sample} FROM {TABLE}"
    return f"SELECT k, {sample} FROM {TABLE} ORDER BY k"


#: samples per batched query: one Spark job answers this many cases instead of one each
BATCH = 32
#: rows of the table (SETUP[1]): a batched scalar query that returns another count holds a
#: sample that changes the row count, and is split like one that errors
TABLE_ROWS = 5


def _batched_answers(conn, cases) -> dict:
    """sample -> (rows, SQLSTATE) as :func:`_query` run alone would give on ``conn``
    (``pg_reference.batched_answers``). ``cases``: (entry, sample) of one kind, not srf."""
    if not cases:
        return {}
    return batched_answers(conn, [sample for _, sample in cases], TABLE, TABLE_ROWS,
                           cases[0][0].kind == "aggregate", BATCH)


#: connections that run sqlfront's batches at once (as tests/test_sqllogictest.py's corpus
#: runs on two): one query plans in environmentd while another runs on the replica
JOBS = 3


@pytest.fixture(scope="module")
def answers(server, both):
    """(sqlfront's answers, PostgreSQL's answers) for every sample, batched per kind;
    set-returning samples run alone (two in one SELECT list would zip their rows).
    sqlfront's batches run on ``JOBS`` connections at once; those of functions acting on
    the session stay on ``ours``, in order."""
    ours, theirs = both
    by_kind = collections.defaultdict(list)
    for f in fn.FUNCTIONS.values():
        for sample in f.samples:
            # a function acting on the session moves its select list into the session
            # (planner.session_split): batched alone, so that the others stay on Spark
            by_kind[(f.kind, bool(f.extra.get("session"))) if f.kind != "srf" else ("srf", sample)].append((f, sample))
    pg = {}
    for cases in by_kind.values():
        pg.update(_batched_answers(theirs, cases))
    in_session, units = [], []
    for key, cases in by_kind.items():
        # a sample that errors on PostgreSQL runs alone here: a batch holding it would be
        # split in halves down to it, several Spark jobs each (PostgreSQL's are cheap)
        ok = [c for c in cases if pg[c[1]][1] is None]
        batches = [ok[i:i + BATCH] for i in range(0, len(ok), BATCH)]
        batches += [[c] for c in cases if pg[c[1]][1] is not None]
        (in_session if key[0] != "srf" and key[1] else units).extend(batches)
    conns = queue.SimpleQueue()
    extra = [server.connect() for _ in range(JOBS - 1)]
    for c in extra:
        conns.put(c)

    def on_any(unit) -> dict:
        c = conns.get()
        try:
            return _batched_answers(c, unit)
        finally:
            conns.put(c)

    mine = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
            def session_first() -> list[dict]:
                try:
                    return [_batched_answers(ours, u) for u in in_session]
                finally:
                    conns.put(ours)  # then a connection like the others

            done = [pool.submit(session_first)]
            done += [pool.submit(on_any, u) for u in units]
            for f in done:
                r = f.result()
                for part in (r if isinstance(r, list) else [r]):
                    mine.update(part)
    finally:
        for c in extra:
            c.close()
    return mine, pg


_run = text_answer  # (rows as PostgreSQL's text, or None), (SQLSTATE or None)


@pytest.mark.parametrize("entry,sample", _cases())
def test_function_matches_postgres(answers, entry, sample):
    mine, pg = answers
    sql = _query(entry, sample)
    expected = pg[sample]
    got = mine[sample]
    if got != expected:
        reason = DIFFERENCES.get(sample) or entry.differs
        if reason:
            pytest.xfail(f"deliberate difference: {reason}")
    assert got == expected, sql


@pytest.mark.parametrize("sql,engine", _query_cases())
def test_query_matches_postgres(both, sql, engine):
    """A whole query over the table, on PostgreSQL and on sqlfront: on Spark over the
    table, or in the Python interpreter over the same rows as VALUES."""
    ours, theirs = both
    reason = QUERY_DIFFERENCES.get((sql, engine))
    sql = sql.format(t=TABLE)
    expected = _run(theirs, sql)
    got = _run(ours, sql if engine == "spark" else f"WITH {TABLE} AS {_values_table()} {sql}")
    if got != expected and reason:
        pytest.xfail(f"deliberate difference: {reason}")
    assert got == expected, sql


def test_every_function_has_samples():
    """A function cannot be added without cases: every entry callable from SQL has one."""
    exempt = {"has_table_privilege", "pg_get_userbyid", "pg_function_is_visible", "pg_encoding_to_char",
              "assign_string"} | set(fn.FUNCTIONS["obj_description"].sql_names and [
                  n for n, f in fn.FUNCTIONS.items() if (f.doc or "").startswith("9.27") and not f.samples]) \
        | {n for n, f in fn.FUNCTIONS.items() if f.doc == "9.17"} \
        | {n for n, f in fn.FUNCTIONS.items() if (f.doc or "").startswith("Materialize")}
    # (sequence functions change state: no differential cases, tests/test_schema_objects.py
    # covers them; Materialize's own functions have no PostgreSQL answer to compare with:
    # their tests pin them, e.g. tests/test_sources_unit.py's datediff)
    missing = [n for n, f in fn.FUNCTIONS.items() if not f.samples and n not in exempt
               and (f.sql_names or f.kind != "scalar")]
    assert not missing


def test_cases_per_chapter():
    """The suite's size by PostgreSQL documentation chapter (printed with -s)."""
    counts = collections.Counter((f.doc or "?").split(".")[0] + "." + (f.doc or "?.?").split(".")[1]
                                 for f in fn.FUNCTIONS.values() for _ in f.samples)
    for chapter, queries in QUERIES.items():
        counts[chapter] += 2 * len(queries)  # each on both engines
    print(dict(sorted(counts.items())))
    assert sum(counts.values()) >= 150
