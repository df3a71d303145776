"""Name scopes: which columns a name can refer to, with PostgreSQL's resolution rules.

A scope lists the columns of the relation being planned (the FROM clause), each with
the range-table name it can be qualified by. Unqualified names must match exactly one
visible column (42702 otherwise); qualified names need their range-table entry
(42P01 ``missing FROM-clause entry``). Source: PostgreSQL 7.2 "Table Expressions".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from catalog.errors import SqlError, UNDEFINED_COLUMN, AMBIGUOUS_COLUMN, UNDEFINED_TABLE
from catalog.types import SqlType


@dataclass(frozen=True)
class ScopeItem:
    """One column: ``qualifier.name`` at position ``index`` of the relation.

    ``unqualified`` is False for the columns a ``USING`` or ``NATURAL`` join merged
    (PostgreSQL 7.2.1.1): only a qualified name reaches them and ``*`` skips them; the
    merged column stands for them. ``scalar`` marks the column of a function in FROM
    that returns a scalar: a whole-row reference to its FROM item is that value, not a
    one-field record (PostgreSQL 8.16.5, ``makeWholeRowVar``)."""

    qualifier: str | None
    name: str
    type: SqlType
    index: int
    unqualified: bool = True
    scalar: bool = False


@dataclass
class Scope:
    items: list[ScopeItem] = field(default_factory=list)

    def qualifiers(self) -> set[str]:
        return {i.qualifier for i in self.items if i.qualifier is not None}

    def resolve(self, qualifier: str | None, name: str) -> ScopeItem:
        """The column ``[qualifier.]name``.

        Raises:
            SqlError 42703 (no such column), 42702 (ambiguous), 42P01 (unknown qualifier).
        """
        if qualifier is not None:
            if qualifier not in self.qualifiers():
                raise SqlError(UNDEFINED_TABLE, f'missing FROM-clause entry for table "{qualifier}"')
            hits = [i for i in self.items if i.qualifier == qualifier and i.name == name]
            if not hits:
                raise SqlError(UNDEFINED_COLUMN, f'column {qualifier}.{name} does not exist')
        else:
            hits = [i for i in self.items if i.name == name and i.unqualified]
            if not hits:
                raise SqlError(UNDEFINED_COLUMN, f'column "{name}" does not exist')
        if len(hits) > 1:
            shown = f"{qualifier}.{name}" if qualifier else name
            raise SqlError(AMBIGUOUS_COLUMN, f'column reference "{shown}" is ambiguous')
        return hits[0]

    def star(self, qualifier: str | None = None) -> list[ScopeItem]:
        """Columns ``*`` (or ``qualifier.*``) expands to, in order."""
        if qualifier is not None:
            if qualifier not in self.qualifiers():
                raise SqlError(UNDEFINED_TABLE, f'missing FROM-clause entry for table "{qualifier}"')
            return [i for i in self.items if i.qualifier == qualifier]
        return [i for i in self.items if i.unqualified]

    @property
    def width(self) -> int:
        """Columns of the relation: items may share a column (a USING join's merged
        column is its left one's when their types agree), each column has one."""
        return max((i.index for i in self.items), default=-1) + 1

    def concat(self, other: "Scope") -> "Scope":
        """The scope of a join: this scope's columns, then ``other``'s shifted past them."""
        n = self.width
        return Scope(self.items + [replace(i, index=i.index + n) for i in other.items])
