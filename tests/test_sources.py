"""Sources: load generators through the wire, Materialize's quickstart word for word."""

from __future__ import annotations

import time

import psycopg
import pytest
from server import fetch_until, wait_for

#: Materialize's quickstart ("Quickstart", doc/user/content/get-started/quickstart.md),
#: steps 1 to 6 as written there (``<schema>`` filled in), in order
QUICKSTART = [
    "CREATE SCHEMA materialize.qck",
    "SET SCHEMA qck",
    """CREATE SOURCE auction_house
    FROM LOAD GENERATOR AUCTION
    (TICK INTERVAL '1s', AS OF 100000)
    FOR ALL TABLES""",
    "SHOW SOURCES",
    "SELECT * FROM auctions ORDER BY end_time DESC LIMIT 1",
    "SELECT * FROM bids ORDER BY bid_time DESC LIMIT 1",
    """SELECT a.*, b.*
      FROM auctions AS a
      JOIN bids AS b
        ON a.id = b.auction_id
      ORDER BY a.end_time desc
      LIMIT 3""",
    """CREATE VIEW winning_bids AS
   SELECT DISTINCT ON (a.id) b.*, a.item, a.seller
   FROM auctions AS a
    JOIN bids AS b
      ON a.id = b.auction_id
   WHERE b.bid_time < a.end_time
     AND mz_now() >= a.end_time
   ORDER BY a.id,
     b.amount DESC,
     b.bid_time,
     b.buyer""",
    """SELECT * FROM winning_bids
   ORDER BY bid_time DESC
   LIMIT 10""",
    """SELECT * FROM winning_bids
   WHERE item = 'Best Pizza in Town'
   ORDER BY bid_time DESC
   LIMIT 10""",
    "CREATE INDEX wins_by_item ON winning_bids (item)",
    """SELECT * FROM winning_bids
    ORDER BY bid_time DESC
    LIMIT 10""",
    """SELECT * FROM winning_bids
    WHERE item = 'Best Pizza in Town'
    ORDER BY bid_time DESC
    LIMIT 10""",
    """EXPLAIN
     SELECT * FROM winning_bids
     ORDER BY bid_time DESC
     LIMIT 10""",
    """CREATE VIEW flip_activities AS
    SELECT w2.seller as flipper_id,
           w2.item AS item,
           w2.amount AS sold_amount,
           w1.amount AS purchased_amount,
           w2.amount - w1.amount AS diff_amount,
           datediff('days', w2.bid_time, w1.bid_time) AS timeframe_days
     FROM  winning_bids AS w1
       JOIN winning_bids AS w2
         ON w1.buyer = w2.seller   -- Buyer and seller are the same
            AND w1.item = w2.item  -- Item is the same
     WHERE w2.amount > w1.amount   -- But sold at a higher price
       AND datediff('days', w2.bid_time, w1.bid_time) < 8""",
    "SELECT * FROM flip_activities LIMIT 10",
    "CREATE TABLE known_flippers (flipper_id bigint)",
    """CREATE VIEW flippers AS
    SELECT flipper_id
    FROM (
        SELECT flipper_id
        FROM flip_activities
        GROUP BY flipper_id
        HAVING count(*) >= 2
        UNION ALL
        SELECT flipper_id
        FROM known_flippers
    )""",
    """SELECT *
    FROM flippers
    LIMIT 10""",
    """CREATE VIEW seller_credits AS
    SELECT seller, SUM(amount) as credits
    FROM winning_bids
    GROUP BY seller""",
    """CREATE VIEW buyer_debits AS
    SELECT buyer, SUM(amount) as debits
    FROM winning_bids
    GROUP BY buyer""",
    """CREATE VIEW funds_movement AS
    SELECT SUM(credits) AS total_credits,
           SUM(debits) AS total_debits,
           SUM(credits) - SUM(debits) AS total_difference
    FROM (
      SELECT SUM(credits) AS credits, 0 AS debits
      FROM seller_credits

      UNION

      SELECT 0 AS credits, SUM(debits) AS debits
      FROM buyer_debits
    )""",
    """SELECT *
    FROM funds_movement""",
]


@pytest.mark.slow
def test_quickstart_word_for_word(server):
    with server.connect() as c:
        results = {}
        for sql in QUICKSTART:
            cur = c.execute(sql)
            results[sql] = cur.fetchall() if cur.description else None
        shown = {r[0]: r[1] for r in results["SHOW SOURCES"]}
        assert shown == {"accounts": "subsource", "auction_house": "load-generator",
                         "auction_house_progress": "progress", "auctions": "subsource", "bids": "subsource",
                         "organizations": "subsource", "users": "subsource"}
        # AS OF 100000: the first 100,000 auctions are there from the start
        assert c.execute("SELECT max(id) >= 100000 FROM auctions").fetchone() == (True,)
        assert len(results["SELECT * FROM winning_bids\n   ORDER BY bid_time DESC\n   LIMIT 10"]) == 10
        total_credits, total_debits, difference = results["SELECT *\n    FROM funds_movement"][0]
        assert total_credits == total_debits and difference == 0

        # a SUBSCRIBE shows bids as they happen: an auction and its bids every second
        c.execute("BEGIN")
        c.execute("DECLARE live CURSOR FOR SUBSCRIBE TO (SELECT id, auction_id, amount FROM bids)"
                  " WITH (SNAPSHOT = false, PROGRESS)")
        rows = fetch_until(c, "live", 5, timeout=60)
        assert len(rows) >= 5 and all(r[2] == 1 for r in rows)  # (mz_timestamp, progressed, diff, id, auction, amount)
        assert min(r[4] for r in rows) > 100000  # auctions after the snapshot's
        c.execute("COMMIT")

        # sources take no writes
        for sql in ("INSERT INTO bids VALUES (1, 1, 1, 1, now())", "DELETE FROM bids", "UPDATE bids SET amount = 0"):
            with pytest.raises(psycopg.errors.WrongObjectType):
                c.execute(sql)
        with pytest.raises(psycopg.errors.WrongObjectType):
            c.execute("DROP TABLE bids")
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):
            c.execute("DROP SOURCE auction_house")
        # Step 8, clean up
        c.execute("DROP SOURCE auction_house CASCADE")
        c.execute("DROP TABLE known_flippers")
        left = c.execute("SELECT count(*) FROM mz_sources s JOIN mz_schemas sc ON sc.id = s.schema_id"
                         " WHERE sc.name = 'qck'").fetchone()
        assert left == (0,)
        assert c.execute("SELECT count(*) FROM mz_views WHERE schema = 'qck'").fetchone() == (0,)


@pytest.mark.slow
def test_counter_resumes_after_restart_without_repeating(tmp_path):
    from server import Server

    s = Server(tmp_path / "mzdata").start()
    try:
        with s.connect() as c:
            c.execute("CREATE SOURCE cnt FROM LOAD GENERATOR COUNTER (TICK INTERVAL '50ms', UP TO 40)")
            wait_for(lambda: c.execute("SELECT count(*) FROM cnt").fetchone()[0] >= 5, timeout=60)
        s.stop()
        s.start()
        with s.connect() as c:
            wait_for(lambda: c.execute("SELECT count(*) FROM cnt").fetchone()[0] == 40, timeout=60)
            time.sleep(0.3)  # UP TO: nothing more comes
            assert c.execute("SELECT counter FROM cnt ORDER BY 1").fetchall() == [(i,) for i in range(1, 41)]
            assert c.execute('SELECT "offset" FROM cnt_progress').fetchall() == [(40,)]
    finally:
        s.stop()


def test_counter_source_through_the_wire(server, conn):
    conn.execute("CREATE SOURCE lg_cnt FROM LOAD GENERATOR COUNTER (TICK INTERVAL '50ms', UP TO 3)")
    wait_for(lambda: conn.execute("SELECT count(*) FROM lg_cnt").fetchone()[0] == 3, timeout=60)
    assert conn.execute("SELECT counter FROM lg_cnt ORDER BY 1").fetchall() == [(1,), (2,), (3,)]
    # ticks as its messages and offsets (mz_internal.mz_source_statistics), and its status
    wait_for(lambda: conn.execute(
        "SELECT messages_received, updates_committed, offset_known, offset_committed, snapshot_committed "
        "FROM mz_internal.mz_source_statistics s JOIN mz_sources m ON m.id = s.id WHERE m.name = 'lg_cnt'"
    ).fetchall() == [(3, 3, 3, 3, True)], timeout=30)
    assert conn.execute("SELECT status, error FROM mz_internal.mz_source_statuses WHERE name = 'lg_cnt'"
                        ).fetchall() == [("running", None)]
    assert conn.execute("SELECT name, type FROM mz_sources WHERE name LIKE 'lg_cnt%' ORDER BY 1").fetchall() == \
        [("lg_cnt", "load-generator"), ("lg_cnt_progress", "progress")]
    assert conn.execute("SHOW CREATE SOURCE lg_cnt").fetchone()[1].startswith("CREATE SOURCE lg_cnt FROM LOAD")
    with pytest.raises(psycopg.errors.WrongObjectType):
        conn.execute("INSERT INTO lg_cnt VALUES (4)")
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        conn.execute("CREATE SOURCE lg_bad FROM LOAD GENERATOR TPCH (SEED 1) FOR ALL TABLES")
    with pytest.raises(psycopg.errors.UndefinedObject):
        conn.execute("CREATE SOURCE lg_bad IN CLUSTER no_such FROM LOAD GENERATOR COUNTER")
    conn.execute("BEGIN")
    with pytest.raises(psycopg.errors.ActiveSqlTransaction):
        conn.execute("CREATE SOURCE lg_bad FROM LOAD GENERATOR COUNTER")
    conn.execute("ROLLBACK")
    conn.execute("DROP SOURCE lg_cnt")  # its progress subsource goes with it
    assert conn.execute("SELECT count(*) FROM mz_sources WHERE name LIKE 'lg_%'").fetchone() == (0,)


def subsource_columns(conn, schema: str) -> dict[str, list[tuple[str, str]]]:
    """{subsource: [(column, mz_columns.type)]} of the sources in ``schema``, in column order."""
    got: dict = {}
    for table, col, typ in conn.execute(
            "SELECT o.name, c.name, c.type FROM mz_columns c JOIN mz_sources o ON o.id = c.id"
            " JOIN mz_schemas s ON s.id = o.schema_id WHERE s.name = %s AND o.type = 'subsource'"
            " ORDER BY o.name, c.position", (schema,)).fetchall():
        got.setdefault(table, []).append((col, typ))
    return got


#: MARKETING's subsources and columns, as Materialize's (src/storage-types/src/sources/load_generator.rs)
MARKETING_COLUMNS = {
    "clicks": [("impression_id", "bigint"), ("click_time", "timestamp with time zone")],
    "conversion_predictions": [("lead_id", "bigint"), ("experiment_bucket", "text"),
                               ("predicted_at", "timestamp with time zone"), ("score", "double precision")],
    "coupons": [("id", "bigint"), ("lead_id", "bigint"), ("created_at", "timestamp with time zone"),
                ("amount", "bigint")],
    "customers": [("id", "bigint"), ("email", "text"), ("income", "bigint")],
    "impressions": [("id", "bigint"), ("customer_id", "bigint"), ("campaign_id", "bigint"),
                    ("impression_time", "timestamp with time zone")],
    "leads": [("id", "bigint"), ("customer_id", "bigint"), ("created_at", "timestamp with time zone"),
              ("converted_at", "timestamp with time zone"), ("conversion_amount", "bigint")],
}


def test_marketing_source_through_the_wire(server, conn):
    conn.execute("CREATE SCHEMA mkt")
    conn.execute("CREATE SOURCE mkt.marketing FROM LOAD GENERATOR MARKETING (TICK INTERVAL '20ms') FOR ALL TABLES")
    try:
        assert subsource_columns(conn, "mkt") == MARKETING_COLUMNS
        conn.execute("SET search_path = mkt")  # SHOW COLUMNS FROM mkt.leads drops its schema (mzparse)
        assert [r[0] for r in conn.execute("SHOW COLUMNS FROM leads").fetchall()] == \
            [c for c, _ in MARKETING_COLUMNS["leads"]]
        conn.execute("RESET search_path")
        wait_for(lambda: conn.execute("SELECT count(*) FROM mkt.leads").fetchone()[0] >= 20, timeout=60)
        assert conn.execute("SELECT count(*), count(DISTINCT email) FROM mkt.customers").fetchone() == (50, 50)
        n = conn.execute("SELECT count(*) FROM mkt.impressions").fetchone()[0]
        wait_for(lambda: conn.execute("SELECT count(*) FROM mkt.impressions").fetchone()[0] > n, timeout=60)
        # every lead has its prediction; coupons go to experiment leads only
        assert conn.execute(
            "SELECT count(*) FROM mkt.coupons c JOIN mkt.conversion_predictions p ON p.lead_id = c.lead_id"
            " WHERE p.experiment_bucket <> 'experiment'").fetchone() == (0,)
    finally:
        conn.execute("DROP SCHEMA mkt CASCADE")


#: TPCH's subsources and columns, as Materialize's (load_generator.rs), in its order
TPCH_COLUMNS = {
    "supplier": "s_suppkey s_name s_address s_nationkey s_phone s_acctbal s_comment",
    "part": "p_partkey p_name p_mfgr p_brand p_type p_size p_container p_retailprice p_comment",
    "partsupp": "ps_partkey ps_suppkey ps_availqty ps_supplycost ps_comment",
    "customer": "c_custkey c_name c_address c_nationkey c_phone c_acctbal c_mktsegment c_comment",
    "orders": "o_orderkey o_custkey o_orderstatus o_totalprice o_orderdate o_orderpriority o_clerk"
              " o_shippriority o_comment",
    "lineitem": "l_orderkey l_partkey l_suppkey l_linenumber l_quantity l_extendedprice l_discount l_tax"
                " l_returnflag l_linestatus l_shipdate l_commitdate l_receiptdate l_shipinstruct l_shipmode l_comment",
    "nation": "n_nationkey n_name n_regionkey n_comment",
    "region": "r_regionkey r_name r_comment",
}


def test_tpch_source_snapshot_through_the_wire(server, conn):
    conn.execute("CREATE SCHEMA tpch_src")
    conn.execute("CREATE SOURCE tpch_src.tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR 0.001) FOR ALL TABLES")
    try:
        got = subsource_columns(conn, "tpch_src")
        assert {t: [c for c, _ in cols] for t, cols in got.items()} == {t: c.split() for t, c in TPCH_COLUMNS.items()}
        types = {col: typ for cols in got.values() for col, typ in cols}
        assert (types["l_quantity"], types["l_shipdate"], types["l_linenumber"], types["o_orderkey"]) == \
            ("numeric", "date", "integer", "bigint")
        wait_for(lambda: conn.execute("SELECT count(*) FROM tpch_src.region").fetchone()[0] == 5, timeout=120)
        counts = conn.execute("SELECT (SELECT count(*) FROM tpch_src.nation), (SELECT count(*) FROM tpch_src.orders),"
                              " (SELECT count(*) FROM tpch_src.lineitem)").fetchone()
        assert counts == (25, 1500, 6005)  # TPC-H at scale 0.001 (tpchgen-cli)
        # every lineitem belongs to an order (the snapshot committed whole, at one timestamp)
        assert conn.execute("SELECT count(*) FROM tpch_src.lineitem l LEFT JOIN tpch_src.orders o"
                            " ON o.o_orderkey = l.l_orderkey WHERE o.o_orderkey IS NULL").fetchone() == (0,)
        assert conn.execute('SELECT "offset" FROM tpch_src.tpch_progress').fetchall() == [(1,)]
    finally:
        conn.execute("DROP SCHEMA tpch_src CASCADE")


def test_tpch_source_ticks_replace_orders(server, conn):
    """TPCH with TICK INTERVAL: each tick replaces an order and its lineitems (Materialize's
    tpch.rs), so the counts of orders stay and every lineitem keeps its order."""
    conn.execute("CREATE SCHEMA tpch_tick")
    conn.execute("CREATE SOURCE tpch_tick.tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR 0.001, TICK INTERVAL '50ms')"
                 " FOR ALL TABLES")
    try:
        wait_for(lambda: conn.execute('SELECT "offset" FROM tpch_tick.tpch_progress').fetchone()[0] >= 5,
                 timeout=120)
        assert conn.execute("SELECT count(*), count(DISTINCT o_orderkey) FROM tpch_tick.orders").fetchone() == \
            (1500, 1500)
        assert conn.execute("SELECT count(*) FROM tpch_tick.lineitem l LEFT JOIN tpch_tick.orders o"
                            " ON o.o_orderkey = l.l_orderkey WHERE o.o_orderkey IS NULL").fetchone() == (0,)
        # orders' totals are their lineitems' (the new versions' as well as tpchgen's)
        assert conn.execute(
            "SELECT count(*) FROM tpch_tick.orders o JOIN (SELECT l_orderkey,"
            " sum(l_extendedprice * (1 + l_tax) * (1 - l_discount)) AS t FROM tpch_tick.lineitem"
            " GROUP BY l_orderkey) l ON l.l_orderkey = o.o_orderkey WHERE abs(o.o_totalprice - l.t) > 1"
        ).fetchone() == (0,)
    finally:
        conn.execute("DROP SCHEMA tpch_tick CASCADE")
