"""Comments (PostgreSQL's and Materialize's "COMMENT ON"): both halves of the statement
(``sequence_comment`` reads it, :func:`comment_on` builds the catalog transaction). A
comment is shown by obj_description/col_description, psql's ``\\d+`` and
``mz_internal.mz_comments``; it goes with its object (``catalog.durable``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pglast import ast

from catalog import durable
from catalog.errors import (
    SqlError, FEATURE_NOT_SUPPORTED, INVALID_SCHEMA_NAME, SYNTAX_ERROR, UNDEFINED_COLUMN, UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
)
from catalog.snapshot import SYSTEM_SCHEMAS, CatalogSnapshot, Index, MaterializedView, Sequence, Table, View
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.objects import find_item
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session


def comment_on(kind: str, names: list[str], text: str | None):
    """COMMENT ON TABLE | VIEW | SEQUENCE | INDEX | COLUMN | SCHEMA name IS 'text' | NULL
    (PostgreSQL's "COMMENT"; Materialize's too). ``kind`` is the object type's name
    (``TABLE``, ``COLUMN``, ...); ``names`` its qualified name's parts (a column's last).

    Raises (from ``build``): 42P01 / 42703 / 3F000 for what does not exist; 42809 for
    an object of another kind; 0A000 for other kinds and system schemas."""
    kinds = {"TABLE": (Table,), "VIEW": (View,), "SEQUENCE": (Sequence,), "INDEX": (Index,),
             "MATVIEW": (MaterializedView,)}

    def build(snap: CatalogSnapshot, ids) -> list:
        if kind == "SCHEMA":
            sc = snap.schema_by_name(names[-1])
            if sc is None:
                if names[-1] in SYSTEM_SCHEMAS:
                    raise SqlError(FEATURE_NOT_SUPPORTED, f"cannot comment on system schema '{names[-1]}'")
                raise SqlError(INVALID_SCHEMA_NAME, f"unknown schema '{names[-1]}'")
            return [durable.SetComment(sc.id, 0, text)]
        if kind == "COLUMN":
            if len(names) < 2:
                raise SqlError(SYNTAX_ERROR, "column name must be qualified")
            schema, rel_name, col = (names[-3] if len(names) > 2 else None), names[-2], names[-1]
        elif kind in kinds:
            schema, rel_name, col = (names[-2] if len(names) > 1 else None), names[-1], None
        else:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"COMMENT ON {kind} is not supported")
        obj = find_item(snap, schema, rel_name)
        if obj is None:
            raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{rel_name}'")
        if getattr(obj, "builtin", False):
            raise SqlError(WRONG_OBJECT_TYPE, f'cannot comment on system object "{rel_name}"')
        if col is None:
            if not isinstance(obj, kinds[kind]):
                raise SqlError(WRONG_OBJECT_TYPE, f'"{rel_name}" is not a {kind.lower()}')
            return [durable.SetComment(obj.id, 0, text)]
        names_ = [c.name for c in getattr(obj, "columns", ())]
        if col not in names_:
            raise SqlError(UNDEFINED_COLUMN, f'column "{col}" of relation "{rel_name}" does not exist')
        return [durable.SetComment(obj.id, names_.index(col) + 1, text)]

    return build



def sequence_comment(s: Session, stmt: ast.CommentStmt, sql: str, params) -> Result:
    """COMMENT ON TABLE | VIEW | SEQUENCE | INDEX | COLUMN | SCHEMA ... IS 'text' | NULL,
    shown by obj_description/col_description and psql's ``\\d+``."""
    obj = stmt.object
    names = [obj.sval] if isinstance(obj, ast.String) else [p.sval for p in obj]
    kind = stmt.objtype.name.removeprefix("OBJECT_")
    run(s, comment_on(kind, names, stmt.comment))
    return Result("COMMENT")

