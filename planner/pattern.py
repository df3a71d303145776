"""Pattern matching whose time is linear in the text: LIKE and regular expressions.

A backtracking matcher takes exponential time on patterns like ``(a+)+$`` over
``'aaaa...!'``, inside one C call that holds the interpreter (``planner.guard``). So:

- LIKE is matched segment by segment (``like``): the pattern between ``%`` signs is a
  run of fixed-length pieces, each found leftmost with one bounded search, so
  ``%a%a%a%b`` over 600 characters costs a few passes, not 600^3 attempts.
- Regular expressions run on RE2 (Google's automaton engine: linear time, no
  backtracking) when it can express them. What it cannot (backreferences, lookaround,
  ``\\Z``, counted repetitions over 1000) falls back to Python's ``re``, only where a
  runaway match can be stopped (``Guard.check_unbounded``: in a worker process). The
  guard is the evaluation's, given to ``compile_regex`` and ``like``.
  Python's ``re`` also stays the judge of a pattern's syntax and errors, and runs texts
  where the engines' shorthand classes (``\\w``, ``\\s``, ``\\b``, ``\\d``) disagree (RE2's
  are ASCII's; Python's, like PostgreSQL's in a UTF8 database, Unicode's).
"""

from __future__ import annotations

import functools
import re

import re2

from planner.guard import Guard

#: shorthand classes whose RE2 meaning (ASCII) differs from Python's (Unicode)
_SHORTHAND = re.compile(r"\\[wWdDsSbB]")
#: ASCII characters Python's ``\s`` counts as space and RE2's does not
_ODD_SPACE = re.compile("[\x0b\x1c-\x1f]")

_RE2_OPTIONS: dict[int, re2.Options] = {}


def _re2_options(flags: int) -> re2.Options:
    if flags not in _RE2_OPTIONS:
        o = re2.Options()
        o.log_errors = False  # a pattern RE2 cannot take is an expected fallback, not an error
        o.case_sensitive = not flags & re.I
        o.dot_nl = bool(flags & re.S)
        _RE2_OPTIONS[flags] = o
    return _RE2_OPTIONS[flags]


#: characters of a pattern compiled in a session's thread: Python's ``re`` parses in
#: Python, some 10 ms per thousand characters on a busy machine; a longer one goes to a worker
INLINE_PATTERN_CHARS = 4096


def _check_pattern_length(pattern: str, guard: Guard) -> None:
    if len(pattern) > INLINE_PATTERN_CHARS:
        guard.check_unbounded(f"a pattern of {len(pattern)} characters")


class _Program:
    """A pattern compiled by both engines (once per distinct pattern: ``_program``)."""

    __slots__ = ("py", "re2", "shorthand")

    def __init__(self, pattern: str, flags: int):
        self.py = re.compile(pattern, flags)  # raises re.error: the caller's 2201B
        try:
            fast = re2.compile(pattern, _re2_options(flags & (re.I | re.S)))
        except re2.error:
            fast = None
        self.re2 = fast if fast is not None and fast.groups == self.py.groups and not flags & ~(re.I | re.S) else None
        self.shorthand = bool(_SHORTHAND.search(pattern))


@functools.lru_cache(maxsize=256)
def _program(pattern: str, flags: int) -> _Program:
    return _Program(pattern, flags)


class Regex:
    """A compiled regular expression under an evaluation's guard, with the methods of
    ``re.Pattern`` this project uses (``search``, ``fullmatch``, ``finditer``, ``sub``
    with a function, ``groups``, ``pattern``); their matches are ``re.Match``-like
    (``group``, ``groups``, ``start``, ``end``, ``re``). Past ``INLINE_MATCHES`` matches
    of one call, the call goes on only where the guard lets it.

    Raises (from its methods):
        ``guard.Outgrown`` when the text needs Python's backtracking engine and the
        guard forbids it (in a session's thread)."""

    __slots__ = ("pattern", "groups", "_prog", "_guard")

    def __init__(self, pattern: str, flags: int, guard: Guard):
        _check_pattern_length(pattern, guard)
        self._prog = _program(pattern, flags)
        self._guard = guard
        self.pattern = pattern
        self.groups = self._prog.py.groups

    def _engine(self, text: str):
        prog = self._prog
        if prog.re2 is not None and (not prog.shorthand or (text.isascii() and not _ODD_SPACE.search(text))):
            return prog.re2
        self._guard.check_unbounded()
        return prog.py

    def search(self, text: str, pos: int = 0):
        return self._engine(text).search(text, pos)

    def fullmatch(self, text: str):
        return self._engine(text).fullmatch(text)

    def finditer(self, text: str, pos: int = 0):
        for n, m in enumerate(self._engine(text).finditer(text, pos), 1):
            self._count_match(n)
            yield m

    def sub(self, repl, text: str, count: int = 0) -> str:
        n = [0]

        def counted(m):
            n[0] += 1
            self._count_match(n[0])
            return repl(m)

        return self._engine(text).sub(counted, text, count=count)

    def _count_match(self, n: int) -> None:
        if n > INLINE_MATCHES and n % INLINE_MATCHES == 1:
            self._guard.check_unbounded(f"more than {INLINE_MATCHES} matches of a regular expression")


#: matches one call (``finditer``, ``sub``) takes in a session's thread: RE2's Python
#: binding costs ~10 us a match, so ~0.1 s; a call with more goes to a worker process
INLINE_MATCHES = 10_000


def compile_regex(pattern: str, flags: int, guard: Guard) -> Regex:
    """``pattern`` (Python ``re`` syntax and ``flags``: ``re.I``, ``re.S``) under the
    evaluation's ``guard``; each engine compiles a distinct pattern once (a query matches
    it against every row).

    Raises:
        re.error for a pattern Python's ``re`` rejects; ``guard.Outgrown`` for a pattern
        too long to compile in a session's thread."""
    return Regex(pattern, flags, guard)


@functools.lru_cache(maxsize=256)
def _like_program(pattern: str, ci: bool) -> tuple[list, bool]:
    """``pattern`` split at its unescaped ``%`` signs: a list of segments (each None for
    one made of ``_`` only, or a compiled fixed-length regex), and whether it had a
    ``%`` at all. A segment's length in characters is its regex's ``width``."""
    segments, cur, pieces = [], [], []
    i, has_percent = 0, False

    def close():
        segments.append((len(cur), re.compile("".join(pieces), re.S | (re.I if ci else 0)) if cur else None))

    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            cur.append(pattern[i + 1])
            pieces.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "%":
            close()
            cur, pieces, has_percent = [], [], True
        else:
            cur.append(c)
            pieces.append("." if c == "_" else re.escape(c))
        i += 1
    close()
    return segments, has_percent


def like(s: str, pattern: str, ci: bool, guard: Guard) -> bool:
    """``s LIKE pattern`` (``ILIKE`` with ``ci``; PostgreSQL 9.7.1): ``%`` any string,
    ``_`` one character, backslash escapes the next character.

    Between ``%`` signs each segment has a fixed length, so taking every middle one at
    its leftmost place is right (a later place leaves less room to the others): at most
    one bounded search per segment, O(len(s) * len(pattern)) in C; a pattern too long to
    compile in a session's thread raises ``guard.Outgrown`` there."""
    _check_pattern_length(pattern, guard)
    segments, has_percent = _like_program(pattern, ci)
    if not has_percent:
        (n, rx), = segments
        return len(s) == n and (rx is None or rx.fullmatch(s) is not None)
    (n0, first), middle, (nk, last) = segments[0], segments[1:-1], segments[-1]
    end = len(s) - nk
    if end < n0 or (first is not None and first.fullmatch(s, 0, n0) is None):
        return False
    if last is not None and last.fullmatch(s, end) is None:
        return False
    pos = n0
    for n, rx in middle:
        if rx is None:
            pos += n
        else:
            m = rx.search(s, pos, end)
            if m is None:
                return False
            pos = m.end()
        if pos > end:
            return False
    return True
