"""Crash-safe persistence of a BatchToCO run (``gtm co run --state``), with the deployment's guards.

The state file holds what determines the run - the configuration, the vertex set, the updates
processed, the outputs released, and the entropy of the random generator's seed sequence - never
a pickled object (a user-writable file is only ever parsed as JSON). A resumed run rebuilds the
run by replaying the stored updates from the same seed: it re-derives the very same noise (every
random quantity is still drawn exactly once as far as the released outputs are concerned) and
checks that the replay releases exactly the stored outputs, else the state is refused.

Write-ahead protocol per update t:
    1. state := {steps_done: t-1, pending: t}   (atomic replace + fsync, before any work)
    2. run step t (draws noise, evaluates A, releases Y_t)
    3. state := {steps_done: t, pending: none}  (atomic replace + fsync)
    4. print Y_t
A crash between 1 and 3 leaves ``pending = t``: opening such a state raises
:class:`~gtm_core.errors.StateError` ("crashed during update t") - the run is failed, never
continued (step t's noise may already have been used). A crash between 3 and 4 loses only the
printing; ``released`` in the state keeps every Y_t.

The state file is the secret store (the seed entropy determines every noise value). It uses the
state-file protocol of ``gtm deploy`` (:mod:`gtm_core.deployment.state`), not a second one:

* **links resolved once** (``realpath``): a symlinked state is written through to its target, so
  no regular-file copy is left behind as a resumable fork;
* **locked**: an exclusive ``flock`` on ``STATE.lock`` and on the key file for as long as the run
  is open, so two concurrent resumes of one state cannot both release update t;
* **authenticated**: SHA-256 and HMAC-SHA256 of the canonical body under a 32-byte key in a
  separate key file (``STATE.key``, 0600, written once); state and key files accessible by group
  or others are refused;
* **generation counter** and a public random ``run_id``: every write increments the generation,
  so an external log (``--generation-check``, :mod:`gtm_core.deployment.generation`) refuses a
  state restored from an older copy.

Version 2 states (SHA-256 only, no key file) are refused with a one-line message: they cannot be
authenticated after the fact.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from ..deployment.state import (
    MAX_STATE_BYTES,
    create_key_file,
    lock_key_file,
    lock_state,
    read_key,
    read_sealed,
    remove_stale_temporaries,
    resolve_state_paths,
    seal,
    write_private_atomic,
)
from ..deployment.handle import LockedStateHandle
from ..errors import StateError
from ..inputs import parse_json
from ..validation import is_integer

STATE_FORMAT = "gtm-batchtoco-state"
STATE_VERSION = 3  # 3: HMAC key file, lock, generation; 2: SHA-256 only (refused)
KIND = "BatchToCO state"
V2_REFUSAL = (
    "is a version-2 BatchToCO state (checksummed but not authenticated: no key file, no generation); "
    "this version refuses to resume it: start a new run with a new --state (a new privacy expense)"
)


class RunState(LockedStateHandle):
    """An open BatchToCO state file (locks held until :meth:`close`); use :meth:`create` or
    :meth:`open`, as a context manager."""

    def __init__(self, *_args, **_kwargs):
        raise TypeError("use RunState.create(path, body) or RunState.open(path)")

    @classmethod
    def _locked(cls, path, key_path) -> "RunState":
        self = object.__new__(cls)
        self.path, self.key_path, lock_path = resolve_state_paths(path, key_path)
        self._key_fd = None
        self._lock_fd = lock_state(lock_path, "BatchToCO run")
        self._body: dict = {}
        self._key = b""
        return self

    @classmethod
    def create(cls, path, body: dict, *, key_path=None) -> "RunState":
        """Write a new state (generation 1, a fresh key file); refuses an existing state or key file."""
        self = cls._locked(path, key_path)
        try:
            if os.path.lexists(self.path):
                raise StateError(f"a BatchToCO state already exists at {str(self.path)!r}")
            if os.path.lexists(self.key_path):
                raise StateError(f"key file {str(self.key_path)!r} already exists but no state does (left by an "
                                 "interrupted run?); remove it if it belongs to no run")
            remove_stale_temporaries(self.path)
            remove_stale_temporaries(self.key_path)
            self._key = create_key_file(self.key_path)
            new = {**body, "run_id": secrets.token_hex(16), "generation": 1}
            write_private_atomic(self.path, seal(new, self._key, fmt=STATE_FORMAT, version=STATE_VERSION),
                                 exclusive=True)
            self._body = new
            self._key_fd = lock_key_file(self.key_path, "BatchToCO run")
        except BaseException:
            self.close()
            raise
        return self

    @classmethod
    def open(cls, path, *, key_path=None) -> "RunState":
        """Open an existing state: locked, authenticated; StateError if it is missing, shared, not a
        BatchToCO state, an old unauthenticated version, corrupted, tampered, crashed mid-update or failed."""
        self = cls._locked(path, key_path)
        try:
            where = repr(str(self.path))
            if not os.path.lexists(self.path):
                raise StateError(f"state file not found: {str(self.path)!r}")
            if not os.path.lexists(self.key_path) and _is_version_2(self.path):
                raise StateError(f"state file {where} {V2_REFUSAL}")
            self._key = read_key(self.key_path)
            self._key_fd = lock_key_file(self.key_path, "BatchToCO run")
            body = read_sealed(self.path, self._key, fmt=STATE_FORMAT, version=STATE_VERSION, kind=KIND)
            check_body(body, where)
            remove_stale_temporaries(self.path)
            self._body = body
        except BaseException:
            self.close()
            raise
        return self

    @property
    def body(self) -> dict:
        return dict(self._body)

    @property
    def run_id(self) -> str:
        """A random public identifier drawn at creation (for external generation logs)."""
        return self._body["run_id"]

    @property
    def generation(self) -> int:
        return self._body["generation"]

    def save(self, body: dict) -> None:
        """Persist ``body`` (generation + 1): atomic, fsync'ed, 0600, through the resolved real path."""
        if self._lock_fd is None:
            raise StateError("the BatchToCO state is closed")
        new = {**body, "run_id": self.run_id, "generation": self.generation + 1}
        write_private_atomic(self.path, seal(new, self._key, fmt=STATE_FORMAT, version=STATE_VERSION),
                             exclusive=False)
        self._body = new


def check_body(body: dict, where: str) -> None:
    """The run-level fields of an authenticated body; a crashed or failed run is refused."""
    if not isinstance(body.get("run_id"), str) or not re.fullmatch(r"[0-9a-f]{32}", body["run_id"]):
        raise StateError(f"state file {where} is inconsistent: malformed run id")
    g = body.get("generation")
    if not is_integer(g) or g < 1:
        raise StateError(f"state file {where} is inconsistent: malformed generation")
    if body.get("pending") is not None:
        raise StateError(f"state file {where}: the run crashed during update {body['pending']}; "
                         "it is failed and will not be continued")
    if body.get("failed"):
        raise StateError(f"state file {where}: the run failed at {body['failed']}; it cannot continue")


def _is_version_2(path: Path) -> bool:
    """True if ``path`` is a version-2 state (parsed only to choose the refusal message)."""
    try:
        if os.stat(path).st_size > MAX_STATE_BYTES:
            return False
        doc = parse_json(Path(path).read_bytes(), what="state file", error=StateError)
    except (OSError, StateError):
        return False
    return isinstance(doc, dict) and doc.get("format") == STATE_FORMAT and doc.get("version") == 2
