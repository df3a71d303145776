"""COPY FROM data read in pieces (sqlfront.copy.CopyReader): any split of the bytes gives
the rows the whole gives, text escapes as PostgreSQL's COPY decodes them, and NUL bytes
refused (22021)."""

from __future__ import annotations

import struct

import pytest

from catalog.errors import SqlError
from catalog.snapshot import Column, Table
from catalog.types import INT4, TEXT
from sqlfront.copy import CopyReader, parse_copy

T = Table("u1", "public", "t", (Column("a", INT4), Column("b", TEXT)), "s1")


def _in_pieces(data: bytes, fmt: str, size: int, **kw) -> list[tuple]:
    r = CopyReader(T, fmt, None, None, kw.get("header", False), kw.get("columns"))
    rows = []
    for i in range(0, len(data), size):
        rows += r.feed(data[i : i + size])
    return rows + r.finish()


def _binary(rows) -> bytes:
    out = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
    for a, b in rows:
        out += struct.pack("!h", 2) + struct.pack("!ii", 4, a)
        out += struct.pack("!i", -1) if b is None else struct.pack("!i", len(b.encode())) + b.encode()
    return out + b"\xff\xff"


CASES = [
    ("text", b"1\tone\n2\t\\N\n3\tt\\tab\n", [(1, "one"), (2, None), (3, "t\tab")]),
    ("text", b"1\tno newline at the end", [(1, "no newline at the end")]),
    ("csv", b'1,"a\nb, ""c"""\n2,\n3,x', [(1, 'a\nb, "c"'), (2, None), (3, "x")]),
    ("binary", _binary([(1, "é"), (2, None), (3, "x" * 50)]), [(1, "é"), (2, None), (3, "x" * 50)]),
]


@pytest.mark.parametrize("fmt,data,rows", CASES)
def test_any_split_of_the_data_gives_the_same_rows(fmt, data, rows):
    assert parse_copy(T, data, fmt, None, None, False) == rows
    for size in (1, 2, 3, 7, 16):
        assert _in_pieces(data, fmt, size) == rows


def test_header_and_end_marker_and_column_list():
    assert _in_pieces(b"a\tb\n1\tx\n\\.\n2\tignored\n", "text", 3, header=True) == [(1, "x")]
    assert _in_pieces(b"x\n", "text", 1, columns=(1,)) == [(None, "x")]


def test_text_escapes_octal_and_hex_give_bytes():
    rows = parse_copy(T, b"1\t\\101\\x41\\x4g\\303\\251\\q\n", "text", None, None, False)
    assert rows == [(1, "AA\x04g\u00e9q")]


@pytest.mark.parametrize("data", [b"1\ta\\0b\n", b"1\t\\x00\n", b"1\ta\x00b\n", b'1,"a\x00"\n'])
def test_nul_bytes_are_invalid_byte_sequences(data):
    with pytest.raises(SqlError) as ei:
        parse_copy(T, data, "csv" if b'"' in data else "text", None, None, False)
    assert ei.value.sqlstate == "22021"
    assert ei.value.message == 'invalid byte sequence for encoding "UTF8": 0x00'


def test_truncated_binary_data_is_22p04_and_line_numbers_count_across_pieces():
    with pytest.raises(SqlError) as ei:
        _in_pieces(_binary([(1, "a")])[:-5], "binary", 4)
    assert ei.value.sqlstate == "22P04"
    with pytest.raises(SqlError) as ei:
        _in_pieces(b"1\ta\n2\tb\nthree\tc\n", "text", 4)
    assert ei.value.sqlstate == "22P02" and ei.value.detail == "COPY t, line 3"
