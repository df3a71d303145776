"""SQL scalar types: names, modifiers, PostgreSQL OIDs, Arrow storage types.

A ``SqlType`` is the type of a column or expression as PostgreSQL would report it.
Rules for names and modifiers follow PostgreSQL's "Data Types" chapter (section 8);
the OIDs are those of ``pg_type`` (``src/include/catalog/pg_type.dat``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from dataclasses import dataclass

import pyarrow as pa

from catalog.errors import (
    SqlError, DATETIME_FIELD_OVERFLOW, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SYNTAX_ERROR,
    UNDEFINED_OBJECT,
)
# Interval, the interval value, lives beside its text I/O and type modifier
from catalog.intervalio import Interval, check_typmod, interval_typmod, typmod_suffix  # noqa: F401

#: Precision/scale used to store an unconstrained ``numeric`` (PostgreSQL has no bound;
#: Parquet and Spark need one).
UNCONSTRAINED_NUMERIC = (38, 10)


@dataclass(frozen=True)
class SqlType:
    """A PostgreSQL scalar type with its modifier.

    Attributes:
        name: canonical internal name (``int4``, ``numeric``, ``varchar``, ...).
        precision: numeric precision, or length of ``varchar(n)`` / ``char(n)``, or the
            fractional-second digits (0..6) of ``timestamp(p)``, ``timestamptz(p)``,
            ``time(p)``, ``timetz(p)`` and ``interval second(p)``; None if absent.
        scale: numeric scale; for ``interval``, the field qualifier's mask
            (``catalog.intervalio.FIELD_NAMES``: ``interval day to second``); None if absent.
        stored_scale: for an unconstrained ``numeric`` column of a materialized view, the
            scale its values are stored with: its query's result scale (``stored_numeric``);
            None stores ``UNCONSTRAINED_NUMERIC``. Not part of the SQL type: equality,
            hashing, typmod and the name PostgreSQL sees ignore it.
    """

    name: str
    precision: int | None = None
    scale: int | None = None
    stored_scale: int | None = dataclasses.field(default=None, compare=False, repr=False)
    #: the types a Materialize ``list`` (its element) or ``map`` (its key, always text, and
    #: its value) is of (``list_of``, ``map_of``); empty for every other type
    of: tuple = ()

    @property
    def oid(self) -> int:
        if self.is_array:
            return ARRAY_OIDS[self.name[1:]]
        return _INFO[self.name][0]

    @property
    def typlen(self) -> int:
        return -1 if self.is_array else _INFO[self.name][1]

    @property
    def is_list(self) -> bool:
        """True for a Materialize ``T list`` (``list_of``)."""
        return self.name == "list"

    @property
    def is_map(self) -> bool:
        """True for a Materialize ``map[text=>T]`` (``map_of``)."""
        return self.name == "map"

    @property
    def holds_map(self) -> bool:
        """True for a map, or an array or list whose elements hold one."""
        return self.is_map or ((self.is_array or self.is_list) and self.element.holds_map)

    @property
    def map_groupable(self) -> bool:
        """True for a map whose values hold no map: the maps whose rows Spark groups and
        compares, by their entries in key order (``spark_exec.lower.maps_groupable``);
        other types holding a map cannot be grouped on Spark here."""
        return self.is_map and not self.element.holds_map

    @property
    def is_array(self) -> bool:
        """True for a one-dimensional array type; its name is PostgreSQL's ``_elem``."""
        return self.name.startswith("_")

    @property
    def element(self) -> "SqlType":
        """The element type of an array type (keeps the modifier: ``numeric(10,2)[]``), of a
        list, or the value type of a map."""
        if self.of:
            return self.of[-1]
        return SqlType(self.name[1:], self.precision, self.scale)

    @property
    def typmod(self) -> int:
        """The ``atttypmod`` PostgreSQL sends in RowDescription (-1 when none)."""
        if self.is_array:
            return self.element.typmod
        if self.name == "numeric" and self.precision is not None:
            return ((self.precision << 16) | (self.scale or 0)) + 4
        if self.name in ("varchar", "bpchar") and self.precision is not None:
            return self.precision + 4
        if self.name in _DATETIME_PRECISION and self.precision is not None:
            return self.precision
        if self.name == "interval":
            return interval_typmod(self.scale, self.precision)
        return -1

    @property
    def category(self) -> str:
        """PostgreSQL's ``typcategory``: N numeric, S string, B boolean, D datetime, T timespan,
        U user-defined (bytea, uuid, jsonb), A array, X unknown."""
        return "A" if self.is_array else _INFO[self.name][2]

    @property
    def is_integer(self) -> bool:
        return self.name in ("int2", "int4", "int8", "oid")

    @property
    def is_numeric(self) -> bool:
        return self.category == "N"

    @property
    def is_string(self) -> bool:
        return self.category == "S" or self.name == "unknown"

    def unconstrained(self) -> "SqlType":
        """The same type without its modifier (``numeric(10,2)`` -> ``numeric``); a list or
        map keeps its element types."""
        return SqlType(self.name, of=self.of)

    def logical(self) -> "SqlType":
        """The same SQL type without how a stored column keeps it (``stored_scale``): the
        type of an expression over the column, whose values Spark computes at its own scale."""
        return dataclasses.replace(self, stored_scale=None) if self.stored_scale is not None else self

    def sql(self) -> str:
        """The name ``format_type`` prints, e.g. ``numeric(10,2)``, ``character varying(5)``."""
        if self.is_array:
            return self.element.sql() + "[]"
        if self.is_list and self.of:
            return self.element.sql() + " list"
        if self.is_map and self.of:
            return f"map[{self.of[0].sql()}=>{self.element.sql()}]"
        display = _INFO[self.name][3]
        if self.name == "numeric" and self.precision is not None:
            return f"{display}({self.precision},{self.scale or 0})"
        if self.name in ("varchar", "bpchar") and self.precision is not None:
            return f"{display}({self.precision})"
        if self.name in _DATETIME_PRECISION and self.precision is not None:
            base, _, zone = display.partition(" ")  # timestamp(3) without time zone
            return f"{base}({self.precision}) {zone}"
        if self.name == "interval":
            return display + typmod_suffix(self.scale, self.precision)
        return display

    def __str__(self) -> str:
        return self.sql()

    def arrow(self) -> pa.DataType:
        """The Arrow type values of this type are stored as in persist parts."""
        n = self.name
        if self.is_array or self.is_list:
            return pa.list_(self.element.arrow())
        if self.is_map:
            return pa.map_(pa.string(), self.element.arrow())
        if n == "numeric":
            p, s = self.storage_precision_scale()
            return pa.decimal128(p, s)
        return _ARROW[n]

    def storage_precision_scale(self) -> tuple[int, int]:
        """(precision, scale) of the decimal a numeric is stored and computed as."""
        if self.precision is None:
            return UNCONSTRAINED_NUMERIC if self.stored_scale is None else (UNCONSTRAINED_NUMERIC[0], self.stored_scale)
        return self.precision, self.scale or 0


# name -> (oid, typlen, category, display name)
_INFO = {
    "bool": (16, 1, "B", "boolean"),
    "int2": (21, 2, "N", "smallint"),
    "int4": (23, 4, "N", "integer"),
    "int8": (20, 8, "N", "bigint"),
    "oid": (26, 4, "N", "oid"),
    "numeric": (1700, -1, "N", "numeric"),
    "float4": (700, 4, "N", "real"),
    "float8": (701, 8, "N", "double precision"),
    "text": (25, -1, "S", "text"),
    "varchar": (1043, -1, "S", "character varying"),
    "bpchar": (1042, -1, "S", "character"),
    # identifiers in catalogs: text of at most 63 bytes (NAMEDATALEN - 1)
    "name": (19, 64, "S", "name"),
    "date": (1082, 4, "D", "date"),
    "timestamp": (1114, 8, "D", "timestamp without time zone"),
    "timestamptz": (1184, 8, "D", "timestamp with time zone"),
    "interval": (1186, 16, "T", "interval"),
    "time": (1083, 8, "D", "time without time zone"),
    "timetz": (1266, 12, "D", "time with time zone"),
    "bytea": (17, -1, "U", "bytea"),
    "uuid": (2950, 16, "U", "uuid"),
    "jsonb": (3802, -1, "U", "jsonb"),
    # An anonymous composite (a whole-row reference); its value is record_out's text.
    "record": (2249, -1, "P", "record"),
    # the result of a function that answers nothing (pg_advisory_lock): its value is ''
    "void": (2278, 4, "P", "void"),
    # Materialize's logical timestamp: an unsigned 64-bit count of milliseconds since the
    # Unix epoch (Materialize's SQL reference, "mz_timestamp type"); its OID is Materialize's
    "mz_timestamp": (16552, 8, "U", "mz_timestamp"),
    "unknown": (705, -2, "X", "unknown"),
    # Materialize's list and map types: every list type, and every map type, is reported
    # with the one OID of Materialize's pseudo-type (mz_pgrepr's TYPE_LIST_OID and
    # TYPE_MAP_OID); their element types are the plan's (SqlType.of)
    "list": (16384, -1, "U", "list"),
    "map": (16385, -1, "U", "map"),
}

#: element type name -> OID of its one-dimensional array type (pg_type.dat ``typarray``)
ARRAY_OIDS = {
    "bool": 1000, "oid": 1028, "int2": 1005, "int4": 1007, "int8": 1016, "numeric": 1231, "float4": 1021,
    "float8": 1022, "text": 1009, "name": 1003, "varchar": 1015, "bpchar": 1014, "date": 1182, "timestamp": 1115,
    "timestamptz": 1185, "interval": 1187, "time": 1183, "timetz": 1270, "bytea": 1001, "uuid": 2951, "jsonb": 3807,
}

_ARROW = {
    "bool": pa.bool_(),
    "int2": pa.int16(),
    "int4": pa.int32(),
    "int8": pa.int64(),
    "oid": pa.int64(),  # unsigned 32-bit in PostgreSQL; Parquet and Spark have no unsigned int
    "float4": pa.float32(),
    "float8": pa.float64(),
    "text": pa.string(),
    "varchar": pa.string(),
    "bpchar": pa.string(),
    "name": pa.string(),
    "unknown": pa.string(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    # Parquet has no interval type with months, days and microseconds apart: a struct.
    "interval": pa.struct([("months", pa.int32()), ("days", pa.int32()), ("micros", pa.int64())]),
    "time": pa.time64("us"),
    # Parquet and Spark have no time with time zone: timetz_out's text, which the result
    # reader parses back (catalog.textio.parse_timetz)
    "timetz": pa.string(),
    "bytea": pa.binary(),
    "uuid": pa.string(),  # canonical lowercase text; Spark has no uuid type
    "jsonb": pa.string(),  # normalized text (keys ordered, as jsonb_out prints them)
    "record": pa.string(),  # record_out's text
    "void": pa.string(),  # void_out's text: ''
    "mz_timestamp": pa.decimal128(20, 0),  # Parquet and Spark have no unsigned 64-bit integer
}

BOOL = SqlType("bool")
INT2 = SqlType("int2")
INT4 = SqlType("int4")
INT8 = SqlType("int8")
OID = SqlType("oid")
NUMERIC = SqlType("numeric")
FLOAT4 = SqlType("float4")
FLOAT8 = SqlType("float8")
TEXT = SqlType("text")
DATE = SqlType("date")
TIMESTAMP = SqlType("timestamp")
TIMESTAMPTZ = SqlType("timestamptz")
INTERVAL = SqlType("interval")
TIME = SqlType("time")
TIMETZ = SqlType("timetz")
BYTEA = SqlType("bytea")
UUID = SqlType("uuid")
JSONB = SqlType("jsonb")
UNKNOWN = SqlType("unknown")
MZ_TIMESTAMP = SqlType("mz_timestamp")

# Names a user may write, mapped to the internal name (PostgreSQL's gram.y aliases and
# the pg_catalog names pglast reports).
_ALIASES = {
    "bool": "bool", "boolean": "bool",
    "int2": "int2", "smallint": "int2",
    "int4": "int4", "int": "int4", "integer": "int4",
    "int8": "int8", "bigint": "int8", "oid": "oid",
    "numeric": "numeric", "decimal": "numeric",
    "float4": "float4", "real": "float4",
    "float8": "float8", "double precision": "float8", "float": "float8",
    "text": "text", "string": "text", "name": "name",
    "varchar": "varchar", "character varying": "varchar",
    "bpchar": "bpchar", "char": "bpchar", "character": "bpchar",
    "date": "date",
    "timestamp": "timestamp", "timestamp without time zone": "timestamp",
    "timestamptz": "timestamptz", "timestamp with time zone": "timestamptz",
    "interval": "interval",
    "time": "time", "time without time zone": "time",
    "timetz": "timetz", "time with time zone": "timetz",
    "bytea": "bytea", "uuid": "uuid",
    "jsonb": "jsonb", "json": "jsonb",  # Materialize: json is an alias of jsonb
    "mz_timestamp": "mz_timestamp",
}

_BY_OID = {info[0]: name for name, info in _INFO.items()} | {oid: "_" + e for e, oid in ARRAY_OIDS.items()} \
    | {114: "jsonb", 199: "_jsonb"}  # json and json[] arrive as jsonb: Materialize's json is jsonb


def type_from_oid(oid: int) -> SqlType | None:
    """The SqlType for a PostgreSQL type OID, or None if we do not support it."""
    name = _BY_OID.get(oid)
    return SqlType(name) if name else None


def array_of(t: SqlType) -> SqlType:
    """The one-dimensional array type of ``t`` (``int4`` -> ``int4[]``).

    Raises:
        SqlError 0A000 for arrays of arrays, of types without an array type here, and of
        interval (stored as a struct, which Spark would read back as one).
    """
    if t.is_array or t.name not in ARRAY_OIDS or t.name == "interval":
        raise SqlError(FEATURE_NOT_SUPPORTED, f"arrays of type {t.sql()} are not supported")
    return SqlType("_" + t.name, t.precision, t.scale)


def list_of(t: SqlType) -> SqlType:
    """Materialize's ``t list`` (lists nest: ``int list list``; Materialize's SQL reference,
    "List types")."""
    return SqlType("list", of=(t,))


def map_of(value: SqlType) -> SqlType:
    """Materialize's ``map[text=>value]`` (its keys are always text; "Map types")."""
    return SqlType("map", of=(TEXT, value))


def all_type_names() -> list[str]:
    """Internal names of every type, scalar and array (for ``pg_type``); Materialize's list
    and map types, which are many types under one OID here, are not among them."""
    return [n for n in _INFO if n not in ("list", "map")] + ["_" + e for e in ARRAY_OIDS]


def make_type(name: str, modifiers: list[int] | tuple[int, ...] = ()) -> SqlType:
    """Build a SqlType from a type name as written and its integer modifiers.

    Raises:
        SqlError 42704 for an unknown type name; 22023 for bad modifiers.
    """
    key = _ALIASES.get(name.lower())
    if key is None:
        raise SqlError(UNDEFINED_OBJECT, f'type "{name}" does not exist')
    mods = list(modifiers)
    if key == "numeric":
        if not mods:
            return NUMERIC
        p = mods[0]
        s = mods[1] if len(mods) > 1 else 0
        if len(mods) > 2:
            raise SqlError(SYNTAX_ERROR, "invalid NUMERIC type modifier")
        if not 1 <= p <= 38:
            # PostgreSQL allows up to 1000; Parquet and Spark decimals stop at 38.
            raise SqlError(INVALID_PARAMETER_VALUE, f"NUMERIC precision {p} must be between 1 and 38")
        if not 0 <= s <= p:
            raise SqlError(INVALID_PARAMETER_VALUE, f"NUMERIC scale {s} must be between 0 and precision {p}")
        return SqlType("numeric", p, s)
    if key in ("varchar", "bpchar"):
        if not mods:
            # char without length is char(1) (PostgreSQL 8.3 "Character Types").
            return SqlType(key, 1) if key == "bpchar" and name.lower() in ("char", "character") else SqlType(key)
        n = mods[0]
        if len(mods) > 1 or n < 1:
            raise SqlError(INVALID_PARAMETER_VALUE, f"length for type {key} must be at least 1")
        return SqlType(key, n)
    if key in _DATETIME_PRECISION and mods:
        return SqlType(key, _datetime_precision(name, mods))
    if key == "interval" and mods:
        fields, precision = check_typmod(mods)
        return SqlType(key, precision, fields)
    if key == "float8" and mods and name.lower() == "float":
        # float(p): p <= 24 is real (PostgreSQL 8.1.4).
        return FLOAT4 if mods[0] <= 24 else FLOAT8
    return SqlType(key)


#: types whose modifier is a number of fractional-second digits (PostgreSQL 8.5: 0..6)
_DATETIME_PRECISION = ("timestamp", "timestamptz", "time", "timetz")


def _datetime_precision(name: str, mods: list[int]) -> int:
    """``p`` of ``timestamp(p)`` etc., as ``anytime_typmod_check``: above 6 is reduced to 6.

    Raises:
        SqlError 22023 for a negative ``p``; 42601 for more than one modifier."""
    if len(mods) > 1:
        raise SqlError(SYNTAX_ERROR, f"invalid type modifier for type {name}")
    p = mods[0]
    if p < 0:  # the grammar takes no sign here; kept for modifiers from elsewhere
        raise SqlError(INVALID_PARAMETER_VALUE, f"{name.upper()}({p}) precision must not be negative")
    return min(p, 6)


def with_modifier(t: SqlType, precision: int | None, scale: int | None = None) -> SqlType:
    return dataclasses.replace(t, precision=precision, scale=scale)


def stored_numeric(t: SqlType, result_scale: int | None) -> SqlType:
    """The type a materialized view stores its column of type ``t`` as, given the scale
    ``result_scale`` its query's result has in that column (Spark's decimal scale; None if
    not a decimal): an unconstrained ``numeric`` keeps the query's scale, so the view shows
    each value as its query does (``n * 2`` of a ``numeric(6,2)``: ``-4.50``), at the widest
    precision (``UNCONSTRAINED_NUMERIC``'s); other types are stored as they are."""
    if t.name != "numeric" or t.precision is not None or result_scale is None:
        return t
    return dataclasses.replace(t, stored_scale=result_scale)


def arrow_schema(names: list[str], types: list[SqlType]) -> pa.Schema:
    """Arrow schema of a persist part for columns ``names`` of ``types``."""
    return pa.schema([pa.field(n, t.arrow()) for n, t in zip(names, types)])


# -- dates and timestamps that datetime cannot hold -------------------------------------

#: PostgreSQL's day count of 2000-01-01 (POSTGRES_EPOCH_JDATE, a Julian day number)
_PG_EPOCH_JDATE = 2451545
_PG_EPOCH_ORDINAL = 730120  # datetime.date(2000, 1, 1).toordinal()
_US_PER_DAY = 86_400_000_000


def date2j(y: int, m: int, d: int) -> int:
    """The Julian day number of a proleptic Gregorian date (PostgreSQL's ``date2j``;
    year 0 is 1 BC)."""
    if m > 2:
        m, y = m + 1, y + 4800
    else:
        m, y = m + 13, y + 4799
    century = y // 100
    return y * 365 - 32167 + y // 4 - century + century // 4 + 7834 * m // 256 + d


def j2date(jd: int) -> tuple[int, int, int]:
    """(year, month, day) of a Julian day number (PostgreSQL's ``j2date``)."""
    julian = jd + 32044
    quad = julian // 146097
    extra = (julian - quad * 146097) * 4 + 3
    julian += 60 + quad * 3 + extra // 146097
    quad = julian // 1461
    julian -= quad * 1461
    y = julian * 4 // 1461
    julian = ((julian + 305) % 365 if y != 0 else (julian + 306) % 366) + 123
    y += quad * 4
    quad = julian * 2141 // 65536
    return y - 4800, (quad + 10) % 12 + 1, julian - 7834 * quad // 256


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class FarDate:
    """A ``date`` that ``datetime.date`` cannot hold (PostgreSQL 8.5: 4713 BC to
    5874897 AD, and ``infinity``/``-infinity``): ``days`` since 2000-01-01, PostgreSQL's
    own count (``DATEVAL_NOBEGIN``/``NOEND`` for the infinities). Compares with dates.
    Evaluated in environmentd only: tables refuse them (Parquet and Spark dates stop at
    year 9999)."""

    days: int

    INFINITY = 2**31 - 1
    NEG_INFINITY = -(2**31)

    @property
    def infinite(self) -> bool:
        return self.days in (self.INFINITY, self.NEG_INFINITY)

    def isoformat(self) -> str:
        """date_out in ISO style: ``infinity``, ``10000-01-01``, ``0001-12-31 BC``."""
        if self.infinite:
            return "infinity" if self.days > 0 else "-infinity"
        y, m, d = j2date(self.days + _PG_EPOCH_JDATE)
        return f"{y:04d}-{m:02d}-{d:02d}" if y > 0 else f"{1 - y:04d}-{m:02d}-{d:02d} BC"

    def __str__(self) -> str:
        return self.isoformat()

    def __eq__(self, o) -> bool:
        k = date_days(o)
        return k is not None and self.days == k

    def __lt__(self, o) -> bool:
        k = date_days(o)
        if k is None:
            return NotImplemented
        return self.days < k

    def __hash__(self) -> int:
        return hash(("date", self.days))


def date_days(v) -> int | None:
    """Days since 2000-01-01 of a date value (``datetime.date`` or FarDate)."""
    if isinstance(v, FarDate):
        return v.days
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return v.toordinal() - _PG_EPOCH_ORDINAL
    return None


def date_from_days(days: int):
    """The date ``days`` after 2000-01-01: a ``datetime.date`` where it can be one, else
    a FarDate. Raises SqlError 22008 past PostgreSQL's range."""
    if FarDate.NEG_INFINITY < days < FarDate.INFINITY:
        ordinal = days + _PG_EPOCH_ORDINAL
        if 1 <= ordinal <= dt.date.max.toordinal():
            return dt.date.fromordinal(ordinal)
        if 0 <= days + _PG_EPOCH_JDATE <= 2147483494:  # JULIAN_MIN (4714-11-24 BC) .. END_JDATE
            return FarDate(days)
    elif days in (FarDate.INFINITY, FarDate.NEG_INFINITY):
        return FarDate(days)
    raise SqlError(DATETIME_FIELD_OVERFLOW, "date out of range")


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class FarTimestamp:
    """A ``timestamp`` (``tz`` False) or ``timestamptz`` (``tz`` True, a UTC instant)
    that ``datetime.datetime`` cannot hold: ``micros`` since 2000-01-01 00:00, PostgreSQL's
    own count, ``DT_NOBEGIN``/``DT_NOEND`` for ``-infinity``/``infinity``. Evaluated in
    environmentd only, as FarDate."""

    micros: int
    tz: bool = False

    INFINITY = 2**63 - 1
    NEG_INFINITY = -(2**63)

    @property
    def infinite(self) -> bool:
        return self.micros in (self.INFINITY, self.NEG_INFINITY)

    def fields(self) -> tuple[int, int, int, int, int, int, int]:
        """(year, month, day, hour, minute, second, microsecond); year 0 is 1 BC."""
        days, us = divmod(self.micros, _US_PER_DAY)
        y, m, d = j2date(days + _PG_EPOCH_JDATE)
        h, us = divmod(us, 3_600_000_000)
        mi, us = divmod(us, 60_000_000)
        s, us = divmod(us, 1_000_000)
        return y, m, d, h, mi, s, us

    def __eq__(self, o) -> bool:
        k = timestamp_micros(o)
        return k is not None and self.micros == k

    def __lt__(self, o) -> bool:
        k = timestamp_micros(o)
        if k is None:
            return NotImplemented
        return self.micros < k

    def __hash__(self) -> int:
        return hash(("timestamp", self.micros))


_PG_EPOCH = dt.datetime(2000, 1, 1)


def timestamp_micros(v) -> int | None:
    """Microseconds since 2000-01-01 00:00 (UTC for aware values) of a timestamp value."""
    if isinstance(v, FarTimestamp):
        return v.micros
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        delta = v - _PG_EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return None


def timestamp_from_micros(micros: int, tz: bool):
    """The timestamp ``micros`` after 2000-01-01 00:00: a ``datetime`` (aware UTC when
    ``tz``) where it can be one, else a FarTimestamp. Raises SqlError 22008 past
    PostgreSQL's range (4714 BC to 294276 AD)."""
    if micros in (FarTimestamp.INFINITY, FarTimestamp.NEG_INFINITY):
        return FarTimestamp(micros, tz)
    try:
        v = _PG_EPOCH + dt.timedelta(microseconds=micros)
        return v.replace(tzinfo=dt.timezone.utc) if tz else v
    except OverflowError:
        pass
    if -211813488000000000 <= micros < (date2j(294277, 1, 1) - _PG_EPOCH_JDATE) * _US_PER_DAY:  # MIN_ .. END_TIMESTAMP
        return FarTimestamp(micros, tz)
    raise SqlError(DATETIME_FIELD_OVERFLOW, "timestamp out of range")
