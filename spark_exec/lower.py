"""Lower a logical plan to a Spark DataFrame: the only module that knows DataFrames.

Function calls and aggregates are lowered by their entries in the function registry
(``planner.functions``), which call back into the toolkit ``Lowerer`` offers them
(``F``, ``T``, ``cast``, ``spark_type``, ``fail``, ``ordered_values``).

Every lowered relation has columns named ``c0 .. cN-1`` (positional, like the plan), so
joins never meet duplicate names. PostgreSQL semantics are kept where Spark differs:
integer division truncates (``div``), ``char(n)`` compares without trailing spaces,
NULLs sort last ascending and first descending, numeric-to-integer casts round.
Spark runs with ANSI mode on, so overflow and division by zero raise as in PostgreSQL.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from functools import reduce
from typing import Callable

import pyspark.sql.connect.functions as F  # the Connect client; classic functions need a JVM
from pyspark.sql.connect.column import Column as SparkColumn
from pyspark.sql.connect.dataframe import DataFrame
from pyspark.sql.connect.session import SparkSession
from pyspark.sql import types as T

from catalog.mztime import MAX as MZ_TIMESTAMP_MAX
from catalog.errors import SqlError, CANNOT_COERCE, FEATURE_NOT_SUPPORTED, NUMERIC_VALUE_OUT_OF_RANGE
from catalog.snapshot import BuiltinTable, Table
from catalog.intervalio import FIELD_TRUNCATION
from catalog.textio import DEFAULT_FORMAT, TextFormat
from catalog.types import UNCONSTRAINED_NUMERIC, SqlType, Interval
from persist import DIFF_COLUMN, TIME_COLUMN, ShardSnapshot
from persist.compact import CHANGES_BROADCAST_UPDATES
from persist.read import change_values, inline_updates
from planner.plan import (
    Constant, Distinct, Filter, Get, Join, Limit, OrderBy, Project, Reduce, SetOp, Series, Unnest, Window, WindowCall,
    inputs,
)
from planner.functions import FUNCTIONS
from planner.scalar import AggCall, Call, Case, Cast, ColRef, Literal
from spark_exec.errors import PG_ERROR_PREFIX

#: table -> the snapshot of its shard at the peek's as_of
ScanFn = Callable[[Table], ShardSnapshot]
#: builtin table -> its current rows
BuiltinFn = Callable[[BuiltinTable], list[tuple]]


def memo_scan(scan: ScanFn) -> ScanFn:
    """``scan`` that reads each table once and hands every later caller (the replicas
    racing a peek, on their threads) the same snapshot. Thread-safe."""
    lock = threading.Lock()
    snapshots: dict[str, ShardSnapshot] = {}

    def scan_once(rel: Table) -> ShardSnapshot:
        with lock:
            if rel.id not in snapshots:
                snapshots[rel.id] = scan(rel)
            return snapshots[rel.id]

    return scan_once


def spark_type(t: SqlType) -> T.DataType:
    n = t.name
    if t.is_array or t.is_list:
        return T.ArrayType(spark_type(t.element), True)
    if t.is_map:
        return T.MapType(T.StringType(), spark_type(t.element), True)
    if n == "numeric":
        p, s = t.storage_precision_scale()
        return T.DecimalType(p, s)
    return {
        "bool": T.BooleanType(), "int2": T.ShortType(), "int4": T.IntegerType(), "int8": T.LongType(), "oid": T.LongType(),
        "float4": T.FloatType(), "float8": T.DoubleType(), "text": T.StringType(), "varchar": T.StringType(), "name": T.StringType(),
        "bpchar": T.StringType(), "unknown": T.StringType(), "date": T.DateType(),
        "timestamp": T.TimestampNTZType(), "timestamptz": T.TimestampType(), "interval": T.CalendarIntervalType(),
        "time": T.TimeType(6), "timetz": T.StringType(), "bytea": T.BinaryType(), "uuid": T.StringType(), "jsonb": T.StringType(),
        "record": T.StringType(), "void": T.StringType(), "mz_timestamp": T.DecimalType(20, 0),
    }[n]


#: PostgreSQL's array_out quotes an element that is empty, NULL-like or has these characters
_ARRAY_QUOTE_RE = r'^$|^[Nn][Uu][Ll][Ll]$|[{},"\\\s]'
_UUID_RE = r"^\{?[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\}?$"


def _storage_type(t: SqlType) -> T.DataType:
    """The Spark type of a column as persist stores it in Parquet."""
    if t.name == "interval":
        return T.StructType([T.StructField("months", T.IntegerType()), T.StructField("days", T.IntegerType()),
                             T.StructField("micros", T.LongType())])
    return spark_type(t)


def _from_storage(c: SparkColumn, t: SqlType) -> SparkColumn:
    if t.name == "interval":
        iv = _make_interval(c["months"], c["days"], c["micros"])
        return F.when(c.isNull(), F.lit(None).cast(T.CalendarIntervalType())).otherwise(iv)
    return c


def _make_interval(months: SparkColumn, days: SparkColumn, micros: SparkColumn) -> SparkColumn:
    """A CalendarInterval of PostgreSQL's three fields."""
    secs = (micros.cast(T.DecimalType(20, 0)) / 1_000_000).cast(T.DecimalType(18, 6))
    return F.make_interval(F.lit(0), months, F.lit(0), days, F.lit(0), F.lit(0), secs)


def _round_micros(m: SparkColumn, precision: int) -> SparkColumn:
    """``catalog.intervalio.round_micros`` on a bigint column: half away from zero."""
    scale = 10 ** (6 - precision)
    half = scale // 2
    up = m + half
    down = -m + half
    return F.when(m >= 0, up - up % scale).otherwise(-(down - down % scale))


def _adjust_interval(c: SparkColumn, fields: int | None, precision: int | None) -> SparkColumn:
    """``catalog.intervalio.adjust_interval`` on an interval column (its
    ``FIELD_TRUNCATION`` table, then the rounding); Spark's % keeps the dividend's sign,
    as C's does."""
    f = _interval_struct(c)
    month_unit, keep_days, micro_unit = FIELD_TRUNCATION.get(fields, (1, True, 1))
    months = f["months"] - f["months"] % month_unit if month_unit != 1 else f["months"]
    days = f["days"] if keep_days else F.lit(0)
    micros = f["micros"]
    micros = (micros - micros % micro_unit if micro_unit != 1 else micros) if micro_unit else F.lit(0).cast(T.LongType())
    if precision is not None and precision < 6:
        micros = _round_micros(micros, precision)
    return F.when(c.isNotNull(), _make_interval(months, days, micros))


#: PostgreSQL's epoch (2000-01-01) in Unix microseconds: typmod rounding is symmetric about it
_PG_EPOCH_UNIX_MICROS = 946_684_800_000_000


def _round_timestamp(c: SparkColumn, tz: bool, precision: int) -> SparkColumn:
    """``catalog.textio.fit_datetime`` on a timestamp(tz) column (the replicas' Spark
    session time zone is UTC, so a timestamp's wall clock is its UTC instant)."""
    m = F.unix_micros(c if tz else c.cast(T.TimestampType())) - _PG_EPOCH_UNIX_MICROS
    out = F.timestamp_micros(_round_micros(m, precision) + _PG_EPOCH_UNIX_MICROS)
    return out if tz else out.cast(T.TimestampNTZType())


def trunc_div(a: SparkColumn, n: int) -> SparkColumn:
    """C's integer division of a bigint column by ``n`` (toward zero), exact: Spark's %
    keeps the dividend's sign, and the quotient is taken in decimal, not double."""
    a = a.cast(T.DecimalType(38, 0))
    return ((a - a % n) / n).cast(T.LongType())


def _interval_text(c: SparkColumn) -> SparkColumn:
    """An interval column as ``catalog.intervalio.format_interval`` writes it in
    IntervalStyle postgres (``1 year -2 mons +3 days -04:05:06.5``)."""
    f = _interval_struct(c)
    L = T.LongType()
    months, days, micros = f["months"].cast(L), f["days"].cast(L), f["micros"]
    y, mo = trunc_div(months, 12), months % 12
    h, rem = trunc_div(micros, 3_600_000_000), micros % 3_600_000_000
    mi, rem = trunc_div(rem, 60_000_000), rem % 60_000_000
    sec, us = trunc_div(rem, 1_000_000), rem % 1_000_000

    def part(v, unit, before):  # AddPostgresIntervalPart: "+" after a negative field
        plus = F.when(before & (v > 0), F.lit("+")).otherwise(F.lit(""))
        return F.when(v != 0, F.concat(plus, v.cast("string"), F.lit(f" {unit}"),
                                       F.when(v != 1, F.lit("s")).otherwise(F.lit(""))))

    no = F.lit(False)
    before_mo = F.when(y != 0, y < 0).otherwise(no)
    before_d = F.when(mo != 0, mo < 0).otherwise(before_mo)
    before_t = F.when(days != 0, days < 0).otherwise(before_d)
    is_zero = (y == 0) & (mo == 0) & (days == 0)
    minus = (h < 0) | (mi < 0) | (sec < 0) | (us < 0)
    frac = F.when(us != 0, F.concat(F.lit("."), F.regexp_replace(F.lpad(F.abs(us).cast("string"), 6, "0"), "0+$", "")))
    hms = F.concat(F.when(minus, F.lit("-")).when(before_t, F.lit("+")).otherwise(F.lit("")),
                   F.lpad(F.abs(h).cast("string"), 2, "0"), F.lit(":"), F.lpad(F.abs(mi).cast("string"), 2, "0"),
                   F.lit(":"), F.lpad(F.abs(sec).cast("string"), 2, "0"), F.coalesce(frac, F.lit("")))
    time = F.when(is_zero | (micros != 0), hms)
    return F.when(c.isNotNull(), F.concat_ws(" ", part(y, "year", no), part(mo, "mon", before_mo),
                                             part(days, "day", before_d), time))


def _interval_struct(c: SparkColumn) -> SparkColumn:
    """A CalendarInterval column as the struct (months, days, micros) the result reader
    turns into ``Interval``, keeping PostgreSQL's three fields apart (PostgreSQL 8.5.4:
    ``'45 hours'`` stays 45 hours, not ``1 day 21:00:00``).

    Spark's ``date_part`` on an interval moves whole days of microseconds into the day
    field (``IntervalUtils.getDays``), so the fields are read from the interval's text
    instead (``CalendarInterval.toString``: ``[Y years] [M months] [D days] [H hours]
    [M minutes] [S seconds]``, each part signed, ``0 seconds`` when zero)."""
    text = c.cast(T.StringType())

    def unit(name: str, typ: T.DataType = T.LongType()) -> SparkColumn:
        v = F.regexp_extract(text, r"(-?[0-9.]+) " + name, 1)
        return F.coalesce(F.nullif(v, F.lit("")).cast(typ), F.lit(0).cast(typ))

    months = (unit("years") * 12 + unit("months")).cast(T.IntegerType())
    micros = (unit("hours") * 3_600_000_000 + unit("minutes") * 60_000_000
              + (unit("seconds", T.DecimalType(18, 6)) * 1_000_000).cast(T.LongType()))
    # Each field nullable like the struct (Arrow cannot view a NULL struct's non-nullable children).
    field = lambda v, name: F.when(c.isNotNull(), v).alias(name)  # noqa: E731
    return F.when(c.isNotNull(), F.struct(field(months, "months"), field(unit("days").cast(T.IntegerType()), "days"),
                                          field(micros, "micros")))


def interval_key(c: SparkColumn) -> SparkColumn:
    """An interval as the number PostgreSQL compares and sorts intervals by
    (``interval_cmp_value`` in PostgreSQL's timestamp.c: a month is 30 days, a day
    86,400,000,000 microseconds), exact as decimal(38, 0); Spark cannot compare its
    CalendarInterval values."""
    f = _interval_struct(c)
    days = f["months"].cast(T.DecimalType(38, 0)) * 30 + f["days"].cast(T.DecimalType(38, 0))
    return (days * 86_400_000_000 + f["micros"].cast(T.DecimalType(38, 0))).cast(T.DecimalType(38, 0))


def _float4_digits(c: SparkColumn) -> SparkColumn:
    """A float4's shortest digits that read back as the same float4, in Java's
    ``d.dddE[-]x`` form: Float.toString's are not always the shortest before Java 19
    (JDK-4511638: 3.3333332E9 prints as 3.33333325E9)."""
    def fixed(p: int) -> SparkColumn:
        return F.format_string(f"%.{p}e", c)

    out = fixed(8)
    for p in range(7, -1, -1):
        out = F.when(fixed(p).cast(T.FloatType()) == c, fixed(p)).otherwise(out)
    java = F.regexp_replace(F.upper(out), r"E\+?", "E")
    return F.regexp_replace(java, r"^(-?[0-9]+)E", "$1.0E")  # Java's form always has a point


def _float8_text(c: SparkColumn, limit: int = 15) -> SparkColumn:
    """float8out (float4out with ``limit`` 6) on Spark, as ``catalog.textio.format_float``
    (PostgreSQL 8.1.3 with extra_float_digits >= 1): the shortest digits (Java's
    Double.toString's, Float.toString's), fixed notation when the decimal exponent is in
    [-4, limit), else ``d.ddde+XX``."""
    java = c.cast(T.StringType()) if limit == 15 else _float4_digits(c)
    body = F.regexp_replace(java, "^-", "")
    mant = F.regexp_extract(body, r"^([0-9.]+)", 1)
    exp10 = F.coalesce(F.nullif(F.regexp_extract(body, r"E(-?[0-9]+)$", 1), F.lit("")).cast("int"), F.lit(0))
    whole, frac = F.substring_index(mant, ".", 1), F.substring_index(mant, ".", -1)
    raw = F.concat(whole, frac)
    lead = F.length(raw) - F.length(F.ltrim(raw, F.lit("0")))
    digits = F.rtrim(F.ltrim(raw, F.lit("0")), F.lit("0"))
    exp_i = exp10 + F.length(whole) - 1 - lead
    n = F.length(digits)
    sci = F.concat(F.substring(digits, 1, 1), F.when(n > 1, F.concat(F.lit("."), F.substring(digits, 2, 400)))
                   .otherwise(F.lit("")), F.lit("e"), F.when(exp_i < 0, F.lit("-")).otherwise(F.lit("+")),
                   F.lpad(F.abs(exp_i).cast("string"), 2, "0"))
    big = F.when(n <= exp_i + 1, F.concat(digits, F.repeat(F.lit("0"), exp_i + 1 - n))).otherwise(
        F.concat(F.substring(digits, F.lit(1), exp_i + 1), F.lit("."), F.substring(digits, exp_i + 2, F.lit(400))))
    small = F.concat(F.lit("0."), F.repeat(F.lit("0"), -exp_i - 1), digits)
    text = F.when((exp_i < -4) | (exp_i >= limit), sci).when(exp_i >= 0, big).otherwise(small)
    sign = F.when(java.startswith("-"), F.lit("-")).otherwise(F.lit(""))
    return (F.when(c.isNull(), F.lit(None).cast("string")).when(F.isnan(c), F.lit("NaN"))
            .when(c == float("inf"), F.lit("Infinity")).when(c == float("-inf"), F.lit("-Infinity"))
            .when(c == 0, F.concat(sign, F.lit("0"))).otherwise(F.concat(sign, text)))


#: Spark: the text forms (casts to text) Spark's own string cast does not write as
#: PostgreSQL does: booltext (``true``, not boolout's ``t``: PostgreSQL 8.6, and the text
#: ``||`` concatenates, as anytextcat casts), float4out/float8out and interval_out
_TEXT_FORMS = {
    "bool": lambda c: F.when(c, F.lit("true")).when(~c, F.lit("false")),
    "float4": lambda c: _float8_text(c, 6),
    "float8": lambda c: _float8_text(c),
    "interval": lambda c: _interval_text(c),
    # Spark's text of an instant is in its session zone, UTC (orchestrator), without the
    # offset timestamptz_out writes (docs/differences.md: casts of table data stay in UTC)
    "timestamptz": lambda c: F.concat(c.cast(T.StringType()), F.lit("+00")),
}


def sort_key(c: SparkColumn, t: SqlType) -> SparkColumn:
    """``c`` (of type ``t``) as a value Spark compares and sorts in this project's order:
    char(n) without its padding, intervals by ``interval_key``, jsonb in jsonb's btree
    order (the registry's ``jsonb_sort_key``); an array or list element by element with a
    NULL element above every other value (PostgreSQL's array_cmp, Materialize's Datum
    order; Spark's own array order puts NULL elements first), a map as its (key, value)
    pairs in key order (Materialize's DatumMap order; Spark cannot compare maps). The
    interpreter's twin is ``planner.functions.logic.order_key``."""
    if t.name == "bpchar":
        return F.rtrim(c)
    if t.name == "interval":
        return interval_key(c)
    if t.name == "jsonb":
        return FUNCTIONS["jsonb_sort_key"].spark(Lowerer, [c], None)
    if t.is_array or t.is_list:
        return F.transform(c, lambda x: F.struct(x.isNull().alias("n"), sort_key(x, t.element).alias("v")))
    if t.is_map:
        pairs = F.transform(F.map_entries(c), lambda e: F.struct(e["key"].alias("k"), e["value"].isNull().alias("n"),
                                                                  sort_key(e["value"], t.element).alias("v")))
        return F.array_sort(pairs)  # keys are distinct: the pairs sort by key
    return c


def _groupable(c: SparkColumn, t: SqlType) -> SparkColumn:
    """A map column as its entries in key order (an array of key-value structs), a value
    Spark groups and compares; ``maps_restored_column`` turns it back. Spark refuses maps in
    DISTINCT and set operations, and its GROUP BY of a map with a NULL value gave 0 for the
    NULL (Spark 4.0's map normalization).

    Raises:
        SqlError 0A000 for a map inside an array or list, or a map of maps."""
    if t.map_groupable:
        return F.array_sort(F.map_entries(c))
    raise SqlError(FEATURE_NOT_SUPPORTED, f"grouping by values of type {t.sql()} is not supported on table data")


def maps_restored_column(c: SparkColumn, t: SqlType) -> SparkColumn:
    """One column of ``_groupable``'s form, of type ``t``, as its map again."""
    return F.map_from_entries(c)


def _sort_col(c: SparkColumn, t: SqlType, descending: bool, nulls_first: bool) -> SparkColumn:
    """``c`` as a sort key of ORDER BY (``sort_key``), NULLs placed as told."""
    c = sort_key(c, t)
    if descending:
        return c.desc_nulls_first() if nulls_first else c.desc_nulls_last()
    return c.asc_nulls_first() if nulls_first else c.asc_nulls_last()


def _empty_array(t: SqlType) -> SparkColumn:
    return F.array().cast(spark_type(t))


def _row_text(call: Call, error_prefix: str) -> Callable:
    """The function a Python UDF runs per row for ``Lowerer.python_text``: it refers to
    no global of this module, so that it pickles small (cloudpickle sends a nested
    function by value) and the replica's worker imports only the planner."""
    def run(*values):
        from planner.functions import call_text

        return call_text(call, values, error_prefix)
    return run


#: decimals of a numeric product on Spark when an operand is an unconstrained numeric
#: (``Lowerer.numeric_product``): its integer part keeps 38 - this many digits
_PRODUCT_SCALE = 20


def _per_value_numeric(e) -> bool:
    """Whether ``e`` is an unconstrained numeric whose Spark scale may not be PostgreSQL's
    (``Lowerer.numeric_scale``): no static scale."""
    from planner.functions.math import static_scale

    return e.type.name == "numeric" and e.type.precision is None and static_scale(e) is None


def _least_scale(c: SparkColumn) -> SparkColumn:
    """The fewest decimals that hold the decimal column ``c``'s value (its trailing zeros
    dropped): 0 for an integral value."""
    return F.length(F.regexp_extract(c.cast("string"), r"\.([0-9]*?)0*$", 1))


def _let(value: SparkColumn, body: Callable[[SparkColumn], SparkColumn]) -> SparkColumn:
    """``body(value)`` with ``value`` computed once: a body that uses its argument several
    times would otherwise copy its expression each time, and nested products
    (``n * n * n``) grow past what Spark Connect's messages may nest."""
    return F.transform(F.array(value), body).getItem(0)


def _split_decimal(c: SparkColumn, body: Callable[[SparkColumn, SparkColumn], SparkColumn]) -> SparkColumn:
    """``body(whole, fraction)`` of the decimal column ``c``'s text: the digits before
    its point (with the sign) and after it ('' for none)."""
    def parts(text):
        frac = F.when(text.contains("."), F.substring_index(text, ".", -1)).otherwise(F.lit(""))
        return body(F.substring_index(text, ".", 1), frac)
    return _let(c.cast("string"), parts)


def _scaled_text(c: SparkColumn, scale: SparkColumn) -> SparkColumn:
    """The decimal column ``c`` as text with ``scale`` (an int column) decimals: cut or
    padded with zeros, never rounded (the digits cut are zeros: ``scale`` is at least the
    value's own)."""
    return _split_decimal(c, lambda whole, frac: F.when(
        scale > 0, F.concat(whole, F.lit("."), F.rpad(frac, scale, "0"))).otherwise(whole))


def _unscaled(c: SparkColumn, scale: SparkColumn) -> SparkColumn:
    """The decimal column ``c``'s value times 10^``scale`` as a string of digits (with its
    sign), exactly (``_scaled_text`` without the point)."""
    return _split_decimal(c, lambda whole, frac: F.concat(whole, F.rpad(frac, scale, "0")))


def col(i: int) -> SparkColumn:
    return F.col(f"c{i}")


def read_parts(spark: SparkSession, table: Table, urls: list[str]) -> DataFrame:
    """The Parquet parts ``urls`` of ``table``'s shard (plain parts: rows only), in its
    storage schema. One definition for peeks and arrangements: Spark's cache matches plans
    exactly."""
    return spark.read.schema(_file_schema(table)).parquet(*urls)


#: parts of an arranged table with at least this many rows are cached, and read back, one
#: by one; the smaller parts together as one unit
ARRANGED_PART_ROWS = 100_000


def arranged_units(parts: list[tuple[str, int]]) -> list[tuple[str, ...]]:
    """How an arrangement caches a table's plain parts, given as ``(url, rows)``, and how
    peeks read them back (Spark's cache matches plans exactly, so both use this rule): a
    big part alone, so a write into a big table caches only its own new part; all small
    parts together, so a table written in many small parts is one cached scan instead
    of a union of many (which costs Spark more planning and tasks than the rows)."""
    big = [(u,) for u, n in parts if n >= ARRANGED_PART_ROWS]
    small = tuple(sorted(u for u, n in parts if n < ARRANGED_PART_ROWS))
    return big + ([small] if small else [])


def read_layout(spark: SparkSession, table: Table, urls: list[str], diffs: bool, timed: bool) -> DataFrame:
    """Parts that share one file layout, as stored: the table's columns, then
    ``_mz_time`` (``timed``) and ``_mz_diff`` (``diffs``) when the parts have them."""
    if not diffs:
        return read_parts(spark, table, urls)
    fields = _file_schema(table).fields
    if timed:
        fields.append(T.StructField(TIME_COLUMN, T.LongType(), False))
    fields.append(T.StructField(DIFF_COLUMN, T.LongType(), False))
    return spark.read.schema(T.StructType(fields)).parquet(*urls)


def _updates(spark: SparkSession, table: Table, parts, as_of: int, names: list[str]) -> DataFrame:
    """The updates of ``parts`` visible at ``as_of`` as the table's columns plus
    ``_mz_diff``: one scan per file layout (a union of one scan per part costs Spark a
    plan node and a job stage per part, which small tables written row by row have many
    of)."""
    groups: dict[tuple[bool, bool, bool], list[str]] = {}
    for p in parts:
        groups.setdefault((p.diffs, p.timed, p.filter_time), []).append(p.url)
    frames = []
    for (diffs, timed, filter_time), urls in groups.items():
        df = read_layout(spark, table, urls, diffs, timed)
        if filter_time:
            df = df.filter(F.col(TIME_COLUMN) <= F.lit(as_of))
        diff = F.col(DIFF_COLUMN) if diffs else F.lit(1).cast("long")
        frames.append(df.select(*names, diff.alias(DIFF_COLUMN)))
    return reduce(DataFrame.unionAll, frames)


def _file_schema(table: Table) -> T.StructType:
    return T.StructType([T.StructField(c.name, _storage_type(c.type), True) for c in table.columns])


def read_snapshot(spark: SparkSession, table: Table, snap: ShardSnapshot, arranged: bool) -> DataFrame:
    """The rows of ``table`` at the snapshot's as_of, in its storage schema
    (persist.read's rule): updates after as_of dropped, and diffs summed per row when a
    retraction is visible (each row then repeated its count times). Arranged tables'
    plain parts are read in the units the arrangement cached (``arranged_units``).
    Inline parts (kept in the shard's state, not in Blob) come as one local relation
    (``inline_frame``) unioned with the scans of the Parquet parts."""
    names = [f"`{c.name}`" for c in table.columns]
    inline = inline_frame(spark, table, snap)
    parts = [p for p in snap.parts if p.inline is None]
    if not snap.consolidate:
        # Every visible update is a +1, so a part's rows are the table's rows whatever
        # other columns it has (Parquet reads only the columns asked for): one scan of
        # every part but those with updates after as_of.
        later = [p for p in parts if p.filter_time]
        if arranged:  # the plain parts exactly as the arrangement cached them
            frames = [read_parts(spark, table, list(unit))
                      for unit in arranged_units([(p.url, p.updates) for p in parts if not p.diffs])]
            whole = [p.url for p in parts if p.diffs and not p.filter_time]
            frames += [read_parts(spark, table, whole)] if whole else []
        else:
            whole = [p.url for p in parts if not p.filter_time]
            frames = [read_parts(spark, table, whole)] if whole else []
        if later:
            frames.append(_updates(spark, table, later, snap.as_of, names).select(*names))
        if inline is not None:
            frames.append(inline.select(*names))
        return reduce(DataFrame.unionAll, frames) if frames else spark.createDataFrame([], _file_schema(table))
    plain = [p for p in parts if not p.diffs]
    updates = [p for p in parts if p.diffs]
    maps = _map_columns(table)
    if maps:  # no shortcut compares rows: Spark cannot compare maps (``_consolidate``)
        return _consolidate(reduce(DataFrame.unionAll, _update_frames(spark, table, snap, parts, inline)), names, maps)
    if plain and (updates or inline is not None):
        split = _split_on_change_values(table, snap)
        if split is not None:
            # Few changes (UPDATEs and DELETEs of some rows): the plain rows whose value
            # in one column is none of the changes' values cannot be equal to a changed
            # row and pass through; the few others are consolidated with the changes.
            # Filters Parquet statistics can prune (the touched rows' row groups only),
            # no join.
            hit, miss = split
            rows = read_parts(spark, table, [p.url for p in plain]).select(*names)
            touched = rows.filter(hit).select(*names, F.lit(1).cast("long").alias(DIFF_COLUMN))
            return rows.filter(miss).unionAll(
                _consolidate(reduce(DataFrame.unionAll, [touched, *_update_frames(spark, table, snap, updates, inline)]),
                             names))
    changed = _update_frames(spark, table, snap, updates, inline)
    if plain and changed and sum(p.updates for p in updates) + _inline_rows(snap) <= BROADCAST_UPDATES:
        # Few updates against many plain rows (an UPDATE or DELETE of some rows of a big
        # table): only the plain rows equal to an updated row need consolidating; the
        # others pass through (a broadcast anti join on every column, NULLs equal).
        # Inline parts count as updates here, whatever their diffs: they are few.
        changed = reduce(DataFrame.unionAll, changed)
        keys = F.broadcast(changed.select(*[F.col(n).alias(f"_k{i}") for i, n in enumerate(names)]).distinct())
        rows = read_parts(spark, table, [p.url for p in plain]).select(*names)
        on = reduce(lambda a, b: a & b, [rows[n].eqNullSafe(keys[f"_k{i}"]) for i, n in enumerate(names)])
        untouched = rows.join(keys, on, "left_anti")
        touched = rows.join(keys, on, "left_semi").select(*names, F.lit(1).cast("long").alias(DIFF_COLUMN))
        return untouched.unionAll(_consolidate(touched.unionAll(changed), names))
    return _consolidate(reduce(DataFrame.unionAll, _update_frames(spark, table, snap, parts, inline)), names)


def _update_frames(spark: SparkSession, table: Table, snap: ShardSnapshot, parts, inline: DataFrame | None
                   ) -> list[DataFrame]:
    """The updates of ``parts`` (in Blob) visible at the snapshot's as_of and the inline
    ones (``inline``), as frames of the table's columns plus ``_mz_diff``."""
    names = [f"`{c.name}`" for c in table.columns]
    return ([_updates(spark, table, parts, snap.as_of, names)] if parts else []) + ([inline] if inline is not None else [])


def inline_frame(spark: SparkSession, table: Table, snap: ShardSnapshot) -> DataFrame | None:
    """The updates of ``snap``'s inline parts visible at its as_of (``persist.read
    .inline_updates``: the table's columns, then ``_mz_diff``) as a Spark local relation
    (Spark Connect sends the Arrow batches inside the plan); None when it has none.
    Bounded by persist's inline limit (``persist.write.INLINE_TOTAL_MAX_BYTES``)."""
    t = inline_updates(snap.parts, snap.as_of, [c.name for c in table.columns])
    if t is None:
        return None
    fields = _file_schema(table).fields + [T.StructField(DIFF_COLUMN, T.LongType(), True)]
    return spark.createDataFrame(t, schema=T.StructType(fields))


#: column types whose stored values compare exactly as Spark literals (``isin``)
_SPLIT_TYPES = frozenset({"bool", "int2", "int4", "int8", "oid", "numeric", "text", "varchar", "bpchar", "date",
                          "uuid", "jsonb"})
#: at most this many distinct values in an ``isin`` split of the plain rows
SPLIT_VALUES = 1000


def _split_on_change_values(table: Table, snap: ShardSnapshot) -> tuple[SparkColumn, SparkColumn] | None:
    """``(hit, miss)``: predicates true for the stored rows whose value in the table's
    first column of a type in ``_SPLIT_TYPES`` is (``hit``) or is not (``miss``) one of
    the values the snapshot's changes (parts with diffs, inline parts) have there, NULL
    counting as a value; the two never both hold, and no row is dropped by both (a
    filter drops NULL). Both are plain comparisons Spark pushes into the Parquet scan
    (a ``coalesce`` around them would not be). None when no column fits or the changes
    hold more than ``BROADCAST_UPDATES`` updates or ``SPLIT_VALUES`` values there."""
    col = next((c for c in table.columns if c.type.name in _SPLIT_TYPES and not c.type.is_array), None)
    if col is None:
        return None
    values = change_values(snap, col.name, BROADCAST_UPDATES, SPLIT_VALUES)
    if values is None:
        return None
    c = F.col(f"`{col.name}`")
    known = [v for v in values if v is not None]
    if not known:
        return (c.isNull(), c.isNotNull()) if None in values else (F.lit(False), F.lit(True))
    if None in values:
        return c.isin(*known) | c.isNull(), c.isNotNull() & ~c.isin(*known)
    return c.isin(*known), c.isNull() | ~c.isin(*known)


def _inline_rows(snap: ShardSnapshot) -> int:
    return sum(p.updates for p in snap.parts if p.inline is not None)


#: at most this many updates in parts with diffs are broadcast against the plain rows
#: (the size compaction keeps changes under: one rule for both)
BROADCAST_UPDATES = CHANGES_BROADCAST_UPDATES


def consolidated_updates(spark: SparkSession, table: Table, snap: ShardSnapshot) -> DataFrame:
    """Every update of ``snap``'s parts (whatever its time) consolidated, as updates: the
    table's columns, then ``_mz_diff`` of +1 or -1, each row ``|sum|`` times, rows
    summing to 0 left out (``persist.read.consolidate_updates``'s rule; compaction on a
    replica)."""
    names = [f"`{c.name}`" for c in table.columns]
    frames = _update_frames(spark, table, snap, [p for p in snap.parts if p.inline is None], inline_frame(spark, table, snap))
    d = F.col(DIFF_COLUMN)
    summed = summed_diffs(reduce(DataFrame.unionAll, frames), names, DIFF_COLUMN, _map_columns(table)).filter(d != 0)
    sign = F.when(d > 0, F.lit(1)).otherwise(F.lit(-1)).cast("long")
    return summed.select(*names, F.explode(F.array_repeat(sign, F.abs(d).cast("int"))).alias(DIFF_COLUMN))


def _map_columns(table: Table) -> dict[str, SqlType]:
    """``table``'s columns holding maps: name -> type."""
    return {c.name: c.type for c in table.columns if c.type.holds_map}


def numbered_maps(columns) -> dict[str, SqlType]:
    """The columns ``c<i>`` of ``columns`` ((name, SqlType) each) that hold maps: name ->
    type (for ``maps_groupable``)."""
    return {f"c{i}": t for i, (_, t) in enumerate(columns) if t.holds_map}


def maps_groupable(df: DataFrame, maps: dict[str, SqlType]) -> DataFrame:
    """``df`` with its map columns ``maps`` (name -> type) as their entries in key order
    (``_groupable``): Spark refuses to compare maps, and its grouping of a map turned a
    NULL value into 0 or 1 (Spark 4.0's map normalization), so rows holding maps are
    consolidated in this form. ``maps_restored`` turns them back."""
    for n, t in maps.items():
        df = df.withColumn(n, _groupable(F.col(f"`{n}`"), t))
    return df


def maps_restored(df: DataFrame, maps: dict[str, SqlType]) -> DataFrame:
    """``df`` with its columns ``maps`` made by ``maps_groupable`` maps again."""
    for n, t in maps.items():
        df = df.withColumn(n, maps_restored_column(F.col(f"`{n}`"), t))
    return df


def summed_diffs(df: DataFrame, names: list[str], diff: str, maps: dict[str, SqlType] | None = None) -> DataFrame:
    """``df``'s rows grouped by the columns ``names`` with their ``diff`` column summed
    (rows summing to 0 kept: callers filter as they need); ``maps``: the columns holding
    maps, name -> type, grouped by their entries (``maps_groupable``). The one grouping of
    updates by value that reads, compaction, a replica's writes and dataflows share."""
    maps = maps or {}
    return maps_restored(maps_groupable(df, maps).groupBy(*names).agg(F.sum(diff).alias(diff)), maps)


def _consolidate(df: DataFrame, names: list[str], maps: dict[str, SqlType] | None = None) -> DataFrame:
    """Materialize's consolidation: sum the diffs of equal rows (NULLs group together) and
    repeat each row its count times (rows summing to <= 0 vanish). ``maps``: the columns
    holding maps, name -> type (``maps_groupable``)."""
    summed = summed_diffs(df, names, DIFF_COLUMN, maps).filter(F.col(DIFF_COLUMN) > 0)
    return summed.select(*names, F.explode(F.array_repeat(F.lit(0), F.col(DIFF_COLUMN).cast("int"))).alias("_n")
                         ).select(*names)


#: plan nodes that Spark evaluates without an exchange (the rest group, sort or join)
_NARROW = (Get, Constant, Filter, Project, Limit, Series, Unnest)


#: estimated result rows from which a result that multiplies its inputs' rows is spread
SPREAD_MIN_ROWS = 1_000_000
#: estimated rows per partition of a spread result (~25 to 250 MB of Arrow)
SPREAD_ROWS_PER_PARTITION = 250_000
#: most partitions a result is spread over
SPREAD_MAX_PARTITIONS = 512
#: estimated result rows from which a peek's result is spilled even when not spread
#: (``spark_exec.spill``): the replica's driver would hold what the client has not read
SPILL_MIN_ROWS = 5_000_000


def result_layout(plan, row_count) -> tuple[int | None, bool]:
    """``(spread_partitions(...), spills(...))`` of ``plan`` from one size estimate: what
    ``Lowerer.lower_result`` asks for every peek."""
    from planner.optimize.joins import estimate_rows
    from planner.plan import relations_read

    rows = estimate_rows(plan, row_count)
    largest = max((row_count(r) or 0 for r in relations_read(plan)), default=0)
    spread = None
    if rows >= SPREAD_MIN_ROWS and rows > largest:
        spread = min(SPREAD_MAX_PARTITIONS, max(2, -(-int(rows) // SPREAD_ROWS_PER_PARTITION)))
    return spread, spread is not None or rows >= SPILL_MIN_ROWS


def result_layout_of(plan, scan: ScanFn) -> tuple[int | None, bool]:
    """``result_layout`` with each table's rows from its snapshot (``scan``)."""
    return result_layout(plan, lambda rel: scan(rel).rows if isinstance(rel, Table) else None)


def spread_partitions(plan, row_count) -> int | None:
    """How many partitions a peek's result is spread over before it is sent, or None to
    send it as the plan makes it.

    Spark Connect's driver runs the result job with each task turning its whole
    partition into Arrow batches in memory and then serializing them
    (``SparkConnectPlanExecution.processAsArrowBatches``): a partition of hundreds of MB
    exhausts a replica's heap and kills its JVM, and with active replication every
    replica of the cluster at once. Scans and shuffles keep partitions near their
    inputs' size, but a plan that multiplies rows (a cross or non-equi join, a series,
    a many-to-many join) makes one input partition into an arbitrarily large output
    partition. Such a result (estimated ``SPREAD_MIN_ROWS`` rows or more, and more rows
    than its largest input) goes through a shuffle, which spills to disk, into
    partitions of about ``SPREAD_ROWS_PER_PARTITION`` rows (Kyuubi bounds results by
    plan statistics the same way). ``row_count(relation)``: rows or None."""
    return result_layout(plan, row_count)[0]


def spills(plan, row_count) -> bool:
    """Whether a peek's result should come through Blob (``spark_exec.spill``) rather
    than Spark Connect's result stream: a spread result, or one estimated at
    ``SPILL_MIN_ROWS`` rows or more (a scan of a large table), since Spark Connect's
    driver keeps every batch its client has not read yet."""
    return result_layout(plan, row_count)[1]


#: ``_result_order`` of a result ordered under a LIMIT
_LIMITED_ORDER = object()


def _result_order(plan):
    """The OrderBy that orders ``plan``'s result (under projections), None for an
    unordered result, ``_LIMITED_ORDER`` for one ordered under a Limit."""
    limited = False
    while isinstance(plan, (Project, Limit)):
        limited = limited or isinstance(plan, Limit)
        plan = plan.input
    if not isinstance(plan, OrderBy):
        return None
    return _LIMITED_ORDER if limited else plan


def _exchanges(plan) -> bool:
    """Whether Spark needs a shuffle for ``plan``: some node groups, sorts or joins."""
    return not isinstance(plan, _NARROW) or any(_exchanges(i) for i in inputs(plan))


class Lowerer:
    """Lowers plans for one Spark session. ``scan`` lists a table's part URLs at the peek's
    as_of; ``builtin_rows`` gives a system table's rows.

    Relations sent inside the plan (VALUES, system tables, tables whose parts are all
    inline: at most ``persist.write.INLINE_TOTAL_MAX_BYTES``) become one partition when
    the plan groups, sorts or joins: Spark then needs no exchange above them (a single
    partition satisfies every distribution), so a ``count(*)`` or ``ORDER BY`` of a small
    table runs one job instead of two (AQE runs each shuffle stage as its own job):
    about 30-70 ms less per query on a warm replica. A plan that only filters and
    projects keeps them as they are: Spark evaluates those in its driver, without a job.
    """

    def __init__(self, spark: SparkSession, scan: ScanFn, builtin_rows: BuiltinFn,
                 arranged: frozenset[str] = frozenset(), text: TextFormat = DEFAULT_FORMAT):
        self.spark = spark
        self.scan = scan
        self.builtin_rows = builtin_rows
        #: the session's DateStyle, TimeZone and IntervalStyle (its statement's
        #: ``Guard.text``), which the casts lowered here must follow or refuse
        self.text = text
        #: ids of the tables whose parts the replica keeps in memory (indexes)
        self.arranged = arranged
        #: view id -> its contents at the peek's timestamp, read from the arrangement of
        #: an index on it (``spark_exec.dataflow.Contents``): what a ``Get`` of the view
        #: (``PlanContext.indexed_views``) lowers to
        self.indexed: dict[str, DataFrame] = {}
        #: make local relations one partition (see the class docstring)
        self.single_local = False
        #: partitions the result is spread over (``spread_partitions``), or None
        self.spread: int | None = None
        #: the result is large enough to come through Blob (``spills``)
        self.spill = False
        #: the OrderBy that gives the result its order, when the result is spread
        self._spread_order: OrderBy | None = None
        self._snapshots: dict[str, ShardSnapshot] = {}
        #: the Project whose expressions are the result's columns (``_result_texts``)
        self._result_project: Project | None = None
        #: id of a lowered plan node -> its columns that carry their text beside their
        #: value (``t<i>`` beside ``c<i>``: ``result_text`` entries, a numeric of a scale
        #: per value), up to the result, which sends the text (``lower_result``)
        self._texts: dict[int, frozenset[int]] = {}
        #: ids of the plan nodes whose columns are the result's (``lower_result``): only
        #: they carry texts, which no other node passes on
        self._result_path: set[int] = set()
        #: id of a lowered plan node -> its columns that are an unconstrained numeric as a
        #: table stores it (``catalog.types.UNCONSTRAINED_NUMERIC``'s scale, not the value's
        #: own): their display scale is their value's least (``numeric_scale``)
        self._stored: dict[int, frozenset[int]] = {}
        #: the stored numerics (``_stored``) of the node whose columns the expressions
        #: being lowered refer to (``ColRef``)
        self._scope: frozenset[int] = frozenset()

    # -- relations --------------------------------------------------------------------

    def lower(self, plan) -> DataFrame:
        m = getattr(self, "_" + type(plan).__name__)
        df = m(plan)
        # the expressions lowered next refer to this node's columns only through
        # ``_lower_input``: none is a stored numeric until it says so (a Join's condition,
        # whose inputs are two, sees none)
        self._scope = frozenset()
        if isinstance(plan, (Filter, OrderBy, Limit)) and id(plan.input) in self._texts:
            self._texts[id(plan)] = self._texts[id(plan.input)]  # their rows keep every column
        if isinstance(plan, (Filter, OrderBy, Limit, Distinct)) and id(plan.input) in self._stored:
            self._stored[id(plan)] = self._stored[id(plan.input)]
        if isinstance(plan, Join):  # the left input's columns, then the right's (none for semi, anti)
            right = () if plan.kind in ("semi", "anti") else self._stored.get(id(plan.right), ())
            stored = self._stored.get(id(plan.left), frozenset()) | {len(plan.left.columns) + i for i in right}
            if stored:
                self._stored[id(plan)] = frozenset(stored)
        return df

    def _lower_input(self, plan) -> DataFrame:
        """``plan`` lowered as the input of the node whose expressions are lowered next:
        their column references are to its columns (``_scope``)."""
        df = self.lower(plan)
        self._scope = self._stored.get(id(plan), frozenset())
        return df

    def _scan(self, rel: Table) -> ShardSnapshot:
        """``scan(rel)``, once per relation and lowering (a self-join reads one snapshot)."""
        if rel.id not in self._snapshots:
            self._snapshots[rel.id] = self.scan(rel)
        return self._snapshots[rel.id]

    def lower_result(self, plan, layout: tuple[int | None, bool] | None = None) -> DataFrame:
        """``plan`` lowered for collecting: interval columns become (months, days, micros)
        structs, since Spark's Arrow conversion has no CalendarInterval. ``layout``:
        ``result_layout``'s answer for ``plan`` when the caller has it already."""
        self.single_local = _exchanges(plan)
        self.spread, self.spill = layout or result_layout_of(plan, self._scan)
        if self.spread:
            order = _result_order(plan)
            if order is _LIMITED_ORDER:  # a top-k: Spark takes it in the driver, unspread
                self.spread = None
            else:
                self._spread_order = order
        node = plan
        while isinstance(node, (OrderBy, Limit)):  # they keep the columns of the Project below
            node = node.input
        self._result_project = node if isinstance(node, Project) else None
        node = plan
        while True:
            self._result_path.add(id(node))
            if not isinstance(node, (OrderBy, Limit, Filter)) and node is not self._result_project:
                break
            node = node.input
        df = self.lower(plan)
        texts = self._texts.get(id(plan), frozenset())
        # a stored unconstrained numeric that reaches the result as it is (a group's key, a
        # column of a table read whole) is sent at its value's scale (``numeric_scale``)
        stored = self._stored.get(id(plan), frozenset()) - texts
        if texts or stored:
            df = df.select(*[F.col(f"t{i}").alias(f"c{i}") if i in texts
                             else _scaled_text(col(i), _least_scale(col(i))).alias(f"c{i}") if i in stored
                             else col(i) for i in range(len(plan.columns))])
        if self.spread and self._spread_order is None:
            df = df.repartition(self.spread)
        if not any(t.name == "interval" for _, t in plan.columns):
            return df
        return df.select(*[_interval_struct(col(i)).alias(f"c{i}") if t.name == "interval" else col(i)
                           for i, (_, t) in enumerate(plan.columns)])

    def _schema(self, columns, values: list[tuple] = ()) -> T.StructType:
        fields = []
        for i, (_, t) in enumerate(columns):
            st = spark_type(t)
            if t.name == "numeric" and t.precision is None and values:
                scale = max((-v.as_tuple().exponent for r in values if (v := r[i]) is not None and v.is_finite()),
                            default=0)
                st = T.DecimalType(38, min(max(scale, 0), 37))
            fields.append(T.StructField(f"c{i}", st, True))
        return T.StructType(fields)

    def _local(self, df: DataFrame) -> DataFrame:
        """``df``, a relation sent inside the plan, as one partition when that saves an
        exchange (see the class docstring)."""
        return df.coalesce(1) if self.single_local else df

    def _Get(self, p: Get) -> DataFrame:
        rel = p.relation
        if isinstance(rel, BuiltinTable):
            rows = self.builtin_rows(rel)
            return self._local(self.spark.createDataFrame(rows, self._schema(p.columns)))
        if rel.id in self.indexed:  # a view, read from its index's arrangement
            return self.indexed[rel.id]
        snap = self._scan(rel)
        names = [c.name for c in rel.columns]
        if not snap.parts:  # the types a read of its parts has (SqlType.stored_scale)
            return self.spark.createDataFrame([], self._schema([(c.name, c.type) for c in rel.columns]))
        self._stored[id(p)] = frozenset(
            i for i, c in enumerate(rel.columns)
            if c.type.name == "numeric" and c.type.precision is None and c.type.stored_scale is None)
        # Arranged tables part by part, so Spark's cache manager answers each from memory.
        df = read_snapshot(self.spark, rel, snap, rel.id in self.arranged)
        if all(part.inline is not None for part in snap.parts):
            df = self._local(df)
        return df.select(*[_from_storage(F.col(f"`{n}`"), c.type).alias(f"c{i}")
                           for i, (n, c) in enumerate(zip(names, rel.columns))])

    def _Series(self, p: Series) -> DataFrame:
        stop = p.stop + (1 if p.step > 0 else -1)
        return self.spark.range(p.start, stop, p.step).select(F.col("id").cast(spark_type(p.columns[0][1])).alias("c0"))

    def _Constant(self, p: Constant) -> DataFrame:
        if not p.columns:
            return self.spark.range(len(p.rows)).drop("id")
        rows = [tuple(_to_spark_value(v) for v in r) for r in p.rows]
        return self._local(self.spark.createDataFrame(rows, self._schema(p.columns, list(p.rows))))

    def _Filter(self, p: Filter) -> DataFrame:
        df = self._lower_input(p.input)
        return df.filter(self.scalar(p.predicate))

    def _Project(self, p: Project) -> DataFrame:
        df = self._lower_input(p.input)
        below = self._texts.get(id(p.input), frozenset())
        stored = frozenset(i for i, e in enumerate(p.exprs) if isinstance(e, ColRef) and e.index in self._scope)
        if stored:
            self._stored[id(p)] = stored
        if p is not self._result_project:
            return df.select(*[self.scalar(e).alias(f"c{i}") for i, e in enumerate(p.exprs)])
        # The result's own columns: a call whose entry gives its text per row
        # (``result_text``: a numeric of PostgreSQL's per-value scale) is sent as that text
        # (t<i>, swapped in by ``lower_result``), and so is a column of the input that
        # carries its text; the value stays for an ORDER BY above.
        cols, texts, carried = [], [], set()
        for i, e in enumerate(p.exprs):
            text = F.col(f"t{e.index}") if isinstance(e, ColRef) and e.index in below else self._value_text(e)
            if text is None and _per_value_numeric(e):
                # an unconstrained numeric of a scale per value: sent at PostgreSQL's scale
                text = self.numeric_text(e, self.scalar(e))
                if text is not None:
                    cols.append(self.scalar(e).alias(f"c{i}"))
                    texts.append(text.alias(f"t{i}"))
                    carried.add(i)
                    continue
            if text is not None:
                cols.append(self.scalar(e).alias(f"c{i}") if isinstance(e, ColRef)
                            else text.try_cast(spark_type(e.type)).alias(f"c{i}"))
                texts.append(text.alias(f"t{i}"))
                carried.add(i)
            else:
                cols.append(self.scalar(e).alias(f"c{i}"))
        if carried:
            self._texts[id(p)] = frozenset(carried)
        return df.select(*cols, *texts)

    def _Reduce(self, p: Reduce) -> DataFrame:
        df = self._lower_input(p.input)
        # maps are grouped by their entries (``_groupable``) and turned back into maps after
        maps = numbered_maps([(None, k.type) for k in p.keys])
        keys = [(_groupable(self.scalar(k), k.type) if f"c{i}" in maps else self.scalar(k)).alias(f"c{i}")
                for i, k in enumerate(p.keys)]
        # a group's key, min or max of a stored numeric is one of its values, as stored
        stored = frozenset([i for i, k in enumerate(p.keys) if isinstance(k, ColRef) and k.index in self._scope]
                           + [len(p.keys) + j for j, a in enumerate(p.aggregates) if a.func in ("min", "max")
                              and isinstance(a.arg, ColRef) and a.arg.index in self._scope])
        if stored:
            self._stored[id(p)] = stored
        if not p.aggregates:
            return maps_restored(df.select(*keys).distinct(), maps)
        # an aggregate whose entry gives its text per group (``result_text``) carries it
        # (t<i>) beside its value, which is that text cast to the aggregate's type
        texts = {len(keys) + j: a for j, a in enumerate(p.aggregates)
                 if id(p) in self._result_path and self._aggregate_text(a)}
        aggs = [self.aggregate(a, text=True).alias(f"t{len(keys) + j}") if len(keys) + j in texts
                else self.aggregate(a).alias(f"c{len(keys) + j}") for j, a in enumerate(p.aggregates)]
        df = maps_restored(df.agg(*aggs) if not keys else df.groupBy(*keys).agg(*aggs), maps)
        if not texts:
            return df
        self._texts[id(p)] = frozenset(texts)
        value = {i: FUNCTIONS[a.func].extra["text_value"] for i, a in texts.items()}
        return df.select(*[value[i](self, F.col(f"t{i}")).alias(f"c{i}") if i in texts else col(i)
                           for i in range(len(p.columns))], *[F.col(f"t{i}") for i in sorted(texts)])

    def _aggregate_text(self, a: AggCall) -> bool:
        """Whether ``a``'s entry gives its text per group on Spark (``spark_text``, with
        ``text_value``: its value from that text) and ``a`` is of its ``result_text``."""
        entry = FUNCTIONS[a.func]
        return "spark_text" in entry.extra and entry.extra["result_text"](a)

    def _Join(self, p: Join) -> DataFrame:
        left = self.lower(p.left)
        right = self.lower(p.right)
        n = len(p.left.columns)
        right = right.select(*[col(j).alias(f"c{n + j}") for j in range(len(p.right.columns))])
        if p.kind == "cross":
            return left.crossJoin(right)
        how = {"inner": "inner", "left": "left_outer", "right": "right_outer", "full": "full_outer",
               "semi": "left_semi", "anti": "left_anti"}[p.kind]
        on = self.scalar(p.on) if p.on is not None else F.lit(True)
        return left.join(right, on=on, how=how)

    def _OrderBy(self, p: OrderBy) -> DataFrame:
        df = self.lower(p.input)
        keys = [_sort_col(col(k.index), p.input.columns[k.index][1], k.descending, k.nulls_first) for k in p.keys]
        if p is self._spread_order:
            # The result's order with the result spread (``spread_partitions``): Spark's
            # range partitioning into that many partitions, each sorted.
            return df.repartitionByRange(self.spread, *keys).sortWithinPartitions(*keys)
        return df.orderBy(*keys)

    def _Limit(self, p: Limit) -> DataFrame:
        df = self.lower(p.input)
        if p.offset:
            df = df.offset(p.offset)
        if p.limit is not None:
            df = df.limit(p.limit)
        return df

    def _SetOp(self, p: SetOp) -> DataFrame:
        left, right = self.lower(p.left), self.lower(p.right)
        if p.op == "union":
            df = left.unionAll(right)
            return df if p.all else self._distinct(df, p.columns)
        maps = numbered_maps(p.columns)  # compared by their entries
        left, right = maps_groupable(left, maps), maps_groupable(right, maps)
        if p.op == "intersect":
            df = left.intersectAll(right) if p.all else left.intersect(right)
        else:
            df = left.exceptAll(right) if p.all else left.subtract(right)
        return maps_restored(df, maps)

    @staticmethod
    def _distinct(df: DataFrame, columns) -> DataFrame:
        """``df``'s distinct rows, its columns ``c<i>`` of ``columns`` ((name, type) each):
        maps compared by their entries (``_groupable``)."""
        maps = numbered_maps(columns)
        return maps_restored(maps_groupable(df, maps).distinct(), maps)

    def _Unnest(self, p: Unnest) -> DataFrame:
        df = self.lower(p.input)
        n = len(p.input.columns)
        arrays = [F.coalesce(col(i), F.array()) for i in p.arrays]
        longest = reduce(F.greatest, [F.size(a) for a in arrays]) if len(arrays) > 1 else F.size(arrays[0])
        steps = F.when(longest > 0, F.sequence(F.lit(0), longest - 1)).otherwise(F.array().cast("array<int>"))
        df = df.select("*", F.explode(steps).alias("__k"))  # no rows when every array is empty
        k = F.col("__k")
        extra = [(F.when(k < F.size(a), F.try_element_at(a, k + 1)) if kind == "unnest"
                  else k + 1 if kind == "ordinality" else F.when(k < F.size(a), k + 1)).alias(f"c{n + j}")
                 for j, (a, kind) in enumerate(zip(arrays, p.kinds))]
        return df.select(*[col(i) for i in range(n)], *extra)

    def _Window(self, p: Window) -> DataFrame:
        from pyspark.sql.connect.window import Window as W

        df = self.lower(p.input)
        n = len(p.input.columns)
        extra = []
        for j, c in enumerate(p.calls):
            spec = W.partitionBy(*[self.scalar(k) for k in c.partition]) if c.partition else W.partitionBy()
            if c.order:
                spec = spec.orderBy(*[_sort_col(self.scalar(e), e.type, d, nf) for e, d, nf in c.order])
            elif FUNCTIONS[c.func].kind == "window":
                # Without ORDER BY every row is a peer (PostgreSQL 3.5); Spark wants an
                # order for ranking functions: one value orders them all as peers.
                spec = spec.orderBy(F.lit(0))
            if c.frame is not None:
                spec = _frame_spec(spec, c.frame, W)
            extra.append(self._window_fn(c, spec).alias(f"c{n + j}"))
        return df.select(*[col(i) for i in range(n)], *extra)

    def _window_fn(self, c: WindowCall, spec) -> SparkColumn:
        """Window call ``c`` over ``spec``: a window entry's lowering with the window
        applied, or an aggregate over the window."""
        entry = FUNCTIONS[c.func]
        if entry.kind == "window":
            return entry.spark(_WindowToolkit(self, spec, aggregates=False), [self.scalar(a) for a in c.args], c).cast(spark_type(c.type))
        if c.func == "array_agg":
            raise SqlError(FEATURE_NOT_SUPPORTED, "array_agg as a window function is not supported")
        return self.aggregate(c.as_aggregate(), over=spec)

    def _Distinct(self, p: Distinct) -> DataFrame:
        return self._distinct(self.lower(p.input), p.columns)

    # -- scalars ----------------------------------------------------------------------

    def scalar(self, e) -> SparkColumn:
        if isinstance(e, ColRef):
            return col(e.index)
        if isinstance(e, Literal):
            return literal(e.value, e.type)
        if isinstance(e, Cast):
            text = self._value_text(e.expr) if e.type.name == "text" else None
            if text is None and e.type.name == "text" and _per_value_numeric(e.expr):
                text = self.numeric_text(e.expr, self.scalar(e.expr))
            return text if text is not None else self.cast(self.scalar(e.expr), e.expr.type, e.type)
        if isinstance(e, Case):
            out = None
            for c, r in e.whens:
                out = (F.when if out is None else out.when)(self.scalar(c), self.scalar(r))
            return out.otherwise(self.scalar(e.else_))
        if isinstance(e, Call):
            return self.call(e)
        raise SqlError(FEATURE_NOT_SUPPORTED, f"cannot lower {type(e).__name__}")

    def cast(self, c: SparkColumn, src: SqlType, dst: SqlType) -> SparkColumn:
        s, d = src.name, dst.name
        if "mz_timestamp" in (s, d) and s != d:
            return self._cast_mz_timestamp(c, src, dst)
        special = self._cast_special(c, src, dst)
        if special is not None:
            return special
        if "interval" in (s, d) or d in ("timestamp", "timestamptz", "time", "timetz"):
            dated = self._cast_datetime(c, src, dst)
            if dated is not None:
                return dated
        if s in _TEXT_FORMS and d in ("text", "varchar", "bpchar"):
            text = _TEXT_FORMS[s](c)
            return text if d == "text" else self.cast(text, SqlType("text"), dst)
        if s == "bpchar" and d in ("text", "varchar"):
            c = F.rtrim(c)
        if d in ("int2", "int4", "int8"):
            if s == "numeric":
                c = F.round(c, 0)  # PostgreSQL rounds numeric -> integer (half away from zero)
            elif s in ("float4", "float8"):
                c = F.bround(c, 0)  # rint(): half to even
            elif s == "bpchar":
                c = F.trim(c)
        if d == "bpchar" and dst.precision is not None:
            return F.rpad(c.cast(T.StringType()), dst.precision, " ")
        if d == "varchar" and dst.precision is not None:
            return F.substring(c.cast(T.StringType()), 1, dst.precision)
        if d == "bool" and s in ("text", "varchar", "bpchar", "unknown"):
            return F.lower(F.trim(c)).cast(T.BooleanType())
        if d == "numeric" and s in ("float4", "float8"):
            # Spark casts NaN and infinities to NULL; PostgreSQL's numeric NaN has no Spark
            # decimal, and infinity does not convert (as catalog's cast_value)
            c = (F.when(F.isnan(c), self.fail(FEATURE_NOT_SUPPORTED, "numeric NaN is not supported on table data "
                                                                      "(Spark decimals have no NaN)"))
                 .when(F.abs(c) == float("inf"), self.fail(FEATURE_NOT_SUPPORTED, "cannot convert infinity to numeric"))
                 .otherwise(c))
        if d == "numeric" and dst.precision is None and s == "numeric":
            return c
        if d == "numeric" and dst.precision is None and src.is_integer:
            return c.cast(T.DecimalType(38, 0))  # an integer's numeric has scale 0, as in PostgreSQL
        return c.cast(spark_type(dst))

    def _cast_mz_timestamp(self, c: SparkColumn, src: SqlType, dst: SqlType) -> SparkColumn:
        """Casts to and from mz_timestamp as ``catalog.mztime`` defines them: milliseconds
        since the epoch in ``[0, 2**64 - 1]``, held as decimal(20,0).

        Raises:
            SqlError 42846 for a cast that does not exist; 0A000 for text that is not
            digits (a timestamp literal) on table data."""
        s, d = src.name, dst.name
        stored = T.DecimalType(20, 0)
        if d == "mz_timestamp":
            if s in ("timestamp", "timestamptz", "date"):
                ts = c if s == "timestamptz" else c.cast(T.TimestampType())  # the session's zone is UTC
                n = F.unix_millis(ts)
            elif s in ("int2", "int4", "int8", "numeric", "float4", "float8"):
                n = c
            elif src.is_string:
                digits = F.trim(c)
                n = F.when(digits.rlike(r"^[0-9]+$"), digits.cast(T.DecimalType(38, 0))).otherwise(
                    self.fail(FEATURE_NOT_SUPPORTED, "mz_timestamp input other than digits is not supported "
                                                     "on table data"))
            else:
                raise SqlError(CANNOT_COERCE, f"cannot cast type {src.sql()} to {dst.sql()}")
            bad = (n < 0) | (n > F.lit(Decimal(MZ_TIMESTAMP_MAX))) | (n != F.floor(n))
            return F.when(c.isNull(), F.lit(None).cast(stored)).when(bad, self.fail(NUMERIC_VALUE_OUT_OF_RANGE, "mz_timestamp out of range")
                                                                     ).otherwise(n.cast(stored))
        if d == "numeric":
            return c.cast(spark_type(dst))
        if d in ("text", "varchar"):
            return self.cast(c.cast(T.StringType()), SqlType("text"), dst) if d == "varchar" else c.cast(T.StringType())
        if d in ("timestamp", "timestamptz"):
            ts = F.timestamp_millis(c.cast(T.LongType()))
            return ts if d == "timestamptz" else ts.cast(T.TimestampNTZType())
        raise SqlError(CANNOT_COERCE, f"cannot cast type {src.sql()} to {dst.sql()}")

    def _cast_datetime(self, c: SparkColumn, src: SqlType, dst: SqlType) -> SparkColumn | None:
        """Casts to and from interval and to datetime types with a precision, as
        ``planner.consteval.cast_value`` does them; None when the generic rules apply.

        Raises:
            SqlError 0A000 for what Spark cannot do as PostgreSQL does: text to interval
            (Spark's interval syntax is not PostgreSQL's), interval to text in another
            IntervalStyle than postgres, time(p) and timetz(p) of table data."""
        s, d = src.name, dst.name
        if d == "interval" and s != "interval":
            raise SqlError(FEATURE_NOT_SUPPORTED, f"casting {src.sql()} to interval is not supported on table data")
        if s == "interval" and d in ("text", "varchar", "bpchar"):
            if self.text.interval_style != "postgres":
                raise SqlError(FEATURE_NOT_SUPPORTED, "interval text on table data is IntervalStyle postgres only")
            text = _interval_text(c)
            return text if d == "text" else self.cast(text, SqlType("text"), dst)
        if s == "interval" and d == "interval":
            return _adjust_interval(c, dst.scale, dst.precision) if (dst.scale, dst.precision) != (None, None) else c
        if d in ("time", "timetz") and dst.precision is not None and dst.precision < 6:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"casting to {dst.sql()} is not supported on table data")
        if d in ("timestamp", "timestamptz") and dst.precision is not None and dst.precision < 6:
            plain = c if s == d else self.cast(c, src, dst.unconstrained())
            return _round_timestamp(plain, d == "timestamptz", dst.precision)
        return None

    def output_text(self, c: SparkColumn, t: SqlType) -> SparkColumn:
        """``c`` (of type ``t``) as its type's output function writes it (what concat,
        format, array_out and record_out show): as its cast to text, but a bool is
        ``t``/``f`` (boolout), not ``true``/``false`` (booltext)."""
        if t.name == "bool":
            return F.when(c, F.lit("t")).when(~c, F.lit("f"))
        return c if t.is_string else self.cast(c, t, SqlType("text"))

    def _cast_special(self, c: SparkColumn, src: SqlType, dst: SqlType) -> SparkColumn | None:
        """Casts from or to arrays, bytea, uuid and jsonb, whose text forms Spark does not
        know; None when the generic rules apply."""
        s, d = src.name, dst.name
        text = d in ("text", "varchar", "bpchar")
        if src.is_list or src.is_map or dst.is_list or dst.is_map:
            from planner.functions import lists

            lists.check_cast(src, dst)
            if src == dst:
                return c
            if src.is_list and dst.is_list:
                return F.transform(c, lambda x: self.cast(x, src.element, dst.element))
            if src.is_map and dst.is_map:
                return F.transform_values(c, lambda k, x: self.cast(x, src.element, dst.element))
            if text:
                out = lists.spark_text(self, c, src)
                return out if d == "text" else self.cast(out, SqlType("text"), dst)
            raise SqlError(FEATURE_NOT_SUPPORTED, f"cast from {src.sql()} to {dst.sql()} is not supported on table data")
        if src.is_array and dst.is_array:
            return F.transform(c, lambda x: self.cast(x, src.element, dst.element))
        if src.is_array and text:
            def elem(x):
                s_ = self.output_text(x, src.element)
                quoted = F.concat(F.lit('"'), F.regexp_replace(s_, r'(["\\])', r'\\$1'), F.lit('"'))
                return F.when(x.isNull(), F.lit("NULL")).when(s_.rlike(_ARRAY_QUOTE_RE), quoted).otherwise(s_)
            return F.concat(F.lit("{"), F.array_join(F.transform(c, elem), ","), F.lit("}"))
        if s == "bytea" and text:
            return F.concat(F.lit("\\x"), F.lower(F.hex(c)))
        if s in ("uuid", "jsonb") and text:
            return c
        if d == "uuid" and src.is_string:
            digits = F.lower(F.regexp_replace(c, r"[-{}]", ""))
            canon = F.concat_ws("-", digits.substr(1, 8), digits.substr(9, 4), digits.substr(13, 4),
                                digits.substr(17, 4), digits.substr(21, 12))
            bad = F.raise_error(F.concat(F.lit('invalid input syntax for type uuid: "'), c, F.lit('"')))
            return F.when(c.isNull(), F.lit(None)).when(F.trim(c).rlike(_UUID_RE), canon).otherwise(bad)
        if d == "bytea" and src.is_string:
            bad = F.raise_error(F.lit("bytea escape format is not supported on table data; use hex (\\x...)"))
            return F.when(c.startswith("\\x"), F.unhex(c.substr(3, 2**31 - 1))) \
                .when(c.contains("\\"), bad).otherwise(c.cast(T.BinaryType()))
        if src.is_array or dst.is_array or d in ("jsonb", "uuid", "bytea") or s in ("uuid", "jsonb", "bytea"):
            if s == d:
                return c
            raise SqlError(FEATURE_NOT_SUPPORTED, f"cast from {src.sql()} to {dst.sql()} is not supported on table data")
        return None

    # -- the function registry's toolkit (planner.functions: ``spark(S, args, call)``) --

    F = F
    T = T
    TEXT = SqlType("text")

    @staticmethod
    def spark_type(t: SqlType) -> T.DataType:
        return spark_type(t)

    @staticmethod
    def empty_array(t: SqlType) -> SparkColumn:
        return _empty_array(t)

    @staticmethod
    def interval_key(c: SparkColumn) -> SparkColumn:
        return interval_key(c)

    @staticmethod
    def sort_key(c: SparkColumn, t: SqlType) -> SparkColumn:
        return sort_key(c, t)

    @staticmethod
    def trunc_div(a: SparkColumn, n: int) -> SparkColumn:
        return trunc_div(a, n)

    @staticmethod
    def interval_fields(c: SparkColumn) -> SparkColumn:
        """An interval column as the struct (months, days, micros) of PostgreSQL's fields."""
        return _interval_struct(c)

    @staticmethod
    def make_interval(months: SparkColumn, days: SparkColumn, micros: SparkColumn) -> SparkColumn:
        """An interval column of PostgreSQL's three fields (int, int, bigint columns)."""
        return _make_interval(months, days, micros)

    @staticmethod
    def fail(sqlstate: str, message: str | SparkColumn) -> SparkColumn:
        """A column that raises ``message`` (text, or a string column: a message naming
        the row's value) with ``sqlstate`` when evaluated (mapped back by
        ``spark_exec.errors``)."""
        if not isinstance(message, str):
            return F.raise_error(F.concat(F.lit(f"{PG_ERROR_PREFIX}{sqlstate}: "), message))
        return F.raise_error(F.lit(f"{PG_ERROR_PREFIX}{sqlstate}: {message}"))

    # -- numerics of a scale per value -----------------------------------------------------

    def numeric_scale(self, e, row: bool = True) -> SparkColumn | None:
        """PostgreSQL's display scale (numeric.c's dscale) of the numeric plan expression
        ``e``, per row, as an int column; None where it is unknown here (then ``e``'s
        Spark scale, the column's one, stands for it). A numeric of a static scale
        (``static_scale``: an integer, a numeric(p, s), a literal) has that; a stored
        unconstrained numeric (``_stored``) the least scale of its value (a table keeps
        ``UNCONSTRAINED_NUMERIC``'s scale, not the value's own: its trailing zeros are
        lost); a sum or difference the larger of its operands', a product their sum
        (numeric.c add_var, mul_var), a negation or absolute value its operand's, a gcd
        or lcm the larger of its arguments' (gcd_var, numeric_lcm).
        ``row``: False where ``e``'s operands are not columns of the row (a lambda over an
        aggregate's values): only a static scale or a stored column itself is known.
        Source of the rules: PostgreSQL's numeric.c."""
        from planner.functions.math import static_scale

        s = static_scale(e)
        if s is not None:
            return F.lit(s)
        if isinstance(e, ColRef):
            return _least_scale(col(e.index)) if e.index in self._scope else None
        if not row:
            return None
        if isinstance(e, Cast) and e.type.name == "numeric" and e.type.precision is None \
                and e.expr.type.name == "numeric":
            return self.numeric_scale(e.expr)
        if isinstance(e, Call) and e.type.name == "numeric" and e.func in ("add", "sub", "mul", "neg", "abs", "pos",
                                                                           "gcd", "lcm"):
            scales = [self.numeric_scale(a) for a in e.args]
            if any(x is None for x in scales):
                return None
            if e.func == "mul":
                return scales[0] + scales[1]
            return F.greatest(*scales) if len(scales) > 1 else scales[0]
        return None

    def numeric_text(self, e, c: SparkColumn, row: bool = True) -> SparkColumn | None:
        """PostgreSQL's text of the numeric plan expression ``e`` whose value is ``c``: at
        its display scale per row (``numeric_scale``); None where that is unknown."""
        scale = self.value_scale(e, c, row)
        return None if scale is None else _scaled_text(c, scale)

    def value_scale(self, e, c: SparkColumn, row: bool = True) -> SparkColumn | None:
        """``numeric_scale`` of ``e`` whose value is ``c`` (a stored column's is taken of
        ``c``, which may be a lambda's value or a filtered one)."""
        if isinstance(e, ColRef) and e.index in self._scope:
            return _least_scale(c)
        return self.numeric_scale(e, row)

    #: ``_scaled_text`` and ``_least_scale`` for the registry's lowerings
    scaled_text = staticmethod(_scaled_text)
    least_scale = staticmethod(_least_scale)

    def numeric_product(self, e: Call, x: SparkColumn, y: SparkColumn) -> SparkColumn | None:
        """``x * y`` of numerics as PostgreSQL computes it (mul_var): exact, at the sum of
        the operands' display scales. Spark's decimal product instead keeps at most 38
        digits by dropping decimals below 6 (``n * 0.0000001`` of a decimal(38,10) was 0),
        so the product is taken of the operands' unscaled integers (exact, or 22003 past
        38 digits) and placed at its scale, in a decimal of ``_PRODUCT_SCALE`` decimals
        (of the sum of the operands' static scales where both have one): 22003 when its
        integer part does not fit, 0A000 when its scale exceeds them. None where an
        operand's display scale is unknown here (Spark's product then).

        Raises:
            SqlError 0A000 for static scales summing past 38."""
        from planner.functions.math import static_scale

        a, b = e.args
        scales = [self.numeric_scale(a), self.numeric_scale(b)]
        if any(s is None for s in scales):
            return None
        statics = [static_scale(a), static_scale(b)]
        if None not in statics and sum(statics) <= 6:
            return None  # Spark's product keeps 6 decimals at least: exact
        if None not in statics:
            cap = sum(statics)
        else:
            stored = UNCONSTRAINED_NUMERIC[1]
            cap = min(sum(stored if s is None else s for s in statics), _PRODUCT_SCALE)
        if cap > 38:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"a numeric product of {cap} decimals is not supported on table data "
                                                  "(Spark decimals have at most 38 digits)")
        whole = T.DecimalType(38, 0)
        product = _unscaled(x, scales[0]).cast(whole) * _unscaled(y, scales[1]).cast(whole)
        scale = scales[0] + scales[1]

        def placed(p):  # p at its scale, as text, then as a decimal of cap decimals
            def text(magnitude):
                digits = F.lpad(magnitude, F.greatest(F.length(magnitude), scale + 1), "0")  # lpad cuts to its length
                point = F.length(digits) - scale
                return F.concat(F.when(p < 0, F.lit("-")).otherwise(F.lit("")), digits.substr(F.lit(1), point),
                                F.when(scale > 0, F.concat(F.lit("."), digits.substr(point + 1, scale))).otherwise(F.lit("")))
            t = _let(F.abs(p).cast("string"), text)
            return (F.when(p.isNull(), F.lit(None).cast(T.DecimalType(38, cap)))
                    .when(scale > cap, self.fail(FEATURE_NOT_SUPPORTED, F.concat(
                        F.lit("numeric product "), t, F.lit(f" has more than {cap} decimals, more than Spark keeps here"))))
                    .otherwise(t.cast(T.DecimalType(38, cap))))
        return _let(product, placed)

    def _value_text(self, e) -> SparkColumn | None:
        """PostgreSQL's text of ``e`` when it is a call whose entry gives it per row
        (``result_text``: a numeric of a scale per value), else None."""
        entry = FUNCTIONS.get(e.func) if isinstance(e, Call) else None
        if entry is None or not entry.extra.get("result_text", lambda _: False)(e):
            return None
        return self.python_text(e, [self.scalar(a) for a in e.args])

    def python_text(self, e: Call, args: list[SparkColumn]) -> SparkColumn:
        """The text of ``e``'s result, computed on the replica row by row by its registry
        entry's Python implementation (``planner.functions.call_text``), in an
        Arrow-optimized Python UDF (batches cross between the JVM and the replica's Python
        worker as Arrow): for the functions Spark has no function of PostgreSQL's answers
        for. A string column; an error of the implementation raises with its SQLSTATE.

        The replica's Python (``spark.pyspark.python``) must import sqlfront's packages:
        local replicas run environmentd's interpreter with its source on PYTHONPATH
        (``spark_exec.orchestrator``)."""
        # Arrow has no CalendarInterval: an interval crosses as its fields; an unconstrained
        # numeric of a scale per value as its text at that scale (PostgreSQL's functions
        # take the argument's dscale into their result's: exp(100) has no decimals, where
        # the stored decimal(38,10) would give it ten)
        def crossing(c, x):
            if x.type.name == "interval":
                return _interval_struct(c)
            text = self.numeric_text(x, c) if _per_value_numeric(x) else None
            return c if text is None else text
        args = [crossing(c, x) for c, x in zip(args, e.args)]
        r = F.udf(_row_text(e, PG_ERROR_PREFIX), T.StringType(), useArrow=True)(*args)
        return F.when(r.startswith(PG_ERROR_PREFIX), F.raise_error(r)).otherwise(r)

    def call(self, e: Call) -> SparkColumn:
        entry = FUNCTIONS.get(e.func)
        if entry is None or entry.spark is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"function {e.func} is not supported on table data")
        return entry.spark(self, [self.scalar(a) for a in e.args], e)

    def ordered_values(self, a: AggCall) -> SparkColumn:
        """The group's values of ``a``'s argument as an array: FILTER applied, in ``a``'s
        ORDER BY (each key with its direction and NULL placement), NULLs kept unless the
        aggregate is strict, duplicates dropped for DISTINCT."""
        entry = FUNCTIONS[a.func]
        x = self.scalar(a.arg)
        keys = [F.rtrim(self.scalar(e)) if e.type.name == "bpchar" else self.scalar(e) for e, _, _ in a.order]
        item = F.struct(*[k.alias(f"k{i}") for i, k in enumerate(keys)], x.alias("v"))
        keep = F.lit(True) if a.filter is None else self.scalar(a.filter).eqNullSafe(F.lit(True))
        if entry.strict:
            keep = keep & x.isNotNull()
        collected = (F.collect_set if a.distinct else F.collect_list)(F.when(keep, item))
        if a.order:
            def compare(l, r):
                out = F.lit(0)
                for i, (_, desc, nulls_first) in reversed(list(enumerate(a.order))):
                    lk, rk = l[f"k{i}"], r[f"k{i}"]
                    c = (F.when(lk.isNull() & rk.isNull(), 0)
                         .when(lk.isNull(), -1 if nulls_first else 1).when(rk.isNull(), 1 if nulls_first else -1)
                         .when(lk < rk, 1 if desc else -1).when(lk > rk, -1 if desc else 1).otherwise(0))
                    out = F.when(c != 0, c).otherwise(out)
                return out
            collected = F.array_sort(collected, compare)
        elif a.distinct and a.arg.type.name not in ("interval", "jsonb"):
            # PostgreSQL sorts a DISTINCT aggregate's input (nodeAgg.c): ascending, NULLs last
            collected = F.array_sort(collected, lambda l, r: (
                F.when(l["v"].isNull() & r["v"].isNull(), 0).when(l["v"].isNull(), 1).when(r["v"].isNull(), -1)
                .when(l["v"] < r["v"], -1).when(l["v"] > r["v"], 1).otherwise(0)))
        return F.transform(collected, lambda s_: s_["v"])

    def aggregate(self, a: AggCall, over=None, toolkit=None, text: bool = False) -> SparkColumn:
        """``a`` as a Spark aggregate (its registry entry's lowering, FILTER applied to
        the argument); with ``over`` (a window spec) as a window aggregate; with
        ``toolkit``, the entry sees that instead of this Lowerer (its ``F`` decides what
        Spark's aggregate functions become: ``spark_exec.dataflow``'s accumulators).
        ``text``: PostgreSQL's text of the aggregate instead (its entry's ``spark_text``,
        for an aggregate of ``_aggregate_text``)."""
        entry = FUNCTIONS[a.func]
        if a.func == "count_star":
            x = F.lit(1) if a.filter is None else F.when(self.scalar(a.filter).eqNullSafe(F.lit(True)), F.lit(1))
        else:
            x = self.scalar(a.arg)
            if a.filter is not None:
                x = F.when(self.scalar(a.filter).eqNullSafe(F.lit(True)), x)
        if toolkit is not None:
            return entry.spark(toolkit, x, a)
        if text:
            return entry.extra["spark_text"](self, x, a)
        if over is None:
            return entry.spark(self, x, a)
        # The window goes on the aggregate itself, not on the casts around it.
        return entry.spark(_WindowToolkit(self, over), x, a)


#: Spark's aggregate functions (what ``_OverF`` puts a window on)
_SPARK_AGGREGATES = frozenset({
    "sum", "sum_distinct", "count", "count_distinct", "avg", "mean", "min", "max", "stddev", "stddev_samp",
    "stddev_pop", "variance", "var_samp", "var_pop", "collect_list", "collect_set", "first", "last", "first_value",
    "last_value", "bool_or", "bool_and", "every", "some", "any_value", "percentile", "percentile_approx", "mode",
    "median", "max_by", "min_by", "corr", "covar_pop", "covar_samp", "array_agg", "listagg", "string_agg",
})


class _OverF:
    """``pyspark...functions`` whose aggregates come out as window functions over ``spec``."""

    def __init__(self, spec):
        self._spec = spec

    def __getattr__(self, name):
        fn = getattr(F, name)
        if name in _SPARK_AGGREGATES:
            return lambda *a, **k: fn(*a, **k).over(self._spec)
        return fn


class _WindowToolkit:
    """The Lowerer as a registry entry sees it: for an aggregate entry (``aggregates``),
    ``F`` makes window aggregates; for a window entry, ``over(column)`` puts the window on
    a window function."""

    def __init__(self, lowerer: "Lowerer", spec, aggregates: bool = True):
        self._lowerer = lowerer
        self.F = _OverF(spec) if aggregates else F
        self.over = lambda c: c.over(spec)

    def __getattr__(self, name):
        return getattr(self._lowerer, name)


def _frame_spec(spec, frame, W):
    """``spec`` with window frame ``frame`` (``planner.functions.window.Frame``): Spark's
    rowsBetween / rangeBetween, whose offsets count from the current row."""
    def bound(kind, off):
        return {"unbounded_preceding": W.unboundedPreceding, "unbounded_following": W.unboundedFollowing,
                "current": W.currentRow}.get(kind, -off if kind == "preceding" else off)

    lo, hi = bound(*frame.start), bound(*frame.end)
    if frame.mode == "rows":
        return spec.rowsBetween(lo, hi)
    if any(k in ("preceding", "following") and int(o) != o for k, o in (frame.start, frame.end)):
        raise SqlError(FEATURE_NOT_SUPPORTED, "RANGE offsets with fractions are not supported on table data")
    return spec.rangeBetween(int(lo), int(hi)) if isinstance(lo, (int, float)) else spec.rangeBetween(lo, hi)


def _to_spark_value(v):
    if isinstance(v, list):
        return [_to_spark_value(x) for x in v]
    if isinstance(v, bytes):
        return bytearray(v)
    if isinstance(v, Interval):
        raise SqlError(FEATURE_NOT_SUPPORTED, "interval values in VALUES are not supported yet")
    return v


def literal(v, t: SqlType) -> SparkColumn:
    if v is None:
        return F.lit(None).cast(spark_type(t))
    n = t.name
    if t.is_array or t.is_list:
        return F.array(*[literal(x, t.element) for x in v]).cast(spark_type(t)) if v else _empty_array(t)
    if t.is_map:
        from planner.functions.maps import as_dict

        items = as_dict(v)
        if not items:
            return F.create_map().cast(spark_type(t))
        return F.map_from_arrays(F.array(*[F.lit(k) for k in items]),
                                 F.array(*[literal(x, t.element) for x in items.values()])).cast(spark_type(t))
    if n == "time":
        return F.lit(v.isoformat()).cast(T.TimeType(6))
    if n == "timetz" and not isinstance(v, str):  # kept as its text on Spark (spark_type)
        from catalog.textio import format_text

        return F.lit(format_text(v, t))
    if n == "bytea":
        return F.lit(bytearray(v))
    if n == "timestamp":
        return F.lit(v.isoformat(sep=" ")).cast(T.TimestampNTZType())
    if n == "timestamptz":
        return F.lit(v.isoformat(sep=" ")).cast(T.TimestampType())
    if n == "interval":
        secs = Decimal(v.micros) / 1_000_000
        return F.make_interval(F.lit(0), F.lit(v.months), F.lit(0), F.lit(v.days), F.lit(0), F.lit(0), F.lit(secs))
    if n == "numeric":
        if not v.is_finite():
            raise SqlError(FEATURE_NOT_SUPPORTED, f"numeric {v} is not supported on table data (Spark decimals have no "
                                                  "NaN)")
        c = F.lit(v)
        return c.cast(spark_type(t)) if t.precision is not None else c
    if n in ("float4", "float8", "int2", "int8"):
        return F.lit(v).cast(spark_type(t))
    if n == "mz_timestamp":
        return F.lit(Decimal(int(v))).cast(spark_type(t))
    return F.lit(v)
