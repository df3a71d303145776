"""``parse_ident(qualified_identifier text [, strict boolean DEFAULT true]) -> text[]``
(PostgreSQL 9.4, table 9.10; misc.c ``parse_ident``): a qualified identifier split into
its parts, quoted parts as written (``""`` is a quote), unquoted ones with ASCII letters
folded to lower case, none truncated. Blanks may surround the parts and the dots. With
``strict`` false, text after the last part is ignored (``foo.boo[]``).

An unquoted part starts with a letter, ``_`` or a non-ASCII character and goes on with
those, digits and ``$`` (PostgreSQL's scanner). Anything else is 22023 ``string is not a
valid identifier``. One set of regular expressions, read by Python's ``re`` and Spark's
Java regexes alike (both have atomic groups), gives both implementations.
"""

from __future__ import annotations

import re

from catalog.errors import SqlError, INVALID_PARAMETER_VALUE
from planner.functions.registry import Function, constant_arg, register, sig

_WS = r"[ \t\n\r\f\x0b]*"  # scanner_isspace
_UNQUOTED = r"(?:[A-Za-z_]|[^\x00-\x7f])(?:[A-Za-z0-9_$]|[^\x00-\x7f])*"
#: one part: group 1 a quoted part's inside, group 2 an unquoted part
_PART = rf'"((?:[^"]|"")+)"|({_UNQUOTED})'
_PARTS = rf"{_WS}(?:{_PART}){_WS}(?:\.{_WS}(?:{_PART}){_WS})*"
#: the text that holds the parts (strict: all of it; else a prefix not followed by a dot,
#: which would need a part after it)
_STRICT = rf"^(?>{_PARTS})$"
_LOOSE = rf"^(?>{_PARTS})(?!\.)"
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _invalid(text) -> str:
    return f'string is not a valid identifier: "{text}"'


def parse_ident(text: str, strict: bool = True) -> list[str]:
    """The parts of ``text``.

    Raises:
        SqlError 22023 when it is not a qualified identifier."""
    m = re.match(_STRICT if strict else _LOOSE, text)
    if m is None:
        raise SqlError(INVALID_PARAMETER_VALUE, _invalid(text))
    return [q.replace('""', '"') if q else u.translate(_LOWER) for q, u in re.findall(_PART, m.group(0))]


def _spark(S, a, e):
    F = S.F
    s = a[0]
    strict = constant_arg(e, 1, "the strict argument of parse_ident")
    held = F.regexp_extract(s, f"({_STRICT if strict else _LOOSE})", 1)
    valid = s.rlike(_STRICT if strict else _LOOSE)
    quoted, bare = (F.regexp_extract_all(held, F.lit(_PART), i) for i in (1, 2))
    parts = F.zip_with(quoted, bare, lambda q, b: F.when(b != "", F.translate(b, "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                                                                              "abcdefghijklmnopqrstuvwxyz"))
                       .otherwise(F.replace(q, F.lit('""'), F.lit('"'))))
    bad = S.fail(INVALID_PARAMETER_VALUE, F.concat(F.lit('string is not a valid identifier: "'), s, F.lit('"')))
    return F.when(valid, parts).otherwise(bad)


register(
    Function("parse_ident", (sig("text", "bool", ret="_text"),), lambda a, e: parse_ident(a[0], a[1]), _spark,
             sql_names=("parse_ident",), doc="9.4",
             extra={"arg_names": ("str", "strict"), "defaults": (True,)},
             samples=("parse_ident('\"SomeSchema\".someTable')", "parse_ident(' a . \"b.\"\"c\" ')",
                      "parse_ident('foo.boo[]', false)", "parse_ident('foo.boo[]')",
                      "parse_ident(CASE WHEN k < 3 THEN 'Ab.cD' WHEN k = 3 THEN 'x.\"\"' ELSE 'é.$1' END)",
                      ("parse_ident(CASE k WHEN 1 THEN 'a.' WHEN 2 THEN '.a' WHEN 3 THEN 'a$1_b.c' ELSE 'x \"y\"' END, "
                       "false)"),
                      "parse_ident(s)")),
)
