"""The nemesis's own kinds (tests/chaos/nemesis.py) without a server: a kind the run
could not set up is left out, and ``fill-disk`` fills the small disk, then frees it."""

from __future__ import annotations

import os
import random
import shutil

import pytest
from chaos.disk import small_disk
from chaos.nemesis import ALL_KINDS, KINDS, Nemesis
from chaos.workload import History


class _Topology:
    def __init__(self):
        self.pg, self.links = None, {}


def test_kinds_the_run_cannot_set_up_are_left_out(tmp_path):
    h = History(tmp_path / "h.jsonl")
    bare = Nemesis(_Topology(), h, random.Random(1), kinds=ALL_KINDS)
    assert bare.kinds == ["kill-replica", "pause-replica", "kill-envd"]
    able = _Topology()
    able.pg, able.links = object(), {"a": ("ns", "veth")}
    assert Nemesis(able, h, random.Random(1), kinds=ALL_KINDS, skew_dir=tmp_path, disk=tmp_path).kinds == \
        list(ALL_KINDS)
    assert Nemesis(able, h, random.Random(1), skew_dir=tmp_path, disk=tmp_path).kinds == list(KINDS)
    h.close()


def test_fill_disk_takes_every_free_byte_then_gives_them_back(tmp_path):
    with small_disk(tmp_path / "disk", 4 << 20) as mounted:
        if not mounted:
            pytest.skip("needs root to mount a tmpfs")
        h = History(tmp_path / "h.jsonl")
        nem = Nemesis(_Topology(), h, random.Random(1), kinds=("fill-disk",), disk=tmp_path / "disk")
        full = []
        nem._stop.wait = lambda _s: full.append(shutil.disk_usage(tmp_path / "disk").free)  # while full
        assert nem._fill_disk().endswith("MiB")
        assert len(full) == 1 and full[0] < 8192
        assert os.listdir(tmp_path / "disk") == [] and shutil.disk_usage(tmp_path / "disk").free > 3 << 20
        h.close()
