"""Statement text to ASTs: splitting a query string, counting its parameters, parsing
one statement (a Materialize statement from ``mzparse`` or a PostgreSQL one from
pglast), and the quoting helpers generated queries need.

Owns no session state and never plans or runs anything.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pglast

from catalog.errors import SqlError, STATEMENT_TOO_COMPLEX, SYNTAX_ERROR, UNDEFINED_PARAMETER
from sqlfront import mzparse as mz

#: the most parameters a statement can have: Parse and Bind count them in an Int16
#: (PostgreSQL 55.7 "Message Formats")
MAX_PARAMS = 65535


def split_statements(sql: str) -> list[str]:
    """Split a query string into statements at top-level semicolons, using PostgreSQL's
    scanner so that semicolons in strings, identifiers and comments do not count.

    Raises:
        SqlError 42601 for text the scanner rejects (an unterminated quote, say).
    """
    try:
        tokens = pglast.parser.scan(sql)
    except pglast.parser.ParseError as e:
        raise syntax_error(e) from None
    out, start, depth = [], 0, 0
    for t in tokens:
        if t.name == "ASCII_40":
            depth += 1
        elif t.name == "ASCII_41":
            depth = max(0, depth - 1)
        elif t.name == "ASCII_59" and depth == 0:
            out.append(sql[start : t.start])
            start = t.end + 1
    out.append(sql[start:])
    return [p for p in out if _has_tokens(p)]


def param_count(sql: str) -> int:
    """The highest ``$n`` parameter number in ``sql`` (0 if none), from PostgreSQL's
    scanner: ``$1`` inside a string literal, a quoted identifier or a comment is text,
    not a parameter.

    Raises:
        SqlError 42601 for text the scanner rejects; 42P02 for a parameter number above
        ``MAX_PARAMS`` (one no client could bind).
    """
    try:
        tokens = pglast.parser.scan(sql)
    except pglast.parser.ParseError as e:
        raise syntax_error(e) from None
    n = max((int(sql[t.start + 1 : t.end + 1]) for t in tokens if t.name == "PARAM"), default=0)
    if n > MAX_PARAMS:
        raise SqlError(UNDEFINED_PARAMETER, f"there is no parameter ${n}")
    return n


@dataclass(frozen=True)
class AsOf:
    """Materialize's ``AS OF [AT LEAST] <expr>`` after a SELECT or SUBSCRIBE: the
    expression's text, and whether any later valid timestamp will do."""

    expr: str
    at_least: bool


@functools.lru_cache(maxsize=512)
def split_as_of(sql: str) -> tuple[str, AsOf | None]:
    """Split a trailing top-level ``AS OF [AT LEAST] expr`` off a statement (Materialize's
    SELECT and SUBSCRIBE syntax, which PostgreSQL's grammar does not have).

    Cached, as :func:`parse_one` is: every execute of a statement scans its text here first.

    Raises:
        SqlError 42601 "Expected a timestamp value after 'AS OF', found EOF"."""
    try:
        tokens = [t for t in pglast.parser.scan(sql) if t.name not in ("SQL_COMMENT", "C_COMMENT")]
    except pglast.parser.ParseError:
        return sql, None
    depth = 0
    at = None
    for i, t in enumerate(tokens):
        if t.name == "ASCII_40":
            depth += 1
        elif t.name == "ASCII_41":
            depth = max(0, depth - 1)
        elif depth == 0 and t.name == "AS" and i + 1 < len(tokens) and tokens[i + 1].name == "OF":
            at = i
    if at is None:
        return sql, None
    rest = [t for t in tokens[at + 2:] if t.name != "ASCII_59"]
    at_least = len(rest) >= 2 and rest[0].name == "AT" and sql[rest[1].start:rest[1].end + 1].lower() == "least"
    if at_least:
        rest = rest[2:]
    # SUBSCRIBE's UP TO may follow: it stays with the statement.
    up_to = next((k for k in range(len(rest) - 1) if sql[rest[k].start:rest[k].end + 1].lower() == "up"
                  and rest[k + 1].name == "TO"), None)
    tail = ""
    if up_to is not None:
        tail = " " + sql[rest[up_to].start:]
        rest = rest[:up_to]
    if not rest:
        raise SqlError(SYNTAX_ERROR, "Expected a timestamp value after 'AS OF', found EOF")
    return sql[: tokens[at].start] + tail, AsOf(sql[rest[0].start: rest[-1].end + 1], at_least)


def _has_tokens(text: str) -> bool:
    return any(t.name not in ("SQL_COMMENT", "C_COMMENT") for t in pglast.parser.scan(text))


def syntax_error(e: pglast.parser.ParseError) -> SqlError:
    """pglast's ParseError as SqlError 42601, with its 1-based position when known."""
    msg, pos = (e.args + (None,))[:2] if e.args else (str(e), None)
    return SqlError(SYNTAX_ERROR, str(msg), position=(pos + 1) if isinstance(pos, int) else None)


#: the deepest expression tree a statement may give (PostgreSQL's max_stack_depth, in
#: levels): beyond some 20,000 levels libpg_query, which pglast parses with, overflows
#: its C stack and the whole server process dies
MAX_EXPRESSION_DEPTH = 10_000
#: tokens that make their operand a level deeper when chained without parentheses: the
#: infix and postfix operators a grammar reduces as it reads (``1 + 1 + ... + 1``,
#: ``x::t::t``), so that the parser's own stack limit never sees them
_CHAINING = frozenset({
    "Op", "TYPECAST", "LESS_EQUALS", "GREATER_EQUALS", "NOT_EQUALS", "COLLATE", "AT", "OPERATOR",
    "ASCII_43", "ASCII_45", "ASCII_42", "ASCII_47", "ASCII_37", "ASCII_94", "ASCII_60", "ASCII_62", "ASCII_61",
})


_OPERATOR_CHARS = "+-*/%^<>=~!@#&|`?:"


def _operator_chars(sql: str) -> int:
    """At least the number of chaining operators in ``sql`` (it counts characters in
    literals and comments too)."""
    lower = sql.lower()
    return sum(sql.count(c) for c in _OPERATOR_CHARS) + sum(lower.count(w) for w in ("collate", "at", "operator"))


def check_expression_depth(sql: str) -> None:
    """Refuse a statement whose expressions would nest deeper than
    ``MAX_EXPRESSION_DEPTH``, counted on its tokens before anything parses it: each open
    parenthesis or bracket, and each chaining operator since the last comma, AND or OR
    at its level (AND and OR chains are flattened into lists by the parser).

    Raises:
        SqlError 54001 "stack depth limit exceeded" (PostgreSQL's check_stack_depth)."""
    if _operator_chars(sql) < MAX_EXPRESSION_DEPTH // 2:
        # Parentheses alone cannot pass the limit (the grammar's own stack stops at
        # 10,000: 42601 "memory exhausted"); with fewer chaining operators than half the
        # limit, the deepest tree stays below the depth that overflows. Most statements
        # end here, without a second scan.
        return
    levels, depth = [0], 0
    for t in pglast.parser.scan(sql):
        name = t.name
        if name in _CHAINING:
            levels[-1] += 1
            depth += 1
        elif name in ("ASCII_40", "ASCII_91"):
            levels.append(0)
            depth += 1
        elif name in ("ASCII_41", "ASCII_93"):
            if len(levels) > 1:
                depth -= levels.pop() + 1
        elif name in ("ASCII_44", "AND", "OR", "ASCII_59"):
            depth -= levels[-1]
            levels[-1] = 0
        if depth > MAX_EXPRESSION_DEPTH:
            raise SqlError(STATEMENT_TOO_COMPLEX, "stack depth limit exceeded",
                           detail=f"The statement nests expressions more than {MAX_EXPRESSION_DEPTH} levels deep.",
                           hint="Write it with less nesting, or split a long chain of operators.")


@functools.lru_cache(maxsize=512)
def parse_one(sql: str):
    """Parse one statement: a Materialize statement (``mzparse``) or a PostgreSQL one.

    Cached: drivers send the same text again and again (and Describe, then Execute, of
    each); the planner never changes an AST.

    Raises:
        SqlError 42601 for a syntax error or for several statements; 54001 for one that
        nests too deeply (``check_expression_depth``)."""
    check_expression_depth(sql)
    from sqlfront.listsyntax import rewrite

    sql = rewrite(sql)
    stmt = mz.parse_mz(sql)
    if stmt is not None:
        return stmt
    try:
        parsed = pglast.parse_sql(sql)
    except pglast.parser.ParseError as e:
        shows = mz.select_with_shows(sql)
        if shows is not None:
            return shows
        raise syntax_error(e) from None
    if len(parsed) != 1:
        raise SqlError(SYNTAX_ERROR, "cannot insert multiple commands into a prepared statement")
    return parsed[0].stmt


def parse_generated(sql: str):
    """Parse a query built from a SHOW statement (whose LIKE/WHERE text is the user's).

    Raises:
        SqlError 42601 for a syntax error in the user's part."""
    try:
        return pglast.parse_sql(sql)[0].stmt
    except pglast.parser.ParseError as e:
        raise SqlError(SYNTAX_ERROR, f"syntax error in SHOW filter: {e.args[0] if e.args else e}") from None


def quote_ident(name: str) -> str:
    """``name`` as a double-quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(s: str) -> str:
    """``s`` as a single-quoted SQL string literal."""
    return "'" + s.replace("'", "''") + "'"
