"""The list-append checker (tests/chaos/elle.py) on hand-made histories: each anomaly it
names is found in a history made to hold it, and a clean history checks clean."""

from __future__ import annotations

from chaos.elle import check, read_history

A, R = "append", "r"
W, D, RR = "w", "d", "rr"  # register write (UPDATE), write (DELETE + INSERT), read


def history(*txns) -> list[dict]:
    """Events of ``(type, ops, invoked, completed)`` transactions, ids from 1; reads in
    ``ops`` carry their results (the invocation gets them as None)."""
    events = []
    for i, (typ, ops, t0, t1) in enumerate(txns, 1):
        events.append({"id": i, "process": i, "type": "invoke", "time": t0,
                       "value": [[f, k, None if f in (R, RR) else v] for f, k, v in ops]})
        events.append({"id": i, "process": i, "type": typ, "time": t1, "value": ops})
    return events


def names(events) -> set[str]:
    return set(check(events).counts)


def test_a_serial_history_is_clean():
    h = history(("ok", [[A, 1, 1], [A, 2, 2]], 0, 1),
                ("ok", [[R, 1, [1]], [A, 1, 3]], 2, 3),
                ("ok", [[R, 1, [1, 3]], [R, 2, [2]]], 4, 5))
    rep = check(h)
    assert rep.valid, rep.anomalies
    assert rep.stats == {"ok": 3}


def test_concurrent_transactions_in_either_order_are_clean():
    h = history(("ok", [[A, 1, 1]], 0, 5),
                ("ok", [[A, 1, 2]], 0, 5),
                ("ok", [[R, 1, [2]]], 1, 2),
                ("ok", [[R, 1, [1, 2]]], 6, 7))
    assert check(h).valid


def test_g0_write_cycle():
    # T1 and T2 both append to keys 1 and 2; reads order them differently on each key
    h = history(("ok", [[A, 1, 1], [A, 2, 1]], 0, 1),
                ("ok", [[A, 1, 2], [A, 2, 2]], 0, 1),
                ("ok", [[R, 1, [1]]], 0, 1),
                ("ok", [[R, 2, [2]]], 0, 1),
                ("ok", [[R, 1, [1, 2]], [R, 2, [1, 2]]], 2, 3))
    assert "G0" in names(h)


def test_g1a_aborted_read():
    h = history(("fail", [[A, 1, 1]], 0, 1),
                ("ok", [[R, 1, [1]]], 2, 3))
    assert "G1a" in names(h)


def test_g1b_intermediate_read():
    h = history(("ok", [[A, 1, 1], [A, 1, 2]], 0, 1),
                ("ok", [[R, 1, [1]]], 0, 1),
                ("ok", [[R, 1, [1, 2]]], 2, 3))
    assert "G1b" in names(h)


def test_g1c_circular_information_flow():
    # T1 reads T2's append and T2 reads T1's
    h = history(("ok", [[A, 1, 1], [R, 2, [2]]], 0, 1),
                ("ok", [[A, 2, 2], [R, 1, [1]]], 0, 1))
    assert "G1c" in names(h)


def test_g_single_read_skew():
    # T3 sees T1's append to key 2 but not T1's append to key 1
    h = history(("ok", [[A, 1, 1], [A, 2, 2]], 0, 1),
                ("ok", [[R, 1, []], [R, 2, [2]]], 0, 1),
                ("ok", [[R, 1, [1]], [R, 2, [2]]], 2, 3))
    assert "G-single" in names(h)


def test_g2_write_skew():
    # each reads the other's key as empty, then appends to its own
    h = history(("ok", [[A, 1, 1], [R, 2, []]], 0, 1),
                ("ok", [[A, 2, 2], [R, 1, []]], 0, 1),
                ("ok", [[R, 1, [1]], [R, 2, [2]]], 2, 3))
    assert "G2" in names(h)


def test_stale_read_across_processes():
    # the append is acknowledged (on node a) before the read (on node b) begins
    h = history(("ok", [[A, 1, 1]], 0, 1),
                ("ok", [[R, 1, []]], 2, 3),
                ("ok", [[R, 1, [1]]], 4, 5))
    h[2]["node"] = h[3]["node"] = "b"
    assert names(h) == {"stale-read"}


def test_a_concurrent_read_may_miss_the_append():
    h = history(("ok", [[A, 1, 1]], 0, 3),
                ("ok", [[R, 1, []]], 2, 3),
                ("ok", [[R, 1, [1]]], 4, 5))
    assert check(h).valid


def test_lost_acknowledged_write():
    h = history(("ok", [[A, 1, 1]], 0, 1),
                ("ok", [[A, 1, 2]], 0, 1),
                ("ok", [[R, 1, [2]]], 5, 6))
    rep = check(h)
    assert "lost-write" in rep.counts
    assert rep.anomalies["lost-write"] == [{"txn": 1, "key": 1, "value": 1}]


def test_unknown_outcomes_may_or_may_not_have_committed():
    h = history(("info", [[A, 1, 1]], 0, None),
                ("info", [[A, 1, 2]], 0, None),
                ("ok", [[R, 1, [1]]], 5, 6))
    assert check(h).valid


def test_incompatible_order_duplicate_garbage_and_internal():
    h = history(("ok", [[A, 1, 1]], 0, 1),
                ("ok", [[A, 1, 2]], 0, 1),
                ("ok", [[R, 1, [1]]], 2, 3),
                ("ok", [[R, 1, [2]]], 2, 3),
                ("ok", [[R, 1, [1, 1, 2, 99]]], 4, 5),
                ("ok", [[A, 2, 5], [R, 2, []]], 4, 5))
    assert {"incompatible-order", "duplicate", "garbage", "internal"} <= names(h)


def test_history_file_round_trip(tmp_path):
    import json

    h = history(("ok", [[A, 1, 1]], 0, 1), ("ok", [[R, 1, [1]]], 2, 3))
    p = tmp_path / "h.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in h) + '{"torn')
    assert read_history(p) == h
    assert check(read_history(p)).valid


def test_register_reads_of_written_values_in_real_time_order_are_clean():
    h = history(("ok", [[RR, 0, [0]]], 0, 1),
                ("ok", [[W, 0, 5]], 2, 3),
                ("ok", [[D, 0, 6], [A, 1, 1]], 4, 5),
                ("info", [[W, 0, 7]], 6, None),
                ("ok", [[RR, 0, [6]], [R, 1, [1]]], 8, 9),
                ("ok", [[RR, 0, [7]]], 10, 11))
    assert check(h).valid, check(h).anomalies


def test_register_stale_read_and_lost_write():
    # the read began after W of 5 was acknowledged and still saw the initial value
    h = history(("ok", [[W, 0, 5]], 0, 1),
                ("ok", [[RR, 0, [0]]], 2, 3))
    assert names(h) == {"stale-read"}
    # a final read (after the clients stopped) that misses it: the write is lost
    h[2]["process"] = h[3]["process"] = "final-a"
    assert names(h) == {"lost-write"}


def test_register_concurrent_writes_may_land_in_either_order():
    h = history(("ok", [[W, 0, 5]], 0, 3),
                ("ok", [[D, 0, 6]], 1, 2),
                ("ok", [[RR, 0, [5]]], 4, 5))
    assert check(h).valid


def test_register_missing_row_duplicate_rows_garbage_and_aborted_read():
    h = history(("fail", [[W, 0, 5]], 0, 1),
                ("ok", [[RR, 0, []], [RR, 1, [0, 0]], [RR, 2, [77]]], 2, 3),
                ("ok", [[RR, 0, [5]]], 2, 3))
    assert names(h) == {"G1b", "duplicate", "garbage", "G1a"}


def test_register_reads_join_the_cycle_search():
    # T1 read T2's register value (wr) and key 1 without T2's append (rw): read skew
    h = history(("ok", [[RR, 0, [5]], [R, 1, []]], 0, 1),
                ("ok", [[A, 1, 1], [W, 0, 5]], 0, 1),
                ("ok", [[R, 1, [1]]], 2, 3))
    assert names(h) == {"G-single"}


def test_observer_events_with_a_difference_are_anomalies():
    h = history(("ok", [[A, 1, 1]], 0, 1), ("ok", [[R, 1, [1]]], 2, 3))
    h += [{"process": "observer", "type": "view", "time": 2, "ts": 10, "rows": 1, "diff": {}},
          {"process": "observer", "type": "subscribe", "time": 2, "ts": 10, "rows": 1, "diff": []},
          {"process": "ddl", "type": "ok", "time": 2, "f": "create-index", "sql": "CREATE INDEX i ON t (k)"}]
    assert check(h).valid
    h += [{"process": "observer", "type": "view", "time": 3, "ts": 11, "rows": 1, "diff": {"1": [1, 0]}},
          {"process": "observer", "type": "subscribe", "time": 3, "ts": 11, "rows": 1, "diff": [[1, 1, 1, 0]]}]
    assert names(h) == {"view-mismatch", "subscribe-mismatch"}
