"""Decorrelation (the first optimizer pass): rewrite Subquery expressions into joins and
aggregates, so the plan Spark sees is plain relational algebra.

The planner leaves every subquery in the expression that uses it (Materialize's HIR);
``decorrelate`` lowers them, innermost first, at the Filter, Project, Reduce or inner
Join that holds them. A Filter's conjuncts without subqueries are applied first, so the
outer-key relation ``D`` below is taken from the already filtered input (after join
planning: the already joined one), never from a raw product.

For an operator over input ``R`` whose expressions contain a subquery ``S``:

1. ``D`` = the distinct values of the columns of ``R`` that ``S`` references (plus, for
   ``x op ANY (S)``, the value of ``x``).
2. ``S`` is *applied* to ``D``: every node of ``S`` that depends on an outer column is
   rewritten to carry ``D``'s columns along (joins with ``D`` at the leaves, ``D``'s
   columns added to projections and grouping keys), so ``S'`` computes ``S`` for every
   row of ``D`` at once. A global aggregate keeps one row per ``D`` row even over no
   input (the "count bug"): it is left-joined back to ``D``, count defaulting to 0.
3. ``S'`` is reduced to one row per ``D`` row (the scalar value with a cardinality
   check, 21000; whether a row exists; or the ANY/ALL truth value in three-valued
   logic) and left-joined to ``R`` on null-safe equality of ``D``'s columns.

This is the approach of Galindo-Legaria & Joshi ("Orthogonal optimization of
subqueries and aggregation", SIGMOD 2001) and of Materialize's decorrelation.
"""

from __future__ import annotations

from dataclasses import replace

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED
from catalog.snapshot import Table
from catalog.types import BOOL, INT8
from planner.consteval import is_volatile
from planner.optimize.nullability import non_null_columns
from planner.plan import (
    Distinct, Filter, Join, LateralJoin, Limit, OrderBy, Project, Reduce, SetOp, Unnest, Window, WindowCall, inputs,
    filtered, map_inputs, map_plan_exprs, relations_read,
)
from planner.scalar import (
    TRUE, AggCall, Call, Case, Cast, ColRef, Literal, OuterRef, Subquery, conjoin, conjuncts, has_subquery, map_expr,
    shift_columns, walk,
)


def _and(conds: list):
    return conjoin(conds) or TRUE


# -- finding outer references -----------------------------------------------------------


def _node_exprs(p) -> list:
    if isinstance(p, Filter):
        return [p.predicate]
    if isinstance(p, Project):
        return list(p.exprs)
    if isinstance(p, Reduce):
        return list(p.keys) + [a.arg for a in p.aggregates if a.arg is not None]
    if isinstance(p, Join):
        return [p.on] if p.on is not None else []
    return []


def outer_columns(p, depth: int = 1) -> set[int]:
    """Indexes of the enclosing query's columns that plan ``p`` references at ``depth``."""
    out: set[int] = set()
    for e in _node_exprs(p):
        for n in walk(e):
            if isinstance(n, OuterRef) and n.depth == depth:
                out.add(n.index)
    for i in inputs(p):
        out |= outer_columns(i, depth)
    return out


def has_outer(p) -> bool:
    return bool(outer_columns(p))


def _closer(p):
    """Plan ``p`` of a subquery moved into the query it sits in, where it reads no column
    of that query: its references to queries further out are one level closer (a
    subquery whose own subquery reads the outermost query's row, as in ``SELECT (SELECT
    (SELECT t.x)) FROM t``, reads it at depth 1 once inlined)."""
    return map_plan_exprs(p, lambda n: OuterRef(n.depth - 1, n.index, n.type)
                          if isinstance(n, OuterRef) and n.depth > 1 else n)


# -- applying a subquery to D -----------------------------------------------------------


class _Apply:
    """Rewrites a subquery plan to compute it for every row of ``D`` (columns prepended)."""

    def __init__(self, d_plan, mapping: dict[int, int], pad_global: bool = True):
        self.d = d_plan
        #: give a global aggregate its row for D rows with no input (False: the caller
        #: knows a missing row means the same as that row)
        self.pad_global = pad_global
        self.width = len(d_plan.columns)
        self.mapping = mapping  # outer column index -> D column index

    def expr(self, e, shift: int):
        return self._rewrite(e, lambda i: i + shift)

    def _rewrite(self, e, move):
        """``e`` with ColRef i at ``move(i)``, depth-1 OuterRefs pointing into D, and
        deeper OuterRefs one level closer."""
        def f(n):
            if isinstance(n, ColRef):
                return ColRef(move(n.index), n.type)
            if isinstance(n, OuterRef):
                if n.depth == 1:
                    return ColRef(self.mapping[n.index], n.type)
                return OuterRef(n.depth - 1, n.index, n.type)
            return n

        return map_expr(e, f)

    def d_refs(self, offset: int = 0) -> list:
        return [ColRef(offset + i, t) for i, (_, t) in enumerate(self.d.columns)]

    def d_match(self, left_offset: int, right_offset: int):
        return _and([Call("is_not_distinct", (ColRef(left_offset + i, t), ColRef(right_offset + i, t)), BOOL)
                     for i, (_, t) in enumerate(self.d.columns)])

    def apply(self, p):
        d = self.width
        if not has_outer(p):
            return Join(self.d, _closer(p), "cross", None)
        if isinstance(p, Filter):
            return Filter(self.apply(p.input), self.expr(p.predicate, d))
        if isinstance(p, Project):
            return Project(self.apply(p.input), tuple(self.d_refs()) + tuple(self.expr(e, d) for e in p.exprs),
                           tuple(n for n, _ in self.d.columns) + p.names)
        if isinstance(p, Distinct):
            return Distinct(self.apply(p.input))
        if isinstance(p, Unnest):
            return Unnest(self.apply(p.input), tuple(i + d for i in p.arrays), p.kinds)
        if isinstance(p, Window):  # computed per row of D: D's columns join the partition key
            calls = [c.map_exprs(lambda e: self.expr(e, d)) for c in p.calls]
            return Window(self.apply(p.input), tuple(replace(c, partition=tuple(self.d_refs()) + c.partition)
                                                     for c in calls))
        if isinstance(p, OrderBy):
            from planner.plan import SortKey

            return OrderBy(self.apply(p.input), tuple(SortKey(k.index + d, k.descending, k.nulls_first) for k in p.keys))
        if isinstance(p, Reduce):
            inner = self.apply(p.input)
            keys = tuple(self.d_refs()) + tuple(self.expr(k, d) for k in p.keys)
            aggs = tuple(a.map_exprs(lambda e: self.expr(e, d)) for a in p.aggregates)
            red = Reduce(inner, keys, aggs)
            if p.keys or not self.pad_global:
                return red
            # One row per D row even where the input is empty (count = 0, others NULL).
            joined = Join(self.d, red, "left", self.d_match(0, d))
            exprs = self.d_refs()
            for j, a in enumerate(aggs):
                c = ColRef(2 * d + j, a.type)
                exprs.append(Call("coalesce", (c, Literal(0, INT8)), INT8) if a.func in ("count", "count_star") else c)
            return Project(joined, tuple(exprs), tuple(n for n, _ in red.columns))
        if isinstance(p, Join):
            nl = len(p.left.columns)
            if p.kind in ("inner", "cross", "left", "semi", "anti") and not has_outer(p.right):
                left = self.apply(p.left)
                on = self.expr(p.on, d) if p.on is not None else None
                return Join(left, _closer(p.right), p.kind, on)
            left, right = self.apply(p.left), self.apply(p.right)
            # left: D ++ L, right: D ++ R; join on D, then drop the right copy of D.
            on = _and([self.d_match(0, d + nl), self._join_on(p.on, d, nl)])
            if p.kind in ("semi", "anti"):
                return Join(left, right, p.kind, on)  # D ++ L already
            kind = "inner" if p.kind == "cross" else p.kind
            j = Join(left, right, kind, on)
            d_cols = [Call("coalesce", (ColRef(i, t), ColRef(d + nl + i, t)), t) if p.kind in ("right", "full")
                      else ColRef(i, t) for i, (_, t) in enumerate(self.d.columns)]
            rest = [ColRef(d + i, t) for i, (_, t) in enumerate(p.left.columns)] + \
                   [ColRef(2 * d + nl + i, t) for i, (_, t) in enumerate(p.right.columns)]
            return Project(j, tuple(d_cols + rest), tuple(n for n, _ in self.d.columns + p.left.columns + p.right.columns))
        if isinstance(p, SetOp):
            return SetOp(p.op, self.apply(p.left), self.apply(p.right), p.all)
        if isinstance(p, Limit):
            # Per D row: number the rows in the input's order, keep offset < n <= offset + limit.
            inner = self.apply(p.input)
            order = ()
            if isinstance(inner, OrderBy):
                cols = inner.columns
                order = tuple((ColRef(k.index, cols[k.index][1]), k.descending, k.nulls_first) for k in inner.keys)
                inner = inner.input
            w = len(inner.columns)
            rn = ColRef(w, INT8)
            numbered = Window(inner, (WindowCall("row_number", (), tuple(self.d_refs()), order, INT8),))
            conds = [Call("gt", (rn, Literal(p.offset, INT8)), BOOL)]
            if p.limit is not None:
                conds.append(Call("le", (rn, Literal(p.offset + p.limit, INT8)), BOOL))
            return _narrow(Filter(numbered, _and(conds)), w)
        raise SqlError(FEATURE_NOT_SUPPORTED, f"cannot decorrelate {type(p).__name__}")

    def _join_on(self, on, d, nl):
        if on is None:
            return TRUE
        # left columns move past D; right columns past both copies of D
        return self._rewrite(on, lambda i: i + d if i < nl else i + 2 * d)


#: functions that return NULL when any argument is NULL
_STRICT = frozenset(("add", "sub", "mul", "div", "mod", "neg", "eq", "ne", "lt", "le", "gt", "ge"))


def _one_row_strict(plan) -> bool:
    """True when ``plan`` is Projects and Filters over a global Reduce without count, and
    its first column is NULL whenever the aggregates are: then, per D row, the subquery
    has at most one row, and a D row whose input is empty may simply have none (its value
    is NULL either way), so neither the count-bug padding nor the cardinality check is
    needed. This is the common ``x < (SELECT agg(...) WHERE inner = outer)``."""
    body, value = plan, ColRef(0, plan.columns[0][1]) if plan.columns else None
    while isinstance(body, (Project, Filter)):
        if isinstance(body, Project):
            exprs = body.exprs
            value = map_expr(value, lambda n: exprs[n.index] if isinstance(n, ColRef) else n)
        body = body.input
    if not (isinstance(body, Reduce) and not body.keys and value is not None):
        return False
    if any(a.func in ("count", "count_star") for a in body.aggregates):
        return False

    def strict(e) -> bool:  # NULL when every aggregate column is NULL
        if isinstance(e, ColRef):
            return True
        if isinstance(e, Cast):
            return strict(e.expr)
        return isinstance(e, Call) and e.func in _STRICT and any(strict(a) for a in e.args) and all(
            strict(a) or isinstance(a, Literal) for a in e.args)

    return strict(value)


def _at_most_one_row(plan) -> bool:
    """True when ``plan`` is Projects and Filters over a global Reduce (or a LIMIT of at
    most 1, any OFFSET): it has at most one row, so an uncorrelated scalar subquery over it needs no
    cardinality check (21000 can never be raised), and Spark is spared an aggregate."""
    while isinstance(plan, (Project, Filter)):
        plan = plan.input
    if isinstance(plan, Limit):
        return plan.limit is not None and plan.limit <= 1
    return isinstance(plan, Reduce) and not plan.keys


# -- the rewrite over one operator -------------------------------------------------------


def lower_subqueries(plan, exprs: list):
    """Replace every Subquery in ``exprs`` (over ``plan``) by a column of an extended input.

    Returns ``(new_plan, new_exprs)``: ``new_plan`` has ``plan``'s columns first, then
    columns added for the subqueries; ``new_exprs`` reference them."""
    if not any(isinstance(n, Subquery) for e in exprs for n in walk(e)):
        return plan, exprs
    state = {"plan": plan}

    def f(n):
        if isinstance(n, Subquery):
            return _lower_one(state, n)
        return n

    new = [map_expr(e, f) for e in exprs]
    return state["plan"], new


def _lower_one(state, sq: Subquery):
    input_plan = state["plan"]
    w = len(input_plan.columns)
    corr = sorted(outer_columns(sq.plan))
    cols = [ColRef(c, input_plan.columns[c][1]) for c in corr]
    if sq.kind in ("any", "all"):
        # The tested value is correlated too: add it as a column of the input.
        x = sq.test
        input_plan = Project(input_plan, tuple(ColRef(i, t) for i, (_, t) in enumerate(input_plan.columns)) + (x,),
                             tuple(n for n, _ in input_plan.columns) + ("?x?",))
        cols.append(ColRef(w, x.type))
        w += 1
    d_plan = Distinct(_key_source(input_plan, cols))
    d = len(cols)
    mapping = {c: i for i, c in enumerate(corr)}
    single = bool(d) and sq.kind == "scalar" and _one_row_strict(sq.plan)
    applied = _Apply(d_plan, mapping, pad_global=not single).apply(sq.plan) if d else _closer(sq.plan)  # D ++ S
    s0 = ColRef(d, sq.plan.columns[0][1]) if sq.plan.columns else None
    d_refs = [ColRef(i, t) for i, (_, t) in enumerate(d_plan.columns)]
    if not d and sq.kind == "scalar" and _at_most_one_row(sq.plan):
        result = Project(applied, (s0,), ("?v?",))
        pick = lambda c: c  # noqa: E731
    elif single:  # at most one row per D row: no cardinality check
        result = Project(applied, tuple(d_refs) + (s0,), tuple(f"?d{i}?" for i in range(d)) + ("?v?",))
        pick = lambda c: c  # noqa: E731
    elif sq.kind == "scalar":
        red = Reduce(applied, tuple(d_refs), (AggCall("count_star", None, False, INT8), AggCall("min", s0, False, s0.type)))
        value = Call("cardinality_check", (ColRef(d, INT8), ColRef(d + 1, s0.type)), s0.type)
        result = Project(red, tuple(d_refs) + (value,), tuple(f"?d{i}?" for i in range(d)) + ("?v?",))
        pick = lambda c: c  # noqa: E731
    elif sq.kind == "array":
        red = Reduce(applied, tuple(d_refs), (AggCall("array_agg", s0, False, sq.type),))
        result = Project(red, tuple(d_refs) + (ColRef(d, sq.type),), tuple(f"?d{i}?" for i in range(d)) + ("?v?",))
        pick = lambda c: Call("coalesce", (c, Literal([], sq.type)), sq.type)  # noqa: E731 ARRAY() of no rows is {}
    elif sq.kind == "exists":
        result = Project(Distinct(Project(applied, tuple(d_refs), tuple(f"?d{i}?" for i in range(d)))),
                         tuple(d_refs) + (TRUE,), tuple(f"?d{i}?" for i in range(d)) + ("?v?",))
        pick = lambda c: Call("coalesce", (c, Literal(False, BOOL)), BOOL)  # noqa: E731
    else:
        xcol = ColRef(d - 1, sq.test.type)
        pred = Call(sq.func, (xcol, s0), BOOL)
        if sq.kind == "all":
            pred = Call("not", (pred,), BOOL)
        filt = Filter(applied, Call("is_not_false", (pred,), BOOL))
        red = Reduce(filt, tuple(d_refs), (AggCall("bool_or", pred, False, BOOL),))
        # A row exists only where some comparison was TRUE or NULL: code 1 = TRUE, 0 = NULL;
        # no row at all (after the left join: NULL) means FALSE.
        code = Case(((Call("is_true", (ColRef(d, BOOL),), BOOL), Literal(1, INT8)),), Literal(0, INT8), INT8)
        result = Project(red, tuple(d_refs) + (code,), tuple(f"?d{i}?" for i in range(d)) + ("?v?",))

        def pick(c):
            v = Case(((Call("eq", (c, Literal(1, INT8)), BOOL), Literal(True, BOOL)),
                      (Call("eq", (c, Literal(0, INT8)), BOOL), Literal(None, BOOL))), Literal(False, BOOL), BOOL)
            return Call("not", (v,), BOOL) if sq.kind == "all" else v
    if d == 0:
        joined = Join(input_plan, result, "left", TRUE)
    else:
        # NOT NULL keys match on plain equality: hash keys Spark can use as they are
        nn = non_null_columns(input_plan)
        on = _and([Call("eq" if c.index in nn else "is_not_distinct", (ColRef(c.index, c.type), ColRef(w + i, c.type)),
                        BOOL) for i, c in enumerate(cols)])
        joined = Join(input_plan, result, "left", on)
    state["plan"] = joined
    value_type = result.columns[-1][1]
    return pick(ColRef(w + d, value_type))


def _key_source(input_plan, cols: list):
    """The projection onto ``cols`` (named ``?d0?``, ...) of which ``D`` is the distinct
    rows: over ``input_plan`` itself, or, when ``input_plan`` is a filtered tree of inner
    joins and every column of ``cols`` comes from one restricted input of that tree, over
    that input with the conjuncts that read only it.

    The second is a superset of ``D`` (dropping join partners and conjuncts can only add
    key values), which is enough: each row of ``D`` is computed on its own, and the left
    join back to ``R`` picks the rows of the keys ``R`` has. It saves running the whole
    outer join a second time for the keys (TPC-H Q2 and Q17: the keys are the filtered
    ``part`` rows, not ``part`` joined with ``partsupp``, ``supplier``, ``nation`` and
    ``region``). An input counts as restricted when a conjunct reads only it or it is not
    a plain scan; an unrestricted one (all of ``lineitem``) keeps the exact ``D``."""
    names = tuple(f"?d{i}?" for i in range(len(cols)))
    exact = Project(input_plan, tuple(cols), names)
    conds, node = [], input_plan
    if isinstance(node, Filter):
        conds, node = list(conjuncts(node.predicate)), node.input
    leaves: list = []  # (offset of its first column in input_plan, plan)

    def flatten(n, off: int):
        if isinstance(n, Join) and n.kind in ("inner", "cross"):
            if n.on is not None:
                conds.extend(shift_columns(c, off) for c in conjuncts(n.on))
            flatten(n.left, off)
            flatten(n.right, off + len(n.left.columns))
        else:
            leaves.append((off, n))

    flatten(node, 0)
    if len(leaves) < 2:
        return exact
    wanted = {c.index for c in cols}
    for off, leaf in leaves:
        width = len(leaf.columns)
        if not all(off <= i < off + width for i in wanted):
            continue
        own = [c for c in conds
               if all(off <= n.index < off + width for n in walk(c) if isinstance(n, ColRef))
               and not any(isinstance(n, (Subquery, OuterRef)) for n in walk(c)) and not is_volatile(c)]
        if not own and _plain_scan(leaf):
            return exact
        source = filtered(leaf, [shift_columns(c, -off) for c in own])
        return Project(source, tuple(ColRef(c.index - off, c.type) for c in cols), names)
    return exact


def _plain_scan(p) -> bool:
    """True for a scan of a relation, possibly under projections: it restricts nothing."""
    while isinstance(p, Project):
        p = p.input
    return not inputs(p)


# -- the pass ---------------------------------------------------------------------------


def decorrelate(plan):
    """The plan with every Subquery expression lowered to joins (``lower_subqueries``),
    innermost subqueries first.

    A plan that reads only system tables (it runs in ``planner.interpret``) keeps its
    subqueries nested when one of them cannot be decorrelated (LIMIT in a correlated
    subquery, ...): the interpreter evaluates them row by row.

    Raises:
        SqlError 0A000 for a subquery that cannot be decorrelated in a plan that reads
        user tables, or a subquery in the ON clause of an outer join."""
    if not _any_subquery(plan) and not _has_lateral(plan):
        return plan
    try:
        return _decorrelate(plan)
    except SqlError as e:
        if e.sqlstate == FEATURE_NOT_SUPPORTED and not _reads_user_table(plan) and not _has_lateral(plan):
            return plan
        raise


def _has_lateral(plan) -> bool:
    return isinstance(plan, LateralJoin) or any(_has_lateral(i) for i in inputs(plan))


def _any_subquery(plan) -> bool:
    found = []
    map_plan_exprs(plan, lambda n: found.append(n) or n if isinstance(n, Subquery) else n)
    return bool(found)


def _reads_user_table(plan) -> bool:
    """True when ``plan`` or a subquery of it reads a user table's shard."""
    if any(isinstance(r, Table) for r in relations_read(plan)):
        return True
    found = []
    map_plan_exprs(plan, lambda n: found.append(n) or n if isinstance(n, Subquery) and _reads_user_table(n.plan)
                   else n)
    return bool(found)


def _inner_first(e):
    """``e`` with the plan of each of its subqueries decorrelated."""
    return map_expr(e, lambda n: replace(n, plan=_decorrelate(n.plan)) if isinstance(n, Subquery) else n)


def _narrow(plan, width: int):
    if len(plan.columns) == width:
        return plan
    return Project(plan, tuple(ColRef(i, t) for i, (_, t) in enumerate(plan.columns[:width])),
                   tuple(n for n, _ in plan.columns[:width]))


def _decorrelate(p):
    if isinstance(p, Filter) and isinstance(p.input, LateralJoin):
        p = _filter_before_lateral(p)
    p = map_inputs(p, _decorrelate)
    if isinstance(p, LateralJoin):
        p = _lateral(p)
    if isinstance(p, Filter) and has_subquery(p.predicate):
        conds = conjuncts(p.predicate)
        plain = [c for c in conds if not has_subquery(c)]
        rest = [_inner_first(c) for c in conds if has_subquery(c)]
        base = filtered(p.input, plain)
        plan, (pred,) = lower_subqueries(base, [conjoin(rest)])
        return _narrow(Filter(plan, pred), len(p.columns))
    if isinstance(p, Project) and any(has_subquery(e) for e in p.exprs):
        plan, exprs = lower_subqueries(p.input, [_inner_first(e) for e in p.exprs])
        return Project(plan, tuple(exprs), p.names)
    if isinstance(p, Reduce) and any(has_subquery(e) for e in _reduce_exprs(p)):
        exprs = [_inner_first(e) for e in _reduce_exprs(p)]
        plan, exprs = lower_subqueries(p.input, exprs)
        keys, args = exprs[:len(p.keys)], iter(exprs[len(p.keys):])
        aggs = tuple(replace(a, arg=next(args)) if a.arg is not None else a for a in p.aggregates)
        return Reduce(plan, tuple(keys), aggs)
    if isinstance(p, Join) and p.on is not None and has_subquery(p.on):
        if p.kind not in ("inner", "cross"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "subqueries in the ON clause of an outer join are not supported")
        product = Join(p.left, p.right, "cross", None)
        plan, (on,) = lower_subqueries(product, [_inner_first(p.on)])
        return _narrow(Filter(plan, on), len(p.columns))
    for e in _other_exprs(p):
        if has_subquery(e):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"subqueries in {type(p).__name__} are not supported")
    return p


def _filter_before_lateral(p: Filter):
    """A WHERE over ``left JOIN LATERAL right``: its conjuncts over ``left`` alone filter
    ``left`` first, so ``right`` runs only for the rows that stay (as PostgreSQL's
    planner does; the functions of ``right`` never see rows the WHERE drops)."""
    j = p.input
    w = len(j.left.columns)
    early, late = [], []
    for c in conjuncts(p.predicate):
        refs = [n.index for n in walk(c) if isinstance(n, ColRef)]
        (early if not has_subquery(c) and all(i < w for i in refs) else late).append(c)
    if not early:
        return p
    j = replace(j, left=filtered(j.left, early))
    return filtered(j, late)


def _lateral(p: LateralJoin):
    """``left JOIN LATERAL right``: ``right`` applied to the distinct values D of the
    columns of ``left`` it reads (``_Apply``), joined back to ``left`` on D (NULLs equal)."""
    left, right = p.left, p.right
    w = len(left.columns)
    corr = sorted(outer_columns(right))
    kind = "inner" if p.kind == "cross" else p.kind
    if not corr:
        right = _closer(right)
        return Join(left, right, p.kind if p.on is not None or p.kind == "cross" else kind,
                    p.on if p.on is not None or p.kind == "cross" else TRUE)
    cols = [ColRef(c, left.columns[c][1]) for c in corr]
    d_plan = Distinct(Project(left, tuple(cols), tuple(f"?d{i}?" for i in range(len(cols)))))
    d = len(cols)
    applied = _Apply(d_plan, {c: i for i, c in enumerate(corr)}).apply(right)  # D ++ right
    on = [Call("is_not_distinct", (c, ColRef(w + i, c.type)), BOOL) for i, c in enumerate(cols)]
    if p.on is not None:
        on.append(map_expr(p.on, lambda n: ColRef(n.index + d, n.type) if isinstance(n, ColRef) and n.index >= w else n))
    joined = Join(left, applied, kind, _and(on))
    keep = [ColRef(i, t) for i, (_, t) in enumerate(left.columns)] + \
           [ColRef(w + d + i, t) for i, (_, t) in enumerate(right.columns)]
    return Project(joined, tuple(keep), tuple(n for n, _ in left.columns + right.columns))


def _reduce_exprs(p: Reduce) -> list:
    # only an aggregate's argument may hold a subquery (ORDER BY inside aggregates may not)
    return list(p.keys) + [a.arg for a in p.aggregates if a.arg is not None]


def _other_exprs(p) -> list:
    if isinstance(p, Window):
        return [e for c in p.calls for e in (*c.args, *c.partition, *(o for o, _, _ in c.order))]
    return []
