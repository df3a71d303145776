"""What the DDL families (``tables``, ``views``, ``indexes``, ``sequences``, ``schemas``,
``clusters``, ``alter``, ...) share about catalog objects: finding one by name along the
search path, the schema a new one goes into, the views that read one, and the ops
dropping those. Pure functions of a catalog snapshot: no I/O, no waiting; no statement
lives here (each has one home, its family's module).
"""

from __future__ import annotations

from dataclasses import replace

from catalog import durable
from catalog.errors import SqlError, DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_COLUMN, SYNTAX_ERROR
from catalog.snapshot import (
    USER_SCHEMA, CatalogSnapshot, MaterializedView, Schema, Table, View,
)


def _creation_schema(snap: CatalogSnapshot, ids, schema: str | None, temp: bool = False) -> tuple[str, list]:
    """The schema a new object goes into (``CatalogSnapshot.creation_schema``) and the
    ops creating it first when it is the session's temporary schema, not made yet."""
    s = snap.creation_schema(schema, temp)
    if s == snap.scope.temp_schema and snap.schema_by_name(s) is None:
        return s, [durable.CreateSchema(Schema(ids.allocate("item"), s, temp=True))]
    return s, []


def output_names(names: list[str], given: list[str], too_many: str) -> list[str]:
    """A new relation's column names: its query's output ``names`` with the column list
    ``given`` over the first ones (CREATE VIEW v (a, b), CREATE MATERIALIZED VIEW,
    CREATE TABLE t (a) AS).

    Raises:
        SqlError 42601 ``too_many`` with more names given than columns; 42701 for a
        name twice (PostgreSQL's checkViewColumns / intorel_startup)."""
    if given:
        if len(given) > len(names):
            raise SqlError(SYNTAX_ERROR, too_many)
        names = list(given) + list(names[len(given):])
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise SqlError(DUPLICATE_COLUMN, f'column "{dup}" specified more than once')
    return list(names)


def _lookup(snap: CatalogSnapshot, schema: str | None, name: str, find) -> object | None:
    """``find(schema, name)`` in ``schema``, or along the search path when unqualified."""
    for sc in ((snap.schema_name(schema),) if schema else snap.search_path()):
        o = find(sc, name)
        if o is not None:
            return o
    return None


def lookup_each(snap: CatalogSnapshot, names: list[tuple[str | None, str]], if_exists: bool,
                find, missing) -> list[tuple[str, object]]:
    """The objects a DROP names, in order: ``(name, object)`` for each ``(schema, name)``
    found by ``find(schema, name)`` (``_lookup``: along the search path when unqualified).
    A name that finds nothing is skipped with IF EXISTS (``if_exists``; the statement
    sends PostgreSQL's NOTICE for it: ``ddl._notice_skipped``) and otherwise raises
    ``missing(schema, name)``, the statement's own SqlError."""
    found = []
    for schema, name in names:
        o = _lookup(snap, schema, name, find)
        if o is None:
            if if_exists:
                continue
            raise missing(schema, name)
        found.append((name, o))
    return found


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


def _replace_definition(v: View | MaterializedView, sql: str) -> list:
    """Ops giving view or materialized view ``v`` the query ``sql`` (same id; a
    materialized view keeps its shard)."""
    if isinstance(v, MaterializedView):
        return [durable.UpdateMaterializedView(replace(v, sql=sql))]
    return [durable.DropView(v.id), durable.CreateView(replace(v, sql=sql))]

