"""A persisted, crash-safe GTM deployment.

A GTM deployment runs for a long time (continual observation, hyperparameter search). Its
shared noise eta_1 must be drawn **once**: a process that restarts and draws a fresh eta_1
silently spends the privacy budget again, and a step that is re-run with fresh noise after its
mechanism was evaluated is a second, unaccounted draw of the randomness the proof charges for
once. :class:`Deployment` keeps everything that must survive a restart in one file the user
names, and runs Algorithm 1's steps under a write-ahead protocol so that no crash can cause
either of these.

State file
----------
One JSON document (the *state*), holding: the configuration and its SHA-256, the plan's global
parameters (tau_1, mu_1, epsilon, parameterisation) as a plan identity, **eta_1** (the only
secret; see below), the number of committed steps, the status (``running``, ``halted``,
``failed``) with the failure (step, kind, reason), the *pending* step (write-ahead record), the
public transcript (run-length encoded: it is ``continue`` until the single ``halt``, so it has
constant size), the total number of mechanism evaluations (sensitive), the seeded flag, a
generation counter and timestamps.

It is written atomically: a temporary file in the same directory (mode 0600), written, fsync'ed,
renamed over the old state (``os.replace``; the first write uses ``os.link`` so that an existing
state is never overwritten), then the directory is fsync'ed. A reader therefore sees either the
old or the new state, never a mixture, also after a power loss.

**The state file is the secret store.** It necessarily contains eta_1 (a deployment that did
not store it could not resume without redrawing it). It is created with permissions 0600 and
:meth:`Deployment.open` refuses a state file or key file that is readable by group or others
(eta_1 may have leaked; retire the deployment or, if you are sure it did not, ``chmod 600``).
Nothing else in the package prints, logs or returns eta_1, eta_{2,t}, N_t or K_t.

Integrity and threat model
--------------------------
The state carries a SHA-256 of its canonical JSON body and an HMAC-SHA256 of the same bytes,
keyed by 32 random bytes from the operating system stored in a separate *key file*
(``STATE.key`` by default, 0600, or a path of your choice, e.g. on another volume).

* Detected: torn or partial writes, truncation, bit flips, a file that is not a state at all
  (SHA-256 mismatch: "corrupted"); edits by anyone who cannot read the key file, and a state
  file swapped in from *another* deployment (HMAC mismatch: "tampered or wrong key"). Both are
  refused with :class:`StateError`; a refused state is never re-initialised.
* Not detected: an attacker who can read the key file (they can forge any state), and a
  *rollback* of the state file to an earlier copy of itself (e.g. a restore from backup): it is
  validly authenticated, would resume at an earlier step and re-run later steps with fresh
  noise. Do not back up and restore state files; if you must, record ``generation`` and
  ``steps_done`` from ``gtm deploy status --json`` in an external log after every run and compare.

Concurrency: an open deployment holds an exclusive ``flock`` on ``STATE.lock``; a second process
(or a second :meth:`Deployment.open` in the same process) is refused. The kernel releases the
lock when the holder dies, so a crash never leaves the deployment locked.

Step protocol (write-ahead) and why a crash mid-step fails the deployment
------------------------------------------------------------------------
Step t runs as::

    1. plan step t; draw eta_{2,t} and N_t               (noise only, no data touched, nothing written)
       N_t > evaluation budget?  -> write status=failed(evaluation_budget_exceeded); stop
    2. write state with pending_step = t                  (durable before any evaluation)
    3. evaluate the mechanism N_t times, count K_t        (the only phase that touches the data)
    4. decide a_t; write state with steps_done = t, transcript += a_t, pending_step = none
    5. return a_t to the caller                           (only after it is durable)

A crash (SIGKILL, power loss) is handled on the next :meth:`Deployment.open`:

* before 2 is durable: the old state is intact, the mechanism was not evaluated, nothing was
  released; step t runs again later with fresh eta_{2,t}, N_t. Discarding noise that never met
  the data costs no privacy.
* after 2 and before 4 is durable: the state says ``pending_step = t``. The mechanism may have
  been evaluated (we cannot know how far it got), so the deployment enters its terminal
  *failed* state (kind ``crashed_during_step``) and step t is never run again.
* after 4: the step is committed, exactly once.

Why not replay step t (with the same recorded noise or with fresh noise)? The privacy proof
charges for *one* evaluation of step t: one K_t ~ Bin(N_t, p_t) turned into one bit. If a crash
can trigger a re-evaluation, whoever can cause or time crashes (a mechanism that crashes on some
inputs, an operator who kills the process when a side channel suggests "halt", an OOM killer)
gets several independent K_t's on the same data and keeps the outcome they like: repeated until
success this leaks p_t without bound, with fresh noise or with the same recorded noise alike.
Failing the deployment caps every step at one evaluation; the price is availability: a crash
mid-step ends the deployment (the operator starts a new one, which is a new, separately
accounted privacy expense). The same argument makes every mechanism fault terminal:

Mechanism faults
----------------
A mechanism that raises, returns something other than +1/-1 (or a bool), or exceeds the step's
time limit puts the deployment into its terminal failed state (kinds ``mechanism_error``,
``mechanism_timeout``), recorded in the state file before the error reaches the caller. An
interruption of the evaluation (KeyboardInterrupt, SystemExit) fails it too (``interrupted``).
Retrying the step would re-evaluate the mechanism on the same data (see above). The evaluation
budget of Lemma 22 (N_t > ``StepPlan.evaluation_budget``) is enforced in phase 1, before any
evaluation (kind ``evaluation_budget_exceeded``); its probability is the one the planner reports,
``StepPlan.budget_exceed_probability``. The bit "failed at step t" is itself released; it is
covered by the guarantee only if faults do not depend on the data (a mechanism whose failures
depend on the data leaks through them, as in any DP system).

A Python callable cannot be forcibly stopped: with a time limit it runs in a daemon thread,
and on timeout the deployment is failed and the thread abandoned (its results are ignored).
:class:`CommandMechanism` runs the mechanism as a subprocess and kills it on timeout.

Exact sampling (state version 2)
--------------------------------
Every random quantity of a step - eta_1, eta_{2,t}, N_t and purification's flips - is drawn
exactly from random bits (:mod:`gtm_core.exact_sampling`; no float decides an outcome). eta_1 is
a lazily refined random real: the state stores its drawn bits (``secret.eta1_bits``, a
fixed-width hex string, so the file size does not reveal how many bits were drawn). A step that
needs more bits of eta_1 appends to them in phase 1, and they are persisted by the write-ahead
record (phase 2) before the mechanism runs; bits lost in a crash before phase 2 never met the
data, and drawing them afresh leaves the joint law unchanged (they are uniform given the
stored prefix). The stored prefix is never redrawn. A version-1 state (eta_1 drawn by the
float64 sampler) is refused: it cannot be made exact after the fact. See docs/deployment.md.

Randomness
----------
Without a seed every bit comes from the operating system's CSPRNG (:class:`SystemBits`). A
caller-supplied numpy generator or seed (bits from it: reproducible) marks the deployment
``seeded`` (sticky: the flag is stored and stays set for the life of the deployment), and every
output (``repr``, status, JSON, CLI) then carries :data:`NOT_FOR_DEPLOYMENT`.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import hmac
import json
import logging
import os
import secrets as _secrets
import select
import shlex
import stat
import subprocess
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import __version__
from . import planners as _planners
from .config import GTMConfig
from .errors import (
    EvaluationBudgetExceeded,
    GTMError,
    HaltedError,
    InvalidParameter,
    MechanismError,
    StateError,
)
from .exact_sampling import (
    BitSource,
    GeneratorBits,
    LazyUniform,
    PrecisionLimitExceeded,
    SeededBits,
    SharedNoise,
    SystemBits,
)
from .planners import Plan, StepPlan, make_plan
from .reference import GTM, NOT_FOR_DEPLOYMENT, _count_positive

__all__ = [
    "Deployment",
    "CommandMechanism",
    "MechanismTimeout",
    "check_time_limit",
    "NOT_FOR_DEPLOYMENT",
    "STATE_FORMAT",
    "STATE_VERSION",
]

logger = logging.getLogger("gtm_core.deployment")

STATE_FORMAT = "gtm-deployment-state"
STATE_VERSION = 2  # 2: exact sampling (eta_1 stored as its drawn bits); 1: float64 eta_1 (refused)
_KEY_HEADER = "gtm-deployment-key v1 "
_MAX_STATE_BYTES = 256 * 1024 * 1024
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

# Fault-injection point for the crash tests: called with a point name at every step of the
# write protocol. None in normal use.
_fault_hook: Callable[[str], None] | None = None


def _fault(point: str) -> None:
    if _fault_hook is not None:
        _fault_hook(point)


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _canonical(body: dict) -> bytes:
    try:
        return json.dumps(
            body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
        ).encode("ascii")
    except (TypeError, ValueError) as exc:  # a bug, never user input
        raise StateError(f"state body is not serialisable: {type(exc).__name__}") from None


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write(path: Path, data: bytes, *, exclusive: bool) -> None:
    """Temporary file in the same directory (0600), write, fsync, rename, fsync the directory.

    ``exclusive`` publishes with ``os.link`` (fails if ``path`` exists) instead of ``os.replace``.
    """
    directory = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            _fault("write:tmp_written")
            os.fsync(fd)
        finally:
            os.close(fd)
        _fault("write:tmp_fsynced")
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise StateError(f"refusing to overwrite existing file {str(path)!r}") from None
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
        _fault("write:renamed")
        _fsync_dir(directory)
        _fault("write:dir_fsynced")
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _remove_stale_temporaries(path: Path) -> None:
    """Remove temporary files a killed writer left next to ``path`` (they may hold eta_1).

    Called only while the deployment lock is held, so no writer is active.
    """
    prefix = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix) and name.endswith(".tmp"):
            try:
                os.unlink(path.parent / name)
            except OSError:
                pass


def _check_private(path: Path, what: str) -> os.stat_result:
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


def _read_key(key_path: Path) -> bytes:
    _check_private(key_path, "key file")
    try:
        text = key_path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        raise StateError(f"key file {str(key_path)!r} is unreadable or corrupted") from None
    if not text.startswith(_KEY_HEADER):
        raise StateError(f"key file {str(key_path)!r} is corrupted (bad header)")
    try:
        key = bytes.fromhex(text[len(_KEY_HEADER):].strip())
    except ValueError:
        raise StateError(f"key file {str(key_path)!r} is corrupted (not hexadecimal)") from None
    if len(key) != 32:
        raise StateError(f"key file {str(key_path)!r} is corrupted (wrong key length)")
    return key


def _seal(body: dict, key: bytes) -> bytes:
    raw = _canonical(body)
    doc = {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "body": body,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "hmac_sha256": hmac.new(key, raw, hashlib.sha256).hexdigest(),
    }
    return (json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")


def _unseal(data: bytes, key: bytes, path: Path) -> dict:
    where = repr(str(path))
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise StateError(f"state file {where} is corrupted (not a JSON document)") from None
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise StateError(f"state file {where} is not a gtm deployment state")
    if doc.get("version") == 1:
        raise StateError(
            f"state file {where} is a version-1 state whose eta_1 was drawn by the float64 sampler; "
            "it cannot be made exact after the fact, so this version refuses to resume it: retire "
            "it and start a new deployment with 'gtm deploy init' (a new, separately accounted "
            "privacy expense)"
        )
    if doc.get("version") != STATE_VERSION:
        raise StateError(f"state file {where} has unsupported version {doc.get('version')!r}")
    body, digest, mac = doc.get("body"), doc.get("sha256"), doc.get("hmac_sha256")
    if not isinstance(body, dict) or not isinstance(digest, str) or not isinstance(mac, str):
        raise StateError(f"state file {where} is corrupted (missing body or checksums)")
    try:
        raw = _canonical(body)
    except StateError:
        raise StateError(f"state file {where} is corrupted (body not canonical)") from None
    if not hmac.compare_digest(hashlib.sha256(raw).hexdigest(), digest):
        raise StateError(f"state file {where} is corrupted (checksum mismatch)")
    if not hmac.compare_digest(hmac.new(key, raw, hashlib.sha256).hexdigest(), mac):
        raise StateError(f"state file {where} was tampered with or does not match its key file")
    return body


def _step_plan(config: GTMConfig, t: int) -> StepPlan:
    """Plan step t without the planner's LRU cache (a deployment plans each step once; the
    cache would grow with the number of steps)."""
    name = config.gtm.parameterization
    _planners._load_optional_planner(name)
    fn = _planners.STEP_PLANNERS.get(name)
    if fn is None:
        return make_plan(config).step(t)  # raises UnsupportedConfiguration
    return _planners.checked_step_plan(fn, config, t)


def _plan_identity(plan: Plan) -> dict:
    return {
        "parameterization": plan.parameterization,
        "tau1": float(plan.tau1),
        "mu1": float(plan.mu1),
        "epsilon": None if plan.epsilon is None else float(plan.epsilon),
    }


MAX_TIME_LIMIT = 1e7  # seconds (~116 days); beyond this the platform's timers overflow


def check_time_limit(time_limit, name: str = "time_limit") -> float | None:
    """None (no limit) or a number of seconds in (0, MAX_TIME_LIMIT]."""
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)):
        raise InvalidParameter(f"{name} must be a number of seconds, got {time_limit!r}")
    if not (0 < time_limit <= MAX_TIME_LIMIT):
        raise InvalidParameter(f"{name} must be a number of seconds in (0, {MAX_TIME_LIMIT:g}], got {time_limit!r}")
    return float(time_limit)


class _Timeout(Exception):
    pass


class MechanismTimeout(MechanismError):
    """A mechanism did not answer within its time limit."""


def _evaluate(mechanism: Callable, data: Any, n: int, time_limit: float | None,
              abort: Callable[[], None] | None) -> int:
    """K_t: count the +1 outputs of n evaluations, within ``time_limit`` seconds if given."""
    if time_limit is None:
        return _count_positive(mechanism, data, n)
    box: dict = {}

    def work():
        try:
            box["k"] = _count_positive(mechanism, data, n)
        except BaseException as exc:  # handed to the caller's thread below
            box["exc"] = exc

    worker = threading.Thread(target=work, name="gtm-mechanism", daemon=True)
    worker.start()
    worker.join(time_limit)
    if worker.is_alive():
        if abort is not None:
            try:
                abort()
            except Exception:
                pass
        raise _Timeout()
    if "exc" in box:
        exc = box["exc"]
        if isinstance(exc, MechanismError):
            raise exc
        raise MechanismError(f"mechanism raised {type(exc).__name__}") from None
    return box["k"]


def _validate_body(body: dict, where: str) -> None:
    """Shape and consistency of an authenticated body (a bug or a key holder could still
    produce a malformed one)."""

    def bad(what: str):
        raise StateError(f"state file {where} is inconsistent: {what}")

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    required = {
        "config": dict, "config_sha256": str, "plan": dict, "secret": dict, "seeded": bool,
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


class Deployment:
    """A GTM deployment whose state lives in a user-named file (see the module docstring).

    Use :meth:`create` once, then :meth:`open` to resume (in any later process). Both return an
    open deployment holding the state's lock; use it as a context manager or call :meth:`close`.
    """

    def __init__(self, *_args, **_kwargs):
        raise TypeError("use Deployment.create(path, config) or Deployment.open(path)")

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def _new(cls, path: Path, key_path: Path, key: bytes, body: dict, config: GTMConfig,
             plan: Plan, source: BitSource, lock_fd: int) -> "Deployment":
        self = object.__new__(cls)
        self._path, self._key_path, self._key = path, key_path, key
        self._body, self._config, self._plan = body, config, plan
        self._source, self._lock_fd = source, lock_fd
        self._broken = False
        noise = SharedNoise.from_secret_hex(body["secret"]["eta1_bits"], plan.tau1, plan.mu1, source)
        self._gtm = GTM._restore_exact(source, noise, steps_taken=body["steps_done"])
        return self

    def _secret(self) -> dict:
        """eta_1's drawn bits as stored (fixed width)."""
        return {"eta1_bits": self._gtm._noise.secret_hex()}

    @staticmethod
    def _paths(path, key_path) -> tuple[Path, Path, Path]:
        if not isinstance(path, (str, os.PathLike)) or str(path) in ("", ".") or "\x00" in str(path):
            raise StateError(f"state path must be a non-empty file path, got {path!r}")
        p = Path(path)
        k = Path(str(p) + ".key") if key_path is None else key_path
        if not isinstance(k, (str, os.PathLike)) or str(k) in ("", ".") or "\x00" in str(k):
            raise StateError(f"key path must be a non-empty file path, got {key_path!r}")
        k = Path(k)
        if os.path.abspath(k) == os.path.abspath(p):
            raise StateError("the key file must be a different file from the state file")
        return p, k, Path(str(p) + ".lock")

    @staticmethod
    def _lock(lock_path: Path) -> int:
        parent = lock_path.parent
        if not parent.is_dir():
            raise StateError(f"state directory does not exist: {str(parent)!r}")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StateError(f"cannot create lock file {str(lock_path)!r}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StateError(
                    f"deployment {str(lock_path)[:-5]!r} is in use by another process or handle"
                ) from None
            raise StateError(f"cannot lock {str(lock_path)!r}: {exc.strerror}") from None
        return fd

    @staticmethod
    def _rng_for(rng, seed) -> tuple[BitSource, bool]:
        """(bit source, seeded): the OS CSPRNG unless a generator or seed is given."""
        if rng is not None and seed is not None:
            raise InvalidParameter("pass either rng or seed, not both")
        if rng is not None:
            if not isinstance(rng, np.random.Generator):
                raise InvalidParameter(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
            return GeneratorBits(rng), True
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InvalidParameter(f"seed must be a non-negative integer, got {seed!r}")
        return (SystemBits(), False) if seed is None else (SeededBits(seed), True)

    @classmethod
    def create(cls, path, config: GTMConfig, *, key_path=None, rng: np.random.Generator | None = None,
               seed: int | None = None) -> "Deployment":
        """Create a new deployment at ``path``: plan it, draw eta_1 once, write the state.

        Refuses (:class:`StateError`) if a state or key file already exists there. Without
        ``rng``/``seed`` the generator is seeded from the operating system.
        """
        if not isinstance(config, GTMConfig):
            raise InvalidParameter(f"config must be a GTMConfig, got {type(config).__name__}")
        path, key_path, lock_path = cls._paths(path, key_path)
        rng, seeded = cls._rng_for(rng, seed)
        plan = make_plan(config)  # refuses an unplannable configuration before touching disk
        if not key_path.parent.is_dir():
            raise StateError(f"key directory does not exist: {str(key_path.parent)!r}")
        lock_fd = cls._lock(lock_path)
        try:
            if os.path.lexists(path):
                raise StateError(f"a deployment state already exists at {str(path)!r}; open it instead")
            if os.path.lexists(key_path):
                raise StateError(
                    f"key file {str(key_path)!r} already exists but no state does (left by an "
                    "interrupted create?); remove it if it belongs to no deployment"
                )
            for d in {path.parent, key_path.parent}:
                if not os.access(d, os.W_OK | os.X_OK):
                    raise StateError(f"directory is not writable: {str(d)!r}")
            _remove_stale_temporaries(path)
            _remove_stale_temporaries(key_path)
            gtm = GTM(rng)
            gtm.init(plan.tau1, plan.mu1)  # GTM.Init: eta_1 ~ Exp(tau_1), the one and only draw
            now = _utc_now()
            body = {
                "config": config.to_dict(),
                "config_sha256": config.digest(),
                "plan": _plan_identity(plan),
                "secret": {"eta1_bits": gtm._noise.secret_hex()},
                "seeded": bool(seeded),
                "status": "running",
                "steps_done": 0,
                "pending_step": None,
                "halted_at": None,
                "failure": None,
                "transcript": [],
                "evaluations_total": 0,
                "generation": 1,
                "created_utc": now,
                "updated_utc": now,
                "gtm_version": __version__,
            }
            key = _secrets.token_bytes(32)
            try:
                _atomic_write(key_path, (_KEY_HEADER + key.hex() + "\n").encode("ascii"), exclusive=True)
                _fault("create:key_written")
                _atomic_write(path, _seal(body, key), exclusive=True)
            except StateError:
                raise
            except OSError as exc:
                if not os.path.lexists(path):
                    try:
                        os.unlink(key_path)
                    except OSError:
                        pass
                raise StateError(f"cannot write deployment state {str(path)!r}: {exc.strerror}") from None
            _fault("create:state_written")
            dep = cls._new(path, key_path, key, body, config, plan, rng, lock_fd)
        except BaseException:
            os.close(lock_fd)
            raise
        logger.info("created deployment %s (config sha256 %s, %s)%s", path, body["config_sha256"][:12],
                    plan.parameterization, f" [{NOT_FOR_DEPLOYMENT}]" if seeded else "")
        return dep

    @classmethod
    def open(cls, path, *, key_path=None, rng: np.random.Generator | None = None,
             seed: int | None = None) -> "Deployment":
        """Resume the deployment stored at ``path``.

        Refuses a missing, corrupted, tampered, inconsistent or world-readable state with
        :class:`StateError`. A step found pending (the previous process died mid-step) puts the
        deployment into its terminal failed state (kind ``crashed_during_step``), durably,
        before this returns.
        """
        path, key_path, lock_path = cls._paths(path, key_path)
        if not os.path.lexists(path):
            raise StateError(f"no deployment state at {str(path)!r}")
        rng, seeded_now = cls._rng_for(rng, seed)
        lock_fd = cls._lock(lock_path)
        try:
            st = _check_private(path, "state file")
            if st.st_size > _MAX_STATE_BYTES:
                raise StateError(f"state file {str(path)!r} is implausibly large ({st.st_size} bytes)")
            key = _read_key(key_path)
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise StateError(f"cannot read state file {str(path)!r}: {exc.strerror}") from None
            where = repr(str(path))
            body = _unseal(data, key, path)
            _validate_body(body, where)
            try:
                config = GTMConfig.from_dict(body["config"])
            except GTMError:
                raise StateError(f"state file {where} holds an invalid configuration") from None
            if config.digest() != body["config_sha256"]:
                raise StateError(f"state file {where}: configuration does not match its SHA-256")
            plan = make_plan(config)
            if _plan_identity(plan) != body["plan"]:
                raise StateError(
                    f"state file {where}: this version of gtm plans the configuration differently "
                    "(tau1/mu1/epsilon changed); refusing to resume with different parameters"
                )
            _remove_stale_temporaries(path)
            dep = cls._new(path, key_path, key, body, config, plan, rng, lock_fd)
        except BaseException:
            os.close(lock_fd)
            raise
        try:
            if seeded_now and not body["seeded"]:
                dep._write({**body, "seeded": True})
            if body["pending_step"] is not None:
                t = body["pending_step"]
                logger.warning("deployment %s: the previous process died during step %d; "
                               "the deployment is now failed", path, t)
                dep._fail(t, "crashed_during_step",
                          f"the process running step {t} died after the step's write-ahead record; "
                          "the mechanism may have been evaluated, so the step is never re-run")
        except BaseException:
            dep.close()
            raise
        logger.info("opened deployment %s at step %d (%s)", path, body["steps_done"], dep.status)
        return dep

    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the lock. The state on disk is always up to date; closing writes nothing."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    @property
    def closed(self) -> bool:
        return self._lock_fd is None

    def __enter__(self) -> "Deployment":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # -- public (non-secret) view ---------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self._path

    @property
    def config(self) -> GTMConfig:
        return self._config

    @property
    def plan(self) -> Plan:
        return self._plan

    @property
    def status(self) -> str:
        """``running``, ``halted`` or ``failed``."""
        return self._body["status"]

    @property
    def steps_done(self) -> int:
        """Number of committed steps."""
        return self._body["steps_done"]

    @property
    def next_step(self) -> int:
        return self._body["steps_done"] + 1

    @property
    def halted(self) -> bool:
        return self._body["status"] == "halted"

    @property
    def failed(self) -> bool:
        return self._body["status"] == "failed"

    @property
    def halted_at(self) -> int | None:
        return self._body["halted_at"]

    @property
    def failure(self) -> dict | None:
        """``{"step", "kind", "reason"}`` of a failed deployment (public, contains no secret)."""
        f = self._body["failure"]
        return None if f is None else dict(f)

    @property
    def seeded(self) -> bool:
        return self._body["seeded"]

    @property
    def generation(self) -> int:
        return self._body["generation"]

    @property
    def transcript(self) -> list[tuple[str, int]]:
        """The public transcript, run-length encoded: ``[("continue", k), ("halt", 1)]``."""
        return [(sym, n) for sym, n in self._body["transcript"]]

    def public_transcript(self) -> list[int]:
        """The transcript as outputs a_t in the original orientation: -1 continue, +1 halt."""
        out: list[int] = []
        for sym, n in self._body["transcript"]:
            out.extend([1 if sym == "halt" else -1] * n)
        return out

    @property
    def evaluations_total(self) -> int:
        """Total mechanism evaluations of committed steps. **Sensitive** (a function of the
        noise N_t): for cost accounting by the curator only, never publish it."""
        return self._body["evaluations_total"]

    def status_dict(self) -> dict:
        """Everything public about the deployment (no eta_1, N_t, K_t or evaluation counts)."""
        b = self._body
        done = b["steps_done"]
        horizon = self._config.stream.horizon
        out = {
            "state_file": str(self._path),
            "status": b["status"],
            "steps_done": done,
            "next_step": None if b["status"] != "running" or done >= horizon else done + 1,
            "horizon": horizon,
            "horizon_reached": b["status"] == "running" and done >= horizon,
            "halted_at": b["halted_at"],
            "failure": self.failure,
            "transcript": [list(r) for r in b["transcript"]],
            "config_sha256": b["config_sha256"],
            "plan": dict(b["plan"]),
            "seeded": b["seeded"],
            "note": NOT_FOR_DEPLOYMENT if b["seeded"] else None,
            "generation": b["generation"],
            "created_utc": b["created_utc"],
            "updated_utc": b["updated_utc"],
        }
        if out["next_step"] is not None:
            sp = _step_plan(self._config, done + 1)
            out["next_step_plan"] = {
                "t": sp.t, "s": sp.s, "c": sp.c, "eps_t": sp.eps_t, "p_star": sp.p_star,
                "evaluation_budget": sp.evaluation_budget,
                "budget_exceed_probability": sp.budget_exceed_probability,
            }
        try:
            out["state_bytes"] = os.stat(self._path).st_size
        except OSError:
            out["state_bytes"] = None
        return out

    def __repr__(self) -> str:
        note = f", {NOT_FOR_DEPLOYMENT}" if self._body["seeded"] else ""
        return (f"Deployment(path={str(self._path)!r}, status={self.status}, "
                f"steps_done={self.steps_done}{note})")

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("a Deployment cannot be pickled (it holds a secret and a lock)")

    # -- the step protocol -----------------------------------------------------------------------
    def step(self, mechanism: Callable, data: Any = None, *, time_limit: float | None = None) -> bool:
        """Run step t = ``next_step`` on mechanism M_t (an eps_t-DP map data -> +1/-1).

        Returns True if the GTM halted at this step. The outcome is durable before it is
        returned. Faults (see the module docstring) fail the deployment, durably, and raise
        :class:`MechanismError` / :class:`EvaluationBudgetExceeded`. ``time_limit`` bounds the
        mechanism's evaluations in seconds (None: no limit).
        """
        time_limit = check_time_limit(time_limit)
        self._check_can_step()
        if not callable(mechanism):
            raise MechanismError(f"mechanism must be callable, got {type(mechanism).__name__}")
        b = self._body
        t = b["steps_done"] + 1
        sp = _step_plan(self._config, t)
        eps_t, tau2, c, rho, s, budget = self._gtm._check_step(
            mechanism, sp.eps_t, sp.tau2, sp.c, sp.rho, sp.s, sp.evaluation_budget)

        # phase 1: the noise, exactly (no data touched, nothing durable yet; may refine eta_1)
        try:
            n = self._gtm._draw_count(eps_t, tau2, rho, s, budget)
        except PrecisionLimitExceeded:
            self._fail(t, "precision_limit_exceeded",
                       f"step {t}: a sampling decision needed more random bits than the sampler's cap")
            raise
        except EvaluationBudgetExceeded:
            self._fail(t, "evaluation_budget_exceeded",
                       f"step {t} needed more than its evaluation budget of {budget} evaluations "
                       f"(planner bound on this probability: {sp.budget_exceed_probability:.3g})")
            raise EvaluationBudgetExceeded(
                f"step {t} exceeded its evaluation budget of {budget}; the deployment is now failed"
            ) from None
        _fault("step:noise_drawn")

        # phase 2: write-ahead record (with eta_1's bits), durable before the mechanism sees the data
        self._write({**b, "pending_step": t, "secret": self._secret()})
        b = self._body
        _fault("step:pending_written")

        # phase 3: evaluate (the only phase that touches the data)
        abort = getattr(mechanism, "close", None)
        try:
            k_raw = _evaluate(mechanism, data, n, time_limit, abort if callable(abort) else None)
            k = self._gtm._step_fed_count(k_raw, n, sp)  # purification, flip: exact, on the count
        except (_Timeout, MechanismTimeout):
            limit = "its time limit" if time_limit is None else f"its time limit of {time_limit:g} s"
            self._fail(t, "mechanism_timeout", f"the mechanism exceeded {limit}")
            raise MechanismTimeout(
                f"step {t}: the mechanism exceeded {limit}; the deployment is now failed"
            ) from None
        except MechanismError as exc:
            self._fail(t, "mechanism_error", str(exc))
            raise MechanismError(f"step {t}: {exc}; the deployment is now failed") from None
        except BaseException as exc:
            self._fail(t, "interrupted", f"the evaluation was interrupted ({type(exc).__name__})")
            raise
        _fault("step:evaluated")

        # phase 4: decide and commit
        a = self._gtm._decide(k, c, s)
        halted = a == s
        runs = [list(r) for r in b["transcript"]]
        if runs and runs[-1][0] == "continue" and not halted:
            runs[-1][1] += 1
        else:
            runs.append(["halt" if halted else "continue", 1])
        self._write({
            **b,
            "pending_step": None,
            "steps_done": t,
            "status": "halted" if halted else "running",
            "halted_at": t if halted else None,
            "transcript": runs,
            "evaluations_total": b["evaluations_total"] + n,
        })
        _fault("step:committed")
        logger.debug("deployment %s: step %d committed (%s)", self._path, t, "halt" if halted else "continue")
        if halted:
            logger.info("deployment %s halted at step %d", self._path, t)
        return halted

    def _check_can_step(self) -> None:
        if self._lock_fd is None:
            raise StateError("the deployment is closed")
        if self._broken:
            raise StateError("a state write failed earlier; reopen the deployment")
        b = self._body
        if b["status"] == "failed":
            f = b["failure"]
            raise HaltedError(f"the deployment failed at step {f['step']} ({f['kind']}); no further steps")
        if b["status"] == "halted":
            raise HaltedError(f"the deployment halted at step {b['halted_at']}; no further steps")
        if b["steps_done"] >= self._config.stream.horizon:
            raise HaltedError(
                f"the deployment reached its horizon of {self._config.stream.horizon} steps without halting"
            )

    def _write(self, body: dict) -> None:
        """Persist ``body`` (generation + 1) atomically, then adopt it in memory."""
        new = {**body, "generation": body["generation"] + 1, "updated_utc": _utc_now()}
        try:
            _atomic_write(self._path, _seal(new, self._key), exclusive=False)
        except OSError as exc:
            self._broken = True
            raise StateError(f"cannot write deployment state {str(self._path)!r}: {exc.strerror}") from None
        self._body = new

    def _fail(self, t: int, kind: str, reason: str) -> None:
        """Enter the terminal failed state at step t, durably."""
        b = self._body
        self._write({**b, "status": "failed", "pending_step": None, "secret": self._secret(),
                     "failure": {"step": t, "kind": kind, "reason": reason}})
        self._gtm.failed = True
        logger.warning("deployment %s failed at step %d (%s)", self._path, t, kind)


class CommandMechanism:
    """A mechanism run as a command: one process per step, printing one output per line.

    The command (argv list or a string split with :func:`shlex.split`, no shell) is started
    when the step needs its first evaluation, with ``GTM_STEP=t`` in its environment; it must
    print independent mechanism outputs on the same data, one per line, ``+1``/``1`` or
    ``-1`` (it may print more than needed; it is killed once N_t lines were read). Exiting
    early, printing anything else, or not answering within ``time_limit`` seconds is a
    :class:`MechanismError`. The command's stderr is discarded.
    """

    def __init__(self, command, *, step: int | None = None, time_limit: float | None = None,
                 env: dict | None = None):
        if isinstance(command, str):
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                raise InvalidParameter(f"mechanism command cannot be parsed: {exc}") from None
        elif isinstance(command, (list, tuple)) and all(isinstance(a, str) for a in command):
            argv = list(command)
        else:
            raise InvalidParameter(f"mechanism command must be a string or a list of strings, got {command!r}")
        if not argv:
            raise InvalidParameter("mechanism command is empty")
        self.argv = argv
        self.step = step
        self.time_limit = check_time_limit(time_limit)
        self._env = env
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._aborted = False

    def __repr__(self) -> str:
        return f"CommandMechanism({shlex.join(self.argv)!r})"

    def __call__(self, data=None) -> int:
        arr = self.batch(data, 1)
        return int(arr[0])

    def batch(self, data, n: int) -> np.ndarray:
        env = dict(os.environ if self._env is None else self._env)
        if self.step is not None:
            env["GTM_STEP"] = str(self.step)
        deadline = None if self.time_limit is None else time.monotonic() + self.time_limit
        with self._lock:  # close() from another thread waits for Popen, then kills
            if self._aborted:
                raise MechanismTimeout("mechanism command was aborted")
            try:
                proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env)
            except OSError as exc:
                raise MechanismError(f"cannot start mechanism command {self.argv[0]!r}: {exc.strerror}") from None
            self._proc = proc
        out = np.empty(n, dtype=np.int8)
        try:
            fd = proc.stdout.fileno()
            buf, got = b"", 0
            while got < n:
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0 or not select.select([fd], [], [], left)[0]:
                        raise MechanismTimeout("mechanism command exceeded its time limit")
                chunk = os.read(fd, 65536)
                if not chunk:
                    if self._aborted:
                        raise MechanismTimeout("mechanism command was aborted")
                    raise MechanismError(f"mechanism command ended after {got} of the outputs it was asked for")
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if got == n:
                        break
                    token = line.strip()
                    if token in (b"+1", b"1"):
                        out[got] = 1
                    elif token == b"-1":
                        out[got] = -1
                    else:
                        raise MechanismError("mechanism command printed a line that is not +1 or -1")
                    got += 1
        finally:
            self._kill()
        return out

    def close(self) -> None:
        """Abort: kill the running command (if any) and refuse to start another one."""
        with self._lock:
            self._aborted = True
        self._kill()

    def _kill(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.kill()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            proc.stdout.close()
        except OSError:
            pass


def _read_state_body_unchecked(path) -> dict:
    """Test helper: the body of a state file *without* authentication (holds eta_1)."""
    return json.loads(Path(path).read_text())["body"]

