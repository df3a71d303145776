"""Plan table DDL: ``CREATE TABLE`` column definitions and constraints, column
``DEFAULT`` expressions, ``serial``/identity columns and sequence options.

Supported: the column types of ``catalog.types``, ``NOT NULL``/``NULL``, ``DEFAULT``,
``serial``/``bigserial``/``smallserial``, ``GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY``,
and ``PRIMARY KEY``/``UNIQUE`` (accepted; they imply NOT NULL for primary keys and are
not enforced, as in Materialize, which does not enforce keys on tables either).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pglast import ast
from pglast.enums import ConstrType

from catalog.errors import (
    SqlError, DUPLICATE_COLUMN, FEATURE_NOT_SUPPORTED, GROUPING_ERROR, INVALID_PARAMETER_VALUE, SYNTAX_ERROR,
)
from catalog.sequences import TYPE_BOUNDS
from catalog.snapshot import CatalogSnapshot, Column
from catalog.types import INT2, INT4, INT8
from planner.assign import assign_expr
from planner.expr import ast_nodes, type_from_ast

#: serial pseudo-types and the integer type each is (PostgreSQL 8.1.4 "Serial Types")
SERIAL_TYPES = {"smallserial": INT2, "serial2": INT2, "serial": INT4, "serial4": INT4, "bigserial": INT8,
                "serial8": INT8}


@dataclass(frozen=True)
class OwnedSequence:
    """A sequence a ``serial`` or identity column makes and owns: ``column`` is its index
    in the table; ``options`` are its sequence options (``sequence_options``)."""

    column: int
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TableDef:
    """The columns of ``CREATE TABLE``, and the sequences its serial/identity columns
    need (their defaults, ``nextval('<name>'::regclass)``, are set once the sequence
    names are chosen, on the Coordinator: ``sqlfront.sequence.tables.create_table``)."""

    columns: tuple[Column, ...]
    owned: tuple[OwnedSequence, ...] = ()


def plan_columns(stmt: ast.CreateStmt) -> tuple[Column, ...]:
    """The columns of ``CREATE TABLE`` (``plan_table``'s, without checking defaults)."""
    return plan_table(stmt).columns


def plan_table(stmt: ast.CreateStmt, snap: CatalogSnapshot | None = None, ctx=None) -> TableDef:
    """The columns of ``CREATE TABLE``; with ``snap``, DEFAULT expressions are checked
    against it (``check_default``, in statement context ``ctx``).

    Raises:
        SqlError 42701 duplicate column, 42704 unknown type, 0A000 unsupported clauses,
        42601 two defaults for one column, and ``check_default``'s errors.
    """
    from pglast.stream import RawStream

    if stmt.inhRelations or stmt.partspec or stmt.ofTypename:
        raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE TABLE with INHERITS/PARTITION/OF is not supported")
    cols: list[Column] = []
    owned: list[OwnedSequence] = []
    pk_names: set[str] = set()
    for elt in stmt.tableElts or ():
        if isinstance(elt, ast.Constraint):
            if elt.contype == ConstrType.CONSTR_PRIMARY:
                pk_names.update(k.sval for k in elt.keys)
            elif elt.contype in (ConstrType.CONSTR_UNIQUE, ConstrType.CONSTR_CHECK, ConstrType.CONSTR_FOREIGN):
                pass  # accepted, not enforced
            continue
        if not isinstance(elt, ast.ColumnDef):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"table element {type(elt).__name__} is not supported")
        tname = elt.typeName.names[-1].sval if len(elt.typeName.names) == 1 else None
        serial = tname in SERIAL_TYPES and not elt.typeName.arrayBounds
        t = SERIAL_TYPES[tname] if serial else type_from_ast(elt.typeName)
        nullable = not serial
        default = None
        identity = None
        seq_options = None
        for c in elt.constraints or ():
            if c.contype == ConstrType.CONSTR_NOTNULL:
                nullable = False
            elif c.contype == ConstrType.CONSTR_PRIMARY:
                nullable = False
            elif c.contype == ConstrType.CONSTR_DEFAULT:
                if default is not None or serial or identity:
                    raise SqlError(SYNTAX_ERROR, f'multiple default values specified for column "{elt.colname}" '
                                                 f'of table "{stmt.relation.relname}"')
                default = RawStream()(c.raw_expr)
                if snap is not None:
                    check_default(snap, default, Column(elt.colname, t), ctx)
            elif c.contype == ConstrType.CONSTR_IDENTITY:
                if default is not None or serial or identity:
                    raise SqlError(SYNTAX_ERROR, f'multiple default values specified for column "{elt.colname}" '
                                                 f'of table "{stmt.relation.relname}"')
                if t.name not in TYPE_BOUNDS:
                    raise SqlError(INVALID_PARAMETER_VALUE, "identity column type must be smallint, integer, or bigint")
                identity = c.generated_when
                nullable = False
                seq_options = sequence_options(c.options or (), t.name)
            elif c.contype == ConstrType.CONSTR_GENERATED:
                raise SqlError(FEATURE_NOT_SUPPORTED, "generated columns are not supported")
            elif c.contype in (ConstrType.CONSTR_NULL, ConstrType.CONSTR_UNIQUE, ConstrType.CONSTR_CHECK,
                               ConstrType.CONSTR_FOREIGN):
                pass
            else:
                raise SqlError(FEATURE_NOT_SUPPORTED, f"column constraint {c.contype.name} is not supported")
        if any(x.name == elt.colname for x in cols):
            raise SqlError(DUPLICATE_COLUMN, f'column "{elt.colname}" specified more than once')
        if serial:
            seq_options = sequence_options((), t.name)
        if seq_options is not None:
            owned.append(OwnedSequence(len(cols), seq_options))
        cols.append(Column(elt.colname, t, nullable, default, identity))
    cols = [Column(c.name, c.type, False, c.default, c.identity) if c.name in pk_names else c for c in cols]
    return TableDef(tuple(cols), tuple(owned))


def check_default(snap: CatalogSnapshot, text: str, column: Column, ctx=None):
    """Plan DEFAULT expression ``text`` for ``column``; returns the planned expression,
    cast to the column's type (PostgreSQL "CREATE TABLE", DEFAULT: "any variable-free
    expression ... Subqueries and cross-references to other columns in the current table
    are not allowed"). ``ctx``: as QueryPlanner's.

    Raises:
        SqlError 0A000 "cannot use column reference in DEFAULT expression" (or
        subquery); 42803 for an aggregate; 42804 for a type with no assignment cast to
        the column's; the planner's errors (42883, 42P01 for nextval of no sequence)."""
    import pglast
    from planner import functions as fn
    from planner.query import QueryPlanner
    from planner.scope import Scope

    try:
        node = pglast.parse_sql(f"SELECT {text}")[0].stmt.targetList[0].val
    except pglast.parser.ParseError as e:
        raise SqlError(SYNTAX_ERROR, f"invalid DEFAULT expression: {e}") from None
    for n in ast_nodes(node):
        if isinstance(n, ast.ColumnRef):
            raise SqlError(FEATURE_NOT_SUPPORTED, "cannot use column reference in DEFAULT expression")
        if isinstance(n, ast.SubLink):
            raise SqlError(FEATURE_NOT_SUPPORTED, "cannot use subquery in DEFAULT expression")
        if isinstance(n, ast.FuncCall) and n.funcname[-1].sval in fn.AGGREGATES:
            raise SqlError(GROUPING_ERROR, "aggregate functions are not allowed in DEFAULT expressions")
    ep = QueryPlanner(snap, ctx=ctx).expr_planner(Scope(), agg_context="DEFAULT expressions")
    return assign_expr(ep.plan(node), column.type, column.name, what="default expression", fmt=ep.ctx.guard.text)


def _int(d: ast.DefElem) -> int:
    a = d.arg
    try:
        return a.ival if isinstance(a, ast.Integer) else int(a.fval if isinstance(a, ast.Float) else a.sval)
    except (ValueError, AttributeError, TypeError):
        raise SqlError(SYNTAX_ERROR, f"{d.defname} requires a numeric value") from None


def sequence_options(options, type_name: str = "int8", current: dict | None = None) -> dict:
    """The options of ``CREATE SEQUENCE`` / ``ALTER SEQUENCE`` / an identity column as
    a dict of ``catalog.snapshot.Sequence`` fields (plus ``owned_by`` as a name list or
    ``()`` for NONE, and ``restart`` for ALTER ... RESTART). ``current`` is the
    sequence's present fields, for ALTER. Defaults and checks are PostgreSQL's
    ("CREATE SEQUENCE"; sequence.c init_params).

    Raises:
        SqlError 42601 "conflicting or redundant options"; 22023 for a zero INCREMENT,
        MINVALUE not below MAXVALUE, START or RESTART outside them, a bound outside the
        type, CACHE below 1, or a type other than smallint/integer/bigint."""
    seen: dict[str, ast.DefElem] = {}
    for d in options:
        if d.defname in seen:
            raise SqlError(SYNTAX_ERROR, "conflicting or redundant options")
        seen[d.defname] = d
    cur = dict(current or {})
    out: dict = {}
    if "as" in seen:
        type_name = type_from_ast(seen["as"].arg).name
        if type_name not in TYPE_BOUNDS:
            raise SqlError(INVALID_PARAMETER_VALUE, "sequence type must be smallint, integer, or bigint")
    elif "type" in cur:
        type_name = cur["type"]
    lo, hi = TYPE_BOUNDS[type_name]
    inc = _int(seen["increment"]) if "increment" in seen else cur.get("increment", 1)
    if inc == 0:
        raise SqlError(INVALID_PARAMETER_VALUE, "INCREMENT must not be zero")
    def bound(key, default):
        d = seen.get(key)
        if d is not None:
            return _int(d) if d.arg is not None else default
        return cur.get(key, default)
    minv = bound("minvalue", 1 if inc > 0 else lo)
    maxv = bound("maxvalue", hi if inc > 0 else -1)
    tname = {"int2": "smallint", "int4": "integer", "int8": "bigint"}[type_name]
    for key, v in (("MINVALUE", minv), ("MAXVALUE", maxv)):
        if not lo <= v <= hi:
            raise SqlError(INVALID_PARAMETER_VALUE, f"{key} ({v}) is out of range for sequence data type {tname}")
    if minv >= maxv:
        raise SqlError(INVALID_PARAMETER_VALUE, f"MINVALUE ({minv}) must be less than MAXVALUE ({maxv})")
    start = _int(seen["start"]) if "start" in seen else cur.get("start", minv if inc > 0 else maxv)
    for key, v in (("START", start),) + ((("RESTART", _int(seen["restart"])),) if "restart" in seen
                                        and seen["restart"].arg is not None else ()):
        if v < minv:
            raise SqlError(INVALID_PARAMETER_VALUE, f"{key} value ({v}) cannot be less than MINVALUE ({minv})")
        if v > maxv:
            raise SqlError(INVALID_PARAMETER_VALUE, f"{key} value ({v}) cannot be greater than MAXVALUE ({maxv})")
    cache = _int(seen["cache"]) if "cache" in seen else cur.get("cache", 1)
    if cache < 1:
        raise SqlError(INVALID_PARAMETER_VALUE, f"CACHE ({cache}) must be greater than zero")
    cycle = bool(seen["cycle"].arg.boolval) if "cycle" in seen else cur.get("cycle", False)
    out.update(type=type_name, increment=inc, minvalue=minv, maxvalue=maxv, start=start, cache=cache, cycle=cycle)
    if "owned_by" in seen:
        names = [s.sval for s in seen["owned_by"].arg]
        out["owned_by"] = () if names == ["none"] else tuple(names)
    if "restart" in seen:
        out["restart"] = _int(seen["restart"]) if seen["restart"].arg is not None else start
    for k in seen:
        if k not in ("as", "increment", "minvalue", "maxvalue", "start", "cache", "cycle", "owned_by", "restart",
                     "sequence_name"):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"sequence option {k} is not supported")
    return out
