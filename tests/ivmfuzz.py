"""Materialized view definitions and seeded random writes for the differential test of
incremental view maintenance (issue 25: "after every step each view read AS OF the step's
timestamp equals the same query run from scratch at that timestamp").

Pure: SQL text only, no connection. ``VIEWS`` covers each rule of the issue's list
(``View.rule`` names it); ``StepGen(seed)`` makes the writes: INSERT (duplicate rows and
NULLs included), UPDATE, DELETE (sometimes of every row, so groups retract to zero, and
an INSERT follows), transaction blocks writing several tables at one timestamp, and
bursts of single writes (one timestamp each, to read the views between them). Values
come from small domains so join keys and groups collide; no expression divides or
overflows, so no answer depends on evaluation order. The same seed gives the same steps.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

#: the input tables: name -> [(column, SQL type)]
TABLES = {
    "ivr": [("k", "int"), ("a", "int"), ("b", "text"), ("n", "numeric(6,2)")],
    "ivs": [("k", "int"), ("a", "int"), ("c", "text"), ("n", "numeric(6,2)")],
    "ivu": [("k", "int"), ("x", "int")],
}

_INTS = [None, 0, 1, 2, 3, -1]
_TEXTS = [None, "x", "y", "xy", ""]
_NUMS = [None, "1.50", "-2.25", "0.00", "3", "0.10"]


def _domain(typ: str) -> list:
    return _TEXTS if typ == "text" else _NUMS if typ.startswith("numeric") else _INTS


def _literal(typ: str, v) -> str:
    if v is None:
        return "NULL"
    if typ == "text":
        return "'" + v.replace("'", "''") + "'"
    return str(v)


@dataclass(frozen=True)
class View:
    """One view to maintain: ``name``, its defining ``sql``, the incremental rule of
    issue 25 it exercises, and ``reference``: the query run from scratch to check it
    (``sql`` itself unless the view reads another materialized view, whose definition is
    then inlined so that nothing maintained is trusted)."""

    name: str
    sql: str
    rule: str
    reference: str | None = None

    @property
    def create_sql(self) -> str:
        """``sql``, with ``{base}`` (a temporal filter's) the run's ``BASE_MS``."""
        return self.sql.replace("{base}", str(BASE_MS))

    @property
    def check_sql(self) -> str:
        return (self.reference or self.sql).replace("{base}", str(BASE_MS))

    @property
    def inputs(self) -> frozenset[str]:
        """The tables of ``TABLES`` the view reads (through plain views too)."""
        sql = self.check_sql + " ".join(d for v, d in PLAIN_VIEWS.items() if re.search(rf"\b{v}\b", self.check_sql))
        return frozenset(t for t in TABLES if re.search(rf"\b{t}\b", sql))


#: mz_now() when the views are made (ms): the temporal filters' times are after it
BASE_MS = 0

#: plain (non-materialized) views the materialized ones may read: name -> definition
PLAIN_VIEWS = {
    "ivp_join": "SELECT r.k, r.n, s.c FROM ivr r JOIN ivs s ON r.a = s.a",
}

_AGG = "SELECT k, count(*) AS c, count(a) AS ca, sum(a) AS sa, sum(n) AS sn, avg(n) AS an FROM ivr r GROUP BY k"

#: every materialized view, in creation order (one over another comes after it)
VIEWS: list[View] = [
    # linear operators
    View("iv_filter", "SELECT k, a, b FROM ivr r WHERE a > 0 OR b = 'x'", "filter"),
    View("iv_map", "SELECT k + 1 AS k1, upper(b) AS ub, coalesce(a, -9) * 2 AS a2, n * 2 AS n2, "
         "CASE WHEN a IS NULL THEN 'none' ELSE b || a END AS ba FROM ivr r", "project/map"),
    View("iv_union_all", "SELECT k, a FROM ivr r UNION ALL SELECT k, a FROM ivs s UNION ALL SELECT k, x FROM ivu u",
         "UNION ALL"),
    # joins
    View("iv_join", "SELECT r.k, r.a, s.c FROM ivr r JOIN ivs s ON r.k = s.k", "inner join"),
    View("iv_join3", "SELECT r.b, s.c, u.x FROM ivr r JOIN ivs s ON r.k = s.k JOIN ivu u ON u.k = s.a", "inner join (3-way)"),
    View("iv_join4", "SELECT r.k, s.c, u.x, r2.b FROM ivr r JOIN ivs s ON r.k = s.k JOIN ivu u ON u.k = s.a "
         "JOIN ivr r2 ON r2.a IS NOT DISTINCT FROM u.x AND r2.k + r.a > s.k", "inner join (4-way, a self join, "
         "a condition over three inputs)"),
    View("iv_join_cross3", "SELECT u.k, s.c, r.b FROM ivu u CROSS JOIN ivs s JOIN ivr r ON r.a = u.x WHERE s.a = 1",
         "inner join (3-way, one input by a cross join)"),
    View("iv_join_nonequi", "SELECT r.k, s.k AS sk FROM ivr r JOIN ivs s ON r.a < s.a AND r.k = s.a", "inner join (residual)"),
    View("iv_left", "SELECT r.k, r.b, s.c FROM ivr r LEFT JOIN ivs s ON r.k = s.k AND s.a >= 0", "left join"),
    View("iv_right", "SELECT r.b, s.k, s.c FROM ivr r RIGHT JOIN ivs s ON r.a = s.a", "right join"),
    View("iv_full", "SELECT r.k AS rk, s.k AS sk, r.b, s.c FROM ivr r FULL JOIN ivs s ON r.k = s.k", "full join"),
    View("iv_full_using", "SELECT k, r.a AS ra, s.a AS sa FROM ivr r FULL JOIN ivs s USING (k)", "full join (USING)"),
    View("iv_cross", "SELECT u.k, u.x, s.c FROM ivu u CROSS JOIN ivs s WHERE s.a = 1", "cross join"),
    View("iv_left_agg", "SELECT u.k, count(r.a) AS c, sum(r.n) AS sn FROM ivu u LEFT JOIN ivr r ON r.k = u.k GROUP BY u.k",
         "left join + GROUP BY"),
    # semi and anti joins
    View("iv_exists", "SELECT k, b FROM ivr r WHERE EXISTS (SELECT 1 FROM ivs s WHERE s.k = r.k)", "semi join (EXISTS)"),
    View("iv_in", "SELECT k, a FROM ivr r WHERE a IN (SELECT a FROM ivs s)", "semi join (IN)"),
    View("iv_not_in", "SELECT k, a FROM ivr r WHERE a NOT IN (SELECT a FROM ivs s)", "anti join (NOT IN, NULLs)"),
    View("iv_not_in_nonnull", "SELECT k, b FROM ivr r WHERE k NOT IN (SELECT x FROM ivu u WHERE x IS NOT NULL)",
         "anti join (NOT IN, no NULLs)"),
    View("iv_not_exists", "SELECT k, b FROM ivr r WHERE NOT EXISTS (SELECT 1 FROM ivu u WHERE u.k = r.k)",
         "anti join (NOT EXISTS)"),
    View("iv_not_exists2", "SELECT count(*) AS c FROM ivr r WHERE NOT EXISTS "
         "(SELECT 1 FROM ivs s WHERE s.k = r.k AND s.a = r.a)", "anti join (two keys) + global count"),
    View("iv_join_in", "SELECT r.k, r.b, s.c FROM ivr r JOIN ivs s ON r.k = s.k WHERE s.a IN (SELECT x FROM ivu u)",
         "semi join over an inner join (moved into its side)"),
    View("iv_join_not_exists", "SELECT r.k, s.c FROM ivr r JOIN ivs s ON r.a = s.a "
         "WHERE NOT EXISTS (SELECT 1 FROM ivu u WHERE u.k = r.k)", "anti join over an inner join (moved into its side)"),
    View("iv_in_agg", "SELECT k, a FROM ivr r WHERE k IN (SELECT k FROM ivs s GROUP BY k HAVING count(*) >= 2)",
         "semi join over an aggregate (Q18)"),
    # accumulable aggregates
    View("iv_agg", _AGG, "GROUP BY count/sum/avg"),
    View("iv_agg_bool", "SELECT b, bool_and(a > 0) AS ba, bool_or(a > 0) AS bo, count(*) AS c FROM ivr r GROUP BY b",
         "GROUP BY bool_and/bool_or"),
    View("iv_agg_var", "SELECT k, stddev(n) AS sd, variance(n) AS va, stddev_pop(a) AS sp, var_samp(a) AS vs "
         "FROM ivr r GROUP BY k", "GROUP BY stddev/variance"),
    View("iv_agg_join", "SELECT s.c, sum(r.n) AS sn, count(*) AS cnt FROM ivr r JOIN ivs s ON r.k = s.k GROUP BY s.c",
         "join + GROUP BY"),
    # other aggregates
    View("iv_minmax", "SELECT k, min(a) AS mi, max(b) AS mb, min(n) AS mn, max(n) AS mxn FROM ivr r GROUP BY k",
         "GROUP BY min/max"),
    View("iv_string_agg", "SELECT k, string_agg(b, ',' ORDER BY b) AS sb FROM ivr r GROUP BY k", "string_agg"),
    View("iv_array_agg", "SELECT a, array_agg(k ORDER BY k) AS ks FROM ivs s GROUP BY a", "array_agg"),
    View("iv_jsonb_agg", "SELECT k, jsonb_agg(c ORDER BY c) AS jc FROM ivs s GROUP BY k", "jsonb_agg"),
    View("iv_agg_distinct", "SELECT k, count(DISTINCT a) AS da, sum(DISTINCT a) AS sda, count(DISTINCT b) AS db "
         "FROM ivr r GROUP BY k", "DISTINCT aggregates"),
    # global aggregates (one row even over no input)
    View("iv_global", "SELECT count(*) AS c, sum(a) AS sa, max(b) AS mb, avg(n) AS an FROM ivr r",
         "global aggregate"),
    View("iv_global_filter", "SELECT count(*) AS c, count(DISTINCT k) AS dk, bool_or(a > 1) AS bo FROM ivs s WHERE a > 0",
         "global aggregate (filtered, DISTINCT)"),
    View("iv_global_u", "SELECT count(*) AS c, min(x) AS mi FROM ivu u", "global aggregate (min)"),
    # HAVING, DISTINCT, set operations
    View("iv_having", "SELECT k, count(*) AS c FROM ivr r GROUP BY k HAVING count(*) > 1", "HAVING"),
    View("iv_having_sum", "SELECT a, sum(n) AS sn FROM ivs s GROUP BY a HAVING sum(n) > 0 OR a IS NULL", "HAVING (sum)"),
    View("iv_distinct", "SELECT DISTINCT k, b FROM ivr r", "DISTINCT"),
    View("iv_distinct_join", "SELECT DISTINCT r.a FROM ivr r JOIN ivu u ON u.k = r.k", "DISTINCT over a join"),
    View("iv_union", "SELECT k FROM ivr r UNION SELECT x FROM ivu u", "UNION"),
    View("iv_intersect", "SELECT k, a FROM ivr r INTERSECT SELECT k, a FROM ivs s", "INTERSECT"),
    View("iv_intersect_all", "SELECT k FROM ivr r INTERSECT ALL SELECT k FROM ivs s", "INTERSECT ALL"),
    View("iv_except", "SELECT k, a FROM ivr r EXCEPT SELECT k, a FROM ivs s", "EXCEPT"),
    View("iv_except_all", "SELECT a FROM ivr r EXCEPT ALL SELECT a FROM ivs s", "EXCEPT ALL"),
    # TopK (a total order on every output column: ties are equal rows)
    View("iv_topk", "SELECT k, a, b FROM ivr r ORDER BY a DESC NULLS LAST, k, b LIMIT 3", "ORDER BY LIMIT"),
    View("iv_topk_offset", "SELECT k, c FROM ivs s ORDER BY k NULLS FIRST, c LIMIT 2 OFFSET 1", "ORDER BY LIMIT OFFSET"),
    View("iv_topk_group", "SELECT k, count(*) AS c FROM ivr r GROUP BY k ORDER BY c DESC, k LIMIT 2",
         "ORDER BY LIMIT over GROUP BY"),
    # window functions (ties of the window order are equal in the output columns)
    View("iv_row_number", "SELECT k, a, row_number() OVER (PARTITION BY k ORDER BY a, b) AS rn FROM ivr r",
         "window row_number"),
    View("iv_rank", "SELECT k, b, rank() OVER (PARTITION BY k ORDER BY b) AS rk FROM ivr r", "window rank"),
    View("iv_win_sum", "SELECT k, a, sum(a) OVER (PARTITION BY k) AS sk FROM ivs s", "window sum OVER (PARTITION BY)"),
    View("iv_win_running", "SELECT k, a, sum(a) OVER (PARTITION BY k ORDER BY a) AS run FROM ivr r",
         "window running sum"),
    # WITH and decorrelated subqueries
    View("iv_cte", "WITH big AS (SELECT k, a FROM ivr r WHERE a >= 0), cnt AS (SELECT k, count(*) AS c FROM ivs s GROUP BY k) "
         "SELECT big.k, big.a, cnt.c FROM big LEFT JOIN cnt ON cnt.k = big.k", "WITH"),
    View("iv_corr_select", "SELECT k, (SELECT count(*) FROM ivs s WHERE s.k = r.k) AS cs, "
         "(SELECT max(c) FROM ivs s WHERE s.a = r.a) AS mc FROM ivr r", "scalar subquery in SELECT"),
    View("iv_corr_where", "SELECT k, a FROM ivr r WHERE a > (SELECT min(a) FROM ivs s WHERE s.k = r.k)",
         "scalar subquery in WHERE (Q2)"),
    View("iv_corr_count", "SELECT k, x FROM ivu u WHERE x = (SELECT count(*) FROM ivr r WHERE r.k = u.k)",
         "scalar count subquery in WHERE"),
    # views over views
    # temporal filters: rows enter and leave with time, a few seconds after the views are
    # made ({base}: mz_now() then), whether or not anything is written
    View("iv_temporal_until", "SELECT k, a, b FROM ivr r WHERE mz_now() < {base} + 4000 * (abs(coalesce(a, 0)) + 1)",
         "temporal filter (rows leave)"),
    View("iv_temporal_window", "SELECT k, count(*) AS c, sum(n) AS sn FROM ivs s WHERE mz_now() >= {base} + "
         "2500 * abs(coalesce(k, 0)) AND mz_now() < {base} + 15000 AND a IS DISTINCT FROM 2 GROUP BY k",
         "temporal filter (rows enter and leave) under GROUP BY"),
    View("iv_over_mv", "SELECT sum(c) AS total, count(*) AS groups, max(sn) AS msn FROM iv_agg",
         "materialized view over a materialized view",
         reference=f"SELECT sum(c) AS total, count(*) AS groups, max(sn) AS msn FROM ({_AGG}) AS iv_agg"),
    View("iv_over_view", "SELECT c, count(*) AS cnt, sum(n) AS sn FROM ivp_join GROUP BY c",
         "materialized view over a view"),
]


def setup_statements(seed: int) -> list[str]:
    """CREATE TABLE of the inputs with a few random rows each (NULLs and duplicates
    included) and CREATE VIEW of the plain views: what the views start from."""
    out = [f"CREATE TABLE {t} (" + ", ".join(f"{c} {typ}" for c, typ in cols) + ")" for t, cols in TABLES.items()]
    gen = StepGen(seed ^ 0x5EED)  # not the steps' stream
    out += [gen.insert(t) for t in TABLES for _ in range(2)]
    out += [f"CREATE VIEW {name} AS {sql}" for name, sql in PLAIN_VIEWS.items()]
    return out


@dataclass(frozen=True)
class Step:
    """One step: ``statements`` run in order, in one transaction block when ``block``
    (one timestamp), else each by itself (one timestamp each)."""

    kind: str
    statements: tuple[str, ...]
    block: bool = False

    @property
    def tables(self) -> frozenset[str]:
        """The tables the step writes."""
        return frozenset(written(s) for s in self.statements)


def written(statement: str) -> str:
    """The table an INSERT, UPDATE or DELETE of ``StepGen`` writes."""
    return re.match(r"(?:INSERT INTO|UPDATE|DELETE FROM) (\w+)", statement).group(1)


class StepGen:
    """Random steps over ``TABLES``; ``step()`` gives the next one."""

    def __init__(self, seed: int):
        self.rnd = random.Random(seed)
        #: tables emptied by the last step: the next step fills them again
        self._emptied: list[str] = []
        #: the kinds of the next steps (see ``KINDS``)
        self._kinds: list[str] = []

    def _row(self, table: str) -> str:
        return "(" + ", ".join(_literal(t, self.rnd.choice(_domain(t))) for _, t in TABLES[table]) + ")"

    def _rows(self, table: str) -> list[str]:
        """1 to 4 random rows, one of them sometimes twice."""
        rows = [self._row(table) for _ in range(self.rnd.randint(1, 4))]
        if self.rnd.random() < 0.4:
            rows.append(self.rnd.choice(rows))
        return rows

    def insert(self, table: str) -> str:
        """INSERT of 1 to 4 random rows, one of them sometimes twice."""
        return f"INSERT INTO {table} VALUES {', '.join(self._rows(table))}"

    def _refill(self, table: str) -> str:
        """One INSERT of two :meth:`insert`'s rows (2 to 10, duplicates among them)."""
        return f"INSERT INTO {table} VALUES {', '.join(self._rows(table) + self._rows(table))}"

    def _pred(self, table: str) -> str:
        col, typ = self.rnd.choice(TABLES[table])
        k = self.rnd.random()
        if k < 0.2:
            return f"{col} IS NULL"
        v = _literal(typ, self.rnd.choice([x for x in _domain(typ) if x is not None]))
        return f"{col} {self.rnd.choice(['=', '=', '<>', '<', '>'])} {v}"

    def update(self, table: str) -> str:
        col, typ = self.rnd.choice(TABLES[table])
        if typ == "int" and self.rnd.random() < 0.5:
            value = f"coalesce({col}, 0) + 1" if self.rnd.random() < 0.7 else "NULL"
        else:
            value = _literal(typ, self.rnd.choice(_domain(typ)))
        return f"UPDATE {table} SET {col} = {value} WHERE {self._pred(table)}"

    def delete(self, table: str) -> str:
        return f"DELETE FROM {table} WHERE {self._pred(table)}"

    def _single(self, table: str) -> str:
        k = self.rnd.random()
        return self.insert(table) if k < 0.5 else self.update(table) if k < 0.75 else self.delete(table)

    #: the kinds of step; every run of ``len(KINDS)`` steps (and a refill after each
    #: "delete all") has each of them once, in a random order
    KINDS = ("single", "single", "block", "burst", "delete all")

    def step(self) -> Step:
        r = self.rnd
        tables = list(TABLES)
        if self._emptied:
            emptied, self._emptied = self._emptied, []
            # one INSERT per table, of two inserts' rows: each timestamp a step writes at
            # costs a maintenance round of every view reading the table written
            return Step("refill", tuple(self._refill(t) for t in emptied))
        if not self._kinds:
            self._kinds = r.sample(self.KINDS, len(self.KINDS))
        kind = self._kinds.pop()
        if kind == "delete all":
            gone = r.sample(tables, len(tables))  # one at a time: each is empty at its own timestamp
            self._emptied = gone
            return Step("delete all", tuple(f"DELETE FROM {t}" for t in gone))
        if kind == "block":
            # per table one UPDATE or DELETE first (the server refuses one after a write
            # of the same table in the block), then INSERTs
            stmts = []
            for t in r.sample(tables, r.choice([2, 3])):
                if r.random() < 0.6:
                    stmts.append(self.update(t) if r.random() < 0.5 else self.delete(t))
                stmts += [self.insert(t) for _ in range(r.choice([0, 1, 1, 2]))]
            return Step("block", tuple(stmts), block=True)
        if kind == "burst":
            return Step("burst", tuple(self._single(r.choice(tables)) for _ in range(r.choice([2, 3]))))
        stmt = self._single(r.choice(tables))
        return Step(stmt.split()[0].lower(), (stmt,))


_NUMBER = re.compile(r"-?\d+\.\d+(e[-+]?\d+)?|-?\d+(\.\d*)?e[-+]?\d+", re.IGNORECASE)


def normalize(v: str | None, digits: int | None = None, places: int | None = None) -> str | None:
    """A value's text form with every number that has a fraction or an exponent (inside
    an array or JSON too) written by its value alone (trailing zeros of the scale
    dropped), first rounded to ``digits`` significant digits or to ``places`` decimal
    places when given. Text with no such number stays as it is."""
    if v is None:
        return None
    return _NUMBER.sub(lambda m: _by_value(m.group(0), digits, places), v)


def _by_value(text: str, digits: int | None, places: int | None) -> str:
    try:
        d = Decimal(text)
    except InvalidOperation:
        return text
    if not d.is_finite():
        return text
    if digits is not None and len(d.as_tuple().digits) > digits:
        d = Decimal(f"{d:.{digits - 1}e}")
    if places is not None:
        d = d.quantize(Decimal(1).scaleb(-places))
    return format(d.normalize(), "f")


def _sorted(rows) -> list[tuple]:
    return sorted(rows, key=lambda r: tuple((v is None, v or "") for v in r))


#: significant digits two answers of float or numeric arithmetic must agree to
DIGITS = 12
#: decimal places of a numeric the server stores in a view's column without a scale
#: (where an answer's value, not just its scale, may differ from the query's)
STORED_PLACES = 10


def compare(got: list[tuple], want: list[tuple]) -> str:
    """How two answers (rows of text forms, any order) relate: ``"equal"``; ``"scale"``
    when they are equal once each number is written by its value (a numeric shown with
    another scale); ``"rounding"`` when equal once rounded to ``DIGITS`` significant
    digits (stddev or avg kept as sums differ from a two-pass answer in the last
    digits: accepted); ``"scale"`` again when equal once rounded to ``STORED_PLACES``
    decimal places (a numeric stored with another scale loses digits); else
    ``"mismatch"``."""
    if _sorted(got) == _sorted(want):
        return "equal"
    for kind, digits, places in (("scale", None, None), ("rounding", DIGITS, None), ("scale", None, STORED_PLACES)):
        if _sorted(tuple(normalize(v, digits, places) for v in r) for r in got) == \
                _sorted(tuple(normalize(v, digits, places) for v in r) for r in want):
            return kind
    return "mismatch"
