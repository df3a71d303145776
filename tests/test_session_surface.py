"""No module of ``sqlfront/sequence/`` reads a private attribute of ``Session`` (issue 34,
"Done when"): the sequencing modules use the session's public surface (``transaction``, a
``sequence.txn.Transaction`` holding the transaction's state, ``in_transaction``,
``read_ts``, ``as_of``, ... in sqlfront/session.py).

The rule, read from each module's source (``ast``): an attribute whose name starts with a
single ``_`` (``_x``, not a dunder ``__x__``) may not be read, written or called on

- a name ``s`` or ``session`` (the names the sequencing modules bind a Session to),
- ``self.s`` or ``self.session`` (an object keeping its Session, e.g. ``Subscription``),
- a function parameter annotated ``Session`` (any name).

It is syntactic: a Session reached another way (``x = s; x._y``) is not seen. Modules of
``KNOWN_EXCEPTIONS`` may still do it; that list may only shrink."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEQUENCE = ROOT / "sqlfront" / "sequence"

#: the names a Session is bound to in the sequencing modules
SESSION_NAMES = frozenset({"s", "session"})

#: modules (file names under sqlfront/sequence/) that still read private Session
#: attributes; remove one once it does not (the test says so), never add one
KNOWN_EXCEPTIONS: frozenset[str] = frozenset()


def _is_private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def _annotated_session(arg: ast.arg) -> bool:
    a = arg.annotation
    if isinstance(a, ast.Constant) and isinstance(a.value, str):  # a string annotation
        return a.value.split(".")[-1] == "Session"
    return (isinstance(a, ast.Name) and a.id == "Session") or (isinstance(a, ast.Attribute) and a.attr == "Session")


def _session_params(tree: ast.AST) -> set[str]:
    """Names of parameters annotated ``Session`` anywhere in the module (a name is taken
    as a Session throughout the module: sound, and the modules do not reuse them)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
                if arg is not None and arg.annotation is not None and _annotated_session(arg):
                    out.add(arg.arg)
    return out


def _is_session(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    return (isinstance(node, ast.Attribute) and node.attr in SESSION_NAMES
            and isinstance(node.value, ast.Name) and node.value.id == "self")


def private_reads(source: str, filename: str = "<source>") -> list[str]:
    """``"line: expr._attr"`` for each private attribute of a Session in ``source``."""
    tree = ast.parse(source, filename)
    names = set(SESSION_NAMES) | _session_params(tree)
    return [f"{n.lineno}: {ast.unparse(n)}" for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and _is_private(n.attr) and _is_session(n.value, names)]


def test_the_rule_sees_each_receiver():
    src = ("def f(s, session, other: 'Session', y):\n"
           "    s._a; session._b = 1; other._c(); self.s._d; self.session._e\n"
           "    s.__class__; s.ok; y._f; self._g\n")
    assert sorted(r.split(": ")[1] for r in private_reads(src)) == [
        "other._c", "s._a", "self.s._d", "self.session._e", "session._b"]


def test_sequence_reads_no_private_session_attribute():
    found = {f.name: private_reads(f.read_text(), str(f)) for f in sorted(SEQUENCE.glob("*.py"))}
    bad = {name: hits for name, hits in found.items() if hits and name not in KNOWN_EXCEPTIONS}
    assert not bad, f"private Session attributes read in sqlfront/sequence/ (use or add a public one in session.py): {bad}"
    clean = sorted(name for name in KNOWN_EXCEPTIONS if not found.get(name))
    assert not clean, f"no longer read private Session attributes: remove from KNOWN_EXCEPTIONS: {clean}"
