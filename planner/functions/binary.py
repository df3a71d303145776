"""Binary string functions (PostgreSQL 9.5, tables 9.11 and 9.12) that share their rules
with the text functions of the same names: the bytes are read as Latin-1 text, one
character per byte, so ``substr``, ``position``, ``reverse``, ``btrim`` and ``overlay``
on bytea are the text entries' own implementations (in Python and on Spark, whose
``decode``/``encode`` with ISO-8859-1 map bytes to characters one to one); and the bit
functions ``get_bit``, ``set_bit``, ``bit_count``, ``crc32``, ``crc32c``."""

from __future__ import annotations

import zlib

from catalog.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SqlError
from catalog.textio import parse_bytea_escape
from planner.functions.registry import FUNCTIONS, Function, by_python, constant_arg, register, sig
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
    # Spark's crc32 is zlib's polynomial; CRC-32C (Castagnoli) runs in Python (by_python)
    Function("crc32c", (sig("bytea", ret="int8"),), lambda a, e: crc32c(bytes(a[0])), by_python,
             sql_names=("crc32c",), doc="9.5", samples=("crc32c(s::bytea)", "crc32c(''::bytea || k::text::bytea)", "crc32c('abc'::bytea)")),
)


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of ``data``: PostgreSQL's
    ``crc32c(bytea)`` (PostgreSQL 18, 9.5; pg_crc32c.h), an unsigned 32-bit value."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


# -- encode, decode (PostgreSQL 9.5, table 9.13), hmac and constant_time_eq (Materialize) -----

_ENCODINGS = ("base64", "base64url", "hex", "escape")


def _format(name: str) -> str:
    f = name.lower()
    if f not in _ENCODINGS:
        raise SqlError(INVALID_PARAMETER_VALUE, f'unrecognized encoding: "{name}"')
    return f


def encode_bytes(data: bytes, fmt: str) -> str:
    """``encode(data, fmt)`` (PostgreSQL's encode.c): base64 in lines of 76 characters,
    base64url without padding or lines, hex in lower case, escape with ``\\ooo`` for a
    zero byte or one of 0x80 and up, ``\\\\`` for a backslash.

    Raises:
        SqlError 22023 for an unknown format."""
    import base64

    f = _format(fmt)
    if f == "hex":
        return data.hex()
    if f == "base64":
        text = base64.b64encode(data).decode()
        return "\n".join(text[i:i + 76] for i in range(0, len(text), 76))
    if f == "base64url":
        return base64.urlsafe_b64encode(data).decode().rstrip("=")
    return "".join("\\\\" if b == 92 else f"\\{b:03o}" if b == 0 or b >= 0x80 else chr(b) for b in data)


def decode_text(text: str, fmt: str) -> bytes:
    """``decode(text, fmt)``, the inverse of :func:`encode_bytes` (base64 ignoring
    whitespace).

    Raises:
        SqlError 22023 for an unknown format or text that is not valid in it."""
    import base64
    import binascii
    import re

    f = _format(fmt)
    try:
        if f == "hex":
            return bytes.fromhex(text)
        if f in ("base64", "base64url"):
            raw = re.sub(r"[ \t\r\n]", "", text)
            if f == "base64url":
                raw = raw.replace("-", "+").replace("_", "/")
                raw += "=" * (-len(raw) % 4)
            return base64.b64decode(raw, validate=True)
    except (ValueError, binascii.Error):
        raise SqlError(INVALID_PARAMETER_VALUE, f"invalid {f} data") from None
    return parse_bytea_escape(text, INVALID_PARAMETER_VALUE)


def _encode_spark(S, a, e):
    F = S.F
    f = _format(constant_arg(e, 1, "encode needs a constant format"))
    if f == "hex":
        return F.lower(F.hex(a[0]))
    if f == "base64":  # PostgreSQL's lines of 76
        return F.regexp_replace(F.base64(a[0]), "(.{76})(?=.)", "$1\n")
    raise SqlError(FEATURE_NOT_SUPPORTED, f"encode(..., '{f}') is not supported on table data")


def _decode_spark(S, a, e):
    F = S.F
    f = _format(constant_arg(e, 1, "decode needs a constant format"))
    if f == "hex":
        return F.unhex(a[0])
    if f == "base64":
        return F.unbase64(F.regexp_replace(a[0], "[ \\t\\r\\n]", ""))
    raise SqlError(FEATURE_NOT_SUPPORTED, f"decode(..., '{f}') is not supported on table data")


#: hmac's algorithms (pgcrypto's names, as Materialize's hmac)
_HMAC_ALGORITHMS = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512")


def _hmac_py(a, e):
    import hmac as hmac_

    algorithm = a[2].lower()
    if algorithm not in _HMAC_ALGORITHMS:
        raise SqlError(INVALID_PARAMETER_VALUE, f"invalid hash algorithm '{a[2]}'")

    def raw(v):
        return v.encode() if isinstance(v, str) else bytes(v)

    return hmac_.new(raw(a[1]), raw(a[0]), algorithm).digest()


def _constant_time_eq_py(a, e):
    import hmac as hmac_

    def raw(v):
        return v.encode() if isinstance(v, str) else bytes(v)

    return hmac_.compare_digest(raw(a[0]), raw(a[1]))


register(
    Function("encode", (sig("bytea", "text", ret="text"),), lambda a, e: encode_bytes(bytes(a[0]), a[1]),
             _encode_spark, sql_names=("encode",), doc="9.5",
             samples=("encode(s::bytea, 'hex')", "encode(s::bytea, 'base64')", "encode('\\x00ff'::bytea, 'HEX')")),
    Function("decode", (sig("text", "text", ret="bytea"),), lambda a, e: decode_text(a[0], a[1]), _decode_spark,
             sql_names=("decode",), doc="9.5",
             samples=("decode(encode(s::bytea, 'base64'), 'base64')", "decode('00ff', 'hex')",
                      "decode(encode(s::bytea, 'hex'), 'hex')")),
    # Materialize's hmac (pgcrypto's): hmac(data, key, algorithm); in Python only: Spark
    # has no HMAC, and a webhook's CHECK is evaluated here (sqlfront.webhook)
    Function("hmac", (sig("text", "text", "text", ret="bytea"), sig("bytea", "bytea", "text", ret="bytea")),
             _hmac_py, None, sql_names=("hmac",), doc="Materialize: hmac(data, key, algorithm)"),
    Function("constant_time_eq", (sig("bytea", "bytea", ret="bool"), sig("text", "text", ret="bool")),
             _constant_time_eq_py, None, sql_names=("constant_time_eq",),
             doc="Materialize: constant_time_eq(a, b), equality in a time that does not depend on where they differ"),
)
