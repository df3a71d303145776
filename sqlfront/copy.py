"""COPY's text and CSV formats (PostgreSQL's COPY command, "File Formats").

``parse_copy`` turns the bytes a client sent with ``COPY t FROM STDIN`` into rows of the
table's types; ``format_copy_row`` writes one row for ``COPY ... TO STDOUT``.
"""

from __future__ import annotations

import csv
import io

from catalog.errors import SqlError
from catalog.snapshot import Table
from catalog.textio import format_text, parse_text

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
               header: bool) -> list[tuple]:
    """Rows of ``table`` from COPY data in ``fmt`` (text or csv).

    Raises:
        SqlError 22P04 for a row with the wrong number of columns; the types' input
        errors (22P02, 22003, ...) for bad values, naming the line.
    """
    text = data.decode("utf-8")
    cols = table.columns
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
