"""Helpers behind set-returning functions of a select list (PostgreSQL 9.25, 10+ SRF
rules): a select-list ``generate_series(a, b [, step])`` is planned as the ``unnest``
of ``generate_series_array(a, b, step)`` (``planner.query``'s ``_plan_srfs``), so it
runs per input row on both execution paths like ``unnest`` does."""

from __future__ import annotations

from catalog.errors import SqlError
from catalog.types import array_of, INT4, INT8
from planner.functions import Function, register, sig


def _series(a, e):
    start, stop, step = a
    if step == 0:
        raise SqlError("22023", "step size cannot equal zero")
    return list(range(start, stop + (1 if step > 0 else -1), step))


def _series_spark(S, a, e):
    F = S.F
    start, stop, step = a
    empty = ((step > 0) & (start > stop)) | ((step < 0) & (start < stop))
    return (F.when(step == 0, S.fail("22023", "step size cannot equal zero").cast(S.spark_type(e.type)))
            .when(empty, S.empty_array(e.type)).otherwise(F.sequence(start, stop, step)))


register(
    Function("generate_series_array", (sig("int4", "int4", "int4", ret=lambda ts: array_of(INT4)),
                                       sig("int8", "int8", "int8", ret=lambda ts: array_of(INT8))),
             _series, _series_spark, doc="9.25"),
)
