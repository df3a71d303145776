"""The durable catalog in sqlite3: load it into a snapshot, apply transactions to it.

A catalog transaction is a list of :data:`Op` values applied in one sqlite
transaction: either all of them are durable or none is. The caller (the
Coordinator) validates the ops against the current snapshot first; this module only
stores them and builds the next snapshot.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass, replace

from catalog.builtins import BUILTIN_TABLES
from catalog.secretbox import SecretBox
from catalog.snapshot import (
    AclItem, CatalogSnapshot, Cluster, Column, Connection, Index, MaterializedView, Replica, Role, Schema, Secret,
    Sequence, Source, Subsource, Table, View,
)
from catalog.types import SqlType

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- config: a managed cluster's settings as JSON (catalog.durable._encode_cluster)
CREATE TABLE IF NOT EXISTS clusters (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, config TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS replicas (
    id TEXT PRIMARY KEY,
    cluster_id TEXT NOT NULL REFERENCES clusters(id),
    name TEXT NOT NULL,
    size TEXT,
    availability_zone TEXT,
    remote TEXT NOT NULL DEFAULT '[]',
    token TEXT,
    pending INTEGER NOT NULL DEFAULT 0,
    UNIQUE (cluster_id, name)
);
CREATE TABLE IF NOT EXISTS tables (
    id TEXT PRIMARY KEY,
    schema_name TEXT NOT NULL,
    name TEXT NOT NULL,
    columns TEXT NOT NULL,
    shard_id TEXT NOT NULL,
    UNIQUE (schema_name, name)
);
CREATE TABLE IF NOT EXISTS views (
    id TEXT PRIMARY KEY,
    schema_name TEXT NOT NULL,
    name TEXT NOT NULL,
    sql TEXT NOT NULL,
    columns TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS materialized_views (
    id TEXT PRIMARY KEY,
    schema_name TEXT NOT NULL,
    name TEXT NOT NULL,
    sql TEXT NOT NULL,
    columns TEXT NOT NULL,
    shard_id TEXT NOT NULL,
    cluster_id TEXT NOT NULL,
    UNIQUE (schema_name, name)
);
CREATE TABLE IF NOT EXISTS indexes (
    id TEXT PRIMARY KEY,
    schema_name TEXT NOT NULL,
    name TEXT NOT NULL,
    on_id TEXT NOT NULL,
    definition TEXT NOT NULL,
    cluster_id TEXT,
    keys TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS sequences (
    id TEXT PRIMARY KEY,
    schema_name TEXT NOT NULL,
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    UNIQUE (schema_name, name)
);
CREATE TABLE IF NOT EXISTS schemas (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    temp INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS comments (
    object_id TEXT NOT NULL,
    subid INTEGER NOT NULL,
    comment TEXT NOT NULL,
    PRIMARY KEY (object_id, subid)
);
CREATE TABLE IF NOT EXISTS roles (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS role_members (
    role_id TEXT NOT NULL,
    member_id TEXT NOT NULL,
    grantor_id TEXT NOT NULL,
    PRIMARY KEY (role_id, member_id)
);
-- owners and ACLs of objects, by catalog.rbac object key ('item:u5', 'cluster:u1', 'system')
CREATE TABLE IF NOT EXISTS owners (object TEXT PRIMARY KEY, role_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS privileges (object TEXT PRIMARY KEY, acl TEXT NOT NULL);
-- shards of dropped tables and materialized views whose parts are not deleted yet
-- (sqlfront.finalize): recorded with the drop, so a crash before the deletion leaks nothing
CREATE TABLE IF NOT EXISTS to_finalize (shard TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS default_privileges (key TEXT PRIMARY KEY, acl TEXT NOT NULL);
-- secrets: value sealed by catalog.secretbox (never clear text)
CREATE TABLE IF NOT EXISTS secrets (id TEXT PRIMARY KEY, schema_name TEXT NOT NULL, name TEXT NOT NULL,
                                    value TEXT NOT NULL);
-- connections: kind and options as JSON (a secret option names the secret's id)
CREATE TABLE IF NOT EXISTS connections (id TEXT PRIMARY KEY, schema_name TEXT NOT NULL, name TEXT NOT NULL,
                                        kind TEXT NOT NULL, options TEXT NOT NULL);
-- a sequence's value: data, not catalog (catalog.sequences.SequenceStore writes it)
CREATE TABLE IF NOT EXISTS sequence_values (
    id TEXT PRIMARY KEY,
    last_value INTEGER NOT NULL,
    is_called INTEGER NOT NULL
);
"""


@dataclass(frozen=True)
class CreateCluster:
    cluster: Cluster


@dataclass(frozen=True)
class DropCluster:
    cluster_id: str


@dataclass(frozen=True)
class RenameCluster:
    cluster_id: str
    new_name: str


@dataclass(frozen=True)
class UpdateCluster:
    """Replace a cluster's name and settings (same id): ALTER CLUSTER ... SET/RESET,
    SWAP WITH. Its replicas change by their own ops."""

    cluster: Cluster


@dataclass(frozen=True)
class UpdateReplica:
    """Replace a replica's name and ``pending`` flag (same id, same process): a graceful
    reconfiguration promoting ``r1-pending`` to ``r1``."""

    replica: Replica


@dataclass(frozen=True)
class CreateReplica:
    replica: Replica


@dataclass(frozen=True)
class CreateSecret:
    secret: Secret


@dataclass(frozen=True)
class UpdateSecret:
    """ALTER SECRET ... AS: a new value (or a rename), same id."""

    secret: Secret


@dataclass(frozen=True)
class DropSecret:
    secret_id: str


@dataclass(frozen=True)
class CreateConnection:
    connection: Connection


@dataclass(frozen=True)
class DropConnection:
    connection_id: str


def _replica_token(op: CreateReplica | UpdateReplica) -> str | None:
    return op.replica.token


def _with_replica_token(op: CreateReplica | UpdateReplica, token: str) -> CreateReplica | UpdateReplica:
    # (an UpdateReplica carries the whole replica, its token too, though it changes only
    # the name and the pending flag: a backend that stores whole ops stores it sealed)
    return type(op)(replace(op.replica, token=token))


def _secret_value(op: CreateSecret | UpdateSecret) -> str | None:
    return op.secret.value


def _with_secret_value(op: CreateSecret | UpdateSecret, value: str) -> CreateSecret | UpdateSecret:
    return type(op)(replace(op.secret, value=value))


#: op class -> (the secret text it carries, the op with that text replaced): the one list
#: of what a catalog stores sealed (:func:`seal_op`); an op class not here carries none
_SECRET_OF = {
    CreateReplica: (_replica_token, _with_replica_token),
    UpdateReplica: (_replica_token, _with_replica_token),
    CreateSecret: (_secret_value, _with_secret_value),
    UpdateSecret: (_secret_value, _with_secret_value),
}


def seal_op(op: Op, box: SecretBox) -> Op:
    """``op`` as a catalog stores it: the secrets it carries (a REMOTE replica's TOKEN, a
    SECRET's value: :data:`_SECRET_OF`) encrypted by ``box`` (``catalog.secretbox``).
    Every catalog backend stores ops through this, so it is the one list of what is secret."""
    entry = _SECRET_OF.get(type(op))
    if entry is None:
        return op
    text, replaced = entry
    clear = text(op)
    if clear is None or SecretBox.is_sealed(clear):
        return op
    return replaced(op, box.seal(clear))


def unseal_op(op: Op, box: SecretBox) -> Op:
    """The inverse of :func:`seal_op` (a value stored in clear by a version before
    encryption comes back as it is).

    Raises:
        ValueError for a secret sealed under another key (``SecretBox.unseal``)."""
    entry = _SECRET_OF.get(type(op))
    if entry is None:
        return op
    text, replaced = entry
    sealed = text(op)
    if not SecretBox.is_sealed(sealed):
        return op
    return replaced(op, box.unseal(sealed))


@dataclass(frozen=True)
class DropReplica:
    replica_id: str


@dataclass(frozen=True)
class CreateTable:
    table: Table


@dataclass(frozen=True)
class DropTable:
    table_id: str


@dataclass(frozen=True)
class CreateView:
    view: View


@dataclass(frozen=True)
class DropView:
    view_id: str


@dataclass(frozen=True)
class CreateMaterializedView:
    """A new materialized view (its shard is created when this commits)."""

    view: MaterializedView


@dataclass(frozen=True)
class UpdateMaterializedView:
    """Replace a materialized view's definition, same id and shard (a rename)."""

    view: MaterializedView


@dataclass(frozen=True)
class DropMaterializedView:
    """Drop a materialized view (its shard is dropped when this commits)."""

    view_id: str


@dataclass(frozen=True)
class CreateIndex:
    index: Index


@dataclass(frozen=True)
class DropIndex:
    index_id: str


@dataclass(frozen=True)
class UpdateTable:
    """Replace a table's definition (same id): its name, schema, columns or shard (ALTER
    TABLE, TRUNCATE, DROP SEQUENCE ... CASCADE removing a default)."""

    table: Table


@dataclass(frozen=True)
class CreateSequence:
    sequence: Sequence


@dataclass(frozen=True)
class DropSequence:
    sequence_id: str


@dataclass(frozen=True)
class UpdateSequence:
    """Replace a sequence's definition (same id): ALTER SEQUENCE, a rename, OWNED BY."""

    sequence: Sequence


@dataclass(frozen=True)
class CreateSchema:
    schema: Schema


@dataclass(frozen=True)
class DropSchema:
    """Drop an empty schema (its objects are dropped by ops before this one)."""

    schema_id: str


@dataclass(frozen=True)
class RenameSchema:
    """Rename a schema and move every object in it along (objects name their schema)."""

    schema_id: str
    new_name: str


@dataclass(frozen=True)
class SetComment:
    """COMMENT ON: ``text`` for object ``object_id`` (``subid``: a column's number, 0
    for the object itself); None removes it."""

    object_id: str
    subid: int
    text: str | None


@dataclass(frozen=True)
class CreateRole:
    role: Role


@dataclass(frozen=True)
class UpdateRole:
    """Replace a role's attributes (same id): ALTER ROLE, ALTER ROLE ... RENAME TO."""

    role: Role


@dataclass(frozen=True)
class DropRole:
    """Drop a role with its memberships, both ways (it owns nothing: checked before)."""

    role_id: str


@dataclass(frozen=True)
class FinalizeShards:
    """Shards of ``to_finalize`` whose parts are deleted now (``sqlfront.finalize``)."""

    shard_ids: tuple[str, ...]


@dataclass(frozen=True)
class RevokeAll:
    """DROP OWNED's revocation: every privilege granted to or by role ``role_id``, and its
    default privileges, go."""

    role_id: str


@dataclass(frozen=True)
class GrantRole:
    """GRANT role TO member: ``member_id`` becomes a member of ``role_id``."""

    role_id: str
    member_id: str
    grantor_id: str


@dataclass(frozen=True)
class RevokeRole:
    role_id: str
    member_id: str


@dataclass(frozen=True)
class SetOwner:
    """The owner of object ``object`` (a ``catalog.rbac`` object key) becomes ``role_id``."""

    object: str
    role_id: str


@dataclass(frozen=True)
class SetPrivileges:
    """Object ``object``'s ACL becomes ``acl`` (GRANT, REVOKE, a new object's owner grant)."""

    object: str
    acl: tuple[AclItem, ...]


@dataclass(frozen=True)
class SetDefaultPrivileges:
    """ALTER DEFAULT PRIVILEGES: the grants objects matching ``key`` get when they are
    made (``catalog.rbac.default_privileges_key``); an empty ``acl`` removes the entry."""

    key: str
    acl: tuple[AclItem, ...]


Op = FinalizeShards | CreateSecret | UpdateSecret | DropSecret | CreateConnection | DropConnection | CreateMaterializedView | UpdateMaterializedView | DropMaterializedView | RevokeAll | SetDefaultPrivileges | CreateRole | UpdateRole | DropRole | GrantRole | RevokeRole | SetOwner | SetPrivileges | SetComment | CreateSchema | DropSchema | RenameSchema | UpdateTable | CreateSequence | DropSequence | UpdateSequence | CreateView | DropView | CreateIndex | DropIndex | CreateCluster | DropCluster | RenameCluster | UpdateCluster | UpdateReplica | CreateReplica | DropReplica | CreateTable | DropTable

_ID_KINDS = ("cluster", "replica", "item", "shard", "role")


class CatalogStore:
    """The catalog's sqlite database. Thread-safe; meant to have one writer (the Coordinator)."""

    def __init__(self, path: str, box: SecretBox | None = None):
        """``box`` encrypts the secrets stored (REMOTE replicas' tokens); None keeps them
        in clear (an in-memory store, or a reader that never needs them)."""
        self.path = path
        self._box = box
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.executescript(SCHEMA_SQL)
        self._migrate()

    def _migrate(self) -> None:
        """Bring a catalog written by an earlier version up to SCHEMA_SQL. (New tables,
        such as ``sequences`` and ``sequence_values``, come from SCHEMA_SQL's ``IF NOT
        EXISTS``; columns' ``default``/``identity`` are optional keys of their JSON.)"""
        cols = {r[1] for r in self._conn.execute("PRAGMA table_info(replicas)")}
        if "token" not in cols:  # REMOTE replicas' bearer tokens
            self._conn.execute("ALTER TABLE replicas ADD COLUMN token TEXT")
        if "pending" not in cols:  # graceful reconfiguration's replicas
            self._conn.execute("ALTER TABLE replicas ADD COLUMN pending INTEGER NOT NULL DEFAULT 0")
        if "config" not in {r[1] for r in self._conn.execute("PRAGMA table_info(clusters)")}:  # managed clusters
            self._conn.execute("ALTER TABLE clusters ADD COLUMN config TEXT NOT NULL DEFAULT '{}'")
        if self._box is not None:  # tokens an earlier version stored in clear
            clear = [(rid, token) for rid, token in self._conn.execute(
                "SELECT id, token FROM replicas WHERE token IS NOT NULL") if not SecretBox.is_sealed(token)]
            if clear:
                # the clear bytes are overwritten in the page (secure_delete), and the WAL
                # frames holding the old page are dropped (a TRUNCATE checkpoint)
                self._conn.execute("PRAGMA secure_delete=ON")
                for rid, token in clear:
                    self._conn.execute("UPDATE replicas SET token = ? WHERE id = ?", (self._box.seal(token), rid))
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if "source" not in {r[1] for r in self._conn.execute("PRAGMA table_info(tables)")}:  # sources
            self._conn.execute("ALTER TABLE tables ADD COLUMN source TEXT")
        cols = {r[1] for r in self._conn.execute("PRAGMA table_info(indexes)")}
        if "cluster_id" not in cols:  # indexes maintained in a cluster
            self._conn.execute("ALTER TABLE indexes ADD COLUMN cluster_id TEXT")
            self._conn.execute("ALTER TABLE indexes ADD COLUMN keys TEXT NOT NULL DEFAULT '[]'")

    def _unseal(self, stored: str | None) -> str | None:
        return self._box.unseal(stored) if self._box is not None else stored

    def is_new(self) -> bool:
        with self._lock:
            return self._conn.execute("SELECT count(*) FROM meta WHERE key = 'version'").fetchone()[0] == 0

    def load(self) -> CatalogSnapshot:
        """Read the whole catalog into a snapshot."""
        with self._lock:
            c = self._conn
            meta = dict(c.execute("SELECT key, value FROM meta").fetchall())
            clusters = {r[0]: _decode_cluster(r[0], r[1], r[2])
                        for r in c.execute("SELECT id, name, config FROM clusters")}
            replicas = {
                r[0]: Replica(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), self._unseal(r[6]), bool(r[7]))
                for r in c.execute("SELECT id, cluster_id, name, size, availability_zone, remote, token, pending"
                                   " FROM replicas")
            }
            tables = {
                r[0]: _decode_table(r[0], r[1], r[2], _decode_columns(r[3]), r[4], r[5])
                for r in c.execute("SELECT id, schema_name, name, columns, shard_id, source FROM tables")
            }
            secrets = {r[0]: Secret(r[0], r[1], r[2], self._unseal(r[3]))
                       for r in c.execute("SELECT id, schema_name, name, value FROM secrets")}
            connections = {r[0]: Connection(r[0], r[1], r[2], r[3], tuple(tuple(o) for o in json.loads(r[4])))
                           for r in c.execute("SELECT id, schema_name, name, kind, options FROM connections")}
            views = {
                r[0]: View(r[0], r[1], r[2], r[3], _decode_columns(r[4]))
                for r in c.execute("SELECT id, schema_name, name, sql, columns FROM views")
            }
            indexes = {
                r[0]: Index(*r[:6], tuple(json.loads(r[6])))
                for r in c.execute("SELECT id, schema_name, name, on_id, definition, cluster_id, keys FROM indexes")
            }
            sequences = {
                r[0]: _decode_sequence(r[0], r[1], r[2], r[3])
                for r in c.execute("SELECT id, schema_name, name, spec FROM sequences")
            }
            schemas = {r[0]: Schema(r[0], r[1], bool(r[2])) for r in c.execute("SELECT id, name, temp FROM schemas")}
            mvs = {
                r[0]: MaterializedView(r[0], r[1], r[2], _decode_columns(r[4]), r[5], r[3], r[6])
                for r in c.execute("SELECT id, schema_name, name, sql, columns, shard_id, cluster_id"
                                   " FROM materialized_views")
            }
            comments = {(r[0], r[1]): r[2] for r in c.execute("SELECT object_id, subid, comment FROM comments")}
            roles = {r[0]: Role(r[0], r[1], **json.loads(r[2])) for r in c.execute("SELECT id, name, spec FROM roles")}
            members = {(r[0], r[1]): r[2] for r in c.execute("SELECT role_id, member_id, grantor_id FROM role_members")}
            owners = dict(c.execute("SELECT object, role_id FROM owners").fetchall())
            privileges = {r[0]: _decode_acl(r[1]) for r in c.execute("SELECT object, acl FROM privileges")}
            defaults = {r[0]: _decode_acl(r[1]) for r in c.execute("SELECT key, acl FROM default_privileges")}
            finalize = dict(c.execute("SELECT shard, version FROM to_finalize").fetchall())
        return CatalogSnapshot(
            version=int(meta.get("version", 0)),
            next_ids={k: int(meta.get(f"next_id.{k}", 1)) for k in _ID_KINDS},
        ).with_changes(
            clusters=clusters,
            replicas=replicas,
            tables=tables,
            secrets=secrets,
            connections=connections,
            views=views,
            indexes=indexes,
            sequences=sequences,
            schemas=schemas,
            materialized_views=mvs,
            comments=comments,
            roles=roles,
            role_members=members,
            owners=owners,
            privileges=privileges,
            default_privileges=defaults,
            to_finalize=finalize,
            builtins={b.id: b for b in BUILTIN_TABLES},
        )

    def transact(self, snap: CatalogSnapshot, ops: list[Op], next_ids: dict[str, int]) -> CatalogSnapshot:
        """Apply ``ops`` durably and return the snapshot that follows ``snap``. Each op is
        applied by its handler in :data:`_APPLY` (one per op class).

        Raises:
            sqlite3.Error if the database refuses a change; nothing is applied then.
            TypeError for a value that is no catalog op (a programming error).
        """
        with self._lock:
            c = self._conn
            t = _Txn(c, self._box, snap)
            c.execute("BEGIN IMMEDIATE")
            try:
                for op in ops:
                    _apply_op(t, op)
                # comments go with their objects (not with one dropped and made again: a rename)
                live = set(t.tables) | set(t.views) | set(t.indexes) | set(t.sequences) | set(t.schemas) \
                    | set(t.mvs) | set(t.secrets) | set(t.connections)
                for gone in {k[0] for k in t.comments} - live:
                    c.execute("DELETE FROM comments WHERE object_id = ?", (gone,))
                    for k in [k for k in t.comments if k[0] == gone]:
                        del t.comments[k]
                # owners and ACLs go with their objects, and a dropped role's grants with it
                live_keys = {f"item:{k}" for k in (*t.tables, *t.views, *t.mvs, *t.indexes, *t.sequences, *t.schemas,
                                                   *t.secrets, *t.connections)} \
                    | {f"schema:{k}" for k in t.schemas} | {f"cluster:{k}" for k in t.clusters}
                # (system schemas' keys name them, "schema:public"; builtin items are "item:s5")
                for gone in {k for k in (*t.owners, *t.privileges) if k.split(":")[0] in ("item", "schema", "cluster")
                             and k.split(":")[1][:1] == "u" and k not in live_keys}:
                    c.execute("DELETE FROM owners WHERE object = ?", (gone,))
                    c.execute("DELETE FROM privileges WHERE object = ?", (gone,))
                    t.owners.pop(gone, None)
                    t.privileges.pop(gone, None)
                c.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('version', ?)", (str(t.version),))
                for k, v in next_ids.items():
                    c.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (f"next_id.{k}", str(v)))
                c.execute("COMMIT")
            except BaseException:
                # sqlite may have rolled back already (a full disk, SQLITE_FULL): a ROLLBACK then
                # fails with "no transaction is active" and would hide the real error
                if c.in_transaction:
                    c.execute("ROLLBACK")
                raise
        return snap.with_changes(
            version=t.version, clusters=t.clusters, replicas=t.replicas, tables=t.tables, views=t.views,
            indexes=t.indexes, secrets=t.secrets, connections=t.connections,
            sequences=t.sequences, schemas=t.schemas, materialized_views=t.mvs, comments=t.comments, roles=t.roles,
            role_members=t.members, owners=t.owners, privileges=t.privileges, default_privileges=t.defaults,
            to_finalize=t.finalize, next_ids=dict(next_ids)
        )

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _revoke_all(c, role_id: str, privileges: dict, defaults: dict) -> None:
    """Take every grant to or by ``role_id`` out of the ACLs, and its default privileges
    (both those it set and those naming it)."""
    for key, acl in list(privileges.items()):
        kept = tuple(a for a in acl if role_id not in (a.grantee, a.grantor))
        if kept != acl:
            c.execute("UPDATE privileges SET acl = ? WHERE object = ?", (_encode_acl(kept), key))
            privileges[key] = kept
    for key, acl in list(defaults.items()):
        kept = tuple(a for a in acl if a.grantee != role_id)
        if key.split("|")[0] == role_id or not kept:
            c.execute("DELETE FROM default_privileges WHERE key = ?", (key,))
            del defaults[key]
        elif kept != acl:
            c.execute("UPDATE default_privileges SET acl = ? WHERE key = ?", (_encode_acl(kept), key))
            defaults[key] = kept


# -- applying one op inside CatalogStore.transact: one handler per op class, in _APPLY --


class _Txn:
    """What one :meth:`CatalogStore.transact` changes: its sqlite connection (inside the
    open transaction), the box sealing secrets, and copies of the snapshot's maps that the
    handlers update beside the rows they write."""

    def __init__(self, c: sqlite3.Connection, box: SecretBox | None, snap: CatalogSnapshot):
        self.c = c
        self.box = box
        self.version = snap.version + 1
        self.clusters = dict(snap.clusters)
        self.replicas = dict(snap.replicas)
        self.tables = dict(snap.tables)
        self.views = dict(snap.views)
        self.indexes = dict(snap.indexes)
        self.sequences = dict(snap.sequences)
        self.schemas = dict(snap.schemas)
        self.mvs = dict(snap.materialized_views)
        self.secrets = dict(snap.secrets)
        self.connections = dict(snap.connections)
        self.comments = dict(snap.comments)
        self.roles = dict(snap.roles)
        self.members = dict(snap.role_members)
        self.owners = dict(snap.owners)
        self.privileges = dict(snap.privileges)
        self.defaults = dict(snap.default_privileges)
        self.finalize = dict(snap.to_finalize)

    def dropped(self, shard_id: str) -> None:
        """Its parts go after the commit (sqlfront.finalize)."""
        self.c.execute("INSERT OR REPLACE INTO to_finalize (shard, version) VALUES (?, ?)", (shard_id, self.version))
        self.finalize[shard_id] = self.version


def _create_cluster(t: _Txn, op: CreateCluster) -> None:
    t.c.execute("INSERT INTO clusters (id, name, config) VALUES (?, ?, ?)",
                (op.cluster.id, op.cluster.name, _encode_cluster(op.cluster)))
    t.clusters[op.cluster.id] = op.cluster


def _rename_cluster(t: _Txn, op: RenameCluster) -> None:
    t.c.execute("UPDATE clusters SET name = ? WHERE id = ?", (op.new_name, op.cluster_id))
    t.clusters[op.cluster_id] = replace(t.clusters[op.cluster_id], name=op.new_name)


def _update_cluster(t: _Txn, op: UpdateCluster) -> None:
    t.c.execute("UPDATE clusters SET name = ?, config = ? WHERE id = ?",
                (op.cluster.name, _encode_cluster(op.cluster), op.cluster.id))
    t.clusters[op.cluster.id] = op.cluster


def _update_replica(t: _Txn, op: UpdateReplica) -> None:
    r = op.replica
    t.c.execute("UPDATE replicas SET name = ?, pending = ? WHERE id = ?", (r.name, int(r.pending), r.id))
    t.replicas[r.id] = replace(t.replicas[r.id], name=r.name, pending=r.pending)


def _drop_cluster(t: _Txn, op: DropCluster) -> None:
    t.c.execute("DELETE FROM replicas WHERE cluster_id = ?", (op.cluster_id,))
    t.c.execute("DELETE FROM clusters WHERE id = ?", (op.cluster_id,))
    t.clusters.pop(op.cluster_id, None)
    for rid in [r.id for r in t.replicas.values() if r.cluster_id == op.cluster_id]:
        del t.replicas[rid]


def _create_replica(t: _Txn, op: CreateReplica) -> None:
    r = op.replica
    stored = seal_op(op, t.box).replica if t.box is not None else r
    t.c.execute(
        "INSERT INTO replicas"
        " (id, cluster_id, name, size, availability_zone, remote, token, pending)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (r.id, r.cluster_id, r.name, r.size, r.availability_zone, json.dumps(list(r.remote)),
         stored.token, int(r.pending)),
    )
    t.replicas[r.id] = r


def _drop_replica(t: _Txn, op: DropReplica) -> None:
    t.c.execute("DELETE FROM replicas WHERE id = ?", (op.replica_id,))
    t.replicas.pop(op.replica_id, None)


def _create_table(t: _Txn, op: CreateTable) -> None:
    x = op.table
    t.c.execute(
        "INSERT INTO tables (id, schema_name, name, columns, shard_id, source)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (x.id, x.schema, x.name, _encode_columns(x.columns), x.shard_id, _encode_source(x)),
    )
    t.tables[x.id] = x


def _put_secret(t: _Txn, op: CreateSecret | UpdateSecret) -> None:
    x = op.secret
    stored = seal_op(op, t.box).secret.value if t.box is not None else x.value
    t.c.execute("INSERT OR REPLACE INTO secrets (id, schema_name, name, value) VALUES (?, ?, ?, ?)",
                (x.id, x.schema, x.name, stored))
    t.secrets[x.id] = x


def _drop_secret(t: _Txn, op: DropSecret) -> None:
    t.c.execute("DELETE FROM secrets WHERE id = ?", (op.secret_id,))
    t.secrets.pop(op.secret_id, None)


def _create_connection(t: _Txn, op: CreateConnection) -> None:
    x = op.connection
    t.c.execute("INSERT INTO connections (id, schema_name, name, kind, options) VALUES (?, ?, ?, ?, ?)",
                (x.id, x.schema, x.name, x.kind, json.dumps([list(o) for o in x.options])))
    t.connections[x.id] = x


def _drop_connection(t: _Txn, op: DropConnection) -> None:
    t.c.execute("DELETE FROM connections WHERE id = ?", (op.connection_id,))
    t.connections.pop(op.connection_id, None)


def _set_comment(t: _Txn, op: SetComment) -> None:
    if op.text is None:
        t.c.execute("DELETE FROM comments WHERE object_id = ? AND subid = ?", (op.object_id, op.subid))
        t.comments.pop((op.object_id, op.subid), None)
    else:
        t.c.execute("INSERT OR REPLACE INTO comments (object_id, subid, comment) VALUES (?, ?, ?)",
                    (op.object_id, op.subid, op.text))
        t.comments[(op.object_id, op.subid)] = op.text


def _create_schema(t: _Txn, op: CreateSchema) -> None:
    t.c.execute("INSERT INTO schemas (id, name, temp) VALUES (?, ?, ?)",
                (op.schema.id, op.schema.name, int(op.schema.temp)))
    t.schemas[op.schema.id] = op.schema


def _drop_schema(t: _Txn, op: DropSchema) -> None:
    t.c.execute("DELETE FROM schemas WHERE id = ?", (op.schema_id,))
    t.schemas.pop(op.schema_id, None)


def _rename_schema(t: _Txn, op: RenameSchema) -> None:
    old = t.schemas[op.schema_id]
    t.c.execute("UPDATE schemas SET name = ? WHERE id = ?", (op.new_name, op.schema_id))
    for table in ("tables", "views", "indexes", "sequences", "materialized_views", "secrets", "connections"):
        t.c.execute(f"UPDATE {table} SET schema_name = ? WHERE schema_name = ?", (op.new_name, old.name))
    t.schemas[op.schema_id] = Schema(old.id, op.new_name, old.temp)
    for objs in (t.tables, t.views, t.indexes, t.sequences, t.mvs, t.secrets, t.connections):
        for k, o in list(objs.items()):
            if o.schema == old.name:
                objs[k] = replace(o, schema=op.new_name)


def _update_table(t: _Txn, op: UpdateTable) -> None:
    x = op.table
    was = t.tables.get(x.id)
    if was is not None and was.shard_id != x.shard_id:  # its rows moved to a new shard
        t.dropped(was.shard_id)
    t.c.execute("UPDATE tables SET schema_name = ?, name = ?, columns = ?, shard_id = ?, source = ?"
                " WHERE id = ?",
                (x.schema, x.name, _encode_columns(x.columns), x.shard_id, _encode_source(x), x.id))
    t.tables[x.id] = x


def _create_sequence(t: _Txn, op: CreateSequence) -> None:
    q = op.sequence
    t.c.execute("INSERT INTO sequences (id, schema_name, name, spec) VALUES (?, ?, ?, ?)",
                (q.id, q.schema, q.name, _encode_sequence(q)))
    t.c.execute("INSERT OR REPLACE INTO sequence_values (id, last_value, is_called) VALUES (?, ?, 0)",
                (q.id, q.start))
    t.sequences[q.id] = q


def _update_sequence(t: _Txn, op: UpdateSequence) -> None:
    q = op.sequence
    t.c.execute("UPDATE sequences SET schema_name = ?, name = ?, spec = ? WHERE id = ?",
                (q.schema, q.name, _encode_sequence(q), q.id))
    t.sequences[q.id] = q


def _drop_sequence(t: _Txn, op: DropSequence) -> None:
    t.c.execute("DELETE FROM sequences WHERE id = ?", (op.sequence_id,))
    t.c.execute("DELETE FROM sequence_values WHERE id = ?", (op.sequence_id,))
    t.sequences.pop(op.sequence_id, None)


def _drop_table(t: _Txn, op: DropTable) -> None:
    t.c.execute("DELETE FROM tables WHERE id = ?", (op.table_id,))
    if op.table_id in t.tables:
        t.dropped(t.tables.pop(op.table_id).shard_id)


def _create_view(t: _Txn, op: CreateView) -> None:
    v = op.view
    t.c.execute("INSERT INTO views (id, schema_name, name, sql, columns) VALUES (?, ?, ?, ?, ?)",
                (v.id, v.schema, v.name, v.sql, _encode_columns(v.columns)))
    t.views[v.id] = v


def _drop_view(t: _Txn, op: DropView) -> None:
    t.c.execute("DELETE FROM views WHERE id = ?", (op.view_id,))
    t.views.pop(op.view_id, None)


def _put_materialized_view(t: _Txn, op: CreateMaterializedView | UpdateMaterializedView) -> None:
    m = op.view
    t.c.execute("INSERT OR REPLACE INTO materialized_views"
                " (id, schema_name, name, sql, columns, shard_id, cluster_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (m.id, m.schema, m.name, m.sql, _encode_columns(m.columns), m.shard_id, m.cluster_id))
    t.mvs[m.id] = m


def _drop_materialized_view(t: _Txn, op: DropMaterializedView) -> None:
    t.c.execute("DELETE FROM materialized_views WHERE id = ?", (op.view_id,))
    if op.view_id in t.mvs:
        t.dropped(t.mvs.pop(op.view_id).shard_id)


def _finalize_shards(t: _Txn, op: FinalizeShards) -> None:
    for shard in op.shard_ids:
        t.c.execute("DELETE FROM to_finalize WHERE shard = ?", (shard,))
        t.finalize.pop(shard, None)


def _create_index(t: _Txn, op: CreateIndex) -> None:
    i = op.index
    t.c.execute("INSERT INTO indexes (id, schema_name, name, on_id, definition, cluster_id, keys)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (i.id, i.schema, i.name, i.on_id, i.definition, i.cluster_id, json.dumps(list(i.keys))))
    t.indexes[i.id] = i


def _drop_index(t: _Txn, op: DropIndex) -> None:
    t.c.execute("DELETE FROM indexes WHERE id = ?", (op.index_id,))
    t.indexes.pop(op.index_id, None)


def _put_role(t: _Txn, op: CreateRole | UpdateRole) -> None:
    r = op.role
    t.c.execute("INSERT OR REPLACE INTO roles (id, name, spec) VALUES (?, ?, ?)", (r.id, r.name, _encode_role(r)))
    t.roles[r.id] = r


def _drop_role(t: _Txn, op: DropRole) -> None:
    t.c.execute("DELETE FROM roles WHERE id = ?", (op.role_id,))
    t.c.execute("DELETE FROM role_members WHERE role_id = ? OR member_id = ?", (op.role_id, op.role_id))
    t.roles.pop(op.role_id, None)
    for k in [k for k in t.members if op.role_id in k]:
        del t.members[k]
    _revoke_all(t.c, op.role_id, t.privileges, t.defaults)  # its grants go with it


def _revoke_all_op(t: _Txn, op: RevokeAll) -> None:
    _revoke_all(t.c, op.role_id, t.privileges, t.defaults)


def _grant_role(t: _Txn, op: GrantRole) -> None:
    t.c.execute("INSERT OR REPLACE INTO role_members (role_id, member_id, grantor_id) VALUES (?, ?, ?)",
                (op.role_id, op.member_id, op.grantor_id))
    t.members[(op.role_id, op.member_id)] = op.grantor_id


def _revoke_role(t: _Txn, op: RevokeRole) -> None:
    t.c.execute("DELETE FROM role_members WHERE role_id = ? AND member_id = ?", (op.role_id, op.member_id))
    t.members.pop((op.role_id, op.member_id), None)


def _set_owner(t: _Txn, op: SetOwner) -> None:
    t.c.execute("INSERT OR REPLACE INTO owners (object, role_id) VALUES (?, ?)", (op.object, op.role_id))
    t.owners[op.object] = op.role_id


def _set_privileges(t: _Txn, op: SetPrivileges) -> None:
    t.c.execute("INSERT OR REPLACE INTO privileges (object, acl) VALUES (?, ?)", (op.object, _encode_acl(op.acl)))
    t.privileges[op.object] = tuple(op.acl)


def _set_default_privileges(t: _Txn, op: SetDefaultPrivileges) -> None:
    if op.acl:
        t.c.execute("INSERT OR REPLACE INTO default_privileges (key, acl) VALUES (?, ?)",
                    (op.key, _encode_acl(op.acl)))
        t.defaults[op.key] = tuple(op.acl)
    else:
        t.c.execute("DELETE FROM default_privileges WHERE key = ?", (op.key,))
        t.defaults.pop(op.key, None)


#: op class -> the handler that writes it and updates the snapshot's maps; every class of
#: :data:`Op` has one (tests/test_catalog_op_dispatch.py checks it)
_APPLY = {
    CreateCluster: _create_cluster, RenameCluster: _rename_cluster, UpdateCluster: _update_cluster,
    DropCluster: _drop_cluster, CreateReplica: _create_replica, UpdateReplica: _update_replica,
    DropReplica: _drop_replica,
    CreateTable: _create_table, UpdateTable: _update_table, DropTable: _drop_table,
    CreateSecret: _put_secret, UpdateSecret: _put_secret, DropSecret: _drop_secret,
    CreateConnection: _create_connection, DropConnection: _drop_connection,
    SetComment: _set_comment,
    CreateSchema: _create_schema, DropSchema: _drop_schema, RenameSchema: _rename_schema,
    CreateSequence: _create_sequence, UpdateSequence: _update_sequence, DropSequence: _drop_sequence,
    CreateView: _create_view, DropView: _drop_view,
    CreateMaterializedView: _put_materialized_view, UpdateMaterializedView: _put_materialized_view,
    DropMaterializedView: _drop_materialized_view, FinalizeShards: _finalize_shards,
    CreateIndex: _create_index, DropIndex: _drop_index,
    CreateRole: _put_role, UpdateRole: _put_role, DropRole: _drop_role, RevokeAll: _revoke_all_op,
    GrantRole: _grant_role, RevokeRole: _revoke_role,
    SetOwner: _set_owner, SetPrivileges: _set_privileges, SetDefaultPrivileges: _set_default_privileges,
}


def _apply_op(t: _Txn, op: Op) -> None:
    """Apply one op inside ``t``'s transaction.

    Raises:
        TypeError for a value that is no catalog op (a programming error)."""
    handler = _APPLY.get(type(op))
    if handler is None:  # pragma: no cover - a programming error
        raise TypeError(f"unknown catalog op {op!r}")
    handler(t, op)


def _encode_source(t: Table) -> str | None:
    """A source's or subsource's own fields as JSON (None for a plain table)."""
    if isinstance(t, Source):
        return json.dumps({"_t": "Source", "cluster_id": t.cluster_id, "kind": t.kind, "spec": t.spec})
    if isinstance(t, Subsource):
        return json.dumps({"_t": "Subsource", "source_id": t.source_id, "output": t.output, "kind": t.kind})
    return None


def _decode_table(id_: str, schema: str, name: str, columns: tuple[Column, ...], shard: str,
                  source: str | None) -> Table:
    if not source:
        return Table(id_, schema, name, columns, shard)
    d = json.loads(source)
    cls = {"Source": Source, "Subsource": Subsource}[d.pop("_t")]
    return cls(id_, schema, name, columns, shard, **d)


def _encode_cluster(c: Cluster) -> str:
    if not c.managed:
        return "{}"
    return json.dumps({"managed": True, "size": c.size, "replication_factor": c.replication_factor,
                       "availability_zones": list(c.availability_zones)})


def _decode_cluster(id_: str, name: str, config: str) -> Cluster:
    d = json.loads(config or "{}")  # "{}": unmanaged, or written before managed clusters
    return Cluster(id_, name, bool(d.get("managed")), d.get("size"), d.get("replication_factor"),
                   tuple(d.get("availability_zones") or ()))


def _encode_role(r: Role) -> str:
    return json.dumps({"inherit": r.inherit, "login": r.login, "superuser": r.superuser, "password": r.password})


def _encode_acl(acl) -> str:
    return json.dumps([[a.grantee, a.grantor, a.privileges] for a in acl])


def _decode_acl(text: str) -> tuple[AclItem, ...]:
    return tuple(AclItem(*a) for a in json.loads(text))


def _encode_columns(cols: tuple[Column, ...]) -> str:
    out = []
    for c in cols:
        d = {"name": c.name, "type": c.type.name, "p": c.type.precision, "s": c.type.scale, "null": c.nullable}
        if c.default is not None:
            d["default"] = c.default
        if c.identity is not None:
            d["identity"] = c.identity
        if c.type.stored_scale is not None:
            d["ss"] = c.type.stored_scale
        if c.type.of:
            d["of"] = [_encode_type(t) for t in c.type.of]
        out.append(d)
    return json.dumps(out)


def _encode_type(t: SqlType) -> dict:
    """An element type of a list or map column (``SqlType.of``), nested as deep as it is."""
    d = {"type": t.name, "p": t.precision, "s": t.scale}
    if t.of:
        d["of"] = [_encode_type(x) for x in t.of]
    return d


def _decode_type(d: dict) -> SqlType:
    # "of" (the element types of a list or map) is absent for every other type
    return SqlType(d["type"], d["p"], d["s"], d.get("ss"), tuple(_decode_type(x) for x in d.get("of", ())))


def _decode_columns(text: str) -> tuple[Column, ...]:
    # "default" and "identity" are absent from catalogs written before column defaults;
    # "ss" (SqlType.stored_scale) from those written before views stored their query's scale
    return tuple(Column(d["name"], _decode_type(d), d["null"], d.get("default"), d.get("identity"))
                 for d in json.loads(text))


_SEQUENCE_FIELDS = ("type", "increment", "minvalue", "maxvalue", "start", "cache", "cycle")


def _encode_sequence(q: Sequence) -> str:
    d = {f: getattr(q, f) for f in _SEQUENCE_FIELDS}
    d["owned_by"] = list(q.owned_by) if q.owned_by else None
    return json.dumps(d)


def _decode_sequence(id_: str, schema: str, name: str, spec: str) -> Sequence:
    d = json.loads(spec)
    return Sequence(id_, schema, name, **{f: d[f] for f in _SEQUENCE_FIELDS},
                    owned_by=tuple(d["owned_by"]) if d.get("owned_by") else None)
