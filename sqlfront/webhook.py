"""Webhook sources (Materialize's "CREATE SOURCE: Webhook"): a source whose rows arrive
as HTTP POSTs to environmentd's HTTP listener (``--console-listen``) at
``/api/webhook/<database>/<schema>/<source>``.

Each request is one row (or one per line of newline-delimited JSON): ``body`` as BODY
FORMAT says (JSON: ``jsonb``; TEXT: ``text``, UTF-8; BYTES: ``bytea`` as received) and,
with INCLUDE HEADERS, ``headers``: the request's headers, names in lower case. Materialize
types that column ``map[text => text]``; this server has no map type, so it is ``jsonb``
(an object of strings): ``headers->>'x'`` reads one.

CHECK (WITH (HEADERS [AS a], BODY [AS b] [BYTES], SECRET s [AS c] [BYTES]) expression)
validates each request as Materialize's: the expression sees the body (text, or bytea
with BYTES), the headers and the secrets named, and must be true; false, NULL or an
error rejects the request (400) and writes nothing. ``headers->'name'`` in a CHECK is
the header's text, as Materialize's map gives (``->>`` here). The expression is planned
at CREATE SOURCE (errors then) and evaluated in Python (``planner.consteval``) on the
HTTP server's worker thread, never the Coordinator's loop; an accepted request is
appended through group commit, so concurrent requests share commits.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, SYNTAX_ERROR
from catalog.snapshot import CatalogSnapshot, Column, Source
from catalog.types import BYTEA, JSONB, TEXT
from sqlfront import source_parse as sp
from sqlfront.sources import Plan

if TYPE_CHECKING:
    from sqlfront.environment import Environment

#: BODY FORMAT -> the body column's type
BODY_TYPES = {"json": JSONB, "text": TEXT, "bytes": BYTEA}


@dataclass(frozen=True)
class Binding:
    """One item of CHECK's WITH: what (``headers``, ``body`` or ``secret``), the column
    name the expression uses, bytes or text, and the secret's id."""

    what: str
    name: str
    as_bytes: bool = False
    secret_id: str | None = None


class WebhookError(Exception):
    """A request refused: ``status`` (HTTP) and a message for the client."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _ident(word: str) -> str:
    return word[1:-1].replace('""', '"') if word.startswith('"') else word.lower()


_ITEM = re.compile(r'^(HEADERS|BODY|SECRET\s+(?P<secret>[\w."]+))(\s+AS\s+(?P<alias>"[^"]+"|\w+))?(\s+(?P<bytes>BYTES))?$',
                   re.IGNORECASE)


def parse_check(snap: CatalogSnapshot, check: str) -> tuple[list[Binding], str]:
    """CHECK's text (inside its parentheses) as its WITH bindings and its expression.

    Raises:
        SqlError 42601 for a malformed WITH; 42704 for an unknown secret; 0A000 for
        HEADERS BYTES."""
    from sqlfront.secrets import resolve_secret

    bindings: list[Binding] = []
    expr = check.strip()
    m = re.match(r"WITH\s*\(", expr, re.IGNORECASE)
    if m:
        depth, i = 1, m.end()
        while i < len(expr) and depth:
            depth += (expr[i] == "(") - (expr[i] == ")")
            i += 1
        if depth:
            raise SqlError(SYNTAX_ERROR, "syntax error in CHECK: unbalanced parentheses in WITH")
        for item in _split_top(expr[m.end():i - 1]):
            im = _ITEM.match(item)
            if im is None:
                raise SqlError(SYNTAX_ERROR, f"syntax error in CHECK's WITH at: {item}")
            kind = im.group(1).split()[0].upper()
            as_bytes = im.group("bytes") is not None
            alias = _ident(im.group("alias")) if im.group("alias") else None
            if kind == "HEADERS":
                if as_bytes:
                    raise SqlError(FEATURE_NOT_SUPPORTED, "CHECK WITH (HEADERS BYTES) is not supported")
                bindings.append(Binding("headers", alias or "headers"))
            elif kind == "BODY":
                bindings.append(Binding("body", alias or "body", as_bytes))
            else:
                qualified = ".".join(_ident(p) for p in im.group("secret").split("."))
                secret = resolve_secret(snap, qualified)
                bindings.append(Binding("secret", alias or secret.name, as_bytes, secret.id))
        expr = expr[i:].strip()
    if not expr:
        raise SqlError(SYNTAX_ERROR, "CHECK needs an expression")
    return bindings, expr


def _plan_expr(bindings: list[Binding], expr: str):
    """The CHECK expression planned over its bindings' columns (``headers->'x'`` made
    ``->>``: a map's text, see the module doc).

    Raises:
        SqlError as planning raises it (42703, 42883, 42804 for a non-boolean...)."""
    import pglast
    from pglast import ast

    from planner.expr import ExprPlanner, ast_nodes
    from planner.scope import Scope, ScopeItem

    try:
        node = pglast.parse_sql(f"SELECT ({expr})")[0].stmt.targetList[0].val
    except pglast.parser.ParseError as e:
        raise SqlError(SYNTAX_ERROR, f"syntax error in CHECK: {e}") from None
    headers = {b.name for b in bindings if b.what == "headers"}
    for n in ast_nodes(node):
        if isinstance(n, ast.A_Expr) and n.name and n.name[0].sval == "->" and isinstance(n.lexpr, ast.ColumnRef) \
                and len(n.lexpr.fields) == 1 and getattr(n.lexpr.fields[0], "sval", None) in headers:
            n.name = (ast.String(sval="->>"),)
    types = {"headers": JSONB}
    scope = Scope([ScopeItem(None, b.name, types.get(b.what, BYTEA if b.as_bytes else TEXT), i)
                   for i, b in enumerate(bindings)])
    return ExprPlanner(scope).plan_bool(node, "CHECK")


def plan(snap: CatalogSnapshot, stmt: sp.CreateSource) -> Plan:
    """CREATE SOURCE ... FROM WEBHOOK: the source's columns and spec (its CHECK planned
    here, so a bad one fails now).

    Raises:
        SqlError as :func:`parse_check` and planning the expression raise."""
    columns = [Column("body", BODY_TYPES[stmt.body_format], False)]
    if stmt.include_headers:
        columns.append(Column("headers", JSONB, False))
    spec: dict = {"body_format": stmt.body_format, "include_headers": stmt.include_headers}
    if stmt.check is not None:
        bindings, expr = parse_check(snap, stmt.check)
        _plan_expr(bindings, expr)
        spec["check"] = {"expr": expr, "bindings": [[b.what, b.name, b.as_bytes, b.secret_id] for b in bindings]}
    return Plan("webhook", spec, None, [(None, tuple(columns), None)])


class Webhooks:
    """The webhook sources' request handling in one environmentd; planned CHECKs are
    kept by source id and spec."""

    def __init__(self, env: Environment):
        self.env = env
        self._checks: dict[tuple[str, str], object] = {}
        self._lock = threading.Lock()

    def _check(self, source: Source, spec: dict):
        key = (source.id, source.spec)
        with self._lock:
            planned = self._checks.get(key)
        if planned is None:
            bindings = [Binding(*b) for b in spec["check"]["bindings"]]
            planned = (bindings, _plan_expr(bindings, spec["check"]["expr"]))
            with self._lock:
                self._checks[key] = planned
        return planned

    def receive(self, database: str, schema: str, name: str, headers: list[tuple[str, str]], body: bytes) -> int:
        """Validate a POST to source ``database.schema.name`` and append its rows;
        returns the rows appended.

        Raises:
            WebhookError 404 for no such webhook source; 400 for a body not in its
            format, or a request its CHECK rejects (false, NULL or an error)."""
        from sqlfront.group_commit import Write
        from sqlfront.sequence.result import check_storable

        snap = self.env.snapshot
        source = None
        if database == "materialize":
            rel = snap.relation_by_name(schema, name)
            source = rel if isinstance(rel, Source) and rel.kind == "webhook" else None
        if source is None:
            raise WebhookError(404, f"webhook source '{database}.{schema}.{name}' does not exist")
        spec = json.loads(source.spec)
        header_map: dict[str, str] = {}
        for k, v in headers:
            header_map.setdefault(k.lower(), v)
        if "check" in spec:
            self._validate(snap, source, spec, header_map, body)
        bodies = _bodies(spec["body_format"], body)
        rows = [(b, _jsonb(header_map)) if spec["include_headers"] else (b,) for b in bodies]
        try:
            check_storable(source, rows)
        except SqlError as e:
            raise WebhookError(400, e.message) from None
        self.env.storage.writer.commit([Write(source.shard_id, values=rows, table=source)])
        return len(rows)

    def _validate(self, snap, source: Source, spec: dict, header_map: dict, body: bytes) -> None:
        from planner.consteval import evaluate

        bindings, expr = self._check(source, spec)
        row = []
        for b in bindings:
            if b.what == "headers":
                row.append(_jsonb(header_map))
            elif b.what == "body":
                row.append(body if b.as_bytes else _utf8(body))
            else:
                secret = snap.secrets.get(b.secret_id)
                if secret is None:
                    raise WebhookError(400, "validation failed: a secret of the CHECK was dropped")
                row.append(secret.value.encode() if b.as_bytes else secret.value)
        try:
            ok = evaluate(expr, tuple(row))
        except SqlError as e:
            raise WebhookError(400, f"validation error: {e.message}") from None
        if ok is not True:
            raise WebhookError(400, "validation failed")


def _utf8(body: bytes) -> str:
    try:
        return body.decode()
    except UnicodeDecodeError:
        raise WebhookError(400, "the body is not valid UTF-8") from None


def _jsonb(value):
    from catalog.textio import parse_text

    return parse_text(json.dumps(value), JSONB, explicit=False)


def _bodies(fmt: str, body: bytes) -> list:
    """The body column's values of a request: one, or one per line of NDJSON."""
    if fmt == "bytes":
        return [body]
    text = _utf8(body)
    if fmt == "text":
        return [text]
    try:
        return [_jsonb(json.loads(text))]
    except ValueError:
        pass
    try:
        return [_jsonb(json.loads(line)) for line in text.splitlines() if line.strip()]
    except ValueError:
        raise WebhookError(400, "the body is not valid JSON") from None
