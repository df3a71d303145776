"""sqlfront.heap: the maintenance loop's malloc_trim, at most once per interval; the fixed mmap threshold."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sqlfront import heap


def test_trims_only_after_its_interval(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_malloc_trim", lambda: calls.append)
    now = [100.0]
    monkeypatch.setattr(heap.time, "monotonic", lambda: now[0])
    t = heap.Trimmer(every=30)
    assert not t.maybe()
    now[0] += 31
    assert t.maybe() and calls == [0]
    assert not t.maybe()


def test_malloc_trim_runs_here():
    # glibc on the machines this runs on: the call itself must work
    fn = heap._malloc_trim()
    assert fn is None or fn(0) in (0, 1)


_PROBE = """
import ctypes, ctypes.util, sys
from sqlfront import heap
if sys.argv[1] == "limit":
    assert heap.limit_fragmentation({})
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = Info
libc.free(libc.malloc(4 << 20))  # freeing a mapped 4 MiB block raises glibc's dynamic threshold
before = libc.mallinfo2().hblks
p = libc.malloc(1 << 20)
print(libc.mallinfo2().hblks - before)
libc.free(p)
"""


def test_limit_fragmentation_keeps_large_blocks_mapped():
    # glibc raises its mmap threshold when a mapped block is freed, so a later 1 MiB block
    # comes from an arena (and stays there as free memory when freed); with the threshold
    # fixed it is mapped (and unmapped when freed). A fresh process: mallopt is global.
    if heap._libc() is None or not hasattr(heap._libc(), "mallinfo2"):
        pytest.skip("not glibc >= 2.33: no mallinfo2")
    run = lambda mode: subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True,
                                      check=True).stdout.strip()
    assert run("default") == "0"
    assert run("limit") == "1"
