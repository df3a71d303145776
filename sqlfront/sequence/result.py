"""What sequencing a statement returns to the wire layer (Result, ResultStream, CopyIn,
CopyOut) and the conversions between Arrow tables and rows of Python values."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Callable, Union

import pyarrow as pa

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED
from catalog.snapshot import Table
from catalog.textio import format_text, parse_jsonb, parse_timetz
from catalog.types import FarDate, FarTimestamp, Interval, SqlType, arrow_schema

#: a piece of a result: an Arrow table (from a replica) or rows of Python values
Chunk = Union[pa.Table, list]


class ResultStream:
    """The rows of one result, pulled chunk by chunk as the client takes them, so the
    server holds at most one chunk (a replica's Arrow batch, ~10,000 rows) of it.

    ``pull()`` returns the next chunk or None at the end; ``on_close`` runs exactly once,
    when the stream ends, fails or is closed (a portal or cursor closed, a transaction
    ended, a connection dropped). Not thread-safe: one session drives it."""

    def __init__(self, columns: list[tuple[str, SqlType]], pull: Callable[[], Chunk | None],
                 on_close: Callable[[], None] | None = None):
        self.columns = columns
        self._pull = pull
        self._on_close = on_close
        self._buf: Chunk | None = None
        #: no rows are left
        self.done = False
        self.closed = False
        #: rows handed out so far
        self.rows_taken = 0
        #: called once, when the stream closes: ``f(the pull's error or None, rows_taken)``
        self.on_end: list[Callable[[BaseException | None, int], None]] = []
        self._error: BaseException | None = None

    def take(self, limit: int | None = None):
        """Yield chunks holding the next ``limit`` rows (all that are left when None or
        when fewer are left). Errors of the pull propagate; the stream is closed then."""
        remaining = limit
        while remaining is None or remaining > 0:
            chunk = self._buf
            self._buf = None
            if chunk is None:
                if self.done:
                    return
                try:
                    chunk = self._pull()
                except BaseException as e:
                    self._error = e
                    self.close()
                    raise
                if chunk is None:
                    self.done = True
                    self.close()
                    return
            n = chunk_len(chunk)
            if remaining is not None and n > remaining:
                chunk, self._buf = chunk[:remaining], chunk[remaining:]
                n = remaining
            if remaining is not None:
                remaining -= n
            self.rows_taken += n
            if n:
                yield chunk

    def close(self) -> None:
        """Release the stream and run ``on_close`` (once)."""
        if self.closed:
            return
        self.closed = True
        self._buf = None
        try:
            if self._on_close is not None:
                self._on_close()
        finally:
            for f in self.on_end:
                f(self._error, self.rows_taken)


def chunk_len(chunk: Chunk) -> int:
    """Rows in a chunk."""
    return chunk.num_rows if isinstance(chunk, pa.Table) else len(chunk)


def chunk_rows(chunk: Chunk, types: list[SqlType]) -> list[tuple]:
    """A chunk as rows of Python values (``types``: the result's column types)."""
    if not isinstance(chunk, pa.Table):
        return chunk
    if chunk.num_columns == 0:
        return [()] * chunk.num_rows
    return list(zip(*[column_values(c, t) for c, t in zip(chunk.columns, types)]))


@dataclass
class Result:
    """One statement's outcome: a command tag and, for row-returning statements, the
    columns (name, SqlType) and either rows (tuples of Python values) or a stream. With
    a stream, ``tag`` is the command's name and the wire layer appends the row count
    (``SELECT 3``, ``FETCH 2``). ``binary``: a BINARY cursor's rows, sent in binary."""

    tag: str
    columns: list[tuple[str, SqlType]] | None = None
    rows: list[tuple] = field(default_factory=list)
    stream: ResultStream | None = None
    binary: bool = False


@dataclass
class CopyIn:
    """``COPY t FROM STDIN``: the wire layer collects the data, then calls ``finish``."""

    table: Table
    fmt: str
    delimiter: str | None
    null: str | None
    header: bool
    #: positions of the columns the data carries (a COPY column list), None for all
    positions: tuple[int, ...] | None = None
    tag: str = "COPY"
    #: the COPY statement (planned again when the table's shard is sealed meanwhile)
    stmt: object = None
    columns: None = None


@dataclass
class CopyOut:
    """``COPY (query) TO STDOUT``: rows (or a stream of them) the wire layer sends as
    CopyData."""

    columns: list
    rows: list
    #: text, csv or binary, with the options that shape them
    fmt: str = "text"
    delimiter: str | None = None
    null: str | None = None
    header: bool = False
    tag: str = "COPY"
    stream: ResultStream | None = None
    #: rows come over time (SUBSCRIBE): each is sent and flushed as it comes
    live: bool = False


def arrow_rows(t: pa.Table) -> list[tuple]:
    """Rows of an Arrow table as tuples of Python values."""
    if t.num_columns == 0:
        return [()] * t.num_rows
    cols = [_from_arrow(c) for c in t.columns]
    return list(zip(*cols))


def _to_storage(v: Interval | None):
    # An interval is stored as a (months, days, micros) struct (catalog.types).
    return None if v is None else {"months": v.months, "days": v.days, "micros": v.micros}


def column_values(c: pa.Array | pa.ChunkedArray, t: SqlType) -> list:
    """An Arrow column of SqlType ``t`` as Python values: intervals as Interval, jsonb
    normalized (Spark's JSON text is compact, with its own key order)."""
    values = _from_arrow(c)
    if t.name == "jsonb":
        return [None if v is None else parse_jsonb(v) for v in values]
    if t.name == "timetz":  # stored as its text (catalog.types)
        return [None if v is None else parse_timetz(v) for v in values]
    if t.name == "numeric" and pa.types.is_string(c.type):
        # a numeric sent as its text (``planner.functions`` ``result_text``): the Decimal
        # keeps the scale of each value, as PostgreSQL's
        return [None if v is None else Decimal(v) for v in values]
    return values


def _from_arrow(c: pa.ChunkedArray) -> list:
    values = c.to_pylist()
    if pa.types.is_interval(c.type):
        return [None if v is None else Interval(v.months, v.days, v.nanoseconds // 1000) for v in values]
    if pa.types.is_struct(c.type) and [f.name for f in c.type] == ["months", "days", "micros"]:
        return [None if v is None else Interval(v["months"], v["days"], v["micros"]) for v in values]
    return values


def rows_to_arrow(table: Table, rows: list[tuple]) -> pa.Table:
    """Rows in ``table``'s column order as an Arrow table in its storage schema.

    Raises:
        SqlError 0A000 for an array of several dimensions (tables store one-dimensional
        arrays: Parquet and Spark have no multi-dimensional array type), for dates and
        timestamps outside years 1 to 9999 (FarDate, FarTimestamp) and for numeric NaN
        (Parquet and Spark decimals have none)."""
    check_storable(table, rows)
    return storable_to_arrow(table, rows)


def check_storable(table: Table, rows: list[tuple]) -> None:
    """Raises what :func:`rows_to_arrow` raises for ``rows``, without converting them."""
    for i, c in _checked_columns(table):
        if c.type.is_array and any(v is not None and any(isinstance(e, list) for e in v) for v in (r[i] for r in rows)):
            raise SqlError(FEATURE_NOT_SUPPORTED, f'column "{c.name}": multi-dimensional arrays cannot be stored in tables')
        if (c.type.name == "numeric" or c.type.is_array and c.type.element.name == "numeric") and any(
                v is not None and not v.is_finite() for r in rows for v in (r[i] if c.type.is_array else [r[i]]) or ()):
            raise SqlError(FEATURE_NOT_SUPPORTED, f'column "{c.name}": numeric NaN cannot be stored in tables '
                                                  "(Parquet and Spark decimals have no NaN)")
        if c.type.name in ("date", "timestamp", "timestamptz") and any(isinstance(r[i], (FarDate, FarTimestamp))
                                                                        for r in rows):
            raise SqlError(FEATURE_NOT_SUPPORTED, f'column "{c.name}": infinity and dates before year 1 or after '
                                                  "9999 cannot be stored in tables (Parquet and Spark dates stop there)")


def storable_to_arrow(table: Table, rows: list[tuple]) -> pa.Table:
    """:func:`rows_to_arrow` of rows :func:`check_storable` passed.

    Raises:
        pyarrow's errors for a value its column's Arrow type cannot hold."""
    schema = _storage_schema(table)

    def values(i: int, t: SqlType) -> list:
        if t.name == "interval":
            return [_to_storage(r[i]) for r in rows]
        if t.name == "timetz":
            return [None if r[i] is None else format_text(r[i], t) for r in rows]
        return [r[i] for r in rows]

    arrays = [pa.array(values(i, c.type), type=f.type) for i, (f, c) in enumerate(zip(schema, table.columns))]
    return pa.Table.from_arrays(arrays, schema=schema)


#: id(table.columns) -> (columns, storage schema, the columns check_storable looks at):
#: every single-row INSERT converts its row, and building these costs more than the row
_SCHEMAS: dict[int, tuple] = {}


def _table_info(table: Table) -> tuple:
    hit = _SCHEMAS.get(id(table.columns))
    if hit is not None and hit[0] is table.columns:
        return hit
    if len(_SCHEMAS) >= 256:
        _SCHEMAS.clear()
    cols = table.columns
    schema = arrow_schema([c.name for c in cols], [c.type for c in cols])
    checked = tuple((i, c) for i, c in enumerate(cols)
                    if c.type.is_array or c.type.name in ("date", "timestamp", "timestamptz", "numeric"))
    hit = _SCHEMAS[id(cols)] = (cols, schema, checked)
    return hit


def _storage_schema(table: Table) -> pa.Schema:
    return _table_info(table)[1]


def _checked_columns(table: Table) -> tuple:
    return _table_info(table)[2]
