"""The console's Starlette application: its pages (static files) and its JSON API.

Every request is authenticated as pgwire authenticates (HTTP Basic: the user and the
password a pgwire login would need, ``sqlfront.auth.login_verifier``; without a server
password, as pgwire, any user name logs in, ``materialize`` when none is given). Each API
call runs SQL over the introspection relations in a session of the logged-in role and
returns ``{"columns": [...], "rows": [[text or null, ...], ...]}``, values in PostgreSQL's
text form; a failed statement is HTTP 400 ``{"error": {"sqlstate", "message"}}``.

API:
    GET  /api/clusters        clusters and replicas: status, reason, utilization, Spark UI
    GET  /api/utilization     each replica's utilization history (for the plots)
    GET  /api/queries         running and recent statements (mz_recent_activity_log)
    POST /api/cancel          ``{"session_id"}``: cancel that session's running statement
                              (its own role's sessions, or any for a superuser: PostgreSQL's
                              pg_cancel_backend rule)
    GET  /api/materialized-views   materialized views with their lag and hydration
    GET  /api/sessions        mz_sessions
    POST /api/sql             ``{"sql", "explain": bool}``: run statements (or EXPLAIN one)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
import time
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from catalog import rbac
from catalog.errors import SqlError, FEATURE_NOT_SUPPORTED, INSUFFICIENT_PRIVILEGE, UNDEFINED_OBJECT
from catalog.textio import format_text
from sqlfront.auth import check_login_name, login_verifier
from sqlfront.console.queries import (
    CLUSTERS_SQL, INTERNAL_APP, MATERIALIZED_VIEWS_SQL, QUERIES_SQL, SESSIONS_SQL, UTILIZATION_SQL,
)
from sqlfront.sequence.result import chunk_rows

STATIC = Path(__file__).parent / "static"
#: the SQL editor's sessions' application_name
EDITOR_APP = "sqlfront_console"
#: rows the SQL editor shows at most
MAX_ROWS = 1000
#: seconds a checked password is remembered (the browser sends it with every request)
CREDENTIAL_TTL_S = 300.0

class _Credentials:
    """Checks HTTP Basic credentials against pgwire's rules, remembering a checked
    password (by its SHA-256) for ``CREDENTIAL_TTL_S`` so a page's polling costs one
    PBKDF2 derivation per period, not one per request."""

    def __init__(self, env, scram):
        self.env, self.scram = env, scram
        self._ok: dict[bytes, float] = {}
        self._lock = threading.Lock()

    def role_id(self, header: str | None) -> str | None:
        """The id of the role the request logs in as, None if it may not."""
        user, password = "materialize", None
        if header and header.lower().startswith("basic "):
            try:
                user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
        elif self.scram is not None:
            return None
        try:
            user = check_login_name(user)
        except SqlError:
            return None
        if self.scram is not None and not self._password_ok(user, password or ""):
            return None
        try:
            return self.env.login_role(user)
        except SqlError:
            return None

    def _password_ok(self, user: str, password: str) -> bool:
        key = hashlib.sha256(f"{user}\0{password}".encode()).digest()
        now = time.monotonic()
        with self._lock:
            if self._ok.get(key, 0.0) > now:
                return True
        verifier = login_verifier(self.env.snapshot.role_by_name(user), self.scram,
                                  auto_create=self.env.config.auto_create_roles)
        if verifier is None or not verifier.check_password(password):
            return False
        with self._lock:
            self._ok = {k: t for k, t in self._ok.items() if t > now}
            self._ok[key] = now + CREDENTIAL_TTL_S
        return True


#: where webhook sources take their requests (Materialize's path)
WEBHOOK_PREFIX = "/api/webhook/"


class _Auth(BaseHTTPMiddleware):
    def __init__(self, app, credentials: _Credentials):
        super().__init__(app)
        self.credentials = credentials

    async def dispatch(self, request: Request, call_next):
        if request.url.path.startswith(WEBHOOK_PREFIX):  # a webhook's CHECK is its authentication
            return await call_next(request)
        role_id = await run_in_threadpool(self.credentials.role_id, request.headers.get("authorization"))
        if role_id is None:
            return Response("authentication required", status_code=401,
                            headers={"WWW-Authenticate": 'Basic realm="sqlfront console", charset="UTF-8"'})
        request.state.role_id = role_id
        return await call_next(request)


def run_sql(env, role_id: str, sql: str, app_name: str, max_rows: int = MAX_ROWS) -> dict:
    """Run ``sql`` (one or more statements) in a new session of ``role_id``; the last
    statement's ``{"columns", "rows", "tag", "truncated"}``, values as text.

    Raises:
        SqlError as the statement raised it; 0A000 for COPY (no client stream here)."""
    from sqlfront.session import Session

    s = Session(env, {"application_name": app_name}, role_id)
    try:
        out = {"columns": [], "rows": [], "tag": "", "truncated": False}
        for res in s.execute(sql):
            out = _result(res, max_rows)
        return out
    finally:
        s.close()


def _result(res, max_rows: int) -> dict:
    if not hasattr(res, "tag"):
        raise SqlError(FEATURE_NOT_SUPPORTED, "COPY is not supported in the console")
    if res.columns is None:
        return {"columns": [], "rows": [], "tag": res.tag, "truncated": False}
    types = [t for _, t in res.columns]
    rows, truncated = list(res.rows), False
    if res.stream is not None:
        try:
            for chunk in res.stream.take(max_rows + 1):
                rows += chunk_rows(chunk, types)
        finally:
            res.stream.close()
    if len(rows) > max_rows:
        rows, truncated = rows[:max_rows], True
    text = [[None if v is None else format_text(v, t) for v, t in zip(r, types)] for r in rows]
    return {"columns": [n for n, _ in res.columns], "rows": text, "tag": res.tag, "truncated": truncated}


def _error(e: SqlError) -> JSONResponse:
    return JSONResponse({"error": {"sqlstate": e.sqlstate, "message": e.message}}, status_code=400)


def make_app(env, scram=None) -> Starlette:
    """The console application of ``env``; ``scram``: the server password's verifier (None:
    trust, as pgwire without a password)."""

    async def query(request: Request, sql: str, app_name: str = INTERNAL_APP, extend=None) -> JSONResponse:
        """``sql``'s result as JSON (``extend(result)`` may add to it), or its error."""
        try:
            result = await run_in_threadpool(run_sql, env, request.state.role_id, sql, app_name)
        except SqlError as e:
            return _error(e)
        if extend is not None:
            extend(result)
        return JSONResponse(result)

    async def index(request: Request):
        return FileResponse(STATIC / "index.html")

    async def plotly_js(request: Request):
        import plotly

        return FileResponse(Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
                            media_type="text/javascript")

    def with_spark_ui(result: dict) -> None:
        urls = _spark_ui_urls(env)
        rid = result["columns"].index("replica_id")
        result["columns"].append("spark_ui")
        for row in result["rows"]:
            row.append(urls.get(row[rid]))

    async def clusters(request: Request):
        return await query(request, CLUSTERS_SQL, extend=with_spark_ui)

    async def utilization(request: Request):
        return await query(request, UTILIZATION_SQL)

    async def queries(request: Request):
        return await query(request, QUERIES_SQL)

    async def materialized_views(request: Request):
        return await query(request, MATERIALIZED_VIEWS_SQL)

    async def sessions(request: Request):
        return await query(request, SESSIONS_SQL)

    async def cancel(request: Request):
        body = await request.json()
        info = env.activity.session(str(body.get("session_id", "")))
        if info is None:
            return JSONResponse({"error": {"sqlstate": UNDEFINED_OBJECT, "message": "no such session"}}, status_code=404)
        me = request.state.role_id
        if info.role_id != me and not rbac.is_superuser(env.snapshot, me):
            return JSONResponse({"error": {"sqlstate": INSUFFICIENT_PRIVILEGE, "message": "must be a superuser or the session's "
                                                                          "role to cancel its statement"}},
                                status_code=403)
        if info.session is not None:
            info.session.cancel()
        return JSONResponse({"canceled": True})

    async def sql(request: Request):
        body = await request.json()
        text = str(body.get("sql", ""))
        if body.get("explain"):
            text = "EXPLAIN " + text.strip().rstrip(";")
        return await query(request, text, EDITOR_APP)

    from sqlfront.webhook import WebhookError, Webhooks

    hooks = Webhooks(env)

    async def webhook(request: Request):
        """POST /api/webhook/<database>/<schema>/<source> (``sqlfront.webhook``)."""
        p = request.path_params
        body = await request.body()
        try:
            await run_in_threadpool(hooks.receive, p["database"], p["schema"], p["source"],
                                    list(request.headers.items()), body)
        except WebhookError as e:
            return Response(e.message, status_code=e.status)
        return Response(status_code=200)

    routes = [
        Route(WEBHOOK_PREFIX + "{database}/{schema}/{source}", webhook, methods=["POST"]),
        Route("/", index),
        Route("/static/plotly.min.js", plotly_js),
        Mount("/static", StaticFiles(directory=STATIC)),
        Route("/api/clusters", clusters),
        Route("/api/utilization", utilization),
        Route("/api/queries", queries),
        Route("/api/cancel", cancel, methods=["POST"]),
        Route("/api/materialized-views", materialized_views),
        Route("/api/sessions", sessions),
        Route("/api/sql", sql, methods=["POST"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(_Auth, credentials=_Credentials(env, scram))])


def _spark_ui_urls(env) -> dict[str, str]:
    """replica id -> its Spark UI's address, for the local replicas this process runs."""
    out = {}
    for h, _size in env.compute.replica_handles():
        proc = getattr(h, "process", None)
        url = proc.spark_ui_url() if proc is not None and proc.alive() else None
        if url:
            out[h.id] = url
    return out
