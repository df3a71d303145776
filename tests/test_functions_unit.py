"""Pure pieces of issue 26's functions, pinned to PostgreSQL 18's answers (the
differential suite checks them through the wire; these run without a server)."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from catalog.errors import SqlError
from planner.functions import trig
from planner.functions.datetime import _IntOps, justify
from planner.functions.math import numeric_exp_exact, numeric_log, numeric_sqrt
from planner.functions.numfmt import parse, to_char_py


@pytest.mark.parametrize("value,fmt,expected", [
    (D("1.5"), "999.99", "   1.50"), (D("-2.25"), "999.99", "  -2.25"), (D("0"), "999.99", "    .00"),
    (D("12345.678"), "999.99", " ###.##"), (D("1.5"), "FM99999.000", "1.500"), (D("0"), "FM99999.000", ".000"),
    (D("-0.1"), "99.99", "  -.10"), (0, "999", "   0"), (D("12345678.000"), "9,999,999.99", " #,###,###.##"),
    (-3, "S9999", "   -3"), (-3, "999MI", "  3-"), (42, "999MI", " 42 "), (D("1.5"), "FM9999.99", "1.5"),
    (0, "FM999", "0"), (5, "FM0.9", "5."), (D("-1.5"), "0000.9", "-0001.5"), (-1234, "9,999", "-1,234"),
    (1, "9999S", "   1+"), (D("-1234.5"), "FM9,999.99", "-1,234.5"), (D("0.5"), "FM9.99", ".5"),
    (0, "FM9999.99", "0."), (D("0.001"), "FM9999.99", "0."), (0, "FM9999.00", ".00"), (D("-0.5"), "FM9999.99", "-.5"),
])
def test_to_char_number(value, fmt, expected):
    assert to_char_py(value, parse(fmt)) == expected


def test_degree_functions_are_exact_at_special_angles():
    assert [trig.RULES[f][0](trig.PY, x) for f, x in [("sind", 30.0), ("cosd", 60.0), ("tand", 45.0),
                                                       ("cotd", 45.0), ("asind", 0.5), ("acosd", 0.5),
                                                       ("atand", 1.0), ("sind", -390.0)]] == \
        [0.5, 0.5, 1.0, 1.0, 30.0, 60.0, 45.0, -0.5]
    assert trig.RULES["tand"][0](trig.PY, 1e10) == -5.671281819617709


def test_numeric_logarithms_have_postgresql_scale():
    assert str(numeric_log(None, D("2.0"))) == "0.6931471805599453"
    assert str(numeric_log(D(10), D("100.0"))) == "2.0000000000000000"
    assert str(numeric_log(D(2), D("8.0"))) == "3.0000000000000000"
    assert str(numeric_exp_exact(D("1.0"))) == "2.7182818284590452"
    assert str(numeric_sqrt(D("2.0"))) == "1.414213562373095"


def test_justify():
    fields = lambda *v: v  # noqa: E731
    assert justify(_IntOps, "interval", (1, 0, -30 * 3600 * 10**6), fields) == (0, 28, 18 * 3600 * 10**6)
    assert justify(_IntOps, "hours", (0, 0, 50 * 3600 * 10**6), fields) == (0, 2, 2 * 3600 * 10**6)
    assert justify(_IntOps, "days", (0, 35, 0), fields) == (1, 5, 0)


def test_region_pattern_drops_the_string_start_only():
    from planner.functions.regexp import region_pattern

    assert region_pattern("^H") == "(?!)H"
    assert region_pattern("[^,]+") == "[^,]+"
    assert region_pattern("a\\^b") == "a\\^b"
    assert region_pattern("(?<=a)b") is None


def test_simple_case_folding_as_builtin_c_utf8():
    from planner.functions.string import simple_fold

    # PostgreSQL 18: casefold('ς ſ µ ß ẞ İ K') = 'σ s μ ß ß İ k'
    assert "".join(map(simple_fold, "ς ſ µ ß ẞ İ K")) == "σ s μ ß ß İ k"


def test_positional_regexp_functions():
    from planner.context import NO_STATEMENT
    from planner.functions.regexp import _count_py, _instr_py, _replace_py, _substr_py

    # PostgreSQL 18's answers
    assert _count_py(["abcabc", "^a", 4], None, NO_STATEMENT) == 0
    assert _instr_py(["abcabc", "b", 1, 2], None, NO_STATEMENT) == 5
    assert _instr_py(["abcabc", "b", 1, 2, 1], None, NO_STATEMENT) == 6
    assert _instr_py(["abcabc", "(b)(c)", 1, 1, 0, "", 2], None, NO_STATEMENT) == 3
    assert _instr_py(["aaa", "a*", 1, 2], None, NO_STATEMENT) == 4
    assert _substr_py(["abcabc", "(b)(c)", 1, 2, "", 2], None, NO_STATEMENT) == "c"
    assert _replace_py(["abcabc", "b", "X", 1, 2], None, NO_STATEMENT) == "abcaXc"
    assert _replace_py(["abcabc", "b", "X", 2], None, NO_STATEMENT) == "aXcabc"
    assert _replace_py(["abcabc", "b", "X", 1, 2, "g"], None, NO_STATEMENT) == "abcaXc"
    assert _replace_py(["abcabc", "(b)", "<\\1>", 1, 1, "i"], None, NO_STATEMENT) == "a<b>cabc"
    with pytest.raises(SqlError) as err:
        _instr_py(["abc", "b", 1, 0], None, NO_STATEMENT)
    assert err.value.sqlstate == "22023"


def test_jsonb_path_edits():
    from planner.functions.json_edit import _delete_path_py, _insert_py

    assert _delete_path_py(['{"a": [1, 2, {"b": 3}]}', ["a", "2", "b"]], None) == '{"a": [1, 2, {}]}'
    assert _delete_path_py(["[1, 2, 3]", ["-1"]], None) == "[1, 2]"
    assert _insert_py(["[1, 2]", ["5"], "9"], None) == "[1, 2, 9]"
    assert _insert_py(["[1, 2]", ["-5"], "9"], None) == "[9, 1, 2]"
    assert _insert_py(['{"a": [1]}', ["a", "0"], "9", True], None) == '{"a": [1, 9]}'
    with pytest.raises(SqlError) as err:
        _insert_py(['{"a": 1}', ["a"], "2"], None)
    assert err.value.sqlstate == "22023"


def test_uuid_fields():
    from planner.functions.uuids import _timestamp_py, _version_py

    assert str(_timestamp_py(["c232ab00-9414-11ec-b3c8-9f6bdeced846"], None)) == "2022-02-22 19:22:22+00:00"
    assert str(_timestamp_py(["017f22e2-79b0-7cc3-98c4-dc0c0c07398f"], None)) == "2022-02-22 19:22:22+00:00"
    assert _version_py(["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"], None) == 4
    assert _version_py(["a0eebc99-9c0b-4ef8-cb6d-6bb9bd380a11"], None) is None


def test_time_of_day_arithmetic_and_fields():
    """PostgreSQL 18: time +/- interval adds the time part only and wraps at midnight;
    time - time is an interval; date + time a timestamp; EXTRACT of a time."""
    import datetime as dt

    from catalog.types import Interval, SqlType
    from planner.functions.datetime import date_part_value, time_arith

    assert time_arith("add", dt.time(13, 45, 30, 500000), Interval(0, 1, -9 * 3_600_000_000), SqlType("time")) \
        == dt.time(4, 45, 30, 500000)
    assert time_arith("sub", dt.time(1), dt.time(13, 45), SqlType("interval")) == Interval(0, 0, -45_900_000_000)
    assert time_arith("add", dt.date(2024, 1, 5), dt.time(13, 45), SqlType("timestamp")) == dt.datetime(2024, 1, 5, 13, 45)
    t = SqlType("time")
    assert [str(date_part_value(f, dt.time(13, 45, 30, 500000), t)) for f in ("second", "epoch", "minute")] == \
        ["30.500000", "49530.500000", "45"]
    with pytest.raises(SqlError) as day:
        date_part_value("day", dt.time(13), t)
    with pytest.raises(SqlError) as unknown:
        date_part_value("fortnight", dt.time(13), t)
    assert (day.value.sqlstate, unknown.value.sqlstate) == ("0A000", "22023")


@pytest.mark.parametrize("unit,months,days,micros,expected", [
    ("hour", 0, 1, 3 * 3_600_000_000 + 75 * 60_000_000 + 1_500_000, (0, 1, 4 * 3_600_000_000)),
    ("year", -5, 1, 0, (0, 0, 0)),
    ("quarter", 7, 0, 0, (6, 0, 0)),
    ("millennium", -1604 * 12, 3, 0, (-12000, 0, 0)),
    ("milliseconds", 0, 0, 1_234_560, (0, 0, 1_234_000)),
    ("second", 0, 0, -181_500_000, (0, 0, -181_000_000)),
])
def test_date_trunc_of_an_interval(unit, months, days, micros, expected):
    """PostgreSQL 18's interval_trunc: fields broken down toward zero, those below the unit zeroed."""
    from planner.functions.datetime import interval_trunc

    assert interval_trunc(unit, months, days, micros) == expected


def test_make_time_range():
    import datetime as dt

    from planner.functions.datetime import _make_time_py

    assert _make_time_py([23, 59, 59.9999994], None) == dt.time(23, 59, 59, 999999)
    for fields, state in (([1, 60, 0.0], "22008"), ([25, 0, 0.0], "22008"), ([24, 0, 0.0], "0A000"),
                          ([23, 59, 59.9999996], "0A000")):
        with pytest.raises(SqlError) as err:
            _make_time_py(fields, None)
        assert err.value.sqlstate == state


def test_width_bucket_of_thresholds_is_postgresql_binary_search():
    """width_bucket_array's binary search, even over unsorted thresholds (PostgreSQL 18: 3)."""
    from planner.functions.array import _width_bucket_array_py

    assert _width_bucket_array_py([4, [5, 1, 3]], None) == 3
    assert _width_bucket_array_py([3, []], None) == 0
    with pytest.raises(SqlError) as err:
        _width_bucket_array_py([3, [1, None, 4]], None)
    assert err.value.sqlstate == "22004"


@pytest.mark.parametrize("text,key", [
    ("pg_class", "pg_class"), ("PG_CATALOG.Pg_Class", "pg_catalog\x01pg_class"), (' "T" ', "T"),
    ('"a""b".C', 'a"b\x01c'), ('"x.y"', "x.y"), ("materialize . public . t", "materialize\x01public\x01t"),
])
def test_privilege_functions_parse_qualified_names(text, key):
    """has_table_privilege's name argument: identifiers folded unless quoted (PostgreSQL 4.1.1)."""
    from planner.functions.privileges import _name_key

    assert _name_key(text) == key


@pytest.mark.parametrize("text", ["a b", "a..b", '""', '"a"x', "", "."])
def test_privilege_functions_refuse_bad_name_syntax(text):
    from planner.functions.privileges import _name_key

    with pytest.raises(SqlError) as e:
        _name_key(text)
    assert e.value.sqlstate == "42602"


@pytest.mark.parametrize("text,expected", [
    ("1", 1), ("123bYteS", 123), (" 1.5 gB ", 1610612736), ("1e6 MB", 1048576000000), ("-.5kB", -512),
    ("256 B", 256), ("99 PB", 111464090777419776), ("0.0000001 PB", 112589991), ("1.", 1),
])
def test_pg_size_bytes(text, expected):
    from planner.functions.system import pg_size_bytes

    assert pg_size_bytes(text) == expected


@pytest.mark.parametrize("text,state", [("1 XB", "22023"), (".", "22023"), ("1 k B", "22023"),
                                        ("1e20 PB", "22003")])
def test_pg_size_bytes_errors(text, state):
    from planner.functions.system import pg_size_bytes

    with pytest.raises(SqlError) as e:
        pg_size_bytes(text)
    assert e.value.sqlstate == state


def test_lookup_tables_need_a_session():
    """Outside a session the catalog functions' lookup table is NULL: 0A000, not a guess."""
    from catalog.types import OID, TEXT
    from planner import functions as fn
    from planner.context import PlanContext
    from planner.scalar import Literal

    ctx = PlanContext.starting()
    args = fn.FUNCTIONS["has_table_privilege"].extra["plan_args_in"]([Literal("t", TEXT), Literal("SELECT", TEXT)], ctx)
    assert args[-1].type.name == "internal" and args[-1].value is None
    with pytest.raises(SqlError) as e:
        fn.FUNCTIONS["has_table_privilege"].py([a.value for a in args], None)
    assert e.value.sqlstate == "0A000"
    # a call no signature fits gets no table: its 42883 names its own arguments
    assert len(fn.FUNCTIONS["pg_get_userbyid"].extra["plan_args_in"]([Literal(1, OID), Literal(2, OID)], ctx)) == 2


def test_format_type_typmods():
    from planner.functions.system import format_type

    assert [format_type(1042, None), format_type(1042, -1), format_type(1042, 9), format_type(1185, 5),
            format_type(1231, 3 * 65536 + 6)] == \
        ["character", "bpchar", "character(5)", "timestamp(5) with time zone[]", "numeric(3,2)[]"]


@pytest.mark.parametrize("value,fmt,expected", [
    (-0.001, "9.99", " -.00"), (0.125, "9.99", "  .12"), (2.675, "9.99", " 2.67"),
    (123456789012.345, "999999999999999.999999", "    123456789012.345"),
    (1234567890123456789.0, "9999999999999999999.99", " 1234567890123456768"),
    (99999999999999.9, "99999999999999.99", " ##############."), (9.5, "9", " #"),
    (float("nan"), "999.99", " NaN"), (float("nan"), "S999", "+NaN"), (float("nan"), "9", " #"),
    (float("-inf"), "S99.9", "-##.#"), (0.0, "FM9.99", "0."), (-1234.5, "S9,999.9", "-1,234.5"),
])
def test_to_char_float_as_formatting_c(value, fmt, expected):
    """float8_to_char: C's %.*f of the binary value, 15 significant digits at most."""
    from planner.functions.numfmt import float_to_char_py

    assert float_to_char_py(value, parse(fmt), 15) == expected


@pytest.mark.parametrize("x,y,expected", [
    ("1.500", "2.0", "2.2500000000000000"), ("12345.678", "2.0", "152415765.27968400"), ("2.0", "5", "32.000000000000000"),
    ("1.5", "-3", "0.2962962962962963"), ("0.0", "0", "1.0000000000000000"), ("10", "400.0", "1" + "0" * 400 + ".0"),
    ("2", "0.5", "1.4142135623730950"), ("0.0", "0.5", "0.0000000000000000"), ("0.5", "100000.5", "0." + "0" * 1000),
])
def test_numeric_power_has_postgresql_scale(x, y, expected):
    """power_var_int's and power_var's result scales (PostgreSQL 18's answers)."""
    from catalog.textio import format_text
    from catalog.types import NUMERIC
    from planner.functions.math import _power_py
    from planner.scalar import Call, Literal

    call = Call("power", (Literal(D(x), NUMERIC), Literal(D(y), NUMERIC)), NUMERIC)
    assert format_text(_power_py([D(x), D(y)], call), NUMERIC) == expected


@pytest.mark.parametrize("x,y", [("5.5", "12345.678"), ("7.0", "1000000")])
def test_numeric_power_past_numeric_range_is_22003(x, y):
    from catalog.types import NUMERIC
    from planner.functions.math import _power_py
    from planner.scalar import Call, Literal

    with pytest.raises(SqlError) as err:
        _power_py([D(x), D(y)], Call("power", (Literal(D(x), NUMERIC), Literal(D(y), NUMERIC)), NUMERIC))
    assert err.value.sqlstate == "22003"


def test_call_text_is_what_a_replica_runs():
    """planner.functions.call_text: the text of the Python implementation's answer, NULL
    for a NULL argument of a strict function, an error as the prefix and SQLSTATE that
    spark_exec.lower raises again, and Spark's forms of timetz and interval read."""
    from catalog.types import FLOAT8, INTERVAL, NUMERIC, TEXT, TIMETZ, SqlType
    from planner.functions import call_text
    from planner.scalar import Call, ColRef

    sqrt = Call("sqrt", (ColRef(0, SqlType("numeric", 10, 3)),), NUMERIC)
    assert call_text(sqrt, (D("1.500"),), "E:") == "1.224744871391589"
    assert call_text(sqrt, (None,), "E:") is None
    assert call_text(sqrt, (D("-1.000"),), "E:") == "E:2201F: cannot take square root of a negative number"
    gamma = Call("gamma", (ColRef(0, FLOAT8),), FLOAT8)
    assert call_text(gamma, (0.5,), "E:") == "1.772453850905516"
    assert call_text(gamma, (-200.5,), "E:") == "E:22003: value out of range: underflow"
    add = Call("add", (ColRef(0, TIMETZ), ColRef(1, INTERVAL)), TIMETZ)
    assert call_text(add, ("23:30:00-05:30", {"months": 1, "days": 2, "micros": 3_600_000_000}), "E:") == "00:30:00-05:30"
    part = Call("extract", (ColRef(0, TEXT), ColRef(1, TIMETZ)), NUMERIC)
    assert call_text(part, ("timezone_minute", "12:00:00-05:30"), "E:") == "-30"


@pytest.mark.parametrize("text,expected", [
    ("d\\0061t\\+000061 \\u00e9 \\U0001F600 \\\\ x", "data é 😀 \\ x"), ("\\d83d\\de00", "😀"),
    ("\\xyz", "42601"), ("\\d800", "42601"), ("\\d800\\0041", "42601"), ("\\dc00", "42601"), ("ab\\", "42601"),
    ("\\0000", "22023"), ("\\+110000", "22023"),
])
def test_unistr_as_varlena_c(text, expected):
    from planner.functions.string import _unistr_py

    try:
        assert _unistr_py([text], None) == expected
    except SqlError as err:
        assert err.sqlstate == expected


@pytest.mark.parametrize("text,key", [
    ("lower(text)", "lower(text)"), ("pg_catalog.ABS( integer )", "abs(int4)"), ("now()", "now()"),
    ("round(numeric(10,2), int)", "round(numeric,int4)"), ("array_length(INTEGER[], int)", "array_length(_int4,int4)"),
    ('"upper"(character varying(3))', "upper(varchar)"),
])
def test_function_signature_text_as_regprocedure_reads_it(text, key):
    from planner.functions.privileges import _function_key

    assert _function_key(text) == key


@pytest.mark.parametrize("text,sqlstate", [("lower", "22P02"), ("lower(text", "22P02"), ("lower(nosuch)", "42704")])
def test_function_signature_text_errors(text, sqlstate):
    from planner.functions.privileges import _function_key

    with pytest.raises(SqlError) as err:
        _function_key(text)
    assert err.value.sqlstate == sqlstate


@pytest.mark.parametrize("text,key", [
    ("int4", "int4"), ("INTEGER[]", "_int4"), ("character varying(3)", "varchar"), (" double  precision ", "float8"),
    ("pg_catalog.timestamp(3) with time zone", "timestamptz"), ("int[3][3]", "_int4"), ("nosuch", "nosuch"),
])
def test_type_name_text_as_regtype_reads_it(text, key):
    from planner.functions.privileges import _type_object_key

    assert _type_object_key(text) == key


@pytest.mark.parametrize("text,digits", [
    ("1.5", (2, 2)), ("0", (0, 2)), ("12345.678", (3, 2)), ("-0.001", (1, 2)), ("100000000", (1, 2)),
    ("1" + "0" * 100, (1, 2)), ("1.500", (2, 2)), ("9999.9999", (2, 2)), ("NaN", None), ("Infinity", None),
    ("1" + "0" * 300, (1, 4)), ("0." + "0" * 70 + "1", (1, 4)),
])
def test_numeric_storage_digits(text, digits):
    """pg_column_size's numeric rule: base-10000 digits and the short or long header
    (PostgreSQL 18: pg_column_size(12345.678) = 12, of 1e100 = 8, of 'NaN' = 6)."""
    from planner.functions.datum_size import _numeric_digits

    assert _numeric_digits(text) == digits


def test_numeric_variance_is_numeric_stddev_internal():
    """numeric.c's rules, as PostgreSQL 18 answers: the variance rounded to
    select_div_scale, the root of that rounded variance, 0 for a numerator <= 0."""
    from planner.functions.aggregate import numeric_variance

    xs = [D(v) for v in (12, 4, -4, 7)]
    sx, sx2 = sum(xs), sum(x * x for x in xs)
    assert str(numeric_variance(4, sx, sx2, True, True)) == "6.7019897542943668"
    assert str(numeric_variance(4, sx, sx2, True, False)) == "44.9166666666666667"
    ys = [D(v) for v in ("1.500", "-2.250", "0.000", "12345.678")]
    sy, sy2 = sum(ys), sum(y * y for y in ys)
    assert str(numeric_variance(4, sy, sy2, True, True)) == "6172.964192371117"
    assert str(numeric_variance(4, sy, sy2, True, False)) == "38105486.920296000000"
    assert str(numeric_variance(2, D("2.0"), D("2.00"), False, True)) == "0"
    assert numeric_variance(1, D(3), D(9), True, False) is None


def test_numeric_avg_and_variance_from_spark_sums_keep_the_values_display_scale():
    """The replica's last step of a numeric avg and variance (issue 26): Spark's exact sum
    arrives at the column's scale (10 for an unconstrained numeric) and is taken at the
    values' largest display scale, as PostgreSQL's sum is."""
    from planner.functions.aggregate import _avg_from_sum, _variance_from_sums

    assert str(_avg_from_sum([D("123457.0400000000"), 6, 3], None)) == "20576.173333333333"
    assert str(_avg_from_sum([D("2.85"), 2, None], None)) == "1.42500000000000000000"
    assert _avg_from_sum([None, 0, None], None) is None
    # 1.5 and 0.25 at scale 10: unscaled 15000000000 and 2500000000, in pieces of 13 digits
    xs = [15000000000, 2500000000]
    sums = [sum(xs), 0, 0, sum(x * x for x in xs), 0, 0, 0, 0]
    assert str(_variance_from_sums([2, 10, 2, True, False, *map(D, sums)], None)) == "0.78125000000000000000"


def test_float_variance_is_float8_accum_in_input_order():
    """float.c's Youngs-Cramer sums (issue 26): stddev(1, 2, 4, 4) is exactly 1.5, where a
    two-pass or moment-merging sum gives 1.4999999999999998; the order of the values is
    the order of the sums (PostgreSQL 18: 5.102040816411564e+17 in this order,
    5.1020408164115654e+17 with the last two swapped); infinities make it NaN; finite
    values that overflow are 22003."""
    import math

    from catalog.errors import SqlError
    from planner.functions.aggregate import float_accum

    n, sx, sxx = float_accum([1.0, 2.0, 4.0, 4.0])
    assert (n, sx, sxx, math.sqrt(sxx / (n - 1))) == (4.0, 11.0, 6.75, 1.5)
    xs = [0.5 / 7, 1.5 / 7, -2.25 / 7, 1e10 / 7]
    n, _, sxx = float_accum(xs)
    assert repr(sxx / (n - 1)) == "5.102040816411564e+17"
    n, _, sxx = float_accum(xs[:2] + xs[:1:-1])
    assert repr(sxx / (n - 1)) == "5.1020408164115654e+17"
    assert math.isnan(float_accum([1.0, math.inf])[2]) and math.isnan(float_accum([math.inf])[2])
    with pytest.raises(SqlError) as e:
        float_accum([1e308, -1e308, 1e308])
    assert e.value.sqlstate == "22003"


def test_call_text_reads_an_unconstrained_numeric_at_its_display_scale():
    """A replica passes an unconstrained numeric of a scale per value to the Python
    implementation as its text at that scale (spark_exec.lower.Lowerer.python_text):
    exp(100) has no decimals in PostgreSQL, exp(100.0000000000), the stored decimal, ten."""
    from catalog.types import NUMERIC
    from planner.functions import call_text
    from planner.scalar import Call, ColRef

    exp = Call("exp", (ColRef(0, NUMERIC),), NUMERIC)
    assert call_text(exp, ("100",), "E:") == "26881171418161354484126255515800135873611119"
    assert call_text(exp, (D("100.0000000000"),), "E:").endswith(".7737419224")
    assert call_text(exp, ("1",), "E:") == "2.7182818284590452"
