"""A sqllogictest runner that talks to a server over pgwire (psycopg).

Format: https://www.sqlite.org/sqllogictest/doc/trunk/about.wiki, plus Materialize's
``mode cockroach|standard``. Records: ``statement ok``, ``statement error [regex]``,
``query <types> [nosort|rowsort|valuesort] [label]`` with ``----`` and results,
``hash-threshold N``, ``skipif/onlyif <engine>``, ``halt``, ``#`` comments.

Values are printed as the format says: integers (``I``), reals with three decimals
(``R``), text (``T``), ``NULL``, and ``(empty)`` for the empty string. Results longer
than the hash threshold compare as ``N values hashing to <md5>``.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

import psycopg
from psycopg.adapt import Loader

ENGINE = "postgresql"


@dataclass
class Record:
    kind: str  # statement | query | halt | hash-threshold | mode
    line: int
    sql: str = ""
    expect_ok: bool = True
    error_regex: str | None = None
    types: str = ""
    sort: str = "nosort"
    label: str | None = None
    expected: list[str] = field(default_factory=list)
    expected_hash: tuple[int, str] | None = None
    arg: str = ""
    skip: bool = False


_HASH = re.compile(r"^(\d+) values hashing to ([0-9a-f]{32})$")


def parse(path: Path) -> list[Record]:
    """Parse a .slt/.test file into records, applying skipif/onlyif for our engine."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    records: list[Record] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        skip = False
        # conditions
        while stripped.startswith(("skipif", "onlyif")):
            word, engine = (stripped.split() + [""])[:2]
            if word == "skipif" and engine == ENGINE:
                skip = True
            if word == "onlyif" and engine != ENGINE:
                skip = True
            i += 1
            stripped = lines[i].strip() if i < n else ""
        toks = stripped.split()
        head = toks[0] if toks else ""
        if head == "halt":
            records.append(Record("halt", i + 1, skip=skip))
            i += 1
            continue
        if head == "hash-threshold":
            records.append(Record("hash-threshold", i + 1, arg=toks[1], skip=skip))
            i += 1
            continue
        if head == "mode":
            records.append(Record("mode", i + 1, arg=toks[1] if len(toks) > 1 else "", skip=skip))
            i += 1
            continue
        if head in ("statement", "query"):
            rec = Record(head, i + 1, skip=skip)
            if head == "statement":
                mode = toks[1] if len(toks) > 1 else "ok"
                rec.expect_ok = mode in ("ok", "count")
                if mode == "error" and len(toks) > 2:
                    rec.error_regex = stripped.split(None, 2)[2]
            elif len(toks) > 1 and toks[1] == "error":
                # ``query error REGEX``: as ``statement error`` (Materialize's files use both)
                rec.kind = "statement"
                rec.expect_ok = False
                rec.error_regex = stripped.split(None, 2)[2] if len(toks) > 2 else None
            else:
                rec.types = toks[1] if len(toks) > 1 else ""
                rec.sort = toks[2] if len(toks) > 2 else "nosort"
                rec.label = toks[3] if len(toks) > 3 else None
            i += 1
            sql = []
            while i < n and lines[i].strip() and lines[i].strip() != "----":
                sql.append(lines[i])
                i += 1
            rec.sql = "\n".join(sql)
            if i < n and lines[i].strip() == "----":
                i += 1
                res = []
                while i < n and lines[i].strip():
                    res.append(lines[i].rstrip("\n"))
                    i += 1
                m = _HASH.match(res[0].strip()) if len(res) == 1 else None
                if m:
                    rec.expected_hash = (int(m.group(1)), m.group(2))
                else:
                    rec.expected = res
            records.append(rec)
            continue
        i += 1  # an unknown directive: skip the line
    return records


def _error_matches(regex: str, err: psycopg.Error) -> bool:
    """Whether ``err`` matches an expected-error line: cockroach's ``pgcode XXXXX rest``
    checks the SQLSTATE and then ``rest``; Materialize's ``db error: ERROR: `` prefix
    (its runner's rendering of the error) is dropped."""
    m = re.match(r"pgcode (\w{5})\s*(.*)$", regex)
    if m:
        if err.sqlstate != m.group(1):
            return False
        regex = m.group(2)
    regex = regex.removeprefix("db error: ERROR: ")
    return not regex or re.search(regex, str(err)) is not None


class _TextLoader(Loader):
    """Load every value as PostgreSQL's text, so formatting sees what the server sent."""

    def load(self, data):
        return bytes(data).decode("utf-8")


def text_connection(url: str) -> psycopg.Connection:
    conn = psycopg.connect(url, autocommit=True)
    scalars = (16, 17, 18, 19, 20, 21, 23, 25, 26, 700, 701, 1042, 1043, 1082, 1083, 1114, 1184, 1186, 1700, 705,
               2950, 3802, 114, 0)
    arrays = (1000, 1001, 1005, 1007, 1009, 1014, 1015, 1016, 1021, 1022, 1028, 1115, 1182, 1183, 1185, 1231,
              2951, 3807)
    for oid in scalars + arrays:
        conn.adapters.register_loader(oid, _TextLoader)
    return conn


_ORDER_BY = re.compile(r"\bORDER\s+BY\b", re.IGNORECASE)


def format_value(v: str | None, t: str) -> str:
    if v is None:
        return "NULL"
    if t == "I":
        try:
            return str(int(Decimal(v)))  # reals print truncated, as sqlite does
        except (InvalidOperation, ValueError):
            if v in ("t", "f"):
                return "1" if v == "t" else "0"
            return "0"
    if t == "B" and v in ("t", "f"):
        return "true" if v == "t" else "false"  # Materialize's runner prints booleans so
    if t == "R":
        try:
            return f"{float(v):.3f}"
        except ValueError:
            return "0.000"
    return v if v != "" else "(empty)"


@dataclass
class Outcome:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[dict] = field(default_factory=list)


class Runner:
    def __init__(self, url: str, verbose: bool = False, fail_fast: bool = False, out=print):
        self.url = url
        self.verbose = verbose
        self.fail_fast = fail_fast
        self.out = out
        self.timing = {"total": 0.0}

    def reset(self, conn) -> None:
        """Drop every user view and table: each file starts on a fresh database."""
        for kind in ("VIEW", "TABLE"):
            table = "mz_views" if kind == "VIEW" else "mz_tables"
            try:
                names = [r[0] for r in conn.execute(f"SELECT name FROM mz_catalog.{table}").fetchall()]
            except psycopg.Error:
                names = []
            for name in names:
                try:
                    conn.execute(f'DROP {kind} IF EXISTS "{name}" CASCADE')
                except psycopg.Error:
                    pass

    def run_file(self, path: Path) -> Outcome:
        outcome = Outcome()
        records = parse(path)
        conn = text_connection(self.url)
        try:
            self.reset(conn)
            threshold = 0
            mode = "standard"
            labels: dict[str, tuple] = {}
            for rec in records:
                if rec.skip:
                    if rec.kind in ("statement", "query"):
                        outcome.skipped += 1
                    continue
                if rec.kind == "halt":
                    break
                if rec.kind == "hash-threshold":
                    threshold = int(rec.arg)
                    continue
                if rec.kind == "mode":
                    mode = rec.arg
                    continue
                ok, detail = self.run_record(conn, rec, threshold, mode, labels)
                if ok:
                    outcome.passed += 1
                else:
                    outcome.failed += 1
                    failure = {"file": str(path), "line": rec.line, "sql": rec.sql, **detail}
                    outcome.failures.append(failure)
                    self.report(failure)
                    if conn.closed or conn.broken:
                        conn = text_connection(self.url)
                    if self.fail_fast:
                        break
        finally:
            conn.close()
        return outcome

    def report(self, f: dict) -> None:
        sql = " ".join(f["sql"].split())
        self.out(f"{f['file']}:{f['line']}: {sql[:300]}")
        self.out(f"    expected: {f.get('expected')}")
        self.out(f"    actual:   {f.get('actual')}")

    def run_record(self, conn, rec: Record, threshold: int, mode: str, labels: dict) -> tuple[bool, dict]:
        t = time.perf_counter()
        try:
            cur = conn.execute(rec.sql, prepare=False)
            rows = cur.fetchall() if cur.description is not None else []
            names = [d.name for d in cur.description] if cur.description is not None else []
            err = None
        except psycopg.Error as e:
            rows, err = [], e
        finally:
            self.timing["total"] += time.perf_counter() - t
        if rec.kind == "statement":
            if rec.expect_ok and err is None:
                return True, {}
            if not rec.expect_ok and err is not None:
                if rec.error_regex and not _error_matches(rec.error_regex, err):
                    return False, {"expected": f"error matching {rec.error_regex!r}",
                                   "actual": f"{err.sqlstate}: {str(err).strip()}"}
                return True, {}
            return False, {"expected": "ok" if rec.expect_ok else "error",
                           "actual": f"error {err.sqlstate}: {str(err).strip()}" if err else "ok"}
        if err is not None:
            return False, {"expected": "rows", "actual": f"error {err.sqlstate}: {str(err).strip()}"}
        types = rec.types
        formatted = [[format_value(v, types[j] if j < len(types) else "T") for j, v in enumerate(r)] for r in rows]
        if rec.sort == "rowsort":
            formatted.sort()
        values = [v for r in formatted for v in r]
        if rec.sort == "valuesort":
            values.sort()
        if mode == "cockroach" and rec.expected and rec.expected_hash is None:
            actual_lines = [" ".join(r) for r in formatted]
            if rec.sort == "colnames":  # Materialize's option: the column names come first
                ok = [" ".join(names)] + actual_lines == [" ".join(l.split()) for l in rec.expected]
                return ok, {} if ok else {"expected": rec.expected[:20], "actual": [" ".join(names)] + actual_lines[:20]}
            expected_lines = [" ".join(l.split()) for l in rec.expected]
            if rec.sort == "rowsort" or (rec.sort == "nosort" and not _ORDER_BY.search(rec.sql)):
                # Materialize's runner compares the rows of a query without ORDER BY sorted
                actual_lines.sort()
                expected_lines.sort()
            ok = actual_lines == expected_lines
            return ok, {} if ok else {"expected": expected_lines[:20], "actual": actual_lines[:20]}
        digest = hashlib.md5("".join(v + "\n" for v in values).encode()).hexdigest()
        if rec.label:
            prev = labels.setdefault(rec.label, (len(values), digest))
            if prev != (len(values), digest) and rec.expected_hash is None and not rec.expected:
                return False, {"expected": f"same result as label {rec.label}", "actual": f"{len(values)} values"}
        if rec.expected_hash is not None:
            ok = (len(values), digest) == rec.expected_hash
            return ok, {} if ok else {
                "expected": f"{rec.expected_hash[0]} values hashing to {rec.expected_hash[1]}",
                "actual": f"{len(values)} values hashing to {digest}" + (f" {values[:12]}" if len(values) <= 60 else ""),
            }
        expected = [v.strip() for l in rec.expected for v in ([l] if mode == "standard" else l.split())]
        if rec.sort == "valuesort":
            expected.sort()
        ok = values == expected
        return ok, {} if ok else {"expected": expected[:30], "actual": values[:30]}
