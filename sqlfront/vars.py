"""Session variables: defaults, validation, SHOW.

The set follows what PostgreSQL clients read and set at connect time, plus
Materialize's ``cluster`` (which cluster runs this session's peeks).
"""

from __future__ import annotations

import datetime as dt
import re

from catalog.errors import (
    SqlError, CANT_CHANGE_RUNTIME_PARAM, INSUFFICIENT_PRIVILEGE, INVALID_PARAMETER_VALUE, UNDEFINED_OBJECT,
)
from catalog.settings import DEFAULTS
from catalog.intervalio import parse_interval_style
from catalog.textio import DateStyle, TextFormat, parse_datestyle, parse_time_zone

#: Sent as ParameterStatus at startup (PostgreSQL 55.2.2 "Start-up")
REPORTED = ("server_version", "server_encoding", "client_encoding", "datestyle", "timezone",
            "integer_datetimes", "standard_conforming_strings", "application_name", "is_superuser",
            "intervalstyle", "mz_version")

_DISPLAY = {"datestyle": "DateStyle", "timezone": "TimeZone", "intervalstyle": "IntervalStyle"}


#: limits that guard the server from a session: only a superuser raises or lifts them
#: (``SessionVars._check_limit``)
SUPERUSER_LIMITS = ("max_query_heap_size",)

#: the isolation levels ``transaction_isolation`` takes (Materialize's "Consistency
#: guarantees": the standard's four behave as serializable; strict serializable is the
#: default). Reads here are always strict serializable (one timestamp oracle), which
#: every level allows.
ISOLATION_LEVELS = ("read uncommitted", "read committed", "repeatable read", "serializable", "strict serializable")

#: variables whose values are booleans, shown as on/off
BOOLEAN_VARS = ("escape_string_warning", "default_transaction_read_only", "default_transaction_deferrable", "transaction_read_only",
                "transaction_deferrable")


def parse_bool_setting(name: str, value: str) -> bool:
    """A boolean setting's value (PostgreSQL 19.1.1: on/off, true/false, yes/no, 1/0 and
    their unique prefixes). Raises SqlError 22023 for anything else."""
    v = value.strip().lower()
    if v in ("on", "1") or (v and ("true".startswith(v) or "yes".startswith(v))):
        return True
    if v in ("off", "of", "0") or (v and ("false".startswith(v) or "no".startswith(v))):
        return False
    raise SqlError(INVALID_PARAMETER_VALUE, f'parameter "{name}" requires a Boolean value')


def display_name(name: str) -> str:
    return _DISPLAY.get(name, name)


def server_defaults(overrides: dict[str, str] | None = None) -> dict[str, str]:
    """Every variable's default on this server: ``DEFAULTS`` with the operator's
    ``overrides`` (``sqlfront serve --max-query-heap-size``, ...) applied."""
    return {k: v for k, (v, _) in DEFAULTS.items()} | dict(overrides or {})


def validate(name: str, value: str) -> None:
    """Check ``value`` for variable ``name`` (already lower-case, known, settable).

    Raises:
        SqlError 22023 for a bad value.
    """
    if name == "client_encoding":
        from sqlfront.encoding import canonical

        canonical(value)
    if name == "statement_timeout":
        parse_duration_ms(value)
    if name == "datestyle":
        parse_datestyle(value)
    if name == "intervalstyle":
        parse_interval_style(value)
    if name in BOOLEAN_VARS:
        parse_bool_setting(name, value)
    if name == "timezone":
        parse_time_zone(value)
    if name == "max_query_heap_size":
        parse_byte_size(name, value)
    if name == "transaction_isolation" and " ".join(value.lower().split()) not in ISOLATION_LEVELS:
        raise SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": "{value}"',
                       hint="Available values: " + ", ".join(ISOLATION_LEVELS) + ".")


class SessionVars:
    """One session's variables. ``overrides`` (from ``sqlfront serve`` options) replace
    entries of ``DEFAULTS`` for this server: what a session starts with and RESET
    returns to (see ``server_defaults``). ``startup``: the startup packet's parameters
    (``options`` holds ``-c name=value`` settings); names this server does not know
    are ignored.

    Raises:
        SqlError 22023 for a startup value its variable refuses (PostgreSQL refuses the
        connection: "invalid value for parameter").
    """

    def __init__(self, startup: dict[str, str] | None = None, overrides: dict[str, str] | None = None,
                 superuser: bool = False):
        self.defaults = server_defaults(overrides)
        self.values = dict(self.defaults)
        self.values["is_superuser"] = "on" if superuser else "off"
        self._timeout_ms = _timeout_or_none(self.values["statement_timeout"])
        startup = dict(startup or {})
        # ``options`` (-c name=value ...) first, so a parameter given on its own wins,
        # as PostgreSQL applies them
        settings = {**parse_options(startup.pop("options", "")), **startup}
        for k, v in settings.items():
            k = k.lower()
            if k in DEFAULTS and DEFAULTS[k][1]:
                # a bad value, or a limit only a superuser may lift, fails the startup,
                # as in PostgreSQL
                self.set(k, v)

    def get(self, name: str) -> str:
        name = name.lower()
        if name not in self.values:
            raise SqlError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{name}"')
        return self.values[name]

    def set(self, name: str, value: str | None) -> None:
        """Set ``name`` (None resets it to its default).

        Raises:
            SqlError 42704 for unknown names; 55P02 for read-only ones; 22023 bad values;
            42501 for a limit of ``SUPERUSER_LIMITS`` raised by a role that is no superuser.
        """
        name = name.lower()
        if name not in DEFAULTS:
            raise SqlError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{name}"')
        settable = DEFAULTS[name][1]
        default = self.defaults[name]
        if value is None:
            self._store(name, default)
            return
        if not settable:
            if value.lower() == default.lower():
                return
            raise SqlError(CANT_CHANGE_RUNTIME_PARAM, f'parameter "{name}" cannot be changed')
        validate(name, value)
        if name in SUPERUSER_LIMITS:
            self._check_limit(name, value)
        if name == "client_encoding":
            from sqlfront.encoding import canonical

            value = canonical(value)  # PostgreSQL reports its own spelling: LATIN1
        if name == "datestyle":
            # what is not given keeps its current value; reported as PostgreSQL spells it
            value = str(parse_datestyle(value, self.date_style()))
        if name == "intervalstyle":
            value = parse_interval_style(value)
        if name == "transaction_isolation":
            value = " ".join(value.lower().split())
        if name in BOOLEAN_VARS:
            value = "on" if parse_bool_setting(name, value) else "off"
            if name.startswith("default_"):  # the next transaction's mode; shown until then
                self.values[name.removeprefix("default_")] = value
        self._store(name, value)

    def _store(self, name: str, value: str) -> None:
        self.values[name] = value
        if name == "statement_timeout":  # parsed once here, read at each statement's start
            self._timeout_ms = _timeout_or_none(value)

    def _check_limit(self, name: str, value: str) -> None:
        """Only a superuser may raise a limit above the server's default or lift it (0):
        the limit protects the server from every session, so a role may only tighten it
        (as PostgreSQL does for its SUSET parameters)."""
        if self.values["is_superuser"] == "on":
            return
        new = parse_byte_size(name, value)
        ceiling = parse_byte_size(name, self.defaults[name])
        if ceiling and not 0 < new <= ceiling:
            raise SqlError(INSUFFICIENT_PRIVILEGE, f'permission denied to set parameter "{name}"',
                           detail=f"Only a superuser may set {name} above the server's {self.defaults[name]} "
                                  "or to 0 (no limit).")

    def time_zone(self) -> dt.tzinfo:
        """``TimeZone`` as a tzinfo (``catalog.textio.parse_time_zone``); a bad value a
        client gave at startup reads as UTC."""
        try:
            return parse_time_zone(self.values["timezone"])
        except SqlError:
            return dt.timezone.utc

    def interval_style(self) -> str:
        """``IntervalStyle`` (``catalog.intervalio.STYLES``); a bad value a client gave at
        startup reads as postgres."""
        try:
            return parse_interval_style(self.values["intervalstyle"])
        except SqlError:
            return "postgres"

    def text_format(self) -> TextFormat:
        """``DateStyle``, ``TimeZone`` and ``IntervalStyle`` as text input and output of
        dates, times and intervals take them (``catalog.textio.TextFormat``)."""
        return TextFormat(self.date_style(), self.time_zone(), self.interval_style())

    def date_style(self) -> DateStyle:
        """``DateStyle`` as the output functions take it (``catalog.textio``); a bad
        value a client gave at startup reads as the default."""
        try:
            return parse_datestyle(self.values["datestyle"])
        except SqlError:
            return DateStyle()

    def search_path(self) -> tuple[str, ...]:
        """``search_path`` as schema names (``a, "B"`` -> ``('a', 'B')``; PostgreSQL's
        ``$user`` names no schema here: there are no per-user schemas)."""
        out = []
        for part in self.values["search_path"].split(","):
            part = part.strip()
            if part.startswith('"') and part.endswith('"') and len(part) > 1:
                part = part[1:-1].replace('""', '"')
            if part and part != "$user":
                out.append(part)
        return tuple(out)

    def statement_timeout_s(self) -> float | None:
        """``statement_timeout`` in seconds; None when it is 0 (no timeout). A session
        reads it once per statement (``sqlfront.statement.StatementContext``)."""
        return self._timeout_ms / 1000 if self._timeout_ms else None

    def max_query_heap_bytes(self) -> int | None:
        """``max_query_heap_size`` in bytes; None when it is 0 (no limit)."""
        return parse_byte_size("max_query_heap_size", self.values["max_query_heap_size"]) or None


def _timeout_or_none(value: str) -> int | None:
    """``statement_timeout``'s milliseconds; a bad value a client gave at startup reads as
    no timeout (it is refused there: ``SessionVars``)."""
    try:
        return parse_duration_ms(value)
    except SqlError:
        return None


def split_options(options: str) -> list[str]:
    """The words of a startup packet's ``options`` value, split as PostgreSQL's
    ``pg_split_opts`` does (postinit.c): white space separates, a backslash takes the next
    character literally (``-c search_path=a,\\ b``); no quoting."""
    words: list[str] = []
    cur: list[str] = []
    in_word = escaped = False
    for ch in options:
        if escaped:
            cur.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = in_word = True
        elif ch.isspace():
            if in_word:
                words.append("".join(cur))
                cur, in_word = [], False
        else:
            cur.append(ch)
            in_word = True
    if in_word:
        words.append("".join(cur))
    return words


def parse_options(options: str) -> dict[str, str]:
    """The settings of a startup packet's ``options`` value (libpq's ``PGOPTIONS``):
    ``-c name=value``, ``-cname=value`` and ``--name=value``, dashes in a name read as
    underscores and names lower-cased (PostgreSQL's ``ParseLongOption``); a later setting
    of a name wins, as PostgreSQL applies them in order. Words that set nothing are
    ignored. Materialize takes the same form (``options='--cluster=c'``)."""
    words = split_options(options)
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        w = words[i]
        setting = None
        if w == "-c" and i + 1 < len(words):
            setting, i = words[i + 1], i + 1
        elif w.startswith("--"):
            setting = w[2:]
        elif w.startswith("-c"):
            setting = w[2:]
        if setting is not None:
            name, eq, value = setting.partition("=")
            if eq and name.strip():
                out[name.strip().lower().replace("-", "_")] = value
        i += 1
    return out


#: PostgreSQL's memory units (section 19.1.1 "Parameter Names and Values"): powers of 1024
_BYTE_UNITS = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}


def parse_byte_size(name: str, v: str) -> int:
    """``'256MB'``, ``'1GB'``, ``'512kB'``, ``'1000000'`` (bytes, as Materialize's byte-size
    variables take them) -> bytes; 0 means no limit. Units are PostgreSQL's memory units
    (kB = 1024 B), case-insensitive.

    Raises:
        SqlError 22023 for anything else (negative, fractional bytes, unknown unit).
    """
    s = v.strip().lower().replace(" ", "")
    digits = s.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = s[len(digits):] or "b"
    if not digits.isdigit() or unit not in _BYTE_UNITS:
        raise SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": "{v}"',
                       hint='Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".')
    return int(digits) * _BYTE_UNITS[unit]


#: PostgreSQL's time units (section 19.1.1 "Parameter Names and Values"), in milliseconds:
#: unit names are case-sensitive
_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
#: the largest value an integer setting takes (PostgreSQL's ``INT_MAX``)
_INT_MAX = 2**31 - 1
_DURATION = re.compile(r"\s*([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*")


def parse_duration_ms(v: str, name: str = "statement_timeout") -> int:
    """A time setting's value in milliseconds, as PostgreSQL reads an integer setting whose
    unit is ms (``parse_int`` in guc.c): a number, optionally fractional, then an optional
    unit of ``us``, ``ms``, ``s``, ``min``, ``h``, ``d`` (none: milliseconds; white space
    between is allowed); a fraction is rounded to whole milliseconds. ``'2s'`` -> 2000,
    ``'1.5min'`` -> 90000, ``'250'`` -> 250, ``'0'`` -> 0 (no timeout).

    Raises:
        SqlError 22023 for anything else (an unknown unit, a unit in upper case, no number,
        a value past 2147483647 ms) and for a negative value, with PostgreSQL's messages.
    """
    m = _DURATION.fullmatch(v)
    if m is None or m.group(2) not in ("", *_TIME_UNITS_MS):
        hint = ('Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".'
                if m is not None else None)
        raise SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": "{v}"', hint=hint)
    value = float(m.group(1)) * _TIME_UNITS_MS[m.group(2) or "ms"]
    if not -_INT_MAX - 1 <= value <= _INT_MAX:
        raise SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": "{v}"',
                       hint="Value exceeds integer range.")
    ms = round(value)
    if ms < 0:
        raise SqlError(INVALID_PARAMETER_VALUE,
                       f'{ms} ms is outside the valid range for parameter "{name}" (0 ms .. {_INT_MAX} ms)')
    return ms
