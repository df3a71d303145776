"""Secrets, connections and sources without a server: parsing, the durable catalog's
storage of them (a secret sealed at rest), their encoding for a shared catalog."""

from __future__ import annotations

import json

import pytest

from catalog import durable
from catalog.durable_postgres import decode_op, encode_op
from catalog.errors import SqlError
from catalog.secretbox import SecretBox
from catalog.snapshot import Column, Secret, Source, Subsource
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
    from catalog.snapshot import CatalogSnapshot, Connection
    from sqlfront.secrets import validate

    snap = CatalogSnapshot().with_changes(secrets={"u1": Secret("u1", "public", "pw", "pw-value-xyz")})
    conn = Connection("u2", "public", "pg", "postgres", (("HOST", "127.0.0.1", False), ("PORT", "1", False),
                                                         ("USER", "u", False), ("PASSWORD", "u1", True)))
    with pytest.raises(SqlError) as e:
        validate(snap, conn)
    assert e.value.sqlstate == "08001" and "pw-value-xyz" not in str(e.value)
