"""The ``interval`` value (:class:`Interval`), its text input and output and its type
modifier (PostgreSQL 8.5.4, 8.5.5).

Input follows PostgreSQL's ``interval_in``: the text is split into fields as
``ParseDateTime`` does, the fields are read right to left as ``DecodeInterval`` does
(datetime.c: units name the number before them, ``'Y-M'`` is years and months, ``'D H:M:S'``
puts the days before a time, a bare number takes the unit the field qualifier names), and
when that finds a bad format the text is tried as ISO 8601 (``DecodeISO8601Interval``:
``P1Y2M3DT4H5M6S`` and the alternative format ``P0001-02-03T04:05:06``). A type modifier
(``INTERVAL '1' MINUTE``, ``interval second(3)``) then truncates the fields below the last
one named and rounds the seconds (``AdjustIntervalForTypmod``, timestamp.c). Output is
``EncodeInterval`` in each ``IntervalStyle``.

Errors are PostgreSQL's: 22007 for bad syntax, 22015 for a field out of range, 22008 for
a value past the type's range. Infinite intervals (PostgreSQL 17) are not supported, as in
PostgreSQL 15 and Materialize: ``'infinity'`` is bad syntax.

Not here: interval arithmetic (planner.functions.datetime) and the Spark forms
(spark_exec.lower).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from catalog.errors import (INTERVAL_FIELD_OVERFLOW, INVALID_DATETIME_FORMAT, DATETIME_FIELD_OVERFLOW,
                            INVALID_PARAMETER_VALUE, SqlError)

# -- the value --------------------------------------------------------------------------

@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Interval:
    """A PostgreSQL ``interval`` value: months, days and microseconds kept apart, as
    PostgreSQL (and Spark's CalendarInterval) do, so ``1 month`` prints as itself, not as
    ``30 days``. Equality, order and hash are PostgreSQL's (``interval_cmp_value``): a
    month counts as 30 days and a day as 24 hours, so ``'1 month' = '30 days'``."""

    months: int = 0
    days: int = 0
    micros: int = 0

    def _key(self) -> int:
        return (self.months * 30 + self.days) * 86_400_000_000 + self.micros

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Interval) and self._key() == o._key()

    def __lt__(self, o: "Interval") -> bool:
        if not isinstance(o, Interval):
            return NotImplemented
        return self._key() < o._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __add__(self, o: "Interval") -> "Interval":
        return Interval(self.months + o.months, self.days + o.days, self.micros + o.micros)

    def __neg__(self) -> "Interval":
        return Interval(-self.months, -self.days, -self.micros)

    def __sub__(self, o: "Interval") -> "Interval":
        return self + (-o)

    def pg_text(self) -> str:
        """PostgreSQL's ``IntervalStyle = postgres`` output, e.g. ``1 year 2 mons 3 days 04:05:06``
        (:func:`format_interval`)."""
        return format_interval(self, "postgres")


# -- the type modifier (PostgreSQL's datetime.h INTERVAL_MASK and intervaltypmodin) ------

YEAR, MONTH, DAY, HOUR, MINUTE, SECOND = 1 << 2, 1 << 1, 1 << 3, 1 << 10, 1 << 11, 1 << 12
#: the field qualifiers SQL allows, by their mask, as format_type prints them
FIELD_NAMES = {
    YEAR: "year", MONTH: "month", DAY: "day", HOUR: "hour", MINUTE: "minute", SECOND: "second",
    YEAR | MONTH: "year to month", DAY | HOUR: "day to hour", DAY | HOUR | MINUTE: "day to minute",
    DAY | HOUR | MINUTE | SECOND: "day to second", HOUR | MINUTE: "hour to minute",
    HOUR | MINUTE | SECOND: "hour to second", MINUTE | SECOND: "minute to second",
}
FULL_RANGE = 0x7FFF
FULL_PRECISION = 0xFFFF
MAX_PRECISION = 6

_US_HOUR, _US_MINUTE, _US_SECOND, _US_DAY = 3_600_000_000, 60_000_000, 1_000_000, 86_400_000_000
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def interval_typmod(fields: int | None, precision: int | None) -> int:
    """PostgreSQL's ``atttypmod`` of an interval (``INTERVAL_TYPMOD``); -1 for a plain one."""
    if fields is None and precision is None:
        return -1
    return ((fields if fields is not None else FULL_RANGE) << 16) | (precision if precision is not None
                                                                     else FULL_PRECISION)


def check_typmod(mods: list[int]) -> tuple[int | None, int | None]:
    """(field mask, precision) of an interval's modifiers as the grammar gives them
    (``[mask]``, ``[mask, p]``; ``interval(p)`` is ``[FULL_RANGE, p]``), validated as
    ``intervaltypmodin``: a precision above 6 is reduced to 6.

    Raises:
        SqlError 22023 for an unknown mask or a negative precision."""
    fields = mods[0] if mods else None
    precision = mods[1] if len(mods) > 1 else None
    if len(mods) > 2:
        raise SqlError(INVALID_PARAMETER_VALUE, "invalid INTERVAL type modifier")
    if fields == FULL_RANGE:
        fields = None
    if fields is not None and fields not in FIELD_NAMES:
        raise SqlError(INVALID_PARAMETER_VALUE, "invalid INTERVAL type modifier")
    if precision is not None:
        if precision < 0:
            raise SqlError(INVALID_PARAMETER_VALUE, f"INTERVAL({precision}) precision must not be negative")
        precision = min(precision, MAX_PRECISION)
    return fields, precision


def typmod_suffix(fields: int | None, precision: int | None) -> str:
    """What ``format_type`` writes after ``interval``: `` day to second(3)``, ``(2)``."""
    out = f" {FIELD_NAMES[fields]}" if fields is not None else ""
    return out + (f"({precision})" if precision is not None else "")


#: what a field qualifier keeps of an interval (AdjustIntervalForTypmod): months truncated
#: toward zero to a multiple of the first, days kept or zeroed, microseconds truncated to a
#: multiple of the third (0: zeroed); the qualifiers not listed keep everything
FIELD_TRUNCATION: dict[int, tuple[int, bool, int]] = {
    YEAR: (12, False, 0), MONTH: (1, False, 0), YEAR | MONTH: (1, False, 0), DAY: (1, True, 0),
    HOUR: (1, True, _US_HOUR), DAY | HOUR: (1, True, _US_HOUR), MINUTE: (1, True, _US_MINUTE),
    DAY | HOUR | MINUTE: (1, True, _US_MINUTE), HOUR | MINUTE: (1, True, _US_MINUTE),
}


def adjust_interval(iv: Interval, fields: int | None, precision: int | None) -> Interval:
    """``iv`` under an interval typmod (``AdjustIntervalForTypmod``): the fields below the
    last one named are zeroed (YEAR keeps whole years of the months; HOUR and MINUTE
    truncate the time toward zero), then the microseconds round half away from zero to
    ``precision`` fractional digits. Fields above are kept: ``INTERVAL '1 day' HOUR`` is
    ``1 day``.

    Raises:
        SqlError 22008 if rounding overflows."""
    month_unit, keep_days, micro_unit = FIELD_TRUNCATION.get(fields, (1, True, 1))
    months = _trunc_div(iv.months, month_unit) * month_unit
    days = iv.days if keep_days else 0
    micros = _trunc_div(iv.micros, micro_unit) * micro_unit if micro_unit else 0
    if precision is not None and precision < MAX_PRECISION:
        micros = round_micros(micros, precision)
        if not _INT64[0] <= micros <= _INT64[1]:
            raise SqlError(DATETIME_FIELD_OVERFLOW, "interval out of range")
    return Interval(months, days, micros)


def round_micros(micros: int, precision: int) -> int:
    """``micros`` rounded to ``precision`` (0..6) fractional digits of a second, half away
    from zero (PostgreSQL's typmod rounding of intervals and timestamps, relative to 0)."""
    scale = 10 ** (MAX_PRECISION - precision)
    if scale == 1:
        return micros
    half = scale // 2
    if micros >= 0:
        return (micros + half) // scale * scale
    return -((-micros + half) // scale * scale)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# -- IntervalStyle -----------------------------------------------------------------------

#: the IntervalStyle settings: how intervals print, and (sql_standard) what a leading minus
#: sign means on input; a session's is ``catalog.textio.TextFormat.interval_style``
STYLES = ("postgres", "postgres_verbose", "sql_standard", "iso_8601")


def parse_interval_style(value: str) -> str:
    """An ``IntervalStyle`` setting, lower-cased. Raises SqlError 22023 for others."""
    v = value.strip().lower()
    if v not in STYLES:
        raise SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "IntervalStyle": "{value}"',
                       hint='Available values: postgres, postgres_verbose, sql_standard, iso_8601.')
    return v


# -- input -------------------------------------------------------------------------------

class _BadFormat(Exception):
    pass


class _FieldOverflow(Exception):
    pass


_NUMBER, _DATE, _TIME, _TZ, _STRING, _SPECIAL = "number", "date", "time", "tz", "string", "special"
#: the words of PostgreSQL's datetktbl that stop a word from running into digits (``d1``)
_DATE_WORDS = frozenset(("d", "h", "j", "m", "mm", "s", "t", "y", "ad", "bc", "am", "pm", "at", "on", "jd", "dow", "doy",
                         "dst", "mon", "sun", "sat", "fri", "thu", "tue", "wed", "now", "z", "isodow", "isoyear",
                         "julian", "epoch", "today", "tomorrow", "yesterday", "infinity", "allballs", "current"))


def _split_fields(s: str) -> list[tuple[str, str]]:
    """The fields of ``s`` and their kinds, as PostgreSQL's ``ParseDateTime``."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c.isspace():
            i += 1
            continue
        start = i
        if c.isdigit():
            while i < n and s[i].isdigit():
                i += 1
            if i < n and s[i] == ":":
                kind = _TIME
                i += 1
                while i < n and (s[i].isdigit() or s[i] in ":."):
                    i += 1
                out.append((s[start:i], kind))
                continue
            if i < n and s[i] in "-/.":
                delim = s[i]
                i += 1
                if i < n and s[i].isdigit():
                    kind = _NUMBER if delim == "." else _DATE
                    while i < n and s[i].isdigit():
                        i += 1
                    if i < n and s[i] == delim:
                        kind = _DATE
                        while i < n and (s[i].isdigit() or s[i] == delim):
                            i += 1
                else:
                    kind = _DATE
                    while i < n and (s[i].isalnum() or s[i] == delim):
                        i += 1
                out.append((s[start:i].lower(), kind))
                continue
            out.append((s[start:i], _NUMBER))
        elif c == ".":
            i += 1
            while i < n and s[i].isdigit():
                i += 1
            out.append((s[start:i], _NUMBER))
        elif c.isalpha():
            while i < n and s[i].isalpha():
                i += 1
            word = s[start:i].lower()
            if i < n and (s[i] in "-/." or ((s[i] == "+" or s[i].isdigit()) and word not in _DATE_WORDS)):
                while True:
                    i += 1
                    if not (i < n and (s[i] in "+-/_.:" or s[i].isalnum())):
                        break
                out.append((s[start:i].lower(), _DATE))
            else:
                out.append((word, _STRING))
        elif c in "+-":
            i += 1
            while i < n and s[i].isspace():
                i += 1
            if i < n and s[i].isdigit():
                body = i
                i += 1
                while i < n and (s[i].isdigit() or s[i] in ":.-"):
                    i += 1
                out.append((c + s[body:i], _TZ))
            elif i < n and s[i].isalpha():
                body = i
                while i < n and s[i].isalpha():
                    i += 1
                out.append((c + s[body:i].lower(), _SPECIAL))
            else:
                raise _BadFormat
        elif not c.isalnum() and c.isprintable() and not c.isspace() and ord(c) < 128:
            i += 1  # other punctuation delimits (``@ 1 day``)
        else:
            raise _BadFormat
    return out


_Y, _MON, _D, _H, _MIN, _S, _MS, _US, _W, _DEC, _CENT, _MIL = (1 << k for k in range(12))
_TIME_M = _H | _MIN | _S | _MS | _US
_ALL_SECS_M = _S | _MS | _US

#: PostgreSQL's deltatktbl: unit words (at most 10 characters are compared) -> unit; its
#: other words (``qtr``, ``timezone``) are bad syntax in an interval
_UNITS = {
    "c": _CENT, "cent": _CENT, "centuries": _CENT, "century": _CENT,
    "d": _D, "day": _D, "days": _D,
    "dec": _DEC, "decade": _DEC, "decades": _DEC, "decs": _DEC,
    "h": _H, "hour": _H, "hours": _H, "hr": _H, "hrs": _H,
    "m": _MIN, "min": _MIN, "mins": _MIN, "minute": _MIN, "minutes": _MIN,
    "microsecon": _US, "us": _US, "usec": _US, "usecond": _US, "useconds": _US, "usecs": _US,
    "mil": _MIL, "millennia": _MIL, "millennium": _MIL, "mils": _MIL,
    "millisecon": _MS, "ms": _MS, "msec": _MS, "msecond": _MS, "mseconds": _MS, "msecs": _MS,
    "mon": _MON, "mons": _MON, "month": _MON, "months": _MON,
    "s": _S, "sec": _S, "second": _S, "seconds": _S, "secs": _S,
    "w": _W, "week": _W, "weeks": _W,
    "y": _Y, "year": _Y, "years": _Y, "yr": _Y, "yrs": _Y,
}
#: the unit a bare number takes under a field qualifier (DecodeInterval's ``range`` switch)
_DEFAULT_UNIT = {YEAR: _Y, MONTH: _MON, YEAR | MONTH: _MON, DAY: _D, HOUR: _H, DAY | HOUR: _H,
                 MINUTE: _MIN, HOUR | MINUTE: _MIN, DAY | HOUR | MINUTE: _MIN}
_SCALE_US = {_US: 1, _MS: 1000, _S: _US_SECOND, _MIN: _US_MINUTE, _H: _US_HOUR}
_YEARS = {_Y: 1, _DEC: 10, _CENT: 100, _MIL: 1000}


class _Acc:
    """PostgreSQL's ``pg_itm_in``: years, months, days, microseconds, each checked
    against its C type's range as it grows."""

    def __init__(self):
        self.years = self.months = self.days = self.micros = 0

    def add_micros(self, val: int, frac: float, scale: int) -> None:
        self.micros = _fit64(self.micros + val * scale)
        self.add_frac_micros(frac, scale)

    def add_frac_micros(self, frac: float, scale: int) -> None:
        if frac == 0:
            return
        frac *= scale
        us = int(frac)
        us += int(_rint(frac - us))
        self.micros = _fit64(self.micros + us)

    def add_days(self, val: int, scale: int) -> None:
        self.days = _fit32(self.days + _fit32(_fit32(val) * scale))

    def add_frac_days(self, frac: float, scale: int) -> None:
        if frac == 0:
            return
        frac *= scale
        extra = int(frac)
        self.days = _fit32(self.days + extra)
        self.add_frac_micros(frac - extra, _US_DAY)

    def add_months(self, val: int) -> None:
        self.months = _fit32(self.months + _fit32(val))

    def add_years(self, val: int, scale: int) -> None:
        self.years = _fit32(self.years + _fit32(_fit32(val) * scale))

    def add_frac_years(self, frac: float, scale: int) -> None:
        self.months = _fit32(self.months + int(_rint(frac * scale * 12)))


def _fit32(v: int) -> int:
    if not _INT32[0] <= v <= _INT32[1]:
        raise _FieldOverflow
    return v


def _fit64(v: int) -> int:
    if not _INT64[0] <= v <= _INT64[1]:
        raise _FieldOverflow
    return v


def _rint(x: float) -> float:
    """C's rint() in the default rounding mode: half to even."""
    return float(round(x))


def _strtol(s: str, i: int) -> tuple[int, int]:
    """C's strtol from ``s[i]``: (value, index after it); (0, i) when no digits follow."""
    j = i
    if j < len(s) and s[j] in "+-":
        j += 1
    k = j
    while k < len(s) and s[k].isdigit():
        k += 1
    if k == j:
        return 0, i
    return int(s[i:k]), k


def _fraction(s: str) -> float:
    """ParseFraction: ``s`` is ``.digits`` (or just ``.``)."""
    if s == ".":
        return 0.0
    if not all(ch.isdigit() for ch in s[1:]):
        raise _BadFormat
    return float("0" + s)


def _decode_time(s: str, fields: int | None) -> int:
    """DecodeTime for an interval: ``h:m[:s[.f]]`` (``m:s.f``, and ``m:s`` under MINUTE TO
    SECOND) as microseconds."""
    hour, i = _strtol(s, 0)
    _fit64(hour)
    if i >= len(s) or s[i] != ":":
        raise _BadFormat
    minute, i = _strtol(s, i + 1)
    _fit32(minute)
    sec, usec = 0, 0
    if i == len(s):
        if fields == MINUTE | SECOND:
            hour, minute, sec = 0, _fit32(hour), minute
    elif s[i] == ".":
        usec = int(_rint(_fraction(s[i:]) * 1_000_000))
        hour, minute, sec = 0, _fit32(hour), minute
    elif s[i] == ":":
        sec, i = _strtol(s, i + 1)
        _fit32(sec)
        if i < len(s):
            if s[i] != ".":
                raise _BadFormat
            usec = int(_rint(_fraction(s[i:]) * 1_000_000))
    else:
        raise _BadFormat
    if hour < 0 or not 0 <= minute <= 59 or not 0 <= sec <= 60 or not 0 <= usec <= 1_000_000:
        raise _FieldOverflow
    return _fit64(usec + hour * _US_HOUR + minute * _US_MINUTE + sec * _US_SECOND)


def _decode(fields_: list[tuple[str, str]], fields: int | None, sql_standard: bool) -> _Acc:
    """DecodeInterval over the fields ``_split_fields`` found."""
    acc = _Acc()
    force_negative = (sql_standard and bool(fields_) and fields_[0][0].startswith("-")
                      and not any(f[0][:1] in "+-" for f in fields_[1:]))
    fmask = 0
    unit = None  # the unit the number to the left takes (None: the qualifier's)
    pending_unit = False
    is_before = False
    nf = len(fields_)
    for i in range(nf - 1, -1, -1):
        text, kind = fields_[i]
        tmask = 0
        if kind == _TZ and ":" in text[1:]:
            try:
                us = _decode_time(text[1:], fields)
            except (_BadFormat, _FieldOverflow):
                us = None
            if us is not None:
                if text[0] == "-":
                    us = -us
                if force_negative and us > 0:
                    us = -us
                acc.micros = us
                tmask, unit, pending_unit = _TIME_M, _D, False
                kind = None
        if kind == _TIME:
            us = _decode_time(text, fields)
            if force_negative and us > 0:
                us = -us
            acc.micros = us
            tmask, unit, pending_unit = _TIME_M, _D, False
        elif kind in (_TZ, _DATE, _NUMBER):
            if unit is None:
                unit = _S if fields is None else _DEFAULT_UNIT.get(fields, _S)
            elif unit == 0:
                raise _BadFormat
            val, j = _strtol(text, 0)
            _fit64(val)
            frac = 0.0
            if j < len(text) and text[j] == "-":  # SQL's 'years-months'
                val2, k = _strtol(text, j + 1)
                if not 0 <= val2 < 12:
                    raise _FieldOverflow
                if k != len(text):
                    raise _BadFormat
                unit = _MON
                if text[0] == "-":
                    val2 = -val2
                val = _fit64(_fit64(val * 12) + val2)
            elif j < len(text) and text[j] == ".":
                frac = _fraction(text[j:])
                if text[0] == "-":
                    frac = -frac
            elif j != len(text):
                raise _BadFormat
            if force_negative:
                val, frac = -abs(val), -abs(frac)
            if unit in _SCALE_US:
                acc.add_micros(val, frac, _SCALE_US[unit])
                tmask = _ALL_SECS_M if unit == _S and frac != 0 else unit
                if unit == _H:
                    unit = _D
            elif unit == _D:
                acc.add_days(val, 1)
                acc.add_frac_micros(frac, _US_DAY)
                tmask = _D
            elif unit == _W:
                acc.add_days(val, 7)
                acc.add_frac_days(frac, 7)
                tmask = _W
            elif unit == _MON:
                acc.add_months(val)
                acc.add_frac_days(frac, 30)
                tmask = _MON
            else:
                acc.add_years(val, _YEARS[unit])
                acc.add_frac_years(frac, _YEARS[unit])
                tmask = unit
            pending_unit = False
        elif kind in (_STRING, _SPECIAL):
            if pending_unit:
                raise _BadFormat
            word = text[:10]
            if word in ("at", "on"):
                unit = None  # datetktbl's IGNORE_DTF words: skipped, and forget the unit
                continue
            if word == "ago":
                if i != nf - 1:
                    raise _BadFormat
                is_before = True
                unit = 0  # a number right before "ago" has no unit: '1 ago' is bad syntax
            elif word in _UNITS:
                unit, pending_unit = _UNITS[word], True
            else:
                raise _BadFormat
        elif kind is not None:
            raise _BadFormat
        if tmask & fmask:
            raise _BadFormat
        fmask |= tmask
    if fmask == 0 or pending_unit:
        raise _BadFormat
    if is_before:
        acc.years, acc.months, acc.days, acc.micros = -acc.years, -acc.months, -acc.days, -acc.micros
        _fit32(acc.years), _fit32(acc.months), _fit32(acc.days), _fit64(acc.micros)
    return acc


def _iso_number(s: str, i: int) -> tuple[int, float, int]:
    """ParseISO8601Number: a decimal number (strtod) at ``s[i]`` as (integer part,
    fraction with its sign, index after it)."""
    if i >= len(s) or not (s[i].isdigit() or s[i] in "-."):
        raise _BadFormat
    j = i + 1 if s[i] == "-" else i
    k = j
    while k < len(s) and s[k].isdigit():
        k += 1
    if k < len(s) and s[k] == ".":
        k += 1
        while k < len(s) and s[k].isdigit():
            k += 1
    if k < len(s) and s[k] in "eE":  # strtod's exponent
        e = k + 1
        if e < len(s) and s[e] in "+-":
            e += 1
        if e < len(s) and s[e].isdigit():
            while e < len(s) and s[e].isdigit():
                e += 1
            k = e
    body = s[j:k]
    if body in ("", "."):
        raise _BadFormat
    v = float(s[i:k])
    if not -1e18 <= v <= 1e18:
        raise _FieldOverflow
    ipart = int(v)
    return ipart, v - ipart, k


def _int_width(s: str, i: int) -> int:
    if i < len(s) and s[i] == "-":
        i += 1
    j = i
    while j < len(s) and s[j].isdigit():
        j += 1
    return j - i


def _decode_iso8601(s: str) -> _Acc:
    """DecodeISO8601Interval: ``P[nY][nM][nW][nD][T[nH][nM][nS]]``, or the alternative
    format ``PYYYY-MM-DDTHH:MM:SS`` (``PYYYYMMDDTHHMMSS``)."""
    acc = _Acc()
    if len(s) < 2 or s[0] != "P":
        raise _BadFormat
    i = 1
    datepart, havefield = True, False
    while i < len(s):
        if s[i] == "T":
            datepart, havefield = False, False
            i += 1
            continue
        start = i
        val, frac, i = _iso_number(s, i)
        unit = s[i] if i < len(s) else ""
        i += 1
        if datepart:
            if unit == "Y":
                acc.add_years(val, 1)
                acc.add_frac_years(frac, 1)
            elif unit == "M":
                acc.add_months(val)
                acc.add_frac_days(frac, 30)
            elif unit == "W":
                acc.add_days(val, 7)
                acc.add_frac_days(frac, 7)
            elif unit == "D":
                acc.add_days(val, 1)
                acc.add_frac_micros(frac, _US_DAY)
            elif unit in ("T", "", "-"):
                if unit != "-" and _int_width(s, start) == 8 and not havefield:
                    acc.add_years(_trunc_div(val, 10000), 1)
                    acc.add_months(_trunc_div(val, 100) - _trunc_div(val, 10000) * 100)
                    acc.add_days(val - _trunc_div(val, 100) * 100, 1)
                    acc.add_frac_micros(frac, _US_DAY)
                    if unit == "":
                        return acc
                    datepart, havefield = False, False
                    continue
                if havefield:
                    raise _BadFormat
                acc.add_years(val, 1)
                acc.add_frac_years(frac, 1)
                if unit == "":
                    return acc
                if unit == "T":
                    datepart, havefield = False, False
                    continue
                val, frac, i = _iso_number(s, i)
                acc.add_months(val)
                acc.add_frac_days(frac, 30)
                if i >= len(s):
                    return acc
                if s[i] == "T":
                    datepart, havefield = False, False
                    i += 1
                    continue
                if s[i] != "-":
                    raise _BadFormat
                val, frac, i = _iso_number(s, i + 1)
                acc.add_days(val, 1)
                acc.add_frac_micros(frac, _US_DAY)
                if i >= len(s):
                    return acc
                if s[i] == "T":
                    datepart, havefield = False, False
                    i += 1
                    continue
                raise _BadFormat
            else:
                raise _BadFormat
        else:
            if unit in ("H", "M", "S"):
                acc.add_micros(val, frac, {"H": _US_HOUR, "M": _US_MINUTE, "S": _US_SECOND}[unit])
            elif unit in ("", ":"):
                if unit == "" and _int_width(s, start) == 6 and not havefield:
                    acc.add_micros(_trunc_div(val, 10000), 0, _US_HOUR)
                    acc.add_micros(_trunc_div(val, 100) - _trunc_div(val, 10000) * 100, 0, _US_MINUTE)
                    acc.add_micros(val - _trunc_div(val, 100) * 100, 0, _US_SECOND)
                    acc.add_frac_micros(frac, 1)
                    return acc
                if havefield:
                    raise _BadFormat
                acc.add_micros(val, frac, _US_HOUR)
                if unit == "":
                    return acc
                val, frac, i = _iso_number(s, i)
                acc.add_micros(val, frac, _US_MINUTE)
                if i >= len(s):
                    return acc
                if s[i] != ":":
                    raise _BadFormat
                val, frac, i = _iso_number(s, i + 1)
                acc.add_micros(val, frac, _US_SECOND)
                if i >= len(s):
                    return acc
                raise _BadFormat
            else:
                raise _BadFormat
        havefield = True
    return acc


def parse_interval(s: str, fields: int | None = None, precision: int | None = None,
                   style: str = "postgres") -> Interval:
    """``interval`` input as PostgreSQL's ``interval_in`` with typmod (``fields`` a mask of
    ``FIELD_NAMES`` or None, ``precision`` 0..6 or None) in the session's IntervalStyle
    ``style`` (``STYLES``): see the module's docstring.

    Raises:
        SqlError 22007 ``invalid input syntax for type interval``; 22015 ``interval field
        value out of range``; 22008 ``interval out of range`` (months past int32)."""
    try:
        try:
            acc = _decode(_split_fields(s), fields, style == "sql_standard")
        except _BadFormat:
            acc = _decode_iso8601(s)
    except _BadFormat:
        raise SqlError(INVALID_DATETIME_FORMAT, f'invalid input syntax for type interval: "{s}"') from None
    except _FieldOverflow:
        raise SqlError(INTERVAL_FIELD_OVERFLOW, f'interval field value out of range: "{s}"') from None
    months = acc.years * 12 + acc.months
    if not _INT32[0] <= months <= _INT32[1]:
        raise SqlError(DATETIME_FIELD_OVERFLOW, "interval out of range")
    iv = Interval(months, acc.days, acc.micros)
    return adjust_interval(iv, fields, precision) if fields is not None or precision is not None else iv


# -- output ------------------------------------------------------------------------------

def interval_parts(iv: Interval) -> tuple[int, int, int, int, int, int, int]:
    """interval2itm: (years, months, days, hours, minutes, seconds, microseconds), each
    with the sign of its PostgreSQL field (C division truncates toward zero)."""
    y, mo = _trunc_div(iv.months, 12), iv.months - _trunc_div(iv.months, 12) * 12
    t = iv.micros
    h = _trunc_div(t, _US_HOUR)
    t -= h * _US_HOUR
    mi = _trunc_div(t, _US_MINUTE)
    t -= mi * _US_MINUTE
    sec = _trunc_div(t, _US_SECOND)
    return y, mo, iv.days, h, mi, sec, t - sec * _US_SECOND


def _seconds(sec: int, usec: int, fill: bool) -> str:
    """AppendSeconds: absolute seconds, two digits when ``fill``, fraction without
    trailing zeros."""
    out = f"{abs(sec):02d}" if fill else str(abs(sec))
    if usec:
        out += f".{abs(usec):06d}".rstrip("0")
    return out


def format_interval(iv: Interval, style: str = "postgres") -> str:
    """``interval_out`` in IntervalStyle ``style`` (``STYLES``), e.g. for
    1 year 2 months 3 days 04:05:06: postgres ``1 year 2 mons 3 days 04:05:06``,
    postgres_verbose ``@ 1 year 2 mons 3 days 4 hours 5 mins 6 secs``, sql_standard
    ``+1-2 +3 +4:05:06``, iso_8601 ``P1Y2M3DT4H5M6S`` (EncodeInterval, datetime.c)."""
    y, mo, d, h, mi, sec, us = interval_parts(iv)
    if style == "iso_8601":
        if not any((y, mo, d, h, mi, sec, us)):
            return "PT0S"
        out = "P" + "".join(f"{v}{u}" for v, u in ((y, "Y"), (mo, "M"), (d, "D")) if v)
        if h or mi or sec or us:
            out += "T" + "".join(f"{v}{u}" for v, u in ((h, "H"), (mi, "M")) if v)
        if sec or us:
            out += ("-" if sec < 0 or us < 0 else "") + _seconds(sec, us, False) + "S"
        return out
    if style == "sql_standard":
        neg = any(v < 0 for v in (y, mo, d, h, mi, sec, us))
        pos = any(v > 0 for v in (y, mo, d, h, mi, sec, us))
        has_ym, has_dt = bool(y or mo), bool(d or h or mi or sec or us)
        standard = not (neg and pos) and not (has_ym and has_dt)
        if not neg and not pos:
            return "0"
        if not standard:
            ys = "-" if y < 0 or mo < 0 else "+"
            ds = "-" if d < 0 else "+"
            ts = "-" if h < 0 or mi < 0 or sec < 0 or us < 0 else "+"
            return f"{ys}{abs(y)}-{abs(mo)} {ds}{abs(d)} {ts}{abs(h)}:{abs(mi):02d}:" + _seconds(sec, us, True)
        sign = "-" if neg else ""
        if has_ym:
            return f"{sign}{abs(y)}-{abs(mo)}"
        hms = f"{abs(h)}:{abs(mi):02d}:" + _seconds(sec, us, True)
        return f"{sign}{abs(d)} {hms}" if d else sign + hms
    if style == "postgres_verbose":
        out, is_zero, is_before = "@", True, False
        for v, unit in ((y, "year"), (mo, "mon"), (d, "day"), (h, "hour"), (mi, "min")):
            if v == 0:
                continue
            if is_zero:
                is_before, v = v < 0, abs(v)
            elif is_before:
                v = -v
            out += f" {v} {unit}{'' if v == 1 else 's'}"
            is_zero = False
        if sec or us:
            out += " "
            if sec < 0 or (sec == 0 and us < 0):
                if is_zero:
                    is_before = True
                elif not is_before:
                    out += "-"
            elif is_before:
                out += "-"
            out += _seconds(sec, us, False) + f" sec{'s' if abs(sec) != 1 or us else ''}"
            is_zero = False
        if is_zero:
            out += " 0"
        return out + (" ago" if is_before else "")
    out, is_zero, is_before = "", True, False
    for v, unit in ((y, "year"), (mo, "mon"), (d, "day")):
        if v == 0:
            continue
        out += f"{'' if is_zero else ' '}{'+' if is_before and v > 0 else ''}{v} {unit}{'s' if v != 1 else ''}"
        is_before, is_zero = v < 0, False
    if is_zero or h or mi or sec or us:
        minus = h < 0 or mi < 0 or sec < 0 or us < 0
        out += (f"{'' if is_zero else ' '}{'-' if minus else '+' if is_before else ''}"
                f"{abs(h):02d}:{abs(mi):02d}:" + _seconds(sec, us, True))
    return out
