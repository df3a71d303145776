"""The positional regular expression functions (PostgreSQL 9.7.3, table 9.10):
``regexp_count``, ``regexp_instr``, ``regexp_substr`` and ``regexp_replace`` with a
start position and an occurrence ``N``.

Matches are found one after the other from ``start`` (character positions from 1), on
the whole string, so ``^`` does not match at ``start`` (PostgreSQL's pg_regexec with a
search start). On Spark the pattern and the integer parameters must be constants (Java's
regex finds its matches in the same order: ``regexp_extract_all`` and ``split`` walk
them as ``Matcher.find`` does); a start past 1 is taken as a substring, which needs a
pattern that does not look at what precedes it (no ``^``, word boundary or lookbehind).
"""

from __future__ import annotations

import re

from catalog.errors import SqlError, INVALID_PARAMETER_VALUE, FEATURE_NOT_SUPPORTED
from planner.functions.registry import IN_CONTEXT, Function, register, sig
from planner.functions.string import _group_or_null, _java_replacement, _pg_regex, _replacement_py
from planner.guard import INLINE

#: what looks before a match other than ``^``: word boundaries, \A, lookbehind
_LOOKS_BACK = re.compile(r"\\[bByYmMG<]|\(\?<[=!]")


def region_pattern(pattern: str) -> str | None:
    """``pattern`` for matching in the substring from a start past 1, or None when that
    changes its matches: the string's start (``^``, ``\\A`` outside a bracket; there is no
    multiline mode) is never inside the region, so it becomes a never-matching ``(?!)``; a
    word boundary or lookbehind looks at characters before the region."""
    if _LOOKS_BACK.search(pattern):
        return None
    out, i, bracket = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if not bracket and pattern[i + 1:i + 2] == "A":
                out.append("(?!)")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if bracket:
            if c == "]" and pattern[i - 1] != "[" and pattern[i - 2:i] != "[^":
                bracket = False
        elif c == "[":
            bracket = True
        elif c == "^":
            c = "(?!)"
        out.append(c)
        i += 1
    return "".join(out)

#: the parameters of each function after (string, pattern), in order
PARAMS = {
    "regexp_count": ("start", "flags"),
    "regexp_instr": ("start", "n", "endoption", "flags", "subexpr"),
    "regexp_substr": ("start", "n", "flags", "subexpr"),
    "regexp_replace": ("start", "n", "flags"),
}
_DEFAULTS = {"start": 1, "n": 1, "endoption": 0, "flags": "", "subexpr": 0}


def _bad(name: str, value) -> SqlError:
    return SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": {value}')


def _params(func: str, values: list) -> dict:
    """The parameters of a call (after string and pattern; after the replacement for
    regexp_replace), defaults filled in, checked as PostgreSQL does.

    Raises:
        SqlError 22023 for a start below 1, n below 1 (below 0 for regexp_replace), a
        negative endoption or subexpr, or the g flag where it is refused."""
    p = dict(_DEFAULTS)
    p.update(zip(PARAMS[func], values))
    if func == "regexp_replace" and len(values) < 2:
        p["n"] = 1
    if p["start"] < 1:
        raise _bad("start", p["start"])
    if p["n"] < (0 if func == "regexp_replace" else 1):
        raise _bad("n", p["n"])
    for k in ("endoption", "subexpr"):
        if p[k] < 0:
            raise _bad(k, p[k])
    if "g" in p["flags"] and func != "regexp_replace":
        raise SqlError(INVALID_PARAMETER_VALUE, f'{func}() does not support the "global" option')
    return p


def _matches(s: str, pattern: str, p: dict, guard):
    rx = _pg_regex(pattern, p["flags"], guard)
    return rx, list(rx.finditer(s, p["start"] - 1)) if p["start"] - 1 <= len(s) else []


def _count_py(a, e, ctx):
    p = _params("regexp_count", a[2:])
    return len(_matches(a[0], a[1], p, ctx.guard)[1])


def _instr_py(a, e, ctx):
    p = _params("regexp_instr", a[2:])
    rx, ms = _matches(a[0], a[1], p, ctx.guard)
    if len(ms) < p["n"] or p["subexpr"] > rx.groups:
        return 0
    m, g = ms[p["n"] - 1], p["subexpr"]
    if m.start(g) < 0:
        return 0
    return (m.end(g) if p["endoption"] else m.start(g)) + 1


def _substr_py(a, e, ctx):
    p = _params("regexp_substr", a[2:])
    rx, ms = _matches(a[0], a[1], p, ctx.guard)
    if len(ms) < p["n"] or p["subexpr"] > rx.groups:
        return None
    return ms[p["n"] - 1].group(p["subexpr"])


def _replace_py(a, e, ctx):
    s, pattern, repl = a[0], a[1], a[2]
    p = _params("regexp_replace", a[3:])
    p["flags"] = p["flags"].replace("g", "")  # n decides: 0 replaces every match, else the n-th
    _, ms = _matches(s, pattern, p, ctx.guard)
    expand = _replacement_py(repl)
    out, at = [], 0
    for m in ms if p["n"] == 0 else ms[p["n"] - 1:p["n"]]:
        out += [s[at:m.start()], expand(m)]
        at = m.end()
    return "".join(out) + s[at:]


# -- Spark ----------------------------------------------------------------------------------


def _constants(e, first: int, func: str) -> list | None:
    """The constant values of the call's arguments from ``first`` on; None when one is NULL.

    Raises:
        SqlError 0A000 when one is not a constant."""
    vals = []
    for x in e.args[first:]:
        if x.__class__.__name__ != "Literal":
            raise SqlError(FEATURE_NOT_SUPPORTED, f"{func} needs a constant pattern and parameters on table data")
        vals.append(x.value)
    return None if any(v is None for v in vals) else vals


def _prepared(S, a, e, func: str, first: int):
    """(region, offset, Java pattern, compiled pattern, parameters), or a column that is
    the call's answer already (NULL, or its error on the rows that have a string)."""
    F = S.F
    vals = _constants(e, 1, func)
    if vals is None:
        return F.lit(None).cast(S.spark_type(e.type))
    pattern = vals[0]
    try:
        p = _params(func, vals[first - 1:])
        rx = _pg_regex(pattern, p["flags"], INLINE)
    except SqlError as err:
        return F.when(a[0].isNotNull(), S.fail(err.sqlstate, err.message))
    if p["start"] == 1:
        return a[0], 0, _java(pattern, p["flags"], False, func), rx, p
    return F.substring(a[0], p["start"], 2**31 - 1), p["start"] - 1, _java(pattern, p["flags"], True, func), rx, p


def _java(pattern: str, flags: str, region: bool, func: str) -> str:
    """The Java pattern of a constant PostgreSQL pattern, for the whole string or (``region``)
    for a substring that does not begin the string.

    Raises:
        SqlError 0A000 for a region and a pattern that looks before it (``region_pattern``)."""
    body = region_pattern(pattern) if region else pattern
    if body is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{func} past the start of the string with a pattern that looks "
                                              "behind it (a word boundary, lookbehind) is not supported on table data")
    return ("(?i)" if "i" in flags else "") + body


def _count_spark(S, a, e):
    r = _prepared(S, a, e, "regexp_count", 2)
    if not isinstance(r, tuple):
        return r
    x, _, java, _, _ = r
    return S.F.regexp_count(x, S.F.lit(java))


def _nth(S, x, java, n: int, group: int):
    """The ``n``-th match's group ``group`` (0: the match) in ``x``, NULL when fewer match."""
    F = S.F
    return F.try_element_at(F.regexp_extract_all(x, F.lit(java), F.lit(group)), F.lit(n))


def _substr_spark(S, a, e):
    r = _prepared(S, a, e, "regexp_substr", 2)
    if not isinstance(r, tuple):
        return r
    x, _, java, rx, p = r
    if p["subexpr"] > rx.groups:
        return S.F.lit(None).cast("string")
    v = _nth(S, x, java, p["n"], p["subexpr"])
    return _group_or_null(S.F, v) if p["subexpr"] else v


def _match_start(S, x, java: str, n: int):
    """0-based start of the ``n``-th match in ``x`` (NULL when fewer match): the text
    between the matches (``split``, which walks them as ``regexp_extract_all`` does) and the
    matches before it."""
    F = S.F
    pieces = F.split(x, java, n + 1)
    found = F.regexp_extract_all(x, F.lit(java), F.lit(0))
    size = lambda arr: F.aggregate(arr, F.lit(0), lambda acc, v: acc + F.length(v))
    before = size(F.slice(pieces, 1, n)) + (size(F.slice(found, 1, n - 1)) if n > 1 else F.lit(0))
    return F.when(F.size(found) >= n, before)


def _instr_spark(S, a, e):
    F = S.F
    r = _prepared(S, a, e, "regexp_instr", 2)
    if not isinstance(r, tuple):
        return r
    x, offset, java, rx, p = r
    if p["subexpr"] > rx.groups:
        return F.when(x.isNotNull(), F.lit(0))
    if p["subexpr"]:
        raise SqlError(FEATURE_NOT_SUPPORTED, "regexp_instr with a subexpression is not supported on table data")
    if rx.search("") is not None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "regexp_instr with a pattern that matches the empty string is not "
                                              "supported on table data")
    at = _match_start(S, x, java, p["n"])
    if p["endoption"]:
        at = at + F.length(_nth(S, x, java, p["n"], 0))
    return F.when(x.isNull(), F.lit(None)).otherwise(F.coalesce(at + offset + 1, F.lit(0)))


def _replace_spark(S, a, e):
    F = S.F
    vals = _constants(e, 1, "regexp_replace")
    if vals is None:
        return F.lit(None).cast("string")
    pattern, repl = vals[0], vals[1]
    try:
        p = _params("regexp_replace", vals[2:])
        _pg_regex(pattern, p["flags"], INLINE)
    except SqlError as err:
        return F.when(a[0].isNotNull(), S.fail(err.sqlstate, err.message))
    head = F.substring(a[0], 1, p["start"] - 1) if p["start"] > 1 else F.lit("")
    tail = F.substring(a[0], p["start"], 2**31 - 1) if p["start"] > 1 else a[0]
    flags = p["flags"].replace("g", "")
    java = _java(pattern, flags, p["start"] > 1, "regexp_replace")
    first = "$1" + _java_replacement(repl, 2, 2)  # the first match, after a lazy prefix (group 1)
    if p["n"] == 0:
        body = F.regexp_replace(tail, F.lit(java), F.lit(_java_replacement(repl, 0, 0)))
    elif p["n"] == 1:
        body = F.regexp_replace(tail, F.lit("^(?s:(.*?))(" + java + ")"), F.lit(first))
    else:
        # the text up to the n-th match kept, the first match of the rest (which begins
        # there) replaced
        at = _match_start(S, tail, java, p["n"])
        rest = F.substring(tail, at + 1, 2**31 - 1)
        inner = _java(pattern, flags, True, "regexp_replace")
        replaced = F.regexp_replace(rest, F.lit("^(?s:(.*?))(" + inner + ")"), F.lit(first))
        body = F.when(at.isNull(), tail).otherwise(F.concat(F.substring(tail, 1, at), replaced))
    return F.concat(head, body)


register(
    Function("regexp_count", (sig("text", "text", ret="int4"), sig("text", "text", "int4", ret="int4"),
                              sig("text", "text", "int4", "text", ret="int4")),
             _count_py, _count_spark, sql_names=("regexp_count",), doc="9.7.3",
             samples=("regexp_count(s, 'l')", "regexp_count(s, '[a-z]+')", "regexp_count(s, 'l', 4)",
                      "regexp_count(s, 'L', 2, 'i')", "regexp_count(s, 'l', 0)", "regexp_count(s, 'l', 1, 'g')",
                      "regexp_count(s, '^H', 2)", "regexp_count(s, 'l', 40)"), extra=IN_CONTEXT),
    Function("regexp_substr", (sig("text", "text", ret="text"), sig("text", "text", "int4", ret="text"),
                               sig("text", "text", "int4", "int4", ret="text"),
                               sig("text", "text", "int4", "int4", "text", ret="text"),
                               sig("text", "text", "int4", "int4", "text", "int4", ret="text")),
             _substr_py, _substr_spark, sql_names=("regexp_substr",), doc="9.7.3",
             samples=("regexp_substr(s, 'l+.')", "regexp_substr(s, '(a)(,)')", "regexp_substr(s, '[a-z]', 3)",
                      "regexp_substr(s, '[a-z]', 1, 2)", "regexp_substr(s, '([A-Z])([a-z])', 1, 1, 'i', 2)",
                      "regexp_substr(s, '(x)?([a-z])', 1, 2, '', 1)", "regexp_substr(s, 'l', 1, 0)",
                      "regexp_substr(s, '(l)', 1, 1, '', 3)", "regexp_substr(s, 'l', 1, 1, 'g')"), extra=IN_CONTEXT),
    Function("regexp_instr", (sig("text", "text", ret="int4"), sig("text", "text", "int4", ret="int4"),
                              sig("text", "text", "int4", "int4", ret="int4"),
                              sig("text", "text", "int4", "int4", "int4", ret="int4"),
                              sig("text", "text", "int4", "int4", "int4", "text", ret="int4"),
                              sig("text", "text", "int4", "int4", "int4", "text", "int4", ret="int4")),
             _instr_py, _instr_spark, sql_names=("regexp_instr",), doc="9.7.3",
             differs="on table data, a subexpression position and a pattern that matches the empty string are "
                     "refused (0A000)",
             samples=("regexp_instr(s, 'l')", "regexp_instr(s, '[a-z]+', 2)", "regexp_instr(s, '[a-z]', 1, 3)",
                      "regexp_instr(s, 'L+', 1, 1, 1, 'i')", "regexp_instr(s, ',', 3, 2, 1)",
                      "regexp_instr(s, 'l', 1, 0)", "regexp_instr(s, 'l', 1, 1, -1)", "regexp_instr(s, 'q')",
                      "regexp_instr(s, '(l)(o)', 1, 1, 0, '', 2)"), extra=IN_CONTEXT),
    Function("regexp_replace_at", (sig("text", "text", "text", "int4", ret="text"),
                                   sig("text", "text", "text", "int4", "int4", ret="text"),
                                   sig("text", "text", "text", "int4", "int4", "text", ret="text")),
             _replace_py, _replace_spark, sql_names=("regexp_replace",), doc="9.7.3",
             samples=("regexp_replace(s, 'l', 'L', 4)", "regexp_replace(s, '[a-z]', '<\\&>', 1, 2)",
                      "regexp_replace(s, '[a-z]', '_', 2, 0)", "regexp_replace(s, '(L)', '[\\1]', 1, 1, 'i')",
                      "regexp_replace(s, ',', ';', 3, 2, 'g')", "regexp_replace(s, 'l', 'x', 0)",
                      "regexp_replace(s, 'l', 'x', 1, -1)", "regexp_replace(s, 'l', 'x', 30)"), extra=IN_CONTEXT),
)
