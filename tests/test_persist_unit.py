"""persist alone: updates with times and diffs, compare-and-append, consolidating reads,
since, leased readers, compaction and GC by seqno."""

from __future__ import annotations

import json
import threading

import time

import pyarrow as pa
import pytest

from persist import FileBlob, PersistClient, SinceError, UpperMismatch, open_consensus
from persist.state import DIFF_COLUMN
from persist.write import write_updates
from persist.read import snapshot_of

SCHEMA = pa.schema([("a", pa.int32())])


def client(tmp_path, consensus_url, reader="env:1") -> PersistClient:
    return PersistClient(FileBlob(tmp_path / "blob"), open_consensus(consensus_url), reader)


def rows(p, shard, as_of=None):
    return sorted(p.read_table(shard, SCHEMA, as_of).column("a").to_pylist())


def updates(p, shard, pairs):
    t = pa.table({"a": pa.array([a for a, _ in pairs], pa.int32()), DIFF_COLUMN: pa.array([d for _, d in pairs], pa.int64())})
    return write_updates(p.blob, shard, t)


def test_compare_and_set_refuses_a_stale_seqno(tmp_path, consensus_url):
    c = open_consensus(consensus_url)
    assert c.compare_and_set("s", None, 1, b"one")
    assert not c.compare_and_set("s", None, 1, b"again")
    assert c.compare_and_set("s", 1, 2, b"two")
    assert not c.compare_and_set("s", 1, 2, b"late")
    assert c.head("s") == (2, b"two")


def test_racing_compare_and_sets_from_two_consensus_handles_have_one_winner_per_seqno(consensus_url):
    """Two handles (as two processes would have: separate connections) race 8 threads
    that each try to advance the head by 1 or 2: every win extends the chain the loser
    saw, so the number of wins equals the number of versions written."""
    handles = [open_consensus(consensus_url), open_consensus(consensus_url)]
    handles[0].compare_and_set("s", None, 1, b"0")
    wins: list[int] = []
    lock = threading.Lock()

    def race(i):
        c = handles[i % 2]
        for n in range(25):
            seqno, data = c.head("s")
            new = seqno + 1 + (i + n) % 2
            if c.compare_and_set("s", seqno, new, data + b"," + str(new).encode()):
                with lock:
                    wins.append(new)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seqno, data = handles[1].head("s")
    # the head's data lists every winning seqno in order: no win was lost or forked
    assert [int(x) for x in data.split(b",")[1:]] == sorted(wins) and seqno == max(wins)
    for h in handles:
        h.close()


def test_append_and_read_as_of(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    p.append("s1", pa.table({"a": [1, 2]}, schema=SCHEMA), ts=10)
    p.append("s1", pa.table({"a": [3]}, schema=SCHEMA), ts=20)
    assert rows(p, "s1", 15) == [1, 2]
    assert rows(p, "s1") == [1, 2, 3]
    assert p.state("s1").upper == 21


def test_compare_and_append_refuses_a_stale_upper(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    b = p.write_batch("s", pa.table({"a": [1]}, schema=SCHEMA))
    assert not isinstance(p.compare_and_append("s", [b], 0, 5), UpperMismatch)
    b2 = p.write_batch("s", pa.table({"a": [2]}, schema=SCHEMA))
    r = p.compare_and_append("s", [b2], 0, 7)
    assert isinstance(r, UpperMismatch) and r.current == 6
    assert rows(p, "s") == [1]


def test_retractions_consolidate(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    p.append("s", pa.table({"a": [1, 2, 2, 3]}, schema=SCHEMA), ts=1)
    b = updates(p, "s", [(2, -1), (3, -1), (4, 1)])
    st = p.compare_and_append("s", [b], 2, 5)
    assert st.parts[-1].retractions and st.row_count() == 3
    assert rows(p, "s", 1) == [1, 2, 2, 3]
    assert rows(p, "s", 5) == [1, 2, 4]


def test_concurrent_appends_lose_nothing(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    lock = threading.Lock()
    clock = [0]

    def writer(k):
        for i in range(10):
            b = p.write_batch("s", pa.table({"a": [k * 100 + i]}, schema=SCHEMA))
            while True:
                with lock:
                    clock[0] += 1
                    ts = clock[0]
                upper = p.state("s").upper
                if ts >= upper and not isinstance(p.compare_and_append("s", [b], upper, ts), UpperMismatch):
                    break

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(rows(p, "s")) == 40


def test_read_changes_is_the_difference_of_two_snapshots_read_from_the_change_alone(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    p.append("s", pa.table({"a": list(range(100))}, schema=SCHEMA), ts=1)
    p.append("s", pa.table({"a": [7, 200]}, schema=SCHEMA), ts=3)
    p.compare_and_append("s", [updates(p, "s", [(7, -1), (5, -1), (200, -1), (300, 1)])], 4, 5)
    p.append("s", pa.table({"a": [400]}, schema=SCHEMA), ts=6)

    def changes(lo, hi, **kw):
        t = p.read_changes("s", SCHEMA, lo, hi, **kw)
        return None if t is None else sorted(zip(t.column("a").to_pylist(), t.column(DIFF_COLUMN).to_pylist()))

    # 7 inserted a second time and retracted once, 200 inserted and retracted: net nothing
    assert changes(1, 5) == [(5, -1), (300, 1)]
    assert changes(1, 6) == [(5, -1), (300, 1), (400, 1)]
    assert changes(3, 5) == [(5, -1), (7, -1), (200, -1), (300, 1)]
    assert changes(6, 6) == []
    assert changes(1, 5, max_updates=3) is None  # the parts holding (1, 5] have 6 updates
    p.maintain("s", desired_since=4, force=True)
    with pytest.raises(SinceError):
        p.read_changes("s", SCHEMA, 3, 5)


def test_a_hold_added_to_a_released_group_is_released_at_once_so_the_since_moves_on(tmp_path, consensus_url):
    """A replica that lost a race (or that a wait gave up on) may read its snapshot after
    the reader released its group: that hold must not outlive the group, or the shard's
    since and every part retired after it stay pinned."""
    p = client(tmp_path, consensus_url)
    for ts in (1, 2, 3):
        p.append("s", pa.table({"a": [ts]}, schema=SCHEMA), ts=ts)
    group = p.hold_group()
    group.add(p.hold("s", 1))
    assert len(group) == 1 and p.leases.holds("s")
    group.release()
    group.release()  # idempotent
    _, late = p.read("s", 2)  # the loser's read, after the round ended
    group.add(late)
    assert len(group) == 0 and p.leases.holds("s") == []
    p.maintain("s", desired_since=3, force=True)
    assert p.state("s").since == 3


def test_read_below_since_fails(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    for ts in (1, 2, 3):
        p.append("s", pa.table({"a": [ts]}, schema=SCHEMA), ts=ts)
    p.read_table("s", SCHEMA)  # registers this process's reader
    p.maintain("s", desired_since=3, force=True)
    assert p.state("s").since == 3
    with pytest.raises(SinceError):
        p.read("s", 2)
    assert rows(p, "s", 3) == [1, 2, 3]


def test_a_read_hold_keeps_since_and_parts_through_compaction_and_gc(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    for ts in range(1, 12):
        p.append("s", pa.table({"a": [ts]}, schema=SCHEMA), ts=ts)
    snap, hold = p.read("s", 5)
    p.maintain("s", desired_since=11, force=True)
    assert p.state("s").since == 5  # held back by the read at 5
    st = p.compact("s", max_parts=2)
    assert st is not None and len(st.parts) < 11 and st.retired
    p.maintain("s", desired_since=11, force=True)
    # The retired parts are still in Blob: the hold's seqno is older than their retirement.
    import pyarrow.dataset as ds

    t = pa.concat_tables([ds.dataset(u.removeprefix("file://"), format="parquet").to_table() for u in snap.urls])
    assert sorted(t.column("a").to_pylist()) == [1, 2, 3, 4, 5]
    p.release(hold)
    st = p.maintain("s", desired_since=11, force=True)
    assert not st.retired
    assert p.gc_orphans() == 0
    assert rows(p, "s") == list(range(1, 12))
    assert p.consensus.head("s")[0] == st.seqno


def test_a_hold_taken_before_the_upper_reaches_it_keeps_since_there(tmp_path, consensus_url):
    """A peek holds its inputs when it picks its timestamp and reads them later (after
    waiting for a view's upper or a replica): writes and maintenance in between must not
    move since past it, even when this process's reader was already above it."""
    p = client(tmp_path, consensus_url)
    p.append("s", pa.table({"a": [1]}, schema=SCHEMA), ts=1)
    p.read_table("s", SCHEMA)
    p.maintain("s", desired_since=9, force=True)  # the reader at 9; the shard capped at upper - 1
    st = p.state("s")
    assert (st.since, st.reader("env:1").since) == (1, 9)
    hold = p.hold("s", 5)  # an AS OF between the two
    assert p.state("s").reader("env:1").since == 5
    for ts in range(6, 12):
        p.append("s", pa.table({"a": [ts]}, schema=SCHEMA), ts=ts)
        p.maintain("s", desired_since=ts, force=True)
    assert p.state("s").since == 5
    assert rows(p, "s", 5) == [1]
    p.release(hold)
    assert p.maintain("s", desired_since=11, force=True).since == 11
    with pytest.raises(SinceError):
        p.hold("s", 10)


def test_another_process_reader_expires(tmp_path, consensus_url):
    a = client(tmp_path, consensus_url, "envA:1")
    a.append("s", pa.table({"a": [1]}, schema=SCHEMA), ts=1)
    a.read_table("s", SCHEMA)
    b = PersistClient(a.blob, a.consensus, "envB:1", lease_ms=0)
    b.read_table("s", SCHEMA)
    assert len(a.state("s").readers) == 2
    import time

    time.sleep(0.01)
    a.maintain("s", desired_since=1, force=True)
    assert [r.reader_id for r in a.state("s").readers] == ["envA:1"]


def test_compaction_consolidates_retractions(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    p.append("s", pa.table({"a": [1, 2, 3]}, schema=SCHEMA), ts=1)
    for ts in range(2, 12):
        b = updates(p, "s", [(ts % 3 + 1, -1), (ts % 3 + 1, 1)])
        p.compare_and_append("s", [b], p.state("s").upper, ts)
    p.read_table("s", SCHEMA)
    p.maintain("s", desired_since=11, force=True)
    st = p.compact("s", max_parts=1)
    assert len(st.parts) == 1 and not st.parts[0].retractions
    assert rows(p, "s") == [1, 2, 3]


def test_orphans_and_dropped_shards_are_collected(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    p.append("s", pa.table({"a": [1]}, schema=SCHEMA), ts=1)
    p.append("gone", pa.table({"a": [1]}, schema=SCHEMA), ts=1)
    p.write_batch("s", pa.table({"a": [2]}, schema=SCHEMA))  # never appended
    assert p.gc_orphans({"s"}) == 2
    assert p.blob.list_keys("gone/") == [] and p.consensus.keys() == ["s"]
    assert rows(p, "s") == [1]


def test_expire_previous_readers_of_this_environment(tmp_path, consensus_url):
    old = client(tmp_path, consensus_url, "env:old")
    old.append("s", pa.table({"a": [1]}, schema=SCHEMA), ts=1)
    old.read_table("s", SCHEMA)
    new = client(tmp_path, consensus_url, "env:new")
    new.expire_previous_readers()
    assert new.state("s").readers == ()


# -- inline parts (Materialize's inline writes) -------------------------------------------


def test_a_small_batch_is_inline_in_the_state_and_reads_like_a_part_in_blob(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    b = p.batch("s", pa.table({"a": [1, 2]}, schema=SCHEMA))
    assert b.inline is not None and p.blob.list_keys() == []
    st = p.compare_and_append("s", [b], 0, 5)
    assert [q.inline is not None for q in st.parts] == [True] and st.inline_bytes() == b.bytes
    p.append("s", pa.table({"a": [3]}, schema=SCHEMA), ts=7)  # a part in Blob next to it
    assert rows(p, "s", 5) == [1, 2] and rows(p, "s") == [1, 2, 3]
    # Another client of the same Consensus (a restarted process) reads it from the state.
    other = client(tmp_path, consensus_url, "env:2")
    assert rows(other, "s") == [1, 2, 3]
    listen = other.listen("s", 5)
    b2 = other.batch("s", pa.table({"a": [4]}, schema=SCHEMA))
    other.compare_and_append("s", [b2], 8, 9)
    got = listen.next(5)
    assert sorted(got.updates.column("a").to_pylist()) == [3, 4]
    listen.close()


def test_inline_limits_send_big_batches_and_full_states_to_blob(tmp_path, consensus_url, monkeypatch):
    from persist import write

    p = client(tmp_path, consensus_url)
    big = p.batch("s", pa.table({"a": list(range(2000))}, schema=SCHEMA))  # 8 KB of int32
    assert big.inline is None and p.blob.list_keys() == [big.key]
    one = len(write.encode_inline(pa.table({"a": [0]}, schema=SCHEMA)))
    monkeypatch.setattr(write, "INLINE_TOTAL_MAX_BYTES", 3 * one + 1)
    ts = 1
    kinds = []
    for i in range(6):
        b = p.batch("s", pa.table({"a": [i]}, schema=SCHEMA))
        kinds.append(b.inline is not None)
        p.compare_and_append("s", [b], p.state("s").upper, ts := ts + 1)
    # three fit in the state, the rest go to Blob
    assert kinds == [True] * 3 + [False] * 3 and p.state("s").inline_bytes() == 3 * one
    assert rows(p, "s") == list(range(6))


def test_compaction_moves_inline_parts_to_blob_and_gc_leaves_nothing(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    p.append("s", pa.table({"a": [100]}, schema=SCHEMA), ts=1)
    for ts in range(2, 12):
        b = p.batch("s", pa.table({"a": [ts]}, schema=SCHEMA))
        p.compare_and_append("s", [b], p.state("s").upper, ts)
    first = p.state("s").parts[0].key
    assert sum(q.inline is not None for q in p.state("s").parts) == 10
    p.read_table("s", SCHEMA)
    p.maintain("s", desired_since=11, force=True)
    st = p.compact("s")
    assert st is not None and all(q.inline is None for q in st.parts) and st.inline_bytes() == 0
    # only the part in Blob waits for GC; the inline ones left with the state
    assert len(st.parts) == 1 and st.retired[-1].keys == (first,)
    p.maintain("s", desired_since=11, force=True)
    assert p.gc_orphans() == 0 and p.blob.list_keys() == [st.parts[0].key]
    assert rows(p, "s") == list(range(2, 12)) + [100]


def test_inline_retractions_consolidate_on_read_and_in_compaction(tmp_path, consensus_url):
    p = client(tmp_path, consensus_url)
    p.append("s", pa.table({"a": [1, 2, 2, 3]}, schema=SCHEMA), ts=1)
    t = pa.table({"a": pa.array([2, 3, 4], pa.int32()), DIFF_COLUMN: pa.array([-1, -1, 1], pa.int64())})
    b = write_updates(p.blob, "s", t, inline_budget=4096)
    assert b.inline is not None and b.retractions and b.net == -1
    st = p.compare_and_append("s", [b], 2, 5)
    assert st.retractions_visible(5) and not st.retractions_visible(4)
    assert rows(p, "s", 4) == [1, 2, 2, 3] and rows(p, "s") == [1, 2, 4]
    p.read_table("s", SCHEMA)
    p.maintain("s", desired_since=5, force=True)
    st = p.compact("s")  # small enough to consolidate in memory
    # no retraction left: a plain part (rows), not changes that reads must apply
    assert len(st.parts) == 1 and st.parts[0].inline is None and not st.parts[0].retractions and not st.parts[0].diffs
    assert rows(p, "s") == [1, 2, 4]


def test_consolidation_waits_for_since_to_pass_a_parts_updates():
    """Consolidating writes every update at since: a part with updates after since stays
    out until since passes them, so AS OF reads and listeners see them when they happened."""
    from persist.compact import choose
    from persist.state import Part, ShardState

    old = Part("a", 0, 5, 3, 100, ts=4, net=3)
    update = Part("b", 5, 9, 2, 100, ts=8, diffs=True, retractions=True, net=0)
    newer = Part("c", 9, 12, 1, 100, ts=11, net=1)
    state = ShardState(seqno=3, since=9, upper=12, parts=(old, update, newer))
    assert [p.key for p in choose(state)] == ["a", "b"]
    assert choose(ShardState(seqno=3, since=6, upper=12, parts=(old, update, newer))) == []
    assert [p.key for p in choose(ShardState(seqno=3, since=11, upper=12, parts=(old, update, newer)))] == \
        ["a", "b", "c"]


def test_changes_to_a_big_shard_merge_by_size_and_leave_its_plain_part_alone():
    """Size-tiered with retractions (Materialize's Spine): a few changes to a big shard
    are merged among themselves, never into the big part; once they reach 1/SIZE_RATIO
    of it, or too many for a read's broadcast, the whole shard is consolidated."""
    from persist.compact import CHANGES_BROADCAST_UPDATES, SIZE_RATIO, choose
    from persist.state import Part, ShardState

    big = Part("big", 0, 2, 1_000_000, 10 << 20, ts=1, net=1_000_000)
    changes = [Part(f"c{i}", 2 + i, 3 + i, 2, 100, ts=2 + i, diffs=True, retractions=True, net=0) for i in range(9)]
    state = ShardState(seqno=3, since=20, upper=20, parts=(big, *changes[:2]))
    assert choose(state) == []  # few parts: reads apply the changes by a broadcast
    state = ShardState(seqno=3, since=20, upper=20, parts=(big, *changes))
    assert sorted(p.key for p in choose(state)) == [f"c{i}" for i in range(9)]
    # changes after since wait for it (consolidation writes them at since)
    state = ShardState(seqno=3, since=6, upper=20, parts=(big, *changes))
    assert sorted(p.key for p in choose(state)) == ["c0", "c1", "c2", "c3", "c4"]
    n = big.updates // SIZE_RATIO
    grown = Part("g", 2, 3, n, 1 << 20, ts=2, diffs=True, retractions=True, net=0)
    assert sorted(p.key for p in choose(ShardState(seqno=3, since=20, upper=20, parts=(big, grown)))) == ["big", "g"]
    many = Part("g", 2, 3, CHANGES_BROADCAST_UPDATES + 1, 1 << 20, ts=2, diffs=True, retractions=True, net=0)
    huge = Part("big", 0, 2, 100 * many.updates, 10 << 20, ts=1, net=100 * many.updates)
    assert len(choose(ShardState(seqno=3, since=20, upper=20, parts=(huge, many)))) == 2


def test_a_merge_of_some_parts_keeps_retractions_of_rows_in_others(tmp_path, consensus_url):
    """Consolidating a tier of small parts keeps each retraction whose row is in a part
    outside the merge (as a -1 of the merged part): the rows read stay the same."""
    from persist.read import consolidate_updates

    t = pa.table({"a": pa.array([1, 2, 2, 3], pa.int32()), DIFF_COLUMN: pa.array([1, -1, -1, 1], pa.int64())})
    out = consolidate_updates(t, SCHEMA)
    assert sorted(zip(out.column("a").to_pylist(), out.column(DIFF_COLUMN).to_pylist())) == \
        [(1, 1), (2, -1), (2, -1), (3, 1)]
    p = client(tmp_path, consensus_url)
    p.append("s", pa.table({"a": pa.array(range(20_000), pa.int32())}), ts=1)
    big = p.state("s").parts[0].key
    b1 = write_updates(p.blob, "s", pa.table({"a": pa.array([5], pa.int32()), DIFF_COLUMN: pa.array([-1], pa.int64())}),
                       inline_budget=4096)
    p.compare_and_append("s", [b1], 2, 2)
    b2 = write_updates(p.blob, "s", pa.table({"a": pa.array([7, 70_000], pa.int32()),
                                              DIFF_COLUMN: pa.array([-1, 1], pa.int64())}), inline_budget=4096)
    p.compare_and_append("s", [b2], 3, 3)
    want = sorted(set(range(20_000)) - {5, 7} | {70_000})
    assert rows(p, "s") == want
    p.read_table("s", SCHEMA)
    p.maintain("s", desired_since=3, force=True)
    st = p.compact("s", max_parts=1)
    assert st is not None and len(st.parts) == 2 and st.parts[0].key == big
    merged = st.parts[1]
    assert merged.inline is None and merged.retractions and merged.updates == 3 and merged.net == -1
    assert rows(p, "s") == want


def test_blob_keys_name_their_writer_and_orphans_take_a_filter(tmp_path, consensus_url):
    from persist.blob import part_writer

    p = PersistClient(FileBlob(tmp_path / "blob", "envA"), open_consensus(consensus_url), "envA:1")
    p.append("s", pa.table({"a": [1]}, schema=SCHEMA), ts=1)
    mine = p.write_batch("s", pa.table({"a": [2]}, schema=SCHEMA))  # never appended
    other = FileBlob(tmp_path / "blob", "envB")
    theirs = other.new_part_key("s")
    other.put(theirs, b"in flight")
    assert part_writer(mine.key) == "envA" and part_writer(theirs) == "envB"
    assert part_writer("s/0123abcd.parquet") is None and part_writer("inline/0123") is None
    assert p.blob.modified_at(theirs) is not None and p.blob.modified_at("s/absent.parquet") is None
    with pytest.raises(ValueError):
        FileBlob(tmp_path / "blob", "a-b")
    # only what the filter accepts goes; shards are kept without live_shards
    assert p.gc_orphans(None, lambda k: part_writer(k) == "envA") == 1
    assert p.blob.list_keys() == sorted([p.state("s").parts[0].key, theirs])
    assert rows(p, "s") == [1]


def test_a_sealed_shard_refuses_appends_until_unsealed(tmp_path):
    from persist import ShardSealed

    p = client(tmp_path, str(tmp_path / "consensus.db"))
    p.create_shard("s", 0)
    p.append("s", pa.table({"a": pa.array([1], pa.int32())}), 1)
    assert isinstance(p.seal("s", expected_upper=1), UpperMismatch)  # a write landed: not sealed
    st = p.seal("s", expected_upper=2)
    assert st.sealed and st.upper == 2
    with pytest.raises(ShardSealed):  # even from a stale known state
        p.compare_and_append("s", [], 2, 5)
    with pytest.raises(ShardSealed):
        p.append("s", pa.table({"a": pa.array([2], pa.int32())}), 5)
    assert rows(p, "s") == [1]  # still readable
    p.unseal("s")
    p.append("s", pa.table({"a": pa.array([3], pa.int32())}), 5)
    assert rows(p, "s") == [1, 3]


def test_a_dropped_shard_leaves_a_sealed_tombstone(tmp_path):
    from persist import ShardSealed

    p = client(tmp_path, str(tmp_path / "consensus.db"))
    p.create_shard("s", 0)
    p.append("s", pa.table({"a": pa.array(range(3000), pa.int32())}), 1)  # a part in Blob
    keys = p.state("s").blob_keys()
    assert keys
    p.drop_shard("s")
    st = p.state("s")
    assert st.sealed and st.parts == ()
    assert not set(p.blob.list_keys()) & keys
    with pytest.raises(ShardSealed):  # a writer that planned before the drop does not revive it
        p.append("s", pa.table({"a": pa.array([2], pa.int32())}), 5)
    assert p.gc_orphans(live_shards=set()) >= 0 and p.consensus.head("s") is None  # gone at the next start



def _read_files(snap) -> list:
    import pyarrow.dataset as ds

    return sorted(pa.concat_tables([ds.dataset(u.removeprefix("file://"), format="parquet").to_table()
                                    for u in snap.urls]).column("a").to_pylist())


def test_a_dropped_shard_keeps_the_parts_a_read_in_flight_holds(tmp_path):
    """Issue 28 (30-minute chaos run): an ALTER TABLE moved a table's rows to a new shard
    and deleted the old one's parts at once, while a peek planned before it was still
    reading them (KD001 'File does not exist'). The tombstone now retires the parts and
    GC deletes them by the seqno rule, once no read holds the state before it."""
    from persist import ShardSealed

    p = client(tmp_path, str(tmp_path / "consensus.db"))
    p.create_shard("s", 0)
    p.append("s", pa.table({"a": pa.array(range(3000), pa.int32())}), 1)  # a part in Blob
    keys = p.state("s").blob_keys()
    snap, hold = p.read("s", 1)  # a peek in flight: the replica reads the files later
    assert not p.drop_shard("s")  # the read holds the parts: not all gone yet
    st = p.state("s")
    assert st.sealed and st.parts == ()
    assert _read_files(snap) == list(range(3000))
    with pytest.raises(ShardSealed):  # a read of the tombstone plans again, never finds it empty
        p.read("s", 1)
    p.release(hold)
    assert p.drop_shard("s")  # again (finalize's next round): now collected
    assert not set(p.blob.list_keys()) & keys
    assert p.drop_shard("s")  # idempotent



def test_a_read_holds_the_state_it_snapshots_even_if_gc_runs_right_after_it_read_it(tmp_path):
    """``read`` took its hold after reading the state: a compaction and a maintenance
    round in between (another thread) moved this process's reader past that state and
    deleted its parts before the hold existed. The hold now comes first."""
    p = client(tmp_path, str(tmp_path / "consensus.db"))
    for ts in range(1, 12):
        p.append("s", pa.table({"a": pa.array(range(ts * 1000, ts * 1000 + 1000), pa.int32())}), ts=ts)
    p.read_table("s", SCHEMA)  # registers this process's reader
    read_state = p.state

    def state_then_gc(shard_id):
        st = read_state(shard_id)
        p.state = read_state  # once
        assert p.compact("s", max_parts=2) is not None
        p.maintain("s", desired_since=11, force=True)
        return st

    p.state = state_then_gc
    snap, hold = p.read("s", 11)
    assert len(_read_files(snap)) == 11_000
    p.release(hold)

def test_held_state_is_read_after_its_hold_even_when_gc_passes_the_state_known_before(tmp_path):
    """SUBSCRIBE's dataflow step held the states it had learned earlier (``latest``): a
    compaction and a maintenance round between learning and holding moved this process's
    reader past them and deleted their parts. ``held_state`` holds first, then reads."""
    p = client(tmp_path, str(tmp_path / "consensus.db"))
    for ts in range(1, 12):
        p.append("s", pa.table({"a": pa.array(range(ts * 1000, ts * 1000 + 1000), pa.int32())}), ts=ts)
    p.read_table("s", SCHEMA)  # registers this process's reader
    known = p.latest

    def latest_then_gc(shard_id):
        st = known(shard_id)
        p.latest = known  # once
        assert p.compact("s", max_parts=2) is not None
        p.maintain("s", desired_since=11, force=True)
        return st

    p.latest = latest_then_gc
    st, hold = p.held_state("s", 11)
    p.compact("s", max_parts=1)
    p.maintain("s", desired_since=11, force=True)  # a later round keeps what the hold reads
    assert len(_read_files(snapshot_of(st, "s", 11, p.blob.url))) == 11_000
    p.release(hold)


def test_finalize_keeps_a_shard_listed_while_a_read_holds_its_parts(tmp_path):
    from catalog import durable
    from catalog.snapshot import Table
    from sqlfront.coordinator import Coordinator
    from sqlfront.finalize import finalize

    p = client(tmp_path, str(tmp_path / "consensus.db"))
    store = durable.CatalogStore(str(tmp_path / "catalog.db"))
    c = Coordinator(store, store.load(), lambda old, new, ops: None)
    c.start()
    try:
        c.transact(lambda snap, ids: [durable.CreateTable(Table("u1", "public", "t", (), "u7"))])
        p.create_shard("u7", 0)
        p.append("u7", pa.table({"a": pa.array(range(3000), pa.int32())}), 1)
        snap, hold = p.read("u7", 1)
        c.transact(lambda snap, ids: [durable.DropTable("u1")])
        assert finalize(p, c) == 0 and set(c.snapshot.to_finalize) == {"u7"}
        assert _read_files(snap) == list(range(3000))
        p.release(hold)
        assert finalize(p, c) == 1 and dict(c.snapshot.to_finalize) == {}
        assert not [k for k in p.blob.list_keys() if k.startswith("u7/")]
    finally:
        c.stop()

def test_group_commit_fails_only_the_writers_of_a_sealed_shard(tmp_path):
    """A write to a sealed shard fails with ShardSealed; the rest of its group commits."""
    import concurrent.futures

    from catalog.oracle import TimestampOracle
    from persist import ShardSealed, SqliteConsensus
    from sqlfront.group_commit import GroupCommitter, Write

    p = client(tmp_path, str(tmp_path / "consensus.db"))
    for s in ("open", "sealed"):
        p.create_shard(s, 0)
    w = GroupCommitter(p, SqliteConsensus(str(tmp_path / "txns.db")), TimestampOracle(str(tmp_path / "oracle.db")))
    try:
        assert w.seal("sealed").sealed
        one = pa.table({"a": pa.array([1], pa.int32())})
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futs = [pool.submit(w.commit, [Write(s, rows=one)]) for s in ("open", "sealed", "open")]
            futs.append(pool.submit(w.commit, [Write("open", rows=one), Write("sealed", rows=one)]))
        outcomes = [f.exception() for f in futs]
        assert outcomes[0] is None and outcomes[2] is None
        assert isinstance(outcomes[1], ShardSealed) and isinstance(outcomes[3], ShardSealed)
        assert rows(p, "open") == [1, 1]  # the two-shard write left nothing behind
        assert rows(p, "sealed") == []
    finally:
        w.stop()


def _txns_of(tmp_path, consensus_url):
    from persist import SqliteConsensus
    from persist.postgres import PostgresConsensus

    if consensus_url.startswith("postgres"):
        return PostgresConsensus(consensus_url, table="txns")
    return SqliteConsensus(str(tmp_path / "txns.db"))


@pytest.mark.parametrize("when", ["after-record", "before-record"])
def test_another_process_s_seal_never_cuts_a_multi_table_commit_in_half(tmp_path, consensus_url, when):
    """Issue 28's two-process run: process b's ALTER TABLE sealed shard r between process
    a's check of its shards and its appends, so a's part of t landed while its client got
    40001 (G1a for every read that saw it). The seal goes through the transaction record
    a shares with b: sealing after a recorded, b applies a's part of r first and a
    commits whole; sealing before, a finds the mark and nothing of it lands."""
    from catalog.oracle import TimestampOracle
    from persist import ShardSealed
    from sqlfront.group_commit import GroupCommitter, Write

    a_persist, b_persist = client(tmp_path, consensus_url, "a:1"), client(tmp_path, consensus_url, "b:1")
    for s in ("t", "r"):
        a_persist.create_shard(s, 0)
    oracle = TimestampOracle(str(tmp_path / "oracle.db"))
    a = GroupCommitter(a_persist, _txns_of(tmp_path, consensus_url), oracle, owner="a")
    b = GroupCommitter(b_persist, _txns_of(tmp_path, consensus_url), oracle, owner="b")
    sealed = []

    def seal_once():
        if not sealed:
            sealed.append(b.seal("r"))

    if when == "after-record":  # b seals as a appends its first shard
        append = a_persist.compare_and_append

        def cut(*args, **kw):
            seal_once()
            return append(*args, **kw)
        a_persist.compare_and_append = cut
    else:  # b seals right after a checked its shards open
        state = a_persist.state

        def cut(shard):
            st = state(shard)
            if shard == "r":
                seal_once()
            return st
        a_persist.state = cut
    one = pa.table({"a": pa.array([7], pa.int32())})
    try:
        try:
            a.commit([Write("t", rows=one), Write("r", rows=one)])
            failed = False
        except ShardSealed:
            failed = True
        assert sealed and sealed[0].sealed
        got = (rows(b_persist, "t"), rows(b_persist, "r"))
        assert got == (([], []) if failed else ([7], [7])), (failed, got)
        assert failed == (when == "before-record")
        assert b.marks().keys() == {"r"} and b.marks()["r"]["owner"] == "b"
        b.unseal("r")
        assert b.marks() == {} and not b_persist.state("r").sealed
        a.commit([Write("t", rows=one), Write("r", rows=one)])  # open again for both
    finally:
        a.stop()
        b.stop()


@pytest.mark.parametrize("conditional", ["update", "validated-read"])
def test_a_conditional_shard_written_after_the_check_aborts_a_multi_table_commit(tmp_path, consensus_url, conditional):
    """Issue 28's two-process run (seed 48): a block's UPDATE of r, computed at r's upper
    U, committed with an append to t; process b wrote r between a's check of U and a's
    append, and a's part of r was applied anyway at r's new upper: two UPDATEs of one
    row both counted (the checker's "duplicate"). Likewise a read validated at U (a
    conditional append of nothing) went unchecked (G2). Now a's conditional shards are
    appended first, and one that moved takes the recorded transaction back: Conflict,
    nothing of it lands, the record is left empty; the next attempt commits."""
    from catalog.oracle import TimestampOracle
    from sqlfront.group_commit import Conflict, GroupCommitter, Write, _txns

    a_persist, b_persist = client(tmp_path, consensus_url, "a:1"), client(tmp_path, consensus_url, "b:1")
    for s in ("t", "r"):
        a_persist.create_shard(s, 0)
    oracle = TimestampOracle(str(tmp_path / "oracle.db"))
    txns = _txns_of(tmp_path, consensus_url)
    a = GroupCommitter(a_persist, txns, oracle, owner="a")
    b = GroupCommitter(b_persist, _txns_of(tmp_path, consensus_url), oracle, owner="b")
    one = pa.table({"a": pa.array([7], pa.int32())})
    two = pa.table({"a": pa.array([8], pa.int32())})
    append, wrote = a_persist.compare_and_append, []

    def b_writes_r_first(*args, **kw):  # b's write lands after a recorded, before a's appends
        if not wrote:
            wrote.append(b.commit([Write("r", rows=two)]))
        return append(*args, **kw)

    def writes(upper):
        r = Write("r", rows=one, expected_upper=upper) if conditional == "update" else Write("r", expected_upper=upper)
        return [Write("t", rows=one), r]

    try:
        a_persist.compare_and_append = b_writes_r_first
        with pytest.raises(Conflict):
            a.commit(writes(a_persist.state("r").upper))
        assert wrote and rows(b_persist, "t") == [] and rows(b_persist, "r") == [8]
        assert _txns(txns)[1]["pending"] == []
        a.commit(writes(a_persist.state("r").upper))  # checked again at the new upper: commits
        assert rows(b_persist, "t") == [7] and sorted(rows(b_persist, "r")) == ([7, 8] if conditional == "update" else [8])
    finally:
        a.stop()
        b.stop()


def test_a_dropped_shard_s_seal_mark_is_swept_after_a_grace(tmp_path):
    """Marks of shards no catalog names go after ``MARK_GRACE_S``; a sealed shard's that
    the catalog still names (an ALTER TABLE under way) stays."""
    from catalog.oracle import TimestampOracle
    from sqlfront.group_commit import MARK_GRACE_S, GroupCommitter

    p = client(tmp_path, str(tmp_path / "consensus.db"))
    for s in ("dropped", "altering"):
        p.create_shard(s, 0)
    w = GroupCommitter(p, _txns_of(tmp_path, "sqlite"), TimestampOracle(str(tmp_path / "oracle.db")), owner="a")
    try:
        w.seal("dropped")
        w.seal("altering")
        assert p.drop_shard("dropped")
        assert w.sweep_marks({"altering"}) == 0  # within the grace
        assert w.sweep_marks({"altering"}, now=time.time() + MARK_GRACE_S + 1) == 1
        assert w.marks().keys() == {"altering"}
    finally:
        w.stop()


def test_a_state_encodes_its_parts_once_and_decodes_to_itself(tmp_path, consensus_url):
    """Each part's JSON is kept on the part (a state is encoded whole at every
    compare-and-set); the encoding still decodes to an equal state, inline parts too."""
    p = client(tmp_path, consensus_url)
    p.create_shard("s", 0)
    upper = 0
    for ts in range(1, 4):
        st = p.compare_and_append("s", [p.batch("s", pa.table({"a": pa.array([ts], pa.int32())}))], upper, ts)
        upper = st.upper
    assert all(part.inline is not None for part in st.parts)
    first = st.parts[0]
    assert first.json_text is first.json_text  # kept
    from persist.state import ShardState

    assert ShardState.decode(st.encode()) == st
    assert ShardState.decode(p.consensus.head("s")[1]) == st


def test_latest_state_after_own_and_other_compare_and_sets(tmp_path, consensus_url):
    """A compare-and-set this process won through its Consensus (compaction, maintenance)
    is learned as bytes and decoded when first asked for; the writer's own
    compare-and-append hands over the state it built."""
    p = client(tmp_path, consensus_url)
    p.create_shard("s", 0)
    st = p.compare_and_append("s", [p.batch("s", pa.table({"a": pa.array([1], pa.int32())}))], 0, 1)
    assert p.latest("s") is st
    from persist.state import ShardState

    head = p.consensus.head("s")
    moved = ShardState.decode(head[1]).next(since=1)
    assert p.consensus.compare_and_set("s", head[0], moved.seqno, moved.encode())
    assert p.latest("s") == moved
    assert rows(p, "s") == [1]


def test_group_commit_converts_insert_values_together_and_fails_only_a_bad_writer(tmp_path):
    """INSERTs hand their rows as Python values; the committer makes the Arrow table of a
    group. A writer whose values Arrow refuses fails alone; the others commit."""
    import concurrent.futures

    from catalog.oracle import TimestampOracle
    from catalog.snapshot import Column, Table
    from catalog.types import INT4
    from persist import SqliteConsensus
    from sqlfront.group_commit import GroupCommitter, Write

    p = client(tmp_path, str(tmp_path / "consensus.db"))
    p.create_shard("s", 0)
    table = Table("u1", "public", "t", (Column("a", INT4),), "s")
    w = GroupCommitter(p, SqliteConsensus(str(tmp_path / "txns.db")), TimestampOracle(str(tmp_path / "oracle.db")))
    try:
        values = [[(1,)], [(2,), (3,)], [("not a number",)], [(None,)], [(4,)]]
        with concurrent.futures.ThreadPoolExecutor(5) as pool:
            futs = [pool.submit(w.commit, [Write("s", values=v, table=table)]) for v in values]
        outcomes = [f.exception() for f in futs]
        assert [o is None for o in outcomes] == [True, True, False, True, True]
        assert isinstance(outcomes[2], (pa.ArrowInvalid, pa.ArrowTypeError))
        got = p.read_table("s", SCHEMA).column("a").to_pylist()
        assert sorted(got, key=lambda v: (v is None, v)) == [1, 2, 3, 4, None]
    finally:
        w.stop()


def test_a_consensus_refuses_a_blob_other_than_its_own(tmp_path, consensus_url):
    """Issue 27: a shared Consensus with a private Blob is refused at start, by ids (the
    marker file in the Blob, the claims in Consensus), not by comparing paths."""
    from persist.binding import BLOB_MARKER, BlobMismatch, bind_blob

    consensus = open_consensus(consensus_url)
    mine = FileBlob(tmp_path / "a" / "blob")
    bind_blob(consensus, mine)
    bind_blob(open_consensus(consensus_url), mine)  # again, and from another handle: still its Blob
    assert mine.get(BLOB_MARKER) is not None and mine.list_keys() == []  # the marker is no shard
    with pytest.raises(BlobMismatch, match=r"Blob is file://.*/a/blob, but this process's Blob .*/b/blob"):
        bind_blob(consensus, FileBlob(tmp_path / "b" / "blob"), wait_s=0)


def test_a_blob_refuses_a_consensus_other_than_its_own(tmp_path, consensus_url):
    from persist.binding import BlobMismatch, bind_blob

    blob = FileBlob(tmp_path / "blob")
    bind_blob(open_consensus(consensus_url), blob)
    with pytest.raises(BlobMismatch, match="belongs to another persist Consensus"):
        bind_blob(open_consensus(str(tmp_path / "private-consensus.db")), blob)


def test_a_process_starting_with_the_claims_winner_waits_for_its_marker(tmp_path, consensus_url):
    """Two processes of one Blob starting at once: the loser of the claim sees no marker
    yet and waits for the winner's."""
    from persist.binding import BLOB_CLAIM, BLOB_MARKER, CONSENSUS_ID_CLAIM, bind_blob

    consensus = open_consensus(consensus_url)
    blob = FileBlob(tmp_path / "blob")
    cid = consensus.claim(CONSENSUS_ID_CLAIM, "c1")
    won = json.dumps({"blob": "b1", "consensus": cid, "url": "file:///elsewhere"}, sort_keys=True)
    consensus.claim(BLOB_CLAIM, won)  # the winner claimed, and writes its marker a moment later
    late = threading.Timer(0.5, blob.put, (BLOB_MARKER, won.encode()))
    late.start()
    bind_blob(consensus, blob, wait_s=30)
    late.join()


def test_the_blob_probe_says_where_and_why_an_executor_could_not_read(tmp_path):
    """spark_exec.blob_probe against stand-in sessions: one that reads the probe part back,
    one whose executors see no such file (Spark's error, first line kept)."""
    import pyarrow.parquet as pq

    from persist.binding import BLOB_MARKER
    from spark_exec.blob_probe import BlobUnreachable, probe_blob

    blob = FileBlob(tmp_path / "blob")

    class Reads:
        def __init__(self, fail: str | None):
            self.read, self.fail = self, fail

        def schema(self, _):
            return self

        def parquet(self, url):
            self.url = url
            return self

        def collect(self):
            if self.fail:
                raise RuntimeError(self.fail)
            return [(v,) for v in pq.read_table(self.url.removeprefix("file://")).column("probe").to_pylist()]

    probe_blob(Reads(None), blob)
    assert blob.list_keys() == [] and blob.get(BLOB_MARKER) is None  # the probe part is gone again
    with pytest.raises(BlobUnreachable) as e:
        probe_blob(Reads("[FAILED_READ_FILE] File file:/x does not exist\n\tat org.apache..."), blob)
    msg = str(e.value)
    assert "cannot read persist Blob (probe part file://" in msg and "File file:/x does not exist" in msg
    assert "org.apache" not in msg and "--persist-blob-url" in msg
    assert blob.list_keys() == []


def _versions(consensus_url: str, shard: str) -> int:
    if consensus_url.startswith("postgres"):
        import psycopg

        with psycopg.connect(consensus_url) as c:
            return c.execute("SELECT count(*) FROM consensus WHERE shard = %s", (shard,)).fetchone()[0]
    import sqlite3

    with sqlite3.connect(consensus_url) as c:
        return c.execute("SELECT count(*) FROM consensus WHERE shard = ?", (shard,)).fetchone()[0]


def test_sustained_small_writes_keep_consensus_history_bounded(tmp_path, consensus_url):
    """Issue 28's fourth hole: every append adds a Consensus version (a full state, with
    its inline parts); only a maintenance round that committed a state of its own
    truncated them, so small writes between rounds piled versions up (297 versions, 10 MB,
    measured under one client's INSERTs). The writer now truncates as it goes."""
    p = client(tmp_path, consensus_url)
    p.create_shard("s", 0)
    for ts in range(1, 301):
        p.append("s", pa.table({"a": pa.array([ts], pa.int32())}), ts)
    assert _versions(consensus_url, "s") <= 64  # (TRUNCATE_EVERY is 32)
    assert rows(p, "s") == list(range(1, 301))


def test_decoded_parts_are_cached_only_while_a_state_holds_them(tmp_path):
    """Decoding reuses the parts a state shares with the one decoded before
    (``persist.state._DECODED``); a part compacted away must leave that cache. It was a
    dict cleared only at 4096 entries: every dead inline part stayed, its rows twice
    (~1.7 KiB), and environmentd grew by up to 7 MiB under bench/chaos.py (issue 28)."""
    import gc

    from persist import state

    p = client(tmp_path, str(tmp_path / "consensus.db"))
    p.append("s", pa.table({"a": [0]}, schema=SCHEMA), ts=1)
    for ts in range(2, 42):
        b = p.batch("s", pa.table({"a": [ts]}, schema=SCHEMA))
        p.compare_and_append("s", [b], p.state("s").upper, ts)
    inline = {q.key for q in p.state("s").parts if q.inline is not None}
    assert len(inline) == 40 and inline <= set(state._DECODED)
    p.maintain("s", desired_since=41, force=True)
    st = p.compact("s")
    assert st is not None and st.inline_bytes() == 0
    p.state("s")
    gc.collect()
    assert not inline & set(state._DECODED)  # was: all 40 still cached


def test_a_read_point_sees_a_write_that_landed_after_the_state_was_read(tmp_path, consensus_url):
    # An UPDATE read the shard's state, then another process's write landed at 50, and the
    # oracle's read timestamp (10) is older than that write: the read point must be at or
    # after the write, just below the upper the UPDATE's append expects. (Before, with
    # fencing: as_of 10, expected upper 51, and the UPDATE computed from rows without the
    # write committed over it: the chaos checker's duplicate row.)
    p = PersistClient(FileBlob(tmp_path / "blob"), open_consensus(consensus_url), "env:1", fence_reads=True)
    p.create_shard("s", 0)
    st = p.state("s")
    assert not isinstance(p.compare_and_append("s", [updates(p, "s", [(7, 1)])], st.upper, 50), UpperMismatch)
    as_of, fenced = p.read_point("s", st, 10)
    assert fenced.upper == as_of + 1 and as_of >= 50
    assert rows(p, "s", as_of) == [7]
    # nothing landed since: the read point is the fence, just above the read timestamp
    as_of, fenced = p.read_point("s", fenced, 80)
    assert (as_of, fenced.upper) == (80, 81)
    # without fencing (one process writes the shard): the latest of the two times, the upper as read
    q = PersistClient(FileBlob(tmp_path / "blob"), open_consensus(consensus_url), "env:2")
    assert q.read_point("s", fenced, 90) == (90, fenced) and q.read_point("s", fenced, 3) == (80, fenced)
