"""Message bytes have one home: no module of sqlfront outside ``sqlfront/protocol/`` packs
or unpacks with ``struct``, except those that handle bytes that are not protocol messages
(listed with what they handle). Pure Python: the sources are read with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: modules that use struct for bytes that are not pgwire messages
NOT_MESSAGES = {
    "sqlfront/pgtypes.py": "values' binary forms (*send / *recv, array_send) and a row's fields",
    "sqlfront/copy.py": "COPY BINARY's file layout (signature, header extension, tuples)",
    "sqlfront/pyworker.py": "the length prefix of its own pipe to worker processes",
}


def _imports_struct(path: Path) -> bool:
    for n in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(n, ast.Import) and any(a.name == "struct" for a in n.names):
            return True
        if isinstance(n, ast.ImportFrom) and n.module == "struct":
            return True
    return False


def test_only_the_protocol_package_packs_message_bytes():
    users = {str(p.relative_to(ROOT)) for p in sorted((ROOT / "sqlfront").rglob("*.py"))
             if "protocol" not in p.relative_to(ROOT / "sqlfront").parts[:1] and _imports_struct(p)}
    assert users <= set(NOT_MESSAGES), f"pack and unpack messages with sqlfront.protocol: {sorted(users - set(NOT_MESSAGES))}"
    assert set(NOT_MESSAGES) <= users, "a module no longer uses struct: drop it from NOT_MESSAGES"
