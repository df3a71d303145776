"""Rewrite a stored query's references to a renamed relation or schema (Materialize's
"ALTER ... RENAME": the definitions of the objects that depend on the renamed one are
rewritten to its new name, so they keep working and keep depending on it).

The rewrite is textual, at the positions pglast reports for the query's relation
references, so the rest of the definition keeps its formatting and comments. A
reference that a column qualifier also names (``SELECT t.a FROM t``) gets the old name
as its alias (``FROM t2 AS t``), so the qualifiers need no rewriting. Names a CTE of the
query defines are never rewritten (they are not the relation).

Pure: no catalog access; the caller says which references mean the renamed relation.
"""

from __future__ import annotations

from collections.abc import Callable

import pglast
from pglast import ast
from pglast.parser import scan
from pglast.visitors import Visitor

from planner.functions.string import quote_ident


class _Refs(Visitor):
    """The query's RangeVars, CTE names and column qualifiers."""

    def __init__(self):
        self.ranges: list[ast.RangeVar] = []
        self.ctes: set[str] = set()
        self.qualifiers: set[str] = set()

    def visit_RangeVar(self, ancestors, node):
        self.ranges.append(node)

    def visit_CommonTableExpr(self, ancestors, node):
        self.ctes.add(node.ctename)

    def visit_ColumnRef(self, ancestors, node):
        fields = node.fields or ()
        if len(fields) >= 2 and isinstance(fields[-2], ast.String):
            self.qualifiers.add(fields[-2].sval)


def rename_references(sql: str, means_target: Callable[[str | None, str], bool], new_name: str) -> str:
    """``sql`` with every relation reference ``[schema.]name`` for which
    ``means_target(schema, name)`` is true renamed to ``new_name`` (schema kept).

    ``sql`` is one statement pglast parses (a view's query). Returns ``sql`` unchanged
    when nothing refers to the target.

    Raises:
        pglast.parser.ParseError if ``sql`` does not parse."""
    def edit(rv: ast.RangeVar, refs: _Refs) -> tuple[int, str] | None:
        if rv.schemaname is None and rv.relname in refs.ctes:
            return None
        if not means_target(rv.schemaname, rv.relname):
            return None
        text = quote_ident(new_name)
        if rv.alias is None and rv.relname in refs.qualifiers:
            text += " AS " + quote_ident(rv.relname)
        return -1, text

    return _edit(sql, edit)


def rename_schema_references(sql: str, schema: str, new_schema: str) -> str:
    """``sql`` with every relation reference qualified by schema ``schema``
    (``schema.t``, ``db.schema.t``) qualified by ``new_schema`` instead (ALTER SCHEMA
    ... RENAME); unqualified references are left alone.

    Raises:
        pglast.parser.ParseError if ``sql`` does not parse."""
    def edit(rv: ast.RangeVar, refs: _Refs) -> tuple[int, str] | None:
        return (-2, quote_ident(new_schema)) if rv.schemaname == schema else None

    return _edit(sql, edit)


def _edit(sql: str, edit: Callable[[ast.RangeVar, _Refs], tuple[int, str] | None]) -> str:
    """``sql`` with, for each relation reference ``edit`` answers ``(part, text)`` for,
    that part of its dotted name (-1 the relation, -2 its schema) replaced by ``text``."""
    refs = _Refs()
    refs(pglast.parse_sql(sql))
    toks = list(scan(sql))
    by_start = {t.start: k for k, t in enumerate(toks)}
    edits: list[tuple[int, int, str]] = []
    for rv in refs.ranges:
        got = edit(rv, refs)
        if got is None or rv.location not in by_start:
            continue
        parts = [by_start[rv.location]]
        while parts[-1] + 2 < len(toks) and toks[parts[-1] + 1].name == "ASCII_46":
            parts.append(parts[-1] + 2)
        t = toks[parts[got[0]]]
        edits.append((t.start, t.end + 1, got[1]))
    for start, end, text in sorted(edits, reverse=True):
        sql = sql[:start] + text + sql[end:]
    return sql


def rename_index_relation(definition: str, new_name: str) -> str:
    """An index's CREATE statement (PostgreSQL's ``CREATE INDEX i ON t (...)`` or
    Materialize's ``CREATE [DEFAULT] INDEX [i] [IN CLUSTER c] ON t ...``) with the
    relation after its first ``ON`` named ``new_name`` (schema kept); unchanged when it
    has none."""
    toks = list(scan(definition))
    k = next((k for k, t in enumerate(toks) if t.name == "ON"), None)
    if k is None or k + 1 >= len(toks):
        return definition
    k += 1
    while k + 2 < len(toks) and toks[k + 1].name == "ASCII_46":
        k += 2
    t = toks[k]
    return definition[:t.start] + quote_ident(new_name) + definition[t.end + 1:]
