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
    for bad in ("CREATE SOURCE s FROM LOAD GENERATOR KEY VALUE", "CREATE SOURCE s FROM LOAD GENERATOR COUNTER WITH (x)"):
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
    ("CREATE SOURCE s FROM LOAD GENERATOR TPCH (SEED 3) FOR ALL TABLES", "0A000"),
    ("CREATE SOURCE s FROM LOAD GENERATOR TPCH (SCALE FACTOR 0.01, UP TO 4) FOR ALL TABLES", "0A000"),
    ("CREATE SOURCE s FROM LOAD GENERATOR TPCH (SCALE FACTOR 0) FOR ALL TABLES", "22023"),
    ("CREATE SOURCE s FROM LOAD GENERATOR TPCH (SCALE FACTOR 'x') FOR ALL TABLES", "22023"),
    ("CREATE SOURCE s FROM LOAD GENERATOR MARKETING", "42601"),
    ("CREATE SOURCE s FROM LOAD GENERATOR MARKETING (MAX CARDINALITY 3) FOR ALL TABLES", "0A000"),
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


def test_marketing_ticks_follow_materializes_generator():
    """MARKETING (Materialize's marketing.rs): 50 customers at tick 1, then per tick an
    impression, a lead and its prediction; coupons only for unlikely experiment leads."""
    import datetime as dt

    from sqlfront import loadgen

    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    first = loadgen.updates("MARKETING", "m1", 1, now)
    assert {o for o, _, _ in first} == {"customers"} and len({r[1] for _, r, _ in first}) == 50
    assert all(5_000_000 <= r[2] < 10_000_000 for _, r, _ in first)
    ticks = [loadgen.updates("MARKETING", "m1", t, now) for t in range(2, 400)]
    for t, ups in enumerate(ticks, start=2):
        by = {}
        for o, r, d in ups:
            assert d == 1
            by.setdefault(o, []).append(r)
        assert len(by["impressions"]) == len(by["leads"]) == len(by["conversion_predictions"]) == 1
        lead, bucket, _, score = by["conversion_predictions"][0]
        assert by["leads"][0][0] == lead and bucket == ("control" if lead % 10 <= 1 else "experiment")
        assert ("coupons" in by) == (bucket == "experiment" and score <= 0.5)
        converted_at, amount = by["leads"][0][3:]
        assert (converted_at is None) == (amount is None)
        assert all(c[1] > now for c in by.get("clicks", []))  # a click comes after its impression
    seen = {o for ups in ticks for o, _, _ in ups}
    assert seen == {"impressions", "clicks", "leads", "coupons", "conversion_predictions"}
    ids = [r[0] for ups in ticks for o, r, _ in ups if o in ("impressions", "leads", "coupons")]
    assert len(ids) == len(set(ids))  # one id counter, as Materialize's


def test_tpch_ticks_replace_one_order_and_its_lineitems():
    """TPCH with TICK INTERVAL (Materialize's tpch.rs): tick 1 the snapshot, then each tick
    retracts one order and its lineitems as they are and inserts a new version of it; a
    generator that restarts at tick t (replaying from the snapshot) makes the same updates."""
    import collections
    import datetime as dt
    from decimal import Decimal

    from sqlfront.loadgen_tpch import TpchTicks, retail_price

    day = dt.date(1995, 1, 1)
    snap = ([("part", (p,), 1) for p in range(1, 21)] + [("supplier", (s,), 1) for s in range(1, 5)]
            + [("customer", (c,), 1) for c in range(1, 16)]
            + [("orders", (k, 1, "F", Decimal("1.00"), day, "1-URGENT", "Clerk#000000009", 0, "quick brown fox"), 1)
               for k in (1, 2, 3, 32)]
            + [("lineitem", (k, 1, 1, n) + (None,) * 12, 1) for k in (1, 2, 3, 32) for n in (1, 2)])
    gen = TpchTicks("t1", lambda: list(snap))
    state = collections.Counter()
    assert gen.updates(1) == snap
    for t in range(1, 40):
        ups = gen.updates(t) if t > 1 else snap
        if t > 1:
            orders = [(r, d) for o, r, d in ups if o == "orders"]
            assert [d for _, d in orders] == [-1, 1] and orders[0][0][0] == orders[1][0][0]
            new = orders[1][0]
            lines = [r for o, r, d in ups if o == "lineitem" and d == 1]
            assert 1 <= len(lines) <= 7 and {r[0] for r in lines} == {new[0]} and new[1] % 3 != 0
            assert all(r[5] == r[4] * retail_price(r[1]) for r in lines)  # extendedprice
            assert new[2] == ({r[9] for r in lines}.pop() if len({r[9] for r in lines}) == 1 else "P")
        for o, r, d in ups:
            state[(o, r)] += d
    assert all(v in (0, 1) for v in state.values())  # every retraction meets its insert
    assert sum(1 for (o, _), v in state.items() if o == "orders" and v) == 4
    # a restart at tick 39 (the state rebuilt from the snapshot and ticks 2 to 38) repeats it
    assert TpchTicks("t1", lambda: list(snap)).updates(39) == ups


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
    from sqlfront.sequence.clusters import drop_clusters
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


def test_parse_postgres_source():
    src = parse_one("CREATE SOURCE mz_source IN CLUSTER ingest FROM POSTGRES CONNECTION pg_connection"
                    " (PUBLICATION 'mz_source') FOR TABLES (public.t1 AS t1_a, db.s.t2, t3)")
    assert (src.kind, src.connection, src.cluster, src.options) == \
        ("postgres", "pg_connection", "ingest", (("PUBLICATION", "mz_source"),))
    assert src.tables == (("public", "t1", "t1_a"), ("s", "t2", None), (None, "t3", None))
    src = parse_one("CREATE SOURCE s FROM POSTGRES CONNECTION x.c (PUBLICATION 'p') FOR ALL TABLES EXPOSE PROGRESS AS pr")
    assert (src.connection, src.all_tables, src.progress_name) == ("x.c", True, "pr")
    with pytest.raises(SqlError) as e:
        parse_one("CREATE SOURCE s FROM POSTGRES CONNECTION c (PUBLICATION 'p') FOR SCHEMAS (public)")
    assert e.value.sqlstate == "0A000"


def _tuple_data(*values) -> bytes:
    import struct

    out = struct.pack("!h", len(values))
    for v in values:
        if v is None:
            out += b"n"
        elif v == "u":
            out += b"u"
        else:
            out += b"t" + struct.pack("!i", len(v.encode())) + v.encode()
    return out


def test_pgoutput_messages_decode():
    """pgoutput protocol 1 (PostgreSQL's "Logical Replication Message Formats")."""
    import struct

    from sqlfront.protocol import pgoutput as po

    assert po.decode(b"B" + struct.pack("!qqI", 0x16B374D848, 1, 7)) == po.Begin(0x16B374D848, 7)
    assert po.decode(b"C" + struct.pack("!bqqq", 0, 100, 120, 5)) == po.Commit(100, 120)
    rel = (b"R" + struct.pack("!I", 16384) + b"public\0items\0f" + struct.pack("!h", 2)
           + struct.pack("!b", 1) + b"id\0" + struct.pack("!Ii", 23, -1)
           + struct.pack("!b", 0) + b"name\0" + struct.pack("!Ii", 1043, 24))
    assert po.decode(rel) == po.Relation(16384, "public", "items", "f", (
        po.RelationColumn("id", 23, -1, True), po.RelationColumn("name", 1043, 24, False)))
    assert po.decode(b"I" + struct.pack("!I", 16384) + b"N" + _tuple_data("1", None)) == po.Insert(16384, ("1", None))
    upd = po.decode(b"U" + struct.pack("!I", 16384) + b"O" + _tuple_data("1", "a") + b"N" + _tuple_data("1", "u"))
    assert upd.old == ("1", "a") and upd.new[0] == "1" and upd.new[1] is po.UNCHANGED and not upd.old_is_key
    assert po.decode(b"U" + struct.pack("!I", 1) + b"N" + _tuple_data("2")) == po.Update(1, None, ("2",))
    assert po.decode(b"D" + struct.pack("!I", 1) + b"K" + _tuple_data("2")) == po.Delete(1, ("2",), True)
    assert po.decode(b"T" + struct.pack("!ib", 2, 0) + struct.pack("!II", 5, 6)) == po.Truncate((5, 6))
    assert po.decode(b"Y" + b"\0" * 8) == po.Other("Y")


def test_postgres_column_types_and_lsns():
    from sqlfront.pg_source import column_type, lsn_int

    assert lsn_int("16/B374D848") == 0x16B374D848
    assert column_type("t", "a", 1700, "numeric(10,2)").sql() == "numeric(10,2)"
    assert column_type("t", "a", 1043, "character varying(20)").sql() == "character varying(20)"
    assert column_type("t", "a", 1184, "timestamp(3) with time zone").sql() == "timestamp(3) with time zone"
    assert column_type("t", "a", 1007, "integer[]").sql() == "integer[]"
    for oid, name in ((600, "point"), (1700, "numeric(60,2)")):
        with pytest.raises(SqlError) as e:
            column_type("t", "a", oid, name)
        assert e.value.sqlstate == "0A000"


def test_secret_values_from_expressions_and_renames():
    from sqlfront.secrets import secret_value

    stmt = parse_one("CREATE SECRET s AS decode('c2VjcmV0', 'base64')")
    assert stmt.expr == "decode('c2VjcmV0', 'base64')" and "c2Vj" not in repr(stmt)
    assert secret_value(stmt.expr) == "secret"
    assert secret_value("'a' || 'b'") == "ab"
    for expr, sqlstate in (("NULL::text", "22004"), ("1 + 1", "42804"), ("decode('ff', 'hex')", "22021")):
        with pytest.raises(SqlError) as e:
            secret_value(expr)
        assert e.value.sqlstate == sqlstate
    assert parse_one("ALTER SECRET IF EXISTS x.s RENAME TO t") == sp.AlterSecret("x", "s", if_exists=True,
                                                                               new_name="t")
    assert parse_one("ALTER SECRET s AS 'v2'").value == "v2"
