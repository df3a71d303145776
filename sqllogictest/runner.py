"""A sqllogictest runner that talks to a server over pgwire (psycopg).

The file format and its dialects are described in ``sqllogictest.parser``; values print as
``sqllogictest.format`` says. Comparison rules (Materialize's runner,
src/sqllogictest/src/runner.rs, and SQLite's):

- standard mode: one expected line per value; ``rowsort``/``valuesort`` sort the formatted
  rows/values; ``N values hashing to MD5`` compares the md5 of the values, one per line
- cockroach mode: one expected line per row, columns split on whitespace; the rows of a
  ``rowsort`` query, and of a ``nosort`` one without ``ORDER BY``, compare sorted
- ``query error`` / ``statement error``: the regex is searched in the error as Materialize's
  client renders it (``db error: ERROR: <message>``, then ``DETAIL:``/``HINT:`` lines)
- ``simple``: each row's values joined by ``,`` (``NULL`` for a null), then ``COMPLETE n``
  per statement (n: the command tag's row count, else 0); an error gives its text's lines

Isolation (what a file may leave behind, and what the runner may touch):

- by default each file runs in a schema of its own, ``slt_<random>``, which the runner
  creates, puts first on every connection's ``search_path`` and drops (CASCADE) at the end
  of the file and at ``reset-server``. Clusters, cluster replicas, roles and schemas a file
  creates (and tables or views it creates in another schema by a qualified name) are
  dropped too, and system variables it sets with ``ALTER SYSTEM SET`` are reset: the
  runner drops only what the file's own statements created, never a user's object.
- ``reset_user_objects=True`` (the CLI's ``--reset-user-objects``; what it does with the
  server it starts itself) runs each file in ``public`` and first drops every user
  table, view, materialized view, source, sink, secret, connection, type and
  non-``public`` schema of the server, as Materialize's runner resets its catalog.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.adapt import Loader

from sqllogictest.format import format_value
from sqllogictest.parser import Record, parse, split_cols

__all__ = ["Outcome", "Runner", "parse", "text_connection"]


class _TextLoader(Loader):
    """Load every value as PostgreSQL's text, so formatting sees what the server sent."""

    def load(self, data):
        return bytes(data).decode("utf-8")


def text_connection(url: str, user: str | None = None) -> psycopg.Connection:
    """An autocommit connection whose every column (any type OID) loads as ``str``."""
    kwargs = {"user": user} if user else {}
    conn = psycopg.connect(url, autocommit=True, **kwargs)
    oids = {0}
    for t in psycopg.postgres.types:
        oids.add(t.oid)
        if t.array_oid:
            oids.add(t.array_oid)
    for oid in oids:
        conn.adapters.register_loader(oid, _TextLoader)
    return conn


def error_text(err: psycopg.Error) -> str:
    """An error as Materialize's runner (tokio-postgres) prints it: ``db error: ERROR: msg``
    and ``DETAIL: ...``, ``HINT: ...`` lines when the server sent them."""
    d = err.diag
    if d.message_primary is None:
        return str(err).strip()
    text = f"db error: {d.severity or 'ERROR'}: {d.message_primary}"
    if d.message_detail:
        text += f"\nDETAIL: {d.message_detail}"
    if d.message_hint:
        text += f"\nHINT: {d.message_hint}"
    return text


def error_matches(rec: Record, err: psycopg.Error) -> bool:
    """Whether ``err`` is the error a ``statement/query error`` record expects. As in
    Materialize's runner the ``pgcode`` is not compared; the regex is searched in
    ``error_text`` and, for regexes written without the ``db error: ERROR:`` prefix, in
    the bare message."""
    if not rec.error_regex:
        return True
    text = error_text(err)
    try:
        return re.search(rec.error_regex, text) is not None
    except re.error:  # a Go or Rust regex Python cannot read: compare it as text
        return rec.error_regex in text


_ORDER_BY = re.compile(r"\bORDER\s+BY\b", re.IGNORECASE)
_TAG_COUNT = re.compile(r"(\d+)$")
# CREATE statements whose objects live outside a file's schema (or in another one)
_CREATE = re.compile(
    r"(?:^|;)\s*CREATE\s+(?:OR\s+REPLACE\s+)?"
    r"(CLUSTER\s+REPLICA|CLUSTER|ROLE|USER|SCHEMA|TABLE|MATERIALIZED\s+VIEW|VIEW|SOURCE|SINK|SECRET|CONNECTION|TYPE)"
    r"\s+(IF\s+NOT\s+EXISTS\s+)?((?:\"[^\"]*\"|[\w$]+)(?:\s*\.\s*(?:\"[^\"]*\"|[\w$]+))*)",
    re.IGNORECASE)
_ALTER_SYSTEM_SET = re.compile(r"(?:^|;)\s*ALTER\s+SYSTEM\s+SET\s+(\"[^\"]*\"|[\w.]+)", re.IGNORECASE)
# DROP order: items before the schemas, replicas and clusters that hold them, roles last
_DROP_ORDER = ("TABLE", "MATERIALIZED VIEW", "VIEW", "SOURCE", "SINK", "SECRET", "CONNECTION", "TYPE",
               "SCHEMA", "CLUSTER REPLICA", "CLUSTER", "ROLE")
_USER_OBJECT_TYPES = {"materialized-view": "MATERIALIZED VIEW", "view": "VIEW", "table": "TABLE",
                      "source": "SOURCE", "sink": "SINK", "secret": "SECRET", "connection": "CONNECTION",
                      "type": "TYPE"}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class Outcome:
    """A file's (or a run's) counts. ``skipped`` is the number of records not run, and
    ``skip_reasons`` counts them by reason; ``failures`` holds one dict per failed record
    (file, line, sql, expected, actual)."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    skip_reasons: Counter = field(default_factory=Counter)
    failures: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def skip(self, reason: str, n: int = 1) -> None:
        if n:
            self.skipped += n
            self.skip_reasons[reason] += n

    def add(self, other: Outcome) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped
        self.skip_reasons.update(other.skip_reasons)
        self.failures += other.failures
        self.warnings += other.warnings

    def summary(self) -> str:
        """``N passed, N failed, N skipped`` and the skips by reason."""
        s = f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped"
        if self.skip_reasons:
            s += " (" + "; ".join(f"{r}: {n}" for r, n in self.skip_reasons.most_common()) + ")"
        return s


class _FileState:
    """One file's connections (the default one and ``simple conn=NAME`` ones), its schema
    and what its statements created outside that schema."""

    def __init__(self, runner: Runner):
        self.runner = runner
        self.schema: str | None = None
        self.conns: dict[str | None, psycopg.Connection] = {}
        self.created: list[tuple[str, str]] = []  # (DROP kind, name) in creation order
        self.system_vars: list[str] = []

    def conn(self, name: str | None = None, user: str | None = None) -> psycopg.Connection:
        c = self.conns.get(name)
        if c is None or c.closed or c.broken:
            c = text_connection(self.runner.url, user)
            if self.schema:
                c.execute(f"SET search_path = {_quote(self.schema)}")
            self.conns[name] = c
        return c

    def forget_broken(self) -> None:
        for name, c in list(self.conns.items()):
            if c.closed or c.broken:
                del self.conns[name]

    def track(self, sql: str) -> None:
        """Remember what a successful statement created outside the file's schema."""
        for m in _CREATE.finditer(sql):
            if m.group(2):  # IF NOT EXISTS: it may be someone else's object
                continue
            kind = " ".join(m.group(1).upper().split())
            kind = "ROLE" if kind == "USER" else kind
            name = re.sub(r"\s+", "", m.group(3))
            outside = kind in ("CLUSTER REPLICA", "CLUSTER", "ROLE", "SCHEMA") or "." in name or not self.schema
            if outside and (kind, name) not in self.created:
                self.created.append((kind, name))
        for m in _ALTER_SYSTEM_SET.finditer(sql):
            if m.group(1) not in self.system_vars:
                self.system_vars.append(m.group(1))

    def close(self) -> list[str]:
        """Close the connections and drop what the file created; returns warnings."""
        for c in self.conns.values():
            c.close()
        self.conns.clear()
        warnings = []
        # by kind, and the latest created first within a kind
        drops = sorted(enumerate(self.created), key=lambda ikn: (_DROP_ORDER.index(ikn[1][0]), -ikn[0]))
        stmts = [f"DROP {k} IF EXISTS {n}" + ("" if k in ("ROLE", "CLUSTER REPLICA") else " CASCADE")
                 for _, (k, n) in drops]
        if self.schema:
            stmts.append(f"DROP SCHEMA IF EXISTS {_quote(self.schema)} CASCADE")
        system = [f"ALTER SYSTEM RESET {v}" for v in self.system_vars]
        for user, batch in ((None, stmts), ("mz_system", system)):
            if not batch:
                continue
            try:
                with text_connection(self.runner.url, user) as c:
                    for sql in batch:
                        try:
                            c.execute(sql)
                        except psycopg.Error as e:
                            warnings.append(f"cleanup: {sql}: {e.diag.message_primary or e}")
            except psycopg.Error as e:
                warnings.append(f"cleanup: cannot connect as {user or 'the default user'}: {e}")
        self.created.clear()
        self.system_vars.clear()
        return warnings


class Runner:
    """Runs files against the server at ``url``.

    ``reset_user_objects``: drop every user object of the server before each file and run
    the file in ``public`` (see the module docstring); by default a file runs in a schema
    of its own and nothing else on the server is touched. ``retry_timeout``: seconds a
    ``retry`` query is re-run before it fails. ``jobs``: how many connections run a file's
    consecutive ``query`` records at once (1: one after another, as written). Only for files
    whose queries read and change nothing: a statement, ``simple`` or ``retry`` record
    waits for the queries before it and runs alone."""

    def __init__(self, url: str, verbose: bool = False, fail_fast: bool = False, out=print,
                 reset_user_objects: bool = False, retry_timeout: float = 30.0, jobs: int = 1):
        self.url = url
        self.jobs = max(1, jobs)
        self.verbose = verbose
        self.fail_fast = fail_fast
        self.out = out
        self.reset_user_objects = reset_user_objects
        self.retry_timeout = retry_timeout
        self.timing = {"total": 0.0}

    # -- a file's catalog -------------------------------------------------------------

    def _begin(self) -> _FileState:
        state = _FileState(self)
        if self.reset_user_objects:
            self._drop_user_objects()
        else:
            state.schema = f"slt_{secrets.token_hex(6)}"
            with text_connection(self.url) as c:
                c.execute(f"CREATE SCHEMA {_quote(state.schema)}")
        return state

    def _drop_user_objects(self) -> None:
        """Drop every user item and non-``public`` user schema (``--reset-user-objects``)."""
        with text_connection(self.url) as c:
            rows = c.execute(
                "SELECT s.name, o.name, o.type FROM mz_catalog.mz_objects o "
                "JOIN mz_catalog.mz_schemas s ON o.schema_id = s.id WHERE o.id LIKE 'u%'").fetchall()
            order = list(_USER_OBJECT_TYPES)
            for schema, name, typ in sorted(rows, key=lambda r: order.index(r[2]) if r[2] in order else 99):
                kind = _USER_OBJECT_TYPES.get(typ)
                if kind is None:
                    continue
                try:
                    c.execute(f"DROP {kind} IF EXISTS {_quote(schema)}.{_quote(name)} CASCADE")
                except psycopg.Error:
                    pass  # already gone with something it depended on
            for (schema,) in c.execute(
                    "SELECT name FROM mz_catalog.mz_schemas WHERE id LIKE 'u%' AND name <> 'public'").fetchall():
                try:
                    c.execute(f"DROP SCHEMA IF EXISTS {_quote(schema)} CASCADE")
                except psycopg.Error:
                    pass

    # -- running ----------------------------------------------------------------------

    def run_file(self, path: Path) -> Outcome:
        """Run one file; returns its ``Outcome`` (failures are also printed via ``out``)."""
        path = Path(path)
        outcome = Outcome()
        records = parse(path.read_text(encoding="utf-8", errors="replace"))
        state = self._begin()
        labels: dict[str, tuple] = {}
        ahead: dict[int, tuple[bool, dict]] = {}  # results of queries run at once, by index
        try:
            for i, rec in enumerate(records):
                if self.jobs > 1 and i not in ahead and _concurrent(rec):
                    ahead.update(self._run_concurrently(state, records, i, labels))
                if rec.kind == "skip":
                    outcome.skip(rec.skip_reason)
                    continue
                if rec.kind in ("hash-threshold", "mode"):
                    continue  # the parser applied the mode; the threshold only shapes files
                if rec.kind == "halt":
                    outcome.skip("after halt", _countable(records[i + 1:]))
                    break
                if rec.kind == "reset-server":
                    outcome.warnings += state.close()
                    state = self._begin()
                    continue
                ok, detail = ahead.pop(i) if i in ahead else self._run_guarded(state, rec, labels)
                if ok:
                    outcome.passed += 1
                    continue
                outcome.failed += 1
                failure = {"file": str(path), "line": rec.line, "sql": rec.sql, **detail}
                outcome.failures.append(failure)
                self.report(failure)
                state.forget_broken()
                if self.fail_fast:
                    outcome.skip("after --fail-fast stop", _countable(records[i + 1:]))
                    break
        finally:
            outcome.warnings += state.close()
        for w in outcome.warnings:
            self.out(f"{path}: warning: {w}")
        return outcome

    def _run_concurrently(self, state: _FileState, records: list[Record], start: int,
                          labels: dict) -> dict[int, tuple[bool, dict]]:
        """Run the consecutive queries from ``records[start]`` on ``self.jobs`` connections
        at once (record k on connection k mod jobs); their results by index."""
        run = []
        for i in range(start, len(records)):
            if not _concurrent(records[i]):
                break
            run.append(i)
        if len(run) < 2:
            return {}
        conns = [state.conn(f"__job{k}") for k in range(min(self.jobs, len(run)))]

        def one(k: int) -> dict[int, tuple[bool, dict]]:
            lane = _Lane(state, conns[k])
            return {i: self._run_guarded(lane, records[i], labels) for i in run[k::len(conns)]}

        with ThreadPoolExecutor(len(conns)) as pool:
            results: dict[int, tuple[bool, dict]] = {}
            for part in pool.map(one, range(len(conns))):
                results.update(part)
        return results

    def report(self, f: dict) -> None:
        sql = " ".join(f["sql"].split())
        self.out(f"{f['file']}:{f['line']}: {sql[:300]}")
        self.out(f"    expected: {f.get('expected')}")
        self.out(f"    actual:   {f.get('actual')}")

    def _run_guarded(self, state: _FileState, rec: Record, labels: dict) -> tuple[bool, dict]:
        """Run a record; a broken connection or a value the runner cannot handle fails
        that record, not the run."""
        t = time.perf_counter()
        try:
            if rec.kind == "simple":
                ok, detail = self.run_simple(state, rec)
            else:
                ok, detail = self.run_record(state.conn(), rec, labels, state.track)
                deadline = time.monotonic() + self.retry_timeout
                pause = 0.05
                while not ok and rec.retry and time.monotonic() < deadline:
                    time.sleep(pause)
                    pause = min(pause * 2, 1.0)
                    ok, detail = self.run_record(state.conn(), rec, labels, state.track)
        except psycopg.OperationalError as e:
            ok, detail = False, {"expected": "a connection", "actual": f"connection failed: {e}"}
        except Exception as e:  # noqa: BLE001 -- one record's trouble must not end the run
            ok, detail = False, {"expected": "the record to run", "actual": f"runner error {type(e).__name__}: {e}"}
        finally:
            self.timing["total"] += time.perf_counter() - t
        return ok, detail

    def run_simple(self, state: _FileState, rec: Record) -> tuple[bool, dict]:
        """A ``simple`` record: the SQL over the simple query protocol on its connection."""
        conn = state.conn(rec.conn, rec.user)
        try:
            cur = conn.execute(rec.sql, prepare=False)  # no parameters: the simple protocol
            actual = []
            while True:
                if cur.description is not None:
                    actual += [",".join("NULL" if v is None else v for v in row) for row in cur.fetchall()]
                m = _TAG_COUNT.search(cur.statusmessage or "")
                actual.append(f"COMPLETE {m.group(1) if m else 0}")
                if not cur.nextset():
                    break
            state.track(rec.sql)
        except psycopg.Error as e:
            actual = error_text(e).splitlines()
        ok = actual == rec.expected
        return ok, {} if ok else {"expected": rec.expected, "actual": actual}

    def run_record(self, conn, rec: Record, labels: dict, track=None) -> tuple[bool, dict]:
        """A ``statement`` or ``query`` record on ``conn``. ``track(sql)`` is called when
        the SQL ran without error, whatever the record expected (a ``statement error``
        that succeeds still created its object, which the file's cleanup must drop)."""
        try:
            cur = conn.execute(rec.sql, prepare=False)
            rows = cur.fetchall() if cur.description is not None else []
            desc = cur.description or []
            rowcount = cur.rowcount
            err = None
            if track is not None:
                track(rec.sql)
        except psycopg.Error as e:
            rows, desc, rowcount, err = [], [], -1, e
        if rec.expect_error:
            if err is None:
                return False, {"expected": f"error matching {rec.error_regex!r}", "actual": "ok"}
            ok = error_matches(rec, err)
            return ok, {} if ok else {"expected": f"error matching {rec.error_regex!r}",
                                      "actual": f"{err.sqlstate}: {error_text(err)}"}
        if err is not None:
            return False, {"expected": "ok" if rec.kind == "statement" else "rows",
                           "actual": f"error {err.sqlstate}: {error_text(err)}"}
        if rec.kind == "statement":
            if rec.count is not None and rowcount != rec.count:
                return False, {"expected": f"{rec.count} rows affected", "actual": f"{rowcount} rows affected"}
            return True, {}
        return self.compare(rec, rows, desc, labels)

    def compare(self, rec: Record, rows: list, desc: list, labels: dict) -> tuple[bool, dict]:
        """Compare a query's rows (text values) with the record's expectation."""
        names = [d.name for d in desc]
        if rec.colnames is not None and rows and names != rec.colnames:
            return False, {"expected": f"columns {rec.colnames}", "actual": f"columns {names}"}
        types = rec.types
        if types and rows and len(rows[0]) != len(types):
            return False, {"expected": f"{len(types)} columns", "actual": f"{len(rows[0])} columns"}
        oids = [d.type_code for d in desc]
        formatted = [[format_value(v, types[j] if j < len(types) else "T", oids[j], rec.mode)
                      for j, v in enumerate(r)] for r in rows]
        if rec.multiline:
            values = [v for r in formatted for v in r]
            ok = values == rec.expected
            return ok, {} if ok else {"expected": rec.expected, "actual": values}
        if rec.mode == "cockroach" and rec.expected_hash is None:
            return self._compare_cockroach(rec, formatted)
        if rec.sort == "rowsort":
            formatted.sort()
        values = [v for r in formatted for v in r]
        if rec.sort == "valuesort":
            values.sort()
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
        expected = [line.strip() for line in rec.expected]
        if rec.sort == "valuesort":
            expected.sort()
        ok = values == expected
        return ok, {} if ok else {"expected": expected[:30], "actual": values[:30]}

    @staticmethod
    def _compare_cockroach(rec: Record, formatted: list[list[str]]) -> tuple[bool, dict]:
        """Cockroach mode: rows compare as lines with whitespace runs made one space."""
        ncols = len(rec.types)
        actual = [" ".join(" ".join(v.split()) for v in r) for r in formatted]
        expected = [" ".join(" ".join(c.split()) for c in split_cols(line, ncols)) for line in rec.expected]
        if rec.sort == "valuesort":
            actual = sorted(v for r in formatted for v in r)
            expected = sorted(c for line in rec.expected for c in split_cols(line, ncols))
        elif rec.sort == "rowsort" or not _ORDER_BY.search(rec.sql):
            # Materialize's runner compares the rows of a query without ORDER BY sorted
            actual.sort()
            expected.sort()
        ok = actual == expected
        return ok, {} if ok else {"expected": expected[:20], "actual": actual[:20]}


def _concurrent(rec: Record) -> bool:
    """Whether a record may run beside its neighbours (``Runner.jobs``): a plain query."""
    return rec.kind == "query" and not rec.retry


class _Lane:
    """A ``_FileState`` seen by one of ``Runner.jobs``' threads: its own connection."""

    def __init__(self, state: _FileState, conn: psycopg.Connection):
        self._state, self._conn = state, conn

    def conn(self, name: str | None = None, user: str | None = None) -> psycopg.Connection:
        return self._conn

    def track(self, sql: str) -> None:
        self._state.track(sql)


def _countable(records: list[Record]) -> int:
    return sum(r.kind in ("statement", "query", "simple", "skip") for r in records)
