"""``to_char(interval, text)`` (PostgreSQL 9.8, table 9.30): an interval's fields through
the date/time template patterns, as formatting.c's interval_to_char does.

The interval is split as interval2tm splits it (C's truncating division): years and
months from its months, days as they are, hours (not wrapped at 24), minutes, seconds and
microseconds from its time; each field keeps the interval's sign. The patterns that name
a calendar date (day and month names, D, ID, time zones, eras) are PostgreSQL's 22007;
those whose interval answers follow calendar arithmetic sqlfront does not reproduce here
(ISO and week numbering, Julian days, Roman months, ``Y,YYY``, FX) are refused with
0A000. The FM prefix drops the padding; TM and SP change nothing here, as in PostgreSQL. On table data the replica runs the same Python
(``by_python``). It must not know the timestamp patterns' rules (``datetime.to_char_py``).
"""

from __future__ import annotations

import re

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, INVALID_DATETIME_FORMAT
from planner.functions.registry import Function, by_python, register, sig

#: the patterns answered, by their upper-case name (lower-case spellings are aliases)
_NUMBERS = ("HH24", "HH12", "HH", "MI", "SSSSS", "SSSS", "SS", "MS", "US", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6",
            "DDD", "DD", "MM", "YYYY", "YYY", "YY", "Y", "CC", "Q")
_MERIDIAN = ("A.M.", "P.M.", "AM", "PM")
#: calendar patterns: PostgreSQL's 22007 for an interval
_CALENDAR = ("DAY", "Day", "day", "DY", "Dy", "dy", "MONTH", "Month", "month", "MON", "Mon", "mon", "ID", "id", "D",
             "d", "TZH", "tzh", "TZM", "tzm", "TZ", "tz", "OF", "of", "B.C.", "b.c.", "A.D.", "a.d.", "BC", "bc", "AD",
             "ad")
#: patterns PostgreSQL answers for an interval that are not implemented here: 0A000
_REFUSED = ("IDDD", "iddd", "IYYY", "iyyy", "IYY", "iyy", "IY", "iy", "IW", "iw", "I", "i", "WW", "ww", "W", "w", "J",
            "j", "RM", "rm", "Y,YYY", "y,yyy", "FX", "fx")
_KEYWORDS = sorted({*_NUMBERS, *(k.lower() for k in _NUMBERS), *_MERIDIAN, *(k.lower() for k in _MERIDIAN),
                    *_CALENDAR, *_REFUSED}, key=len, reverse=True)
_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"?|\\(")|(FM|fm)?(?:TM|tm)?(' + "|".join(map(re.escape, _KEYWORDS))
                    + r")(TH|th)?(?:SP)?|FM|fm|TM|tm|(.)", re.S)
_NO_CALENDAR = "invalid format specification for an interval value"


def _tdiv(a: int, b: int) -> int:
    """C's integer division (truncating toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _trem(a: int, b: int) -> int:
    """C's remainder (the sign of ``a``)."""
    return a - b * _tdiv(a, b)


def _num(v: int, width: int) -> str:
    """C's ``%0*d``: zero-padded to ``width`` characters, the sign among them."""
    return ("-" + str(-v).zfill(width - 1)) if v < 0 else str(v).zfill(width)


def _fields(iv) -> dict:
    """interval2tm's fields of ``iv`` (``catalog.types.Interval``): ``interval_parts``."""
    from catalog.intervalio import interval_parts

    year, mon, mday, hour, minute, sec, fsec = interval_parts(iv)
    return {"year": year, "mon": mon, "mday": mday, "hour": hour, "min": minute, "sec": sec, "fsec": fsec}


def _number(tok: str, f: dict, fm: bool) -> str:
    """A number pattern's text: its field, padded as PostgreSQL pads it (one more place
    for a negative value; none with FM)."""
    def pad(v: int, width: int, signed: bool = True) -> str:
        return str(v) if fm else _num(v, width + (1 if signed and v < 0 else 0))

    hour, year = f["hour"], f["year"]
    if tok in ("HH", "HH12"):
        h12 = _trem(hour, 12)
        return str(12 if h12 == 0 else h12) if fm else _num(12 if h12 == 0 else h12, 2 if hour >= 0 else 3)
    if tok.startswith("FF") or tok in ("MS", "US"):  # fixed width, FM or not (the sign among the places)
        width = int(tok[2]) if tok.startswith("FF") else 3 if tok == "MS" else 6
        return _num(_tdiv(f["fsec"], 10 ** (6 - width)), width)
    if tok in ("SSSS", "SSSSS"):
        return str(hour * 3600 + f["min"] * 60 + f["sec"])
    if tok == "DD":
        return pad(f["mday"], 2, signed=False)
    if tok == "DDD":
        return pad((year * 12 + f["mon"]) * 30 + f["mday"], 3, signed=False)
    if tok == "Q":
        return "" if f["mon"] == 0 else str(_tdiv(f["mon"] - 1, 3) + 1)
    if tok == "CC":
        return pad(_tdiv(year, 100), 2)
    value = {"HH24": hour, "MI": f["min"], "SS": f["sec"], "MM": f["mon"], "YYYY": year,
             "YYY": _trem(year, 1000), "YY": _trem(year, 100), "Y": _trem(year, 10)}[tok]
    width = {"YYYY": 4, "YYY": 3, "Y": 1}.get(tok, 2)
    return pad(value, width)


def _ordinal(text: str, th: str | None) -> str:
    """``text`` with the TH/th suffix (formatting.c get_th: by its last digit; 11-13 th)."""
    if not th or not text or not text[-1].isdigit():
        return text
    last, tens = text[-1], text[-2:-1]
    suffix = "th" if tens == "1" else {"1": "st", "2": "nd", "3": "rd"}.get(last, "th")
    return text + (suffix.upper() if th == "TH" else suffix)


def interval_to_char(iv, fmt: str) -> str | None:
    """``to_char(iv, fmt)``: NULL for an empty format, as PostgreSQL's.

    Raises:
        SqlError 22007 for a calendar pattern (a day or month name, D, ID, a time zone, an
        era); 0A000 for the patterns not implemented for intervals (see the module)."""
    if not fmt:
        return None
    f = _fields(iv)
    out = []
    for m in _TOKEN.finditer(fmt):
        quoted, quote, fm, tok, th, lit = m.groups()
        if quoted is not None:
            out.append(re.sub(r"\\(.)", r"\1", quoted))
        elif quote is not None:
            out.append(quote)
        elif lit is not None:
            out.append(lit)
        elif tok in _CALENDAR:
            raise SqlError(INVALID_DATETIME_FORMAT, _NO_CALENDAR, hint="Intervals are not tied to specific calendar dates.")
        elif tok is None:  # a prefix without a pattern: nothing
            continue
        elif tok in _REFUSED:
            raise SqlError(FEATURE_NOT_SUPPORTED, f'to_char of an interval does not support the pattern "{m.group(0)}"')
        elif tok.upper() in _MERIDIAN:
            pm = _trem(f["hour"], 24) >= 12
            word = ("P.M." if pm else "A.M.") if "." in tok else ("PM" if pm else "AM")
            out.append(word.lower() if tok.islower() else word)
        else:
            out.append(_ordinal(_number(tok.upper(), f, bool(fm)), th))
    return "".join(out)


register(
    Function("to_char_interval", (sig("interval", "text", ret="text"),), lambda a, e: interval_to_char(a[0], a[1]),
             by_python, sql_names=("to_char",), doc="9.8",
             samples=("to_char(make_interval(hours => i, mins => k, secs => f), 'HH24:MI:SS.MS')",
                      "to_char(make_interval(years => i, months => k, days => -k), 'YYYY YYY YY Y MM DD DDD Q CC')",
                      "to_char(make_interval(hours => 12 * i, secs => f), 'HH HH12 AM a.m. p.m. PM US FF1 FF6 SSSS')",
                      "to_char(make_interval(hours => i, mins => -k), 'FMHH24:FMMI FMDD FMMS \"h\\\"\" \\\"x')",
                      "to_char(interval '-1 year -2 mons -3 days -4 hours -5 min -6.7 s', "
                      "'YYYY-MM-DD HH24:MI:SS.US HH12 SSSSS DDD FF3')",
                      "to_char(interval '100 years 1 mon 2 days 25:00:00.123456', 'CC YYYY DDD HH AM')",
                      "to_char(make_interval(days => k), s)", "to_char(make_interval(days => k), 'Day')",
                      "to_char(interval '15h 2m 12s', '')", "to_char(make_interval(days => k), 'Mon TZ')")),
)
