"""The statements of Materialize's sources and what they use, which PostgreSQL's grammar
lacks: CREATE/ALTER/DROP SECRET, CREATE/DROP CONNECTION, VALIDATE CONNECTION, CREATE/DROP
SOURCE (Materialize's SQL reference for each). Parsed over PostgreSQL's own tokens by
``sqlfront.mzparse``'s parser; nothing here looks at the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.errors import FEATURE_NOT_SUPPORTED, SqlError


@dataclass(frozen=True)
class CreateSecret:
    """CREATE SECRET name AS value: ``value`` a string literal's, or ``expr`` the text of
    another expression (``decode('...', 'base64')``), evaluated when it runs."""

    schema: str | None
    name: str
    value: str = ""
    if_not_exists: bool = False
    expr: str | None = None

    def __repr__(self) -> str:  # never the value: statements end up in logs
        return f"CreateSecret({self.schema!r}, {self.name!r})"


@dataclass(frozen=True)
class AlterSecret:
    """ALTER SECRET name AS value (``value``/``expr`` as :class:`CreateSecret`), or
    ALTER SECRET name RENAME TO ``new_name``."""

    schema: str | None
    name: str
    value: str = ""
    if_exists: bool = False
    expr: str | None = None
    new_name: str | None = None

    def __repr__(self) -> str:
        return f"AlterSecret({self.schema!r}, {self.name!r})"


@dataclass(frozen=True)
class DropItems:
    """DROP SECRET | CONNECTION | SOURCE [IF EXISTS] name, ... [CASCADE | RESTRICT]."""

    kind: str
    names: tuple[tuple[str | None, str], ...]
    if_exists: bool
    cascade: bool


#: a connection option's value: (text, is it a SECRET's name)
OptionValue = tuple[str, bool]


@dataclass(frozen=True)
class CreateConnection:
    """CREATE CONNECTION name TO <kind> (options) [WITH (VALIDATE = bool)]: ``options``
    as ``(NAME, value, secret)`` (an option name in upper case, words joined by a space:
    ``SSL MODE``; ``secret``: the value names a SECRET, ``[schema.]name``)."""

    schema: str | None
    name: str
    kind: str
    options: tuple[tuple[str, str, bool], ...]
    validate: bool | None
    if_not_exists: bool


@dataclass(frozen=True)
class ValidateConnection:
    schema: str | None
    name: str


@dataclass(frozen=True)
class CreateSource:
    """CREATE SOURCE name [IN CLUSTER c] FROM LOAD GENERATOR g [(options)] [FOR ALL TABLES]
    [EXPOSE PROGRESS AS p], or FROM POSTGRES CONNECTION conn (PUBLICATION 'p') FOR ALL
    TABLES | FOR TABLES (t [AS name], ...) [EXPOSE PROGRESS AS p], or FROM WEBHOOK BODY
    FORMAT f [INCLUDE HEADERS] [CHECK (...)].

    ``options``: ``(NAME, literal text)`` in order (``TICK INTERVAL``, ``'1s'``;
    ``PUBLICATION``, ``'p'``); ``connection``: ``[schema.]name``; ``tables``: FOR TABLES'
    ``(schema or None, table, subsource name or None)``; ``check``: the CHECK's text
    inside its parentheses, as written."""

    schema: str | None
    name: str
    cluster: str | None
    kind: str  # 'load-generator' | 'postgres' | 'webhook'
    generator: str | None = None
    connection: str | None = None
    tables: tuple[tuple[str | None, str, str | None], ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    all_tables: bool = False
    progress_name: str | None = None
    body_format: str | None = None
    include_headers: bool = False
    check: str | None = None
    if_not_exists: bool = False
    sql: str = ""


def _qualified(p) -> str:
    schema, name = p.object_name()
    return f"{schema}.{name}" if schema else name


def _value(p) -> tuple[str, bool]:
    """An option's value: a string or number literal, ``SECRET name``, a word or TRUE/FALSE."""
    if p.accept("SECRET"):
        return _qualified(p), True
    t = p.peek()
    if t is None:
        raise p.error("a value")
    if t.name == "SCONST":
        return p.string(), False
    if t.name in ("ICONST", "FCONST"):
        p.i += 1
        return p.text(t), False
    if t.name == "ASCII_45":  # a negative number
        p.i += 1
        n = p.peek()
        if n is None or n.name not in ("ICONST", "FCONST"):
            raise p.error("a number")
        p.i += 1
        return "-" + p.text(n), False
    word = p.word()
    if word is None:
        raise p.error("a value")
    p.i += 1
    return word.lower(), False


#: the option names of CONNECTION ... TO POSTGRES and of LOAD GENERATOR (Materialize's)
OPTION_NAMES = frozenset({
    "HOST", "PORT", "USER", "PASSWORD", "DATABASE", "SSL MODE", "SSL CERTIFICATE", "SSL KEY",
    "SSL CERTIFICATE AUTHORITY", "SSH TUNNEL", "AWS PRIVATELINK", "VALIDATE", "TICK INTERVAL", "AS OF", "UP TO",
    "SCALE FACTOR", "MAX CARDINALITY", "KEYS", "SNAPSHOT ROUNDS", "TRANSACTIONAL SNAPSHOT", "VALUE SIZE", "SEED",
    "PARTITIONS", "BATCH SIZE", "PUBLICATION", "TEXT COLUMNS", "EXCLUDE COLUMNS",
})


def _option_name(p) -> str:
    """The longest option name of ``OPTION_NAMES`` the next words spell (``SSL MODE``).

    Raises:
        SqlError 42601 for words that name no option."""
    best = None
    for n in (3, 2, 1):
        words = [p.word(k) for k in range(n)]
        if None not in words and " ".join(words) in OPTION_NAMES:
            best = n
            break
    if best is None:
        raise p.error("an option name")
    name = " ".join(p.word(k) for k in range(best))
    p.i += best
    p.accept_punct("=")
    return name


def _options(p) -> list[tuple[str, str, bool]]:
    p.expect_punct("(")
    out = []
    while True:
        name = _option_name(p)
        value, secret = _value(p)
        out.append((name, value, secret))
        if not p.accept_punct(","):
            break
    p.expect_punct(")")
    return out


def _paren_text(p) -> str:
    """The text between a '(' (the next token) and its matching ')'."""
    p.expect_punct("(")
    start = p.peek()
    depth = 1
    while p.peek() is not None:
        t = p.peek()
        depth += (t.name == "ASCII_40") - (t.name == "ASCII_41")
        if depth == 0:
            text = p.sql[start.start:t.start] if start is not t else ""
            p.i += 1
            return text.strip()
        p.i += 1
    raise p.error("')'")


def _create_source(p, if_not_exists: bool) -> CreateSource:
    schema, name = p.object_name()
    cluster = p.ident(keywords=True) if p.accept("IN", "CLUSTER") else None
    p.expect("FROM")
    if p.accept("WEBHOOK"):
        p.expect("BODY", "FORMAT")
        fmt = p.word()
        if fmt not in ("JSON", "TEXT", "BYTES"):
            raise p.error("JSON, TEXT or BYTES")
        p.i += 1
        if p.accept("ARRAY"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "BODY FORMAT JSON ARRAY is not supported")
        include = False
        check = None
        while p.peek() is not None:
            if p.accept("INCLUDE", "HEADERS"):
                include = True
                if p.peek() is not None and p.peek().name == "ASCII_40":
                    raise SqlError(FEATURE_NOT_SUPPORTED, "INCLUDE HEADERS with a list of headers is not supported")
            elif p.accept("CHECK"):
                check = _paren_text(p)
            elif p.word() == "INCLUDE":
                raise SqlError(FEATURE_NOT_SUPPORTED, "INCLUDE HEADER ... AS is not supported")
            else:
                raise p.error("INCLUDE HEADERS or CHECK")
        return CreateSource(schema, name, cluster, "webhook", body_format=fmt.lower(), include_headers=include,
                            check=check, if_not_exists=if_not_exists, sql=p.sql.strip().rstrip(";").strip())
    if p.accept("POSTGRES", "CONNECTION"):
        return _postgres_source(p, schema, name, cluster, if_not_exists)
    p.expect("LOAD", "GENERATOR")
    gen = p.word()
    if gen == "KEY" and p.word(1) == "VALUE":
        raise SqlError(FEATURE_NOT_SUPPORTED, "LOAD GENERATOR KEY VALUE is not supported")
    if gen not in ("COUNTER", "AUCTION", "MARKETING", "TPCH", "CLOCK", "DATUMS"):
        raise p.error("COUNTER, AUCTION, MARKETING or TPCH")
    p.i += 1
    options: list[tuple[str, str]] = []
    if p.peek() is not None and p.peek().name == "ASCII_40":
        options = [(n, v) for n, v, _ in _options(p)]
    all_tables = False
    progress = None
    while p.peek() is not None:
        if p.accept("FOR", "ALL", "TABLES"):
            all_tables = True
        elif p.accept("EXPOSE", "PROGRESS", "AS"):
            progress = p.ident()
        elif p.word() == "FOR":
            raise SqlError(FEATURE_NOT_SUPPORTED, "FOR TABLES (...) and FOR SCHEMAS (...) are not supported",
                           hint="Use FOR ALL TABLES.")
        elif p.word() == "WITH":
            raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE SOURCE ... WITH (...) is not supported")
        else:
            raise p.error("FOR ALL TABLES or EXPOSE PROGRESS AS")
    return CreateSource(schema, name, cluster, "load-generator", generator=gen, options=tuple(options),
                        all_tables=all_tables, progress_name=progress, if_not_exists=if_not_exists,
                        sql=p.sql.strip().rstrip(";").strip())


def _postgres_source(p, schema, name, cluster, if_not_exists) -> CreateSource:
    connection = _qualified(p)
    options = [(n, v) for n, v, _ in _options(p)] if p.peek() is not None and p.peek().name == "ASCII_40" else []
    all_tables = False
    tables: list[tuple[str | None, str, str | None]] = []
    progress = None
    while p.peek() is not None:
        if p.accept("FOR", "ALL", "TABLES"):
            all_tables = True
        elif p.accept("FOR", "TABLES"):
            p.expect_punct("(")
            while True:
                parts = [p.ident()]  # [database.][schema.]table upstream: its database is the connection's
                while len(parts) < 3 and p.accept_punct("."):
                    parts.append(p.ident())
                t_schema, t_name = (parts[-2] if len(parts) > 1 else None), parts[-1]
                alias = p.ident() if p.accept("AS") else None
                tables.append((t_schema, t_name, alias))
                if not p.accept_punct(","):
                    break
            p.expect_punct(")")
        elif p.accept("EXPOSE", "PROGRESS", "AS"):
            progress = p.ident()
        elif p.word() == "FOR":
            raise SqlError(FEATURE_NOT_SUPPORTED, "FOR SCHEMAS (...) is not supported",
                           hint="Use FOR ALL TABLES or FOR TABLES (...).")
        elif p.word() == "WITH":
            raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE SOURCE ... WITH (...) is not supported")
        else:
            raise p.error("FOR ALL TABLES, FOR TABLES (...) or EXPOSE PROGRESS AS")
    return CreateSource(schema, name, cluster, "postgres", connection=connection, options=tuple(options),
                        all_tables=all_tables, tables=tuple(tables), progress_name=progress,
                        if_not_exists=if_not_exists, sql=p.sql.strip().rstrip(";").strip())


def _secret_value(p) -> tuple[str, str | None]:
    """A secret's value: (a lone string literal's value, None), or ("", the expression's text)."""
    t = p.peek()
    if t is None:
        raise p.error("a value")
    if t.name == "SCONST" and p.peek(1) is None:
        return p.string(), None
    return "", p.rest_text()


def parse(p):
    """The statement at parser ``p`` if it is one of this module's, else None (``p`` untouched).

    Raises:
        SqlError 42601 for a malformed one; 0A000 for a form not supported."""
    w0, w1 = p.word(0), p.word(1)
    if w0 == "VALIDATE" and w1 == "CONNECTION":
        p.i += 2
        schema, name = p.object_name()
        p.done()
        return ValidateConnection(schema, name)
    if w0 == "DROP" and w1 in ("SECRET", "CONNECTION", "SOURCE"):
        p.i += 2
        if_exists = p.accept("IF", "EXISTS")
        names = [p.object_name()]
        while p.accept_punct(","):
            names.append(p.object_name())
        cascade = p.accept("CASCADE")
        if not cascade:
            p.accept("RESTRICT")
        p.done()
        return DropItems(w1.lower(), tuple(names), if_exists, cascade)
    if w0 == "ALTER" and w1 == "SECRET":
        p.i += 2
        if_exists = p.accept("IF", "EXISTS")
        schema, name = p.object_name()
        if p.accept("RENAME", "TO"):
            new_name = p.ident()
            p.done()
            return AlterSecret(schema, name, if_exists=if_exists, new_name=new_name)
        if p.word() == "OWNER":
            return None  # ALTER ... OWNER TO: the generic form
        p.expect("AS")
        value, expr = _secret_value(p)
        return AlterSecret(schema, name, value, if_exists, expr=expr)
    if w0 != "CREATE" or w1 not in ("SECRET", "CONNECTION", "SOURCE"):
        return None
    p.i += 2
    if_not_exists = p.accept("IF", "NOT", "EXISTS")
    if w1 == "SOURCE":
        return _create_source(p, if_not_exists)
    schema, name = p.object_name()
    if w1 == "SECRET":
        p.expect("AS")
        value, expr = _secret_value(p)
        return CreateSecret(schema, name, value, if_not_exists, expr=expr)
    p.expect("TO")
    kind = p.word()
    if kind != "POSTGRES":
        raise SqlError(FEATURE_NOT_SUPPORTED, f"CREATE CONNECTION ... TO {kind or '?'} is not supported",
                       hint="Connections TO POSTGRES are.")
    p.i += 1
    options = tuple(_options(p))
    validate = None
    if p.accept("WITH"):
        for n, v, _ in _options(p):
            if n != "VALIDATE" or v not in ("true", "false"):
                raise SqlError(FEATURE_NOT_SUPPORTED, f"CREATE CONNECTION ... WITH ({n}) is not supported")
            validate = v == "true"
    p.done()
    return CreateConnection(schema, name, kind.lower(), options, validate, if_not_exists)
