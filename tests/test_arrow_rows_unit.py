"""pgtypes.arrow_data_rows: DataRows encoded from Arrow columns are byte for byte the
ones the per-value encoders make, text and binary, with NULLs and sliced tables."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from catalog.types import make_type
from sqlfront.pgtypes import arrow_data_rows, data_rows
from sqlfront.sequence.result import chunk_rows


def _table():
    return pa.table({
        "i2": pa.array([1, None, -3, 32767], pa.int16()),
        "i4": pa.array([7, 8, None, -2147483648], pa.int32()),
        "i8": pa.array([None, 2**40, -1, 0], pa.int64()),
        "b": pa.array([True, False, None, True]),
        "t": pa.array(["a", "", None, "héllo, wörld"]),
        "f": pa.array([1.5, None, -2.5e20, 0.1], pa.float64()),
        "n": pa.array([Decimal("1.25"), None, Decimal("-3"), Decimal("0")], pa.decimal128(10, 2)),
        "d": pa.array([dt.date(2020, 1, 2), None, dt.date(1999, 12, 31), dt.date(2000, 1, 1)]),
    })


TYPES = [make_type(n) for n in ("int2", "int4", "int8", "bool", "text", "float8", "numeric", "date")]


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("window", [(0, 4), (1, 3), (3, 1), (2, 0)])
def test_arrow_data_rows_match_the_value_encoders(binary, window):
    table = _table().slice(*window)
    flags = [binary] * len(TYPES)
    expected = b"".join(data_rows(chunk_rows(table, TYPES), TYPES, flags))
    assert arrow_data_rows(table, TYPES, flags) == expected


def test_arrow_data_rows_with_no_columns():
    table = pa.table({"x": [1, 2]}).select([])
    assert arrow_data_rows(table, [], []) == b"".join(data_rows([(), ()], [], []))
