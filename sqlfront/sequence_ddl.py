"""DDL sequencing: validate a DDL statement against a snapshot and return catalog ops
(clusters' and replicas': ``sqlfront.sequence.clusters``).

Every function here returns a ``build(snapshot, ids) -> ops`` closure that the
Coordinator runs on its loop, so validation and commit see the same snapshot. They
are pure: no I/O, no waiting. Messages follow Materialize's where it has one
(``unknown cluster 'x'``, ``cluster 'x' already exists``).
"""

from __future__ import annotations

from dataclasses import replace

from catalog import durable
from catalog.errors import (
    SqlError, DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_TABLE,
    FEATURE_NOT_SUPPORTED, INVALID_SCHEMA_NAME,
    SERIALIZATION_FAILURE, SYNTAX_ERROR, UNDEFINED_COLUMN,
    UNDEFINED_TABLE, WRONG_OBJECT_TYPE,
)
from catalog.snapshot import (
    SYSTEM_SCHEMAS, USER_SCHEMA, CatalogSnapshot, Column, Index,
    MaterializedView, Schema, Sequence, Table, View,
)
from planner.ddl import TableDef
from sqlfront.parse import quote_literal
from sqlfront.rename_refs import rename_index_relation, rename_references


def _creation_schema(snap: CatalogSnapshot, ids, schema: str | None, temp: bool = False) -> tuple[str, list]:
    """The schema a new object goes into (``CatalogSnapshot.creation_schema``) and the
    ops creating it first when it is the session's temporary schema, not made yet."""
    s = snap.creation_schema(schema, temp)
    if s == snap.scope.temp_schema and snap.schema_by_name(s) is None:
        return s, [durable.CreateSchema(Schema(ids.allocate("item"), s, temp=True))]
    return s, []


def _lookup(snap: CatalogSnapshot, schema: str | None, name: str, find) -> object | None:
    """``find(schema, name)`` in ``schema``, or along the search path when unqualified."""
    for sc in ((snap.schema_name(schema),) if schema else snap.search_path()):
        o = find(sc, name)
        if o is not None:
            return o
    return None


def find_item(snap: CatalogSnapshot, schema: str | None, name: str):
    """The relation, sequence or index ``[schema.]name`` (they share one namespace, as
    PostgreSQL's pg_class), searched along the search path when unqualified; None if
    there is none."""
    return (_lookup(snap, schema, name, snap.relation_by_name) or _lookup(snap, schema, name, snap.sequence_by_name)
            or _lookup(snap, schema, name, snap.index_by_name))


def _unique(ops: list) -> list:
    """``ops`` without repeats (two paths may drop one object), in order."""
    seen, out = set(), []
    for op in ops:
        if op not in seen:
            seen.add(op)
            out.append(op)
    return out


def _free_name(snap: CatalogSnapshot, schema: str, base: str, taken: set[str] = frozenset()) -> str:
    """``base``, or ``base1``, ``base2``, ... : the first not taken in ``schema``
    (PostgreSQL's ChooseRelationName)."""
    name, n = base, 0
    while snap.name_taken(schema, name) or name in taken:
        n += 1
        name = f"{base}{n}"
    return name


def create_table(schema: str | None, name: str, tdef: TableDef, if_not_exists: bool, temp: bool = False):
    """CREATE TABLE, with a sequence for each serial/identity column, named
    ``<table>_<column>_seq`` (PostgreSQL's naming; 1, 2, ... appended while taken),
    owned by its column (dropped with the table) and used by its default
    ``nextval('<name>'::regclass)`` (PostgreSQL 8.1.4 "Serial Types").

    Raises (from ``build``): 42P07 for a taken name (a notice-free no-op with IF NOT
    EXISTS); 3F000 for an unknown schema."""
    def build(snap: CatalogSnapshot, ids) -> list:
        s, ops = _creation_schema(snap, ids, schema, temp)
        if snap.name_taken(s, name):
            if if_not_exists:
                return []
            raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        tid = ids.allocate("item")
        shard = ids.allocate_shard()
        columns = list(tdef.columns)
        chosen: set[str] = set()
        for o in tdef.owned:
            col = columns[o.column]
            seq_name = _free_name(snap, s, f"{name}_{col.name}_seq", chosen | {name})
            chosen.add(seq_name)
            opts = {k: v for k, v in o.options.items() if k not in ("owned_by", "restart")}
            ops.append(durable.CreateSequence(Sequence(ids.allocate("item"), s, seq_name, **opts,
                                                       owned_by=(tid, col.name))))
            columns[o.column] = replace(col, default=f"nextval({quote_literal(seq_name)}::regclass)")
        return ops + [durable.CreateTable(Table(tid, s, name, tuple(columns), shard))]

    return build


def create_view(schema: str | None, name: str, sql: str, columns: tuple[Column, ...], or_replace: bool,
                if_not_exists: bool = False):
    """CREATE [OR REPLACE] VIEW [IF NOT EXISTS] (Materialize's "CREATE VIEW"; IF NOT
    EXISTS: a taken name is a no-op).

    Raises (from ``build``): 42P07 for a taken name."""
    def build(snap: CatalogSnapshot, ids) -> list:
        s, ops = _creation_schema(snap, ids, schema)
        existing = snap.relation_by_name(s, name)
        if (existing is not None or snap.name_taken(s, name)) and if_not_exists:
            return []
        if existing is None and snap.name_taken(s, name):
            raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        if existing is not None:
            if not (or_replace and isinstance(existing, View)):
                raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
            ops.append(durable.DropView(existing.id))
        return ops + [durable.CreateView(View(ids.allocate("item"), s, name, sql, columns))]

    return build


def create_materialized_view(schema: str | None, name: str, sql: str, columns: tuple[Column, ...], cluster: str,
                             reads: frozenset[str], or_replace: bool, if_not_exists: bool):
    """CREATE [OR REPLACE] MATERIALIZED VIEW [IF NOT EXISTS] (Materialize's "CREATE
    MATERIALIZED VIEW"): a new object with a new shard, maintained by ``cluster``.
    ``reads`` are the ids of the relations its query reads (planned by the caller); OR
    REPLACE drops the one it replaces (and its indexes), which nothing may depend on.

    Raises (from ``build``): 42704 ``unknown cluster 'c'``; 42P07 for a taken name (a
    no-op with IF NOT EXISTS); 2BP01 when the replaced view has dependents or the new
    query reads it; 40001 when an input was dropped since the query was planned."""
    def build(snap: CatalogSnapshot, ids) -> list:
        c = snap.resolve_cluster(cluster)
        s, ops = _creation_schema(snap, ids, schema)
        if ops or s == snap.scope.temp_schema:
            raise SqlError(FEATURE_NOT_SUPPORTED, "materialized views cannot be temporary")
        existing = snap.relation_by_name(s, name)
        if existing is None and snap.name_taken(s, name) or existing is not None and not or_replace:
            if if_not_exists:
                return []
            raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        if existing is not None:
            if not isinstance(existing, MaterializedView):
                raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
            if existing.id in reads:
                raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                               f'cannot replace materialized view "{name}": the new definition reads it')
            ops += _drop_dependents(snap, [existing], False, "materialized view")
            ops += _drop_relation(snap, existing)
        live = set(snap.tables) | set(snap.materialized_views)
        gone = [r for r in reads if r not in live]
        if gone:
            raise SqlError(SERIALIZATION_FAILURE, f"an input of materialized view \"{name}\" was dropped concurrently")
        mid = ids.allocate("item")
        shard = ids.allocate_shard()
        return ops + [durable.CreateMaterializedView(MaterializedView(mid, s, name, columns, shard, sql, c.id))]

    return build


def _reads(view: View | MaterializedView) -> list[tuple[str | None, str]]:
    """The relation names a view's (or materialized view's) query mentions (CTE names
    too: harmless here)."""
    import pglast
    from pglast.visitors import Visitor

    class Names(Visitor):
        def __init__(self):
            self.names = []

        def visit_RangeVar(self, ancestors, node):
            self.names.append((node.schemaname, node.relname))

    v = Names()
    v(pglast.parse_sql(view.sql))
    return v.names


def direct_references(snap: CatalogSnapshot, view: View | MaterializedView) -> list[str]:
    """The ids of the relations a view's (or materialized view's) query names, as they
    resolve now (``mz_internal.mz_object_dependencies``)."""
    rels = (_lookup(snap, schema, name, snap.relation_by_name) for schema, name in _reads(view))
    return sorted({r.id for r in rels if r is not None and r.id != view.id})


def dependents(snap: CatalogSnapshot, ids: set[str]) -> list[View | MaterializedView]:
    """The views and materialized views that read any of ``ids``, directly or through
    others, dependents after what they depend on."""
    out: list[View | MaterializedView] = []
    found = set(ids)
    changed = True
    readers = sorted([*snap.views.values(), *snap.materialized_views.values()], key=_id_order)
    while changed:
        changed = False
        for v in readers:
            if v.id in found:
                continue
            for schema, name in _reads(v):
                rel = _lookup(snap, schema, name, snap.relation_by_name)
                if rel is not None and rel.id in found:
                    out.append(v)
                    found.add(v.id)
                    changed = True
                    break
    return out


def _id_order(obj) -> tuple[str, int]:
    return obj.id[0], int(obj.id[1:])


def _kind(obj) -> str:
    """What an object is called in messages: table, view, materialized view, ..."""
    if isinstance(obj, MaterializedView):
        return "materialized view"
    if isinstance(obj, Table) and type(obj) is not Table:
        return "source"
    return "view" if isinstance(obj, View) else "table"


def _drop_relation(snap: CatalogSnapshot, rel) -> list:
    """Ops dropping a view or materialized view and the indexes on it."""
    op = durable.DropMaterializedView(rel.id) if isinstance(rel, MaterializedView) else durable.DropView(rel.id)
    return [op] + [durable.DropIndex(i.id) for i in snap.indexes.values() if i.on_id == rel.id]


def _drop_dependents(snap: CatalogSnapshot, objs: list, cascade: bool, kind: str) -> list:
    """Ops dropping the views and materialized views over ``objs`` (with CASCADE), or
    SqlError 2BP01 (Materialize: "cannot drop table "t": still depended upon by view
    "v"")."""
    deps = [v for v in dependents(snap, {o.id for o in objs}) if v.id not in {o.id for o in objs}]
    if not deps:
        return []
    if not cascade:
        reads = {r for v in deps for r in _reads(v)}
        on = next((o for o in objs if (None, o.name) in reads or (USER_SCHEMA, o.name) in reads), objs[0])
        raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                       f'cannot drop {kind} "{on.name}": still depended upon by {_kind(deps[0])} "{deps[0].name}"',
                       hint="Use DROP ... CASCADE to drop the dependent objects too.")
    ops = []
    for v in reversed(deps):
        ops += _drop_relation(snap, v)
    return ops


def drop_views(names: list[tuple[str | None, str]], if_exists: bool, cascade: bool = False,
               materialized: bool = False):
    """DROP VIEW, or with ``materialized`` DROP MATERIALIZED VIEW (Materialize's "DROP
    MATERIALIZED VIEW": its shard goes with it). What reads it needs CASCADE.

    Raises (from ``build``): 42P01 for an unknown name (nothing with IF EXISTS); 42809
    for an object of the other kind; 2BP01 for dependents without CASCADE."""
    cls, kind = (MaterializedView, "materialized view") if materialized else (View, "view")

    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        dropped = []
        for schema, name in names:
            rel = _lookup(snap, schema, name, snap.relation_by_name)
            if rel is None:
                if if_exists:
                    continue
                raise SqlError(UNDEFINED_TABLE, f'{kind} "{name}" does not exist')
            if not isinstance(rel, cls):
                hint = (f"Use DROP {_kind(rel).upper()} to remove a {_kind(rel)}."
                        if not rel.builtin else None)
                raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a {kind}', hint=hint)
            dropped.append(rel)
        ops += _drop_dependents(snap, dropped, cascade, kind)
        for rel in dropped:
            ops += _drop_relation(snap, rel)
        return _unique(ops)

    return build


def drop_tables(names: list[tuple[str | None, str]], if_exists: bool, cascade: bool = False):
    """DROP TABLE: fails with 2BP01 while views read a table, unless CASCADE (which drops
    them, Materialize's and PostgreSQL's rule)."""
    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        dropped = []
        for schema, name in names:
            rel = _lookup(snap, schema, name, snap.relation_by_name)
            if rel is None:
                if if_exists:
                    continue
                raise SqlError(UNDEFINED_TABLE, f'table "{name}" does not exist')
            if rel.builtin:
                raise SqlError(WRONG_OBJECT_TYPE, f'cannot drop system table "{name}"')
            if isinstance(rel, (View, MaterializedView)) or type(rel) is not Table:
                raise SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a table',
                               hint=f"Use DROP {_kind(rel).upper()} to remove a {_kind(rel)}.")
            dropped.append(rel)
        ops += _drop_dependents(snap, dropped, cascade, "table")
        for rel in dropped:
            ops.append(durable.DropTable(rel.id))
            ops += [durable.DropIndex(i.id) for i in snap.indexes.values() if i.on_id == rel.id]
            # its serial/identity sequences go with it (PostgreSQL: OWNED BY)
            ops += [durable.DropSequence(q.id) for q in snap.sequences.values()
                    if q.owned_by and q.owned_by[0] == rel.id]
        return ops

    return build


def update_table(old: Table, new: Table):
    """Replace table ``old``'s definition with ``new`` (same id; a new shard when its rows
    were rewritten: the caller sealed the old one).

    Raises (from ``build``): 42P01 when the table is gone; 40001 when its definition
    changed meanwhile."""
    def build(snap: CatalogSnapshot, ids) -> list:
        cur = snap.tables.get(old.id)
        if cur is None:
            raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{old.name}'")
        if cur != old:
            raise SqlError(SERIALIZATION_FAILURE, f'table "{old.name}" was changed by a concurrent statement')
        return [durable.UpdateTable(new)] if new != old else []

    return build


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


def _replace_definition(v: View | MaterializedView, sql: str) -> list:
    """Ops giving view or materialized view ``v`` the query ``sql`` (same id; a
    materialized view keeps its shard)."""
    if isinstance(v, MaterializedView):
        return [durable.UpdateMaterializedView(replace(v, sql=sql))]
    return [durable.DropView(v.id), durable.CreateView(replace(v, sql=sql))]


def comment_on(kind: str, names: list[str], text: str | None):
    """COMMENT ON TABLE | VIEW | SEQUENCE | INDEX | COLUMN | SCHEMA name IS 'text' | NULL
    (PostgreSQL's "COMMENT"; Materialize's too). ``kind`` is the object type's name
    (``TABLE``, ``COLUMN``, ...); ``names`` its qualified name's parts (a column's last).

    Raises (from ``build``): 42P01 / 42703 / 3F000 for what does not exist; 42809 for
    an object of another kind; 0A000 for other kinds and system schemas."""
    kinds = {"TABLE": (Table,), "VIEW": (View,), "SEQUENCE": (Sequence,), "INDEX": (Index,),
             "MATVIEW": (MaterializedView,)}

    def build(snap: CatalogSnapshot, ids) -> list:
        if kind == "SCHEMA":
            sc = snap.schema_by_name(names[-1])
            if sc is None:
                if names[-1] in SYSTEM_SCHEMAS:
                    raise SqlError(FEATURE_NOT_SUPPORTED, f"cannot comment on system schema '{names[-1]}'")
                raise SqlError(INVALID_SCHEMA_NAME, f"unknown schema '{names[-1]}'")
            return [durable.SetComment(sc.id, 0, text)]
        if kind == "COLUMN":
            if len(names) < 2:
                raise SqlError(SYNTAX_ERROR, "column name must be qualified")
            schema, rel_name, col = (names[-3] if len(names) > 2 else None), names[-2], names[-1]
        elif kind in kinds:
            schema, rel_name, col = (names[-2] if len(names) > 1 else None), names[-1], None
        else:
            raise SqlError(FEATURE_NOT_SUPPORTED, f"COMMENT ON {kind} is not supported")
        obj = find_item(snap, schema, rel_name)
        if obj is None:
            raise SqlError(UNDEFINED_TABLE, f"unknown catalog item '{rel_name}'")
        if getattr(obj, "builtin", False):
            raise SqlError(WRONG_OBJECT_TYPE, f'cannot comment on system object "{rel_name}"')
        if col is None:
            if not isinstance(obj, kinds[kind]):
                raise SqlError(WRONG_OBJECT_TYPE, f'"{rel_name}" is not a {kind.lower()}')
            return [durable.SetComment(obj.id, 0, text)]
        names_ = [c.name for c in getattr(obj, "columns", ())]
        if col not in names_:
            raise SqlError(UNDEFINED_COLUMN, f'column "{col}" of relation "{rel_name}" does not exist')
        return [durable.SetComment(obj.id, names_.index(col) + 1, text)]

    return build
