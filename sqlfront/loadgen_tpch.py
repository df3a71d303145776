"""Materialize's TPCH load generator with a TICK INTERVAL (Materialize's
src/storage/src/source/generator/tpch.rs): tick 1 is the snapshot (``loadgen.tpch_snapshot``),
each later tick replaces one order picked at random: its old row and lineitems retracted,
a new order under the same key, with 1 to 7 new lineitems, inserted.

A tick's choice and new order are a pure function of ``(source id, tick)``; what a tick
retracts is the order's current version (the snapshot's, or that of the last tick that
picked it), which :class:`TpchTicks` keeps in memory and rebuilds (snapshot, then the ticks
replayed) when asked for a tick other than the next one: after a restart or a failed commit.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

from sqlfront import loadgen

#: TPC-H's dates (specification 4.2.3): orders from STARTDATE to ENDDATE - 151 days;
#: CURRENTDATE splits shipped (F) from open (O) lineitems and returned (R/A) from not (N)
START_DATE = dt.date(1992, 1, 1)
ORDER_END = dt.date(1998, 12, 31) - dt.timedelta(days=151)
CURRENT_DATE = dt.date(1995, 6, 17)
PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
INSTRUCTIONS = ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")
MODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
_CENT = Decimal("0.01")


def retail_price(partkey: int) -> Decimal:
    """TPC-H's P_RETAILPRICE of a part (specification 4.2.3), in dollars."""
    return (Decimal(90000 + (partkey // 10) % 20001 + 100 * (partkey % 1000)) / 100).quantize(_CENT)


class TpchTicks:
    """The updates of a TPCH source with a TICK INTERVAL, tick by tick (1-based).

    ``snapshot``: a callable returning the snapshot's updates (tick 1)."""

    def __init__(self, source_id: str, snapshot):
        self.source_id = source_id
        self._snapshot = snapshot
        self._rows: list | None = None
        self.at = 0  # the last tick applied to ``orders``
        self.orders: dict[int, tuple[tuple, list[tuple]]] = {}

    def updates(self, tick: int) -> list[loadgen.Update]:
        """The updates of ``tick``; ticks are best asked in order (others rebuild the state)."""
        if self._rows is None:
            self._rows = self._snapshot()
            s = [r for o, r, _ in self._rows if o == "supplier"]
            self.counts = (len([1 for o, _, _ in self._rows if o == "part"]), len(s),
                           len([1 for o, _, _ in self._rows if o == "customer"]),
                           max(int(r[6].split("#")[1]) for o, r, _ in self._rows if o == "orders"))
            self.words = sorted({w for o, r, _ in self._rows if o == "orders" for w in r[8].split()}) or ["tpch"]
        if tick != self.at + 1 or not self.orders:
            self._reset()
            for t in range(2, tick):
                self._apply(t)
        if tick == 1:
            return list(self._rows)
        return self._apply(tick)

    def _reset(self) -> None:
        self.orders = {}
        lines: dict[int, list[tuple]] = {}
        for o, r, _ in self._rows:
            if o == "lineitem":
                lines.setdefault(r[0], []).append(r)
        for o, r, _ in self._rows:
            if o == "orders":
                self.orders[r[0]] = (r, lines.get(r[0], []))
        self._keys = sorted(self.orders)
        self.at = 1

    def _apply(self, tick: int) -> list[loadgen.Update]:
        rng = random.Random(f"{self.source_id}:tpch:{tick}")
        key = rng.choice(self._keys)
        old, old_lines = self.orders[key]
        new, new_lines = self.order(rng, key)
        self.orders[key] = (new, new_lines)
        self.at = tick
        return ([("lineitem", r, -1) for r in old_lines] + [("lineitem", r, 1) for r in new_lines]
                + [("orders", old, -1), ("orders", new, 1)])

    def _text(self, rng: random.Random, lo: int, hi: int) -> str:
        return " ".join(rng.choice(self.words) for _ in range(rng.randint(2, 8)))[:rng.randint(lo, hi)]

    def order(self, rng: random.Random, key: int) -> tuple[tuple, list[tuple]]:
        """A new order ``key`` and its lineitems, as TPC-H's rules (specification 4.2.3) and
        Materialize's generator make them: a customer whose key is not a multiple of 3, 1 to
        7 lineitems, the total price their price with tax and discount, status F, O or P."""
        parts, suppliers, customers, clerks = self.counts
        custkey = rng.randint(1, customers)
        while custkey % 3 == 0 and customers > 2:  # TPC-H: a third of the customers never order
            custkey = rng.randint(1, customers)
        orderdate = START_DATE + dt.timedelta(days=rng.randint(1, (ORDER_END - START_DATE).days))
        lines, total, statuses = [], Decimal(0), set()
        for number in range(1, rng.randint(1, 7) + 1):
            partkey = rng.randint(1, parts)
            suppkey = (partkey + rng.randint(0, 3) * (suppliers // 4 + (partkey - 1) // suppliers)) % suppliers + 1
            quantity = Decimal(rng.randint(1, 50))
            price = (quantity * retail_price(partkey)).quantize(_CENT)
            discount, tax = Decimal(rng.randint(0, 8)) / 100, Decimal(rng.randint(0, 10)) / 100
            ship = orderdate + dt.timedelta(days=rng.randint(1, 121))
            receipt = ship + dt.timedelta(days=rng.randint(1, 30))
            status = "O" if ship > CURRENT_DATE else "F"
            statuses.add(status)
            lines.append((key, partkey, suppkey, number, quantity.quantize(_CENT), price, discount.quantize(_CENT),
                          tax.quantize(_CENT), rng.choice("RA") if receipt <= CURRENT_DATE else "N", status, ship,
                          orderdate + dt.timedelta(days=rng.randint(30, 90)), receipt, rng.choice(INSTRUCTIONS),
                          rng.choice(MODES), self._text(rng, 10, 43)))
            total += price * (1 + tax) * (1 - discount)
        status = statuses.pop() if len(statuses) == 1 else "P"
        order = (key, custkey, status, total.quantize(_CENT), orderdate, rng.choice(PRIORITIES),
                 f"Clerk#{rng.randint(1, clerks):09d}", 0, self._text(rng, 19, 78))
        return order, lines
