"""Shard ids: the one place they are minted (Materialize's persist mints its ``ShardId``,
``s`` and a UUID, the same way: the catalog only records what persist handed out).

Two forms exist, and data directories written earlier hold both, so neither changes:

- ``shard-s<N>``: the shard of a new table, source, subsource or materialized view; ``N``
  is the number of the catalog's ``shard`` id allocated in the same catalog transaction
  (:func:`catalog_shard_id`), so a shard id is taken once even across processes sharing
  the catalog;
- ``shard-r<16 hex digits>``: the new shard an ALTER TABLE or TRUNCATE rewrites a table
  into, made outside any catalog transaction (:func:`rewrite_shard_id`).

A :class:`ShardId` is a ``str``: the catalog, Consensus keys and Blob folders store it
as text, and a shard id read back from them compares equal to the one minted.
"""

from __future__ import annotations

import uuid


class ShardId(str):
    """The id of one persist shard (a ``str``: see the module docstring)."""

    __slots__ = ()


def catalog_shard_id(allocated: str) -> ShardId:
    """The shard id for the catalog's allocated ``shard`` id ``allocated`` (``u<N>``):
    ``shard-s<N>``."""
    return ShardId(f"shard-s{allocated[1:]}")


def rewrite_shard_id() -> ShardId:
    """A fresh shard id for a table rewritten outside a catalog transaction:
    ``shard-r`` and 16 random hex digits."""
    return ShardId(f"shard-r{uuid.uuid4().hex[:16]}")
