"""Evidence of where environmentd's memory goes, for finding a leak (issue 28): off unless
the environment variable ``SQLFRONT_TRACEMALLOC`` names a directory.

When on, :func:`start_from_env` starts :mod:`tracemalloc` (``SQLFRONT_TRACEMALLOC_FRAMES``
frames per allocation, default 10; 0 leaves tracing off: the stats alone) and a
daemon thread that every ``SQLFRONT_TRACEMALLOC_EVERY`` seconds (default 60) writes, into
that directory, ``snap-<pid>-<n>.tracemalloc`` (a :class:`tracemalloc.Snapshot`; compare
two with ``Snapshot.load(b).compare_to(Snapshot.load(a), 'traceback')``) and
``stats-<pid>-<n>.json``: RSS, traced bytes, thread count, open fds, pyarrow's allocated
bytes and pool, and the 40 commonest object types of :func:`gc.get_objects` with counts.
Type names and counts only: no values, so no secrets. Tracing slows the process and
costs memory itself (tens of bytes per live block): for measurements, never production.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import sys
import os
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path

ENV_DIR = "SQLFRONT_TRACEMALLOC"
ENV_EVERY = "SQLFRONT_TRACEMALLOC_EVERY"
ENV_FRAMES = "SQLFRONT_TRACEMALLOC_FRAMES"
#: type names (comma-separated) whose referrers the stats count (:func:`_holders`)
ENV_HOLDERS = "SQLFRONT_TRACEMALLOC_HOLDERS"


def stats() -> dict:
    """The process's figures now (see the module docstring); bytes unless named otherwise."""
    import psutil

    p = psutil.Process()
    out: dict = {"time": time.time(), "rss": p.memory_info().rss, "threads": threading.active_count(),
                 "os_threads": p.num_threads(), "fds": p.num_fds()}
    if tracemalloc.is_tracing():
        out["traced"], out["traced_peak"] = tracemalloc.get_traced_memory()
    try:
        import pyarrow as pa

        out["arrow_allocated"] = pa.total_allocated_bytes()
        out["arrow_pool"] = pa.default_memory_pool().backend_name
    except ImportError:
        pass
    out["py_blocks"] = sys.getallocatedblocks()
    out.update(_mallinfo())
    out.update(_obmalloc())
    objs = gc.get_objects()
    counts = Counter(type(o).__qualname__ for o in objs)
    out["objects"] = dict(counts.most_common(40))
    out["objects_total"] = sum(counts.values())
    samples = {name: [o for o in objs if type(o).__qualname__ == name][-200:]
               for name in filter(None, os.environ.get(ENV_HOLDERS, "").split(","))}
    del objs
    for name, sample in samples.items():
        out[f"holders of {name}"] = _holders(sample)
    return out


def _holders(sample: list) -> dict[str, int]:
    """What refers to the objects of ``sample``, two levels up: ``"type <- types"`` -> count.
    Slow: two scans of the whole heap per referrer (seconds per type on environmentd)."""
    out: Counter = Counter()
    skip = {id(sample), id(sys._getframe())}
    for o in sample:
        refs = gc.get_referrers(o)
        for r in refs:
            if id(r) in skip or r is refs:
                continue
            ups = sorted({type(u).__qualname__ for u in gc.get_referrers(r) if id(u) not in skip
                          and u is not refs and type(u).__qualname__ != "frame"})
            out[f"{type(r).__qualname__} <- {','.join(ups[:4])}"] += 1
    return dict(out.most_common(15))


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mallinfo() -> dict:
    """glibc's heap: ``malloc_arena`` (bytes from sbrk/arenas), ``malloc_mmap`` (large
    blocks), ``malloc_used`` and ``malloc_free`` (in use, free but kept); {} elsewhere."""
    name = ctypes.util.find_library("c")
    try:
        fn = ctypes.CDLL(name).mallinfo2
    except (OSError, AttributeError, TypeError):
        return {}
    fn.restype = _Mallinfo2
    m = fn()
    return {"malloc_arena": m.arena, "malloc_mmap": m.hblkhd, "malloc_used": m.uordblks, "malloc_free": m.fordblks}


#: ``sys._debugmallocstats()``'s lines kept by :func:`_obmalloc` (label -> stats key)
_OBMALLOC_LINES = {"# arenas allocated current": "obmalloc_arenas", "# bytes in allocated blocks": "obmalloc_used",
                   "# bytes in available blocks": "obmalloc_free_blocks", "pools": "obmalloc_free_pools"}


def _obmalloc() -> dict:
    """CPython's small-object allocator (obmalloc): ``obmalloc_arenas`` (arenas mapped now,
    1 MiB each on 64-bit 3.10+), ``obmalloc_used`` (bytes of live objects in them),
    ``obmalloc_free_blocks`` and ``obmalloc_free_pools`` (bytes free but kept: an arena
    goes back to the OS only when all of it is free). Read from ``sys._debugmallocstats``,
    which writes to file descriptor 2: it is pointed at a temporary file meanwhile (what
    another thread logs then goes there too: tracing is for measurements)."""
    import tempfile

    with tempfile.TemporaryFile() as f:
        saved = os.dup(2)
        try:
            os.dup2(f.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read().decode(errors="replace")
    out = {}
    for line in text.splitlines():
        label, _, value = line.rpartition("=")
        label = label.strip()
        if label.endswith("unused pools * 16384 bytes"):  # "37 unused pools * 16384 bytes"
            label = "pools"
        key = _OBMALLOC_LINES.get(label)
        if key and value.strip().replace(",", "").isdigit():
            out[key] = int(value.strip().replace(",", ""))
    return out


def _loop(directory: Path, every: float) -> None:
    n = 0
    while True:
        time.sleep(every)
        n += 1
        pid = os.getpid()
        if tracemalloc.is_tracing():
            tracemalloc.take_snapshot().dump(str(directory / f"snap-{pid}-{n:03d}.tracemalloc"))
        (directory / f"stats-{pid}-{n:03d}.json").write_text(json.dumps(stats()))


def start_from_env() -> bool:
    """Start tracing and the snapshot thread if ``SQLFRONT_TRACEMALLOC`` is set; True if it was."""
    d = os.environ.get(ENV_DIR)
    if not d:
        return False
    directory = Path(d)
    directory.mkdir(parents=True, exist_ok=True)
    frames = int(os.environ.get(ENV_FRAMES, "10"))
    if frames:
        tracemalloc.start(frames)
    every = float(os.environ.get(ENV_EVERY, "60"))
    threading.Thread(target=_loop, args=(directory, every), name="memtrace", daemon=True).start()
    return True
