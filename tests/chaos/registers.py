"""Checks of the register table ``r (k, v)`` (:mod:`chaos.workload`), part of :func:`chaos.elle.check`.

Every key has exactly one row from the start (``v = 0``), and every write keeps it so: an
UPDATE (``w``) sets ``v``, a DELETE and INSERT in one block (``d``) replaces the row.
Written values are unique over the run, so a read's value names the transaction that
wrote it. Anomalies, by the names of :data:`chaos.elle.NAMES`:

- ``G1b``: a read found no row for a key (it saw the DELETE of a ``d`` but not its INSERT);
- ``duplicate``: a read found several rows for a key;
- ``garbage``: a value no transaction wrote; ``G1a``: a value of a failed transaction;
- ``stale-read``: the value read was written by ``W`` although another acknowledged write
  ``W2`` of the key began after ``W`` completed and completed before the read began (so
  ``W2`` is between them in any strict serializable order, and the read had to see it or
  something later). When the read is a final read (after every client stopped), the same
  is a ``lost-write``: ``W2`` was acknowledged and its value is gone for good.

A read also gives a ``wr`` edge from its value's writer to the reader, so the cycle
search of :mod:`chaos.elle` sees dependencies through both tables. (No ``ww``/``rw``
edges: without reads of every version, a register's version order is not known; the
real-time checks above are what a register history proves.)
"""

from __future__ import annotations

from collections import defaultdict

#: the value every register holds before any write
INITIAL = 0


def check(txns: list, g, rep) -> None:
    """Add the anomalies of the register reads of ``txns`` (``chaos.elle.Txn``) to ``rep``
    and their ``wr`` edges to ``g`` (a networkx MultiDiGraph over transaction ids)."""
    writer = {}
    acked: dict[int, list] = defaultdict(list)
    for t in txns:
        for f, k, v in t.ops:
            if f in ("w", "d"):
                writer[(k, v)] = t
                if t.type == "ok":
                    acked[k].append(t)
    for t in txns:
        if t.type != "ok":
            continue
        final = str(t.process).startswith("final")
        for f, k, vs in t.ops:
            if f != "rr" or vs is None:
                continue
            if not vs:
                rep.add("G1b", {"reader": t.id, "register": k, "read": vs})
            elif len(vs) > 1:
                rep.add("duplicate", {"reader": t.id, "register": k, "read": vs})
            for x in vs:
                w = None if x == INITIAL else writer.get((k, x))
                if x != INITIAL and w is None:
                    rep.add("garbage", {"reader": t.id, "register": k, "value": x})
                    continue
                if w is not None and w.type == "fail":
                    rep.add("G1a", {"reader": t.id, "writer": w.id, "register": k, "value": x})
                    continue
                if w is not None and w is not t:
                    g.add_edge(w.id, t.id, type="wr", on=("r", k))
                done = float("-inf") if w is None else w.completed
                if done is None:  # an unknown outcome: when it took effect is unknown
                    continue
                later = next((w2 for w2 in acked[k] if w2 is not w and w2.invoked > done
                              and w2.completed < t.invoked), None)
                if later is not None:
                    rep.add("lost-write" if final else "stale-read",
                            {"reader": t.id, "register": k, "read": x, "writer": None if w is None else w.id,
                             "missed acknowledged write": later.id, "its value": _value(later, k)})


def _value(t, k: int):
    return next((v for f, kk, v in t.ops if f in ("w", "d") and kk == k), None)
