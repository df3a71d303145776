"""How a result value prints for a sqllogictest type letter.

Values arrive as PostgreSQL's text encoding (every type is loaded as text, see
``runner.text_connection``) with the column's type OID. The rules follow Materialize's
runner (src/sqllogictest/src/runner.rs, ``format_datum``) with the SQLite conventions of
the standard mode:

- ``NULL`` for a null, ``(empty)`` for an empty string (``T``)
- ``I``: integers as is; floats and numerics truncated to an integer (SQLite's corpus
  expects truncation), booleans as 1/0, other text as 0
- ``R``: standard mode three decimals; cockroach mode the shortest text of a float and a
  numeric as it is, never in exponent notation, and an integer as it is
- ``B``, and booleans under ``T`` in cockroach mode: ``true``/``false`` (Materialize); under
  ``T`` in standard mode PostgreSQL's ``t``/``f`` (the project's own suites expect them)
- ``T``: floats with three decimals in cockroach mode (as they come in standard mode, as
  this runner always printed them for SQLite's corpus); bytea as its UTF-8 text when valid;
  everything else (dates, intervals, arrays, jsonb, records, ranges) as PostgreSQL's text
- ``O``: an oid's number
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

BOOL, BYTEA, FLOAT4, FLOAT8, NUMERIC = 16, 17, 700, 701, 1700
INTS = frozenset((20, 21, 23, 26))  # int8 int2 int4 oid
FLOATS = frozenset((FLOAT4, FLOAT8))


def _decimal(v: str) -> Decimal | None:
    try:
        return Decimal(v)
    except InvalidOperation:
        return None


def _positional(v: str) -> str:
    """A float's or numeric's text without exponent notation (``1e+20`` -> ``100000000000000000000``,
    ``1.0`` -> ``1``), as Rust's ``Display`` prints a float in Materialize's cockroach mode."""
    low = v.lower()
    if low in ("infinity", "inf"):
        return "inf"
    if low in ("-infinity", "-inf"):
        return "-inf"
    if low == "nan":
        return "NaN"
    d = _decimal(v)
    if d is None:
        return v
    s = format(d, "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def _bytea_text(v: str) -> str:
    """bytea arrives as ``\\x<hex>``; print it as UTF-8 when it decodes (CockroachDB's rule)."""
    if not v.startswith("\\x"):
        return v
    try:
        raw = bytes.fromhex(v[2:])
    except ValueError:
        return v
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return repr(list(raw))


def format_value(v: str | None, letter: str, oid: int = 0, mode: str = "standard") -> str:
    """Format one value. ``v`` is the server's text (None for NULL), ``letter`` the column's
    type letter, ``oid`` its type OID (0 when unknown), ``mode`` standard | cockroach."""
    if v is None:
        return "NULL"
    if letter == "I":
        if oid == BOOL or (oid == 0 and v in ("t", "f")):
            return "1" if v == "t" else "0"
        d = _decimal(v)
        if d is None or not d.is_finite():
            return "0"
        return str(int(d))
    if letter in ("R", "F"):
        if mode == "cockroach" and oid in INTS:
            return v  # Rust's format!("{:.3}", i) ignores the precision of an integer
        if mode == "cockroach":
            return _positional(v)
        d = _decimal(v)
        if d is None:
            return "0.000"  # SQLite's rule for a non-number
        return f"{float(d):.3f}"
    if letter == "B" or (oid == BOOL and mode == "cockroach"):
        if v in ("t", "f"):
            return "true" if v == "t" else "false"
        return v
    if letter == "T" or letter == "_":
        if oid in FLOATS and mode == "cockroach":
            d = _decimal(v)
            return f"{float(d):.3f}" if d is not None and d.is_finite() else v
        if oid == BYTEA:
            v = _bytea_text(v)
    return v if v != "" else "(empty)"
