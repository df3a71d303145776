"""COPY's text, CSV and binary formats (PostgreSQL's COPY command, "File Formats").

``parse_copy`` turns the bytes a client sent with ``COPY t FROM STDIN`` into rows of the
table's types; ``format_copy_row`` writes one row for ``COPY ... TO STDOUT``;
``allowed_copy_from_path`` decides which server files ``COPY t FROM 'path'`` may read.
"""

from __future__ import annotations

import csv
import io
import os
import struct
from pathlib import Path
from typing import Sequence

from catalog.errors import SqlError, INSUFFICIENT_PRIVILEGE
from catalog.snapshot import Table
from catalog.textio import format_text, parse_text
from planner.consteval import cast_value

def allowed_copy_from_path(path: str, allowed_dirs: Sequence[Path]) -> str:
    """The real path (symlinks and ``..`` resolved, relative paths taken from the server's
    working directory) of ``path`` if it lies under one of ``allowed_dirs`` (directories
    already resolved with realpath, from ``sqlfront serve --copy-from-dir``).

    Reading server files is a privilege, as in PostgreSQL, where only roles with
    ``pg_read_server_files`` may ``COPY FROM`` a file (the COPY reference page, "Notes").
    The check comes before the file is opened, so a client cannot learn whether a file
    outside the allowed directories exists.

    Raises:
        SqlError 42501 (insufficient_privilege) if no directory is allowed or ``path`` is
        under none of them.
    """
    real = os.path.realpath(path)
    if any(os.path.commonpath([real, str(d)]) == str(d) for d in allowed_dirs):
        return real
    detail = (f'"{path}" is not under a directory this server allows COPY FROM to read.' if allowed_dirs
              else "This server allows COPY FROM to read no server files.")
    raise SqlError(INSUFFICIENT_PRIVILEGE, "permission denied to COPY from a file", detail=detail,
                   hint="Anyone can COPY from stdin; psql's \\copy command also works for anyone. "
                        "The server's operator can allow a directory with sqlfront serve --copy-from-dir DIR.")


_UNESCAPE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _unescape(field: str) -> str:
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        ch = field[i]
        if ch == "\\" and i + 1 < len(field):
            nxt = field[i + 1]
            out.append(_UNESCAPE.get(nxt, nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def parse_copy(table: Table, data: bytes, fmt: str, delimiter: str | None, null: str | None,
               header: bool, columns: tuple[int, ...] | None = None) -> list[tuple]:
    """Rows of ``table`` from COPY data in ``fmt`` (text, csv or binary). ``columns``:
    the positions of the columns the data has (a COPY column list); the others are NULL.

    Raises:
        SqlError 22P04 for a row with the wrong number of columns or bad binary framing;
        the types' input errors (22P02, 22003, ...) for bad values, naming the line.
    """
    positions = columns if columns is not None else tuple(range(len(table.columns)))
    cols = [table.columns[i] for i in positions]
    if fmt == "binary":
        rows = _parse_binary(table, cols, data)
    else:
        rows = _parse_text_rows(table, cols, data, fmt, delimiter, null, header)
    if columns is None:
        return rows
    width = len(table.columns)
    out = []
    for r in rows:
        full = [None] * width
        for i, v in zip(positions, r):
            full[i] = v
        out.append(tuple(full))
    return out


_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


def _parse_binary(table: Table, cols, data: bytes) -> list[tuple]:
    """COPY BINARY: signature, flags, header extension, then per tuple an int16 field
    count and length-prefixed fields in each type's binary (``*send``) form; -1 ends."""
    from sqlfront.pgtypes import decode_binary, length_prefixed

    bad = lambda what: SqlError("22P04", f"invalid COPY file format: {what}",  # noqa: E731
                                detail=f"COPY {table.name}")
    if not data.startswith(_SIGNATURE):
        raise bad("COPY file signature not recognized")
    try:
        flags, ext = struct.unpack_from("!ii", data, 11)
        pos = 19 + ext
        rows = []
        while True:
            (n,) = struct.unpack_from("!h", data, pos)
            pos += 2
            if n == -1:
                return rows
            if n != len(cols):
                raise SqlError("22P04", f"row field count is {n}, expected {len(cols)}",
                               detail=f"COPY {table.name}, line {len(rows) + 1}")
            fields, pos = length_prefixed(data, pos, n)
            row = []
            for c, raw in zip(cols, fields):
                if raw is None:
                    row.append(None)
                    continue
                t = c.type
                value = decode_binary(t.unconstrained() if not t.is_array else t, raw)
                # Apply the column's typmod (numeric scale, varchar length, timestamp(p),
                # interval fields) as an assignment does.
                modified = t.precision is not None or t.scale is not None
                row.append(cast_value(value, t.unconstrained(), t, explicit=False) if modified else value)
            rows.append(tuple(row))
    except struct.error:
        raise bad("unexpected EOF") from None


def _parse_text_rows(table: Table, cols, data: bytes, fmt: str, delimiter: str | None, null: str | None,
                     header: bool) -> list[tuple]:
    text = data.decode("utf-8")
    rows = []
    if fmt == "csv":
        delim = delimiter or ","
        reader = csv.reader(io.StringIO(text), delimiter=delim, quotechar='"')
        lines = list(reader)
        if header and lines:
            lines = lines[1:]
        null = "" if null is None else null
        raw_rows = []
        for fields in lines:
            if fields == ["\\."]:
                break
            raw_rows.append([None if f == null else f for f in fields])
    else:
        delim = delimiter or "\t"
        null = "\\N" if null is None else null
        raw_rows = []
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if header and lines:
            lines = lines[1:]
        for line in lines:
            if line == "\\.":
                break
            raw_rows.append([None if f == null else _unescape(f) for f in line.rstrip("\r").split(delim)])
    for lineno, fields in enumerate(raw_rows, start=1):
        if len(fields) != len(cols):
            raise SqlError("22P04", f"{'extra data after last expected column' if len(fields) > len(cols) else 'missing data for column ' + repr(cols[len(fields)].name)}",
                           detail=f"COPY {table.name}, line {lineno}")
        try:
            rows.append(tuple(None if f is None else parse_text(f, c.type, explicit=False)
                              for f, c in zip(fields, cols)))
        except SqlError as e:
            e.detail = f"COPY {table.name}, line {lineno}"
            raise
    return rows


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def format_copy_row(row: tuple, types) -> bytes:
    """One row of COPY's text format: tab-separated, ``\\N`` for NULL, backslash escapes."""
    return ("\t".join("\\N" if v is None else _escape(format_text(v, t)) for v, t in zip(row, types)) + "\n").encode()


def copy_out_chunks(columns, row_chunks, fmt: str, delimiter: str | None, null: str | None, header: bool):
    """The CopyData payloads of ``COPY ... TO STDOUT`` in ``fmt`` (text, csv, binary):
    one per row, plus the header line or the binary signature and trailer. ``row_chunks``
    is an iterable of lists of rows, consumed once (a streamed result's chunks)."""
    types = [t for _, t in columns]
    rows = (r for chunk in row_chunks for r in chunk)
    if fmt == "binary":
        from sqlfront.pgtypes import row_bodies

        # The header (signature, flags, extension length) travels with the first row, as
        # PostgreSQL sends it; clients parse it from the first CopyData.
        header_bytes = _SIGNATURE + b"\x00\x00\x00\x00\x00\x00\x00\x00"
        for chunk in row_chunks:
            for body in row_bodies(chunk, types, [True] * len(types)):
                yield header_bytes + body
                header_bytes = b""
        yield header_bytes + b"\xff\xff"  # the trailer (with the header if there were no rows)
        return
    if fmt == "csv":
        delim, null_s = delimiter or ",", "" if null is None else null
        if header:
            yield (delim.join(_csv_field(n, delim, null_s) for n, _ in columns) + "\n").encode()
        for row in rows:
            # NULL is the null string unquoted; a value that looks like it is quoted.
            yield (delim.join(null_s if v is None else _csv_field(format_text(v, t), delim, null_s)
                              for v, t in zip(row, types)) + "\n").encode()
        return
    if header:
        yield ("\t".join(n for n, _ in columns) + "\n").encode()
    for row in rows:
        yield format_copy_row(row, types)


def _csv_field(v: str, delim: str, null_s: str) -> str:
    if v == null_s or any(c in v for c in (delim, '"', "\n", "\r")) or v == "\\.":
        return '"' + v.replace('"', '""') + '"'
    return v
