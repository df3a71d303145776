"""Which privileges a statement needs, checked with ``catalog.rbac.require`` (the rules).

Every statement passes two points, so that no statement path can skip or drift from
the checks:

- :func:`authorize_statement` — called by the session for every statement before its
  handler runs. Each statement type declares its check in :data:`STATEMENT_PRIVILEGES`
  (reads, writes, TRUNCATE; "on its catalog ops" for DDL; "session state only" for SET,
  transaction control, ...); a type that declares nothing is refused, and a test pins
  that the table covers the session's dispatch table.
- :func:`authorize_ddl` — wraps every catalog transaction a session submits
  (``sqlfront.sequence.catalog_txn.run``): the checks are derived from the catalog *ops* the
  statement produced (a created table needs CREATE on its schema, a dropped one
  ownership, ...), so every DDL statement, present or future, is checked the same way;
  an op kind :func:`check_ops` does not know is refused; new objects get the current
  role as their owner.

The sequence functions, whose sequence may be computed per row, are checked where they
run (:func:`check_sequence_use`, from ``sqlfront.sequence.sequences``).

Requirements and their order follow Materialize's privilege table ("Access control",
"Privileges"): USAGE on each object's schema, then the object's privilege (SELECT on what
a query reads; INSERT, UPDATE or DELETE on a write's target, whose UPDATE and DELETE also
read it), then USAGE on the cluster that runs the query. A view's own reads are checked
against the view's owner. Superusers pass every check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pglast import ast

from catalog import durable, rbac
from catalog.errors import INTERNAL_ERROR, SqlError
from catalog.snapshot import DATABASE, CatalogSnapshot, View
from sqlfront import mzparse as mz
from sqlfront import source_parse as sp

if TYPE_CHECKING:
    from sqlfront.session import Session

#: how deep views over views are followed (a cycle cannot exist; this bounds the work)
MAX_VIEW_DEPTH = 32


# -- reads and writes -------------------------------------------------------------------------

def relations_named(snap: CatalogSnapshot, node, skip=None) -> list:
    """The relations (tables, views, system tables, sequences) ``node`` names, in order,
    once each; names of its WITH queries and names that resolve to nothing (planning
    reports those) are left out, and so is the RangeVar ``skip`` (an INSERT's target)."""
    from planner.expr import ast_nodes

    nodes = list(ast_nodes(node))
    ctes = {n.ctename for n in nodes if isinstance(n, ast.CommonTableExpr)}
    out, seen = [], set()
    for n in nodes:
        if not isinstance(n, ast.RangeVar) or n is skip or (n.schemaname is None and n.relname in ctes):
            continue
        try:
            rel = snap.resolve_relation(n.schemaname, n.relname)
        except SqlError:
            try:
                rel = snap.resolve_sequence(n.schemaname, n.relname)
            except SqlError:
                continue
        if rel.id not in seen:
            seen.add(rel.id)
            out.append(rel)
    return out


def check_reads(snap: CatalogSnapshot, node, role: str | None, skip=None, depth: int = 0) -> bool:
    """Check that ``role`` may read every relation ``node`` names: USAGE on its schema,
    SELECT on it; a view's own reads are checked against the view's owner, its names
    resolved from its schema (``CatalogSnapshot.searching_from``). Returns
    whether a user relation is read (the query then runs on a cluster).

    Raises:
        SqlError 42501."""
    from sqlfront.parse import parse_one

    user_data = False
    for rel in relations_named(snap, node, skip):
        if rel.builtin:
            continue  # system tables: PUBLIC may read them (and they run in environmentd)
        user_data = True
        rbac.require(snap, rbac.schema_ref(snap, rel.schema), "U", role)
        rbac.require(snap, rbac.relation_ref(rel), "r", role)
        if isinstance(rel, View) and depth < MAX_VIEW_DEPTH:
            owner = rbac.owner_of(snap, rbac.relation_ref(rel))
            # its names as its planning resolves them: from its own schema
            check_reads(snap.searching_from(rel.schema), parse_one(rel.sql), owner, depth=depth + 1)
    return user_data


def _check_cluster(s: Session, snap: CatalogSnapshot, role: str | None) -> None:
    c = snap.cluster_by_name(s.vars.get("cluster"))
    if c is not None:  # an unknown cluster is the peek's error to report
        rbac.require(snap, rbac.cluster_ref(c), "U", role)


def _query_reads(s: Session, snap: CatalogSnapshot, node, role, skip=None) -> None:
    if check_reads(snap, node, role, skip):
        _check_cluster(s, snap, role)


def _check_write(snap: CatalogSnapshot, rv: ast.RangeVar, letter: str, role) -> None:
    try:
        rel = snap.resolve_relation(rv.schemaname, rv.relname)
    except SqlError:
        return  # planning reports it
    rbac.require(snap, rbac.schema_ref(snap, rel.schema), "U", role)
    rbac.require(snap, rbac.relation_ref(rel), letter, role)


def _query_stmt(s: Session, snap, stmt, role) -> None:
    """SELECT, DECLARE, EXPLAIN: read what they name."""
    _query_reads(s, snap, stmt, role)


def _select_with_shows(s: Session, snap, stmt, role) -> None:
    """A SELECT reading SHOWs: read what the query names (the SHOWs read the catalog)."""
    from sqlfront.parse import parse_one

    _query_reads(s, snap, parse_one(stmt.text(lambda show: "SELECT")), role)


def _create_table_as(s: Session, snap, stmt, role) -> None:
    """CREATE TABLE AS: read the query (the new table: its catalog ops)."""
    _query_reads(s, snap, stmt.query, role)


def _explain_plan(s: Session, snap, stmt, role) -> None:
    from sqlfront.parse import parse_one

    _query_reads(s, snap, parse_one(stmt.query), role)


def _subscribe(s: Session, snap, stmt, role) -> None:
    """SUBSCRIBE, DECLARE ... FOR SUBSCRIBE, COPY (SUBSCRIBE ...) TO: read the query."""
    from sqlfront.parse import parse_one

    if isinstance(stmt, (mz.DeclareSubscribe, mz.CopySubscribe)):
        stmt = parse_one(stmt.subscribe)
        if not isinstance(stmt, mz.Subscribe):
            return  # planning reports it
    _query_reads(s, snap, parse_one(stmt.query), role)


def _insert(s: Session, snap, stmt, role) -> None:
    _check_write(snap, stmt.relation, "a", role)
    _query_reads(s, snap, stmt, role, skip=stmt.relation)


def _update_delete(s: Session, snap, stmt, role) -> None:
    _check_write(snap, stmt.relation, "w" if isinstance(stmt, ast.UpdateStmt) else "d", role)
    _query_reads(s, snap, stmt, role)  # the target too: UPDATE and DELETE read it


def _copy(s: Session, snap, stmt, role) -> None:
    if stmt.query is not None:
        _query_reads(s, snap, stmt.query, role)
    elif stmt.is_from:
        _check_write(snap, stmt.relation, "a", role)
    else:
        _query_reads(s, snap, stmt.relation, role)


def _truncate(s: Session, snap, stmt, role) -> None:
    """TRUNCATE: DELETE on each table (PostgreSQL's TRUNCATE privilege; Materialize has
    none, and maps the statement to DELETE), USAGE on its schema, and USAGE on the
    cluster that writes the retractions. It reads nothing, so needs no SELECT."""
    for rv in stmt.relations:
        _check_write(snap, rv, "d", role)
    _check_cluster(s, snap, role)


def _alter_table(s: Session, snap, stmt, role) -> None:
    """ALTER TABLE, and RENAME COLUMN: ownership of the table, checked before the
    statement may copy the table's rows into a new shard (``sqlfront.sequence.alter.
    rewrite_table``); its catalog ops are checked again by :func:`check_ops`."""
    from pglast.enums import AlterTableType, ObjectType

    if isinstance(stmt, ast.RenameStmt):
        if stmt.renameType != ObjectType.OBJECT_COLUMN:
            return
    elif all(c.subtype == AlterTableType.AT_ChangeOwner for c in stmt.cmds):
        return
    try:
        rel = snap.resolve_relation(stmt.relation.schemaname, stmt.relation.relname)
    except SqlError:
        return  # planning reports it
    rbac.require_owner(snap, rbac.relation_ref(rel), role)


def _refresh(s: Session, snap, stmt, role) -> None:
    """REFRESH MATERIALIZED VIEW: ownership of the view (PostgreSQL's rule before 17's
    MAINTAIN privilege); an unknown name is the statement's error to report."""
    try:
        rel = snap.resolve_relation(stmt.relation.schemaname, stmt.relation.relname)
    except SqlError:
        return
    rbac.require_owner(snap, rbac.relation_ref(rel), role)


def _drop(s: Session, snap, stmt, role) -> None:
    """DROP: ownership of each object named, checked before what dropping it would find
    (its dependents), as PostgreSQL checks it while looking the name up; the catalog ops
    (what CASCADE adds too) are checked again by :func:`check_ops`."""
    from pglast.enums import ObjectType

    from sqlfront.sequence.objects import find_item

    for obj in stmt.objects:
        if stmt.removeType == ObjectType.OBJECT_SCHEMA:
            sc = snap.schema_by_name(snap.schema_name(obj.sval))
            ref = rbac.ref_for_key(snap, f"schema:{sc.id}") if sc is not None and not sc.temp else None
        else:
            parts = [p.sval for p in obj]
            item = find_item(snap, parts[-2] if len(parts) > 1 else None, parts[-1])
            ref = rbac.relation_ref(item) if item is not None else None
        if ref is not None:  # else the drop reports it
            rbac.require_owner(snap, ref, role)


def _on_catalog_ops(s: Session, snap, stmt, role) -> None:
    """DDL: nothing to check before it runs; :func:`check_ops` checks the catalog ops it
    submits (every one of them: ``sqlfront.sequence.catalog_txn.run``)."""


def _validate_connection(s: Session, snap, stmt, role) -> None:
    """VALIDATE CONNECTION: USAGE on the connection (Materialize's privilege table)."""
    from sqlfront.secrets import resolve_connection

    rbac.require(snap, rbac.relation_ref(resolve_connection(snap, stmt.schema, stmt.name)), "U", role)


def _session_only(s: Session, snap, stmt, role) -> None:
    """Statements that touch no catalog object: session state (SET, SHOW of a variable,
    transaction control, cursors already declared, prepared statements: a prepared
    statement is checked when EXECUTE runs it, a cursor's query when DECLARE does) and
    the SHOW statements over the system catalog, which PUBLIC may read. SET ROLE checks
    membership itself (``sqlfront.sequence.roles.set_role``)."""


#: statement type -> the check of the privileges it needs before it runs, as
#: ``check(session, snapshot, stmt, role)`` raising SqlError 42501. Every type of
#: ``sqlfront.session.HANDLERS`` is here (a test pins it); :func:`authorize_statement`
#: refuses a type that is not, so a new statement cannot skip its check.
STATEMENT_PRIVILEGES: dict[type, Callable] = {
    ast.SelectStmt: _query_stmt,
    mz.SelectWithShows: _select_with_shows,
    ast.DeclareCursorStmt: _query_stmt,
    ast.ExplainStmt: _query_stmt,
    mz.ExplainPlan: _explain_plan,
    ast.CreateTableAsStmt: _create_table_as,
    mz.Subscribe: _subscribe,
    mz.DeclareSubscribe: _subscribe,
    mz.CopySubscribe: _subscribe,
    ast.InsertStmt: _insert,
    ast.UpdateStmt: _update_delete,
    ast.DeleteStmt: _update_delete,
    ast.CopyStmt: _copy,
    ast.TruncateStmt: _truncate,
    ast.AlterTableStmt: _alter_table,
    ast.RenameStmt: _alter_table,
    ast.DropStmt: _drop,
    ast.RefreshMatViewStmt: _refresh,
    **dict.fromkeys((
        mz.CreateCluster, mz.CreateClusterReplica, mz.DropClusters, mz.DropClusterReplicas, mz.AlterClusterRename, mz.AlterClusterReplicaRename,
        mz.AlterClusterSet, mz.AlterClusterSwap,
        ast.CreateStmt, ast.ViewStmt, mz.CreateViewIfNotExists, ast.IndexStmt, mz.CreateIndex, mz.CreateMaterializedView,
        ast.CreateSeqStmt, ast.CreateSchemaStmt, ast.CommentStmt, ast.AlterSeqStmt, mz.CreateRole, mz.AlterRole, ast.DropRoleStmt, mz.GrantRoles, mz.GrantPrivileges,
        mz.AlterOwner, ast.AlterOwnerStmt, mz.AlterDefaultPrivileges, ast.ReassignOwnedStmt, ast.DropOwnedStmt,
        sp.CreateSecret, sp.AlterSecret, sp.CreateConnection, sp.DropItems, sp.CreateSource,
    ), _on_catalog_ops),
    sp.ValidateConnection: _validate_connection,
    **dict.fromkeys((
        mz.ShowClusters, mz.ShowClusterReplicas, mz.ShowObjects, mz.ShowIndexes, mz.ShowMaterializedViews,
        mz.ShowCreate, ast.VariableSetStmt, ast.VariableShowStmt, ast.TransactionStmt, ast.DeallocateStmt,
        ast.PrepareStmt, ast.ExecuteStmt, ast.DiscardStmt, ast.FetchStmt, mz.FetchWith, ast.ClosePortalStmt,
    ), _session_only),
}


def authorize_statement(s: Session, stmt) -> None:
    """Check the privileges ``stmt`` needs before it runs, as the session's current role
    (its entry in :data:`STATEMENT_PRIVILEGES`; DDL's are checked on its catalog ops by
    :func:`check_ops`).

    Raises:
        SqlError 42501 ``permission denied for KIND "name"``; XX000 for a statement type
        that declares no privileges (a programming error: it must not run unchecked)."""
    check = STATEMENT_PRIVILEGES.get(type(stmt))
    if check is None:
        raise SqlError(INTERNAL_ERROR, f"{type(stmt).__name__} declares no privileges: refused")
    snap = s.catalog
    role = rbac.current_role(snap)
    if not rbac.is_superuser(snap, role):
        check(s, snap, stmt, role)


def check_sequence_use(snap: CatalogSnapshot, q, any_of: str, role: str | None) -> None:
    """The sequence functions' rule (PostgreSQL 9.17, "Sequence Manipulation
    Functions"): ``role`` must hold one of ``any_of`` on sequence ``q`` (nextval: USAGE
    or UPDATE, ``"Uw"``; currval and lastval: USAGE or SELECT, ``"Ur"``; setval: UPDATE,
    ``"w"``), and USAGE on its schema.

    Raises:
        SqlError 42501 ``permission denied for SEQUENCE "name"``."""
    if rbac.is_superuser(snap, role):
        return
    rbac.require(snap, rbac.schema_ref(snap, q.schema), "U", role)
    obj = rbac.relation_ref(q)
    if not any(rbac.has_privilege(snap, role, obj, ch) for ch in any_of):
        raise rbac.denied(obj)


# -- DDL --------------------------------------------------------------------------------------

class _OpCheck:
    """What :func:`check_ops` carries from one op to the next: the snapshot and role, the
    temporary schemas (those created by earlier ops too), the keys of the objects the ops
    create (their creator may alter them in the same transaction) and the ops to append."""

    def __init__(self, snap: CatalogSnapshot, role: str):
        self.snap = snap
        self.role = role
        self.superuser = rbac.is_superuser(snap, role)
        self.temps = {sc.name for sc in snap.schemas.values() if sc.temp}
        self.created: set[str] = set()
        self.extra: list = []

    def require(self, obj: rbac.ObjectRef, letter: str) -> None:
        rbac.require(self.snap, obj, letter, self.role)

    def require_owner_of(self, key: str) -> None:
        """Ownership of the object stored under ``key``, unless these ops create it (an
        object that does not exist is the op's error to report)."""
        if key in self.created:
            return
        obj = rbac.ref_for_key(self.snap, key)
        if obj is not None:
            rbac.require_owner(self.snap, obj, self.role)

    def require_member_of(self, role_id: str, prefix: str = "") -> None:
        """Membership in ``role_id``, refused as ``{prefix}must be a member of role "name"``."""
        if not self.superuser and role_id not in rbac.memberships(self.snap, self.role):
            raise SqlError(rbac.INSUFFICIENT_PRIVILEGE,
                           f'{prefix}must be a member of role "{rbac.role_name(self.snap, role_id)}"')

    def owned(self, obj: rbac.ObjectRef, schema_key: str | None = None, always_acl: bool = False) -> None:
        """The new object is the role's, with the default privileges that apply to it."""
        self.created.add(obj.key)
        self.extra.append(durable.SetOwner(obj.key, self.role))
        acl = rbac.initial_acl(self.snap, obj, self.role, schema_key)
        if always_acl or len(acl) > 1:
            self.extra.append(durable.SetPrivileges(obj.key, acl))

    def new_item(self, obj) -> None:
        """A new schema item: CREATE on its schema (none in a temporary schema)."""
        if obj.schema not in self.temps and not self.superuser:
            self.require(rbac.schema_ref(self.snap, obj.schema), "C")
        self.owned(rbac.relation_ref(obj), rbac.schema_ref(self.snap, obj.schema).key)

    def require_cluster_create(self, cluster_id: str | None) -> None:
        """CREATE on the cluster ``cluster_id`` names, if it names one."""
        c = self.snap.clusters.get(cluster_id) if cluster_id else None
        if c is not None:
            self.require(rbac.cluster_ref(c), "C")


# -- one check per op class, in _OP_PRIVILEGES --

def _create_schema(c: _OpCheck, op: durable.CreateSchema) -> None:
    c.created.add(f"schema:{op.schema.id}")
    c.created.add(f"item:{op.schema.id}")
    if op.schema.temp:
        c.temps.add(op.schema.name)
        return
    c.require(rbac.DATABASE_OBJ, "C")
    c.owned(rbac.ObjectRef("SCHEMA", f"schema:{op.schema.id}", f"{DATABASE}.{op.schema.name}"))


def _create_table(c: _OpCheck, op: durable.CreateTable) -> None:
    c.new_item(op.table)
    # a source: CREATE on the cluster that runs it (Materialize)
    c.require_cluster_create(getattr(op.table, "cluster_id", "") or "")


def _create_view(c: _OpCheck, op: durable.CreateView) -> None:
    c.new_item(op.view)


def _create_sequence(c: _OpCheck, op: durable.CreateSequence) -> None:
    c.new_item(op.sequence)


def _create_secret(c: _OpCheck, op: durable.CreateSecret) -> None:
    c.new_item(op.secret)


def _create_connection(c: _OpCheck, op: durable.CreateConnection) -> None:
    c.new_item(op.connection)
    for _, value, secret in op.connection.options:  # Materialize: USAGE on each secret it uses
        if secret and value in c.snap.secrets and not c.superuser:
            c.require(rbac.relation_ref(c.snap.secrets[value]), "U")


def _create_index(c: _OpCheck, op: durable.CreateIndex) -> None:
    c.new_item(op.index)
    c.require_cluster_create(op.index.cluster_id)


def _create_materialized_view(c: _OpCheck, op: durable.CreateMaterializedView) -> None:
    # Materialize: CREATE on the schema and on the cluster that maintains it
    c.new_item(op.view)
    c.require_cluster_create(op.view.cluster_id)


def _create_cluster(c: _OpCheck, op: durable.CreateCluster) -> None:
    c.require(rbac.SYSTEM, "N")
    # always an ACL of its own: a cluster without one is one made before roles
    # existed, which PUBLIC may use (catalog.rbac.default_acl)
    c.owned(rbac.cluster_ref(op.cluster), always_acl=True)


def _create_replica(c: _OpCheck, op: durable.CreateReplica) -> None:
    c.require_owner_of(f"cluster:{op.replica.cluster_id}")


def _drop_replica(c: _OpCheck, op: durable.DropReplica) -> None:
    r = c.snap.replicas.get(op.replica_id)
    if r is not None:
        c.require_owner_of(f"cluster:{r.cluster_id}")


def _update_replica(c: _OpCheck, op: durable.UpdateReplica) -> None:
    c.require_owner_of(f"cluster:{op.replica.cluster_id}")


def _cluster_by_id(c: _OpCheck, op: durable.DropCluster | durable.RenameCluster) -> None:
    c.require_owner_of(f"cluster:{op.cluster_id}")


def _update_cluster(c: _OpCheck, op: durable.UpdateCluster) -> None:
    c.require_owner_of(f"cluster:{op.cluster.id}")


def _owner_of_item(item_id: Callable[[object], str]) -> Callable[[_OpCheck, object], None]:
    """The check of an op that alters or drops the schema item whose id ``item_id(op)`` is:
    ownership of that item."""

    def check(c: _OpCheck, op) -> None:
        c.require_owner_of(f"item:{item_id(op)}")

    return check


def _update_item(c: _OpCheck, op: durable.UpdateTable | durable.UpdateSequence) -> None:
    obj = op.table if type(op) is durable.UpdateTable else op.sequence
    if obj.schema not in c.temps:
        c.require_owner_of(f"item:{obj.id}")


def _schema_by_id(c: _OpCheck, op: durable.DropSchema | durable.RenameSchema) -> None:
    sc = c.snap.schemas.get(op.schema_id)
    if sc is not None and not sc.temp:
        c.require_owner_of(f"schema:{op.schema_id}")


def _role_change(c: _OpCheck, op) -> None:
    """CREATE ROLE, ALTER ROLE, DROP ROLE, GRANT and REVOKE of a role: CREATEROLE."""
    c.require(rbac.SYSTEM, "R")


def _owner_of_object(c: _OpCheck, op: durable.SetPrivileges) -> None:
    c.require_owner_of(op.object)


def _revoke_all(c: _OpCheck, op: durable.RevokeAll) -> None:
    c.require_member_of(op.role_id, "permission denied to drop objects: ")


def _set_default_privileges(c: _OpCheck, op: durable.SetDefaultPrivileges) -> None:
    target, _, _ = rbac.split_default_privileges_key(op.key)
    if target == rbac.PUBLIC and not c.superuser:
        raise SqlError(rbac.INSUFFICIENT_PRIVILEGE, "permission denied for SYSTEM")
    c.require_member_of(target)


def _set_owner(c: _OpCheck, op: durable.SetOwner) -> None:
    c.require_owner_of(op.object)
    # PostgreSQL's rule (ALTER TABLE ... OWNER TO): one may give an object only to a role
    # one is a member of
    c.require_member_of(op.role_id)


def _refused(c: _OpCheck, op) -> None:
    """An op the system submits itself (outside :func:`authorize_ddl`), which no role may."""
    raise SqlError(INTERNAL_ERROR, f"{type(op).__name__} declares no privileges: refused")


#: op class -> ``check(op_check, op)``: what a role needs to apply the op (Materialize's
#: privilege table), raising SqlError 42501. Every class of ``catalog.durable.Op`` is here
#: (tests/test_catalog_op_dispatch.py checks it), an op no role may submit as ``_refused``.
_OP_PRIVILEGES: dict[type, Callable] = {
    durable.CreateSchema: _create_schema,
    durable.CreateTable: _create_table,
    durable.CreateView: _create_view,
    durable.CreateSequence: _create_sequence,
    durable.CreateSecret: _create_secret,
    durable.CreateConnection: _create_connection,
    durable.CreateIndex: _create_index,
    durable.CreateMaterializedView: _create_materialized_view,
    durable.CreateCluster: _create_cluster,
    durable.CreateReplica: _create_replica,
    durable.DropReplica: _drop_replica,
    durable.UpdateReplica: _update_replica,
    durable.DropCluster: _cluster_by_id,
    durable.RenameCluster: _cluster_by_id,
    durable.UpdateCluster: _update_cluster,
    durable.UpdateSecret: _owner_of_item(lambda op: op.secret.id),
    durable.DropSecret: _owner_of_item(lambda op: op.secret_id),
    durable.DropConnection: _owner_of_item(lambda op: op.connection_id),
    durable.UpdateMaterializedView: _owner_of_item(lambda op: op.view.id),
    durable.DropMaterializedView: _owner_of_item(lambda op: op.view_id),
    durable.DropTable: _owner_of_item(lambda op: op.table_id),
    durable.DropView: _owner_of_item(lambda op: op.view_id),
    durable.DropIndex: _owner_of_item(lambda op: op.index_id),
    durable.DropSequence: _owner_of_item(lambda op: op.sequence_id),
    durable.SetComment: _owner_of_item(lambda op: op.object_id),
    durable.UpdateTable: _update_item,
    durable.UpdateSequence: _update_item,
    durable.DropSchema: _schema_by_id,
    durable.RenameSchema: _schema_by_id,
    **dict.fromkeys((durable.CreateRole, durable.UpdateRole, durable.DropRole, durable.GrantRole,
                     durable.RevokeRole), _role_change),
    durable.SetPrivileges: _owner_of_object,
    durable.RevokeAll: _revoke_all,
    durable.SetDefaultPrivileges: _set_default_privileges,
    durable.SetOwner: _set_owner,
    durable.FinalizeShards: _refused,  # sqlfront.finalize submits it, never a statement
}


def check_ops(snap: CatalogSnapshot, ops: list, role: str | None) -> list:
    """Check that ``role`` may apply catalog ``ops`` to ``snap``, and return the ops to
    append: the owner of each object they create.

    Requirements (Materialize's privilege table; each op class's in :data:`_OP_PRIVILEGES`):
    CREATE on the schema for a new table, view, sequence or index (and CREATE on the
    index's cluster); CREATE on the database for a schema; CREATECLUSTER on SYSTEM for a
    cluster; CREATEROLE on SYSTEM for role changes; ownership to alter, drop, comment on or
    grant on an object (replicas: their cluster's owner). Objects in a temporary schema
    need nothing.

    Raises:
        SqlError 42501; XX000 for an op of a class that declares no privileges (a new kind
        of op must say what it needs before any role may submit it)."""
    if role is None:
        return []
    c = _OpCheck(snap, role)
    for op in ops:
        _OP_PRIVILEGES.get(type(op), _refused)(c, op)
    return c.extra


def authorize_ddl(build):
    """Wrap a catalog transaction's ``build(snapshot, ids) -> ops`` so that its ops are
    checked (:func:`check_ops`) as the submitting statement's current role, and the
    objects it creates are owned by that role."""

    def checked(snap: CatalogSnapshot, ids) -> list:
        ops = build(snap, ids)
        return ops + check_ops(snap, ops, rbac.current_role(snap))

    return checked
