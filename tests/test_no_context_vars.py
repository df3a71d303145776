"""No hidden per-statement state: no module of the project defines a context variable
(issue 34). What a statement's evaluation needs reaches it explicitly: its
``planner.context.PlanContext`` (session, evaluation guard with the session's text
settings, deadline and cancel flag), built by the session for each statement. No
external API the project adapts needs one, so the allowed list is empty. The sources are
read (``ast``), not imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: every package of the project (ARCHITECTURE.md "Packages", and pgconn below them)
PACKAGES = ("catalog", "planner", "persist", "spark_exec", "sqlfront", "pgconn", "sqllogictest")

#: "module: why" of the context variables an external API forces on us: none
ALLOWED: dict[str, str] = {}


def _context_vars(path: Path) -> list[int]:
    """Lines of ``path`` that import ``contextvars`` or name a ``ContextVar``."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import) and any(a.name == "contextvars" for a in node.names):
            hits.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "contextvars":
            hits.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "ContextVar":
            hits.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "ContextVar":
            hits.append(node.lineno)
    return hits


def test_no_module_defines_a_context_variable():
    found = {}
    for package in PACKAGES:
        files = sorted((ROOT / package).rglob("*.py"))
        assert files, package
        for path in files:
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            lines = _context_vars(path)
            if lines and module not in ALLOWED:
                found[module] = lines
    assert not found, f"context variables (module: lines): {found}"
