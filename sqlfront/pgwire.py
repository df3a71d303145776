"""The pgwire server: one thread per connection (``socketserver``), each running a
session's side of PostgreSQL's frontend/backend protocol (PostgreSQL 55.2 "Message
Flow"): startup and SCRAM, the simple and extended query protocols, COPY, cancel. The
messages themselves are ``sqlfront.protocol``'s, read and written here; this module owns
the socket and the flow. ErrorResponse carries severity, SQLSTATE, message, detail, hint
and position (55.8); RowDescription carries real type OIDs and typmods; Describe never
executes a statement; simple-query strings with several statements return one result
per statement and stop at the first error; ParameterStatus is sent from the session
variables.

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
import socketserver
import ssl
import threading
import time
from collections.abc import Callable

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
from sqlfront.pgtypes import binary_param_text, chunk_data_rows
from sqlfront.protocol import ProtocolError, body_length, frame
from sqlfront.protocol.backend import (
    AuthenticationOk, AuthenticationSASL, AuthenticationSASLContinue, AuthenticationSASLFinal, BackendKeyData,
    BindComplete, CloseComplete, CommandComplete, CopyInResponse, CopyOutResponse, EmptyQueryResponse,
    ErrorResponse, Field, NoData, NoticeResponse, ParameterDescription, ParameterStatus, ParseComplete,
    PortalSuspended, ReadyForQuery, RowDescription,
)
from sqlfront.protocol.buffer import Message, startup_header, utf8
from sqlfront.protocol.frontend import (
    ACCEPT, GSSENC_REQUEST, MAX_STARTUP, REFUSE, SSL_REQUEST, Bind, CancelRequest, Close,
    CopyData, CopyDone, CopyFail, Describe, Execute, Parse, Query, SASLInitialResponse, SASLResponse,
    startup_packet,
)
from sqlfront.sequence.result import ResultStream, chunk_len, chunk_rows
from sqlfront.session import (
    CopyIn, CopyOut, Result, Session, param_count, parse_one, resource_error, split_statements, store_error,
)
from sqlfront.vars import REPORTED, display_name

log = logging.getLogger(__name__)

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


class PgContext:
    """Per-connection protocol state: prepared statements, portals, the Session."""

    def __init__(self, session: Session, params: dict[str, str]):
        self.session = session
        #: the startup packet's parameters
        self.params = params
        #: statement name -> (SQL, parameter type OIDs)
        self.stmts = session.prepared
        #: portal name -> (statement name, parameters, result format codes)
        self.portals: dict[str, tuple] = {}
        #: a message of the extended protocol failed: the others are skipped until Sync (55.2.3)
        self.has_error = False
        self.authenticated = False
        #: the cancel key (``PgServer.register``)
        self.process_id, self.secret_key = 0, 0
        self.reported: dict[str, str] = {}
        #: portals whose Execute stopped at its row limit (PortalSuspended), by name
        self.suspended: dict[str, Result] = {}

    def mark_error(self) -> None:
        self.has_error = True

    def sync(self) -> None:
        self.has_error = False

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
            return ReadyForQuery.FAILED
        if s.in_transaction:
            return ReadyForQuery.IN_TRANSACTION
        return ReadyForQuery.IDLE

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
        text = self.session.vars.text_format()  # TimeZone, IntervalStyle: what the text means
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
                out.append(Literal(parse_text(p, t, True, text), t))
            else:
                out.append(Literal(p, t))
        return out


class PgHandler(socketserver.StreamRequestHandler):
    """One client connection."""

    wbufsize = 1 << 16  # buffered: the replies to a batch go out together, at Sync or Flush

    @property
    def env(self) -> Environment:
        return self.server.env

    # -- startup ------------------------------------------------------------------------

    def handle_startup(self):
        """Reads startup-phase packets until a StartupMessage (answering SSLRequest and
        GSSENCRequest, acting on a CancelRequest) and authenticates it. Returns the
        connection's context, or None when the connection ends here.

        Raises:
            ProtocolError for a packet of a bad length or an unsupported protocol version
            (the connection closes with FATAL 08P01)."""
        length, code = startup_header(self._read_exact(8))
        if not 8 <= length <= MAX_STARTUP:
            raise ProtocolError("invalid startup packet length")
        packet = startup_packet(code, self._read_exact(length - 8))
        if code == SSL_REQUEST and self.server.tls is not None and self.tls is None:
            self.wfile.write(ACCEPT)  # the TLS handshake follows, then the startup packet
            self.wfile.flush()
            self._start_tls()
            return self.handle_startup()
        if code in (SSL_REQUEST, GSSENC_REQUEST):
            self.wfile.write(REFUSE)  # no SSL / GSSAPI: the client continues in plain text
            self.wfile.flush()
            return self.handle_startup()
        if isinstance(packet, CancelRequest):
            ctx = self.server.ctxts.get(packet.process_id)
            # A wrong key does nothing; compared in constant time, so timing tells nothing.
            if ctx is not None and hmac.compare_digest(ctx.secret_key.to_bytes(4, "big"), packet.secret):
                ctx.session.cancel()
            return None
        if self.server.tls_required and self.tls is None:
            self.send_error(SqlError(INVALID_AUTHORIZATION_SPECIFICATION, "this server accepts TLS connections only", severity="FATAL",
                                     hint="Connect with sslmode=require."))
            return None
        params = packet.parameters
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
        self._send(AuthenticationOk())
        self.handle_post_auth(ctx)
        self.wfile.flush()
        return ctx

    def _authenticate(self, user: str) -> bool:
        """SCRAM-SHA-256 (PostgreSQL 55.3.1) against the secret ``login_verifier`` picks
        for ``user`` (its own password's, or the server password's). On failure sends
        FATAL 28P01 and returns False."""

        def auth_msg(msg) -> None:
            self._send(msg)
            self.wfile.flush()

        def read_password_message() -> bytes:
            if self.rfile.read(1) != b"p":
                raise ProtocolError("expected a SASL response")
            return self._read_body(MAX_SASL_MESSAGE)

        auth_msg(AuthenticationSASL((MECHANISM,)))
        body = read_password_message()
        verifier = login_verifier(self.env.snapshot.role_by_name(user), self.server.scram,
                                  auto_create=self.env.config.auto_create_roles)
        # no password logs this user in: the exchange runs against a secret nobody knows,
        # with the salt a role of that name would show
        scram = (verifier or mock_verifier(user, self.server.mock_nonce)).exchange()
        final = None
        try:  # a bad client-first message fails the login (28P01), as a wrong password
            first = SASLInitialResponse.decode(body)
            if first.mechanism != MECHANISM or first.data is None:
                raise ValueError("unsupported SASL mechanism")
            server_first = scram.first(first.data.decode())
        except (ValueError, UnicodeDecodeError):
            server_first = None
        if server_first is not None:
            auth_msg(AuthenticationSASLContinue(server_first.encode()))
            response = SASLResponse.decode(read_password_message()).data
            try:
                final = scram.final(response.decode())
            except (ValueError, UnicodeDecodeError):
                final = None
        if final is None or verifier is None:
            self.send_error(SqlError(INVALID_PASSWORD, f'password authentication failed for user "{user}"', severity="FATAL"))
            return False
        auth_msg(AuthenticationSASLFinal(final.encode()))
        return True

    def _read_exact(self, n: int) -> bytes:
        data = self.rfile.read(n)
        if len(data) != n:
            raise ConnectionError("connection closed mid-message")
        return data

    def _read_body(self, limit: int, setting: str | None = None) -> bytes:
        """The body of a message whose type byte was read: its Int32 length (which counts
        itself) is checked against ``limit`` bytes BEFORE the body is read, so a client
        cannot make the server allocate or wait for more.

        Raises:
            ProtocolError for a length below 4 or above ``limit`` (the connection closes
            with FATAL 08P01, as PostgreSQL's "invalid message length"; the message names
            ``setting``, the option that raises the limit); ConnectionError if the client
            goes away mid-message.
        """
        size = body_length(self._read_exact(4), limit, setting)
        return self._read_exact(size) if size else b""

    def _read_message_body(self) -> bytes:
        """The body of a session message, within ``max_message_size``."""
        return self._read_body(self.server.max_message_size, "sqlfront serve --max-message-size")

    def handle_post_auth(self, ctx: PgContext):
        ctx.reported = {k: ctx.session.vars.get(k) for k in REPORTED}
        self.send_parameter_status({display_name(k): v for k, v in ctx.reported.items()})
        self._send(BackendKeyData(ctx.process_id, ctx.secret_key.to_bytes(4, "big")))
        self.send_ready_for_query(ctx)
        ctx.authenticated = True

    def handle(self):
        """The message loop, with lengths checked: a malformed or truncated message closes
        this connection with an error and nothing else."""
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
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
                type_code = self.rfile.read(1)
                if not type_code or type_code == b"X":
                    break
                payload = self._read_message_body()
                self.dispatch(ctx, type_code, payload)
                if type_code not in _NO_FLUSH:
                    self.wfile.flush()
        except ProtocolError as e:
            e.severity = "FATAL"
            self._fatal(e)
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
            return self.handle_startup()
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
            raise ProtocolError(f"invalid frontend message type {kind!r}")

    def handle_parse(self, ctx: PgContext, payload: bytes):
        try:
            msg = Parse.decode(payload)
            name, sql, oids = msg.name, ctx.decode(msg.query), list(msg.param_types)
        except SqlError as e:
            self.send_error(_invalid("Parse", e), ctx)
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
        self._send(ParseComplete())

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
            sql = ctx.decode(Query.decode(payload).text)
        except SqlError as e:
            self.send_error(e, ctx)
            self.send_ready_for_query(ctx)
            return
        if not sql.strip().strip(";").strip():
            self._send(EmptyQueryResponse())
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
                self._send(CommandComplete(result.tag))
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
            self._copy_response(CopyInResponse, c.fmt, len(c.positions) if c.positions is not None else len(c.table.columns))
            self.wfile.flush()
            while True:
                kind = self.rfile.read(1)
                if not kind:
                    raise ConnectionError("client closed the connection during COPY")
                body = self._read_message_body()
                if kind == CopyData.kind:
                    total += len(body)
                    if total > limit:
                        raise SqlError(INSUFFICIENT_RESOURCES, "COPY FROM STDIN too large",
                                       detail=f"The data exceeds max_copy_from_size ({limit} bytes).",
                                       hint="Split the data into several COPY statements, or raise the limit with "
                                            "sqlfront serve --max-copy-from-size.")
                    load.feed(body)
                elif kind == CopyDone.kind:
                    break
                elif kind == CopyFail.kind:
                    reason = CopyFail.decode(body).message
                    raise SqlError(QUERY_CANCELED, f"COPY from stdin failed: {reason}")
                elif kind in (b"H", b"S"):
                    continue
                else:
                    raise SqlError(PROTOCOL_VIOLATION, f"unexpected message type 0x{kind.hex()} during COPY from stdin")
            return load.finish()
        finally:
            load.close()

    def _copy_response(self, message: type[CopyInResponse], fmt: str, n: int) -> None:
        """CopyInResponse or CopyOutResponse: the overall format and each of the ``n``
        columns' (all text, or all binary)."""
        code = 1 if fmt == "binary" else 0
        self._send(message(code, (code,) * n))

    def _statement_error(self, e: Exception) -> SqlError:
        """The error to send for what a statement raised: a SqlError as it is; a resource
        it ran out of as PostgreSQL reports it (``session.resource_error``: 54001, 53100);
        a shared store it lost as 08006 (``session.store_error``); anything else is a
        bug, logged with its traceback, sent as XX000.

        Raises:
            ``e`` again when it is the client's connection that failed (it went away while
            results were sent): there is no one to tell, so the connection just ends,
            with an info line as PostgreSQL's "could not send data to client"."""
        if isinstance(e, SqlError):
            return e
        if isinstance(e, ConnectionError) and self._client_gone():
            raise e
        err = resource_error(e) or store_error(e)
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

        self._copy_response(CopyOutResponse, c.fmt, len(c.columns))
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
            for data in copy_out_chunks(c.columns, chunks(), c.fmt, c.delimiter, c.null, c.header,
                                        self.ctx.session.vars.text_format()):
                if recode:
                    data = wire_encoding.encode(data.decode("utf-8"), enc)
                out.append(frame(CopyData.kind, data))  # CopyData, without an object per row
                if len(out) >= 512 or c.live:  # a SUBSCRIBE's rows go out as they come
                    self.wfile.write(b"".join(out))
                    out = []
                    if c.live:
                        self.wfile.flush()
        finally:
            if c.stream is not None:
                c.stream.close()
        out.append(CopyDone().encode())
        self.wfile.write(b"".join(out))
        return Result(f"COPY {count}")

    # -- extended query -----------------------------------------------------------------

    def handle_describe(self, ctx: PgContext, payload: bytes):
        msg = Describe.decode(payload)
        name = msg.name
        try:
            if msg.target == b"S":
                if name not in ctx.stmts:
                    raise KeyError(name)
                sql, oids = ctx.stmts[name]
                given = {i + 1: t for i, o in enumerate(oids) if o and (t := type_from_oid(o)) is not None}
                cols, types = ctx.session.describe(sql, max(len(oids), param_count(sql)), given)
                resolved = [o if o else t.oid for o, t in zip(list(oids) + [0] * len(types), types)]
                ctx.stmts[name] = (sql, resolved)  # Bind decodes binary parameters with these
                self._send(ParameterDescription(tuple(resolved)))
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
                self._send(NoData())
            else:
                self.send_columns(cols, formats)
        except KeyError:
            self.send_error(SqlError(INVALID_SQL_STATEMENT_NAME, f'prepared statement or portal "{name}" does not exist'), ctx)
        except (SqlError, RecursionError) as e:
            self.send_error(self._statement_error(e), ctx)

    def handle_execute(self, ctx: PgContext, payload: bytes):
        if ctx.has_error:
            return
        msg = Execute.decode(payload)
        portal, limit = msg.portal, msg.max_rows
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
                self._send(EmptyQueryResponse())
                return
            if isinstance(result, (CopyIn, CopyOut)):  # COPY works in the extended protocol too
                done = self.copy_in(ctx, result) if isinstance(result, CopyIn) else self.copy_out(result)
                result = None
                self._send(CommandComplete(done.tag))
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
                    self._send(PortalSuspended())
                    return
                result.stream.close()
                self._send(CommandComplete(_complete_tag(result, result.stream.rows_taken)))
                return
            self._send(CommandComplete(result.tag))
        except Exception as e:
            self.send_error(self._statement_error(e), ctx)  # re-raises when the client is gone
        finally:
            if result is not None and result.stream is not None:
                result.stream.close()  # ended, failed: the peek is over (a no-op if closed)
            self.report_changes(ctx)  # SET, RESET, set_config(), ...

    def handle_bind(self, ctx: PgContext, payload: bytes):
        try:
            msg = Bind.decode(payload)
            portal, stmt, formats = msg.portal, msg.statement, msg.param_formats
            if stmt not in ctx.stmts:
                raise SqlError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{stmt}" does not exist')
            oids = ctx.stmts[stmt][1]
            params = []
            for i, raw in enumerate(msg.params):
                oid = oids[i] if i < len(oids) else 0
                if raw is None:
                    params.append(None)
                elif _format_for(formats, i) == 0 or ((t := type_from_oid(oid)) is not None and t.is_string):
                    # text, and the binary form of string types (textrecv), are in the
                    # client's encoding; PostgreSQL's text cannot hold NUL (22021)
                    params.append(wire_encoding.no_nul(ctx.decode(raw)))
                else:
                    try:
                        params.append(binary_param_text(oid, raw, ctx.session.vars.text_format()))
                    except SqlError as e:
                        if e.sqlstate == INVALID_BINARY_REPRESENTATION:  # PostgreSQL's exec_bind_message
                            e.detail = e.detail or e.message
                            e.message = f"incorrect binary data format in bind parameter {i + 1}"
                        raise
        except SqlError as e:
            self.send_error(_invalid("Bind", e), ctx)
            return
        ctx.portals[portal] = (stmt, params, list(msg.result_formats))
        ctx.drop_suspended(portal)
        self._send(BindComplete())

    def handle_close(self, ctx: PgContext, payload: bytes):
        msg = Close.decode(payload)
        if msg.target == b"S":
            ctx.stmts.pop(msg.name, None)
        else:
            ctx.portals.pop(msg.name, None)
            ctx.drop_suspended(msg.name)
        self._send(CloseComplete())

    # -- messages ---------------------------------------------------------------------

    def _client_encoding(self) -> str:
        ctx = getattr(self, "ctx", None)  # None before startup completes
        return ctx.client_encoding if ctx is not None else "UTF8"

    def _send(self, msg: Message, text: Callable[[str], bytes] = utf8) -> None:
        """Write backend message ``msg`` (buffered: flushed at Sync, Flush and the end of
        a simple query); ``text(str) -> bytes`` encodes its text fields (UTF-8 unless told)."""
        self.wfile.write(msg.encode(text))

    def send_ready_for_query(self, ctx: PgContext | None) -> None:
        self._send(ReadyForQuery(ctx.transaction_status() if ctx else ReadyForQuery.IDLE))

    def send_parameter_status(self, params: dict[str, str]) -> None:
        for name, value in params.items():
            self._send(ParameterStatus(name, value))

    def send_columns(self, cols, formats):
        enc = self._client_encoding()
        fields = tuple(Field(name, t.oid, t.typlen, t.typmod, _format_for(formats, i)) for i, (name, t) in enumerate(cols))
        self._send(RowDescription(fields), lambda v: wire_encoding.encode(v, enc))

    def send_rows(self, result: Result, formats, limit: int) -> int:
        """DataRows for the next ``limit`` rows of ``result`` (all when ``limit`` <= 0),
        chunk by chunk as its stream yields them; returns how many were sent."""
        types = [t for _, t in result.columns]
        binary = [_format_for(formats, i) == 1 for i in range(len(types))]
        stream = result.stream if result.stream is not None else _rows_stream(result)
        enc = self._client_encoding()
        text = self.ctx.session.vars.text_format()
        # text in the client's encoding: every text-format value, and binary text values
        convert = [(not b or t.is_string) for b, t in zip(binary, types)] \
            if wire_encoding.codec(enc) is not None else None
        sent = 0
        for chunk in stream.take(limit if limit > 0 else None):
            for start in range(0, chunk_len(chunk), 4096):  # bounded memory for big chunks
                data = chunk_data_rows(chunk[start : start + 4096], types, binary, text)
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
            self._send(NoticeResponse.of(n), lambda v: wire_encoding.encode(v, enc, strict=False))

    def send_error(self, exception, ctx=None):
        e = exception if isinstance(exception, SqlError) else SqlError(INTERNAL_ERROR, str(exception))
        if e.sqlstate == INTERNAL_ERROR:
            log.error("error sent to client: %s", e.message)
        if getattr(self, "ctx", None) is not None:
            self.send_notices(self.ctx)
        enc = self._client_encoding()
        self._send(ErrorResponse.of(e), lambda v: wire_encoding.encode(v, enc, strict=False))
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


def _invalid(message: str, e: SqlError) -> SqlError:
    """``e`` as reported for a ``message`` (Parse, Bind) that failed: a malformed message
    is 08P01 "invalid <message> message: ...", other errors stand as they are."""
    if isinstance(e, ProtocolError):
        return SqlError(PROTOCOL_VIOLATION, f"invalid {message} message: {e.message}")
    return e


def _format_for(formats, i: int) -> int:
    if not formats:
        return 0
    return formats[0] if len(formats) == 1 else formats[i]


#: Parse, Bind, Describe, Execute, Close: their replies wait for Sync or Flush, as in
#: PostgreSQL ("Extended Query": the server flushes at Sync and on Flush)
_NO_FLUSH = (b"P", b"B", b"D", b"E", b"C")


class PgServer(socketserver.ThreadingTCPServer):
    """A threaded pgwire server: one thread per connection. ``scram``: the secret of the
    password every user must give (SCRAM-SHA-256), None to trust every local client.
    Limits come from ``env.config`` (``max_connections``, ``max_message_size``,
    ``max_copy_from_size``, ``max_startup_connections``, ``authentication_timeout_s``)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], env: Environment, scram: ScramVerifier | None = None,
                 tls: "ssl.SSLContext | None" = None, tls_required: bool = False):
        super().__init__(address, PgHandler)
        self.env = env
        #: process id -> the context of each live session (for CancelRequest)
        self.ctxts: dict[int, PgContext] = {}
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
