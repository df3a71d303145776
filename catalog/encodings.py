"""PostgreSQL's character set encodings (pg_wchar.h), for the functions that name them
(``pg_encoding_to_char``, ``pg_encoding_max_length``, ``to_ascii``)."""

from __future__ import annotations

#: PostgreSQL's character set encodings by id (pg_wchar.h's ``pg_enc``), each with its
#: longest character in bytes (``pg_wchar_table``); this database's is UTF8 (6)
ENCODINGS = (("SQL_ASCII", 1), ("EUC_JP", 3), ("EUC_CN", 3), ("EUC_KR", 3), ("EUC_TW", 4), ("EUC_JIS_2004", 3),
             ("UTF8", 4), ("MULE_INTERNAL", 4), *[(f"LATIN{i}", 1) for i in range(1, 11)],
             *[(n, 1) for n in ("WIN1256", "WIN1258", "WIN866", "WIN874", "KOI8R", "WIN1251", "WIN1252", "ISO_8859_5",
                                "ISO_8859_6", "ISO_8859_7", "ISO_8859_8", "WIN1250", "WIN1253", "WIN1254", "WIN1255",
                                "WIN1257", "KOI8U")],
             ("SJIS", 2), ("BIG5", 2), ("GBK", 2), ("UHC", 2), ("GB18030", 4), ("JOHAB", 3), ("SHIFT_JIS_2004", 2))
