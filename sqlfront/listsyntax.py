"""Materialize's list and map syntax, which PostgreSQL's grammar lacks, rewritten over the
tokens of ``pglast.parser.scan`` into forms it parses, which the planner reads back
(``planner.functions.lists``):

- ``LIST[a, b]`` (a list constructor; inner ``[...]`` are nested lists) becomes
  ``(mz_list_ctor(ARRAY[a, b]))``;
- the type ``T list`` becomes ``T[424242]`` (``LIST_BOUND``: array bounds no one writes),
  so ``int list list`` is ``int[424242][424242]``, modifiers kept (``numeric(38,5) list``);
- the type ``map[text=>T]`` becomes the quoted type name ``"map[text=>T]"``, whose text
  the planner parses;
- a subscript of several layers, ``x[1:2, 2:3]``, becomes ``x[1:2][mz_list_layer()][2:3]``.

Statements without the words ``list`` or ``map`` or a ``[`` are returned as they are; so
is any text where nothing applies. Lexing (quotes, comments) is PostgreSQL's own.
"""

from __future__ import annotations

import re

import pglast

from planner.functions.lists import LIST_BOUND, LIST_CTOR, LIST_LAYER

_WORDS = re.compile(r"\b(list|map)\b", re.I)
#: words a type name may end with, after which ``list`` is the list type constructor
_TYPE_WORDS = {
    "int", "int2", "int4", "int8", "integer", "smallint", "bigint", "oid", "text", "string", "name", "bool", "boolean",
    "float", "float4", "float8", "real", "precision", "numeric", "decimal", "date", "time", "timestamp", "timestamptz",
    "interval", "jsonb", "json", "zone", "uuid", "bytea", "varchar", "char", "character", "varying", "bpchar",
    "timetz", "mz_timestamp",
}


def rewrite(sql: str) -> str:
    """``sql`` with Materialize's list and map syntax in PostgreSQL's (module docstring)."""
    if "[" not in sql and not _WORDS.search(sql):
        return sql
    try:
        toks = [t for t in pglast.parser.scan(sql) if t.name not in ("SQL_COMMENT", "C_COMMENT")]
    except pglast.parser.ParseError:
        return sql
    text = [sql[t.start:t.end + 1] for t in toks]
    low = [x.lower() for x in text]
    close = _matching(toks)
    nested = _nested_ctors(toks, low, close)
    edits: list[tuple[int, int, str]] = []  # (start, end exclusive, replacement)
    type_end: set[int] = set()  # token indexes that end a type name
    i = 0
    while i < len(toks):
        t, w = toks[i], low[i]
        nxt = toks[i + 1].name if i + 1 < len(toks) else None
        if w == "list" and t.name == "IDENT" and nxt == "ASCII_91" and i + 1 in close:
            j = close[i + 1]
            edits.append((t.start, t.end + 1, f"({LIST_CTOR}(ARRAY"))
            edits.append((toks[j].end + 1, toks[j].end + 1, "))"))
        elif i in nested:
            edits.append((t.start, t.start, f"({LIST_CTOR}(ARRAY"))
            edits.append((toks[close[i]].end + 1, toks[close[i]].end + 1, "))"))
        elif w == "map" and t.name == "IDENT" and nxt == "ASCII_91" and i + 1 in close \
                and any(toks[k].name == "EQUALS_GREATER" for k in range(i + 2, close[i + 1])):
            j = close[i + 1]
            inner = sql[t.start:toks[j].end + 1]
            edits.append((t.start, toks[j].end + 1, '"' + " ".join(inner.split()).replace('"', '""') + '"'))
            type_end.add(j)
            i = j + 1
            continue
        elif w == "list" and t.name == "IDENT" and nxt not in ("ASCII_91", "ASCII_40") and i > 0 \
                and _ends_type(i - 1, toks, low, close, type_end):
            edits.append((t.start, t.end + 1, f"[{LIST_BOUND}]"))
            type_end.add(i)
        elif t.name == "ASCII_91" and i > 0 and i in close and _subscript(i - 1, toks, low):
            depth = 0
            for k in range(i + 1, close[i]):
                n = toks[k].name
                depth += n in ("ASCII_91", "ASCII_40")
                depth -= n in ("ASCII_93", "ASCII_41")
                if n == "ASCII_44" and depth == 0:
                    edits.append((toks[k].start, toks[k].end + 1, f"][{LIST_LAYER}()]["))
        i += 1
    if not edits:
        return sql
    out, pos = [], 0
    for start, end, rep in sorted(edits, key=lambda e: (e[0], e[1])):
        out.append(sql[pos:start])
        out.append(rep)
        pos = max(pos, end)
    out.append(sql[pos:])
    return "".join(out)


def _nested_ctors(toks, low, close) -> set[int]:
    """Indexes of the ``[`` that open a nested list inside ``LIST[...]``: an element of a
    list constructor (after its ``[`` or a ``,`` at its level) that is itself ``[...]``."""
    out: set[int] = set()
    stack: list[bool] = []  # per open bracket or parenthesis: a list constructor's?
    for k, t in enumerate(toks):
        if t.name == "ASCII_91":
            prev = toks[k - 1].name if k else None
            is_list = k > 0 and k in close and (
                (low[k - 1] == "list" and toks[k - 1].name == "IDENT")
                or (prev in ("ASCII_91", "ASCII_44") and bool(stack) and stack[-1]))
            if is_list and not (low[k - 1] == "list"):
                out.add(k)
            stack.append(is_list)
        elif t.name == "ASCII_40":
            stack.append(False)
        elif t.name in ("ASCII_93", "ASCII_41") and stack:
            stack.pop()
    return out


def _matching(toks) -> dict[int, int]:
    """Index of each opening bracket or parenthesis -> index of its closing one."""
    out, stack = {}, []
    for k, t in enumerate(toks):
        if t.name in ("ASCII_91", "ASCII_40"):
            stack.append(k)
        elif t.name in ("ASCII_93", "ASCII_41") and stack:
            out[stack.pop()] = k
    return out


def _ends_type(k: int, toks, low, close, type_end) -> bool:
    """Whether token ``k`` ends a type name (so a ``list`` after it makes a list type)."""
    if k in type_end or low[k] in _TYPE_WORDS:
        return True
    if toks[k].name == "ASCII_41":  # numeric(38,5), varchar(3), timestamp(3)
        opening = next((o for o, c in close.items() if c == k), None)
        return opening is not None and opening > 0 and low[opening - 1] in _TYPE_WORDS
    return False


def _subscript(k: int, toks, low) -> bool:
    """Whether a ``[`` after token ``k`` subscripts an expression (not ARRAY[, LIST[, a
    type's bounds or an element of ARRAY[[...], [...]])."""
    t = toks[k]
    if t.name in ("ASCII_93", "ASCII_41"):
        return True
    return t.name == "IDENT" and low[k] not in ("list", "map")
