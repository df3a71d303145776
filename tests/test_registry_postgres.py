"""The shared store's pieces for several environmentd processes that need PostgreSQL
but no environmentd: the process registry (pgconn.registry) and sequence values
(catalog.sequences_postgres), each through two handles as two processes would have."""

from __future__ import annotations

import threading
import time

import pytest

from catalog.errors import SqlError
from catalog.sequences_postgres import PostgresSequenceStore
from catalog.snapshot import Sequence, temp_schema_name, temp_schema_process
from conftest import new_database
from pgconn.registry import ProcessRegistry


@pytest.fixture
def url(postgres):
    return new_database(postgres)


def test_the_registry_names_live_processes_and_forgets_dead_ones(url):
    a = ProcessRegistry(url, "envA", dead_after_s=1.0)
    b = ProcessRegistry(url, "envB", dead_after_s=1.0)
    try:
        a.register({"pubsub": "127.0.0.1:1", "pubsub_token": "ta"})
        b.register({})
        assert a.live() == {"envA", "envB"}
        assert a.live_peers() == {"envB": {}} and b.live_peers() == {"envA": {"pubsub": "127.0.0.1:1",
                                                                             "pubsub_token": "ta"}}
        time.sleep(1.2)
        a.heartbeat()
        assert b.live() == {"envA"}  # B missed its heartbeats: dead
        b.heartbeat()
        assert a.live() == {"envA", "envB"}
        # a restart of A (a new incarnation) replaces its row; the old one's heartbeat
        # no longer renews it, and its deregister leaves the new run's row alone
        a2 = ProcessRegistry(url, "envA", dead_after_s=1.0)
        a2.register({"pubsub": "127.0.0.1:2"})
        a.deregister()
        assert b.live_peers() == {"envA": {"pubsub": "127.0.0.1:2"}}
        a2.deregister()
        a2.close()
        assert b.live() == {"envB"}
    finally:
        a.close()
        b.close()


def test_temp_schema_names_carry_their_process():
    name = temp_schema_name("0123abcd4567", "89ef")
    assert name == "mz_temp_0123abcd4567_89ef" and temp_schema_process(name) == "0123abcd4567"
    assert temp_schema_process("mz_temp_0123abcd4567") is None  # made before names carried it
    assert temp_schema_process("public") is None


SEQ = Sequence("u9", "public", "s", maxvalue=50)


def test_nextval_through_two_stores_never_repeats_and_stops_at_the_bound(url):
    stores = [PostgresSequenceStore(url), PostgresSequenceStore(url)]
    got, errors = [], []

    def run(store):
        try:
            for _ in range(10):
                got.extend(store.nextval(SEQ, 2))
        except Exception as e:
            errors.append(repr(e))

    try:
        assert stores[0].state(SEQ) == (1, False)  # before first use: its start
        threads = [threading.Thread(target=run, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and sorted(got) == list(range(1, 41))
        assert stores[1].state(SEQ) == (40, True)
        stores[1].setval(SEQ, 49)
        assert stores[0].nextval(SEQ) == [50]
        with pytest.raises(SqlError) as e:
            stores[0].nextval(SEQ)
        assert e.value.sqlstate == "2200H"
        with pytest.raises(SqlError) as e:
            stores[0].setval(SEQ, 51)
        assert e.value.sqlstate == "22003"
        stores[0].forget([SEQ.id])
        assert stores[1].state(SEQ) == (1, False)
    finally:
        for s in stores:
            s.close()
