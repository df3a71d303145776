"""A consistency checker for list-append histories, after Elle (Kingsbury and Alvaro, VLDB 2020).

A history is a sequence of events (dicts, one JSON line each in a history file):

    {"id": 7, "process": 3, "node": "a", "type": "invoke", "time": 12.5,
     "value": [["append", 1, 17], ["r", 2, None]]}
    {"id": 7, "process": 3, "node": "a", "type": "ok", "time": 12.9,
     "value": [["append", 1, 17], ["r", 2, [4, 9]]]}

``type`` is ``invoke`` then one of ``ok`` (committed), ``fail`` (definitely not committed)
or ``info`` (unknown: the connection died, or the server's error does not say). ``time``
is seconds on one monotonic clock shared by every client (cross-process real-time order).
Events of ``process`` ``"nemesis"`` are faults, ignored here. Appended values are unique
over the whole history; a read returns a key's values as a list.

The database is the SQL table ``(k int, v int)`` and reads ``ORDER BY v``, so a read gives
the *set* of a key's values; the version order of a key is inferred from how the reads'
sets grow (under serializability, with appends only, every two reads of a key are ordered
by inclusion; if not: ``incompatible-order``). From it come Adya's dependencies between
transactions: ``wr`` (T2 read what T1 appended), ``ww`` (T1's append precedes T2's in the
version order), ``rw`` (T1 read a set that T2's append is not in, and T2's append is in a
later one) and ``rt`` (T1 completed before T2 was invoked; strict serializability).
Cycles are named as Adya and Elle do: ``G0`` (ww only), ``G1c`` (ww and wr), ``G-single``
(one rw), ``G2`` (several rw); with rt edges the same names with ``-realtime``, and
``stale-read`` for a cycle of one rw edge and rt edges alone (a read that missed a write
acknowledged before it began). Non-cycle anomalies: ``G1a`` (a read saw a value of a
failed transaction), ``G1b`` (a read saw some of a transaction's appends to a key, not
all), ``internal`` (a transaction's read misses its own earlier append, or a key read
twice differs), ``duplicate``, ``garbage`` (a value never appended), ``lost-write`` (an
acknowledged append missing from the largest read of its key; the workload ends with a
read of every key after the faults heal).

The register table's reads (``w``, ``d``, ``rr`` micro-operations) are checked by
:mod:`chaos.registers`, which adds their ``wr`` edges to the same graph; the view and
SUBSCRIBE comparisons of :mod:`chaos.observed` are ``view-mismatch`` and
``subscribe-mismatch``. Events of the processes in :data:`AUX` are not transactions.

Only networkx (graphs, strongly connected components, cycles) is used.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from chaos import observed, registers

#: anomalies that a strict serializable database never shows
NAMES = ("G0", "G1a", "G1b", "G1c", "G-single", "G2", "G0-realtime", "G1c-realtime", "G-single-realtime",
         "G2-realtime", "stale-read", "incompatible-order", "internal", "duplicate", "garbage", "lost-write",
         "view-mismatch", "subscribe-mismatch")

#: processes whose events are not transactions: faults, DDL, the view/SUBSCRIBE observer
AUX = frozenset({"nemesis", "ddl", "observer"})


@dataclass(eq=False)
class Txn:
    """One operation: its events' ``id``, how it ended, its micro-operations (reads with
    their results when ``ok``), and its invocation/completion times (completion None:
    unknown)."""
    id: int
    type: str
    ops: list
    invoked: float
    completed: float | None
    process: object = None
    node: object = None


@dataclass
class Report:
    """The checker's answer: ``anomalies`` maps a name of :data:`NAMES` to examples (at
    most ``limit`` each); ``counts`` gives how many of each were found; ``stats`` the
    transactions by outcome."""
    anomalies: dict[str, list] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)
    limit: int = 5

    def add(self, name: str, example) -> None:
        assert name in NAMES, name
        self.counts[name] = self.counts.get(name, 0) + 1
        shown = self.anomalies.setdefault(name, [])
        if len(shown) < self.limit:
            shown.append(example)

    @property
    def valid(self) -> bool:
        return not self.counts


def read_history(path: Path) -> list[dict]:
    """The events of a JSON-lines history file (a torn last line, from a killed writer, is skipped)."""
    events = []
    for line in Path(path).read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def transactions(events: Iterable[dict]) -> list[Txn]:
    """Pair each ``invoke`` with its completion by ``id``; an invocation never completed is ``info``."""
    txns: dict[int, Txn] = {}
    for e in events:
        if e.get("process") in AUX:
            continue
        if e["type"] == "invoke":
            txns[e["id"]] = Txn(e["id"], "info", e["value"], e["time"], None, e.get("process"), e.get("node"))
        else:
            t = txns[e["id"]]
            t.type = e["type"]
            if e["type"] == "ok":
                t.ops, t.completed = e["value"], e["time"]
            elif e["type"] == "fail":
                t.completed = e["time"]
    return list(txns.values())


def _appends(t: Txn) -> list[tuple[int, int]]:
    return [(k, v) for f, k, v in t.ops if f == "append"]


def check(events: Iterable[dict], limit: int = 5) -> Report:
    """Check a history (see the module docstring); returns a :class:`Report`."""
    rep = Report(limit=limit)
    events = list(events)
    txns = transactions(events)
    for t in txns:
        rep.stats[t.type] = rep.stats.get(t.type, 0) + 1
    writer: dict[tuple[int, int], Txn] = {}
    for t in txns:
        for k, v in _appends(t):
            writer[(k, v)] = t
    oks = [t for t in txns if t.type == "ok"]
    # reads of each key: (txn, set of values without the txn's own appends)
    reads: dict[int, list[tuple[Txn, frozenset]]] = defaultdict(list)
    for t in oks:
        _internal_and_values(t, writer, reads, rep)
    g = nx.MultiDiGraph()
    g.add_nodes_from(t.id for t in txns if t.type != "fail")
    by_id = {t.id: t for t in txns}
    for k, rs in reads.items():
        _key_dependencies(k, rs, writer, g, rep)
    _lost_writes(oks, reads, rep)
    registers.check(txns, g, rep)
    observed.check(events, rep)
    _realtime_edges(txns, g)
    _cycles(g, by_id, rep)
    return rep


def _internal_and_values(t: Txn, writer, reads, rep: Report) -> None:
    own: dict[int, list[int]] = defaultdict(list)
    seen: dict[int, frozenset] = {}
    for f, k, v in t.ops:
        if f == "append":
            own[k].append(v)
            continue
        if f != "r" or v is None:
            continue
        if len(set(v)) != len(v):
            rep.add("duplicate", {"txn": t.id, "key": k, "read": v})
        values = set(v)
        missing = [x for x in own[k] if x not in values]
        if missing:
            rep.add("internal", {"txn": t.id, "key": k, "read": v, "own appends missing": missing})
        external = frozenset(x for x in values if x not in own[k] and writer.get((k, x)) is not t)
        if k in seen and seen[k] != external:
            rep.add("internal", {"txn": t.id, "key": k, "first read": sorted(seen[k]), "second read": sorted(external)})
        seen[k] = external
        for x in external:
            w = writer.get((k, x))
            if w is None:
                rep.add("garbage", {"txn": t.id, "key": k, "value": x})
            elif w.type == "fail":
                rep.add("G1a", {"reader": t.id, "writer": w.id, "key": k, "value": x})
        # G1b: some of a writer's appends to k, not all
        for w in {writer[(k, x)] for x in external if (k, x) in writer}:
            theirs = [x for kk, x in _appends(w) if kk == k]
            if any(x not in values for x in theirs):
                rep.add("G1b", {"reader": t.id, "writer": w.id, "key": k, "read": sorted(values),
                                "writer appended": theirs})
        reads[k].append((t, external))


def _key_dependencies(k: int, rs: list, writer, g: nx.MultiDiGraph, rep: Report) -> None:
    """wr, ww and rw edges of key ``k`` from its reads' sets, ordered by inclusion."""
    chain = sorted({s for _, s in rs}, key=len)
    for a, b in itertools.pairwise(chain):
        if not a <= b:
            rep.add("incompatible-order", {"key": k, "read": sorted(a), "later read": sorted(b)})
            return
    # layers: the values each successive set adds; writers of a layer precede the next's
    layers = [s - p for p, s in zip([frozenset()] + chain, chain)]
    layers = [layer for layer in layers if layer]
    index = {x: i for i, layer in enumerate(layers) for x in layer}
    writers = [{writer[(k, x)].id for x in layer if (k, x) in writer} for layer in layers]
    for i in range(len(writers) - 1):
        for a in writers[i]:
            for b in writers[i + 1]:
                if a != b:
                    g.add_edge(a, b, type="ww", on=k)
    for t, s in rs:
        last = max((index[x] for x in s), default=-1)
        if last >= 0:
            for w in writers[last]:
                if w != t.id:
                    g.add_edge(w, t.id, type="wr", on=k)
        if last + 1 < len(writers):
            for w in writers[last + 1]:
                if w != t.id:
                    g.add_edge(t.id, w, type="rw", on=k)


def _lost_writes(oks: list[Txn], reads, rep: Report) -> None:
    largest = {k: max((s for _, s in rs), key=len) for k, rs in reads.items()}
    for t in oks:
        for k, v in _appends(t):
            if v not in largest.get(k, frozenset()):
                rep.add("lost-write", {"txn": t.id, "key": k, "value": v})


def _realtime_edges(txns: list[Txn], g: nx.MultiDiGraph) -> None:
    """rt edges, transitively reduced as Elle does: B's predecessors are the completed
    transactions not already before another completed one when B is invoked."""
    events = []
    for t in txns:
        if t.type == "fail":
            continue
        events.append((t.invoked, 1, t))
        if t.completed is not None and t.type == "ok":
            events.append((t.completed, 0, t))
    events.sort(key=lambda e: (e[0], e[1]))
    frontier: set[int] = set()
    preds: dict[int, frozenset] = {}
    for _, kind, t in events:
        if kind == 1:
            preds[t.id] = frozenset(frontier)
            for p in frontier:
                g.add_edge(p, t.id, type="rt")
        else:
            frontier = (frontier - preds.get(t.id, frozenset())) | {t.id}


def _subgraph(g: nx.MultiDiGraph, nodes, types: set[str]) -> nx.DiGraph:
    h = nx.DiGraph()
    h.add_nodes_from(nodes)
    for a, b, d in g.subgraph(nodes).edges(data=True):
        if d["type"] in types and not h.has_edge(a, b):
            h.add_edge(a, b, type=d["type"], on=d.get("on"))
    return h


def _cycle_through(h: nx.DiGraph, a, b, d) -> list | None:
    """A cycle made of edge a->b (data ``d``) and a path b ~> a in ``h``, as (from, type, to, key) steps."""
    try:
        path = nx.shortest_path(h, b, a)
    except nx.NetworkXNoPath:
        return None
    steps = [(a, d["type"], b, d.get("on"))]
    steps += [(x, h[x][y]["type"], y, h[x][y].get("on")) for x, y in itertools.pairwise(path)]
    return steps


def _cycles(g: nx.MultiDiGraph, by_id: dict, rep: Report) -> None:
    """Search every strongly connected component for the weakest anomaly it holds: G0,
    then G1c, G-single, G2; then the same with rt edges."""
    for scc in nx.strongly_connected_components(g):
        if len(scc) < 2:
            continue
        if _named_cycle(g, scc, "", rep):
            continue
        _named_cycle(g, scc, "-realtime", rep, rt=True)


def _named_cycle(g, scc, suffix: str, rep: Report, rt: bool = False) -> bool:
    extra = {"rt"} if rt else set()
    ww = _subgraph(g, scc, {"ww"} | extra)
    try:
        cycle = nx.find_cycle(ww)
        if not rt or any(ww[a][b]["type"] == "rt" for a, b in cycle):
            rep.add("G0" + suffix, [(a, ww[a][b]["type"], b, ww[a][b].get("on")) for a, b in cycle])
            return True
    except nx.NetworkXNoCycle:
        pass
    wwr = _subgraph(g, scc, {"ww", "wr"} | extra)
    for a, b, d in wwr.edges(data=True):
        if d["type"] == "wr":
            c = _cycle_through(wwr, a, b, d)
            if c and (not rt or any(s[1] == "rt" for s in c)):
                rep.add("G1c" + suffix, c)
                return True
    full = _subgraph(g, scc, {"ww", "wr", "rw"} | extra)
    for a, b, d in full.edges(data=True):
        if d["type"] == "rw":
            c = _cycle_through(wwr, a, b, d)
            if c and (not rt or any(s[1] == "rt" for s in c)):
                only_rt = all(s[1] == "rt" for s in c[1:])
                rep.add("stale-read" if rt and only_rt else "G-single" + suffix, c)
                return True
    for a, b, d in full.edges(data=True):
        if d["type"] == "rw":
            c = _cycle_through(full, a, b, d)
            if c and (not rt or any(s[1] == "rt" for s in c)):
                rep.add("G2" + suffix, c)
                return True
    return False
