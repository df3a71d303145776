"""Encoding values for DataRows, text and binary, per PostgreSQL type OID.

Text follows ``catalog.textio.format_text`` (PostgreSQL's output functions); binary
uses psycopg's dumpers, which implement PostgreSQL's ``*send`` functions exactly.
"""

from __future__ import annotations

import struct
from typing import Callable

from psycopg import adapters
from psycopg.pq import Format

from catalog.textio import format_text
from catalog.types import Interval, SqlType

Encoder = Callable[[object], bytes]

_PY_TYPE = {16: bool, 21: int, 23: int, 20: int, 700: float, 701: float}


def encoder(t: SqlType, binary: bool) -> Encoder:
    """A function turning a non-NULL value of ``t`` into DataRow bytes."""
    if not binary or t.category in ("S", "X"):
        return lambda v: format_text(v, t).encode()
    if t.name == "interval":
        return _interval_binary
    import datetime as dt
    from decimal import Decimal

    py = _PY_TYPE.get(t.oid) or {"numeric": Decimal, "date": dt.date, "timestamp": dt.datetime,
                                 "timestamptz": dt.datetime}[t.name]
    if t.name == "timestamptz":
        tz_dumper = adapters.get_dumper_by_oid(t.oid, Format.BINARY)(py)
        return lambda v: bytes(tz_dumper.dump(v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)))
    dumper = adapters.get_dumper_by_oid(t.oid, Format.BINARY)(py)
    if t.name in ("float4", "float8"):
        return lambda v: bytes(dumper.dump(float(v)))
    if t.name == "numeric":
        return lambda v: bytes(dumper.dump(v if isinstance(v, Decimal) else Decimal(str(v))))
    return lambda v: bytes(dumper.dump(v))


def _interval_binary(v: Interval) -> bytes:
    return struct.pack("!qii", v.micros, v.days, v.months)
