"""Pieces of the multi-process setup that need no server: the balancer's reading of
startup options, and URL redaction (no password in logs)."""

from __future__ import annotations

import pytest

from pgconn import is_postgres_url, redact_url
from sqlfront.balancer import Routes, cluster_of
from sqlfront.protocol.frontend import startup_parameters as parse_startup
from sqlfront.vars import SessionVars


@pytest.mark.parametrize("options, cluster", [
    ("-c cluster=analytics", "analytics"),
    ("-ccluster=analytics", "analytics"),
    ("--cluster=analytics", "analytics"),
    ("-c search_path=public -c cluster=b", "b"),
    ("-c cluster=a -c cluster=b", "b"),  # applied in order: the last wins
    (r"-c cluster=with\ space", "with space"),
    ("-c statement_timeout=5s", None),
    ("", None),
])
def test_cluster_of_reads_the_options_as_libpq_passes_them(options, cluster):
    assert cluster_of(options) == cluster


def test_a_session_takes_its_variables_from_the_startup_options():
    """environmentd reads ``options`` as the balancer does (PostgreSQL's -c name=value), so
    the cluster the balancer routed by is the session's cluster; a parameter given on its
    own wins over the same one in options."""
    v = SessionVars({"options": "-c cluster=cb --statement-timeout=5s -c search_path=x"})
    assert (v.get("cluster"), v.get("statement_timeout"), v.get("search_path")) == ("cb", "5s", "x")
    assert SessionVars({"options": "-c search_path=x", "search_path": "y"}).get("search_path") == "y"


def test_startup_parameters_and_routes():
    body = b"user\x00materialize\x00options\x00-c cluster=x\x00\x00"
    assert parse_startup(body) == {"user": "materialize", "options": "-c cluster=x"}
    r = Routes(("127.0.0.1", 1), {"x": ("127.0.0.1", 2)})
    assert r.address_for("x") == ("127.0.0.1", 2)
    assert r.address_for("y") == r.address_for(None) == ("127.0.0.1", 1)


def test_routes_pins_then_owners_then_the_default():
    """--route pins a cluster; else its owner (the leases); else --default; without a
    default, a connection naming no cluster goes to quickstart's owner."""
    r = Routes(None, {"x": ("127.0.0.1", 2)}, owners={"x": ("127.0.0.1", 9), "y": ("127.0.0.1", 3),
                                                      "quickstart": ("127.0.0.1", 4)})
    assert r.address_for("x") == ("127.0.0.1", 2)
    assert r.address_for("y") == ("127.0.0.1", 3)
    assert r.address_for(None) == ("127.0.0.1", 4)
    assert r.address_for("nowhere") is None
    r.default = ("127.0.0.1", 1)
    assert r.address_for("nowhere") == r.address_for(None) == ("127.0.0.1", 1)


def test_passwords_are_redacted_from_urls():
    assert redact_url("postgres://u:s3cret@h:5432/db") == "postgres://u:****@h:5432/db"
    assert redact_url("postgresql://u@h/db?password=s3cret&sslmode=disable") == \
        "postgresql://u@h/db?password=****&sslmode=disable"
    assert redact_url("postgres://h/db") == "postgres://h/db"
    assert "s3cret" not in redact_url("postgres://u:s3:cret@h/db")
    assert is_postgres_url("postgres://h/db") and is_postgres_url("postgresql://h/db")
    assert not is_postgres_url("/tmp/consensus.db") and not is_postgres_url(None)


def test_a_booting_process_drops_the_temp_schemas_of_no_live_process():
    from catalog.snapshot import temp_schema_name
    from sqlfront.bootstrap import leftover_temp_schemas

    mine, live, dead = (temp_schema_name(p, "s1") for p in ("me0", "live0", "dead0"))
    assert leftover_temp_schemas([mine, live, dead, "mz_temp_0123abcd4567"], {"live0"}) == [mine, dead]
