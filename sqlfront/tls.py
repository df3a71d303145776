"""TLS for pgwire (PostgreSQL 55.2.10, "SSL Session Encryption"): the server's context
from a certificate and key file, made with Python's ``ssl`` module (no crypto of ours).

A client asks with SSLRequest; the server answers ``S`` and the TLS handshake follows on
the same socket, then the startup packet, encrypted. ``--tls-mode require`` refuses a
startup in clear text (FATAL 28000), as a PostgreSQL ``hostssl``-only pg_hba.conf does.
"""

from __future__ import annotations

import ssl

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
