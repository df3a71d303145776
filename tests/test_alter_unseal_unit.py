"""A failed ALTER TABLE unseals its table's shard even when the store is unreachable at
that moment (the 30-minute chaos run on two processes: a link cut during an ALTER TABLE
left table ``r`` sealed, every read and write of it 40001 for the rest of the run). The
store's outage is the edge simulated here: a Consensus whose first calls fail."""

from __future__ import annotations

import types

import psycopg
import pyarrow as pa

from catalog.oracle import TimestampOracle
from catalog.snapshot import Table
from persist import FileBlob, PersistClient, SqliteConsensus, open_consensus
from sqlfront.group_commit import GroupCommitter
from sqlfront.sequence.alter import _unseal_until_done


class _Unreachable:
    """A Consensus whose first ``failures`` reads fail as a cut link does."""

    def __init__(self, inner, failures: int):
        self.inner, self.failures = inner, failures

    def head(self, key):
        if self.failures > 0:
            self.failures -= 1
            raise psycopg.OperationalError("connection is bad")
        return self.inner.head(key)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _sealed_table(tmp_path):
    consensus = open_consensus(str(tmp_path / "consensus.db"))
    persist = PersistClient(FileBlob(tmp_path / "blob"), consensus, "env:1")
    persist.create_shard("u7", 0)
    persist.append("u7", pa.table({"a": pa.array([1, 2], pa.int32())}), 1)
    writer = GroupCommitter(persist, SqliteConsensus(str(tmp_path / "txns.db")), TimestampOracle(str(tmp_path / "o.db")))
    writer.seal("u7")
    writer.stop()
    assert persist.state("u7").sealed and writer.marks().keys() == {"u7"}
    return persist, consensus, Table("u1", "public", "t", (), "u7"), writer


def _env(persist, writer, tables):
    return types.SimpleNamespace(persist=persist, storage=types.SimpleNamespace(writer=writer),
                                 snapshot=lambda: types.SimpleNamespace(tables=tables))


def test_a_sealed_shard_is_unsealed_once_the_store_answers_again(tmp_path):
    persist, consensus, table, writer = _sealed_table(tmp_path)
    persist.consensus = _Unreachable(consensus, failures=3)
    assert _unseal_until_done(_env(persist, writer, {table.id: table}), table, give_up_s=60, pause=0.01)
    persist.consensus = consensus
    assert not persist.state("u7").sealed and writer.marks() == {}


def test_a_dropped_tables_shard_stays_sealed(tmp_path):
    persist, consensus, table, writer = _sealed_table(tmp_path)
    assert not _unseal_until_done(_env(persist, writer, {}), table, give_up_s=60, pause=0.01)
    assert persist.state("u7").sealed and writer.marks().keys() == {"u7"}
