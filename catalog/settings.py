"""Session variables' definitions: their defaults and whether a session may set them, in
one table (``DEFAULTS``). Every reader takes the values from here: SHOW, ``pg_settings``
and the ParameterStatus messages through ``sqlfront.vars.SessionVars`` and the server's
defaults (``sqlfront.vars.server_defaults``), and ``current_setting`` (``planner.functions.
system``) outside a session too. Validation and SET are ``sqlfront.vars``'s business.
"""

from __future__ import annotations

from catalog.textio import MAX_NAME_BYTES

SERVER_VERSION = "9.5.0"  # what Materialize reports; clients branch on it
#: ``server_version`` as a number (PostgreSQL before 10: major * 10000 + minor * 100 + patch)
SERVER_VERSION_NUM = str(sum(int(p) * m for p, m in zip(SERVER_VERSION.split("."), (10000, 100, 1))))
#: Materialize's ``mz_version`` (reported at startup, as Materialize does): the release whose
#: SQL this server follows. dbt-materialize reads it and refuses anything below v0.68.0.
MZ_VERSION = "v0.130.0 (sqlfront)"

#: name -> (default, settable)
DEFAULTS: dict[str, tuple[str, bool]] = {
    "cluster": ("quickstart", True),
    "cluster_replica": ("", True),
    "application_name": ("", True),
    # Materialize's: route catalog-only queries to mz_catalog_server. Accepted so clients
    # (dbt-materialize) can set it; here every catalog query is answered by environmentd.
    "auto_route_catalog_queries": ("on", True),
    "client_encoding": ("UTF8", True),
    "client_min_messages": ("notice", True),
    # Materialize's: notices when the session's cluster or database does not exist
    "current_object_missing_warnings": ("on", True),
    "database": ("materialize", True),
    "datestyle": ("ISO, MDY", True),
    "escape_string_warning": ("on", True),
    "extra_float_digits": ("3", True),
    "integer_datetimes": ("on", False),
    "intervalstyle": ("postgres", True),
    "is_superuser": ("off", False),
    # the collation and character classification of the one database (PostgreSQL's
    # read-only lc_collate, lc_ctype)
    "lc_collate": ("C.UTF-8", False),
    "lc_ctype": ("C.UTF-8", False),
    # Server settings (``sqlfront serve`` options); the values here are the options' defaults.
    "max_connections": ("100", False),
    "max_copy_from_size": (str(256 << 20), False),
    # PostgreSQL's NAMEDATALEN - 1: the bytes an identifier keeps here (longer ones are
    # truncated, sqlfront.identifiers). Materialize reports 255, its own limit; this server's
    # is PostgreSQL's, and clients size names by what is reported.
    "max_identifier_length": (str(MAX_NAME_BYTES), False),
    "max_index_keys": ("32", False),
    # Materialize's proposed per-query heap limit (design doc "Guard rails for cluster
    # reliability"); here it bounds the rows a query evaluated in Python (planner.interpret)
    # holds in environmentd. 256MB: a few million rows, far above any catalog query.
    "max_query_heap_size": ("256MB", True),
    "mz_version": (MZ_VERSION, False),
    "search_path": ("public", True),
    "server_encoding": ("UTF8", False),
    "server_version": (SERVER_VERSION, False),
    "server_version_num": (SERVER_VERSION_NUM, False),
    "standard_conforming_strings": ("on", True),
    "statement_timeout": ("0", True),
    "timezone": ("UTC", True),
    "transaction_isolation": ("strict serializable", True),
    # PostgreSQL's read-only and deferrable transaction modes (19.11.1): the default_*
    # variables are what BEGIN starts with; transaction_* show the running transaction's
    # (and the defaults outside one). DEFERRABLE changes nothing here.
    "default_transaction_read_only": ("off", True),
    "default_transaction_deferrable": ("off", True),
    "transaction_read_only": ("off", True),
    "transaction_deferrable": ("off", True),
    # Materialize's: whether a new session gets its welcome NOTICE (none is sent here)
    "welcome_message": ("on", True),
}

#: name -> the flags ``pg_settings_get_flags`` shows (PostgreSQL 9.27.1, guc_funcs.c's
#: GetConfigOptionFlags): PostgreSQL 18's for its settings (lc_collate and lc_ctype:
#: PostgreSQL 15's, which still had them); none for Materialize's own
FLAGS: dict[str, tuple[str, ...]] = {name: () for name in DEFAULTS} | {
    "application_name": ("NOT_IN_SAMPLE",), "integer_datetimes": ("NOT_IN_SAMPLE",),
    "is_superuser": ("NO_RESET_ALL", "NO_SHOW_ALL", "NOT_IN_SAMPLE"), "lc_collate": ("NOT_IN_SAMPLE",),
    "lc_ctype": ("NOT_IN_SAMPLE",), "max_identifier_length": ("NOT_IN_SAMPLE",), "max_index_keys": ("NOT_IN_SAMPLE",),
    "search_path": ("EXPLAIN",), "server_encoding": ("NOT_IN_SAMPLE",), "server_version": ("NOT_IN_SAMPLE",),
    "server_version_num": ("NOT_IN_SAMPLE",),
    **{f"transaction_{m}": ("NO_RESET", "NO_RESET_ALL", "NOT_IN_SAMPLE")
       for m in ("deferrable", "isolation", "read_only")},
}
