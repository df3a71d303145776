"""PostgreSQL sources (Materialize's "CREATE SOURCE: PostgreSQL"): change data capture
over a PostgreSQL's logical replication, one subsource per upstream table.

Planning (:func:`plan`, in the session's thread, never the Coordinator's loop): the
connection's database must have ``wal_level = logical``; the publication's tables (FOR
ALL TABLES, or those named FOR TABLES) must have REPLICA IDENTITY FULL (so an UPDATE or
DELETE carries the whole old row: the retraction) and columns of types this server has.
Their columns, type OIDs and modifiers are kept in the source's spec.

Ingestion (:class:`PgSourceRunner`, a thread of the process that runs the source's
cluster): the first time, it creates the replication slot (``pgoutput``) exporting a
snapshot, reads every table in that snapshot and commits the rows with the slot's
consistent point as the progress LSN, in one group commit. Then it streams the slot from
the LSN committed (psycopg2's ``LogicalReplicationConnection``; messages decoded by
``sqlfront.protocol.pgoutput``): each upstream transaction's INSERT/UPDATE/DELETE become updates
``(row, +1/-1)``; whole transactions, gathered for a moment, are committed together with
the progress moving to the last one's end LSN, conditional on the progress shard's upper,
and only then is that LSN confirmed to the slot. After a restart (even a SIGKILL), it
streams again from the LSN committed and skips any transaction that ended at or before
it: no change lost or applied twice.

A table whose columns change upstream (a Relation message differing from the spec), that
is TRUNCATEd, or whose old rows stop coming (REPLICA IDENTITY changed) is in error
(Materialize's behaviour): its subsource takes no more changes and the error is reported
(``mz_internal.mz_source_statuses``; reading the subsource fails with it).
"""

from __future__ import annotations

import logging
import re
import select
import time
import uuid
from typing import TYPE_CHECKING

from catalog.errors import (
    SqlError, AMBIGUOUS_ALIAS, DUPLICATE_OBJECT, FEATURE_NOT_SUPPORTED, OBJECT_NOT_IN_PREREQUISITE_STATE,
    SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, SYNTAX_ERROR, UNDEFINED_OBJECT, UNDEFINED_TABLE,
)
from catalog.snapshot import CatalogSnapshot, Column, Source, Subsource
from catalog.types import INT8, make_type, type_from_oid
from sqlfront.protocol import pgoutput
from sqlfront import source_parse as sp
from sqlfront.sources import Plan, Runner

if TYPE_CHECKING:
    from sqlfront.environment import Environment

log = logging.getLogger(__name__)

#: the progress subsource's columns (Materialize's: the LSN committed)
PROGRESS_COLUMNS = (Column("lsn", INT8, True),)
#: settings of both upstream sessions (snapshot and stream), so values come in the text
#: forms this server parses
SESSION_OPTIONS = "-c DateStyle=ISO,MDY -c TimeZone=UTC -c IntervalStyle=postgres -c extra_float_digits=3 " \
                  "-c bytea_output=hex"
#: most seconds complete transactions wait to be committed together
GATHER_S = 0.2
#: most rows gathered before a commit
GATHER_ROWS = 50_000


def lsn_int(text: str) -> int:
    """``'16/B374D848'`` as an integer (PostgreSQL's pg_lsn)."""
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def column_type(table: str, name: str, type_oid: int, format_type: str):
    """The SqlType of an upstream column (its OID and ``format_type`` text, whose
    parenthesised numbers are the modifiers).

    Raises:
        SqlError 0A000 for a type this server does not have."""
    t = type_from_oid(type_oid)
    if t is None:
        raise SqlError(FEATURE_NOT_SUPPORTED, f'column "{name}" of table "{table}" has type {format_type}, '
                                              "which is not supported")
    if t.is_array:
        return t
    mods = re.search(r"\(([\d,]+)\)", format_type)
    try:
        return make_type(t.name, [int(m) for m in mods.group(1).split(",")] if mods else [])
    except SqlError:
        raise SqlError(FEATURE_NOT_SUPPORTED, f'column "{name}" of table "{table}" has type {format_type}, '
                                              "which is not supported") from None


def connection_params(snap: CatalogSnapshot, connection_id: str) -> dict:
    """libpq parameters of connection ``connection_id`` with :data:`SESSION_OPTIONS`.

    Raises:
        SqlError 42704 when the connection or its secret is gone."""
    from sqlfront.secrets import libpq_params

    c = snap.connections.get(connection_id)
    if c is None:
        raise SqlError(UNDEFINED_OBJECT, f"connection {connection_id} was dropped")
    return libpq_params(snap, c) | {"options": SESSION_OPTIONS}


def plan(snap: CatalogSnapshot, stmt: sp.CreateSource) -> Plan:
    """Read the upstream publication's tables for ``stmt`` and make its :class:`Plan`.

    Raises:
        SqlError 42704 for an unknown connection or publication; 0A000 for an option
        not implemented or an unsupported column type; 42601 without FOR ALL TABLES or
        FOR TABLES; 42P01 for a table FOR TABLES names that the publication lacks; 55000
        for wal_level other than logical or a table without REPLICA IDENTITY FULL;
        08001 when the database cannot be reached."""
    import psycopg

    from sqlfront.secrets import resolve_connection

    schema, _, cname = stmt.connection.rpartition(".")
    conn = resolve_connection(snap, schema or None, cname)
    options = dict(stmt.options)
    if set(options) - {"PUBLICATION"}:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"POSTGRES option {min(set(options) - {'PUBLICATION'})} "
                                              "is not supported")
    publication = options.get("PUBLICATION")
    if not publication:
        raise SqlError(SYNTAX_ERROR, "POSTGRES sources require a PUBLICATION option")
    if not stmt.all_tables and not stmt.tables:
        raise SqlError(SYNTAX_ERROR, "multi-output sources require a FOR TABLES (..) or FOR ALL TABLES statement")
    params = connection_params(snap, conn.id)
    try:
        with psycopg.connect(**params, autocommit=True) as c:
            if c.execute("SHOW wal_level").fetchone()[0] != "logical":
                raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, "postgres server must have wal_level = logical",
                               hint="Set wal_level = logical in the upstream server's configuration.")
            if c.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,)).fetchone() is None:
                raise SqlError(UNDEFINED_OBJECT, f'publication "{publication}" does not exist')
            published = c.execute(
                "SELECT c.oid, n.nspname, c.relname, c.relreplident FROM pg_publication_tables p "
                "JOIN pg_namespace n ON n.nspname = p.schemaname "
                "JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = p.tablename "
                "WHERE p.pubname = %s ORDER BY 2, 3", (publication,)).fetchall()
            chosen = _choose(published, stmt, publication)
            tables = []
            for oid, nsp, rel, ident, alias in chosen:
                qualified = f"{nsp}.{rel}"
                if ident != "f":
                    raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE,
                                   f'table "{qualified}" does not have REPLICA IDENTITY FULL',
                                   hint=f"ALTER TABLE {qualified} REPLICA IDENTITY FULL")
                cols = c.execute(
                    "SELECT attname, atttypid::int8, atttypmod, format_type(atttypid, atttypmod), attnotnull "
                    "FROM pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                    (oid,)).fetchall()
                for name, type_oid, _, ftype, _ in cols:
                    column_type(qualified, name, type_oid, ftype)  # refused now, not at the first row
                tables.append({"oid": oid, "schema": nsp, "name": rel, "subsource": alias or rel,
                               "columns": [[n, t, m, f, nn] for n, t, m, f, nn in cols]})
    except psycopg.Error as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SqlError(SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, f"failed to connect to PostgreSQL: {reason}") from None
    outputs = [(t["subsource"], _columns(t), f"{t['schema']}.{t['name']}") for t in tables]
    spec = {"connection_id": conn.id, "publication": publication, "tables": tables,
            "slot": f"sqlfront_{uuid.uuid4().hex[:16]}"}
    return Plan("postgres", spec, PROGRESS_COLUMNS, outputs)


def _choose(published: list, stmt: sp.CreateSource, publication: str) -> list:
    """The publication's tables the statement takes, each with its subsource name or None."""
    if stmt.all_tables:
        if not published:
            raise SqlError(UNDEFINED_TABLE, f'publication "{publication}" is empty')
        return [(*row, None) for row in published]
    out = []
    for schema, name, alias in stmt.tables:
        found = [r for r in published if r[2] == name and (schema is None or r[1] == schema)]
        if not found:
            raise SqlError(UNDEFINED_TABLE, f'reference to {schema + "." if schema else ""}{name} not found in source')
        if len(found) > 1:
            raise SqlError(AMBIGUOUS_ALIAS, f"table name {name} is ambiguous",
                           hint="Qualify it with its schema.")
        if any(o[:3] == found[0] for o in out):
            raise SqlError(DUPLICATE_OBJECT, f'table "{found[0][1]}.{name}" is named more than once')
        out.append((*found[0], alias))
    return out


def _columns(table: dict) -> tuple[Column, ...]:
    qualified = f"{table['schema']}.{table['name']}"
    return tuple(Column(n, column_type(qualified, n, t, f), not nn) for n, t, _, f, nn in table["columns"])


# -- ingestion ----------------------------------------------------------------------------------

class _Table:
    """One upstream table as ingested: its subsource's output key, columns, and error."""

    def __init__(self, spec: dict):
        self.oid = spec["oid"]
        self.key = f"{spec['schema']}.{spec['name']}"
        self.columns = _columns(spec)
        self.shape = [(n, t) for n, t, *_ in spec["columns"]]
        self.error: str | None = None

    def row(self, values: tuple) -> tuple:
        from catalog.textio import parse_text

        return tuple(None if v is None else parse_text(v, c.type, explicit=False)
                     for v, c in zip(values, self.columns))


class PgSourceRunner(Runner):
    """The ingestion of one PostgreSQL source, on its own thread (see the module doc)."""

    def __init__(self, env: Environment, source: Source):
        super().__init__(env, source)
        self.tables = {t["oid"]: _Table(t) for t in self.spec["tables"]}
        #: the LSN committed (0: no snapshot yet) and the progress shard's upper after it
        self.lsn = 0
        self._upper: int | None = None
        self._params: dict | None = None

    def ready(self) -> bool:
        """Whether its snapshot is committed, or it stopped (or stalled before it)."""
        return not self._thread.is_alive() or self.lsn > 0 or self.status == "stalled"

    def _run(self) -> None:
        backoff = 0.5
        try:
            while not self._stop.is_set():
                try:
                    if self._ingest():
                        return
                except Exception as e:  # noqa: BLE001 - upstream gone, a conflict: start again from the progress
                    if self._stop.is_set():
                        return
                    reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    password = (self._params or {}).get("password")
                    if password:
                        reason = reason.replace(password, "<REDACTED>")
                    self._set_status("stalled", reason)
                    log.warning("source %s: ingestion failed (%s: %s); resuming from its progress",
                                self.source.name, type(e).__name__, reason)
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, 10)
        finally:
            if self._dropped:
                self._drop_slot()

    def _drop_slot(self) -> None:
        """Drop the replication slot upstream (DROP SOURCE), once its walsender let go."""
        import psycopg

        if self._params is None:
            return
        slot = self.spec["slot"]
        for _ in range(50):
            try:
                with psycopg.connect(**self._params, autocommit=True) as c:
                    c.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                              "WHERE slot_name = %s AND NOT active", (slot,))
                    if c.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s",
                                 (slot,)).fetchone() is None:
                        return
            except psycopg.Error as e:
                log.info("source %s: dropping slot %s: %s", self.source.name, slot, type(e).__name__)
            time.sleep(0.2)

    # -- the work

    def _ingest(self) -> bool:
        """Snapshot if not yet done, then stream until stopped. Returns True when the
        source is gone (dropped)."""
        import psycopg2
        import psycopg2.extras

        from sqlfront.sources import committed_offset

        progress = self._progress()
        if progress is None or self.source.id not in self.env.snapshot.tables:
            return True
        self.lsn, self._upper = committed_offset(self.env, progress)
        self.stats["offset_committed"] = self.lsn
        self._params = connection_params(self.env.snapshot, self.spec["connection_id"])
        repl = psycopg2.connect(**self._params, connection_factory=psycopg2.extras.LogicalReplicationConnection)
        try:
            cur = repl.cursor()
            if self.lsn == 0:
                self._snapshot(cur, progress)
                if self._stop.is_set():  # stopped during the snapshot: nothing of it committed
                    return False
            self._set_status("running")
            cur.start_replication(slot_name=self.spec["slot"], decode=False, start_lsn=self.lsn,
                                  options={"proto_version": "1", "publication_names": self.spec["publication"]})
            self._stream(cur, progress)
        finally:
            repl.close()
        return False

    def _snapshot(self, cur, progress: Subsource) -> None:
        """Create the slot, read every table in its exported snapshot, commit the rows
        with the slot's consistent point as the progress LSN."""
        import psycopg

        from sqlfront.sources import commit_updates

        slot = self.spec["slot"]
        with psycopg.connect(**self._params, autocommit=True) as c:  # a slot left by a snapshot never committed
            c.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                      (slot,))
        cur.execute(f"CREATE_REPLICATION_SLOT {slot} LOGICAL pgoutput (SNAPSHOT 'export')")
        _, consistent_point, snapshot_name, _ = cur.fetchone()
        by_output: dict[str, list] = {}
        with psycopg.connect(**self._params) as c:
            c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            c.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_name}'")
            known = 0
            for t in self.tables.values():
                known += c.execute(f"SELECT count(*) FROM {_quote(t.key)}").fetchone()[0]
            self.stats["snapshot_records_known"], self.stats["snapshot_records_staged"] = known, 0
            for t in self.tables.values():
                cols = ", ".join(f"{_ident(n)}::text" for n, _ in t.shape)
                rows = by_output.setdefault(t.key, [])
                with c.cursor(name=f"snapshot_{t.oid}") as sc:
                    sc.execute(f"SELECT {cols} FROM {_quote(t.key)}")
                    while batch := sc.fetchmany(10_000):
                        rows += [(t.row(r), 1) for r in batch]
                        self.stats["snapshot_records_staged"] += len(batch)
                        if self._stop.is_set():
                            return
        lsn = lsn_int(consistent_point)
        ts = commit_updates(self.env, self.source, by_output, progress, "lsn", 0, lsn, self._upper)
        self.lsn, self._upper = lsn, ts + 1
        self.stats.update(snapshot_committed=True, offset_committed=lsn)
        self.stats["updates_committed"] += sum(len(v) for v in by_output.values())
        log.info("source %s: snapshot of %d rows committed at %d (LSN %s)", self.source.name,
                 self.stats["snapshot_records_staged"], ts, consistent_point)

    def _stream(self, cur, progress: Subsource) -> None:
        """Read the slot; commit whole transactions in groups (see the module doc)."""
        pending: dict[str, list] = {}
        pending_lsn = self.lsn
        pending_rows = 0
        first_at = None
        txn: list | None = None
        while not self._stop.is_set():
            msg = cur.read_message()
            if msg is None:
                self.stats["offset_known"] = max(self.stats["offset_known"] or 0, cur.wal_end or 0, self.lsn)
                if pending_lsn > self.lsn and (pending_rows or first_at is not None):
                    self._flush(cur, progress, pending, pending_lsn)
                    pending, pending_rows, first_at = {}, 0, None
                select.select([cur], [], [], 0.5)
                continue
            self.stats["messages_received"] += 1
            self.stats["bytes_received"] += len(msg.payload)
            self.stats["offset_known"] = max(self.stats["offset_known"] or 0, msg.wal_end)
            m = pgoutput.decode(msg.payload)
            if isinstance(m, pgoutput.Begin):
                txn = []
            elif isinstance(m, pgoutput.Commit):
                if m.end_lsn <= self.lsn or txn is None:  # committed before a restart: never twice
                    txn = None
                    continue
                for key, row, diff in txn:
                    pending.setdefault(key, []).append((row, diff))
                pending_rows += len(txn)
                self.stats["updates_staged"] += len(txn)
                pending_lsn = m.end_lsn
                first_at = first_at or time.monotonic()
                txn = None
                if pending_rows >= GATHER_ROWS or time.monotonic() - first_at >= GATHER_S:
                    self._flush(cur, progress, pending, pending_lsn)
                    pending, pending_rows, first_at = {}, 0, None
            elif isinstance(m, pgoutput.Relation):
                self._check_relation(m)
            elif txn is not None:
                self._change(m, txn)

    def _flush(self, cur, progress: Subsource, pending: dict, lsn: int) -> None:
        from sqlfront.sources import commit_updates

        ts = commit_updates(self.env, self.source, pending, progress, "lsn", self.lsn, lsn, self._upper)
        self.lsn, self._upper = lsn, ts + 1
        self.stats["updates_committed"] += sum(len(v) for v in pending.values())
        self.stats["offset_committed"] = lsn
        cur.send_feedback(flush_lsn=lsn)  # only now: the slot may forget what persist holds

    def _fail(self, table: _Table, reason: str) -> None:
        if table.error is None:
            table.error = reason
            log.warning("source %s: %s", self.source.name, reason)

    def _check_relation(self, m: pgoutput.Relation) -> None:
        t = self.tables.get(m.oid)
        if t is None or t.error:
            return
        shape = [(c.name, c.type_oid) for c in m.columns]
        if f"{m.schema}.{m.name}" != t.key or [tuple(s) for s in t.shape] != shape:
            self._fail(t, f'incompatible schema change: table "{t.key}" was altered upstream')

    def _change(self, m, txn: list) -> None:
        if isinstance(m, pgoutput.Truncate):
            for oid in m.oids:
                if oid in self.tables:
                    self._fail(self.tables[oid], f'table "{self.tables[oid].key}" was truncated upstream')
            return
        t = self.tables.get(getattr(m, "oid", None))
        if t is None or t.error:
            return
        if isinstance(m, pgoutput.Insert):
            txn.append((t.key, t.row(m.new), 1))
        elif isinstance(m, pgoutput.Update):
            if m.old is None or m.old_is_key:
                self._fail(t, f'table "{t.key}" no longer has REPLICA IDENTITY FULL')
                return
            new = tuple(o if n is pgoutput.UNCHANGED else n for o, n in zip(m.old, m.new))
            txn.append((t.key, t.row(m.old), -1))
            txn.append((t.key, t.row(new), 1))
        elif isinstance(m, pgoutput.Delete):
            if m.old_is_key:
                self._fail(t, f'table "{t.key}" no longer has REPLICA IDENTITY FULL')
                return
            txn.append((t.key, t.row(m.old), -1))

    def error_of(self, output: str) -> str | None:
        """The error of the subsource with output key ``output``, or None."""
        return next((t.error for t in self.tables.values() if t.key == output), None)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote(key: str) -> str:
    schema, _, name = key.partition(".")
    return f"{_ident(schema)}.{_ident(name)}"
