"""COPY sequencing: ``COPY ... TO STDOUT`` (a peek whose rows the wire layer sends as
CopyData), ``COPY t FROM STDIN`` (the wire layer collects the data, ``finish_copy``
writes it) and ``COPY t FROM 'file'`` (read by ``spark_exec.load``). Parsing the data
itself is ``sqlfront.copy``'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pglast
from pglast import ast

from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, UNDEFINED_COLUMN
from catalog.snapshot import MaterializedView
from planner.writes import check_not_null
from spark_exec.load import read_file
from sqlfront.copy import allowed_copy_from_path
from sqlfront.parse import quote_ident
from sqlfront.sequence.peek import select
from sqlfront.sequence.result import CopyIn, CopyOut, Result, rows_to_arrow
from sqlfront.sequence.writes import replanned, write

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
    snap = s.env.snapshot
    rel = snap.resolve_relation(stmt.relation.schemaname, stmt.relation.relname)
    if rel.builtin:
        raise SqlError("42809", f'cannot copy to system table "{rel.name}"')
    if isinstance(rel, MaterializedView):
        raise SqlError("42809", f'cannot copy to materialized view "{rel.name}"')
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
                raise SqlError("42701", f'column "{a.sval}" specified more than once')
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


def finish_copy(s: Session, c: CopyIn, data: bytes) -> Result:
    """Parse the data of ``COPY ... FROM STDIN`` and write it: all rows or none. When
    the table's shard was sealed since the COPY was planned (an ALTER TABLE), the COPY
    is planned again and the data parsed for the table as it is now (``replanned``)."""
    return replanned(_finish_copy)(s, c, data)


def _finish_copy(s: Session, c: CopyIn, data: bytes) -> Result:
    from sqlfront.copy import parse_copy

    if c.stmt is not None and s.env.snapshot.tables.get(c.table.id) != c.table:
        c = copy(s, c.stmt, "", None)  # the table changed since the COPY was planned

    rows = parse_copy(c.table, data, c.fmt, c.delimiter, c.null, c.header, c.positions)
    if c.positions is not None:  # the columns the data lacks get their defaults
        from planner.writes import default_exprs
        from sqlfront.sequence.writes import fill_defaults

        defaults = default_exprs(s.env.snapshot, c.table)
        fill = [(j, e) for j, e in enumerate(defaults) if e is not None and j not in c.positions]
        if fill:
            rows = fill_defaults(s, rows, fill)
    for r in rows:
        check_not_null(c.table, r)
    write(s, c.table, rows_to_arrow(c.table, rows))
    return Result(f"COPY {len(rows)}")


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
