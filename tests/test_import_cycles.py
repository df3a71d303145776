"""No import cycle inside a package, and the packages in their layers. Each module's imports
are read from its source (``ast``): top-level ones (run when the module is imported: module
and class bodies, ``if`` and ``try`` blocks, but not ``if TYPE_CHECKING:``) and
function-level ones (deferred to a call).
A cycle of top-level imports inside a package fails in every package. A cycle that needs a
function-level import (the usual way to hide one) fails too, except in the packages of
``KNOWN_DEFERRED_CYCLES``, a list that may only shrink.
Between packages, imports of either level point one way only (issue 34's layers: protocol,
types -> sql -> adapter -> programs): down ARCHITECTURE.md's table of packages (``MAY_IMPORT``),
the wire protocol (``sqlfront.protocol``) below the rest of the adapter, and the program
(``sqlfront.cli``) above everything."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: our top-level packages (ARCHITECTURE.md "Packages")
PACKAGES = ("sqlfront", "catalog", "planner", "spark_exec", "persist", "sqllogictest")

#: packages whose modules still import each other in a cycle through function-level imports,
#: and why; remove a package once its cycle is gone (the test says so), never add one
KNOWN_DEFERRED_CYCLES = {
}


#: what each package (or module, and what is under it) may import of the others: ARCHITECTURE.md
#: "Packages", whose arrows only point down its table (sqlfront is the top; catalog reads
#: persist for shard ids only). ``pgconn``, below every package, is not one of ``PACKAGES``.
MAY_IMPORT = {
    "sqlfront": ("catalog", "planner", "spark_exec", "persist"),
    "spark_exec": ("planner", "catalog", "persist"),
    "planner": ("catalog",),
    "catalog": ("persist.shard_id",),
    "persist": (),
    "sqllogictest": (),
    # the wire protocol, sans-IO, under the adapter: SQLSTATEs and types only
    "sqlfront.protocol": ("catalog.errors", "catalog.types"),
}
#: the program: what starts everything, imported by nothing of ours
PROGRAMS = ("sqlfront.cli",)


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``PACKAGES``."""
    out = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(f.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = f
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _import_nodes(body: list[ast.stmt], top: bool):
    """``(Import | ImportFrom node, top-level?)`` of every import in ``body``."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, top
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _import_nodes(node.body, False)
        elif isinstance(node, ast.If) and _is_type_checking(node):
            continue  # never runs
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(node, field, None) or ():
                    if isinstance(child, ast.stmt):
                        yield from _import_nodes([child], top)
                    elif hasattr(child, "body"):  # except handlers, match cases
                        yield from _import_nodes(child.body, top)


def imports(mods: dict[str, Path]) -> dict[str, list[tuple[str, bool]]]:
    """Module -> ``(module of ours it imports, top-level?)`` for each import: ``from a.b
    import c`` imports ``a.b.c`` when that is a module, else ``a.b``."""

    def ours(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    out: dict[str, list[tuple[str, bool]]] = {}
    for m, f in mods.items():
        is_pkg = f.name == "__init__.py"
        found = []
        for node, top in _import_nodes(ast.parse(f.read_text(), str(f)).body, True):
            if isinstance(node, ast.Import):
                targets = [ours(a.name) for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    here = m.split(".") if is_pkg else m.split(".")[:-1]
                    base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else ours(base) for a in node.names]
            found += [(t, top) for t in targets if t is not None and t != m]
        out[m] = found
    return out


def package_of(m: str, mods: dict[str, Path]) -> str:
    return m if mods[m].name == "__init__.py" else m.rpartition(".")[0]


def cycles(mods: dict[str, Path], edges: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles inside each package: strongly connected sets of more than one
    module of one package, over the edges between modules of that package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if package_of(w, mods) != package_of(v, mods):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(mods)))
    try:
        for v in mods:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def _graph(top_only: bool):
    mods = modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for m, found in imports(mods).items():
        edges[m] |= {t for t, top in found if top or not top_only}
    return mods, edges


def test_imports_are_read_at_both_levels():
    mods = modules()
    found = imports(mods)
    assert ("sqlfront.sequence.result", True) in found["sqlfront.sequence.peek"]
    assert ("sqlfront.sequence.peek", False) in found["sqlfront.sequence.views"]  # inside a function
    assert all(not t.startswith("sqlfront.session") for t, _ in found["sqlfront.sequence.peek"])  # TYPE_CHECKING


def test_no_cycle_of_top_level_imports_inside_any_package():
    mods, edges = _graph(top_only=True)
    assert cycles(mods, edges) == []


def test_no_cycle_through_deferred_imports_outside_the_known_packages():
    mods, edges = _graph(top_only=False)
    by_package: dict[str, list[list[str]]] = defaultdict(list)
    for scc in cycles(mods, edges):
        by_package[package_of(scc[0], mods)].append(scc)
    new = {p: c for p, c in by_package.items() if p not in KNOWN_DEFERRED_CYCLES}
    assert new == {}, "import cycle inside a package (move what they share into a lower module)"
    gone = sorted(set(KNOWN_DEFERRED_CYCLES) - set(by_package))
    assert gone == [], f"no cycle left in {gone}: remove them from KNOWN_DEFERRED_CYCLES"


def _under(m: str, names) -> bool:
    """True if module ``m`` is one of ``names`` or under one of them."""
    return any(m == n or m.startswith(n + ".") for n in names)


def test_imports_point_down_the_layers():
    mods = modules()
    wrong = []
    for m, found in imports(mods).items():
        layer = max((n for n in MAY_IMPORT if _under(m, [n])), key=len)
        for t, top in found:
            at = "" if top else " (in a function)"
            if not _under(t, [layer, *MAY_IMPORT[layer]]):
                wrong.append(f"{m} -> {t}{at}")
            elif _under(t, PROGRAMS) and not _under(m, [t]):
                wrong.append(f"{m} -> {t}{at}: a program")
    assert not wrong, "imports against the layers (ARCHITECTURE.md's table of packages):\n" + "\n".join(wrong)
