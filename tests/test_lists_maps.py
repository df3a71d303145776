"""Materialize's list and map types (issue 26, item 3): their text forms, syntax and
functions, as Materialize answers them (its list.slt and map.slt, which
tests/test_mz_slt_expected.py runs when the files are at hand), on constants (the
interpreter) and over table data (Spark), with PostgreSQL's SQLSTATEs for bad input."""

from __future__ import annotations

import collections

import psycopg
import pytest

from catalog.errors import SqlError
from catalog.textio import format_text, parse_text
from catalog.types import INT4, TEXT, list_of, map_of
from planner.functions.lists import _slice_py
from sqlfront.listsyntax import rewrite


@pytest.mark.parametrize("text,t,shown", [
    ('{"a"," b","c ", d,e }', list_of(TEXT), '{a," b","c ",d,e}'),
    ("{NULL,nUlL,\"NULL\",null\\ }", list_of(TEXT), '{NULL,NULL,"NULL","null "}'),
    ("{{1,2},{3}, NULL, {}}", list_of(list_of(INT4)), "{{1,2},{3},NULL,{}}"),
    ("{ \\{a\\} }", list_of(TEXT), '{"{a}"}'),
    ("{  c  =>3, a=>     2, a => 1 }", map_of(INT4), "{a=>1,c=>3}"),
    ('{a\\=\\>=>2}', map_of(INT4), '{"a=>"=>2}'),
    ("{hello=>{\\{\\}=>\\\"\\\"}}", map_of(map_of(TEXT)), '{hello=>{"{}"=>"\\"\\""}}'),
])
def test_text_forms_are_materializes(text, t, shown):
    assert format_text(parse_text(text, t), t) == shown


@pytest.mark.parametrize("text,t,message", [
    ("1", list_of(INT4), "invalid input syntax for list: expected '{', found 1: \"1\""),
    ('{a"b"}', list_of(TEXT), "malformed literal; must escape special character '\"'"),
    ("{1}}", list_of(INT4), "contains '}' after terminal '}'"),
    ("{{1}}", list_of(INT4), "unescaped '{' at beginning of element"),
    ("{a,  }", list_of(TEXT), "malformed literal; missing element"),
    ("a=>1", map_of(INT4), "invalid input syntax for type map: expected '{', found a"),
    ('{"a"=>"x}', map_of(TEXT), "unterminated quoted string"),
    ("{a=>{a}}", map_of(map_of(TEXT)), 'expected =>: "{a}": "{a=>{a}}"'),
])
def test_malformed_literals_are_22p02(text, t, message):
    with pytest.raises(SqlError) as e:
        parse_text(text, t)
    assert e.value.sqlstate == "22P02" and message in e.value.message


def test_slices_of_several_layers_reduce_empty_results_to_null():
    v = [[1, None, 3], None, [4, None, 6]]
    assert _slice_py(v, [(2, 3), (2, 2)]) == [None, [None]]
    assert _slice_py(v, [(2, 3), (4, 4)]) is None
    assert _slice_py([None, [None], [[None]]], [(1, 9), (1, 9), (1, 9)]) == [None, None, [[None]]]
    assert _slice_py([1, 2, 3], [(-100, 2)]) == [1, 2] and _slice_py([1, 2, 3], [(2, 1)]) is None


def test_syntax_is_rewritten_only_where_it_applies():
    assert rewrite("SELECT a[1], ARRAY[1,2] FROM t") == "SELECT a[1], ARRAY[1,2] FROM t"
    assert rewrite("SELECT 'list', map FROM t") == "SELECT 'list', map FROM t"
    assert rewrite("SELECT NULL::numeric(38,5) list list") == "SELECT NULL::numeric(38,5) [424242] [424242]"
    assert rewrite("SELECT '{}'::map[text=>int list]") == "SELECT '{}'::\"map[text=>int list]\""
    assert "mz_list_layer" in rewrite("SELECT x[1:2, 2:3] FROM t")


CONSTANTS = [
    ("(LIST[[1, null], []] :: INT LIST LIST)::text", "{{1,NULL},{}}"),
    ("(LIST['foo', 'f}o', '\"\\', null, 'null', 'NULL'])::text", '{foo,"f}o","\\"\\\\",NULL,null,"NULL"}'),
    ("(LIST [[[1, 2], [3, 4, 5]], [[6]], [[7, 8], [9]]][:, 2:2, 2:2])::text", "{{{4}},NULL,NULL}"),
    ("LIST[1,2,3][1.5]", 2),
    ("(LIST[1] || NULL::INT)::text", "{1,NULL}"),
    ("('{1.2}'::numeric(38,5) list || '2.3'::numeric(38,0))::text", "{1.20000,2.00000}"),
    ("(list_prepend(NULL, LIST[[1]]))::text", "{NULL,{1}}"),
    ("list_length_max(LIST [[[1, 2, 3], [4]], [[5]]], 3)", 3),
    ("list_ndims((LIST[[1],NULL]::INT LIST LIST)[2])", 1),
    ("list_n_layers(LIST[[1]])", 2),
    ("pg_typeof(LIST[LIST['a']])::text", "text list list"),
    ("('{a=>1, b=>2}'::map[text=>int] -> ARRAY['b', 'a', 'c'])::text", "{2,1,NULL}"),
    ("'{hello=>{world=>false}}'::map[text=>map[text=>bool]] -> 'hello'::text ? 'world'::text", True),
    ("'{a=>1, b=>2}'::map[text=>int] <@ '{a=>1, b=>2, c=>3}'::map[text=>int]", True),
    ("map_length('{a=>1, b=>2}'::map[text=>int])", 2),
    ("LIST[1, 2, NULL] @> LIST[2, 1, 2]", True),
    ("LIST[1, NULL] @> LIST[NULL]::int list", False),
    ("LIST[[1], [2, NULL]] @> LIST[[2, NULL]]", True),
    ("'{1}' <@ LIST[1, 2]", True),
]


def test_constants_answer_as_materialize(conn):
    for sql, want in CONSTANTS:
        assert conn.execute(f"SELECT {sql}").fetchone()[0] == want, sql


@pytest.mark.parametrize("sql,state", [
    ("SELECT LIST[]", "42P18"),
    ("SELECT LIST[1, LIST[2]]", "42804"),
    ("SELECT LIST[1, null] :: INT LIST LIST", "42846"),
    ("SELECT ('{a}'::int list)::text", "22P02"),
    ("SELECT LIST [1, 2, 3][:, :]", "42804"),
    ("SELECT list_length_max((LIST[1]::INT LIST), 2)", "2202E"),
    ("SELECT list_append(NULL, NULL)", "42883"),
    ("SELECT LIST[1] || LIST['a']", "42883"),
    ("SELECT '{1=>true}'::map[int=>bool]", "42804"),
    ("SELECT '{a=>1, b=>2}'::map[text=>int] -> 1", "42883"),
    ("SELECT '{a=>1}'::map[text=>int] @> '{a=>t}'::map[text=>bool]", "42883"),
    # an unknown left operand fits map's operator and jsonb's (Materialize's map.slt)
    ("SELECT NULL ? 'a'", "42725"),
    ("SELECT NULL -> 'hello'::text", "42725"),
    ("SELECT NULL ?| 'a'", "42725"),
    ("SELECT NULL @> NULL", "42725"),
    ("SELECT * FROM unnest(NULL)", "42883"),
])
def test_bad_input_has_its_sqlstate_and_the_session_goes_on(conn, sql, state):
    with pytest.raises(psycopg.Error) as e:
        conn.execute(sql)
    assert e.value.sqlstate == state
    assert conn.execute("SELECT (LIST[1])::text").fetchone()[0] == "{1}"


def test_table_data_on_spark_answers_as_constants(conn):
    """Lists and maps stored in a table (Parquet lists and maps) and computed on Spark give
    what the same expressions give over constants in the interpreter."""
    conn.execute("CREATE TABLE lm (k int, l int list, m map[text=>int], ll text list list)")
    rows = [("1", "LIST[1,2,3]", "'{a=>1,b=>2}'", "LIST[['x','y z'],['NULL']]"),
            ("2", "'{4,NULL}'", "'{c=>NULL}'", "NULL"),
            ("3", "NULL", "NULL", "LIST[[]]::text list list")]
    conn.execute("INSERT INTO lm VALUES " + ", ".join(f"({', '.join(r)})" for r in rows))
    exprs = ["l", "m", "ll", "l[2]", "l[1:2]::text", "list_length(l)", "(l || k)::text", "list_cat(l, l)::text",
             "list_prepend(k, l)::text", "list_remove(l, 2)::text", "ll[1][2]", "ll[:, 2:2]::text",
             "list_length_max(ll, 2)", "list_ndims(ll)", "m -> 'a'", "m ? 'c'", "m ?& ARRAY['a','b']",
             "m ?| ARRAY['z','c']", "m @> '{a=>1}'", "map_length(m)", "l @> LIST[k]", "LIST[4] <@ l",
             "(m -> ARRAY['a','q'])::text", "m::text"]
    select = ", ".join(exprs)
    spark = conn.execute(f"SELECT k, {select} FROM lm ORDER BY k").fetchall()
    constants = [conn.execute(f"SELECT k, {select} FROM (SELECT {r[0]} AS k, {r[1]}::int list AS l, "
                              f"{r[2]}::map[text=>int] AS m, {r[3]}::text list list AS ll) AS c").fetchone()
                 for r in rows]
    assert spark == constants
    assert spark[0][1:4] == ("{1,2,3}", "{a=>1,b=>2}", '{{x,"y z"},{"NULL"}}')
    assert spark[2][16:19] == (None, None, None) and spark[1][21:23] == (False, True)  # map operators are strict on Spark too
    assert [r[0] for r in conn.execute("SELECT u FROM lm, unnest(l) AS u WHERE k = 1 ORDER BY u").fetchall()] == [1, 2, 3]
    # list_agg keeps NULLs; map_agg leaves NULL keys out and keeps a key's last value
    aggs = "list_agg(l[1] ORDER BY k)::text, map_agg(ll[1][1], k ORDER BY k)::text, map_agg('x', k ORDER BY k)::text"
    assert conn.execute(f"SELECT {aggs} FROM lm").fetchone() == ("{1,4,NULL}", "{x=>1}", "{x=>3}")
    conn.execute("DROP TABLE lm")


def test_lists_and_maps_compare_sort_and_group_on_spark_as_in_the_interpreter(conn):
    """Lists, arrays and maps compare, sort, group, DISTINCT, set operations, min/max and
    join keys over table data (Spark) as over constants (the interpreter): a NULL element
    above every value (Spark's own order puts it first), maps by their (key, value) pairs
    in key order (Spark cannot compare maps; its GROUP BY of a map with a NULL value gave
    0 for the NULL)."""
    rows = [(1, "LIST[1,2,NULL]", "'{a=>1,b=>NULL}'", "ARRAY[NULL,1]"), (2, "NULL", "NULL", "NULL"),
            (3, "LIST[]::int list", "'{}'", "ARRAY[1]"), (4, "LIST[NULL::int]", "'{b=>1}'", "ARRAY[1,NULL]"),
            (5, "LIST[1,2,NULL]", "'{a=>1,b=>NULL}'", "ARRAY[1,NULL]"), (6, "LIST[1]", "'{a=>NULL}'", "ARRAY[1,2]")]
    values = ", ".join(f"({k}, {l}::int list, {m}::map[text=>int], {a}::int[])" for k, l, m, a in rows)
    conn.execute("CREATE TABLE cmp_lm (k int, l int list, m map[text=>int], a int[])")
    conn.execute(f"INSERT INTO cmp_lm VALUES {values}")
    queries = [
        "SELECT k, l < LIST[1], LIST[NULL::int] < l, l = LIST[1,2,NULL], m = '{a=>1,b=>NULL}'::map[text=>int], "
        "m < '{b=>1}'::map[text=>int], m <> '{}'::map[text=>int], a < ARRAY[1], a > ARRAY[1,2] FROM $r ORDER BY k",
        "SELECT k, l::text AS x FROM $r ORDER BY l, k",
        "SELECT k FROM $r ORDER BY m DESC, a, k",
        "SELECT m::text AS x, count(*) FROM $r GROUP BY m ORDER BY 1",
        "SELECT DISTINCT m::text AS x FROM $r ORDER BY 1",
        "SELECT x::text FROM (SELECT m FROM $r EXCEPT SELECT m FROM $r WHERE k = 1) AS u(x) ORDER BY x",
        "SELECT max(l)::text, min(l)::text, max(a)::text, min(m)::text, max(m)::text FROM $r",
        "SELECT r.k, q.k FROM $r JOIN $r AS q ON r.m = q.m ORDER BY 1, 2",
        "SELECT k, unnest(l) AS u FROM $r ORDER BY k, u",  # Materialize's unnest(list) in a select list
    ]

    def over(q: str, rel: str) -> list:
        q = q.replace("$r AS q", rel + " AS q(k, l, m, a)").replace("$r", rel + " AS r(k, l, m, a)")
        return conn.execute(q).fetchall()

    constants = f"(VALUES {values})"
    for q in queries:
        assert over(q, "cmp_lm") == over(q, constants), q
    assert over(queries[2], "cmp_lm") == [(2,), (4,), (6,), (5,), (1,), (3,)]
    assert over(queries[1], "cmp_lm") == [(3, "{}"), (6, "{1}"), (1, "{1,2,NULL}"), (5, "{1,2,NULL}"), (4, "{NULL}"),
                                          (2, None)]
    assert over(queries[3], "cmp_lm") == [("{a=>1,b=>NULL}", 2), ("{a=>NULL}", 1), ("{b=>1}", 1), ("{}", 1), (None, 1)]
    assert over(queries[6], "cmp_lm") == [("{NULL}", "{}", "{NULL,1}", "{}", "{b=>1}")]
    assert over(queries[8], "cmp_lm")[:3] == [(1, 1), (1, 2), (1, None)]
    assert conn.execute("SELECT unnest(LIST[[1,2],[3]])").fetchall() == [("{1,2}",), ("{3}",)]
    conn.execute("DROP TABLE cmp_lm")


def test_list_type_names_are_types_to_regtype_and_privileges(conn):
    """A list type's name is a type (every list is the one pg_type list): ::regtype and the
    type privilege functions read it, over constants and per row."""
    assert conn.execute("SELECT 'int list'::regtype::oid, 'map[text=>int]'::regtype::oid, "
                        "has_type_privilege('int list', 'USAGE'), has_type_privilege(current_user, 'text list list', "
                        "'USAGE')").fetchone() == (16384, 16385, True, True)
    assert conn.execute("SELECT k, has_type_privilege(t, 'USAGE') FROM (VALUES (1, 'int list'), (2, 'date list list'), "
                        "(3, 'int4')) AS v(k, t) ORDER BY k").fetchall() == [(1, True), (2, True), (3, True)]
    with pytest.raises(psycopg.errors.UndefinedObject):
        conn.execute("SELECT has_type_privilege('nosuch list', 'USAGE')")


def test_binary_results_of_lists_and_maps_are_0a000(conn):
    for sql in ("SELECT LIST[1, 2]", "SELECT '{a=>1}'::map[text=>int]"):
        with pytest.raises(psycopg.Error) as e:
            conn.cursor(binary=True).execute(sql)
        assert e.value.sqlstate == "0A000"
    assert conn.execute("SELECT (LIST[1])::text").fetchone()[0] == "{1}"


def test_list_and_map_columns_keep_their_element_types_in_the_durable_catalog():
    from catalog.durable import _decode_columns, _encode_columns
    from catalog.snapshot import Column
    from catalog.types import SqlType

    cols = (Column("a", list_of(map_of(list_of(SqlType("numeric", 10, 2)))), True), Column("b", INT4, False))
    back = _decode_columns(_encode_columns(cols))
    assert back == cols and back[0].type.sql() == "map[text=>numeric(10,2) list] list"


def test_a_map_with_a_null_value_survives_update_and_delete(conn):
    # Spark's grouping of a map turned a NULL value into 0 or 1: a read consolidating an
    # UPDATE's retraction gave {a=>1,b=>1} and kept the retracted row
    conn.execute("DROP TABLE IF EXISTS mnull")
    conn.execute("CREATE TABLE mnull (k int, x map[text=>int])")
    conn.execute("INSERT INTO mnull VALUES (1, '{a=>1,b=>NULL}'), (2, '{a=>1,b=>NULL}'), (3, '{a=>2}')")
    conn.execute("UPDATE mnull SET k = k + 10 WHERE k = 2")
    conn.execute("DELETE FROM mnull WHERE k = 1")
    assert conn.execute("SELECT k, x::text FROM mnull ORDER BY k").fetchall() == [
        (3, "{a=>2}"), (12, "{a=>1,b=>NULL}")]
    conn.execute("DROP TABLE mnull")


def test_a_view_over_the_other_columns_of_a_table_with_a_map_is_maintained(conn):
    # its dataflow reads only k and v (planner.optimize.prune.prune_columns): the map
    # column, unused, was enough to refuse the view with 0A000
    conn.execute("DROP TABLE IF EXISTS mwide CASCADE")
    conn.execute("CREATE TABLE mwide (k int, v int, x map[text=>int], note text)")
    conn.execute("INSERT INTO mwide VALUES (1, 10, '{a=>1,b=>NULL}', 'p'), (1, 5, NULL, 'q'), (2, 7, '{a=>2}', 'r')")
    query = "SELECT k, sum(v) AS s, count(*) AS n FROM mwide GROUP BY k"
    conn.execute(f"CREATE MATERIALIZED VIEW mwide_v AS {query}")
    conn.execute("CREATE MATERIALIZED VIEW mwide_f AS SELECT k, note FROM mwide WHERE x -> 'a' = 1")
    for write in ("INSERT INTO mwide VALUES (3, 1, '{c=>NULL}', 's'), (2, 2, '{a=>1}', 't')",
                  "UPDATE mwide SET v = v + 100, x = '{a=>1,z=>NULL}' WHERE k = 1",
                  "DELETE FROM mwide WHERE k = 2 AND v = 7", "DELETE FROM mwide WHERE note = 's'"):
        conn.execute(write)
        assert sorted(conn.execute("SELECT * FROM mwide_v").fetchall()) == sorted(conn.execute(query).fetchall()), write
        assert sorted(conn.execute("SELECT * FROM mwide_f").fetchall()) == sorted(
            conn.execute("SELECT k, note FROM mwide WHERE x -> 'a' = 1").fetchall()), write
    assert conn.execute("SELECT count(*) FROM mwide_f").fetchone() == (3,)
    conn.execute("DROP TABLE mwide CASCADE")


def test_views_and_subscribe_keep_maps_with_null_values_through_writes(server, conn):
    # a dataflow consolidates and arranges maps by their entries in key order, as a
    # table's read does (spark_exec.lower.maps_groupable): Spark's grouping of a map gave
    # {a=>1,b=>0} for {a=>1,b=>NULL}, so a retraction never cancelled its insert
    conn.execute("DROP TABLE IF EXISTS mivm CASCADE")
    conn.execute("CREATE TABLE mivm (k int, x map[text=>int])")
    conn.execute("INSERT INTO mivm VALUES (1, '{a=>1,b=>NULL}'), (2, '{b=>NULL,a=>1}'), (3, '{a=>2}'), (4, NULL)")
    queries = {"mivm_sum": "SELECT x, count(*) AS n, sum(k) AS s FROM mivm GROUP BY x",  # sums per map
               "mivm_max": "SELECT x, max(k) AS m FROM mivm GROUP BY x",  # groups recomputed
               "mivm_pass": "SELECT k, x FROM mivm WHERE k > 1"}  # maps passed through
    for name, q in queries.items():
        conn.execute(f"CREATE MATERIALIZED VIEW {name} AS {q}")
    conn.execute("CREATE VIEW mivm_iv AS SELECT x, count(*) AS n FROM mivm GROUP BY x")
    conn.execute("CREATE DEFAULT INDEX ON mivm_iv")  # kept in the replica's memory
    queries["mivm_iv"] = "SELECT x, count(*) AS n FROM mivm GROUP BY x"

    def text(sql):
        return sorted(tuple(str(v) for v in r) for r in conn.execute(sql).fetchall())

    sub_query = "SELECT x, count(*) AS n FROM mivm WHERE k <> 3 GROUP BY x"
    with server.connect() as sub:
        sub.autocommit = False
        sub.execute(f"DECLARE c CURSOR FOR SUBSCRIBE ({sub_query})")
        counts = collections.Counter()

        def subscribed():
            for _ in range(60):
                for ts, diff, x, n in sub.execute("FETCH ALL c WITH (TIMEOUT = '1s')").fetchall():
                    counts[(str(x), str(n))] += diff
                got = sorted(k for k, v in counts.items() for _ in range(v))
                if got == text(sub_query):
                    break
            return got

        for write in (None, "UPDATE mivm SET k = k + 10 WHERE k = 2",
                      "UPDATE mivm SET x = '{a=>1,b=>NULL}' WHERE k = 3",
                      "DELETE FROM mivm WHERE k = 1", "INSERT INTO mivm VALUES (5, '{b=>NULL,a=>1}'), (6, NULL)",
                      "DELETE FROM mivm WHERE x -> 'a' = 1 AND k > 10"):
            if write:
                conn.execute(write)
            for name, q in queries.items():
                assert text(f"SELECT * FROM {name}") == text(q), (name, write)
            assert subscribed() == text(sub_query), write
        sub.rollback()
    assert text("SELECT n FROM mivm_sum WHERE x -> 'b' IS NULL AND x ? 'b'") == [("2",)]
    conn.execute("DROP TABLE mivm CASCADE")
