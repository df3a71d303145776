"""Managed clusters' catalog transactions (sqlfront.sequence.clusters) on an in-memory catalog:
replicas r1 .. rN follow SIZE and REPLICATION FACTOR, conversions, SWAP, and the two
steps of a graceful reconfiguration. No server, no replica process."""

from __future__ import annotations

import pytest

from catalog.durable import CatalogStore
from catalog.errors import SqlError
from catalog.sizes import default_sizes, parse_sizes
from sqlfront.sequence import clusters as cluster_ddl
from sqlfront.coordinator import IdAllocator
from sqlfront.mzparse import parse_mz
from sqlfront.sequence.clusters import create_replica, drop_replicas

SIZES = default_sizes()
ZONES = ["az1", "az2"]


class Catalog:
    def __init__(self):
        self.store = CatalogStore(":memory:")
        self.snap = self.store.load()

    def run(self, build):
        ids = IdAllocator(self.snap.next_ids)
        self.snap = self.store.transact(self.snap, build(self.snap, ids), ids.next)
        return self.snap

    def sql(self, text: str):
        stmt = parse_mz(text)
        if text.startswith("CREATE CLUSTER REPLICA"):
            return self.run(create_replica(stmt, SIZES, ZONES))
        if text.startswith("DROP CLUSTER REPLICA"):
            return self.run(drop_replicas(stmt))
        if text.startswith("CREATE CLUSTER"):
            return self.run(cluster_ddl.create_cluster(stmt, SIZES, ZONES, "1"))
        if " SWAP " in text:
            return self.run(cluster_ddl.swap_clusters(stmt))
        return self.run(cluster_ddl.alter_cluster(stmt, SIZES, ZONES))

    def replicas(self, name: str) -> list[tuple]:
        c = self.snap.cluster_by_name(name)
        return [(r.name, r.size, r.availability_zone) for r in self.snap.replicas_of(c.id)]


def err(cat: Catalog, text: str) -> SqlError:
    with pytest.raises(SqlError) as e:
        cat.sql(text)
    return e.value


def test_managed_cluster_keeps_replicas_r1_to_rn():
    cat = Catalog()
    cat.sql("CREATE CLUSTER c (SIZE = '2', REPLICATION FACTOR = 2)")
    c = cat.snap.cluster_by_name("c")
    assert (c.managed, c.size, c.replication_factor) == (True, "2", 2)
    assert cat.replicas("c") == [("r1", "2", "az1"), ("r2", "2", "az2")]
    r1 = cat.snap.replica_by_name(c.id, "r1").id
    cat.sql("ALTER CLUSTER c SET (REPLICATION FACTOR 3)")
    assert [r[0] for r in cat.replicas("c")] == ["r1", "r2", "r3"]
    assert cat.snap.replica_by_name(c.id, "r1").id == r1  # kept, not replaced
    cat.sql("ALTER CLUSTER c SET (REPLICATION FACTOR = 0)")  # paused
    assert cat.replicas("c") == []
    cat.sql("ALTER CLUSTER c RESET (REPLICATION FACTOR)")
    cat.sql("ALTER CLUSTER c SET (SIZE 'medium')")  # Materialize's name, an alias of ours
    assert cat.replicas("c") == [("r1", "medium", "az1")]
    assert cat.snap.replica_by_name(c.id, "r1").id != r1
    assert err(cat, "ALTER CLUSTER c RESET (SIZE)").message == "SIZE has no default value"
    assert err(cat, "ALTER CLUSTER c SET (SIZE 'nope')").sqlstate == "22023"
    assert err(cat, "ALTER CLUSTER c SET (REPLICATION FACTOR 99)").message == \
        "creating cluster replica would violate max_replicas_per_cluster limit (desired: 99, limit: 5, current: 1)"
    e = err(cat, "DROP CLUSTER REPLICA c.r1")
    assert (e.sqlstate, e.message) == ("55000", "cannot drop replica of managed cluster")
    assert err(cat, "CREATE CLUSTER REPLICA c.x SIZE '1'").message == "cannot modify managed cluster c"
    # the legacy forms: SIZE without '=', options without parentheses, size as a bare name
    cat.sql("CREATE CLUSTER d SIZE xsmall, REPLICATION FACTOR 0, AVAILABILITY ZONES ('az2')")
    cat.sql("ALTER CLUSTER d SET (REPLICATION FACTOR 2)")
    assert cat.replicas("d") == [("r1", "xsmall", "az2"), ("r2", "xsmall", "az2")]


def test_unmanaged_clusters_and_conversion():
    cat = Catalog()
    cat.sql("CREATE CLUSTER u REPLICAS (r1 (SIZE '1'), r2 (SIZE '1'))")
    assert not cat.snap.cluster_by_name("u").managed
    assert err(cat, "ALTER CLUSTER u SET (REPLICATION FACTOR 2)").message == \
        "REPLICATION FACTOR not supported for unmanaged clusters"
    assert err(cat, "ALTER CLUSTER u RESET (SIZE)").message == "Cannot change SIZE of unmanaged clusters"
    assert err(cat, "ALTER CLUSTER u SET (MANAGED, SIZE '2')").message == \
        "Cluster replicas of size 1 do not match expected SIZE 2"
    assert err(cat, "ALTER CLUSTER u SET (MANAGED, SIZE abc)").message == \
        "Cluster replicas of size 1 do not match expected SIZE abc"
    assert err(cat, "ALTER CLUSTER u SET (MANAGED, REPLICATION FACTOR 1)").message == \
        "REPLICATION FACTOR 1 does not match number of replicas (2)"
    cat.sql("ALTER CLUSTER u SET (MANAGED)")
    c = cat.snap.cluster_by_name("u")
    assert (c.managed, c.size, c.replication_factor) == (True, "1", 2)
    cat.sql("ALTER CLUSTER u SET (MANAGED = false)")
    assert cat.snap.cluster_by_name("u").size is None
    cat.sql("CREATE CLUSTER REPLICA u.c1 SIZE '1'")
    assert "invalid replica names: c1" in err(cat, "ALTER CLUSTER u SET (MANAGED)").message
    cat.sql("CREATE CLUSTER e (MANAGED = false)")
    assert err(cat, "ALTER CLUSTER e SET (MANAGED)").message == "Missing SIZE for empty cluster"
    with pytest.raises(SqlError, match="REPLICAS not supported for managed clusters"):
        cat.sql("CREATE CLUSTER x REPLICAS (), MANAGED")
    with pytest.raises(SqlError, match="SIZE not supported for unmanaged clusters"):
        cat.sql("CREATE CLUSTER x REPLICAS (), SIZE '1'")


def test_swap_exchanges_names():
    cat = Catalog()
    cat.sql("CREATE CLUSTER blue (SIZE '1', REPLICATION FACTOR 0)")
    cat.sql("CREATE CLUSTER green (SIZE '2', REPLICATION FACTOR 0)")
    blue = cat.snap.cluster_by_name("blue").id
    cat.sql("ALTER CLUSTER blue SWAP WITH green")
    assert cat.snap.cluster_by_name("green").id == blue
    assert cat.snap.cluster_by_name("blue").size == "2"
    with pytest.raises(SqlError, match="unknown cluster 'nope'"):
        cat.sql("ALTER CLUSTER blue SWAP WITH nope")


def test_graceful_reconfiguration_promotes_pending_replicas():
    cat = Catalog()
    cat.sql("CREATE CLUSTER g (SIZE '1', REPLICATION FACTOR 2)")
    old_ids = {r.id for r in cat.snap.replicas.values()}
    stmt = parse_mz("ALTER CLUSTER g SET (SIZE '2') WITH (WAIT UNTIL READY (TIMEOUT '1s', ON TIMEOUT ROLLBACK))")
    out: dict = {}
    cat.run(cluster_ddl.begin_reconfiguration(stmt, SIZES, ZONES, out))
    assert [r[0] for r in cat.replicas("g")] == ["r1", "r1-pending", "r2", "r2-pending"]
    assert cat.snap.cluster_by_name("g").size == "1"  # not until it finishes
    with pytest.raises(SqlError, match="being reconfigured already"):
        cat.run(cluster_ddl.begin_reconfiguration(stmt, SIZES, ZONES, {}))
    with pytest.raises(SqlError, match="being reconfigured already"):
        cat.sql("ALTER CLUSTER g SET (REPLICATION FACTOR 1)")
    cat.run(cluster_ddl.finish_reconfiguration(out["old"], out["cluster"], out["pending"], SIZES, ZONES))
    assert cat.replicas("g") == [("r1", "2", "az1"), ("r2", "2", "az2")]
    assert {r.id for r in cat.snap.replicas.values()} == set(out["pending"])
    assert not old_ids & set(out["pending"])
    assert cat.snap.cluster_by_name("g").size == "2"
    # a rollback drops the pending replicas and leaves the cluster as it was
    cat.run(cluster_ddl.begin_reconfiguration(stmt, SIZES, ZONES, out := {}))
    cat.run(cluster_ddl.drop_pending(out["pending"]))
    assert cat.replicas("g") == [("r1", "2", "az1"), ("r2", "2", "az2")]


def test_catalog_keeps_managed_settings_across_a_reload(tmp_path):
    store = CatalogStore(str(tmp_path / "catalog.db"))
    snap = store.load()
    ids = IdAllocator(snap.next_ids)
    build = cluster_ddl.create_cluster(parse_mz("CREATE CLUSTER k (SIZE '4', REPLICATION FACTOR 1, "
                                                "AVAILABILITY ZONES ('az2'))"), SIZES, ZONES, "1")
    store.transact(snap, build(snap, ids), ids.next)
    store.close()
    c = CatalogStore(str(tmp_path / "catalog.db")).load().cluster_by_name("k")
    assert (c.managed, c.size, c.replication_factor, c.availability_zones) == (True, "4", 1, ("az2",))


def test_size_map_aliases():
    sizes = parse_sizes('{"small-ish": {"workers": 2, "aliases": ["100cc"]}}')
    assert sizes["100cc"].workers == 2 and sizes["100cc"].alias_of == "small-ish"
    with pytest.raises(ValueError):
        parse_sizes('{"a": {"aliases": ["b"]}, "b": {}}')


def test_a_catalog_from_before_managed_clusters_loads_unmanaged(tmp_path):
    """A catalog file written before managed clusters (no ``clusters.config``, no
    ``replicas.pending``) gets the columns and loads its clusters as unmanaged."""
    import sqlite3

    path = str(tmp_path / "old.db")
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE clusters (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE replicas (id TEXT PRIMARY KEY, cluster_id TEXT NOT NULL REFERENCES clusters(id),
            name TEXT NOT NULL, size TEXT, availability_zone TEXT, remote TEXT NOT NULL DEFAULT '[]', token TEXT,
            UNIQUE (cluster_id, name));
        INSERT INTO clusters VALUES ('u1', 'quickstart');
        INSERT INTO replicas (id, cluster_id, name, size) VALUES ('u1', 'u1', 'r1', '1');
    """)
    db.close()
    snap = CatalogStore(path).load()
    assert snap.cluster_by_name("quickstart").managed is False
    assert [(r.name, r.pending) for r in snap.replicas.values()] == [("r1", False)]
