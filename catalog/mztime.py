"""Materialize's ``mz_timestamp``: its values and casts (Materialize's SQL reference,
"mz_timestamp type"; one definition every path uses: casts of constants, AS OF, and the
Spark lowering's range check).

A value is an ``int`` in ``[0, 2**64 - 1]``: milliseconds since the Unix epoch, the
timestamps the timestamp oracle hands out. Casts:

- from integers and integral numerics (implicit), the number itself;
- from ``timestamp``, ``timestamptz`` and ``date`` (implicit), milliseconds since the
  epoch (a ``timestamp`` read as UTC), truncated;
- from text: digits, else a ``timestamptz`` literal (``catalog.textio.parse_mz_timestamp``);
- to ``numeric``, ``text``, ``timestamp`` and ``timestamptz``.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from catalog.errors import (
    SqlError, DATETIME_FIELD_OVERFLOW, NUMERIC_VALUE_OUT_OF_RANGE,
)

#: the greatest mz_timestamp (u64::MAX): the time of a constant collection's updates
MAX = (1 << 64) - 1

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def out_of_range() -> SqlError:
    return SqlError(NUMERIC_VALUE_OUT_OF_RANGE, "mz_timestamp out of range")


def checked(v: int) -> int:
    """``v`` if it is an mz_timestamp. Raises SqlError 22003 otherwise."""
    if not 0 <= v <= MAX:
        raise out_of_range()
    return v


def from_value(v, src_name: str) -> int:
    """The cast of a non-NULL value of type ``src_name`` (a number, date or timestamp; text
    is ``catalog.textio.parse_mz_timestamp``'s) to mz_timestamp.

    Raises:
        SqlError 22003 out of range (negative, past 2**64 - 1, a fraction)."""
    if src_name in ("timestamp", "timestamptz"):
        when = v if v.tzinfo is not None else v.replace(tzinfo=dt.timezone.utc)
        delta = when - _EPOCH
        return checked((delta.days * 86_400_000) + delta.seconds * 1000 + delta.microseconds // 1000)
    if src_name == "date":
        return from_value(dt.datetime(v.year, v.month, v.day), "timestamp")
    if isinstance(v, float) or isinstance(v, Decimal):
        if v != v or v != int(v):
            raise out_of_range()
    return checked(int(v))


def to_value(ts: int, dst_name: str):
    """mz_timestamp ``ts`` cast to ``numeric``, ``text``, ``timestamp`` or
    ``timestamptz``; None for another type (no cast)."""
    if dst_name == "numeric":
        return Decimal(ts)
    if dst_name in ("text", "varchar"):
        return str(ts)
    if dst_name in ("timestamp", "timestamptz"):
        try:
            when = _EPOCH + dt.timedelta(milliseconds=ts)
        except OverflowError:
            raise SqlError(DATETIME_FIELD_OVERFLOW, "timestamp out of range") from None
        return when if dst_name == "timestamptz" else when.replace(tzinfo=None)
    return None
