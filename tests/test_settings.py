"""Session variables' defaults are defined once (``catalog.settings.DEFAULTS``): SHOW,
current_setting (in a session and outside one), pg_settings and the ParameterStatus
messages report the same values."""

from __future__ import annotations

import pglast
import pytest

from catalog.durable import CatalogStore
from catalog.settings import DEFAULTS, SERVER_VERSION
from catalog.textio import MAX_NAME_BYTES
from planner import interpret
from planner.query import QueryPlanner
from sqlfront.vars import SessionVars, server_defaults

#: names whose value depends on the session, not only on the defaults
SESSION_DEPENDENT = {"is_superuser"}


def _current_setting_outside_a_session(name: str) -> str:
    snap = CatalogStore(":memory:").load()
    q = QueryPlanner(snap).plan_select(pglast.parse_sql(f"SELECT current_setting('{name}')")[0].stmt)
    # no statement context: no session's variables
    return interpret.run(q.plan, lambda t: [])[0][0]


@pytest.mark.parametrize("name", ["max_identifier_length", "server_version", "server_version_num",
                                  "transaction_isolation", "lc_collate", "statement_timeout"])
def test_current_setting_outside_a_session_reads_the_one_table(name):
    assert _current_setting_outside_a_session(name) == DEFAULTS[name][0]


def test_a_sessions_variables_start_from_the_one_table():
    v = SessionVars()
    assert {k: val for k, val in v.values.items() if k not in SESSION_DEPENDENT} == \
        {k: d for k, (d, _) in DEFAULTS.items() if k not in SESSION_DEPENDENT}
    assert server_defaults() == {k: d for k, (d, _) in DEFAULTS.items()}


def test_max_identifier_length_is_the_limit_identifiers_are_truncated_to():
    assert DEFAULTS["max_identifier_length"] == (str(MAX_NAME_BYTES), False) == ("63", False)
    assert DEFAULTS["server_version_num"][0] == "90500" and SERVER_VERSION == "9.5.0"


def test_show_current_setting_pg_settings_and_parameter_status_agree(conn):
    for name in ("max_identifier_length", "server_version", "server_version_num", "lc_ctype"):
        shown = conn.execute(f"SHOW {name}").fetchone()[0]
        current = conn.execute("SELECT current_setting(%s)", (name,)).fetchone()[0]
        listed = conn.execute("SELECT setting FROM pg_settings WHERE name = %s", (name,)).fetchone()[0]
        assert shown == current == listed == DEFAULTS[name][0], name
    assert conn.info.parameter_status("server_version") == DEFAULTS["server_version"][0]
    assert conn.execute("SELECT version()").fetchone()[0].startswith(f"PostgreSQL {SERVER_VERSION} ")
