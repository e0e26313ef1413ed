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
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ..config import GTMConfig
from ..errors import GTMError, InvalidParameter, StateError
from ..exact_sampling import LazyUniform, SystemBits
from ..files import TEMPORARY_SUFFIX, write_atomic
from ..inputs import parse_json
from ..planners import Plan, make_plan, uncached_step_plan
from ..reference import NOT_FOR_DEPLOYMENT
from ..validation import is_integer
from .certificate_record import CERTIFICATE_FIELD, certificate_of, check_certificate_record


STATE_FORMAT = "gtm-deployment-state"
STATE_VERSION = 2  # 2: exact sampling (eta_1 stored as its drawn bits); 1: float64 eta_1 (refused)
KEY_HEADER = "gtm-deployment-key v1 "
MAX_STATE_BYTES = 256 * 1024 * 1024
_STATUSES = ("running", "halted", "failed")
FAILURE_KINDS = (
    "mechanism_error",
    "mechanism_timeout",
    "evaluation_budget_exceeded",
    "interrupted",
    "crashed_during_step",
    "state_write_failed",
    "precision_limit_exceeded",
)

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


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (the state's timestamps)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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


def plan_identity(plan: Plan) -> dict:
    """The plan's global parameters stored in the state (a resumed deployment must plan the same)."""
    return {
        "parameterization": plan.parameterization,
        "tau1": float(plan.tau1),
        "mu1": float(plan.mu1),
        "epsilon": None if plan.epsilon is None else float(plan.epsilon),
        "evaluation_budget": plan.budget_policy,
    }


OLD_BUDGET_POLICY_REFUSAL = (
    "was created by a gtm that always refused steps over their evaluation budget: such a run is "
    "(epsilon, delta)-DP, not the pure epsilon-DP it was labelled, so this version refuses to resume it "
    "as pure; retire it and start a new deployment with 'gtm deploy init' (docs/deployment.md)"
)


def validate_body(body: dict, where: str) -> None:
    """Shape and consistency of an authenticated body (a bug or a key holder could still
    produce a malformed one)."""

    def bad(what: str):
        raise StateError(f"state file {where} is inconsistent: {what}")

    def is_int(v):
        return is_integer(v)

    required = {
        "deployment_id": str, "config": dict, "config_sha256": str, "plan": dict, "secret": dict, "seeded": bool,
        "status": str, "steps_done": int, "transcript": list, "evaluations_total": int,
        "generation": int, "created_utc": str, "updated_utc": str,
    }
    for name, typ in required.items():
        if name not in body:
            bad(f"missing field {name!r}")
        if not isinstance(body[name], typ) or (typ is int and isinstance(body[name], bool)):
            bad(f"field {name!r} has the wrong type")
    for name in ("pending_step", "halted_at", "failure"):
        if name not in body:
            bad(f"missing field {name!r}")
    if not re.fullmatch(r"[0-9a-f]{32}", body["deployment_id"]):
        bad("malformed deployment id")
    bits = body["secret"].get("eta1_bits")
    if set(body["secret"]) != {"eta1_bits"} or not isinstance(bits, str):
        bad("the stored noise is not a bit string")
    try:
        LazyUniform.from_hex(bits, SystemBits())
    except InvalidParameter:
        bad("the stored noise is not a valid bit string")
    if body["status"] not in _STATUSES:
        bad(f"unknown status {body['status']!r}")
    done = body["steps_done"]
    if done < 0 or body["evaluations_total"] < 0 or body["generation"] < 1:
        bad("negative counter")
    pending, halted_at, failure = body["pending_step"], body["halted_at"], body["failure"]
    if pending is not None and (not is_int(pending) or pending != done + 1 or body["status"] != "running"):
        bad("pending step does not follow the committed steps")
    runs = body["transcript"]
    continues = halts = 0
    for i, run in enumerate(runs):
        if (not isinstance(run, list) or len(run) != 2 or run[0] not in ("continue", "halt")
                or not is_int(run[1]) or run[1] < 1):
            bad("malformed transcript")
        if run[0] == "continue":
            if i != 0:
                bad("malformed transcript")
            continues += run[1]
        else:
            if i != len(runs) - 1 or run[1] != 1:
                bad("malformed transcript")
            halts += 1
    if continues + halts != done:
        bad("transcript length differs from the committed steps")
    if body["status"] == "halted":
        if halts != 1 or halted_at != done:
            bad("halted state without a final halt")
    elif halts or halted_at is not None:
        bad("a halt in the transcript of a non-halted state")
    if body["status"] == "failed":
        if (not isinstance(failure, dict) or failure.get("kind") not in FAILURE_KINDS
                or failure.get("step") != done + 1 or not isinstance(failure.get("reason"), str)):
            bad("failed state without a valid failure record")
    elif failure is not None:
        bad("a failure record in a non-failed state")
    if body.get(CERTIFICATE_FIELD) is not None:
        check_certificate_record(body[CERTIFICATE_FIELD], body["config_sha256"], where)


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
    body = read_sealed(path, read_key(key_path))
    validate_body(body, repr(str(path)))
    return certificate_of(body)


# -- the public status, and a read-only view of it ------------------------------------------------


def status_of(path: Path, body: dict, config: GTMConfig, plan: Plan) -> dict:
    """Everything public about a deployment (no eta_1, N_t, K_t or evaluation counts): the status
    of :meth:`gtm_core.deployment.Deployment.status_dict`."""
    b = body
    done = b["steps_done"]
    horizon = config.stream.horizon
    f = b["failure"]
    out = {
        "state_file": str(path),
        "deployment_id": b["deployment_id"],
        "status": b["status"],
        "steps_done": done,
        "next_step": None if b["status"] != "running" or done >= horizon else done + 1,
        "horizon": horizon,
        "horizon_reached": b["status"] == "running" and done >= horizon,
        "halted_at": b["halted_at"],
        "failure": None if f is None else dict(f),
        "transcript": [list(r) for r in b["transcript"]],
        "config_sha256": b["config_sha256"],
        "plan": dict(b["plan"]),
        "privacy": plan.privacy_statement(),
        "privacy_delta": plan.privacy_delta(),
        "seeded": b["seeded"],
        "note": NOT_FOR_DEPLOYMENT if b["seeded"] else None,
        "generation": b["generation"],
        "created_utc": b["created_utc"],
        "updated_utc": b["updated_utc"],
    }
    if out["next_step"] is not None:
        sp = uncached_step_plan(config, done + 1)
        out["next_step_plan"] = {
            "t": sp.t, "s": sp.s, "c": sp.c, "eps_t": sp.eps_t, "p_star": sp.p_star,
            "evaluation_budget": sp.evaluation_budget,
            "evaluation_budget_enforced": plan.enforced_budget(sp) is not None,
            "budget_exceed_probability": sp.budget_exceed_probability,
        }
    return out


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


def body_config_and_plan(body: dict, where: str, resume_note: str) -> tuple[GTMConfig, Plan]:
    """The configuration a validated state body holds and its plan, re-derived by this version of
    gtm: refused if the configuration is invalid, does not match its SHA-256, predates the budget
    policy, or plans differently now (``resume_note`` is appended to that last message)."""
    try:
        config = GTMConfig.from_dict(body["config"])
    except GTMError:
        raise StateError(f"state file {where} holds an invalid configuration") from None
    if config.digest() != body["config_sha256"]:
        raise StateError(f"state file {where}: configuration does not match its SHA-256")
    plan = make_plan(config)
    if "evaluation_budget" not in body["plan"]:
        raise StateError(f"state file {where} {OLD_BUDGET_POLICY_REFUSAL}")
    if plan_identity(plan) != body["plan"]:
        raise StateError(f"state file {where}: this version of gtm plans the configuration differently "
                         f"(tau1/mu1/epsilon changed){resume_note}")
    return config, plan


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
        body = read_sealed(path, read_key(key_path))
        validate_body(body, where)
        config, plan = body_config_and_plan(body, where, "")
        return {**status_of(path, body, config, plan), "certificate": certificate_of(body),
                "pending_step": body["pending_step"]}
    finally:
        os.close(fd)
