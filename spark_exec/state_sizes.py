"""How much state each maintained object holds on a replica: the bytes of the blocks in
the replica's Spark block manager that its dataflow or its arrangement keeps, read from
the replica's Spark UI REST API (Materialize's ``mz_internal.mz_object_arrangement_sizes``,
``sqlfront.controller.compute.arrangement_size_rows``).

A dataflow's state is its checkpoints (``dataflow.checkpoint``: ``localCheckpoint``, a
persisted RDD, ``Disk Memory Deserialized``), an index's on a table the cached units of
Parquet parts (``arrangements``: Spark's cache, an ``In-memory table`` RDD). Spark lists
every persisted RDD in ``/api/v1/applications/<app>/storage/rdd`` with ``memoryUsed`` and
``diskUsed``, but names none after its owner (a checkpoint's RDD is a bare
``MapPartitionsRDD``), and a Spark Connect client cannot name an RDD. So the work that
builds an object's state runs tagged (``state_tag``: Spark Connect's ``addTag``, carried
by every job the thread starts): the RDDs of the stages of an object's tagged jobs
(``/jobs``' ``jobTags`` and ``stageIds``, ``/stages``' ``rddIds``) are its; an RDD seen in
the jobs of several objects is the one's whose job came first (the one that built it), but
one a table's parts' fill touches is the table's parts' (``parts_key``): a cached relation
is registered before its fill runs, so a dataflow reading the table in between builds it
under its own tag, and no fill touches a dataflow's checkpoint.

Spark's UI keeps the last ``spark.ui.retainedJobs`` jobs and ``spark.ui.retainedStages``
stages (1,000 each; a round of a GROUP BY's dataflow is about 6 stages): an RDD is
attributed the first time it is looked at (the answer is kept, ``StateSizes``; the compute
controller looks every 30 s), so one whose jobs left that window before any look is
attributed to nothing and left out.

A checkpoint no dataflow refers to any more (a spine's merged batches, a dropped view's
state) is unpersisted by Spark's ContextCleaner only once the replica JVM's garbage
collector has collected the RDD (at the latest at ``spark.cleaner.periodicGC.interval``,
30 minutes): until then its bytes are in the block manager, and counted for its object.

Nothing here touches a Spark session but ``state_tag``; the REST calls have a timeout,
so a hung replica costs its caller that long, no more.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: the Spark Connect tag (``SparkSession.addTag``) of the work that builds an object's
#: state is this prefix and the object's id
TAG_PREFIX = "sqlfront-state-"
#: how Spark Connect shows a user's tag in a job's ``jobTags``:
#: ``SparkConnect_SessionTag_User_<user>_Session_<session>_Tag_<tag>``
_USER_TAG = "_Tag_"
#: ``parts_key``'s prefix
_PARTS_PREFIX = "parts-of-"


def parts_key(table_id: str) -> str:
    """The key (``state_tag``'s ``object_id``) of the cached parts of table ``table_id``
    (``arrangements``): the state of the indexes that cover it, shared by them."""
    return f"{_PARTS_PREFIX}{table_id}"


@contextmanager
def state_tag(session, object_id: str):
    """Every Spark job this thread starts on ``session`` inside the block builds
    ``object_id``'s state (tags are the client thread's: other threads are untouched)."""
    tag = TAG_PREFIX + object_id
    session.addTag(tag)
    try:
        yield
    finally:
        session.removeTag(tag)


@dataclass(frozen=True)
class ObjectState:
    """What one object holds on one replica: ``bytes`` in memory and on the replica's
    local disk (a checkpoint spills to it when memory is short), in ``batches`` RDDs."""

    bytes: int
    batches: int


class StateSizes:
    """Reads objects' state sizes from replicas' Spark UIs, keeping each RDD's owner once
    found (per Spark application: a restarted replica is a new one). Thread-safe."""

    def __init__(self, timeout_s: float = 2.0):
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        #: (UI address, application id) -> RDD id -> its object's id
        self._owners: dict[tuple[str, str], dict[int, str]] = {}

    def sizes(self, ui_url: str) -> dict[str, ObjectState]:
        """Object id -> its state on the replica whose Spark UI is at ``ui_url``
        (``http://HOST:PORT``); objects holding nothing are left out.

        Raises:
            OSError, ValueError: the UI did not answer within ``timeout_s`` per request,
            or answered something else than Spark's REST API."""
        apps = self._get(ui_url, "/applications")
        if not apps:
            return {}
        app = apps[0]["id"]
        rdds = self._get(ui_url, f"/applications/{app}/storage/rdd")
        key = (ui_url, app)
        with self._lock:
            owners = dict(self._owners.get(key, {}))
        live = {r["id"] for r in rdds}
        if live - set(owners):
            owners.update(self._find_owners(ui_url, app, live - set(owners)))
        owners = {rid: obj for rid, obj in owners.items() if rid in live}  # the rest are gone
        with self._lock:
            self._owners = {k: v for k, v in self._owners.items() if k[0] != ui_url}
            self._owners[key] = owners
        out: dict[str, ObjectState] = {}
        for r in rdds:
            obj = owners.get(r["id"])
            if obj is None:
                continue
            got = out.get(obj, ObjectState(0, 0))
            out[obj] = ObjectState(got.bytes + int(r.get("memoryUsed", 0)) + int(r.get("diskUsed", 0)), got.batches + 1)
        return out

    def _find_owners(self, ui_url: str, app: str, rdd_ids: set[int]) -> dict[int, str]:
        """RDD id -> object id for those of ``rdd_ids`` that a tagged job's stages touch."""
        # an owner's rank: a parts' fill first, then the earliest job
        stage_owner: dict[int, tuple[tuple[bool, int], str]] = {}
        for job in self._get(ui_url, f"/applications/{app}/jobs"):
            obj = object_of_tags(job.get("jobTags", ()))
            if obj is None:
                continue
            rank = (not obj.startswith(_PARTS_PREFIX), job["jobId"])
            for sid in job.get("stageIds", ()):
                if sid not in stage_owner or rank < stage_owner[sid][0]:
                    stage_owner[sid] = (rank, obj)
        found: dict[int, tuple[tuple[bool, int], str]] = {}
        for stage in self._get(ui_url, f"/applications/{app}/stages"):
            owner = stage_owner.get(stage["stageId"])
            if owner is None:
                continue
            for rid in rdd_ids.intersection(stage.get("rddIds", ())):
                if rid not in found or owner[0] < found[rid][0]:
                    found[rid] = owner
        return {rid: obj for rid, (_, obj) in found.items()}

    def _get(self, ui_url: str, path: str):
        with urllib.request.urlopen(f"{ui_url}/api/v1{path}", timeout=self.timeout_s) as r:
            return json.load(r)


def object_of_tags(tags) -> str | None:
    """The object whose state a job with Spark job tags ``tags`` builds, None if none."""
    for t in tags:
        at = t.find(_USER_TAG + TAG_PREFIX)
        if at >= 0:
            return t[at + len(_USER_TAG + TAG_PREFIX):]
    return None
