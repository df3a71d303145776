"""The distributed timestamp oracle on a real PostgreSQL, as two processes would have it
(two oracle handles, separate connections), and reads that fence a shard's upper."""

from __future__ import annotations

import threading

import pyarrow as pa

from catalog.oracle_postgres import PostgresTimestampOracle
from conftest import new_database
from persist import FileBlob, PersistClient, UpperMismatch, open_consensus


def test_write_timestamps_increase_across_processes_and_stay_above_reads(postgres):
    url = new_database(postgres)
    a, b = PostgresTimestampOracle(url), PostgresTimestampOracle(url)
    seen = []
    for i in range(50):
        o = (a, b)[i % 2]
        r = o.read_ts()
        w = o.write_ts()
        assert w > r
        seen.append(w)
        o.apply_write(w)
    assert seen == sorted(set(seen))


def test_a_write_applied_through_one_is_read_through_the_other(postgres):
    url = new_database(postgres)
    a, b = PostgresTimestampOracle(url), PostgresTimestampOracle(url)
    ts = a.write_ts() + 5000  # far ahead of the clock: only apply_write can move read_ts there
    a.observe(ts)
    a.apply_write(ts)
    assert b.read_ts() >= ts
    assert b.write_ts() > ts


def test_read_ts_stays_below_this_process_s_writes_in_flight(postgres):
    o = PostgresTimestampOracle(new_database(postgres))
    w = o.write_ts()
    assert o.read_ts() < w
    o.apply_write(w)
    assert o.read_ts() >= w


def test_batched_read_ts_is_linearizable(postgres):
    """Every read_ts started after apply_write(w) returned is >= w, with 16 threads
    sharing the round trips."""
    url = new_database(postgres)
    writer, reader = PostgresTimestampOracle(url), PostgresTimestampOracle(url)
    stop = threading.Event()
    applied = [0]
    bad = []

    def write():
        while not stop.is_set():
            w = writer.write_ts()
            writer.apply_write(w)
            applied[0] = w

    def read():
        for _ in range(100):
            floor = applied[0]
            if reader.read_ts() < floor:
                bad.append(floor)

    wt = threading.Thread(target=write)
    wt.start()
    readers = [threading.Thread(target=read) for _ in range(16)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    stop.set()
    wt.join()
    assert not bad
    assert reader._started < 1600  # round trips were shared


def test_a_read_fences_the_upper_so_a_slower_write_goes_above_it(tmp_path, postgres):
    url = new_database(postgres)
    schema = pa.schema([("a", pa.int32())])
    writer = PersistClient(FileBlob(tmp_path / "blob"), open_consensus(url), "A:1")
    reader = PersistClient(FileBlob(tmp_path / "blob"), open_consensus(url), "B:1", fence_reads=True)
    writer.create_shard("s", 0)
    b = writer.write_batch("s", pa.table({"a": [1]}, schema=schema))
    snap, hold = reader.read("s", 100)  # the writer was going to append at 50
    reader.release(hold)
    assert reader.state("s").upper == 101
    assert isinstance(writer.compare_and_append("s", [b], 0, 50), UpperMismatch)
    assert reader.read_table("s", schema, 100).num_rows == 0
