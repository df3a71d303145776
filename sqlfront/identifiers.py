"""PostgreSQL's limit on identifiers: at most ``NAMEDATALEN - 1`` = 63 bytes. A longer one
is truncated, at a UTF-8 character boundary, with NOTICE 42622 ``identifier "..." will be
truncated to "..."`` (scan.l and scansup.c ``truncate_identifier``; PostgreSQL 4.1.1
"Identifiers and Key Words"). pglast's scanner already truncates what it parses, without
the notice; ``mzparse`` and login names truncate through ``truncate_identifier``
(``catalog.textio.truncate_name``, the rule of type name's input too).
"""

from __future__ import annotations

import re

import pglast

from catalog.errors import SqlError, NAME_TOO_LONG
from catalog.textio import MAX_NAME_BYTES, truncate_name as truncate_identifier


#: a run of characters that may be an identifier longer than 63 bytes (16 characters of
#: up to 4 bytes each, at least): statements without one are not scanned again
_MAYBE_LONG = re.compile(r'[\w$]{16,}|"[^"]{16,}')


def truncation_notice(name: str) -> SqlError:
    """The NOTICE PostgreSQL's scanner raises for ``name`` (longer than the limit)."""
    return SqlError(NAME_TOO_LONG, f'identifier "{name}" will be truncated to "{truncate_identifier(name)}"',
                    severity="NOTICE")


def truncation_notices(sql: str) -> list[SqlError]:
    """The NOTICEs for the identifiers of ``sql`` longer than the limit, in order: unquoted
    ones after folding ASCII letters to lower case (PostgreSQL's downcase_identifier),
    quoted ones with ``""`` read as ``"``. Text the scanner rejects has none (its syntax
    error comes from the parser)."""
    if not _MAYBE_LONG.search(sql):
        return []
    try:
        tokens = pglast.parser.scan(sql)
    except pglast.parser.ParseError:
        return []
    out = []
    for t in tokens:
        if t.name != "IDENT" or t.end - t.start + 1 < 16:
            continue
        raw = sql[t.start : t.end + 1]
        name = raw[1:-1].replace('""', '"') if raw.startswith('"') else _downcase(raw)
        if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            out.append(truncation_notice(name))
    return out


def _downcase(raw: str) -> str:
    # ASCII letters only: PostgreSQL leaves multibyte characters of a UTF-8 database alone
    return raw.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


__all__ = ["NAME_TOO_LONG", "truncate_identifier", "truncation_notice", "truncation_notices"]
