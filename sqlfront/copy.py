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

from catalog.errors import SqlError, BAD_COPY_FILE_FORMAT, INSUFFICIENT_PRIVILEGE
from catalog.snapshot import Table
from catalog.textio import DEFAULT_FORMAT, TextFormat, format_text, parse_text
from planner.consteval import cast_value
from sqlfront.encoding import decode, no_nul

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


_UNESCAPE = {ord("b"): 8, ord("f"): 12, ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("v"): 11}
_OCTAL = b"01234567"
_HEX = b"0123456789abcdefABCDEF"


def _unescape(field: str) -> str:
    r"""A field of COPY's text format with its backslash escapes decoded (the COPY
    reference page, "Text Format"): ``\b \f \n \r \t \v``, ``\digits`` (one to three
    octal digits) and ``\xdigits`` (one or two hex digits) give that byte; a backslash
    before any other character gives the character. The bytes are then read as UTF-8.

    Raises:
        SqlError 22021 when the result is not UTF-8 or holds a NUL byte (``\0``)."""
    if "\\" not in field:
        return field
    raw = field.encode("utf-8")
    out, i, n = bytearray(), 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch != 0x5C or i + 1 == n:  # not a backslash (or a trailing one, kept)
            out.append(ch)
            i += 1
            continue
        nxt = raw[i + 1]
        if nxt in _OCTAL:
            j = i + 1
            while j < min(i + 4, n) and raw[j] in _OCTAL:
                j += 1
            out.append(int(raw[i + 1 : j], 8) & 0xFF)
            i = j
        elif nxt == 0x78 and i + 2 < n and raw[i + 2] in _HEX:  # \x
            j = i + 2
            while j < min(i + 4, n) and raw[j] in _HEX:
                j += 1
            out.append(int(raw[i + 2 : j], 16))
            i = j
        else:
            out.append(_UNESCAPE.get(nxt, nxt))
            i += 2
    return no_nul(decode(bytes(out), "UTF8"))


def parse_copy(table: Table, data: bytes, fmt: str, delimiter: str | None, null: str | None,
               header: bool, columns: tuple[int, ...] | None = None) -> list[tuple]:
    """Rows of ``table`` from all the COPY data in ``fmt`` (text, csv or binary) at once;
    :class:`CopyReader` reads it in pieces. ``columns``: the positions of the columns
    the data has (a COPY column list); the others are NULL.

    Raises:
        what :meth:`CopyReader.feed` and :meth:`CopyReader.finish` raise.
    """
    reader = CopyReader(table, fmt, delimiter, null, header, columns)
    return reader.feed(data) + reader.finish()


_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


class CopyReader:
    """COPY FROM data (text, csv or binary) read in pieces: :meth:`feed` takes the next
    bytes and returns the rows of the records it completed (rows of ``table``'s width;
    the columns not in ``columns`` are NULL), keeping an unfinished record for the next
    call; :meth:`finish` checks that the data ended where a record does. Memory: the
    unfinished record plus the rows of one call.

    Text and CSV data is in ``encoding`` (the client's), read a record at a time (a
    record ends at a newline, in CSV one outside quotes; no client encoding has a
    newline or a quote inside a multibyte character).

    Raises (from feed and finish):
        SqlError 22P04 for a row with the wrong number of columns or bad binary framing;
        22021 for bytes that are not UTF-8 or a NUL byte; the types' input errors (22P02,
        22003, ...) for bad values, naming the line.
    """

    def __init__(self, table: Table, fmt: str, delimiter: str | None, null: str | None, header: bool,
                 columns: tuple[int, ...] | None = None, encoding: str = "UTF8", text: TextFormat = DEFAULT_FORMAT):
        self.table, self.fmt, self.encoding = table, fmt, encoding
        #: the session's settings text values are read under (TimeZone, IntervalStyle)
        self.text = text
        self.columns = columns
        positions = columns if columns is not None else tuple(range(len(table.columns)))
        self.positions = positions
        self.cols = [table.columns[i] for i in positions]
        if fmt == "csv":
            self.delimiter, self.null = delimiter or ",", "" if null is None else null
        else:
            self.delimiter, self.null = delimiter or "\t", "\\N" if null is None else null
        self.skip_header = header and fmt != "binary"
        #: records read so far (the line number errors name)
        self.lineno = 0
        #: the end-of-data marker (``\.``, or the binary trailer) was seen: the rest is ignored
        self.ended = False
        self._buf = bytearray()
        self._binary_started = False

    @property
    def pending(self) -> int:
        """Bytes held of an unfinished record."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[tuple]:
        """The rows of the records that ``data`` completes."""
        if self.ended:
            return []
        self._buf += data
        if self.fmt == "binary":
            rows = self._binary()
        else:
            cut = self._record_end()
            if cut == 0:
                return []
            chunk = bytes(self._buf[:cut])
            del self._buf[:cut]
            rows = self._text(chunk)
        return self._widen(rows)

    def finish(self) -> list[tuple]:
        """The rows of the last record (text and CSV data may end without a newline).

        Raises:
            SqlError 22P04 if binary data ends inside a tuple or without its trailer."""
        if self.ended:
            return []
        if self.fmt == "binary":
            if self._buf or not self._binary_started:
                raise _bad_binary(self.table, "unexpected EOF")
            return []
        chunk, self._buf = bytes(self._buf), bytearray()
        return self._widen(self._text(chunk)) if chunk else []

    def _record_end(self) -> int:
        """The length of the longest prefix of the buffer made of whole records."""
        buf = self._buf
        pos = buf.rfind(b"\n")
        if self.fmt != "csv" or pos < 0:
            return pos + 1
        # In CSV a newline inside quotes belongs to its field: a record ends at a newline
        # with an even number of quote characters before it.
        after = buf.count(b'"', pos)
        odd = (buf.count(b'"') - after) % 2
        while odd:
            prev = buf.rfind(b"\n", 0, pos)
            if prev < 0:
                return 0
            odd ^= buf.count(b'"', prev, pos) % 2
            pos = prev
        return pos + 1

    def _widen(self, rows: list[tuple]) -> list[tuple]:
        if self.columns is None:
            return rows
        width = len(self.table.columns)
        out = []
        for r in rows:
            full = [None] * width
            for i, v in zip(self.positions, r):
                full[i] = v
            out.append(tuple(full))
        return out

    def _text(self, chunk: bytes) -> list[tuple]:
        """Rows of whole records of text or CSV data."""
        text = no_nul(decode(chunk, self.encoding))
        if self.fmt == "csv":
            raw_rows = []
            for fields in csv.reader(io.StringIO(text), delimiter=self.delimiter, quotechar='"'):
                if self.skip_header:
                    self.skip_header = False
                    continue
                if fields == ["\\."]:
                    self.ended = True
                    break
                raw_rows.append([None if f == self.null else f for f in fields])
        else:
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if self.skip_header and lines:
                self.skip_header = False
                lines = lines[1:]
            raw_rows = []
            for line in lines:
                if line.rstrip("\r") == "\\.":
                    self.ended = True
                    break
                raw_rows.append([None if f == self.null else _unescape(f)
                                 for f in line.rstrip("\r").split(self.delimiter)])
        rows, cols = [], self.cols
        for fields in raw_rows:
            self.lineno += 1
            if len(fields) != len(cols):
                raise SqlError(BAD_COPY_FILE_FORMAT, f"{'extra data after last expected column' if len(fields) > len(cols) else 'missing data for column ' + repr(cols[len(fields)].name)}",
                               detail=f"COPY {self.table.name}, line {self.lineno}")
            try:
                rows.append(tuple(None if f is None else parse_text(f, c.type, False, self.text)
                                  for f, c in zip(fields, cols)))
            except SqlError as e:
                e.detail = f"COPY {self.table.name}, line {self.lineno}"
                raise
        return rows

    def _binary(self) -> list[tuple]:
        """COPY BINARY: signature, flags, header extension, then per tuple an int16 field
        count and length-prefixed fields in each type's binary (``*send``) form; -1 ends.
        Reads the whole tuples in the buffer and keeps the rest."""
        from sqlfront.pgtypes import decode_binary
        from sqlfront.protocol.buffer import ProtocolError, length_prefixed

        buf, pos = self._buf, 0
        if not self._binary_started:
            if len(buf) < 19:
                return []
            if not buf.startswith(_SIGNATURE):
                raise _bad_binary(self.table, "COPY file signature not recognized")
            (ext,) = struct.unpack_from("!i", buf, 15)
            if len(buf) < 19 + ext:
                return []
            pos, self._binary_started = 19 + ext, True
        rows, cols = [], self.cols
        view = bytes(buf)
        while pos + 2 <= len(view):
            (n,) = struct.unpack_from("!h", view, pos)
            if n == -1:
                self.ended = True
                pos = len(view)
                break
            if n != len(cols):
                raise SqlError(BAD_COPY_FILE_FORMAT, f"row field count is {n}, expected {len(cols)}",
                               detail=f"COPY {self.table.name}, line {self.lineno + 1}")
            try:
                fields, end = length_prefixed(view, pos + 2, n)
            except ProtocolError:
                break  # the tuple is not all here yet
            if end > len(view):
                break
            self.lineno += 1
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
            pos = end
        del buf[:pos]
        return rows


def _bad_binary(table: Table, what: str) -> SqlError:
    return SqlError(BAD_COPY_FILE_FORMAT, f"invalid COPY file format: {what}", detail=f"COPY {table.name}")


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def format_copy_row(row: tuple, types, text: TextFormat = DEFAULT_FORMAT) -> bytes:
    """One row of COPY's text format: tab-separated, ``\\N`` for NULL, backslash escapes;
    values under the session's settings ``text``."""
    return ("\t".join("\\N" if v is None else _escape(format_text(v, t, text)) for v, t in zip(row, types))
            + "\n").encode()


def copy_out_chunks(columns, row_chunks, fmt: str, delimiter: str | None, null: str | None, header: bool,
                    text: TextFormat = DEFAULT_FORMAT):
    """The CopyData payloads of ``COPY ... TO STDOUT`` in ``fmt`` (text, csv, binary):
    one per row, plus the header line or the binary signature and trailer. ``row_chunks``
    is an iterable of lists of rows, consumed once (a streamed result's chunks). Text and
    CSV values under the session's settings ``text`` (``catalog.textio.TextFormat``)."""
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
            yield (delim.join(null_s if v is None else _csv_field(format_text(v, t, text), delim, null_s)
                              for v, t in zip(row, types)) + "\n").encode()
        return
    if header:
        yield ("\t".join(n for n, _ in columns) + "\n").encode()
    for row in rows:
        yield format_copy_row(row, types, text)


def _csv_field(v: str, delim: str, null_s: str) -> str:
    if v == null_s or any(c in v for c in (delim, '"', "\n", "\r")) or v == "\\.":
        return '"' + v.replace('"', '""') + '"'
    return v
