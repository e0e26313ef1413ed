"""The :class:`Deployment`: create / open a persisted GTM and run Algorithm 1's steps under the
write-ahead protocol of :mod:`gtm_core.deployment`. The step itself is the reference GTM's
(:meth:`~gtm_core.reference.GTM.begin_step`, ``finish_step``, ``restore_exact``); this module
adds only persistence, the fault points and the failure records around it."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..config import GTMConfig
from ..errors import (
    EvaluationBudgetExceeded,
    HaltedError,
    InvalidParameter,
    MechanismError,
    MechanismTimeout,
    StateError,
)
from ..planners import Plan, make_plan, uncached_step_plan
from ..exact_sampling import BitSource, PrecisionLimitExceeded, SharedNoise
from ..reference import GTM, NOT_FOR_DEPLOYMENT, PendingStep, StepArguments, randomness
from .body import StateBody, body_config_and_plan, initial_body, status_of
from .certificate_record import check_certificate_record
from .handle import LockedStateHandle
from .mechanisms import abort_hook, check_time_limit, evaluate_count, start_mechanism
from .state import (
    MAX_STATE_BYTES,
    check_private_file,
    create_key_file,
    fault_point,
    lock_key_file,
    lock_state,
    read_key,
    remove_stale_temporaries,
    resolve_state_paths,
    seal,
    unseal,
    write_private_atomic,
)


logger = logging.getLogger("gtm_core.deployment")
# a library logs only to handlers its application configures: without this, Python's last-resort
# handler printed the warning to stderr, a second line beside `gtm: error: ...` (exit 2 is one line)
logger.addHandler(logging.NullHandler())

class Deployment(LockedStateHandle):
    """A GTM deployment whose state lives in a user-named file (see the module docstring).

    Use :meth:`create` once, then :meth:`open` to resume (in any later process). Both return an
    open deployment holding the state's lock; use it as a context manager or call :meth:`close`.
    """

    def __init__(self, *_args, **_kwargs):
        raise TypeError("use Deployment.create(path, config) or Deployment.open(path)")

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def _new(cls, path: Path, key_path: Path, key: bytes, body: StateBody, config: GTMConfig,
             plan: Plan, source: BitSource, lock_fd: int) -> "Deployment":
        noise = SharedNoise.from_secret_hex(body.eta1_bits, plan.tau1, plan.mu1, source)
        gtm = GTM.restore_exact(source, noise, steps_taken=body.steps_done)
        key_fd = lock_key_file(key_path)  # the caller closes lock_fd if anything above raises
        self = object.__new__(cls)
        self._path, self._key_path, self._key = path, key_path, key
        self._body, self._config, self._plan = body, config, plan
        self._source, self._lock_fd, self._key_fd = source, lock_fd, key_fd
        self._broken = self._abandoned = False
        self._gtm = gtm
        return self

    def _eta1_bits(self) -> str:
        """eta_1's drawn bits as stored (fixed width)."""
        return self._gtm.secret_eta1_bits()

    @staticmethod
    def _rng_for(rng, seed) -> tuple[BitSource, bool]:
        """(bit source, seeded) by :func:`gtm_core.reference.randomness`: the OS CSPRNG unless a
        numpy generator or seed is given (a deployment takes no other bit source)."""
        if isinstance(rng, BitSource):
            raise InvalidParameter(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        return randomness(rng, seed)

    @classmethod
    def create(cls, path, config: GTMConfig, *, key_path=None, rng: np.random.Generator | None = None,
               seed: int | None = None, certificate: dict | None = None) -> "Deployment":
        """Create a new deployment at ``path``: plan it, draw eta_1 once, write the state.

        Refuses (:class:`StateError`) if a state or key file already exists there. Without
        ``rng``/``seed`` the generator is seeded from the operating system. ``certificate`` is
        the record (:func:`.state.certificate_record`) of the signed certificate the deployment
        is released under; it must vouch for exactly ``config`` and is part of the first (and
        only) state write, so the state exists certified or not at all.
        """
        if not isinstance(config, GTMConfig):
            raise InvalidParameter(f"config must be a GTMConfig, got {type(config).__name__}")
        if certificate is not None:
            check_certificate_record(certificate, config.digest(), "(new)")
        path, key_path, lock_path = resolve_state_paths(path, key_path)
        rng, seeded = cls._rng_for(rng, seed)
        plan = make_plan(config)  # refuses an unplannable configuration before touching disk
        if not key_path.parent.is_dir():
            raise StateError(f"key directory does not exist: {str(key_path.parent)!r}")
        lock_fd = lock_state(lock_path)
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
            remove_stale_temporaries(path)
            remove_stale_temporaries(key_path)
            gtm = GTM(rng)
            gtm.init(plan.tau1, plan.mu1)  # GTM.Init: eta_1 ~ Exp(tau_1), the one and only draw
            body = initial_body(config, plan, gtm.secret_eta1_bits(), seeded, certificate)
            key = cls._publish(path, key_path, body)
            fault_point("create:state_written")
            dep = cls._new(path, key_path, key, body, config, plan, rng, lock_fd)
        except BaseException:
            os.close(lock_fd)
            raise
        logger.info("created deployment %s (config sha256 %s, %s)%s", path, body.config_sha256[:12],
                    plan.parameterization, f" [{NOT_FOR_DEPLOYMENT}]" if seeded else "")
        return dep

    @staticmethod
    def _publish(path: Path, key_path: Path, body: StateBody) -> bytes:
        """Write a new key, then the sealed first state (exclusively); returns the key. A refused or
        interrupted create leaves nothing: the key written for an unpublished state is removed (only
        a killed process leaves the key behind)."""
        key_written = False
        try:
            key = create_key_file(key_path)
            key_written = True
            fault_point("create:key_written")
            write_private_atomic(path, seal(body.to_dict(), key), exclusive=True)
        except BaseException as exc:
            if key_written and not os.path.lexists(path):
                try:
                    os.unlink(key_path)
                except OSError:
                    pass
            if isinstance(exc, OSError) and not isinstance(exc, StateError):
                raise StateError(f"cannot write deployment state {str(path)!r}: {exc.strerror}") from None
            raise
        return key

    @classmethod
    def open(cls, path, *, key_path=None, rng: np.random.Generator | None = None,
             seed: int | None = None) -> "Deployment":
        """Resume the deployment stored at ``path``.

        Refuses a missing, corrupted, tampered, inconsistent or world-readable state with
        :class:`StateError`. A step found pending (the previous process died mid-step) puts the
        deployment into its terminal failed state (kind ``crashed_during_step``), durably,
        before this returns.
        """
        path, key_path, lock_path = resolve_state_paths(path, key_path)
        if not os.path.lexists(path):
            raise StateError(f"no deployment state at {str(path)!r}")
        rng, seeded_now = cls._rng_for(rng, seed)
        lock_fd = lock_state(lock_path)
        try:
            st = check_private_file(path, "state file")
            if st.st_size > MAX_STATE_BYTES:
                raise StateError(f"state file {str(path)!r} is implausibly large ({st.st_size} bytes)")
            key = read_key(key_path)
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise StateError(f"cannot read state file {str(path)!r}: {exc.strerror}") from None
            where = repr(str(path))
            body = StateBody.from_dict(unseal(data, key, path), where)
            config, plan = body_config_and_plan(body, where, "; refusing to resume with different parameters")
            remove_stale_temporaries(path)
            dep = cls._new(path, key_path, key, body, config, plan, rng, lock_fd)
        except BaseException:
            os.close(lock_fd)
            raise
        try:
            if seeded_now and not body.seeded:
                dep._write(replace(body, seeded=True))
            if body.pending_step is not None:
                t = body.pending_step
                logger.warning("deployment %s: the previous process died during step %d; "
                               "the deployment is now failed", path, t)
                dep._fail(t, "crashed_during_step",
                          f"the process running step {t} died after the step's write-ahead record; "
                          "the mechanism may have been evaluated, so the step is never re-run")
        except BaseException:
            dep.close()
            raise
        logger.info("opened deployment %s at step %d (%s)", path, body.steps_done, dep.status)
        return dep

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
        return self._body.status

    @property
    def steps_done(self) -> int:
        """Number of committed steps."""
        return self._body.steps_done

    @property
    def next_step(self) -> int:
        """The step :meth:`step` runs next (1-based)."""
        return self._body.steps_done + 1

    @property
    def halted(self) -> bool:
        """True once the deployment has halted (no further steps)."""
        return self._body.status == "halted"

    @property
    def failed(self) -> bool:
        """True once a step failed (budget, mechanism fault, interruption): terminal, never retried."""
        return self._body.status == "failed"

    @property
    def halted_at(self) -> int | None:
        return self._body.halted_at

    @property
    def failure(self) -> dict | None:
        """``{"step", "kind", "reason"}`` of a failed deployment (public, contains no secret)."""
        f = self._body.failure
        return None if f is None else f.to_dict()

    @property
    def seeded(self) -> bool:
        return self._body.seeded

    @property
    def deployment_id(self) -> str:
        """A random public identifier drawn at creation (for external generation logs)."""
        return self._body.deployment_id

    @property
    def generation(self) -> int:
        return self._body.generation

    @property
    def transcript(self) -> list[tuple[str, int]]:
        """The public transcript, run-length encoded: ``[("continue", k), ("halt", 1)]``."""
        return [(sym, n) for sym, n in self._body.transcript]

    def public_transcript(self) -> list[int]:
        """The transcript as outputs a_t in the original orientation: -1 continue, +1 halt."""
        out: list[int] = []
        for sym, n in self._body.transcript:
            out.extend([1 if sym == "halt" else -1] * n)
        return out

    @property
    def evaluations_total(self) -> int:
        """Total mechanism evaluations of committed steps. **Sensitive** (a function of the
        noise N_t): for cost accounting by the curator only, never publish it."""
        return self._body.evaluations_total

    def status_dict(self) -> dict:
        """Everything public about the deployment (no eta_1, N_t, K_t or evaluation counts):
        :func:`.state.status_of` of the current body. No ``state_bytes``: the file's size is a
        function of secrets (the evaluation total's digits)."""
        return status_of(self._path, self._body, self._config, self._plan)

    def __repr__(self) -> str:
        note = f", {NOT_FOR_DEPLOYMENT}" if self._body.seeded else ""
        return (f"Deployment(path={str(self._path)!r}, status={self.status}, "
                f"steps_done={self.steps_done}{note})")

    __str__ = __repr__

    # -- the step protocol -----------------------------------------------------------------------
    def step(self, mechanism: Callable, data: Any = None, *, time_limit: float | None = None,
             before_write_ahead: Callable[[], None] | None = None) -> bool:
        """Run step t = ``next_step`` on mechanism M_t (an eps_t-DP map data -> +1/-1).

        Returns True if the GTM halted at this step. The outcome is durable before it is
        returned. Faults (see the module docstring) fail the deployment, durably, and raise
        :class:`MechanismError` / :class:`EvaluationBudgetExceeded`. ``time_limit`` bounds the
        mechanism's evaluations in seconds (None: no limit). A :class:`CommandMechanism` that
        cannot be started is an :class:`InvalidParameter` with the deployment unchanged.
        ``before_write_ahead`` (e.g. an external generation log's reservation) is called after
        the draw, right before the write-ahead record; if it raises, the step is abandoned with
        nothing written and no output read (the draw never met the data) and this handle must be
        reopened.
        """
        time_limit = check_time_limit(time_limit)
        self._check_can_step()
        if not callable(mechanism):
            raise MechanismError(f"mechanism must be callable, got {type(mechanism).__name__}")
        t = self._body.steps_done + 1
        sp = uncached_step_plan(self._config, t)
        arguments = StepArguments.planned(sp, self._plan.enforced_budget(sp))
        # a mechanism command is started (its program executed) before anything is drawn or
        # written: one that cannot start is refused with the deployment unchanged
        stop = start_mechanism(mechanism)
        pending = self._write_ahead(t, sp, arguments, stop, before_write_ahead)
        a = self._evaluate(t, pending, mechanism, data, time_limit)  # the only part that touches the data
        fault_point("step:evaluated")
        halted = a == sp.s
        self._commit(t, halted, pending.evaluations)
        fault_point("step:committed")
        logger.debug("deployment %s: step %d committed (%s)", self._path, t, "halt" if halted else "continue")
        if halted:
            logger.info("deployment %s halted at step %d", self._path, t)
        return halted

    def _write_ahead(self, t: int, sp, arguments: StepArguments, stop: Callable[[], None] | None,
                     before_write_ahead: Callable[[], None] | None) -> PendingStep:
        """Draw the step's noise and count, then make the write-ahead record (with eta_1's bits)
        durable before any output of the mechanism is read; on any failure before that record the
        started command (``stop``) is killed unread and nothing is written."""
        try:
            pending = self._begin(t, sp, arguments)
            if before_write_ahead is not None:
                try:
                    before_write_ahead()
                except BaseException:
                    self._abandoned = True  # the GTM holds a pending draw: reopen to resume
                    raise
            self._write(self._body.pending(t, self._eta1_bits()))
            fault_point("step:pending_written")
        except BaseException:
            if stop is not None:  # the command never met the step: kill it unread
                stop()
            raise
        return pending

    def _evaluate(self, t: int, pending: PendingStep, mechanism: Callable, data: Any,
                  time_limit: float | None) -> int:
        """Evaluate the mechanism N_t times, form K_t and decide (the GTM's answer); a fault or an
        interruption fails the deployment durably before it propagates."""
        try:
            return self._gtm.finish_step(pending, lambda n: evaluate_count(mechanism, data, n, time_limit,
                                                                            abort_hook(mechanism)))
        except MechanismTimeout:
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

    def _commit(self, t: int, halted: bool, evaluations: int) -> None:
        """Make step t's outcome durable (a failed write fails the deployment: the step must never
        re-run)."""
        try:
            self._write(self._body.committed(t, halted, evaluations))
        except StateError as exc:  # e.g. ENOSPC: the outcome is lost, the step must never re-run
            self._commit_failed(t, str(exc))

    def _begin(self, t: int, sp, arguments: StepArguments) -> PendingStep:
        """The GTM's check and draw (no data touched, nothing durable yet; may refine eta_1); a
        refused draw is recorded as the deployment's failure."""
        try:
            pending = self._gtm.begin_step(arguments)
        except PrecisionLimitExceeded:
            self._fail(t, "precision_limit_exceeded",
                       f"step {t}: a sampling decision needed more random bits than the sampler's cap")
            raise
        except EvaluationBudgetExceeded:
            budget = arguments.evaluation_budget
            limit = (f"its evaluation budget of {budget} evaluations (planner bound on this probability: "
                     f"{sp.budget_exceed_probability:.3g})" if budget is not None else
                     "the sampler's machine limit of 10^15 evaluations (evaluation_budget = \"none\")")
            self._fail(t, "evaluation_budget_exceeded", f"step {t} needed more than {limit}")
            raise EvaluationBudgetExceeded(
                f"step {t} exceeded its evaluation budget of {budget}; the deployment is now failed"
            ) from None
        fault_point("step:noise_drawn")
        return pending

    def _check_can_step(self) -> None:
        if self._lock_fd is None:
            raise StateError("the deployment is closed")
        if self._broken:
            raise StateError("a state write failed earlier; reopen the deployment")
        if self._abandoned:
            raise StateError("a step was abandoned before its write-ahead record; reopen the deployment")
        b = self._body
        if b.status == "failed":
            raise HaltedError(f"the deployment failed at step {b.failure.step} ({b.failure.kind}); no further steps")
        if b.status == "halted":
            raise HaltedError(f"the deployment halted at step {b.halted_at}; no further steps")
        if b.steps_done >= self._config.stream.horizon:
            raise HaltedError(
                f"the deployment reached its horizon of {self._config.stream.horizon} steps without halting"
            )

    def _write(self, body: StateBody) -> None:
        """Persist ``body`` (generation + 1) atomically, then adopt it in memory."""
        new = body.next_generation()
        try:
            write_private_atomic(self._path, seal(new.to_dict(), self._key), exclusive=False)
        except OSError as exc:
            self._broken = True
            raise StateError(f"cannot write deployment state {str(self._path)!r}: {exc.strerror}") from None
        self._body = new

    def _commit_failed(self, t: int, cause: str) -> None:
        """The commit write of step t failed after the evaluation: record state_write_failed
        (one retry of a smaller write) and raise a StateError that says what happened."""
        self._broken = False
        try:
            self._fail(t, "state_write_failed", f"the commit of step {t} could not be written ({cause})")
        except StateError:
            self._broken = True
            raise StateError(
                f"state_write_failed: {cause}; the outcome of step {t} is lost and the failure could "
                "not be recorded either: the deployment will open as failed at this step "
                "(crashed_during_step)") from None
        raise StateError(f"state_write_failed: {cause}; step {t}'s outcome is lost, the deployment "
                         "is now failed") from None

    def _fail(self, t: int, kind: str, reason: str) -> None:
        """Enter the terminal failed state at step t, durably."""
        self._write(self._body.failed(t, kind, reason, self._eta1_bits()))
        logger.warning("deployment %s failed at step %d (%s)", self._path, t, kind)
