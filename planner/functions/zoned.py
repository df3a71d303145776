"""Date/time functions that take a time zone or compare periods (PostgreSQL 9.9, table
9.33, and 9.9.4): ``date_add``/``date_subtract`` with a zone, ``date_trunc`` in a zone,
``make_timestamptz``, ``AT TIME ZONE`` an interval, and ``OVERLAPS``.

A zone-aware addition adds the months and days to the local time in the zone and the
rest (hours and smaller) to the instant (PostgreSQL's timestamptz_pl_interval_internal);
without a zone, the zone is UTC, where timestamptz arithmetic happens here
(``planner.functions.datetime``)."""

from __future__ import annotations

import datetime as dt

from catalog.errors import SqlError, INVALID_PARAMETER_VALUE
from catalog.types import FarTimestamp, Interval, SqlType
from planner.functions.registry import IN_CONTEXT, Function, by_python, constant_arg, register, sig
from planner.functions.datetime import _date_trunc_py, _date_trunc_spark, _zone, add_interval, datetime_arith, time_arith_spark

TIMESTAMP, TIMESTAMPTZ, INTERVAL = SqlType("timestamp"), SqlType("timestamptz"), SqlType("interval")


def _local(ts: dt.datetime, zone) -> dt.datetime:
    return ts.astimezone(zone).replace(tzinfo=None)


def _instant(local: dt.datetime, zone) -> dt.datetime:
    return local.replace(tzinfo=zone).astimezone(dt.timezone.utc)


def _date_add_py(sign: int):
    def py(a, e):
        ts, iv = a[0], a[1]
        iv = Interval(sign * iv.months, sign * iv.days, sign * iv.micros)
        if len(a) < 3 or isinstance(ts, FarTimestamp):
            return datetime_arith("add", ts, iv, TIMESTAMPTZ, TIMESTAMPTZ)
        zone = _zone(a[2])
        if iv.months or iv.days:
            ts = _instant(add_interval(_local(ts, zone), Interval(iv.months, iv.days, 0)), zone)
        return ts + dt.timedelta(microseconds=iv.micros)
    return py


def _const_zone_arg(S, e, i: int):
    zone = constant_arg(e, i, "a time zone argument needs a constant")
    if zone is not None:
        _zone(zone)
    return zone


def _date_add_spark(sign: int):
    def spark(S, a, e):
        F = S.F
        ts, iv = a[0], a[1]
        if sign < 0:
            iv = -iv
        if len(a) < 3:
            return ts + iv
        zone = _const_zone_arg(S, e, 2)
        if zone is None:
            return F.lit(None).cast("timestamp")
        f = S.interval_fields(iv)
        local = F.from_utc_timestamp(ts, zone).cast("timestamp_ntz") + S.make_interval(f["months"], f["days"],
                                                                                       F.lit(0).cast("long"))
        moved = F.to_utc_timestamp(local.cast("timestamp"), zone)
        return moved + S.make_interval(F.lit(0), F.lit(0), f["micros"])
    return spark


def _date_trunc_zone_py(a, e):
    zone = _zone(a[2])
    local = _date_trunc_py([a[0], _local(a[1], zone)], e)
    return _instant(local, zone)


def _date_trunc_zone_spark(S, a, e):
    F = S.F
    zone = _const_zone_arg(S, e, 2)
    if zone is None:
        return F.lit(None).cast("timestamp")
    local = F.from_utc_timestamp(a[1], zone).cast("timestamp_ntz")
    return F.to_utc_timestamp(_date_trunc_spark(S, [a[0], local], e).cast("timestamp"), zone)


def _offset_micros(iv: Interval) -> int:
    if iv.months or iv.days:
        raise SqlError(INVALID_PARAMETER_VALUE, "interval time zone must not include months or days")
    return iv.micros


def _timezone_interval_py(a, e):
    """``ts AT TIME ZONE interval``: the interval is the zone's offset east of UTC."""
    us = _offset_micros(a[0])
    if e.type.name == "timestamp":  # an instant -> its local time at that offset
        return a[1].astimezone(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(microseconds=us)
    return (a[1] - dt.timedelta(microseconds=us)).replace(tzinfo=dt.timezone.utc)


def _timezone_interval_spark(S, a, e):
    F = S.F
    f = S.interval_fields(a[0])
    shift = S.make_interval(F.lit(0), F.lit(0), f["micros"])
    # timestamptz values are UTC instants and Spark's session zone is UTC
    r = a[1].cast("timestamp_ntz") + shift if e.type.name == "timestamp" else (a[1] - shift).cast("timestamp")
    return F.when((f["months"] != 0) | (f["days"] != 0),
                  S.fail(INVALID_PARAMETER_VALUE, "interval time zone must not include months or days")).otherwise(r)


def _make_timestamptz_py(a, e, ctx):
    from planner.consteval import cast_value
    from planner.functions.datetime import _make_timestamp_py

    local = _make_timestamp_py(a[:6], e)
    if len(a) < 7:
        return cast_value(local, TIMESTAMP, TIMESTAMPTZ, fmt=ctx.guard.text)
    return _instant(local, _zone(a[6]))


def _make_timestamptz_spark(S, a, e):
    from planner.functions.datetime import _make_timestamp_spark

    local = _make_timestamp_spark(S, a[:6], e)
    if len(a) < 7:
        return S.cast(local, TIMESTAMP, TIMESTAMPTZ)
    zone = _const_zone_arg(S, e, 6)
    if zone is None:
        return S.F.lit(None).cast("timestamp")
    return S.F.to_utc_timestamp(local.cast("timestamp"), zone)


def _at_local_py(a, e, ctx):
    """``ts AT LOCAL`` (PostgreSQL 17, 9.9.4): AT TIME ZONE the session's TimeZone, which is
    the cast between timestamp and timestamptz."""
    from planner.consteval import cast_value

    return cast_value(a[0], e.args[0].type, e.type, fmt=ctx.guard.text)


# -- OVERLAPS (PostgreSQL 9.9, table 9.33's note; timestamp.c overlaps_timestamp) ----------


def _overlaps_py(a, e):
    """(s1, e1) OVERLAPS (s2, e2): each period is [earlier, later) of its pair (a single
    instant when they are equal); an interval second is added to the start. NULLs give
    NULL only where the answer depends on them."""
    def period(s, end, end_type):
        if end is not None and end_type == "interval":
            end = None if s is None else datetime_arith("add", s, end, e.args[0].type, e.args[0].type)
        if s is None:
            return (end, None) if end is not None else None
        if end is not None and s > end:
            s, end = end, s
        return s, end

    p1 = period(a[0], a[1], e.args[1].type.name)
    p2 = period(a[2], a[3], e.args[3].type.name)
    if p1 is None or p2 is None:
        return None
    (s1, e1), (s2, e2) = p1, p2
    if s1 > s2:
        return None if e2 is None else True if s1 < e2 else None if e1 is None else False
    if s1 < s2:
        return None if e1 is None else True if s2 < e1 else None if e2 is None else False
    return None if e1 is None or e2 is None else True


def _overlaps_spark(S, a, e):
    F = S.F
    null = F.lit(None).cast("boolean")

    def period(s, end, end_type):
        if end_type == "interval":
            start_type = e.args[0].type
            end = time_arith_spark(S, "add", s, end, start_type, start_type) if start_type.name == "time" else s + end
        start = F.when(s.isNull(), end).when(end.isNotNull() & (s > end), end).otherwise(s)
        stop = F.when(s.isNull(), F.lit(None)).when(end.isNotNull() & (s > end), s).otherwise(end)
        return start, stop

    s1, e1 = period(a[0], a[1], e.args[1].type.name)
    s2, e2 = period(a[2], a[3], e.args[3].type.name)
    later = F.when(e2.isNull(), null).when(s1 < e2, True).when(e1.isNull(), null).otherwise(False)
    earlier = F.when(e1.isNull(), null).when(s2 < e1, True).when(e2.isNull(), null).otherwise(False)
    same = F.when(e1.isNull() | e2.isNull(), null).otherwise(True)
    return F.when(s1.isNull() | s2.isNull(), null).when(s1 > s2, later).when(s1 < s2, earlier).otherwise(same)


_DAY_MICROS = 86_400_000_000


def _timezone_interval_timetz_py(a, e):
    """``timetz AT TIME ZONE interval`` (PostgreSQL's timetz_izone): the same instant of the
    day at the offset the interval gives (its seconds, truncated; east of UTC), wrapped
    into the day.

    Raises:
        SqlError 22023 for an interval with months or days."""
    from catalog.textio import format_text

    iv, t = a
    if iv.months or iv.days:
        raise SqlError(INVALID_PARAMETER_VALUE,
                       f'interval time zone "{format_text(iv, SqlType("interval"))}" must not include months or days')
    return _timetz_at(t, abs(iv.micros) // 1_000_000 * (1 if iv.micros >= 0 else -1))


def _timetz_at(t: dt.time, east: int) -> dt.time:
    """Time with time zone ``t`` at the offset ``east`` seconds east of UTC: the same
    instant of the day, wrapped into the day (timetz_izone, timetz_zone)."""
    micros = ((t.hour * 3600 + t.minute * 60 + t.second) * 1_000_000 + t.microsecond
              + (east - int(t.utcoffset().total_seconds())) * 1_000_000) % _DAY_MICROS
    secs, us = divmod(micros, 1_000_000)
    return dt.time(secs // 3600, secs // 60 % 60, secs % 60, us, tzinfo=dt.timezone(dt.timedelta(seconds=east)))


def _timezone_timetz_args(args: list, ctx) -> list:
    """``timetz AT TIME ZONE zone`` and ``timetz AT LOCAL`` (``timezone([zone,] timetz)``):
    the zone (AT LOCAL: the session's TimeZone) and, last, the statement's start in Unix
    seconds (type ``internal``): PostgreSQL's timetz_zone takes the zone's offset at the
    transaction's start, fixed at plan time here like now()."""
    from catalog.settings import DEFAULTS
    from catalog.types import TEXT
    from planner.functions.registry import INTERNAL
    from planner.scalar import Literal

    types = [a.type.name for a in args]
    if types == ["timetz"]:
        vars_ = getattr(getattr(ctx, "session", None), "vars", None)
        zone = (getattr(vars_, "values", None) or {}).get("timezone", DEFAULTS["timezone"][0])
        args = [Literal(zone, TEXT), *args]
    elif not (len(types) == 2 and types[1] == "timetz" and types[0] in ("text", "unknown", "varchar")):
        return args
    return [*args, Literal(int(ctx.now.timestamp()), INTERNAL)]


def _timezone_timetz_py(a, e):
    """``timetz AT TIME ZONE name`` (PostgreSQL's timetz_zone): the time at the zone's
    offset at the statement's start (its last argument, Unix seconds).

    Raises:
        SqlError 22023 for a name that names no time zone."""
    name, t, now = a
    offset = dt.datetime.fromtimestamp(now, dt.timezone.utc).astimezone(_zone(name)).utcoffset()
    return _timetz_at(t, int(offset.total_seconds()))


def _overlaps_timetz_py(a, e):
    """(s1, e1) OVERLAPS (s2, e2) of time with time zone values (overlaps_timetz): as
    ``_overlaps_py``, the values ordered as timetz_cmp orders them: by their time plus
    their zone's offset west of UTC (not wrapped into the day), then by that offset."""
    def key(t):
        off = int(t.utcoffset().total_seconds())
        micros = (t.hour * 3600 + t.minute * 60 + t.second - off) * 1_000_000 + t.microsecond
        return micros, -off
    return _overlaps_py([None if v is None else key(v) for v in a], e)


def _overlaps_sigs():
    out = []
    for t in ("timestamp", "timestamptz", "time"):
        for second in (t, "interval"):
            for fourth in (t, "interval"):
                out.append(sig(t, second, t, fourth, ret="bool"))
    return tuple(out)


register(
    Function("date_add", (sig("timestamptz", "interval", ret="timestamptz"),
                          sig("timestamptz", "interval", "text", ret="timestamptz")),
             _date_add_py(1), _date_add_spark(1), sql_names=("date_add",), doc="9.9",
             samples=("date_add(ts::timestamptz, make_interval(days => k, hours => k))",
                      "date_add(timestamptz '2021-10-31 00:00+00', make_interval(days => k), 'Europe/Warsaw')",
                      "date_add(ts::timestamptz, interval '1 month 1 day 1 hour', 'America/New_York')",
                      "date_add(ts::timestamptz, interval '1 day', 'Nowhere/Special')")),
    Function("date_subtract", (sig("timestamptz", "interval", ret="timestamptz"),
                               sig("timestamptz", "interval", "text", ret="timestamptz")),
             _date_add_py(-1), _date_add_spark(-1), sql_names=("date_subtract",), doc="9.9",
             samples=("date_subtract(ts::timestamptz, make_interval(days => k, hours => k))",
                      "date_subtract(timestamptz '2021-11-01 00:00+00', make_interval(days => k), 'Europe/Warsaw')",
                      "date_subtract(ts::timestamptz, interval '1 month 1 day 1 hour', 'Asia/Kolkata')")),
    Function("date_trunc_zone", (sig("text", "timestamptz", "text", ret="timestamptz"),),
             _date_trunc_zone_py, _date_trunc_zone_spark, sql_names=("date_trunc",), doc="9.9.2",
             samples=("date_trunc('day', ts::timestamptz, 'Australia/Sydney')",
                      "date_trunc('month', ts::timestamptz, 'America/New_York')",
                      "date_trunc('hour', ts::timestamptz, 'Asia/Kolkata')")),
    Function("timezone_interval", (sig("interval", "timestamp", ret="timestamptz"),
                                   sig("interval", "timestamptz", ret="timestamp")),
             _timezone_interval_py, _timezone_interval_spark, sql_names=("timezone",), doc="9.9.4",
             samples=("ts AT TIME ZONE interval '-08:00'", "ts::timestamptz AT TIME ZONE make_interval(hours => k)",
                      "timezone(interval '5 hours 30 minutes', ts)", "ts AT TIME ZONE make_interval(days => k)")),
    # time with time zone is its text on Spark: the Python implementation runs there (by_python)
    Function("timezone_interval_timetz", (sig("interval", "timetz", ret="timetz"),), _timezone_interval_timetz_py,
             by_python, sql_names=("timezone",), doc="9.9.4",
             samples=("(ts::time || '+02')::timetz AT TIME ZONE make_interval(hours => k)",
                      "timezone(make_interval(mins => -45 * k, secs => 1.5), (ts::time || '-05:30')::timetz)",
                      "(ts::time || '+02')::timetz AT TIME ZONE make_interval(days => k - 1)",
                      "timetz '23:30:00+01' AT TIME ZONE interval '-10 hours'")),
    Function("timezone_timetz", (sig("text", "timetz", "internal", ret="timetz"),), _timezone_timetz_py, by_python,
             sql_names=("timezone",), volatility="stable", doc="9.9.4", extra={"plan_args_in": _timezone_timetz_args},
             samples=("(ts::time || '+02')::timetz AT TIME ZONE 'Asia/Tokyo'",
                      "timezone(CASE WHEN k < 3 THEN 'UTC' ELSE 'Asia/Kolkata' END, (ts::time || '-05:30')::timetz)",
                      "(ts::time || '+02')::timetz AT LOCAL", "timezone((ts::time || '+01')::timetz)",
                      "(ts::time || '+02')::timetz AT TIME ZONE 'Nowhere/Special'",
                      "timetz '23:30:00+01' AT TIME ZONE 'Etc/GMT+3'")),
    Function("overlaps_timetz", (sig("timetz", "timetz", "timetz", "timetz", ret="bool"),), _overlaps_timetz_py,
             by_python, sql_names=("overlaps",), strict=False, doc="9.9",
             samples=("((ts::time || '+02')::timetz, timetz '12:00+00') OVERLAPS (timetz '06:00+00', timetz '11:00+01')",
                      "(timetz '10:00+01', (ts::time || '-03')::timetz) OVERLAPS ((ts::time || '+05')::timetz, "
                      "timetz '09:00+00')",
                      "(timetz '10:00+01', timetz '09:00+00') OVERLAPS (timetz '09:00+00', NULL::timetz)",
                      "((ts::time || '+02')::timetz, NULL::timetz) OVERLAPS (timetz '00:00+00', (ts::time || 'Z')::timetz)",
                      "(timetz '10:00+01', timetz '10:00+01') OVERLAPS (timetz '09:00+00', timetz '09:00+00')")),
    Function("timezone_local", (sig("timestamp", ret="timestamptz"), sig("timestamptz", ret="timestamp")),
             _at_local_py, lambda S, a, e: S.cast(a[0], e.args[0].type, e.type), sql_names=("timezone",),
             volatility="stable", doc="9.9.4", samples=("ts AT LOCAL", "ts::timestamptz AT LOCAL", "timezone(ts)"), extra=IN_CONTEXT),
    Function("make_timestamptz", (sig("int4", "int4", "int4", "int4", "int4", "float8", ret="timestamptz"),
                                  sig("int4", "int4", "int4", "int4", "int4", "float8", "text", ret="timestamptz")),
             _make_timestamptz_py, _make_timestamptz_spark, sql_names=("make_timestamptz",), doc="9.9",
             samples=("make_timestamptz(2000 + k, k, 10 + k, k, 30, 1.5)",
                      "make_timestamptz(2020, 3, 8 + k, 2, 30, 0, 'America/New_York')",
                      "make_timestamptz(2020, k, 31, 0, 0, 0)"), extra=IN_CONTEXT),
    Function("overlaps", _overlaps_sigs(), _overlaps_py, _overlaps_spark, sql_names=("overlaps",), strict=False,
             doc="9.9",
             samples=("(ts, ts + interval '1 day') OVERLAPS (timestamp '2024-01-05', timestamp '2024-01-06')",
                      "(ts, interval '1 day') OVERLAPS (timestamp '2000-03-01', interval '-2 days')",
                      "(ts, NULL::timestamp) OVERLAPS (timestamp '2000-01-01', ts)",
                      "(NULL::timestamp, ts) OVERLAPS (ts, NULL::timestamp)",
                      "(ts::timestamptz, ts::timestamptz) OVERLAPS (ts::timestamptz, interval '1 hour')",
                      "(d, d + 1) OVERLAPS (date '2000-02-28', date '2000-03-01')",
                      "(ts::time, time '12:00') OVERLAPS (time '06:00', time '07:00')",
                      "(ts::time, interval '2 hours') OVERLAPS (time '12:00', time '14:00')",
                      "(time '23:00', make_interval(hours => k)) OVERLAPS (ts::time, interval '1 hour')",
                      "(ts::time, time '13:00') OVERLAPS (time '12:00', make_interval(mins => i))")),
)
