"""What sequencing a statement returns to the wire layer (Result, CopyIn, CopyOut) and
the conversions between Arrow tables and rows of Python values."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from catalog.snapshot import Table
from catalog.types import Interval, SqlType, arrow_schema


@dataclass
class Result:
    """One statement's outcome: a command tag and, for row-returning statements, the
    columns (name, SqlType) and rows (tuples of Python values)."""

    tag: str
    columns: list[tuple[str, SqlType]] | None = None
    rows: list[tuple] = field(default_factory=list)


@dataclass
class CopyIn:
    """``COPY t FROM STDIN``: the wire layer collects the data, then calls ``finish``."""

    table: Table
    fmt: str
    delimiter: str | None
    null: str | None
    header: bool
    #: positions of the columns the data carries (a COPY column list), None for all
    positions: tuple[int, ...] | None = None
    tag: str = "COPY"
    columns: None = None


@dataclass
class CopyOut:
    """``COPY (query) TO STDOUT``: rows the wire layer sends as CopyData."""

    columns: list
    rows: list
    #: text, csv or binary, with the options that shape them
    fmt: str = "text"
    delimiter: str | None = None
    null: str | None = None
    header: bool = False
    tag: str = "COPY"


def arrow_rows(t: pa.Table) -> list[tuple]:
    """Rows of an Arrow table as tuples of Python values."""
    if t.num_columns == 0:
        return [()] * t.num_rows
    cols = [_from_arrow(c) for c in t.columns]
    return list(zip(*cols))


def _to_storage(v: Interval | None):
    # An interval is stored as a (months, days, micros) struct (catalog.types).
    return None if v is None else {"months": v.months, "days": v.days, "micros": v.micros}


def _from_arrow(c: pa.ChunkedArray) -> list:
    values = c.to_pylist()
    if pa.types.is_interval(c.type):
        return [None if v is None else Interval(v.months, v.days, v.nanoseconds // 1000) for v in values]
    if pa.types.is_struct(c.type) and [f.name for f in c.type] == ["months", "days", "micros"]:
        return [None if v is None else Interval(v["months"], v["days"], v["micros"]) for v in values]
    return values


def rows_to_arrow(table: Table, rows: list[tuple]) -> pa.Table:
    """Rows in ``table``'s column order as an Arrow table in its storage schema."""
    schema = arrow_schema([c.name for c in table.columns], [c.type for c in table.columns])
    arrays = [pa.array([_to_storage(r[i]) for r in rows] if c.type.name == "interval" else [r[i] for r in rows],
                       type=f.type) for i, (f, c) in enumerate(zip(schema, table.columns))]
    return pa.Table.from_arrays(arrays, schema=schema)
