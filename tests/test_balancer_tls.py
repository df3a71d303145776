"""TLS through the balancer (issue 27): it terminates the client's TLS (``--tls-cert``,
``--tls-mode require`` refusing clear text with FATAL 28000) and speaks TLS to environmentd
(``--backend-tls-ca``), whose ``--tls-mode require`` proves the hop is encrypted; an
environmentd that does not offer TLS is unreachable, never spoken to in clear text."""

from __future__ import annotations

import socket
import threading

import psycopg
import pytest

from server import Balancer, Server, free_port, self_signed, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tls_pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("balancer_tls")
    cert, key = self_signed(d)
    env = Server(d / "mzdata", "--tls-cert", cert, "--tls-key", key, "--tls-mode", "require").start(
        wait_replicas=False)
    no_tls = _answers_n_to_ssl_request()
    b = Balancer(d / "balancer.log", env.port, "--tls-cert", cert, "--tls-key", key, "--tls-mode", "require",
                 "--backend-tls-ca", cert, plain=no_tls)
    yield b, env
    b.stop()
    env.stop()


def _answers_n_to_ssl_request() -> int:
    """A port where something answers every SSLRequest with N (an environmentd without a
    certificate), then closes."""
    srv = socket.create_server(("127.0.0.1", 0))

    def run():
        while True:
            conn, _ = srv.accept()
            with conn:
                conn.recv(8)
                conn.sendall(b"N")

    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1]


def test_tls_from_the_client_to_environmentd_through_the_balancer(tls_pair):
    b, _ = tls_pair
    with b.connect(sslmode="require") as c:
        assert c.pgconn.ssl_in_use
        # environmentd requires TLS: the session got there only over the balancer's TLS hop
        assert c.execute("SELECT 1 + 1").fetchone() == (2,)
        c.execute("CREATE TABLE through_tls (a int)")
        c.execute("DROP TABLE through_tls")


def test_the_balancer_refuses_clear_text_when_tls_is_required(tls_pair):
    b, _ = tls_pair
    with pytest.raises(psycopg.OperationalError) as e:
        b.connect(sslmode="disable")
    assert "TLS connections only" in str(e.value)


def test_an_environmentd_without_tls_is_unreachable_not_spoken_to_in_clear_text(tls_pair):
    b, _ = tls_pair
    with pytest.raises(psycopg.OperationalError) as e:
        b.connect("plain", sslmode="require")
    assert "cannot be reached" in str(e.value)


def test_a_balancer_off_loopback_does_not_forward_to_a_loopback_environmentd():
    """Off loopback the balancer is reachable by anyone; a loopback environmentd may have no
    password (``sqlfront serve`` asks for one only off loopback): refused, FATAL 08006."""
    from sqlfront.balancer import Routes, serve

    ready = []
    threading.Thread(target=serve, args=(("0.0.0.0", 0), Routes(("127.0.0.1", free_port()), {})),
                     kwargs={"ready": ready.append}, daemon=True).start()
    assert wait_for(lambda: ready, 10)
    with pytest.raises(psycopg.OperationalError) as e:
        psycopg.connect(host="127.0.0.1", port=ready[0][1], user="materialize", connect_timeout=5)
    assert "listens on loopback (127.0.0.1:" in str(e.value)
