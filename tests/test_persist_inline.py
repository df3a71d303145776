"""Inline parts through the wire: small writes travel in the shard's state (Materialize's
inline writes), Spark reads them next to the Parquet parts, UPDATE and DELETE consolidate
against them, and compaction moves them into Blob. (Restart: ``test_durability``.)"""

from __future__ import annotations

import sqlite3

from persist import FileBlob, ShardState, SqliteConsensus
from server import wait_for

#: every column type a table can have, with a row of values and a row of NULLs
TYPED = ("i int, b bigint, s smallint, n numeric(10,2), f float8, r real, t text, v varchar(5), c char(3), "
         "d date, ts timestamp, tz timestamptz, iv interval, tm time, by bytea, u uuid, j jsonb, bo bool, "
         "arr int[]")
TYPED_ROW = ("(1, 9000000000, 7, 12.5, 1.25, 0.5, 'text', 'vc', 'ab', '2024-02-29', '2024-02-29 12:34:56.789', "
             "'2024-02-29 12:34:56+02', '1 month 2 days 03:04:05', '13:14:15.5', '\\x00ff', "
             "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"k\": [1, 2]}', true, ARRAY[1, NULL, 3])")
NULL_ROW = "(" + ", ".join(["NULL"] * 19) + ")"


def shard_state(server, table: str) -> tuple[ShardState, list[str]]:
    """The state of ``table``'s shard in the server's Consensus, and its files in Blob."""
    catalog = sqlite3.connect(str(server.data_dir / "catalog.db"))
    shard = catalog.execute("SELECT shard_id FROM tables WHERE name = ?", (table,)).fetchone()[0]
    catalog.close()
    c = SqliteConsensus(str(server.data_dir / "consensus.db"))
    try:
        return ShardState.decode(c.head(shard)[1]), FileBlob(server.data_dir / "blob").list_keys(shard + "/")
    finally:
        c.close()


def test_small_inserts_are_inline_and_spark_reads_every_type(conn, server):
    conn.execute(f"CREATE TABLE inl_typed ({TYPED})")
    conn.execute(f"INSERT INTO inl_typed VALUES {TYPED_ROW}")
    conn.execute(f"INSERT INTO inl_typed VALUES {NULL_ROW}")
    st, files = shard_state(server, "inl_typed")
    assert len(st.parts) == 2 and all(p.inline is not None for p in st.parts) and files == []
    # The same rows in a Parquet part the replica writes: both reads must agree.
    conn.execute(f"CREATE TABLE inl_ref ({TYPED})")
    conn.execute("INSERT INTO inl_ref SELECT * FROM inl_typed")
    assert all(p.inline is None for p in shard_state(server, "inl_ref")[0].parts)
    inline = conn.execute("SELECT * FROM inl_typed ORDER BY i NULLS LAST").fetchall()
    blob = conn.execute("SELECT * FROM inl_ref ORDER BY i NULLS LAST").fetchall()
    assert inline == blob and len(inline) == 2 and inline[0][0] == 1 and inline[1] == (None,) * 19
    assert conn.execute("SELECT count(*), sum(n), max(t) FROM inl_typed WHERE i IS NOT NULL").fetchone() == (
        1, inline[0][3], "text")
    # inline rows joined with rows in Blob
    assert conn.execute("SELECT count(*) FROM inl_typed a JOIN inl_ref b ON a.u = b.u AND a.j = b.j").fetchone() == (1,)


def test_update_and_delete_consolidate_against_inline_parts(conn, server):
    conn.execute("CREATE TABLE inl_upd (k int, v text)")
    for k in range(5):
        conn.execute("INSERT INTO inl_upd VALUES (%s, 'v')", (k,))
    conn.execute("INSERT INTO inl_upd SELECT k + 10, 'w'::text FROM inl_upd UNION ALL SELECT NULL::int, 'n'::text")  # a part in Blob
    assert conn.execute("UPDATE inl_upd SET v = 'u' WHERE k IN (1, 11)").rowcount == 2
    assert conn.execute("UPDATE inl_upd SET v = 'nn' WHERE k IS NULL").rowcount == 1  # NULL among the split values
    assert conn.execute("DELETE FROM inl_upd WHERE k IN (2, 12)").rowcount == 2
    # RETURNING computes the updates here: a small retraction batch, inline (compaction
    # waits for a shard's writes to pause before consolidating retractions)
    assert conn.execute("DELETE FROM inl_upd WHERE k = 3 RETURNING k").fetchall() == [(3,)]
    st, _ = shard_state(server, "inl_upd")
    assert any(p.inline is not None and p.retractions for p in st.parts)
    assert conn.execute("SELECT k, v FROM inl_upd ORDER BY k").fetchall() == [
        (0, "v"), (1, "u"), (4, "v"), (10, "w"), (11, "u"), (13, "w"), (14, "w"), (None, "nn")]


def test_compaction_moves_inline_parts_into_blob(conn, server):
    conn.execute("CREATE TABLE inl_compact (a int)")
    for i in range(12):
        conn.execute("INSERT INTO inl_compact VALUES (%s)", (i,))

    def flushed():
        st, files = shard_state(server, "inl_compact")
        return st.row_count() == 12 and all(p.inline is None for p in st.parts) and files

    assert wait_for(flushed, timeout=60), "inline parts never reached Blob"
    assert conn.execute("SELECT a FROM inl_compact ORDER BY a").fetchall() == [(i,) for i in range(12)]


def test_a_small_table_is_grouped_and_sorted_without_an_exchange(conn):
    """A table whose parts are all inline travels inside the plan; when the query groups,
    sorts or joins it is one partition, so Spark plans no exchange above it (one job, not
    two). A query that only filters keeps it as it is (Spark answers that in its driver)."""
    conn.execute("CREATE TABLE inl_tiny (k int, v int)")
    conn.execute("INSERT INTO inl_tiny VALUES (1, 10), (2, 20), (2, 5)")
    try:
        def physical(q: str) -> str:
            return "\n".join(r[0] for r in conn.execute("EXPLAIN PHYSICAL PLAN FOR " + q).fetchall())

        for q in ("SELECT count(*) FROM inl_tiny", "SELECT k, sum(v) FROM inl_tiny GROUP BY k ORDER BY k"):
            plan = physical(q)
            assert "Coalesce 1" in plan and "Exchange" not in plan, plan
        # a join of small relations broadcasts one side either way (a BroadcastExchange)
        assert "Coalesce 1" in physical("SELECT a.k, b.v FROM inl_tiny a JOIN inl_tiny b ON a.k = b.k ORDER BY 1, 2")
        assert "Coalesce" not in physical("SELECT v FROM inl_tiny WHERE k = 2")
        assert conn.execute("SELECT k, sum(v) FROM inl_tiny GROUP BY k ORDER BY k").fetchall() == [(1, 10), (2, 25)]
        assert conn.execute("SELECT count(*) FROM inl_tiny a JOIN inl_tiny b ON a.k = b.k").fetchone() == (5,)
    finally:
        conn.execute("DROP TABLE inl_tiny")


def test_an_indexed_table_reads_its_inline_parts(conn):
    conn.execute("CREATE TABLE inl_indexed (a int)")
    conn.execute("INSERT INTO inl_indexed SELECT generate_series(1, 5000)")  # a part in Blob, arranged
    conn.execute("CREATE INDEX inl_indexed_a ON inl_indexed (a)")
    try:
        conn.execute("INSERT INTO inl_indexed VALUES (5001), (5002)")
        assert conn.execute("SELECT count(*), max(a) FROM inl_indexed").fetchone() == (5002, 5002)
    finally:
        conn.execute("DROP INDEX inl_indexed_a")


def test_a_small_rewrite_is_inline_and_a_big_one_is_written_by_the_replica(conn, server):
    conn.execute("CREATE TABLE inl_big (k int)")
    conn.execute("INSERT INTO inl_big SELECT generate_series(1, 3000)")
    assert conn.execute("UPDATE inl_big SET k = -k WHERE k = 7").rowcount == 1  # 2 updates: back here, inline
    st, _ = shard_state(server, "inl_big")
    assert st.parts[-1].inline is not None and st.parts[-1].retractions and st.parts[-1].updates == 2
    assert conn.execute("UPDATE inl_big SET k = k + 1 WHERE k BETWEEN 1 AND 1500").rowcount == 1499  # 2998 updates
    st, _ = shard_state(server, "inl_big")
    assert st.parts[-1].inline is None and st.parts[-1].retractions and st.parts[-1].updates == 2998
    assert conn.execute("SELECT count(*), sum(k) FROM inl_big").fetchone() == (3000, 4501500 - 14 + 1499)
