"""Giving the C heap's free memory back to the operating system.

glibc's malloc keeps memory that Python, Arrow and gRPC freed in its arenas (one per
thread that allocated, up to 8 per core) instead of returning it: measured in
``bench/chaos.py`` on two processes, each environmentd's malloc held 50-85 MiB free
(``mallinfo2().fordblks``) beside about 110 MiB in use, and its RSS swung by as much while
the Python heap (tracemalloc) and the live objects stayed flat. ``malloc_trim(0)``
returns the free pages of every arena; the maintenance loop calls :func:`trim` every
``TRIM_S`` seconds.

Trimming returns only whole free pages; free chunks between live ones stay, and they grow
with the number of arenas and with glibc's dynamic mmap threshold, which rises (up to 32
MiB) each time a large block is freed, so later large blocks (a peek's Arrow batches, a
gRPC message) are carved from the arenas instead of mapped and unmapped. So environmentd
(:func:`limit_fragmentation`, at start) fixes the threshold (``M_MMAP_THRESHOLD``: blocks
of at least ``MMAP_THRESHOLD`` bytes are mapped, and unmapped when freed) and caps the
arenas at ``ARENA_MAX`` (the GIL serializes most allocation anyway). These are mallopt(3)'s
parameters; ``MALLOC_ARENA_MAX`` and ``MALLOC_MMAP_THRESHOLD_`` in the environment do the
same, and set, they win.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import time

#: seconds between two trims
TRIM_S = 30.0
#: blocks of this many bytes or more are mmap'd (glibc's initial threshold, kept fixed)
MMAP_THRESHOLD = 128 * 1024
#: malloc arenas at most (glibc's default: 8 per core)
ARENA_MAX = 2
# mallopt(3)'s parameter numbers (malloc.h)
_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8


@functools.cache
def _malloc_trim():
    """libc's ``malloc_trim``, or None (not glibc: musl and macOS have none)."""
    return getattr(_libc(), "malloc_trim", None)


@functools.cache
def _libc():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def limit_fragmentation(environ=None) -> bool:
    """Fix glibc's mmap threshold and cap its arenas (see the module docstring), unless
    the environment sets them; call once, early. Whether it applied (False when the libc
    has no ``mallopt``: not glibc)."""
    environ = os.environ if environ is None else environ
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return False
    if "MALLOC_MMAP_THRESHOLD_" not in environ:
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    if "MALLOC_ARENA_MAX" not in environ:
        mallopt(_M_ARENA_MAX, ARENA_MAX)
    return True


class Trimmer:
    """Calls ``malloc_trim(0)`` at most once per ``every`` seconds (:meth:`maybe`)."""

    def __init__(self, every: float = TRIM_S):
        self.every = every
        self._last = time.monotonic()

    def maybe(self) -> bool:
        """Trim if ``every`` seconds passed since the last time; whether it trimmed."""
        now = time.monotonic()
        fn = _malloc_trim()
        if fn is None or now - self._last < self.every:
            return False
        self._last = now
        fn(0)
        return True
