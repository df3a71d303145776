"""Map Spark (Connect) exceptions to SqlErrors with PostgreSQL's SQLSTATE and wording."""

from __future__ import annotations

import re

from catalog.errors import (
    SqlError, CARDINALITY_VIOLATION, DISK_FULL, DIVISION_BY_ZERO, INTERNAL_ERROR, INVALID_TEXT_REPRESENTATION,
    NUMERIC_VALUE_OUT_OF_RANGE,
)

# Spark error class -> (SQLSTATE, PostgreSQL's message)
_BY_CLASS = {
    "DIVIDE_BY_ZERO": (DIVISION_BY_ZERO, "division by zero"),
    "INTERVAL_DIVIDED_BY_ZERO": (DIVISION_BY_ZERO, "division by zero"),
    "REMAINDER_BY_ZERO": (DIVISION_BY_ZERO, "division by zero"),
    "ARITHMETIC_OVERFLOW": (NUMERIC_VALUE_OUT_OF_RANGE, None),
    "BINARY_ARITHMETIC_OVERFLOW": (NUMERIC_VALUE_OUT_OF_RANGE, None),
    "NUMERIC_VALUE_OUT_OF_RANGE": (NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow"),
    "CAST_OVERFLOW": (NUMERIC_VALUE_OUT_OF_RANGE, None),
    "CAST_INVALID_INPUT": (INVALID_TEXT_REPRESENTATION, None),
}

#: prefix of the messages of ``Lowerer.fail`` columns: ``pgerror:SQLSTATE: message``
PG_ERROR_PREFIX = "pgerror:"
_PG_ERROR = re.compile(re.escape(PG_ERROR_PREFIX) + r"([0-9A-Z]{5}): (.*?)(?:\s+SQLSTATE:|$)", re.M)

# Spark's own SQLSTATEs that differ from PostgreSQL's.
_STATE_MAP = {"22018": INVALID_TEXT_REPRESENTATION}


def is_connection_error(e: BaseException) -> bool:
    """True when ``e`` means the replica could not be reached (not a query error)."""
    name = type(e).__name__
    text = str(e)
    if name in ("SparkConnectGrpcException", "RetriesExceeded", "_MultiThreadedRendezvous", "_InactiveRpcError"):
        return any(s in text for s in ("UNAVAILABLE", "Connection refused", "Socket closed", "failed to connect",
                                        "RST_STREAM", "CANCELLED", "DEADLINE_EXCEEDED", "Connection reset"))
    return isinstance(e, (ConnectionError, OSError)) or name in ("RetriesExceeded",)


def to_sql_error(e: BaseException) -> SqlError:
    """A SqlError for a Spark exception, keeping its SQLSTATE where Spark has one."""
    if isinstance(e, SqlError):
        return e
    cls = None
    state = None
    for getter in ("getCondition", "getErrorClass"):
        try:
            cls = getattr(e, getter)()
            break
        except Exception:
            continue
    try:
        state = e.getSqlState()
    except Exception:
        state = None
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    m = _PG_ERROR.search(str(e))
    if m:
        return SqlError(m.group(1), m.group(2).rstrip("."))
    if "No space left on device" in str(e):  # the replica's scratch space (spark.local.dir) is full
        return SqlError(DISK_FULL, "could not write to the replica's scratch space: No space left on device",
                        hint="Free some space on the disk of the server's --scratch-dir (the system's "
                             "temp directory unless set).")
    if "more than one row returned by a subquery" in str(e):
        return SqlError(CARDINALITY_VIOLATION, "more than one row returned by a subquery used as an expression")
    if cls in _BY_CLASS:
        code, msg = _BY_CLASS[cls]
        return SqlError(code, msg or _strip_class(first))
    if state and len(state) == 5 and not state.startswith(("XX", "0A", "42")):
        return SqlError(_STATE_MAP.get(state, state), _strip_class(first))
    return SqlError(INTERNAL_ERROR, f"replica error: {_strip_class(first)}")


def _strip_class(msg: str) -> str:
    # "[DIVIDE_BY_ZERO] Division by zero. Use ..." -> "Division by zero. Use ..."
    if msg.startswith("[") and "]" in msg:
        msg = msg[msg.index("]") + 1 :].strip()
    return msg.split(" SQLSTATE:")[0].strip()
