"""The catalog as a versioned log on a real PostgreSQL: two stores (as two processes
would have them) commit by compare-and-append on the version, follow each other, and a
restart replays the log to the same snapshot."""

from __future__ import annotations

from dataclasses import replace

import pytest

from catalog import durable
from catalog.durable_postgres import CatalogConflict, CatalogKeyMismatch, PostgresCatalogStore, decode_op, encode_op
from catalog.snapshot import Cluster, Column, Replica, Table
from catalog.types import SqlType
from conftest import new_database
from sqlfront.coordinator import Coordinator, IdAllocator


def _table(tid: str, name: str) -> Table:
    return Table(tid, "public", name, (Column("a", SqlType("numeric", 10, 2), False), Column("b", SqlType("text"))),
                 f"shard-s{tid[1:]}")


def test_ops_round_trip_through_json():
    ops = [durable.CreateCluster(Cluster("u1", "c")),
           durable.CreateReplica(Replica("u1", "u1", "r1", None, None, ("sc://h:1",), "secret")),
           durable.CreateTable(_table("u2", "t")), durable.DropTable("u2")]
    assert [decode_op(encode_op(op)) for op in ops] == ops


def test_two_stores_commit_by_compare_and_append_on_the_version(postgres):
    url = new_database(postgres)
    a, b = PostgresCatalogStore(url), PostgresCatalogStore(url)
    assert a.is_new()
    sa, sb = a.load(), b.load()
    sa = a.transact(sa, [durable.CreateTable(_table("u1", "t1"))], {"item": 2, "shard": 2})
    assert sa.version == 1 and not b.is_new()
    # b plans against version 0: refused, nothing written
    with pytest.raises(CatalogConflict) as e:
        b.transact(sb, [durable.CreateTable(_table("u1", "other"))], {"item": 2, "shard": 2})
    assert e.value.sqlstate == "40001"
    # b follows a's change, then commits on top of it
    [(old, new, ops)] = b.changes_since(sb.version)
    assert old.version == 0 and new.version == 1 and ops == [durable.CreateTable(_table("u1", "t1"))]
    sb = b.transact(new, [durable.CreateTable(_table("u2", "t2"))], {"item": 3, "shard": 3})
    assert sorted(t.name for t in sb.tables.values()) == ["t1", "t2"]
    assert a.latest_version() == 2
    # a restart (a new store) replays the log to the same catalog
    c = PostgresCatalogStore(url)
    sc = c.load()
    assert sc.version == 2 and sc.tables == sb.tables and dict(sc.next_ids)["item"] == 3
    for s in (a, b, c):
        s.close()


def test_a_constraint_violation_commits_nothing(postgres):
    url = new_database(postgres)
    a = PostgresCatalogStore(url)
    s = a.transact(a.load(), [durable.CreateTable(_table("u1", "t"))], {"item": 2})
    with pytest.raises(Exception):
        a.transact(s, [durable.CreateTable(_table("u2", "t"))], {"item": 3})  # same name
    assert a.latest_version() == 1
    assert a.transact(s, [durable.CreateTable(_table("u2", "t2"))], {"item": 3}).version == 2


def test_the_coordinator_plans_again_after_another_process_committed(postgres):
    """DDL whose version another environmentd took is planned again against the newer
    catalog (fresh ids), and the other's change reaches on_commit as if it were ours."""
    url = new_database(postgres)
    a, b = PostgresCatalogStore(url), PostgresCatalogStore(url)
    seen = []
    coord = Coordinator(b, b.load(), lambda old, new, ops: seen.extend(ops))
    coord.start()
    try:
        a.transact(a.load(), [durable.CreateTable(_table("u1", "from_a"))], {"item": 2, "shard": 2})

        def build(snap, ids: IdAllocator):
            tid = ids.allocate("item")
            return [durable.CreateTable(_table(tid, "from_b"))]

        snap = coord.transact(build)
        assert {t.name: t.id for t in snap.tables.values()} == {"from_a": "u1", "from_b": "u2"}
        assert [type(op).__name__ for op in seen] == ["CreateTable", "CreateTable"]
    finally:
        coord.stop()


def test_a_follower_wakes_on_the_other_process_s_commit(postgres):
    """LISTEN/NOTIFY: wait_for_change returns at a commit elsewhere, long before its
    polling timeout."""
    import threading
    import time

    url = new_database(postgres)
    a, b = PostgresCatalogStore(url), PostgresCatalogStore(url)
    b.load()
    b.wait_for_change(0.01)  # LISTEN is in place from here on
    timer = threading.Timer(0.3, lambda: a.transact(a.load(), [durable.CreateTable(_table("u1", "t"))], {"item": 2}))
    timer.start()
    started = time.monotonic()
    b.wait_for_change(30)
    assert time.monotonic() - started < 10
    assert [new.version for _, new, _ in b.changes_since(0)] == [1]
    timer.join()


def test_a_remote_replicas_token_is_encrypted_in_the_shared_catalog(postgres, tmp_path):
    """A REMOTE replica's TOKEN is stored sealed (the sqlite catalog's ``seal_op``), a
    store with the shared key reads it back, a store with another key refuses to, and a
    token an earlier version committed in clear is sealed in place on load."""
    import psycopg

    from catalog import secretbox
    from catalog.secretbox import SecretBox

    url = new_database(postgres)
    old = PostgresCatalogStore(url)  # as a version before encryption committed it
    snap = old.transact(old.load(), [durable.CreateCluster(Cluster("u1", "c")),
                                     durable.CreateReplica(Replica("u1", "u1", "r1", None, None, ("sc://h:1",),
                                                                   "clear-tok"))], {"cluster": 2, "replica": 2})
    old.close()
    box = SecretBox.at(tmp_path / "catalog.key")
    a = PostgresCatalogStore(url, box)
    snap = a.load()
    assert snap.replicas["u1"].token == "clear-tok"
    snap = a.transact(snap, [durable.CreateReplica(Replica("u2", "u1", "r2", None, None, ("sc://h:2",), "new-tok"))],
                      {"cluster": 2, "replica": 3})
    assert snap.replicas["u2"].token == "new-tok"
    # a rename carries the whole replica (ALTER CLUSTER REPLICA ... RENAME builds it from
    # the snapshot, whose token is in clear): stored sealed too
    snap = a.transact(snap, [durable.UpdateReplica(replace(snap.replicas["u2"], name="r3"))], {})
    assert snap.replicas["u2"].name == "r3" and snap.replicas["u2"].token == "new-tok"
    with psycopg.connect(url) as c:
        stored = "".join(r[0] for r in c.execute("SELECT ops::text FROM catalog_log"))
    assert "clear-tok" not in stored and "new-tok" not in stored and stored.count(secretbox.PREFIX) == 3
    b = PostgresCatalogStore(url, SecretBox.at(tmp_path / "catalog.key"))  # another process, the same key file
    assert {r.id: r.token for r in b.load().replicas.values()} == {"u1": "clear-tok", "u2": "new-tok"}
    with pytest.raises(CatalogKeyMismatch) as e:  # refused at once: it would seal what the others cannot read
        PostgresCatalogStore(url, SecretBox.at(tmp_path / "other.key"))
    assert "--catalog-key-file" in e.value.hint
    reader = PostgresCatalogStore(url)  # no key (persist-write): the tokens stay as stored
    assert all(secretbox.SecretBox.is_sealed(r.token) for r in reader.load().replicas.values())
    reader.close()
    for s in (a, b):
        s.close()


def test_serve_refuses_a_key_other_than_the_shared_catalogs(postgres, tmp_path):
    """``sqlfront serve`` with a catalog key another process did not seal the shared
    catalog with stops at startup with the fix in its message, before it writes anything."""
    import subprocess
    import sys

    from catalog.secretbox import SecretBox
    from server import ROOT

    url = new_database(postgres)
    PostgresCatalogStore(url, SecretBox.at(tmp_path / "first.key")).close()
    p = subprocess.run([sys.executable, "-m", "sqlfront.cli", "serve", "--listen", "127.0.0.1:0",
                        "--data-dir", str(tmp_path / "mzdata"), "--catalog-url", url,
                        "--catalog-key-file", str(tmp_path / "second.key")],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode != 0
    assert "catalog key differs" in p.stderr and "--catalog-key-file" in p.stderr, p.stderr[-2000:]
