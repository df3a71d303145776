"""Consensus in PostgreSQL: what several environmentd processes share (Materialize's
``PostgresConsensus``, persist's ``--persist-consensus-url postgres://...``).

Table (created if missing, by whichever process comes first)::

    consensus (shard text, seqno bigint, data bytea, PRIMARY KEY (shard, seqno))
    consensus_claims (name text PRIMARY KEY, value text)     first-wins records (claim)

``compare_and_set`` is one ``INSERT ... SELECT ... WHERE <head is expected>`` in a
SERIALIZABLE transaction: two processes that both saw head ``e`` and insert different
seqnos read and write the same index range of the shard, so PostgreSQL's serializable
snapshot isolation commits at most one of them (the other fails with 40001, answered as
False: "another writer got there first"). Same seqno: the primary key settles it.

Behaviour is identical to :class:`persist.consensus.SqliteConsensus` (the persist unit
tests run against both). Connections come from a small pool (:class:`pgconn.ConnectionPool`:
one per thread that is in a call at once); a connection that failed is dropped, not reused.
"""

from __future__ import annotations

from psycopg import errors

from persist.consensus import Consensus
from pgconn import ConnectionPool, create_once

_DDL = ["CREATE TABLE IF NOT EXISTS {table} ("
        " shard text NOT NULL, seqno bigint NOT NULL, data bytea NOT NULL,"
        " PRIMARY KEY (shard, seqno))",
        "CREATE TABLE IF NOT EXISTS consensus_claims (name text PRIMARY KEY, value text NOT NULL)"]

_CAS = ("INSERT INTO {table} (shard, seqno, data) SELECT %(shard)s, %(new)s, %(data)s"
        " WHERE (SELECT max(seqno) FROM {table} WHERE shard = %(shard)s) IS NOT DISTINCT FROM %(expected)s"
        " ON CONFLICT DO NOTHING")

#: the tables a Consensus may live in (names are put into SQL text: never from input)
TABLES = ("consensus", "txns")


class PostgresConsensus(Consensus):
    """Consensus in the ``consensus`` table (or ``table``, one of ``TABLES``: the group
    commit's transaction record is ``txns``) of the PostgreSQL database at ``url``
    (``postgres://user[:password]@host:port/db``); safe across threads and processes.

    Raises psycopg.OperationalError from any call when the server is unreachable (the
    caller's retry decides; nothing is half-written: every call is one transaction)."""

    def __init__(self, url: str, table: str = "consensus"):
        if table not in TABLES:
            raise ValueError(f"no Consensus table {table!r}")
        self.url = url
        self._table = table
        self._cas = _CAS.format(table=table)
        ddl = [q.format(table=table) for q in _DDL]
        self._pool = ConnectionPool(url, setup=lambda c: create_once(c, ddl))
        with self._pool.connection():
            pass  # connect now: a wrong URL fails at startup, not at the first write

    def head(self, key: str) -> tuple[int, bytes] | None:
        with self._pool.connection() as c:
            row = c.execute(f"SELECT seqno, data FROM {self._table} WHERE shard = %s ORDER BY seqno DESC LIMIT 1",
                            (key,)).fetchone()
        return (row[0], bytes(row[1])) if row else None

    def compare_and_set(self, key: str, expected: int | None, new_seqno: int, data: bytes) -> bool:
        if expected is not None and new_seqno <= expected:
            raise ValueError("new_seqno must advance past expected")
        with self._pool.connection() as c:
            try:
                with c.transaction():
                    c.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                    cur = c.execute(self._cas, {"shard": key, "new": new_seqno, "data": data, "expected": expected})
                    return cur.rowcount == 1
            except (errors.SerializationFailure, errors.UniqueViolation):
                return False  # a concurrent compare-and-set of this shard won

    def truncate(self, key: str, seqno: int) -> int:
        with self._pool.connection() as c:
            return c.execute(f"DELETE FROM {self._table} WHERE shard = %s AND seqno < %s", (key, seqno)).rowcount

    def delete_shard(self, key: str) -> None:
        with self._pool.connection() as c:
            c.execute(f"DELETE FROM {self._table} WHERE shard = %s", (key,))

    def keys(self) -> list[str]:
        # COLLATE "C": byte order, as sqlite sorts (the database's collation may differ)
        with self._pool.connection() as c:
            return [r[0] for r in c.execute(f'SELECT DISTINCT shard COLLATE "C" FROM {self._table} ORDER BY 1')]

    def claim(self, name: str, value: str) -> str:
        with self._pool.connection() as c:
            c.execute("INSERT INTO consensus_claims (name, value) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                      (name, value))
            return c.execute("SELECT value FROM consensus_claims WHERE name = %s", (name,)).fetchone()[0]

    def close(self) -> None:
        self._pool.close()
