"""Role-based access control: who may do what to which object, as Materialize's RBAC
("Access control" and "GRANT PRIVILEGE" in Materialize's docs; PostgreSQL 5.8
"Privileges" where Materialize is silent).

The rules over a catalog snapshot, and nothing else: ownership, ACLs with their defaults,
role membership, superusers, and :func:`require` — the one check every statement path
calls (``sqlfront.rbac`` decides *which* privileges a statement needs). Pure functions; the
statement's roles are its catalog's scope (``catalog.snapshot.Scope``: ``Session.catalog``
is the catalog scoped to the session's roles and search_path).

Objects are named by an :class:`ObjectRef`: its ``key`` (``item:u5`` for a table, view,
sequence or index; ``schema:u7`` for a user schema and ``schema:public`` for a system one;
``cluster:u1``; ``database:materialize``; ``system``) indexes the snapshot's ``owners``
and ``privileges``.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.errors import SqlError, INSUFFICIENT_PRIVILEGE, INVALID_GRANT_OPERATION, SYNTAX_ERROR
from catalog.snapshot import (  # noqa: F401 (the system roles: rbac's names for them)
    DATABASE, MZ_SUPPORT, MZ_SYSTEM, SYSTEM_ROLES, SYSTEM_SCHEMAS, AclItem, CatalogSnapshot, Cluster, Connection,
    Index, MaterializedView, Role, Secret, Sequence, Source, Subsource, View,
)

#: PUBLIC, the role every role is a member of (Materialize's ``p``)
PUBLIC = "p"
#: the role a fresh catalog makes for the bootstrap user (a superuser): it owns every
#: object created before roles existed
BOOTSTRAP_ROLE_ID = "u1"
#: Materialize's database id (mz_databases)
DATABASE_ID = "u1"
#: names no user role may take or log in as, besides those starting ``mz_`` or ``pg_``
#: (Materialize's "Reserved role names"; PostgreSQL's role specifiers)
_RESERVED_ROLE_NAMES = ("none", "current_user", "session_user", "current_role")


def is_reserved_role_name(name: str) -> bool:
    """True for a role name Materialize keeps for itself: ``mz_`` and ``pg_`` prefixes
    (its system roles ``mz_system``, ``mz_support``), PUBLIC and the role specifiers
    (Materialize's CREATE ROLE "Restrictions": "reserved")."""
    return name.startswith(("mz_", "pg_")) or name.lower() == "public" or name in _RESERVED_ROLE_NAMES


#: privilege name -> its ACL letter (PostgreSQL 5.8 Table 5.1; Materialize adds R, B, N
#: for its system privileges CREATEROLE, CREATEDB, CREATECLUSTER)
PRIVILEGE_LETTERS = {"INSERT": "a", "SELECT": "r", "UPDATE": "w", "DELETE": "d", "USAGE": "U", "CREATE": "C",
                     "CREATEROLE": "R", "CREATEDB": "B", "CREATECLUSTER": "N"}
#: the order letters are shown in (Materialize's AclMode display)
_LETTER_ORDER = "arwdUCRBN"
#: object type -> the privileges it has ("Privileges" table of Materialize's access
#: control doc; sequences as PostgreSQL's: SELECT, UPDATE, USAGE)
KIND_PRIVILEGES = {"SOURCE": "r", "SECRET": "U", "CONNECTION": "U", "TABLE": "arwd", "VIEW": "r", "MATERIALIZED VIEW": "r", "SEQUENCE": "rwU", "INDEX": "",
                   "SCHEMA": "UC", "DATABASE": "UC", "CLUSTER": "UC", "SYSTEM": "RBN"}
#: the kinds of object ``ALTER DEFAULT PRIVILEGES ... ON TABLES`` covers (Materialize:
#: tables, views and materialized views; PostgreSQL: sequences too)
TABLE_LIKE = ("TABLE", "VIEW", "MATERIALIZED VIEW", "SEQUENCE")


@dataclass(frozen=True)
class ObjectRef:
    """An object privileges apply to: ``kind`` (``TABLE``, ``VIEW``, ``MATERIALIZED VIEW``,
    ``SEQUENCE``, ``INDEX``, ``SCHEMA``, ``DATABASE``, ``CLUSTER``, ``SYSTEM``), its catalog ``key`` and
    the ``name`` error messages show (``materialize.public.t``)."""

    kind: str
    key: str
    name: str
    #: a system object: owned by mz_system, readable by PUBLIC
    builtin: bool = False


SYSTEM = ObjectRef("SYSTEM", "system", "SYSTEM", True)
DATABASE_OBJ = ObjectRef("DATABASE", f"database:{DATABASE}", DATABASE)


def relation_ref(rel) -> ObjectRef:
    """The ObjectRef of a table, view, materialized view, system table, sequence, index,
    source (or subsource), secret or connection."""
    kind = "VIEW" if isinstance(rel, View) else "SEQUENCE" if isinstance(rel, Sequence) else \
        "INDEX" if isinstance(rel, Index) else "MATERIALIZED VIEW" if isinstance(rel, MaterializedView) else \
        "SOURCE" if isinstance(rel, (Source, Subsource)) else "SECRET" if isinstance(rel, Secret) else \
        "CONNECTION" if isinstance(rel, Connection) else "TABLE"
    return ObjectRef(kind, f"item:{rel.id}", f"{DATABASE}.{rel.schema}.{rel.name}", rel.id.startswith("s"))


def schema_ref(snap: CatalogSnapshot, name: str) -> ObjectRef:
    """The ObjectRef of schema ``name`` (a system one's key names it; a user one's has its id)."""
    sc = snap.schema_by_name(name)
    if sc is None:
        return ObjectRef("SCHEMA", f"schema:{name}", f"{DATABASE}.{name}", name != "public")
    return ObjectRef("SCHEMA", f"schema:{sc.id}", f"{DATABASE}.{name}")


def cluster_ref(cluster: Cluster) -> ObjectRef:
    return ObjectRef("CLUSTER", f"cluster:{cluster.id}", cluster.name)


# -- the statement's roles ------------------------------------------------------------------

def session_roles(snap: CatalogSnapshot) -> tuple[str, str] | None:
    """``(session role id, current role id)`` of the statement reading ``snap`` (its
    ``scope``), or None for the environment's own work."""
    return snap.scope.roles


def current_role(snap: CatalogSnapshot) -> str | None:
    """The current role's id (what privileges are checked against) of the statement
    reading ``snap``: its SET ROLE, else its login role; None when no session reads it
    (internal work, which is not checked)."""
    r = snap.scope.roles
    return None if r is None else r[1]


# -- roles ----------------------------------------------------------------------------------

def memberships(snap: CatalogSnapshot, role_id: str) -> set[str]:
    """``role_id``, every role it is a member of, directly or through other roles, and
    PUBLIC (Materialize's roles always inherit their roles' privileges)."""
    out, todo = {role_id, PUBLIC}, [role_id]
    while todo:
        r = todo.pop()
        for (parent, member) in snap.role_members:
            if member == r and parent not in out:
                out.add(parent)
                todo.append(parent)
    return out


def is_superuser(snap: CatalogSnapshot, role_id: str | None) -> bool:
    """True for a superuser role, and for no role at all (the environment's own work)."""
    if role_id is None:
        return True
    r = snap.role(role_id)
    return r is not None and r.superuser


def role_name(snap: CatalogSnapshot, role_id: str) -> str:
    if role_id == PUBLIC:
        return "PUBLIC"
    r = snap.role(role_id)
    return r.name if r is not None else role_id


# -- owners and ACLs --------------------------------------------------------------------------

def owner_of(snap: CatalogSnapshot, obj: ObjectRef) -> str:
    """The owner's role id: the catalog's, else mz_system for a system object and the
    bootstrap role for anything made before roles existed."""
    got = snap.owners.get(obj.key)
    if got is not None:
        return got
    return MZ_SYSTEM.id if obj.builtin or obj.kind == "SYSTEM" else BOOTSTRAP_ROLE_ID


def full_privileges(kind: str) -> str:
    return KIND_PRIVILEGES.get(kind, "")


def default_acl(snap: CatalogSnapshot, obj: ObjectRef) -> tuple[AclItem, ...]:
    """The ACL of an object nobody granted or revoked on: its owner holds every privilege
    of its type; PUBLIC may read system tables and use the database, the system schemas,
    ``public`` and the clusters made before roles existed (Materialize bootstraps
    ``materialize``, ``materialize.public`` and ``quickstart`` with ``=U/mz_system``)."""
    owner = owner_of(snap, obj)
    acl = [AclItem(owner, owner, full_privileges(obj.kind))] if obj.kind != "SYSTEM" else []
    if obj.builtin and obj.kind in ("TABLE", "VIEW"):
        acl.append(AclItem(PUBLIC, MZ_SYSTEM.id, "r"))
    elif obj.kind in ("DATABASE", "CLUSTER") or (obj.kind == "SCHEMA" and obj.key.split(":")[1] in SYSTEM_SCHEMAS):
        acl.append(AclItem(PUBLIC, MZ_SYSTEM.id, "U"))
    elif obj.kind == "SCHEMA":
        sc = snap.schemas.get(obj.key.split(":")[1])
        if sc is not None and sc.temp:  # a session's temporary schema: only it can name it
            acl.append(AclItem(PUBLIC, MZ_SYSTEM.id, "UC"))
    return tuple(acl)


def acl_of(snap: CatalogSnapshot, obj: ObjectRef) -> tuple[AclItem, ...]:
    got = snap.privileges.get(obj.key)
    return got if got is not None else default_acl(snap, obj)


def sort_letters(letters: str) -> str:
    return "".join(ch for ch in _LETTER_ORDER if ch in letters)


def grant(acl: tuple[AclItem, ...], grantee: str, grantor: str, letters: str) -> tuple[AclItem, ...]:
    """``acl`` with ``letters`` added to ``grantee``'s item from ``grantor``."""
    out, done = [], False
    for a in acl:
        if a.grantee == grantee and a.grantor == grantor:
            a = AclItem(grantee, grantor, sort_letters(a.privileges + letters))
            done = True
        out.append(a)
    if not done:
        out.append(AclItem(grantee, grantor, sort_letters(letters)))
    return tuple(out)


def revoke(acl: tuple[AclItem, ...], grantee: str, letters: str) -> tuple[AclItem, ...]:
    """``acl`` with ``letters`` taken from ``grantee``, whoever granted them (items left
    empty go)."""
    out = []
    for a in acl:
        if a.grantee == grantee:
            a = AclItem(a.grantee, a.grantor, "".join(ch for ch in a.privileges if ch not in letters))
        if a.privileges:
            out.append(a)
    return tuple(out)


def mz_aclitem_text(a: AclItem) -> str:
    """``grantee=privileges/grantor`` with role ids, PUBLIC as the empty name
    (Materialize's ``mz_aclitem`` text form, e.g. ``u1=arwd/u1``, ``=U/s1``)."""
    return f"{'' if a.grantee == PUBLIC else a.grantee}={a.privileges}/{a.grantor}"


def aclitem_text(snap: CatalogSnapshot, a: AclItem) -> str:
    """PostgreSQL's ``aclitem`` text form, with role names (``joe=r/materialize``)."""
    grantee = "" if a.grantee == PUBLIC else role_name(snap, a.grantee)
    return f"{grantee}={a.privileges}/{role_name(snap, a.grantor)}"


# -- checks -----------------------------------------------------------------------------------

def has_privilege(snap: CatalogSnapshot, role_id: str | None, obj: ObjectRef, letters: str) -> bool:
    """True if ``role_id`` (through its roles and PUBLIC) holds every privilege in
    ``letters`` on ``obj``; superusers hold them all."""
    if is_superuser(snap, role_id):
        return True
    roles = memberships(snap, role_id)
    held = "".join(a.privileges for a in acl_of(snap, obj) if a.grantee in roles)
    return all(ch in held for ch in letters)


def is_owner(snap: CatalogSnapshot, role_id: str | None, obj: ObjectRef) -> bool:
    """True if ``role_id`` owns ``obj`` or is a member of its owner (Materialize: members
    of the owning role may act as the owner), or is a superuser."""
    return is_superuser(snap, role_id) or owner_of(snap, obj) in memberships(snap, role_id)


def denied(obj: ObjectRef) -> SqlError:
    """42501 ``permission denied for TABLE "materialize.public.t"`` (Materialize's
    wording; ``permission denied for SYSTEM`` for system privileges)."""
    if obj.kind == "SYSTEM":
        return SqlError(INSUFFICIENT_PRIVILEGE, "permission denied for SYSTEM")
    return SqlError(INSUFFICIENT_PRIVILEGE, f'permission denied for {obj.kind} "{obj.name}"')


def require(snap: CatalogSnapshot, obj: ObjectRef, letters: str, role_id: str | None = ...) -> None:
    """The check every statement path makes: the current role (or ``role_id``) must hold
    ``letters`` on ``obj``.

    Raises:
        SqlError 42501 ``permission denied for KIND "name"``."""
    role_id = current_role(snap) if role_id is ... else role_id
    if not has_privilege(snap, role_id, obj, letters):
        raise denied(obj)


def require_owner(snap: CatalogSnapshot, obj: ObjectRef, role_id: str | None = ...) -> None:
    """The current role (or ``role_id``) must own ``obj`` (ALTER, DROP, GRANT on it).

    Raises:
        SqlError 42501 ``must be owner of KIND name`` (Materialize's wording)."""
    role_id = current_role(snap) if role_id is ... else role_id
    if not is_owner(snap, role_id, obj):
        raise SqlError(INSUFFICIENT_PRIVILEGE, f"must be owner of {obj.kind} {obj.name}")


def owned_objects(snap: CatalogSnapshot, role_id: str) -> list[str]:
    """The keys of the objects ``role_id`` owns (DROP ROLE refuses while there are any)."""
    return sorted(k for k, r in snap.owners.items() if r == role_id)


def parse_privileges(words: list[str], kind: str, name: str | None = None) -> str:
    """ACL letters of privilege names (``ALL`` is every privilege of ``kind``).

    Raises:
        SqlError 0LP01 ``invalid privilege types INSERT for VIEW "materialize.public.v"``
        for a privilege the object type does not have (Materialize's wording, ``name``
        the object's); 42601 for an unknown name."""
    if words == ["ALL"]:
        return full_privileges(kind)
    letters, bad = "", []
    for w in words:
        if w not in PRIVILEGE_LETTERS:
            raise SqlError(SYNTAX_ERROR, f"unrecognized privilege type: {w.lower()}")
        ch = PRIVILEGE_LETTERS[w]
        if ch not in full_privileges(kind):
            bad.append(w)
        letters += ch
    if bad:
        shown = f'{kind} "{name}"' if name else kind
        raise SqlError(INVALID_GRANT_OPERATION, f"invalid privilege types {', '.join(bad)} for {shown}")
    return sort_letters(letters)


def ref_for_key(snap: CatalogSnapshot, key: str) -> ObjectRef | None:
    """The ObjectRef of catalog key ``key``, or None if nothing has it (any more)."""
    if key == SYSTEM.key:
        return SYSTEM
    kind, _, rest = key.partition(":")
    if kind == "database":
        return DATABASE_OBJ
    if kind == "cluster":
        c = snap.clusters.get(rest)
        return cluster_ref(c) if c is not None else None
    if kind == "schema":
        sc = snap.schemas.get(rest)
        if sc is not None:
            return ObjectRef("SCHEMA", key, f"{DATABASE}.{sc.name}")
        return schema_ref(snap, rest) if rest in SYSTEM_SCHEMAS else None
    if kind == "item":
        for objs in (snap.tables, snap.views, snap.materialized_views, snap.sequences, snap.indexes, snap.builtins,
                     snap.secrets, snap.connections):
            if rest in objs:
                return relation_ref(objs[rest])
        sc = snap.schemas.get(rest)
        if sc is not None:  # COMMENT ON SCHEMA names a schema by its id
            return ObjectRef("SCHEMA", f"schema:{rest}", f"{DATABASE}.{sc.name}")
    return None


def role_oid(role_id: str) -> int:
    """pg_roles' OID of a role: 10 for the bootstrap role (PostgreSQL's bootstrap
    superuser's OID, which every object's owner column showed before roles existed),
    0 for PUBLIC, 19000 + n for system role ``sn``, 30000 + n for user role ``un``."""
    if role_id == BOOTSTRAP_ROLE_ID:
        return 10
    if role_id == PUBLIC:
        return 0
    return (19000 if role_id[0] == "s" else 30000) + int(role_id[1:])


def all_roles(snap: CatalogSnapshot) -> list[Role]:
    """The system roles, then the catalog's, in id order."""
    return list(SYSTEM_ROLES) + sorted(snap.roles.values(), key=lambda r: int(r.id[1:]))


# -- default privileges (ALTER DEFAULT PRIVILEGES) ----------------------------------------------

#: ALTER DEFAULT PRIVILEGES ... ON <plural> -> the object type it applies to (Materialize:
#: TABLES covers tables and views)
DEFAULT_PRIVILEGE_TYPES = {"TABLES": "TABLE", "SCHEMAS": "SCHEMA", "CLUSTERS": "CLUSTER", "DATABASES": "DATABASE"}


def default_privileges_key(role_id: str, schema_key: str | None, object_type: str) -> str:
    """The key of default privileges for objects of ``object_type`` (``TABLE``,
    ``SCHEMA``, ``CLUSTER``, ``DATABASE``) made by ``role_id`` (PUBLIC: by any role, FOR
    ALL ROLES) in schema ``schema_key`` (None: anywhere)."""
    return f"{role_id}|{schema_key or ''}|{object_type}"


def split_default_privileges_key(key: str) -> tuple[str, str | None, str]:
    role, schema, kind = key.split("|")
    return role, schema or None, kind


def initial_acl(snap: CatalogSnapshot, obj: ObjectRef, owner: str, schema_key: str | None) -> tuple[AclItem, ...]:
    """The ACL of an object ``owner`` makes now: the owner's privileges, then what the
    default privileges of ``owner`` (and of the roles it is a member of, and of ALL
    ROLES) for its type and schema grant, as Materialize applies them at creation."""
    acl = (AclItem(owner, owner, full_privileges(obj.kind)),)
    dtype = "TABLE" if obj.kind in TABLE_LIKE else obj.kind
    for role in sorted(memberships(snap, owner)):
        for sk in (None, schema_key) if schema_key else (None,):
            for a in snap.default_privileges.get(default_privileges_key(role, sk, dtype), ()):
                letters = "".join(ch for ch in a.privileges if ch in full_privileges(obj.kind))
                if letters:
                    acl = grant(acl, a.grantee, owner, letters)
    return acl
