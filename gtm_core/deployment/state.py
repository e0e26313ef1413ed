"""The deployment's state file and key file (format, sealing, validation, durable writes).

See :mod:`gtm_core.deployment` for the format, the integrity and threat model and the write
protocol. Everything here is a pure function of its arguments except the writers and the
crash-test fault point (:data:`fault_hook`, None in normal use)."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Callable

from ..errors import StateError
from ..files import TEMPORARY_SUFFIX, write_atomic
from ..inputs import parse_json
from .body import StateBody, body_config_and_plan, status_of


STATE_FORMAT = "gtm-deployment-state"
STATE_VERSION = 2  # 2: exact sampling (eta_1 stored as its drawn bits); 1: float64 eta_1 (refused)
KEY_HEADER = "gtm-deployment-key v1 "
MAX_STATE_BYTES = 256 * 1024 * 1024
V1_REFUSAL = (
    "is a version-1 state whose eta_1 was drawn by the float64 sampler; it cannot be made exact "
    "after the fact, so this version refuses to resume it: retire it and start a new deployment "
    "with 'gtm deploy init' (a new, separately accounted privacy expense)"
)

# Fault-injection point for the crash tests: called with a point name at every step of the
# write protocol. None in normal use.
fault_hook: Callable[[str], None] | None = None


def fault_point(point: str) -> None:
    """Crash-test fault injection: call :data:`fault_hook` (if set) with the protocol point's name."""
    if fault_hook is not None:
        fault_hook(point)


def canonical_body(body: dict) -> bytes:
    """The canonical bytes of a state body (sorted keys, no spaces, ASCII): what SHA-256 and the HMAC cover."""
    try:
        return json.dumps(
            body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
        ).encode("ascii")
    except (TypeError, ValueError) as exc:  # a bug, never user input
        raise StateError(f"state body is not serialisable: {type(exc).__name__}") from None


def write_private_atomic(path: Path, data: bytes, *, exclusive: bool) -> None:
    """:func:`gtm_core.files.write_atomic` with mode 0600 and the crash-test fault points;
    ``exclusive`` publishes with ``os.link`` (refuses an existing ``path``)."""
    try:
        write_atomic(path, data, mode=0o600, exclusive=exclusive, hook=fault_point)
    except FileExistsError:
        if not exclusive:
            raise
        raise StateError(f"refusing to overwrite existing file {str(path)!r}") from None


def temporary_name_pattern(path: Path) -> re.Pattern:
    """The names of ``path``'s own temporaries exactly: ``.NAME.<random>.tmp``, where <random> is
    :func:`tempfile.mkstemp`'s 8 characters from ``[a-z0-9_]`` (no dot), so ``.a.b.<random>.tmp``
    (a temporary of the file ``a.b``) is not one of ``a``'s. A test checks that
    :func:`gtm_core.files.write_atomic`'s temporaries match this pattern."""
    return re.compile(re.escape(f".{path.name}.") + r"[a-z0-9_]{8}" + re.escape(TEMPORARY_SUFFIX))


def remove_stale_temporaries(path: Path) -> None:
    """Remove temporary files a killed writer left next to ``path`` (they may hold eta_1).

    Called only while the deployment lock is held, so no writer is active.
    """
    own = temporary_name_pattern(path)
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if own.fullmatch(name):
            try:
                os.unlink(path.parent / name)
            except OSError:
                pass


def check_private_file(path: Path, what: str) -> os.stat_result:
    """stat a state or key file; refuse one that is missing, not regular, or accessible by group or others."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise StateError(f"{what} not found: {str(path)!r}") from None
    except OSError as exc:
        raise StateError(f"cannot access {what} {str(path)!r}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise StateError(f"{what} is not a regular file: {str(path)!r}")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise StateError(
            f"{what} {str(path)!r} is accessible by group or others (mode {mode:04o}); "
            "its secret may have leaked (chmod 600 only if you are sure it did not)"
        )
    return st


def read_key(key_path: Path) -> bytes:
    """The 32-byte HMAC key of a key file (header ``gtm-deployment-key v1`` + hex), checked private."""
    check_private_file(key_path, "key file")
    try:
        text = key_path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        raise StateError(f"key file {str(key_path)!r} is unreadable or corrupted") from None
    if not text.startswith(KEY_HEADER):
        raise StateError(f"key file {str(key_path)!r} is corrupted (bad header)")
    try:
        key = bytes.fromhex(text[len(KEY_HEADER):].strip())
    except ValueError:
        raise StateError(f"key file {str(key_path)!r} is corrupted (not hexadecimal)") from None
    if len(key) != 32:
        raise StateError(f"key file {str(key_path)!r} is corrupted (wrong key length)")
    return key


def seal(body: dict, key: bytes, *, fmt: str = STATE_FORMAT, version: int = STATE_VERSION) -> bytes:
    """The state file bytes of a body: format, version, body, its SHA-256 and HMAC-SHA256 under ``key``."""
    raw = canonical_body(body)
    doc = {
        "format": fmt,
        "version": version,
        "body": body,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "hmac_sha256": hmac.new(key, raw, hashlib.sha256).hexdigest(),
    }
    return (json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")


def unseal(data: bytes, key: bytes, path: Path, *, fmt: str = STATE_FORMAT, version: int = STATE_VERSION,
           kind: str = "gtm deployment state") -> dict:
    """The body of state file bytes, after checking format, version, SHA-256 and HMAC (StateError otherwise)."""
    where = repr(str(path))
    doc, body, raw = open_envelope(data, where, fmt=fmt, version=version, kind=kind)
    mac = doc.get("hmac_sha256")
    if not isinstance(mac, str):
        raise StateError(f"state file {where} is corrupted (missing body or checksums)")
    if not hmac.compare_digest(hmac.new(key, raw, hashlib.sha256).hexdigest(), mac):
        raise StateError(f"state file {where} was tampered with or does not match its key file")
    return body


def open_envelope(data: bytes | str, where: str, *, fmt: str, version: int, kind: str) -> tuple[dict, dict, bytes]:
    """Parse a JSON state envelope ``{"format", "version", "body", "sha256", ...}`` and check its format,
    version and the SHA-256 of its canonical body; returns (envelope, body, canonical body bytes).
    StateError naming the file ``where`` (and what it should be, ``kind``) otherwise."""
    try:
        doc = parse_json(data, what=f"state file {where}", error=StateError)
    except StateError:
        raise StateError(f"state file {where} is corrupted (not a JSON document)") from None
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise StateError(f"state file {where} is not a {kind}")
    if fmt == STATE_FORMAT and doc.get("version") == 1:
        raise StateError(f"state file {where} {V1_REFUSAL}")
    if doc.get("version") != version:
        raise StateError(f"state file {where} has unsupported version {doc.get('version')!r}")
    body, digest = doc.get("body"), doc.get("sha256")
    if not isinstance(body, dict) or not isinstance(digest, str):
        raise StateError(f"state file {where} is corrupted (missing body or checksums)")
    try:
        raw = canonical_body(body)
    except StateError:
        raise StateError(f"state file {where} is corrupted (body not canonical)") from None
    if not hmac.compare_digest(hashlib.sha256(raw).hexdigest(), digest):
        raise StateError(f"state file {where} is corrupted (checksum mismatch)")
    return doc, body, raw


def read_state_body_unchecked(path) -> dict:
    """Test helper: the body of a state file *without* authentication (holds eta_1)."""
    return json.loads(Path(path).read_text())["body"]


# -- the state-file protocol shared by every persisted run (deployments, BatchToCO) --------------


def resolve_state_paths(path, key_path=None) -> tuple[Path, Path, Path]:
    """(state, key, lock) paths of a state file, links resolved once with ``realpath``.

    The lock, every write and the temporary files then all use the real file: two names (a
    symlink and its target) are one run, and a write never replaces a symlink by a regular file
    (which would leave the old state behind as a resumable fork). The key file defaults to
    ``STATE.key`` and must differ from the state file."""
    if not isinstance(path, (str, os.PathLike)) or str(path) in ("", ".") or "\x00" in str(path):
        raise StateError(f"state path must be a non-empty file path, got {path!r}")
    p = Path(os.path.realpath(path))
    k = Path(str(p) + ".key") if key_path is None else key_path
    if not isinstance(k, (str, os.PathLike)) or str(k) in ("", ".") or "\x00" in str(k):
        raise StateError(f"key path must be a non-empty file path, got {key_path!r}")
    k = Path(os.path.realpath(k))
    if k == p:
        raise StateError("the key file must be a different file from the state file")
    return p, k, Path(str(p) + ".lock")


def _flock(fd: int, path: Path, in_use: str, *, shared: bool = False) -> None:
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise StateError(in_use) from None
        raise StateError(f"cannot lock {str(path)!r}: {exc.strerror}") from None


def lock_state(lock_path: Path, what: str = "deployment") -> int:
    """An exclusive, non-blocking ``flock`` on ``STATE.lock`` (created 0600); the descriptor.
    StateError if another process or handle holds it. The kernel releases it when the holder dies."""
    parent = lock_path.parent
    if not parent.is_dir():
        raise StateError(f"state directory does not exist: {str(parent)!r}")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StateError(f"cannot create lock file {str(lock_path)!r}: {exc.strerror}") from None
    _flock(fd, lock_path, f"{what} {str(lock_path)[:-5]!r} is in use by another process or handle")
    return fd


def lock_key_file(key_path: Path, what: str = "deployment", *, shared: bool = False) -> int:
    """An exclusive ``flock`` on the key file too: it is written once and never replaced or
    renamed, so deleting or recreating ``STATE.lock`` while a run is open cannot let a second
    process in. Opened read-only (a read-only file system still locks); ``shared=True`` is a
    reader's lock (refused while a writer holds the exclusive one)."""
    try:
        fd = os.open(key_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise StateError(f"key file not found: {str(key_path)!r}") from None
    except OSError as exc:
        raise StateError(f"cannot open key file {str(key_path)!r}: {exc.strerror}") from None
    _flock(fd, key_path, f"the {what} of key file {str(key_path)!r} is in use by another process or handle",
           shared=shared)
    return fd


def create_key_file(key_path: Path) -> bytes:
    """Write a new key file (32 random bytes from the OS, 0600, never over an existing file); the key."""
    key = secrets.token_bytes(32)
    write_private_atomic(key_path, (KEY_HEADER + key.hex() + "\n").encode("ascii"), exclusive=True)
    return key


def read_sealed(path: Path, key: bytes, *, fmt: str = STATE_FORMAT, version: int = STATE_VERSION,
                kind: str = "gtm deployment state") -> dict:
    """The authenticated body of the state file at ``path`` (checked private, bounded, SHA-256 and
    HMAC under ``key``); StateError otherwise."""
    st = check_private_file(path, "state file")
    if st.st_size > MAX_STATE_BYTES:
        raise StateError(f"state file {str(path)!r} is implausibly large ({st.st_size} bytes)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StateError(f"cannot read state file {str(path)!r}: {exc.strerror}") from None
    return unseal(data, key, path, fmt=fmt, version=version, kind=kind)


# -- the certificate a deployment was released under ---------------------------------------------


def read_certificate(path, key_path=None) -> dict | None:
    """The certificate record of the deployment at ``path`` (authenticated), or None."""
    path, key_path, _ = resolve_state_paths(path, key_path)
    certificate = StateBody.from_dict(read_sealed(path, read_key(key_path)), repr(str(path))).certificate
    return None if certificate is None else dict(certificate)


# -- the public status, and a read-only view of it ------------------------------------------------


def state_is_read_only(path, key_path=None) -> bool:
    """True if the state's directory cannot be written (a read-only file system or no write
    permission): creating ``STATE.lock`` would fail, so only a read-only view is possible."""
    real, _, _ = resolve_state_paths(path, key_path)
    directory = real.parent
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return True
    except OSError:
        return False
    return not os.access(directory, os.W_OK | os.X_OK)


def read_only_status(path, key_path=None) -> dict:
    """The public status of the deployment at ``path`` without writing anything (no lock file is
    created): a shared ``flock`` on the key file (refused while a process has the deployment
    open), then the checks of :meth:`Deployment.open`. A step found pending is reported
    (``pending_step``), not recovered: the next writable open records it as failed."""
    path, key_path, _ = resolve_state_paths(path, key_path)
    if not os.path.lexists(path):
        raise StateError(f"no deployment state at {str(path)!r}")
    fd = lock_key_file(key_path, shared=True)
    try:
        where = repr(str(path))
        body = StateBody.from_dict(read_sealed(path, read_key(key_path)), where)
        config, plan = body_config_and_plan(body, where, "")
        certificate = None if body.certificate is None else dict(body.certificate)
        return {**status_of(path, body, config, plan), "certificate": certificate,
                "pending_step": body.pending_step}
    finally:
        os.close(fd)
