"""Catalog object descriptions (PostgreSQL 9.26 Table 9.79): ``pg_describe_object(classid,
objid, objsubid)``, the text pg_depend's readers show for an object (``table t``, ``column
a of table t``, ``type integer``, ``function lower(text)``, ``schema public``);
``pg_identify_object`` (its type, schema, name and identity, a record) and
``pg_identify_object_as_address`` (its type, name parts and argument types); and
``pg_get_function_arg_default``, from the registry's argument defaults.

The descriptions come from the statement's catalog, read at plan time into a lookup table
(``planner.functions.lookup_args``): ``<classid>/<objid>/<objsubid>`` -> the description
(``i:`` and ``a:`` before it: the record texts of pg_identify_object and
pg_identify_object_as_address; ``m:<classid>`` and ``m:1259/<objid>``: the type word of an
object that names nothing, ``relation`` or ``view column``, say), and
``k:<classid>`` -> the class's PostgreSQL OID for each class PostgreSQL knows (also under
the OID ``'pg_class'::regclass`` gives here, where the catalogs are sqlfront's builtin
tables: pg_depend's classid is PostgreSQL's). The objects are those sqlfront has:
relations (and their columns), types, functions, schemas, the database, tablespaces and
roles. An object of a known class that names nothing (a trigger: sqlfront has none) is
NULL; a class PostgreSQL does not know is its XX000 ``unsupported object class``.

Names follow PostgreSQL's getObjectDescription: a relation or function is qualified with
its schema only when the search path does not find it first, quoted as quote_ident
quotes (a column's, a schema's or a role's name is not quoted); types and argument types
are format_type's names.
"""

from __future__ import annotations

import functools

from catalog.errors import SqlError, INTERNAL_ERROR
from planner.functions.registry import Function, lookup_args, lookup_map, lookup_table, register, sig, static_map
from planner.functions.logic import record_text
from planner.functions.privileges import _typname
from planner.functions.string import quote_ident
from planner.functions.system import format_type

#: PostgreSQL's catalogs whose rows are objects pg_describe_object describes
#: (catalog/objectaddress.c's ObjectProperty, by pg_class OID), by name
CLASSES = {"pg_class": 1259, "pg_type": 1247, "pg_proc": 1255, "pg_namespace": 2615, "pg_database": 1262,
           "pg_tablespace": 1213, "pg_authid": 1260}
#: the other classes PostgreSQL knows, of which sqlfront has no objects: NULL, not an error
#: (collations, constraints, rules, triggers, access methods, operators and their
#: classes and families, casts, languages, defaults, extensions, foreign-data wrappers
#: and servers, user mappings, event triggers, policies, publications, subscriptions,
#: text search objects, conversions, default ACLs, statistics objects, transforms,
#: large objects, parameter ACLs, role memberships)
OTHER_CLASSES = (3456, 2606, 2618, 2620, 2601, 2617, 2616, 2753, 2602, 2603, 2605, 2612, 2604, 3079, 2328, 1417,
                 1418, 3466, 3256, 6104, 6106, 6237, 6100, 3602, 3600, 3764, 3601, 2607, 826, 3381, 3576, 2613, 6243,
                 1261)


def _relation_word(snap, object_id: str) -> str:
    for objects, word in ((snap.tables, "table"), (snap.views, "view"), (snap.materialized_views, "materialized view"),
                          (snap.sequences, "sequence"), (snap.indexes, "index")):
        if object_id in objects:
            return word
    return "table"  # a system table


def _descriptions(args: list, ctx) -> dict[str, str] | None:
    """The lookup table (see the module's doc); None outside a session. Constant
    arguments (plan ``Literal``s) limit it to the object they name."""
    from catalog.pg_catalog import DATABASE_OID, TABLESPACE_OIDS, FUNCTION_PROC_BY_OID, object_oid
    from catalog.snapshot import DATABASE
    from planner.functions.privileges import _relations, _roles, _schemas
    from planner.scalar import Literal
    from catalog.types import _BY_OID

    snap = ctx.catalog()
    if snap is None:
        return None
    wanted = None
    table = {f"k:{c}": str(c) for c in (*CLASSES.values(), *OTHER_CLASSES)}
    for o in snap.builtins.values():
        if o.schema == "pg_catalog" and o.name in CLASSES:
            table[f"k:{object_oid(o.id)}"] = str(CLASSES[o.name])
    if len(args) == 3 and all(isinstance(a, Literal) and a.value is not None for a in args):
        c, o, s = (int(a.value) for a in args)
        c = int(table.get(f"k:{c}", c))
        wanted = f"{c}/{o}/{s if c == CLASSES['pg_class'] else 0}"

    def put(key: str, text: str, kind: str = "", schema: str | None = None, name: str | None = None,
            identity: str = "", names: tuple[str, ...] = (), args: tuple[str, ...] = ()):
        if wanted is None or key == wanted:
            table[key] = text
            table["i:" + key] = record_text((kind, schema, name, identity))
            table["a:" + key] = record_text((kind, _array(names), _array(args)))

    pg_class = CLASSES["pg_class"]
    for o in _relations(snap):
        visible = o.names[-1] == _own_name(o) if o.names else False
        name = quote_ident(_own_name(o)) if visible else ".".join(
            quote_ident(p) for p in o.names[0].split("\x01"))
        word = _relation_word(snap, o.id)
        schema, own = o.names[0].split("\x01")
        qualified = f"{quote_ident(schema)}.{quote_ident(own)}"
        put(f"{pg_class}/{o.oid}/0", f"{word} {name}", word, schema, quote_ident(own), qualified, (schema, own))
        table[f"m:{pg_class}/{o.oid}"] = f"{word} column"
        for i, col in enumerate(o.columns):
            put(f"{pg_class}/{o.oid}/{i + 1}", f"column {col} of {word} {name}", f"{word} column", schema,
                quote_ident(own), f"{qualified}.{quote_ident(col)}", (schema, own, col))
    for oid in _BY_OID:
        if oid not in (114, 199):  # json: an alias of jsonb here, its own type in PostgreSQL
            shown = format_type(oid, None)
            put(f"{CLASSES['pg_type']}/{oid}/0", f"type {shown}", "type", "pg_catalog", quote_ident(_typname(oid)),
                _qualified_type(oid), (_qualified_type(oid),))
    for oid, row in FUNCTION_PROC_BY_OID.items():
        if None not in (_typname(t) for t in row[8]):
            args = tuple(_qualified_type(t) for t in row[8])
            put(f"{CLASSES['pg_proc']}/{oid}/0",
                f"function {quote_ident(row[1])}({','.join(format_type(t, None) for t in row[8])})", "function",
                "pg_catalog", None, f"pg_catalog.{quote_ident(row[1])}({','.join(args)})", ("pg_catalog", row[1]), args)
    for s in _schemas(snap):
        put(f"{CLASSES['pg_namespace']}/{s.oid}/0", f"schema {s.names[0]}", *_named("schema", s.names[0]))
    put(f"{CLASSES['pg_database']}/{DATABASE_OID}/0", f"database {DATABASE}", *_named("database", DATABASE))
    for name, oid in TABLESPACE_OIDS.items():
        put(f"{CLASSES['pg_tablespace']}/{oid}/0", f"tablespace {name}", *_named("tablespace", name))
    for r in _roles(snap):
        put(f"{CLASSES['pg_authid']}/{r.oid}/0", f"role {r.names[0]}", *_named("role", r.names[0]))
    table |= {f"m:{c}": word for c, word in MISSING.items()}
    return table


#: the type word pg_identify_object gives an object of the class that names nothing
#: (objectaddress.c's getObjectTypeDescription)
MISSING = {1259: "relation", 1247: "type", 1255: "routine", 2615: "schema", 1262: "database", 1213: "tablespace",
           1260: "role", 3456: "collation", 2618: "rule", 2620: "trigger", 2601: "access method", 2617: "operator",
           2616: "operator class", 2753: "operator family", 2605: "cast", 2612: "language", 3079: "extension",
           2328: "foreign-data wrapper", 1417: "server", 1418: "user mapping", 3466: "event trigger", 3256: "policy",
           6104: "publication", 6100: "subscription", 3602: "text search configuration",
           3600: "text search dictionary", 3764: "text search template", 3601: "text search parser",
           2607: "conversion", 3381: "statistics object", 3576: "transform", 2613: "large object"}
#: types format_type names in SQL's words (format_type.c), never schema-qualified
_SQL_NAMED = {"bool", "bpchar", "float4", "float8", "int2", "int4", "int8", "numeric", "interval", "time", "timetz",
              "timestamp", "timestamptz", "varchar"}


def _named(kind: str, name: str) -> tuple:
    """put()'s fields of an object known by its name alone (a schema, a role)."""
    return kind, None, quote_ident(name), quote_ident(name), (name,)


def _qualified_type(oid: int) -> str:
    """format_type_be_qualified: the type's name, schema-qualified unless SQL names it."""
    base = (_typname(oid) or "").lstrip("_")
    shown = format_type(oid, None)
    return shown if base in _SQL_NAMED else f"pg_catalog.{shown}"


def _array(items: tuple[str, ...]) -> str:
    """array_out's text of a text[] (catalog.textio's)."""
    from catalog.textio import format_text
    from catalog.types import TEXT, array_of

    return format_text(list(items), array_of(TEXT))


def _own_name(o) -> str:
    """A relation's own name: the last part of its qualified name key."""
    return o.names[0].split("\x01")[-1]


def _unsupported(classid) -> SqlError:
    return SqlError(INTERNAL_ERROR, f"unsupported object class: {classid}")


def _python(prefix: str, fields: int):
    """The interpreter's pg_describe_object (``prefix`` ""), pg_identify_object ("i:")
    or pg_identify_object_as_address ("a:"), a record of ``fields`` fields."""

    def impl(a, e):
        c, o, s, table = a
        if c is None or o is None or s is None:
            return None
        t = lookup_table(table, "pg_describe_object")
        if f"k:{c}" not in t:
            raise _unsupported(c)
        c = int(t[f"k:{c}"])
        key = f"{c}/{o}/{s if c == CLASSES['pg_class'] else 0}"
        if key in t or not prefix:
            return t.get(prefix + key)
        word = (t.get(f"m:{c}/{o}") if c == CLASSES["pg_class"] and s else None) or t.get(f"m:{c}")
        return record_text((word,) + (None,) * (fields - 1))
    return impl


def _spark(prefix: str, fields: int):
    """``_python``'s answers as a Spark column."""

    def lower(S, a, e):
        F = S.F
        c, o, s, table = a
        t = lookup_map(S, table)
        cls = t[F.concat(F.lit("k:"), c.cast("string"))]
        pg_class = cls == str(CLASSES["pg_class"])
        key = F.concat_ws("/", cls, o.cast("string"), F.when(pg_class, s).otherwise(F.lit(0)).cast("string"))
        out = t[F.concat(F.lit(prefix), key)]
        if prefix:
            word = F.coalesce(F.when(pg_class & (s != 0), t[F.concat(F.lit("m:"), cls, F.lit("/"), o.cast("string"))]),
                              t[F.concat(F.lit("m:"), cls)], F.lit(""))
            shown = F.when(F.instr(word, " ") > 0, F.concat(F.lit('"'), word, F.lit('"'))).otherwise(word)
            out = F.coalesce(out, F.concat(F.lit("("), shown, F.lit("," * (fields - 1) + ")")))
        return (F.when(c.isNull() | o.isNull() | s.isNull(), F.lit(None).cast("string"))
                .when(cls.isNull(),
                      S.fail(INTERNAL_ERROR, F.concat(F.lit("unsupported object class: "), c.cast("string"))))
                .otherwise(out))
    return lower


def _fn(name: str, prefix: str, fields: int, ret: str, samples: tuple[str, ...]) -> Function:
    return Function(name, (sig("oid", "oid", "int4", "internal", ret=ret),), _python(prefix, fields),
                    _spark(prefix, fields), sql_names=(name,), strict=False, volatility="stable", doc="9.26",
                    extra={"plan_args_in": lookup_args(name, _descriptions)}, samples=samples)


#: objects of each class sqlfront has, over the differential table's rows
_OBJECTS = ("1259, 'fx_t'::regclass::oid, k", ("1247, (CASE k WHEN 1 THEN 23 WHEN 2 THEN 1007 WHEN 3 THEN 1043 WHEN 4 "
                                               "THEN 1184 ELSE 25 END)::oid, 0"),
            "2615, CASE WHEN k < 3 THEN 'public'::regnamespace::oid ELSE 11::oid END, k - 1",
            "1255, (SELECT min(oid) FROM pg_proc WHERE proname = CASE WHEN k < 3 THEN 'lower' ELSE 'upper' END), 0",
            "1213, (1662 + k)::oid, 0", "2620, k::oid, 0", "1259, k::oid, 0", "1259, 'fx_t'::regclass::oid, k + 8",
            "1259, 'pg_class'::regclass::oid, 1")

register(
    _fn("pg_describe_object", "", 1, "text",
        ("pg_describe_object('pg_class'::regclass::oid, 'fx_t'::regclass::oid, 0)",
         *(f"pg_describe_object({x})" for x in _OBJECTS), "pg_describe_object(k::oid, 1::oid, 0)")),
    _fn("pg_identify_object", "i:", 4, "record",
        ("pg_identify_object('pg_class'::regclass::oid, 'fx_t'::regclass::oid, 0)",
         *(f"pg_identify_object({x})" for x in _OBJECTS))),
    _fn("pg_identify_object_as_address", "a:", 3, "record",
        ("pg_identify_object_as_address(1259, 'fx_t'::regclass::oid, 0)",
         *(f"pg_identify_object_as_address({x})" for x in _OBJECTS))),
)


def _default_text(v) -> str:
    """A default value as pg_get_expr shows a constant: ``0``, ``0.0``, ``true``."""
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


@functools.lru_cache(maxsize=1)
def _arg_defaults() -> dict[str, str]:
    """``<function OID>/<argument number>`` -> the argument's default (the registry's
    ``extra["defaults"]``, for its last arguments), for every pg_proc row."""
    from planner.functions.registry import proc_entries

    out = {}
    for oid, _, f, s in proc_entries():
        defaults = f.extra.get("defaults", ())
        n = len(getattr(s, "args", ()))
        for i, v in enumerate(defaults):
            out[f"{oid}/{n - len(defaults) + i + 1}"] = _default_text(v)
    return out


def _arg_default_spark(S, a, e):
    F = S.F
    return static_map(S, _arg_defaults())[F.concat_ws("/", a[0].cast("string"), a[1].cast("string"))]


register(
    # the default of argument n of a function (1-based; PostgreSQL 9.26), NULL for one
    # without, an argument past the last, or an OID that names no function
    Function("pg_get_function_arg_default", (sig("oid", "int4", ret="text"),),
             lambda a, e: _arg_defaults().get(f"{a[0]}/{a[1]}"), _arg_default_spark,
             sql_names=("pg_get_function_arg_default",), volatility="stable", doc="9.26",
             samples=("pg_get_function_arg_default((SELECT min(oid) FROM pg_proc WHERE proname = 'make_interval'), k + 2)",
                      "pg_get_function_arg_default((SELECT min(oid) FROM pg_proc WHERE proname = 'parse_ident'), k)",
                      "pg_get_function_arg_default((SELECT min(oid) FROM pg_proc WHERE proname = 'lower'), 1)",
                      "pg_get_function_arg_default(k::oid, 1)")),
)
