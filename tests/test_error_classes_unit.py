"""catalog.errors: one class per SQLSTATE, found with lookup(); SqlError(code, message)
builds the code's class, so either spelling raises, catches and travels (pickle, the
wire) as the same error."""

from __future__ import annotations

import copy
import pickle

import pytest

from catalog import errors
from catalog.errors import SqlError, lookup
from sqlfront.protocol import ProtocolError
from sqlfront.protocol.backend import ErrorResponse


def _constants() -> dict[str, str]:
    return {k: v for k, v in vars(errors).items() if k.isupper() and isinstance(v, str) and len(v) == 5}


def test_every_constant_has_its_class():
    for name, code in _constants().items():
        cls = lookup(code)
        assert issubclass(cls, SqlError) and cls.code == code
        assert getattr(errors, cls.__name__) is cls, name
    assert lookup("42P01") is errors.UndefinedTable
    assert lookup("42601") is errors.SyntaxError_  # not the builtin's name
    with pytest.raises(KeyError):
        lookup("ZZ999")


def test_sqlerror_builds_the_class_of_its_code_and_keeps_its_interface():
    e = SqlError(errors.UNDEFINED_TABLE, "unknown catalog item 't'", detail="d", hint="h", position=3)
    assert type(e) is errors.UndefinedTable and isinstance(e, SqlError)
    assert (e.sqlstate, e.message, e.detail, e.hint, e.position, e.severity) == \
        ("42P01", "unknown catalog item 't'", "d", "h", 3, "ERROR")
    assert str(e) == "unknown catalog item 't'"
    same = errors.UndefinedTable("unknown catalog item 't'", hint="h")
    assert (same.sqlstate, same.message, same.hint) == ("42P01", "unknown catalog item 't'", "h")
    assert type(SqlError("ZZ999", "no class")) is SqlError
    with pytest.raises(errors.DivisionByZero):
        raise SqlError(errors.DIVISION_BY_ZERO, "division by zero")


def test_errors_survive_pickle_copy_and_the_wire():
    e = SqlError(errors.QUERY_CANCELED, "canceling statement due to user request", hint="x")
    for back in (pickle.loads(pickle.dumps(e)), copy.deepcopy(e),
                 ErrorResponse.decode(ErrorResponse.of(e).body()).error()):
        assert type(back) is errors.QueryCanceled
        assert (back.sqlstate, back.message, back.hint) == (e.sqlstate, e.message, e.hint)


def test_a_protocol_error_is_a_protocol_violation():
    e = ProtocolError("invalid message length 3")
    assert isinstance(e, errors.ProtocolViolation) and isinstance(e, ValueError)
    assert (e.sqlstate, e.message) == ("08P01", "invalid message length 3")
