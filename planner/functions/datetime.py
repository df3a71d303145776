"""Date/time functions and operators (PostgreSQL 9.9) and date/time formatting (9.8).

``timestamptz`` values are UTC instants, and the functions here work in UTC: the
session's TimeZone shapes timestamptz input, output and casts only
(``catalog.textio.TextFormat``, the evaluation's ``planner.guard.Guard.text``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal

from catalog.errors import (
    SqlError, DATETIME_FIELD_OVERFLOW, FEATURE_NOT_SUPPORTED, INVALID_DATETIME_FORMAT,
    INVALID_PARAMETER_VALUE,
)
from catalog.intervalio import interval_parts
from catalog.types import (FarDate, FarTimestamp, Interval, SqlType, date_days, date_from_days,
                           timestamp_from_micros, timestamp_micros)
from planner.functions.registry import Function, by_python, constant_arg, div0, register, sig


def add_interval(ts: dt.datetime, iv: Interval) -> dt.datetime:
    """``timestamp + interval``: months first (clamping the day to the month's end), then
    days, then microseconds, as PostgreSQL's timestamp_pl_interval."""
    if iv.months:
        total = ts.year * 12 + (ts.month - 1) + iv.months
        y, m = divmod(total, 12)
        m += 1
        last = (dt.date(y + (m == 12), m % 12 + 1, 1) - dt.timedelta(days=1)).day
        ts = ts.replace(year=y, month=m, day=min(ts.day, last))
    return ts + dt.timedelta(days=iv.days, microseconds=iv.micros)


#: microseconds in a day: a time of day is taken modulo this (PostgreSQL's USECS_PER_DAY)
DAY_MICROS = 86_400_000_000


def time_micros(t: dt.time) -> int:
    """Microseconds since midnight of a ``time`` value."""
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def time_from_micros(us: int) -> dt.time:
    """The time of day ``us`` microseconds after midnight (0 <= us < DAY_MICROS)."""
    secs, micro = divmod(us, 1_000_000)
    return dt.time(secs // 3600, secs // 60 % 60, secs % 60, micro)


def time_arith(func: str, a, b, t: SqlType):
    """Arithmetic with a time of day (PostgreSQL 9.9, table 9.33): ``time +/- interval``
    adds the interval's time part only and wraps at midnight (time_pl_interval),
    ``time - time`` is an interval of microseconds (time_mi_time), ``date + time`` a
    timestamp (datetime_timestamp; an infinite date stays infinite). A time with time zone
    keeps its offset, and a date plus one is a timestamptz (timetz_pl_interval,
    datetimetz_timestamptz)."""
    if t.name in ("time", "timetz"):  # a timetz keeps its offset (timetz_pl_interval)
        tod, iv = (a, b) if isinstance(a, dt.time) else (b, a)
        r = time_from_micros((time_micros(tod) + (iv.micros if func == "add" else -iv.micros)) % DAY_MICROS)
        return r.replace(tzinfo=tod.tzinfo) if t.name == "timetz" else r
    if t.name == "interval":
        return Interval(0, 0, time_micros(a) - time_micros(b))
    day, tod = (a, b) if isinstance(b, dt.time) else (b, a)
    tz = t.name == "timestamptz"  # date + timetz (datetimetz_timestamptz): the time at its offset
    if isinstance(day, FarDate) and day.infinite:
        return FarTimestamp(FarTimestamp.INFINITY if day.days > 0 else FarTimestamp.NEG_INFINITY, tz)
    offset = int(tod.utcoffset().total_seconds()) * 1_000_000 if tz else 0
    return timestamp_from_micros(date_days(day) * DAY_MICROS + time_micros(tod) - offset, tz)


def time_arith_spark(S, func: str, x, y, t: SqlType, ta: SqlType):
    """``time_arith`` on Spark columns ``x`` and ``y`` (``ta`` the type of ``x``): over
    microseconds since midnight (Spark's TimeType(6))."""
    F, T = S.F, S.T
    if t.name == "time":
        tod, iv = (x, y) if ta.name == "time" else (y, x)
        us = S.interval_fields(iv)["micros"]
        return F.time_from_micros(F.pmod(F.time_to_micros(tod) + (us if func == "add" else -us), F.lit(DAY_MICROS)))
    if t.name == "interval":
        return S.make_interval(F.lit(0), F.lit(0), F.time_to_micros(x) - F.time_to_micros(y))
    day, tod = (x, y) if ta.name == "date" else (y, x)
    return F.timestamp_add("MICROSECOND", F.time_to_micros(tod), day.cast(T.TimestampNTZType()))


def datetime_arith(func: str, a, b, t: SqlType, ta: SqlType):
    """Date, timestamp and interval arithmetic (PostgreSQL 9.9, table 9.33)."""
    n = t.name
    if isinstance(a, dt.time) or isinstance(b, dt.time):
        return time_arith(func, a, b, t)
    if n == "date":  # date +/- integer: past year 9999 or before year 1 a FarDate
        d, k = (a, b if func == "add" else -b) if ta.name == "date" else (b, a)
        if isinstance(d, FarDate) and d.infinite:
            return d
        return date_from_days(date_days(d) + k)
    if n in ("timestamp", "timestamptz"):
        ts, iv = (a, b) if ta.name == n else (b, a)
        iv = -iv if func == "sub" else iv
        if isinstance(ts, FarTimestamp) and ts.infinite:
            return ts
        try:
            if isinstance(ts, FarTimestamp):
                raise OverflowError
            return add_interval(ts, iv)
        except (OverflowError, ValueError):
            if iv.months:  # a month's length depends on the calendar past datetime's years
                raise SqlError(DATETIME_FIELD_OVERFLOW, "timestamp out of range") from None
            return timestamp_from_micros(timestamp_micros(ts) + iv.days * 86_400_000_000 + iv.micros,
                                         n == "timestamptz")
    if n == "interval":
        if ta.name in ("timestamp", "timestamptz"):  # timestamp - timestamp: whole days and the rest,
            # both of the difference's sign (timestamp_mi's interval_justify_hours)
            total = timestamp_micros(a) - timestamp_micros(b)
            days = abs(total) // 86_400_000_000 * (1 if total >= 0 else -1)
            return Interval(0, days, total - days * 86_400_000_000)
        if func == "add":
            return a + b
        if func == "sub":
            return a - b
        if func in ("mul", "div"):
            iv, f = (a, b) if ta.name == "interval" else (b, a)
            # interval_mul: NaN (and a product with infinity) is out of range; / infinity is 0
            if isinstance(f, float) and (math.isnan(f) or (func == "mul" and math.isinf(f))):
                raise SqlError(DATETIME_FIELD_OVERFLOW, "interval out of range")
            if func == "div":
                if f == 0:
                    raise div0()
                f = 1 / f
            months = iv.months * f
            days = iv.days * f + (months - int(months)) * 30
            micros = iv.micros * f + (days - int(days)) * 86_400_000_000
            return Interval(int(months), int(days), int(round(micros)))
    raise SqlError(FEATURE_NOT_SUPPORTED, f"cannot evaluate {func} on {t.sql()}")


#: extract's numeric scale by field (PostgreSQL 14+: seconds carry microseconds)
_SCALE = {"second": 6, "milliseconds": 3, "epoch": 6}
_ALIASES = {"years": "year", "months": "month", "mon": "month", "mons": "month", "days": "day", "hours": "hour",
            "minutes": "minute", "min": "minute", "mins": "minute", "seconds": "second", "sec": "second",
            "secs": "second", "millisecond": "milliseconds", "ms": "milliseconds", "microsecond": "microseconds",
            "us": "microseconds", "y": "year", "d": "day", "h": "hour", "m": "minute", "s": "second",
            "quarters": "quarter", "weeks": "week", "decades": "decade", "centuries": "century",
            "millenniums": "millennium", "millennia": "millennium"}
_TIME_FIELDS = ("hour", "minute", "second", "milliseconds", "microseconds")


def _field(name: str) -> str:
    f = name.lower()
    return _ALIASES.get(f, f)


def _unit_error(field: str, t: SqlType) -> SqlError:
    return SqlError(INVALID_PARAMETER_VALUE, f'unit "{field}" not recognized for type {t.sql()}')


#: units of timestamps that an interval does not have (0A000 rather than 22023)
_TIMESTAMP_ONLY_UNITS = frozenset(("dow", "isodow", "doy", "isoyear", "julian", "timezone", "timezone_hour",
                                   "timezone_minute"))


def interval_part_values(v: Interval) -> dict[str, Decimal | int]:
    """``EXTRACT``'s fields of an interval (PostgreSQL's ``interval_part_common``): each
    from the interval's broken-down fields (``catalog.intervalio.interval_parts``, which
    truncate toward zero), so a field of a negative interval is the negative of the
    field of its opposite: ``EXTRACT(MINUTE FROM INTERVAL '-1' MINUTE)`` is -1. EPOCH
    counts a year as 365.25 days and a month as 30."""
    y, mo, d, h, mi, sec, us = interval_parts(v)
    secs_us = sec * 1_000_000 + us
    quarter = mo // 3 + 1 if v.months >= 0 else -((-v.months % 12) // 3 + 1)
    return {"year": y, "month": mo, "day": d, "hour": h, "minute": mi, "second": Decimal(secs_us) / 1_000_000,
            "milliseconds": Decimal(secs_us) / 1000, "microseconds": secs_us, "week": int(d / 7),
            "quarter": quarter, "decade": int(y / 10), "century": int(y / 100), "millennium": int(y / 1000),
            "epoch": Decimal(v.micros) / 1_000_000 + 31557600 * int(v.months / 12) + 2592000 * (v.months - int(v.months / 12) * 12)
            + 86400 * v.days}


def time_part_values(us):
    """``EXTRACT``'s fields of a time of day ``us`` microseconds after midnight
    (PostgreSQL's ``time_part_common``)."""
    secs_us = us % 60_000_000
    return {"hour": us // 3_600_000_000, "minute": us // 60_000_000 % 60, "second": secs_us / Decimal(1_000_000),
            "milliseconds": secs_us / Decimal(1000), "microseconds": secs_us, "epoch": us / Decimal(1_000_000)}


#: the units PostgreSQL knows (``DecodeUnits``): one a time of day lacks is 0A000, not 22023
_UNITS = frozenset(("year", "month", "day", "quarter", "week", "decade", "century", "millennium")) \
    | _TIMESTAMP_ONLY_UNITS


def _time_unit_error(field: str, f: str, t: SqlType) -> SqlError:
    if f in _UNITS:
        return SqlError(FEATURE_NOT_SUPPORTED, f'unit "{field}" not supported for type {t.sql()}')
    return _unit_error(field, t)


def date_part_value(field: str, v, t: SqlType) -> Decimal:
    """``EXTRACT(field FROM v)`` as an exact numeric (PostgreSQL 9.9.1).

    Raises:
        SqlError 22023 for a unit the type does not have; 0A000 for a time unit of a date."""
    f = _field(field)
    if isinstance(v, dt.time):
        vals = time_part_values(time_micros(v))
        if v.tzinfo is not None:  # timetz_part: its offset east of UTC, the epoch of the time there
            off = int(v.utcoffset().total_seconds())
            minutes = int(off / 60)
            vals.update(timezone=off, timezone_hour=int(off / 3600), timezone_minute=minutes - 60 * int(minutes / 60),
                        epoch=vals["epoch"] - off)
        if f not in vals:
            raise _time_unit_error(field, f, t)
    elif isinstance(v, Interval):
        vals = interval_part_values(v)
        if f not in vals:
            if f in _TIMESTAMP_ONLY_UNITS:
                raise SqlError(FEATURE_NOT_SUPPORTED, f'unit "{field}" not supported for type interval')
            raise _unit_error(field, t)
    else:
        is_date = isinstance(v, dt.date) and not isinstance(v, dt.datetime)
        if is_date and f in _TIME_FIELDS:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'unit "{field}" not supported for type date')
        ts = dt.datetime(v.year, v.month, v.day) if is_date else v
        secs = ts.second + Decimal(ts.microsecond) / 1_000_000
        naive = ts.astimezone(dt.timezone.utc).replace(tzinfo=None) if ts.tzinfo else ts
        epoch = Decimal((naive - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)) / 1_000_000
        y = ts.year
        iso = ts.isocalendar()
        vals = {"year": y, "month": ts.month, "day": ts.day, "hour": ts.hour, "minute": ts.minute, "second": secs,
                "milliseconds": secs * 1000, "microseconds": ts.second * 1_000_000 + ts.microsecond,
                "quarter": (ts.month - 1) // 3 + 1, "dow": (ts.weekday() + 1) % 7, "isodow": ts.isoweekday(),
                "doy": ts.timetuple().tm_yday, "week": iso[1], "isoyear": iso[0],
                "decade": y // 10, "century": (y + 99) // 100 if y > 0 else -((99 - (y - 1)) // 100),
                "millennium": (y + 999) // 1000 if y > 0 else -((999 - (y - 1)) // 1000), "epoch": epoch}
        if is_date:
            vals["epoch"] = int(epoch)
    if f not in vals:
        raise _unit_error(field, t)
    r = Decimal(vals[f])
    scale = 0 if (isinstance(v, dt.date) and not isinstance(v, dt.datetime)) else _SCALE.get(f, 0)
    return r.quantize(Decimal(1).scaleb(-scale))


def _extract_py(a, e):
    r = date_part_value(a[0], a[1], e.args[1].type)
    if e.type.name == "float8" and e.args[1].type.name == "timetz" and _field(a[0]) == "epoch":
        # date_part's float: the time's seconds plus the zone, each a double (timetz_part_common)
        return time_micros(a[1]) / 1_000_000.0 - a[1].utcoffset().total_seconds()
    return float(r) if e.type.name == "float8" else r


def _interval_part_spark(S, f: str, x):
    """``interval_part_values``'s field ``f`` of an interval column on Spark (None for a
    unit intervals lack): the same broken-down fields, truncating toward zero, in exact
    decimal arithmetic."""
    F, T = S.F, S.T
    iv = S.interval_fields(x)
    D, L = T.DecimalType(38, 0), T.LongType()
    tdiv = S.trunc_div

    months, days, micros = iv["months"].cast(L), iv["days"].cast(L), iv["micros"]
    y = tdiv(months, 12)
    mo = months - y * 12
    h = tdiv(micros, 3_600_000_000)
    rem = micros - h * 3_600_000_000
    mi = tdiv(rem, 60_000_000)
    secs_us = (rem - mi * 60_000_000).cast(D)
    parts = {
        "year": lambda: y, "month": lambda: mo, "day": lambda: days, "hour": lambda: h, "minute": lambda: mi,
        "second": lambda: secs_us / 1_000_000, "milliseconds": lambda: secs_us / 1000, "microseconds": lambda: secs_us,
        "week": lambda: tdiv(days, 7), "decade": lambda: tdiv(y, 10), "century": lambda: tdiv(y, 100),
        "millennium": lambda: tdiv(y, 1000),
        "quarter": lambda: F.when(months >= 0, tdiv(mo, 3) + 1).otherwise(-(tdiv(-months % 12, 3) + 1)),
        "epoch": lambda: micros.cast(D) / 1_000_000 + y.cast(D) * 31557600 + mo.cast(D) * 2592000 + days.cast(D) * 86400,
    }
    return parts[f]() if f in parts else None


def _extract_spark(S, a, e):
    F, T = S.F, S.T
    fl = e.args[0]
    if e.args[1].type.name == "timetz":  # kept as its text on Spark: the Python implementation reads it
        if fl.__class__.__name__ != "Literal" or fl.value is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "extract and date_part need a constant field name on table data")
        r = by_python(S, a, e)
        return r if e.type.name == "float8" else r.cast(T.DecimalType(38, _SCALE.get(_field(fl.value), 0)))
    fl = e.args[0]
    if fl.__class__.__name__ != "Literal" or fl.value is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "extract and date_part need a constant field name on table data")
    f = _field(fl.value)
    src = e.args[1].type
    x = a[1]
    is_date = src.name == "date"
    if is_date and f in _TIME_FIELDS:
        raise SqlError(FEATURE_NOT_SUPPORTED, f'unit "{fl.value}" not supported for type date')
    if src.name == "time":
        us = F.time_to_micros(x)
        secs_us = (us % 60_000_000).cast(T.DecimalType(38, 0))
        r = {"hour": lambda: S.trunc_div(us, 3_600_000_000), "minute": lambda: S.trunc_div(us, 60_000_000) % 60,
             "second": lambda: secs_us / 1_000_000, "milliseconds": lambda: secs_us / 1000,
             "microseconds": lambda: secs_us, "epoch": lambda: us.cast(T.DecimalType(38, 0)) / 1_000_000}.get(f)
        if r is None:
            raise _time_unit_error(fl.value, f, src)
        r = r()
    elif src.name == "interval":
        r = _interval_part_spark(S, f, x)
        if r is None:
            if f in _TIMESTAMP_ONLY_UNITS:
                raise SqlError(FEATURE_NOT_SUPPORTED, f'unit "{fl.value}" not supported for type interval')
            raise _unit_error(fl.value, src)
    else:
        part = lambda name: F.date_part(F.lit(name), x)  # noqa: E731
        year = part("YEAR")
        r = {
            "year": year, "month": lambda: part("MONTH"), "day": lambda: part("DAY"),
            "hour": lambda: part("HOUR"), "minute": lambda: part("MINUTE"), "second": lambda: part("SECOND"),
            "milliseconds": lambda: part("SECOND") * 1000, "microseconds": lambda: part("SECOND") * 1_000_000,
            "quarter": lambda: part("QUARTER"), "dow": lambda: part("DAYOFWEEK") - 1,
            "isodow": lambda: part("DAYOFWEEK_ISO"), "doy": lambda: part("DOY"), "week": lambda: part("WEEK"),
            "decade": lambda: F.floor(year / 10), "century": lambda: F.floor((year + 99) / 100),
            "millennium": lambda: F.floor((year + 999) / 1000),
            "epoch": lambda: F.unix_micros(x.cast(T.TimestampType())) / 1_000_000 if not is_date
            else F.unix_date(x).cast(T.LongType()) * 86400,
        }.get(f)
        if callable(r):
            r = r()
        if r is None:
            if f in ("isoyear", "julian", "timezone"):
                raise SqlError(FEATURE_NOT_SUPPORTED, f'unit "{fl.value}" is not supported on table data')
            raise _unit_error(fl.value, src)
    if e.type.name == "float8":
        return r.cast(T.DoubleType())
    scale = 0 if is_date else _SCALE.get(f, 0)
    return r.cast(T.DecimalType(38 if scale == 0 else 24, scale))


_TRUNC = {"microseconds": "MICROSECOND", "milliseconds": "MILLISECOND", "second": "SECOND", "minute": "MINUTE",
          "hour": "HOUR", "day": "DAY", "week": "WEEK", "month": "MONTH", "quarter": "QUARTER", "year": "YEAR"}


def _date_trunc_py(a, e):
    f, v = _field(a[0]), a[1]
    if f == "microseconds":
        return v
    if f == "milliseconds":
        return v.replace(microsecond=v.microsecond // 1000 * 1000)
    if f == "second":
        return v.replace(microsecond=0)
    if f == "minute":
        return v.replace(second=0, microsecond=0)
    if f == "hour":
        return v.replace(minute=0, second=0, microsecond=0)
    day = v.replace(hour=0, minute=0, second=0, microsecond=0)
    if f == "day":
        return day
    if f == "week":
        return day - dt.timedelta(days=day.weekday())
    if f == "month":
        return day.replace(day=1)
    if f == "quarter":
        return day.replace(month=(day.month - 1) // 3 * 3 + 1, day=1)
    if f == "year":
        return day.replace(month=1, day=1)
    if f in ("decade", "century", "millennium"):
        span = {"decade": 10, "century": 100, "millennium": 1000}[f]
        y = day.year // span * span if f == "decade" else (day.year - 1) // span * span + 1
        return day.replace(year=y, month=1, day=1)
    raise SqlError(INVALID_PARAMETER_VALUE, f'unit "{a[0]}" not recognized for type {e.args[1].type.sql()}')


def _date_trunc_spark(S, a, e):
    fl = e.args[0]
    if fl.__class__.__name__ != "Literal" or fl.value is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "date_trunc needs a constant unit on table data")
    f = _field(fl.value)
    if f not in _TRUNC:
        raise SqlError(INVALID_PARAMETER_VALUE, f'unit "{fl.value}" not recognized for type {e.args[1].type.sql()}')
    return S.F.date_trunc(_TRUNC[f], a[1]).cast(S.spark_type(e.type))


# -- date_trunc of an interval, make_time, clock_timestamp (PostgreSQL 9.9) -----------------

#: interval_trunc's units, largest first
_INTERVAL_TRUNC = ("millennium", "century", "decade", "year", "quarter", "month", "day", "hour", "minute", "second",
                   "milliseconds", "microseconds")
#: the months a unit of years or quarters truncates to a multiple of
_MONTH_STEPS = {"millennium": 12000, "century": 1200, "decade": 120, "year": 12, "quarter": 3}
#: the microseconds a unit of the time part truncates to a multiple of
_MICRO_STEPS = {"hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000, "milliseconds": 1000,
                "microseconds": 1}


def _c_rem(a: int, n: int) -> int:
    """C's remainder (of the dividend's sign), as Spark's ``%``."""
    return a - (-(-a // n) if a < 0 else a // n) * n


def interval_trunc(f: str, months, days, micros, rem=_c_rem):
    """``date_trunc(f, interval)`` on an interval's (months, days, micros), unit ``f`` an
    ``_INTERVAL_TRUNC`` unit. PostgreSQL's ``interval_trunc`` breaks the interval into
    fields toward zero and zeroes those below the unit; as each field has the sign of
    its whole, that is cutting the months (for a unit of years or quarters) or the
    microseconds (for a unit of the time part) toward zero to a multiple of the unit,
    and zeroing the days for a unit above a day. ``rem`` is C's remainder, of ints or
    (``%``) of Spark columns."""
    i = _INTERVAL_TRUNC.index(f)
    if f in _MONTH_STEPS:
        months = months - rem(months, _MONTH_STEPS[f])
    if i <= _INTERVAL_TRUNC.index("month"):
        days = 0
    if i <= _INTERVAL_TRUNC.index("day"):
        micros = 0
    elif _MICRO_STEPS[f] != 1:
        micros = micros - rem(micros, _MICRO_STEPS[f])
    return months, days, micros


def _interval_unit(field: str, t: SqlType) -> str:
    """The ``_INTERVAL_TRUNC`` unit ``field`` names.

    Raises:
        SqlError 0A000 for week (months have fractional weeks), 22023 for a unit that is
        not an interval's (PostgreSQL's DecodeUnits)."""
    f = _field(field)
    if f in _INTERVAL_TRUNC:
        return f
    if f == "week":
        raise SqlError(FEATURE_NOT_SUPPORTED, f'unit "{field}" not supported for type {t.sql()}',
                       detail="Months usually have fractional weeks.")
    raise _unit_error(field, t)


def _date_trunc_interval_py(a, e):
    return Interval(*interval_trunc(_interval_unit(a[0], e.args[1].type), a[1].months, a[1].days, a[1].micros))


def _date_trunc_interval_spark(S, a, e):
    F = S.F
    fl = e.args[0]
    if fl.__class__.__name__ != "Literal" or fl.value is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "date_trunc needs a constant unit on table data")
    iv = S.interval_fields(a[1])
    parts = interval_trunc(_interval_unit(fl.value, e.args[1].type), iv["months"], iv["days"], iv["micros"],
                           lambda a, n: a % n)
    months, days, micros = (F.lit(p) if isinstance(p, int) else p for p in parts)
    return F.when(a[1].isNotNull(), S.make_interval(months.cast("int"), days.cast("int"), micros.cast("long")))


def _make_time_py(a, e):
    """``make_time(hour, min, sec)`` (PostgreSQL's make_time and float_time_overflows):
    seconds rounded to microseconds, half to even; 24:00:00 is PostgreSQL's answer that a
    ``datetime.time`` cannot hold (0A000, as its input).

    Raises:
        SqlError 22008 for fields out of range."""
    h, m, sec = a
    us = None if math.isnan(sec) else round(sec * 1_000_000)
    if not (0 <= h <= 24 and 0 <= m < 60) or us is None or not 0 <= us <= 60_000_000 \
            or (h * 60 + m) * 60_000_000 + us > DAY_MICROS:
        raise SqlError(DATETIME_FIELD_OVERFLOW, f"time field value out of range: {h}:{m:02d}:{sec:02g}")
    us += (h * 60 + m) * 60_000_000
    if us == DAY_MICROS:
        raise SqlError(FEATURE_NOT_SUPPORTED, "time values of 24:00:00 are not supported")
    return time_from_micros(us)


def _make_time_spark(S, a, e):
    F = S.F
    h, m, sec = a
    sec_us = F.rint(sec * 1_000_000)
    us = (h.cast("long") * 60 + m) * 60_000_000 + sec_us.cast("long")
    bad = (h < 0) | (h > 24) | (m < 0) | (m >= 60) | F.isnan(sec) | (sec_us < 0) | (sec_us > 60_000_000) \
        | (us > DAY_MICROS)
    return (F.when(bad, S.fail(DATETIME_FIELD_OVERFLOW, "time field value out of range"))
            .when(us == DAY_MICROS, S.fail(FEATURE_NOT_SUPPORTED, "time values of 24:00:00 are not supported"))
            .otherwise(F.time_from_micros(us)))


register(
    Function("date_trunc_interval", (sig("text", "interval", ret="interval"),), _date_trunc_interval_py,
             _date_trunc_interval_spark, sql_names=("date_trunc",), doc="9.9.2",
             samples=("date_trunc('hour', make_interval(days => k, hours => i, mins => 75, secs => f))",
                      "date_trunc('year', make_interval(years => i, months => -k * 5, days => k))",
                      "date_trunc('quarter', make_interval(months => i * 7))",
                      "date_trunc('century', make_interval(years => i * 41))",
                      "date_trunc('millennium', make_interval(years => -i * 401, days => 3))",
                      "date_trunc('milliseconds', make_interval(secs => f))",
                      "date_trunc('second', make_interval(mins => -i, secs => -f))",
                      "date_trunc('day', make_interval(months => k, days => i, hours => 5))",
                      "date_trunc('week', make_interval(days => k))",
                      "date_trunc('dow', make_interval(days => k))",
                      "date_trunc('fortnight', make_interval(days => k))")),
    Function("make_time", (sig("int4", "int4", "float8", ret="time"),), _make_time_py, _make_time_spark,
             sql_names=("make_time",), doc="9.9",
             differs="24:00:00 (PostgreSQL's end of day, from make_time(24, 0, 0)) is refused with 0A000, as its "
                     "input is: a time value here cannot hold it",
             samples=("make_time(k, i + 3, f)", "make_time(k * 5, 59, 59.9999996)", "make_time(23, 59, 60)",
                      "make_time(24, k, 0)", "make_time(-k, 0, 0)", "make_time(1, 60, 0)",
                      "make_time(1, 2, f * 1e-10)")),
    Function("clock_timestamp", (sig(ret="timestamptz"),), lambda a, e: dt.datetime.now(dt.UTC),
             lambda S, a, e: S.F.current_timestamp(), sql_names=("clock_timestamp",), volatility="volatile",
             doc="9.9.5", samples=("clock_timestamp() >= now()", "clock_timestamp() < now() + interval '1 hour'"),
             differs="on table data every row sees the instant its Spark query started (Spark reads the clock once "
                     "per query); PostgreSQL reads it at each call"),
)


def _session_zone_arg(args: list, ctx) -> list:
    """``plan_args_in`` of timeofday(): the session's TimeZone, as a text argument."""
    if args:
        return args  # no signature takes arguments: 42883
    from catalog.settings import DEFAULTS
    from catalog.types import TEXT
    from planner.scalar import Literal

    vars_ = getattr(getattr(ctx, "session", None), "vars", None)
    return [Literal((getattr(vars_, "values", None) or {}).get("timezone", DEFAULTS["timezone"][0]), TEXT)]


def _timeofday_py(a, e):
    """timeofday() (PostgreSQL 9.9.5): the clock's time, read at each call, as C-style text
    in the session's time zone (its argument here): ``Thu Nov 26 21:09:21.373963 2026
    UTC``, PostgreSQL's ``%a %b %d %H:%M:%S.%06d %Y %Z``."""
    from catalog.textio import parse_time_zone

    now = dt.datetime.now(dt.timezone.utc).astimezone(parse_time_zone(a[0]))
    return now.strftime(f"%a %b %d %H:%M:%S.{now.microsecond:06d} %Y ") + (now.tzname() or "")


register(
    # on table data the replica runs the Python (by_python), one clock reading per row
    Function("timeofday", (sig("text", ret="text"),), _timeofday_py, by_python, sql_names=("timeofday",),
             volatility="volatile", doc="9.9.5", extra={"plan_args_in": _session_zone_arg},
             samples=("split_part(timeofday(), ' ', 6)", "length(split_part(timeofday(), ' ', 4)) + k",
                      "split_part(timeofday(), ' ', 5) = to_char(now(), 'YYYY')")),
)


# -- to_char / to_date / to_timestamp (PostgreSQL 9.8, table 9.30) ------------------

_TOKENS = ("HH24", "HH12", "HH", "MI", "SS", "MS", "US", "YYYY", "YY", "MONTH", "Month", "month", "MON", "Mon",
           "mon", "MM", "DAY", "Day", "day", "DY", "Dy", "dy", "DDD", "DD", "D", "AM", "PM", "am", "pm", "Q", "IW",
           "TZ", "tz", "OF")
#: the time zone patterns: what they print comes from the value's zone (for a timestamp
#: without one: no name, offset +00, as PostgreSQL's DCH_TZ / DCH_OF)
_ZONE_TOKENS = ("TZ", "tz", "OF")
_TOKEN_RE = re.compile(r'"((?:[^"\\]|\\.)*)"|(FM)?(' + "|".join(_TOKENS) + r")|(.)", re.S)
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]


def _tokens(fmt: str):
    for m in _TOKEN_RE.finditer(fmt):
        quoted, fm, tok, lit = m.groups()
        if quoted is not None:
            yield "lit", re.sub(r"\\(.)", r"\1", quoted), False
        elif tok is not None:
            yield "tok", tok, bool(fm)
        else:
            yield "lit", lit, False


def _case(word: str, tok: str) -> str:
    return word.upper() if tok.isupper() else word.lower() if tok.islower() else word


def to_char_py(v, fmt: str) -> str:
    """``to_char(timestamp, fmt)`` for the date/time patterns of PostgreSQL table 9.30."""
    out = []
    for kind, tok, fm in _tokens(fmt):
        if kind == "lit":
            out.append(tok)
            continue
        num = lambda x, w: str(x) if fm else str(x).zfill(w)  # noqa: E731
        dow = (v.weekday() + 1) % 7
        h12 = (v.hour + 11) % 12 + 1
        val = {
            "HH24": lambda: num(v.hour, 2), "HH12": lambda: num(h12, 2), "HH": lambda: num(h12, 2),
            "MI": lambda: num(v.minute, 2), "SS": lambda: num(v.second, 2),
            "MS": lambda: num(v.microsecond // 1000, 3), "US": lambda: num(v.microsecond, 6),
            "YYYY": lambda: num(v.year, 4), "YY": lambda: num(v.year % 100, 2), "MM": lambda: num(v.month, 2),
            "DDD": lambda: num(v.timetuple().tm_yday, 3), "DD": lambda: num(v.day, 2), "D": lambda: str(dow + 1),
            "Q": lambda: str((v.month - 1) // 3 + 1), "IW": lambda: num(v.isocalendar()[1], 2),
            "AM": lambda: "AM" if v.hour < 12 else "PM", "PM": lambda: "AM" if v.hour < 12 else "PM",
            "am": lambda: "am" if v.hour < 12 else "pm", "pm": lambda: "am" if v.hour < 12 else "pm",
        }.get(tok)
        if val is not None:
            out.append(val())
        elif tok in _ZONE_TOKENS:
            out.append(_zone_text(v, tok))
        elif tok.lower() == "month":
            w = _case(_MONTHS[v.month - 1], tok)
            out.append(w if fm else w.ljust(9))
        elif tok.lower() == "mon":
            out.append(_case(_MONTHS[v.month - 1][:3], tok))
        elif tok.lower() == "day":
            w = _case(_DAYS[dow], tok)
            out.append(w if fm else w.ljust(9))
        else:  # dy
            out.append(_case(_DAYS[dow][:3], tok))
    return "".join(out)


def _zone_text(v, tok: str) -> str:
    off = v.utcoffset() if isinstance(v, dt.datetime) else None
    if off is None:  # a timestamp without time zone: no name, offset 0
        return "+00" if tok == "OF" else ""
    if tok == "OF":
        secs = int(off.total_seconds())
        h, rem = divmod(abs(secs), 3600)
        return ("-" if secs < 0 else "+") + f"{h:02d}" + (f":{rem // 60:02d}" if rem else "")
    name = v.tzname() or ""
    return name.upper() if tok == "TZ" else name.lower()


def _to_char_py(a, e):
    v = a[0]
    if not isinstance(v, dt.datetime):
        v = dt.datetime(v.year, v.month, v.day)
    return to_char_py(v, a[1])


def _to_char_spark(S, a, e):
    F = S.F
    fmt = e.args[1]
    if fmt.__class__.__name__ != "Literal" or fmt.value is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "to_char needs a constant format on table data")
    x = a[0]
    part = lambda name: F.date_part(F.lit(name), x).cast(S.T.IntegerType())  # noqa: E731
    pieces = []
    for kind, tok, fm in _tokens(fmt.value):
        if kind == "lit":
            pieces.append(F.lit(tok))
            continue
        num = lambda c, w: c.cast("string") if fm else F.lpad(c.cast("string"), w, "0")  # noqa: E731
        hour = part("HOUR")
        h12 = (hour + 11) % 12 + 1
        micros = (F.date_part(F.lit("SECOND"), x) * 1_000_000).cast("long") % 1_000_000
        simple = {
            "HH24": lambda: num(hour, 2), "HH12": lambda: num(h12, 2), "HH": lambda: num(h12, 2),
            "MI": lambda: num(part("MINUTE"), 2), "SS": lambda: num(F.floor(F.date_part(F.lit("SECOND"), x)), 2),
            "MS": lambda: num(F.floor(micros / 1000), 3), "US": lambda: num(micros, 6),
            "YYYY": lambda: num(part("YEAR"), 4), "YY": lambda: num(part("YEAR") % 100, 2),
            "MM": lambda: num(part("MONTH"), 2), "DDD": lambda: num(part("DOY"), 3), "DD": lambda: num(part("DAY"), 2),
            "D": lambda: part("DAYOFWEEK").cast("string"), "Q": lambda: part("QUARTER").cast("string"),
            "IW": lambda: num(part("WEEK"), 2),
            "AM": lambda: F.when(hour < 12, "AM").otherwise("PM"), "PM": lambda: F.when(hour < 12, "AM").otherwise("PM"),
            "am": lambda: F.when(hour < 12, "am").otherwise("pm"), "pm": lambda: F.when(hour < 12, "am").otherwise("pm"),
        }.get(tok)
        if simple is not None:
            pieces.append(simple())
            continue
        if tok in _ZONE_TOKENS:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'to_char pattern "{tok}" is not supported on table data')
        java = {"month": "MMMM", "mon": "MMM", "day": "EEEE", "dy": "EEE"}[tok.lower()]
        w = F.date_format(x, java)
        w = F.upper(w) if tok.isupper() else F.lower(w) if tok.islower() else w
        if tok.lower() in ("month", "day") and not fm:
            w = F.rpad(w, 9, " ")
        pieces.append(w)
    return F.concat(*pieces) if pieces else F.lit("")


def _parse_py(a, e):
    s, fmt = a
    fields = {"year": 1, "month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0, "micro": 0}
    pos = 0
    pm = None
    for kind, tok, _fm in _tokens(fmt):
        while pos < len(s) and s[pos] == " " and (kind != "lit" or tok != " "):
            pos += 1
        if kind == "lit":
            pos += 1 if pos < len(s) else 0
            continue
        if tok.lower() in ("mon", "month"):
            m = re.match(r"[A-Za-z]+", s[pos:])
            word = m.group(0).lower() if m else ""
            hit = [i for i, name in enumerate(_MONTHS) if name.lower().startswith(word[:3]) and word]
            if not hit:
                raise SqlError(INVALID_DATETIME_FORMAT, f'invalid value "{s[pos:pos + 3]}" for "{tok}"')
            fields["month"] = hit[0] + 1
            pos += len(word)
            continue
        width = {"YYYY": 4, "YY": 2, "MM": 2, "DD": 2, "HH24": 2, "HH12": 2, "HH": 2, "MI": 2, "SS": 2, "MS": 3,
                 "US": 6, "DDD": 3}.get(tok)
        if tok in ("AM", "PM", "am", "pm"):
            pm = s[pos:pos + 2].upper() == "PM"
            pos += 2
            continue
        if width is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'format pattern "{tok}" is not supported for input')
        m = re.match(r"\d{1,%d}" % width, s[pos:]) if tok != "YYYY" else re.match(r"\d+", s[pos:])
        if not m:
            raise SqlError(INVALID_DATETIME_FORMAT, f'invalid value "{s[pos:pos + width]}" for "{tok}"')
        n = int(m.group(0))
        pos += len(m.group(0))
        key = {"YYYY": "year", "YY": "year", "MM": "month", "DD": "day", "HH24": "hour", "HH12": "hour",
               "HH": "hour", "MI": "minute", "SS": "second", "MS": "micro", "US": "micro"}[tok]
        fields[key] = n + (2000 if tok == "YY" and n < 70 else 1900 if tok == "YY" else 0) if key == "year" else \
            n * 1000 if tok == "MS" else n
    if pm is not None:
        fields["hour"] = fields["hour"] % 12 + (12 if pm else 0)
    try:
        r = dt.datetime(fields["year"], fields["month"], fields["day"], fields["hour"], fields["minute"],
                        fields["second"], fields["micro"])
    except ValueError:
        raise SqlError(DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{s}"') from None
    if e.type.name == "date":
        return r.date()
    return r.replace(tzinfo=dt.timezone.utc)


_JAVA = {"YYYY": "yyyy", "YY": "yy", "MM": "MM", "DD": "dd", "HH24": "HH", "HH12": "hh", "HH": "hh", "MI": "mm",
         "SS": "ss", "MS": "SSS", "US": "SSSSSS", "Mon": "MMM", "MON": "MMM", "mon": "MMM", "Month": "MMMM",
         "AM": "a", "PM": "a", "DDD": "DDD"}


def _parse_spark(S, a, e):
    F = S.F
    fmt = e.args[1]
    if fmt.__class__.__name__ != "Literal" or fmt.value is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{e.func} needs a constant format on table data")
    java = []
    for kind, tok, _fm in _tokens(fmt.value):
        if kind == "lit":
            java.append("'" + tok.replace("'", "''") + "'" if tok.isalpha() else tok)
        elif tok in _JAVA:
            java.append(_JAVA[tok])
        else:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'format pattern "{tok}" is not supported on table data')
    pattern = "".join(java)
    if e.type.name == "date":
        return F.to_date(a[0], pattern)
    return F.to_timestamp(a[0], pattern)


def _make_date_py(a, e):
    try:
        return dt.date(*a)
    except ValueError:
        raise SqlError(DATETIME_FIELD_OVERFLOW, f"date field value out of range: {a[0]}-{a[1]:02d}-{a[2]:02d}") \
            from None


register(
    Function("date_part", (sig("text", "timestamp", ret="float8"), sig("text", "timestamptz", ret="float8"),
                           sig("text", "interval", ret="float8"), sig("text", "time", ret="float8"),
                           sig("text", "timetz", ret="float8")),
             _extract_py, _extract_spark, sql_names=("date_part",), doc="9.9.1",
             samples=("date_part('timezone_minute', (ts::time || '-05:30')::timetz)",
                      "date_part('epoch', (ts::time || '+02')::timetz)", "date_part('dow', d)",
                      "date_part('second', ts)", "date_part('year', ts)",
                      "date_part('epoch', ts)", "date_part('hour', make_interval(hours => i, mins => -90))",
                      "date_part('second', ts::time)", "date_part('epoch', ts::time)",
                      "date_part('minute', ts::time)")),
    Function("extract", (sig("text", "date", ret="numeric"), sig("text", "timestamp", ret="numeric"),
                         sig("text", "timestamptz", ret="numeric"), sig("text", "interval", ret="numeric"),
                         sig("text", "time", ret="numeric"), sig("text", "timetz", ret="numeric")),
             _extract_py, _extract_spark, sql_names=("extract",), doc="9.9.1",
             samples=("extract(timezone from (ts::time || '-05:30')::timetz)",
                      "extract(timezone_hour from (ts::time || '-05:30')::timetz)",
                      "extract(epoch from (ts::time || '+02')::timetz)", "extract(second from (ts::time || 'Z')::timetz)",
                      "extract(day from (ts::time || '+02')::timetz)", "extract(dow from d)", "extract(year from d)",
                      "extract(epoch from d)",
                      "extract(second from ts)", "extract(epoch from ts)", "extract(doy from ts)",
                      "extract(isodow from ts)", "extract(quarter from d)", "extract(week from d)",
                      "extract(century from d)", "extract(milliseconds from ts)", "extract(hour from ts)",
                      "extract(hour from d)", "extract(minute from make_interval(mins => -i))",
                      "extract(epoch from make_interval(months => i, secs => -f))",
                      "extract(hour from ts::time)", "extract(minute from ts::time)", "extract(second from ts::time)",
                      "extract(milliseconds from ts::time)", "extract(microseconds from ts::time)",
                      "extract(epoch from ts::time)", "extract(day from ts::time)", "extract(dow from ts::time)",
                      "extract(fortnight from ts::time)")),
    Function("date_trunc", (sig("text", "timestamp", ret="timestamp"), sig("text", "timestamptz", ret="timestamptz")),
             _date_trunc_py, _date_trunc_spark, sql_names=("date_trunc",), doc="9.9.2",
             samples=("date_trunc('month', ts)", "date_trunc('week', ts)", "date_trunc('hour', ts)",
                      "date_trunc('quarter', ts)", "date_trunc('year', d)", "date_trunc('day', ts)")),
    Function("make_date", (sig("int4", "int4", "int4", ret="date"),), _make_date_py,
             lambda S, a, e: S.F.make_date(a[0], a[1], a[2]), sql_names=("make_date",), doc="9.9",
             samples=("make_date(2000 + k, k, 10 + k)",)),
    Function("to_char", (sig("timestamp", "text", ret="text"), sig("timestamptz", "text", ret="text")),
             _to_char_py, _to_char_spark, sql_names=("to_char",), doc="9.8",
             samples=("to_char(ts, 'YYYY-MM-DD HH24:MI:SS')", "to_char(d, 'Mon DD, YYYY')",
                      "to_char(ts, 'FMMonth FMDD Day HH12 AM')", "to_char(ts, 'DY dy D DDD Q \"q\" MS US')")),
    Function("to_date", (sig("text", "text", ret="date"),), _parse_py, _parse_spark, sql_names=("to_date",),
             doc="9.8", samples=("to_date(to_char(d, 'YYYY-MM-DD'), 'YYYY-MM-DD')",
                                 "to_date(to_char(d, 'DD Mon YYYY'), 'DD Mon YYYY')")),
    Function("to_timestamp", (sig("text", "text", ret="timestamptz"),), _parse_py, _parse_spark,
             sql_names=("to_timestamp",), doc="9.8",
             samples=("to_timestamp(to_char(ts, 'YYYY-MM-DD HH24:MI:SS'), 'YYYY-MM-DD HH24:MI:SS')",)),
)


# -- make_interval, make_timestamp (9.9, table 9.33): named arguments with defaults ---------


def _make_interval_py(a, e):
    years, months, weeks, days, hours, mins, secs = a
    return Interval(years * 12 + months, weeks * 7 + days,
                    (hours * 3600 + mins * 60) * 1_000_000 + round(Decimal(repr(secs)) * 1_000_000))


def _make_interval_spark(S, a, e):
    F = S.F
    years, months, weeks, days, hours, mins, secs = a
    return F.make_interval(years, months, weeks, days, hours, mins, secs.cast("decimal(18,6)"))


def _make_timestamp_py(a, e):
    y, mo, d, h, mi, sec = a
    try:
        whole = int(sec)
        if not 0 <= sec < 61:
            raise ValueError
        return dt.datetime(y, mo, d, h, mi, min(whole, 59)) + dt.timedelta(
            seconds=whole - min(whole, 59), microseconds=round((Decimal(repr(sec)) - whole) * 1_000_000))
    except ValueError:
        raise SqlError(DATETIME_FIELD_OVERFLOW,
                       f"date field value out of range: {y}-{mo:02d}-{d:02d}" if not _valid_date(y, mo, d)
                       else f'time field value out of range: {h}:{mi:02d}:{sec:02}') from None


def _valid_date(y, m, d) -> bool:
    try:
        dt.date(y, m, d)
        return True
    except ValueError:
        return False


def _make_timestamp_spark(S, a, e):
    F = S.F
    ts = F.try_make_timestamp_ntz(a[0], a[1], a[2], a[3], a[4], a[5].cast("decimal(16,6)"))
    return F.when(ts.isNull(), S.fail(DATETIME_FIELD_OVERFLOW, "date/time field value out of range")).otherwise(ts)


register(
    Function("make_interval", (sig("int4", "int4", "int4", "int4", "int4", "int4", "float8", ret="interval"),),
             _make_interval_py, _make_interval_spark, sql_names=("make_interval",), doc="9.9",
             extra={"arg_names": ("years", "months", "weeks", "days", "hours", "mins", "secs"),
                    "defaults": (0, 0, 0, 0, 0, 0, 0.0)},
             samples=("make_interval(days => k)", "make_interval(k, 2, 1)", "make_interval(mins => i, secs => n)",
                      "make_interval(years => k, mins => 90)",
                      "make_interval(hours => 10 * k, secs => n)", "make_interval(secs => f)",
                      "make_interval(days => k, hours => -30 * k)")),
    Function("make_timestamp", (sig("int4", "int4", "int4", "int4", "int4", "float8", ret="timestamp"),),
             _make_timestamp_py, _make_timestamp_spark, sql_names=("make_timestamp",), doc="9.9",
             extra={"arg_names": ("year", "month", "mday", "hour", "min", "sec")},
             samples=("make_timestamp(2000 + k, k, 10 + k, k, 30, 1.5)",
                      "make_timestamp(year => 2024, month => 2, mday => 28 + k, hour => 0, min => 0, sec => 0)")),
)


# -- age (9.9, table 9.33) ----------------------------------------------------------------


def age_fields(y1, m1, d1, t1, dim1, y2, m2, d2, t2, dim2, earlier, where):
    """``age(ts1, ts2)``'s (months, days, micros): the field-wise difference of the two
    timestamps (years, months, days, time of day in microseconds; ``dim`` the days of
    each one's month), negative fields borrowing from the next larger one, a day borrowed
    being the days of the earlier timestamp's month, the whole negated when ``ts1`` is
    ``earlier`` (PostgreSQL 9.9, timestamp.c timestamp_age). Written once over values
    that are Python ints or Spark columns: ``where(cond, a, b)`` chooses."""
    sign = where(earlier, -1, 1)
    tod = (t1 - t2) * sign
    borrow = where(tod < 0, 1, 0)
    tod = tod + borrow * 86_400_000_000
    day = (d1 - d2) * sign - borrow
    borrow = where(day < 0, 1, 0)
    day = day + borrow * where(earlier, dim1, dim2)
    month = (m1 - m2) * sign - borrow
    borrow = where(month < 0, 1, 0)
    month = month + borrow * 12
    year = (y1 - y2) * sign - borrow
    return (year * 12 + month) * sign, day * sign, tod * sign


def _days_in_month(v) -> int:
    return ((v.replace(day=28) + dt.timedelta(days=4)).replace(day=1) - dt.timedelta(days=1)).day


def _age_py(a, e):
    def parts(v):
        if not isinstance(v, dt.datetime):
            v = dt.datetime(v.year, v.month, v.day)
        tod = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        return v.year, v.month, v.day, tod, _days_in_month(v)

    return Interval(*age_fields(*parts(a[0]), *parts(a[1]), a[0] < a[1], lambda c, x, y: x if c else y))


def _age_spark(S, a, e):
    F, T = S.F, S.T

    def parts(c):
        tod = (F.hour(c).cast(T.LongType()) * 3_600_000_000 + F.minute(c).cast(T.LongType()) * 60_000_000
               + (F.date_part(F.lit("SECOND"), c) * 1_000_000).cast(T.LongType()))
        return F.year(c), F.month(c), F.dayofmonth(c), tod, F.dayofmonth(F.last_day(c))

    months, days, micros = age_fields(*parts(a[0]), *parts(a[1]), a[0] < a[1],
                                      lambda c, x, y: F.when(c, x).otherwise(y))
    secs = (micros.cast(T.DecimalType(20, 0)) / 1_000_000).cast(T.DecimalType(18, 6))
    return F.make_interval(F.lit(0), months.cast("int"), F.lit(0), days.cast("int"), F.lit(0), F.lit(0), secs)


def _age_args(args: list, ctx) -> list:
    """``age(ts)`` is ``age(current_date, ts)``, midnight of the statement's date
    (PostgreSQL 9.9, table 9.33), fixed at plan time like current_date."""
    if len(args) != 1:
        return args
    from planner.scalar import Literal
    from catalog.types import TIMESTAMP

    day = ctx.now.date()
    return [Literal(dt.datetime(day.year, day.month, day.day), TIMESTAMP), *args]


register(
    Function("age", (sig("timestamp", "timestamp", ret="interval"), sig("timestamptz", "timestamptz", ret="interval")),
             _age_py, _age_spark, sql_names=("age",), volatility="stable", doc="9.9",
             extra={"plan_args_in": _age_args},
             samples=("age(ts, timestamp '2000-01-31 12:00')", "age(timestamp '2000-01-31 12:00', ts)",
                      "age(ts, ts - make_interval(hours => 30 * k))", "age(d, date '1999-12-31')",
                      "age(ts::date, ts)", "age(timestamp '2024-03-01', ts)", "extract(year from age(ts))",
                      "age(ts::timestamptz, timestamptz '2024-02-29 10:00+00')")),
)


# -- AT TIME ZONE, to_timestamp(double), justify_*, date_bin, isfinite (9.9) ----------------

USECS_PER_DAY = 86_400_000_000
#: seconds from 1970-01-01 (Unix epoch) to 2000-01-01 (PostgreSQL's epoch)
_PG_EPOCH_SECS = 946_684_800


def _zone(name: str):
    """The zone of ``AT TIME ZONE`` (an IANA name or a fixed offset such as UTC).

    Raises:
        SqlError 22023 for a name that names no time zone."""
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise SqlError(INVALID_PARAMETER_VALUE, f'time zone "{name}" not recognized') from None


def _timezone_py(a, e):
    """``ts AT TIME ZONE zone`` (PostgreSQL 9.9.4): a timestamp read as local time in
    ``zone`` becomes that instant (timestamptz); a timestamptz becomes ``zone``'s local
    time (timestamp)."""
    zone, ts = _zone(a[0]), a[1]
    if isinstance(ts, FarTimestamp):
        return FarTimestamp(ts.micros, e.type.name == "timestamptz") if ts.infinite else _far()
    if e.type.name == "timestamptz":
        return ts.replace(tzinfo=zone).astimezone(dt.timezone.utc)
    return ts.astimezone(zone).replace(tzinfo=None)


def _far():
    raise SqlError(FEATURE_NOT_SUPPORTED, "AT TIME ZONE of a timestamp outside years 1 to 9999 is not supported")


def _timezone_spark(S, a, e):
    F = S.F
    zone = _const_zone(e)
    if zone is None:
        return F.lit(None).cast(S.spark_type(e.type))
    if e.type.name == "timestamptz":  # local time in zone -> the instant
        return F.to_utc_timestamp(a[1].cast("timestamp"), zone)
    return F.from_utc_timestamp(a[1], zone).cast("timestamp_ntz")


def _const_zone(e):
    zone = constant_arg(e, 0, "AT TIME ZONE needs a constant zone")
    if zone is not None:
        _zone(zone)
    return zone


def _to_timestamp_py(a, e):
    """to_timestamp(seconds since 1970-01-01 UTC), to the microsecond (float.c rint)."""
    v = a[0]
    if math.isnan(v):
        raise SqlError(DATETIME_FIELD_OVERFLOW, "timestamp cannot be NaN")
    if math.isinf(v):
        return FarTimestamp(FarTimestamp.INFINITY if v > 0 else FarTimestamp.NEG_INFINITY, True)
    return timestamp_from_micros(round((v - _PG_EPOCH_SECS) * 1_000_000), True)


def _to_timestamp_spark(S, a, e):
    F = S.F
    v = a[0]
    micros = F.rint((v - float(_PG_EPOCH_SECS)) * 1e6)
    unix = micros + _PG_EPOCH_SECS * 1e6
    ok = (unix >= -62_135_596_800e6) & (unix < 253_402_300_800e6)  # years 1 to 9999
    return (F.when(F.isnan(v), S.fail(DATETIME_FIELD_OVERFLOW, "timestamp cannot be NaN"))
            .when(~ok, S.fail(FEATURE_NOT_SUPPORTED, "timestamps outside years 1 to 9999 are not supported on table "
                                                     "data"))
            .otherwise(F.timestamp_micros(micros.cast("long") + _PG_EPOCH_SECS * 1_000_000)))


def _pre_months(o, m, d, us):
    # justify_interval first moves whole months out of days when days and time agree in sign
    whole = o.where(o.either(o.both(d > 0, us > 0), o.both(d < 0, us < 0)), o.tdiv(d, 30), 0)
    return m + whole, d - whole * 30, us


def _days_from_time(o, m, d, us):
    whole = o.tdiv(us, USECS_PER_DAY)
    return m, d + whole, us - whole * USECS_PER_DAY


def _months_from_days(o, m, d, us):
    whole = o.tdiv(d, 30)
    return m + whole, d - whole * 30, us


def _month_signs(with_time: bool):
    def stage(o, m, d, us):
        neg = o.either(d < 0, o.both(d == 0, us < 0)) if with_time else d < 0
        pos = o.either(d > 0, o.both(d == 0, us > 0)) if with_time else d > 0
        later, earlier = o.both(m > 0, neg), o.both(m < 0, pos)
        return (o.where(later, m - 1, o.where(earlier, m + 1, m)), o.where(later, d + 30, o.where(earlier, d - 30, d)),
                us)
    return stage


def _day_signs(o, m, d, us):
    down, up = o.both(d > 0, us < 0), o.both(d < 0, us > 0)
    return (m, o.where(down, d - 1, o.where(up, d + 1, d)),
            o.where(down, us + USECS_PER_DAY, o.where(up, us - USECS_PER_DAY, us)))


#: justify_hours / justify_days / justify_interval (PostgreSQL 9.9, timestamp.c) as
#: stages over an interval's (months, days, micros)
JUSTIFY = {
    "hours": (_days_from_time, _day_signs),
    "days": (_months_from_days, _month_signs(False)),
    "interval": (_pre_months, _days_from_time, _months_from_days, _month_signs(True), _day_signs),
}


def justify(o, kind: str, fields, finish):
    """``finish(months, days, micros)`` of the justified fields, over Python ints or Spark
    columns (``o``: ``where``, ``tdiv``, ``both``, ``either``, and ``let``, which binds a
    stage's results so the next stage refers to them, not to copies of their expressions)."""
    def run(stages, vals):
        if not stages:
            return finish(*vals)
        return o.let(stages[0](o, *vals), lambda *v: run(stages[1:], v))
    return run(JUSTIFY[kind], fields)


class _IntOps:
    @staticmethod
    def where(c, a, b):
        return a if c else b

    @staticmethod
    def tdiv(x, n):
        q = abs(x) // n
        return q if x >= 0 else -q

    both = staticmethod(lambda a, b: a and b)
    either = staticmethod(lambda a, b: a or b)
    let = staticmethod(lambda vals, f: f(*vals))


class _ColumnOps:
    def __init__(self, S):
        F = S.F
        self.where = lambda c, a, b: F.when(c, a).otherwise(b)
        self.tdiv = S.trunc_div
        self.both = lambda a, b: a & b
        self.either = lambda a, b: a | b
        names = ("m", "d", "us")
        self.let = lambda vals, f: F.element_at(F.transform(
            F.array(F.struct(*(F.lit(v).cast("long").alias(n) for v, n in zip(vals, names)))),
            lambda s: f(*(s[n] for n in names))), 1)


def _justify_py(kind):
    def py(a, e):
        iv = a[0]
        return justify(_IntOps, kind, (iv.months, iv.days, iv.micros), Interval)
    return py


def _justify_spark(kind):
    def spark(S, a, e):
        f = S.interval_fields(a[0])
        iv = justify(_ColumnOps(S), kind, (f["months"].cast("long"), f["days"].cast("long"), f["micros"]),
                     lambda m, d, us: S.make_interval(m.cast("int"), d.cast("int"), us))
        return S.F.when(a[0].isNull(), S.F.lit(None).cast(S.spark_type(e.type))).otherwise(iv)
    return spark


def _stride_micros(iv: Interval) -> int:
    if iv.months:
        raise SqlError(FEATURE_NOT_SUPPORTED, "timestamps cannot be binned into intervals containing months or years")
    us = iv.days * USECS_PER_DAY + iv.micros
    if us <= 0:
        raise SqlError(DATETIME_FIELD_OVERFLOW, "stride must be greater than zero")
    return us


def _date_bin_py(a, e):
    """date_bin(stride, source, origin) (PostgreSQL 9.9.3): the start of the stride-long
    bin, counted from ``origin``, that holds ``source``."""
    stride, ts, origin = a
    us = _stride_micros(stride)
    if isinstance(ts, FarTimestamp) or isinstance(origin, FarTimestamp):
        raise SqlError(DATETIME_FIELD_OVERFLOW, "timestamp out of range")
    diff = timestamp_micros(ts) - timestamp_micros(origin)
    rem = (abs(diff) % us) * (1 if diff >= 0 else -1)  # C's remainder keeps the dividend's sign
    delta = diff - rem
    if rem < 0:  # toward -infinity, not zero, before the origin (PostgreSQL 16+)
        delta -= us
    return timestamp_from_micros(timestamp_micros(origin) + delta, e.type.name == "timestamptz")


def _date_bin_spark(S, a, e):
    F = S.F
    f = S.interval_fields(a[0])
    us = f["days"].cast("long") * USECS_PER_DAY + f["micros"]
    src, origin = (F.unix_micros(c.cast("timestamp")) for c in a[1:])
    diff = src - origin
    rem = diff % us  # Spark's % keeps the dividend's sign, as C's
    delta = F.when(rem < 0, diff - rem - us).otherwise(diff - rem)
    out = F.timestamp_micros(origin + delta)
    out = out if e.type.name == "timestamptz" else out.cast("timestamp_ntz")
    return (F.when(a[0].isNull() | a[1].isNull() | a[2].isNull(), F.lit(None).cast(S.spark_type(e.type)))
            .when(f["months"] != 0, S.fail(FEATURE_NOT_SUPPORTED,
                                            "timestamps cannot be binned into intervals containing months or years"))
            .when(us <= 0, S.fail(DATETIME_FIELD_OVERFLOW, "stride must be greater than zero")).otherwise(out))


def _isfinite_py(a, e):
    v = a[0]
    return not getattr(v, "infinite", False)


register(
    Function("timezone", (sig("text", "timestamp", ret="timestamptz"), sig("text", "timestamptz", ret="timestamp")),
             _timezone_py, _timezone_spark, sql_names=("timezone",), doc="9.9.4",
             samples=("ts AT TIME ZONE 'America/New_York'", "(ts AT TIME ZONE 'UTC') AT TIME ZONE 'Asia/Tokyo'",
                      "ts AT TIME ZONE 'Europe/Berlin'", "timezone('Australia/Sydney', ts::timestamptz)",
                      "ts AT TIME ZONE 'Nowhere/Special'")),
    Function("to_timestamp_epoch", (sig("float8", ret="timestamptz"),), _to_timestamp_py, _to_timestamp_spark,
             sql_names=("to_timestamp",), doc="9.9", samples=("to_timestamp(f)", "to_timestamp(k)",
                                                              "to_timestamp(i * 1000000.5)")),
    *[Function(f"justify_{kind}", (sig("interval", ret="interval"),), _justify_py(kind), _justify_spark(kind),
               sql_names=(f"justify_{kind}",), doc="9.9", samples=samples)
      for kind, samples in (
          ("hours", ("justify_hours(make_interval(hours => k * 20))", "justify_hours(make_interval(days => k, "
                                                                      "hours => -30 * k, secs => n))")),
          ("days", ("justify_days(make_interval(days => k * 20))", "justify_days(make_interval(months => k, "
                                                                   "days => -40 * k))")),
          ("interval", ("justify_interval(make_interval(months => k, hours => -k * 30))",
                        "justify_interval(make_interval(months => -k, days => 2 * k, hours => 7 * k - 25))",
                        "justify_interval(make_interval(days => 31 * k, hours => 25 * k))")))],
    Function("date_bin", (sig("interval", "timestamp", "timestamp", ret="timestamp"),
                          sig("interval", "timestamptz", "timestamptz", ret="timestamptz")),
             _date_bin_py, _date_bin_spark, sql_names=("date_bin",), doc="9.9.3",
             samples=("date_bin(interval '15 minutes', ts, timestamp '2001-01-01')",
                      "date_bin(make_interval(hours => k), ts, timestamp '2024-01-01 00:07')",
                      "date_bin(interval '1 day 2 hours', ts::timestamptz, timestamptz '2001-01-01 00:00+00')",
                      "date_bin(interval '1 month', ts, timestamp '2001-01-01')",
                      "date_bin(interval '-1 hour', ts, timestamp '2001-01-01')")),
    Function("isfinite", (sig("date", ret="bool"), sig("timestamp", ret="bool"), sig("timestamptz", ret="bool"),
                          sig("interval", ret="bool")),
             _isfinite_py, lambda S, a, e: S.F.when(a[0].isNotNull(), S.F.lit(True)), sql_names=("isfinite",),
             doc="9.9", samples=("isfinite(d)", "isfinite(ts)", "isfinite(ts::timestamptz)",
                                 "isfinite(make_interval(days => k))")),
)


# -- datediff (Materialize's "Date and time functions": datediff) ---------------------------

#: datediff's units that are a fixed number of microseconds
_DIFF_MICROS = {"microseconds": 1, "milliseconds": 1000, "second": 1_000_000, "minute": 60_000_000,
                "hour": 3_600_000_000, "day": 86_400_000_000}
#: datediff's calendar units, as the number of months in each (0: weeks)
_DIFF_MONTHS = {"week": 0, "month": 1, "quarter": 3, "year": 12, "decade": 120, "century": 1200,
                "millennium": 12000}


def _diff_unit(name, t: SqlType) -> str:
    f = _field(str(name))
    if f not in _DIFF_MICROS and f not in _DIFF_MONTHS:
        raise SqlError(INVALID_PARAMETER_VALUE, f'unit "{name}" not recognized for type {t.sql()}')
    return f


def _boundary(unit: str, year: int, month: int, micros: int) -> int:
    """How many ``unit`` boundaries lie between the epoch and a time (its calendar fields
    and its microseconds since the epoch): a floor, so that crossing one counts one."""
    if unit in _DIFF_MICROS:
        return micros // _DIFF_MICROS[unit]
    if unit == "week":  # weeks start on Monday; 1970-01-01 was a Thursday
        return (micros // 86_400_000_000 + 3) // 7
    if unit in ("century", "millennium"):  # the first ones start in years 1, 101, ... (1, 1001, ...)
        return (year - 1) // (_DIFF_MONTHS[unit] // 12)
    return (year * 12 + month - 1) // _DIFF_MONTHS[unit]


def _datediff_py(a, e):
    unit = _diff_unit(a[0], e.args[1].type)

    def at(v) -> int:
        if not isinstance(v, dt.datetime):
            v = dt.datetime(v.year, v.month, v.day)
        naive = v.astimezone(dt.UTC).replace(tzinfo=None) if v.tzinfo else v
        micros = (naive - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        return _boundary(unit, naive.year, naive.month, micros)

    return at(a[2]) - at(a[1])


def _datediff_spark(S, a, e):
    F = S.F
    fl = e.args[0]
    if fl.__class__.__name__ != "Literal" or fl.value is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, "datediff needs a constant unit on table data")
    unit = _diff_unit(fl.value, e.args[1].type)

    def at(c):
        c = c.cast("timestamp")
        micros = F.unix_micros(c)
        if unit in _DIFF_MICROS:
            return F.floor(micros / _DIFF_MICROS[unit])
        if unit == "week":
            return F.floor((F.floor(micros / 86_400_000_000) + 3) / 7)
        if unit in ("century", "millennium"):
            return F.floor((F.year(c) - 1) / (_DIFF_MONTHS[unit] // 12))
        return F.floor((F.year(c) * 12 + F.month(c) - 1) / _DIFF_MONTHS[unit])

    return (at(a[2]) - at(a[1])).cast("long")


register(
    Function("datediff", (sig("text", "timestamp", "timestamp", ret="int8"),
                          sig("text", "timestamptz", "timestamptz", ret="int8"),
                          sig("text", "date", "date", ret="int8")),
             _datediff_py, _datediff_spark, sql_names=("datediff",),
             doc="Materialize: datediff(unit, start, end), the unit boundaries crossed from start to end"),
)
