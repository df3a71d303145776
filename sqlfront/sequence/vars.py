"""Session variables: SET, RESET, SET ... TO DEFAULT, SHOW var, SHOW ALL. The variables
themselves (names, defaults, validation) are ``sqlfront.vars``'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pglast import ast
from pglast.enums import VariableSetKind

from catalog.errors import SqlError, SYNTAX_ERROR
from catalog.types import TEXT
from sqlfront.sequence.result import Result
from sqlfront.vars import display_name

if TYPE_CHECKING:
    from sqlfront.session import Session


def set_var(s: Session, stmt: ast.VariableSetStmt, sql: str, params) -> Result:
    """SET / RESET / RESET ALL / SET ... TO DEFAULT (PostgreSQL's SET reference page).
    ``SET TRANSACTION`` / ``SET SESSION CHARACTERISTICS AS TRANSACTION`` set the modes
    they name (``transaction_modes``).

    Raises:
        SqlError 42601 for a value that is not a literal; ``SessionVars.set``'s errors."""
    k = stmt.kind
    if k == VariableSetKind.VAR_SET_MULTI:
        transaction_modes(s, stmt.args or (), session=stmt.name != "TRANSACTION")
        return Result("SET")
    if k == VariableSetKind.VAR_RESET_ALL:
        for name in list(s.vars.values):
            try:
                s.vars.set(name, None)
            except SqlError:
                pass
        return Result("RESET")
    name = stmt.name.lower()
    if name == "role":  # SET ROLE, RESET ROLE: not a variable but the current role
        from sqlfront.sequence.roles import set_role

        arg = stmt.args[0].val.sval if stmt.args and isinstance(stmt.args[0], ast.A_Const) else None
        set_role(s, arg)
        return Result("RESET" if k == VariableSetKind.VAR_RESET else "SET")
    if k in (VariableSetKind.VAR_RESET, VariableSetKind.VAR_SET_DEFAULT):
        s.vars.set(name, None)
        return Result("RESET" if k == VariableSetKind.VAR_RESET else "SET")
    values = []
    for a in stmt.args or ():
        if isinstance(a, ast.A_Const):
            v = a.val
            values.append(v.sval if isinstance(v, ast.String) else str(getattr(v, "ival", None) if isinstance(v, ast.Integer) else v.fval if isinstance(v, ast.Float) else v.boolval))
        elif isinstance(a, ast.TypeCast) and isinstance(a.arg, ast.A_Const):
            values.append(a.arg.val.sval)
        else:
            raise SqlError(SYNTAX_ERROR, f"invalid value for parameter \"{name}\"")
    if stmt.is_local:
        pass  # SET LOCAL lasts for the transaction; treated like SET
    if name == "cluster":
        _check_cluster_here(s, ", ".join(values))
    s.vars.set(name, ", ".join(values))
    if name == "transaction_read_only" and s.in_transaction:
        s.transaction.read_only = s.vars.get(name) == "on"
    return Result("SET")


def transaction_modes(s: Session, modes, session: bool) -> None:
    """Apply ``ISOLATION LEVEL``, ``READ ONLY|WRITE`` and ``[NOT] DEFERRABLE`` (the
    DefElems of SET TRANSACTION, SET SESSION CHARACTERISTICS and BEGIN): ``session`` sets
    the defaults later transactions start with, else the running transaction's modes
    (PostgreSQL's SET TRANSACTION reference page). An isolation level is checked
    (``sqlfront.vars.ISOLATION_LEVELS``); every one behaves as strict serializable here,
    which each allows, so a transaction's own level changes nothing and the session's is
    ``transaction_isolation``.

    Raises:
        SqlError 22023 for an isolation level Materialize does not take."""
    from sqlfront.vars import validate

    for o in modes:
        value = o.arg.val
        if o.defname == "transaction_isolation":
            if session:
                s.vars.set("transaction_isolation", value.sval)
            else:
                validate("transaction_isolation", value.sval)
            continue
        on = "on" if getattr(value, "ival", 0) else "off"
        if session:
            s.vars.set("default_" + o.defname, on)
            continue
        s.vars.values[o.defname] = on  # what current_setting shows while the block lasts
        if o.defname == "transaction_read_only":
            s.transaction.read_only = on == "on"


def show_var(s: Session, stmt: ast.VariableShowStmt, sql: str, params) -> Result:
    """SHOW name (one text column named after the variable) or SHOW ALL (name, setting)."""
    name = stmt.name.lower()
    if name == "all":
        rows = [(display_name(k), v) for k, v in sorted(s.vars.values.items())]
        return Result("SHOW", [("name", TEXT), ("setting", TEXT)], rows)
    return Result("SHOW", [(name, TEXT)], [(s.vars.get(name),)])


def show_var_columns(stmt: ast.VariableShowStmt) -> list:
    """The columns SHOW returns, for Describe."""
    return [("name", TEXT), ("setting", TEXT)] if stmt.name.lower() == "all" else [(stmt.name.lower(), TEXT)]


def _check_cluster_here(s: Session, name: str) -> None:
    """SET cluster to a cluster another live environmentd runs fails at once (issue 13),
    with the owner and a hint to reconnect with that cluster: a peek could not run here.
    A cluster that does not exist, or that no process owns now, may be set (Materialize
    checks the cluster when a query needs it)."""
    cluster = s.catalog.cluster_by_name(name)
    if cluster is None or s.env.compute.cluster_coordinator(cluster.id) is not None:
        return
    if s.env.compute.ownership.owner_of(cluster.id) is not None:
        raise s.env.compute.not_owned_error(cluster)
