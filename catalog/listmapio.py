"""Text input and output of Materialize's ``list`` and ``map`` types.

A list value is a Python ``list`` (its elements, ``None`` for NULL; a nested list type's
elements are lists, of any lengths: lists need not be rectangular). A map value is a
Python ``dict`` from text keys to values, its keys in order (Materialize's maps are
ordered by key, and so print).

The rules are Materialize's (``mz_repr::strconv``: ``parse_list``, ``parse_map``,
``format_list``, ``format_map`` and their element escapers), which differ from
PostgreSQL's array_in/array_out: an element is quoted when it is empty, exactly ``NULL``
(``null`` is not), or has a brace, comma, double quote, backslash or white space (a map
element also for ``=`` and ``>``); a nested list or map is written as it is.

This module owns only the text forms; ``catalog.textio`` calls it for the element types'.
"""

from __future__ import annotations

from typing import Callable

from catalog.errors import SqlError, INVALID_TEXT_REPRESENTATION

#: Rust's ``char::is_ascii_whitespace``
_WS = " \t\n\r\f"
_LIST_SPECIAL = '{},\\"'
_MAP_SPECIAL = '{},"=>\\'


class _Bail(Exception):
    """A detail of a malformed literal (Materialize's ``bail!``)."""


class _Buf:
    def __init__(self, s: str):
        self.s, self.pos = s, 0

    def peek(self) -> str | None:
        return self.s[self.pos] if self.pos < len(self.s) else None

    def next(self) -> str | None:
        c = self.peek()
        self.pos += 1
        return c

    def prev(self) -> None:
        self.pos -= 1

    def skip_ws(self) -> None:
        while self.peek() is not None and self.peek() in _WS:
            self.pos += 1

    def take_while(self, ok: Callable[[str], bool]) -> str:
        start = self.pos
        while self.peek() is not None and ok(self.peek()):
            self.pos += 1
        return self.s[start:self.pos]


def _open(buf: _Buf) -> None:
    c = buf.next()
    if c != "{":
        raise _Bail(f"expected '{{', found {c if c is not None else 'empty string'}")


def _quoted(buf: _Buf) -> str:
    buf.next()  # the opening quote
    out = []
    while True:
        c = buf.next()
        if c == "\\":
            c = buf.next()
            if c is None:
                raise _Bail("unterminated quoted string")
            out.append(c)
        elif c == '"':
            return "".join(out)
        elif c is None:
            raise _Bail("unterminated quoted string")
        else:
            out.append(c)


def _embedded(buf: _Buf) -> str:
    """A nested ``{...}`` element's text, braces included."""
    start = buf.pos
    buf.next()
    depth, in_quotes = 1, False
    while depth > 0:
        c = buf.next()
        if c == "\\":
            buf.next()
        elif c == '"':
            in_quotes = not in_quotes
        elif c == "{" and not in_quotes:
            depth += 1
        elif c == "}" and not in_quotes:
            depth -= 1
        elif c is None:
            raise _Bail("unterminated embedded element")
    return buf.s[start:buf.pos]


def _unquoted(buf: _Buf, special: str, end: str) -> str | None:
    """An unquoted element: white space around it dropped, backslash escapes taken; None
    for an unescaped ``NULL`` (any case)."""
    s = buf.take_while(lambda c: c not in special and c not in _WS)
    if buf.peek() is not None and buf.peek() in ",}" and s:
        return None if s.upper() == "NULL" else s
    escaped, out, trimmed = False, list(s), len(s)
    while True:
        c = buf.next()
        if c == "\\":
            c = buf.next()
            if c is None:
                raise _Bail("unterminated element")
            escaped = True
            out.append(c)
            trimmed = len(out)
        elif c is not None and c in end:
            if not out:
                raise _Bail("malformed literal; missing element")
            buf.prev()
            break
        elif c is not None and c in special:
            raise _Bail(f"malformed literal; must escape special character '{c}'")
        elif c is None:
            raise _Bail("unterminated element")
        else:
            out.append(c)
            if c not in _WS:
                trimmed = len(out)
    text = "".join(out[:trimmed])
    return None if text.upper() == "NULL" and not escaped else text


def _next(buf: _Buf, first: bool, unexpected: str) -> bool:
    """Past the separator before an element: False at the closing brace."""
    buf.skip_ws()
    c = buf.next()
    if c == "}":
        return False
    if first and c is not None:
        buf.prev()
    elif c is None:
        raise _Bail("unexpected end of input")
    elif c != ",":
        raise _Bail(unexpected.format(c))
    buf.skip_ws()
    return True


def _value(buf: _Buf, nested: bool, special: str, end: str, not_nested: str) -> str | None:
    """An element's text (None for NULL): quoted, a nested ``{...}`` when ``nested``
    (else the error ``not_nested``), or unquoted."""
    c = buf.peek()
    if c == '"':
        return _quoted(buf)
    if c == "{":
        if not nested:
            raise _Bail(not_nested)
        return _embedded(buf)
    if c is None:
        raise _Bail("unexpected end of input")
    return _unquoted(buf, special, end)


def _parse(s: str, what: str, parse_entry: Callable[[_Buf, bool], None]) -> None:
    buf = _Buf(s)
    try:
        _open(buf)
        first = True
        while _next(buf, first, "expected ',' or '}}', got '{}'" if what == "list" else
                    "expected ',' or end of input, got '{}'"):
            parse_entry(buf, first)
            first = False
        if what == "list":
            buf.skip_ws()
            c = buf.next()
            if c is not None:
                raise _Bail(f"malformed array literal; contains '{c}' after terminal '}}'")
    except _Bail as b:
        raise SqlError(INVALID_TEXT_REPRESENTATION, f'invalid input syntax for {what}: {b}: "{s}"') from None


def _converted(text: str | None, parse: Callable[[str], object]):
    try:
        return None if text is None else parse(text)
    except SqlError as e:
        raise _Bail(e.message) from None


def parse_list(s: str, nested: bool, parse_elem: Callable[[str], object]) -> list:
    """The elements of list literal ``s`` (``{1,NULL,"a b"}``), each element's text given
    to ``parse_elem``; ``nested``: the element type is itself a list, whose elements are
    written ``{...}``.

    Raises:
        SqlError 22P02 ``invalid input syntax for list: <detail>: "<s>"`` (Materialize's
        message), an element's own error as its detail."""
    out: list = []

    def entry(buf: _Buf, first: bool) -> None:
        text = _value(buf, nested, _LIST_SPECIAL, ",}", "unescaped '{' at beginning of element; perhaps you want "
                      "a nested list, e.g. '{a}'::text list list")
        out.append(_converted(text, parse_elem))

    _parse(s, "list", entry)
    return out


def parse_map(s: str, nested: bool, parse_value: Callable[[str], object]) -> dict:
    """The entries of map literal ``s`` (``{a=>1, "b c"=>NULL}``), in key order; a key
    written twice keeps its last value. ``nested``: the value type is itself a map.

    Raises:
        SqlError 22P02 ``invalid input syntax for type map: <detail>: "<s>"``."""
    out: dict = {}

    def entry(buf: _Buf, first: bool) -> None:
        if buf.peek() is None:
            raise _Bail("unexpected end of input")
        key = _quoted(buf) if buf.peek() == '"' else _unquoted(buf, _MAP_SPECIAL, ",}=")
        if key is None:
            raise _Bail("expected key")
        buf.skip_ws()
        if buf.next() != "=" or buf.next() != ">":
            raise _Bail("expected =>")
        buf.skip_ws()
        text = _value(buf, nested, _MAP_SPECIAL, ",}=", "unescaped '{' at beginning of value; perhaps you want "
                      "a nested map, e.g. '{a=>{a=>1}}'::map[text=>map[text=>int]]")
        out[key] = _converted(text, parse_value)

    _parse(s, "type map", entry)
    return dict(sorted(out.items()))


def _escape(s: str, special: str) -> str:
    if s == "" or s == "NULL" or any(c in special or c in _WS for c in s):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s


def format_list(v: list, nested: bool, format_elem: Callable[[object], str]) -> str:
    """Materialize's text of list value ``v``: ``{1,NULL,"a b"}``; ``nested``: the
    elements are lists or maps, written as they are."""
    return "{" + ",".join("NULL" if e is None else format_elem(e) if nested else _escape(format_elem(e), _LIST_SPECIAL)
                          for e in v) + "}"


def format_map(v, nested: bool, format_value: Callable[[object], str]) -> str:
    """Materialize's text of map value ``v`` (a dict, or (key, value) pairs as Arrow gives
    a Spark map back): ``{a=>1,b=>NULL}``, in key order."""
    if not isinstance(v, dict):
        v = dict(v)
    return "{" + ",".join(
        _escape(k, _MAP_SPECIAL) + "=>" + ("NULL" if x is None else format_value(x) if nested
                                            else _escape(format_value(x), _MAP_SPECIAL))
        for k, x in sorted(v.items())) + "}"
