"""TLS for pgwire (PostgreSQL 55.2.10, "SSL Session Encryption") and for the hops between
processes (the balancer to environmentd, persist PubSub between environmentd processes),
made with Python's ``ssl`` module and grpc's credentials (no crypto of ours).

A client asks with SSLRequest; the server answers ``S`` and the TLS handshake follows on
the same socket, then the startup packet, encrypted. ``--tls-mode require`` refuses a
startup in clear text (FATAL 28000), as a PostgreSQL ``hostssl``-only pg_hba.conf does.

Between processes the client side verifies the peer's certificate against ``--tls-ca``
(PEM bundle; by default the process's own ``--tls-cert``: processes sharing one
self-signed certificate trust each other) and the host it dials (the certificate must
name that address: a subjectAltName IP or DNS entry).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

#: --tls-mode values: ``allow`` (TLS when the client asks) and ``require``
TLS_MODES = ("allow", "require")


def server_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """A server-side context for the PEM certificate chain ``cert_file`` and its private
    key ``key_file``: TLS 1.2 or later, Python's default ciphers.

    Raises:
        OSError / ssl.SSLError: a file is missing or the key does not match."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    return ctx


def client_context(ca_file: str) -> ssl.SSLContext:
    """A client-side context that trusts the PEM certificates in ``ca_file`` only and checks
    the peer's name (TLS 1.2 or later).

    Raises:
        OSError / ssl.SSLError: the file is missing or holds no certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(cafile=ca_file)
    return ctx


def grpc_channel_credentials(ca_file: str):
    """``grpc.ChannelCredentials`` trusting the PEM certificates in ``ca_file`` only (gRPC
    checks the peer's name against the address dialed).

    Raises:
        OSError: the file cannot be read."""
    import grpc

    return grpc.ssl_channel_credentials(root_certificates=Path(ca_file).read_bytes())


@dataclass(frozen=True)
class PeerTls:
    """TLS between processes: this process's certificate and key (PEM files), and the CA
    bundle its peers' certificates are checked against (``cert`` when None)."""

    cert: str
    key: str
    ca: str | None = None

    def grpc_server_credentials(self):
        """``grpc.ServerCredentials`` presenting ``cert`` (no client certificate asked:
        peers authenticate with their bearer token, inside TLS)."""
        import grpc

        return grpc.ssl_server_credentials([(Path(self.key).read_bytes(), Path(self.cert).read_bytes())])

    def grpc_channel_credentials(self):
        """``grpc.ChannelCredentials`` trusting ``ca`` (else ``cert``)."""
        return grpc_channel_credentials(self.ca or self.cert)

    def client_context(self) -> ssl.SSLContext:
        """An ``ssl`` client context trusting ``ca`` (else ``cert``): see ``client_context``."""
        return client_context(self.ca or self.cert)
