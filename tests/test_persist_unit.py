"""persist alone: parts in Blob, state in Consensus, compare-and-set."""

from __future__ import annotations

import threading

import pyarrow as pa

from persist import FileBlob, PersistClient, SqliteConsensus


def client(tmp_path) -> PersistClient:
    return PersistClient(FileBlob(tmp_path / "blob"), SqliteConsensus(str(tmp_path / "consensus.db")))


def test_compare_and_set_refuses_a_stale_seqno(tmp_path):
    c = SqliteConsensus(str(tmp_path / "c.db"))
    assert c.compare_and_set("s", None, 1, b"one")
    assert not c.compare_and_set("s", None, 1, b"again")
    assert c.compare_and_set("s", 1, 2, b"two")
    assert not c.compare_and_set("s", 1, 2, b"late")
    assert c.head("s") == (2, b"two")


def test_append_and_snapshot_as_of(tmp_path):
    p = client(tmp_path)
    schema = pa.schema([("a", pa.int32())])
    p.append("s1", pa.table({"a": [1, 2]}, schema=schema), ts=10)
    p.append("s1", pa.table({"a": [3]}, schema=schema), ts=20)
    assert p.snapshot("s1", as_of=15).rows == 2
    assert p.snapshot("s1").rows == 3
    assert sorted(p.read_table("s1", schema).column("a").to_pylist()) == [1, 2, 3]
    assert p.state("s1").upper == 21


def test_concurrent_appends_lose_nothing(tmp_path):
    p = client(tmp_path)
    schema = pa.schema([("a", pa.int32())])

    def writer(k):
        for i in range(10):
            p.append("s", pa.table({"a": [k * 100 + i]}, schema=schema), ts=1)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    st = p.state("s")
    assert st.seqno == 40 and len(st.parts) == 40
    assert p.read_table("s", schema).num_rows == 40


def test_drop_shard_deletes_parts(tmp_path):
    p = client(tmp_path)
    schema = pa.schema([("a", pa.int32())])
    p.append("s", pa.table({"a": [1]}, schema=schema), ts=1)
    assert p.blob.list_keys("s/")
    p.drop_shard("s")
    assert p.blob.list_keys("s/") == []
    assert p.snapshot("s").rows == 0
