"""UUID functions that read a UUID's fields (PostgreSQL 9.14, table 9.44; RFC 9562):
``uuid_extract_version`` and ``uuid_extract_timestamp``. A UUID is its canonical text
here (lower-case hex in 8-4-4-4-12 groups), so each field is a run of hex digits."""

from __future__ import annotations

import datetime as dt

from planner.functions.registry import Function, register, sig

#: 100-nanosecond intervals from 1582-10-15 (version 1's epoch) to 1970-01-01
_GREGORIAN_OFFSET = 122_192_928_000_000_000


def _rfc_variant(u: str) -> bool:
    """Whether the variant bits (the 17th hex digit's top two) are RFC 9562's 10."""
    return int(u[19], 16) & 0xC == 0x8


def _version_py(a, e):
    u = str(a[0])
    return int(u[14], 16) if _rfc_variant(u) else None


def _timestamp_py(a, e):
    """The instant a version 1 (60 bits of 100 ns since 1582-10-15) or version 7 (48 bits
    of ms since 1970) UUID holds; NULL for other versions."""
    u = str(a[0])
    if not _rfc_variant(u):
        return None
    h = u.replace("-", "")
    if h[12] == "7":
        micros = int(h[:12], 16) * 1000
    elif h[12] == "1":
        ticks = (int(h[13:16], 16) << 48) | (int(h[8:12], 16) << 32) | int(h[:8], 16)
        micros = (ticks - _GREGORIAN_OFFSET) // 10
    else:
        return None
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)


def _hex(S, u, start: int, n: int):
    """The hex digits at 1-based ``start`` (``n`` of them) of UUID text ``u`` as a long."""
    return S.F.conv(S.F.substring(u, start, n), 16, 10).cast("long")


def _rfc_variant_spark(S, u):
    return (_hex(S, u, 20, 1).bitwiseAND(0xC)) == 0x8


def _version_spark(S, a, e):
    u = a[0]
    return S.F.when(_rfc_variant_spark(S, u), _hex(S, u, 15, 1).cast("smallint"))


def _timestamp_spark(S, a, e):
    F = S.F
    u = a[0]
    version = F.substring(u, 15, 1)
    v7 = (_hex(S, u, 1, 8) * 65536 + _hex(S, u, 10, 4)) * 1000
    ticks = F.shiftleft(_hex(S, u, 16, 3), 48) + F.shiftleft(_hex(S, u, 10, 4), 32) + _hex(S, u, 1, 8)
    v1 = F.floor((ticks - F.lit(_GREGORIAN_OFFSET)) / 10).cast("long")
    micros = F.when(version == "7", v7).when(version == "1", v1)
    return F.when(_rfc_variant_spark(S, u), F.timestamp_micros(micros))


register(
    Function("uuid_extract_version", (sig("uuid", ret="int2"),), _version_py, _version_spark,
             sql_names=("uuid_extract_version",), doc="9.14",
             samples=("uuid_extract_version(gen_random_uuid()) + k",
                      "uuid_extract_version(('a0eebc99-9c0b-4ef8-' || substr('89c0', k % 4 + 1, 1) || 'b6d-6bb9bd380a11')::uuid)")),
    Function("uuid_extract_timestamp", (sig("uuid", ret="timestamptz"),), _timestamp_py, _timestamp_spark,
             sql_names=("uuid_extract_timestamp",), doc="9.14",
             samples=("uuid_extract_timestamp(('017f22e2-79b0-7cc3-' || substr('89c0', k % 4 + 1, 1) || '8c4-dc0c0c07398f')::uuid)",
                      "uuid_extract_timestamp(('C232AB00-9414-11EC-' || substr('89c0', k % 4 + 1, 1) || '3C8-9F6BDECED846')::uuid)",
                      "uuid_extract_timestamp(gen_random_uuid()) IS NULL")),
)


def _uuidv7_py(a, e):
    """``uuidv7([shift])`` (PostgreSQL 18, 9.14): a version 7 UUID of the current time
    (plus ``shift``) in milliseconds since 1970, then random bits (RFC 9562)."""
    import uuid

    from planner.functions.datetime import add_interval

    now = dt.datetime.now(dt.UTC)
    if a:
        now = add_interval(now, a[0])
    ms = (now - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)
    h = f"{ms:012x}" + "7" + uuid.uuid4().hex[13:]
    return str(uuid.UUID(h))


def _uuidv7_spark(S, a, e):
    """On Spark: a random (version 4) UUID with its first 48 bits the milliseconds of the
    query's current time (plus the shift) and its version 7."""
    F = S.F
    now = F.current_timestamp()
    if a:
        now = now + a[0]
    ms = F.lpad(F.lower(F.hex(F.unix_millis(now))), 12, "0")
    return F.concat(F.substring(ms, 1, 8), F.lit("-"), F.substring(ms, 9, 4), F.lit("-7"),
                    F.substring(F.uuid(), 16, 21))


register(
    Function("uuidv7", (sig(ret="uuid"), sig("interval", ret="uuid")), _uuidv7_py, _uuidv7_spark,
             sql_names=("uuidv7",), volatility="volatile", doc="9.14",
             differs="the 12 bits after the milliseconds are random, not PostgreSQL's finer clock: UUIDs made in "
                     "the same millisecond are not in the order they were made",
             samples=("uuid_extract_version(uuidv7()) + k", "uuidv7() <> uuidv7()",
                      "uuid_extract_timestamp(uuidv7()) BETWEEN now() - interval '1 minute' AND now() + interval '1 hour'",
                      "uuid_extract_timestamp(uuidv7(make_interval(days => -k))) < now() - make_interval(days => k - 1)",
                      "length(uuidv7()::text)")),
)
