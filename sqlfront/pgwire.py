"""The pgwire server: buenavista's handler and server, extended.

buenavista 0.5 speaks the framing of the protocol; we override what it gets wrong
for real clients: ErrorResponse carries severity, SQLSTATE, message, detail, hint and
position (PostgreSQL 55.8 "Error and Notice Message Fields"); RowDescription carries
real type OIDs and typmods; Describe never executes a statement; simple-query strings
with several statements return one result per statement and stop at the first error;
ParameterStatus is sent from the session variables.

Limits that keep one client from exhausting the server: at most ``max_connections``
sessions (FATAL 53300 beyond); every length a client sends is checked before anything is
read or allocated (``max_message_size``; 10,000 bytes for the startup packet, 64 KiB for
SASL messages, PostgreSQL's own limits); one COPY FROM STDIN holds at most
``max_copy_from_size`` bytes (53000, as Materialize), and all COPY streams together hold
at most the COPY memory budget (53200, ``sqlfront.memory_budget``); startup and
authentication must end within ``authentication_timeout_s`` of the connection (PostgreSQL's
authentication_timeout: a deadline, not a per-read timeout, so a byte now and then does
not keep a connection alive), and at most ``max_startup_connections`` connections may be
in startup at once (53300 beyond). Cancel keys come from ``secrets``.
"""

from __future__ import annotations

import hmac
import os
import logging
import secrets
import socket
import ssl
import struct
import threading
import time

from buenavista.core import Connection
from buenavista.postgres import (
    BuenaVistaHandler, BuenaVistaServer, BVBuffer, BVContext, ServerResponse, TransactionStatus,
)

from catalog.errors import (
    SqlError, ADMIN_SHUTDOWN, INSUFFICIENT_RESOURCES, INTERNAL_ERROR, INVALID_AUTHORIZATION_SPECIFICATION,
    INVALID_BINARY_REPRESENTATION, INVALID_CURSOR_NAME, INVALID_PASSWORD, INVALID_SQL_STATEMENT_NAME,
    PROTOCOL_VIOLATION, QUERY_CANCELED, SYNTAX_ERROR, TOO_MANY_CONNECTIONS,
)
from catalog.textio import parse_text
from catalog.types import UNKNOWN, type_from_oid
from planner.scalar import Literal
from sqlfront import encoding as wire_encoding
from sqlfront.auth import MECHANISM, ScramVerifier, check_login_name, login_verifier, mock_verifier
from sqlfront.environment import Environment
from sqlfront.messages import error_response, notice_response
from sqlfront.pgtypes import binary_param_text, chunk_data_rows, length_prefixed
from sqlfront.sequence.result import ResultStream, chunk_len, chunk_rows
from sqlfront.session import (
    CopyIn, CopyOut, Result, Session, param_count, parse_one, resource_error, split_statements,
)
from sqlfront.vars import REPORTED, display_name

log = logging.getLogger(__name__)

#: PostgreSQL's MAX_STARTUP_PACKET_LENGTH
MAX_STARTUP = 10_000
#: PostgreSQL's PG_MAX_AUTH_TOKEN_LENGTH: the largest SASL message
MAX_SASL_MESSAGE = 65_535


class StartupDeadlines:
    """Closes the connections that have not finished startup and authentication
    ``timeout_s`` seconds after they connected (PostgreSQL's authentication_timeout), from
    one watchdog thread: a client that connects and stays silent, or sends a byte now and
    then, does not hold a thread for ever."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self._cond = threading.Condition()
        self._deadlines: dict[socket.socket, float] = {}
        self._expired: set[socket.socket] = set()
        self._thread: threading.Thread | None = None

    def add(self, sock: socket.socket) -> None:
        """Start ``sock``'s clock."""
        with self._cond:
            self._deadlines[sock] = time.monotonic() + self.timeout_s
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="startup-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()

    def done(self, sock: socket.socket) -> bool:
        """``sock`` finished startup (or ended): once this returns, it is not closed.
        Returns whether its deadline had passed (it was closed)."""
        with self._cond:
            self._deadlines.pop(sock, None)
            if sock in self._expired:
                self._expired.discard(sock)
                return True
            return False

    def _watch(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for sock, deadline in list(self._deadlines.items()):
                    if deadline <= now:
                        del self._deadlines[sock]
                        self._expired.add(sock)
                        log.info("closing a connection that did not finish startup within %gs "
                                 "(sqlfront serve --authentication-timeout)", self.timeout_s)
                        try:
                            sock.shutdown(socket.SHUT_RDWR)  # its thread's read returns EOF
                        except OSError:
                            pass
                nearest = min(self._deadlines.values(), default=now + 60)
                self._cond.wait(max(0.01, nearest - now))


class ProtocolViolation(Exception):
    """The client broke the protocol: the connection is closed with FATAL 08P01."""


SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
PROTOCOL_3 = 196608


class EnvironmentConnection(Connection):
    """buenavista's Connection: hands out Sessions bound to one Environment."""

    def __init__(self, env: Environment):
        super().__init__()
        self.env = env

    def new_session(self):  # pragma: no cover - sessions are made in handle_startup
        raise NotImplementedError

    def close_session(self, session) -> None:
        if session is not None:
            session.close()


class PgContext(BVContext):
    """Per-connection protocol state: prepared statements, portals, the Session."""

    def __init__(self, session: Session, params: dict[str, str]):
        super().__init__(session, None, params)
        self.stmts = session.prepared
        self.reported: dict[str, str] = {}
        #: portals whose Execute stopped at its row limit (PortalSuspended), by name
        self.suspended: dict[str, Result] = {}

    @property
    def client_encoding(self) -> str:
        """The session's client_encoding (``sqlfront.encoding`` converts text to it)."""
        return self.session.vars.get("client_encoding")

    def decode(self, data: bytes) -> str:
        """Text from the client, in its encoding. Raises SqlError 22021."""
        return wire_encoding.decode(data, self.client_encoding)

    def drop_suspended(self, name: str | None = None) -> None:
        """Close the stream of suspended portal ``name`` (every one when None), which
        ends its peek (PostgreSQL drops portals at Close, at a new Bind of their name and
        at the end of their transaction)."""
        names = list(self.suspended) if name is None else [name]
        for n in names:
            r = self.suspended.pop(n, None)
            if r is not None and r.stream is not None:
                r.stream.close()

    def transaction_status(self):
        s = self.session
        if s.failed or (self.has_error and s.in_transaction):
            return TransactionStatus.IN_FAILED_TRANSACTION
        if s.in_transaction:
            return TransactionStatus.IN_TRANSACTION
        return TransactionStatus.IDLE

    def bound_params(self, portal: str) -> list:
        """The portal's parameters as literals. A parameter whose type the client gave in
        Parse has that type (PostgreSQL 55.2.3: ``$1`` of an int2 parameter is int2, so
        ``SELECT $1`` returns int2), its text read by the type's input function (22P02
        and the like for bad text, as PostgreSQL's Bind); one without a type is an
        untyped literal that the query's context types.

        Raises:
            SqlError from the input functions."""
        stmt, params, _ = self.portals[portal]
        _, oids = self.stmts[stmt]
        out = []
        for i, p in enumerate(params):
            t = type_from_oid(oids[i]) if i < len(oids) and oids[i] else None
            if t is not None and t.name in ("unknown", "record"):
                t = None
            if p is None:
                out.append(Literal(None, t or UNKNOWN))
            elif t is None:
                out.append(Literal(str(p), UNKNOWN))
            elif isinstance(p, str):
                out.append(Literal(parse_text(p, t), t))
            else:
                out.append(Literal(p, t))
        return out


class PgHandler(BuenaVistaHandler):
    """One client connection."""

    wbufsize = 1 << 16  # buffered: the replies to a batch go out together, at Sync or Flush

    @property
    def env(self) -> Environment:
        return self.server.conn.env

    # -- startup ------------------------------------------------------------------------

    def handle_startup(self, conn: Connection):
        msglen = self.r.read_uint32() - 4
        code = self.r.read_uint32()
        if code == SSL_REQUEST and self.server.tls is not None and self.tls is None:
            self.wfile.write(b"S")  # the TLS handshake follows, then the startup packet
            self.wfile.flush()
            self._start_tls()
            return self.handle_startup(conn)
        if code in (SSL_REQUEST, GSSENC_REQUEST):
            self.wfile.write(b"N")  # no SSL / GSSAPI: the client continues in plain text
            self.wfile.flush()
            return self.handle_startup(conn)
        if code == CANCEL_REQUEST:
            pid, key = self.r.read_uint32(), self.r.read_uint32()
            ctx = self.server.ctxts.get(pid)
            # A wrong key does nothing; compared in constant time, so timing tells nothing.
            if ctx is not None and hmac.compare_digest(ctx.secret_key.to_bytes(4, "big"), key.to_bytes(4, "big")):
                ctx.session.cancel()
            return None
        if code != PROTOCOL_3:
            self.send_error(SqlError(PROTOCOL_VIOLATION, f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}", severity="FATAL"))
            return None
        if not 8 <= msglen + 4 <= MAX_STARTUP:
            raise ProtocolViolation("invalid startup packet length")
        if self.server.tls_required and self.tls is None:
            self.send_error(SqlError(INVALID_AUTHORIZATION_SPECIFICATION, "this server accepts TLS connections only", severity="FATAL",
                                     hint="Connect with sslmode=require."))
            return None
        raw = self._read_exact(msglen - 4).split(b"\x00")
        msg = [x.decode("utf-8", "replace") for x in raw]
        params = dict(zip(msg[::2], msg[1::2]))
        user = params.get("user", "")
        # The slot is taken before authentication, as PostgreSQL takes its backend slot, and
        # only by a real session: a CancelRequest must get through to a full server.
        self.holds_slot = self.server.slots.acquire(blocking=False)
        if not self.holds_slot:
            self.send_error(SqlError(TOO_MANY_CONNECTIONS, "sorry, too many clients already", severity="FATAL"))
            return None
        try:
            user = check_login_name(user)  # a long name truncated, as PostgreSQL's
        except SqlError as e:
            self.send_error(e)
            return None
        if self.server.scram is not None and not self._authenticate(user):
            return None
        try:
            role_id = self.env.login_role(user)
        except SqlError as e:
            self.send_error(e)
            return None
        try:
            session = Session(self.env, {k: v for k, v in params.items() if k not in ("user", "database")}, role_id)
        except SqlError as e:  # a bad setting in the startup packet ends the connection
            e.severity = "FATAL"
            self.send_error(e)
            return None
        session.client_gone = self._client_gone
        session.on_terminate = self._terminate
        if self.server.scram is not None:
            session.system_user = f"scram-sha-256:{user}"
        if isinstance(self.client_address, tuple):  # TCP (PostgreSQL: NULL over a Unix socket)
            session.client_port, session.server_port = self.client_address[1], self.request.getsockname()[1]
        ctx = PgContext(session, params)
        self.server.register(ctx)
        session.activity.connection_id, session.activity.client_ip = ctx.process_id, self.client_address[0]
        self.ctx = ctx  # from here on, handle()'s cleanup closes it even if startup fails
        self.send_authentication_ok()
        self.handle_post_auth(ctx)
        self.wfile.flush()
        return ctx

    def _authenticate(self, user: str) -> bool:
        """SCRAM-SHA-256 (PostgreSQL 55.3.1) against the secret ``login_verifier`` picks
        for ``user`` (its own password's, or the server password's). On failure sends
        FATAL 28P01 and returns False."""

        def auth_msg(code: int, data: bytes = b"") -> None:
            self.wfile.write(b"R" + struct.pack("!ii", 8 + len(data), code) + data)
            self.wfile.flush()

        def read_password_message() -> bytes:
            if self.r.read_byte() != b"p":
                raise ProtocolViolation("expected a SASL response")
            return self._read_body(MAX_SASL_MESSAGE)

        auth_msg(10, MECHANISM.encode() + b"\x00\x00")
        body = read_password_message()
        mech, _, rest = body.partition(b"\x00")
        verifier = login_verifier(self.env.snapshot.role_by_name(user), self.server.scram,
                                  auto_create=self.env.config.auto_create_roles)
        # no password logs this user in: the exchange runs against a secret nobody knows,
        # with the salt a role of that name would show
        scram = (verifier or mock_verifier(user, self.server.mock_nonce)).exchange()
        try:
            if mech.decode() != MECHANISM or len(rest) < 4:
                raise ValueError("unsupported SASL mechanism")
            (n,) = struct.unpack("!i", rest[:4])
            auth_msg(11, scram.first(rest[4 : 4 + n].decode()).encode())
            final = scram.final(read_password_message().decode())
        except (ValueError, UnicodeDecodeError):
            final = None
        if final is None or verifier is None:
            self.send_error(SqlError(INVALID_PASSWORD, f'password authentication failed for user "{user}"', severity="FATAL"))
            return False
        auth_msg(12, final.encode())
        return True

    def _read_exact(self, n: int) -> bytes:
        data = self.r.read_bytes(n)
        if len(data) != n:
            raise ConnectionError("connection closed mid-message")
        return data

    def _read_body(self, limit: int) -> bytes:
        """The body of a message whose type byte was read: its Int32 length (which counts
        itself) is checked against ``limit`` bytes BEFORE the body is read, so a client
        cannot make the server allocate or wait for more.

        Raises:
            ProtocolViolation for a length below 4 or above ``limit`` (the connection
            closes with FATAL 08P01, as PostgreSQL's "invalid message length");
            ConnectionError if the client goes away mid-message.
        """
        header = self.r.read_bytes(4)
        if len(header) != 4:
            raise ConnectionError("connection closed mid-message")
        (size,) = struct.unpack("!I", header)
        if size < 4:
            raise ProtocolViolation(f"invalid message length {size}")
        if size > limit:
            raise ProtocolViolation(f"message of {size} bytes exceeds the limit of {limit} bytes "
                                    "(sqlfront serve --max-message-size)")
        return self._read_exact(size - 4) if size > 4 else b""

    def handle_post_auth(self, ctx: PgContext):
        ctx.reported = {k: ctx.session.vars.get(k) for k in REPORTED}
        self.send_parameter_status({display_name(k): v for k, v in ctx.reported.items()})
        self.send_backend_key_data(ctx)
        self.send_ready_for_query(ctx)
        ctx.authenticated = True

    def handle(self):
        """The message loop (buenavista's, with lengths checked: a malformed or truncated
        message closes this connection with an error and nothing else)."""
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self.r = BVBuffer(self.rfile)
        #: the TLS socket once the client asked for TLS (``_start_tls``), and a plain one on
        #: the same connection
        self.tls = self._raw = None
        #: whether this connection holds one of the server's max_connections slots
        self.holds_slot = False
        #: this connection's context once it has one
        self.ctx = None
        ctx = None
        try:
            ctx = self._startup()
            while ctx:
                type_code = self.r.read_byte()
                if not type_code or type_code == b"X":
                    break
                payload = self._read_body(self.server.max_message_size)
                self.dispatch(ctx, type_code, payload)
                if type_code not in _NO_FLUSH:
                    self.wfile.flush()
        except ProtocolViolation as e:
            self._fatal(SqlError(PROTOCOL_VIOLATION, str(e), severity="FATAL"))
        except ConnectionError as e:
            log.info("connection to client lost: %s", e.strerror or e)
        except OSError:
            pass
        except Exception as e:  # a bug, or garbage a handler choked on: drop this connection only
            log.warning("closing connection after %s: %s", type(e).__name__, e)
            self._fatal(SqlError(PROTOCOL_VIOLATION, f"protocol error: {e}", severity="FATAL"))
        finally:
            if self.ctx and self.ctx.session.terminated:
                self._fatal(SqlError(ADMIN_SHUTDOWN, "terminating connection due to administrator command",
                                     severity="FATAL"))
            try:
                if self.ctx:
                    self.server.unregister(self.ctx)
                    self.ctx.drop_suspended()
                    self.ctx.session.close()
            finally:
                if self.holds_slot:  # however the connection ends: error, EOF, Terminate, a bug
                    self.holds_slot = False
                    self.server.slots.release()
            try:
                self.wfile.flush()
            except OSError:
                pass
            if self._raw is not None:
                self._raw.close()
            try:
                self.request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _start_tls(self) -> None:
        """The TLS handshake on this connection (its startup deadline applies), after which
        every message is read and written through it.

        Raises:
            ConnectionError: the handshake failed (the client is told nothing more)."""
        plain = self.request
        deadlines = self.server.startup_deadlines
        try:
            wrapped = self.server.tls.wrap_socket(plain, server_side=True)
        except (ssl.SSLError, OSError) as e:
            raise ConnectionError(f"TLS handshake failed: {e}") from None
        deadlines.done(plain)
        deadlines.add(wrapped)
        for f in (self.rfile, self.wfile):
            f.close()
        self.request = self.connection = self.tls = wrapped
        self.rfile = wrapped.makefile("rb", self.rbufsize)
        self.wfile = wrapped.makefile("wb", self.wbufsize)
        self.r = BVBuffer(self.rfile)
        # A plain socket on the same connection, to peek for the client's EOF (an SSL
        # socket takes no recv flags).
        self._raw = socket.socket(fileno=os.dup(wrapped.fileno()))

    def _startup(self):
        """``handle_startup`` within the server's startup limits: the connection's
        deadline (``authentication_timeout_s`` from now) and its place among the
        ``max_startup_connections`` connections in startup (FATAL 53300 when none is free,
        before anything is read)."""
        server = self.server
        if not server.startup_slots.acquire(blocking=False):
            self._fatal(SqlError(TOO_MANY_CONNECTIONS, "sorry, too many clients already",
                                 detail="Too many connections are starting up at once.", severity="FATAL"))
            return None
        server.startup_deadlines.add(self.request)
        try:
            return self.handle_startup(server.conn)
        except Exception as e:
            if server.startup_deadlines.done(self.request):  # what broke is the closed socket
                raise ConnectionError("startup did not finish in time") from e
            raise
        finally:
            server.startup_deadlines.done(self.request)
            server.startup_slots.release()

    def _fatal(self, e: SqlError) -> None:
        try:
            self.send_error(e)
            self.wfile.flush()
        except OSError:
            pass

    def dispatch(self, ctx: PgContext, kind: bytes, payload: bytes) -> None:
        if ctx.has_error and kind in (b"P", b"B", b"D", b"E", b"C", b"H"):
            return  # after an error, the extended protocol discards messages until Sync (55.2.3)
        if kind == b"Q":
            self.handle_query(ctx, payload)
        elif kind == b"P":
            self.handle_parse(ctx, payload)
        elif kind == b"B":
            self.handle_bind(ctx, payload)
        elif kind == b"D":
            self.handle_describe(ctx, payload)
        elif kind == b"E":
            self.handle_execute(ctx, payload)
        elif kind == b"C":
            self.handle_close(ctx, payload)
        elif kind == b"S":
            if not ctx.session.in_transaction:
                ctx.drop_suspended()  # the implicit transaction ends at Sync, and its portals
            ctx.sync()
            self.send_ready_for_query(ctx)
        elif kind == b"H":
            pass
        elif kind in (b"d", b"c", b"f"):
            pass  # COPY data outside a COPY: ignored, as PostgreSQL does
        else:
            raise ProtocolViolation(f"invalid frontend message type {kind!r}")

    def handle_parse(self, ctx: PgContext, payload: bytes):
        try:
            a = payload.index(b"\x00")
            name = payload[:a].decode("utf-8")
            b = payload.index(b"\x00", a + 1)
            sql = ctx.decode(payload[a + 1 : b])
            (n,) = struct.unpack_from("!h", payload, b + 1)
            oids = list(struct.unpack_from(f"!{n}I", payload, b + 3)) if n > 0 else []
        except (ValueError, struct.error, UnicodeDecodeError) as e:
            self.send_error(SqlError(PROTOCOL_VIOLATION, f"invalid Parse message: {e}"), ctx)
            return
        except SqlError as e:
            self.send_error(e, ctx)
            return
        if sql.strip():
            try:
                split = split_statements(sql)
                if len(split) > 1:
                    raise SqlError(SYNTAX_ERROR, "cannot insert multiple commands into a prepared statement")
                if split:
                    parse_one(split[0])  # syntax errors belong to Parse, as in PostgreSQL
            except SqlError as e:
                self.send_error(e, ctx)
                return
        ctx.stmts[name] = (sql, oids)
        self.send_parse_complete()

    # -- simple query -------------------------------------------------------------------

    def report_changes(self, ctx: PgContext) -> None:
        """ParameterStatus for reported variables a statement changed (SET, RESET,
        set_config; PostgreSQL 55.2.7), sent after its CommandComplete."""
        changed = {}
        values = ctx.session.vars.values  # every REPORTED name is there (after every Execute: kept cheap)
        for k in REPORTED:
            v = values.get(k)
            if ctx.reported.get(k) != v:
                ctx.reported[k] = v
                changed[display_name(k)] = v
        if changed:
            self.send_parameter_status(changed)

    def handle_query(self, ctx: PgContext, payload: bytes):
        try:
            sql = ctx.decode(payload).rstrip("\x00")
        except SqlError as e:
            self.send_error(e, ctx)
            self.send_ready_for_query(ctx)
            return
        if not sql.strip().strip(";").strip():
            self.wfile.write(struct.pack("!ci", ServerResponse.EMPTY_QUERY_RESPONSE, 4))
            self.send_ready_for_query(ctx)
            return
        try:
            for result in ctx.session.execute(sql):
                self.send_notices(ctx)
                if isinstance(result, CopyIn):
                    result = self.copy_in(ctx, result)
                elif isinstance(result, CopyOut):
                    result = self.copy_out(result)
                elif result.columns is not None:
                    formats = [1] if result.binary else None
                    self.send_columns(result.columns, formats)
                    try:
                        sent = self.send_rows(result, formats, 0)
                    finally:
                        if result.stream is not None:
                            result.stream.close()
                    result = Result(_complete_tag(result, sent))
                self.send_command_complete(result.tag + "\x00")
                self.report_changes(ctx)  # SET, RESET, set_config(), ...
        except Exception as e:
            err = self._statement_error(e)  # re-raises when the client is gone
            if ctx.session.in_transaction:
                ctx.session.failed = True  # any error, also one while rows stream (a FETCH's, say)
            self.send_error(err)
        if not ctx.session.in_transaction:
            ctx.drop_suspended()  # portals end with their transaction
        self.send_ready_for_query(ctx)

    # -- COPY -----------------------------------------------------------------------------

    def copy_in(self, ctx: PgContext, c: CopyIn) -> Result:
        """CopyInResponse, then CopyData until CopyDone (or CopyFail) (PostgreSQL 55.2.6),
        each fed to the session's ``CopyLoad`` (parsed in batches, its columns written to
        Blob every few MB, appended at the end). The load takes its share of the COPY
        memory budget before the CopyInResponse: while other COPYs hold it, the client
        waits to be asked for data.

        Raises:
            SqlError 53000 once the data passes ``max_copy_from_size`` bytes (Materialize's
            "COPY FROM STDIN too large"); 53200 when the server's COPY memory budget
            stays taken past its wait time, or a row alone needs more than it; the
            data's errors. What the client still sends of this COPY
            is then dropped, as PostgreSQL drops CopyData after an error in copy-in mode.
        """
        load = ctx.session.start_copy(c)
        total, limit = 0, self.server.max_copy_from_size
        try:
            self._copy_response(b"G", c.fmt, len(c.positions) if c.positions is not None else len(c.table.columns))
            self.wfile.flush()
            while True:
                kind = self.r.read_byte()
                if not kind:
                    raise ConnectionError("client closed the connection during COPY")
                body = self._read_body(self.server.max_message_size)
                if kind == b"d":
                    total += len(body)
                    if total > limit:
                        raise SqlError(INSUFFICIENT_RESOURCES, "COPY FROM STDIN too large",
                                       detail=f"The data exceeds max_copy_from_size ({limit} bytes).",
                                       hint="Split the data into several COPY statements, or raise the limit with "
                                            "sqlfront serve --max-copy-from-size.")
                    load.feed(body)
                elif kind == b"c":
                    break
                elif kind == b"f":
                    reason = body.rstrip(b"\x00").decode("utf-8", "replace")
                    raise SqlError(QUERY_CANCELED, f"COPY from stdin failed: {reason}")
                elif kind in (b"H", b"S"):
                    continue
                else:
                    raise SqlError(PROTOCOL_VIOLATION, f"unexpected message type 0x{kind.hex()} during COPY from stdin")
            return load.finish()
        finally:
            load.close()

    def _copy_response(self, kind: bytes, fmt: str, n: int) -> None:
        """CopyInResponse (``G``) or CopyOutResponse (``H``): the overall format and each
        of the ``n`` columns' (all text, or all binary)."""
        code = 1 if fmt == "binary" else 0
        self.wfile.write(kind + struct.pack("!ibh", 4 + 1 + 2 + 2 * n, code, n) + struct.pack(f"!{n}h", *([code] * n)))

    def _statement_error(self, e: Exception) -> SqlError:
        """The error to send for what a statement raised: a SqlError as it is; a resource
        it ran out of as PostgreSQL reports it (``session.resource_error``: 54001, 53100);
        anything else is a bug, logged with its traceback, sent as XX000.

        Raises:
            ``e`` again when it is the client's connection that failed (it went away while
            results were sent): there is no one to tell, so the connection just ends,
            with an info line as PostgreSQL's "could not send data to client"."""
        if isinstance(e, SqlError):
            return e
        if isinstance(e, ConnectionError) and self._client_gone():
            raise e
        err = resource_error(e)
        if err is None:
            log.exception("internal error")
            err = SqlError(INTERNAL_ERROR, f"internal error: {e}")
        return err

    def _terminate(self) -> None:
        """pg_terminate_backend of this connection's session (from another thread): stop
        reading, so the message loop ends after the running statement and ``handle``
        closes the connection with FATAL 57P01."""
        try:
            (self._raw if self._raw is not None else self.request).shutdown(socket.SHUT_RD)
        except OSError:
            pass  # already closed

    def _client_gone(self) -> bool:
        """Whether the client closed the connection (a peek of 0 bytes is EOF), asked
        without blocking while a long statement (SUBSCRIBE) runs."""
        import select

        sock = self._raw if self._raw is not None else self.request
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def copy_out(self, c: CopyOut) -> Result:
        """CopyOutResponse, CopyData per row, CopyDone (PostgreSQL 55.2.6)."""
        from sqlfront.copy import copy_out_chunks

        self._copy_response(b"H", c.fmt, len(c.columns))
        types = [t for _, t in c.columns]
        count = 0

        def chunks():
            nonlocal count
            for chunk in (c.stream.take() if c.stream is not None else [c.rows]):
                count += chunk_len(chunk)
                yield chunk_rows(chunk, types)

        out = []
        try:
            enc = self._client_encoding()
            recode = c.fmt != "binary" and wire_encoding.codec(enc) is not None
            for data in copy_out_chunks(c.columns, chunks(), c.fmt, c.delimiter, c.null, c.header):
                if recode:
                    data = wire_encoding.encode(data.decode("utf-8"), enc)
                out.append(b"d" + struct.pack("!i", len(data) + 4) + data)
                if len(out) >= 512 or c.live:  # a SUBSCRIBE's rows go out as they come
                    self.wfile.write(b"".join(out))
                    out = []
                    if c.live:
                        self.wfile.flush()
        finally:
            if c.stream is not None:
                c.stream.close()
        out.append(b"c" + struct.pack("!i", 4))
        self.wfile.write(b"".join(out))
        return Result(f"COPY {count}")

    # -- extended query -----------------------------------------------------------------

    def handle_describe(self, ctx: PgContext, payload: bytes):
        kind, name = payload[0], payload[1:-1].decode("utf-8")
        try:
            if kind == ord("S"):
                if name not in ctx.stmts:
                    raise KeyError(name)
                sql, oids = ctx.stmts[name]
                given = {i + 1: t for i, o in enumerate(oids) if o and (t := type_from_oid(o)) is not None}
                cols, types = ctx.session.describe(sql, max(len(oids), param_count(sql)), given)
                resolved = [o if o else t.oid for o, t in zip(list(oids) + [0] * len(types), types)]
                ctx.stmts[name] = (sql, resolved)  # Bind decodes binary parameters with these
                self.send_paramter_description(resolved)
                formats = None
            elif name not in ctx.portals and name in ctx.session.cursors:
                # a cursor is a portal too (PostgreSQL's DECLARE; psycopg describes its
                # named cursors this way)
                c = ctx.session.cursors[name]
                cols, formats = c.columns, [1] if c.binary else None
            else:
                stmt, _, formats = ctx.portals[name]
                sql, _ = ctx.stmts[stmt]
                cols = ctx.session.describe_bound(sql, lambda: ctx.bound_params(name))
            if cols is None:
                self.wfile.write(struct.pack("!ci", ServerResponse.NO_DATA, 4))
            else:
                self.send_columns(cols, formats)
        except KeyError:
            self.send_error(SqlError(INVALID_SQL_STATEMENT_NAME, f'prepared statement or portal "{name}" does not exist'), ctx)
        except (SqlError, RecursionError) as e:
            self.send_error(self._statement_error(e), ctx)

    def handle_execute(self, ctx: PgContext, payload: bytes):
        if ctx.has_error:
            return
        idx = payload.index(b"\x00")
        portal = payload[:idx].decode("utf-8")
        limit = struct.unpack("!i", payload[idx + 1 : idx + 5])[0]
        if portal not in ctx.portals and portal not in ctx.suspended:
            self.send_error(SqlError(INVALID_CURSOR_NAME, f'portal "{portal}" does not exist'), ctx)
            return
        result = None
        try:
            if portal in ctx.suspended:
                result = ctx.suspended.pop(portal)
                ctx.session.begin_statement()  # a new Execute: an old cancel is spent, a new deadline
            else:
                stmt, _, _ = ctx.portals[portal]
                sql, _ = ctx.stmts[stmt]
                result = ctx.session.execute_one(sql, ctx.bound_params(portal)) if sql.strip() else None
                self.send_notices(ctx)
            if result is None:
                self.wfile.write(struct.pack("!ci", ServerResponse.EMPTY_QUERY_RESPONSE, 4))
                return
            if isinstance(result, (CopyIn, CopyOut)):  # COPY works in the extended protocol too
                done = self.copy_in(ctx, result) if isinstance(result, CopyIn) else self.copy_out(result)
                result = None
                self.send_command_complete(done.tag + "\x00")
                return
            _, _, formats = ctx.portals[portal]
            if result.columns is not None:
                if result.binary:
                    formats = [1]
                if result.stream is None:
                    result.stream = _rows_stream(result)
                self.send_rows(result, formats, limit)
                if limit > 0 and not result.stream.done:
                    ctx.suspended[portal], result = result, None
                    self.send_portal_suspend()
                    return
                result.stream.close()
                self.send_command_complete(_complete_tag(result, result.stream.rows_taken) + "\x00")
                return
            self.send_command_complete(result.tag + "\x00")
        except Exception as e:
            self.send_error(self._statement_error(e), ctx)  # re-raises when the client is gone
        finally:
            if result is not None and result.stream is not None:
                result.stream.close()  # ended, failed: the peek is over (a no-op if closed)
            self.report_changes(ctx)  # SET, RESET, set_config(), ...

    def handle_bind(self, ctx: PgContext, payload: bytes):
        try:
            a = payload.index(b"\x00")
            portal = payload[:a].decode("utf-8")
            b = payload.index(b"\x00", a + 1)
            stmt = payload[a + 1 : b].decode("utf-8")
            pos = b + 1
            (nf,) = struct.unpack_from("!h", payload, pos)
            formats = list(struct.unpack_from(f"!{nf}h", payload, pos + 2))
            pos += 2 + 2 * nf
            (np_,) = struct.unpack_from("!h", payload, pos)
            pos += 2
            if stmt not in ctx.stmts:
                raise SqlError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{stmt}" does not exist')
            oids = ctx.stmts[stmt][1]
            values, pos = length_prefixed(payload, pos, np_)
            params = []
            for i, raw in enumerate(values):
                oid = oids[i] if i < len(oids) else 0
                if raw is None:
                    params.append(None)
                elif _format_for(formats, i) == 0 or ((t := type_from_oid(oid)) is not None and t.is_string):
                    # text, and the binary form of string types (textrecv), are in the
                    # client's encoding; PostgreSQL's text cannot hold NUL (22021)
                    params.append(wire_encoding.no_nul(ctx.decode(raw)))
                else:
                    try:
                        params.append(binary_param_text(oid, raw))
                    except SqlError as e:
                        if e.sqlstate == INVALID_BINARY_REPRESENTATION:  # PostgreSQL's exec_bind_message
                            e.detail = e.detail or e.message
                            e.message = f"incorrect binary data format in bind parameter {i + 1}"
                        raise
            (nr,) = struct.unpack_from("!h", payload, pos)
            result_formats = list(struct.unpack_from(f"!{nr}h", payload, pos + 2))
        except SqlError as e:
            self.send_error(e, ctx)
            return
        except (struct.error, ValueError, UnicodeDecodeError) as e:
            self.send_error(SqlError(PROTOCOL_VIOLATION, f"invalid Bind message: {e}"), ctx)
            return
        ctx.portals[portal] = (stmt, params, result_formats)
        ctx.drop_suspended(portal)
        self.send_bind_complete()

    def handle_close(self, ctx: PgContext, payload: bytes):
        kind, name = payload[0], payload[1:-1].decode("utf-8")
        if kind == ord("S"):
            ctx.stmts.pop(name, None)
        else:
            ctx.portals.pop(name, None)
            ctx.drop_suspended(name)
        self.send_close_complete()

    # -- messages ---------------------------------------------------------------------

    def _client_encoding(self) -> str:
        ctx = getattr(self, "ctx", None)  # None before startup completes
        return ctx.client_encoding if ctx is not None else "UTF8"

    def send_columns(self, cols, formats):
        buf = BVBuffer()
        enc = self._client_encoding()
        for i, (name, t) in enumerate(cols):
            buf.write_bytes(wire_encoding.encode(name, enc) + b"\x00")
            fmt = _format_for(formats, i)
            buf.write_bytes(struct.pack("!ihihih", 0, 0, t.oid, t.typlen, t.typmod, fmt))
        out = buf.get_value()
        self.wfile.write(struct.pack("!cih", ServerResponse.ROW_DESCRIPTION, len(out) + 6, len(cols)) + out)

    def send_rows(self, result: Result, formats, limit: int) -> int:
        """DataRows for the next ``limit`` rows of ``result`` (all when ``limit`` <= 0),
        chunk by chunk as its stream yields them; returns how many were sent."""
        types = [t for _, t in result.columns]
        binary = [_format_for(formats, i) == 1 for i in range(len(types))]
        stream = result.stream if result.stream is not None else _rows_stream(result)
        enc = self._client_encoding()
        ds = self.ctx.session.vars.date_style()
        # text in the client's encoding: every text-format value, and binary text values
        convert = [(not b or t.is_string) for b, t in zip(binary, types)] \
            if wire_encoding.codec(enc) is not None else None
        sent = 0
        for chunk in stream.take(limit if limit > 0 else None):
            for start in range(0, chunk_len(chunk), 4096):  # bounded memory for big chunks
                data = chunk_data_rows(chunk[start : start + 4096], types, binary, ds)
                if convert is not None:
                    data = wire_encoding.transcode_data_rows(data, enc, convert)
                self.wfile.write(data)
            sent += chunk_len(chunk)
        return sent

    def send_notices(self, ctx: PgContext) -> None:
        """NoticeResponses for what the session's statement raised (before its results or
        its error, as PostgreSQL sends them)."""
        enc = self._client_encoding()
        for n in ctx.session.take_notices():
            self.wfile.write(notice_response(n, lambda v: wire_encoding.encode(v, enc, strict=False)))

    def send_error(self, exception, ctx=None):
        e = exception if isinstance(exception, SqlError) else SqlError(INTERNAL_ERROR, str(exception))
        if e.sqlstate == INTERNAL_ERROR:
            log.error("error sent to client: %s", e.message)
        if getattr(self, "ctx", None) is not None:
            self.send_notices(self.ctx)
        enc = self._client_encoding()
        self.wfile.write(error_response(e, lambda v: wire_encoding.encode(v, enc, strict=False)))
        if ctx is not None:
            ctx.mark_error()
            if ctx.session.in_transaction:
                ctx.session.failed = True


def _rows_stream(result: Result) -> ResultStream:
    """A stream over a Result's rows (SHOW, EXPLAIN: small, already in memory)."""
    chunks = iter([result.rows])
    return ResultStream(result.columns, lambda: next(chunks, None))


def _complete_tag(result: Result, rows: int) -> str:
    """The CommandComplete tag of a row-returning result that sent ``rows`` rows:
    ``SELECT n`` and ``FETCH n`` count them; other tags (SHOW, EXPLAIN) stand as they are."""
    if result.tag.startswith("SELECT"):
        return f"SELECT {rows}"
    return f"{result.tag} {rows}" if result.tag == "FETCH" else result.tag


def _format_for(formats, i: int) -> int:
    if not formats:
        return 0
    return formats[0] if len(formats) == 1 else formats[i]


#: Parse, Bind, Describe, Execute, Close: their replies wait for Sync or Flush, as in
#: PostgreSQL ("Extended Query": the server flushes at Sync and on Flush)
_NO_FLUSH = (b"P", b"B", b"D", b"E", b"C")


class PgServer(BuenaVistaServer):
    """A threaded pgwire server: one thread per connection. ``scram``: the secret of the
    password every user must give (SCRAM-SHA-256), None to trust every local client.
    Limits come from ``env.config`` (``max_connections``, ``max_message_size``,
    ``max_copy_from_size``, ``max_startup_connections``, ``authentication_timeout_s``)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], env: Environment, scram: ScramVerifier | None = None,
                 tls: "ssl.SSLContext | None" = None, tls_required: bool = False):
        super().__init__(address, EnvironmentConnection(env))
        self.RequestHandlerClass = PgHandler
        self.scram = scram
        #: TLS for clients that ask (``sqlfront.tls``); with ``tls_required`` the only way in
        self.tls = tls
        self.tls_required = tls_required and tls is not None
        #: the server secret of the mock salts of users no password logs in
        #: (``auth.mock_verifier``; PostgreSQL's mock_auth_nonce)
        self.mock_nonce = env.secret_box.derive(b"scram mock salt")
        config = env.config
        self.max_message_size = config.max_message_size
        self.max_copy_from_size = config.max_copy_from_size
        #: one per session (PostgreSQL's max_connections)
        self.slots = threading.BoundedSemaphore(config.max_connections)
        #: one per connection in startup or authentication
        self.startup_slots = threading.BoundedSemaphore(config.max_startup_connections)
        self.startup_deadlines = StartupDeadlines(config.authentication_timeout_s)
        self._ctxts_lock = threading.Lock()

    def register(self, ctx: PgContext) -> None:
        """Give ``ctx`` its cancel key, a process id unique among live connections and a
        secret from ``secrets`` (PostgreSQL 55.2.7: the key is all that authorizes a
        CancelRequest, so it must not be guessable), and make it reachable by cancel."""
        with self._ctxts_lock:
            pid = secrets.randbelow(2**31 - 1) + 1  # a positive Int32, as a real process id
            while pid in self.ctxts:
                pid = secrets.randbelow(2**31 - 1) + 1
            ctx.process_id, ctx.secret_key = pid, secrets.randbits(32)
            self.ctxts[pid] = ctx

    def unregister(self, ctx: PgContext) -> None:
        with self._ctxts_lock:
            self.ctxts.pop(ctx.process_id, None)

    def verify_request(self, request, client_address) -> bool:
        return True  # the listen address decides who can connect (127.0.0.1 by default)
