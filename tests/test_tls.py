"""TLS on pgwire (PostgreSQL 55.2.10): with --tls-cert/--tls-key a client that asks gets
TLS (psycopg's and psql's sslmode=require); with --tls-mode require a client in clear text
is refused with FATAL 28000; without a certificate the server answers SSLRequest with N,
as before. The certificate is a self-signed one made here with ``cryptography``."""

from __future__ import annotations

import datetime as dt
import subprocess

import psycopg
import pytest

from server import Server, require_psql


def _self_signed(tmp_path) -> tuple[str, str]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1)).sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "server.crt", tmp_path / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return str(cert_path), str(key_path)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    cert, key = _self_signed(d)
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
