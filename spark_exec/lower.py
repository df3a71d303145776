"""Lower a logical plan to a Spark DataFrame: the only module that knows DataFrames.

Every lowered relation has columns named ``c0 .. cN-1`` (positional, like the plan), so
joins never meet duplicate names. PostgreSQL semantics are kept where Spark differs:
integer division truncates (``div``), ``char(n)`` compares without trailing spaces,
NULLs sort last ascending and first descending, numeric-to-integer casts round.
Spark runs with ANSI mode on, so overflow and division by zero raise as in PostgreSQL.
"""

from __future__ import annotations

from decimal import Decimal
from functools import reduce
from typing import Callable

import pyspark.sql.connect.functions as F  # the Connect client; classic functions need a JVM
from pyspark.sql.connect.column import Column as SparkColumn
from pyspark.sql.connect.dataframe import DataFrame
from pyspark.sql.connect.session import SparkSession
from pyspark.sql import types as T

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED
from catalog.snapshot import BuiltinTable, Table
from catalog.types import SqlType, Interval
from persist import DIFF_COLUMN, TIME_COLUMN, PartRead, ShardSnapshot
from planner.plan import (
    Constant, Distinct, Filter, Get, Join, Limit, OrderBy, Project, Reduce, SetOp, Series, Unnest, Window, WindowCall,
)
from planner.scalar import AggCall, Call, Case, Cast, ColRef, Literal

CARDINALITY_MESSAGE = "more than one row returned by a subquery used as an expression"
#: marks a raise_error message as a NOT NULL violation (23502), for spark_exec.errors
NOT_NULL_PREFIX = "23502:"

#: table -> the snapshot of its shard at the peek's as_of
ScanFn = Callable[[Table], ShardSnapshot]
#: builtin table -> its current rows
BuiltinFn = Callable[[BuiltinTable], list[tuple]]


def spark_type(t: SqlType) -> T.DataType:
    n = t.name
    if t.is_array:
        return T.ArrayType(spark_type(t.element), True)
    if n == "numeric":
        p, s = t.storage_precision_scale()
        return T.DecimalType(p, s)
    return {
        "bool": T.BooleanType(), "int2": T.ShortType(), "int4": T.IntegerType(), "int8": T.LongType(), "oid": T.LongType(),
        "float4": T.FloatType(), "float8": T.DoubleType(), "text": T.StringType(), "varchar": T.StringType(),
        "bpchar": T.StringType(), "unknown": T.StringType(), "date": T.DateType(),
        "timestamp": T.TimestampNTZType(), "timestamptz": T.TimestampType(), "interval": T.CalendarIntervalType(),
        "time": T.TimeType(6), "bytea": T.BinaryType(), "uuid": T.StringType(), "jsonb": T.StringType(),
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
        secs = (c["micros"].cast(T.DecimalType(20, 0)) / 1_000_000).cast(T.DecimalType(18, 6))
        iv = F.make_interval(F.lit(0), c["months"], F.lit(0), c["days"], F.lit(0), F.lit(0), secs)
        return F.when(c.isNull(), F.lit(None).cast(T.CalendarIntervalType())).otherwise(iv)
    return c


def _interval_struct(c: SparkColumn) -> SparkColumn:
    part = lambda f: F.call_function("date_part", F.lit(f), c)  # noqa: E731
    months = (part("YEAR") * 12 + part("MONTH")).cast(T.IntegerType())
    micros = (part("HOUR").cast(T.LongType()) * 3_600_000_000 + part("MINUTE").cast(T.LongType()) * 60_000_000
              + (part("SECOND") * 1_000_000).cast(T.LongType()))
    return F.when(c.isNotNull(), F.struct(months.alias("months"), part("DAY").cast(T.IntegerType()).alias("days"),
                                          micros.alias("micros")))


def _variant_step(step) -> str:
    if isinstance(step, int) and not isinstance(step, bool):
        if step < 0:
            raise SqlError(FEATURE_NOT_SUPPORTED, "negative jsonb array indexes are not supported on table data")
        return f"[{step}]"
    if "'" in step or "\\" in step:
        raise SqlError(FEATURE_NOT_SUPPORTED, "jsonb keys with quotes or backslashes are not supported on table data")
    return f"['{step}']"


def _sort_col(c: SparkColumn, t: SqlType, descending: bool, nulls_first: bool) -> SparkColumn:
    if t.name == "bpchar":
        c = F.rtrim(c)
    if descending:
        return c.desc_nulls_first() if nulls_first else c.desc_nulls_last()
    return c.asc_nulls_first() if nulls_first else c.asc_nulls_last()


def _empty_array(t: SqlType) -> SparkColumn:
    return F.array().cast(spark_type(t))


def col(i: int) -> SparkColumn:
    return F.col(f"c{i}")


def read_parts(spark: SparkSession, table: Table, urls: list[str]) -> DataFrame:
    """The Parquet parts ``urls`` of ``table``'s shard (plain parts: rows only), in its
    storage schema. One definition for peeks and arrangements: Spark's cache matches plans
    exactly."""
    return spark.read.schema(_file_schema(table)).parquet(*urls)


def read_part(spark: SparkSession, table: Table, part: PartRead) -> DataFrame:
    """One part as it is stored: the table's columns, then ``_mz_time`` and ``_mz_diff``
    when the part has them."""
    if not part.diffs:
        return read_parts(spark, table, [part.url])
    fields = _file_schema(table).fields
    if part.timed:
        fields.append(T.StructField(TIME_COLUMN, T.LongType(), False))
    fields.append(T.StructField(DIFF_COLUMN, T.LongType(), False))
    return spark.read.schema(T.StructType(fields)).parquet(part.url)


def _file_schema(table: Table) -> T.StructType:
    return T.StructType([T.StructField(c.name, _storage_type(c.type), True) for c in table.columns])


def read_snapshot(spark: SparkSession, table: Table, snap: ShardSnapshot, arranged: bool) -> DataFrame:
    """The rows of ``table`` at the snapshot's as_of, in its storage schema
    (persist.read's rule): updates after as_of dropped, and diffs summed per row when a
    retraction is visible (each row then repeated its count times). Arranged tables are
    read part by part, each exactly as the arrangement cached it."""
    names = [f"`{c.name}`" for c in table.columns]
    if snap.plain:
        if arranged:
            return reduce(DataFrame.unionAll, [read_parts(spark, table, [u]) for u in snap.urls])
        return read_parts(spark, table, list(snap.urls))
    frames = []
    for p in snap.parts:
        df = read_part(spark, table, p)
        if p.filter_time:
            df = df.filter(F.col(TIME_COLUMN) <= F.lit(snap.as_of))
        diff = F.col(DIFF_COLUMN) if p.diffs else F.lit(1).cast("long")
        frames.append(df.select(*names, diff.alias(DIFF_COLUMN)))
    df = reduce(DataFrame.unionAll, frames)
    if not snap.consolidate:
        return df.select(*names)
    # Materialize's consolidation: sum the diffs of equal rows (NULLs group together).
    summed = df.groupBy(*names).agg(F.sum(DIFF_COLUMN).alias(DIFF_COLUMN)).filter(F.col(DIFF_COLUMN) > 0)
    return summed.select(*names, F.explode(F.array_repeat(F.lit(0), F.col(DIFF_COLUMN).cast("int"))).alias("_n")
                         ).select(*names)


class Lowerer:
    """Lowers plans for one Spark session. ``scan`` lists a table's part URLs at the peek's
    as_of; ``builtin_rows`` gives a system table's rows."""

    def __init__(self, spark: SparkSession, scan: ScanFn, builtin_rows: BuiltinFn,
                 arranged: frozenset[str] = frozenset()):
        self.spark = spark
        self.scan = scan
        self.builtin_rows = builtin_rows
        #: ids of the tables whose parts the replica keeps in memory (indexes)
        self.arranged = arranged

    # -- relations --------------------------------------------------------------------

    def lower(self, plan) -> DataFrame:
        m = getattr(self, "_" + type(plan).__name__)
        return m(plan)

    def lower_result(self, plan) -> DataFrame:
        """``plan`` lowered for collecting: interval columns become (months, days, micros)
        structs, since Spark's Arrow conversion has no CalendarInterval."""
        df = self.lower(plan)
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

    def _Get(self, p: Get) -> DataFrame:
        rel = p.relation
        if isinstance(rel, BuiltinTable):
            rows = self.builtin_rows(rel)
            return self.spark.createDataFrame(rows, self._schema(p.columns))
        snap = self.scan(rel)
        names = [c.name for c in rel.columns]
        if not snap.parts:
            return self.spark.createDataFrame([], self._schema(p.columns))
        # Arranged tables part by part, so Spark's cache manager answers each from memory.
        df = read_snapshot(self.spark, rel, snap, rel.id in self.arranged)
        return df.select(*[_from_storage(F.col(f"`{n}`"), c.type).alias(f"c{i}")
                           for i, (n, c) in enumerate(zip(names, rel.columns))])

    def _Series(self, p: Series) -> DataFrame:
        stop = p.stop + (1 if p.step > 0 else -1)
        return self.spark.range(p.start, stop, p.step).select(F.col("id").cast(spark_type(p.columns[0][1])).alias("c0"))

    def _Constant(self, p: Constant) -> DataFrame:
        if not p.columns:
            return self.spark.range(len(p.rows)).drop("id")
        rows = [tuple(_to_spark_value(v) for v in r) for r in p.rows]
        return self.spark.createDataFrame(rows, self._schema(p.columns, list(p.rows)))

    def _Filter(self, p: Filter) -> DataFrame:
        return self.lower(p.input).filter(self.scalar(p.predicate))

    def _Project(self, p: Project) -> DataFrame:
        df = self.lower(p.input)
        return df.select(*[self.scalar(e).alias(f"c{i}") for i, e in enumerate(p.exprs)])

    def _Reduce(self, p: Reduce) -> DataFrame:
        df = self.lower(p.input)
        keys = [self.scalar(k).alias(f"c{i}") for i, k in enumerate(p.keys)]
        aggs = [self.aggregate(a).alias(f"c{len(keys) + j}") for j, a in enumerate(p.aggregates)]
        if not aggs:
            return df.select(*keys).distinct()
        if not keys:
            return df.agg(*aggs)
        return df.groupBy(*keys).agg(*aggs)

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
        return df.orderBy(*[_sort_col(col(k.index), p.input.columns[k.index][1], k.descending, k.nulls_first)
                             for k in p.keys])

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
            return df if p.all else df.distinct()
        if p.op == "intersect":
            return left.intersectAll(right) if p.all else left.intersect(right)
        return left.exceptAll(right) if p.all else left.subtract(right)

    def _Unnest(self, p: Unnest) -> DataFrame:
        df = self.lower(p.input)
        n = len(p.input.columns)
        arrays = [F.coalesce(col(i), F.array()) for i in p.arrays]
        longest = reduce(F.greatest, [F.size(a) for a in arrays]) if len(arrays) > 1 else F.size(arrays[0])
        steps = F.when(longest > 0, F.sequence(F.lit(0), longest - 1)).otherwise(F.array().cast("array<int>"))
        df = df.withColumn("__k", F.explode(steps))  # no rows when every array is empty
        k = F.col("__k")
        extra = [(F.when(k < F.size(a), F.try_element_at(a, k + 1)) if kind == "unnest"
                  else F.when(k < F.size(a), k + 1)).alias(f"c{n + j}")
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
            extra.append(self._window_fn(c, spec).alias(f"c{n + j}"))
        return df.select(*[col(i) for i in range(n)], *extra)

    def _window_fn(self, c: WindowCall, spec) -> SparkColumn:
        if c.func == "row_number":
            return F.row_number().over(spec).cast(T.LongType())
        if c.func == "rank":
            return F.rank().over(spec).cast(T.LongType())
        if c.func == "dense_rank":
            return F.dense_rank().over(spec).cast(T.LongType())
        if c.func in ("lag", "lead"):
            off = c.args[1]
            if not isinstance(off, Literal):
                raise SqlError(FEATURE_NOT_SUPPORTED, f"{c.func} needs a constant offset on table data")
            default = self.scalar(c.args[2]) if len(c.args) > 2 else None
            f = F.lag if c.func == "lag" else F.lead
            return f(self.scalar(c.args[0]), off.value, default).over(spec)
        if c.func == "array_agg":
            raise SqlError(FEATURE_NOT_SUPPORTED, "array_agg as a window function is not supported")
        return self.aggregate(c.as_aggregate(), over=spec)

    def _Distinct(self, p: Distinct) -> DataFrame:
        return self.lower(p.input).distinct()

    # -- scalars ----------------------------------------------------------------------

    def scalar(self, e) -> SparkColumn:
        if isinstance(e, ColRef):
            return col(e.index)
        if isinstance(e, Literal):
            return literal(e.value, e.type)
        if isinstance(e, Cast):
            return self.cast(self.scalar(e.expr), e.expr.type, e.type)
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
        special = self._cast_special(c, src, dst)
        if special is not None:
            return special
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
        if d == "numeric" and dst.precision is None and s == "numeric":
            return c
        return c.cast(spark_type(dst))

    def _cast_special(self, c: SparkColumn, src: SqlType, dst: SqlType) -> SparkColumn | None:
        """Casts from or to arrays, bytea, uuid and jsonb, whose text forms Spark does not
        know; None when the generic rules apply."""
        s, d = src.name, dst.name
        text = d in ("text", "varchar", "bpchar")
        if src.is_array and dst.is_array:
            return F.transform(c, lambda x: self.cast(x, src.element, dst.element))
        if src.is_array and text:
            def elem(x):
                s_ = self.cast(x, src.element, SqlType("text"))
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

    def _array_call(self, f: str, e: Call, args: list[SparkColumn]) -> SparkColumn:
        t = e.type
        if f == "array":
            return F.array(*args)
        if f == "subscript":
            return F.when(args[1] >= 1, F.try_element_at(args[0], args[1]))
        if f == "cardinality":
            return F.size(args[0])
        if f in ("array_length", "array_upper"):
            return F.when((args[1] == 1) & (F.size(args[0]) > 0), F.size(args[0]))
        if f == "array_lower":
            return F.when((args[1] == 1) & (F.size(args[0]) > 0), F.lit(1))
        if f == "array_to_string":
            elem_t = e.args[0].type.element
            as_text = F.transform(args[0], lambda x: self.cast(x, elem_t, SqlType("text")))
            return F.array_join(as_text, args[1], *(args[2:] and [args[2]]))
        if f == "array_cat":
            a, b = args
            return F.when(a.isNull() & b.isNull(), F.lit(None)).otherwise(
                F.concat(F.coalesce(a, _empty_array(t)), F.coalesce(b, _empty_array(t))))
        if f == "array_append":
            return F.concat(F.coalesce(args[0], _empty_array(t)), F.array(args[1]))
        if f == "array_prepend":
            return F.concat(F.array(args[0]), F.coalesce(args[1], _empty_array(t)))
        kind, op = f.split(":")
        x = args[0]
        pred = {"eq": lambda v: x == v, "ne": lambda v: x != v, "lt": lambda v: x < v, "le": lambda v: x <= v,
                "gt": lambda v: x > v, "ge": lambda v: x >= v}[op]
        return F.exists(args[1], pred) if kind == "array_any" else F.forall(args[1], pred)

    def _jsonb_call(self, f: str, e: Call, args: list[SparkColumn]) -> SparkColumn:
        """jsonb operators over Spark's VARIANT (parse_json, try_variant_get): the path must
        be constant; jsonb results are re-normalized to jsonb's text form after collection,
        but ``->>``/``#>>`` of an object or array give Spark's compact JSON text."""
        v = F.parse_json(args[0])
        if f == "jsonb_typeof":
            sch = F.schema_of_variant(v)
            return (F.when(args[0].isNull(), F.lit(None).cast(T.StringType()))
                    .when(sch.startswith("OBJECT"), F.lit("object")).when(sch.startswith("ARRAY"), F.lit("array"))
                    .when(sch == "STRING", F.lit("string")).when(sch == "BOOLEAN", F.lit("boolean"))
                    .when(sch == "VOID", F.lit("null")).otherwise(F.lit("number")))
        if f == "jsonb_array_length":
            arr = F.try_variant_get(v, "$", "array<variant>")
            return F.when(args[0].isNull(), F.lit(None).cast(T.IntegerType())).when(arr.isNotNull(), F.size(arr)).otherwise(
                F.raise_error(F.lit("cannot get array length of a non-array")))
        if f in ("jsonb_contains", "jsonb_contained", "jsonb_exists"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "jsonb @>, <@ and ? are not supported on table data yet")
        step = e.args[1]
        if not isinstance(step, Literal):
            raise SqlError(FEATURE_NOT_SUPPORTED, "jsonb paths must be constants on table data")
        if step.value is None:
            return F.lit(None).cast(T.StringType())
        steps = step.value if isinstance(step.value, list) else [step.value]
        if any(x is None for x in steps):
            return F.lit(None).cast(T.StringType())
        path = "$" + "".join(_variant_step(x) for x in steps)
        if f.endswith("_text"):
            return F.try_variant_get(v, path, "string")
        return F.to_json(F.try_variant_get(v, path, "variant"))

    def call(self, e: Call) -> SparkColumn:
        f = e.func
        args = [self.scalar(a) for a in e.args]
        types = [a.type for a in e.args]
        t = e.type
        if f in ("array", "subscript", "cardinality", "array_length", "array_upper", "array_lower", "array_to_string",
                 "array_cat", "array_append", "array_prepend") or f.startswith(("array_any:", "array_all:")):
            return self._array_call(f, e, args)
        if f == "bytea_concat":
            return F.concat(args[0], args[1])
        if f == "not_null_or_raise":
            return F.when(args[0].isNull(), F.raise_error(F.concat(F.lit(NOT_NULL_PREFIX), args[1]))
                          ).otherwise(args[0])
        if f.startswith("jsonb_"):
            return self._jsonb_call(f, e, args)
        if f in ("add", "sub"):
            a, b = args
            if t.name == "date":
                if types[0].name == "date":
                    return F.date_add(a, b) if f == "add" else F.date_sub(a, b)
                return F.date_add(b, a)
            if f == "sub" and types[0].name == "date" and types[1].name == "date":
                return F.datediff(a, b)
            r = a + b if f == "add" else a - b
            return r
        if f == "mul":
            return args[0] * args[1]
        if f == "div":
            a, b = args
            if t.is_integer:
                return F.call_function("div", a, b).cast(spark_type(t))
            return a / b
        if f == "mod":
            return args[0] % args[1]
        if f == "neg":
            return -args[0]
        if f == "pos":
            return args[0]
        if f in ("eq", "ne", "lt", "le", "gt", "ge"):
            a, b = args
            if types[0].name == "bpchar":
                a, b = F.rtrim(a), F.rtrim(b)
            return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[f]
        if f == "and":
            return reduce(lambda x, y: x & y, args)
        if f == "or":
            return reduce(lambda x, y: x | y, args)
        if f == "not":
            return ~args[0]
        if f == "is_null":
            return args[0].isNull()
        if f == "is_not_null":
            return args[0].isNotNull()
        if f == "is_true":
            return args[0].eqNullSafe(F.lit(True))
        if f == "is_false":
            return args[0].eqNullSafe(F.lit(False))
        if f == "is_not_true":
            return ~args[0].eqNullSafe(F.lit(True))
        if f == "is_not_false":
            # x OR x IS NULL: for x = (a = b) in an anti join, Spark's null-aware anti join
            return args[0] | args[0].isNull()
        if f == "is_distinct":
            return ~args[0].eqNullSafe(args[1])
        if f == "is_not_distinct":
            return args[0].eqNullSafe(args[1])
        if f == "in":
            x = args[0]
            if types[0].name == "bpchar":
                return reduce(lambda p, q: p | q, [F.rtrim(x) == F.rtrim(v) for v in args[1:]])
            return reduce(lambda p, q: p | q, [x == v for v in args[1:]])
        if f in ("regex", "iregex", "not_regex", "not_iregex"):
            pattern = F.concat(F.lit("(?i)"), args[1]) if "iregex" in f else args[1]
            hit = args[0].rlike(pattern) if not isinstance(e.args[1], Literal) else \
                args[0].rlike((("(?i)" if "iregex" in f else "") + e.args[1].value))
            return ~hit if f.startswith("not_") else hit
        if f in ("like", "ilike"):
            return args[0].like(args[1]) if f == "like" else args[0].ilike(args[1])
        if f == "concat":
            return F.concat(args[0], args[1])
        if f == "cardinality_check":
            return F.when(args[0] > 1, F.raise_error(F.lit(CARDINALITY_MESSAGE))).otherwise(args[1])
        if f == "concat_ws_null":
            return F.concat_ws("", *args)
        if f == "upper":
            return F.upper(args[0])
        if f == "lower":
            return F.lower(args[0])
        if f == "length":
            return F.char_length(args[0])
        if f == "substr":
            # PostgreSQL: characters before position 1 count against the length.
            s, start = args[0], args[1]
            first = F.greatest(start, F.lit(1))
            if len(args) == 2:
                return s.substr(first, F.lit(2**31 - 1))
            return s.substr(first, F.greatest(start + args[2] - first, F.lit(0)))
        if f == "trim":
            return F.trim(args[0]) if len(args) == 1 else F.call_function("btrim", args[0], args[1])
        if f == "ltrim":
            return F.ltrim(args[0])
        if f == "rtrim":
            return F.rtrim(args[0])
        if f == "replace":
            return F.replace(args[0], args[1], args[2])
        if f == "abs":
            return F.abs(args[0])
        if f == "round":
            digits = args[1] if len(args) > 1 else F.lit(0)
            if types[0].name in ("float4", "float8"):
                return F.bround(args[0], 0)
            return F.call_function("round", args[0], digits) if len(args) > 1 else F.round(args[0], 0)
        if f == "trunc":
            return F.call_function("trunc", args[0]) if len(args) == 1 and types[0].name == "float8" else \
                F.call_function("truncate", args[0], args[1] if len(args) > 1 else F.lit(0))
        if f in ("floor", "ceil"):
            return (F.floor if f == "floor" else F.ceil)(args[0]).cast(spark_type(t))
        if f == "sqrt":
            return F.sqrt(args[0])
        if f == "ln":
            return F.ln(args[0])
        if f == "exp":
            return F.exp(args[0])
        if f == "power":
            return F.pow(args[0], args[1])
        if f == "sign":
            return F.signum(args[0]).cast(spark_type(t))
        if f == "mod":
            return args[0] % args[1]
        if f == "coalesce":
            return F.coalesce(*args)
        if f == "nullif":
            return F.nullif(args[0], args[1])
        if f == "greatest":
            return F.greatest(*args) if len(args) > 1 else args[0]
        if f == "least":
            return F.least(*args) if len(args) > 1 else args[0]
        if f == "date_part":
            field = e.args[0]
            if not isinstance(field, Literal):
                raise SqlError(FEATURE_NOT_SUPPORTED, "date_part needs a constant field name")
            return F.date_part(F.lit(str(field.value).upper()), args[1]).cast(spark_type(t))
        if f == "date_trunc":
            return F.date_trunc(str(e.args[0].value), args[1]).cast(T.TimestampNTZType())
        raise SqlError(FEATURE_NOT_SUPPORTED, f"function {f} is not supported on Spark")

    def aggregate(self, a: AggCall, over=None) -> SparkColumn:
        """``a`` as a Spark aggregate; with ``over`` (a window spec) as a window aggregate."""
        o = (lambda c: c.over(over)) if over is not None else (lambda c: c)  # noqa: E731
        if a.func == "count_star":
            return o(F.count(F.lit(1)))
        x = self.scalar(a.arg)
        at = a.arg.type
        if a.func == "count":
            return o(F.count_distinct(x) if a.distinct else F.count(x))
        if a.func == "sum":
            if at.name == "int8":
                x = x.cast(T.DecimalType(38, 0))  # PostgreSQL: sum(bigint) is numeric
            r = o(F.sum_distinct(x) if a.distinct else F.sum(x))
            return r.cast(spark_type(a.type)) if a.type.name in ("float4", "float8", "int8") else r
        if a.func == "avg":
            if at.is_integer:
                x = x.cast(T.DecimalType(38, 0))
            if a.distinct:
                raise SqlError(FEATURE_NOT_SUPPORTED, "avg(DISTINCT ...) is not supported yet")
            r = o(F.avg(x))
            return r.cast(T.DoubleType()) if a.type.name == "float8" else r
        if a.func in ("min", "max"):
            return o((F.min if a.func == "min" else F.max)(x))
        if a.func == "bool_and":
            return o(F.bool_and(x))
        if a.func == "bool_or":
            return o(F.bool_or(x))
        if a.func == "array_agg":
            # collect_list drops NULL elements; an ORDER BY sorts (keys, value) structs.
            if a.order:
                if len({d for _, d, _ in a.order}) > 1:
                    raise SqlError(FEATURE_NOT_SUPPORTED, "array_agg with mixed ORDER BY directions")
                keyed = F.struct(*[self.scalar(e).alias(f"k{i}") for i, (e, _, _) in enumerate(a.order)], x.alias("v"))
                agg = F.transform(F.sort_array(F.collect_list(keyed), asc=not a.order[0][1]), lambda s_: s_["v"])
            else:
                agg = F.collect_set(x) if a.distinct else F.collect_list(x)
            return F.when(F.count(F.lit(1)) > 0, agg)
        raise SqlError(FEATURE_NOT_SUPPORTED, f"aggregate {a.func} is not supported")


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
    if t.is_array:
        return F.array(*[literal(x, t.element) for x in v]).cast(spark_type(t)) if v else _empty_array(t)
    if n == "time":
        return F.lit(v.isoformat()).cast(T.TimeType(6))
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
        c = F.lit(v)
        return c.cast(spark_type(t)) if t.precision is not None else c
    if n in ("float4", "float8", "int2", "int8"):
        return F.lit(v).cast(spark_type(t))
    return F.lit(v)
