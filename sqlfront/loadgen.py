"""Materialize's load generators (Materialize's "CREATE SOURCE: Load generator"): their
outputs (subsource names and columns, as Materialize's) and the updates of each tick.

A generator is a pure function of ``(seed, tick, now)``: tick ``t`` (1, 2, ...) always
makes the same rows but for the wall-clock times in them, so an ingestion that resumes
after tick ``t`` (its progress offset) goes on with tick ``t + 1`` and never repeats one.
The data are synthetic: the names and values are this module's own; the shapes (tables,
columns, keys, how many rows per tick) follow Materialize's generators.

Updates are ``(output, row, diff)``; ``output`` is a subsource's name, or ``None`` for a
generator with one output (COUNTER: the source itself).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from catalog.snapshot import Column
from catalog.types import DATE, FLOAT8, INT4, INT8, NUMERIC, TEXT, TIMESTAMPTZ

#: the items auctioned (AUCTION's ``auctions.item``; the quickstart's views group by it)
AUCTION_ITEMS = ("Signed Memorabilia", "City Bar Crawl", "Best Pizza in Town", "Gift Basket", "Custom Art")
_ORGANIZATIONS = ("Acme Anvils", "Blue Harbor Foods", "Cobalt Labs", "Driftwood Media", "Ember Energy",
                  "Fjord Logistics", "Granite Insurance", "Helix Pharma", "Indigo Textiles", "Juniper Health",
                  "Kestrel Aviation", "Lumen Optics", "Maple Robotics", "Northwind Mills", "Orchid Hotels",
                  "Pioneer Farms", "Quartz Finance", "Redwood Games", "Sable Security", "Tidewater Shipping")
_FIRST = ("Ada", "Bea", "Cal", "Dov", "Eli", "Fay", "Gus", "Hal", "Ida", "Jon", "Kai", "Liv", "Max", "Nia", "Oz",
          "Pia", "Quin", "Ray", "Sol", "Tea")
_LAST = ("Archer", "Baker", "Carver", "Dyer", "Fisher", "Gardner", "Hunter", "Joiner", "Keller", "Mason",
         "Miller", "Potter", "Sawyer", "Slater", "Tanner", "Thatcher", "Turner", "Walker", "Weaver", "Wright")
#: MARKETING's customers (Materialize's has 50, ids from 0): first-name.last-name addresses
MARKETING_CUSTOMERS = tuple(f"{_FIRST[i % 20]}.{_LAST[(i + i // 20) % 20]}@email.com".lower() for i in range(50))
#: MARKETING's campaigns (``impressions.campaign_id`` in ``0 .. 19``, as Materialize's)
MARKETING_CAMPAIGNS = 20
#: AUCTION's users: every first name with every last name, and again numbered (4,000 users)
_USERS = tuple(f"{f} {l}" + (f" {n}" if n else "") for n in range(10) for f in _FIRST for l in _LAST)
#: most bids an auction gets (Materialize's AUCTION makes 2 to 9 per auction)
MAX_BIDS = 10
#: seconds an auction stays open after its tick
AUCTION_SECONDS = 10


@dataclass(frozen=True)
class Output:
    """One output of a generator: its subsource name (None: the source's own) and columns."""

    name: str | None
    columns: tuple[Column, ...]


def _cols(*spec: tuple) -> tuple[Column, ...]:
    return tuple(Column(n, t, nullable) for n, t, nullable in spec)


#: Materialize's TPCH tables, in its order, as ``column:kind`` (kinds in :data:`_KINDS`)
_TPCH_TABLES = (
    ("supplier", "s_suppkey:i s_name:t s_address:t s_nationkey:i s_phone:t s_acctbal:n s_comment:t"),
    ("part", ("p_partkey:i p_name:t p_mfgr:t p_brand:t p_type:t p_size:4 p_container:t p_retailprice:n"
              " p_comment:t")),
    ("partsupp", "ps_partkey:i ps_suppkey:i ps_availqty:4 ps_supplycost:n ps_comment:t"),
    ("customer", ("c_custkey:i c_name:t c_address:t c_nationkey:i c_phone:t c_acctbal:n c_mktsegment:t"
                  " c_comment:t")),
    ("orders", ("o_orderkey:i o_custkey:i o_orderstatus:t o_totalprice:n o_orderdate:d o_orderpriority:t"
                " o_clerk:t o_shippriority:4 o_comment:t")),
    ("lineitem", ("l_orderkey:i l_partkey:i l_suppkey:i l_linenumber:4 l_quantity:n l_extendedprice:n"
                  " l_discount:n l_tax:n l_returnflag:t l_linestatus:t l_shipdate:d l_commitdate:d"
                  " l_receiptdate:d l_shipinstruct:t l_shipmode:t l_comment:t")),
    ("nation", "n_nationkey:i n_name:t n_regionkey:i n_comment:t"),
    ("region", "r_regionkey:i r_name:t r_comment:t"),
)
#: TPCH's column kinds: Materialize's ids are bigint, money and quantities numeric (scale 2)
_KINDS = {"i": INT8, "n": NUMERIC, "t": TEXT, "4": INT4, "d": DATE}


def _typed_cols(spec: str) -> tuple[Column, ...]:
    return _cols(*((name, _KINDS[kind], False) for name, kind in (c.split(":") for c in spec.split())))


#: generator -> its outputs, in Materialize's order
OUTPUTS: dict[str, tuple[Output, ...]] = {
    "COUNTER": (Output(None, _cols(("counter", INT8, False))),),
    "AUCTION": (
        Output("organizations", _cols(("id", INT8, False), ("name", TEXT, False))),
        Output("users", _cols(("id", INT8, False), ("org_id", INT8, False), ("name", TEXT, False))),
        Output("accounts", _cols(("id", INT8, False), ("org_id", INT8, False), ("balance", INT8, False))),
        Output("auctions", _cols(("id", INT8, False), ("seller", INT8, False), ("item", TEXT, False),
                                 ("end_time", TIMESTAMPTZ, False))),
        Output("bids", _cols(("id", INT8, False), ("buyer", INT8, False), ("auction_id", INT8, False),
                             ("amount", INT4, False), ("bid_time", TIMESTAMPTZ, False))),
    ),
    "MARKETING": (
        Output("customers", _cols(("id", INT8, False), ("email", TEXT, False), ("income", INT8, False))),
        Output("impressions", _cols(("id", INT8, False), ("customer_id", INT8, False), ("campaign_id", INT8, False),
                                    ("impression_time", TIMESTAMPTZ, False))),
        Output("clicks", _cols(("impression_id", INT8, False), ("click_time", TIMESTAMPTZ, False))),
        Output("leads", _cols(("id", INT8, False), ("customer_id", INT8, False), ("created_at", TIMESTAMPTZ, False),
                              ("converted_at", TIMESTAMPTZ, True), ("conversion_amount", INT8, True))),
        Output("coupons", _cols(("id", INT8, False), ("lead_id", INT8, False), ("created_at", TIMESTAMPTZ, False),
                                ("amount", INT8, False))),
        Output("conversion_predictions", _cols(("lead_id", INT8, False), ("experiment_bucket", TEXT, False),
                                               ("predicted_at", TIMESTAMPTZ, False), ("score", FLOAT8, False))),
    ),
    "TPCH": tuple(Output(name, _typed_cols(spec)) for name, spec in _TPCH_TABLES),
}
#: the progress subsource's columns (Materialize's ``<source>_progress``: the offset reached)
PROGRESS_COLUMNS = _cols(("offset", INT8, True))

Update = tuple[str | None, tuple, int]


def updates(generator: str, source_id: str, tick: int, now: dt.datetime, max_cardinality: int | None = None
            ) -> list[Update]:
    """The updates of tick ``tick`` (1-based) of ``generator`` for source ``source_id``
    (its seed), with wall-clock time ``now`` (UTC) in the rows that carry times."""
    rng = random.Random(f"{source_id}:{tick}")  # a str seed is hashed with SHA-512: the same in every process
    if generator == "COUNTER":
        out: list[Update] = [(None, (tick,), 1)]
        if max_cardinality is not None and tick > max_cardinality:
            out.append((None, (tick - max_cardinality,), -1))
        return out
    if generator == "AUCTION":
        return _auction(rng, tick, now)
    if generator == "MARKETING":
        return _marketing(rng, tick, now)
    raise ValueError(generator)


def _auction(rng: random.Random, tick: int, now: dt.datetime) -> list[Update]:
    if tick == 1:  # the organizations, their users and accounts, all at once
        orgs = len(_ORGANIZATIONS)
        return ([("organizations", (i + 1, name), 1) for i, name in enumerate(_ORGANIZATIONS)]
                + [("users", (i + 1, i % orgs + 1, name), 1) for i, name in enumerate(_USERS)]
                + [("accounts", (org + 42, org, 10_000), 1) for org in range(1, orgs + 1)])
    auction = tick - 1
    out: list[Update] = [("auctions", (auction, rng.randint(1, len(_USERS)), rng.choice(AUCTION_ITEMS),
                                       now + dt.timedelta(seconds=AUCTION_SECONDS)), 1)]
    for i in range(rng.randrange(2, MAX_BIDS)):
        out.append(("bids", (auction * MAX_BIDS + i, rng.randint(1, len(_USERS)), auction, rng.randint(1, 99),
                             now + dt.timedelta(seconds=i)), 1))
    return out


def _marketing(rng: random.Random, tick: int, now: dt.datetime) -> list[Update]:
    """Materialize's MARKETING (src/storage/src/source/generator/marketing.rs): the customers
    first (tick 1), then per tick one impression (one in ten clicked 20 to 40 s later), one
    lead with its conversion score (``control`` bucket for lead ids ending in 0 or 1, else
    ``experiment``), a coupon for an experiment lead scored at most 0.5, and the lead's
    conversion (likelier with a high score, and a second chance with a coupon).

    Materialize retracts the lead and inserts it converted 1 to 30 ms after its creation,
    which lands in a later timestamp; here every update of a tick commits at one timestamp,
    where that insert, retract and insert consolidate, so a converting lead is inserted
    converted. Ids come from one counter, as Materialize's, but per tick (``3 * tick`` + 0
    impression, 1 lead, 2 coupon) so that a tick repeats exactly."""
    if tick == 1:
        return [("customers", (i, email, rng.randrange(5_000_000, 10_000_000)), 1)
                for i, email in enumerate(MARKETING_CUSTOMERS)]
    n = len(MARKETING_CUSTOMERS)
    impression, lead, coupon = 3 * tick, 3 * tick + 1, 3 * tick + 2
    out: list[Update] = [("impressions", (impression, rng.randrange(n), rng.randrange(MARKETING_CAMPAIGNS), now), 1)]
    if rng.randrange(10) == 1:
        out.append(("clicks", (impression, now + dt.timedelta(milliseconds=rng.randrange(20_000, 40_000))), 1))
    customer, score = rng.randrange(n), rng.random()
    bucket = "control" if lead % 10 <= 1 else "experiment"
    out.append(("conversion_predictions", (lead, bucket, now, score), 1))
    with_coupon = score <= 0.5 and bucket == "experiment"
    if with_coupon:
        out.append(("coupons", (coupon, lead, now, rng.randrange(500, 5000)), 1))
    converted = rng.random() < score or (with_coupon and rng.random() < score)
    if converted:
        out.append(("leads", (lead, customer, now, now + dt.timedelta(milliseconds=rng.randrange(1, 30)),
                              rng.randrange(1000, 25000)), 1))
    else:
        out.append(("leads", (lead, customer, now, None, None), 1))
    return out


def tpch_snapshot(scale: float) -> list[Update]:
    """TPCH's snapshot (its only tick without TICK INTERVAL, as Materialize's): the eight
    tables at TPC-H scale factor ``scale``, generated by tpchgen-cli (``sqlfront.tpch``,
    as ``sqlfront load-tpch``) into a temporary directory and read back as rows in
    Materialize's column order. Runs seconds at 0.01 (60,000 lineitems); call it off the
    Coordinator's loop.

    Raises:
        subprocess.CalledProcessError if tpchgen-cli fails."""
    import tempfile

    import pyarrow.parquet as pq

    from sqlfront import tpch

    out: list[Update] = []
    with tempfile.TemporaryDirectory(prefix="tpch-source-") as tmp:
        d = tpch.generate(scale, tmp, echo=lambda _: None)
        for o in OUTPUTS["TPCH"]:
            t = pq.read_table(d / f"{o.name}.parquet", columns=[c.name for c in o.columns])
            out.extend((o.name, row, 1) for row in zip(*(t.column(i).to_pylist() for i in range(t.num_columns))))
    return out
