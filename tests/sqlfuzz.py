"""A random query generator for differential testing against PostgreSQL (issue 31).

``QueryGen(seed)`` makes SELECT statements over three small tables (``SETUP``) from a
grammar of the forms that have answered wrongly before: joins with ON, USING and
NATURAL of every kind, correlated scalar subqueries, EXISTS / IN, CTEs inside
subqueries that reference the outer query, aggregates of outer columns, GROUP BY and
HAVING, set operations, CASE / COALESCE / string functions. Values stay in small
domains (joins match, nothing overflows) and no expression divides, so an answer never
depends on evaluation order. The same seed gives the same queries.

TLP (ternary logic partitioning, Rigger and Su, OOPSLA 2020, SQLancer's oracle) is the
second check: ``tlp_parts(query, predicate)`` are three queries whose multiset union must
equal the unfiltered query's answer, on one engine, with no reference.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

#: the tables: name -> [(column, type)]
TABLES = {
    "t1": [("k", "int"), ("a", "int"), ("b", "text"), ("n", "numeric")],
    "t2": [("k", "int"), ("a", "int"), ("c", "text"), ("n", "numeric")],
    "t3": [("k", "int"), ("a", "int"), ("d", "date"), ("f", "bool")],
}

_INTS = [None, 0, 1, 2, 3, -1]
_TEXTS = [None, "x", "y", "xy", "", "Ab"]
_NUMS = [None, "1.50", "-2.25", "0.00", "3"]
_DATES = [None, "2024-01-31", "2000-02-29", "1999-12-31"]
_BOOLS = [None, "true", "false"]
_SQL_TYPES = {"int": "int", "text": "text", "numeric": "numeric(6,2)", "date": "date", "bool": "bool"}


def _literal(typ: str, v) -> str:
    if v is None:
        return f"NULL::{_SQL_TYPES[typ]}"
    if typ == "text":
        return "'" + v.replace("'", "''") + "'"
    if typ == "date":
        return f"DATE '{v}'"
    return str(v)


def _domain(typ: str) -> list:
    return {"int": _INTS, "text": _TEXTS, "numeric": _NUMS, "date": _DATES, "bool": _BOOLS}[typ]


def setup_statements(seed: int, rows: int = 7) -> list[str]:
    """CREATE TABLE and INSERT statements of the three tables, with ``rows`` random rows
    each (NULLs and duplicates included), the same for every engine."""
    rnd = random.Random(seed)
    out = []
    for name, cols in TABLES.items():
        out.append(f"CREATE TABLE {name} (" + ", ".join(f"{c} {_SQL_TYPES[t]}" for c, t in cols) + ")")
        values = []
        for _ in range(rows):
            values.append("(" + ", ".join(_literal(t, rnd.choice(_domain(t))) for _, t in cols) + ")")
        out.append(f"INSERT INTO {name} VALUES " + ", ".join(values))
    return out


def values_relation(setup: list[str], name: str) -> str:
    """Table ``name``'s rows as a typed VALUES relation (for ``WITH name AS (...)``), so
    that a query over it runs in sqlfront's Python interpreter instead of on Spark."""
    cols = TABLES[name]
    insert = next(s for s in setup if s.startswith(f"INSERT INTO {name} "))
    rows = insert.split(" VALUES ", 1)[1]
    casts = ", ".join(f"{c}::{_SQL_TYPES[t]} AS {c}" for c, t in cols)
    return f"SELECT {casts} FROM (VALUES {rows}) AS v({', '.join(c for c, _ in cols)})"


@dataclass
class _Scope:
    """Columns visible to an expression: (qualified SQL text, type) of this level, and of
    the enclosing query (for correlated subqueries)."""

    cols: list[tuple[str, str]]
    outer: list[tuple[str, str]]


class QueryGen:
    """Random queries; ``query()`` gives one SELECT (text)."""

    def __init__(self, seed: int):
        self.rnd = random.Random(seed)
        self._alias = 0

    def _new_alias(self) -> str:
        self._alias += 1
        return f"q{self._alias}"

    # -- scalar expressions -------------------------------------------------------------

    def expr(self, typ: str, scope: _Scope, depth: int = 0) -> str:
        r = self.rnd
        own = [c for c, t in scope.cols if t == typ]
        outer = [c for c, t in scope.outer if t == typ]
        if depth >= 3 or r.random() < 0.3:
            if own and r.random() < 0.75:
                return r.choice(own)
            if outer and r.random() < 0.5:
                return r.choice(outer)
            return _literal(typ, r.choice(_domain(typ)))
        choice = r.random()
        if choice < 0.12:
            return f"COALESCE({self.expr(typ, scope, depth + 1)}, {self.expr(typ, scope, depth + 1)})"
        if choice < 0.24:
            return (f"CASE WHEN {self.pred(scope, depth + 1)} THEN {self.expr(typ, scope, depth + 1)} "
                    f"ELSE {self.expr(typ, scope, depth + 1)} END")
        if choice < 0.34 and depth < 2:
            return self.scalar_subquery(typ, scope)
        if typ == "int":
            op = r.choice(["+", "-", "*"])
            if r.random() < 0.2:
                return f"length({self.expr('text', scope, depth + 1)})"
            if r.random() < 0.15:
                return f"abs({self.expr('int', scope, depth + 1)})"
            return f"({self.expr('int', scope, depth + 1)} {op} {self.expr('int', scope, depth + 1)})"
        if typ == "text":
            k = r.random()
            if k < 0.3:
                return f"({self.expr('text', scope, depth + 1)} || {self.expr('text', scope, depth + 1)})"
            if k < 0.45:
                return f"upper({self.expr('text', scope, depth + 1)})"
            if k < 0.6:
                return f"substr({self.expr('text', scope, depth + 1)}, 1, 2)"
            if k < 0.75:
                return f"({self.expr('text', scope, depth + 1)} || {self.expr('int', scope, depth + 1)})"
            return f"lower({self.expr('text', scope, depth + 1)})"
        if typ == "numeric":
            k = r.random()
            if k < 0.5:
                return f"({self.expr('numeric', scope, depth + 1)} {r.choice(['+', '-'])} " \
                       f"{self.expr('numeric', scope, depth + 1)})"
            if k < 0.7:
                return f"round({self.expr('numeric', scope, depth + 1)}, 1)"
            return f"({self.expr('numeric', scope, depth + 1)} * {self.expr('int', scope, depth + 1)})"
        if typ == "date":
            return f"({self.expr('date', scope, depth + 1)} + {r.choice([0, 1, 30])})"
        if typ == "bool":
            return self.pred(scope, depth + 1)
        raise AssertionError(typ)

    def pred(self, scope: _Scope, depth: int = 0) -> str:
        r = self.rnd
        k = r.random()
        typ = r.choice(["int", "int", "text", "numeric", "date"])
        if depth >= 3 or k < 0.35:
            op = r.choice(["=", "<>", "<", "<=", ">", ">="])
            return f"{self.expr(typ, scope, depth + 1)} {op} {self.expr(typ, scope, depth + 1)}"
        if k < 0.45:
            return f"{self.expr(typ, scope, depth + 1)} IS {r.choice(['', 'NOT '])}NULL"
        if k < 0.55:
            return f"({self.pred(scope, depth + 1)} {r.choice(['AND', 'OR'])} {self.pred(scope, depth + 1)})"
        if k < 0.6:
            return f"NOT ({self.pred(scope, depth + 1)})"
        if k < 0.67:
            items = ", ".join(_literal(typ, v) for v in r.sample(_domain(typ), 2))
            return f"{self.expr(typ, scope, depth + 1)} {r.choice(['', 'NOT '])}IN ({items})"
        if depth < 2 and k < 0.77:
            return f"{r.choice(['', 'NOT '])}EXISTS ({self.subquery_select('int', scope)})"
        if depth < 2 and k < 0.87:
            return f"{self.expr('int', scope, depth + 1)} {r.choice(['', 'NOT '])}IN ({self.subquery_select('int', scope)})"
        if depth < 2 and k < 0.93:
            # a CTE inside the subquery that reads the outer query's columns
            own = [c for c, t in scope.cols if t == "int"] or ["1"]
            return (f"{self.expr('int', scope, depth + 1)} IN (WITH s AS (SELECT {r.choice(own)} AS v) "
                    f"SELECT v FROM s)")
        lo, hi = sorted(r.sample([-1, 0, 1, 2, 3], 2))
        return f"{self.expr('int', scope, depth + 1)} BETWEEN {lo} AND {hi}"

    # -- subqueries ---------------------------------------------------------------------

    def _correlated_from(self, scope: _Scope) -> tuple[str, _Scope, str]:
        """A one-table FROM for a subquery, its scope (the caller's columns as outer) and
        a correlation predicate (or 'true')."""
        name = self.rnd.choice(list(TABLES))
        alias = self._new_alias()
        inner = _Scope([(f"{alias}.{c}", t) for c, t in TABLES[name]], scope.cols + scope.outer)
        outer_ints = [c for c, t in scope.cols if t == "int"]
        corr = f"{alias}.k = {self.rnd.choice(outer_ints)}" if outer_ints and self.rnd.random() < 0.7 else "true"
        return f"{name} {alias}", inner, corr

    def subquery_select(self, typ: str, scope: _Scope) -> str:
        src, inner, corr = self._correlated_from(scope)
        where = corr if self.rnd.random() < 0.6 else f"{corr} AND {self.pred(inner, 2)}"
        return f"SELECT {self.expr(typ, inner, 2)} FROM {src} WHERE {where}"

    def scalar_subquery(self, typ: str, scope: _Scope) -> str:
        src, inner, corr = self._correlated_from(scope)
        r = self.rnd.random()
        if typ == "int" and r < 0.4:
            return f"(SELECT count(*) FROM {src} WHERE {corr})"
        cols = [c for c, t in inner.cols if t == typ]
        if typ in ("int", "numeric") and r < 0.7 and cols:
            col = cols[0]
            return f"(SELECT {self.rnd.choice(['sum', 'max', 'min'])}({col}) FROM {src} WHERE {corr})"
        col = self.rnd.choice([c for c, t in inner.cols if t == typ] or [_literal(typ, None)])
        return f"(SELECT max({col}) FROM {src} WHERE {corr})"

    # -- FROM ---------------------------------------------------------------------------

    def from_clause(self) -> tuple[str, _Scope, list[tuple[str, str]] | None]:
        """FROM text, the scope of its qualified columns, and for SELECT * the
        PostgreSQL output columns are left to the engines (None)."""
        r = self.rnd
        n = r.choice([1, 1, 2, 2, 2, 3])
        names = [r.choice(list(TABLES)) for _ in range(n)]
        aliases = [self._new_alias() for _ in names]
        cols = [(f"{a}.{c}", t) for name, a in zip(names, aliases) for c, t in TABLES[name]]
        text = f"{names[0]} {aliases[0]}"
        for i in range(1, n):
            kind = r.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "CROSS JOIN", "JOIN USING",
                             "LEFT JOIN USING", "FULL JOIN USING", "NATURAL JOIN", "NATURAL LEFT JOIN"])
            right = f"{names[i]} {aliases[i]}"
            if kind == "CROSS JOIN":
                text += f" CROSS JOIN {right}"
            elif kind.endswith("USING"):
                common = [c for c, _ in TABLES[names[i]] if any(
                    c == c2 for j in range(i) for c2, _ in TABLES[names[j]])]
                # USING needs the column on exactly one side of the left input's tables
                usable = [c for c in common if sum(1 for j in range(i) for c2, _ in TABLES[names[j]] if c2 == c) == 1]
                if not usable:
                    text += f" CROSS JOIN {right}"
                    continue
                using = r.sample(usable, r.choice([1, min(2, len(usable))]))
                text += f" {kind.removesuffix(' USING')} {right} USING ({', '.join(using)})"
            elif kind.startswith("NATURAL"):
                if i > 1:  # NATURAL over 3 tables: common columns must be unambiguous
                    text += f" CROSS JOIN {right}"
                    continue
                text += f" {kind} {right}"
            else:
                lcol = r.choice([c for c, t in cols[: sum(len(TABLES[x]) for x in names[:i])] if t == "int"])
                text += f" {kind} {right} ON {lcol} = {aliases[i]}.{r.choice(['k', 'a'])}"
        return text, _Scope(cols, []), None

    # -- whole queries ------------------------------------------------------------------

    def query(self) -> str:
        """One SELECT statement."""
        r = self.rnd
        if r.random() < 0.12:
            types = [r.choice(["int", "text"]) for _ in range(r.choice([1, 2]))]
            op = r.choice(["UNION", "UNION ALL", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"])
            return f"({self._typed_select(types)}) {op} ({self._typed_select(types)})"
        src, scope, _ = self.from_clause()
        where = f" WHERE {self.pred(scope)}" if r.random() < 0.6 else ""
        k = r.random()
        if k < 0.15:
            return f"SELECT * FROM {src}{where}"
        if k < 0.45:
            keys = r.sample([c for c, t in scope.cols if t in ("int", "text")], r.choice([1, 2]))
            texts = [c for c, t in scope.cols if t == "text"] or ["NULL::text"]
            aggs = [r.choice(["count(*)", f"count({r.choice(scope.cols)[0]})",
                              f"sum({r.choice([c for c, t in scope.cols if t == 'int'])})",
                              f"max({r.choice(scope.cols)[0]})",
                              f"count(DISTINCT {r.choice(scope.cols)[0]})",
                              "string_agg({0}, ',' ORDER BY {0})".format(r.choice(texts))])
                    for _ in range(r.choice([1, 2]))]
            having = f" HAVING count(*) > {r.choice([0, 1])}" if r.random() < 0.3 else ""
            return f"SELECT {', '.join(keys + aggs)} FROM {src}{where} GROUP BY {', '.join(keys)}{having}"
        if k < 0.52:
            col = r.choice(scope.cols)[0]
            return f"SELECT (SELECT count({col})) FROM {src}{where}"
        items = [f"{self.expr(r.choice(['int', 'int', 'text', 'numeric', 'bool', 'date']), scope)} AS c{i}"
                 for i in range(r.choice([1, 2, 3]))]
        distinct = "DISTINCT " if r.random() < 0.1 else ""
        return f"SELECT {distinct}{', '.join(items)} FROM {src}{where}"

    def _typed_select(self, types: list[str]) -> str:
        src, scope, _ = self.from_clause()
        where = f" WHERE {self.pred(scope)}" if self.rnd.random() < 0.5 else ""
        return f"SELECT {', '.join(self.expr(t, scope) for t in types)} FROM {src}{where}"

    def tlp(self) -> tuple[str, list[str]]:
        """(query, its three TLP partitions): ``SELECT cols FROM src`` and the same with
        ``WHERE p``, ``WHERE NOT (p)`` and ``WHERE (p) IS NULL``."""
        src, scope, _ = self.from_clause()
        cols = ", ".join(self.expr(self.rnd.choice(["int", "text"]), scope) for _ in range(2))
        p = self.pred(scope)
        base = f"SELECT {cols} FROM {src}"
        return base, [f"{base} WHERE {p}", f"{base} WHERE NOT ({p})", f"{base} WHERE ({p}) IS NULL"]
