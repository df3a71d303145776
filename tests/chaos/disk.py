"""A small disk for data directories (issue 28's full disk): a tmpfs of a fixed size,
mounted for the while (root only), and :func:`fill`, which takes every byte it has left.
Used by the nemesis's ``fill-disk`` (the chaos topologies' data directories and Blob on
one) and by tests/test_disk_full.py."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def small_disk(path: Path, size_bytes: int) -> Iterator[bool]:
    """A tmpfs of ``size_bytes`` at ``path`` (created) for the ``with`` block, unmounted
    (lazily: a process may still hold a file) on exit. Yields whether it could be
    mounted (it needs root); ``path`` is a plain directory when not."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(path)],
        check=False, capture_output=True).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)


def fill(directory: Path) -> Path:
    """Write a file in ``directory`` until its disk is full (ENOSPC), down to its last
    4 kB; returns the file's path (unlink it to free the space)."""
    path = Path(directory) / "filler"
    with open(path, "wb", buffering=0) as f:
        for chunk in (1 << 20, 4096):
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
    return path
