"""Which Blob goes with which Consensus: checked at start, so that processes sharing one
and not the other are refused at once instead of failing every read of another process's
write later ("Path does not exist: .../blob/...parquet", issue 27).

A Consensus has an id and names its Blob (``Consensus.claim``: the first claim wins); a
Blob names its Consensus and its own id in a file at its root (``BLOB_MARKER``; no shard:
``Blob.list_keys`` lists shard folders only). The Blob's id is drawn by the process whose
claim wins, which then writes the marker; another process that starts at the same moment
with the same Blob waits up to ``MARKER_WAIT_S`` for the marker to appear.

Ids, not paths, are compared: the same path on two hosts is two Blobs unless both mount
one file system, and two paths (a mount point, a symlink) may be one Blob.
"""

from __future__ import annotations

import json
import time
import uuid

from persist.blob import Blob
from persist.consensus import Consensus

#: the Blob's marker: ``{"blob": id, "consensus": id, "url": where its first process saw it}``
BLOB_MARKER = "sqlfront-blob-id"
#: Consensus claims: its own id, and the marker of its Blob
CONSENSUS_ID_CLAIM = "consensus_id"
BLOB_CLAIM = "blob"
#: how long a process whose Blob has no marker yet waits for the claim's winner to write it
MARKER_WAIT_S = 10.0


class BlobMismatch(Exception):
    """The Blob and the Consensus of this process do not go together; the message says
    which flag to give."""


def bind_blob(consensus: Consensus, blob: Blob, blob_flag: str = "--persist-blob-url",
              consensus_flag: str = "--persist-consensus-url", wait_s: float = MARKER_WAIT_S) -> None:
    """Check (and on first use record) that ``blob`` is the Blob of ``consensus``.

    Raises:
        BlobMismatch when ``blob`` belongs to another Consensus (a shared Blob with a
        private Consensus) or ``consensus`` to another Blob (a shared Consensus with a
        private Blob), naming ``blob_flag`` / ``consensus_flag``."""
    consensus_id = consensus.claim(CONSENSUS_ID_CLAIM, uuid.uuid4().hex)
    here = blob.url(BLOB_MARKER).removesuffix("/" + BLOB_MARKER)
    marker = _marker(blob)
    if marker is not None and marker["consensus"] != consensus_id:
        raise BlobMismatch(
            f"the persist Blob at {here} belongs to another persist Consensus (first used at {marker['url']}): "
            f"processes that share a Blob must share its Consensus too (the same {consensus_flag} postgres://...)")
    proposal = marker or {"blob": uuid.uuid4().hex, "consensus": consensus_id, "url": here}
    recorded = json.loads(consensus.claim(BLOB_CLAIM, json.dumps(proposal, sort_keys=True)))
    if marker is None and recorded == proposal:
        blob.put(BLOB_MARKER, json.dumps(recorded, sort_keys=True).encode())
        return
    deadline = time.monotonic() + wait_s
    while marker is None and time.monotonic() < deadline:  # the claim's winner may be writing it now
        time.sleep(0.2)
        marker = _marker(blob)
    if marker is None or marker["blob"] != recorded["blob"]:
        raise BlobMismatch(
            f"the persist Consensus is shared with processes whose Blob is {recorded['url']}, but this "
            f"process's Blob ({here}) is another one: give every process that shares {consensus_flag} the same "
            f"{blob_flag} (a directory all of them see, the same mount on every host)")


def _marker(blob: Blob) -> dict | None:
    data = blob.get(BLOB_MARKER)
    return json.loads(data) if data else None
