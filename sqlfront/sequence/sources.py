"""Sequencing of secrets, connections and sources: the statements of
``sqlfront.source_parse`` turned into catalog transactions (``sqlfront.secrets``,
``sqlfront.sources``) and run as DDL (``sqlfront.sequence.catalog_txn.run``)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from sqlfront import secrets
from sqlfront import source_parse as sp
from sqlfront.sequence.catalog_txn import run
from sqlfront.sequence.result import Result

if TYPE_CHECKING:
    from sqlfront.session import Session


def create_secret(s: Session, stmt: sp.CreateSecret, sql: str, params) -> Result:
    if stmt.expr is not None:  # AS <expression>: its value, computed here
        stmt = dataclasses.replace(stmt, value=secrets.secret_value(stmt.expr, s.statement.plan), expr=None)
    run(s, secrets.create_secret(stmt))
    return Result("CREATE SECRET")


def alter_secret(s: Session, stmt: sp.AlterSecret, sql: str, params) -> Result:
    if stmt.expr is not None:
        stmt = dataclasses.replace(stmt, value=secrets.secret_value(stmt.expr, s.statement.plan), expr=None)
    run(s, secrets.alter_secret(stmt))
    return Result("ALTER SECRET")


def create_connection(s: Session, stmt: sp.CreateConnection, sql: str, params) -> Result:
    """CREATE CONNECTION ... TO POSTGRES; validated first (in this session's thread, not
    on the Coordinator's loop) unless ``WITH (VALIDATE = false)`` (Materialize validates
    by default)."""
    from catalog import rbac
    from catalog.snapshot import Connection

    snap = s.catalog
    options = secrets.connection_options(snap, stmt)
    role = rbac.current_role(snap)
    if role is not None and not rbac.is_superuser(snap, role):
        # before validating: a role that may not create it must not make us connect anywhere
        rbac.require(snap, rbac.schema_ref(snap, snap.creation_schema(stmt.schema)), "C", role)
    if stmt.validate is not False:
        secrets.validate(snap, Connection("", "", stmt.name, stmt.kind, options))
    run(s, secrets.create_connection(stmt, options))
    return Result("CREATE CONNECTION")


def validate_connection(s: Session, stmt: sp.ValidateConnection, sql: str, params) -> Result:
    """VALIDATE CONNECTION name: no rows when it connects; 08001 with the reason when not."""
    snap = s.catalog
    secrets.validate(snap, secrets.resolve_connection(snap, stmt.schema, stmt.name))
    return Result("VALIDATE CONNECTION")


def drop_items(s: Session, stmt: sp.DropItems, sql: str, params) -> Result:
    """DROP SECRET | CONNECTION | SOURCE."""
    from sqlfront import sources

    run(s, sources.drop_sources(stmt) if stmt.kind == "source" else secrets.drop_items(stmt))
    return Result(f"DROP {stmt.kind.upper()}")


def create_source(s: Session, stmt: sp.CreateSource, sql: str, params) -> Result:
    """CREATE SOURCE ... FROM LOAD GENERATOR | POSTGRES | WEBHOOK (``sqlfront.sources``,
    ``sqlfront.pg_source``, ``sqlfront.webhook``); its cluster is IN CLUSTER's, else the
    session's. A PostgreSQL source's upstream tables are read here, in the session's
    thread."""
    from catalog.errors import SqlError
    from sqlfront import sources
    from sqlfront.sequence import block_ddl

    if block_ddl.in_block(s):  # (Materialize's rule too) its ingestion starts when it commits
        raise SqlError(block_ddl.ACTIVE_SQL_TRANSACTION, "CREATE SOURCE cannot be run inside a transaction block")
    plan = None
    if stmt.kind == "postgres":
        from sqlfront import pg_source

        snap = s.catalog
        if stmt.if_not_exists and snap.name_taken(snap.creation_schema(stmt.schema), stmt.name):
            return Result("CREATE SOURCE")
        plan = pg_source.plan(snap, stmt)
    elif stmt.kind == "webhook":
        from sqlfront import webhook

        plan = webhook.plan(s.catalog, stmt)
    run(s, sources.create_source(stmt, s.vars.get("cluster"), plan))
    made = s.catalog.relation_by_name(s.catalog.creation_schema(stmt.schema), stmt.name)
    if made is not None:
        s.env.sources.wait_for_snapshot(made.id)
    return Result("CREATE SOURCE")
