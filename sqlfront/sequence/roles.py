"""Roles and privileges: CREATE/ALTER/DROP ROLE, GRANT/REVOKE of roles and of privileges,
ALTER ... OWNER TO, SET/RESET ROLE (Materialize's "CREATE ROLE", "ALTER ROLE", "DROP
ROLE", "GRANT ROLE", "GRANT PRIVILEGE", "REVOKE PRIVILEGE", "ALTER OWNER"; PostgreSQL's
"SET ROLE").

Each statement becomes a catalog transaction built against the Coordinator's snapshot;
who may run it (CREATEROLE, ownership of the object) is checked on its ops by
``sqlfront.rbac.check_ops``, like every DDL statement. The rules live in ``catalog.rbac``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pglast import ast
from pglast.enums import ObjectType, RoleSpecType

from catalog import durable, rbac
from catalog.errors import (
    SqlError, DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_OBJECT, FEATURE_NOT_SUPPORTED, INVALID_CATALOG_NAME,
    INVALID_GRANT_OPERATION, INVALID_SCHEMA_NAME, OBJECT_IN_USE, RESERVED_NAME, SYNTAX_ERROR,
    UNDEFINED_OBJECT, WARNING,
)
from catalog.snapshot import DATABASE, SYSTEM_SCHEMAS, CatalogSnapshot, Role
from sqlfront import mzparse as mz
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session

_DOC = "https://materialize.com/docs/sql/create-role/#details"


def _reserved(name: str) -> None:
    """Raises 42939 for names Materialize keeps for itself (``mz_``, ``pg_``, PUBLIC)."""
    if rbac.is_reserved_role_name(name):
        raise SqlError(RESERVED_NAME, f'role name "{name}" is reserved')


def resolve_role(snap: CatalogSnapshot, name: str) -> Role:
    """The role named ``name``.

    Raises:
        SqlError 42704 ``unknown role 'name'`` (Materialize's wording)."""
    r = snap.role_by_name(name)
    if r is None:
        raise SqlError(UNDEFINED_OBJECT, f"unknown role '{name}'")
    return r


def role_attributes(options, base: Role) -> Role:
    """``base`` with CREATE/ALTER ROLE's options applied (Materialize's rules: LOGIN,
    SUPERUSER and PASSWORD as self-managed Materialize has them; the PostgreSQL attributes
    CREATEROLE, CREATEDB and CREATECLUSTER are system privileges there; no NOINHERIT).

    Raises:
        SqlError 0A000 ``CREATECLUSTER attribute is not supported`` (hint: system
        privileges) and ``non inherit roles not yet supported``; 42601 for an attribute
        given twice ("conflicting or redundant options")."""
    from dataclasses import replace

    from sqlfront.auth import scram_secret

    seen: set[str] = set()
    out = base
    for name, value in options:
        family = name.removeprefix("NO")  # NOLOGIN and LOGIN set one attribute
        if family in seen:
            raise SqlError(SYNTAX_ERROR, "conflicting or redundant options")
        seen.add(family)
        if family in ("CREATEROLE", "CREATEDB", "CREATECLUSTER"):
            raise SqlError(FEATURE_NOT_SUPPORTED,
                           f"{family} attribute is not supported, for more information consult the documentation at "
                           f"{_DOC}", hint="Use system privileges instead.")
        if name == "NOINHERIT":
            raise SqlError(FEATURE_NOT_SUPPORTED, "non inherit roles not yet supported")
        if name in ("LOGIN", "NOLOGIN"):
            out = replace(out, login=name == "LOGIN")
        elif name in ("SUPERUSER", "NOSUPERUSER"):
            out = replace(out, superuser=name == "SUPERUSER")
        elif name == "PASSWORD":
            out = replace(out, password=None if value is None else scram_secret(value))
    return out


def _require_superuser_for(snap: CatalogSnapshot, old: Role | None, new: Role) -> None:
    """Only a superuser makes, unmakes or changes a superuser (PostgreSQL's CREATE ROLE)."""
    if (new.superuser or (old is not None and old.superuser)) and not rbac.is_superuser(snap, rbac.current_role(snap)):
        raise SqlError(rbac.INSUFFICIENT_PRIVILEGE, "permission denied to alter superuser roles"
                       if old is not None else "permission denied to create superuser roles")


def create_role(s: Session, stmt: mz.CreateRole, sql: str, params) -> Result:
    """CREATE ROLE name [[WITH] option ...]. Roles are NOLOGIN unless told LOGIN (as in
    PostgreSQL); CREATEROLE on SYSTEM is needed (``sqlfront.rbac``).

    Raises:
        SqlError 42710 ``role 'x' already exists``; 42939 for a reserved name; the
        errors of :func:`role_attributes`."""
    _reserved(stmt.name)

    def build(snap: CatalogSnapshot, ids) -> list:
        if snap.role_by_name(stmt.name) is not None:
            raise SqlError(DUPLICATE_OBJECT, f"role '{stmt.name}' already exists")
        role = role_attributes(stmt.options, Role("", stmt.name))
        _require_superuser_for(snap, None, role)
        from dataclasses import replace

        return [durable.CreateRole(replace(role, id=ids.allocate("role")))]

    run(s, build)
    return Result("CREATE ROLE")


def alter_role(s: Session, stmt: mz.AlterRole, sql: str, params) -> Result:
    """ALTER ROLE name [[WITH] option ...] | RENAME TO new_name.

    Raises:
        SqlError 42704 unknown role; 42710 for a taken new name; 42501 to change a
        superuser without being one; :func:`role_attributes`' errors."""
    from dataclasses import replace

    if stmt.rename_to is not None:
        _reserved(stmt.rename_to)

    def build(snap: CatalogSnapshot, ids) -> list:
        old = resolve_role(snap, stmt.name)
        if old.id.startswith("s"):
            raise SqlError(rbac.INSUFFICIENT_PRIVILEGE, f"system role '{old.name}' cannot be modified")
        if stmt.rename_to is not None:
            if snap.role_by_name(stmt.rename_to) is not None:
                raise SqlError(DUPLICATE_OBJECT, f"role '{stmt.rename_to}' already exists")
            new = replace(old, name=stmt.rename_to)
        else:
            new = role_attributes(stmt.options, old)
        _require_superuser_for(snap, old, new)
        return [durable.UpdateRole(new)]

    run(s, build)
    return Result("ALTER ROLE")


def _user_objects(snap: CatalogSnapshot) -> list[rbac.ObjectRef]:
    """The objects a role can own, but temporary ones (they end with their session)."""
    temps = {sc.name for sc in snap.schemas.values() if sc.temp}
    out = [rbac.relation_ref(o) for objs in (snap.tables, snap.views, snap.materialized_views, snap.sequences,
                                             snap.indexes)
           for o in objs.values() if o.schema not in temps]
    out += [rbac.ObjectRef("SCHEMA", f"schema:{sc.id}", f"{DATABASE}.{sc.name}") for sc in snap.schemas.values()
            if not sc.temp]
    out += [rbac.cluster_ref(c) for c in snap.clusters.values()]
    return out


def drop_role(s: Session, stmt: ast.DropRoleStmt, sql: str, params) -> Result:
    """DROP ROLE [IF EXISTS] name [, ...]: its memberships and the privileges granted to
    it go with it.

    Raises:
        SqlError 42704 unknown role (skipped with IF EXISTS); 2BP01 while it owns
        objects (PostgreSQL's "cannot be dropped because some objects depend on it",
        listed in the detail); 55006 for the session's own roles; 42501 for a system role."""
    names = [r.rolename for r in stmt.roles]
    mine = {r for r in (rbac.session_roles(s.catalog) or ())}

    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        for name in names:
            r = snap.role_by_name(name)
            if r is None:
                if stmt.missing_ok:
                    continue
                raise SqlError(UNDEFINED_OBJECT, f"unknown role '{name}'")
            if r.id.startswith("s"):
                raise SqlError(rbac.INSUFFICIENT_PRIVILEGE, f"system role '{name}' cannot be modified")
            if r.id in mine:
                raise SqlError(OBJECT_IN_USE, "current role cannot be dropped")
            owned = [o for o in _user_objects(snap) if rbac.owner_of(snap, o) == r.id]
            if owned:
                raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST, f'role "{name}" cannot be dropped because some objects depend on it',
                               detail="\n".join(f"owner of {o.kind.lower()} {o.name}" for o in owned))
            ops.append(durable.DropRole(r.id))
        return ops

    run(s, build)
    return Result("DROP ROLE")


def grant_roles(s: Session, stmt: mz.GrantRoles, sql: str, params) -> Result:
    """GRANT role [, ...] TO member [, ...] / REVOKE ... FROM: members hold the role's
    privileges (always inherited, as Materialize's roles are). Granting a membership held
    already, or revoking one not held, does nothing.

    Raises:
        SqlError 42704 unknown role; 0LP01 for a grant that would make a cycle
        (PostgreSQL: ``role "a" is a member of role "b"``); 42939 for PUBLIC."""
    grantor = rbac.current_role(s.catalog) or rbac.MZ_SYSTEM.id

    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        for rname in stmt.roles:
            if rname == "PUBLIC":
                raise SqlError(RESERVED_NAME, 'role name "public" is reserved')
            role = resolve_role(snap, rname)
            for mname in stmt.members:
                if mname == "PUBLIC":
                    raise SqlError(FEATURE_NOT_SUPPORTED, "GRANT role TO PUBLIC is not supported")
                member = resolve_role(snap, mname)
                held = (role.id, member.id) in snap.role_members
                if stmt.revoke:
                    if held:
                        ops.append(durable.RevokeRole(role.id, member.id))
                    continue
                if member.id == role.id or member.id in rbac.memberships(snap, role.id):
                    raise SqlError(INVALID_GRANT_OPERATION, f'role "{member.name}" is a member of role "{role.name}"')
                if not held:
                    ops.append(durable.GrantRole(role.id, member.id, grantor))
        return ops

    run(s, build)
    return Result("REVOKE ROLE" if stmt.revoke else "GRANT ROLE")


def _split(parts: tuple[str, ...], n: int, what: str) -> tuple[str | None, ...]:
    """A name of up to ``n`` parts as ``n`` values, the leading ones None; a database part
    must name ``materialize``.

    Raises:
        SqlError 42601 for too many parts; 3D000 ``unknown database 'x'``."""
    if len(parts) > n:
        raise SqlError(SYNTAX_ERROR, f"improper qualified name (too many dotted names): {'.'.join(parts)}")
    full = (None,) * (n - len(parts)) + tuple(parts)
    if n > 1 and full[0] is not None and full[0] != DATABASE:
        raise SqlError(INVALID_CATALOG_NAME, f"unknown database '{full[0]}'")
    return full


def _schema_obj(snap: CatalogSnapshot, parts: tuple[str, ...]) -> rbac.ObjectRef:
    _, name = _split(parts, 2, "schema")
    if not snap.schema_exists(name):
        raise SqlError(INVALID_SCHEMA_NAME, f"unknown schema '{name}'")
    return rbac.schema_ref(snap, name)


def _targets(snap: CatalogSnapshot, stmt: mz.GrantPrivileges) -> list[rbac.ObjectRef]:
    """The objects GRANT/REVOKE names, as ObjectRefs.

    Raises:
        SqlError 42P01, 3F000, 3D000, 42704 for names that name nothing."""
    if stmt.kind == "SYSTEM":
        return [rbac.SYSTEM]
    out = []
    for parts in stmt.targets:
        if stmt.kind == "TABLE":
            _, schema, name = _split(parts, 3, "table")
            try:
                rel = snap.resolve_relation(schema, name)
            except SqlError:
                rel = snap.resolve_sequence(schema, name)
            out.append(rbac.relation_ref(rel))
        elif stmt.kind == "ALL TABLES":
            sc = _schema_obj(snap, parts)
            name = sc.name.split(".")[-1]
            out += [rbac.relation_ref(r) for objs in (snap.tables, snap.views, snap.materialized_views)
                    for r in objs.values() if r.schema == name]
        elif stmt.kind == "SCHEMA":
            out.append(_schema_obj(snap, parts))
        elif stmt.kind == "DATABASE":
            (name,) = _split(parts, 1, "database")
            if name != DATABASE:
                raise SqlError(INVALID_CATALOG_NAME, f"unknown database '{name}'")
            out.append(rbac.DATABASE_OBJ)
        elif stmt.kind == "CLUSTER":
            (name,) = _split(parts, 1, "cluster")
            out.append(rbac.cluster_ref(snap.resolve_cluster(name)))
    return out


def grant_privileges(s: Session, stmt: mz.GrantPrivileges, sql: str, params) -> Result:
    """GRANT/REVOKE privileges ON [TABLE] t | ALL TABLES IN SCHEMA s | SCHEMA s | DATABASE
    d | CLUSTER c | SYSTEM TO/FROM role | PUBLIC (Materialize's "GRANT PRIVILEGE"). The
    grantor recorded is the object's owner (as PostgreSQL records a superuser's grant);
    granting needs ownership of the object (system privileges: a superuser).
    ``ALL TABLES IN SCHEMA`` grants each object the privileges of its type among those named.

    Raises:
        SqlError 0LP01 ``invalid privilege types INSERT for VIEW``; 42704 unknown role;
        ``_targets``' errors; 42501 (``sqlfront.rbac.check_ops``)."""

    def build(snap: CatalogSnapshot, ids) -> list:
        grantees = [rbac.PUBLIC if g == "PUBLIC" else resolve_role(snap, g).id for g in stmt.grantees]
        objs = _targets(snap, stmt)
        acls: dict[str, tuple] = {}
        for obj in objs:
            if stmt.kind == "ALL TABLES" and stmt.privileges != ("ALL",):
                wanted = rbac.parse_privileges(list(stmt.privileges), "TABLE")
                letters = "".join(ch for ch in wanted if ch in rbac.full_privileges(obj.kind))
            else:
                letters = rbac.parse_privileges(list(stmt.privileges), obj.kind,
                                                None if obj.kind == "SYSTEM" else obj.name)
            acl = acls.get(obj.key, rbac.acl_of(snap, obj))
            owner = rbac.owner_of(snap, obj)
            for g in grantees:
                acl = rbac.revoke(acl, g, letters) if stmt.revoke else rbac.grant(acl, g, owner, letters)
            acls[obj.key] = acl
        return [durable.SetPrivileges(k, acl) for k, acl in acls.items()]

    run(s, build)
    return Result("REVOKE" if stmt.revoke else "GRANT")


def change_owner(s: Session, obj_of, new_owner: ast.RoleSpec | str) -> None:
    """Give the object ``obj_of(snapshot)`` (an ObjectRef, or None to do nothing) to
    role ``new_owner``: the old owner's grants in its ACL pass to the new one (as
    PostgreSQL's and Materialize's ALTER ... OWNER TO). Needs ownership of the object and
    membership in the new owner (``sqlfront.rbac.check_ops``)."""

    def build(snap: CatalogSnapshot, ids) -> list:
        obj = obj_of(snap)
        if obj is None:
            return []
        new = _role_spec(snap, new_owner).id
        old = rbac.owner_of(snap, obj)
        ops = [durable.SetOwner(obj.key, new)]
        if obj.key in snap.privileges:
            acl = tuple(type(a)(new if a.grantee == old else a.grantee, new if a.grantor == old else a.grantor,
                                a.privileges) for a in snap.privileges[obj.key])
            ops.append(durable.SetPrivileges(obj.key, acl))
        return ops

    run(s, build)


def _role_spec(snap: CatalogSnapshot, spec) -> Role:
    if isinstance(spec, str):
        return resolve_role(snap, spec)
    if spec.roletype in (RoleSpecType.ROLESPEC_CURRENT_USER, RoleSpecType.ROLESPEC_CURRENT_ROLE):
        return snap.role(rbac.current_role(snap))
    if spec.roletype == RoleSpecType.ROLESPEC_SESSION_USER:
        return snap.role(rbac.session_roles(snap)[0])
    if spec.roletype == RoleSpecType.ROLESPEC_PUBLIC:
        raise SqlError(RESERVED_NAME, 'role name "public" is reserved')
    return resolve_role(snap, spec.rolename)


def alter_cluster_owner(s: Session, stmt: mz.AlterOwner, sql: str, params) -> Result:
    """ALTER CLUSTER name OWNER TO role. Raises SqlError 42704 for an unknown cluster."""
    change_owner(s, lambda snap: rbac.cluster_ref(snap.resolve_cluster(stmt.name[0])), stmt.owner)
    return Result("ALTER CLUSTER")


def alter_relation_owner(s: Session, rv: ast.RangeVar, missing_ok: bool, spec) -> None:
    """ALTER TABLE | VIEW | SEQUENCE | INDEX name OWNER TO role."""

    def obj_of(snap: CatalogSnapshot):
        try:
            try:
                rel = snap.resolve_relation(rv.schemaname, rv.relname)
            except SqlError:
                try:
                    rel = snap.resolve_sequence(rv.schemaname, rv.relname)
                except SqlError:
                    schemas = (rv.schemaname,) if rv.schemaname else snap.search_path()
                    rel = next((i for sc in schemas if (i := snap.index_by_name(sc, rv.relname)) is not None), None)
                    if rel is None:
                        raise
        except SqlError:
            if missing_ok:
                return None
            raise
        ref = rbac.relation_ref(rel)
        if ref.builtin:
            raise SqlError(rbac.INSUFFICIENT_PRIVILEGE, f"system item '{rel.name}' cannot be modified")
        if ref.kind == "INDEX":
            # Materialize ("ALTER ... OWNER"): an index is owned by its relation's owner;
            # altering it succeeds with a warning and changes nothing
            _role_spec(snap, spec)  # 42704 for an unknown role all the same
            s.notices.append(SqlError(WARNING, f"cannot change owner of {ref.name}",
                                      hint="Change the ownership of the index's relation instead.",
                                      severity="NOTICE"))
            return None
        return ref

    change_owner(s, obj_of, spec)


def alter_owner(s: Session, stmt: ast.AlterOwnerStmt, sql: str, params) -> Result:
    """ALTER SCHEMA name OWNER TO role (other objects: 0A000)."""
    if stmt.objectType != ObjectType.OBJECT_SCHEMA:
        raise SqlError(FEATURE_NOT_SUPPORTED,
                       f"ALTER {stmt.objectType.name.removeprefix('OBJECT_')} ... OWNER TO is not supported")
    name = stmt.object.sval

    def obj_of(snap: CatalogSnapshot):
        if name in SYSTEM_SCHEMAS:
            raise SqlError(rbac.INSUFFICIENT_PRIVILEGE, f"system schema '{name}' cannot be modified")
        return _schema_obj(snap, (name,))

    change_owner(s, obj_of, stmt.newowner)
    return Result("ALTER SCHEMA")


def set_role(s: Session, value: str | None) -> None:
    """SET ROLE name | NONE, RESET ROLE (PostgreSQL's SET ROLE): privileges are checked
    against ``name`` from now on; the session's login role must be a member of it (or a
    superuser).

    Raises:
        SqlError 42704 unknown role; 42501 ``permission denied to set role "x"``."""
    snap = s.catalog
    if value is None or value.lower() == "none":
        s.current_role_id = s.session_role_id
    else:
        r = resolve_role(snap, value)
        if not (rbac.is_superuser(snap, s.session_role_id) or r.id in rbac.memberships(snap, s.session_role_id)):
            raise SqlError(rbac.INSUFFICIENT_PRIVILEGE, f'permission denied to set role "{value}"')
        s.current_role_id = r.id
    s.vars.values["is_superuser"] = "on" if rbac.is_superuser(snap, s.current_role_id) else "off"


def alter_default_privileges(s: Session, stmt: mz.AlterDefaultPrivileges, sql: str, params) -> Result:
    """ALTER DEFAULT PRIVILEGES (Materialize's): the privileges objects get when the
    target roles (FOR ROLE; the current role if none is named; FOR ALL ROLES: any role)
    make them, in the schemas named (IN SCHEMA) or anywhere. Needs membership in the
    target roles; FOR ALL ROLES, a superuser (``sqlfront.rbac.check_ops``).

    Raises:
        SqlError 42704 unknown role; 3F000 unknown schema; 0A000 IN SCHEMA with ON
        SCHEMAS, CLUSTERS or DATABASES; 0LP01 for privileges the type does not have."""
    g = stmt.grant
    kind = rbac.DEFAULT_PRIVILEGE_TYPES[g.kind]
    if stmt.schemas and kind != "TABLE":
        raise SqlError(FEATURE_NOT_SUPPORTED, f"cannot use IN SCHEMA clause when using GRANT/REVOKE ON {g.kind}")

    def build(snap: CatalogSnapshot, ids) -> list:
        if stmt.roles is None:
            targets = [rbac.PUBLIC]
        elif not stmt.roles:
            targets = [rbac.current_role(snap) or rbac.BOOTSTRAP_ROLE_ID]
        else:
            targets = [resolve_role(snap, r).id for r in stmt.roles]
        grantees = [rbac.PUBLIC if n == "PUBLIC" else resolve_role(snap, n).id for n in g.grantees]
        letters = rbac.parse_privileges(list(g.privileges), kind)
        schema_keys = [_schema_obj(snap, sc).key for sc in stmt.schemas] or [None]
        ops = []
        for target in targets:
            for sk in schema_keys:
                key = rbac.default_privileges_key(target, sk, kind)
                acl = snap.default_privileges.get(key, ())
                for grantee in grantees:
                    acl = rbac.revoke(acl, grantee, letters) if g.revoke else rbac.grant(acl, grantee, "", letters)
                ops.append(durable.SetDefaultPrivileges(key, acl))
        return ops

    run(s, build)
    return Result("ALTER DEFAULT PRIVILEGES")


def _require_privileges_of(snap: CatalogSnapshot, role_ids, action: str, may: str) -> None:
    """The current role must have the privileges of each of ``role_ids`` (be a member, or
    a superuser): PostgreSQL's rule for DROP OWNED and REASSIGN OWNED.

    Raises:
        SqlError 42501 ``permission denied to <action>``, detail ``Only roles with
        privileges of role "x" <may>``."""
    me = rbac.current_role(snap)
    if rbac.is_superuser(snap, me):
        return
    for r in role_ids:
        if r not in rbac.memberships(snap, me):
            raise SqlError(rbac.INSUFFICIENT_PRIVILEGE, f"permission denied to {action}",
                           detail=f'Only roles with privileges of role "{rbac.role_name(snap, r)}" {may}')


def reassign_owned(s: Session, stmt: ast.ReassignOwnedStmt, sql: str, params) -> Result:
    """REASSIGN OWNED BY old [, ...] TO new (Materialize's and PostgreSQL's): every
    object the old roles own passes to the new one, with the old owners' grants in its
    ACL. Needs membership in the old roles and in the new one (``check_ops``: ownership of
    each object, membership in the new owner).

    Raises:
        SqlError 42704 unknown role; 42501."""

    def build(snap: CatalogSnapshot, ids) -> list:
        old = [_role_spec(snap, r).id for r in stmt.roles]
        new = _role_spec(snap, stmt.newrole).id
        _require_privileges_of(snap, old, "reassign objects", "may reassign objects owned by it.")
        _require_privileges_of(snap, [new], "reassign objects", "may reassign objects to it.")
        ops = []
        for obj in _user_objects(snap):
            was = rbac.owner_of(snap, obj)
            if was not in old or was == new:
                continue
            ops.append(durable.SetOwner(obj.key, new))
            if obj.key in snap.privileges:
                ops.append(durable.SetPrivileges(obj.key, tuple(
                    type(a)(new if a.grantee == was else a.grantee, new if a.grantor == was else a.grantor,
                            a.privileges) for a in snap.privileges[obj.key])))
        return ops

    run(s, build)
    return Result("REASSIGN OWNED")


def drop_owned(s: Session, stmt: ast.DropOwnedStmt, sql: str, params) -> Result:
    """DROP OWNED BY role [, ...] [RESTRICT | CASCADE] (Materialize's and PostgreSQL's):
    drop every object the roles own (as the DROP statements of their kinds do: CASCADE
    drops what depends on them) and revoke every privilege granted to them. Needs
    membership in the roles (``check_ops``).

    Raises:
        SqlError 42704 unknown role; 2BP01 for objects others' objects depend on,
        without CASCADE; 42501."""
    from pglast.enums import DropBehavior

    from sqlfront.sequence.clusters import drop_clusters
    from sqlfront.sequence.indexes import drop_indexes
    from sqlfront.sequence.objects import _unique
    from sqlfront.sequence.schemas import drop_schemas
    from sqlfront.sequence.sequences import drop_sequences
    from sqlfront.sequence.tables import drop_tables
    from sqlfront.sequence.views import drop_views

    cascade = stmt.behavior == DropBehavior.DROP_CASCADE

    def build(snap: CatalogSnapshot, ids) -> list:
        targets = [_role_spec(snap, r).id for r in stmt.roles]
        # before the drops' own errors (PostgreSQL checks this first)
        _require_privileges_of(snap, targets, "drop objects", "may drop objects owned by it.")
        owned = [o for o in _user_objects(snap) if rbac.owner_of(snap, o) in targets]
        by_kind: dict[str, list] = {}
        for o in owned:
            by_kind.setdefault(o.kind, []).append(o)

        def names(kind):
            return [tuple(o.name.split(".")[1:]) for o in by_kind.get(kind, [])]

        # dropped together, so one owned object may depend on another: build with CASCADE,
        # then refuse (without CASCADE) if that reached an object of another owner
        ops: list = []
        if "SCHEMA" in by_kind:
            ops += drop_schemas([n[-1] for n in names("SCHEMA")], True, True)(snap, ids)
        if "CLUSTER" in by_kind:
            ops += drop_clusters(mz.DropClusters(tuple(o.name for o in by_kind["CLUSTER"]), True, True))(snap, ids)
        ops += drop_views(names("VIEW"), True, True)(snap, ids)
        ops += drop_views(names("MATERIALIZED VIEW"), True, True, materialized=True)(snap, ids)
        ops += drop_tables(names("TABLE"), True, True)(snap, ids)
        ops += drop_sequences(names("SEQUENCE"), True, True)(snap, ids)
        ops += drop_indexes(names("INDEX"), True)(snap, ids)
        ops = _unique(ops)
        if not cascade:
            mine = {o.key for o in owned}
            others = [rbac.ref_for_key(snap, f"item:{op.table_id if isinstance(op, durable.DropTable) else op.view_id}")
                      for op in ops if isinstance(op, (durable.DropTable, durable.DropView,
                                                       durable.DropMaterializedView))]
            others = [o for o in others if o is not None and o.key not in mine]
            if others:
                raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST, "cannot drop desired object(s) because other objects depend on them",
                               detail="\n".join(f"{o.kind.lower()} {o.name} depends on an object owned by the role"
                                                for o in others),
                               hint="Use DROP ... CASCADE to drop the dependent objects too.")
        return ops + [durable.RevokeAll(r) for r in targets]

    run(s, build)
    return Result("DROP OWNED")
