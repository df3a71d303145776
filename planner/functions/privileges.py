"""Access privilege inquiry functions (PostgreSQL 9.27 Table 9.70: has_table_privilege,
has_schema_privilege, has_database_privilege, has_sequence_privilege, pg_has_role;
Materialize's has_cluster_privilege) and the current roles (current_user, session_user).

Answers come from ``catalog.rbac`` (the rules the statements' checks use) against the
running statement's catalog and roles; computed in Python only (they read the catalog).
Privilege names may be a comma-separated list: true if any is held (PostgreSQL's rule);
``WITH GRANT OPTION`` is never held (Materialize has no grant option).
"""

from __future__ import annotations

from catalog import rbac
from catalog.errors import SqlError, UNDEFINED_OBJECT
from catalog.snapshot import CatalogSnapshot, DATABASE
from planner.functions import Function, register, sig

#: privilege names of has_database_privilege that every role holds (sqlfront has no
#: per-database CONNECT or TEMPORARY privilege)
_ALWAYS = ("CONNECT", "TEMPORARY", "TEMP")


def _snap() -> CatalogSnapshot:
    snap = rbac.statement_catalog()
    if snap is None:
        raise SqlError("0A000", "privilege functions need a session")
    return snap


def current_role_name(session: bool = False) -> str:
    """The name of the statement's current role (``session``: its login role); the
    bootstrap role's outside a session."""
    roles = rbac.session_roles()
    snap = rbac.statement_catalog()
    if roles is None or snap is None:
        return "materialize"
    return rbac.role_name(snap, roles[0] if session else roles[1])


def _role(snap: CatalogSnapshot, arg) -> str:
    """A role id from a name or an OID. Raises 42704 ``role "x" does not exist``."""
    if isinstance(arg, int):
        for r in rbac.all_roles(snap):
            if rbac.role_oid(r.id) == arg:
                return r.id
        raise SqlError(UNDEFINED_OBJECT, f"role with OID {arg} does not exist")
    if arg.lower() == "public":
        return rbac.PUBLIC
    r = snap.role_by_name(arg)
    if r is None:
        raise SqlError(UNDEFINED_OBJECT, f'role "{arg}" does not exist')
    return r.id


def _relation(snap: CatalogSnapshot, arg, kinds=("TABLE", "VIEW", "SEQUENCE")) -> rbac.ObjectRef:
    from catalog.pg_catalog import object_oid

    objs = [o for m in (snap.tables, snap.views, snap.materialized_views, snap.sequences, snap.builtins)
            for o in m.values()]
    if isinstance(arg, int):
        rel = next((o for o in objs if object_oid(o.id) == arg), None)
        if rel is None:
            raise SqlError("42P01", f"relation with OID {arg} does not exist")
    else:
        parts = [p.strip('"') for p in arg.split(".")]
        schema, name = (parts[-2] if len(parts) > 1 else None), parts[-1]
        try:
            rel = snap.resolve_relation(schema, name)
        except SqlError:
            try:
                rel = snap.resolve_sequence(schema, name)
            except SqlError:
                raise SqlError("42P01", f'relation "{arg}" does not exist') from None
    return rbac.relation_ref(rel)


def _letters(privs: str, allowed: dict[str, str], what: str) -> list[str]:
    """Letters for a comma-separated privilege list ("" for one held by everyone).
    Raises 22023 ``unrecognized privilege type: "x"``."""
    out = []
    for p in privs.split(","):
        p = p.strip().upper()
        if p.endswith("WITH GRANT OPTION"):
            out.append(None)  # never held
            continue
        if p not in allowed:
            raise SqlError("22023", f'unrecognized privilege type: "{p.lower()}"')
        out.append(allowed[p])
    return out


def _held(snap, role: str, obj: rbac.ObjectRef, letters: list) -> bool:
    return any(ch is not None and (ch == "" or rbac.has_privilege(snap, role, obj, ch)) for ch in letters)


def _split_args(a) -> tuple:
    """(role argument or None, object, privileges) of a 2- or 3-argument call."""
    return (None, a[0], a[1]) if len(a) == 2 else (a[0], a[1], a[2])


def _checker(resolve, allowed: dict[str, str]):
    def impl(a, e):
        if any(x is None for x in a):
            return None
        snap = _snap()
        role_arg, obj_arg, privs = _split_args(a)
        role = rbac.current_role() if role_arg is None else _role(snap, role_arg)
        return _held(snap, role, resolve(snap, obj_arg), _letters(privs, allowed, "object"))
    return impl


def _schema(snap: CatalogSnapshot, arg) -> rbac.ObjectRef:
    if isinstance(arg, int):
        from catalog.pg_catalog import NAMESPACE_OIDS, object_oid

        names = {v: k for k, v in NAMESPACE_OIDS.items()} | {object_oid(s.id): s.name for s in snap.schemas.values()}
        if arg not in names:
            raise SqlError("3F000", f"schema with OID {arg} does not exist")
        arg = names[arg]
    if not snap.schema_exists(arg):
        raise SqlError("3F000", f'schema "{arg}" does not exist')
    return rbac.schema_ref(snap, arg)


def _database(snap: CatalogSnapshot, arg) -> rbac.ObjectRef:
    from catalog.pg_catalog import DATABASE_OID

    if arg not in (DATABASE, DATABASE_OID):
        raise SqlError("3D000", f'database "{arg}" does not exist')
    return rbac.DATABASE_OBJ


def _cluster(snap: CatalogSnapshot, arg) -> rbac.ObjectRef:
    c = snap.clusters.get(arg) if isinstance(arg, str) and arg in snap.clusters else snap.cluster_by_name(str(arg))
    if c is None:
        raise SqlError(UNDEFINED_OBJECT, f"unknown cluster '{arg}'")
    return rbac.cluster_ref(c)


def _pg_has_role(a, e):
    if any(x is None for x in a):
        return None
    snap = _snap()
    role_arg, target, privs = _split_args(a)
    role = rbac.current_role() if role_arg is None else _role(snap, role_arg)
    target_id = _role(snap, target)
    letters = _letters(privs, {"MEMBER": "m", "USAGE": "m", "SET": "m"}, "role")
    member = rbac.is_superuser(snap, role) or target_id in rbac.memberships(snap, role)
    return member and any(ch is not None for ch in letters)


def _user_by_id(a, e):
    snap = rbac.statement_catalog()
    if snap is not None:
        for r in rbac.all_roles(snap):
            if rbac.role_oid(r.id) == a[0]:
                return r.name
    return f"unknown (OID={a[0]})"


_TABLE = {"SELECT": "r", "INSERT": "a", "UPDATE": "w", "DELETE": "d", "TRUNCATE": "d", "REFERENCES": "r",
          "TRIGGER": None}
_SEQUENCE = {"SELECT": "r", "UPDATE": "w", "USAGE": "U"}
_SCHEMA = {"CREATE": "C", "USAGE": "U"}
_DATABASE = {"CREATE": "C", "USAGE": "U", **{p: "" for p in _ALWAYS}}
_CLUSTER = {"CREATE": "C", "USAGE": "U"}


def _sigs(obj_types=("text", "oid")):
    """(object, privilege) and (role, object, privilege) with names or OIDs."""
    out = []
    for o in obj_types:
        out.append(sig(o, "text", ret="bool"))
        for r in ("text", "oid"):
            out.append(sig(r, o, "text", ret="bool"))
    return tuple(out)


def _fn(name: str, impl, sigs, sample: str, differs: str | None = None) -> Function:
    return Function(name, sigs, impl, None, sql_names=(name,), strict=False, volatility="stable", doc="9.27",
                    samples=(sample,), differs=differs or "reads the catalog: folded at plan time, 0A000 on "
                                                          "table data arguments")


register(
    _fn("has_table_privilege", _checker(_relation, _TABLE), _sigs(), "has_table_privilege('pg_class', 'SELECT')"),
    _fn("has_any_column_privilege", _checker(_relation, _TABLE), _sigs(),
        "has_any_column_privilege('pg_class', 'SELECT')"),
    _fn("has_sequence_privilege", _checker(_relation, _SEQUENCE), _sigs(),
        "has_sequence_privilege(current_user, 'pg_class', 'SELECT')",
        "any relation is taken (PostgreSQL: 42809 for one that is not a sequence)"),
    _fn("has_schema_privilege", _checker(_schema, _SCHEMA), _sigs(), "has_schema_privilege('public', 'USAGE')"),
    _fn("has_database_privilege", _checker(_database, _DATABASE), _sigs(),
        "has_database_privilege(current_database(), 'CONNECT')"),
    _fn("has_cluster_privilege", _checker(_cluster, _CLUSTER), _sigs(("text",)),
        "has_cluster_privilege('quickstart', 'USAGE')", "Materialize's: PostgreSQL has no clusters"),
    _fn("pg_has_role", _pg_has_role, _sigs(("text", "oid")), "pg_has_role(current_user, 'MEMBER')"),
    Function("pg_get_userbyid", (sig("oid", ret="text"),), _user_by_id, None, sql_names=("pg_get_userbyid",),
             volatility="stable", doc="9.27", samples=("pg_get_userbyid(10)",),
             differs="OID 10 is the bootstrap role, named materialize here"),
)
