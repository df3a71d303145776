"""The local timestamp oracle (catalog/oracle.py) when its durable mark cannot be written
(a full disk): reads go on below the mark, writes fail, and nothing counts as durable
that was not written."""

from __future__ import annotations

import sqlite3

import pytest

from catalog.oracle import TimestampOracle


class _Full:
    """A sqlite connection on a full disk: every write fails as sqlite's does."""

    def __init__(self, conn):
        self.conn = conn

    def execute(self, sql, *args):
        raise sqlite3.OperationalError("database or disk is full")

    def close(self):
        self.conn.close()


def test_on_a_full_disk_reads_stay_at_the_durable_mark_and_writes_fail(tmp_path, monkeypatch):
    o = TimestampOracle(str(tmp_path / "oracle.db"))
    w = o.write_ts()
    o.apply_write(w)
    mark = o._allocated
    o._conn = _Full(o._conn)
    clock = [mark + 10_000]  # well past the mark
    monkeypatch.setattr("catalog.oracle.time.time", lambda: clock[0] / 1000)
    r = o.read_ts()
    assert w <= r <= mark
    with pytest.raises(sqlite3.OperationalError):
        o.write_ts()
    assert o._allocated == mark  # a failed write raised nothing
    o._conn = o._conn.conn  # space freed
    w2 = o.write_ts()
    assert w2 > r and o._allocated > w2
    o.close()
