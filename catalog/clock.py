"""The timestamp oracles' clock (``catalog.oracle``, ``catalog.oracle_postgres``):
milliseconds since the Unix epoch, with a debug skew."""

from __future__ import annotations

import os
import time

#: debug only (issue 28's clock-skew nemesis): a directory where the file named after a
#: process's pid holds milliseconds (an integer, maybe negative) to add to that process's
#: oracle clock; read at most every ``_SKEW_READ_S``. Unset: the clock is the wall clock.
SKEW_DIR_ENV = "SQLFRONT_DEBUG_ORACLE_SKEW_DIR"
_SKEW_READ_S = 0.1
_skew = {"at": float("-inf"), "ms": 0}


def wall_ms() -> int:
    """The oracle's clock: milliseconds since the Unix epoch (``time.time()``), plus the
    debug skew of :data:`SKEW_DIR_ENV` when set. The oracles never hand out a timestamp
    below one they handed out before, whichever way this clock jumps."""
    now = time.time()
    directory = os.environ.get(SKEW_DIR_ENV)
    if directory and now - _skew["at"] >= _SKEW_READ_S:
        try:
            with open(os.path.join(directory, str(os.getpid()))) as f:
                _skew["ms"] = int(f.read().strip() or 0)
        except (OSError, ValueError):
            _skew["ms"] = 0
        _skew["at"] = now
    return int(now * 1000) + (_skew["ms"] if directory else 0)
