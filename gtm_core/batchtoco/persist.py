"""Crash-safe persistence of a BatchToCO run (``gtm co run --state``), as a checksummed JSON file.

The state file holds what determines the run - the configuration, the vertex set, the updates
processed, the outputs released, and the entropy of the random generator's seed sequence - never
a pickled object (a user-writable file is only ever parsed as JSON). A resumed run rebuilds the
run by replaying the stored updates from the same seed: it re-derives the very same noise (every
random quantity is still drawn exactly once as far as the released outputs are concerned) and
checks that the replay releases exactly the stored outputs (:func:`replay_matches`), else the
state is refused.

Write-ahead protocol per update t:
    1. state := {steps_done: t-1, pending: t}   (atomic replace + fsync, before any work)
    2. run step t (draws noise, evaluates A, releases Y_t)
    3. state := {steps_done: t, pending: none}  (atomic replace + fsync)
    4. print Y_t
A crash between 1 and 3 leaves ``pending = t``: opening such a state raises
:class:`~gtm_core.errors.StateError` ("crashed during update t") - the run is failed, never
continued (step t's noise may already have been used). A crash between 3 and 4 loses only the
printing; ``released`` in the state keeps every Y_t.

The state file is the secret store (the seed entropy determines every noise value, eta_1
included): it is written 0600 through :func:`gtm_core.deployment.state.write_private_atomic`, and a
state accessible by group or others is refused (:func:`gtm_core.deployment.state.check_private_file`).
Its body is canonical JSON guarded by a SHA-256 (detects torn or corrupted writes; like the
deployment state without a key file there is no HMAC, so it does not authenticate the file).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..deployment.state import canonical_body, check_private_file, open_envelope, write_private_atomic
from ..errors import StateError
from ..inputs import read_text_file

STATE_FORMAT = "gtm-batchtoco-state"
STATE_VERSION = 2
MAX_STATE_BYTES = 256 * 1024 * 1024


def save(path: Path, body: dict) -> None:
    """Write ``body`` (JSON-serialisable) as the state file at ``path``: 0600, atomic, fsync'ed."""
    raw = canonical_body(body)
    doc = {"format": STATE_FORMAT, "version": STATE_VERSION, "body": body,
           "sha256": hashlib.sha256(raw).hexdigest()}
    data = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"
    write_private_atomic(Path(path), data.encode("ascii"), exclusive=False)


def load(path: Path) -> dict:
    """The body of the state file at ``path``; StateError if it is missing, shared, not a BatchToCO
    state, corrupted, crashed mid-update or failed."""
    path = Path(path)
    where = repr(str(path))
    check_private_file(path, "state file")
    text = read_text_file(path, what="state file", max_bytes=MAX_STATE_BYTES, error=StateError)
    _, body, _ = open_envelope(text, where, fmt=STATE_FORMAT, version=STATE_VERSION, kind="BatchToCO state")
    if body.get("pending") is not None:
        raise StateError(f"state file {where}: the run crashed during update {body['pending']}; "
                         "it is failed and will not be continued")
    if body.get("failed"):
        raise StateError(f"state file {where}: the run failed at {body['failed']}; it cannot continue")
    return body
