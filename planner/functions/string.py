"""String functions and operators (PostgreSQL 9.4) and pattern matching (9.7).

Characters are Unicode code points (the database encoding is UTF8); case mapping is
Unicode's, as PostgreSQL's builtin ``C.UTF-8`` locale and Materialize do.
"""

from __future__ import annotations

import functools
import hashlib
from functools import reduce
import re

from catalog.errors import (
    SqlError, ARRAY_SUBSCRIPT_ERROR, CHARACTER_NOT_IN_REPERTOIRE, FEATURE_NOT_SUPPORTED,
    INVALID_ESCAPE_SEQUENCE, INVALID_PARAMETER_VALUE, INVALID_REGULAR_EXPRESSION, INVALID_USE_OF_ESCAPE_CHARACTER,
    NULL_VALUE_NOT_ALLOWED,
    PROGRAM_LIMIT_EXCEEDED, STRING_DATA_RIGHT_TRUNCATION, SUBSTRING_ERROR, SYNTAX_ERROR, UNDEFINED_OBJECT,
)
from catalog.textio import fit_string, format_text
from catalog.types import TEXT
from planner.functions.registry import IN_CONTEXT, Function, by_python, constant_arg, register, sig
from planner.context import NO_STATEMENT
from planner.guard import INLINE, Guard, utf8_bytes
from planner.pattern import Regex, compile_regex, like

INVALID_REGEX = INVALID_REGULAR_EXPRESSION


def _text(v, t, fmt) -> str:
    """``v`` (of type ``t``) as its output text in the session's text settings ``fmt``."""
    return v if isinstance(v, str) else format_text(v, t, fmt)


def _octets(v: str | bytes) -> int:
    """Bytes of a string (UTF8, the database encoding) or of a bytea."""
    return len(v.encode() if isinstance(v, str) else v)


def _substr(a, e):
    s, start = a[0], a[1]
    if len(a) == 3:
        if a[2] < 0:
            raise SqlError(SUBSTRING_ERROR, "negative substring length not allowed")
        end = start + a[2]
    else:
        end = len(s) + 1
    return s[max(start, 1) - 1 : max(end - 1, 0)]


def _null_if_any_null(S, args, result):
    """Spark: ``result``, NULL when any of ``args`` is (a strict function's rule, which
    Spark's greatest and least, that skip NULLs, would break)."""
    return S.F.when(reduce(lambda x, y: x | y, [c.isNull() for c in args]), S.F.lit(None)).otherwise(result)


def _substr_spark(S, a, e):
    # PostgreSQL: characters before position 1 count against the length.
    F = S.F
    s, start = a[0], a[1]
    first = F.greatest(start, F.lit(1))
    if len(a) == 2:
        return _null_if_any_null(S, a, s.substr(first, F.lit(2**31 - 1)))
    n = a[2]
    body = s.substr(first, F.greatest(start + n - first, F.lit(0)))
    return _null_if_any_null(S, a, F.when(n < 0, S.fail(SUBSTRING_ERROR, "negative substring length not allowed"))
                             .otherwise(body))


def _trim_py(kind):
    strip = {"btrim": str.strip, "ltrim": str.lstrip, "rtrim": str.rstrip}[kind]
    return lambda a, e: strip(a[0], a[1] if len(a) > 1 else " ")


def _trim_spark(kind):
    def spark(S, a, e):
        F = S.F
        if kind == "btrim":
            return F.trim(a[0]) if len(a) == 1 else F.call_function("btrim", a[0], a[1])
        f = F.ltrim if kind == "ltrim" else F.rtrim
        return f(a[0]) if len(a) == 1 else f(a[0], a[1])
    return spark


def _concat_py(a, e, ctx):
    return "".join(_text(v, x.type, ctx.guard.text) for v, x in zip(a, e.args) if v is not None)


def _as_text(S, cols, exprs):
    """Spark columns ``cols`` (of plan expressions ``exprs``) in their text form."""
    return [S.output_text(c, x.type) for c, x in zip(cols, exprs)]


def _concat_ws_py(a, e, ctx):
    if a[0] is None:
        return None
    return a[0].join(_text(v, x.type, ctx.guard.text) for v, x in zip(a[1:], e.args[1:]) if v is not None)


def _left_py(a, e):
    s, n = a
    return s[:n] if n >= 0 else s[: max(len(s) + n, 0)]


def _right_py(a, e):
    s, n = a
    return (s[-n:] if n > 0 else "") if n >= 0 else s[-n:]


def _left_spark(S, a, e):
    F = S.F
    s, n = a
    return _null_if_any_null(S, a, F.when(n >= 0, s.substr(F.lit(1), n)).otherwise(
        s.substr(F.lit(1), F.greatest(F.char_length(s) + n, F.lit(0)))))


def _right_spark(S, a, e):
    F = S.F
    s, n = a
    tail = F.greatest(F.char_length(s) - n + 1, F.lit(1))
    return _null_if_any_null(S, a, F.when(n >= 0, s.substr(tail, F.lit(2**31 - 1))).otherwise(
        s.substr(1 - n, F.lit(2**31 - 1))))


def _pad_py(left: bool):
    def py(a, e, ctx):
        s, n = a[0], a[1]
        fill = a[2] if len(a) > 2 else " "
        if n <= 0:
            return ""
        if len(s) >= n or not fill:
            return s[:n]
        short = n - len(s)
        whole, part = divmod(short, len(fill))
        # the size first: n comes from the query, and building first is what a bad one can't afford
        ctx.guard.check_value_bytes(utf8_bytes(s) + whole * utf8_bytes(fill) + utf8_bytes(fill[:part]))
        pad = fill * whole + fill[:part]
        return pad + s if left else s + pad
    return py


def _repeat_py(a, e, ctx):
    """repeat(s, n): ``s`` n times (none for n <= 0), its size checked before it is built
    (PostgreSQL's 54000 "requested length too large" past 1 GB; ``planner.guard``)."""
    s, n = a[0], max(a[1], 0)
    if s and n:
        ctx.guard.check_value_bytes(utf8_bytes(s) * n)
    return s * n


def _pad_spark(left: bool):
    def spark(S, a, e):
        F = S.F
        fill = a[2] if len(a) > 2 else F.lit(" ")
        f = F.lpad if left else F.rpad
        # An empty fill leaves the string (cut to n) as it is, as PostgreSQL does.
        return F.when(a[1] <= 0, F.lit("")).when(fill == "", a[0].substr(F.lit(1), a[1])).otherwise(
            f(a[0], a[1], fill))
    return spark


def _split_part_py(a, e):
    s, d, n = a
    if n == 0:
        raise SqlError(INVALID_PARAMETER_VALUE, "field position must not be zero")
    parts = s.split(d) if d else [s]
    if s == "":
        parts = []
    i = n - 1 if n > 0 else len(parts) + n
    return parts[i] if 0 <= i < len(parts) else ""


def _split_part_spark(S, a, e):
    F = S.F
    return F.when(a[2] == 0, S.fail(INVALID_PARAMETER_VALUE, "field position must not be zero")).otherwise(
        F.split_part(a[0], a[1], a[2]))


def _initcap_py(a, e):
    out, prev_alnum = [], False
    for c in a[0]:
        out.append(c.lower() if prev_alnum else c.upper())
        prev_alnum = c.isalnum()
    return "".join(out)


def _initcap_spark(S, a, e):
    # Words are runs of letters and digits (PostgreSQL's initcap), not Spark's
    # whitespace-separated ones.
    F = S.F
    chars = F.split(a[0], "(?!^)|^$")
    alnum = r"[\p{L}\p{N}]"
    fixed = F.transform(chars, lambda c, i: F.when((i > 0) & F.element_at(chars, i).rlike(alnum), F.lower(c))
                        .otherwise(F.upper(c)))
    return F.when(a[0] == "", F.lit("")).otherwise(F.array_join(fixed, ""))


def _translate_py(a, e):
    s, frm, to = a
    table = {}
    for i, c in enumerate(frm):
        if c not in table:
            table[c] = to[i] if i < len(to) else None
    return "".join(table.get(c, c) or "" if c in table else c for c in s)


def _pg_regex(pattern: str, flags: str, guard: Guard) -> Regex:
    """A POSIX advanced regular expression (PostgreSQL 9.7.3) as a Python pattern; the
    common subset (classes, quantifiers, groups, anchors) is written alike. Matched by
    RE2 where it can (``planner.pattern``: linear time), under the evaluation's ``guard``
    (``INLINE`` where it is only checked, for a Spark lowering)."""
    f = 0
    for c in flags:
        if c == "i":
            f |= re.I
        elif c not in "gc":
            raise SqlError(INVALID_PARAMETER_VALUE, f'invalid regular expression option: "{c}"')
    try:
        return compile_regex(pattern, f, guard)
    except re.error as err:
        raise SqlError(INVALID_REGEX, f"invalid regular expression: {err}") from None


def _replacement_py(repl: str):
    def expand(m: re.Match) -> str:
        out, i = [], 0
        while i < len(repl):
            c = repl[i]
            if c == "\\" and i + 1 < len(repl):
                n = repl[i + 1]
                if n.isdigit():
                    out.append(m.group(int(n)) or "" if int(n) <= (m.re.groups or 0) else "")
                elif n == "&":
                    out.append(m.group(0))
                else:
                    out.append(n)
                i += 2
                continue
            out.append(c)
            i += 1
        return "".join(out)
    return expand


def _regexp_replace_py(a, e, ctx):
    s, p, r = a[0], a[1], a[2]
    flags = a[3] if len(a) > 3 else ""
    expand = _replacement_py(r)
    grown = [0, None]  # characters the replacements put in so far; s's UTF-8 bytes

    def counted(m):
        # the result can grow by a replacement per character of s: checked as it grows
        text = expand(m)
        grown[0] += len(text)
        if grown[0] > _GROWTH_CHECK_CHARS:
            if grown[1] is None:
                grown[1] = utf8_bytes(s)
            ctx.guard.check_value_bytes(grown[1] + grown[0])
        return text

    return _pg_regex(p, flags, ctx.guard).sub(counted, s, count=0 if "g" in flags else 1)


#: characters of replacements past which regexp_replace checks its result's size as it goes
_GROWTH_CHECK_CHARS = 1 << 20


def _java_replacement(repl: str, whole: int, shift: int) -> str:
    """A PostgreSQL replacement (``\\1``, ``\\&``) for Java's regex: group ``whole`` is the
    match, the pattern's groups are ``shift`` further on."""
    out, i = [], 0
    while i < len(repl):
        c = repl[i]
        if c == "\\" and i + 1 < len(repl):
            n = repl[i + 1]
            out.append(f"${int(n) + shift}" if n.isdigit() else f"${whole}" if n == "&" else
                       ("\\" + n if n in "\\$" else n))
            i += 2
            continue
        out.append("\\$" if c == "$" else "\\\\" if c == "\\" else c)
        i += 1
    return "".join(out)


def _regexp_replace_spark(S, a, e):
    F = S.F
    consts = [x.value if x.__class__.__name__ == "Literal" else None for x in e.args[1:]]
    if any(v is None for v in consts):
        raise SqlError(FEATURE_NOT_SUPPORTED, "regexp_replace needs a constant pattern, replacement and flags "
                       "on table data")
    pattern, repl = consts[0], consts[1]
    flags = consts[2] if len(consts) > 2 else ""
    _pg_regex(pattern, flags, INLINE)  # PostgreSQL's errors for a bad pattern or flag
    prefix = "(?i)" if "i" in flags else ""
    if "g" in flags:
        return F.regexp_replace(a[0], F.lit(prefix + pattern), F.lit(_java_replacement(repl, 0, 0)))
    # First match only: a lazy prefix (group 1) finds the leftmost match (group 2).
    return F.regexp_replace(a[0], F.lit(prefix + "^(?s:(.*?))(" + pattern + ")"),
                            F.lit("$1" + _java_replacement(repl, 2, 2)))


def _regex_py(kind):
    def py(a, e, ctx):
        hit = _pg_regex(a[1], "i" if "iregex" in kind else "", ctx.guard).search(a[0]) is not None
        return (not hit) if kind.startswith("not_") else hit
    return py


def _regex_spark(kind):
    def spark(S, a, e):
        F = S.F
        ci = "(?i)" if "iregex" in kind else ""
        p = e.args[1]
        hit = a[0].rlike(ci + p.value) if p.__class__.__name__ == "Literal" and p.value is not None else \
            a[0].rlike(F.concat(F.lit(ci), a[1]))
        return ~hit if kind.startswith("not_") else hit
    return spark


def like_py(s: str, pattern: str, ci: bool, guard: Guard) -> bool:
    """``s LIKE pattern`` (PostgreSQL 9.7.1), in linear time (``planner.pattern.like``)."""
    return like(s, pattern, ci, guard)


def _to_hex_py(a, e):
    v = a[0]
    bits = 64 if e.args[0].type.name == "int8" else 32
    return format(v & ((1 << bits) - 1), "x")


def _to_hex_spark(S, a, e):
    F = S.F
    x = a[0]
    if e.args[0].type.name != "int8":
        x = F.when(x < 0, x.cast(S.T.LongType()) + 2**32).otherwise(x)
    return F.lower(F.hex(x))


def _assign_string_spark(S, a, e):
    F = S.F
    t = e.type
    x = a[0] if e.args[0].type.name != "bpchar" else F.rtrim(a[0])
    n = t.precision
    too_long = (F.char_length(x) > n) & (F.char_length(F.rtrim(x)) > n)
    cut = x.substr(F.lit(1), F.lit(n))
    fitted = F.rpad(cut, n, " ") if t.name == "bpchar" else cut
    return F.when(too_long, S.fail(STRING_DATA_RIGHT_TRUNCATION, f"value too long for type {t.sql()}")).otherwise(fitted)


T1 = (sig("text", ret="text"),)

register(
    Function("assign_string", (), lambda a, e: fit_string(a[0], e.type, False), _assign_string_spark, doc="8.3",
             samples=()),
    Function("concat", (), lambda a, e: a[0] + a[1], lambda S, a, e: S.F.concat(a[0], a[1]), doc="9.4",
             samples=("s || 'x'", "s || i", "i || s")),
    Function("concat_fn", (sig("any", ret="text", variadic=True),), _concat_py,
             lambda S, a, e: S.F.call_function("concat_ws", S.F.lit(""), *_as_text(S, a, e.args)), sql_names=("concat",), strict=False, doc="9.4",
             samples=("concat(s, '-', i, b, n)", "concat(d, ts)"), extra=IN_CONTEXT),
    Function("concat_ws", (sig("text", "any", ret="text", variadic=True),), _concat_ws_py,
             lambda S, a, e: S.F.when(a[0].isNotNull(), S.F.call_function("concat_ws", a[0], *_as_text(S, a[1:], e.args[1:]))),
             sql_names=("concat_ws",), strict=False, doc="9.4", samples=("concat_ws(',', s, i, b)",), extra=IN_CONTEXT),
    Function("upper", T1, lambda a, e: a[0].upper(), lambda S, a, e: S.F.upper(a[0]), sql_names=("upper",),
             doc="9.4", samples=("upper(s)",)),
    Function("lower", T1, lambda a, e: a[0].lower(), lambda S, a, e: S.F.lower(a[0]), sql_names=("lower",),
             doc="9.4", samples=("lower(s)",)),
    Function("length", (sig("text", ret="int4"),), lambda a, e: len(a[0]), lambda S, a, e: S.F.char_length(a[0]),
             sql_names=("length", "char_length", "character_length"), doc="9.4",
             samples=("length(s)", "char_length(s)")),
    # char(n) counts its padding in bytes (PostgreSQL's bpcharoctetlen) but not in
    # characters (bpcharlen: length() casts to text, which drops it)
    Function("octet_length", (sig("text", ret="int4"), sig("bpchar", ret="int4"), sig("bytea", ret="int4")),
             lambda a, e: _octets(a[0]), lambda S, a, e: S.F.octet_length(a[0]), sql_names=("octet_length",),
             doc="9.4", samples=("octet_length(s)", "octet_length(s::char(12))", "octet_length(k::char(3))",
                                 "octet_length(s::bytea)")),
    Function("bit_length", (sig("text", ret="int4"), sig("bytea", ret="int4")), lambda a, e: 8 * _octets(a[0]),
             lambda S, a, e: S.F.octet_length(a[0]) * 8, sql_names=("bit_length",), doc="9.4",
             samples=("bit_length(s)", "bit_length(s::char(12))", "bit_length(s::bytea)")),
    Function("substr", (sig("text", "int4", ret="text"), sig("text", "int4", "int4", ret="text")), _substr,
             _substr_spark, sql_names=("substr", "substring"), doc="9.4",
             samples=("substr(s, 2)", "substr(s, 2, 3)", "substring(s from 0 for 3)", "substr(s, 2, -1)",
                      "substr(s, k, i)")),
    Function("replace", (sig("text", "text", "text", ret="text"),), lambda a, e: a[0].replace(a[1], a[2]),
             lambda S, a, e: S.F.replace(a[0], a[1], a[2]), sql_names=("replace",), doc="9.4",
             samples=("replace(s, 'l', 'L')",)),
    Function("btrim", (sig("text", ret="text"), sig("text", "text", ret="text")), _trim_py("btrim"),
             _trim_spark("btrim"), sql_names=("btrim", "trim"), doc="9.4",
             samples=("btrim(s)", "btrim(s, 'Hd')", "trim(both 'a' from s)")),
    Function("ltrim", (sig("text", ret="text"), sig("text", "text", ret="text")), _trim_py("ltrim"),
             _trim_spark("ltrim"), sql_names=("ltrim",), doc="9.4", samples=("ltrim(s)", "ltrim(s, 'He')")),
    Function("rtrim", (sig("text", ret="text"), sig("text", "text", ret="text")), _trim_py("rtrim"),
             _trim_spark("rtrim"), sql_names=("rtrim",), doc="9.4", samples=("rtrim(s)", "rtrim(s, 'dlo')")),
    Function("left", (sig("text", "int4", ret="text"),), _left_py, _left_spark, sql_names=("left",), doc="9.4",
             samples=("left(s, 2)", "left(s, -2)", "left(s, i)", "left(s, nullif(k, 1))")),
    Function("right", (sig("text", "int4", ret="text"),), _right_py, _right_spark, sql_names=("right",), doc="9.4",
             samples=("right(s, 2)", "right(s, -2)", "right(s, 0)", "right(s, nullif(k, 1))")),
    Function("lpad", (sig("text", "int4", ret="text"), sig("text", "int4", "text", ret="text")), _pad_py(True),
             _pad_spark(True), sql_names=("lpad",), doc="9.4",
             samples=("lpad(s, 8)", "lpad(s, 8, 'xy')", "lpad(s, 2)", "lpad(s, 8, '')"), extra=IN_CONTEXT),
    Function("rpad", (sig("text", "int4", ret="text"), sig("text", "int4", "text", ret="text")), _pad_py(False),
             _pad_spark(False), sql_names=("rpad",), doc="9.4", samples=("rpad(s, 8, '*')", "rpad(s, 1)"), extra=IN_CONTEXT),
    Function("repeat", (sig("text", "int4", ret="text"),), _repeat_py,
             lambda S, a, e: _null_if_any_null(S, a, S.F.repeat(a[0], S.F.greatest(a[1], S.F.lit(0)))),
             sql_names=("repeat",), doc="9.4",
             samples=("repeat(s, 2)", "repeat(s, -1)", "repeat(s, nullif(k, 1))"), extra=IN_CONTEXT),
    Function("reverse", T1, lambda a, e: a[0][::-1], lambda S, a, e: S.F.reverse(a[0]), sql_names=("reverse",),
             doc="9.4", samples=("reverse(s)",)),
    Function("split_part", (sig("text", "text", "int4", ret="text"),), _split_part_py, _split_part_spark,
             sql_names=("split_part",), doc="9.4",
             samples=("split_part(s, ',', 2)", "split_part(s, ',', -1)", "split_part(s, ',', 0)",
                      "split_part(s, '', 1)")),
    Function("strpos", (sig("text", "text", ret="int4"),), lambda a, e: a[0].find(a[1]) + 1,
             lambda S, a, e: S.F.call_function("locate", a[1], a[0]),
             sql_names=("strpos", "position"), doc="9.4",
             samples=("strpos(s, 'l')", "position('b' in s)", "strpos(s, '')")),
    Function("starts_with", (sig("text", "text", ret="bool"),), lambda a, e: a[0].startswith(a[1]),
             lambda S, a, e: S.F.startswith(a[0], a[1]), sql_names=("starts_with",), doc="9.4",
             samples=("starts_with(s, 'He')", "s ^@ 'a,'")),
    Function("initcap", T1, _initcap_py, _initcap_spark, sql_names=("initcap",), doc="9.4",
             samples=("initcap(s)", "initcap('hello wORLD-foo bar_baz')", "initcap(s || ' x-y')")),
    Function("md5", T1, lambda a, e: hashlib.md5(a[0].encode()).hexdigest(), lambda S, a, e: S.F.md5(a[0]),
             sql_names=("md5",), doc="9.4", samples=("md5(s)",)),
    Function("translate", (sig("text", "text", "text", ret="text"),), _translate_py,
             lambda S, a, e: S.F.call_function("translate", a[0], a[1], a[2]), sql_names=("translate",), doc="9.4",
             samples=("translate(s, 'lo', 'L')",)),
    Function("ascii", (sig("text", ret="int4"),), lambda a, e: ord(a[0][0]) if a[0] else 0,
             lambda S, a, e: S.F.ascii(a[0]), sql_names=("ascii",), doc="9.4", samples=("ascii(s)",),
             differs="Spark's ascii gives the first byte's value for non-ASCII characters"),
    Function("to_hex", (sig("int4", ret="text"), sig("int8", ret="text")), _to_hex_py, _to_hex_spark,
             sql_names=("to_hex",), doc="9.4", samples=("to_hex(i)", "to_hex(k * 255)")),
    Function("regexp_replace", (sig("text", "text", "text", ret="text"), sig("text", "text", "text", "text", ret="text")),
             _regexp_replace_py, _regexp_replace_spark, sql_names=("regexp_replace",), doc="9.7.3",
             samples=("regexp_replace(s, 'l+', '<\\&>')", "regexp_replace(s, '([a-z])', '[\\1]', 'g')",
                      "regexp_replace(s, 'L', 'x', 'gi')"), extra=IN_CONTEXT),
    Function("like", (sig("text", "text", ret="bool"),), lambda a, e, ctx: like_py(a[0], a[1], False, ctx.guard),
             lambda S, a, e: a[0].like(a[1]), sql_names=("like",), doc="9.7.1",
             samples=("s like 'H%'", "s not like '%,%'", "like(s, '%l_')"), extra=IN_CONTEXT),
    Function("ilike", (), lambda a, e, ctx: like_py(a[0], a[1], True, ctx.guard), lambda S, a, e: a[0].ilike(a[1]), doc="9.7.1",
             samples=("s ilike 'h%'",), extra=IN_CONTEXT),
    *[Function(k, (), _regex_py(k), _regex_spark(k), doc="9.7.3", samples=(f"s {op} '^[A-Z]'",), extra=IN_CONTEXT)
      for k, op in (("regex", "~"), ("iregex", "~*"), ("not_regex", "!~"), ("not_iregex", "!~*"))],
)


# -- regexp_match, regexp_split_to_array (9.7.3), SIMILAR TO (9.7.2) -----------------------


def _const_args(e, what: str) -> list:
    """The values of a call's arguments after the first, which Spark needs constant."""
    vals = [x.value if x.__class__.__name__ == "Literal" else _NOT_CONST for x in e.args[1:]]
    if any(v is _NOT_CONST for v in vals):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{what} needs a constant pattern and flags on table data")
    return vals


_NOT_CONST = object()


def _regexp_match_py(a, e, ctx):
    """The first match's capture groups (the whole match without groups), NULL when
    none matches (PostgreSQL 9.7.3)."""
    flags = a[2] if len(a) > 2 else ""
    if "g" in flags:
        raise SqlError(INVALID_PARAMETER_VALUE, "regexp_match() does not support the \"global\" option",
                       hint="Use the regexp_matches function instead.")
    m = _pg_regex(a[1], flags, ctx.guard).search(a[0])
    if m is None:
        return None
    return list(m.groups()) if m.re.groups else [m.group(0)]


def _spark_regex(e, what: str):
    """(flags, compiled pattern, Java pattern) of a regex call's constant pattern and
    flags, or None when one is NULL.

    Raises:
        SqlError 0A000 when they are not constant; 22023/2201B as ``_pg_regex``."""
    vals = _const_args(e, what)
    if any(v is None for v in vals):
        return None
    pattern, flags = vals[0], vals[1] if len(vals) > 1 else ""
    return flags, _pg_regex(pattern, flags, INLINE), ("(?i)" if "i" in flags else "") + pattern


def _group_or_null(F, c):
    """A capture group's text: a group that took part in no match is NULL in
    PostgreSQL, '' in Spark."""
    return F.when(c == "", F.lit(None)).otherwise(c)


def _regexp_match_spark(S, a, e):
    F = S.F
    regex = _spark_regex(e, "regexp_match")
    if regex is None:
        return F.lit(None).cast(S.spark_type(e.type))
    flags, rx, java = regex
    _regexp_match_py(["", rx.pattern, flags], e, NO_STATEMENT)  # the option check
    groups = rx.groups
    hit = a[0].rlike(java)
    parts = [F.regexp_extract(a[0], java, g) for g in (range(1, groups + 1) if groups else [0])]
    if groups:
        parts = [_group_or_null(F, p) for p in parts]
    return F.when(hit, F.array(*parts))


def _split_py(a, e, ctx):
    """regexp_split_to_array: the text between matches; an empty match splits between
    characters (PostgreSQL 9.7.3)."""
    flags = a[2] if len(a) > 2 else ""
    if "g" in flags:
        raise SqlError(INVALID_PARAMETER_VALUE, "regexp_split_to_array() does not support the \"global\" option")
    rx = _pg_regex(a[1], flags, ctx.guard)
    text = a[0]
    out, start = [], 0
    # One pass (finditer: after an empty match the search goes on a character later); a
    # search per piece would encode the text again each time for RE2.
    for m in rx.finditer(text):
        if m.end() == m.start() and (m.start() == start or m.start() == len(text)):
            continue  # an empty match right after the last piece, or at the end
        out.append(text[start:m.start()])
        start = m.end()
    out.append(text[start:])
    return out


def _split_spark(S, a, e):
    vals = _const_args(e, "regexp_split_to_array")
    if any(v is None for v in vals):
        return S.F.lit(None).cast(S.spark_type(e.type))
    pattern, flags = vals[0], vals[1] if len(vals) > 1 else ""
    rx = _pg_regex(pattern, flags, INLINE)  # PostgreSQL's errors for a bad pattern or flag
    if not pattern or rx.fullmatch(""):
        raise SqlError(FEATURE_NOT_SUPPORTED, "regexp_split_to_array with a pattern matching '' is not supported on "
                                              "table data")
    return S.F.split(a[0], ("(?i)" if "i" in flags else "") + pattern, -1)


def similar_to_regex(pattern: str, escape: str | None = "\\") -> str:
    """A SIMILAR TO pattern as an anchored regular expression (PostgreSQL 9.7.2,
    similar_escape): ``%`` is ``.*``, ``_`` is ``.``, ``|``, ``*``, ``+``, ``?``,
    ``{m,n}``, ``()`` and ``[...]`` as in regular expressions; other characters literal.

    Raises:
        SqlError 22025 for an escape that is not one character or ends the pattern."""
    if escape is not None and len(escape) > 1:
        raise SqlError(INVALID_ESCAPE_SEQUENCE, "invalid escape string", hint="Escape string must be empty or one character.")
    out, i, in_class = ["^(?:"], 0, False
    while i < len(pattern):
        c = pattern[i]
        if escape and c == escape:
            if i + 1 >= len(pattern):
                raise SqlError(INVALID_ESCAPE_SEQUENCE, "invalid escape string")
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if in_class:
            out.append(c if c != "\\" else "\\\\")
            in_class = c != "]"
        elif c == "[":
            out.append(c)
            in_class = True
        elif c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        elif c in "|*+?{}()":
            out.append(c)
        else:
            out.append(re.escape(c))
        i += 1
    out.append(")$")
    return "".join(out)


def similar_parts(pattern: str, escape: str | None) -> list[str]:
    """A SIMILAR pattern split at its escape-double-quote separators (``#"`` with escape
    ``#``): one part (none), two or three (PostgreSQL 9.7.2, similar_escape).

    Raises:
        SqlError 2200C for more than two separators."""
    parts, cur, i = [], [], 0
    while i < len(pattern):
        if escape and pattern[i] == escape and i + 1 < len(pattern):
            if pattern[i + 1] == '"':
                if len(parts) == 2:
                    raise SqlError(INVALID_USE_OF_ESCAPE_CHARACTER,
                                   "SQL regular expression may not contain more than two escape-double-quote separators")
                parts.append("".join(cur))
                cur = []
            else:
                cur.append(pattern[i:i + 2])
            i += 2
            continue
        cur.append(pattern[i])
        i += 1
    return [*parts, "".join(cur)]


def _substring_similar_py(a, e, ctx):
    """substring(s similar pattern escape e), SQL's form (PostgreSQL 9.7.2): the pattern
    matches the whole of ``s``; without separators the answer is ``s``, with them the part
    between the two ``e"`` separators (after the one, to the end), the part before them
    matching as little as it can and the part between as much as it can (similar_escape's
    ``^(?:A){1,1}?(B){1,1}(?:C)$``); NULL when the pattern does not match.

    Raises:
        SqlError 2200C for more than two separators, 22025 for a bad escape, 2201B for a
        pattern Python's re rejects."""
    text, pattern, escape = a
    try:
        rx = [compile_regex(similar_to_regex(p, escape), re.S, ctx.guard) for p in similar_parts(pattern, escape)]
    except re.error as err:
        raise SqlError(INVALID_REGULAR_EXPRESSION, f"invalid regular expression: {err}") from None
    if len(rx) == 1:
        return text if rx[0].fullmatch(text) else None
    before, within, after = rx if len(rx) == 3 else (*rx, None)
    n = len(text)
    for i in range(n + 1):
        if not before.fullmatch(text[:i]):
            continue
        for j in (range(n, i - 1, -1) if after is not None else (n,)):
            if within.fullmatch(text[i:j]) and (after is None or after.fullmatch(text[j:])):
                return text[i:j]
    return None


def _similar_py(a, e, ctx):
    escape = a[2] if len(a) > 2 else "\\"
    return compile_regex(similar_to_regex(a[1], escape), re.S, ctx.guard).search(a[0]) is not None


def _similar_spark(S, a, e):
    vals = _const_args(e, "SIMILAR TO")
    if any(v is None for v in vals):
        return S.F.lit(None).cast("boolean")
    return a[0].rlike("(?s)" + similar_to_regex(vals[0], vals[1] if len(vals) > 1 else "\\"))


register(
    Function("regexp_match", (sig("text", "text", ret="_text"), sig("text", "text", "text", ret="_text")),
             _regexp_match_py, _regexp_match_spark, sql_names=("regexp_match",), doc="9.7.3",
             samples=("regexp_match(s, 'l+')", "regexp_match(s, '([a-z])([a-z])')", "regexp_match(s, 'P(f)', 'i')",
                      "regexp_match(s, 'x', 'g')"), extra=IN_CONTEXT),
    Function("regexp_split_to_array", (sig("text", "text", ret="_text"), sig("text", "text", "text", ret="_text")),
             _split_py, _split_spark, sql_names=("regexp_split_to_array",), doc="9.7.3",
             samples=("regexp_split_to_array(s, ',')", "regexp_split_to_array(s, '\\s+')",
                      "regexp_split_to_array(s, 'L', 'i')"), extra=IN_CONTEXT),
    # on table data through the same Python (by_python): Java's regular expressions
    # backtrack, with no "as little as it can" for the part before the separators
    Function("substring_similar", (sig("text", "text", "text", ret="text"),), _substring_similar_py, by_python,
             sql_names=("substring",), doc="9.7.2",
             samples=("substring(s similar '%#\"l_#\"%' escape '#')", "substring(s, '%#\"[a-z]+#\"%', '#')",
                      "substring('foobar' similar '%#\"o_b#\"%' escape '#')", "substring(s, 'H%', '#')",
                      "substring(s, '%#\"l%', '#')", "substring(s, '%#\"o#\"%#\"a', '#')",
                      "substring(s, '%#\"%', NULL)", "substring(s, '_#\"%#\"_', '#')"),
             extra=IN_CONTEXT),
    Function("similar_to", (), _similar_py, _similar_spark, doc="9.7.2",
             samples=("s SIMILAR TO 'H%'", "s SIMILAR TO '%(b|l)%'", "s NOT SIMILAR TO '[a-z ,]*'",
                      "s SIMILAR TO '%#%%' ESCAPE '#'", "s SIMILAR TO 'a_b%'"), extra=IN_CONTEXT),
)


# -- format (9.4.1), regexp_matches (9.7.3) ---------------------------------------------

_FORMAT_HINT = 'For a single "%" use "%%".'


def format_pieces(fmt: str, nargs: int) -> list:
    """``format``'s format string parsed (PostgreSQL 9.4.1.1, varlena.c text_format):
    literal strings and specs ``(argument, width, width argument, left, type)``, where
    arguments are 0-based indexes into the values after the format, ``width`` an int or
    None, ``width argument`` the index whose value is the width (``*`` / ``*n$``) or None,
    ``left`` the ``-`` flag and ``type`` one of ``s``, ``I``, ``L``. Shared by the Python
    implementation and the Spark lowering, which needs the format constant.

    Raises:
        SqlError 22023 for an unterminated or unrecognized specifier, argument 0, or too
        few arguments for the specs."""
    out, i, arg = [], 0, -1  # ``arg``: the last argument used
    lit = []

    def number(j):
        k = j
        while k < len(fmt) and fmt[k].isdigit():
            k += 1
        return (int(fmt[j:k]), k) if k > j else (None, j)

    def unterminated():
        return SqlError(INVALID_PARAMETER_VALUE, "unterminated format() type specifier", hint=_FORMAT_HINT)

    def position(n):
        if n == 0:
            raise SqlError(INVALID_PARAMETER_VALUE, "format specifies argument 0, but arguments are numbered from 1")
        return n - 1

    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            lit.append(c)
            i += 1
            continue
        i += 1
        if i >= len(fmt):
            raise unterminated()
        if fmt[i] == "%":
            lit.append("%")
            i += 1
            continue
        argpos = width = widthpos = None
        left = False
        n, j = number(i)
        if n is not None:
            if j < len(fmt) and fmt[j] == "$":
                argpos, i = position(n), j + 1
            else:
                width, i = n, j
        if width is None:
            while i < len(fmt) and fmt[i] == "-":
                left, i = True, i + 1
            if i < len(fmt) and fmt[i] == "*":
                n, j = number(i + 1)
                if n is not None:
                    if j >= len(fmt) or fmt[j] != "$":
                        raise unterminated() if j >= len(fmt) else SqlError(
                            INVALID_PARAMETER_VALUE, f'unrecognized format() type specifier "{fmt[j]}"',
                            hint=_FORMAT_HINT)
                    widthpos, i = position(n), j + 1
                else:
                    widthpos, i = "next", i + 1
            else:
                width, i = number(i)
        if i >= len(fmt):
            raise unterminated()
        kind = fmt[i]
        i += 1
        if kind not in "sIL":
            raise SqlError(INVALID_PARAMETER_VALUE, f'unrecognized format() type specifier "{kind}"', hint=_FORMAT_HINT)
        if widthpos is not None:
            arg = arg + 1 if widthpos == "next" else widthpos
            widthpos = arg
        arg = argpos if argpos is not None else arg + 1
        if arg >= nargs or (widthpos is not None and widthpos >= nargs):
            raise SqlError(INVALID_PARAMETER_VALUE, "too few arguments for format()")
        if lit:
            out.append("".join(lit))
            lit = []
        out.append((arg, width, widthpos, left, kind))
    if lit:
        out.append("".join(lit))
    return out


def quote_ident(s: str) -> str:
    """PostgreSQL's quote_ident: double-quoted unless a lower-case identifier that is not
    a reserved keyword (PostgreSQL 9.4, ruleutils.c quote_identifier)."""
    if re.fullmatch(r"[a-z_][a-z0-9_]*", s) and s not in _quoted_keywords():
        return s
    return '"' + s.replace('"', '""') + '"'


def _quoted_keywords() -> frozenset:
    """The keywords quote_ident quotes: all but the unreserved ones (pglast's lists are
    PostgreSQL's kwlist.h)."""
    from pglast.keywords import COL_NAME_KEYWORDS, RESERVED_KEYWORDS, TYPE_FUNC_NAME_KEYWORDS

    return frozenset(COL_NAME_KEYWORDS) | frozenset(RESERVED_KEYWORDS) | frozenset(TYPE_FUNC_NAME_KEYWORDS)


def quote_literal(s: str | None) -> str:
    """PostgreSQL's quote_nullable: ``NULL`` for NULL, else the string quoted, with an
    ``E`` prefix and doubled backslashes when it has a backslash (9.4)."""
    if s is None:
        return "NULL"
    q = "'" + s.replace("'", "''").replace("\\", "\\\\") + "'"
    return "E" + q if "\\" in s else q


def _quote_ident_spark(F, v):
    """``quote_ident`` of Spark string column ``v`` (NULL stays NULL)."""
    return F.when(v.rlike("^[a-z_][a-z0-9_]*$") & ~v.isin(*sorted(_quoted_keywords())), v).otherwise(
        F.concat(F.lit('"'), F.replace(v, F.lit('"'), F.lit('""')), F.lit('"')))


def _quote_nullable_spark(F, v):
    """``quote_nullable`` of Spark string column ``v``: ``NULL`` for NULL."""
    body = F.concat(F.lit("'"), F.replace(F.replace(v, F.lit("'"), F.lit("''")), F.lit("\\"), F.lit("\\\\")),
                    F.lit("'"))
    return F.when(v.isNull(), F.lit("NULL")).when(v.contains("\\"), F.concat(F.lit("E"), body)).otherwise(body)


def _null_ident():
    return SqlError(NULL_VALUE_NOT_ALLOWED, "null values cannot be formatted as an SQL identifier")


def _format_py(a, e, ctx):
    if a[0] is None:
        return None
    vals = a[1:]
    out = []
    for p in format_pieces(a[0], len(vals)):
        if isinstance(p, str):
            out.append(p)
            continue
        arg, width, widthpos, left, kind = p
        if widthpos is not None:
            width = int(vals[widthpos] or 0)
            left, width = left or width < 0, abs(width)
        v = vals[arg]
        text = None if v is None else _text(v, e.args[arg + 1].type, ctx.guard.text)
        if kind == "I":
            if text is None:
                raise _null_ident()
            text = quote_ident(text)
        elif kind == "L":
            text = quote_literal(text)
        text = text or ""
        if width and width > len(text):
            ctx.guard.check_value_bytes(utf8_bytes(text) + width - len(text))  # the padding is spaces
            text = text.ljust(width) if left else text.rjust(width)
        out.append(text)
    return "".join(out)


def _format_spark(S, a, e):
    F = S.F
    if len(a) == 1 and e.args[0].__class__.__name__ != "Literal":
        # format(s) of a column: with no value to format, every spec but %% is an error
        # (22023: too few arguments, unterminated or unrecognized), as format_pieces says
        return F.when(a[0].isNull(), F.lit(None).cast("string")).when(
            a[0].rlike("^(?:[^%]|%%)*$"), F.regexp_replace(a[0], "%%", "%")).otherwise(
            S.fail(INVALID_PARAMETER_VALUE, "too few arguments for format()"))
    fmt = constant_arg(e, 0, "format needs a constant format string")
    if fmt is None:
        return F.lit(None).cast("string")
    vals = _as_text(S, a[1:], e.args[1:])
    pieces, checks = [], []
    for p in format_pieces(fmt, len(vals)):
        if isinstance(p, str):
            pieces.append(F.lit(p))
            continue
        arg, width, widthpos, left, kind = p
        v = vals[arg]
        if kind == "I":
            checks.append(v.isNull())
            v = _quote_ident_spark(F, v)
        elif kind == "L":
            v = _quote_nullable_spark(F, v)
        v = F.coalesce(v, F.lit(""))
        if widthpos is not None:
            w = F.coalesce(a[widthpos + 1].cast("int"), F.lit(0))
            fill = F.greatest(F.abs(w), F.char_length(v))
            v = F.when((w < 0) | F.lit(left), F.rpad(v, fill, F.lit(" "))).otherwise(F.lpad(v, fill, F.lit(" ")))
        elif width:
            fill = F.greatest(F.lit(width), F.char_length(v))
            v = F.rpad(v, fill, F.lit(" ")) if left else F.lpad(v, fill, F.lit(" "))
        pieces.append(v)
    out = F.concat(*pieces) if pieces else F.lit("")
    for null in checks:
        out = F.when(null, S.fail(NULL_VALUE_NOT_ALLOWED, "null values cannot be formatted as an SQL identifier")).otherwise(out)
    return out


def _regexp_matches_py(a, e, ctx):
    """The capture groups (the whole match without groups) of the first match, or with
    flag ``g`` of every match: one row each (PostgreSQL 9.7.3)."""
    flags = a[2] if len(a) > 2 else ""
    rx = _pg_regex(a[1], flags, ctx.guard)
    found = rx.finditer(a[0]) if "g" in flags else [m for m in [rx.search(a[0])] if m]
    return [list(m.groups()) if rx.groups else [m.group(0)] for m in found]


def _regexp_matches_spark(S, a, e):
    F = S.F
    regex = _spark_regex(e, "regexp_matches")
    if regex is None:
        return F.lit(None).cast(S.spark_type(e.type))
    flags, rx, pattern = regex
    groups, java = rx.groups, F.lit(pattern)
    if not groups:
        rows = F.transform(F.regexp_extract_all(a[0], java, 0), lambda m: F.array(m))
    else:
        cols = [F.regexp_extract_all(a[0], java, g) for g in range(1, groups + 1)]
        rows = F.transform(cols[0], lambda _, i: F.array(*[_group_or_null(F, c[i]) for c in cols]))
    return rows if "g" in flags else F.slice(rows, 1, 1)


register(
    Function("format", (sig("text", ret="text"), sig("text", "any", ret="text", variadic=True)), _format_py,
             _format_spark, sql_names=("format",), strict=False, doc="9.4.1",
             samples=("format('%s-%s|', s, i)", "format('%I', coalesce(s, 'x'))", "format('%L, %L', s, n)",
                      "format('%2$s %1$s %s', s, k)", "format('|%10s|%-6s|', s, i)", "format('%*s|%-*s|', k, i, 3, k)",
                      "format('%s %s %s %%', b, d, a)", "format('%I', s)", "format('%x', s)", "format('%s %s', s)",
                      "format('%1$s %3$s', s, k)", "format('%0$s', s)", "format('abc%', s)",
                      "format('%I', lower(left(s, 3)))", "format('%*2$s|', k, i)",
                      "format('%I.%I', 'select', coalesce(s, 'user'))", "format(s || ' %%')", "format(s || '%s')",
                      "format(CASE WHEN k < 3 THEN s ELSE '100%%' END)"), extra=IN_CONTEXT),
    Function("regexp_matches:rows", (sig("text", "text", ret="__text"), sig("text", "text", "text", ret="__text")),
             _regexp_matches_py, _regexp_matches_spark, doc="9.7.3", extra=IN_CONTEXT),
    Function("regexp_matches", (sig("text", "text", ret="_text"), sig("text", "text", "text", ret="_text")),
             None, None, sql_names=("regexp_matches",), kind="srf", doc="9.7.3",
             samples=("regexp_matches(s, 'l', 'g')", "regexp_matches(s, '([a-z])(x)?', 'g')",
                      "regexp_matches(s, '(.)(,)')", "regexp_matches(s, 'P(F)', 'gi')", "regexp_matches(s, '[aeiou]+')"),
             extra={"columns": (("regexp_matches", "regexp_matches:rows"),)}),
)


# -- quote_ident, quote_literal, quote_nullable, chr (9.4); get_byte, set_byte (9.5) -------


def _cast_text(v, t, fmt) -> str:
    """``v::text`` (quote_literal(anyelement) casts) in the session's text settings
    ``fmt``: the output function's text, but a bool casts to ``true``/``false``
    (PostgreSQL's booltext), not ``t``/``f``."""
    from planner.consteval import cast_value

    return cast_value(v, t, TEXT, fmt=fmt)


def _quote_literal_py(a, e, ctx):
    return quote_literal(_cast_text(a[0], e.args[0].type, ctx.guard.text))


def _quote_nullable_py(a, e, ctx):
    return "NULL" if a[0] is None else _quote_literal_py(a, e, ctx)


def _cast_text_spark(S, a, e):
    return a[0] if e.args[0].type.is_string else S.cast(a[0], e.args[0].type, TEXT)


def _quote_literal_spark(S, a, e):
    return _quote_nullable_spark(S.F, _cast_text_spark(S, a, e))


def _quote_strict_spark(S, a, e):
    v = _cast_text_spark(S, a, e)
    return S.F.when(v.isNull(), S.F.lit(None).cast("string")).otherwise(_quote_nullable_spark(S.F, v))



def _chr_py(a, e):
    """PostgreSQL's chr in a UTF8 database: the code point ``a[0]`` (oracle_compat.c)."""
    n = a[0]
    if n < 0:
        raise SqlError(INVALID_PARAMETER_VALUE, "character number must be positive")
    if n == 0:
        raise SqlError(PROGRAM_LIMIT_EXCEEDED, "null character not permitted")
    if n > 0x10FFFF:
        raise SqlError(PROGRAM_LIMIT_EXCEEDED, f"requested character too large for encoding: {n}")
    if 0xD800 <= n <= 0xDFFF:
        raise SqlError(PROGRAM_LIMIT_EXCEEDED, f"requested character not valid for encoding: {n}")
    return chr(n)


def _chr_spark(S, a, e):
    # Spark's chr is n mod 256: build the code point's UTF-8 bytes and decode them.
    F = S.F
    n = a[0]

    def byte(x):
        return F.lpad(F.hex(x), 2, "0")

    def cont(shift):
        return byte(F.shiftright(n, shift).bitwiseAND(0x3F).bitwiseOR(0x80))

    utf8 = (F.when(n < 0x80, byte(n))
            .when(n < 0x800, F.concat(byte(F.shiftright(n, 6).bitwiseOR(0xC0)), cont(0)))
            .when(n < 0x10000, F.concat(byte(F.shiftright(n, 12).bitwiseOR(0xE0)), cont(6), cont(0)))
            .otherwise(F.concat(byte(F.shiftright(n, 18).bitwiseOR(0xF0)), cont(12), cont(6), cont(0))))
    return (F.when(n < 0, S.fail(INVALID_PARAMETER_VALUE, "character number must be positive"))
            .when(n == 0, S.fail(PROGRAM_LIMIT_EXCEEDED, "null character not permitted"))
            .when(n > 0x10FFFF, S.fail(PROGRAM_LIMIT_EXCEEDED, "requested character too large for encoding"))
            .when((n >= 0xD800) & (n <= 0xDFFF),
                  S.fail(PROGRAM_LIMIT_EXCEEDED, "requested character not valid for encoding"))
            .otherwise(F.decode(F.unhex(utf8), "UTF-8")))


def _byte_index(b: bytes, n: int) -> int:
    if not 0 <= n < len(b):
        raise SqlError(ARRAY_SUBSCRIPT_ERROR, f"index {n} out of valid range, 0..{len(b) - 1}")
    return n


def _set_byte_py(a, e):
    b, n, v = a
    n = _byte_index(b, n)
    return bytes(b[:n]) + bytes([v & 0xFF]) + bytes(b[n + 1:])


def _byte_index_spark(S, b, n, value):
    F = S.F
    return F.when((n < 0) | (n >= F.octet_length(b)),
                  S.fail(ARRAY_SUBSCRIPT_ERROR, "index out of valid range")).otherwise(value)


def _get_byte_spark(S, a, e):
    F = S.F
    b, n = a
    return _byte_index_spark(S, b, n, F.conv(F.hex(F.substring(b, n + 1, 1)), 16, 10).cast("int"))


def _set_byte_spark(S, a, e):
    F = S.F
    b, n, v = a
    new = F.unhex(F.lpad(F.hex(v.bitwiseAND(0xFF)), 2, "0"))
    return _byte_index_spark(S, b, n, F.concat(F.substring(b, 1, n), new, F.substring(b, n + 2, 2**31 - 1)))


register(
    Function("quote_ident", T1, lambda a, e: quote_ident(a[0]),
             lambda S, a, e: _quote_ident_spark(S.F, a[0]), sql_names=("quote_ident",), doc="9.4",
             samples=("quote_ident(s)", "quote_ident(lower(s))", "quote_ident('select')", "quote_ident('a\"b')",
                      "quote_ident('abc_1')", "quote_ident('')", "quote_ident(k::text)")),
    # quote_literal(anyelement) is quote_literal(value::text); "any" keeps one entry for both
    Function("quote_literal", (sig("text", ret="text"), sig("any", ret="text")), _quote_literal_py,
             _quote_strict_spark, sql_names=("quote_literal",), doc="9.4",
             samples=("quote_literal(s)", "quote_literal(s || '''x\\y')", "quote_literal(n)", "quote_literal(d)",
                      "quote_literal(a)", "quote_literal(b)"), extra=IN_CONTEXT),
    Function("quote_nullable", (sig("text", ret="text"), sig("any", ret="text")), _quote_nullable_py,
             _quote_literal_spark, sql_names=("quote_nullable",), strict=False, doc="9.4",
             samples=("quote_nullable(s)", "quote_nullable(i)", "quote_nullable(s || '\\')", "quote_nullable(null)",
                      "quote_nullable(ts)", "quote_nullable(b)", "quote_nullable(j)"), extra=IN_CONTEXT),
    Function("chr", (sig("int4", ret="text"),), _chr_py, _chr_spark, sql_names=("chr",), doc="9.4",
             samples=("chr(k + 64)", "chr(k * 100 + 100)", "chr(k * 1000 + 1000)", "chr(128512 + k)", "chr(i)",
                      "chr(1114111 + k)", "chr(55295 + k)", "chr(k - 1)", "chr(-k)")),
    Function("bytea_concat", (), lambda a, e: bytes(a[0]) + bytes(a[1]), lambda S, a, e: S.F.concat(a[0], a[1]),
             doc="9.5", samples=("s::bytea || '\\x00'", "'x' || s::bytea")),
    Function("get_byte", (sig("bytea", "int4", ret="int4"),), lambda a, e: a[0][_byte_index(a[0], a[1])],
             _get_byte_spark, sql_names=("get_byte",), doc="9.5",
             samples=("get_byte(s::bytea, 0)", "get_byte(s::bytea, k)", "get_byte(s::bytea, 4)",
                      "get_byte(s::bytea, -1)", "get_byte('\\x00ff'::bytea, k % 2)")),
    Function("set_byte", (sig("bytea", "int4", "int4", ret="bytea"),), _set_byte_py, _set_byte_spark,
             sql_names=("set_byte",), doc="9.5",
             samples=("set_byte(s::bytea, 0, 64 + k)", "set_byte(s::bytea, k, 255)", "set_byte(s::bytea, 1, 256 + k)",
                      "set_byte(s::bytea, 4, i)", "set_byte(s::bytea, 10, 1)")),
)


# -- substring by regular expression, overlay, encodings, string_to_array (9.4, 9.7.3) ---------


def _substring_regex_py(a, e, ctx):
    """substring(s from pattern): the part of ``s`` the POSIX pattern matches first; with
    capture groups, the first group's (NULL when it took part in no match)
    (PostgreSQL 9.7.3)."""
    m = _pg_regex(a[1], "", ctx.guard).search(a[0])
    if m is None:
        return None
    return m.group(1) if m.re.groups else m.group(0)


def _substring_regex_spark(S, a, e):
    F = S.F
    regex = _spark_regex(e, "substring(text from pattern)")
    if regex is None:
        return F.lit(None).cast("string")
    _, rx, java = regex
    part = F.regexp_extract(a[0], java, 1 if rx.groups else 0)
    return F.when(a[0].rlike(java), _group_or_null(F, part) if rx.groups else part)


def _overlay_py(a, e):
    s, r, start = a[0], a[1], a[2]
    n = a[3] if len(a) > 3 else len(r)
    return _substr([s, 1, start - 1], e) + r + _substr([s, start + n], e)


def _overlay_spark(S, a, e):
    F = S.F
    s, r, start = a[0], a[1], a[2]
    n = a[3] if len(a) > 3 else F.length(r)
    return F.concat(_substr_spark(S, [s, F.lit(1), start - 1], e), r, _substr_spark(S, [s, start + n], e))


def _encoding(name: str) -> str:
    """PostgreSQL's encoding name matching (letters and digits, any case): only UTF8,
    the database encoding, is supported.

    Raises:
        SqlError 22023 for a name that names no encoding PostgreSQL knows; 0A000 for another
        PostgreSQL encoding."""
    clean = re.sub(r"[^0-9a-z]", "", name.lower())
    if clean in ("utf8", "unicode"):
        return "UTF-8"
    if clean in ("sqlascii", "latin1", "latin2", "win1252", "euckr", "eucjp", "sjis", "koi8r", "iso88591", "big5",
                 "gbk", "win1251"):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"conversion to or from encoding \"{name}\" is not supported")
    raise SqlError(INVALID_PARAMETER_VALUE, f"invalid encoding name \"{name}\"")


def _convert_spark(to: bool):
    def spark(S, a, e):
        name = constant_arg(e, 1, "the encoding of convert_to/convert_from")
        if name is None:
            return S.F.lit(None).cast(S.spark_type(e.type))
        _encoding(name)
        return S.F.encode(a[0], "UTF-8") if to else S.F.decode(a[0], "UTF-8")
    return spark


def _convert_from_py(a, e):
    _encoding(a[1])
    try:
        return bytes(a[0]).decode("utf-8")
    except UnicodeDecodeError:
        raise SqlError(CHARACTER_NOT_IN_REPERTOIRE, "invalid byte sequence for encoding \"UTF8\"") from None


def _string_to_array_py(a, e):
    """string_to_array(s, delimiter [, null string]) (PostgreSQL 9.19): a NULL delimiter
    splits into characters, an empty one gives the whole string; an empty string gives an
    empty array; elements equal to the null string are NULL."""
    s, delim = a[0], a[1]
    null = a[2] if len(a) > 2 else None
    if s is None:
        return None
    if s == "":
        return []
    parts = list(s) if delim is None else [s] if delim == "" else s.split(delim)
    return [None if null is not None and p == null else p for p in parts]


def _string_to_array_spark(S, a, e):
    F = S.F
    delim = constant_arg(e, 1, "string_to_array's delimiter")
    null = constant_arg(e, 2, "string_to_array's null string") if len(a) > 2 else None
    s = a[0]
    if delim is None:
        parts = F.split(s, "(?!\\z)", -1)  # between characters, no empty piece at the end
    elif delim == "":
        parts = F.when(s.isNotNull(), F.array(s))
    else:
        parts = F.split(s, _java_literal(delim), -1)
    if null is not None:
        parts = F.transform(parts, lambda p: F.when(p == null, F.lit(None)).otherwise(p))
    return F.when(s == "", F.array().cast("array<string>")).otherwise(parts)


def _java_literal(text: str) -> str:
    r"""A Java regular expression matching ``text`` literally (\Q...\E quoting)."""
    return "\\Q" + text.replace("\\E", "\\E\\\\E\\Q") + "\\E"


register(
    Function("substring_regex", (sig("text", "text", ret="text"),), _substring_regex_py, _substring_regex_spark,
             sql_names=("substring",), doc="9.7.3",
             samples=("substring(s from 'l+')", "substring(s from '[a-z]+$')", "substring(s from '(.)l(l)?')",
                      "substring(s, 'P')"), extra=IN_CONTEXT),
    Function("overlay", (sig("text", "text", "int4", ret="text"), sig("text", "text", "int4", "int4", ret="text")),
             _overlay_py, _overlay_spark, sql_names=("overlay",), doc="9.4",
             samples=("overlay(s placing 'xx' from 2 for 3)", "overlay(s placing 'Z' from 1)",
                      "overlay(s placing 'Z' from k for 0)", "overlay(s placing s from 3 for 20)",
                      "overlay(s placing 'Z' from 0)")),
    Function("convert_to", (sig("text", "text", ret="bytea"),), lambda a, e: (_encoding(a[1]), a[0].encode())[1],
             _convert_spark(True), sql_names=("convert_to",), doc="9.4",
             samples=("convert_to(s, 'UTF8')", "convert_to(s, 'utf-8')", "convert_to(s, 'nonesuch')")),
    Function("convert_from", (sig("bytea", "text", ret="text"),), _convert_from_py, _convert_spark(False),
             sql_names=("convert_from",), doc="9.5", samples=("convert_from(s::bytea, 'UTF8')",)),
    Function("string_to_array", (sig("text", "text", ret="_text"), sig("text", "text", "text", ret="_text")),
             _string_to_array_py, _string_to_array_spark, sql_names=("string_to_array",), strict=False, doc="9.19",
             samples=("string_to_array(s, ',')", "string_to_array(s, ',', '')", "string_to_array(s, NULL)",
                      "string_to_array(s, '')", "string_to_array(s, 'l', 'e')")),
)


# -- regexp_like, regexp_count, regexp_substr (9.7.3), bytea length and hashes (9.5) ---------


def _flags_arg(a, at: int) -> str:
    return a[at] if len(a) > at else ""


def _regexp_like_py(a, e, ctx):
    return _pg_regex(a[1], _flags_arg(a, 2), ctx.guard).search(a[0]) is not None


def _regexp_like_spark(S, a, e):
    """regexp_like on Spark: the pattern and flags must be constants, written in Java's
    syntax (``_spark_regex``)."""
    regex = _spark_regex(e, "regexp_like")
    if regex is None:
        return S.F.lit(None).cast("boolean")
    return a[0].rlike(regex[2])


def _sha_py(bits: int):
    return lambda a, e: hashlib.new(f"sha{bits}", bytes(a[0])).digest()


register(
    Function("regexp_like", (sig("text", "text", ret="bool"), sig("text", "text", "text", ret="bool")),
             _regexp_like_py, _regexp_like_spark, sql_names=("regexp_like",), doc="9.7.3",
             samples=("regexp_like(s, 'l+')", "regexp_like(s, 'h', 'i')", "regexp_like(s, '^[a-z,]+$')"), extra=IN_CONTEXT),
    Function("bytea_length", (sig("bytea", ret="int4"),), lambda a, e: len(a[0]), lambda S, a, e: S.F.length(a[0]),
             sql_names=("length",), doc="9.5", samples=("length(s::bytea)",)),
    Function("bytea_md5", (sig("bytea", ret="text"),), lambda a, e: hashlib.md5(bytes(a[0])).hexdigest(),
             lambda S, a, e: S.F.md5(a[0]), sql_names=("md5",), doc="9.5", samples=("md5(s::bytea)",)),
    *[Function(f"sha{bits}", (sig("bytea", ret="bytea"),), _sha_py(bits),
               lambda S, a, e, bits=bits: S.F.unhex(S.F.sha2(a[0], bits)), sql_names=(f"sha{bits}",), doc="9.5",
               samples=(f"sha{bits}(s::bytea)",))
      for bits in (224, 256, 384, 512)],
)

register(
    Function("string_to_table", (sig("text", "text", ret="text"), sig("text", "text", "text", ret="text")),
             None, None, sql_names=("string_to_table",), kind="srf", doc="9.4",
             samples=("string_to_table(s, ',')", "string_to_table(s, ',', 'c')", "string_to_table(s, NULL)"),
             extra={"columns": (("string_to_table", "string_to_array"),)}),
    Function("regexp_split_to_table", (sig("text", "text", ret="text"), sig("text", "text", "text", ret="text")),
             None, None, sql_names=("regexp_split_to_table",), kind="srf", doc="9.7.3",
             samples=("regexp_split_to_table(s, ',')", "regexp_split_to_table(s, 'L', 'i')"),
             extra={"columns": (("regexp_split_to_table", "regexp_split_to_array"),)}),
)


# -- casefold (PostgreSQL 9.4, table 9.10) ------------------------------------------------------


def simple_fold(c: str) -> str:
    """Unicode's simple case folding of one character (CaseFolding.txt, statuses C and S),
    which PostgreSQL's builtin C.UTF-8 locale applies: a folding to one character, else
    the character's one-character lowercase, else the character itself."""
    f = c.casefold()
    if len(f) == 1:
        return f
    low = c.lower()
    return low if len(low) == 1 else c


@functools.cache
def _fold_after_lower() -> tuple[str, str]:
    """(from, to) characters for Spark's translate after lower: where a character's folding
    is not its lowercase (final sigma, long s, micro sign, ...)."""
    src, dst = [], []
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        low = c.lower() if len(c.lower()) == 1 else c
        f = simple_fold(c)
        if f != low and low not in src:
            src.append(low)
            dst.append(f)
    return "".join(src), "".join(dst)


register(
    Function("casefold", T1, lambda a, e: "".join(map(simple_fold, a[0])),
             lambda S, a, e: S.F.translate(S.F.lower(a[0]), *_fold_after_lower()), sql_names=("casefold",),
             doc="9.4", samples=("casefold(s)", "casefold(s || ' ς ſ µ ẞ')")),
)


# -- Unicode escapes and normalization (PostgreSQL 9.4, table 9.10) -----------------------------

#: unistr's escapes: \\, \XXXX, \uXXXX, \+XXXXXX, \UXXXXXXXX (varlena.c unistr)
_UNISTR_ESCAPE = re.compile(r"\\(?:(\\)|u?([0-9A-Fa-f]{4})|\+([0-9A-Fa-f]{6})|U([0-9A-Fa-f]{8}))")


def _unistr_py(a, e) -> str:
    """unistr(text): the escapes decoded; UTF-16 surrogate pairs of two 4-digit escapes
    combine (varlena.c unistr).

    Raises:
        SqlError 42601 for a backslash starting no escape or a surrogate not in a pair;
        22023 for a code point outside 1..10FFFF."""
    s, out, i, high = a[0], [], 0, None

    def bad_pair():
        return SqlError(SYNTAX_ERROR, "invalid Unicode surrogate pair")

    while i < len(s):
        if s[i] != "\\":
            if high is not None:
                raise bad_pair()
            out.append(s[i])
            i += 1
            continue
        m = _UNISTR_ESCAPE.match(s, i)
        if m is None:
            raise SqlError(SYNTAX_ERROR, "invalid Unicode escape",
                           hint="Unicode escapes must be \\XXXX, \\+XXXXXX, \\uXXXX, or \\UXXXXXXXX.")
        i = m.end()
        if m.group(1):
            out.append("\\")
            continue
        digits = next(g for g in m.groups()[1:] if g)
        cp = int(digits, 16)
        if not 0 < cp <= 0x10FFFF:
            raise SqlError(INVALID_PARAMETER_VALUE, f"invalid Unicode code point: {cp:0{len(digits)}X}")
        if high is not None:
            if not 0xDC00 <= cp <= 0xDFFF:
                raise bad_pair()
            cp, high = 0x10000 + ((high - 0xD800) << 10) + (cp - 0xDC00), None
        elif 0xDC00 <= cp <= 0xDFFF:
            raise bad_pair()
        if 0xD800 <= cp <= 0xDBFF:
            high = cp
        else:
            out.append(chr(cp))
    if high is not None:
        raise bad_pair()
    return "".join(out)


def _normal_form(a) -> str:
    form = a[1] if len(a) > 1 else "NFC"
    if form.upper() not in ("NFC", "NFD", "NFKC", "NFKD"):
        raise SqlError(INVALID_PARAMETER_VALUE, f"invalid normalization form: {form}")
    return form.upper()


def _normalize_py(a, e) -> str:
    """normalize(text [, form]): Unicode normalization form NFC (the default), NFD, NFKC
    or NFKD (PostgreSQL 9.4; SQL's NORMALIZE(s, NFC) is this call).

    Raises:
        SqlError 22023 for another form."""
    import unicodedata

    return unicodedata.normalize(_normal_form(a), a[0])


def _is_normalized_py(a, e) -> bool:
    """is_normalized(text [, form]) (SQL's ``s IS [form] NORMALIZED``).

    Raises:
        SqlError 22023 for another form than NFC, NFD, NFKC, NFKD."""
    import unicodedata

    return unicodedata.is_normalized(_normal_form(a), a[0])


def _to_ascii_spark(S, a, e):
    return S.F.when(a[0].isNull(), S.F.lit(None).cast("string")).otherwise(
        S.fail(FEATURE_NOT_SUPPORTED, "encoding conversion from UTF8 to ASCII not supported"))


def _to_ascii_py(a, e):
    raise SqlError(FEATURE_NOT_SUPPORTED, "encoding conversion from UTF8 to ASCII not supported")


#: to_ascii's tables (PostgreSQL's ascii.c, pg_to_ascii): encoding -> (first byte of the
#: table, the ASCII stand-in of each byte from it); bytes below 128 stay, those between
#: 128 and the table's start become a space
_ASCII_TABLES = {
    "LATIN1": (160, "  cL Y  \"Ca  -R     'u .,      ?AAAAAAACEEEEIIII NOOOOOxOUUUUYTBaaaaaaaceeeeiiii nooooo/ouuuuyty"),
    "LATIN2": (160, " A L LS \"SSTZ-ZZ a,l'ls ,sstz\"zzRAAAALCCCEEEEIIDDNNOOOOxRUUUUYTBraaaalccceeeeiiddnnoooo/ruuuuyt."),
    "LATIN9": (160, "  cL YS sCa  -R     Zu .z   EeY?AAAAAAACEEEEIIII NOOOOOxOUUUUYTBaaaaaaaceeeeiiii nooooo/ouuuuyty"),
    "WIN1250": (128, "  ' \"    %S<STZZ `'\"\".--  s>stzz   L A  \"CS  -RZ  ,l'u .,as L\"lzRAAAALCCCEEEEIIDDNNOOOOxRUUUUYTBraaaalccceeeeiiddnnoooo/ruuuuyt "),
}


def _to_ascii_enc_py(a, e):
    """to_ascii(text, encoding number): the text's bytes (UTF-8 here) read as that
    encoding, each byte from 128 up replaced by its ASCII stand-in (``_ASCII_TABLES``),
    as PostgreSQL's to_ascii_enc, which converts the bytes in place.

    Raises:
        SqlError 42704 for a number that names no encoding; 0A000 for an encoding other
        than LATIN1, LATIN2, LATIN9 and WIN1250."""
    from catalog.encodings import ENCODINGS

    enc = a[1]
    if not 0 <= enc < len(ENCODINGS):
        raise SqlError(UNDEFINED_OBJECT, f"{enc} is not a valid encoding code")
    name = ENCODINGS[enc][0]
    if name not in _ASCII_TABLES:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"encoding conversion from {name} to ASCII not supported")
    start, table = _ASCII_TABLES[name]
    return "".join(chr(b) if b < 128 else " " if b < start else table[b - start] for b in a[0].encode())


_UNICODE_DB = ("Python's Unicode database (unicodedata: Unicode 14.0 in Python 3.11) is older than PostgreSQL 18's "
               "(16.0): characters assigned since then have no decomposition here")

register(
    Function("unistr", T1, _unistr_py, by_python, sql_names=("unistr",), doc="9.4",
             samples=("unistr(s || '\\0041 \\u00e9\\+01F600 \\U0001F600 \\\\ \\d83d\\de00')", "unistr(s || '\\')",
                      "unistr(s || '\\0000')", "unistr(s || '\\d800')")),
    Function("normalize", (sig("text", ret="text"), sig("text", "text", ret="text")), _normalize_py, by_python,
             sql_names=("normalize",), doc="9.4", differs=_UNICODE_DB,
             samples=("normalize(s || U&'\\0065\\0301 \\FB01')", "normalize(s || U&'\\00e9 \\FB01', NFD)",
                      "normalize(s || U&'\\FB01 \\2460', NFKC)", "normalize(s || U&'\\00C5', nfkd)")),
    Function("is_normalized", (sig("text", ret="bool"), sig("text", "text", ret="bool")), _is_normalized_py,
             by_python, sql_names=("is_normalized",), doc="9.4", differs=_UNICODE_DB,
             samples=("s IS NORMALIZED", "(s || U&'\\0065\\0301') IS NFD NORMALIZED", "is_normalized(s || U&'\\00e9')",
                      "is_normalized(s, 'NFX')", "(s || U&'\\FB01') IS NFKC NORMALIZED")),
    Function("to_ascii", (sig("text", ret="text"),), _to_ascii_py, _to_ascii_spark, sql_names=("to_ascii",),
             doc="9.4", samples=("to_ascii(s)", "to_ascii(CASE WHEN k = 4 THEN s END)")),
    Function("to_ascii_enc", (sig("text", "int4", ret="text"),), _to_ascii_enc_py, by_python, sql_names=("to_ascii",),
             doc="9.4", samples=("to_ascii(s || ' Äpfel ©ő', 8)", "to_ascii(s || ' Łódź', 9)", "to_ascii(s, 16)",
                                 "to_ascii(s || ' Šč', 29)", "to_ascii(s, 6)", "to_ascii(s, 42 + k)",
                                 "to_ascii(s, -k)", "to_ascii('Ćma ÿ', 8)", "to_ascii('x', 100)")),
    Function("icu_unicode_version", (sig(ret="text"),), lambda a, e: None,
             lambda S, a, e: S.F.lit(None).cast("string"), sql_names=("icu_unicode_version",), strict=False,
             doc="9.4", samples=("icu_unicode_version()",)),
)
