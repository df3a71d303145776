"""Evaluation that cannot hold environmentd: linear LIKE, RE2 regular expressions with a
guarded backtracking fallback, sizes checked before values are built, constant folding
that leaves costly expressions to where the query runs (``planner.guard``,
``planner.pattern``), and the superuser-only raise of max_query_heap_size."""

from __future__ import annotations

import random
import re
import time

import pglast
import pytest

from catalog.durable import CatalogStore
from catalog.errors import SqlError
from catalog.types import INT4, TEXT
from planner import guard, interpret
from planner.consteval import evaluate, fold
from planner.context import NO_STATEMENT
from planner.functions import FUNCTIONS
from planner.pattern import compile_regex, like
from planner.query import QueryPlanner
from planner.scalar import Call, Literal
from sqlfront.vars import SessionVars

WORKER = guard.Guard(inline_bytes=None)
INLINE = guard.INLINE


def _in(g: guard.Guard):
    """The context of an evaluation under ``g`` (no session)."""
    return NO_STATEMENT.with_guard(g)


def _like_by_regex(s: str, pattern: str, ci: bool) -> bool:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.fullmatch("".join(out), s, re.S | (re.I if ci else 0)) is not None


def test_like_agrees_with_the_backtracking_translation():
    rng = random.Random(33)
    for _ in range(5000):
        s = "".join(rng.choice("abA\\%_\n") for _ in range(rng.randrange(7)))
        p = "".join(rng.choice("ab%_\\A") for _ in range(rng.randrange(7)))
        ci = rng.random() < 0.3
        assert like(s, p, ci, INLINE) == _like_by_regex(s, p, ci), (s, p, ci)


def test_like_with_many_percents_is_linear():
    # 600^3 attempts for a backtracking matcher (seconds holding the GIL); a few passes here
    assert not like("a" * 600, "%a%a%a%b", False, INLINE)
    assert like("a" * 100_000 + "b", "%a%a%a%b", False, INLINE)
    assert not like("a" * 100_000, "%" + "a%" * 300 + "b", False, INLINE)


def test_regex_runs_on_re2_and_agrees_with_python():
    for pattern, text in [("(a+)+$", "a" * 12 + "!"), ("b(c|d)*e", "xbcdcdey"), ("^[A-Z]", "Hello"),
                          ("(x)?(y)", "y"), ("é+", "aééb"), (r"\w+", "abc def")]:
        rx = compile_regex(pattern, 0, INLINE)
        m, want = rx.search(text), re.search(pattern, text)
        assert (m is None) == (want is None), pattern
        if m is not None:
            assert (m.start(), m.end(), m.groups()) == (want.start(), want.end(), want.groups())
    # the pathological case, 28 characters: 30 s of backtracking in Python, none in RE2
    assert compile_regex("(a+)+$", 0, INLINE).search("a" * 28 + "!") is None


def test_shorthand_classes_on_unicode_text_keep_pythons_meaning():
    # RE2's \w is ASCII; Python's (and PostgreSQL's in UTF8) is Unicode's: such a text goes to Python
    assert compile_regex(r"^\w+$", 0, WORKER).search("héllo") is not None
    with pytest.raises(guard.Outgrown):
        compile_regex(r"^\w+$", 0, INLINE).search("héllo")  # in a session's thread: to a worker
    assert compile_regex(r"^\w+$", 0, INLINE).search("hello") is not None  # ASCII: RE2, here


def test_backreference_needs_a_worker():
    rx = compile_regex(r"^(a+)+\1$", 0, INLINE)
    with pytest.raises(guard.Outgrown) as ei:
        rx.search("a" * 40 + "!")  # minutes of backtracking: never in a session's thread
    assert ei.value.sqlstate == "54000"
    assert compile_regex(r"(a)\1", 0, WORKER).search("xaay").group(0) == "aa"


def _call(name, *args, g: guard.Guard = INLINE):
    return FUNCTIONS[name].py(list(args), None, _in(g))


@pytest.mark.parametrize("name,args", [("repeat", ("ab", 1_500_000_000)), ("lpad", ("x", 2_000_000_000)),
                                       ("rpad", ("x", 2_000_000_000, "ab")), ("repeat", ("é", 600_000_000))])
def test_sizes_past_one_gigabyte_are_54000_before_anything_is_built(name, args):
    with pytest.raises(SqlError) as ei:
        _call(name, *args)
    assert (ei.value.sqlstate, ei.value.message) == ("54000", "requested length too large")


def test_sizes_past_the_heap_budget_are_53200_and_past_inline_outgrown():
    budget = guard.Guard(max_bytes=1 << 20, inline_bytes=None)
    with pytest.raises(SqlError) as ei:
        _call("repeat", "ab", 1_000_000, g=budget)
    assert ei.value.sqlstate == "53200"
    assert len(_call("lpad", "x", 500_000, "yz", g=budget)) == 500_000
    with pytest.raises(guard.Outgrown):
        _call("repeat", "ab", 10_000_000)
    assert _call("repeat", "ab", 3) == "ababab"
    assert _call("lpad", "x", 5, "ab") == "ababx"
    assert _call("rpad", "héllo", 8, "é") == "hélloééé"
    assert _call("repeat", "ab", -1) == ""


def test_fold_leaves_costly_expressions_to_where_the_query_runs():
    big = Call("repeat", (Literal("ab", TEXT), Literal(10_000_000, INT4)), TEXT)
    assert fold(big) == big  # 20 MB: built in a worker if the query runs in Python
    small = Call("repeat", (Literal("ab", TEXT), Literal(2, INT4)), TEXT)
    assert fold(small) == Literal("abab", TEXT)
    backref = Call("regex", (Literal("a" * 40 + "!", TEXT), Literal(r"^(a+)+\1$", TEXT)), TEXT)
    assert fold(backref) == backref
    assert evaluate(Call("regex", (Literal("xaay", TEXT), Literal(r"(a)\1", TEXT)), TEXT), ctx=_in(WORKER)) is True


def test_folding_stops_between_calls_on_timeout_and_cancel():
    """Each call is cheap, a statement of thousands is not: the statement's stop (its
    statement_timeout and cancel flag) is looked at before each call."""
    call = Call("upper", (Call("md5", (Literal("x", TEXT),), TEXT),), TEXT)
    for stop, reason in ((interpret.Limits(deadline=time.monotonic() - 1), "statement timeout"),
                         (interpret.Limits(cancelled=lambda: True), "user request")):
        with pytest.raises(SqlError) as ei:
            fold(call, _in(guard.Guard(stop=stop)))
        assert (ei.value.sqlstate, ei.value.message) == ("57014", f"canceling statement due to {reason}")
    later = guard.Guard(stop=interpret.Limits(deadline=time.monotonic() + 3600, cancelled=lambda: False))
    assert fold(call, _in(later)) == Literal("9DD4E461268C8034F5C8564E155C67A6", TEXT)


def test_planning_never_runs_a_backtracking_match():
    snap = CatalogStore(":memory:").load()
    q = QueryPlanner(snap).plan_select(pglast.parse_sql(
        r"SELECT 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' ~ '^(a+)+\1$', repeat('a', 600) LIKE '%a%a%a%b'")[0].stmt)
    with pytest.raises(guard.Outgrown):  # the fast path inline: moved to a worker
        interpret.run(q.plan, lambda t: [], interpret.Limits(outgrow_bytes=4 << 20))


def test_only_a_superuser_raises_or_lifts_max_query_heap_size():
    v = SessionVars()
    for value in ("0", "1GB", "257MB"):
        with pytest.raises(SqlError) as ei:
            v.set("max_query_heap_size", value)
        assert ei.value.sqlstate == "42501"
    v.set("max_query_heap_size", "1MB")  # tightening is anyone's
    v.set("max_query_heap_size", "256MB")
    v.set("max_query_heap_size", None)
    with pytest.raises(SqlError) as ei:  # at startup too: the login fails, as in PostgreSQL
        SessionVars({"options": "-c max_query_heap_size=0"})
    assert ei.value.sqlstate == "42501"
    su = SessionVars(superuser=True)
    su.set("max_query_heap_size", "0")
    assert su.max_query_heap_bytes() is None
    assert SessionVars({"options": "-c max_query_heap_size=0"}, superuser=True).max_query_heap_bytes() is None


def test_values_too_costly_to_fold_become_rows_computed_where_the_query_runs():
    snap = CatalogStore(":memory:").load()
    q = QueryPlanner(snap).plan_select(pglast.parse_sql(
        r"SELECT * FROM (VALUES (1, 'xaay' ~ '(a)\1'), (2, 'b' ~ 'a')) v ORDER BY 1")[0].stmt)
    with pytest.raises(guard.Outgrown):
        interpret.run(q.plan, lambda t: [], interpret.Limits(outgrow_bytes=4 << 20))
    assert interpret.run(q.plan, lambda t: [], ctx=_in(WORKER)) == [(1, True), (2, False)]


def test_any_long_text_result_is_checked_and_long_patterns_leave_the_session_thread():
    # || of values within the limits, again and again: stopped at the first step past them
    doubling = Literal("ab" * 1_000_000, TEXT)
    for _ in range(2):
        doubling = Call("concat", (doubling, doubling), TEXT)
    with pytest.raises(guard.Outgrown):
        evaluate(doubling)
    with pytest.raises(SqlError) as ei:
        evaluate(doubling, ctx=_in(guard.Guard(max_bytes=5 << 20, inline_bytes=None)))
    assert ei.value.sqlstate == "53200"
    with pytest.raises(SqlError) as ei:
        evaluate(Call("format", (Literal("%*s", TEXT), Literal(2_000_000_000, INT4), Literal("x", TEXT)), TEXT))
    assert ei.value.sqlstate == "54000"
    with pytest.raises(guard.Outgrown):
        compile_regex("(ab|c)" * 1000, 0, INLINE)
    with pytest.raises(guard.Outgrown):
        like("abc", "%a" * 3000, False, INLINE)


def test_regexp_replace_checks_its_result_as_it_grows():
    blowup = Call("regexp_replace", (Literal("a" * 1_000_000, TEXT), Literal("", TEXT), Literal("b" * 1000, TEXT),
                                     Literal("g", TEXT)), TEXT)
    with pytest.raises(guard.Outgrown):
        evaluate(blowup)  # a gigabyte, from a megabyte: stopped after a few megabytes
    small = Call("regexp_replace", (Literal("aXbX", TEXT), Literal("(X)", TEXT), Literal(r"<\1>", TEXT),
                                    Literal("g", TEXT)), TEXT)
    assert evaluate(small) == "a<X>b<X>"


def test_many_matches_in_one_call_leave_the_session_thread():
    many = Call("regexp_replace", (Literal("a" * 20_000, TEXT), Literal("a", TEXT), Literal("b", TEXT),
                                   Literal("g", TEXT)), TEXT)
    with pytest.raises(guard.Outgrown):
        evaluate(many)  # RE2's binding costs ~10 us a match: not 20000 of them here
    assert evaluate(many, ctx=_in(WORKER)) == "b" * 20_000
    split = FUNCTIONS["regexp_split_to_array"].py
    assert split(["a,b,,c", ","], None, NO_STATEMENT) == ["a", "b", "", "c"]
    assert split(["ab", "x*"], None, NO_STATEMENT) == ["a", "b"]
    assert split(["abc", "b*"], None, NO_STATEMENT) == ["a", "c"]
