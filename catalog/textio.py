"""Text input and output of SQL values, as PostgreSQL's type input/output functions.

``parse_text`` is what ``'...'::type`` and COPY text/CSV do; ``format_text`` is what
a value looks like in a text-format DataRow. Rules and messages follow PostgreSQL
(section 8 of the manual, and the ``*in``/``*out`` functions in ``src/backend/utils/adt``).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation, ROUND_HALF_UP

import numpy as np

from catalog.errors import (
    SqlError, ARRAY_SUBSCRIPT_ERROR, DATETIME_FIELD_OVERFLOW, FEATURE_NOT_SUPPORTED, INVALID_DATETIME_FORMAT,
    INVALID_PARAMETER_VALUE, INVALID_TEXT_REPRESENTATION, INVALID_TIME_ZONE_DISPLACEMENT_VALUE,
    NUMERIC_VALUE_OUT_OF_RANGE, STRING_DATA_RIGHT_TRUNCATION,
)
from catalog import mztime
from catalog.intervalio import format_interval, parse_interval, round_micros
from catalog.types import (FarDate, FarTimestamp, SqlType, date2j, date_from_days, j2date,
                           timestamp_from_micros, timestamp_micros)

INT_RANGES = {
    "int2": (-(2**15), 2**15 - 1, "smallint"),
    "int4": (-(2**31), 2**31 - 1, "integer"),
    "int8": (-(2**63), 2**63 - 1, "bigint"),
    "oid": (0, 2**32 - 1, "oid"),
}


#: the longest name (an identifier, a value of type name), in UTF-8 bytes: PostgreSQL's
#: NAMEDATALEN - 1
MAX_NAME_BYTES = 63


def truncate_name(s: str) -> str:
    """``s`` cut to its longest prefix of at most ``MAX_NAME_BYTES`` UTF-8 bytes that ends
    at a character boundary (PostgreSQL's pg_mbcliplen, as namein and the scanner's
    truncate_identifier cut); a shorter ``s`` as it is."""
    encoded = s.encode("utf-8", "surrogatepass")
    if len(encoded) <= MAX_NAME_BYTES:
        return s
    return encoded[:MAX_NAME_BYTES].decode("utf-8", "ignore")


def check_int(v: int, t: SqlType) -> int:
    """``v`` if it fits ``t`` (int2/int4/int8), else 22003 ``integer out of range``."""
    lo, hi, name = INT_RANGES[t.name]
    if not lo <= v <= hi:
        raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f"{name} out of range")
    return v


def fit_numeric(d: Decimal, t: SqlType) -> Decimal:
    """Round ``d`` to ``t``'s scale (half away from zero) and check its precision.

    Raises 22003 ``numeric field overflow`` as PostgreSQL's ``apply_typmod`` does."""
    if t.precision is None or not d.is_finite():
        return d
    scale = t.scale or 0
    q = d.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    if q != 0 and q.adjusted() >= t.precision - scale:
        raise SqlError(
            NUMERIC_VALUE_OUT_OF_RANGE,
            "numeric field overflow",
            detail=f"A field with precision {t.precision}, scale {scale} must round to an absolute value less than 10^{t.precision - scale}.",
        )
    return q


def fit_string(s: str, t: SqlType, explicit: bool) -> str:
    """Apply a varchar(n)/char(n) length: an explicit cast truncates, an assignment
    errors with 22001 unless only spaces are cut; char(n) pads with spaces."""
    n = t.precision
    if n is not None and len(s) > n:
        if not explicit and s[n:].strip(" "):
            shown = "character varying" if t.name == "varchar" else "character"
            raise SqlError(STRING_DATA_RIGHT_TRUNCATION, f"value too long for type {shown}({n})")
        s = s[:n]
    if t.name == "bpchar" and n is not None:
        s = s.ljust(n)
    return s


def parse_text(s: str, t: SqlType, explicit: bool = True, fmt: TextFormat | None = None):
    """Parse text ``s`` as a value of type ``t``, under the session's settings ``fmt``
    (:class:`TextFormat`: its TimeZone and IntervalStyle; by default UTC and postgres).

    Raises:
        SqlError 22P02 (bad syntax), 22003 (out of range), 22007/22008 (dates), 22001.
    """
    n = t.name
    if n in INT_RANGES:
        try:
            v = int(s.strip())
        except ValueError:
            raise SqlError(
                INVALID_TEXT_REPRESENTATION,
                f'invalid input syntax for type {INT_RANGES[n][2]}: "{s}"',
            ) from None
        lo, hi, name = INT_RANGES[n]
        if not lo <= v <= hi:
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f'value "{s}" is out of range for type {name}')
        return v
    if n == "numeric":
        try:
            d = Decimal(s.strip())
        except InvalidOperation:
            raise SqlError(INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type numeric: "{s}"') from None
        if d.is_infinite() or (d.is_nan() and s.strip().lower() != "nan"):
            raise SqlError(INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type numeric: "{s}"')
        return fit_numeric(d, t)
    if n in ("float4", "float8"):
        txt = s.strip().lower()
        special = {"infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf, "inf": math.inf,
                   "-inf": -math.inf, "nan": math.nan}
        if txt in special:
            return special[txt]
        try:
            v = float(txt)
        except ValueError:
            name = "real" if n == "float4" else "double precision"
            raise SqlError(INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type {name}: "{s}"') from None
        if math.isinf(v) or (n == "float4" and abs(v) > 3.4028234663852886e38):
            raise SqlError(NUMERIC_VALUE_OUT_OF_RANGE, f'"{s}" is out of range for type {"real" if n == "float4" else "double precision"}')
        return float(np.float32(v)) if n == "float4" else v
    if n == "bool":
        # boolin: case-insensitive unique prefixes of true/false/yes/no, plus on/off/1/0.
        txt = s.strip().lower()
        if txt in ("1", "on"):
            return True
        if txt in ("0", "of", "off"):
            return False
        for word, val in (("true", True), ("false", False), ("yes", True), ("no", False)):
            if txt and word.startswith(txt):
                return val
        raise SqlError(INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type boolean: "{s}"')
    if n in ("text", "unknown"):
        return s
    if n == "name":  # namein truncates, silently
        return truncate_name(s)
    if n in ("varchar", "bpchar"):
        return fit_string(s, t, explicit)
    if n == "date":
        return parse_date(s)
    if n == "timestamp":
        return fit_datetime(parse_timestamp(s), t)
    if n == "timestamptz":
        return fit_datetime(parse_timestamptz(s, (fmt or DEFAULT_FORMAT).time_zone), t)
    if n == "interval":
        return parse_interval(s, t.scale, t.precision, (fmt or DEFAULT_FORMAT).interval_style)
    if n == "time":
        return fit_datetime(parse_time(s), t)
    if n == "timetz":
        return fit_datetime(parse_timetz(s, (fmt or DEFAULT_FORMAT).time_zone), t)
    if n == "bytea":
        return parse_bytea(s)
    if n == "uuid":
        return parse_uuid(s)
    if n == "jsonb":
        return parse_jsonb(s)
    if n == "mz_timestamp":
        return parse_mz_timestamp(s, (fmt or DEFAULT_FORMAT).time_zone)
    if t.is_array:
        return map_elements(split_array(s, t), lambda e: parse_text(e, t.element, explicit, fmt))
    if t.is_list or t.is_map:
        from catalog import listmapio

        e = t.element
        parse = listmapio.parse_list if t.is_list else listmapio.parse_map
        return parse(s, e.is_list if t.is_list else e.is_map, lambda x: parse_text(x, e, explicit, fmt))
    raise SqlError(INVALID_TEXT_REPRESENTATION, f"cannot parse text as {t.sql()}")


#: minutes and seconds may have one digit (DecodeTime: ``'1:2:3'`` is 01:02:03)
_TIME = re.compile(r"^\s*(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?\s*$")


def parse_time(s: str) -> dt.time:
    """``time without time zone`` input, ``HH:MM[:SS[.ffffff]]`` (PostgreSQL 8.5.1.2)."""
    m = _TIME.match(s)
    if not m:
        raise SqlError(INVALID_DATETIME_FORMAT, f'invalid input syntax for type time: "{s}"')
    h, mi, sec, frac = m.groups()
    try:
        t = dt.time(int(h), int(mi), int(sec or 0))
    except ValueError:
        raise SqlError(DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{s}"') from None
    micro = _fraction_micros(frac)
    if micro < 1_000_000:
        return t.replace(microsecond=micro)
    carried = dt.datetime.combine(dt.date(2000, 1, 1), t) + dt.timedelta(seconds=1)
    if carried.day != 1:
        raise SqlError(FEATURE_NOT_SUPPORTED, "time values of 24:00:00 are not supported")
    return carried.time()


def _fraction_micros(frac: str | None) -> int:
    """Microseconds of the digits after a seconds' point, rounded as PostgreSQL's
    ``ParseFractionalSecond`` (rint of a double: half to even); 1000000 carries."""
    return int(round(float("0." + frac) * 1_000_000)) if frac else 0


_TIMETZ = re.compile(r"^\s*(\d{1,2}:\d{1,2}(?::\d{1,2}(?:\.\d{1,9})?)?)\s*(?:(Z|UTC|GMT)|([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?)?\s*$",
                     re.I)


def parse_timetz(s: str, zone: dt.tzinfo = dt.timezone.utc) -> dt.time:
    """``time with time zone`` input (PostgreSQL 8.5.1.3): a time, then a UTC offset
    (``+02``, ``-05:30``, ``+01:02:03``, ``Z``); without one, the session's time zone
    ``zone``'s offset today. Returns an aware ``datetime.time`` with a fixed offset; PostgreSQL
    allows offsets up to 15:59:59 (22009 past it)."""
    m = _TIMETZ.match(s)
    if not m:
        raise SqlError(INVALID_DATETIME_FORMAT, f'invalid input syntax for type time with time zone: "{s}"')
    t = parse_time(m.group(1))
    offset = 0 if m.group(2) else int(dt.datetime.now(zone).utcoffset().total_seconds())
    if m.group(3):
        offset = int(m.group(4)) * 3600 + int(m.group(5) or 0) * 60 + int(m.group(6) or 0)
        if int(m.group(4)) > 15 or int(m.group(5) or 0) > 59 or int(m.group(6) or 0) > 59:
            raise SqlError(INVALID_TIME_ZONE_DISPLACEMENT_VALUE, f'time zone displacement out of range: "{s}"')
        offset = -offset if m.group(3) == "-" else offset
    return t.replace(tzinfo=dt.timezone(dt.timedelta(seconds=offset)))


def format_utc_offset(seconds: int) -> str:
    """A UTC offset as PostgreSQL's ``EncodeTimezone`` writes it: ``+02``, ``-05:30``,
    ``+01:02:03`` (seconds east of UTC)."""
    sign = "-" if seconds < 0 else "+"
    h, rem = divmod(abs(seconds), 3600)
    m, sec = divmod(rem, 60)
    return f"{sign}{h:02d}" + (f":{m:02d}" if m or sec else "") + (f":{sec:02d}" if sec else "")


def parse_bytea(s: str) -> bytes:
    """bytea input in hex (``\\x0aff``) or escape format (PostgreSQL 8.4.1, 8.4.2)."""
    if s.startswith("\\x"):
        digits = "".join(s[2:].split())
        try:
            if len(digits) % 2:
                raise ValueError
            return bytes.fromhex(digits)
        except ValueError:
            raise SqlError(INVALID_TEXT_REPRESENTATION, "invalid hexadecimal data: odd number of digits"
                           if len(digits) % 2 else "invalid hexadecimal digit") from None
    return parse_bytea_escape(s)


def parse_bytea_escape(s: str, sqlstate: str = INVALID_TEXT_REPRESENTATION) -> bytes:
    """bytea's escape format (PostgreSQL 8.4.2): ``\\\\`` is a backslash, ``\\nnn`` an
    octal byte, any other character its UTF-8 bytes; ``decode(s, 'escape')`` too.

    Raises:
        SqlError ``sqlstate`` for any other backslash sequence: 22P02 for bytea input,
        22023 for ``decode`` (PostgreSQL's ``esc_decode``)."""
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
        elif s[i + 1 : i + 2] == "\\":
            out.append(0x5C)
            i += 2
        elif re.match(r"[0-3][0-7]{2}", s[i + 1 : i + 4]):
            out.append(int(s[i + 1 : i + 4], 8))
            i += 4
        else:
            raise SqlError(sqlstate, "invalid input syntax for type bytea")
    return bytes(out)


def parse_uuid(s: str) -> str:
    """uuid input: 32 hex digits, optional hyphens and braces; returns the canonical
    lowercase ``8-4-4-4-12`` form (PostgreSQL 8.12)."""
    body = s.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    digits = body.replace("-", "")
    if len(digits) != 32 or not re.fullmatch(r"[0-9a-fA-F]{32}", digits) or body.startswith("-") or "--" in body:
        raise SqlError(INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type uuid: "{s}"')
    d = digits.lower()
    return f"{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:]}"


def _reject_constant(name: str):
    raise ValueError(name)


def parse_jsonb(s: str) -> str:
    """jsonb input; returns jsonb's normalized text (see ``jsonb_text``)."""
    try:
        doc = json.loads(s, parse_float=Decimal, parse_constant=_reject_constant)
    except ValueError:
        raise SqlError(INVALID_TEXT_REPRESENTATION, "invalid input syntax for type json",
                       detail=f"Token in \"{s[:40]}\" is invalid.") from None
    return jsonb_text(doc)


def jsonb_text(doc) -> str:
    """jsonb_out of a decoded JSON document: object keys ordered shorter first, then
    bytewise, duplicates keep the last value, ``", "`` and ``": "`` separators
    (PostgreSQL 8.14.4 "jsonb Containment and Existence"; jsonb.c)."""
    if isinstance(doc, dict):
        keys = sorted(doc, key=lambda k: (len(k.encode()), k.encode()))
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {jsonb_text(doc[k])}" for k in keys) + "}"
    if isinstance(doc, list):
        return "[" + ", ".join(jsonb_text(v) for v in doc) + "]"
    if isinstance(doc, bool) or doc is None:
        return json.dumps(doc)
    if isinstance(doc, Decimal):
        return format(doc.copy_abs() if doc.is_zero() else doc, "f")  # numeric has no -0
    if isinstance(doc, (int, float)):
        return format(Decimal(str(doc)), "f")
    return json.dumps(doc, ensure_ascii=False)


#: what array_in skips around elements (PostgreSQL's scanner_isspace; not Python's
#: isspace, which also takes control characters such as \x1c and \x85)
_ARRAY_SPACE = " \t\n\r\v\f"
_BOUNDS = re.compile(r"^\s*((?:\[\s*[+-]?\d+\s*(?::\s*[+-]?\d+\s*)?\])+)\s*=\s*")


def split_array(s: str, t: SqlType) -> list:
    """The element texts of an array literal ``{a,"b c",NULL}`` (PostgreSQL 8.15.2,
    array_in); unquoted NULL is a NULL element. A literal of several dimensions,
    ``{{1,2},{3,4}}``, gives nested lists, which must be rectangular. Explicit bounds
    (``[0:1]={a,b}``) are checked against the elements and then dropped: arrays here
    start at 1.

    Raises:
        SqlError 22P02 for malformed literals (and sub-arrays of unequal sizes)."""
    bad = SqlError(INVALID_TEXT_REPRESENTATION, f'malformed array literal: "{s}"')
    txt = s
    dims_given = None
    m = _BOUNDS.match(txt)
    if m:
        dims_given = []
        for lo_hi in re.findall(r"\[([^\]]*)\]", m.group(1)):
            lo, _, hi = lo_hi.partition(":")
            lo, hi = (int(lo), int(hi)) if hi else (1, int(lo))
            if hi < lo:
                raise SqlError(ARRAY_SUBSCRIPT_ERROR, "upper bound cannot be less than lower bound")
            dims_given.append(hi - lo + 1)
        txt = txt[m.end():]
    txt = txt.strip(_ARRAY_SPACE)
    if not txt.startswith("{"):
        raise bad
    pos = 0

    def parse_level():
        nonlocal pos
        pos += 1  # the opening brace
        out: list = []
        while True:
            while pos < len(txt) and txt[pos] in _ARRAY_SPACE:
                pos += 1
            if pos >= len(txt):
                raise bad
            c = txt[pos]
            if c == "}" and not out:
                pos += 1
                return out
            if c == "{":
                out.append(parse_level())
            elif c == '"':
                pos += 1
                buf = []
                while pos < len(txt) and txt[pos] != '"':
                    if txt[pos] == "\\" and pos + 1 < len(txt):
                        pos += 1
                    buf.append(txt[pos])
                    pos += 1
                if pos >= len(txt):
                    raise bad
                pos += 1
                out.append("".join(buf))
            else:
                buf = []
                quoted_escape = False
                while pos < len(txt) and txt[pos] not in ",{}\"":
                    if txt[pos] == "\\" and pos + 1 < len(txt):
                        pos += 1
                        quoted_escape = True
                    buf.append(txt[pos])
                    pos += 1
                word = "".join(buf).strip(_ARRAY_SPACE)
                if not word:
                    raise bad
                out.append(None if word.upper() == "NULL" and not quoted_escape else word)
            while pos < len(txt) and txt[pos] in _ARRAY_SPACE:
                pos += 1
            if pos >= len(txt):
                raise bad
            if txt[pos] == "}":
                pos += 1
                return out
            if txt[pos] != ",":
                raise bad
            pos += 1

    out = parse_level()
    if txt[pos:].strip(_ARRAY_SPACE):
        raise bad
    dims = array_dims(out, bad)
    if dims_given is not None and dims and dims_given != dims:
        raise SqlError(INVALID_TEXT_REPRESENTATION, f'malformed array literal: "{s}"',
                       detail="Specified array dimensions do not match array contents.")
    return out


def array_dims(v: list, error: SqlError | None = None) -> list[int]:
    """The size of each dimension of an array value (nested lists, rectangular; ``[]``
    for an empty array). Raises ``error`` (default 2202E, as ARRAY[...] does) when the
    sub-arrays differ in size or depth."""
    if not v:
        return []
    err = error or SqlError(ARRAY_SUBSCRIPT_ERROR, "multidimensional arrays must have array expressions with matching dimensions")
    nested = [isinstance(e, list) for e in v]
    if not any(nested):
        return [len(v)]
    if not all(nested):
        raise err
    inner = [array_dims(e, error) for e in v]
    if any(d != inner[0] for d in inner) or not inner[0]:
        raise err
    return [len(v)] + inner[0]


def map_elements(v: list, f) -> list:
    """``v`` (an array value, nested lists for several dimensions) with ``f`` applied to
    each non-NULL element."""
    return [map_elements(e, f) if isinstance(e, list) else None if e is None else f(e) for e in v]


_DATE = re.compile(r"^\s*(\d{1,7})-(\d{1,2})-(\d{1,2})\s*$")
_TS = re.compile(
    r"^\s*(\d{1,7})-(\d{1,2})-(\d{1,2})(?:[ T]+(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?\s*$"
)
_ERA = re.compile(r"\s+(BC|AD)\s*$", re.I)
#: date_in's and timestamp_in's special words (PostgreSQL 8.5.1.4) with fixed values
_SPECIAL = {"infinity": "infinity", "+infinity": "infinity", "-infinity": "-infinity", "epoch": "epoch"}


def _era(s: str) -> tuple[str, bool]:
    """``s`` without a trailing ``BC``/``AD``, and whether it was BC."""
    m = _ERA.search(s)
    return (s[: m.start()], m.group(1).upper() == "BC") if m else (s, False)


def _days(y: int, mo: int, d: int, bc: bool, s: str) -> int:
    """Days since 2000-01-01 of a date as written (year 1 BC is year 0).

    Raises:
        SqlError 22008 for a month or day that does not exist, or a year past the range."""
    if bc:
        y = 1 - y
    if y == 0 and not bc or not 1 <= mo <= 12 or not 1 <= d <= 31:
        raise SqlError(DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{s}"')
    j = date2j(y, mo, d)
    if j2date(j) != (y, mo, d):
        raise SqlError(DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{s}"')
    if not 0 <= j <= 2147483494:
        raise SqlError(DATETIME_FIELD_OVERFLOW, f'date out of range: "{s}"')
    return j - 2451545


def parse_date(s: str):
    """``date`` input (PostgreSQL 8.5.1.1): ``YYYY-MM-DD`` (a timestamp's date part is
    taken), ``BC``, years past 9999, ``infinity``, ``-infinity``, ``epoch``. A
    ``datetime.date`` where Python has one, else a FarDate.

    Raises:
        SqlError 22007 for bad syntax; 22008 for dates that do not exist or are out of range."""
    word = _SPECIAL.get(s.strip().lower())
    if word == "epoch":
        return dt.date(1970, 1, 1)
    if word is not None:
        return FarDate(FarDate.INFINITY if word == "infinity" else FarDate.NEG_INFINITY)
    body, bc = _era(s)
    m = _DATE.match(body) or _TS.match(body)
    if not m:
        raise SqlError(INVALID_DATETIME_FORMAT, f'invalid input syntax for type date: "{s}"')
    return date_from_days(_days(int(m.group(1)), int(m.group(2)), int(m.group(3)), bc, s))


def parse_timestamp(s: str):
    """``timestamp`` input: ``YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]`` and what ``parse_date``
    takes besides. A ``datetime.datetime`` where Python has one, else a FarTimestamp."""
    word = _SPECIAL.get(s.strip().lower())
    if word == "epoch":
        return dt.datetime(1970, 1, 1)
    if word is not None:
        return FarTimestamp(FarTimestamp.INFINITY if word == "infinity" else FarTimestamp.NEG_INFINITY)
    body, bc = _era(s)
    m = _TS.match(body)
    if not m:
        raise SqlError(INVALID_DATETIME_FORMAT, f'invalid input syntax for type timestamp: "{s}"')
    y, mo, d, h, mi, sec, frac = m.groups()
    micro = _fraction_micros(frac)
    h, mi, sec = int(h or 0), int(mi or 0), int(sec or 0)
    if h > 24 or mi > 59 or sec > 60 or (h == 24 and (mi or sec or micro)):
        raise SqlError(DATETIME_FIELD_OVERFLOW, f'date/time field value out of range: "{s}"')
    days = _days(int(y), int(mo), int(d), bc, s)
    return timestamp_from_micros(days * 86_400_000_000 + ((h * 60 + mi) * 60 + sec) * 1_000_000 + micro, False)


_TZ = re.compile(r"^(.*?)(?:\s*(Z|UTC|[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?))?\s*$", re.I)

_POSIX_TZ = re.compile(r"^(?:[A-Za-z]{3,}|<[^>]+>)?([+-]?)(\d{1,2})(?::(\d{2})(?::(\d{2}))?)?$")


@functools.lru_cache(maxsize=256)
def parse_time_zone(value: str) -> dt.tzinfo:
    """A ``TimeZone`` setting as a tzinfo (PostgreSQL 8.5.3 "Time Zones"): a name of the
    IANA database (``Europe/Rome``, ``UTC``), a number of hours east of UTC (``-7``,
    ``5.5``), or a POSIX-style specification, whose offset is hours *west* of UTC
    (``'-02:00'`` and ``'XYZ-2'`` are two hours east; ``'NOSUCH0'`` is UTC).

    Raises:
        SqlError 22023 for anything else."""
    import zoneinfo

    v = value.strip()
    try:
        hours = float(v)
    except ValueError:
        hours = None
    if hours is not None and math.isfinite(hours) and abs(hours) < 168:
        return dt.timezone(dt.timedelta(hours=hours))
    m = _POSIX_TZ.match(v)
    if m:
        secs = int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60 + int(m.group(4) or 0)
        if secs < 168 * 3600:
            return dt.timezone(dt.timedelta(seconds=secs if m.group(1) == "-" else -secs))
    if v.upper() in ("UTC", "GMT", "Z", "ZULU", "UCT"):
        return dt.timezone.utc
    try:
        if v and not v.startswith(("/", ".")) and ".." not in v:
            return zoneinfo.ZoneInfo(v)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        pass
    lower = {z.lower(): z for z in _zone_names()}  # PostgreSQL matches names case-insensitively
    if v.lower() in lower:
        return zoneinfo.ZoneInfo(lower[v.lower()])
    raise SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "TimeZone": "{value}"')


@functools.cache
def _zone_names() -> frozenset[str]:
    import zoneinfo

    return frozenset(zoneinfo.available_timezones())


def parse_mz_timestamp(text: str, zone: dt.tzinfo = dt.timezone.utc) -> int:
    """mz_timestamp input (``catalog.mztime``): an unsigned integer, else a timestamptz
    literal (ms since the epoch; in time zone ``zone`` without an offset). Raises
    SqlError 22P02 / 22003."""
    s = text.strip()
    if s.isdigit():
        return mztime.checked(int(s))
    try:
        when = parse_timestamptz(s, zone)
    except SqlError:
        raise SqlError(INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type mz_timestamp: "{text}"') from None
    return mztime.from_value(when, "timestamptz")


def parse_timestamptz(s: str, zone: dt.tzinfo = dt.timezone.utc) -> dt.datetime:
    """``timestamp with time zone`` input: an offset (``+02``, ``-05:30``, ``+01:02:03``,
    ``Z``, ``UTC``) or, with none, the session time zone ``zone``.
    Returns an aware UTC datetime."""
    word = _SPECIAL.get(s.strip().lower())
    if word in ("infinity", "-infinity"):
        return FarTimestamp(parse_timestamp(s).micros, True)
    if word == "epoch":  # an instant: 1970-01-01 00:00:00+00 in every zone
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    body, bc = _era(s)
    era = " BC" if bc else ""
    if _TS.match(body):  # no offset ('2000-01-01' is not 2000-01 at -01)
        base, off = body, None
    else:
        m = _TZ.match(body)
        base, off = m.group(1), m.group(2)
    ts = parse_timestamp(base + era)
    if not off:
        if isinstance(ts, FarTimestamp):
            offset = 0 if zone is dt.timezone.utc else int(dt.datetime(2000, 1, 1, tzinfo=zone).utcoffset().total_seconds())
            return timestamp_from_micros(ts.micros - offset * 1_000_000, True)
        if zone is dt.timezone.utc:
            return ts.replace(tzinfo=dt.timezone.utc)
        try:
            return ts.replace(tzinfo=zone).astimezone(dt.timezone.utc)
        except OverflowError:
            return timestamp_from_micros(timestamp_micros(ts) - int(ts.replace(tzinfo=zone).utcoffset().total_seconds())
                                         * 1_000_000, True)
    offset = 0
    if off.upper() not in ("Z", "UTC"):
        sign = -1 if off.startswith("-") else 1
        digits = off[1:].replace(":", "")
        if len(digits) <= 2:
            digits = digits.zfill(2)
        offset = sign * (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60 + int(digits[4:6] or 0))
    return timestamp_from_micros(timestamp_micros(ts) - offset * 1_000_000, True)


def fit_datetime(v, t: SqlType):
    """``v`` (a timestamp, timestamptz, time or timetz value) rounded to ``t``'s
    fractional-second precision as PostgreSQL's ``AdjustTimestampForTypmod`` and
    ``AdjustTimeForTypmod`` do: half away from zero, timestamps counted from 2000-01-01
    (so ``'1999-12-31 23:59:59.5'::timestamp(0)`` is ``23:59:59``).

    Raises:
        SqlError 22008 past the timestamp range; 0A000 for a time that rounds up to
        ``24:00:00`` (PostgreSQL's answer, which ``datetime.time`` cannot hold)."""
    if t.name not in ("timestamp", "timestamptz", "time", "timetz") or t.precision is None or t.precision >= 6 \
            or v is None:
        return v
    if isinstance(v, dt.time):
        micros = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        r = round_micros(micros, t.precision)
        if r >= 86_400_000_000:
            raise SqlError(FEATURE_NOT_SUPPORTED, "time values of 24:00:00 are not supported")
        s, us = divmod(r, 1_000_000)
        return v.replace(hour=s // 3600, minute=s // 60 % 60, second=s % 60, microsecond=us)
    if isinstance(v, FarTimestamp) and v.infinite:
        return v
    return timestamp_from_micros(round_micros(timestamp_micros(v), t.precision), t.name == "timestamptz")


# -- output -------------------------------------------------------------------------


def format_float(v: float, t: SqlType) -> str:
    """PostgreSQL's float4out/float8out with extra_float_digits >= 1: the shortest text
    that reads back exactly, in ``%e`` style when the exponent is < -4 or >= 15 (6 for real)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0" if math.copysign(1, v) < 0 else "0"
    x = np.float32(v) if t.name == "float4" else np.float64(v)
    sci = np.format_float_scientific(x, unique=True, trim="-")
    mant, exp = sci.split("e")
    exp_i = int(exp)
    digits = mant.replace("-", "").replace(".", "")
    neg = mant.startswith("-")
    limit = 6 if t.name == "float4" else 15
    if exp_i < -4 or exp_i >= limit:
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        out = f"{m}e{'-' if exp_i < 0 else '+'}{abs(exp_i):02d}"
    elif exp_i >= 0:
        if len(digits) <= exp_i + 1:
            out = digits + "0" * (exp_i + 1 - len(digits))
        else:
            out = digits[: exp_i + 1] + "." + digits[exp_i + 1 :]
    else:
        out = "0." + "0" * (-exp_i - 1) + digits
    return ("-" if neg else "") + out


@dataclass(frozen=True)
class DateStyle:
    """PostgreSQL's ``DateStyle`` (sections 8.5.2 "Date/Time Output" and 19.11.2): the
    output ``style`` of dates and timestamps (ISO, SQL, Postgres or German) and the
    ``order`` of day, month and year (YMD, DMY or MDY) for the styles that depend on it.
    ``str()`` is the setting as PostgreSQL reports it: ``"ISO, MDY"``."""

    style: str = "ISO"
    order: str = "MDY"

    def __str__(self) -> str:
        return f"{self.style}, {self.order}"


#: the default, and the form every path but the wire's text output uses
ISO_DATESTYLE = DateStyle()


@dataclass(frozen=True)
class TextFormat:
    """The session settings that text input and output of dates, times and intervals
    follow (PostgreSQL 19.11.2), as the session has them for a statement
    (``sqlfront.vars.SessionVars.text_format``): ``datestyle`` (:class:`DateStyle`:
    output), ``time_zone`` (``TimeZone`` as a tzinfo, ``parse_time_zone``: what
    timestamptz and timetz input without an offset mean, and the zone timestamptz output
    shows) and ``interval_style`` (``IntervalStyle``, ``catalog.intervalio.STYLES``:
    interval output, and how ``sql_standard`` reads signed fields)."""

    datestyle: DateStyle = ISO_DATESTYLE
    time_zone: dt.tzinfo = dt.timezone.utc
    interval_style: str = "postgres"


#: PostgreSQL's defaults (ISO, MDY; UTC; postgres): what every path without a session uses
DEFAULT_FORMAT = TextFormat()

_DATESTYLE_WORDS = {"iso": ("style", "ISO"), "sql": ("style", "SQL"), "postgres": ("style", "Postgres"),
                    "german": ("style", "German"), "ymd": ("order", "YMD"), "dmy": ("order", "DMY"),
                    "euro": ("order", "DMY"), "european": ("order", "DMY"), "mdy": ("order", "MDY"),
                    "us": ("order", "MDY"), "noneuro": ("order", "MDY"), "noneuropean": ("order", "MDY")}


def parse_datestyle(value: str, current: DateStyle = ISO_DATESTYLE) -> DateStyle:
    """``SET datestyle = value``: comma-separated keywords, each a style or an order
    (PostgreSQL's ``check_datestyle``: ``Euro``/``European`` mean DMY, ``US``/``NonEuro``
    MDY, ``German`` also sets DMY unless an order is given, ``DEFAULT`` is ISO, MDY);
    what is not given stays as in ``current``.

    Raises:
        SqlError 22023 for an unknown keyword or two different styles or orders."""
    style = order = None
    german_order = None
    for word in (w.strip().strip('"').lower() for w in value.split(",")):
        if word == "default":
            found = [("style", "ISO"), ("order", "MDY")]
        elif word in _DATESTYLE_WORDS:
            found = [_DATESTYLE_WORDS[word]]
        else:
            raise SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "DateStyle": "{value}"',
                           detail=f'Unrecognized key word: "{word}".')
        for kind, v in found:
            if kind == "style":
                if style is not None and style != v:
                    raise SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "DateStyle": "{value}"',
                                   detail='Conflicting "datestyle" specifications.')
                style = v
                if v == "German" and order is None:
                    german_order = "DMY"
            else:
                if order is not None and order != v:
                    raise SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "DateStyle": "{value}"',
                                   detail='Conflicting "datestyle" specifications.')
                order = v
    return DateStyle(style or current.style, order or german_order or current.order)


_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_date(d, ds: DateStyle = ISO_DATESTYLE) -> str:
    """A date as PostgreSQL's ``EncodeDateOnly`` writes it in DateStyle ``ds``: ISO
    ``1997-12-17``, SQL ``12/17/1997`` (DMY: ``17/12/1997``), German ``17.12.1997``,
    Postgres ``12-17-1997`` (DMY: ``17-12-1997``); ``infinity``, and `` BC`` after
    dates before year 1 (a FarDate)."""
    if isinstance(d, FarDate):
        if d.infinite:
            return "infinity" if d.days > 0 else "-infinity"
        y, m, day = j2date(d.days + 2451545)
    else:
        y, m, day = d.year, d.month, d.day
    return _format_ymd(y, m, day, ds)


def _format_ymd(y: int, m: int, day: int, ds: DateStyle) -> str:
    bc = y <= 0
    y = 1 - y if bc else y
    if ds.style == "ISO":
        out = f"{y:04d}-{m:02d}-{day:02d}"
    elif ds.style == "German":
        out = f"{day:02d}.{m:02d}.{y:04d}"
    else:
        sep = "/" if ds.style == "SQL" else "-"
        first, second = (day, m) if ds.order == "DMY" else (m, day)
        out = f"{first:02d}{sep}{second:02d}{sep}{y:04d}"
    return out + (" BC" if bc else "")


def format_timestamp(v, ds: DateStyle = ISO_DATESTYLE, zone: str | None = None) -> str:
    """A timestamp as PostgreSQL's ``EncodeDateTime`` writes it in DateStyle ``ds``, with
    ``zone`` after it in the styles other than ISO (a timestamptz's zone abbreviation,
    see ``format_timestamptz``): ISO ``1997-12-17 07:37:16.5``, SQL ``12/17/1997 07:37:16.5``,
    German ``17.12.1997 07:37:16.5``, Postgres ``Wed Dec 17 07:37:16.5 1997``. Fractional
    seconds lose their trailing zeros; `` BC`` ends times before year 1 (a FarTimestamp),
    and ``infinity`` is itself."""
    if isinstance(v, FarTimestamp):
        if v.infinite:
            return "infinity" if v.micros > 0 else "-infinity"
        y, m, d, h, mi, sec, us = v.fields()
    else:
        y, m, d, h, mi, sec, us = v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond
    hms = f"{h:02d}:{mi:02d}:{sec:02d}"
    if us:
        hms += f".{us:06d}".rstrip("0")
    bc = " BC" if y <= 0 else ""
    if ds.style == "ISO":
        return f"{_format_ymd(y, m, d, ds).removesuffix(' BC')} {hms}" + (f"{zone}" if zone else "") + bc
    if ds.style == "Postgres":
        day, mon = f"{d:02d}", _MONTHS[m - 1]
        md = f"{day} {mon}" if ds.order == "DMY" else f"{mon} {day}"
        weekday = _WEEKDAYS[(date2j(y, m, d) + 1) % 7 - 1]  # j2day: 0 is Sunday
        out = f"{weekday} {md} {hms} {1 - y if bc else y:04d}"
    else:
        out = f"{_format_ymd(y, m, d, ds).removesuffix(' BC')} {hms}"
    return out + (f" {zone}" if zone is not None else "") + bc


def format_timestamptz(v, ds: DateStyle = ISO_DATESTYLE, zone: dt.tzinfo = dt.timezone.utc) -> str:
    """A timestamptz in the session time zone ``zone``: ISO writes the offset (``+02``,
    ``+05:30``), the other styles the zone's abbreviation (``CET``; the offset when the
    zone has none)."""
    if isinstance(v, FarTimestamp):
        if v.infinite:
            return format_timestamp(v, ds)
        # outside datetime's years: the zone's offset of 2000 (exact for fixed offsets)
        offset = int(dt.datetime(2000, 1, 1, tzinfo=zone).utcoffset().total_seconds())
        local = FarTimestamp(v.micros + offset * 1_000_000)
        name = format_utc_offset(offset)
        return format_timestamp(local, ds, name)
    v = v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)
    try:
        local = v.astimezone(zone)
    except OverflowError:  # past year 9999 in that zone
        offset = int(v.replace(tzinfo=None).replace(tzinfo=zone).utcoffset().total_seconds())
        local_far = timestamp_from_micros(timestamp_micros(v) + offset * 1_000_000, False)
        return format_timestamp(local_far, ds, format_utc_offset(offset))
    offset = int(local.utcoffset().total_seconds())
    if ds.style == "ISO":
        return format_timestamp(local.replace(tzinfo=None), ds, format_utc_offset(offset))
    name = local.tzname()
    if not name or name.startswith(("UTC+", "UTC-")):
        name = format_utc_offset(offset)
    return format_timestamp(local.replace(tzinfo=None), ds, name)


def format_text(v, t: SqlType, fmt: TextFormat = DEFAULT_FORMAT) -> str:
    """The text form of a non-NULL value of type ``t`` in a DataRow, under the session's
    settings ``fmt`` (:class:`TextFormat`: dates and timestamps in its DateStyle,
    timestamptz in its TimeZone, intervals in its IntervalStyle)."""
    ds = fmt.datestyle
    n = t.name
    if n == "bool":
        return "t" if v else "f"
    if n in ("float4", "float8"):
        return format_float(float(v), t)
    if n == "mz_timestamp":
        return str(int(v))
    if n == "numeric":
        if isinstance(v, Decimal):
            if v.is_nan():
                return "NaN"
            # PostgreSQL's numeric has no negative zero (Python's Decimal does: -2.25 * 0)
            return format(v.copy_abs() if v.is_zero() else v, "f")
        return str(v)
    if n == "date":
        return format_date(v, ds)
    if n == "timestamp":
        return format_timestamp(v, ds)
    if n == "timestamptz":
        return format_timestamptz(v, ds, fmt.time_zone)
    if n == "interval":
        return format_interval(v, fmt.interval_style)
    if n in ("time", "timetz"):
        out = v.strftime("%H:%M:%S") + (f".{v.microsecond:06d}".rstrip("0") if v.microsecond else "")
        if n == "timetz":
            off = v.utcoffset()
            out += format_utc_offset(int(off.total_seconds()) if off is not None else 0)
        return out
    if n == "bytea":
        return "\\x" + bytes(v).hex()
    if t.is_list or t.is_map:
        from catalog import listmapio

        e = t.element
        write = listmapio.format_list if t.is_list else listmapio.format_map
        return write(v, e.is_list or e.is_map, lambda x: format_text(x, e, fmt))
    if t.is_array:
        return "{" + ",".join("NULL" if e is None else format_text(e, t, fmt) if isinstance(e, list)
                              else _array_element(format_text(e, t.element, fmt)) for e in v) + "}"
    return str(v)


def _array_element(s: str) -> str:
    # array_out quotes empty strings, NULL look-alikes and text with delimiters or spaces.
    if s == "" or s.upper() == "NULL" or any(c in s for c in '{},"\\' + _ARRAY_SPACE):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s
