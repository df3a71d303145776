"""Replica sizes: the map from a size name to the resources of a replica.

Source: Materialize's cluster replica design (seeds/cluster-replicas.md,
"Replica size"): ``--cluster-replica-sizes`` is a JSON object of
``{"name": {"workers": N, "scale": S, "cpu_limit": C, "memory_limit": M}}``; an entry
may list ``"aliases": ["25cc", ...]``, other names users may give for it (Materialize's
size names, say).
For Spark, ``workers`` is the core count (``local[N]``), ``scale > 1`` means
``local-cluster[S, N, MB]``, and ``memory_limit`` the JVM memory.

A size may instead name a Spark standalone master (Spark's "Spark Standalone Mode"):
``{"sa-4": {"master": "spark://HOST:7077", "executors": 2, "cores": 1, "memory": "1g",
"secret_file": "spark-cluster/secret"}}``. Its replicas run their driver (the Spark Connect
server) on this host and ``executors`` executors of ``cores`` cores and ``memory`` each on
the cluster's workers; ``secret_file`` holds the cluster's ``spark.authenticate.secret``
(``sqlfront spark-cluster up`` writes it), ``driver_host`` the address of this host the
executors reach the driver at (default 127.0.0.1: workers on this host only), and
``memory_limit`` stays the driver's memory.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace

from catalog.errors import SqlError, INVALID_PARAMETER_VALUE


@dataclass(frozen=True)
class ReplicaSize:
    """Resources of one replica size.

    Attributes:
        name: the size name users write in ``SIZE '...'``.
        workers: Spark cores per process (>= 1).
        scale: number of executor processes (>= 1).
        cpu_limit: recorded and shown; not enforced.
        memory_limit: JVM memory in MiB, or None for Spark's default.
        alias_of: the size this name is another name of, or None.
        master: a Spark standalone master (``spark://HOST:PORT``): ``scale`` executors of
            ``workers`` cores run on its workers; None for a local replica.
        executor_memory: MiB per standalone executor (None: Spark's default, 1 GiB).
        secret_file: the file holding the standalone cluster's authentication secret.
        driver_host: the address standalone executors reach the replica's driver at.
    """

    name: str
    workers: int
    scale: int = 1
    cpu_limit: float | None = None
    memory_limit: int | None = None
    alias_of: str | None = None
    master: str | None = None
    executor_memory: int | None = None
    secret_file: str | None = None
    driver_host: str = "127.0.0.1"


#: Materialize's size names (its docs' "Appendix: Cluster sizes": the credit sizes
#: ``25cc`` .. ``3200cc`` and the legacy ``xsmall`` .. ``2xlarge``) that the default map
#: accepts, by the size of ours each one is an alias of (cores double with each step)
DEFAULT_ALIASES = {
    "1": ("25cc", "50cc", "3xsmall", "2xsmall", "xsmall"),
    "2": ("100cc", "small"),
    "4": ("200cc", "medium"),
    "8": ("300cc", "400cc", "large"),
    "16": ("600cc", "800cc", "xlarge"),
    "32": ("1200cc", "1600cc", "3200cc", "2xlarge"),
}


def default_sizes() -> dict[str, ReplicaSize]:
    """The seed's default map ("1" .. "32" cores, "2-1" .. "2-4" two processes), with
    Materialize's size names as aliases (``DEFAULT_ALIASES``)."""
    sizes = {str(n): ReplicaSize(str(n), workers=n) for n in (1, 2, 4, 8, 16, 32)}
    for w in (1, 2, 4):
        sizes[f"2-{w}"] = ReplicaSize(f"2-{w}", workers=w, scale=2)
    return _with_aliases(sizes, DEFAULT_ALIASES)


def _with_aliases(sizes: dict[str, ReplicaSize], aliases: dict[str, tuple[str, ...]]) -> dict[str, ReplicaSize]:
    """``sizes`` plus an entry per alias, with the resources of the size it aliases
    (and its own name: a replica shows the name its user gave).

    Raises:
        ValueError for an alias that names a size of the map, or two sizes."""
    out = dict(sizes)
    for name, names in aliases.items():
        for alias in names:
            if alias in out:
                raise ValueError(f"size {name!r}: alias {alias!r} is already a size name")
            out[alias] = replace(sizes[name], name=alias, alias_of=name)
    return out


_MEM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.I)
_UNIT_MIB = {"": 1024, "b": 1 / (1024 * 1024), "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}


def parse_memory(v) -> int | None:
    """Memory limit in MiB from ``4096`` (a bare number is GiB, as in the seed's cloud map: ``8``),
    ``"4GiB"``, ``"512MiB"``, ``"2G"``.
    """
    if v is None:
        return None
    if isinstance(v, (int, float)):
        return int(v * 1024)
    m = _MEM.match(str(v))
    if not m:
        raise ValueError(f"invalid memory_limit {v!r}")
    unit = (m.group(2) or "").lower()[:1]
    return max(1, int(float(m.group(1)) * _UNIT_MIB[unit]))


def parse_sizes(spec: str) -> dict[str, ReplicaSize]:
    """Parse ``--cluster-replica-sizes``: a JSON object, or the path of a file holding one.

    Raises:
        ValueError with a message naming the bad entry.
    """
    text = spec
    if not spec.lstrip().startswith("{") and os.path.exists(spec):
        with open(spec) as f:
            text = f.read()
    raw = json.loads(text)
    if not isinstance(raw, dict) or not raw:
        raise ValueError("--cluster-replica-sizes must be a non-empty JSON object")
    sizes = {}
    aliases: dict[str, tuple[str, ...]] = {}
    for name, cfg in raw.items():
        names = cfg.get("aliases", ())
        if isinstance(names, str) or not all(isinstance(a, str) for a in names):
            raise ValueError(f"size {name!r}: aliases must be a list of size names")
        aliases[name] = tuple(names)
        sizes[name] = _standalone_size(name, cfg) if "master" in cfg else _local_size(name, cfg)
    return _with_aliases(sizes, aliases)


def _local_size(name: str, cfg: dict) -> ReplicaSize:
    workers = int(cfg.get("workers", 1))
    scale = int(cfg.get("scale", 1))
    if workers < 1 or scale < 1:
        raise ValueError(f"size {name!r}: workers and scale must be at least 1")
    cpu = cfg.get("cpu_limit")
    return ReplicaSize(name, workers=workers, scale=scale, cpu_limit=float(cpu) if cpu is not None else None,
                       memory_limit=parse_memory(cfg.get("memory_limit")))


def _standalone_size(name: str, cfg: dict) -> ReplicaSize:
    """A size on a Spark standalone master (see the module doc)."""
    master = cfg["master"]
    if not isinstance(master, str) or not re.fullmatch(r"spark://[^/\s]+:\d+", master):
        raise ValueError(f"size {name!r}: master must be spark://HOST:PORT, got {master!r}")
    unknown = set(cfg) - {"master", "executors", "cores", "memory", "memory_limit", "cpu_limit", "secret_file",
                          "driver_host", "aliases"}
    if unknown:
        raise ValueError(f"size {name!r}: a standalone size takes no {', '.join(sorted(unknown))}")
    executors = int(cfg.get("executors", 1))
    cores = int(cfg.get("cores", 1))
    if executors < 1 or cores < 1:
        raise ValueError(f"size {name!r}: executors and cores must be at least 1")
    secret_file = cfg.get("secret_file")
    if secret_file is not None and (not isinstance(secret_file, str) or not os.access(secret_file, os.R_OK)):
        raise ValueError(f"size {name!r}: secret_file must be a readable file, got {secret_file!r}")
    cpu = cfg.get("cpu_limit")
    return ReplicaSize(name, workers=cores, scale=executors, cpu_limit=float(cpu) if cpu is not None else None,
                       memory_limit=parse_memory(cfg.get("memory_limit")), master=master,
                       executor_memory=parse_memory(cfg.get("memory")),
                       secret_file=os.path.abspath(secret_file) if secret_file else None,
                       driver_host=str(cfg.get("driver_host", "127.0.0.1")))


def validate_size(sizes: dict[str, ReplicaSize], size: str) -> ReplicaSize:
    """The ReplicaSize named ``size``.

    Raises:
        SqlError 22023 listing the valid sizes (Materialize: "unknown cluster replica size").
    """
    if size not in sizes:  # Materialize's docs write '100CC' for its size 100cc
        size = next((k for k in sizes if k.lower() == size.lower()), size)
    try:
        return sizes[size]
    except KeyError:
        valid = ", ".join(sorted((n for n, s in sizes.items() if s.alias_of is None), key=_size_order))
        raise SqlError(
            INVALID_PARAMETER_VALUE,
            f"unknown cluster replica size {size}",
            detail=f"Valid sizes are: {valid}",
        ) from None


def _size_order(name: str):
    parts = re.findall(r"\d+|\D+", name)
    return [(0, int(p)) if p.isdigit() else (1, p) for p in parts]
