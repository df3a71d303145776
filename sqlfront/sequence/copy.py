"""COPY sequencing: ``COPY ... TO STDOUT`` (a peek whose rows the wire layer sends as
CopyData), ``COPY t FROM STDIN`` (the wire layer feeds the data to a ``CopyLoad``,
which parses it in batches, writes its columns to Blob every few MB and appends them all
at the end) and ``COPY t FROM 'file'`` (read by ``spark_exec.load``). Parsing the data
itself is ``sqlfront.copy``'s."""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import pglast
import pyarrow as pa
from pglast import ast

from catalog.errors import (
    SqlError, DUPLICATE_COLUMN, FEATURE_NOT_SUPPORTED, UNDEFINED_COLUMN, WRONG_OBJECT_TYPE,
)
from catalog.snapshot import MaterializedView, Source, Subsource
from persist import Batch, ShardSealed
from planner.writes import check_not_null
from spark_exec.load import read_file
from sqlfront.copy import allowed_copy_from_path
from sqlfront.parse import quote_ident
from sqlfront.sequence.peek import select
from sqlfront.sequence.result import CopyIn, CopyOut, Result, arrow_rows, rows_to_arrow
from sqlfront.sequence.writes import BIG_APPEND_BYTES, fill_defaults, replanned, write

if TYPE_CHECKING:
    from sqlfront.session import Session


@replanned
def copy(s: Session, stmt: ast.CopyStmt, sql: str, params):
    """A COPY statement: CopyOut (TO STDOUT), CopyIn (FROM STDIN) or, for FROM a file
    under ``--copy-from-dir``, the Result of the write (PostgreSQL's COPY reference).

    Raises:
        SqlError 0A000 for COPY TO a file, unknown formats and FROM a file with a column
        list; 42809 for a system table; 42703/42701 for a bad column list."""
    opts = _copy_options(stmt)
    if not stmt.is_from:
        if stmt.filename is not None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "COPY TO a file is not supported; use COPY ... TO STDOUT")
        if opts.get("format", "text") not in ("text", "csv", "binary"):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"COPY format \"{opts['format']}\" not recognized")
        if stmt.query is not None:
            query = stmt.query
        else:
            query = pglast.parse_sql(f"SELECT * FROM {quote_ident(stmt.relation.relname)}")[0].stmt
        r = select(s, query, None, None)
        return CopyOut(r.columns, [], opts.get("format", "text"), opts.get("delimiter"), opts.get("null"),
                       opts.get("header", "false") in ("true", "on", "1"), stream=r.stream)
    snap = s.catalog
    rel = snap.resolve_relation(stmt.relation.schemaname, stmt.relation.relname)
    if rel.builtin:
        raise SqlError(WRONG_OBJECT_TYPE, f'cannot copy to system table "{rel.name}"')
    if isinstance(rel, MaterializedView):
        raise SqlError(WRONG_OBJECT_TYPE, f'cannot copy to materialized view "{rel.name}"')
    if isinstance(rel, (Source, Subsource)):
        raise SqlError(WRONG_OBJECT_TYPE, f'cannot copy to source "{rel.name}"')
    fmt = opts.get("format", "text").lower()
    positions = None
    if stmt.attlist:
        if stmt.filename is not None:
            raise SqlError(FEATURE_NOT_SUPPORTED, "COPY FROM a file with a column list is not supported")
        names = [c.name for c in rel.columns]
        positions = []
        for a in stmt.attlist:
            if a.sval not in names:
                raise SqlError(UNDEFINED_COLUMN, f'column "{a.sval}" of relation "{rel.name}" does not exist')
            if names.index(a.sval) in positions:
                raise SqlError(DUPLICATE_COLUMN, f'column "{a.sval}" specified more than once')
            positions.append(names.index(a.sval))
        positions = tuple(positions)
    if stmt.filename is None:
        if fmt not in ("text", "csv", "binary"):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"COPY FROM STDIN supports text, csv and binary, not {fmt}")
        return CopyIn(rel, fmt, opts.get("delimiter"), opts.get("null"),
                      opts.get("header", "false").lower() in ("true", "on", "1"), positions, stmt=stmt)
    if fmt == "text":
        fmt, delimiter = "csv", opts.get("delimiter", "\t")
        null = opts.get("null", "\\N")
    else:
        delimiter, null = opts.get("delimiter", ","), opts.get("null")
    path = allowed_copy_from_path(stmt.filename, s.env.config.copy_from_dirs)
    data = read_file(rel, path, fmt, header=opts.get("header", "false").lower() in ("true", "on", "1"),
                     delimiter=delimiter, null=null)
    write(s, rel, data)
    return Result(f"COPY {data.num_rows}")


#: bytes of COPY FROM STDIN data parsed at a time (a longer CopyData message is parsed
#: in pieces): what a stream holds of Python rows is bounded by this, whatever the
#: COPY's or the message's size
COPY_BATCH_BYTES = 64 << 10
#: memory that parsing one batch takes at its peak, per byte of data: small rows become
#: Python tuples of objects (measured 20 to 41 times the text for rows of one to three
#: short columns)
PARSE_BYTES_PER_BYTE = 48
#: Arrow bytes a COPY FROM STDIN gathers before it writes them to Blob as a batch of its
#: own (not yet part of the table: :meth:`CopyLoad.finish` appends every batch at one
#: timestamp, all or none): a stream holds about this much, whatever the COPY's size
COPY_SPILL_BYTES = 8 << 20
#: memory a stream takes besides what it counts, in bytes: what the allocators keep of
#: what its parsing and encoding freed, its messages' buffers, its thread (measured with
#: bench/copy_memory.py, 20 streams of 40 MB: their peak RSS growth was 13 MB a stream
#: over what they counted while batches had dictionaries; without, 19 MB a stream in all)
STREAM_OVERHEAD_BYTES = 16 << 20
#: bytes a stream holds of the budget from its start to its end, at least: what it takes
#: at most when its rows are not unusual (its overhead, the columns of a spill and their
#: encoding, a batch being parsed). Taken before the client is asked for data, it makes
#: a stream that finds the budget taken wait before it holds anything, instead of
#: holding part and waiting for more (streams waiting on each other until their wait
#: times pass).
STREAM_BYTES = STREAM_OVERHEAD_BYTES + 2 * COPY_SPILL_BYTES + COPY_BATCH_BYTES * PARSE_BYTES_PER_BYTE


class CopyLoad:
    """One ``COPY t FROM STDIN`` being received (PostgreSQL's COPY reference; Materialize's
    COPY FROM STDIN). :meth:`feed` takes the CopyData payloads; every ``COPY_BATCH_BYTES``
    of them are parsed, given their defaults, checked and turned into Arrow columns;
    every ``COPY_SPILL_BYTES`` of those are written to Blob as a batch; :meth:`finish`
    appends all of them at one timestamp (all rows or none: nothing is visible before).
    :meth:`close` gives back what the COPY held and deletes the batches it did not
    append; call it however the COPY ends.

    Memory: the data not yet parsed, one batch in Python rows, the Arrow columns not yet
    written (at most about ``COPY_SPILL_BYTES``) and their encoding while they are
    written, plus ``STREAM_OVERHEAD_BYTES``: drawn from the server's COPY budget
    (``env.copy_budget``), ``STREAM_BYTES`` of it (or the whole budget, if smaller) at
    once when the load is made, before the client sends data, and more only for
    unusual rows (one longer than a batch). A stream waits for budget others hold: for
    its first share until its statement_timeout (none by default) or a cancel, for more
    ``sqlfront.memory_budget.BUDGET_WAIT_S``; it fails with 53200 when it alone needs
    more than the whole budget or waits past its wait time.
    ``encoding``: the client's encoding, which text and CSV data is in. ``first_wait_s``:
    seconds left of the COPY statement's timeout (None: none).

    Raises (from feed and finish):
        what ``sqlfront.copy.CopyReader`` raises; 23502 for a NULL in a NOT NULL column;
        53200 (out_of_memory) from the budget.
    """

    def __init__(self, s: Session, c: CopyIn, encoding: str = "UTF8", first_wait_s: float | None = None):
        from sqlfront.copy import CopyReader

        self.s, self.c, self.encoding = s, c, encoding
        self.reader = CopyReader(c.table, c.fmt, c.delimiter, c.null, c.header, c.positions, encoding,
                                 s.vars.text_format())
        self._raw = bytearray()
        self._parts: list[pa.Table] = []
        self._arrow_bytes = 0
        #: batches written to Blob and not yet appended (close deletes them)
        self._batches: list[Batch] = []
        self.rows = 0
        self._defaults = None
        self._budget = s.env.copy_budget.reservation()
        self._floor = min(STREAM_BYTES, s.env.copy_budget.total)
        # Waiting for its share the stream holds nothing (nobody waits on it): it waits
        # as a statement waits for a lock, until the COPY statement's deadline
        # (``first_wait_s``: what is left of it; None: no timeout) or a cancel.
        self._reserve(0, wait_s=math.inf if first_wait_s is None else first_wait_s)

    def _reserve(self, working: int, wait_s: float | None = None) -> None:
        """Hold what the stream holds now plus ``working`` bytes (of parsing, encoding),
        and at least its floor, waiting ``wait_s`` seconds at most (None: the budget's
        wait time)."""
        s = self.s
        self._budget.resize(max(self._floor, STREAM_OVERHEAD_BYTES + len(self._raw) + self._arrow_bytes + working),
                            cancelled=lambda: s.cancel_event.is_set() or s.client_gone(), wait_s=wait_s)

    def feed(self, data: bytes) -> None:
        """Take the next CopyData payload; parse each batch once it is here."""
        self._raw += data
        self._reserve(0)
        while len(self._raw) >= COPY_BATCH_BYTES:
            self._parse(COPY_BATCH_BYTES, final=False)

    def _parse(self, n: int, final: bool) -> None:
        """Parse the first ``n`` bytes not yet parsed (with ``final``: and the end)."""
        chunk = bytes(self._raw[:n])
        del self._raw[:n]
        # what is parsed now: the batch and the unfinished record before it (a record
        # longer than a batch is held whole, and charged as it grows)
        self._reserve((len(chunk) + self.reader.pending) * PARSE_BYTES_PER_BYTE)
        rows = self.reader.feed(chunk)
        del chunk
        if final:
            rows += self.reader.finish()
        if rows:
            self._append(rows)
        del rows
        if self._arrow_bytes >= COPY_SPILL_BYTES:
            self._spill()
        self._reserve(0)

    def _append(self, rows: list[tuple]) -> None:
        c, s = self.c, self.s
        if c.positions is not None:  # the columns the data lacks get their defaults
            if self._defaults is None:
                from planner.writes import default_exprs

                defaults = default_exprs(s.catalog, c.table, s.statement.plan)
                self._defaults = [(j, e) for j, e in enumerate(defaults) if e is not None and j not in c.positions]
            if self._defaults:
                rows = fill_defaults(s, rows, self._defaults)
        for r in rows:
            check_not_null(c.table, r)
        part = rows_to_arrow(c.table, rows)
        self._parts.append(part)
        self._arrow_bytes += part.nbytes
        self.rows += len(rows)

    def _spill(self) -> None:
        """Write the Arrow columns held to Blob as a batch and drop them."""
        if not self._parts:
            return
        # Encoding (Parquet without dictionaries, then its bytes) takes up to about the
        # columns' size again.
        self._reserve(self._arrow_bytes)
        data = pa.concat_tables(self._parts)
        self._batches.append(self.s.env.persist.write_batch(self.c.table.shard_id, data, dictionary=False))
        del data
        self._parts, self._arrow_bytes = [], 0
        # What the allocator keeps of what was freed goes back to the OS (malloc_trim;
        # mimalloc's: this thread's heap): between batches that is most of a stream's
        # memory, uncounted.
        pa.default_memory_pool().release_unused()

    def finish(self) -> Result:
        """Parse what is left and write every row (at COMMIT in a transaction block).
        When the table changed since the COPY was planned (an ALTER TABLE), the COPY is
        planned again and its rows read for the table as it is now (``replanned``)."""
        self._parse(len(self._raw), final=True)
        # Writing encodes the columns (Parquet) while they are held.
        self._reserve(self._arrow_bytes)
        replanned(self._write)(self.s)
        return Result(f"COPY {self.rows}")

    def _write(self, s: Session) -> None:
        if self.c.stmt is not None and s.catalog.tables.get(self.c.table.id) != self.c.table:
            self._replan()
        if not self._batches and self._arrow_bytes < BIG_APPEND_BYTES:  # appended with others' small writes
            data = pa.concat_tables(self._parts) if self._parts else rows_to_arrow(self.c.table, [])
            write(s, self.c.table, data)
            return
        self._spill()  # the rest too: the batches are appended together
        batches, self._batches = self._batches, []
        try:
            write(s, self.c.table, batches, keep_batches=True)
        except ShardSealed:
            self._batches = batches  # nothing was appended: read again for the new table
            raise
        # Otherwise the batches are the table's now, or the transaction's; on another
        # error their fate is unknown: left to the startup GC, not deleted.

    def _replan(self) -> None:
        """Plan the COPY again and read its rows so far, as text, for the table as it is."""
        from sqlfront.copy import CopyReader, format_copy_row

        old = self.c
        keep = old.positions if old.positions is not None else range(len(old.table.columns))
        types = [old.table.columns[i].type for i in keep]
        parts, self._parts, self._arrow_bytes, self.rows, self._defaults = self._parts, [], 0, 0, None
        batches, self._batches = self._batches, []
        self.c = copy(self.s, old.stmt, "", None)
        persist = self.s.env.persist

        def old_rows():
            """The rows so far, about ``COPY_BATCH_BYTES`` of Arrow at a time (a batch
            read back is ``COPY_SPILL_BYTES``: its text parsed at once would take ~48x)."""
            for part in itertools.chain((persist.read_batch(b) for b in batches), parts):
                step = max(1, COPY_BATCH_BYTES * part.num_rows // max(part.nbytes, 1))
                for at in range(0, part.num_rows, step):
                    yield part.slice(at, step)

        try:
            for part in old_rows():
                reader = CopyReader(self.c.table, "text", None, None, False, self.c.positions)
                data = b"".join(format_copy_row(tuple(r[i] for i in keep), types) for r in arrow_rows(part))
                self._append(reader.feed(data) + reader.finish())
                if self._arrow_bytes >= COPY_SPILL_BYTES:
                    self._spill()
        finally:
            for b in batches:  # written for the old table: never appended
                persist.delete_batch(b)

    def close(self) -> None:
        """Drop the rows held, delete the batches not appended and give their memory back
        to the budget."""
        self._parts = []
        self._raw = bytearray()
        batches, self._batches = self._batches, []
        for b in batches:
            self.s.env.persist.delete_batch(b)
        self._budget.release()


def _copy_options(stmt: ast.CopyStmt) -> dict[str, str]:
    opts = {}
    for o in stmt.options or ():
        v = o.arg
        if isinstance(v, ast.String):
            v = v.sval
        elif isinstance(v, ast.Integer):
            v = str(v.ival)
        elif isinstance(v, ast.Boolean):
            v = "true" if v.boolval else "false"
        elif v is None:
            v = "true"
        opts[o.defname.lower()] = str(v).lower() if o.defname.lower() in ("format", "header") else str(v)
    return opts
