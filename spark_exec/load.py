"""Read files for ``COPY t FROM 'file'`` into Arrow tables with the table's column types.

Parquet columns are matched by name when the file has every table column, by position
otherwise. Values are converted as PostgreSQL's COPY would assign them: numerics to the
column's scale (an overflow is 22003), char(n) padded, NOT NULL checked (23502).
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from catalog.errors import (
    SqlError, BAD_COPY_FILE_FORMAT, FEATURE_NOT_SUPPORTED, INVALID_TEXT_REPRESENTATION, NOT_NULL_VIOLATION,
    NUMERIC_VALUE_OUT_OF_RANGE, STRING_DATA_RIGHT_TRUNCATION, UNDEFINED_FILE,
)
from catalog.snapshot import Table
from catalog.types import arrow_schema
from planner.writes import not_null_message


def read_file(table: Table, path: str, fmt: str, *, header: bool = False, delimiter: str = ",",
              null: str | None = None) -> pa.Table:
    """Read ``path`` (``fmt`` is parquet or csv) as rows of ``table``.

    Raises:
        SqlError 58P01 if the file does not exist, 22P02/22003/23502/22001 for bad values.
    """
    if not os.path.exists(path):
        raise SqlError(UNDEFINED_FILE, f'could not open file "{path}" for reading: No such file or directory')
    names = [c.name for c in table.columns]
    schema = arrow_schema(names, [c.type for c in table.columns])
    if fmt == "parquet":
        raw = pq.read_table(path)
        if all(n in raw.column_names for n in names):
            raw = raw.select(names)
        elif raw.num_columns == len(names):
            raw = raw.rename_columns(names)
        else:
            raise SqlError(BAD_COPY_FILE_FORMAT, f"file has {raw.num_columns} columns, table {table.name} has {len(names)}")
    elif fmt == "csv":
        try:
            raw = pacsv.read_csv(
                path,
                read_options=pacsv.ReadOptions(column_names=names, skip_rows=1 if header else 0),
                parse_options=pacsv.ParseOptions(delimiter=delimiter),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.string() for n in names},
                    null_values=[null] if null is not None else [""],
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=False,
                ),
            )
        except pa.ArrowInvalid as e:
            raise SqlError(BAD_COPY_FILE_FORMAT, f"bad CSV data: {e}") from None
    else:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"COPY format {fmt} is not supported")
    return conform(table, raw, schema)


def conform(table: Table, raw: pa.Table, schema: pa.Schema) -> pa.Table:
    """Cast ``raw``'s columns to ``schema`` (the table's storage types) and check NOT NULL."""
    cols = []
    for col, field, arr in zip(table.columns, schema, raw.columns):
        if arr.type != field.type:
            arr = _cast(arr, field.type, col)
        if col.type.name == "bpchar" and col.type.precision:
            n = col.type.precision
            if (pc.max(pc.utf8_length(arr)).as_py() or 0) > n:
                raise SqlError(STRING_DATA_RIGHT_TRUNCATION, f"value too long for type character({n})")
            arr = pc.utf8_rpad(arr, width=n)
        if col.type.name == "varchar" and col.type.precision:
            longest = pc.max(pc.utf8_length(arr)).as_py() or 0
            if longest > col.type.precision:
                raise SqlError(STRING_DATA_RIGHT_TRUNCATION, f"value too long for type character varying({col.type.precision})")
        if not col.nullable and arr.null_count:
            raise SqlError(
                NOT_NULL_VIOLATION,
                not_null_message(col.name),
            )
        cols.append(arr)
    return pa.Table.from_arrays(cols, schema=schema)


def _cast(arr, to: pa.DataType, col):
    src = arr.type
    if pa.types.is_string(to) or pa.types.is_large_string(to):
        return pc.cast(arr, to)
    if pa.types.is_decimal(to) and (pa.types.is_decimal(src) or pa.types.is_floating(src)):
        # Round to the column's scale, as PostgreSQL's numeric typmod does.
        arr = pc.round(arr, ndigits=to.scale, round_mode="half_away_from_zero") if pa.types.is_decimal(src) else arr
    try:
        return pc.cast(arr, to)
    except pa.ArrowInvalid as e:
        msg = str(e)
        if "overflow" in msg.lower() or "out of bounds" in msg.lower() or "precision" in msg.lower():
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f'value out of range for column "{col.name}" of type {col.type.sql()}') from None
        raise SqlError(INVALID_TEXT_REPRESENTATION, f'invalid input for column "{col.name}" of type {col.type.sql()}: {msg}') from None
