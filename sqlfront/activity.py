"""Who is connected and what they ran: the rows of ``mz_internal.mz_sessions`` and
``mz_internal.mz_recent_activity_log`` (Materialize's system catalog reference, "mz_internal").

``Sessions`` holds the live sessions (a Session registers itself when made and leaves
when closed); ``ActivityLog`` keeps one ``Execution`` per statement, from when it begins
to when its last row is sent, for a bounded time and number (Materialize keeps its log
for a day and samples it; here every statement is kept, newest ``max_entries`` only).
Recording a statement costs a uuid and two clock reads: the text is redacted, hashed and
typed only when the log is read.

This module must not make the Coordinator do anything: sessions write their own entries.
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import itertools
import threading
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from catalog.errors import QUERY_CANCELED
from catalog.textio import format_text

if TYPE_CHECKING:  # pragma: no cover
    from sqlfront.session import Session

#: what replaces each literal in ``redacted_sql`` (Materialize's redacted statement text)
REDACTED = "'<REDACTED>'"
#: the scanner's literal tokens: strings, numbers, bit and hex strings
_LITERALS = frozenset({"SCONST", "ICONST", "FCONST", "BCONST", "XCONST", "USCONST"})
#: keywords that name a statement's kind with the word after them (``create_table``)
_TWO_WORD = frozenset({"create", "drop", "alter", "show", "grant", "revoke", "explain", "comment"})


def redact(sql: str) -> str:
    """``sql`` with every literal (string, number, bit string) replaced by
    ``'<REDACTED>'``, as Materialize's ``redacted_sql``; the rest of the text as it was.
    Text the scanner rejects is redacted whole."""
    from pglast.parser import scan

    try:
        tokens = scan(sql)
    except Exception:  # an unterminated literal: nothing of it may show
        return REDACTED
    out, pos = [], 0
    for t in tokens:  # character offsets, ``end`` inclusive
        if t.name in _LITERALS:
            out += [sql[pos:t.start], REDACTED]
            pos = t.end + 1
    out.append(sql[pos:])
    return "".join(out)


def carries_secret(sql: str) -> bool:
    """True for CREATE SECRET and ALTER SECRET, whose literal is a secret's value: the log
    keeps their redacted text only (Materialize logs them redacted too)."""
    from pglast.parser import ParseError, scan

    try:
        words = [sql[t.start:t.end + 1].lower() for t in scan(sql) if t.name not in ("SQL_COMMENT", "C_COMMENT")][:2]
    except ParseError:  # text the scanner refuses: keep nothing of it
        return True
    return len(words) == 2 and words[0] in ("create", "alter") and words[1] == "secret"


def statement_type(sql: str) -> str | None:
    """Materialize's ``statement_type``: the statement's kind in snake case (``select``,
    ``create_table``), None for an empty statement."""
    words = sql.split(None, 2)
    if not words:
        return None
    first = words[0].lower().strip("(;")
    if first in _TWO_WORD and len(words) > 1:
        return f"{first}_{words[1].lower().strip(';')}"
    return first


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass
class SessionInfo:
    """One live session's row of ``mz_sessions`` and what its statements' rows repeat."""

    #: None once disconnected
    session: "Session | None"
    id: str
    role_id: str
    connected_at: dt.datetime
    initial_application_name: str
    authenticated_user: str
    #: the pgwire backend process id (``pg_backend_pid``, the cancel key's pid); 0 for a
    #: session without a connection (the console's own)
    connection_id: int = 0
    client_ip: str | None = None
    #: counts the session's transactions (``mz_recent_activity_log.transaction_id``)
    transactions: itertools.count = field(default_factory=lambda: itertools.count(1))
    transaction_id: int = 0


class Execution:
    """One statement of ``mz_recent_activity_log``, running (``finished_at`` None) or done.

    Made for every statement, so it holds only what the statement's start knows, in
    slots: its id, cluster id, hash and type are derived when the log is read."""

    __slots__ = ("info", "sql", "params", "cluster_name", "application_name", "database", "search_path",
                 "isolation", "transaction_id", "began_at", "seq", "finished_at", "status", "error", "rows",
                 "strategy")

    def __init__(self, info: SessionInfo, sql: str, params: list | None, cluster_name: str, application_name: str,
                 database: str, search_path: tuple[str, ...], isolation: str, transaction_id: int, seq: int):
        self.info, self.sql, self.params, self.cluster_name = info, sql, params, cluster_name
        self.application_name, self.database, self.search_path = application_name, database, search_path
        self.isolation, self.transaction_id, self.seq = isolation, transaction_id, seq
        self.began_at = _now()
        self.finished_at: dt.datetime | None = None
        self.status: str | None = None
        self.error: str | None = None
        self.rows: int | None = None
        #: ``constant`` (answered in environmentd, by the fast path) or ``standard`` (a replica)
        self.strategy: str | None = None

    @property
    def id(self) -> str:
        """``execution_id``: a version-4 UUID of this process's random prefix and ``seq``."""
        return str(uuid.UUID(int=(_ID_PREFIX << 64) | self.seq, version=4))

    def finish(self, status: str, error: str | None = None, rows: int | None = None) -> None:
        """Record the end (once): ``success``, ``error``, ``canceled`` or ``aborted``."""
        if self.finished_at is None:
            self.status, self.error, self.rows = status, error, rows
            self.finished_at = _now()

    def finish_with(self, e: BaseException | None, rows: int | None = None) -> None:
        """Record the end by the exception it raised (None: success)."""
        if e is None:
            self.finish("success", rows=rows)
            return
        code = getattr(e, "sqlstate", None)
        self.finish("canceled" if code == QUERY_CANCELED else "error", str(e) or type(e).__name__)


#: the high 64 bits of this process's execution ids (random: ids stay unique across restarts)
_ID_PREFIX = uuid.uuid4().int >> 64


class ActivityLog:
    """The live sessions and the recent statements of one environmentd.

    ``max_entries`` statements are kept (the oldest go first), none older than
    ``retention_s`` seconds; ``enabled`` False records no statement (the log's cost is
    then one attribute read per statement: ``bench/wire.py`` compares both)."""

    def __init__(self, max_entries: int = 10_000, retention_s: float = 86_400.0, enabled: bool = True):
        self.enabled = enabled
        self.retention_s = retention_s
        self._entries: collections.deque[Execution] = collections.deque(maxlen=max_entries)
        self._sessions: dict[str, SessionInfo] = {}
        self._lock = threading.Lock()
        self._seq = itertools.count(1)

    # -- sessions ---------------------------------------------------------------------

    def connect(self, s: "Session", user: str) -> SessionInfo:
        """Register a new session (it stays in ``mz_sessions`` until ``disconnect``)."""
        info = SessionInfo(s, str(uuid.uuid4()), s.session_role_id, _now(), s.vars.get("application_name"), user)
        with self._lock:
            self._sessions[info.id] = info
        return info

    def disconnect(self, info: SessionInfo) -> None:
        with self._lock:
            self._sessions.pop(info.id, None)
            info.session = None  # its log entries outlive it; the session's state need not
            # a statement still running when its client left never finishes
            for e in self._entries:
                if e.info is info and e.finished_at is None:
                    e.finish("aborted")

    def sessions(self) -> list[SessionInfo]:
        with self._lock:
            return list(self._sessions.values())

    def session(self, session_id: str) -> SessionInfo | None:
        return self._sessions.get(session_id)

    # -- statements -------------------------------------------------------------------

    def begin(self, s: "Session", info: SessionInfo, sql: str, params: list | None) -> Execution | None:
        """A statement of ``s`` begins now; None when the log is off."""
        if not self.enabled:
            return None
        if not s.in_transaction:
            info.transaction_id = next(info.transactions)
        v = s.vars
        if carries_secret(sql):  # its literal is a secret's value: kept nowhere
            sql = redact(sql)
        e = Execution(info, sql, param_texts(params), v.get("cluster"), v.get("application_name"), v.get("database"),
                      v.search_path(), v.get("transaction_isolation"), info.transaction_id, next(self._seq))
        with self._lock:
            self._entries.append(e)
        return e

    def executions(self) -> list[Execution]:
        """The statements kept, oldest first (dropping those past the retention)."""
        cutoff = _now() - dt.timedelta(seconds=self.retention_s)
        with self._lock:
            while self._entries and self._entries[0].began_at < cutoff and self._entries[0].finished_at:
                self._entries.popleft()
            return list(self._entries)


def param_texts(params: list | None) -> list[str | None] | None:
    """A statement's bound parameters (``planner.scalar.Literal``s, as ``pgwire``'s Bind
    makes them) as ``mz_recent_activity_log.params`` shows them: each value's text form
    (its type's output function), NULL for NULL. Kept as text, not as the literals, so an
    entry holds no more than the log shows."""
    if params is None:
        return None
    out: list[str | None] = []
    for p in params:
        value, t = getattr(p, "value", p), getattr(p, "type", None)
        out.append(None if value is None else value if isinstance(value, str) or t is None else format_text(value, t))
    return out


def track(e: Execution, result) -> None:
    """Finish ``e`` when ``result`` (a ``Result``, ``CopyIn`` or ``CopyOut``) is done: a
    streamed result when its stream closes (with the rows sent), any other now."""
    stream = getattr(result, "stream", None)
    if stream is not None:
        stream.on_end.append(lambda err, n: e.finish_with(err, n))
    else:
        rows = getattr(result, "rows", None)
        e.finish("success", rows=len(rows) if getattr(result, "columns", None) is not None else None)


def note_strategy(s: "Session", strategy: str) -> None:
    """The running statement of ``s`` is answered by ``strategy`` (Materialize's
    ``execution_strategy``: ``constant`` in environmentd, ``standard`` on a replica)."""
    if s.execution is not None:
        s.execution.strategy = strategy


def session_rows(log: ActivityLog) -> list[tuple]:
    """``mz_sessions``: (id, connection_id, role_id, client_ip, connected_at)."""
    return [(i.id, i.connection_id, i.role_id, i.client_ip, i.connected_at)
            for i in sorted(log.sessions(), key=lambda i: i.connected_at)]


def activity_rows(log: ActivityLog, snap, mz_version: str, redacted: bool, role_id: str | None = None) -> list[tuple]:
    """``mz_recent_activity_log`` (``redacted``: ``..._redacted``, without error messages
    and parameters, with ``redacted_sql``) in its column order (``catalog.introspection``); a
    cluster's id as of ``snap`` (NULL once the cluster is gone). ``role_id``: only the
    statements of that role's sessions (None: all)."""
    out = []
    for e in log.executions():
        i = e.info
        if role_id is not None and i.role_id != role_id:
            continue
        cluster = snap.cluster_by_name(e.cluster_name) if e.cluster_name else None
        head = (e.id, 1.0, cluster.id if cluster else None, e.application_name, e.cluster_name, e.database,
                list(e.search_path), e.isolation,
                None, None)
        mid = (mz_version, e.began_at, e.finished_at, e.status)
        # result_size (bytes sent) is not measured: NULL
        tail = (None, e.rows if e.status == "success" else None, e.strategy if e.status == "success" else None, e.transaction_id, e.id,
                hashlib.sha256(e.sql.encode()).digest(), "", i.id, e.began_at, statement_type(e.sql), 0,
                i.connected_at, i.initial_application_name, i.authenticated_user)
        if redacted:
            out.append(head + mid + tail + (redact(e.sql),))
        else:
            out.append(head + (list(e.params or ()),) + mid + (e.error,) + tail + (e.sql,))
    return out


def signal_session(log: ActivityLog, snap, caller_role_id: str | None, pid: int, terminate: bool,
                   timeout_ms: int = 0, notices: list | None = None, cancelled=lambda: False) -> bool:
    """pg_cancel_backend / pg_terminate_backend (PostgreSQL 9.27.2, signalfuncs.c): cancel
    the running statement of the session whose connection id (``pg_backend_pid``) is
    ``pid``, or end its connection (FATAL 57P01). True when signaled; False with a
    WARNING in ``notices`` when no session has that id. With ``terminate`` and
    ``timeout_ms`` > 0, waits that long for the session to end and is False (with a
    WARNING) when it did not; ``cancelled()`` ends the wait early.

    A role may signal the sessions of roles whose privileges it has (its own; a
    superuser's only if a superuser itself); a superuser any.

    Raises:
        SqlError 42501 when ``caller_role_id`` may not signal that session."""
    import time

    from catalog.errors import INSUFFICIENT_PRIVILEGE, SqlError, WARNING
    from catalog.rbac import is_superuser, memberships

    notices = [] if notices is None else notices
    target = next((i for i in log.sessions() if i.connection_id == pid and pid != 0 and i.session is not None), None)
    if target is None:
        notices.append(SqlError(WARNING, f"PID {pid} is not a PostgreSQL backend process", severity="WARNING"))
        return False
    what, whose = ("terminate process", "process is being terminated") if terminate else \
        ("cancel query", "query is being canceled")
    if not is_superuser(snap, caller_role_id):
        if is_superuser(snap, target.role_id):
            raise SqlError(INSUFFICIENT_PRIVILEGE, f"permission denied to {what}",
                           detail=f"Only roles with the SUPERUSER attribute may {what.split()[0]} "
                                  f"{'processes' if terminate else 'queries'} of roles with the SUPERUSER attribute.")
        if target.role_id not in memberships(snap, caller_role_id):
            raise SqlError(INSUFFICIENT_PRIVILEGE, f"permission denied to {what}",
                           detail=f'Only roles with privileges of the role whose {whose} or with privileges of the '
                                  f'"pg_signal_backend" role may {what.split()[0]} this '
                                  f'{"process" if terminate else "query"}.')
    session = target.session
    if not terminate:
        session.cancel()
        return True
    session.terminate()
    deadline = time.monotonic() + timeout_ms / 1000
    while timeout_ms > 0 and target.session is not None and not cancelled():
        if time.monotonic() >= deadline:
            notices.append(SqlError(WARNING, f"backend with PID {pid} did not terminate within {timeout_ms} "
                                             f"millisecond{'' if timeout_ms == 1 else 's'}", severity="WARNING"))
            return False
        time.sleep(0.01)
    return True
