"""The command lines of README.md and docs/*.md name real flags: every ``sqlfront CMD
[SUB] --flag`` in a fenced block is an option of that click command (a renamed or invented
flag in a deployment guide fails here, not on a user's host). No server is started."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from sqlfront.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: ``sqlfront`` (or ``.venv/bin/sqlfront``) and the words after it that name a command
COMMAND = re.compile(r"(?:^|[\s;&|(])(?:\S*/)?sqlfront((?:\s+[a-z][a-z-]*)+)")


def commands(text: str) -> list[tuple[str, str]]:
    """``(command words, the rest of its line)`` of each sqlfront command line in the fenced
    blocks of ``text``; a line ending in ``\\``, or inside a '...' string, continues on the
    next; ``#`` outside quotes starts a comment."""
    out = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
        line = ""
        for part in block.splitlines():
            line += " " + part
            if line.endswith("\\"):
                line = line[:-1]
                continue
            if line.count("'") % 2:
                continue
            line = re.sub(r"\s#[^']*$", "", line)
            m = COMMAND.search(line)
            if m:
                out.append((m.group(1), line[m.end():]))
            line = ""
    return out


def resolve(words: str) -> click.Command:
    """The click command ``words`` (``spark-cluster up``) name; trailing non-command words
    are ignored. Raises KeyError for an unknown command."""
    cmd: click.Command = main
    for w in words.split():
        if not isinstance(cmd, click.Group):
            break
        if w not in cmd.commands:
            raise KeyError(f"sqlfront has no command {words.strip()!r}")
        cmd = cmd.commands[w]
    return cmd


def test_commands_are_found():
    found = {d.name: commands(d.read_text()) for d in DOCS}
    assert len(found["deploy.md"]) >= 4, found["deploy.md"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_flag_of_a_documented_command_line_exists(doc):
    wrong = []
    for words, rest in commands(doc.read_text()):
        cmd = resolve(words)
        flags = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        wrong += [f"sqlfront {words.strip()} {f}" for f in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", rest)
                  if f not in flags]
    assert not wrong, f"{doc.name} names flags its commands do not have: {wrong}"
