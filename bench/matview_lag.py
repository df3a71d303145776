"""Materialized views under sustained writes (issue 28's fifth hole): how far behind the
read timestamp each view's upper falls (``mz_internal.mz_materialization_lag``'s global
lag), sampled every second while one client INSERTs a row into ``t1`` every
``--interval-ms`` and one into ``t2`` every tenth time.

Views: ``mv1`` over ``t2`` alone; ``mva`` over ``t1`` joined with a plain view of ``t2``;
``mvb`` over ``t1`` joined with ``mv1`` (a view over a table and another materialized
view). With ``--views one-group``: views of one group instead, ``mvmax`` (``max`` without
GROUP BY, which does not accumulate) and ``mvtop`` (a TopK), both over ``t1``. Prints
each sample, then p50/p90/max per view.

    .venv/bin/python bench/matview_lag.py [--seconds 90] [--interval-ms 50] [--views joins|one-group]
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from server import Server

VIEWS = (
    "CREATE VIEW v AS SELECT k, sum(w) AS w FROM t2 GROUP BY k",
    "CREATE MATERIALIZED VIEW mv1 AS SELECT k, sum(w) AS w FROM t2 GROUP BY k",
    ("CREATE MATERIALIZED VIEW mva AS SELECT t1.k, count(*) AS n, max(v.w) AS w FROM t1 JOIN v ON t1.k = v.k"
     " GROUP BY t1.k"),
    ("CREATE MATERIALIZED VIEW mvb AS SELECT t1.k, count(*) AS n, max(mv1.w) AS w FROM t1 JOIN mv1"
     " ON t1.k = mv1.k GROUP BY t1.k"),
)

#: views of one group (one dataflow round per waiting time before they took a round's times at once)
ONE_GROUP = (
    "CREATE MATERIALIZED VIEW mvmax AS SELECT max(v) AS m FROM t1",
    "CREATE MATERIALIZED VIEW mvtop AS SELECT k, v FROM t1 ORDER BY v DESC, k LIMIT 3",
)


@click.command(help=__doc__.split("\n\n")[0])
@click.option("--seconds", default=90, show_default=True, type=int, help="How long the writes go on.")
@click.option("--interval-ms", default=50, show_default=True, type=int, help="Pause between INSERTs.")
@click.option("--views", "kind", default="joins", show_default=True, type=click.Choice(["joins", "one-group"]),
              help="Which views: over joins and views, or of one group (max without GROUP BY, TopK).")
def main(seconds: int, interval_ms: int, kind: str) -> None:
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp) / "mzdata").start()
        try:
            with srv.connect() as c:
                c.execute("CREATE TABLE t1 (k int, v int)")
                c.execute("CREATE TABLE t2 (k int, w int)")
                c.execute("INSERT INTO t2 SELECT g % 10, g FROM generate_series(1, 100) g")
                for ddl in VIEWS if kind == "joins" else ONE_GROUP:
                    c.execute(ddl)
                ids = dict(c.execute("SELECT name, id FROM mz_materialized_views").fetchall())
                for name in ids:
                    c.execute(f"SELECT count(*) FROM {name}").fetchall()  # hydrated

                def writer():
                    with srv.connect() as w:
                        i = 0
                        while not stop.is_set():
                            w.execute("INSERT INTO t1 VALUES (%s, %s)", (i % 10, i))
                            if i % 10 == 0:
                                w.execute("INSERT INTO t2 VALUES (%s, %s)", (i % 10, i))
                            i += 1
                            time.sleep(interval_ms / 1000)

                th = threading.Thread(target=writer, daemon=True)
                th.start()
                lags: dict[str, list[float]] = {n: [] for n in ids}
                t0 = time.time()
                while time.time() - t0 < seconds:
                    rows = c.execute("SELECT object_id, extract(epoch FROM global_lag)"
                                     " FROM mz_internal.mz_materialization_lag").fetchall()
                    by_id = {i: float(lag) for i, lag in rows}
                    for n, i in ids.items():
                        lags[n].append(by_id.get(i, -1.0))
                    click.echo(f"{time.time() - t0:5.0f} s  " + "  ".join(f"{n} {lags[n][-1]:.2f}" for n in sorted(ids)))
                    time.sleep(1)
                stop.set()
                th.join()
        finally:
            stop.set()
            srv.stop()
    for n in sorted(lags):
        xs = sorted(lags[n])
        click.echo(f"{n}: lag p50 {xs[len(xs) // 2]:.2f} s, p90 {xs[int(len(xs) * 0.9)]:.2f} s, max {xs[-1]:.2f} s")


if __name__ == "__main__":
    main()
