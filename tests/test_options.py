"""No option the parser accepts is silently ignored (issue 32): each option keyword that
``sqlfront/mzparse.py`` reads in an option position is listed here with what it does and
the test that pins it, or as refused (0A000); the grep below fails when the parser learns
an option nobody listed. Plus the options the wire tests here pin: isolation levels,
EXPLAIN's PostgreSQL options, SUBSCRIBE's envelopes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent

#: option keyword -> (what it does, the test that pins it: "file::function")
OPTIONS: dict[str, tuple[str, str]] = {
    # CREATE CLUSTER [REPLICA] (... options)
    "SIZE": ("the replica's size: workers, scale and memory of its Spark process",
             "test_replicas.py::test_sizes_map_to_spark_cores_and_processes"),
    "AVAILABILITY": ("AVAILABILITY ZONE: the replica's zone (else the least used one)",
                     "test_replicas.py::test_availability_zone_assignment"),
    "ZONE": ("see AVAILABILITY", "test_replicas.py::test_availability_zone_assignment"),
    "REMOTE": ("a Spark Connect server that runs elsewhere", "test_replicas.py::test_remote_replica"),
    "TOKEN": ("the REMOTE server's bearer token", "test_replicas.py::test_replica_requires_its_token"),
    # SUBSCRIBE
    "ENVELOPE": ("ENVELOPE UPSERT | DEBEZIUM (KEY (...)): the output's shape", "test_options.py::test_subscribe_envelopes"),
    "UPSERT": ("see ENVELOPE", "test_options.py::test_subscribe_envelopes"),
    "DEBEZIUM": ("see ENVELOPE", "test_options.py::test_subscribe_envelopes"),
    "KEY": ("the envelope's key columns (42703 when unknown)", "test_options.py::test_subscribe_envelopes"),
    "SNAPSHOT": ("WITH (SNAPSHOT = false): no rows at the as_of", "test_subscribe.py::test_idle_subscription_progresses_and_up_to_ends"),
    "PROGRESS": ("WITH (PROGRESS): mz_progressed rows, about one a second when idle",
                 "test_subscribe.py::test_idle_subscription_progresses_and_up_to_ends"),
    "WITHIN": ("WITHIN TIMESTAMP ORDER BY: the order of one timestamp's rows", "test_subscribe.py::test_within_timestamp_order_by"),
    "ASC": ("see WITHIN", "test_subscribe.py::test_within_timestamp_order_by"),
    "DESC": ("see WITHIN", "test_subscribe.py::test_within_timestamp_order_by"),
    "NULLS": ("see WITHIN", "test_subscribe.py::test_within_timestamp_order_by"),
    "FIRST": ("see WITHIN", "test_subscribe.py::test_within_timestamp_order_by"),
    "LAST": ("see WITHIN", "test_subscribe.py::test_within_timestamp_order_by"),
    "UP": ("UP TO: the subscription ends once its frontier passes it",
           "test_subscribe.py::test_idle_subscription_progresses_and_up_to_ends"),
    "TRUE": ("a boolean option's value", "test_subscribe.py::test_idle_subscription_progresses_and_up_to_ends"),
    "FALSE": ("a boolean option's value", "test_subscribe.py::test_idle_subscription_progresses_and_up_to_ends"),
    "ON": ("a boolean option's value", "test_subscribe.py::test_idle_subscription_progresses_and_up_to_ends"),
    "OFF": ("a boolean option's value", "test_subscribe.py::test_idle_subscription_progresses_and_up_to_ends"),
    # EXPLAIN stages
    "RAW": ("the plan as planned", "test_tpch.py::test_tpch_explain_shows_no_cross_join"),
    "DECORRELATED": ("after decorrelation", "test_tpch.py::test_tpch_explain_shows_no_cross_join"),
    "OPTIMIZED": ("after every optimizer pass", "test_tpch.py::test_tpch_explain_shows_no_cross_join"),
    "PHYSICAL": ("Spark's plan on a replica", "test_persist_inline.py::test_a_small_table_is_grouped_and_sorted_without_an_exchange"),
    "INCREMENTAL": ("how a materialized view is kept", "test_materialized_views.py::test_mv_is_maintained_incrementally_with_each_write_at_its_own_time"),
    "TEXT": ("AS TEXT: the only output format", "test_options.py::test_explain_options_are_refused"),
    "JSON": ("AS JSON: refused (0A000)", "test_options.py::test_explain_options_are_refused"),
    "TIMESTAMP": ("EXPLAIN TIMESTAMP: the read timestamp and each input's frontiers; see also WITHIN",
                  "test_options.py::test_explain_forms"),
    # CREATE INDEX ... USING ARRANGEMENT: an index is an arrangement, the only method
    "ARRANGEMENT": ("the only index method (Materialize's)", "test_indexes.py::test_index_statements_names_and_catalog"),
    # roles
    "SUPERUSER": ("role attribute", "test_authn.py::test_the_server_password_makes_no_one_a_superuser"),
    "NOSUPERUSER": ("role attribute", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "LOGIN": ("role attribute", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "NOLOGIN": ("role attribute", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "INHERIT": ("role attribute (every role inherits, as in Materialize)", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "NOINHERIT": ("refused, as Materialize refuses it", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "CREATEROLE": ("refused: a system privilege (GRANT CREATEROLE ON SYSTEM)", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "NOCREATEROLE": ("refused, see CREATEROLE", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "CREATEDB": ("refused, see CREATEROLE", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "NOCREATEDB": ("refused, see CREATEROLE", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "CREATECLUSTER": ("refused, see CREATEROLE", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "NOCREATECLUSTER": ("refused, see CREATEROLE", "test_rbac.py::test_role_attributes_and_system_privileges"),
    "PASSWORD": ("the role's SCRAM secret", "test_authn.py::test_the_server_password_makes_no_one_a_superuser"),
    "NULL": ("PASSWORD NULL: no password", "test_authn.py::test_the_server_password_makes_no_one_a_superuser"),
    # FETCH ... WITH (...)
    "TIMEOUT": ("how long FETCH waits for a row", "test_cursors.py::test_fetch_with_timeout_over_a_table_and_binary_cursor"),
}

#: the option-reading parts of the parser (functions of mzparse.py, and _Parser methods)
OPTION_READERS = ("replica_options", "_subscribe", "_fetch_with", "role_options", "create_index", "explain",
                  "_explain_create")


def parser_option_words() -> set[str]:
    """The upper-case keywords the option readers (and EXPLAIN's stage list and the role
    attribute list) compare tokens with."""
    tree = ast.parse((ROOT / "sqlfront" / "mzparse.py").read_text())
    words: set[str] = set()
    for node in ast.walk(tree):
        reader = isinstance(node, ast.FunctionDef) and node.name in OPTION_READERS
        role_flags = isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_ROLE_FLAGS" for t in node.targets)
        stages = isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple) and \
            any(getattr(e, "value", None) == "RAW" for e in node.iter.elts)  # EXPLAIN's stages
        if reader or role_flags or stages:
            words |= {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                      and re.fullmatch(r"[A-Z]+", n.value)}
    return words


#: words the option readers use that are statement structure, not options
STRUCTURE = {"CREATE", "INDEX", "DEFAULT", "IF", "NOT", "EXISTS", "IN", "CLUSTER", "USING", "WITH", "TO", "ORDER",
             "BY", "E", "FETCH", "EXPLAIN", "PLAN", "AS", "FOR", "MATERIALIZED", "VIEW", "SHOW", "SCONST"}


def test_every_parser_option_is_listed_with_what_it_does():
    words = parser_option_words()
    assert {"SIZE", "PROGRESS", "RAW", "LOGIN"} <= words  # the grep finds the readers
    unlisted = words - set(OPTIONS) - STRUCTURE
    assert not unlisted, f"options the parser accepts with nothing saying what they do: {sorted(unlisted)}"


@pytest.mark.parametrize("keyword", sorted(OPTIONS))
def test_each_listed_option_names_a_test_that_exists(keyword):
    where = OPTIONS[keyword][1]
    path, func = where.split("::")
    assert re.search(rf"^\s*def {func}\(", (ROOT / "tests" / path).read_text(), re.MULTILINE), where


def test_transaction_isolation_levels(conn):
    conn.execute("SET transaction_isolation = 'SERIALIZABLE'")
    assert conn.execute("SHOW transaction_isolation").fetchone()[0] == "serializable"
    conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED")
    assert conn.execute("SHOW transaction_isolation").fetchone()[0] == "read committed"
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("SET transaction_isolation = 'snapshot'")
    conn.execute("RESET transaction_isolation")
    assert conn.execute("SHOW transaction_isolation").fetchone()[0] == "strict serializable"
    conn.autocommit = False
    conn.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY")
    assert conn.execute("SHOW transaction_read_only").fetchone()[0] == "on"
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        conn.execute("CREATE TABLE never (a int)")
    conn.rollback()


def test_explain_options_are_refused(conn):
    for sql in ("EXPLAIN ANALYZE SELECT 1", "EXPLAIN (VERBOSE) SELECT 1", "EXPLAIN (FORMAT JSON) SELECT 1",
                "EXPLAIN PLAN WITH (arity) FOR SELECT 1", "EXPLAIN PLAN AS JSON FOR SELECT 1"):
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute(sql)
    assert conn.execute("EXPLAIN OPTIMIZED PLAN AS TEXT FOR SELECT 1").fetchall()


def test_explain_forms(conn):
    """EXPLAIN ... FOR a view, a materialized view, an index or a CREATE statement shows
    the plan of the definition; EXPLAIN TIMESTAMP the read timestamp and each input's."""
    conn.execute("CREATE TABLE ex_t (a int, b int)")
    conn.execute("CREATE VIEW ex_v AS SELECT a FROM ex_t WHERE b > 1")
    conn.execute("CREATE INDEX ex_idx ON ex_v (a)")

    def plan(sql: str) -> list[str]:
        return [r[0] for r in conn.execute(sql).fetchall()]

    direct = plan("EXPLAIN PLAN FOR SELECT a FROM ex_t WHERE b > 1")
    assert plan("EXPLAIN PLAN FOR VIEW ex_v") == direct
    assert plan("EXPLAIN OPTIMIZED PLAN AS TEXT FOR INDEX ex_idx") == direct
    assert plan("EXPLAIN PLAN FOR CREATE VIEW ex_w AS SELECT a FROM ex_t WHERE b > 1") == direct
    assert plan("EXPLAIN PLAN FOR CREATE MATERIALIZED VIEW ex_m IN CLUSTER quickstart AS "
                "SELECT a FROM ex_t WHERE b > 1") == direct
    assert plan("EXPLAIN PLAN FOR CREATE INDEX ex_i ON ex_v (a)") == direct
    assert conn.execute("SELECT count(*) FROM mz_objects WHERE name IN ('ex_w', 'ex_m', 'ex_i')").fetchone() == (0,)
    with pytest.raises(psycopg.errors.WrongObjectType):
        conn.execute("EXPLAIN PLAN FOR MATERIALIZED VIEW ex_v")
    cur = conn.execute("EXPLAIN TIMESTAMP FOR SELECT * FROM ex_v")
    assert [d.name for d in cur.description] == ["Timestamp"]
    lines = [r[0] for r in cur.fetchall()]
    assert lines[0].strip().startswith("query timestamp:")
    assert any("source materialize.public.ex_t" in line for line in lines)
    conn.execute("DROP TABLE ex_t CASCADE")


def test_subscribe_envelopes(conn):
    conn.execute("CREATE TABLE enveloped (k int, v text)")
    conn.execute("INSERT INTO enveloped VALUES (1, 'a')")
    ts = int(conn.execute("SELECT mz_now()").fetchone()[0])
    cur = conn.execute(f"SUBSCRIBE enveloped ENVELOPE UPSERT (KEY (k)) AS OF {ts} UP TO {ts} + 1")
    assert [d.name for d in cur.description] == ["mz_timestamp", "mz_state", "k", "v"]
    assert [r[1:] for r in cur.fetchall()] == [("upsert", 1, "a")]
    cur = conn.execute(f"SUBSCRIBE enveloped ENVELOPE DEBEZIUM (KEY (k)) AS OF {ts} UP TO {ts} + 1")
    assert [d.name for d in cur.description] == ["mz_timestamp", "mz_state", "k", "before_v", "after_v"]
    assert [r[1:] for r in cur.fetchall()] == [("insert", 1, None, "a")]
    with pytest.raises(psycopg.errors.UndefinedColumn):
        conn.execute("SUBSCRIBE enveloped ENVELOPE UPSERT (KEY (nope))")
