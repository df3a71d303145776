"""Webhook sources through HTTP (environmentd's listener, ``/api/webhook/...``) and the
wire: Materialize's CHECK with an HMAC signature, body formats, refusals."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

KEY = "wh-test-signing-key"
#: POSTs of the signature test: 300 in the suite (reading the many small commits they make
#: costs seconds per hundred on a loaded machine); SQLFRONT_WEBHOOK_POSTS=1000 for issue 30's
POSTS = int(os.environ.get("SQLFRONT_WEBHOOK_POSTS", "300"))


def post(url: str, body: bytes, headers: dict | None = None) -> int:
    req = urllib.request.Request(url, data=body, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def signed(body: bytes, key: str) -> dict:
    return {"x-signature": base64.b64encode(hmac.new(key.encode(), body, hashlib.sha256).digest()).decode(),
            "Content-Type": "application/json"}


def test_webhook_takes_exactly_the_validly_signed_posts(server, conn):
    conn.autocommit = True
    conn.execute(f"CREATE SECRET wh_key AS '{KEY}'")
    conn.execute("""CREATE SOURCE wh_events FROM WEBHOOK BODY FORMAT JSON INCLUDE HEADERS
        CHECK (
          WITH (HEADERS, BODY AS request_body, SECRET wh_key)
          constant_time_eq(decode(headers->'x-signature', 'base64'), hmac(request_body, wh_key, 'sha256'))
        )""")
    url = f"{server.console_url}/api/webhook/materialize/public/wh_events"
    # POSTS requests, a third signed with the wrong key, sent 16 at a time
    requests = []
    for i in range(POSTS):
        body = json.dumps({"i": i, "kind": "event"}).encode()
        requests.append((i, body, signed(body, KEY if i % 3 else "not-the-key")))
    with ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(lambda r: post(url, r[1], r[2]), requests))
    valid = [i for i, _, _ in requests if i % 3]
    assert [c for c, (i, _, _) in zip(codes, requests) if i % 3] == [200] * len(valid)
    assert [c for c, (i, _, _) in zip(codes, requests) if not i % 3] == [400] * (POSTS - len(valid))
    # unsigned, malformed, unknown: refused, nothing written
    assert post(url, b'{"i": -1}') == 400
    body = b"not json"
    assert post(url, body, signed(body, KEY)) == 400
    assert post(f"{server.console_url}/api/webhook/materialize/public/no_such", b"{}") == 404
    # exactly the valid ones, once each, with their headers (lower-case names)
    got = conn.execute("SELECT count(*), sum((body->>'i')::int), count(DISTINCT body->>'i'), "
                       "max(CASE WHEN body->>'i' = '1' THEN headers->>'x-signature' END) FROM wh_events").fetchone()
    assert got == (len(valid), sum(valid), len(valid), requests[1][2]["x-signature"])
    assert conn.execute("SELECT type FROM mz_sources WHERE name = 'wh_events'").fetchone() == ("webhook",)
    assert conn.execute("SELECT status FROM mz_internal.mz_source_statuses WHERE name = 'wh_events'"
                        ).fetchone() == ("running",)
    with pytest.raises(psycopg.errors.WrongObjectType):
        conn.execute("INSERT INTO wh_events VALUES ('{}', '{}')")
    conn.execute("DROP SOURCE wh_events")
    conn.execute("DROP SECRET wh_key")


def test_webhook_body_formats_and_bad_checks(server, conn):
    conn.autocommit = True
    base = f"{server.console_url}/api/webhook/materialize/public/"
    conn.execute("CREATE SOURCE wh_text FROM WEBHOOK BODY FORMAT TEXT")
    conn.execute("CREATE SOURCE wh_bytes FROM WEBHOOK BODY FORMAT BYTES "
                 "CHECK (WITH (BODY BYTES) length(body) < 10)")
    try:
        assert post(base + "wh_text", "héllo".encode()) == 200
        assert post(base + "wh_text", b"\xff\xfe") == 400  # not UTF-8
        assert post(base + "wh_bytes", b"\x00\xff") == 200
        assert post(base + "wh_bytes", b"x" * 20) == 400  # the CHECK is false
        assert conn.execute("SELECT body FROM wh_text").fetchall() == [("héllo",)]
        assert conn.execute("SELECT body FROM wh_bytes").fetchall() == [(b"\x00\xff",)]
        with pytest.raises(psycopg.errors.DatatypeMismatch):
            conn.execute("CREATE SOURCE wh_bad FROM WEBHOOK BODY FORMAT TEXT CHECK (WITH (BODY) length(body))")
        with pytest.raises(psycopg.errors.UndefinedColumn):
            conn.execute("CREATE SOURCE wh_bad FROM WEBHOOK BODY FORMAT TEXT CHECK (WITH (BODY) headers IS NULL)")
        with pytest.raises(psycopg.errors.UndefinedObject):
            conn.execute("CREATE SOURCE wh_bad FROM WEBHOOK BODY FORMAT TEXT CHECK (WITH (SECRET nope) nope = '')")
        # a secret made from an expression, renamed, then changed: the CHECK follows it
        conn.execute("CREATE SECRET wh_k2 AS decode('a2V5', 'base64')")  # 'key'
        conn.execute("CREATE SOURCE wh_sig FROM WEBHOOK BODY FORMAT TEXT CHECK (WITH (BODY, SECRET wh_k2 AS k) body = k)")
        assert post(base + "wh_sig", b"key") == 200
        assert post(base + "wh_sig", b"nope") == 400
        conn.execute("ALTER SECRET wh_k2 RENAME TO wh_k3")
        assert conn.execute("SELECT name FROM mz_secrets WHERE name LIKE 'wh_k%'").fetchall() == [("wh_k3",)]
        assert post(base + "wh_sig", b"key") == 200
        conn.execute("ALTER SECRET wh_k3 AS 'k' || '2'")
        assert post(base + "wh_sig", b"key") == 400
        assert post(base + "wh_sig", b"k2") == 200
        assert conn.execute("SELECT body FROM wh_sig ORDER BY 1").fetchall() == [("k2",), ("key",), ("key",)]
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):  # the CHECK uses it
            conn.execute("DROP SECRET wh_k3")
        conn.execute("DROP SECRET wh_k3 CASCADE")  # and the source with it
        assert conn.execute("SELECT count(*) FROM mz_sources WHERE name = 'wh_sig'").fetchone() == (0,)
    finally:
        conn.execute("DROP SOURCE IF EXISTS wh_text, wh_bytes, wh_sig")
        conn.execute("DROP SECRET IF EXISTS wh_k3")


def test_encode_decode_hmac_functions(conn):
    row = conn.execute("SELECT encode(hmac('msg', 'key', 'sha256'), 'hex'), encode('\\x00ff'::bytea, 'base64'),"
                       " decode('AP8=', 'base64'), constant_time_eq('a', 'a'), constant_time_eq('a'::bytea, 'b')"
                       ).fetchone()
    assert row == (hmac.new(b"key", b"msg", hashlib.sha256).hexdigest(), "AP8=", b"\x00\xff", True, False)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("SELECT decode('zz', 'hex')")
