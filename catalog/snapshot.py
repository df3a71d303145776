"""Catalog objects and the immutable CatalogSnapshot that sessions plan against.

The Coordinator is the only writer: it applies a transaction to the durable store
and publishes a new snapshot. Sessions read whatever snapshot is current, without
locks, because snapshots are never mutated.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from catalog.errors import (
    SqlError, FEATURE_NOT_SUPPORTED, INSUFFICIENT_PRIVILEGE, INVALID_SCHEMA_NAME, INVALID_TABLE_DEFINITION,
    UNDEFINED_OBJECT, UNDEFINED_TABLE, WRONG_OBJECT_TYPE,
)
from catalog.types import SqlType

if TYPE_CHECKING:
    from persist.shard_id import ShardId

#: Schemas searched for unqualified names, in order (Materialize's default search_path
#: is ``public``, with ``mz_catalog`` and ``pg_catalog`` always searched implicitly).
SEARCH_PATH = ("public", "mz_catalog", "mz_internal", "pg_catalog")
USER_SCHEMA = "public"
DATABASE = "materialize"
#: schemas that always exist and are not in the catalog's ``schemas`` table
SYSTEM_SCHEMAS = ("public", "mz_catalog", "mz_internal", "pg_catalog", "information_schema")
#: what a session calls its own temporary schema (Materialize's ``mz_temp``; PostgreSQL's
#: ``pg_temp`` is accepted too)
TEMP_SCHEMA_ALIASES = ("mz_temp", "pg_temp")
_TEMP_PREFIX = "mz_temp_"


def temp_schema_name(process_id: str, session_id: str) -> str:
    """The catalog name of a session's temporary schema: ``mz_temp_<process>_<session>``.
    It names the environmentd process (its environment id, no ``_`` in it) so that, with a
    catalog shared by several processes, a booting process drops only the temporary
    schemas its own earlier run (or a dead process) left (:func:`temp_schema_process`)."""
    return f"{_TEMP_PREFIX}{process_id}_{session_id}"


def temp_schema_process(name: str) -> str | None:
    """The process id in a temporary schema's name (:func:`temp_schema_name`), or None
    for a name without one (made before names carried it)."""
    if not name.startswith(_TEMP_PREFIX):
        return None
    process, sep, _ = name[len(_TEMP_PREFIX):].rpartition("_")
    return process or None if sep else None

@dataclass(frozen=True)
class Scope:
    """Who reads a catalog snapshot, and from where (Materialize's ``ConnCatalog``: the
    catalog as one connection sees it): ``search_path``, the schemas unqualified names
    resolve along (the session's ``search_path``); ``temp_schema``, the session's temporary
    schema, searched first (PostgreSQL 5.10.3 "The Schema Search Path") and the only one
    it sees; ``roles``, ``(session role id, current role id)`` privileges are checked
    against (``catalog.rbac.current_role``). :data:`ENVIRONMENT` is the environment's own
    work: ``public`` only, every schema visible, no roles (nothing checked)."""

    search_path: tuple[str, ...] = (USER_SCHEMA,)
    temp_schema: str | None = None
    roles: tuple[str, str] | None = None


#: the scope of the environment's own work (bootstrap, maintenance, dropping a closed
#: session's temporary schema): what a snapshot has until a session scopes it
ENVIRONMENT = Scope()


@dataclass(frozen=True)
class Schema:
    """A user schema (``u1``; ``CREATE SCHEMA``), or a session's temporary schema
    (``temp``: holds its ``CREATE TEMP TABLE``s; dropped, with them, when the session
    ends). The system schemas (``SYSTEM_SCHEMAS``) are not catalog objects."""

    id: str
    name: str
    temp: bool = False


@dataclass(frozen=True)
class Cluster:
    """A cluster (``u1``): a named set of replicas that run the same work.

    A ``managed`` cluster (Materialize's "CREATE CLUSTER", managed clusters) declares
    its replicas' ``size`` and their number, ``replication_factor`` (0: paused, no
    replica); the system keeps replicas ``r1`` .. ``rN`` of that size, spread over
    ``availability_zones`` (empty: every zone of the server). An unmanaged one
    (``REPLICAS (...)``) has the replicas its user made; its ``size`` and
    ``replication_factor`` are None."""

    id: str
    name: str
    managed: bool = False
    size: str | None = None
    replication_factor: int | None = None
    availability_zones: tuple[str, ...] = ()


@dataclass(frozen=True)
class Replica:
    """A cluster replica (``u1``): one Spark Connect server process, or a REMOTE address.

    ``size`` is None for a REMOTE replica; ``remote`` lists its ``sc://`` addresses and
    ``token`` is the bearer token its server requires (its TOKEN option; never shown in
    a system table or a log, hence ``repr=False``).
    """

    id: str
    cluster_id: str
    name: str
    size: str | None
    availability_zone: str | None = None
    remote: tuple[str, ...] = ()
    token: str | None = field(default=None, repr=False)
    #: a replica a graceful reconfiguration (``ALTER CLUSTER ... WITH (WAIT ...)``) made
    #: and has not promoted yet (named ``rN-pending``); dropped when its environmentd restarts
    pending: bool = False


@dataclass(frozen=True)
class Column:
    """A column. ``default`` is its DEFAULT expression as SQL text (PostgreSQL's
    ``pg_get_expr(adbin)`` form, e.g. ``nextval('t_id_seq'::regclass)``), applied by
    INSERT when the column is omitted or ``DEFAULT`` is written. ``identity`` is
    ``'a'`` (GENERATED ALWAYS AS IDENTITY), ``'d'`` (BY DEFAULT) or None, as
    ``pg_attribute.attidentity``; an identity column's default is its sequence's nextval."""

    name: str
    type: SqlType
    nullable: bool = True
    default: str | None = None
    identity: str | None = None


@dataclass(frozen=True)
class Table:
    """A user table (``u1``) whose rows live in persist shard ``shard_id``."""

    id: str
    schema: str
    name: str
    columns: tuple[Column, ...]
    #: minted by persist (``persist.shard_id``)
    shard_id: ShardId

    @property
    def builtin(self) -> bool:
        return False


@dataclass(frozen=True)
class MaterializedView(Table):
    """A materialized view (``u1``, Materialize's "CREATE MATERIALIZED VIEW"): the result
    of its query ``sql``, kept in persist shard ``shard_id`` by cluster ``cluster_id``,
    which keeps it current from its inputs' changes (``spark_exec.materializations``).

    It is a Table to everything that reads: plans ``Get`` it and peeks scan its shard
    (consolidated as a table's). Writes refuse it (``planner.writes.resolve_target``)."""

    sql: str = ""
    cluster_id: str = ""


@dataclass(frozen=True)
class Source(Table):
    """A source (``u1``, Materialize's "CREATE SOURCE"): data that arrives by itself into
    persist shard ``shard_id``, written by its ingestion (``sqlfront.sources``) on cluster
    ``cluster_id``, never by INSERT/UPDATE/DELETE (``planner.writes.resolve_target``).

    ``kind`` is ``load-generator`` or ``webhook`` (``mz_sources.type``); ``spec`` is its
    options as JSON text (the generator and its TICK INTERVAL, AS OF, UP TO, SCALE
    FACTOR; a webhook's BODY FORMAT, INCLUDE HEADERS and CHECK). A source whose data go
    to subsources (``FOR ALL TABLES``) has no columns of its own."""

    cluster_id: str = ""
    kind: str = ""
    spec: str = "{}"


@dataclass(frozen=True)
class Subsource(Table):
    """One output of source ``source_id`` (Materialize's subsources: ``bids`` of an
    AUCTION generator, or ``<source>_progress``, ``kind`` ``progress``): a shard the
    source writes, read like a table, dropped with its source."""

    source_id: str = ""
    output: str = ""
    kind: str = "subsource"


@dataclass(frozen=True)
class Secret:
    """A secret (``u1``, Materialize's "CREATE SECRET"): ``value`` is kept encrypted at rest
    (``catalog.secretbox``) and shown nowhere: not in a system table, SHOW CREATE or a
    log (hence ``repr=False``)."""

    id: str
    schema: str
    name: str
    value: str = field(default="", repr=False)

    @property
    def builtin(self) -> bool:
        return False


@dataclass(frozen=True)
class Connection:
    """A connection (``u1``, Materialize's "CREATE CONNECTION"): ``kind`` (``postgres``)
    and its options as ``(name, value, secret)`` triples in the order given, where a
    ``secret`` option's value is the id of the Secret that holds it (``PASSWORD SECRET
    pw``), never the secret's text."""

    id: str
    schema: str
    name: str
    kind: str
    options: tuple[tuple[str, str, bool], ...] = ()

    @property
    def builtin(self) -> bool:
        return False

    def option(self, name: str, default: str | None = None) -> str | None:
        return next((v for n, v, _ in self.options if n == name), default)


@dataclass(frozen=True)
class BuiltinTable:
    """A system table (``s1``) whose rows are computed from the catalog and replica status."""

    id: str
    schema: str
    name: str
    columns: tuple[Column, ...]

    @property
    def builtin(self) -> bool:
        return True


@dataclass(frozen=True)
class View:
    """A view (``u1``): its defining SELECT, expanded at plan time, and its columns."""

    id: str
    schema: str
    name: str
    sql: str
    columns: tuple[Column, ...]

    @property
    def builtin(self) -> bool:
        return False


@dataclass(frozen=True)
class Index:
    """An index (``u1``) on a table or view, as Materialize has them: the object's
    current rows kept in memory on every replica of cluster ``cluster_id``
    (Materialize's "Indexes" doc: an index is an arrangement maintained in a cluster).

    ``keys`` are the index's key expressions as SQL text; a key that is a column name
    of the object is that column. ``definition`` is the CREATE statement as given.
    ``cluster_id`` is None only for indexes recorded before indexes were maintained.
    """

    id: str
    schema: str
    name: str
    on_id: str
    definition: str
    cluster_id: str | None = None
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sequence:
    """A sequence (``u1``, PostgreSQL's "CREATE SEQUENCE"): a definition in the catalog;
    its current value lives in ``catalog.sequences.SequenceStore`` (nextval is not a
    catalog change and is never rolled back, as in PostgreSQL).

    ``type`` is ``int2``/``int4``/``int8`` (``AS``); ``owned_by`` is ``(table id, column
    name)`` for a sequence a ``serial`` or identity column (or ``OWNED BY``) owns: it is
    dropped with its table."""

    id: str
    schema: str
    name: str
    type: str = "int8"
    increment: int = 1
    minvalue: int = 1
    maxvalue: int = 9223372036854775807
    start: int = 1
    cache: int = 1
    cycle: bool = False
    owned_by: tuple[str, str] | None = None

    @property
    def builtin(self) -> bool:
        return False


Relation = Table | MaterializedView | BuiltinTable | View


@dataclass(frozen=True)
class Role:
    """A role (``u1``; Materialize's "CREATE ROLE"): a user when it can log in. Roles are
    always INHERIT (Materialize has no NOINHERIT roles). ``password`` is a SCRAM-SHA-256
    secret in pg_authid's text form (``SCRAM-SHA-256$iterations:salt$stored:server``),
    never the password itself; None: no password of its own."""

    id: str
    name: str
    inherit: bool = True
    login: bool = False
    superuser: bool = False
    password: str | None = field(default=None, repr=False)


#: Materialize's system roles (mz_roles lists them; they own the system objects)
MZ_SYSTEM = Role("s1", "mz_system", login=True, superuser=True)
MZ_SUPPORT = Role("s2", "mz_support", login=True)
SYSTEM_ROLES = (MZ_SYSTEM, MZ_SUPPORT)


@dataclass(frozen=True)
class AclItem:
    """One grant (PostgreSQL's ``aclitem``, Materialize's ``mz_aclitem``): ``grantee`` (a
    role id, or ``p`` for PUBLIC) holds ``privileges`` (letters, ``arwdUC...``: see
    ``catalog.rbac.PRIVILEGE_LETTERS``) granted by role ``grantor``."""

    grantee: str
    grantor: str
    privileges: str


@dataclass(frozen=True)
class CatalogSnapshot:
    """An immutable view of the catalog at one version.

    ``version`` increases by one for every committed catalog transaction.
    ``next_ids`` holds the next id number per kind (``cluster``, ``replica``, ``item``).
    """

    version: int = 0
    clusters: Mapping[str, Cluster] = field(default_factory=lambda: MappingProxyType({}))
    replicas: Mapping[str, Replica] = field(default_factory=lambda: MappingProxyType({}))
    tables: Mapping[str, Table] = field(default_factory=lambda: MappingProxyType({}))
    builtins: Mapping[str, BuiltinTable] = field(default_factory=lambda: MappingProxyType({}))
    views: Mapping[str, View] = field(default_factory=lambda: MappingProxyType({}))
    indexes: Mapping[str, Index] = field(default_factory=lambda: MappingProxyType({}))
    sequences: Mapping[str, Sequence] = field(default_factory=lambda: MappingProxyType({}))
    schemas: Mapping[str, Schema] = field(default_factory=lambda: MappingProxyType({}))
    materialized_views: Mapping[str, MaterializedView] = field(default_factory=lambda: MappingProxyType({}))
    secrets: Mapping[str, Secret] = field(default_factory=lambda: MappingProxyType({}))
    connections: Mapping[str, Connection] = field(default_factory=lambda: MappingProxyType({}))
    #: COMMENT ON texts: (object id, column number or 0) -> text
    comments: Mapping[tuple[str, int], str] = field(default_factory=lambda: MappingProxyType({}))
    #: roles by id (the system roles are :data:`SYSTEM_ROLES`, not stored)
    roles: Mapping[str, Role] = field(default_factory=lambda: MappingProxyType({}))
    #: role membership: (role id, member role id) -> grantor role id (GRANT role TO member)
    role_members: Mapping[tuple[str, str], str] = field(default_factory=lambda: MappingProxyType({}))
    #: object key (``catalog.rbac.ObjectRef.key``: ``item:u5``, ``cluster:u1``, ...) -> owner role
    #: id; an object without an entry is owned by the bootstrap role (or mz_system if builtin)
    owners: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: object key -> its ACL; an object without an entry has ``catalog.rbac.default_acl``
    privileges: Mapping[str, tuple[AclItem, ...]] = field(default_factory=lambda: MappingProxyType({}))
    #: ALTER DEFAULT PRIVILEGES: ``catalog.rbac.default_privileges_key`` (creator role, schema,
    #: object type) -> the grants new objects get (AclItems whose grantor is unused)
    default_privileges: Mapping[str, tuple[AclItem, ...]] = field(default_factory=lambda: MappingProxyType({}))
    #: shards of dropped tables and materialized views whose parts are still to delete ->
    #: the catalog version that dropped them (``sqlfront.finalize``)
    to_finalize: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    next_ids: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    #: who reads it (:class:`Scope`): a session's statement reads ``Session.catalog``, the
    #: catalog scoped to it; not part of the catalog's state (not compared, not stored)
    scope: Scope = field(default=ENVIRONMENT, compare=False)

    def scoped(self, scope: Scope) -> CatalogSnapshot:
        """This catalog as ``scope`` reads it (the same objects)."""
        return self if scope == self.scope else replace(self, scope=scope)

    def searching_from(self, schema: str) -> CatalogSnapshot:
        """This catalog as a stored query (a view's, a materialized view's) resolved names
        when it was made: in its own schema first, then the system schemas (the schema it
        was made in was the first of its creator's search_path)."""
        path = (schema,) + tuple(x for x in SEARCH_PATH if x != schema)
        return self.scoped(replace(self.scope, search_path=path))

    def visible_schema(self, name: str) -> bool:
        """False for another session's temporary schema when a session reads: its
        objects are that session's alone, not even nameable by others (PostgreSQL
        refuses another session's temporary tables; Materialize's ``mz_temp`` names only
        the session's own). The environment's own work (no temporary schema in its
        scope) sees every schema."""
        if not name.startswith(_TEMP_PREFIX):
            return True
        mine = self.scope.temp_schema
        return mine is None or name == mine

    # -- clusters and replicas -------------------------------------------------------

    def cluster_by_name(self, name: str) -> Cluster | None:
        for c in self.clusters.values():
            if c.name == name:
                return c
        return None

    def resolve_cluster(self, name: str) -> Cluster:
        """The cluster named ``name``.

        Raises:
            SqlError 42704 ``unknown cluster 'name'`` (Materialize's wording).
        """
        c = self.cluster_by_name(name)
        if c is None:
            raise SqlError(UNDEFINED_OBJECT, f"unknown cluster '{name}'")
        return c

    def replicas_of(self, cluster_id: str) -> list[Replica]:
        return sorted((r for r in self.replicas.values() if r.cluster_id == cluster_id), key=lambda r: r.name)

    def replica_by_name(self, cluster_id: str, name: str) -> Replica | None:
        for r in self.replicas.values():
            if r.cluster_id == cluster_id and r.name == name:
                return r
        return None

    # -- roles -----------------------------------------------------------------------

    def role_by_name(self, name: str) -> Role | None:
        """The stored or system role named ``name`` (case-sensitive, as identifiers are
        after folding)."""
        for r in (*self.roles.values(), *SYSTEM_ROLES):
            if r.name == name:
                return r
        return None

    def role(self, role_id: str) -> Role | None:
        return self.roles.get(role_id) or next((r for r in SYSTEM_ROLES if r.id == role_id), None)

    # -- schemas ---------------------------------------------------------------------

    def schema_by_name(self, name: str) -> Schema | None:
        """The user schema ``name``; another session's temporary schema is hidden
        (:meth:`visible_schema`)."""
        if not self.visible_schema(name):
            return None
        for sc in self.schemas.values():
            if sc.name == name:
                return sc
        return None

    def schema_exists(self, name: str) -> bool:
        return name in SYSTEM_SCHEMAS or self.schema_by_name(name) is not None

    def search_path(self) -> tuple[str, ...]:
        """The schemas unqualified names resolve in, in order: the session's temporary
        schema (if it has one), its search_path's existing schemas, then the system
        schemas it does not list."""
        path, temp = self.scope.search_path, self.scope.temp_schema
        out = [temp] if temp and self.schema_by_name(temp) is not None else []
        out += [p for p in path if self.schema_exists(p) and p not in out]
        out += [p for p in SEARCH_PATH[1:] if p not in out]
        return tuple(out)

    def schema_name(self, schema: str) -> str:
        """``schema`` as stored: ``mz_temp``/``pg_temp`` name the session's temporary schema."""
        if schema in TEMP_SCHEMA_ALIASES:
            temp = self.scope.temp_schema
            return temp or schema
        return schema

    def creation_schema(self, schema: str | None, temp: bool = False) -> str:
        """The schema a new object named ``[schema.]name`` goes into: the given one,
        else the session's temporary schema for a TEMP object, else the first existing
        schema of the search_path (PostgreSQL 5.10.3).

        Raises:
            SqlError 3F000 ``unknown schema 'x'`` (Materialize's wording) or "no schema
            has been selected to create in"; 42P16 for TEMP in a non-temporary schema."""
        tempname = self.scope.temp_schema
        if temp:
            if schema is not None and schema not in TEMP_SCHEMA_ALIASES and schema != tempname:
                raise SqlError(INVALID_TABLE_DEFINITION, "cannot create temporary relation in non-temporary schema")
            if tempname is None:
                raise SqlError(FEATURE_NOT_SUPPORTED, "temporary objects are not supported here")
            return tempname
        if schema is not None:
            name = self.schema_name(schema)
            if name == tempname:
                return name
            if not self.schema_exists(name):
                raise SqlError(INVALID_SCHEMA_NAME, f"unknown schema '{schema}'")
            if name in SYSTEM_SCHEMAS and name != USER_SCHEMA:
                raise SqlError(INSUFFICIENT_PRIVILEGE, f"system schema '{name}' cannot be modified")
            return name
        for p in self.scope.search_path:
            if self.schema_exists(p) and p not in SYSTEM_SCHEMAS[1:]:
                return p
        raise SqlError(INVALID_SCHEMA_NAME, "no schema has been selected to create in")

    # -- relations -------------------------------------------------------------------

    def relation_by_name(self, schema: str, name: str) -> Relation | None:
        if not self.visible_schema(schema):
            return None
        for t in self.tables.values():
            if t.schema == schema and t.name == name:
                return t
        for v in self.views.values():
            if v.schema == schema and v.name == name:
                return v
        for m in self.materialized_views.values():
            if m.schema == schema and m.name == name:
                return m
        for b in self.builtins.values():
            if b.schema == schema and b.name == name:
                return b
        return None

    def sequence_by_name(self, schema: str, name: str) -> Sequence | None:
        if not self.visible_schema(schema):
            return None
        for q in self.sequences.values():
            if q.schema == schema and q.name == name:
                return q
        return None

    def name_taken(self, schema: str, name: str) -> bool:
        """True if a table, view, sequence, index, secret or connection in ``schema`` is
        named ``name`` (PostgreSQL: relations share one namespace, pg_class; Materialize:
        every catalog item of a schema does)."""
        return (self.relation_by_name(schema, name) is not None or self.sequence_by_name(schema, name) is not None
                or self.index_by_name(schema, name) is not None or self.secret_by_name(schema, name) is not None
                or self.connection_by_name(schema, name) is not None)

    def secret_by_name(self, schema: str, name: str) -> Secret | None:
        return next((x for x in self.secrets.values() if x.schema == schema and x.name == name), None)

    def connection_by_name(self, schema: str, name: str) -> Connection | None:
        return next((x for x in self.connections.values() if x.schema == schema and x.name == name), None)

    def sources(self) -> list[Source | Subsource]:
        """Every source and subsource, in id order."""
        return sorted((t for t in self.tables.values() if isinstance(t, (Source, Subsource))),
                      key=lambda t: (t.id[0], int(t.id[1:])))

    def resolve_sequence(self, schema: str | None, name: str) -> Sequence:
        """The sequence ``[schema.]name``; unqualified, searched along the search path.

        Raises:
            SqlError 42P01 ``unknown catalog item 'x'``; 42809 ``"x" is not a sequence``
            when the name is another relation's (PostgreSQL's wording)."""
        schemas = (self.schema_name(schema),) if schema else self.search_path()
        for s in schemas:
            q = self.sequence_by_name(s, name)
            if q is not None:
                return q
            if self.relation_by_name(s, name) is not None:
                raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a sequence')
        shown = f"{schema}.{name}" if schema else name
        raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{shown}'")

    def resolve_relation(self, schema: str | None, name: str) -> Relation:
        """Find a table by optional schema and name, searching the search path
        (``search_path``) when unqualified.

        Raises:
            SqlError 42P01 ``unknown catalog item 'x'`` (Materialize's wording).
        """
        schemas = (self.schema_name(schema),) if schema else self.search_path()
        for s in schemas:
            r = self.relation_by_name(s, name)
            if r is not None:
                return r
        shown = f"{schema}.{name}" if schema else name
        raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{shown}'")

    def indexes_in_cluster(self, cluster_id: str) -> list[Index]:
        """The indexes cluster ``cluster_id`` maintains, in id order."""
        return sorted((i for i in self.indexes.values() if i.cluster_id == cluster_id),
                      key=lambda i: (i.id[0], int(i.id[1:])))

    def materialized_views_in_cluster(self, cluster_id: str) -> list[MaterializedView]:
        """The materialized views cluster ``cluster_id`` maintains, in id order (an
        object only reads objects made before it, so this is dependency order)."""
        return sorted((m for m in self.materialized_views.values() if m.cluster_id == cluster_id),
                      key=lambda m: (m.id[0], int(m.id[1:])))

    def storage_relations(self) -> list[Table]:
        """Every relation stored in a persist shard: user tables and materialized views."""
        return [*self.tables.values(), *self.materialized_views.values()]

    def index_by_name(self, schema: str, name: str) -> Index | None:
        if not self.visible_schema(schema):
            return None
        for i in self.indexes.values():
            if i.schema == schema and i.name == name:
                return i
        return None

    def with_changes(self, **kw) -> "CatalogSnapshot":
        frozen = {k: MappingProxyType(dict(v)) if isinstance(v, dict) else v for k, v in kw.items()}
        return replace(self, **frozen)
