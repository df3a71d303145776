"""The one registry of SQL functions and operators, loaded: what the rest of the project
reads (``planner.functions.FUNCTIONS``, ``resolve_scalar``, ...).

The registry itself (the entry type, signature matching, the lookup tables) is
``planner.functions.registry``; each family module (``string``, ``math``, ``datetime``,
...) imports it and registers its entries. This package loads every family, so that
importing it gives the whole registry, and gives the registry's rows to ``pg_proc``. No
family module imports it: they sit between the registry below and this loader above.
"""

from planner.functions.registry import (
    AGGREGATES, BY_SQL_NAME, FUNCTIONS, INTERNAL, NUMERIC_ORDER, PROC_OID_BASE, SET_RETURNING, WINDOW_FUNCTIONS,
    Function, Sig, by_python, call_text, cast_cost, constant_arg, div0, get, lookup_args, lookup_map, lookup_table, match, pg_proc_rows, run_py,
    register, resolve, resolve_scalar, sig, static_map, undefined_function,
)
from planner.functions import (  # noqa: F401  (each module registers its entries)
    logic, math, trig, numfmt, string, regexp, binary, datetime, zoned, json, json_edit, array, system, aggregate,
    window, sequence, privileges, uuids, backend, admin, advisory, delay, ident, lists, maps, relations, interval_fmt,
    datum_size, objects,
)
from catalog.pg_catalog import register_procs

__all__ = [
    "AGGREGATES", "BY_SQL_NAME", "FUNCTIONS", "INTERNAL", "NUMERIC_ORDER", "PROC_OID_BASE", "SET_RETURNING",
    "WINDOW_FUNCTIONS", "Function", "Sig", "by_python", "call_text", "cast_cost", "constant_arg", "div0", "get", "lookup_args", "lookup_map",
    "lookup_table", "match", "pg_proc_rows", "register", "run_py", "resolve", "resolve_scalar", "sig", "static_map",
    "undefined_function",
]

register_procs(pg_proc_rows())
