"""Binary string functions (PostgreSQL 9.5, tables 9.11 and 9.12) that share their rules
with the text functions of the same names: the bytes are read as Latin-1 text, one
character per byte, so ``substr``, ``position``, ``reverse``, ``btrim`` and ``overlay``
on bytea are the text entries' own implementations (in Python and on Spark, whose
``decode``/``encode`` with ISO-8859-1 map bytes to characters one to one); and the bit
functions ``get_bit``, ``set_bit``, ``bit_count``, ``crc32``."""

from __future__ import annotations

import zlib

from catalog.errors import SqlError, INVALID_PARAMETER_VALUE
from planner.functions import FUNCTIONS, Function, register, sig
from planner.functions.string import ARRAY_SUBSCRIPT_ERROR

_LATIN1 = "latin-1"


def _as_text_py(rule):
    """A text entry's Python rule over bytea arguments (and result)."""
    def py(a, e):
        r = rule([bytes(v).decode(_LATIN1) if isinstance(v, (bytes, bytearray, memoryview)) else v for v in a], e)
        return r.encode(_LATIN1) if e.type.name == "bytea" and isinstance(r, str) else r
    return py


def _as_text_spark(rule):
    """A text entry's Spark lowering over bytea arguments (and result)."""
    def spark(S, a, e):
        F = S.F
        args = [F.decode(c, "ISO-8859-1") if x.type.name == "bytea" else c for c, x in zip(a, e.args)]
        r = rule(S, args, e)
        return F.encode(r, "ISO-8859-1") if e.type.name == "bytea" else r
    return spark


def _like_text(name: str, plan_name: str, sigs, samples, doc="9.5") -> Function:
    """The bytea entry ``plan_name`` of the text entry ``name``, called by the same SQL names."""
    text = FUNCTIONS[name]
    return Function(plan_name, sigs, _as_text_py(text.py), _as_text_spark(text.spark), sql_names=text.sql_names,
                    doc=doc, samples=samples)


def _bit_index(b: bytes, n: int) -> tuple[int, int]:
    """(byte, bit) of bit ``n`` of ``b``, bits numbered from the low bit of byte 0.

    Raises:
        SqlError 2202E when ``n`` is outside the bits of ``b`` (PostgreSQL's byteaGetBit)."""
    if not 0 <= n < 8 * len(b):
        raise SqlError(ARRAY_SUBSCRIPT_ERROR, f"index {n} out of valid range, 0..{8 * len(b) - 1}")
    return n // 8, n % 8


def _get_bit_py(a, e):
    byte, bit = _bit_index(a[0], a[1])
    return (a[0][byte] >> bit) & 1


def _set_bit_py(a, e):
    b, n, v = bytes(a[0]), a[1], a[2]
    if v not in (0, 1):
        raise SqlError(INVALID_PARAMETER_VALUE, "new bit must be 0 or 1")
    byte, bit = _bit_index(b, n)
    new = (b[byte] & ~(1 << bit)) | (v << bit)
    return b[:byte] + bytes([new]) + b[byte + 1:]


def _byte_spark(S, b, i):
    """Byte ``i`` (0-based, a column) of the binary column ``b`` as an int."""
    F = S.F
    return F.ascii(F.substring(F.decode(b, "ISO-8859-1"), (i + 1).cast("int"), 1))


def _bit_range_spark(S, b, n, value):
    F = S.F
    return F.when((n < 0) | (n >= 8 * F.octet_length(b)),
                  S.fail(ARRAY_SUBSCRIPT_ERROR, "index out of valid range")).otherwise(value)


def _get_bit_spark(S, a, e):
    F = S.F
    b, n = a
    return _bit_range_spark(S, b, n, F.shiftright(_byte_spark(S, b, F.floor(n / 8)), (n % 8).cast("int"))
                            .bitwiseAND(1))


def _set_bit_spark(S, a, e):
    F = S.F
    b, n, v = a
    byte = F.floor(n / 8).cast("int")
    bit = (n % 8).cast("int")
    old = _byte_spark(S, b, byte)
    new = old.bitwiseAND(F.bitwise_not(F.shiftleft(F.lit(1), bit))).bitwiseOR(F.shiftleft(v, bit))
    text = F.decode(b, "ISO-8859-1")
    out = F.encode(F.concat(F.substring(text, 1, byte), F.chr(new), F.substring(text, byte + 2, 2**31 - 1)),
                   "ISO-8859-1")
    return F.when((v != 0) & (v != 1), S.fail(INVALID_PARAMETER_VALUE, "new bit must be 0 or 1")).otherwise(
        _bit_range_spark(S, b, n, out))


def _bit_count_spark(S, a, e):
    F = S.F
    chars = F.split(F.decode(a[0], "ISO-8859-1"), "")
    return F.aggregate(chars, F.lit(0).cast("long"), lambda acc, ch: acc + F.bit_count(F.ascii(ch)).cast("long"))


def _reverse_spark(S, a, e):
    return S.F.reverse(a[0])


register(
    _like_text("substr", "bytea_substr", (sig("bytea", "int4", ret="bytea"), sig("bytea", "int4", "int4", ret="bytea")),
               ("substr(s::bytea, 2)", "substring(s::bytea, k, 2)", "substring(s::bytea from 0 for k)",
                "substr(s::bytea, 1, i)")),
    _like_text("strpos", "bytea_position", (sig("bytea", "bytea", ret="int4"),),
               ("position('l'::bytea in s::bytea)", "position(''::bytea in s::bytea)")),
    _like_text("btrim", "bytea_btrim", (sig("bytea", "bytea", ret="bytea"),),
               ("btrim(s::bytea, ' d'::bytea)", "trim(both 'H'::bytea from s::bytea)")),
    _like_text("ltrim", "bytea_ltrim", (sig("bytea", "bytea", ret="bytea"),), ("ltrim(s::bytea, ' H'::bytea)",)),
    _like_text("rtrim", "bytea_rtrim", (sig("bytea", "bytea", ret="bytea"),), ("rtrim(s::bytea, ' o'::bytea)",)),
    _like_text("overlay", "bytea_overlay", (sig("bytea", "bytea", "int4", ret="bytea"),
                                            sig("bytea", "bytea", "int4", "int4", ret="bytea")),
               ("overlay(s::bytea placing '\\xff'::bytea from k)",
                "overlay(s::bytea placing 'ab'::bytea from 2 for k)")),
    Function("bytea_reverse", (sig("bytea", ret="bytea"),), lambda a, e: bytes(a[0])[::-1],
             _as_text_spark(_reverse_spark), sql_names=("reverse",), doc="9.5", samples=("reverse(s::bytea)",)),
    Function("get_bit", (sig("bytea", "int8", ret="int4"),), _get_bit_py, _get_bit_spark, sql_names=("get_bit",),
             doc="9.5", samples=("get_bit(s::bytea, k)", "get_bit(s::bytea, 8 * k + 6)", "get_bit(s::bytea, 40)",
                                 "get_bit(s::bytea, -k)")),
    Function("set_bit", (sig("bytea", "int8", "int4", ret="bytea"),), _set_bit_py, _set_bit_spark,
             sql_names=("set_bit",), doc="9.5",
             samples=("set_bit(s::bytea, k, 1)", "set_bit(s::bytea, 8 * k + 6, 0)", "set_bit(s::bytea, 40, 1)",
                      "set_bit(s::bytea, 0, k)")),
    Function("bit_count", (sig("bytea", ret="int8"),), lambda a, e: sum(x.bit_count() for x in bytes(a[0])),
             _bit_count_spark, sql_names=("bit_count",), doc="9.5", samples=("bit_count(s::bytea)",
                                                                              "bit_count(''::bytea)")),
    Function("crc32", (sig("bytea", ret="int8"),), lambda a, e: zlib.crc32(bytes(a[0])),
             lambda S, a, e: S.F.crc32(a[0]), sql_names=("crc32",), doc="9.5", samples=("crc32(s::bytea)",)),
)
