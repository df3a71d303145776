"""What a relation allows (PostgreSQL 9.26 Table 9.73 and the functions information_schema
and logical replication use): ``row_security_active``, ``pg_relation_is_updatable``,
``pg_column_is_updatable``, ``pg_relation_is_publishable``; what the access method of
indexes allows (``pg_indexam_has_property``, ``pg_indexam_progress_phasename``) and what
an index and its columns allow (``pg_index_has_property``,
``pg_index_column_has_property``).

The answers follow from a relation's kind in the statement's catalog, read at plan time
into a lookup table (``planner.functions.lookup_args``): ``o:<name key>`` (a relation's
qualified name parsed as identifiers, ``privileges._name_key``, or its unqualified name
when the search path finds it first) and ``k#<oid>`` (its kind: ``r`` a user table,
``t`` a temporary one, ``v`` a view, ``m`` a materialized view, ``S`` a sequence, ``s`` a
system table). The interpreter reads it as a dict, Spark as a ``map<string,string>``.

sqlfront's rules (source: what its statements accept):

- only tables take INSERT, UPDATE and DELETE: views, materialized views, sequences and
  system tables are read-only (PostgreSQL's simple views and its catalogs' heaps are
  updatable: there they answer 28 and true);
- no relation has row security (no CREATE POLICY): row_security_active is false for every
  relation, as PostgreSQL answers for one without ``relrowsecurity``;
- a permanent user table is publishable (PostgreSQL's is_publishable_class: a regular
  table, not temporary, not a system catalog), though sqlfront has no publications:
  SUBSCRIBE streams a table's changes instead.
"""

from __future__ import annotations

from catalog.errors import SqlError, UNDEFINED_TABLE
from planner.functions.registry import Function, lookup_args, lookup_map, lookup_table, register, sig

#: PostgreSQL's relation_is_updatable mask of a table: 1 << CMD_UPDATE | 1 << CMD_INSERT |
#: 1 << CMD_DELETE (nodes.h: CMD_UPDATE 2, CMD_INSERT 3, CMD_DELETE 4)
UPDATABLE = 28


def _kinds(args: list, ctx) -> dict[str, str] | None:
    """The lookup table (see the module's doc) of the statement's catalog; None outside a
    session."""
    from catalog.snapshot import TEMP_SCHEMA_ALIASES
    from planner.functions.privileges import _relations

    snap = ctx.catalog()
    if snap is None:
        return None
    kind = {}
    for letter, objects in (("r", snap.tables), ("v", snap.views), ("m", snap.materialized_views),
                            ("S", snap.sequences), ("s", snap.builtins)):
        for o in objects.values():
            temporary = o.schema.startswith("mz_temp") or o.schema in TEMP_SCHEMA_ALIASES
            kind[o.id] = "t" if letter == "r" and temporary else letter
    table = {}
    for o in _relations(snap):
        table.update({f"o:{n}": str(o.oid) for n in o.names})
        table[f"k#{o.oid}"] = kind.get(o.id, "s")
    return table


def _kind_py(table, oid) -> str | None:
    return lookup_table(table, "relation functions").get(f"k#{oid}")


def _kind_spark(S, table, oid):
    return lookup_map(S, table)[S.F.concat(S.F.lit("k#"), oid.cast("string"))]


def _row_security_by_name(a, e):
    from planner.functions.privileges import _name_key

    name, table = a
    if name is None:
        return None
    if f"o:{_name_key(name)}" not in lookup_table(table, "row_security_active"):
        raise SqlError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
    return False


def _row_security_by_name_spark(S, a, e):
    from planner.functions.privileges import _name_key_spark

    F = S.F
    name, table = a
    found = lookup_map(S, table)[F.concat(F.lit("o:"), _name_key_spark(S, name))]
    return F.when(name.isNull(), F.lit(None).cast("boolean")).when(found.isNotNull(), F.lit(False)).otherwise(
        S.fail(UNDEFINED_TABLE, F.concat(F.lit('relation "'), name, F.lit('" does not exist'))))


def _updatable_py(a, e):
    oid, triggers, table = a
    if oid is None or triggers is None:
        return None  # strict
    return UPDATABLE if _kind_py(table, oid) == "r" else 0


def _updatable_spark(S, a, e):
    F = S.F
    oid, triggers, table = a
    return F.when(oid.isNull() | triggers.isNull(), F.lit(None).cast("int")).when(_kind_spark(S, table, oid) == "r", F.lit(UPDATABLE)) \
        .otherwise(F.lit(0))


def _column_updatable_py(a, e):
    oid, attnum, triggers, table = a
    if oid is None or attnum is None or triggers is None:
        return None  # strict
    return _kind_py(table, oid) == "r" and attnum > 0


def _column_updatable_spark(S, a, e):
    F = S.F
    oid, attnum, triggers, table = a
    return F.when(oid.isNull() | attnum.isNull() | triggers.isNull(), F.lit(None).cast("boolean")).otherwise(
        F.coalesce(_kind_spark(S, table, oid) == "r", F.lit(False)) & (attnum > 0))


def _publishable_py(a, e):
    oid, table = a
    if oid is None:
        return None
    kind = _kind_py(table, oid)
    return None if kind is None else kind == "r"


def _publishable_spark(S, a, e):
    F = S.F
    oid, table = a
    return F.when(oid.isNull(), F.lit(None).cast("boolean")).otherwise(_kind_spark(S, table, oid) == "r")


def _fn(name: str, sigs: tuple, py, spark, samples: tuple[str, ...], differs: str = "") -> Function:
    return Function(name, sigs, py, spark, sql_names=(name,), strict=False, volatility="stable", doc="9.26",
                    samples=samples, differs=differs,
                    extra={"plan_args_in": lookup_args(name, lambda args, ctx: _kinds(args, ctx))})


_READ_ONLY = ("views, materialized views, sequences and system tables are read-only here (PostgreSQL: a simple view "
              "and a catalog's heap are updatable)")

register(
    _fn("row_security_active", (sig("text", "internal", ret="bool"),), _row_security_by_name,
        _row_security_by_name_spark,
        ("row_security_active(CASE WHEN k < 3 THEN 'fx_t' WHEN k = 3 THEN 'PG_CATALOG.pg_class' ELSE 'public.fx_t' END)",
         "row_security_active('nosuch' || k)", "row_security_active(s)", "row_security_active('fx_t')")),
    # no relation has row security: false for every OID, one that names nothing too (PostgreSQL)
    Function("row_security_active_oid", (sig("oid", ret="bool"),), lambda a, e: False,
             lambda S, a, e: S.F.lit(False), sql_names=("row_security_active",), volatility="stable", doc="9.26",
             samples=("row_security_active(k::oid)", "row_security_active('fx_t'::regclass::oid)")),
    _fn("pg_relation_is_updatable", (sig("oid", "bool", "internal", ret="int4"),), _updatable_py, _updatable_spark,
        ("pg_relation_is_updatable(CASE WHEN k < 3 THEN 'fx_t'::regclass::oid ELSE k::oid END, b)",
         "pg_relation_is_updatable(nullif(k, 2)::oid, true)", "pg_relation_is_updatable('fx_t'::regclass::oid, true)"),
        _READ_ONLY),
    _fn("pg_column_is_updatable", (sig("oid", "int2", "bool", "internal", ret="bool"),), _column_updatable_py,
        _column_updatable_spark,
        ("pg_column_is_updatable(CASE WHEN k < 4 THEN 'fx_t'::regclass::oid ELSE k::oid END, (k - 2)::int2, b)",
         "pg_column_is_updatable('fx_t'::regclass::oid, i::int2, false)",
         "pg_column_is_updatable('fx_t'::regclass::oid, 2::int2, true)"), _READ_ONLY),
    _fn("pg_relation_is_publishable", (sig("oid", "internal", ret="bool"),), _publishable_py, _publishable_spark,
        ("pg_relation_is_publishable(CASE WHEN k < 3 THEN 'fx_t'::regclass::oid WHEN k = 3 THEN 'pg_class'::regclass::oid "
         "ELSE k::oid END)", "pg_relation_is_publishable('fx_t'::regclass::oid)")),
)


#: the properties of "arrangement", the access method of every index here (pg_am:
#: ``catalog.pg_catalog.ARRANGEMENT_AM_OID``), as pg_indexam_has_property names them
#: (PostgreSQL 9.26, Table 9.80); source: what CREATE INDEX accepts
#: (``sqlfront.sequence.indexes``): several key columns; INCLUDE (every column is kept
#: anyway); no ASC/DESC order, no UNIQUE that is enforced, no exclusion constraints
ARRANGEMENT_PROPERTIES = {"can_order": False, "can_unique": False, "can_multi_col": True, "can_exclude": False,
                          "can_include": True}


def _am_property_py(a, e):
    from catalog.pg_catalog import ARRANGEMENT_AM_OID

    am, prop = a
    return ARRANGEMENT_PROPERTIES.get(prop.lower()) if am == ARRANGEMENT_AM_OID else None


def _am_property_spark(S, a, e):
    from catalog.pg_catalog import ARRANGEMENT_AM_OID
    from planner.functions.registry import static_map

    F = S.F
    value = static_map(S, {k: str(v).lower() for k, v in ARRANGEMENT_PROPERTIES.items()})[F.lower(a[1])]
    return F.when(a[0] == ARRANGEMENT_AM_OID, value.cast("boolean")).otherwise(F.lit(None).cast("boolean"))


register(
    # an access method's property, by name in any case: NULL for a name that names none or
    # an OID that is no access method, as PostgreSQL's
    Function("pg_indexam_has_property", (sig("oid", "text", ret="bool"),), _am_property_py, _am_property_spark,
             sql_names=("pg_indexam_has_property",), volatility="stable", doc="9.26",
             samples=("pg_indexam_has_property(k::oid, 'can_order')", "pg_indexam_has_property(0, 'can_unique')",
                      "pg_indexam_has_property(k::oid, s)")),
    # the name of an index build's phase (pg_stat_progress_create_index): arrangements are
    # built by the replicas with no phases reported, and no other OID is an access method
    Function("pg_indexam_progress_phasename", (sig("oid", "int8", ret="text"),), lambda a, e: None,
             lambda S, a, e: S.F.lit(None).cast("string"), sql_names=("pg_indexam_progress_phasename",),
             volatility="immutable", doc="9.26",
             samples=("pg_indexam_progress_phasename(k::oid, k)", "pg_indexam_progress_phasename(0, 1)")),
)


#: an index's own properties (pg_index_has_property) and its key columns' (a column
#: number from 1 to its key count: pg_index_column_has_property), as an arrangement has
#: them: it is read whole, cached on the replicas, never scanned by key, in order or
#: backwards, nor clustered on (no CLUSTER); its columns have no order, so asc, desc,
#: nulls_first and nulls_last are NULL, as PostgreSQL answers for an unordered access method
INDEX_PROPERTIES = {"clusterable": False, "index_scan": False, "bitmap_scan": False, "backward_scan": False}
COLUMN_PROPERTIES = {"orderable": False, "distance_orderable": False, "returnable": False, "search_array": False,
                     "search_nulls": False}
_UNORDERED = ("asc", "desc", "nulls_first", "nulls_last")


def _index_keys(args: list, ctx) -> dict[str, str] | None:
    """Lookup table of the statement's indexes: ``i#<oid>`` -> their key column count."""
    from catalog.pg_catalog import object_oid

    snap = ctx.catalog()
    return None if snap is None else {f"i#{object_oid(i.id)}": str(len(i.keys)) for i in snap.indexes.values()}


def _index_property_py(a, e):
    oid, prop, table = a
    if oid is None or prop is None or f"i#{oid}" not in lookup_table(table, "pg_index_has_property"):
        return None
    return INDEX_PROPERTIES.get(prop.lower())


def _index_property_spark(S, a, e):
    from planner.functions.registry import static_map

    F = S.F
    oid, prop, table = a
    value = static_map(S, {k: str(v).lower() for k, v in INDEX_PROPERTIES.items()})[F.lower(prop)]
    return F.when(lookup_map(S, table)[F.concat(F.lit("i#"), oid.cast("string"))].isNotNull(),
                  value.cast("boolean")).otherwise(F.lit(None).cast("boolean"))


def _column_property_py(a, e):
    oid, column, prop, table = a
    if oid is None or column is None or prop is None:
        return None
    keys = lookup_table(table, "pg_index_column_has_property").get(f"i#{oid}")
    if keys is None or not 1 <= column <= int(keys):
        return None
    return COLUMN_PROPERTIES.get(prop.lower())


def _column_property_spark(S, a, e):
    from planner.functions.registry import static_map

    F = S.F
    oid, column, prop, table = a
    keys = lookup_map(S, table)[F.concat(F.lit("i#"), oid.cast("string"))].cast("int")
    value = static_map(S, {k: str(v).lower() for k, v in COLUMN_PROPERTIES.items()})[F.lower(prop)]
    return F.when(keys.isNotNull() & (column >= 1) & (column <= keys), value.cast("boolean")).otherwise(
        F.lit(None).cast("boolean"))


register(
    # NULL for an OID that is no index, a column it does not have, or a property name
    # PostgreSQL does not know (or asc/desc/nulls_*: an unordered access method's)
    Function("pg_index_has_property", (sig("oid", "text", "internal", ret="bool"),), _index_property_py,
             _index_property_spark, sql_names=("pg_index_has_property",), strict=False, volatility="stable",
             doc="9.26", extra={"plan_args_in": lookup_args("pg_index_has_property", _index_keys)},
             samples=("pg_index_has_property(k::oid, 'clusterable')", "pg_index_has_property(0, 'index_scan')",
                      "pg_index_has_property(k::oid, s)")),
    Function("pg_index_column_has_property", (sig("oid", "int4", "text", "internal", ret="bool"),),
             _column_property_py, _column_property_spark, sql_names=("pg_index_column_has_property",), strict=False,
             volatility="stable", doc="9.26",
             extra={"plan_args_in": lookup_args("pg_index_column_has_property", _index_keys)},
             samples=("pg_index_column_has_property(k::oid, 1, 'asc')",
                      "pg_index_column_has_property(0, k, 'orderable')",
                      "pg_index_column_has_property(k::oid, k, s)")),
)
