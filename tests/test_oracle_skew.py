"""The timestamp oracle under a skewed clock (issue 28's clock-skew nemesis): its debug
hook moves the clock of a running process; timestamps never go back, and a read still
sees every write applied before it."""

from __future__ import annotations

import os
import time

import pytest

from catalog import clock
from catalog.oracle import SKEW_DIR_ENV, TimestampOracle, wall_ms


@pytest.fixture
def skew(tmp_path, monkeypatch):
    monkeypatch.setenv(SKEW_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(clock, "_SKEW_READ_S", 0.0)
    f = tmp_path / str(os.getpid())
    return f.write_text


def test_without_the_hook_the_clock_is_the_wall_clock(monkeypatch):
    monkeypatch.delenv(SKEW_DIR_ENV, raising=False)
    before = int(time.time() * 1000)
    assert before <= wall_ms() <= int(time.time() * 1000)


def test_the_hook_moves_the_clock(skew):
    skew("60000")
    assert wall_ms() - int(time.time() * 1000) >= 59_000
    skew("0")
    assert abs(wall_ms() - int(time.time() * 1000)) < 59_000


def test_a_clock_that_jumps_back_never_takes_timestamps_back(skew, tmp_path):
    o = TimestampOracle(str(tmp_path / "oracle.db"))
    skew("60000")
    ahead = o.write_ts()
    o.apply_write(ahead)
    read_ahead = o.read_ts()
    assert read_ahead >= ahead
    skew("-60000")  # two minutes back at once
    w = o.write_ts()
    assert w > ahead and w > read_ahead
    o.apply_write(w)
    assert o.read_ts() >= w  # the read sees the write applied before it
    assert o.read_ts() >= read_ahead
