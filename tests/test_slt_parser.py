"""The sqllogictest parser and value formatting on small inline texts (no server)."""

from __future__ import annotations

from sqllogictest.format import format_value
from sqllogictest.parser import parse


def one(text: str):
    recs = parse(text)
    assert len(recs) == 1, recs
    return recs[0]


def test_statement_ok_count_error():
    recs = parse("statement ok\nCREATE TABLE t (a int)\n\nstatement OK\nSELECT 1\n\n"
                 "statement count 2\nINSERT INTO t VALUES (1), (2)\n\n"
                 "statement error pgcode 42P01 relation .* does not exist\nSELECT * FROM nope\n\n"
                 "statement error\nSELECT x\n")
    assert [r.kind for r in recs] == ["statement"] * 5
    assert recs[0].sql == "CREATE TABLE t (a int)" and not recs[0].expect_error
    assert recs[2].count == 2
    assert recs[3].expect_error and recs[3].pgcode == "42P01"
    assert recs[3].error_regex == "relation .* does not exist"
    assert recs[4].expect_error and recs[4].error_regex == ""


def test_query_error_keeps_the_regex_as_written():
    r = one("query error db error: ERROR: division by zero  # not a comment? it is\nSELECT 1/0\n")
    assert r.kind == "query" and r.expect_error
    assert r.error_regex == "db error: ERROR: division by zero"


def test_query_types_sort_label_and_results():
    r = one("query IT rowsort my_label\nSELECT 1, 'a'\n----\n1\na\n")
    assert (r.types, r.sort, r.label, r.expected) == ("IT", "rowsort", "my_label", ["1", "a"])
    r = one("query I valuesort\nSELECT 1\n----\n3 values hashing to 0123456789abcdef0123456789abcdef\n")
    assert r.sort == "valuesort" and r.expected_hash == (3, "0123456789abcdef0123456789abcdef")
    r = one("query IIRBOT partialsort(1,2)\nSELECT 1\n----\n")
    assert r.sort == "rowsort" and r.types == "IIRBOT" and r.expected == []


def test_query_multiline_runs_to_eof_across_empty_lines():
    r = one("query T multiline\nSELECT x\n----\nline one\n\nline three\nEOF\n")
    assert r.multiline and r.expected == ["line one\n\nline three"]
    recs = parse("query T multiline\nSELECT x\n----\na\n\nb\nEOF\n\nstatement ok\nSELECT 1\n")
    assert [x.kind for x in recs] == ["query", "statement"]


def test_query_colnames_and_the_space_sign():
    r = one("query IT colnames,rowsort\nSELECT 1 AS a, 2 AS \"b c\"\n----\na b␠c\n1 x\n")
    assert r.colnames == ["a", "b c"] and r.sort == "rowsort" and r.expected == ["1 x"]


def test_query_retry_and_sql_with_an_empty_line():
    r = one("query I retry\nSELECT\n\n1\n----\n1\n")
    assert r.retry and r.sql == "SELECT\n\n1" and r.expected == ["1"]


def test_query_without_results_does_not_swallow_the_next_record():
    recs = parse("query I\nSELECT 1\n\nquery I\nSELECT 2\n----\n2\n")
    assert [(r.sql, r.expected) for r in recs] == [("SELECT 1", []), ("SELECT 2", ["2"])]


def test_simple_with_conn_user_and_multiline():
    r = one("simple conn=mz_system,user=mz_system\nALTER SYSTEM SET x = 1;\n----\nCOMPLETE 0\n")
    assert (r.kind, r.conn, r.user, r.expected) == ("simple", "mz_system", "mz_system", ["COMPLETE 0"])
    r = one("simple multiline\nSELECT 'a\n\nb'\n----\na\n\nb\nEOF\nCOMPLETE 1\n")
    assert r.multiline and r.expected == ["a\n\nb", "COMPLETE 1"]


def test_mode_halt_reset_server_hash_threshold():
    recs = parse("mode cockroach\n\nhash-threshold 8\n\nquery T\nSELECT 1\n----\n1\n\nreset-server\n\n"
                 "mode standard\n\nquery T\nSELECT 2\n----\n2\n\nhalt\n\nstatement ok\nSELECT 3\n")
    assert [r.kind for r in recs] == ["mode", "hash-threshold", "query", "reset-server", "mode", "query",
                                      "halt", "statement"]
    assert recs[2].mode == "cockroach" and recs[5].mode == "standard" and recs[1].arg == "8"


def test_skipif_onlyif_are_kept_with_a_reason():
    recs = parse("skipif postgresql\nstatement ok\nA\n\nskipif mysql\nstatement ok\nB\n\n"
                 "onlyif mysql\nquery I\nC\n----\n1\n\nonlyif postgresql\nstatement ok\nD\n\n"
                 "# a comment\nsubtest foo\n\nstatement ok\nE\n")
    assert [(r.kind, r.skip_reason, r.sql) for r in recs] == [
        ("skip", "skipif postgresql", "A"), ("statement", "", "B"), ("skip", "onlyif mysql", "C"),
        ("statement", "", "D"), ("statement", "", "E")]


def test_unknown_directives_and_options_are_skips_not_drops():
    recs = parse("copy t /tmp/x.tsv\n\nquery I kvtrace\nSELECT 1\n----\n1\n\nquery Z\nSELECT 1\n----\n1\n\n"
                 "statement ok\nSELECT 1\n")
    assert [r.kind for r in recs] == ["skip", "skip", "skip", "statement"]
    assert "copy" in recs[0].skip_reason and "kvtrace" in recs[1].skip_reason and "'Z'" in recs[2].skip_reason


def test_format_values():
    assert format_value(None, "T") == "NULL"
    assert format_value("", "T") == "(empty)"
    assert format_value("2.7", "I", 1700) == "2"
    assert format_value("t", "I", 16) == "1"
    assert format_value("1.5", "R", 701) == "1.500"
    assert format_value("1e+20", "R", 701, "cockroach") == "100000000000000000000"
    assert format_value("1", "R", 701, "cockroach") == "1"
    assert format_value("1.50", "R", 1700, "cockroach") == "1.5"
    assert format_value("t", "B", 16) == "true"
    assert format_value("f", "T", 16, "cockroach") == "false"
    assert format_value("f", "T", 16) == "f"
    assert format_value("\\x6869", "T", 17) == "hi"
    assert format_value("0.1", "T", 701, "cockroach") == "0.100"
    assert format_value("0.1", "T", 701) == "0.1"
    assert format_value("{1,2}", "T", 1007) == "{1,2}"
    assert format_value("[1,3)", "T", 3904) == "[1,3)"
    assert format_value("(1,a)", "T", 2249) == "(1,a)"
    assert format_value("12345", "O", 26) == "12345"


class _Desc:
    def __init__(self, name, type_code=25):
        self.name, self.type_code = name, type_code


class _Cursor:
    """One result set per statement, as psycopg's cursor holds them (text values)."""

    def __init__(self, results):
        self.results = results  # [(status, [names] or None, rows)]
        self.i = 0

    @property
    def statusmessage(self):
        return self.results[self.i][0]

    @property
    def description(self):
        names = self.results[self.i][1]
        return None if names is None else [_Desc(n) for n in names]

    @property
    def rowcount(self):
        return len(self.results[self.i][2])

    def fetchall(self):
        return self.results[self.i][2]

    def nextset(self):
        self.i += 1
        return True if self.i < len(self.results) else None


class _Conn:
    closed = broken = False

    def __init__(self, answers):
        self.answers = answers  # one list of result sets per execute
        self.calls = 0

    def execute(self, sql, prepare=None):
        self.calls += 1
        return _Cursor(self.answers[min(self.calls, len(self.answers)) - 1])


class _State:
    def __init__(self, conn):
        self.c = conn

    def conn(self, name=None, user=None):
        return self.c

    def track(self, sql):
        pass


def test_simple_output_rows_then_complete_per_statement():
    from sqllogictest.runner import Runner

    rec = one("simple conn=a\nSELECT 1, NULL; CREATE TABLE t (a int)\n----\n1,NULL\nCOMPLETE 1\nCOMPLETE 0\n")
    conn = _Conn([[("SELECT 1", ["a", "b"], [("1", None)]), ("CREATE TABLE", None, [])]])
    ok, detail = Runner("postgresql://unused", out=lambda s: None).run_simple(_State(conn), rec)
    assert ok, detail


def test_retry_reruns_until_the_result_matches():
    from sqllogictest.runner import Runner

    rec = one("query I retry\nSELECT count(*) FROM t\n----\n2\n")
    conn = _Conn([[("SELECT 1", ["count"], [("0",)])], [("SELECT 1", ["count"], [("1",)])],
                  [("SELECT 1", ["count"], [("2",)])]])
    ok, detail = Runner("postgresql://unused", retry_timeout=60)._run_guarded(_State(conn), rec, {})
    assert ok and conn.calls == 3, detail
    never = _Conn([[("SELECT 1", ["count"], [("0",)])]])
    ok, _ = Runner("postgresql://unused", retry_timeout=0.2)._run_guarded(_State(never), rec, {})
    assert not ok and never.calls >= 2


def test_what_a_file_created_outside_its_schema_is_tracked():
    from sqllogictest.runner import Runner, _FileState

    state = _FileState(Runner("postgresql://unused"))
    state.schema = "slt_x"
    state.track("CREATE TABLE t (a int)")  # in the file's schema: dropped with it
    state.track("CREATE CLUSTER IF NOT EXISTS quickstart SIZE '1'")  # may be the user's
    state.track("create cluster c1 replicas (); CREATE ROLE joe")
    state.track('CREATE MATERIALIZED VIEW public."V" AS SELECT 1')
    state.track("CREATE CLUSTER REPLICA quickstart.r9 SIZE '1'")
    state.track("ALTER SYSTEM SET max_tables = 10")
    assert state.created == [("CLUSTER", "c1"), ("ROLE", "joe"), ("MATERIALIZED VIEW", 'public."V"'),
                             ("CLUSTER REPLICA", "quickstart.r9")]
    assert state.system_vars == ["max_tables"]
