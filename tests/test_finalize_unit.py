"""Issue 28's third hole: a crash between a DROP TABLE's catalog commit and the deletion
of its shard leaked the shard when persist is shared (the boot's clean-up deletes only
private shards). The drop now lists the shard in the catalog's ``to_finalize`` in the
same transaction, and ``sqlfront.finalize`` deletes it after any restart."""

from __future__ import annotations

import pyarrow as pa

from catalog import durable
from catalog.snapshot import Table
from persist import FileBlob, PersistClient, open_consensus
from sqlfront.coordinator import Coordinator
from sqlfront.finalize import finalize


def _coordinator(path) -> Coordinator:
    store = durable.CatalogStore(str(path))
    c = Coordinator(store, store.load(), lambda old, new, ops: None)  # no side effects: the crash
    c.start()
    return c


def test_a_drop_that_a_crash_cut_short_is_finished_after_the_restart(tmp_path):
    persist = PersistClient(FileBlob(tmp_path / "blob"), open_consensus(str(tmp_path / "consensus.db")), "env:1")
    table = Table("u1", "public", "t", (), "u7")
    c = _coordinator(tmp_path / "catalog.db")
    c.transact(lambda snap, ids: [durable.CreateTable(table)])
    persist.create_shard("u7", 0)
    persist.append("u7", pa.table({"a": pa.array(range(3000), pa.int32())}), 1)  # a part in Blob
    keys = persist.state("u7").blob_keys()
    assert keys
    c.transact(lambda snap, ids: [durable.DropTable("u1")])
    c.stop()  # the process dies before it deleted the shard

    c = _coordinator(tmp_path / "catalog.db")  # the next start
    assert dict(c.snapshot.to_finalize) == {"u7": 2}  # listed by the drop, version 2
    assert finalize(persist, c) == 1
    assert not set(persist.blob.list_keys()) & keys
    assert persist.state("u7").sealed  # a tombstone: a late writer gets ShardSealed
    assert dict(c.snapshot.to_finalize) == {}
    c.stop()
    assert dict(durable.CatalogStore(str(tmp_path / "catalog.db")).load().to_finalize) == {}


def test_a_shard_moved_by_alter_or_truncate_is_listed_with_its_update(tmp_path):
    store = durable.CatalogStore(":memory:")
    snap = store.load()
    t = Table("u1", "public", "t", (), "u7")
    snap = store.transact(snap, [durable.CreateTable(t)], dict(snap.next_ids))
    snap = store.transact(snap, [durable.UpdateTable(Table("u1", "public", "t", (), "u8"))], dict(snap.next_ids))
    assert set(snap.to_finalize) == {"u7"}
    snap = store.transact(snap, [durable.FinalizeShards(("u7",))], dict(snap.next_ids))
    assert dict(snap.to_finalize) == {}
