"""SQL sequences (PostgreSQL's; Materialize has none): CREATE, ALTER and DROP SEQUENCE,
both halves of each (``sequence_<statement>`` runs the catalog transaction
``<statement>`` builds), and sequences as one session sees them: ``nextval``/``setval`` through the durable
value store (``catalog.sequences.SequenceStore``), and the session's own ``currval``
and ``lastval`` (PostgreSQL 9.17: "currval: Return the value most recently obtained by
nextval for this sequence in the current session").

``SessionSequences`` is what ``planner.functions.sequence`` calls, as the ``sequences``
of the session each statement's evaluations are given (``planner.context.PlanContext``).
It holds no catalog state: each call looks the sequence up, by
OID, in the latest catalog snapshot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataclasses import replace

from catalog import durable
from catalog.errors import (
    SqlError, DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_TABLE, INTERNAL_ERROR, INVALID_PARAMETER_VALUE,
    OBJECT_NOT_IN_PREREQUISITE_STATE, UNDEFINED_COLUMN, UNDEFINED_TABLE, WRONG_OBJECT_TYPE,
)
from catalog.pg_catalog import object_oid
from catalog.snapshot import CatalogSnapshot, MaterializedView, Sequence, Table
from planner.ddl import sequence_options
from sqlfront.rbac import check_sequence_use
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.result import Result
from sqlfront.sequence.objects import _creation_schema, _lookup, lookup_each

if TYPE_CHECKING:
    from pglast import ast

    from sqlfront.session import Session


class SessionSequences:
    """Sequence functions for session ``s``."""

    def __init__(self, s: Session):
        self._s = s
        #: sequence id -> the value nextval last gave this session
        self._current: dict[str, int] = {}
        self._last: int | None = None
        #: the sequence ``_last`` came from
        self._last_id: str | None = None

    def _sequence(self, oid: int, any_of: str | None = None) -> Sequence:
        """The sequence of OID ``oid``, which the session's current role must hold one of
        the privileges ``any_of`` on (``sqlfront.rbac.check_sequence_use``; None: no check).

        Raises:
            SqlError 42P01 for no such sequence (another session's temporary one
            included); 42501."""
        snap = self._s.catalog
        for q in snap.sequences.values():
            if object_oid(q.id) == oid and snap.visible_schema(q.schema):
                if any_of is not None:
                    check_sequence_use(snap, q, any_of, self._s.current_role_id)
                return q
        raise SqlError(UNDEFINED_TABLE, f"could not open relation with OID {oid}")

    def nextval(self, oid: int) -> int:
        """Raises SqlError 2200H at a bound of a sequence without CYCLE; 42P01; 42501
        without USAGE or UPDATE on it."""
        return self.nextval_many(oid, 1)[0]

    def nextval_many(self, oid: int, n: int) -> list[int]:
        """``n`` nextvals at once (a serial column of many rows): one durable step."""
        q = self._sequence(oid, "Uw")
        values = self._s.env.sequences.nextval(q, n)
        self._current[q.id] = self._last = values[-1]
        self._last_id = q.id
        return values

    def currval(self, oid: int) -> int:
        """Raises SqlError 55000 before this session's first nextval of the sequence;
        42501 without USAGE or SELECT on it."""
        q = self._sequence(oid, "Ur")
        if q.id not in self._current:
            raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, f'currval of sequence "{q.name}" is not yet defined in this session')
        return self._current[q.id]

    def lastval(self) -> int:
        """Raises SqlError 55000 before this session's first nextval; 42501 without
        USAGE or SELECT on the sequence it came from (PostgreSQL's rule)."""
        if self._last is None:
            raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, "lastval is not yet defined in this session")
        snap = self._s.catalog
        q = snap.sequences.get(self._last_id)
        if q is None:
            raise SqlError(OBJECT_NOT_IN_PREREQUISITE_STATE, "lastval is not yet defined in this session")
        check_sequence_use(snap, q, "Ur", self._s.current_role_id)
        return self._last

    def setval(self, oid: int, value: int, is_called: bool) -> int:
        """Raises SqlError 22003 outside the sequence's bounds; 42501 without UPDATE on
        it. With ``is_called`` the value also becomes this session's currval
        (PostgreSQL's do_setval)."""
        q = self._sequence(oid, "w")
        self._s.env.sequences.setval(q, value, is_called)
        if is_called:
            self._current[q.id] = self._last = value
            self._last_id = q.id
        return value

    def state(self, oid: int) -> tuple[int, bool]:
        """``(last_value, is_called)`` of the sequence now (``SELECT * FROM seq``)."""
        return self._s.env.sequences.state(self._sequence(oid))

    def _other_relation(self, oid: int) -> tuple[str, str] | None:
        """(name, kind in the plural) of the relation of OID ``oid`` that is not a sequence."""
        snap = self._s.catalog
        for objects, what in ((snap.tables, "tables"), (snap.builtins, "tables"), (snap.views, "views"),
                              (snap.materialized_views, "materialized views")):
            rel = next((o for o in objects.values() if object_oid(o.id) == oid), None)
            if rel is not None:
                return rel.name, what
        return None

    def last_value(self, oid: int) -> int | None:
        """PostgreSQL's ``pg_sequence_last_value``: the sequence's last value, NULL before
        its first nextval (or after setval(..., false)).

        Raises:
            SqlError 42809 for a relation that is not a sequence; 42P01 for an OID that
            names no relation; 42501 without USAGE or SELECT on it (PostgreSQL's rule)."""
        other = self._other_relation(oid)
        if other is not None:
            raise SqlError(WRONG_OBJECT_TYPE, f'cannot open relation "{other[0]}"',
                           detail=f"This operation is not supported for {other[1]}.")
        last, called = self._s.env.sequences.state(self._sequence(oid, "Ur"))
        return last if called else None

    def parameters(self, oid: int) -> tuple:
        """PostgreSQL's ``pg_sequence_parameters``: (start, minimum, maximum, increment,
        cycle, cache, data type OID).

        Raises:
            SqlError XX000 for a relation that is not a sequence (PostgreSQL's "cache
            lookup failed"); 42P01 for an OID that names no relation; 42501 without
            SELECT, UPDATE or USAGE on it."""
        from catalog.types import SqlType

        if self._other_relation(oid) is not None:
            raise SqlError(INTERNAL_ERROR, f"cache lookup failed for sequence {oid}")
        q = self._sequence(oid, "Urw")
        return q.start, q.minvalue, q.maxvalue, q.increment, q.cycle, q.cache, SqlType(q.type).oid

    def data(self, oid: int) -> tuple[int | None, bool | None]:
        """PostgreSQL's ``pg_get_sequence_data``: (last value, is_called); (NULL, NULL) for
        an OID that names no sequence or one the current role may not SELECT from."""
        try:
            return self._s.env.sequences.state(self._sequence(oid, "r"))
        except SqlError:
            return None, None

    def discard(self) -> None:
        """Forget currval/lastval (``DISCARD SEQUENCES``, ``DISCARD ALL``)."""
        self._current.clear()
        self._last = None


# -- CREATE, ALTER and DROP SEQUENCE --------------------------------------------

def create_sequence(schema: str | None, name: str, options: dict, if_not_exists: bool, temp: bool = False):
    """CREATE SEQUENCE (PostgreSQL's; Materialize has no sequences). ``options`` come
    from ``planner.ddl.sequence_options``.

    Raises (from ``build``): 42P07 for a taken name; 42P01/42703 for an OWNED BY
    column that does not exist; 3F000 for an unknown schema."""
    def build(snap: CatalogSnapshot, ids) -> list:
        s, ops = _creation_schema(snap, ids, schema, temp)
        if snap.name_taken(s, name):
            if if_not_exists:
                return []
            raise SqlError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        opts = {k: v for k, v in options.items() if k not in ("owned_by", "restart")}
        owned = _owned_by(snap, options.get("owned_by"))
        return ops + [durable.CreateSequence(Sequence(ids.allocate("item"), s, name, **opts, owned_by=owned))]

    return build


def _owned_by(snap: CatalogSnapshot, names) -> tuple[str, str] | None:
    """``(table id, column)`` of ``OWNED BY [schema.]table.column``; None for NONE."""
    if not names:
        return None
    if len(names) < 2:
        raise SqlError(INVALID_PARAMETER_VALUE, "invalid OWNED BY option",
                       hint="Specify OWNED BY table.column or OWNED BY NONE.")
    rel = snap.resolve_relation(names[-3] if len(names) > 2 else None, names[-2])
    if not isinstance(rel, Table) or isinstance(rel, MaterializedView):
        raise SqlError(WRONG_OBJECT_TYPE, f'sequence cannot be owned by relation "{rel.name}"')
    if names[-1] not in [c.name for c in rel.columns]:
        raise SqlError(UNDEFINED_COLUMN, f'column "{names[-1]}" of relation "{rel.name}" does not exist')
    return rel.id, names[-1]


def alter_sequence(schema: str | None, name: str, options, if_exists: bool):
    """ALTER SEQUENCE: changes the definition. Returns ``(build, restart)``; once
    ``build`` has committed, ``restart`` holds the ``(sequence, value)`` a RESTART asks
    for, which the caller sets in the value store (the value is data, not catalog).

    Raises (from ``build``): 42P01 for an unknown sequence (nothing with IF EXISTS);
    ``planner.ddl.sequence_options``' errors."""
    restart: list = []

    def build(snap: CatalogSnapshot, ids) -> list:
        restart.clear()
        try:
            q = snap.resolve_sequence(schema, name)
        except SqlError:
            if if_exists:
                return []
            raise
        cur = {f: getattr(q, f) for f in ("type", "increment", "minvalue", "maxvalue", "start", "cache", "cycle")}
        opts = sequence_options(options, q.type, cur)
        value = opts.pop("restart", None)
        owned = q.owned_by
        if "owned_by" in opts:
            owned = _owned_by(snap, opts.pop("owned_by"))
        new = replace(q, **opts, owned_by=owned)
        if value is not None:
            restart.append((new, value))
        # even when only RESTART changes (a value, not the definition): the op is what
        # ownership is checked on (sqlfront.rbac.check_ops)
        return [durable.UpdateSequence(new)]

    return build, restart


def drop_sequences(names: list[tuple[str | None, str]], if_exists: bool, cascade: bool = False):
    """DROP SEQUENCE. A sequence a column's default uses needs CASCADE, which removes
    those defaults (PostgreSQL: 2BP01 "cannot drop sequence s because other objects
    depend on it")."""
    def build(snap: CatalogSnapshot, ids) -> list:
        ops = []
        def missing(schema, name):
            if _lookup(snap, schema, name, snap.relation_by_name) is not None:
                return SqlError(WRONG_OBJECT_TYPE, f'"{name}" is not a sequence',
                                hint="Use DROP TABLE to remove a table.")
            return SqlError(UNDEFINED_TABLE, f'sequence "{name}" does not exist')

        dropped = [q for _, q in lookup_each(snap, names, if_exists, snap.sequence_by_name, missing)]
        tables: dict[str, Table] = {}
        for q in dropped:
            for t in snap.tables.values():
                t = tables.get(t.id, t)
                users = [c for c in t.columns if c.default is not None and _uses_sequence(c.default, q)]
                if not users:
                    continue
                if not cascade:
                    raise SqlError(DEPENDENT_OBJECTS_STILL_EXIST,
                                   f"cannot drop sequence {q.name} because other objects depend on it",
                                   detail=f"default value for column {users[0].name} of table {t.name} depends on "
                                          f"sequence {q.name}",
                                   hint="Use DROP ... CASCADE to drop the dependent objects too.")
                tables[t.id] = replace(t, columns=tuple(
                    replace(c, default=None, identity=None) if c in users else c for c in t.columns))
        ops += [durable.UpdateTable(t) for t in tables.values()]
        ops += [durable.DropSequence(q.id) for q in dropped]
        return ops

    return build


def _uses_sequence(default: str, q: Sequence) -> bool:
    """True if DEFAULT text ``default`` calls a sequence function on ``q``."""
    import pglast
    from planner.expr import ast_nodes
    from pglast import ast

    node = pglast.parse_sql(f"SELECT {default}")[0].stmt
    for n in ast_nodes(node):
        if isinstance(n, ast.FuncCall) and n.funcname[-1].sval in ("nextval", "currval", "setval") and n.args:
            a = n.args[0]
            while isinstance(a, ast.TypeCast):
                a = a.arg
            if isinstance(a, ast.A_Const) and isinstance(a.val, ast.String):
                parts = a.val.sval.split(".")
                if parts[-1].strip('"') == q.name and (len(parts) == 1 or parts[-2].strip('"') == q.schema):
                    return True
    return False


def sequence_create_sequence(s: Session, stmt: ast.CreateSeqStmt, sql: str, params) -> Result:
    """CREATE [TEMP] SEQUENCE [IF NOT EXISTS] name [options] (PostgreSQL's; Materialize
    has no sequences); a temporary one goes into the session's temporary schema.
    Raises ``planner.ddl.sequence_options``' errors."""
    rv = stmt.sequence
    opts = sequence_options(stmt.options or ())
    run(s, create_sequence(rv.schemaname, rv.relname, opts, bool(stmt.if_not_exists), rv.relpersistence == "t"))
    return Result("CREATE SEQUENCE")


def sequence_alter_sequence(s: Session, stmt: ast.AlterSeqStmt, sql: str, params) -> Result:
    """ALTER SEQUENCE [IF EXISTS] name options: INCREMENT, MINVALUE, MAXVALUE, START,
    RESTART [WITH], CACHE, [NO] CYCLE, OWNED BY."""
    rv = stmt.sequence
    txn, restart = alter_sequence(rv.schemaname, rv.relname, stmt.options or (), bool(stmt.missing_ok))
    run(s, txn)
    for q, value in restart:
        s.env.sequences.setval(q, value, False)
    return Result("ALTER SEQUENCE")
