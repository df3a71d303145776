"""Parse sqllogictest files: SQLite's format plus the CockroachDB and Materialize dialects.

Format: https://www.sqlite.org/sqllogictest/doc/trunk/about.wiki. The dialect rules follow
Materialize's runner (MaterializeInc/materialize, src/sqllogictest/src/parser.rs) and
CockroachDB's logic tests (pkg/sql/logictest/logic.go):

- ``statement ok|OK``, ``statement count N``, ``statement error [pgcode XXXXX] [regex]``
- ``query <types> [option,option...] [label]`` with options ``nosort``, ``rowsort``,
  ``valuesort``, ``partialsort(...)`` (compared as ``rowsort``, as Materialize does),
  ``colnames`` (the first expected line holds the column names, ``␠`` for a space),
  ``multiline`` (the expected text runs up to a line ``EOF``) and ``retry`` (CockroachDB:
  re-run until the result matches or a timeout); ``query error [pgcode XXXXX] [regex]``
- ``simple [conn=NAME][,user=USER][,multiline]``: the SQL is sent with the simple query
  protocol on a named connection; the expected lines are the rows (values joined by ``,``)
  and ``COMPLETE n`` per statement, or the error text
- ``hash-threshold N``, ``mode cockroach|standard|sqlite``, ``halt``, ``reset-server``,
  ``skipif ENGINE`` / ``onlyif ENGINE`` (our engine is ``postgresql``, as Materialize's)
- ``subtest``, ``user``, ``kv-batch-size`` lines are ignored (Materialize ignores them too)

Nothing is dropped silently: a record that cannot run here (a ``skipif postgresql``, an
``onlyif`` for another engine, an unknown directive or query option) is kept as a record of
kind ``skip`` with a ``skip_reason``, so the runner counts it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ENGINE = "postgresql"

#: the result type letters (SQLite: T I R; CockroachDB adds B O F, ``_`` for "any";
#: Materialize's parser accepts T I R B O)
TYPE_LETTERS = frozenset("TIRBOF_")

_RECORD_STARTS = ("statement", "query", "simple", "hash-threshold", "skipif", "onlyif", "halt",
                  "mode", "reset-server", "subtest", "user", "kv-batch-size", "copy")
_HASH = re.compile(r"(\S+) values hashing to (\S+)")
_EXPECTED_ERROR = re.compile(r"^(?:statement|query)\s+error(?:\s+pgcode\s+([A-Za-z0-9]{5}))?\s?")


@dataclass
class Record:
    """One record of a file. ``kind``: statement | query | simple | halt | hash-threshold |
    mode | reset-server | skip. ``line`` is 1-based, the record's first line."""

    kind: str
    line: int
    sql: str = ""
    # statement / query error
    expect_error: bool = False
    error_regex: str = ""
    pgcode: str | None = None
    count: int | None = None
    # query
    types: str = ""
    sort: str = "nosort"  # nosort | rowsort | valuesort
    colnames: list[str] | None = None
    multiline: bool = False
    retry: bool = False
    label: str | None = None
    expected: list[str] = field(default_factory=list)  # lines (query) or values (multiline: one)
    expected_hash: tuple[int, str] | None = None
    # simple
    conn: str | None = None
    user: str | None = None
    # mode / hash-threshold argument, or why a record of kind ``skip`` does not run
    arg: str = ""
    skip_reason: str = ""
    mode: str = "standard"  # the file's mode when this record was parsed


class _Lines:
    def __init__(self, text: str):
        self.lines = [ln.rstrip("\r") for ln in text.split("\n")]
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.i = 0

    def done(self) -> bool:
        return self.i >= len(self.lines)

    def peek(self) -> str:
        return self.lines[self.i]

    def take(self) -> str:
        self.i += 1
        return self.lines[self.i - 1]

    def block(self) -> list[str]:
        """The lines up to the next empty line (or the end), consuming the empty line."""
        out = []
        while not self.done() and self.peek() != "":
            out.append(self.take())
        if not self.done():
            self.take()
        return out

    def until(self, stop: str) -> list[str]:
        """The lines up to a line equal to ``stop`` (consumed), or to the end."""
        out = []
        while not self.done():
            ln = self.take()
            if ln == stop:
                break
            out.append(ln)
        return out

    def query_sql(self) -> tuple[list[str], bool]:
        """A query's SQL: the lines up to ``----`` (consumed; returns True) or up to an empty
        line after which the next ``----`` comes before any new record (Materialize splits a
        query at the first ``----``, so its SQL may hold empty lines)."""
        out = []
        while not self.done():
            ln = self.take()
            if ln.strip() == "----":
                return out, True
            if ln == "":
                if self._results_follow():
                    out.append(ln)
                    continue
                return out, False
            out.append(ln)
        return out, False

    def _results_follow(self) -> bool:
        for ln in self.lines[self.i:]:
            if ln.strip() == "----":
                return True
            word = ln.split(" ", 1)[0]
            if word in _RECORD_STARTS or ln.startswith("#"):
                return False
        return False


def split_cols(line: str, ncols: int) -> list[str]:
    """Cockroach mode: one expected line is a row; columns are split on whitespace (a
    one-column row is the trimmed line), and ``␠`` stands for a space inside a value."""
    cols = [line.strip()] if ncols == 1 else line.split()
    return [c.replace("␠", " ") for c in cols]


def _directive(line: str) -> str:
    """A record's first line without its trailing ``# comment`` (as Materialize reads it)."""
    return line.split("#", 1)[0].strip()


def parse(text: str) -> list[Record]:
    """Parse a file's text into records (in order, skipped ones included with a reason).

    Raises nothing for unknown syntax: an unknown directive becomes a ``skip`` record."""
    src = _Lines(text)
    records: list[Record] = []
    mode = "standard"
    pending_skip = ""  # a skipif/onlyif that applies to the next record
    while not src.done():
        raw = src.take()
        line_no = src.i
        first = _directive(raw)
        if not first:
            continue
        words = first.split()
        head = words[0]
        if head in ("skipif", "onlyif"):
            engine = words[1] if len(words) > 1 else ""
            if (head == "skipif") == (engine == ENGINE) and not pending_skip:
                pending_skip = f"{head} {engine}"
            continue
        rec = _parse_one(src, head, words, first, line_no, mode)
        if rec.kind == "mode":
            mode = rec.arg
        if rec.kind in ("mode", "ignored"):
            # as in Materialize's parser, a condition passes over these to the next record
            if rec.kind == "mode":
                records.append(rec)
            continue
        if pending_skip:
            rec = Record("skip", line_no, sql=rec.sql, skip_reason=pending_skip, arg=rec.kind)
            pending_skip = ""
        records.append(rec)
    return records


def _parse_one(src: _Lines, head: str, words: list[str], first: str, line_no: int, mode: str) -> Record:
    if head == "statement":
        return _statement(src, words, first, line_no, mode)
    if head == "query":
        return _query(src, words, first, line_no, mode)
    if head == "simple":
        return _simple(src, words, line_no, mode)
    if head == "halt":
        return Record("halt", line_no)
    if head == "reset-server":
        return Record("reset-server", line_no)
    if head == "hash-threshold":
        return Record("hash-threshold", line_no, arg=words[1] if len(words) > 1 else "0")
    if head == "mode":
        arg = words[1] if len(words) > 1 else ""
        arg = "standard" if arg == "sqlite" else arg
        if arg not in ("cockroach", "standard"):
            return Record("skip", line_no, skip_reason=f"unknown mode {arg!r}", arg="mode")
        return Record("mode", line_no, arg=arg)
    if head in ("subtest", "user", "kv-batch-size"):
        return Record("ignored", line_no)
    # an unknown directive (``copy``, CockroachDB's ``let``, ``sleep``...): skip its block
    body = src.block()
    return Record("skip", line_no, sql="\n".join(body), skip_reason=f"unsupported directive {head!r}", arg=head)


def _statement(src: _Lines, words: list[str], first: str, line_no: int, mode: str) -> Record:
    sql = "\n".join(src.block())
    rec = Record("statement", line_no, sql=sql, mode=mode)
    disposition = words[1] if len(words) > 1 else "ok"
    if disposition in ("ok", "OK"):
        return rec
    if disposition == "count" and len(words) > 2 and words[2].isdigit():
        rec.count = int(words[2])
        return rec
    if disposition == "error":
        rec.expect_error, rec.pgcode, rec.error_regex = True, *_expected_error(first)
        return rec
    return Record("skip", line_no, sql=sql, skip_reason=f"unknown statement disposition {first!r}", arg="statement")


def _expected_error(first: str) -> tuple[str | None, str]:
    m = _EXPECTED_ERROR.match(first)
    return m.group(1), first[m.end():]


def _query(src: _Lines, words: list[str], first: str, line_no: int, mode: str) -> Record:
    if len(words) > 1 and words[1] == "error":
        rec = Record("query", line_no, sql="\n".join(src.block()), expect_error=True, mode=mode)
        rec.pgcode, rec.error_regex = _expected_error(first)
        return rec
    rec = Record("query", line_no, types=words[1] if len(words) > 1 else "", mode=mode)
    problems = []
    if set(rec.types) - TYPE_LETTERS:
        problems.append(f"unknown type letter(s) {''.join(sorted(set(rec.types) - TYPE_LETTERS))!r}")
    for option in (words[2].split(",") if len(words) > 2 else []):
        if option in ("nosort", "rowsort", "valuesort"):
            rec.sort = option
        elif option.startswith("partialsort"):
            # partialsort(1,2) holds commas; it comes last, and compares as rowsort (as
            # in Materialize's runner)
            rec.sort = "rowsort"
            break
        elif option == "colnames":
            rec.colnames = []
        elif option == "multiline":
            rec.multiline = True
        elif option == "retry":
            rec.retry = True
        elif option:
            problems.append(f"unsupported query option {option!r}")
    rec.label = words[3] if len(words) > 3 else None
    sql, has_results = src.query_sql()
    rec.sql = "\n".join(sql)
    if has_results:
        out = src.until("EOF") if rec.multiline else src.block()
        if rec.multiline and not src.done() and src.peek() == "":
            src.take()
        if rec.colnames is not None and out:
            rec.colnames = [c.replace("␠", " ") for c in out[0].split()]
            out = out[1:]
        m = _HASH.search("\n".join(out)) if not rec.multiline else None
        if m and m.group(1).isdigit():
            rec.expected_hash = (int(m.group(1)), m.group(2))
        elif rec.multiline:
            rec.expected = ["\n".join(out)]
        else:
            rec.expected = out
    if problems:
        return Record("skip", line_no, sql=rec.sql, skip_reason="; ".join(problems), arg="query")
    return rec


def _simple(src: _Lines, words: list[str], line_no: int, mode: str) -> Record:
    rec = Record("simple", line_no, mode=mode)
    problems = []
    for option in (words[1].split(",") if len(words) > 1 else []):
        if option.startswith("conn="):
            rec.conn = option[5:]
        elif option.startswith("user="):
            rec.user = option[5:]
        elif option == "multiline":
            rec.multiline = True
        elif option:
            problems.append(f"unsupported simple option {option!r}")
    if rec.user is not None and rec.conn is None:
        problems.append("user= without conn=")
    sql, _ = src.query_sql()
    rec.sql = "\n".join(sql)
    if rec.multiline:
        # the text up to EOF is one value; the COMPLETE lines follow it
        rec.expected = ["\n".join(src.until("EOF"))] + src.block()
    else:
        rec.expected = src.block()
    if problems:
        return Record("skip", line_no, sql=rec.sql, skip_reason="; ".join(problems), arg="simple")
    return rec
