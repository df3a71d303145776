"""SQL errors with a SQLSTATE, raised by every layer and sent to clients as ErrorResponse.

They live here because ``catalog`` is the lowest package that every other layer may
import (see ARCHITECTURE.md, "Packages"). SQLSTATE codes are PostgreSQL's (Appendix A,
"PostgreSQL Error Codes").

Each code has its own subclass of :class:`SqlError` (psycopg's ``errors`` shape), named
as its constant in CamelCase (``UNDEFINED_TABLE`` -> ``UndefinedTable``; a builtin's name
gets a trailing ``_``: ``SyntaxError_``), found with :func:`lookup`. ``SqlError(code, message)`` builds an
instance of the code's class, so ``except UndefinedTable`` catches every 42P01 whichever
way it was raised; ``UndefinedTable(message)`` is the same error.
"""

from __future__ import annotations

import builtins


class SqlError(Exception):
    """An error a client sees as an ErrorResponse.

    Attributes:
        sqlstate: five-character SQLSTATE code, e.g. ``"42P01"``.
        message: the primary message (PostgreSQL's ``M`` field).
        detail: optional ``D`` field.
        hint: optional ``H`` field.
        position: optional 1-based character position in the statement (``P`` field).
        severity: ``ERROR`` unless told otherwise (``FATAL`` closes the connection).

    ``SqlError(sqlstate, message, ...)`` is an instance of ``lookup(sqlstate)`` (SqlError
    itself for a code without a class); a code's class takes the message alone.
    """

    #: the SQLSTATE of a code's class (None on SqlError itself)
    code: str | None = None

    def __new__(cls, *args, **kwargs):
        if cls is not SqlError:
            return super().__new__(cls)
        return super().__new__(_CLASSES.get(args[0] if args else kwargs.get("sqlstate"), SqlError))

    def __init__(
        self,
        sqlstate: str,
        message: str | None = None,
        *,
        detail: str | None = None,
        hint: str | None = None,
        position: int | None = None,
        severity: str = "ERROR",
    ):
        if message is None and self.code is not None:  # UndefinedTable("...")
            sqlstate, message = self.code, sqlstate
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


# SQLSTATE codes, named as PostgreSQL's condition names (errcodes.txt, Appendix A) upper-cased.
# Raise sites use these names, never literals (tests/test_sqlstate_constants.py checks).
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
ADMIN_SHUTDOWN = "57P01"
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
SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION = "42000"
WRONG_OBJECT_TYPE = "42809"
DEPENDENT_OBJECTS_STILL_EXIST = "2BP01"
INVALID_ROW_COUNT_IN_LIMIT_CLAUSE = "2201W"
OUT_OF_MEMORY = "53200"
PROGRAM_LIMIT_EXCEEDED = "54000"
SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION = "08001"
INVALID_GRANT_OPERATION = "0LP01"
DATA_EXCEPTION = "22000"
NULL_VALUE_NOT_ALLOWED = "22004"
INVALID_TIME_ZONE_DISPLACEMENT_VALUE = "22009"
SEQUENCE_GENERATOR_LIMIT_EXCEEDED = "2200H"
SUBSTRING_ERROR = "22011"
INVALID_PRECEDING_OR_FOLLOWING_SIZE = "22013"
INVALID_ARGUMENT_FOR_NTILE_FUNCTION = "22014"
INVALID_ARGUMENT_FOR_NTH_VALUE_FUNCTION = "22016"
INVALID_REGULAR_EXPRESSION = "2201B"
INVALID_ARGUMENT_FOR_LOGARITHM = "2201E"
INVALID_ARGUMENT_FOR_POWER_FUNCTION = "2201F"
INVALID_ARGUMENT_FOR_WIDTH_BUCKET_FUNCTION = "2201G"
INVALID_ESCAPE_SEQUENCE = "22025"
INVALID_USE_OF_ESCAPE_CHARACTER = "2200C"
ARRAY_SUBSCRIPT_ERROR = "2202E"
DUPLICATE_JSON_OBJECT_KEY_VALUE = "22030"
BAD_COPY_FILE_FORMAT = "22P04"
UNTRANSLATABLE_CHARACTER = "22P05"
ACTIVE_SQL_TRANSACTION = "25001"
NO_ACTIVE_SQL_TRANSACTION = "25P01"
INVALID_SQL_STATEMENT_NAME = "26000"
INVALID_AUTHORIZATION_SPECIFICATION = "28000"
INVALID_PASSWORD = "28P01"
INVALID_CURSOR_NAME = "34000"
INVALID_SAVEPOINT_SPECIFICATION = "3B001"
INVALID_CATALOG_NAME = "3D000"
INVALID_SCHEMA_NAME = "3F000"
SERIALIZATION_FAILURE = "40001"
DEADLOCK_DETECTED = "40P01"
INVALID_NAME = "42602"
NAME_TOO_LONG = "42622"
DUPLICATE_ALIAS = "42712"
AMBIGUOUS_FUNCTION = "42725"
CANNOT_COERCE = "42846"
GENERATED_ALWAYS = "428C9"
RESERVED_NAME = "42939"
DUPLICATE_CURSOR = "42P03"
DUPLICATE_PREPARED_STATEMENT = "42P05"
DUPLICATE_SCHEMA = "42P06"
AMBIGUOUS_ALIAS = "42P09"
INVALID_TABLE_DEFINITION = "42P16"
INDETERMINATE_DATATYPE = "42P18"
WINDOWING_ERROR = "42P20"
TOO_MANY_ARGUMENTS = "54023"
OBJECT_NOT_IN_PREREQUISITE_STATE = "55000"
OBJECT_IN_USE = "55006"
CANT_CHANGE_RUNTIME_PARAM = "55P02"
SYSTEM_ERROR = "58000"
WARNING = "01000"
SUCCESSFUL_COMPLETION = "00000"


def query_canceled(timeout: bool) -> SqlError:
    """The 57014 a statement stops with: PostgreSQL's messages for ``statement_timeout``
    (``timeout``) and for a CancelRequest (``postgres.c``, ProcessInterrupts)."""
    reason = "statement timeout" if timeout else "user request"
    return SqlError(QUERY_CANCELED, f"canceling statement due to {reason}")


#: SQLSTATE -> its class (filled below from the constants)
_CLASSES: dict[str, type[SqlError]] = {}


def lookup(sqlstate: str) -> type[SqlError]:
    """The class of SQLSTATE ``sqlstate`` (as psycopg's ``errors.lookup``).

    Raises:
        KeyError for a code without a constant here."""
    return _CLASSES[sqlstate]


def _class_name(constant: str) -> str:
    name = "".join(w.capitalize() for w in constant.split("_"))
    return name + "_" if hasattr(builtins, name) else name


def _define_classes() -> None:
    """One subclass of SqlError per SQLSTATE constant of this module, as a module global."""
    module = globals()
    for constant, code in list(module.items()):
        if constant.isupper() and isinstance(code, str) and len(code) == 5 and code not in _CLASSES:
            cls = type(_class_name(constant), (SqlError,), {
                "code": code, "__module__": __name__, "__doc__": f"SQLSTATE {code} ({constant.lower()})."})
            _CLASSES[code] = module[cls.__name__] = cls


_define_classes()
