"""sqlfront.memtrace: the memory evidence environmentd writes when SQLFRONT_TRACEMALLOC is set."""

from __future__ import annotations

from sqlfront import memtrace


class Marker:
    pass


def test_off_unless_the_variable_names_a_directory(monkeypatch):
    monkeypatch.delenv(memtrace.ENV_DIR, raising=False)
    assert memtrace.start_from_env() is False


def test_stats_count_objects_by_type_and_name_what_holds_them(monkeypatch):
    keep = {"held": [Marker() for _ in range(3)]}
    monkeypatch.setenv(memtrace.ENV_HOLDERS, "Marker")
    s = memtrace.stats()
    assert s["rss"] > 0 and s["threads"] >= 1 and s["py_blocks"] > 0
    assert s["objects_total"] >= 3
    assert s["holders of Marker"] == {"list <- dict": 3}
    assert keep


def test_stats_give_obmallocs_arenas_and_what_lives_in_them():
    s = memtrace.stats()
    assert s["obmalloc_arenas"] >= 1
    assert 0 < s["obmalloc_used"] <= s["obmalloc_arenas"] * 2**20
    assert s["obmalloc_free_blocks"] >= 0 and s["obmalloc_free_pools"] >= 0
