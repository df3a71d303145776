"""``sqlfront top``: the console's overview in a terminal, refreshed (for people on ssh).

Reads the same SQL as the console (``sqlfront.console.queries``) through any pgwire
connection: clusters and replicas with status and utilization, running statements, and the
latest finished ones. Pure formatting here; the CLI command owns the loop.
"""

from __future__ import annotations

import datetime as dt

from sqlfront.console.queries import CLUSTERS_SQL, INTERNAL_APP, QUERIES_SQL

#: the application_name of ``top``'s own connection (its statements are not listed)
TOP_APP = INTERNAL_APP


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def _pct(v) -> str:
    return "" if v is None else f"{v:.1f}%"


def _short(sql: str, n: int = 70) -> str:
    one = " ".join(sql.split())
    return one if len(one) <= n else one[: n - 1] + "…"


def render(conn, recent: int = 10) -> str:
    """The overview as text, read through psycopg connection ``conn``."""
    now = dt.datetime.now(dt.timezone.utc)
    out = [f"sqlfront top — {now:%Y-%m-%d %H:%M:%S} UTC", ""]
    clusters = conn.execute(CLUSTERS_SQL).fetchall()
    out += _table(["cluster", "replica", "size", "status", "reason", "cpu", "memory"],
                  [[c[1], c[3] or "", c[4] or "", c[5] or "", c[6] or "", _pct(c[8]), _pct(c[9])] for c in clusters])
    rows = conn.execute(QUERIES_SQL).fetchall()
    running = [r for r in rows if r[4] is None]
    done = [r for r in rows if r[4] is not None][:recent]
    out += ["", f"running ({len(running)})"]
    out += _table(["for", "user", "cluster", "sql"],
                  [[f"{(now - r[3]).total_seconds():.1f}s", r[1], r[2] or "", _short(r[0])] for r in running])
    out += ["", "recent"]
    out += _table(["took", "status", "rows", "strategy", "sql"],
                  [[f"{(r[4] - r[3]).total_seconds() * 1e3:.1f}ms", r[5] or "", "" if r[6] is None else str(r[6]),
                    r[7] or "", _short(r[0])] for r in done])
    return "\n".join(out)
