"""Materialized views: what a read-your-writes read through a view costs.

Each round INSERTs one row into a table, then reads (a) the table's aggregate directly and
(b) a materialized view of the same aggregate, which must first be brought up to the
INSERT (its cluster runs the query again and appends the difference). Prints the median
and p90 of each (ms) and their ratio, measured in the same run.

    .venv/bin/python bench/matview.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from server import Server  # noqa: E402

QUERY = "SELECT k % 10 AS g, count(*) AS n, sum(v) AS s FROM bt GROUP BY k % 10"


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp) / "mzdata").start()
        try:
            with srv.connect() as c:
                c.execute("CREATE TABLE bt (k int, v int)")
                c.execute("INSERT INTO bt SELECT g, g * 2 FROM generate_series(1, 10000) AS g")
                c.execute(f"CREATE MATERIALIZED VIEW bmv AS {QUERY}")
                c.execute("SELECT * FROM bmv").fetchall()  # its first contents
                direct, through = [], []
                for i in range(rounds):
                    c.execute("INSERT INTO bt VALUES (%s, 1)", (i,))
                    t = time.perf_counter()
                    a = sorted(c.execute(QUERY).fetchall())
                    direct.append((time.perf_counter() - t) * 1000)
                    c.execute("INSERT INTO bt VALUES (%s, 1)", (i,))
                    t = time.perf_counter()
                    b = sorted(c.execute("SELECT * FROM bmv").fetchall())
                    through.append((time.perf_counter() - t) * 1000)
                    assert len(a) == len(b) == 10
                assert sorted(c.execute("SELECT * FROM bmv").fetchall()) == sorted(c.execute(QUERY).fetchall())
                idle = []
                for _ in range(rounds):
                    t = time.perf_counter()
                    c.execute("SELECT * FROM bmv").fetchall()
                    idle.append((time.perf_counter() - t) * 1000)
        finally:
            srv.stop()

    def p(xs, q):
        return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]

    for name, xs in (("query on the table", direct), ("MV right after an INSERT", through),
                     ("MV, inputs unchanged", idle)):
        print(f"{name:28s} median {statistics.median(xs):8.1f} ms   p90 {p(xs, 0.9):8.1f} ms")
    print(f"ratio MV-after-write / direct (medians): {statistics.median(through) / statistics.median(direct):.2f}")


if __name__ == "__main__":
    main()
