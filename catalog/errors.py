"""SQL errors with a SQLSTATE, raised by every layer and sent to clients as ErrorResponse.

They live here because ``catalog`` is the lowest package that every other layer may
import (see ARCHITECTURE.md, "Packages"). SQLSTATE codes are PostgreSQL's (Appendix A,
"PostgreSQL Error Codes").
"""

from __future__ import annotations


class SqlError(Exception):
    """An error a client sees as an ErrorResponse.

    Attributes:
        sqlstate: five-character SQLSTATE code, e.g. ``"42P01"``.
        message: the primary message (PostgreSQL's ``M`` field).
        detail: optional ``D`` field.
        hint: optional ``H`` field.
        position: optional 1-based character position in the statement (``P`` field).
        severity: ``ERROR`` unless told otherwise (``FATAL`` closes the connection).
    """

    def __init__(
        self,
        sqlstate: str,
        message: str,
        *,
        detail: str | None = None,
        hint: str | None = None,
        position: int | None = None,
        severity: str = "ERROR",
    ):
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message
        self.detail = detail
        self.hint = hint
        self.position = position
        self.severity = severity

    def __repr__(self) -> str:
        return f"SqlError({self.sqlstate!r}, {self.message!r})"

    def __reduce__(self):
        # copy and pickle rebuild it with its fields (Exception's default passes only args)
        return _rebuild, (type(self), self.sqlstate, self.message, self.detail, self.hint, self.position,
                          self.severity)


def _rebuild(cls, sqlstate, message, detail, hint, position, severity):
    return cls(sqlstate, message, detail=detail, hint=hint, position=position, severity=severity)


# Frequently used codes, named as in PostgreSQL's errcodes.txt.
SYNTAX_ERROR = "42601"
UNDEFINED_TABLE = "42P01"
UNDEFINED_COLUMN = "42703"
UNDEFINED_OBJECT = "42704"
UNDEFINED_FUNCTION = "42883"
DUPLICATE_OBJECT = "42710"
DUPLICATE_TABLE = "42P07"
DUPLICATE_COLUMN = "42701"
AMBIGUOUS_COLUMN = "42702"
DATATYPE_MISMATCH = "42804"
GROUPING_ERROR = "42803"
INVALID_COLUMN_REFERENCE = "42P10"
INVALID_PARAMETER_VALUE = "22023"
DIVISION_BY_ZERO = "22012"
NUMERIC_VALUE_OUT_OF_RANGE = "22003"
STRING_DATA_RIGHT_TRUNCATION = "22001"
INVALID_TEXT_REPRESENTATION = "22P02"
INVALID_BINARY_REPRESENTATION = "22P03"
CHARACTER_NOT_IN_REPERTOIRE = "22021"
INVALID_DATETIME_FORMAT = "22007"
DATETIME_FIELD_OVERFLOW = "22008"
INTERVAL_FIELD_OVERFLOW = "22015"
NOT_NULL_VIOLATION = "23502"
FEATURE_NOT_SUPPORTED = "0A000"
INTERNAL_ERROR = "XX000"
QUERY_CANCELED = "57014"
INVALID_TRANSACTION_STATE = "25000"
READ_ONLY_SQL_TRANSACTION = "25006"
IN_FAILED_SQL_TRANSACTION = "25P02"
UNDEFINED_FILE = "58P01"
INSUFFICIENT_RESOURCES = "53000"
DISK_FULL = "53100"
STATEMENT_TOO_COMPLEX = "54001"
TOO_MANY_CONNECTIONS = "53300"
INSUFFICIENT_PRIVILEGE = "42501"
PROTOCOL_VIOLATION = "08P01"
UNDEFINED_PARAMETER = "42P02"
CONNECTION_FAILURE = "08006"
CARDINALITY_VIOLATION = "21000"
SYNTAX_ERROR_OR_ACCESS_RULE = "42000"
WRONG_OBJECT_TYPE = "42809"
DEPENDENT_OBJECTS_STILL_EXIST = "2BP01"
INVALID_ROW_COUNT = "2201W"
OUT_OF_MEMORY = "53200"
PROGRAM_LIMIT_EXCEEDED = "54000"


def query_canceled(timeout: bool) -> SqlError:
    """The 57014 a statement stops with: PostgreSQL's messages for ``statement_timeout``
    (``timeout``) and for a CancelRequest (``postgres.c``, ProcessInterrupts)."""
    reason = "statement timeout" if timeout else "user request"
    return SqlError(QUERY_CANCELED, f"canceling statement due to {reason}")
