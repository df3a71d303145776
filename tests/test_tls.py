"""TLS on pgwire (PostgreSQL 55.2.10): with --tls-cert/--tls-key a client that asks gets
TLS (psycopg's and psql's sslmode=require); with --tls-mode require a client in clear text
is refused with FATAL 28000; without a certificate the server answers SSLRequest with N,
as before. The certificate is a self-signed one made with ``cryptography`` (server.self_signed)."""

from __future__ import annotations

import subprocess

import psycopg
import pytest

from server import Server, require_psql, self_signed


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    cert, key = self_signed(d)
    s = Server(d / "mzdata", "--tls-cert", cert, "--tls-key", key, "--tls-mode", "require")
    s.start(wait_replicas=False)
    yield s
    s.stop()


def test_tls_required_client_gets_tls_and_clear_text_is_refused(tls_server):
    with psycopg.connect(tls_server.url + "?sslmode=require", autocommit=True) as c:
        assert c.pgconn.ssl_in_use
        assert c.execute("SELECT 1 + 1").fetchone() == (2,)
        c.execute("CREATE TABLE tls_t (a int)")  # a session like any other
        c.execute("INSERT INTO tls_t VALUES (1)")
        c.execute("DROP TABLE tls_t")
    with pytest.raises(psycopg.OperationalError) as e:
        psycopg.connect(tls_server.url + "?sslmode=disable")
    assert "TLS connections only" in str(e.value)


def test_psql_with_sslmode_require(tls_server):
    require_psql()
    out = subprocess.run(["psql", tls_server.url + "?sslmode=require", "-Atc", "SELECT 40 + 2"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "42"


def test_without_a_certificate_the_server_declines_tls(server):
    with psycopg.connect(server.url + "?sslmode=prefer", autocommit=True) as c:
        assert not c.pgconn.ssl_in_use
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(server.url + "?sslmode=require", connect_timeout=10)


def _serve_refused(tmp_path, *args: str) -> str:
    import sys

    from server import ROOT

    out = subprocess.run([sys.executable, "-m", "sqlfront.cli", "serve", "--data-dir", str(tmp_path / "d"), *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode != 0
    return out.stderr


def test_pubsub_off_loopback_needs_tls_and_a_wildcard_needs_an_advertised_host(tmp_path):
    """Issue 27: PubSub carries its token and shard states: off loopback only inside TLS;
    a process that registers its addresses must name one its peers can dial."""
    assert "in clear text" in _serve_refused(tmp_path, "--persist-pubsub-listen", "10.11.12.13:6879")
    err = _serve_refused(tmp_path, "--password-file", __file__, "--listen", "0.0.0.0:0",
                         "--persist-consensus-url", "postgres://u@127.0.0.1:1/db")
    assert "--advertise-host" in err, err
