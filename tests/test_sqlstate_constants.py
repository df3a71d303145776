"""SQLSTATEs are named, never literal: every ``SqlError`` of our packages takes its code from a
constant of ``catalog/errors.py`` (issue 34), and those constants carry PostgreSQL's condition
names (Appendix A, "PostgreSQL Error Codes", upper-cased), one per code. Tests may keep literals.
Pure Python: the sources are read with ``ast``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import psycopg.errors

from catalog import errors

ROOT = Path(__file__).resolve().parent.parent

#: the packages whose raise sites must use the constants (ARCHITECTURE.md "Packages")
PACKAGES = ("sqlfront", "catalog", "planner", "spark_exec", "persist")

_CODE = re.compile(r"[0-9A-Z]{5}")


def _literal_codes(expr: ast.expr) -> list[ast.Constant]:
    return [c for c in ast.walk(expr)
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and _CODE.fullmatch(c.value)]


def _is_sqlerror(f: ast.expr) -> bool:
    return (isinstance(f, ast.Name) and f.id == "SqlError") or (isinstance(f, ast.Attribute) and f.attr == "SqlError")


def _literal_sites(tree: ast.AST) -> list[ast.Constant]:
    """The literal SQLSTATEs passed as ``SqlError``'s first argument or as ``sqlstate=``."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            if _is_sqlerror(n.func) and n.args:
                out += _literal_codes(n.args[0])
            out += [c for k in n.keywords if k.arg == "sqlstate" for c in _literal_codes(k.value)]
    return out


def test_no_literal_sqlstate_in_sqlerror():
    found = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for c in _literal_sites(ast.parse(path.read_text(), str(path))):
                found.append(f"{path.relative_to(ROOT)}:{c.lineno}: {c.value!r}")
    assert not found, "use a constant of catalog/errors.py, not a literal SQLSTATE:\n" + "\n".join(found)


def test_the_check_sees_a_literal():
    tree = ast.parse('raise SqlError("42P01", "x")\nraise errors.SqlError(\n  A if b else "22P02", "y")\n'
                     'f(sqlstate="XX000")\nraise SqlError(UNDEFINED_TABLE, "ok")\n')
    assert [c.value for c in _literal_sites(tree)] == ["42P01", "22P02", "XX000"]


def _constants() -> dict[str, str]:
    return {k: v for k, v in vars(errors).items()
            if k.isupper() and isinstance(v, str) and _CODE.fullmatch(v)}


def test_one_constant_per_code():
    by_code: dict[str, list[str]] = {}
    for name, code in _constants().items():
        by_code.setdefault(code, []).append(name)
    assert {c: n for c, n in by_code.items() if len(n) > 1} == {}


def test_constants_carry_postgres_condition_names():
    # psycopg's exception classes are PostgreSQL's condition names in CamelCase (errcodes.txt);
    # classes 00 (success) and 01 (warnings) have no exception class; a trailing "_" avoids
    # a builtin name (InternalError_)
    no_class = {"00000": "SUCCESSFUL_COMPLETION", "01000": "WARNING"}
    wrong = {}
    for name, code in _constants().items():
        if code in no_class:
            expected = no_class[code]
        else:
            expected = re.sub(r"(?<!^)(?=[A-Z])", "_", psycopg.errors.lookup(code).__name__.rstrip("_")).upper()
        if name != expected:
            wrong[name] = expected
    assert wrong == {}
