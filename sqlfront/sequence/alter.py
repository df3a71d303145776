"""Statements that change a table that may hold rows: ``ALTER TABLE`` (ADD/DROP/RENAME
COLUMN, SET/DROP DEFAULT, SET/DROP NOT NULL, RENAME TO, OWNER TO), ``ALTER ... RENAME``
of views, sequences and indexes (both halves: :func:`rename` and :func:`rename_item`),
``CREATE TABLE ... AS`` and ``TRUNCATE``.

Catalog changes go through the Coordinator (the family modules build them: ``tables``).
A change to a table's columns that its stored parts cannot follow (parts name their
columns) rewrites the rows into a new shard on a replica of the session's cluster, as
PostgreSQL rewrites a table for such an ALTER, seals the old shard and swaps the new
one in by one catalog transaction (``rewrite_table``). An error leaves the table as it
was.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from pglast import ast
from pglast.enums import AlterTableType, ObjectType

from catalog import durable
from catalog.errors import (
    SqlError, DUPLICATE_COLUMN, DUPLICATE_TABLE, FEATURE_NOT_SUPPORTED, NOT_NULL_VIOLATION, SERIALIZATION_FAILURE,
    UNDEFINED_COLUMN, UNDEFINED_TABLE, WRONG_OBJECT_TYPE,
)
from catalog.snapshot import CatalogSnapshot, Column, Index, MaterializedView, Table, View
from catalog.types import TEXT
from persist import ShardSealed, UpperMismatch
from persist.shard_id import ShardId, rewrite_shard_id
from sqlfront.parse import quote_literal
from sqlfront.rename_refs import rename_index_relation, rename_references
from sqlfront.sequence import schemas
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.objects import _id_order, _lookup, _reads, _replace_definition, find_item, output_names
from sqlfront.sequence.result import Result
from sqlfront.sequence.tables import create_table, drop_tables, update_table

log = logging.getLogger(__name__)

#: how long a failed ALTER TABLE goes on trying to unseal its table's shard (seconds)
UNSEAL_RETRY_S = 3600.0
#: the longest pause between two of those tries (seconds)
UNSEAL_MAX_PAUSE_S = 10.0

if TYPE_CHECKING:
    from sqlfront.session import Session

def alter_table(s: Session, stmt: ast.AlterTableStmt, sql: str, params) -> Result:
    """ALTER TABLE [IF EXISTS] t cmd, ... (also ALTER VIEW/SEQUENCE/INDEX ... OWNER TO).
    Commands apply in order, all or none (an OWNER TO among others applies first).

    Raises:
        SqlError 42P01 unknown table (nothing with IF EXISTS); 42701 ADD of an existing
        column; 42703 DROP/ALTER of a missing one; 23502 SET NOT NULL or ADD ... NOT NULL
        over NULLs; 0A000 for other commands; DEFAULT's errors (``planner.ddl``)."""
    from planner.ddl import check_default, plan_table

    tag = {ObjectType.OBJECT_VIEW: "ALTER VIEW", ObjectType.OBJECT_SEQUENCE: "ALTER SEQUENCE",
           ObjectType.OBJECT_INDEX: "ALTER INDEX", ObjectType.OBJECT_MATVIEW: "ALTER MATERIALIZED VIEW"}.get(
        stmt.objtype, "ALTER TABLE")
    for c in stmt.cmds:
        if c.subtype == AlterTableType.AT_ChangeOwner:  # ALTER ... OWNER TO (sqlfront.sequence.roles)
            from sqlfront.sequence.roles import alter_relation_owner

            alter_relation_owner(s, stmt.relation, bool(stmt.missing_ok), c.newowner)
    if all(c.subtype == AlterTableType.AT_ChangeOwner for c in stmt.cmds):
        return Result(tag)
    snap = s.catalog
    rv = stmt.relation
    try:
        table = _table(snap, rv)
    except SqlError:
        if stmt.missing_ok:
            return Result(tag)
        raise
    cols = list(table.columns)
    #: new column -> index of its old column, or None for an added one
    source: list[int | None] = list(range(len(cols)))
    check_not_null = False
    for cmd in stmt.cmds:
        t = cmd.subtype
        names = [c.name for c in cols]
        if t == AlterTableType.AT_ChangeOwner:
            continue
        if t == AlterTableType.AT_AddColumn:
            if cmd.def_.colname in names:
                if cmd.missing_ok:
                    continue
                raise SqlError(DUPLICATE_COLUMN, f'column "{cmd.def_.colname}" of relation "{table.name}" already exists')
            tdef = plan_table(ast.CreateStmt(relation=rv, tableElts=(cmd.def_,)), snap, s.statement.plan)
            if tdef.owned:
                raise SqlError(FEATURE_NOT_SUPPORTED, "ADD COLUMN of a serial or identity column is not supported")
            cols.append(tdef.columns[0])
            source.append(None)
            check_not_null |= not tdef.columns[0].nullable
        elif t == AlterTableType.AT_DropColumn:
            if cmd.name not in names:
                if cmd.missing_ok:
                    continue
                raise SqlError(UNDEFINED_COLUMN, f'column "{cmd.name}" of relation "{table.name}" does not exist')
            if len(cols) == 1:
                raise SqlError(FEATURE_NOT_SUPPORTED, "cannot drop the only column of a table")
            i = names.index(cmd.name)
            del cols[i], source[i]
        elif t == AlterTableType.AT_ColumnDefault:
            i = _column(table, names, cmd.name)
            default = None
            if cmd.def_ is not None:
                from pglast.stream import RawStream

                default = RawStream()(cmd.def_)
                check_default(snap, default, cols[i], s.statement.plan)
            cols[i] = replace(cols[i], default=default)
        elif t == AlterTableType.AT_SetNotNull:
            i = _column(table, names, cmd.name)
            cols[i] = replace(cols[i], nullable=False)
            check_not_null = True
        elif t == AlterTableType.AT_DropNotNull:
            i = _column(table, names, cmd.name)
            cols[i] = replace(cols[i], nullable=True)
        else:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"ALTER TABLE {t.name.removeprefix('AT_')} is not supported")
    if [c.name for c in cols] == [c.name for c in table.columns] and source == list(range(len(cols))) \
            and not check_not_null:
        run(s, update_table(table, replace(table, columns=tuple(cols))))
    else:
        rewrite_table(s, table, tuple(cols), source)
    return Result(tag)


def _table(snap, rv) -> Table:
    rel = snap.resolve_relation(rv.schemaname, rv.relname)
    if type(rel) is not Table:  # a view, materialized view, source or system table
        raise SqlError(WRONG_OBJECT_TYPE, f'"{rv.relname}" is not a table')
    return rel


def _column(table: Table, names: list[str], name: str) -> int:
    if name not in names:
        raise SqlError(UNDEFINED_COLUMN, f'column "{name}" of relation "{table.name}" does not exist')
    return names.index(name)


def rewrite_table(s: Session, table: Table, columns: tuple[Column, ...], source: list[int | None]) -> None:
    """Give ``table`` the ``columns``, each new column ``j`` holding old column
    ``source[j]``'s values (assigned to its type), or its DEFAULT where ``source[j]`` is
    None: the rows are copied into a new shard, the old shard is sealed and the new one
    swapped in by one catalog transaction.

    The seal is what makes the swap safe: from it on, a write planned against the old
    table fails its append and is planned again against the new one
    (``sqlfront.sequence.writes.replanned``), so no acknowledged write is left behind in
    the old shard. The first copy runs while writes go on and seals only if none landed
    since (its snapshot's upper); if one did, the shard is sealed first and copied
    again, with the table's writers waiting (as behind PostgreSQL's ACCESS EXCLUSIVE
    lock of a table rewrite). An error unseals the old shard and drops the new one.

    Raises:
        SqlError 23502 when a NOT NULL column would hold NULL (PostgreSQL: 'column "c"
        of relation "t" contains null values'); 40001 when the table changed or was
        dropped by a concurrent statement; 25001 in a transaction block (the rewrite and
        the seal cannot wait for COMMIT); replica errors. The table is unchanged then."""
    from sqlfront.sequence import block_ddl

    if block_ddl.in_block(s):
        raise SqlError(block_ddl.ACTIVE_SQL_TRANSACTION, "ALTER TABLE that changes a table's columns cannot run "
                       "inside a transaction block")
    env = s.env
    persist = env.persist
    for optimistic in (True, False):
        state = persist.state(table.shard_id)
        if state.sealed:  # another ALTER TABLE or a DROP got there first
            raise SqlError(SERIALIZATION_FAILURE, f'table "{table.name}" was changed by a concurrent statement')
        if optimistic:
            # the copy reads at as_of, and the seal below expects state's upper: nothing between
            try:
                as_of, state = persist.read_point(table.shard_id, state, env.oracle.read_ts())
            except ShardSealed:
                raise SqlError(SERIALIZATION_FAILURE, f'table "{table.name}" was changed by a concurrent statement') from None
        else:
            state = env.storage.writer.seal(table.shard_id)
            # a sealed shard's rows are final: read below its upper, which no read may
            # advance any more (a fencing read above it would fail: the shard is sealed)
            as_of = state.upper - 1
        shard = rewrite_shard_id()
        try:
            with env.storage.table_lock(table.shard_id):  # UPDATE and DELETE wait for the copy
                target = _copy_rows(s, table, columns, source, shard, state, as_of)
            if optimistic and isinstance(env.storage.writer.seal(table.shard_id, state.upper), UpperMismatch):
                env.storage.drop_shard(shard)  # a write landed after the copy's snapshot
                continue
        except BaseException:
            if not optimistic:
                _reopen(s, table)
            env.storage.drop_shard(shard)
            raise
        try:
            run(s, update_table(table, target))
        except BaseException:
            _reopen(s, table)
            env.storage.drop_shard(shard)
            raise
        return


def _reopen(s: Session, table: Table) -> None:
    """Unseal ``table``'s shard after a failed rewrite, unless the table is gone (a
    dropped table's shard stays sealed). When the store cannot be reached now (the
    rewrite failed for that very reason, often), a thread goes on trying
    (``_unseal_until_done``): left sealed, the table would refuse every read and write
    with 40001 for good (the chaos run's cut link during an ALTER TABLE)."""
    cur = s.catalog.tables.get(table.id)
    if cur is None or cur.shard_id != table.shard_id:
        return
    try:
        s.env.storage.writer.unseal(table.shard_id)
    except Exception as e:  # the store's errors: psycopg's, sqlite's, OSError
        log.warning("ALTER TABLE %s failed and its shard %s stays sealed until the store answers (%s): "
                    "unsealing it in the background", table.name, table.shard_id, type(e).__name__)
        threading.Thread(target=_unseal_until_done, args=(s.env, table), daemon=True,
                         name=f"unseal-{table.shard_id}").start()


def _unseal_until_done(env, table: Table, give_up_s: float = UNSEAL_RETRY_S, pause: float = 0.5) -> bool:
    """Try to unseal ``table``'s shard until it succeeds, the catalog no longer names the
    shard (a DROP), or ``give_up_s`` seconds pass, pausing ``pause`` seconds doubling to
    ``UNSEAL_MAX_PAUSE_S`` between tries. Returns whether the shard was unsealed."""
    deadline = time.monotonic() + give_up_s
    while time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(pause * 2, UNSEAL_MAX_PAUSE_S)
        try:
            cur = env.snapshot().tables.get(table.id)
            if cur is None or cur.shard_id != table.shard_id:
                return False
            env.storage.writer.unseal(table.shard_id)
        except Exception:
            continue
        log.info("unsealed shard %s of table %s after its ALTER TABLE failed", table.shard_id, table.name)
        return True
    log.error("gave up unsealing shard %s of table %s after %.0f s", table.shard_id, table.name, give_up_s)
    return False


def _copy_rows(s: Session, table: Table, columns: tuple[Column, ...], source: list[int | None], shard: ShardId,
               state, as_of: int) -> Table:
    """Create ``shard`` and fill it with ``table``'s rows at ``as_of`` (``state`` is the
    old shard's, its upper past ``as_of``), made into ``columns`` (see
    ``rewrite_table``); returns the table with them and it.

    Raises:
        SqlError 23502 for a NULL in a NOT NULL column; replica errors."""
    from planner.consteval import evaluate, is_volatile
    from planner.plan import Get, Project
    from planner.scalar import ColRef, Literal
    from planner.assign import assign_expr
    from planner.writes import default_exprs
    from sqlfront.group_commit import Write
    from sqlfront.sequence.peek import peek
    from sqlfront.sequence.result import rows_to_arrow
    from sqlfront.sequence.writes import replica_write

    env = s.env
    target = replace(table, columns=columns, shard_id=shard)
    env.storage.create_shard(shard)
    if state.row_count() == 0:
        return target
    defaults = default_exprs(s.catalog, target, s.statement.plan)
    get = Get(table, tuple((c.name, c.type) for c in table.columns))
    exprs, fill = [], []
    for j, (c, src) in enumerate(zip(columns, source)):
        if src is not None:
            exprs.append(assign_expr(ColRef(src, table.columns[src].type), c.type, c.name))
        elif defaults[j] is not None and is_volatile(defaults[j]):
            exprs.append(Literal(None, c.type))
            fill.append((j, defaults[j]))
        else:
            exprs.append(defaults[j] if defaults[j] is not None else Literal(None, c.type))
    plan = Project(get, tuple(exprs), tuple(c.name for c in columns))
    if fill or not all(c.nullable for c in columns):
        rows = [list(r) for r in peek(s, plan, as_of=as_of)]
        for r in rows:
            for j, e in fill:
                r[j] = evaluate(e, ctx=s.statement.plan)
            for c, v in zip(columns, r):
                if v is None and not c.nullable:
                    raise SqlError(NOT_NULL_VIOLATION, f'column "{c.name}" of relation "{table.name}" contains null values')
        writes = [Write(shard, rows=rows_to_arrow(target, [tuple(r) for r in rows]))]
    else:
        writes = [Write(shard, batch=replica_write(s, target, plan, diffs=False, as_of=as_of))]
    env.storage.writer.commit(writes)
    # The rows land at the copy's write timestamp, later than the shard's creation: a
    # read between the two (a block whose timestamp was taken before the swap, reading
    # the table after it) would find the new shard empty. Its since goes to the copy's
    # time, so such a read fails (22000) instead (found by the chaos workload, issue 28).
    env.persist.maintain(shard, env.persist.state(shard).upper - 1, force=True)
    return target


def rename(s: Session, stmt: ast.RenameStmt, sql: str, params) -> Result:
    """ALTER SCHEMA/TABLE/VIEW/MATERIALIZED VIEW/SEQUENCE/INDEX ... RENAME TO, ALTER TABLE ... RENAME
    [COLUMN] a TO b. The views and materialized views that read a renamed table, view or
    materialized view are rewritten to read its new name, so they keep working and keep
    depending on it (Materialize's "ALTER ... RENAME"; :func:`rename_item`).

    Raises:
        SqlError 42P07 for a taken name; 42701 for a taken column name; 42703/42P01
        for what does not exist (nothing with IF EXISTS); 0A000 for other renames."""
    t = stmt.renameType
    if t == ObjectType.OBJECT_SCHEMA:
        run(s, schemas.rename_schema(stmt.subname, stmt.newname))
        return Result("ALTER SCHEMA")
    kinds = {ObjectType.OBJECT_TABLE: "TABLE", ObjectType.OBJECT_VIEW: "VIEW", ObjectType.OBJECT_SEQUENCE: "SEQUENCE",
             ObjectType.OBJECT_INDEX: "INDEX", ObjectType.OBJECT_MATVIEW: "MATERIALIZED VIEW"}
    if t in kinds:
        rv = stmt.relation
        run(s, rename_item(rv.schemaname, rv.relname, stmt.newname, bool(stmt.missing_ok)))
        return Result(f"ALTER {kinds[t]}")
    if t == ObjectType.OBJECT_COLUMN and stmt.relationType == ObjectType.OBJECT_TABLE:
        snap = s.catalog
        try:
            table = _table(snap, stmt.relation)
        except SqlError:
            if stmt.missing_ok:
                return Result("ALTER TABLE")
            raise
        names = [c.name for c in table.columns]
        i = _column(table, names, stmt.subname)
        if stmt.newname in names and stmt.newname != stmt.subname:
            raise SqlError(DUPLICATE_COLUMN, f'column "{stmt.newname}" of relation "{table.name}" already exists')
        if stmt.newname != stmt.subname:
            cols = list(table.columns)
            cols[i] = replace(cols[i], name=stmt.newname)
            rewrite_table(s, table, tuple(cols), list(range(len(cols))))
        return Result("ALTER TABLE")
    raise SqlError(FEATURE_NOT_SUPPORTED, f"ALTER {t.name.removeprefix('OBJECT_')} ... RENAME is not supported")


def rename_item(schema: str | None, name: str, new_name: str, if_exists: bool):
    """ALTER TABLE/VIEW/SEQUENCE/INDEX [IF EXISTS] name RENAME TO new_name (any of the
    four, as PostgreSQL allows). A renamed sequence's serial defaults follow it.

    Raises (from ``build``): 42P01 unknown object (nothing with IF EXISTS); 42P07 for
    a taken name; 42809 for a system object."""
    def build(snap: CatalogSnapshot, ids) -> list:
        obj = find_item(snap, schema, name)
        if obj is None:
            if if_exists:
                return []
            raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{name}'")
        if getattr(obj, "builtin", False):
            raise SqlError(WRONG_OBJECT_TYPE, f'cannot rename system object "{name}"')
        if new_name == obj.name:
            return []
        if snap.name_taken(obj.schema, new_name):
            raise SqlError(DUPLICATE_TABLE, f'relation "{new_name}" already exists')
        new = replace(obj, name=new_name)
        if isinstance(obj, MaterializedView):  # same id, same shard: its cluster keeps maintaining it
            return [durable.UpdateMaterializedView(new)] + _rename_in_readers(snap, obj, new_name)
        if isinstance(obj, Table):
            return [durable.UpdateTable(new)] + _rename_in_readers(snap, obj, new_name)
        if isinstance(obj, View):
            return [durable.DropView(obj.id), durable.CreateView(new)] + _rename_in_readers(snap, obj, new_name)
        if isinstance(obj, Index):
            return [durable.DropIndex(obj.id), durable.CreateIndex(new)]
        ops: list = [durable.UpdateSequence(new)]
        serial = f"nextval({quote_literal(obj.name)}::regclass)"
        for t in snap.tables.values():
            if any(c.default == serial for c in t.columns):
                ops.append(durable.UpdateTable(replace(t, columns=tuple(
                    replace(c, default=f"nextval({quote_literal(new_name)}::regclass)") if c.default == serial else c
                    for c in t.columns))))
        return ops

    return build


def _rename_in_readers(snap: CatalogSnapshot, obj, new_name: str) -> list:
    """Ops rewriting the views and materialized views that read ``obj`` to read it as
    ``new_name`` (Materialize's "ALTER ... RENAME": dependents' definitions follow the
    rename, so they keep working and keep depending on it; same ids, and a materialized
    view keeps its shard)."""
    def means_obj(schema: str | None, name: str) -> bool:
        rel = _lookup(snap, schema, name, snap.relation_by_name)
        return rel is not None and rel.id == obj.id

    ops: list = []
    for v in sorted([*snap.views.values(), *snap.materialized_views.values()], key=_id_order):
        if v.id == obj.id or not any(means_obj(sc, n) for sc, n in _reads(v)):
            continue
        ops += _replace_definition(v, rename_references(v.sql, means_obj, new_name))
    for i in sorted(snap.indexes.values(), key=_id_order):  # their CREATE statements name it too
        if i.on_id == obj.id:
            ops += [durable.DropIndex(i.id), durable.CreateIndex(replace(i, definition=rename_index_relation(
                i.definition, new_name)))]
    return ops



def truncate(s: Session, stmt: ast.TruncateStmt, sql: str, params) -> Result:
    """TRUNCATE [TABLE] t, ... [RESTART IDENTITY | CONTINUE IDENTITY] [CASCADE |
    RESTRICT]: deletes every row (as DELETE does: retractions written by a replica);
    RESTART IDENTITY restarts the sequences the tables' columns own.

    Raises:
        SqlError 42P01 unknown table; 42809 for a view or system table; 0A000 in a
        transaction block (as DELETE)."""
    from sqlfront.sequence.writes import rewrite

    snap = s.catalog
    tables = [_table(snap, rv) for rv in stmt.relations]
    for rv in stmt.relations:
        rewrite(s, ast.DeleteStmt(relation=rv), sql, params)
    if stmt.restart_seqs:
        for q in snap.sequences.values():
            if q.owned_by and q.owned_by[0] in {t.id for t in tables}:
                s.env.sequences.setval(q, q.start, False)
    return Result("TRUNCATE TABLE")


def create_table_as(s: Session, stmt: ast.CreateTableAsStmt, sql: str, params) -> Result:
    """CREATE [TEMP] TABLE [IF NOT EXISTS] t [(names)] AS query [WITH [NO] DATA], and
    SELECT ... INTO t: a table with the query's columns, filled by INSERT ... SELECT at
    once. In a transaction block the table is the block's until COMMIT, its rows in a
    shard only the block knows (dbt creates tables this way inside transactions, then
    renames them). The command tag is PostgreSQL's (``SELECT n``).

    Raises:
        SqlError 42P07 for a taken name; 42601 for more names than columns; 42701 for
        a duplicate column; the query's errors. A failed fill drops the new table."""
    from planner.ddl import TableDef
    from planner.query import QueryPlanner
    from sqlfront.sequence import block_ddl
    from sqlfront.sequence.writes import insert

    if stmt.objtype != ObjectType.OBJECT_TABLE:
        raise SqlError(FEATURE_NOT_SUPPORTED, f"CREATE {stmt.objtype.name.removeprefix('OBJECT_')} AS is not supported")
    into = stmt.into
    rv = into.rel
    temp = rv.relpersistence == "t"
    snap = s.catalog
    pq = QueryPlanner(snap, params, ctx=s.statement.plan).plan_raw(stmt.query)
    names = output_names(list(pq.names), [c.sval for c in into.colNames or ()], "too many column names were specified")
    cols = tuple(Column(n, TEXT if t.name == "unknown" else t) for n, (_, t) in zip(names, pq.plan.columns))
    schema = snap.creation_schema(rv.schemaname, temp)
    existed = snap.name_taken(schema, rv.relname)
    run(s, create_table(rv.schemaname, rv.relname, TableDef(cols), bool(stmt.if_not_exists), temp))
    if existed or into.skipData:
        return Result("CREATE TABLE AS")
    target = ast.RangeVar(schemaname=schema, relname=rv.relname, inh=True, relpersistence="p")
    fill = ast.InsertStmt(relation=target, selectStmt=stmt.query, cols=tuple(ast.ResTarget(name=n) for n in names))
    if block_ddl.in_block(s):
        # The table is the block's until COMMIT, but its rows go to its shard at once
        # (nobody else knows the shard): the block's UPDATE and DELETE read them as
        # committed rows (dbt's incremental models DELETE ... USING such a table).
        # A failed fill aborts the block, whose ROLLBACK deletes the shard.
        block_ddl.create_shard_now(s, s.catalog.resolve_relation(schema, rv.relname).shard_id)
        r = insert(s, fill, sql, params, now=True)
    else:
        try:
            r = insert(s, fill, sql, params, now=True)
        except BaseException:
            run(s, drop_tables([(schema, rv.relname)], True))
            raise
    # The fill took effect at once, after the timestamp the block's reads were pinned to
    # (by this statement's own query): later reads of the block start afresh, so they see
    # the new table's rows (dbt-postgres's incremental models read them back in the block).
    # No read of user data came before in the block (DDL may not follow one), so nothing
    # the block read earlier is contradicted.
    s.release_read_ts()
    return Result(f"SELECT {r.tag.split()[-1]}")
