"""Encoding values for DataRows and decoding Bind parameters, text and binary, per type.

Text follows ``catalog.textio.format_text`` (PostgreSQL's output functions); binary
scalars use psycopg's dumpers and loaders, which implement PostgreSQL's ``*send`` and
``*recv`` functions exactly; arrays use ``array_send``'s layout (ndim, has-null flag,
element OID, then per dimension size and lower bound, then length-prefixed elements).
"""

from __future__ import annotations

import datetime as dt
import struct
import uuid
from decimal import Decimal
from typing import Callable

from psycopg import adapters
from psycopg.pq import Format

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, INVALID_BINARY_REPRESENTATION
from catalog.textio import DEFAULT_FORMAT, TextFormat, array_dims, format_text, map_elements, parse_jsonb
from catalog.types import (FLOAT8 as _FLOAT8, FarTimestamp, Interval, SqlType, date_days, date_from_days,
                           timestamp_from_micros, timestamp_micros, type_from_oid)
from sqlfront.protocol.buffer import frame, length_prefixed

Encoder = Callable[[object], bytes]

#: Python type of the values psycopg's binary dumpers encode for us
_PY_TYPE = {"numeric": Decimal, "timestamp": dt.datetime, "timestamptz": dt.datetime, "time": dt.time,
            "timetz": dt.time}


_I2, _I4, _I8, _U4, _F4, _F8 = (struct.Struct(f).pack for f in ("!h", "!i", "!q", "!I", "!f", "!d"))
_LEN = struct.Struct("!i").pack
_NULL = b"\xff\xff\xff\xff"


def row_bodies(rows, types: list[SqlType], binary: list[bool], fmt: TextFormat = DEFAULT_FORMAT) -> list[bytes]:
    """Each row as a field count and length-prefixed fields (-1 for NULL): the body of a
    DataRow (PostgreSQL 55.7) and a tuple of COPY BINARY; text dates, times and intervals
    under the session's settings ``fmt`` (``catalog.textio.TextFormat``). Encoded column by column, since one encoder per column beats a type
    dispatch per value."""
    count = _I2(len(types))
    columns = []
    for i, (t, b) in enumerate(zip(types, binary)):
        enc = encoder(t, b, fmt)
        columns.append([_NULL if (v := r[i]) is None else _LEN(len(x := enc(v))) + x for r in rows])
    if not columns:
        return [count] * len(rows)
    return [count + b"".join(parts) for parts in zip(*columns)]


def data_rows(rows, types: list[SqlType], binary: list[bool], fmt: TextFormat = DEFAULT_FORMAT) -> list[bytes]:
    """DataRow messages for ``rows``."""
    return [frame(b"D", body) for body in row_bodies(rows, types, binary, fmt)]


def _float8_text(v: float) -> bytes:
    # repr() is the shortest exact form, as float8out's; it switches to exponents at 1e16
    # where PostgreSQL does at 1e15, and adds ".0" to integral values.
    if 1e-4 <= abs(v) < 1e15:
        r = repr(v)
        return (r[:-2] if r.endswith(".0") else r).encode()
    return format_text(v, _FLOAT8).encode()


def _text_encoder(t: SqlType, fmt: TextFormat = DEFAULT_FORMAT) -> Encoder:
    n = t.name
    if n in ("int2", "int4", "int8", "oid"):
        return lambda v: str(v).encode()
    if n in ("text", "varchar", "bpchar", "name", "unknown", "uuid", "jsonb", "void"):
        return str.encode
    if n == "bool":
        return lambda v: b"t" if v else b"f"
    if n == "float8":
        return _float8_text
    if n == "date" and fmt.datestyle.style == "ISO":
        return lambda v: v.isoformat().encode()
    return lambda v: format_text(v, t, fmt).encode()


def encoder(t: SqlType, binary: bool, fmt: TextFormat = DEFAULT_FORMAT) -> Encoder:
    """A function turning a non-NULL value of ``t`` into DataRow bytes (text dates, times
    and intervals under ``fmt``, ``catalog.textio.TextFormat``)."""
    if not binary or t.category in ("S", "X"):
        return _text_encoder(t, fmt)
    if t.is_array:
        return _array_encoder(t)
    n = t.name
    fixed = {"int2": _I2, "int4": _I4, "int8": _I8, "oid": _U4}.get(n)
    if fixed is not None:
        return fixed
    if n in ("float4", "float8"):
        pack = _F4 if n == "float4" else _F8
        return lambda v: pack(float(v))
    if n == "bool":
        return lambda v: b"\x01" if v else b"\x00"
    if n == "date":
        return lambda v: _I4(date_days(v))  # days since 2000-01-01, FarDates too
    if n == "interval":
        return _interval_binary
    if n == "bytea":
        return bytes
    if n == "uuid":
        return lambda v: uuid.UUID(v).bytes
    if n == "jsonb":
        return lambda v: b"\x01" + v.encode()  # jsonb_send: version 1, then the text
    if n == "mz_timestamp":
        return lambda v: struct.pack("!Q", int(v))  # Materialize's: an unsigned 64-bit integer
    if n == "void":
        return lambda v: b""  # void_send: no bytes
    if n in ("record", "list", "map"):
        raise SqlError(FEATURE_NOT_SUPPORTED, f"{n} values are sent in text format only")
    if n in ("timestamp", "timestamptz"):
        return lambda v: _I8(timestamp_micros(v if n == "timestamp" or isinstance(v, FarTimestamp) or v.tzinfo
                                              else v.replace(tzinfo=dt.timezone.utc)))
    dumper = adapters.get_dumper_by_oid(t.oid, Format.BINARY)(_PY_TYPE[n])
    if n == "numeric":
        return lambda v: bytes(dumper.dump(v if isinstance(v, Decimal) else Decimal(str(v))))
    return lambda v: bytes(dumper.dump(v))


def _interval_binary(v: Interval) -> bytes:
    return struct.pack("!qii", v.micros, v.days, v.months)


def _array_encoder(t: SqlType) -> Encoder:
    elem = encoder(t.element, True)
    elem_oid = t.element.oid

    def enc(v: list) -> bytes:
        dims = array_dims(v)
        if not dims:
            return struct.pack("!iii", 0, 0, elem_oid)
        flat = flatten_array(v) if len(dims) > 1 else v
        parts = [struct.pack("!iii", len(dims), int(None in flat), elem_oid)]
        parts.extend(struct.pack("!ii", d, 1) for d in dims)
        for x in flat:
            if x is None:
                parts.append(b"\xff\xff\xff\xff")
            else:
                b = elem(x)
                parts.append(struct.pack("!i", len(b)) + b)
        return b"".join(parts)

    return enc


def flatten_array(v: list) -> list:
    """The elements of an array value (nested lists) in storage order (row-major)."""
    return [x for e in v for x in (flatten_array(e) if isinstance(e, list) else (e,))]


def _nest(flat: list, dims: list[int]) -> list:
    """Nested lists of the sizes ``dims`` over ``flat`` (row-major)."""
    if len(dims) == 1:
        return flat
    step = len(flat) // dims[0]
    return [_nest(flat[i * step : (i + 1) * step], dims[1:]) for i in range(dims[0])]


#: types whose binary form (``*send``) is their text: json (114, then read as jsonb,
#: which Materialize's json is; jsonb's own binary form has a version byte first),
#: "char" (18) and xml (142) (untyped literals)
TEXT_SEND_OIDS = frozenset((114, 18, 142))
#: OID -> byte width of the binary integer types
_INT_SIZES = {21: 2, 23: 4, 20: 8}
#: type OID -> the length of its binary form, for fixed-width types (bool, int2, int4,
#: int8, oid, float4, float8, date, time, timestamp, timestamptz, interval, uuid): a
#: parameter of another length is refused, as PostgreSQL's ``*recv`` functions refuse
#: trailing or missing bytes
_FIXED_SIZES = {**_INT_SIZES, 16: 1, 26: 4, 700: 4, 701: 8, 1082: 4, 1083: 8, 1114: 8, 1184: 8, 1186: 16, 2950: 16}


def binary_param_text(oid: int, raw: bytes, fmt: TextFormat = DEFAULT_FORMAT) -> str:
    """The text form of a binary Bind parameter of type ``oid``, which the planner then
    reads as a literal of the parameter's type (one path for both formats), under the
    session's settings ``fmt`` (which that reading uses too).

    Raises:
        SqlError 0A000 for a type without binary input here; 22P03 for bad data,
        including a fixed-width value of the wrong length (an int4 of 3 or 8 bytes:
        PostgreSQL's "incorrect binary data format in bind parameter N").
    """
    size = _FIXED_SIZES.get(oid)
    if size is not None and len(raw) != size:
        raise SqlError(INVALID_BINARY_REPRESENTATION, "incorrect binary data format",
                       detail=f"A value of type OID {oid} has {size} bytes in binary format, not {len(raw)}.")
    if oid in _INT_SIZES:  # int2/int4/int8 (int2recv...): drivers' commonest parameter
        return str(int.from_bytes(raw, "big", signed=True))
    if oid in TEXT_SEND_OIDS:
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as e:
            raise SqlError(INVALID_BINARY_REPRESENTATION, f"invalid byte sequence: {e}") from None
    t = type_from_oid(oid)
    if t is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"binary parameters of type OID {oid} are not supported")
    try:
        if oid == 199:  # json[]: its elements' binary form is their text (no jsonb version byte)
            return format_text(map_elements(_array_decode(SqlType("_text"), raw), parse_jsonb), t)
        return format_text(decode_binary(t, raw), t, fmt)
    except (struct.error, ValueError, IndexError) as e:
        raise SqlError(INVALID_BINARY_REPRESENTATION, f"incorrect binary data format for type {t.sql()}: {e}") from None


def decode_binary(t: SqlType, raw: bytes):
    """A binary value of ``t`` (``*recv``) as the internal Python value."""
    if t.is_array:
        return _array_decode(t, raw)
    n = t.name
    if t.category in ("S", "X"):
        return raw.decode("utf-8")
    if n == "bytea":
        return bytes(raw)
    if n == "uuid":
        return str(uuid.UUID(bytes=bytes(raw)))
    if n == "jsonb":
        if raw[:1] != b"\x01":
            raise ValueError("unsupported jsonb version number")
        return parse_jsonb(bytes(raw[1:]).decode("utf-8"))
    if n == "mz_timestamp":
        return struct.unpack("!Q", raw)[0]
    if n == "interval":
        micros, days, months = struct.unpack("!qii", raw)
        return Interval(months, days, micros)
    if n == "date":
        return date_from_days(struct.unpack("!i", raw)[0])
    if n in ("timestamp", "timestamptz"):
        return timestamp_from_micros(struct.unpack("!q", raw)[0], n == "timestamptz")
    v = adapters.get_loader(t.oid, Format.BINARY)(t.oid).load(raw)
    if n == "timestamptz":
        v = v.astimezone(dt.timezone.utc)
    return v


def _array_decode(t: SqlType, raw: bytes) -> list:
    """``array_recv``: ndim, has-null flag, element OID, (size, lower bound) per
    dimension, then the elements; several dimensions give nested lists (lower bounds
    are dropped: arrays here start at 1)."""
    ndim, _, _ = struct.unpack_from("!iii", raw, 0)
    if ndim == 0:
        return []
    if not 0 < ndim <= 6:  # PostgreSQL's MAXDIM
        raise ValueError(f"invalid number of dimensions: {ndim}")
    dims = [struct.unpack_from("!ii", raw, 12 + 8 * i)[0] for i in range(ndim)]
    total = 1
    for d in dims:
        total *= d
    values, _ = length_prefixed(raw, 12 + 8 * ndim, total)
    return _nest([None if v is None else decode_binary(t.element, v) for v in values], dims)



# -- DataRows straight from Arrow ------------------------------------------------------

#: Arrow-backed types whose text form pyarrow computes (PostgreSQL's int2out/int4out/
#: int8out print plain decimal digits, as Arrow's cast to string does)
_ARROW_TEXT_INTS = ("int2", "int4", "int8", "oid")
#: text-like types whose Arrow string is already their wire form, text or binary
_ARROW_STRINGS = ("text", "varchar", "bpchar", "name", "unknown")
#: binary fixed-width types: big-endian numpy dtype of the wire form
_ARROW_FIXED = {"int2": ">i2", "int4": ">i4", "int8": ">i8", "oid": ">u4", "float4": ">f4", "float8": ">f8",
                "bool": "u1"}


def arrow_data_rows(table, types: list[SqlType], binary: list[bool], fmt: TextFormat = DEFAULT_FORMAT) -> bytes:
    """DataRow messages (PostgreSQL 55.7) for every row of the Arrow ``table``, as one
    buffer. Integer, boolean and string columns (and binary floats) are encoded with
    pyarrow compute and numpy, without a Python object per value; other columns go
    through ``encoder``, value by value. Memory: a few times the batch's size."""
    import numpy as np

    n = table.num_rows
    if n == 0:
        return b""
    cols = [_arrow_column(table.column(i), t, b, fmt) for i, (t, b) in enumerate(zip(types, binary))]
    # size of each field: a 4-byte length, then the value (nothing for NULL)
    sizes = [4 + np.maximum(lens, 0) for lens, _ in cols]
    row_size = 7 + (np.sum(sizes, axis=0) if sizes else np.zeros(n, dtype=np.int64))
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(row_size[:-1], out=starts[1:])
    out = np.empty(int(row_size.sum()), dtype=np.uint8)
    out[starts] = ord("D")
    _put_be(out, starts + 1, (row_size - 1).astype(">i4"))
    _put_be(out, starts + 5, np.full(n, len(types), dtype=">i2"))
    pos = starts + 7
    for (lens, fill), size in zip(cols, sizes):
        _put_be(out, pos, lens.astype(">i4"))
        fill(out, pos + 4)
        pos = pos + size
    return out.tobytes()


def _put_be(out, at, values) -> None:
    """Write each big-endian value of ``values`` (a numpy array) at offset ``at[i]``."""
    import numpy as np

    w = values.dtype.itemsize
    out[(at[:, None] + np.arange(w)).ravel()] = values.view(np.uint8)


def _arrow_column(col, t: SqlType, binary: bool, fmt: TextFormat = DEFAULT_FORMAT):
    """``(lengths, fill)`` for one column: each value's wire length (-1 for NULL) and a
    function writing the values into the output at given offsets."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    nulls = arr.is_null().to_numpy(zero_copy_only=False)
    n = t.name
    if binary and t.category not in ("S", "X") and n in _ARROW_FIXED and not t.is_array:
        dtype = np.dtype(_ARROW_FIXED[n])
        vals = arr.fill_null(False if n == "bool" else 0).to_numpy(zero_copy_only=False).astype(dtype)
        w = dtype.itemsize
        lens = np.where(nulls, -1, w)
        valid = ~nulls

        def fill_fixed(out, at):
            out[(at[valid][:, None] + np.arange(w)).ravel()] = vals[valid].view(np.uint8)

        return lens, fill_fixed
    if (not binary or t.category in ("S", "X")) and n in _ARROW_TEXT_INTS and pa.types.is_integer(arr.type):
        arr = pc.cast(arr, pa.string())
    elif not binary and n == "bool" and pa.types.is_boolean(arr.type):
        arr = pc.if_else(arr, "t", "f")
    elif n in _ARROW_STRINGS and pa.types.is_string(arr.type):
        pass
    else:
        enc = encoder(t, binary, fmt)
        from sqlfront.sequence.result import column_values

        arr = pa.array([None if v is None else enc(v) for v in column_values(arr, t)], type=pa.binary())
    return _variable(arr, nulls)


def _variable(arr, nulls):
    """``(lengths, fill)`` of a string or binary Arrow array (32-bit offsets)."""
    import numpy as np

    _, offs_buf, data_buf = arr.buffers()[:3]
    offsets = np.frombuffer(offs_buf, dtype=np.int32)[arr.offset : arr.offset + len(arr) + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    lens = np.where(nulls, 0, offsets[1:] - offsets[:-1])
    cum = np.zeros(len(lens), dtype=np.int64)
    np.cumsum(lens[:-1], out=cum[1:])
    total = int(lens.sum())

    def fill_variable(out, at):
        if total == 0:
            return
        row = np.repeat(np.arange(len(lens)), lens)
        j = np.arange(total, dtype=np.int64) - cum[row]
        out[at[row] + j] = data[offsets[:-1][row] + j]

    return np.where(nulls, -1, lens), fill_variable


def chunk_data_rows(chunk, types: list[SqlType], binary: list[bool], fmt: TextFormat = DEFAULT_FORMAT) -> bytes:
    """DataRow messages for a result chunk: an Arrow table (``arrow_data_rows``) or a
    list of rows of Python values; text dates, times and intervals under ``fmt``."""
    if isinstance(chunk, list):
        return b"".join(data_rows(chunk, types, binary, fmt))
    return arrow_data_rows(chunk, types, binary, fmt)
