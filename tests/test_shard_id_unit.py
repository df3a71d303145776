"""Shard ids are minted in one place (``persist.shard_id``), in the two forms data
directories already hold; the catalog's id allocator mints a new object's through it.
Pure Python: no server."""

from __future__ import annotations

import re

from persist.shard_id import ShardId, catalog_shard_id, rewrite_shard_id
from sqlfront.coordinator import IdAllocator


def test_a_catalog_shard_id_names_the_allocated_number():
    sid = catalog_shard_id("u7")
    assert isinstance(sid, ShardId) and sid == "shard-s7"


def test_a_rewrite_shard_id_is_fresh_each_time():
    a, b = rewrite_shard_id(), rewrite_shard_id()
    assert isinstance(a, ShardId) and re.fullmatch(r"shard-r[0-9a-f]{16}", a) and a != b


def test_the_id_allocator_mints_shard_ids_from_its_shard_counter():
    ids = IdAllocator({"shard": 3})
    assert [ids.allocate_shard(), ids.allocate_shard()] == ["shard-s3", "shard-s4"]
    assert ids.allocate("shard") == "u5"  # one counter: a shard id is never handed out twice
