"""PostgreSQL's frontend/backend protocol as typed messages, sans I/O: each message parses
from bytes and serializes to bytes, and nothing here owns a socket (PostgreSQL 55.7
"Message Formats"; the shape of psycopg's ``pq`` layer and of Materialize's
``pgwire-common``).

- :mod:`~sqlfront.protocol.buffer`: the primitives (Int16/Int32, String, framing, the
  checks of a length header) and :class:`ProtocolError` (SQLSTATE 08P01);
- :mod:`~sqlfront.protocol.frontend`: what a client sends (the startup-phase packets, then
  Query, Parse, Bind, ...);
- :mod:`~sqlfront.protocol.backend`: what a server sends (Authentication*, RowDescription,
  DataRow, ErrorResponse, ...);
- :mod:`~sqlfront.protocol.pgoutput`: the logical replication messages a PostgreSQL source
  reads from its slot (PostgreSQL 55.9 "Logical Replication Message Formats").

Users: ``sqlfront.pgwire`` (the server's session logic), ``sqlfront.balancer`` (which
reads the startup packet and BackendKeyData and writes CancelRequest), ``sqlfront.pgtypes``
and ``sqlfront.encoding`` (DataRows), ``sqlfront.pg_source`` (pgoutput). No module outside
this package packs or unpacks message bytes itself; a value's binary form (``*send`` /
``*recv``, COPY BINARY's file layout) is not a message and stays with the types.

Malformed or truncated input raises ProtocolError, never another exception, and no length
or count read from the input allocates more than the input's own size.
"""

from sqlfront.protocol.buffer import (
    Message,
    ProtocolError,
    body_length,
    frame,
    message_bounds,
    messages,
)

__all__ = ["Message", "ProtocolError", "body_length", "frame", "message_bounds", "messages"]
