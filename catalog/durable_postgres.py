"""The durable catalog on PostgreSQL (``--catalog-url postgres://...``), shared by several
environmentd processes: the catalog as a versioned log, committed by compare-and-append
on the version.

Table (created if missing)::

    catalog_log (version bigint PRIMARY KEY, ops jsonb, next_ids jsonb, committed_at timestamptz)

Version ``v`` holds the ops of the catalog transaction that made version ``v``, and the
id counters after it. A commit inserts version ``snapshot.version + 1``; when another
process committed that version first, the primary key refuses it and
:class:`CatalogConflict` is raised: the Coordinator loads the newer catalog and plans the
statement again. Every process follows the log (:meth:`PostgresCatalogStore.changes_since`):
a commit sends ``NOTIFY catalog_log`` and followers ``LISTEN`` (:meth:`wait_for_change`),
with polling as the fallback.

The snapshot is built by the sqlite :class:`catalog.durable.CatalogStore` (an in-memory
database here), which applies the ops exactly as the single-process catalog does: this
module stores and replays ops, it does not interpret them. Ops are encoded generically
(every dataclass of ``catalog.durable``, ``catalog.snapshot`` and ``catalog.types``), so
a new op kind needs nothing here.

Secrets in ops (a REMOTE replica's TOKEN) are stored encrypted, by the same
:func:`catalog.durable.seal_op` as the sqlite catalog's, under a key every process of the
catalog shares (``--catalog-key-file``): a dump of the database does not give them away.

Interface: that of ``CatalogStore`` (``is_new``, ``load``, ``transact``, ``close``).
"""

from __future__ import annotations

import dataclasses
import json
import threading

from catalog import durable, snapshot, types
from catalog.errors import SqlError, INTERNAL_ERROR, SERIALIZATION_FAILURE
from catalog.secretbox import SecretBox
from catalog.snapshot import CatalogSnapshot

_DDL = ["CREATE TABLE IF NOT EXISTS catalog_log ("
        " version bigint PRIMARY KEY, ops jsonb NOT NULL, next_ids jsonb NOT NULL,"
        " committed_at timestamptz NOT NULL DEFAULT now())",
        # the fingerprint of the key the log's secrets are sealed with (one row)
        "CREATE TABLE IF NOT EXISTS catalog_key (id int PRIMARY KEY CHECK (id = 1), fingerprint text NOT NULL)"]


class CatalogKeyMismatch(SqlError):
    """This process's catalog key is not the one the shared catalog's secrets are sealed
    with (XX000: a configuration error; the process refuses to start rather than seal
    secrets the others cannot read)."""

    def __init__(self):
        super().__init__(INTERNAL_ERROR, "the catalog key differs from the one the shared catalog's secrets are sealed with",
                         hint="Give every process of this catalog the same --catalog-key-file.")


class CatalogConflict(SqlError):
    """Another environmentd committed a catalog transaction first (40001: the statement
    can be planned again against the newer catalog)."""

    def __init__(self, version: int):
        super().__init__(SERIALIZATION_FAILURE, f"catalog version {version} was committed by another environmentd",
                         hint="The statement is planned again against the newer catalog.")
        self.version = version


def _dataclasses() -> dict[str, type]:
    return {name: obj for mod in (durable, snapshot, types) for name, obj in vars(mod).items()
            if isinstance(obj, type) and dataclasses.is_dataclass(obj)}


def encode_op(value):
    """A catalog op (or any value inside one) as JSON-able data: a dataclass becomes
    ``{"_t": class name, field: value...}``, a tuple ``{"_tuple": [...]}``."""
    if dataclasses.is_dataclass(value):
        return {"_t": type(value).__name__,
                **{f.name: encode_op(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, tuple):
        return {"_tuple": [encode_op(v) for v in value]}
    if isinstance(value, list):
        return [encode_op(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot encode {type(value).__name__} in a catalog op")


def decode_op(data, classes: dict[str, type] | None = None):
    """The inverse of :func:`encode_op`. Raises KeyError for an unknown class name."""
    classes = classes if classes is not None else _dataclasses()
    if isinstance(data, dict):
        if "_tuple" in data:
            return tuple(decode_op(v, classes) for v in data["_tuple"])
        cls = classes[data["_t"]]
        return cls(**{k: decode_op(v, classes) for k, v in data.items() if k != "_t"})
    if isinstance(data, list):
        return [decode_op(v, classes) for v in data]
    return data


class PostgresCatalogStore:
    """The catalog log in the PostgreSQL database at ``url``. Thread-safe (the
    Coordinator is its one writer in each process).

    ``box`` encrypts the secrets of the ops it commits and decrypts those it reads; None
    (a reader that never needs them, such as ``persist-write``) leaves them as stored.

    Raises psycopg.OperationalError when the server is unreachable (nothing committed)."""

    def __init__(self, url: str, box: SecretBox | None = None):
        from pgconn import ConnectionPool, create_once

        self.url = url
        self._box = box
        self._pool = ConnectionPool(url, setup=lambda c: create_once(c, _DDL))
        self._lock = threading.Lock()
        self._classes = _dataclasses()
        #: the materialized catalog (sqlite in memory) and its snapshot
        self._mat: durable.CatalogStore | None = None
        self._snap: CatalogSnapshot | None = None
        #: the LISTEN connection of wait_for_change
        self._listener = None
        with self._pool.connection() as c:  # a wrong URL fails at startup
            if box is not None:
                self._check_key(c, box)

    def is_new(self) -> bool:
        with self._pool.connection() as c:
            return c.execute("SELECT NOT EXISTS (SELECT 1 FROM catalog_log)").fetchone()[0]

    def load(self) -> CatalogSnapshot:
        """The catalog at the log's latest version (replayed from version 1)."""
        with self._lock:
            if self._mat is not None:
                self._mat.close()
            self._mat = durable.CatalogStore(":memory:")
            self._snap = self._mat.load()
            self._seal_clear_secrets()
            self._replay(self._entries_after(0))
            return self._snap

    def changes_since(self, version: int) -> list[tuple[CatalogSnapshot, CatalogSnapshot, list]]:
        """The transactions other processes committed after ``version`` (which must be
        the version of the last snapshot this store returned): ``(old, new, ops)`` each,
        in order, with this store's snapshot advanced past them. Empty when none."""
        with self._lock:
            if self._snap is None or self._snap.version != version:
                raise ValueError(f"the store is at version {self._snap and self._snap.version}, not {version}")
            return self._replay(self._entries_after(version))

    def latest_version(self) -> int:
        """The log's latest version (one round trip; for polling)."""
        with self._pool.connection() as c:
            return c.execute("SELECT coalesce(max(version), 0) FROM catalog_log").fetchone()[0]

    def transact(self, snap: CatalogSnapshot, ops: list, next_ids: dict[str, int]) -> CatalogSnapshot:
        """Commit ``ops`` as version ``snap.version + 1`` and return the snapshot after it.

        Raises:
            CatalogConflict: another process committed that version first (or ``snap`` is
                older than what this store has already followed); nothing is committed.
            sqlite3.Error: the ops break a catalog constraint; nothing is committed."""
        with self._lock:
            if self._snap is None or snap.version != self._snap.version:
                raise CatalogConflict(snap.version + 1)
            version = snap.version + 1
            entry = json.dumps([encode_op(self._seal(op)) for op in ops])
            new = self._mat.transact(snap, ops, next_ids)  # validates; in memory only
            try:
                with self._pool.connection() as c:
                    won = c.execute("INSERT INTO catalog_log (version, ops, next_ids) VALUES (%s, %s, %s)"
                                    " ON CONFLICT (version) DO NOTHING",
                                    (version, entry, json.dumps(dict(next_ids)))).rowcount == 1
            except BaseException:
                self._rebuild()
                raise
            if not won:
                self._rebuild()
                raise CatalogConflict(version)
            self._snap = new
        try:
            with self._pool.connection() as c:
                c.execute("SELECT pg_notify('catalog_log', %s)", (str(version),))
        except Exception:  # committed; followers poll
            pass
        return new

    def wait_for_change(self, timeout: float) -> None:
        """Block until another process may have committed (a NOTIFY on ``catalog_log``)
        or ``timeout`` seconds passed. For the one follower thread of a process."""
        import time

        import psycopg

        try:
            if self._listener is None:
                self._listener = psycopg.connect(self.url, autocommit=True, connect_timeout=10,
                                                 application_name="sqlfront-catalog-follow")
                self._listener.execute("LISTEN catalog_log")
            for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                pass
        except psycopg.Error:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
            time.sleep(timeout)  # polling until the server is back

    def close(self) -> None:
        with self._lock:
            if self._mat is not None:
                self._mat.close()
        if self._listener is not None:
            self._listener.close()
        self._pool.close()

    # -- internals (under self._lock) ---------------------------------------------------------

    def _entries_after(self, version: int) -> list[tuple[int, list, dict]]:
        with self._pool.connection() as c:
            rows = c.execute("SELECT version, ops, next_ids FROM catalog_log WHERE version > %s ORDER BY version",
                             (version,)).fetchall()
        return [(v, [self._unseal(decode_op(o, self._classes)) for o in ops], nxt) for v, ops, nxt in rows]

    @staticmethod
    def _check_key(c, box: SecretBox) -> None:
        """The first process's key fingerprint (an HMAC under the key: it tells nothing of
        the key) is the catalog's; a process with another key is refused.

        Raises:
            CatalogKeyMismatch."""
        mine = box.derive(b"catalog key fingerprint").hex()
        c.execute("INSERT INTO catalog_key (id, fingerprint) VALUES (1, %s) ON CONFLICT (id) DO NOTHING", (mine,))
        if c.execute("SELECT fingerprint FROM catalog_key WHERE id = 1").fetchone()[0] != mine:
            raise CatalogKeyMismatch()

    def _seal(self, op):
        return durable.seal_op(op, self._box) if self._box is not None else op

    def _unseal(self, op):
        return durable.unseal_op(op, self._box) if self._box is not None else op

    def _seal_clear_secrets(self) -> None:
        """Encrypt the secrets a version before encryption committed in clear, in place
        (the ops are otherwise the same, so every follower replays the same catalog)."""
        if self._box is None:
            return
        with self._pool.connection() as c:
            rows = c.execute("SELECT version, ops FROM catalog_log"
                             " WHERE jsonb_path_exists(ops, '$[*] ? (@._t == \"CreateReplica\").replica.token ? (@ != null)')"
                             ).fetchall()
            for version, ops in rows:
                decoded = [decode_op(o, self._classes) for o in ops]
                sealed = [self._seal(op) for op in decoded]
                if sealed != decoded:
                    c.execute("UPDATE catalog_log SET ops = %s WHERE version = %s",
                              (json.dumps([encode_op(op) for op in sealed]), version))

    def _replay(self, entries) -> list[tuple[CatalogSnapshot, CatalogSnapshot, list]]:
        out = []
        for version, ops, next_ids in entries:
            old = self._snap
            if version != old.version + 1:
                raise RuntimeError(f"catalog log has a gap: version {version} after {old.version}")
            self._snap = self._mat.transact(old, ops, next_ids)
            out.append((old, self._snap, ops))
        return out

    def _rebuild(self) -> None:
        """Rebuild the in-memory catalog up to the version this store last returned (the
        last transact applied ops locally that did not commit)."""
        target = self._snap.version
        self._mat.close()
        self._mat = durable.CatalogStore(":memory:")
        self._snap = self._mat.load()
        self._replay([e for e in self._entries_after(0) if e[0] <= target])
