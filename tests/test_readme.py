"""The documentation's examples, as a new user runs them: every ```sql block of the README
and of the docs pages that go on from its walkthrough (``PAGES``), in order, against one
fresh server, with psql when it is installed (else psycopg, which
understands the one psql meta-command the README uses, ``\\gset``). All must succeed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from server import Server

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: the pages whose examples are one psql session, in the order they run
PAGES = [README, ROOT / "docs" / "guide.md", ROOT / "docs" / "operations.md"]
#: pages whose examples need more than one fresh server, and why
NOT_RUN = {ROOT / "docs" / "deploy.md": "the multi-host layout it lays out"}


def sql_blocks(text: str) -> list[str]:
    """The contents of the README's ```sql blocks, in order."""
    return re.findall(r"^```sql\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


def test_blocks_found():
    blocks = [b for page in PAGES for b in sql_blocks(page.read_text())]
    assert len(blocks) >= 4
    # every page with examples runs here
    assert {p for p in (README, *(ROOT / "docs").glob("*.md")) if sql_blocks(p.read_text())} <= {*PAGES, *NOT_RUN}
    assert all("[" not in b.split("--")[0] for block in blocks for b in block.splitlines()), \
        "a syntax summary ([optional] parts) in a sql block: make it an example that runs"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("readme") / "mzdata").start()
    yield s
    s.stop()


def test_readme_sql_runs_in_order(fresh):
    script = "\n".join(b for page in PAGES for b in sql_blocks(page.read_text()))
    if shutil.which("psql"):
        cmd = ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(fresh.port),
               "-U", "materialize", "materialize", "-e", "-f", "-"]
        r = subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=600, check=False)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert "ERROR" not in r.stderr, r.stderr
    else:
        run_with_psycopg(fresh, script)


def run_with_psycopg(server: Server, script: str) -> None:
    """Run ``script`` statement by statement on one connection; ``\\gset`` stores the
    last statement's columns as variables that later ``:name`` references take."""
    from sqlfront.parse import split_statements

    variables: dict[str, str] = {}
    with server.connect() as c:
        pending = ""
        for line in script.splitlines(keepends=True):
            gset = line.rstrip().endswith("\\gset")
            pending += line.rstrip()[: -len("\\gset")] + "\n" if gset else line
            if not gset and not pending.rstrip().endswith(";"):
                continue
            text = re.sub(r":(\w+)", lambda m: variables.get(m.group(1), m.group(0)), pending)
            pending = ""
            for stmt in split_statements(text):
                if stmt.lstrip().upper().startswith("COPY"):
                    with c.cursor().copy(stmt) as copy:
                        for _ in copy:
                            pass
                    continue
                cur = c.execute(stmt)
                if gset and cur.description:
                    variables.update({d.name: str(v) for d, v in zip(cur.description, cur.fetchone())})
