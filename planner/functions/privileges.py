"""Access privilege inquiry functions (PostgreSQL 9.27 Table 9.70: has_table_privilege,
has_any_column_privilege, has_column_privilege, has_sequence_privilege,
has_schema_privilege, has_database_privilege, has_function_privilege,
has_type_privilege, has_language_privilege, has_tablespace_privilege,
has_foreign_data_wrapper_privilege, has_server_privilege, has_largeobject_privilege,
has_parameter_privilege, pg_has_role; Materialize's has_cluster_privilege) and the current
roles (current_user, session_user).

Answers come from ``catalog.rbac`` (the rules the statements' checks use) against the
running statement's catalog and roles, read once at plan time into a lookup table
(``_lookup``): a flat ``{key: value}`` map that the planner passes as a last, hidden
argument of type ``internal`` (``plan_args``). The interpreter reads it as a dict and
Spark as a ``map<string,string>`` (``from_json`` of the same JSON text), through the
same keys, so the two paths answer alike over table data:

- ``cur``: the current role's id;
- ``r:<name>`` / ``r#<oid>``: a role's id (``public`` is PUBLIC, PostgreSQL's rule);
- ``o:<name key>`` / ``o#<oid>``: an object's id; a relation's name key is its qualified
  name parsed as identifiers (``_name_key``), a type's its name as ``regtype`` reads it
  (``_type_key``: no typmod, ``[]`` for an array), a function's its signature as
  ``regprocedure`` reads it (``_function_key``: ``lower(text)``), other objects' the name
  as is;
- ``a:<type name>``: a type name's pg_type name (``int4`` for ``integer``), for
  ``_function_key``'s argument types;
- ``k:<object id>``: the object's privilege class (objects whose roles hold the same
  privileges share one, so the map stays small);
- ``h:<role id>/<class>``: the privilege letters the role holds on the class's objects;
- ``c:<object id>/<column name>`` / ``n:<object id>/<attnum>``: a relation's columns.

Privilege names may be a comma-separated list: true if any is held (PostgreSQL's rule);
``WITH GRANT OPTION`` is never held (Materialize has no grant option). A name that names
nothing is an error; an OID that names nothing gives NULL (PostgreSQL's acl.c).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from catalog import rbac
from catalog.errors import (
    SqlError, INVALID_CATALOG_NAME, INVALID_NAME, INVALID_PARAMETER_VALUE, INVALID_SCHEMA_NAME, INVALID_TEXT_REPRESENTATION,
    UNDEFINED_COLUMN, UNDEFINED_FUNCTION, UNDEFINED_OBJECT, UNDEFINED_TABLE,
)
from catalog.snapshot import CatalogSnapshot, DATABASE
from planner.functions.registry import Function, lookup_args, lookup_map, lookup_table, register, sig, static_map

#: a qualified name (PostgreSQL's SplitIdentifierString on '.'): parts, each a quoted
#: identifier ("" inside is a quote) or an unquoted one (folded to lower case), with
#: blanks around them; the same pattern for Python's ``re`` and Spark's Java regex
_PART = r'"((?:[^"]|"")+)"|([^".\s]+)'
_QUALIFIED = rf'\s*(?:{_PART})\s*(?:\.\s*(?:{_PART})\s*)*'
_UPPER, _LOWER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
#: the held letters of a superuser: every privilege, WITH GRANT OPTION too (PostgreSQL)
_ALL = "*"
#: joins a name key's parts (a quoted part may hold '.')
_SEP = "\x01"


def _name_key(text: str) -> str:
    """The parts of a qualified name, joined by ``_SEP``: quoted parts as written,
    unquoted ones with ASCII letters folded to lower case (PostgreSQL 4.1.1).

    Raises:
        SqlError 42602 ``invalid name syntax``."""
    if not re.fullmatch(_QUALIFIED, text):
        raise SqlError(INVALID_NAME, "invalid name syntax")
    return _SEP.join(m[1].replace('""', '"') if m[1] else m[2].translate(str.maketrans(_UPPER, _LOWER))
                     for m in re.finditer(_PART, text))


def _name_key_spark(S, c):
    """``_name_key`` as a Spark column: NULL for invalid syntax."""
    F = S.F
    quoted = F.regexp_extract_all(c, F.lit(_PART), 1)
    bare = F.regexp_extract_all(c, F.lit(_PART), 2)
    parts = F.zip_with(quoted, bare, lambda q, b: F.when(b != "", F.translate(b, _UPPER, _LOWER))
                       .otherwise(F.replace(q, F.lit('""'), F.lit('"'))))
    return F.when(c.rlike(f"^(?:{_QUALIFIED})$"), F.array_join(parts, _SEP))


#: the parts of a type name regtype's input ignores or folds (PostgreSQL's
#: parseTypeString): a pg_catalog qualification, type modifiers, array bounds
_PG_CATALOG = r"^pg_catalog\s*\.\s*"
_TYPMOD = r"\s*\([^()]*\)"
_BOUNDS = r"(\s*\[\s*\d*\s*\])+\s*$"


def _type_key(text: str) -> str:
    """A type name as ``regtype`` reads it: case-folded, quotes removed, without
    ``pg_catalog.`` or type modifiers, blanks collapsed, ``[]`` for an array
    (``'Character Varying(3)[]'`` -> ``character varying[]``)."""
    s = re.sub(_PG_CATALOG, "", text.strip().replace('"', "").lower())
    array = re.search(_BOUNDS, s) is not None
    s = re.sub(r"\s+", " ", re.sub(_TYPMOD, "", re.sub(_BOUNDS, "", s))).strip()
    return s + "[]" if array else s


def _type_key_spark(S, c):
    """``_type_key`` as a Spark column."""
    F = S.F
    s = F.regexp_replace(F.lower(F.replace(F.trim(c), F.lit('"'), F.lit(""))), _PG_CATALOG, "")
    bare = F.trim(F.regexp_replace(F.regexp_replace(F.regexp_replace(s, _BOUNDS, ""), _TYPMOD, ""), r"\s+", " "))
    return F.when(s.rlike(_BOUNDS), F.concat(bare, F.lit("[]"))).otherwise(bare)


@functools.lru_cache(maxsize=1)
def _type_names() -> dict[str, str]:
    """Every type name a user may write (catalog.types' aliases, pg_type's names, the
    pseudo-types, ``_int4`` array names) -> its pg_type name; ``[]`` forms too."""
    from catalog.pg_catalog import PSEUDO_TYPE_OIDS
    from catalog.types import _ALIASES, ARRAY_OIDS

    out = {alias: name for alias, name in _ALIASES.items()} | {n: n for n in PSEUDO_TYPE_OIDS}
    out |= {f"{alias}[]": "_" + name for alias, name in _ALIASES.items() if name in ARRAY_OIDS}
    return out | {"_" + name: "_" + name for name in ARRAY_OIDS}


def _typname(oid: int) -> str | None:
    from catalog.pg_catalog import PSEUDO_TYPE_OIDS
    from catalog.types import _BY_OID

    return _BY_OID.get(oid) or next((n for n, o in PSEUDO_TYPE_OIDS.items() if o == oid), None)


def _function_key(text: str) -> str:
    """A function's signature as ``regprocedure`` reads it, its argument types by their
    pg_type names: ``'pg_catalog.ABS( integer )'`` -> ``abs(int4)``.

    Raises:
        SqlError 22P02 without its parentheses; 42704 for an argument type that names
        none (PostgreSQL's errors)."""
    s = text.strip()
    if "(" not in s:
        raise SqlError(INVALID_TEXT_REPRESENTATION, "expected a left parenthesis")
    if not s.endswith(")"):
        raise SqlError(INVALID_TEXT_REPRESENTATION, "expected a right parenthesis")
    name, args = s[:-1].split("(", 1)
    name = re.sub(_PG_CATALOG, "", name.strip().replace('"', "").lower()).strip()
    names = _type_names()
    types = []
    for arg in re.sub(_TYPMOD, "", args).split(",") if args.strip() else ():
        key = _type_key(arg)
        if key not in names:
            raise SqlError(UNDEFINED_OBJECT, f'type "{key}" does not exist')
        types.append(names[key])
    return f"{name}({','.join(types)})"


def _function_key_spark(S, c):
    """``_function_key`` as a Spark column."""
    F = S.F
    names = static_map(S, _type_names())
    s = F.trim(c)
    name = F.trim(F.regexp_replace(F.lower(F.replace(F.substring_index(s, "(", 1), F.lit('"'), F.lit(""))),
                                   _PG_CATALOG, ""))
    inner = F.regexp_replace(F.regexp_extract(s, r"\((.*)\)$", 1), _TYPMOD, "")
    keys = F.when(F.trim(inner) == "", F.array().cast("array<string>")).otherwise(
        F.transform(F.split(inner, ","), lambda a: _type_key_spark(S, a)))
    unknown = F.filter(keys, lambda k: names[k].isNull())
    return (F.when(F.instr(s, "(") == 0, S.fail(INVALID_TEXT_REPRESENTATION, "expected a left parenthesis"))
            .when(~s.endswith(")"), S.fail(INVALID_TEXT_REPRESENTATION, "expected a right parenthesis"))
            .when(F.size(unknown) > 0, S.fail(UNDEFINED_OBJECT, F.concat(F.lit('type "'), F.element_at(unknown, 1),
                                                                       F.lit('" does not exist'))))
            .otherwise(F.concat(name, F.lit("("), F.array_join(F.transform(keys, lambda k: names[k]), ","),
                                F.lit(")"))))


#: Materialize's list types (``int list``, ``text list list``): every one is the one
#: pg_type ``list`` (catalog.types), when the element type names a type
_LIST_SUFFIX = r"( list)+$"


def _type_object_key(text: str) -> str:
    """``_type_key`` resolved to its pg_type name (``integer[]`` -> ``_int4``, ``int
    list`` -> ``list``); the key itself for a name that names no type."""
    key = _type_key(text)
    names = _type_names()
    element = re.sub(_LIST_SUFFIX, "", key)
    if element != key and element in names:
        return "list"
    return names.get(key, key)


def _type_object_key_spark(S, c):
    F = S.F
    key = _type_key_spark(S, c)
    names = static_map(S, _type_names())
    element = F.regexp_replace(key, _LIST_SUFFIX, "")
    return F.when((element != key) & names[element].isNotNull(), F.lit("list")).otherwise(F.coalesce(names[key], key))


#: how a kind's names are read (``_Kind.parsed``): (interpreter, Spark)
_KEYS = {"name": (_name_key, _name_key_spark), "type": (_type_object_key, _type_object_key_spark),
         "function": (_function_key, _function_key_spark)}


@dataclass(frozen=True)
class _Object:
    """One object a privilege function may name: its lookup ``keys`` (name keys, OID),
    ``ref`` (None: usable by every role, no ACL), ``columns`` (a relation's names)."""

    id: str
    names: tuple[str, ...]
    oid: int | None
    ref: rbac.ObjectRef | None
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Kind:
    """An object class of the privilege functions: its objects in a snapshot, how its
    names are read (``parsed``: a key of ``_KEYS``; "" as is), its privilege names -> letters ("" for
    one every role holds), the error of a name that names none, and who holds what
    (``held``: role id -> letters of ``letters``; None for ``rbac.has_privilege``)."""

    objects: Callable[[CatalogSnapshot], Iterable[_Object]]
    parsed: str
    privileges: dict[str, str]
    missing: tuple[str, str]
    held: Callable | None = None
    #: a superuser's answer for an OID that names nothing is true, not NULL (PostgreSQL's
    #: object_aclmask checks superusers first; relations are looked up first)
    bypass: bool = False
    #: the answer for such an OID otherwise (pg_has_role looks no role up: false)
    absent: bool | None = None
    #: every name names an object of the class, and all of them hold the same ACL
    #: (configuration parameters: their names are not checked, PostgreSQL's rule)
    any_name: bool = False

    @property
    def letters(self) -> str:
        return "".join(sorted({ch for ch in self.privileges.values()}))


def _relations(snap: CatalogSnapshot) -> list[_Object]:
    """Tables, views, materialized views, sequences and system tables: their qualified
    names, and unqualified the first the search path finds (PostgreSQL 5.10.3)."""
    from catalog.pg_catalog import object_oid
    rels = [o for m in (snap.tables, snap.views, snap.materialized_views, snap.builtins, snap.sequences)
            for o in m.values() if snap.visible_schema(o.schema)]
    first: dict[str, str] = {}
    for schema in snap.search_path():
        for o in rels:
            if o.schema == schema:
                first.setdefault(o.name, o.id)
    return [_Object(o.id, (_SEP.join((o.schema, o.name)), _SEP.join((DATABASE, o.schema, o.name)))
                    + ((o.name,) if first.get(o.name) == o.id else ()),
                    object_oid(o.id), rbac.relation_ref(o), tuple(c.name for c in getattr(o, "columns", ())))
            for o in rels]


def _schemas(snap: CatalogSnapshot) -> list[_Object]:
    from catalog.pg_catalog import NAMESPACE_OIDS, object_oid
    out = {name: oid for name, oid in NAMESPACE_OIDS.items()}
    out |= {s.name: object_oid(s.id) for s in snap.schemas.values() if snap.visible_schema(s.name)}
    return [_Object(f"schema:{n}", (n,), oid, rbac.schema_ref(snap, n)) for n, oid in out.items()]


def _databases(snap: CatalogSnapshot) -> list[_Object]:
    from catalog.pg_catalog import DATABASE_OID

    return [_Object("database", (DATABASE,), DATABASE_OID, rbac.DATABASE_OBJ)]


def _clusters(snap: CatalogSnapshot) -> list[_Object]:
    return [_Object(c.id, (c.name,), None, rbac.cluster_ref(c)) for c in snap.clusters.values()]


def _roles(snap: CatalogSnapshot) -> list[_Object]:
    return [_Object(r.id, (r.name,), rbac.role_oid(r.id), None) for r in rbac.all_roles(snap)]


def _functions(snap: CatalogSnapshot) -> list[_Object]:
    from catalog.pg_catalog import FUNCTION_PROC_BY_OID, PROC_NAMES

    names = {}
    for oid, row in FUNCTION_PROC_BY_OID.items():
        types = [_typname(t) for t in row[8]]
        if None not in types:
            names[oid] = (f"{row[1]}({','.join(types)})",)
    return [_Object(f"proc:{oid}", names.get(oid, ()), oid, None) for oid in sorted({*FUNCTION_PROC_BY_OID, *PROC_NAMES})]


def _types(snap: CatalogSnapshot) -> list[_Object]:
    from catalog.pg_catalog import PSEUDO_TYPE_OIDS
    from catalog.types import _BY_OID

    names: dict[int, list[str]] = {}
    for typname in _type_names().values():
        oid = PSEUDO_TYPE_OIDS.get(typname) or next((o for o, n in _BY_OID.items() if n == typname), None)
        if oid is not None:
            names.setdefault(oid, []).append(typname)
    for typname in ("list", "map"):  # Materialize's: every list type is the one pg_type list, as every map
        names.setdefault(next(o for o, n in _BY_OID.items() if n == typname), []).append(typname)
    return [_Object(f"type:{oid}", tuple(names.get(oid, ())), oid, None)
            for oid in sorted({*_BY_OID, *PSEUDO_TYPE_OIDS.values()})]


#: PostgreSQL's built-in languages that sqlfront's built-in functions are (no plpgsql: no
#: DO or CREATE FUNCTION here); USAGE on them is PUBLIC's (acldefault of a language)
LANGUAGE_OIDS = {"internal": 12, "c": 13, "sql": 14}


def _languages(snap: CatalogSnapshot) -> list[_Object]:
    return [_Object(f"language:{n}", (n,), oid, None) for n, oid in LANGUAGE_OIDS.items()]


def _tablespaces(snap: CatalogSnapshot) -> list[_Object]:
    from catalog.pg_catalog import TABLESPACE_OIDS

    return [_Object(f"tablespace:{n}", (n,), oid, None) for n, oid in TABLESPACE_OIDS.items()]


def _none(snap: CatalogSnapshot) -> list[_Object]:
    """Object classes sqlfront has none of (foreign-data wrappers, foreign servers, large
    objects): a name is an error, an OID NULL (a superuser's: true, PostgreSQL's order)."""
    return []


def _role_member(snap: CatalogSnapshot, role: str | None, obj: _Object) -> str:
    """pg_has_role's letter: ``m`` when ``role`` is a member of ``obj`` (through other
    roles)."""
    return "m" if obj.id in rbac.memberships(snap, role) else ""


#: TRIGGER: no triggers, only a superuser holds it (as every privilege)
_TABLE = {"SELECT": "r", "INSERT": "a", "UPDATE": "w", "DELETE": "d", "TRUNCATE": "d", "REFERENCES": "r",
          "TRIGGER": "!"}
_RELATION_MISSING = (UNDEFINED_TABLE, 'relation "{}" does not exist')
_KINDS = {
    "table": _Kind(_relations, "name", _TABLE, _RELATION_MISSING),
    # has_column_privilege and has_any_column_privilege: the privileges columns have
    "column": _Kind(_relations, "name", {p: _TABLE[p] for p in ("SELECT", "INSERT", "UPDATE", "REFERENCES")},
                    _RELATION_MISSING),
    "sequence": _Kind(_relations, "name", {"SELECT": "r", "UPDATE": "w", "USAGE": "U"}, _RELATION_MISSING),
    "schema": _Kind(_schemas, "", {"CREATE": "C", "USAGE": "U"}, (INVALID_SCHEMA_NAME, 'schema "{}" does not exist'),
                    bypass=True),
    # sqlfront has no per-database CONNECT or TEMPORARY privilege: every role holds them
    "database": _Kind(_databases, "", {"CREATE": "C", "USAGE": "U", "CONNECT": "", "TEMPORARY": "", "TEMP": ""},
                      (INVALID_CATALOG_NAME, 'database "{}" does not exist'), bypass=True),
    "cluster": _Kind(_clusters, "", {"CREATE": "C", "USAGE": "U"}, (UNDEFINED_OBJECT, "unknown cluster '{}'")),
    "role": _Kind(_roles, "", {"MEMBER": "m", "USAGE": "m", "SET": "m"},
                  (UNDEFINED_OBJECT, 'role "{}" does not exist'), _role_member, bypass=True,
                  absent=False),
    # functions and types are built in: every role may execute and use them (by OID only)
    "function": _Kind(_functions, "function", {"EXECUTE": ""}, (UNDEFINED_FUNCTION, 'function "{}" does not exist'), bypass=True),
    "type": _Kind(_types, "type", {"USAGE": ""}, (UNDEFINED_OBJECT, 'type "{}" does not exist'), bypass=True),
    "language": _Kind(_languages, "", {"USAGE": ""}, (UNDEFINED_OBJECT, 'language "{}" does not exist'),
                      bypass=True),
    # owned by the bootstrap superuser, with no grants: only superusers may CREATE in them
    "tablespace": _Kind(_tablespaces, "", {"CREATE": "C"}, (UNDEFINED_OBJECT, 'tablespace "{}" does not exist'),
                        bypass=True),
    "foreign_data_wrapper": _Kind(_none, "", {"USAGE": "U"},
                                  (UNDEFINED_OBJECT, 'foreign-data wrapper "{}" does not exist'), bypass=True),
    "server": _Kind(_none, "", {"USAGE": "U"}, (UNDEFINED_OBJECT, 'server "{}" does not exist'), bypass=True),
    # a large object's existence is checked before the role is: NULL for a superuser too
    "largeobject": _Kind(_none, "", {"SELECT": "r", "UPDATE": "w"}, (UNDEFINED_OBJECT, "")),
    # no GRANT SET ON PARAMETER here (pg_parameter_acl is empty): superusers only
    "parameter": _Kind(lambda snap: [_Object("parameter", (), None, None)], "", {"SET": "s", "ALTER SYSTEM": "A"},
                       (UNDEFINED_OBJECT, ""), any_name=True),
}


def _privilege_map(kind: _Kind) -> dict[str, str]:
    """Privilege name (upper case) -> letter: "" for one every role holds, "!" for one
    only superusers hold (WITH GRANT OPTION: Materialize has no grant option)."""
    return {**kind.privileges, **{f"{p} WITH GRANT OPTION": "!" for p in kind.privileges}}


def _lookup(kind: _Kind, role_arg, obj_arg, ctx) -> dict[str, str] | None:
    """The lookup table of a call (see the module's doc) from the statement's catalog
    (``ctx``: its ``planner.context.PlanContext``) and roles; None outside a session. A
    constant role or object argument (a plan ``Literal``) limits the table to what it
    names."""
    from planner.scalar import Literal

    snap = ctx.catalog()
    if snap is None:
        return None
    current = rbac.current_role(snap)
    table = {"cur": current or ""}
    roles = [r for r in rbac.all_roles(snap)
             if not isinstance(role_arg, Literal) or role_arg.value in (r.name, rbac.role_oid(r.id))
             or r.id == current]
    for r in roles:
        table[f"r:{r.name}"] = table[f"r#{rbac.role_oid(r.id)}"] = r.id
    table["r:public"] = rbac.PUBLIC
    wanted = None
    if isinstance(obj_arg, Literal) and obj_arg.value is not None:
        v = obj_arg.value
        try:
            wanted = v if isinstance(v, int) else _KEYS[kind.parsed][0](v) if kind.parsed else v
        except SqlError:
            wanted = None  # the call's own error, at run time
    classes: dict[tuple, str] = {}
    for o in kind.objects(snap):
        if wanted is not None and not kind.any_name and wanted != o.oid and wanted not in o.names:
            continue
        table.update({f"o:{n}": o.id for n in o.names})
        if o.oid is not None:
            table[f"o#{o.oid}"] = o.id
        held = tuple(_ALL if rbac.is_superuser(snap, r or None) else kind.held(snap, r, o) if kind.held else
                     "".join(ch for ch in kind.letters if ch and o.ref is not None
                             and rbac.has_privilege(snap, r or None, o.ref, ch))
                     for r in [current or "", rbac.PUBLIC, *(r.id for r in roles)])
        cls = classes.setdefault(held, str(len(classes)))
        table[f"k:{o.id}"] = cls
        for i, c in enumerate(o.columns):
            table[f"c:{o.id}/{c}"] = table[f"n:{o.id}/{i + 1}"] = "1"
    for r in [current or "", rbac.PUBLIC, *(r.id for r in roles)]:
        if rbac.is_superuser(snap, r or None):
            table[f"s:{r}"] = "1"
    for held, cls in classes.items():
        for r, letters in zip([current or "", rbac.PUBLIC, *(r.id for r in roles)], held):
            table[f"h:{r}/{cls}"] = letters
    return table


def _table(kind: _Kind, column: bool, args: list, ctx) -> dict[str, str] | None:
    """``_lookup`` for a call's planned arguments (``lookup_args``)."""
    has_role = len(args) == (4 if column else 3)
    return _lookup(kind, args[0] if has_role else None, args[1 if has_role else 0], ctx)


def _split(args: list, column: bool) -> tuple:
    """(role or None, object, column or None, privileges) of a call's own arguments."""
    has_role = len(args) == (4 if column else 3)
    role, rest = (args[0], args[1:]) if has_role else (None, args)
    return (role, rest[0], rest[1], rest[2]) if column else (role, rest[0], None, rest[1])


def _python(kind_name: str, column: bool):
    """The interpreter's implementation: the lookup table read as a dict."""
    kind = _KINDS[kind_name]
    privileges = _privilege_map(kind)

    def impl(a, e):
        *args, table = a
        if any(x is None for x in args):
            return None
        t = lookup_table(table, "privilege functions")
        role_arg, obj_arg, col_arg, privs = _split(args, column)
        role = t["cur"] if role_arg is None else t.get(f"r#{role_arg}" if isinstance(role_arg, int) else
                                                        f"r:{role_arg}")
        if role is None:
            raise SqlError(UNDEFINED_OBJECT, f"role with OID {role_arg} does not exist" if isinstance(role_arg, int)
                           else f'role "{role_arg}" does not exist')
        if kind.any_name:
            obj = "parameter"
        elif isinstance(obj_arg, int):
            obj = t.get(f"o#{obj_arg}")
        else:
            obj = t.get(f"o:{_KEYS[kind.parsed][0](obj_arg) if kind.parsed else obj_arg}")
            if obj is None:
                raise SqlError(kind.missing[0], kind.missing[1].format(obj_arg))
        if column and obj is not None and not isinstance(col_arg, int) and f"c:{obj}/{col_arg}" not in t:
            raise SqlError(UNDEFINED_COLUMN, f'column "{col_arg}" of relation "{obj_arg}" does not exist')
        letters = []
        for p in privs.split(","):
            letter = privileges.get(p.strip().upper())
            if letter is None:
                raise SqlError(INVALID_PARAMETER_VALUE, f'unrecognized privilege type: "{p.strip()}"')
            letters.append(letter)
        if obj is None:  # an OID that names nothing
            return True if kind.bypass and f"s:{role}" in t else kind.absent
        if column and isinstance(col_arg, int) and f"n:{obj}/{col_arg}" not in t:
            return None
        held = t.get(f"h:{role}/{t[f'k:{obj}']}", "")
        return any(ch == "" or _ALL in held or ch != "!" and ch in held for ch in letters)
    return impl


def _spark(kind_name: str, column: bool):
    """The Spark lowering: the same lookups in the table as a ``map<string,string>``."""
    kind = _KINDS[kind_name]
    privileges = _privilege_map(kind)

    def lower(S, a, e):
        F = S.F
        *args, table = a
        t = lookup_map(S, table)
        types = [x.type for x in e.args[:-1]]
        role_arg, obj_arg, col_arg, privs = _split(args, column)
        role_t, obj_t, col_t, _ = _split(types, column)

        def get(prefix, c, t_):
            return t[F.concat(F.lit(prefix + ("#" if t_.name == "oid" else ":")), c.cast("string"))]

        role = t["cur"] if role_arg is None else get("r", role_arg, role_t)
        by_oid = obj_t.name == "oid"
        obj = F.lit("parameter") if kind.any_name else \
            get("o", _KEYS[kind.parsed][1](S, obj_arg) if kind.parsed and not by_oid else obj_arg, obj_t)
        held = F.coalesce(t[F.concat(F.lit("h:"), role, F.lit("/"), t[F.concat(F.lit("k:"), obj)])], F.lit(""))
        names = F.create_map(*[F.lit(x) for kv in privileges.items() for x in kv])
        chunks = F.transform(F.split(privs, ","), lambda x: F.regexp_replace(x, r"^\s+|\s+$", ""))
        checked = F.forall(chunks, lambda x: F.when(names[F.upper(x)].isNull(), S.fail(INVALID_PARAMETER_VALUE, F.concat(
            F.lit('unrecognized privilege type: "'), x, F.lit('"')))).otherwise(F.lit(True)))
        answer = F.exists(chunks, lambda x: (names[F.upper(x)] == "") | (F.instr(held, F.lit(_ALL)) > 0)
                          | ((names[F.upper(x)] != "!") & (F.instr(held, names[F.upper(x)]) > 0)))
        superuser = t[F.concat(F.lit("s:"), role)].isNotNull()
        out = F.when(F.greatest(*[c.isNull() for c in args]), F.lit(None).cast("boolean"))
        if role_arg is not None:
            out = out.when(role.isNull(), S.fail(UNDEFINED_OBJECT, F.concat(
                F.lit("role " + ("with OID " if role_t.name == "oid" else '"')), role_arg.cast("string"),
                F.lit("" if role_t.name == "oid" else '"'), F.lit(" does not exist"))))
        if not by_oid and not kind.any_name:
            state, message = kind.missing
            before, after = message.split("{}")
            out = out.when(obj.isNull(), S.fail(state, F.concat(F.lit(before), obj_arg, F.lit(after))))
        if column and col_t.name == "text":
            out = out.when(obj.isNotNull() & t[F.concat(F.lit("c:"), obj, F.lit("/"), col_arg)].isNull(),
                           S.fail(UNDEFINED_COLUMN, F.concat(F.lit('column "'), col_arg, F.lit('" of relation "'),
                                                    obj_arg.cast("string"), F.lit('" does not exist'))))
        # the privileges are checked before an OID's object is looked up (PostgreSQL's order)
        out = out.when(~checked, F.lit(None).cast("boolean"))
        if by_oid:
            absent = F.lit(kind.absent).cast("boolean")
            out = out.when(obj.isNull(), F.when(superuser, F.lit(True)).otherwise(absent) if kind.bypass else absent)
        if column and col_t.name != "text":
            out = out.when(t[F.concat(F.lit("n:"), obj, F.lit("/"), col_arg.cast("string"))].isNull(),
                           F.lit(None).cast("boolean"))
        return out.otherwise(answer)
    return lower


def _sigs(obj_types=("text", "oid"), column_types=()):
    """(object, privilege) and (role, object, privilege) with names or OIDs (and a
    column by name or number after the object), each with the hidden lookup table."""
    out = []
    for o in obj_types:
        for c in column_types or (None,):
            own = (o,) if c is None else (o, c)
            out.append(sig(*own, "text", "internal", ret="bool"))
            for r in ("text", "oid"):
                out.append(sig(r, *own, "text", "internal", ret="bool"))
    return tuple(out)


def _fn(name: str, kind: str, samples: tuple[str, ...], differs: str = "", obj_types=("text", "oid"),
        column: bool = False) -> Function:
    return Function(name, _sigs(obj_types, ("text", "int2") if column else ()), _python(kind, column),
                    _spark(kind, column), sql_names=(name,), strict=False, volatility="stable", doc="9.27",
                    samples=samples, differs=differs,
                    extra={"plan_args_in": lookup_args(name, functools.partial(_table, _KINDS[kind], column))})


def current_role_name(ctx, session: bool = False) -> str:
    """The name of the current role of the statement of ``ctx`` (its
    ``planner.context.PlanContext``; ``session``: its login role); the bootstrap role's
    outside a session."""
    snap = ctx.catalog()
    roles = None if snap is None else rbac.session_roles(snap)
    if roles is None:
        return "materialize"
    return rbac.role_name(snap, roles[0] if session else roles[1])


#: samples over the differential table: a relation name per row, privileges per row
_REL = "(CASE WHEN k < 3 THEN 'fx_t' WHEN k = 3 THEN 'PG_CATALOG.pg_class' ELSE ' \"fx_t\" ' END)"
_PRIV = "(CASE k WHEN 1 THEN 'SELECT' WHEN 2 THEN 'insert, update' WHEN 3 THEN ' Delete' ELSE 'SELECT WITH GRANT " \
        "OPTION' END)"

register(
    _fn("has_table_privilege", "table",
        ("has_table_privilege('pg_class', 'SELECT')", f"has_table_privilege({_REL}, {_PRIV})",
         f"has_table_privilege(current_user, {_REL}, 'SELECT,TRIGGER')",
         "has_table_privilege(s, 'SELECT')", "has_table_privilege('fx_t', s)",
         "has_table_privilege(CASE WHEN k < 3 THEN 'fx_t'::regclass::oid ELSE 0::oid END, 'SELECT')",
         "has_table_privilege('nosuchrole' || k, 'fx_t', 'SELECT')")),
    _fn("has_any_column_privilege", "column",
        ("has_any_column_privilege('pg_class', 'SELECT')",
         f"has_any_column_privilege({_REL}, {_PRIV.replace(' Delete', ' references')})",
         f"has_any_column_privilege({_REL}, {_PRIV})")),
    _fn("has_column_privilege", "column",
        (f"has_column_privilege({_REL}, 1::int2, 'SELECT')", "has_column_privilege('fx_t', s, 'SELECT')",
         "has_column_privilege('fx_t', k::int2, 'UPDATE')", "has_column_privilege('fx_t', (k * 4)::int2, 'SELECT')",
         "has_column_privilege(current_user, 'fx_t', 'i', 'INSERT')"),
        column=True),
    _fn("has_sequence_privilege", "sequence",
        ("has_sequence_privilege(current_user, 'pg_class', 'SELECT')",),
        "any relation is taken (PostgreSQL: 42809 for one that is not a sequence)"),
    _fn("has_schema_privilege", "schema",
        ("has_schema_privilege('public', 'USAGE')",
         ("has_schema_privilege(CASE WHEN k < 4 THEN 'public' ELSE 'pg_catalog' END, CASE WHEN k = 2 THEN 'create' "
          "ELSE 'USAGE' END)"), "has_schema_privilege(s, 'USAGE')",
         "has_schema_privilege(current_user, CASE WHEN k % 2 = 1 THEN 'public'::regnamespace::oid ELSE 0::oid END, 'USAGE')")),
    _fn("has_database_privilege", "database",
        ("has_database_privilege(current_database(), 'CONNECT')",
         "has_database_privilege(current_database(), CASE WHEN k < 3 THEN 'CONNECT' ELSE 'temp, create' END)",
         "has_database_privilege(current_user, s, 'CONNECT')")),
    _fn("has_function_privilege", "function",
        (("has_function_privilege(CASE WHEN k < 3 THEN (SELECT min(oid) FROM pg_proc WHERE proname = 'lower') "
          "ELSE 0::oid END, 'EXECUTE')"),
         ("has_function_privilege(current_user, (SELECT min(oid) FROM pg_proc WHERE proname = 'upper'), "
          "CASE WHEN k < 4 THEN 'execute' ELSE 'usage' END)"),
         "has_function_privilege('lower(text)', 'EXECUTE')",
         ("has_function_privilege(current_user, CASE WHEN k < 3 THEN 'pg_catalog.ABS( integer )' WHEN k = 3 THEN "
          "'round(numeric(10,2), int)' ELSE 'upper(text)' END, 'execute')"),
         "has_function_privilege('nosuch' || k || '(int)', 'EXECUTE')", "has_function_privilege(s, 'EXECUTE')",
         "has_function_privilege('lower(text' || k, 'EXECUTE')", "has_function_privilege('lower(nosuchtype)', 'EXECUTE')")),
    _fn("has_type_privilege", "type",
        ("has_type_privilege('int4'::regtype::oid, 'USAGE')",
         "has_type_privilege(current_user, (CASE WHEN k < 3 THEN 23 ELSE 25 END)::oid, 'USAGE')",
         "has_type_privilege('int4', 'USAGE')", "has_type_privilege(current_user, 'double precision', 'USAGE')",
         ("has_type_privilege(CASE WHEN k < 2 THEN 'character varying(3)' WHEN k < 4 THEN 'INTEGER[]' ELSE "
          "'timestamp(3) with time zone' END, 'usage')"),
         "has_type_privilege(s, 'USAGE')")),
    _fn("has_cluster_privilege", "cluster", ("has_cluster_privilege('quickstart', 'USAGE')",),
        "Materialize's: PostgreSQL has no clusters", obj_types=("text",)),
    _fn("has_language_privilege", "language",
        ("has_language_privilege('sql', 'USAGE')",
         ("has_language_privilege(CASE WHEN k < 3 THEN 'internal' ELSE 'c' END, CASE WHEN k < 4 THEN 'usage' ELSE "
          "'USAGE WITH GRANT OPTION' END)"),
         "has_language_privilege(current_user, (k + 11)::oid, 'USAGE')", "has_language_privilege('nolang' || k, 'USAGE')",
         "has_language_privilege('sql', s)"),
        "no plpgsql here (no DO or CREATE FUNCTION): its name is 42704"),
    _fn("has_tablespace_privilege", "tablespace",
        ("has_tablespace_privilege('pg_default', 'CREATE')",
         "has_tablespace_privilege(CASE WHEN k < 3 THEN 'pg_global' ELSE 'pg_default' END, 'create')",
         "has_tablespace_privilege(current_user, (k + 1661)::oid, 'CREATE')", "has_tablespace_privilege('nospc', 'CREATE')",
         "has_tablespace_privilege(k::oid, 'USAGE')")),
    _fn("has_foreign_data_wrapper_privilege", "foreign_data_wrapper",
        ("has_foreign_data_wrapper_privilege(k::oid, 'USAGE')", "has_foreign_data_wrapper_privilege('fdw' || k, 'USAGE')",
         "has_foreign_data_wrapper_privilege(current_user, k::oid, 'usage')")),
    _fn("has_server_privilege", "server",
        ("has_server_privilege(current_user, k::oid, 'USAGE')", "has_server_privilege('srv', 'USAGE')",
         "has_server_privilege(k::oid, 'SELECT')")),
    _fn("has_largeobject_privilege", "largeobject",
        ("has_largeobject_privilege(k::oid, 'SELECT')",
         "has_largeobject_privilege(current_user, k::oid, CASE WHEN k < 3 THEN 'update' ELSE 'SELECT' END)",
         "has_largeobject_privilege(k::oid, 'USAGE')"),
        obj_types=("oid",)),
    _fn("has_parameter_privilege", "parameter",
        ("has_parameter_privilege('work_mem', 'SET')", "has_parameter_privilege(s, 'ALTER SYSTEM')",
         "has_parameter_privilege(current_user, 'x' || k, CASE WHEN k < 3 THEN 'set' ELSE 'ALTER SYSTEM, SET' END)",
         "has_parameter_privilege('work_mem', 'USAGE')"),
        obj_types=("text",)),
    _fn("pg_has_role", "role",
        ("pg_has_role(current_user, 'MEMBER')",
         "pg_has_role(current_user, current_user, CASE WHEN k < 3 THEN 'MEMBER' ELSE 'usage,set' END)")),
)
