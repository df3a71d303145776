"""How a materialized view stores an unconstrained numeric column (issue 32): at its
query's result scale, recorded in the catalog; unit tests, no server."""

from __future__ import annotations

import json

import pyarrow as pa

from catalog.durable import _decode_columns, _encode_columns
from catalog.snapshot import Column
from catalog.types import UNCONSTRAINED_NUMERIC, SqlType, stored_numeric

NUMERIC = SqlType("numeric")


def test_an_unconstrained_numeric_keeps_its_querys_scale_and_is_still_numeric():
    t = stored_numeric(NUMERIC, 2)
    assert t.arrow() == pa.decimal128(UNCONSTRAINED_NUMERIC[0], 2)
    assert t == NUMERIC and hash(t) == hash(NUMERIC) and t.sql() == "numeric" and t.typmod == -1
    assert t.logical().stored_scale is None and t.logical().arrow() == pa.decimal128(*UNCONSTRAINED_NUMERIC)
    # other types, a constrained numeric, and a column that is no decimal in Spark stay as they are
    assert stored_numeric(SqlType("numeric", 6, 2), 4).arrow() == pa.decimal128(6, 2)
    assert stored_numeric(NUMERIC, None).arrow() == pa.decimal128(*UNCONSTRAINED_NUMERIC)
    assert stored_numeric(SqlType("int4"), 0).stored_scale is None


def test_the_catalog_keeps_the_stored_scale_and_reads_older_columns_without_it():
    cols = (Column("x", stored_numeric(NUMERIC, 16)), Column("k", SqlType("int4"), False))
    back = _decode_columns(_encode_columns(cols))
    assert back == cols and back[0].type.stored_scale == 16
    old = json.dumps([{"name": "x", "type": "numeric", "p": None, "s": None, "null": True}])
    assert _decode_columns(old)[0].type.arrow() == pa.decimal128(*UNCONSTRAINED_NUMERIC)
