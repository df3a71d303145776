"""Plan table DDL: ``CREATE TABLE`` column definitions and constraints.

Supported: the column types of ``catalog.types``, ``NOT NULL``/``NULL``, and
``PRIMARY KEY``/``UNIQUE`` (accepted; they imply NOT NULL for primary keys and are not
enforced, as in Materialize, which does not enforce keys on tables either).
"""

from __future__ import annotations

from pglast import ast
from pglast.enums import ConstrType

from catalog.errors import SqlError, DUPLICATE_COLUMN, FEATURE_NOT_SUPPORTED
from catalog.snapshot import Column
from planner.expr import type_from_ast


def plan_columns(stmt: ast.CreateStmt) -> tuple[Column, ...]:
    """The columns of ``CREATE TABLE``.

    Raises:
        SqlError 42701 duplicate column, 42704 unknown type, 0A000 unsupported clauses.
    """
    if stmt.inhRelations or stmt.partspec or stmt.ofTypename:
        raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE TABLE with INHERITS/PARTITION/OF is not supported")
    cols: list[Column] = []
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
        t, _ = type_from_ast(elt.typeName)
        nullable = True
        for c in elt.constraints or ():
            if c.contype == ConstrType.CONSTR_NOTNULL:
                nullable = False
            elif c.contype == ConstrType.CONSTR_PRIMARY:
                nullable = False
            elif c.contype == ConstrType.CONSTR_DEFAULT:
                raise SqlError(FEATURE_NOT_SUPPORTED, "DEFAULT values are not supported yet")
            elif c.contype in (ConstrType.CONSTR_NULL, ConstrType.CONSTR_UNIQUE, ConstrType.CONSTR_CHECK,
                               ConstrType.CONSTR_FOREIGN):
                pass
            else:
                raise SqlError(FEATURE_NOT_SUPPORTED, f"column constraint {c.contype.name} is not supported")
        if any(x.name == elt.colname for x in cols):
            raise SqlError(DUPLICATE_COLUMN, f'column "{elt.colname}" specified more than once')
        cols.append(Column(elt.colname, t, nullable))
    cols = [Column(c.name, c.type, False) if c.name in pk_names else c for c in cols]
    return tuple(cols)
