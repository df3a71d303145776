"""Giving the C heap's free memory back to the operating system.

glibc's malloc keeps memory that Python, Arrow and gRPC freed in its arenas (one per
thread that allocated, up to 8 per core) instead of returning it: measured in
``bench/chaos.py`` on two processes, each environmentd's malloc held 50-85 MiB free
(``mallinfo2().fordblks``) beside about 110 MiB in use, and its RSS swung by as much while
the Python heap (tracemalloc) and the live objects stayed flat. ``malloc_trim(0)``
returns the free pages of every arena; the maintenance loop calls :func:`trim` every
``TRIM_S`` seconds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import time

#: seconds between two trims
TRIM_S = 30.0


@functools.cache
def _malloc_trim():
    """libc's ``malloc_trim``, or None (not glibc: musl and macOS have none)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


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
