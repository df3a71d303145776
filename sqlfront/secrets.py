"""Secrets and connections as catalog transactions (Materialize's "CREATE SECRET",
"ALTER SECRET", "CREATE CONNECTION ... TO POSTGRES", "DROP SECRET | CONNECTION"), and
what uses them: a connection's libpq parameters with its secrets filled in, and VALIDATE
CONNECTION.

A secret's value lives in the catalog sealed (``catalog.secretbox``) and in the snapshot
in clear, for the code that uses it; nothing here logs it or puts it in a message.
"""

from __future__ import annotations

from dataclasses import replace

from catalog import durable
from catalog.errors import (
    SqlError, CHARACTER_NOT_IN_REPERTOIRE, DATATYPE_MISMATCH, DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_OBJECT,
    FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, NULL_VALUE_NOT_ALLOWED,
    SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, SYNTAX_ERROR, UNDEFINED_OBJECT, WRONG_OBJECT_TYPE,
)
from catalog.snapshot import CatalogSnapshot, Connection, Secret
from sqlfront import source_parse as sp

#: CONNECTION ... TO POSTGRES options (Materialize's "CREATE CONNECTION", PostgreSQL):
#: option -> whether it may / must name a SECRET ("may", "must", "no")
POSTGRES_OPTIONS = {"HOST": "no", "PORT": "no", "USER": "may", "PASSWORD": "must", "DATABASE": "no",
                    "SSL MODE": "no"}
#: what SSL MODE may be (libpq's sslmode values)
SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
#: seconds VALIDATE CONNECTION waits for the server
CONNECT_TIMEOUT_S = 10


def _lookup(snap: CatalogSnapshot, schema: str | None, name: str, find):
    for sc in ((snap.schema_name(schema),) if schema else snap.search_path()):
        o = find(sc, name)
        if o is not None:
            return o
    return None


def resolve_secret(snap: CatalogSnapshot, qualified: str) -> Secret:
    """The secret ``[schema.]name``.

    Raises:
        SqlError 42704 ``unknown catalog item 'x'``."""
    schema, _, name = qualified.rpartition(".")
    found = _lookup(snap, schema or None, name, snap.secret_by_name)
    if found is None:
        raise SqlError(UNDEFINED_OBJECT, f"unknown catalog item '{qualified}'")
    return found


def resolve_connection(snap: CatalogSnapshot, schema: str | None, name: str) -> Connection:
    """Raises SqlError 42704 ``unknown catalog item 'x'``."""
    found = _lookup(snap, schema, name, snap.connection_by_name)
    if found is None:
        raise SqlError(UNDEFINED_OBJECT, f"unknown catalog item '{schema + '.' if schema else ''}{name}'")
    return found


def creation_schema(snap: CatalogSnapshot, schema: str | None, name: str, if_not_exists: bool) -> str | None:
    """The schema a new item ``[schema.]name`` goes into, or None when the name is taken
    and ``if_not_exists`` (nothing to do).

    Raises:
        SqlError 42710 ``catalog item 'x' already exists`` (Materialize's wording); 3F000."""
    s = snap.creation_schema(schema)
    if snap.name_taken(s, name):
        if if_not_exists:
            return None
        raise SqlError(DUPLICATE_OBJECT, f"catalog item '{name}' already exists")
    return s


def create_secret(stmt: sp.CreateSecret):
    """CREATE SECRET [IF NOT EXISTS] name AS 'value'.

    Raises (from ``build``): 42710 for a taken name; 3F000 for an unknown schema."""
    def build(snap: CatalogSnapshot, ids) -> list:
        s = creation_schema(snap, stmt.schema, stmt.name, stmt.if_not_exists)
        if s is None:
            return []
        return [durable.CreateSecret(Secret(ids.allocate("item"), s, stmt.name, stmt.value))]

    return build


def secret_value(expr: str, ctx=None) -> str:
    """The value of CREATE/ALTER SECRET ... AS ``expr`` (an expression over no relation,
    as Materialize allows: ``decode('c2VjcmV0', 'base64')``): text as it is, bytea as
    UTF-8 text (secrets are text here). ``ctx``: the statement's ``planner.context.PlanContext``.

    Raises:
        SqlError as planning and evaluating raise; 22004 for NULL; 42804 for a type
        other than text or bytea; 22021 for bytes that are not UTF-8."""
    import pglast

    from planner.consteval import evaluate
    from planner.expr import ExprPlanner
    from planner.scope import Scope

    try:
        node = pglast.parse_sql(f"SELECT ({expr})")[0].stmt.targetList[0].val
    except pglast.parser.ParseError as e:
        raise SqlError(SYNTAX_ERROR, f"syntax error in the secret's value: {e}") from None
    planner = ExprPlanner(Scope())
    planner.ctx = ctx or planner.ctx
    e = planner.plan(node)
    if e.type.name not in ("text", "bytea", "unknown", "varchar", "bpchar"):
        raise SqlError(DATATYPE_MISMATCH, f"a secret's value must be text or bytea, not {e.type.sql()}")
    value = evaluate(e, ctx=planner.ctx)
    if value is None:
        raise SqlError(NULL_VALUE_NOT_ALLOWED, "secret value can not be null")
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            raise SqlError(CHARACTER_NOT_IN_REPERTOIRE, "a secret's value must be valid UTF-8 here") from None
    return str(value)


def alter_secret(stmt: sp.AlterSecret):
    """ALTER SECRET [IF EXISTS] name AS 'value': what uses it reads the new value from
    then on; or ALTER SECRET [IF EXISTS] name RENAME TO new_name (connections and webhook
    CHECKs refer to it by id: they keep using it).

    Raises (from ``build``): 42704 for an unknown secret (nothing with IF EXISTS); 42710
    for a taken name."""
    def build(snap: CatalogSnapshot, ids) -> list:
        found = _lookup(snap, stmt.schema, stmt.name, snap.secret_by_name)
        if found is None:
            if stmt.if_exists:
                return []
            raise SqlError(UNDEFINED_OBJECT, f"unknown catalog item '{stmt.name}'")
        if stmt.new_name is not None:
            if stmt.new_name == found.name:
                return []
            if snap.name_taken(found.schema, stmt.new_name):
                raise SqlError(DUPLICATE_OBJECT, f"catalog item '{stmt.new_name}' already exists")
            return [durable.UpdateSecret(replace(found, name=stmt.new_name))]
        return [durable.UpdateSecret(replace(found, value=stmt.value))]

    return build


def connection_options(snap: CatalogSnapshot, stmt: sp.CreateConnection) -> tuple[tuple[str, str, bool], ...]:
    """The options of a CONNECTION ... TO POSTGRES as stored: secrets by id, PORT checked.

    Raises:
        SqlError 0A000 for an option not supported (SSH TUNNEL, AWS PRIVATELINK, SSL
        certificates); 22023 for a bad value, a missing HOST or USER, a PASSWORD that is
        not a SECRET or an option given twice; 42704 for an unknown secret."""
    out = []
    seen = set()
    for name, value, secret in stmt.options:
        rule = POSTGRES_OPTIONS.get(name)
        if rule is None:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"CONNECTION option {name} is not supported")
        if name in seen:
            raise SqlError(INVALID_PARAMETER_VALUE, f"{name} specified more than once")
        seen.add(name)
        if rule == "must" and not secret:
            raise SqlError(INVALID_PARAMETER_VALUE, f"invalid {name}: must provide a secret value")
        if rule == "no" and secret:
            raise SqlError(INVALID_PARAMETER_VALUE, f"invalid {name}: cannot be a secret")
        if secret:
            value = resolve_secret(snap, value).id
        elif name == "PORT" and not (value.isdigit() and 0 < int(value) < 65536):
            raise SqlError(INVALID_PARAMETER_VALUE, f"invalid PORT: {value}")
        elif name == "SSL MODE" and value.lower() not in SSL_MODES:
            raise SqlError(INVALID_PARAMETER_VALUE, f"invalid SSL MODE: {value}")
        out.append((name, value, secret))
    for required in ("HOST", "USER"):
        if required not in seen:
            raise SqlError(INVALID_PARAMETER_VALUE, f"{required} option is required")
    return tuple(out)


def create_connection(stmt: sp.CreateConnection, options: tuple[tuple[str, str, bool], ...]):
    """CREATE CONNECTION [IF NOT EXISTS] name TO POSTGRES (...) with ``options`` from
    :func:`connection_options`.

    Raises (from ``build``): 42710 for a taken name; 42704 when a secret it names was
    dropped meanwhile."""
    def build(snap: CatalogSnapshot, ids) -> list:
        s = creation_schema(snap, stmt.schema, stmt.name, stmt.if_not_exists)
        if s is None:
            return []
        for _, value, secret in options:
            if secret and value not in snap.secrets:
                raise SqlError(UNDEFINED_OBJECT, "a secret of the connection was dropped")
        return [durable.CreateConnection(Connection(ids.allocate("item"), s, stmt.name, stmt.kind, options))]

    return build


def drop_items(stmt: sp.DropItems, drop_sources=None):
    """DROP SECRET | CONNECTION [IF EXISTS] ... [CASCADE]: a secret that connections use,
    or a connection that sources use, needs CASCADE (which drops them: Materialize's
    rule). ``drop_sources(snap, sources)`` gives the ops that drop sources (DROP SOURCE).

    Raises (from ``build``): 42704 for an unknown name (nothing with IF EXISTS); 42809
    for an object of another kind; 2BP01 for dependents without CASCADE."""
    def build(snap: CatalogSnapshot, ids) -> list:
        ops: list = []
        for schema, name in stmt.names:
            if stmt.kind == "secret":
                obj = _lookup(snap, schema, name, snap.secret_by_name)
            else:
                obj = _lookup(snap, schema, name, snap.connection_by_name)
            if obj is None:
                from sqlfront.sequence.objects import find_item

                other = find_item(snap, schema, name)
                if other is not None:
                    raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a {stmt.kind}')
                if stmt.if_exists:
                    continue
                raise SqlError(UNDEFINED_OBJECT, f"unknown catalog item '{name}'")
            if isinstance(obj, Secret):
                users = [c for c in snap.connections.values() if any(s and v == obj.id for _, v, s in c.options)]
                if users and not stmt.cascade:
                    raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                                   f'cannot drop secret "{obj.name}": still depended upon by connection '
                                   f'"{users[0].name}"', hint="Use DROP ... CASCADE to drop the dependent objects too.")
                ops += _drop_users(snap, stmt, "secret", obj, sources_using(snap, obj.id))
                for c in users:
                    ops += _drop_users(snap, stmt, "connection", c, sources_using(snap, c.id))
                ops += [durable.DropConnection(c.id) for c in users]
                ops.append(durable.DropSecret(obj.id))
            else:
                ops += _drop_users(snap, stmt, "connection", obj, sources_using(snap, obj.id))
                ops.append(durable.DropConnection(obj.id))
        seen: set = set()
        return [op for op in ops if not (op in seen or seen.add(op))]

    return build


def sources_using(snap: CatalogSnapshot, object_id: str) -> list:
    """The sources that use secret or connection ``object_id``: PostgreSQL sources by
    their connection, webhook sources by their CHECK's secrets."""
    import json

    from catalog.snapshot import Source

    out = []
    for t in snap.tables.values():
        if not isinstance(t, Source) or t.kind not in ("postgres", "webhook"):
            continue
        spec = json.loads(t.spec)
        if spec.get("connection_id") == object_id or \
                any(b[3] == object_id for b in spec.get("check", {}).get("bindings", [])):
            out.append(t)
    return out


def _drop_users(snap: CatalogSnapshot, stmt: sp.DropItems, kind: str, obj, users: list) -> list:
    """The ops dropping ``users`` (sources of ``obj``) with CASCADE.

    Raises:
        SqlError 2BP01 for users without CASCADE."""
    if not users:
        return []
    if not stmt.cascade:
        raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                       f'cannot drop {kind} "{obj.name}": still depended upon by source "{users[0].name}"',
                       hint="Use DROP ... CASCADE to drop the dependent objects too.")
    from sqlfront.sources import drop_sources

    return drop_sources(sp.DropItems("source", tuple((u.schema, u.name) for u in users), True, True))(snap, None)


def libpq_params(snap: CatalogSnapshot, c: Connection) -> dict:
    """``c``'s parameters for ``psycopg.connect`` (secrets filled in from ``snap``).

    Raises:
        SqlError 42704 for a secret dropped since."""
    names = {"HOST": "host", "PORT": "port", "USER": "user", "PASSWORD": "password", "DATABASE": "dbname",
             "SSL MODE": "sslmode"}
    out = {"connect_timeout": CONNECT_TIMEOUT_S, "dbname": "postgres"}
    for name, value, secret in c.options:
        if secret:
            found = snap.secrets.get(value)
            if found is None:
                raise SqlError(UNDEFINED_OBJECT, f"a secret of connection '{c.name}' was dropped")
            value = found.value
        out[names[name]] = value
    return out


def validate(snap: CatalogSnapshot, c: Connection) -> None:
    """Connect to ``c``'s PostgreSQL and run ``SELECT 1`` (Materialize's VALIDATE CONNECTION).

    Raises:
        SqlError 08001 with libpq's reason when that fails (the password is never in it)."""
    import psycopg

    params = libpq_params(snap, c)
    try:
        with psycopg.connect(**params) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        password = params.get("password")
        if password:
            reason = reason.replace(password, "<REDACTED>")
        raise SqlError(SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, f"failed to connect to PostgreSQL: {reason}") from None
