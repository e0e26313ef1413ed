"""Crash-safe persistence of a BatchToCO run (``gtm co run --state``).

The state file holds the whole run object - the problem's dataset X_t, Y_cur, the level, the
active GTM instance (its eta_1 included) and the random generator's state - so every random
quantity is drawn exactly once: a resumed run continues with the *same* generator state and
never re-draws noise that an earlier attempt may already have used.

Write-ahead protocol per update t:
    1. state := {steps_done: t-1, pending: t, run}   (atomic replace + fsync, before any work)
    2. run step t (draws noise, evaluates A, releases Y_t)
    3. state := {steps_done: t, pending: none, run}  (atomic replace + fsync)
    4. print Y_t
A crash between 1 and 3 leaves ``pending = t``: opening such a state raises
:class:`~gtm_core.errors.StateError` ("crashed during step t") - the run is failed, never
replayed with fresh noise (a replay would be an unaccounted second draw). A crash between 3
and 4 loses only the printing; ``released`` in the state keeps every Y_t.

The state file is the secret store (it contains eta_1): it is created 0600 and a state readable
by group or others is refused. It is a pickle guarded by a SHA-256 of its body (detects torn or
corrupted writes); like any secret store it must only be readable and writable by its owner -
loading a state file from an untrusted source is unsafe (pickle).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
import tempfile
from pathlib import Path

from ..errors import StateError

MAGIC = b"gtm-batchtoco-state-v1\n"


def save(path: Path, doc: dict) -> None:
    body = pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL)
    data = MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
    parent = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        dfd = os.open(parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def load(path: Path) -> dict:
    where = repr(str(path))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise StateError(f"state file {where} does not exist") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise StateError(f"state file {where} is accessible by group or others; it holds secrets (chmod 600)")
    data = Path(path).read_bytes()
    if not data.startswith(MAGIC):
        raise StateError(f"state file {where} is not a BatchToCO state")
    rest = data[len(MAGIC):]
    digest, sep, body = rest.partition(b"\n")
    if not sep or hashlib.sha256(body).hexdigest().encode() != digest:
        raise StateError(f"state file {where} is corrupted (checksum mismatch)")
    doc = pickle.loads(body)  # noqa: S301 - our own 0600 secret store, checksummed
    if doc.get("pending") is not None:
        raise StateError(f"state file {where}: the run crashed during update {doc['pending']}; "
                         "it is failed and will not be replayed with fresh noise")
    if doc.get("failed"):
        raise StateError(f"state file {where}: the run failed at {doc['failed']}; it cannot continue")
    return doc
