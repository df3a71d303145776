"""Secrets, connections and sources without a server: parsing, the durable catalog's
storage of them (a secret sealed at rest), their encoding for a shared catalog."""

from __future__ import annotations

import json

import pytest

from catalog import durable
from catalog.durable_postgres import decode_op, encode_op
from catalog.errors import SqlError
from catalog.secretbox import SecretBox
from catalog.snapshot import CatalogSnapshot, Column, Secret, Source, Subsource
from catalog.types import INT8
from sqlfront import source_parse as sp
from sqlfront.parse import parse_one


def test_parse_secret_connection_and_source_statements():
    assert parse_one("CREATE SECRET IF NOT EXISTS s.pw AS 'v'") == sp.CreateSecret("s", "pw", "v", True)
    assert "v" not in repr(parse_one("CREATE SECRET pw AS 'v'"))  # statements reach logs
    c = parse_one("CREATE CONNECTION pg TO POSTGRES (HOST = 'h', PORT 5433, USER 'u', PASSWORD SECRET pw,"
                  " SSL MODE 'require') WITH (VALIDATE = false)")
    assert c.options == (("HOST", "h", False), ("PORT", "5433", False), ("USER", "u", False),
                         ("PASSWORD", "pw", True), ("SSL MODE", "require", False))
    assert c.validate is False
    assert parse_one("DROP SOURCE IF EXISTS a, b CASCADE") == sp.DropItems("source", ((None, "a"), (None, "b")),
                                                                          True, True)
    src = parse_one("CREATE SOURCE auction_house IN CLUSTER ingest FROM LOAD GENERATOR AUCTION"
                    " (TICK INTERVAL '1s', AS OF 100000, UP TO 5) FOR ALL TABLES")
    assert (src.generator, src.cluster, src.all_tables) == ("AUCTION", "ingest", True)
    assert src.options == (("TICK INTERVAL", "1s"), ("AS OF", "100000"), ("UP TO", "5"))
    for bad in ("CREATE SOURCE s FROM LOAD GENERATOR KEY VALUE", "CREATE SOURCE s FROM LOAD GENERATOR COUNTER WITH (x)",
                "CREATE SECRET s AS decode('x', 'base64')"):
        with pytest.raises(SqlError) as e:
            parse_one(bad)
        assert e.value.sqlstate == "0A000"


def test_secrets_are_sealed_at_rest_and_sources_round_trip(tmp_path):
    box = SecretBox.at(tmp_path / "catalog.key")
    store = durable.CatalogStore(str(tmp_path / "catalog.db"), box)
    snap = store.load()
    src = Source("u1", "public", "c", (Column("counter", INT8, False),), "shard-s1", cluster_id="u1",
                 kind="load-generator", spec='{"generator": "COUNTER"}')
    sub = Subsource("u2", "public", "c_progress", (Column("offset", INT8, True),), "shard-s2", source_id="u1",
                    output="progress", kind="progress")
    snap = store.transact(snap, [durable.CreateSecret(Secret("u3", "public", "pw", "hunter2-xyz")),
                                 durable.CreateTable(src), durable.CreateTable(sub)], dict(snap.next_ids))
    snap = store.transact(snap, [durable.UpdateSecret(Secret("u3", "public", "pw", "second-xyz"))],
                          dict(snap.next_ids))
    store.close()
    for path in tmp_path.iterdir():
        assert b"hunter2-xyz" not in path.read_bytes() and b"second-xyz" not in path.read_bytes()
    loaded = durable.CatalogStore(str(tmp_path / "catalog.db"), box).load()
    assert loaded.secrets["u3"].value == "second-xyz"
    assert loaded.tables["u1"] == src and loaded.tables["u2"] == sub
    # the shared catalog's log holds the sealed op only
    sealed = encode_op(durable.seal_op(durable.CreateSecret(Secret("u3", "public", "pw", "third-xyz")), box))
    assert "third-xyz" not in json.dumps(sealed)
    assert durable.unseal_op(decode_op(sealed), box).secret.value == "third-xyz"


def test_validate_reports_the_reason_without_the_password():
    from catalog.snapshot import Connection
    from sqlfront.secrets import validate

    snap = CatalogSnapshot().with_changes(secrets={"u1": Secret("u1", "public", "pw", "pw-value-xyz")})
    conn = Connection("u2", "public", "pg", "postgres", (("HOST", "127.0.0.1", False), ("PORT", "1", False),
                                                         ("USER", "u", False), ("PASSWORD", "u1", True)))
    with pytest.raises(SqlError) as e:
        validate(snap, conn)
    assert e.value.sqlstate == "08001" and "pw-value-xyz" not in str(e.value)


@pytest.mark.parametrize(("sql", "sqlstate"), [
    ("CREATE SOURCE s FROM LOAD GENERATOR MARKETING FOR ALL TABLES", "0A000"),
    ("CREATE SOURCE s FROM LOAD GENERATOR AUCTION (SCALE FACTOR 1) FOR ALL TABLES", "0A000"),
    ("CREATE SOURCE s FROM LOAD GENERATOR AUCTION", "42601"),
    ("CREATE SOURCE s FROM LOAD GENERATOR COUNTER FOR ALL TABLES", "42601"),
    ("CREATE SOURCE s FROM LOAD GENERATOR COUNTER (AS OF 5, UP TO 2)", "22023"),
    ("CREATE SOURCE s FROM LOAD GENERATOR COUNTER (TICK INTERVAL '0s')", "22023"),
])
def test_generator_options_refused(sql, sqlstate):
    from sqlfront.sources import generator_spec

    with pytest.raises(SqlError) as e:
        generator_spec(parse_one(sql))
    assert e.value.sqlstate == sqlstate


def test_generators_repeat_a_tick_exactly_but_for_its_times():
    import datetime as dt

    from sqlfront import loadgen
    from sqlfront.sources import generator_spec

    spec = generator_spec(parse_one("CREATE SOURCE s FROM LOAD GENERATOR COUNTER (TICK INTERVAL '500ms', UP TO 9)"))
    assert (spec["tick_ms"], spec["up_to"], spec["as_of"]) == (500, 9, 0)
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    later = now + dt.timedelta(hours=1)
    first = loadgen.updates("AUCTION", "u7", 42, now)
    again = loadgen.updates("AUCTION", "u7", 42, later)
    assert [(o, r[:3]) for o, r, _ in first] == [(o, r[:3]) for o, r, _ in again]
    assert {o for o, _, _ in first} == {"auctions", "bids"}
    assert {o for o, _, _ in loadgen.updates("AUCTION", "u7", 1, now)} == {"organizations", "users", "accounts"}
    assert loadgen.updates("COUNTER", "u1", 5, now, max_cardinality=2) == [(None, (5,), 1), (None, (3,), -1)]


def test_datediff_counts_boundaries_crossed():
    import datetime as dt

    from catalog.types import TIMESTAMPTZ
    from planner.functions.datetime import _datediff_py

    class Arg:
        type = TIMESTAMPTZ

    class Call:
        args = (Arg(), Arg(), Arg())

    u = dt.UTC
    assert _datediff_py(["days", dt.datetime(2022, 1, 1, 23, 59, tzinfo=u), dt.datetime(2022, 1, 2, 0, 1, tzinfo=u)],
                        Call) == 1
    assert _datediff_py(["month", dt.datetime(2022, 1, 31, tzinfo=u), dt.datetime(2022, 3, 1, tzinfo=u)], Call) == 2
    assert _datediff_py(["year", dt.datetime(2022, 12, 31, tzinfo=u), dt.datetime(2022, 1, 1, tzinfo=u)], Call) == 0
    with pytest.raises(SqlError):
        _datediff_py(["fortnight", dt.datetime(2022, 1, 1, tzinfo=u), dt.datetime(2022, 1, 1, tzinfo=u)], Call)


def test_drop_cluster_takes_its_sources_with_cascade_only():
    from catalog.snapshot import Cluster
    from sqlfront import mzparse as mz
    from sqlfront.coordinator import IdAllocator
    from sqlfront.sequence_ddl import drop_clusters
    from sqlfront.sources import create_source

    snap = CatalogSnapshot().with_changes(clusters={"u1": Cluster("u1", "ingest")},
                                          next_ids={"item": 1, "shard": 1})
    ids = IdAllocator(snap.next_ids)
    ops = create_source(parse_one("CREATE SOURCE c IN CLUSTER ingest FROM LOAD GENERATOR COUNTER"), "ingest")(snap, ids)
    snap = snap.with_changes(tables={op.table.id: op.table for op in ops})
    with pytest.raises(SqlError) as e:
        drop_clusters(mz.DropClusters(("ingest",), False, False))(snap, ids)
    assert e.value.sqlstate == "2BP01"
    dropped = drop_clusters(mz.DropClusters(("ingest",), False, True))(snap, ids)
    assert {type(op).__name__ for op in dropped} == {"DropTable", "DropCluster"}
    assert len([op for op in dropped if isinstance(op, durable.DropTable)]) == 2  # the source, its progress
