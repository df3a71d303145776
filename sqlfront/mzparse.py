"""Parse the Materialize statements PostgreSQL's grammar lacks, over pglast's tokens.

Lexing (quoting, comments, string escapes) is PostgreSQL's own scanner
(``pglast.parser.scan``); this module is a small recursive-descent parser over its
tokens. Grammar, from Materialize's SQL reference and seeds/cluster-replicas.md::

    CREATE CLUSTER name [cluster_option [, ...] | (cluster_option [, ...])]
    cluster_option ::= SIZE [=] value | REPLICATION FACTOR [=] n | MANAGED [[=] bool]
                     | AVAILABILITY ZONES [=] ('zone' [, ...]) | REPLICAS (inline_replica [, ...])
    inline_replica ::= name [(replica_option [, ...])]
    replica_option ::= SIZE [=] 'text' | AVAILABILITY ZONE [=] 'text' | REMOTE [=] ('addr' [, ...]) (or ['addr' [, ...]])
                     | TOKEN [=] 'text'   (REMOTE only: the Spark Connect server's bearer token)
    CREATE CLUSTER REPLICA cluster.replica replica_option [, ...]
    DROP CLUSTER [IF EXISTS] name [, ...] [CASCADE | RESTRICT]
    DROP CLUSTER REPLICA [IF EXISTS] cluster.replica [, ...]
    ALTER CLUSTER name RENAME TO new_name | SWAP WITH other
    ALTER CLUSTER name {SET (cluster_option [, ...]) | RESET (option_name [, ...])}
        [WITH (WAIT UNTIL READY (TIMEOUT [=] 'interval', ON TIMEOUT [=] COMMIT | ROLLBACK) | WAIT FOR [=] 'interval')]
    SHOW CLUSTERS [LIKE 'pattern' | WHERE expr]
    SHOW CLUSTER REPLICAS [FOR cluster] [LIKE 'pattern' | WHERE expr]
    CREATE DEFAULT INDEX [IF NOT EXISTS] [name] [IN CLUSTER c] ON obj [USING ARRANGEMENT]
    CREATE INDEX [IF NOT EXISTS] [name] IN CLUSTER c ON obj [USING ARRANGEMENT] (key [, ...])
    SHOW INDEXES [ON obj] [IN CLUSTER c] [LIKE 'pattern' | WHERE expr]
    SHOW ROLES [LIKE 'pattern' | WHERE expr]
    CREATE ROLE name [[WITH] role_option ...]        (Materialize's options, below)
    ALTER ROLE name [[WITH] role_option ...] | ALTER ROLE name RENAME TO new_name
    role_option ::= [NO]SUPERUSER | [NO]LOGIN | [NO]INHERIT | [NO]CREATEROLE | [NO]CREATEDB
                  | [NO]CREATECLUSTER | PASSWORD 'text' | PASSWORD NULL
    GRANT priv [, ...] | ALL [PRIVILEGES] ON target TO grantee [, ...]
    REVOKE priv [, ...] | ALL [PRIVILEGES] ON target FROM grantee [, ...] [CASCADE | RESTRICT]
    target ::= [TABLE | VIEW | SEQUENCE] name [, ...] | ALL TABLES IN SCHEMA s [, ...]
             | SCHEMA s [, ...] | DATABASE d [, ...] | CLUSTER c [, ...] | SYSTEM
    GRANT role [, ...] TO role [, ...]  /  REVOKE role [, ...] FROM role [, ...]
    ALTER CLUSTER name OWNER TO role
    ALTER DEFAULT PRIVILEGES [FOR ROLE r [, ...] | FOR ALL ROLES] [IN SCHEMA s [, ...]]
        {GRANT priv ... ON {TABLES|SCHEMAS|CLUSTERS|DATABASES} TO ... | REVOKE ... FROM ...}
    CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS] [schema.]name [(col [, ...])]
        [IN CLUSTER c] AS query
    SHOW MATERIALIZED VIEWS [FROM schema] [IN CLUSTER c] [LIKE 'pattern' | WHERE expr]
    SHOW CREATE MATERIALIZED VIEW [schema.]name

(PostgreSQL's grammar has no CLUSTER or SYSTEM target nor Materialize's system privileges,
so every GRANT and REVOKE is parsed here.)

(``DROP MATERIALIZED VIEW`` and ``ALTER MATERIALIZED VIEW ... RENAME TO`` are
PostgreSQL's and parsed by pglast.)
(``CREATE INDEX`` without ``IN CLUSTER`` is PostgreSQL's and parsed by pglast.)

``parse_mz`` returns None for any other statement, which then goes to ``pglast.parse_sql``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pglast
from pglast.parser import scan

from catalog.errors import (
    SqlError, FEATURE_NOT_SUPPORTED, INVALID_CATALOG_NAME, INVALID_PARAMETER_VALUE, SYNTAX_ERROR,
)
from catalog.snapshot import DATABASE
from sqlfront.identifiers import truncate_identifier


@dataclass(frozen=True)
class ReplicaOption:
    """An option of a replica (SIZE, AVAILABILITY ZONE, REMOTE, TOKEN) or of a cluster
    (SIZE, REPLICATION FACTOR, MANAGED, AVAILABILITY ZONES)."""

    name: str
    value: object  # str; int (REPLICATION FACTOR); bool (MANAGED); tuple[str, ...] (REMOTE, AVAILABILITY ZONES)
    position: int


@dataclass(frozen=True)
class ReplicaDef:
    name: str
    options: tuple[ReplicaOption, ...]


@dataclass(frozen=True)
class CreateCluster:
    """CREATE CLUSTER: ``replicas`` of an unmanaged one (its REPLICAS clause), and the
    cluster ``options`` other than REPLICAS."""

    name: str
    replicas: tuple[ReplicaDef, ...]
    has_replicas_clause: bool = True
    options: tuple[ReplicaOption, ...] = ()


@dataclass(frozen=True)
class ClusterWait:
    """ALTER CLUSTER ... WITH (WAIT UNTIL READY (TIMEOUT t, ON TIMEOUT COMMIT|ROLLBACK))
    or WITH (WAIT FOR t): ``timeout_s`` seconds; ``until_ready`` False waits the whole
    time; ``commit_on_timeout`` says what a timeout does."""

    until_ready: bool
    timeout_s: float
    commit_on_timeout: bool


@dataclass(frozen=True)
class AlterClusterSet:
    """ALTER CLUSTER name SET (option [, ...]) | RESET (name [, ...]) [WITH (wait)]."""

    name: str
    options: tuple[ReplicaOption, ...] = ()
    reset: tuple[str, ...] = ()
    wait: ClusterWait | None = None


@dataclass(frozen=True)
class AlterClusterSwap:
    """ALTER CLUSTER a SWAP WITH b: the two clusters exchange names."""

    name: str
    other: str


@dataclass(frozen=True)
class CreateClusterReplica:
    cluster: str
    replica: ReplicaDef


@dataclass(frozen=True)
class DropClusters:
    names: tuple[str, ...]
    if_exists: bool
    cascade: bool


@dataclass(frozen=True)
class DropClusterReplicas:
    names: tuple[tuple[str, str], ...]
    if_exists: bool


@dataclass(frozen=True)
class AlterClusterRename:
    name: str
    new_name: str


@dataclass(frozen=True)
class AlterClusterReplicaRename:
    """``ALTER CLUSTER REPLICA [IF EXISTS] cluster.replica RENAME TO new_name``
    (Materialize's "ALTER CLUSTER REPLICA")."""

    cluster: str
    replica: str
    new_name: str
    if_exists: bool


@dataclass(frozen=True)
class CreateViewIfNotExists:
    """``CREATE [TEMP | TEMPORARY] VIEW IF NOT EXISTS ...`` (Materialize's; PostgreSQL's
    grammar lacks it): ``view`` is the statement without IF NOT EXISTS, as pglast parses it."""

    view: object


@dataclass(frozen=True)
class ShowClusters:
    like: str | None = None
    where: str | None = None


@dataclass(frozen=True)
class ShowClusterReplicas:
    cluster: str | None = None
    like: str | None = None
    where: str | None = None


@dataclass(frozen=True)
class ShowObjects:
    """SHOW TABLES | VIEWS | OBJECTS | SOURCES | SINKS | SECRETS | TYPES | CONNECTIONS
    [FROM schema] | SHOW COLUMNS FROM t | SHOW SCHEMAS | DATABASES | ROLES | SHOW ROLE
    MEMBERSHIP [FOR role] (``target``: the schema, relation or role)."""

    kind: str  # the statement's object word, lower case: tables, ..., role membership
    target: str | None = None
    like: str | None = None
    where: str | None = None
    #: SHOW [DEFAULT] PRIVILEGES ON <object types>: the type word, lower case
    on: str | None = None


@dataclass(frozen=True)
class CreateIndex:
    """CREATE [DEFAULT] INDEX, Materialize's or PostgreSQL's (Materialize's SQL reference,
    "CREATE INDEX"). ``keys`` are SQL texts, None for a DEFAULT index (all columns);
    ``cluster`` None means the session's cluster."""

    name: str | None
    schema: str | None
    on: str
    keys: tuple[str, ...] | None
    cluster: str | None = None
    if_not_exists: bool = False
    definition: str = ""


@dataclass(frozen=True)
class ShowIndexes:
    on: str | None = None
    cluster: str | None = None
    like: str | None = None
    where: str | None = None


@dataclass(frozen=True)
class CreateMaterializedView:
    """Materialize's CREATE MATERIALIZED VIEW: ``query`` is the text of its SELECT,
    ``columns`` the column names given (may be fewer than the query's), ``cluster`` None
    for the session's cluster."""

    schema: str | None
    name: str
    query: str
    columns: tuple[str, ...] = ()
    cluster: str | None = None
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class ShowMaterializedViews:
    schema: str | None = None
    cluster: str | None = None
    like: str | None = None
    where: str | None = None


#: what SHOW CREATE takes (Materialize's SQL reference, "SHOW CREATE ..."), longest first
SHOW_CREATE_KINDS = ("materialized view", "table", "view", "index", "cluster", "source", "sink", "connection",
                     "secret", "type")


@dataclass(frozen=True)
class ShowCreate:
    """``SHOW CREATE <kind> name``: ``kind`` one of ``SHOW_CREATE_KINDS`` (lower case)."""

    kind: str
    schema: str | None
    name: str


@dataclass(frozen=True)
class ExplainPlan:
    """Materialize's ``EXPLAIN [RAW | DECORRELATED | OPTIMIZED | PHYSICAL | INCREMENTAL]
    PLAN [WITH (options)] [AS TEXT | JSON] FOR {query | VIEW v | MATERIALIZED VIEW v |
    INDEX i | CREATE VIEW ... | CREATE MATERIALIZED VIEW ... | CREATE INDEX ...}`` and
    ``EXPLAIN TIMESTAMP [AS TEXT | JSON] FOR query``: ``stage`` is raw, decorrelated,
    optimized, physical, incremental or timestamp; ``query`` the text of the SELECT
    explained (for a named object, a SELECT of it, which privileges are checked on);
    ``view`` the named object's (schema or None, name) and ``kind`` its kind (``view``,
    ``materialized view``, ``index``); ``options`` the WITH options' names (upper case),
    ``format`` text or json."""

    stage: str
    query: str
    view: tuple[str | None, str] | None = None
    kind: str | None = None
    options: tuple[str, ...] = ()
    format: str = "text"


@dataclass(frozen=True)
class FetchWith:
    """``FETCH ... WITH (name = value, ...)`` (Materialize's FETCH options, such as
    ``TIMEOUT``): ``fetch`` is the text before WITH (PostgreSQL's FETCH), ``options`` the
    upper-cased names with their values' text (string literals unquoted)."""

    fetch: str
    options: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class DeclareSubscribe:
    """``DECLARE name ... CURSOR FOR SUBSCRIBE ...`` (Materialize): the cursor's name
    and the text of the SUBSCRIBE statement."""

    name: str
    subscribe: str


@dataclass(frozen=True)
class Subscribe:
    """Materialize's ``SUBSCRIBE [TO] obj | (query) [ENVELOPE UPSERT|DEBEZIUM (KEY (cols))]
    [WITH (SNAPSHOT [= bool], PROGRESS [= bool])] [WITHIN TIMESTAMP ORDER BY ...]
    [UP TO expr]`` (its AS OF is split off with ``sqlfront.parse.split_as_of``).
    ``query``: the SQL of the subscribed query (``SELECT * FROM obj`` for an object);
    ``order_by``: WITHIN TIMESTAMP ORDER BY's (output column, descending, nulls first)."""

    query: str
    envelope: str | None = None
    keys: tuple[str, ...] = ()
    snapshot: bool = True
    progress: bool = False
    up_to: str | None = None
    order_by: tuple[tuple[str, bool, bool], ...] = ()


@dataclass(frozen=True)
class CopySubscribe:
    """``COPY (SUBSCRIBE ...) TO STDOUT [options]``: the SUBSCRIBE's text and the rest of
    the COPY after ``TO``."""

    subscribe: str
    rest: str


@dataclass(frozen=True)
class CreateRole:
    """``CREATE ROLE name [[WITH] option ...]`` (Materialize's "CREATE ROLE"): ``options``
    are ``(NAME, value)`` in order: ``INHERIT``/``NOINHERIT``/``LOGIN``/``NOLOGIN``/
    ``SUPERUSER``/``NOSUPERUSER``/``CREATE...``/``NOCREATE...`` (value None) and
    ``PASSWORD`` (a string, or None for ``PASSWORD NULL``)."""

    name: str
    options: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class AlterRole:
    """``ALTER ROLE name [[WITH] option ...]`` or ``ALTER ROLE name RENAME TO new``."""

    name: str
    options: tuple[tuple[str, str | None], ...]
    rename_to: str | None = None


@dataclass(frozen=True)
class GrantPrivileges:
    """``GRANT privilege [, ...] | ALL [PRIVILEGES] ON target TO grantee [, ...]`` and
    ``REVOKE ... FROM`` (Materialize's "GRANT PRIVILEGE"/"REVOKE PRIVILEGE").
    ``privileges``: upper-case names (``["ALL"]`` for ALL); ``kind``: ``TABLE``
    (tables, views, sequences), ``ALL TABLES`` (``targets`` are schemas), ``SCHEMA``,
    ``DATABASE``, ``CLUSTER`` or ``SYSTEM``; ``targets``: qualified names as tuples;
    ``grantees``: role names, ``PUBLIC`` for PUBLIC."""

    revoke: bool
    privileges: tuple[str, ...]
    kind: str
    targets: tuple[tuple[str, ...], ...]
    grantees: tuple[str, ...]


@dataclass(frozen=True)
class GrantRoles:
    """``GRANT role [, ...] TO member [, ...]`` / ``REVOKE role [, ...] FROM member [, ...]``."""

    revoke: bool
    roles: tuple[str, ...]
    members: tuple[str, ...]


@dataclass(frozen=True)
class AlterOwner:
    """``ALTER CLUSTER name OWNER TO role`` (Materialize's ALTER OWNER for clusters; other
    objects' OWNER TO is PostgreSQL's syntax)."""

    kind: str
    name: tuple[str, ...]
    owner: str


@dataclass(frozen=True)
class AlterDefaultPrivileges:
    """``ALTER DEFAULT PRIVILEGES [FOR ROLE r [, ...] | FOR ALL ROLES] [IN SCHEMA s [, ...] |
    IN DATABASE d] {GRANT | REVOKE} ... ON {TABLES | SCHEMAS | CLUSTERS | DATABASES}
    {TO | FROM} grantee [, ...]`` (Materialize's). ``roles``: names, None for ALL ROLES,
    () for the current role; ``grant`` holds the GRANT/REVOKE part (its ``kind`` is the
    plural object type, its ``targets`` empty)."""

    roles: tuple[str, ...] | None
    schemas: tuple[tuple[str, ...], ...]
    grant: "GrantPrivileges"


#: the SHOW statements a query may read as a subquery: ``SELECT ... FROM (SHOW ...)``
SHOW_QUERIES = (ShowClusters, ShowClusterReplicas, ShowObjects, ShowIndexes, ShowMaterializedViews, ShowCreate)


@dataclass(frozen=True)
class SelectWithShows:
    """A query with SHOW statements as subqueries (Materialize's ``SELECT name FROM
    (SHOW CLUSTERS)``): ``parts`` alternates the query's text and the SHOW statements
    (instances of ``SHOW_QUERIES``), in order."""

    parts: tuple

    def text(self, show_sql) -> str:
        """The query with each SHOW replaced by ``(show_sql(stmt))``."""
        return "".join(p if isinstance(p, str) else f"({show_sql(p)})" for p in self.parts)


MzStatement = (CreateMaterializedView | ShowMaterializedViews | ShowCreate | AlterDefaultPrivileges | CreateRole | AlterRole | GrantPrivileges | GrantRoles | AlterOwner | CopySubscribe | Subscribe | FetchWith | DeclareSubscribe | ExplainPlan | CreateIndex | ShowIndexes | ShowObjects | CreateCluster | CreateClusterReplica | DropClusters | DropClusterReplicas | AlterClusterRename | AlterClusterReplicaRename
               | AlterClusterSet | AlterClusterSwap
               | ShowClusters | ShowClusterReplicas | SelectWithShows)

_IDENT_KINDS = ("NO_KEYWORD", "UNRESERVED_KEYWORD", "COL_NAME_KEYWORD", "TYPE_FUNC_NAME_KEYWORD")


class _Parser:
    def __init__(self, sql: str):
        self.sql = sql
        self.toks = [t for t in scan(sql) if t.name not in ("SQL_COMMENT", "C_COMMENT")]
        while self.toks and self.toks[-1].name == "ASCII_59":  # trailing ';'
            self.toks.pop()
        self.i = 0

    # -- token helpers ---------------------------------------------------------------

    def text(self, t) -> str:
        return self.sql[t.start : t.end + 1]

    def peek(self, k: int = 0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def word(self, k: int = 0) -> str | None:
        t = self.peek(k)
        if t is None:
            return None
        if t.kind != "NO_KEYWORD" or t.name == "IDENT":
            return self.text(t).upper() if not self.text(t).startswith('"') else None
        return None

    def error(self, what: str) -> SqlError:
        t = self.peek()
        if t is None:
            return SqlError(SYNTAX_ERROR, f"unexpected end of statement, expected {what}", position=len(self.sql) + 1)
        return SqlError(SYNTAX_ERROR, f'syntax error at or near "{self.text(t)}": expected {what}', position=t.start + 1)

    def accept(self, *words: str) -> bool:
        for k, w in enumerate(words):
            if self.word(k) != w:
                return False
        self.i += len(words)
        return True

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(" ".join(words))

    def accept_punct(self, ch: str) -> bool:
        t = self.peek()
        if t is not None and t.name == f"ASCII_{ord(ch)}":
            self.i += 1
            return True
        return False

    def expect_punct(self, ch: str) -> None:
        if not self.accept_punct(ch):
            raise self.error(f"'{ch}'")

    def ident(self, keywords: bool = False) -> str:
        """An identifier; with ``keywords`` a reserved keyword too (Materialize's parser
        takes ``default`` as a cluster name: ``CREATE CLUSTER REPLICA default.r``)."""
        t = self.peek()
        kinds = (*_IDENT_KINDS, "RESERVED_KEYWORD") if keywords else _IDENT_KINDS
        if t is None or (t.kind not in kinds) or t.name in ("SCONST", "ICONST", "FCONST") or t.name.startswith("ASCII_"):
            raise self.error("an identifier")
        self.i += 1
        raw = self.text(t)
        if raw.upper().startswith('U&"'):
            raise SqlError(SYNTAX_ERROR, "unicode identifiers are not supported", position=t.start + 1)
        # past 63 bytes, cut as PostgreSQL's scanner (and pglast's) cuts them
        return truncate_identifier(raw[1:-1].replace('""', '"') if raw.startswith('"') else raw.lower())

    def string(self) -> str:
        t = self.peek()
        if t is None or t.name != "SCONST":
            raise self.error("a string literal")
        self.i += 1
        raw = self.text(t)
        if raw[:1] in ("E", "e"):
            raw = raw[1:]
            return raw[1:-1].replace("''", "'").encode().decode("unicode_escape")
        return raw[1:-1].replace("''", "'")

    def done(self) -> None:
        if self.peek() is not None:
            raise self.error("end of statement")

    def rest_text(self) -> str:
        t = self.peek()
        if t is None:
            raise self.error("an expression")
        end = self.toks[-1].end + 1
        self.i = len(self.toks)
        return self.sql[t.start : end]

    # -- statements ------------------------------------------------------------------

    def replica_options(self, parenthesized: bool) -> tuple[ReplicaOption, ...]:
        opts = []
        while True:
            t = self.peek()
            pos = t.start + 1 if t else len(self.sql)
            if self.accept("SIZE"):
                self.accept_punct("=")
                opts.append(ReplicaOption("SIZE", self.size_value(), pos))
            elif self.accept("AVAILABILITY", "ZONE"):
                self.accept_punct("=")
                opts.append(ReplicaOption("AVAILABILITY ZONE", self.string(), pos))
            elif self.accept("REMOTE"):
                self.accept_punct("=")
                close = "]" if self.accept_punct("[") else ")"  # Materialize once wrote ['addr']
                if close == ")":
                    self.expect_punct("(")
                opts.append(ReplicaOption("REMOTE", self.strings(close), pos))
            elif self.accept("TOKEN"):
                self.accept_punct("=")
                opts.append(ReplicaOption("TOKEN", self.string(), pos))
            else:
                raise self.error("SIZE, AVAILABILITY ZONE, REMOTE or TOKEN")
            if any(o.name == opts[-1].name for o in opts[:-1]):
                raise SqlError(SYNTAX_ERROR, f"{opts[-1].name} specified more than once", position=pos)
            if not self.accept_punct(","):
                break
        if parenthesized:
            self.expect_punct(")")
        return tuple(opts)

    def strings(self, close: str) -> tuple[str, ...]:
        """'text' [, 'text' ...] and the ``close`` punctuation after them."""
        out = [self.string()]
        while self.accept_punct(","):
            out.append(self.string())
        self.expect_punct(close)
        return tuple(out)

    def size_value(self) -> str:
        """A SIZE's value: a string, or a bare name (Materialize takes ``SIZE xsmall``)."""
        t = self.peek()
        if t is not None and t.name == "SCONST":
            return self.string()
        if t is not None and t.name not in ("ICONST", "FCONST", "NULL_P") and t.kind in _IDENT_KINDS \
                and not t.name.startswith("ASCII_"):
            return self.ident()
        raise SqlError(INVALID_PARAMETER_VALUE, "invalid SIZE: must provide a string value",
                       position=(t.start + 1) if t else len(self.sql) + 1)

    def cluster_options(self, parenthesized: bool) -> tuple[tuple[ReplicaOption, ...], tuple[ReplicaDef, ...] | None]:
        """CREATE CLUSTER's options (Materialize's "CREATE CLUSTER"): SIZE [=] value,
        REPLICATION FACTOR [=] n, MANAGED [[=] bool], AVAILABILITY ZONES [=] ('z', ...),
        REPLICAS (...); the replicas are None without REPLICAS.

        Raises:
            SqlError 42601 for an option given twice or malformed; 0A000 for
            Materialize's introspection, disk and schedule options (nothing here does
            what they ask)."""
        opts: list[ReplicaOption] = []
        replicas = None
        while True:
            t = self.peek()
            pos = t.start + 1 if t else len(self.sql) + 1
            if self.accept("REPLICAS"):
                if replicas is not None:
                    raise SqlError(SYNTAX_ERROR, "REPLICAS specified more than once", position=pos)
                self.accept_punct("=")
                replicas = self.inline_replicas()
            else:
                opt = self.cluster_option(pos)
                if any(o.name == opt.name for o in opts):
                    raise SqlError(SYNTAX_ERROR, f"{opt.name} specified more than once", position=pos)
                opts.append(opt)
            if not self.accept_punct(","):
                break
        if parenthesized:
            self.expect_punct(")")
        return tuple(opts), replicas

    def cluster_option(self, pos: int) -> ReplicaOption:
        """One of ALTER CLUSTER SET's options (``cluster_options`` but REPLICAS)."""
        if self.accept("SIZE"):
            self.accept_punct("=")
            return ReplicaOption("SIZE", self.size_value(), pos)
        if self.accept("REPLICATION", "FACTOR"):
            self.accept_punct("=")
            t = self.peek()
            if t is None or t.name != "ICONST":
                raise SqlError(INVALID_PARAMETER_VALUE, "invalid REPLICATION FACTOR: must provide a non-negative integer",
                               position=(t.start + 1) if t else len(self.sql) + 1)
            self.i += 1
            return ReplicaOption("REPLICATION FACTOR", int(self.text(t)), pos)
        if self.accept("MANAGED"):
            value = True
            if self.accept_punct("=") or self.word() in ("TRUE", "FALSE", "ON", "OFF"):
                w = self.word()
                if w not in ("TRUE", "FALSE", "ON", "OFF"):
                    raise self.error("a boolean")
                self.i += 1
                value = w in ("TRUE", "ON")
            return ReplicaOption("MANAGED", value, pos)
        if self.accept("AVAILABILITY", "ZONES"):
            self.accept_punct("=")
            self.expect_punct("(")
            return ReplicaOption("AVAILABILITY ZONES", self.strings(")"), pos)
        for words in (("INTROSPECTION", "INTERVAL"), ("INTROSPECTION", "DEBUGGING"), ("DISK",), ("SCHEDULE",),
                      ("WORKLOAD", "CLASS")):
            if self.accept(*words):
                raise SqlError(FEATURE_NOT_SUPPORTED, f"{' '.join(words)} is not supported",
                               detail="sqlfront keeps no introspection dataflows, disks or schedules.", position=pos)
        raise self.error("SIZE, REPLICATION FACTOR, MANAGED, AVAILABILITY ZONES or REPLICAS")

    def inline_replicas(self) -> tuple[ReplicaDef, ...]:
        """REPLICAS (name [(option [, ...])] [, ...])."""
        replicas = []
        self.expect_punct("(")
        if not self.accept_punct(")"):
            while True:
                rname = self.ident()
                opts: tuple = ()
                if self.accept_punct("("):
                    opts = self.replica_options(True)
                replicas.append(ReplicaDef(rname, opts))
                if not self.accept_punct(","):
                    break
            self.expect_punct(")")
        return tuple(replicas)

    def alter_cluster_set(self, name: str) -> AlterClusterSet:
        """ALTER CLUSTER name SET (option [, ...]) | RESET (name [, ...]) [WITH (wait)]
        (Materialize's "ALTER CLUSTER")."""
        options: tuple = ()
        reset: list[str] = []
        if self.accept("SET"):
            self.expect_punct("(")
            options, replicas = self.cluster_options(True)
            if replicas is not None:
                raise SqlError(FEATURE_NOT_SUPPORTED, "ALTER CLUSTER ... SET (REPLICAS ...) is not supported",
                               hint="Use CREATE CLUSTER REPLICA and DROP CLUSTER REPLICA.")
        else:
            self.expect("RESET")
            self.expect_punct("(")
            while True:
                for words in (("REPLICATION", "FACTOR"), ("SIZE",), ("MANAGED",), ("AVAILABILITY", "ZONES"),
                              ("REPLICAS",), ("INTROSPECTION", "INTERVAL"), ("INTROSPECTION", "DEBUGGING"),
                              ("DISK",), ("SCHEDULE",), ("WORKLOAD", "CLASS"), ("IDLE", "ARRANGEMENT", "MERGE", "EFFORT")):
                    if self.accept(*words):
                        reset.append(" ".join(words))
                        break
                else:
                    raise self.error("REPLICATION FACTOR, SIZE, MANAGED, AVAILABILITY ZONES or REPLICAS")
                if not self.accept_punct(","):
                    break
            self.expect_punct(")")
        wait = None
        if self.accept("WITH"):
            self.expect_punct("(")
            wait = self.cluster_wait()
            self.expect_punct(")")
        self.done()
        return AlterClusterSet(name, options, tuple(reset), wait)

    def cluster_wait(self) -> ClusterWait:
        """WAIT UNTIL READY (TIMEOUT [=] 'interval', ON TIMEOUT [=] COMMIT | ROLLBACK)
        or WAIT FOR [=] 'interval' (Materialize's graceful reconfiguration)."""
        self.expect("WAIT")
        if self.accept("FOR"):
            self.accept_punct("=")
            return ClusterWait(False, self.interval_seconds(), True)
        self.expect("UNTIL", "READY")
        self.expect_punct("(")
        timeout, commit = None, None
        while True:
            if self.accept("TIMEOUT"):
                self.accept_punct("=")
                timeout = self.interval_seconds()
            elif self.accept("ON", "TIMEOUT"):
                self.accept_punct("=")
                t = self.peek()
                w = self.string().upper() if t is not None and t.name == "SCONST" else self.word()
                if t is not None and t.name != "SCONST":
                    self.i += 1
                if w not in ("COMMIT", "ROLLBACK"):
                    raise SqlError(SYNTAX_ERROR, "ON TIMEOUT must be COMMIT or ROLLBACK",
                                   position=(t.start + 1) if t else len(self.sql) + 1)
                commit = w == "COMMIT"
            else:
                raise self.error("TIMEOUT or ON TIMEOUT")
            if not self.accept_punct(","):
                break
        self.expect_punct(")")
        if timeout is None:
            raise SqlError(SYNTAX_ERROR, "WAIT UNTIL READY requires a TIMEOUT")
        return ClusterWait(True, timeout, bool(commit))

    def interval_seconds(self) -> float:
        """A string holding a PostgreSQL interval ('10m', '1 hour'), in seconds."""
        from catalog.intervalio import parse_interval

        t = self.peek()
        text = self.string()
        try:
            iv = parse_interval(text)
        except (SqlError, ValueError):
            raise SqlError(INVALID_PARAMETER_VALUE, f"invalid interval '{text}'", position=t.start + 1) from None
        seconds = ((iv.months * 30 + iv.days) * 86_400_000_000 + iv.micros) / 1e6
        if seconds < 0:
            raise SqlError(INVALID_PARAMETER_VALUE, f"timeout must not be negative: '{text}'", position=t.start + 1)
        return seconds

    def explain(self) -> ExplainPlan:
        """What follows EXPLAIN (see :class:`ExplainPlan`)."""
        stage = "optimized"
        if self.accept("TIMESTAMP"):
            stage = "timestamp"
        else:
            for w in ("RAW", "DECORRELATED", "OPTIMIZED", "PHYSICAL", "INCREMENTAL"):
                if self.accept(w):
                    stage = w.lower()
            self.expect("PLAN")
        options = []
        if self.accept("WITH"):
            self.expect_punct("(")
            while True:
                words = [self.ident().upper()]
                while self.peek() is not None and self.peek().name not in ("ASCII_44", "ASCII_41", "ASCII_61"):
                    words.append(self.ident().upper())
                if self.accept_punct("="):
                    self.i += 1  # the value: no option is taken, so none is read
                options.append(" ".join(words))
                if not self.accept_punct(","):
                    break
            self.expect_punct(")")
        fmt = "text"
        if self.accept("AS"):
            fmt = "json" if self.accept("JSON") else "text"
            if fmt == "text":
                self.expect("TEXT")
        self.expect("FOR")
        for kind in ("materialized view", "view", "index"):
            start = self.i
            if self.accept(*kind.upper().split()):
                start = self.i
                view = self.object_name()
                name = self.sql[self.toks[start].start:self.toks[self.i - 1].end + 1]
                self.done()
                return ExplainPlan(stage, "SELECT 1" if kind == "index" else f"SELECT * FROM {name}", view, kind,
                                   tuple(options), fmt)
            self.i = start
        if self.word() == "CREATE":
            return self._explain_create(stage, tuple(options), fmt)
        return ExplainPlan(stage, self.rest_text(), None, None, tuple(options), fmt)

    def _explain_create(self, stage: str, options: tuple[str, ...], fmt: str) -> ExplainPlan:
        """EXPLAIN ... FOR CREATE [OR REPLACE] [MATERIALIZED] VIEW ... AS query (the
        query's plan) or FOR CREATE [DEFAULT] INDEX ... ON obj (the indexed object's)."""
        if self.word(1) in ("INDEX", "DEFAULT"):
            idx = self.create_index()
            return ExplainPlan(stage, "SELECT 1", (idx.schema, idx.on), "index on", options, fmt)
        depth = 0
        for k in range(self.i, len(self.toks)):
            t = self.toks[k]
            depth += (t.name == "ASCII_40") - (t.name == "ASCII_41")
            if depth == 0 and t.name == "AS":
                self.i = k + 1
                return ExplainPlan(stage, self.rest_text(), None, None, options, fmt)
        raise self.error("AS")

    def create_index(self) -> CreateIndex:
        default = self.accept("CREATE", "DEFAULT", "INDEX")
        if not default:
            self.expect("CREATE", "INDEX")
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        name = None
        if self.word() not in ("IN", "ON"):
            name = self.ident()
        cluster = None
        if self.accept("IN", "CLUSTER"):
            cluster = self.ident()
        self.expect("ON")
        schema, on = self.object_name()
        if self.accept("USING"):
            self.expect("ARRANGEMENT")
        keys = None
        if not default:
            self.expect_punct("(")
            keys = tuple(self.key_texts())
        self.done()
        return CreateIndex(name, schema, on, keys, cluster, if_not_exists, self.sql.strip().rstrip(";").strip())

    def object_name(self) -> tuple[str | None, str]:
        """``[[database.]schema.]name`` as (schema or None, name). The database, if named,
        must be the one database (Materialize: 3D000 "unknown database")."""
        parts = [self.ident()]
        while len(parts) < 3 and self.accept_punct("."):
            parts.append(self.ident())
        if len(parts) == 3 and parts[0] != DATABASE:
            raise SqlError(INVALID_CATALOG_NAME, f"unknown database '{parts[0]}'")
        return (parts[-2] if len(parts) > 1 else None), parts[-1]

    def create_materialized_view(self) -> CreateMaterializedView:
        """CREATE [OR REPLACE] MATERIALIZED VIEW (Materialize's SQL reference)."""
        self.expect("CREATE")
        or_replace = self.accept("OR", "REPLACE")
        self.expect("MATERIALIZED", "VIEW")
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        schema, name = self.object_name()
        columns: list[str] = []
        if self.accept_punct("("):
            columns.append(self.ident())
            while self.accept_punct(","):
                columns.append(self.ident())
            self.expect_punct(")")
        cluster = None
        if self.accept("IN", "CLUSTER"):
            cluster = self.ident()
        if self.word() == "WITH":
            raise SqlError(FEATURE_NOT_SUPPORTED, "CREATE MATERIALIZED VIEW ... WITH (...) options are not supported",
                           position=self.peek().start + 1)
        self.expect("AS")
        return CreateMaterializedView(schema, name, self.rest_text(), tuple(columns), cluster, or_replace,
                                      if_not_exists)

    def key_texts(self) -> list[str]:
        """The comma-separated expressions up to the closing parenthesis, as SQL text (a
        bare identifier as the column name it names)."""
        keys, depth, start = [], 0, self.i
        while True:
            t = self.peek()
            if t is None:
                raise self.error("')'")
            if t.name == "ASCII_40":
                depth += 1
            elif t.name == "ASCII_41" and depth > 0:
                depth -= 1
            elif t.name in ("ASCII_41", "ASCII_44") and depth == 0:
                if start == self.i:
                    raise self.error("an expression")
                if self.i - start == 1:
                    self.i = start
                    keys.append(self.ident())
                else:
                    keys.append(self.sql[self.toks[start].start : self.toks[self.i - 1].end + 1])
                self.i += 1
                if t.name == "ASCII_41":
                    return keys
                start = self.i
                continue
            self.i += 1

    def parse(self):
        if self.accept("EXPLAIN"):
            return self.explain()
        if self.word(0) == "CREATE" and self.word(1) in ("DEFAULT", "INDEX"):
            return self.create_index()
        if self.word(0) == "CREATE" and self.word(1) in ("MATERIALIZED", "OR"):
            return self.create_materialized_view()
        if self.accept("SHOW", "MATERIALIZED", "VIEWS"):
            schema = None
            if self.accept("FROM") or (self.word() == "IN" and self.word(1) != "CLUSTER" and self.accept("IN")):
                schema = self.ident()
            cluster = self.ident() if self.accept("IN", "CLUSTER") else None
            like, where = self.show_filter()
            return ShowMaterializedViews(schema, cluster, like, where)
        if self.accept("SHOW", "CREATE"):
            kind = next((k for k in SHOW_CREATE_KINDS if self.accept(*k.upper().split())), None)
            if kind is None:
                raise self.error(", ".join(k.upper() for k in SHOW_CREATE_KINDS))
            schema, name = (None, self.ident()) if kind == "cluster" else self.object_name()
            self.done()
            return ShowCreate(kind, schema, name)
        if self.accept("SHOW", "INDEXES") or self.accept("SHOW", "INDEX"):
            on = cluster = None
            if self.accept("ON") or self.accept("FROM"):
                on = self.ident()
                if self.accept_punct("."):
                    on = self.ident()
            if self.accept("IN", "CLUSTER"):
                cluster = self.ident()
            like, where = self.show_filter()
            return ShowIndexes(on, cluster, like, where)
        if self.accept("CREATE", "CLUSTER", "REPLICA"):
            cluster = self.ident(keywords=True)
            self.expect_punct(".")
            name = self.ident()
            paren = self.accept_punct("(")
            opts = self.replica_options(paren)
            self.done()
            return CreateClusterReplica(cluster, ReplicaDef(name, opts))
        if self.accept("CREATE", "CLUSTER"):
            name = self.ident()
            options: tuple = ()
            replicas = None
            if self.accept_punct("("):
                options, replicas = self.cluster_options(True)
            elif self.peek() is not None:
                options, replicas = self.cluster_options(False)
            self.done()
            return CreateCluster(name, replicas or (), replicas is not None, options)
        if self.accept("DROP", "CLUSTER", "REPLICA"):
            if_exists = self.accept("IF", "EXISTS")
            names = []
            while True:
                c = self.ident(keywords=True)
                self.expect_punct(".")
                names.append((c, self.ident()))
                if not self.accept_punct(","):
                    break
            self.done()
            return DropClusterReplicas(tuple(names), if_exists)
        if self.accept("DROP", "CLUSTER"):
            if_exists = self.accept("IF", "EXISTS")
            names = [self.ident()]
            while self.accept_punct(","):
                names.append(self.ident())
            cascade = False
            if self.accept("CASCADE"):
                cascade = True
            else:
                self.accept("RESTRICT")
            self.done()
            return DropClusters(tuple(names), if_exists, cascade)
        if self.accept("ALTER", "CLUSTER", "REPLICA"):
            if_exists = self.accept("IF", "EXISTS")
            cluster = self.ident(keywords=True)
            self.expect_punct(".")
            replica = self.ident()
            if self.accept("OWNER", "TO"):
                raise SqlError(FEATURE_NOT_SUPPORTED, "ALTER CLUSTER REPLICA ... OWNER TO is not supported",
                               detail="A replica belongs to its cluster's owner.",
                               hint="Use ALTER CLUSTER ... OWNER TO.")
            self.expect("RENAME", "TO")
            new = self.ident()
            self.done()
            return AlterClusterReplicaRename(cluster, replica, new, if_exists)
        if self.accept("ALTER", "CLUSTER"):
            name = self.ident()
            if self.accept("OWNER", "TO"):
                owner = self.ident()
                self.done()
                return AlterOwner("CLUSTER", (name,), owner)
            if self.word() in ("SET", "RESET"):
                return self.alter_cluster_set(name)
            if self.accept("SWAP", "WITH"):
                other = self.ident()
                self.done()
                return AlterClusterSwap(name, other)
            if self.word() != "RENAME":
                raise self.error("OWNER, RENAME, RESET, SET or SWAP")
            self.expect("RENAME", "TO")
            new = self.ident()
            self.done()
            return AlterClusterRename(name, new)
        if self.word() == "SHOW" and (self.word(1) == "PRIVILEGES" or (self.word(1), self.word(2)) == ("DEFAULT", "PRIVILEGES")):
            kind = "privileges" if self.word(1) == "PRIVILEGES" else "default privileges"
            self.i += len(kind.split()) + 1
            on = self.ident().lower() if self.accept("ON") else None
            target = self.ident() if self.accept("FOR") else None
            like, where = self.show_filter()
            return ShowObjects(kind, target, like, where, on)
        if self.accept("SHOW", "ROLE", "MEMBERSHIP"):
            target = self.ident() if self.accept("FOR") else None
            like, where = self.show_filter()
            return ShowObjects("role membership", target, like, where)
        for kind in ("TABLES", "SCHEMAS", "DATABASES", "VIEWS", "ROLES", "OBJECTS", "SOURCES", "SINKS", "SECRETS",
                     "TYPES", "CONNECTIONS"):
            if self.accept("SHOW", kind):
                target = self.ident() if self.accept("FROM") else None
                like, where = self.show_filter()
                return ShowObjects(kind.lower(), target, like, where)
        if self.accept("SHOW", "COLUMNS"):
            if not (self.accept("FROM") or self.accept("IN")):
                raise self.error("FROM")
            target = self.ident()
            if self.accept_punct("."):
                target = self.ident()
            like, where = self.show_filter()
            return ShowObjects("columns", target, like, where)
        if self.accept("SHOW", "CLUSTERS"):
            like, where = self.show_filter()
            return ShowClusters(like, where)
        if self.accept("SHOW", "CLUSTER", "REPLICAS"):
            cluster = self.ident() if self.accept("FOR") else None
            like, where = self.show_filter()
            return ShowClusterReplicas(cluster, like, where)
        return None

    # -- roles and privileges --------------------------------------------------------

    _ROLE_FLAGS = ("SUPERUSER", "NOSUPERUSER", "LOGIN", "NOLOGIN", "INHERIT", "NOINHERIT", "CREATEROLE",
                   "NOCREATEROLE", "CREATEDB", "NOCREATEDB", "CREATECLUSTER", "NOCREATECLUSTER")

    def role_options(self) -> tuple[tuple[str, str | None], ...]:
        self.accept("WITH")
        opts = []
        while self.peek() is not None:
            w = self.word()
            if w in self._ROLE_FLAGS:
                self.i += 1
                opts.append((w, None))
            elif w == "PASSWORD":
                self.i += 1
                opts.append(("PASSWORD", None if self.accept("NULL") else self.string()))
            else:
                raise self.error("a role attribute")
            self.accept_punct(",")
        return tuple(opts)

    def qualified_name(self) -> tuple[str, ...]:
        parts = [self.ident()]
        while self.accept_punct("."):
            parts.append(self.ident())
        return tuple(parts)

    def name_list(self) -> tuple[tuple[str, ...], ...]:
        names = [self.qualified_name()]
        while self.accept_punct(","):
            names.append(self.qualified_name())
        return tuple(names)

    def role_list(self) -> tuple[str, ...]:
        names = []
        while True:
            self.accept("GROUP")
            names.append("PUBLIC" if self.accept("PUBLIC") else self.ident())
            if not self.accept_punct(","):
                return tuple(names)

    def alter_default_privileges(self) -> AlterDefaultPrivileges:
        self.expect("ALTER", "DEFAULT", "PRIVILEGES")
        roles: tuple[str, ...] | None = ()
        schemas: tuple = ()
        if self.accept("FOR", "ALL", "ROLES"):
            roles = None
        elif self.accept("FOR", "ROLE") or self.accept("FOR", "USER"):
            roles = self.role_list()
        if self.accept("IN", "SCHEMA"):
            schemas = self.name_list()
        elif self.accept("IN", "DATABASE"):
            for (d, *_) in self.name_list():
                if d != "materialize":
                    raise SqlError(INVALID_CATALOG_NAME, f"unknown database '{d}'")
        if self.word() not in ("GRANT", "REVOKE"):
            raise self.error("GRANT or REVOKE")
        revoke = self.word() == "REVOKE"
        self.i += 1
        if self.accept("ALL"):
            self.accept("PRIVILEGES")
            privs = ["ALL"]
        else:
            privs = [self.word() or ""]
            self.i += 1
            while self.accept_punct(","):
                privs.append(self.word() or "")
                self.i += 1
        self.expect("ON")
        kind = self.word()
        if kind not in ("TABLES", "SCHEMAS", "CLUSTERS", "DATABASES"):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"ALTER DEFAULT PRIVILEGES ON {kind} is not supported")
        self.i += 1
        self.expect("FROM" if revoke else "TO")
        grantees = self.role_list()
        self.accept("CASCADE") or self.accept("RESTRICT")
        self.done()
        return AlterDefaultPrivileges(roles, schemas, GrantPrivileges(revoke, tuple(privs), kind, (), grantees))

    def grant(self):
        revoke = self.word() == "REVOKE"
        self.i += 1
        if revoke and self.accept("GRANT", "OPTION", "FOR") or revoke and self.accept("ADMIN", "OPTION", "FOR"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "GRANT OPTION and ADMIN OPTION are not supported")
        # a privilege grant has ON before TO/FROM; a role grant has none
        on_at = next((k for k in range(len(self.toks) - self.i) if self.word(k) == "ON"), None)
        if on_at is None:
            roles = tuple(n for n in self.role_list())
            self.expect("FROM" if revoke else "TO")
            members = self.role_list()
            self.accept("CASCADE") or self.accept("RESTRICT")
            if self.accept("WITH"):
                raise SqlError(FEATURE_NOT_SUPPORTED, "GRANT OPTION and ADMIN OPTION are not supported")
            self.done()
            return GrantRoles(revoke, roles, members)
        if self.accept("ALL"):
            self.accept("PRIVILEGES")
            privs = ["ALL"]
        else:
            privs = []
            while True:
                w = self.word()
                if w is None:
                    raise self.error("a privilege")
                self.i += 1
                privs.append(w)
                if not self.accept_punct(","):
                    break
        self.expect("ON")
        targets: tuple = ()
        if self.accept("SYSTEM"):
            kind = "SYSTEM"
        elif self.accept("ALL", "TABLES"):
            kind = "ALL TABLES"
            self.expect("IN", "SCHEMA")
            targets = self.name_list()
        elif self.accept("ALL"):
            raise SqlError(FEATURE_NOT_SUPPORTED, f"GRANT ON ALL {self.word() or ''} is not supported")
        else:
            kind = "TABLE"
            for k in ("SCHEMA", "DATABASE", "CLUSTER"):
                if self.accept(k):
                    kind = k
                    break
            else:
                if self.word() in ("TYPE", "SECRET", "CONNECTION", "FUNCTION", "LANGUAGE", "DOMAIN", "TABLESPACE",
                                   "FOREIGN", "LARGE", "ROUTINE", "PROCEDURE", "NETWORK"):
                    raise SqlError(FEATURE_NOT_SUPPORTED, f"GRANT ON {self.word()} is not supported")
                self.accept("TABLE") or self.accept("VIEW") or self.accept("SEQUENCE") or \
                    self.accept("MATERIALIZED", "VIEW")
            targets = self.name_list()
        self.expect("FROM" if revoke else "TO")
        grantees = self.role_list()
        if self.accept("WITH", "GRANT", "OPTION"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "GRANT OPTION is not supported")
        if self.accept("GRANTED", "BY"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "GRANTED BY is not supported")
        self.accept("CASCADE") or self.accept("RESTRICT")
        self.done()
        return GrantPrivileges(revoke, tuple(privs), kind, targets, grantees)

    def show_filter(self) -> tuple[str | None, str | None]:
        if self.accept("LIKE"):
            s = self.string()
            self.done()
            return s, None
        if self.accept("WHERE"):
            return None, self.rest_text()
        self.done()
        return None, None


_STARTS = {("CREATE", "CLUSTER"), ("DROP", "CLUSTER"), ("ALTER", "CLUSTER"), ("SHOW", "CLUSTERS"), ("SHOW", "CLUSTER"),
           ("EXPLAIN", "RAW"), ("EXPLAIN", "DECORRELATED"), ("EXPLAIN", "OPTIMIZED"), ("EXPLAIN", "PHYSICAL"), ("EXPLAIN", "INCREMENTAL"), ("EXPLAIN", "PLAN"), ("EXPLAIN", "TIMESTAMP"),
           ("SHOW", "TABLES"), ("SHOW", "COLUMNS"), ("SHOW", "SCHEMAS"), ("SHOW", "DATABASES"), ("SHOW", "VIEWS"),
           ("SHOW", "INDEXES"), ("SHOW", "INDEX"), ("CREATE", "DEFAULT"), ("SHOW", "ROLES"),
           ("SHOW", "OBJECTS"), ("SHOW", "SOURCES"), ("SHOW", "SINKS"), ("SHOW", "SECRETS"), ("SHOW", "TYPES"),
           ("SHOW", "CONNECTIONS"), ("SHOW", "ROLE"), ("SHOW", "PRIVILEGES"), ("SHOW", "DEFAULT"),
           ("CREATE", "MATERIALIZED"), ("SHOW", "MATERIALIZED"), ("SHOW", "CREATE")}


def select_with_shows(sql: str) -> SelectWithShows | None:
    """``sql`` as a SelectWithShows when it reads a SHOW statement as a subquery, else None.

    Raises:
        SqlError 42601 for a malformed SHOW inside it."""
    p = _Parser(sql)
    parts: list = []
    last = 0
    k = 0
    while k < len(p.toks) - 1:
        if p.toks[k].name == "ASCII_40" and p.word(k + 1) == "SHOW":
            depth, end = 0, None
            for j in range(k, len(p.toks)):
                depth += (p.toks[j].name == "ASCII_40") - (p.toks[j].name == "ASCII_41")
                if depth == 0:
                    end = j
                    break
            if end is None:
                return None
            show = parse_mz(sql[p.toks[k + 1].start: p.toks[end].start])
            if isinstance(show, SHOW_QUERIES):
                parts += [sql[last: p.toks[k].start], show]
                last = p.toks[end].end + 1
                k = end
        k += 1
    return SelectWithShows(tuple(parts) + (sql[last:],)) if parts else None


def parse_mz(sql: str) -> MzStatement | None:
    """Parse ``sql`` if it is one of the Materialize statements above, else return None.

    Raises:
        SqlError 42601 with a 1-based position for a malformed Materialize statement.
    """
    p = _Parser(sql)
    if p.word(0) == "SUBSCRIBE":
        return _subscribe(p)
    if p.word(0) == "COPY" and p.peek(1) is not None and p.peek(1).name == "ASCII_40" and p.word(2) == "SUBSCRIBE":
        depth = 0
        for k in range(1, len(p.toks)):
            depth += (p.toks[k].name == "ASCII_40") - (p.toks[k].name == "ASCII_41")
            if depth == 0:
                return CopySubscribe(sql[p.toks[2].start: p.toks[k].start].strip(), sql[p.toks[k].end + 1:].strip())
        raise p.error("')'")
    if p.word(0) == "FETCH":
        return _fetch_with(p)
    if p.word(0) == "DECLARE":
        return _declare_subscribe(p)
    if _is_mz_create_index(p):
        return p.parse()
    if (p.word(0), p.word(1), p.word(2), p.word(3)) == ("CREATE", "OR", "REPLACE", "MATERIALIZED"):
        return p.parse()
    if p.word(0) in ("GRANT", "REVOKE"):
        return p.grant()
    if (p.word(0), p.word(1), p.word(2)) == ("ALTER", "MATERIALIZED", "VIEW") and \
            any(p.word(k) == "SET" and p.word(k + 1) == "CLUSTER" for k in range(3, len(p.toks))):
        raise SqlError(FEATURE_NOT_SUPPORTED, "ALTER MATERIALIZED VIEW ... SET CLUSTER is not supported",
                       hint="Create the materialized view again IN CLUSTER the new cluster.")
    k = 2 if p.word(1) in ("TEMP", "TEMPORARY") else 1  # CREATE [TEMP | TEMPORARY] VIEW IF NOT EXISTS
    if (p.word(0), p.word(k), p.word(k + 1), p.word(k + 2), p.word(k + 3)) == ("CREATE", "VIEW", "IF", "NOT", "EXISTS"):
        try:
            view = pglast.parse_sql(sql[: p.toks[k + 1].start] + sql[p.toks[k + 3].end + 1:])[0].stmt
        except pglast.parser.ParseError as e:
            raise SqlError(SYNTAX_ERROR, str(e.args[0] if e.args else e)) from None
        return CreateViewIfNotExists(view)
    if (p.word(0), p.word(1)) == ("SET", "SCHEMA") or (p.word(0), p.word(1), p.word(2)) == ("SET", "SESSION", "SCHEMA"):
        # Materialize's SET SCHEMA name: search_path is that schema alone (PostgreSQL's
        # grammar takes a string literal only)
        k = 2 if p.word(1) == "SCHEMA" else 3
        t = p.peek(k)
        if t is not None and t.name != "SCONST" and t.name not in ("ASCII_61", "TO"):
            return pglast.parse_sql(f"SET search_path TO {sql[t.start:].strip().rstrip(';')}")[0].stmt
    if (p.word(0), p.word(1)) == ("CREATE", "SCHEMA"):
        # Materialize's CREATE SCHEMA names its database: ``materialize.s`` (PostgreSQL's
        # grammar takes a bare name only)
        k = 5 if (p.word(2), p.word(3), p.word(4)) == ("IF", "NOT", "EXISTS") else 2
        dot = p.peek(k + 1)
        if dot is not None and dot.name == "ASCII_46":
            p.i = k
            database = p.ident()
            if database != DATABASE:
                raise SqlError(INVALID_CATALOG_NAME, f"unknown database '{database}'")
            try:
                return pglast.parse_sql(sql[: p.toks[k].start] + sql[dot.end + 1:])[0].stmt
            except pglast.parser.ParseError as e:
                raise SqlError(SYNTAX_ERROR, str(e.args[0] if e.args else e)) from None
    if (p.word(0), p.word(1)) == ("ALTER", "DEFAULT"):
        return p.alter_default_privileges()
    if p.accept("CREATE", "ROLE"):
        name = p.ident()
        return CreateRole(name, p.role_options())
    if p.accept("ALTER", "ROLE"):
        name = p.ident()
        if p.accept("RENAME", "TO"):
            new = p.ident()
            p.done()
            return AlterRole(name, (), new)
        if p.word() in ("SET", "RESET"):
            raise SqlError(FEATURE_NOT_SUPPORTED, "ALTER ROLE ... SET is not supported")
        return AlterRole(name, p.role_options())
    from sqlfront import source_parse

    stmt = source_parse.parse(p)
    if stmt is not None:
        return stmt
    p.i = 0
    if (p.word(0), p.word(1)) not in _STARTS:
        return None
    if p.word(0) == "SHOW" and p.word(1) == "CLUSTER" and p.word(2) != "REPLICAS":
        return None  # SHOW cluster (the session variable)
    return p.parse()


def _is_mz_create_index(p: _Parser) -> bool:
    """CREATE INDEX with IN CLUSTER before its ON (else it is PostgreSQL's)."""
    if (p.word(0), p.word(1)) != ("CREATE", "INDEX"):
        return False
    for k in range(2, len(p.toks) - 1):
        if p.word(k) == "ON":
            return False
        if p.word(k) == "IN" and p.word(k + 1) == "CLUSTER":
            return True
    return False


def _fetch_with(p: _Parser) -> FetchWith | None:
    """FETCH with a WITH (...) option list, else None (PostgreSQL's FETCH)."""
    at = next((k for k in range(1, len(p.toks)) if p.word(k) == "WITH"), None)
    if at is None:
        return None
    fetch = p.sql[: p.toks[at].start]
    p.i = at + 1
    p.expect_punct("(")
    options = []
    while True:
        name = p.ident().upper()
        p.accept_punct("=")
        t = p.peek()
        if t is None or t.name.startswith("ASCII_"):
            raise p.error("an option value")
        p.i += 1
        raw = p.text(t)
        options.append((name, raw[1:-1].replace("''", "'") if t.name == "SCONST" else raw))
        if not p.accept_punct(","):
            break
    p.expect_punct(")")
    if p.peek() is not None:
        raise p.error("end of statement")
    return FetchWith(fetch, tuple(options))


def _subscribe(p: _Parser) -> Subscribe:
    """SUBSCRIBE (Materialize's SQL reference, "SUBSCRIBE")."""
    p.i = 1
    p.accept("TO")
    if p.accept_punct("("):
        start, depth = p.i, 1
        while p.peek() is not None and depth:
            t = p.peek()
            depth += (t.name == "ASCII_40") - (t.name == "ASCII_41")
            p.i += 1
        if depth:
            raise p.error("')'")
        inner = p.sql[p.toks[start].start: p.toks[p.i - 1].start].strip()
        if inner.upper().startswith("SHOW"):
            query = inner  # sequenced as the SHOW's own query
        else:
            query = inner
    else:
        parts = [p.ident()]
        while p.accept_punct("."):
            parts.append(p.ident())
        query = "SELECT * FROM " + ".".join('"' + x.replace('"', '""') + '"' for x in parts)
    envelope, keys, snapshot, progress, up_to, order_by = None, (), True, False, None, []
    while p.peek() is not None:
        if p.accept("ENVELOPE"):
            envelope = p.word()
            if envelope not in ("UPSERT", "DEBEZIUM"):
                raise p.error("UPSERT or DEBEZIUM")
            p.i += 1
            p.expect_punct("(")
            p.expect("KEY")
            p.expect_punct("(")
            keys = [p.ident()]
            while p.accept_punct(","):
                keys.append(p.ident())
            p.expect_punct(")")
            p.expect_punct(")")
            keys = tuple(keys)
        elif p.accept("WITH"):
            p.expect_punct("(")
            while True:
                name = p.word()
                if name not in ("SNAPSHOT", "PROGRESS"):
                    raise p.error("SNAPSHOT or PROGRESS")
                p.i += 1
                value = True
                if p.accept_punct("="):
                    w = p.word()
                    if w not in ("TRUE", "FALSE", "ON", "OFF"):
                        raise p.error("a boolean")
                    p.i += 1
                    value = w in ("TRUE", "ON")
                if name == "SNAPSHOT":
                    snapshot = value
                else:
                    progress = value
                if not p.accept_punct(","):
                    break
            p.expect_punct(")")
        elif p.accept("WITHIN"):
            p.expect("TIMESTAMP", "ORDER", "BY")
            while True:
                name = p.ident()
                desc = p.accept("DESC")
                if not desc:
                    p.accept("ASC")
                nulls_first = desc  # PostgreSQL's default: NULLS FIRST for DESC only
                if p.accept("NULLS"):
                    nulls_first = p.accept("FIRST")
                    if not nulls_first:
                        p.expect("LAST")
                order_by.append((name, desc, nulls_first))
                if not p.accept_punct(","):
                    break
        elif p.word() == "UP" and p.word(1) == "TO":
            p.i += 2
            start = p.i
            while p.peek() is not None and p.word() not in ("WITH", "ENVELOPE", "WITHIN"):
                p.i += 1
            up_to = p.sql[p.toks[start].start: p.toks[p.i - 1].end + 1]
        else:
            raise p.error("ENVELOPE, WITH, WITHIN TIMESTAMP ORDER BY, AS OF or UP TO")
    return Subscribe(query, envelope and envelope.lower(), keys, snapshot, progress, up_to, tuple(order_by))


def _declare_subscribe(p: _Parser) -> DeclareSubscribe | None:
    """DECLARE name ... CURSOR ... FOR SUBSCRIBE ..., else None (PostgreSQL's DECLARE)."""
    for k in range(2, len(p.toks) - 1):
        if p.word(k) == "FOR" and p.word(k + 1) == "SUBSCRIBE":
            p.i = 1
            return DeclareSubscribe(p.ident(), p.sql[p.toks[k + 1].start :])
    return None
