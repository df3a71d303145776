"""Client encodings (PostgreSQL 23.3 "Character Set Support", "Automatic Character Set
Conversion Between Server and Client"): the names ``SET client_encoding`` accepts, and
the conversion of text between the server's UTF8 and the client's encoding on the wire.

The server encoding is UTF8. ``SQL_ASCII`` means no conversion (the bytes are UTF-8).
Text the client's encoding cannot hold is an error (22P05), as in PostgreSQL; bytes
that are not valid in the client's encoding are 22021. Owns no socket: ``pgwire`` calls
these where text crosses the wire (query and parameter text, column names, text values
in DataRows, COPY data, error fields).
"""

from __future__ import annotations

import re

from catalog.errors import (
    SqlError, CHARACTER_NOT_IN_REPERTOIRE, INVALID_PARAMETER_VALUE, UNTRANSLATABLE_CHARACTER,
)
from sqlfront.protocol import frame, messages
from sqlfront.protocol.backend import DataRow
from sqlfront.protocol.buffer import Reader, pack_values

#: PostgreSQL's encoding name -> Python's codec (PostgreSQL 23.3 Table "Character Sets")
CODECS = {
    "UTF8": "utf-8", "SQL_ASCII": "utf-8",
    "LATIN1": "iso8859-1", "LATIN2": "iso8859-2", "LATIN3": "iso8859-3", "LATIN4": "iso8859-4",
    "LATIN5": "iso8859-9", "LATIN6": "iso8859-10", "LATIN7": "iso8859-13", "LATIN8": "iso8859-14",
    "LATIN9": "iso8859-15", "LATIN10": "iso8859-16",
    "ISO_8859_5": "iso8859-5", "ISO_8859_6": "iso8859-6", "ISO_8859_7": "iso8859-7", "ISO_8859_8": "iso8859-8",
    "WIN866": "cp866", "WIN874": "cp874", "WIN1250": "cp1250", "WIN1251": "cp1251", "WIN1252": "cp1252",
    "WIN1253": "cp1253", "WIN1254": "cp1254", "WIN1255": "cp1255", "WIN1256": "cp1256", "WIN1257": "cp1257",
    "WIN1258": "cp1258", "KOI8R": "koi8-r", "KOI8U": "koi8-u", "EUC_JP": "euc-jp", "EUC_KR": "euc-kr",
    "EUC_CN": "gb2312", "SJIS": "shift_jis", "BIG5": "big5", "GBK": "gbk", "GB18030": "gb18030", "UHC": "cp949",
}

#: aliases PostgreSQL accepts (encnames.c), by their cleaned form
_ALIASES = {"unicode": "UTF8", "utf8": "UTF8", "iso88591": "LATIN1", "iso88592": "LATIN2", "iso88593": "LATIN3",
            "iso88594": "LATIN4", "iso88599": "LATIN5", "iso885910": "LATIN6", "iso885913": "LATIN7",
            "iso885914": "LATIN8", "iso885915": "LATIN9", "iso885916": "LATIN10", "win": "WIN1251",
            "alt": "WIN866", "koi8": "KOI8R", "shiftjis": "SJIS", "mskanji": "SJIS", "tcvn": "WIN1258",
            "abc": "WIN1258", "vscii": "WIN1258", "cp1252": "WIN1252", "cp1251": "WIN1251", "cp866": "WIN866"}


def _clean(name: str) -> str:
    """PostgreSQL's clean_encoding_name: lower case, letters and digits only."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


_BY_CLEAN = {_clean(k): k for k in CODECS} | _ALIASES


def canonical(name: str) -> str:
    """The encoding ``name`` names, in PostgreSQL's spelling (``latin-1`` -> ``LATIN1``).

    Raises:
        SqlError 22023 ``invalid value for parameter "client_encoding": "x"``."""
    enc = _BY_CLEAN.get(_clean(name))
    if enc is None:
        raise SqlError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "client_encoding": "{name}"')
    return enc


def codec(encoding: str) -> str | None:
    """Python's codec for a client ``encoding``, None when no conversion is needed."""
    c = CODECS.get(encoding, "utf-8")
    return None if c == "utf-8" else c


def encode(text: str, encoding: str, strict: bool = True) -> bytes:
    """``text`` in the client's ``encoding``.

    Raises:
        SqlError 22P05 (PostgreSQL's report_untranslatable_char) for a character the
        encoding lacks, unless not ``strict`` (then it becomes ``?``: for error messages)."""
    c = codec(encoding)
    if c is None:
        return text.encode("utf-8")
    try:
        return text.encode(c)
    except UnicodeEncodeError as e:
        if not strict:
            return text.encode(c, "replace")
        bad = " ".join(f"0x{b:02x}" for b in e.object[e.start].encode("utf-8"))
        raise SqlError(UNTRANSLATABLE_CHARACTER, f'character with byte sequence {bad} in encoding "UTF8" has no equivalent in '
                                f'encoding "{encoding}"') from None


def decode(data: bytes, encoding: str) -> str:
    """Bytes from the client in its ``encoding`` as text.

    Raises:
        SqlError 22021 ``invalid byte sequence for encoding "X": 0x..``."""
    c = codec(encoding) or "utf-8"
    try:
        return data.decode(c)
    except UnicodeDecodeError as e:
        bad = " ".join(f"0x{b:02x}" for b in e.object[e.start:e.end])
        raise SqlError(CHARACTER_NOT_IN_REPERTOIRE, f'invalid byte sequence for encoding "{encoding}": {bad}') from None


def no_nul(text: str) -> str:
    """``text``, which must hold no NUL character: PostgreSQL's text values cannot
    (PostgreSQL refuses the byte 0x00 in any input as an invalid byte sequence).

    Raises:
        SqlError 22021 ``invalid byte sequence for encoding "UTF8": 0x00``."""
    if "\x00" in text:
        raise SqlError(CHARACTER_NOT_IN_REPERTOIRE, 'invalid byte sequence for encoding "UTF8": 0x00')
    return text


def transcode_data_rows(data: bytes, encoding: str, convert: list[bool]) -> bytes:
    """DataRow messages ``data`` (UTF-8 text values) with the fields whose ``convert``
    flag is set re-encoded for the client (text values, and text-like values in binary:
    PostgreSQL's textsend converts too)."""
    out = []
    for _, body in messages(data):  # DataRow bodies, read and rebuilt without an object per row
        values = Reader(body).values()
        out.append(frame(DataRow.kind, pack_values([encode(v.decode("utf-8"), encoding) if v is not None and c else v
                                                    for v, c in zip(values, convert)])))
    return b"".join(out)
