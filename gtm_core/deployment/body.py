"""A deployment's state body as a frozen value: its fields, its shape checks, its transitions
(pending, committed, failed) and its public status.

The body is what the state file seals (:mod:`.state` holds the envelope, the sealing and the
files); :class:`StateBody` is the one place its keys are read and written, so the rest of the
deployment code uses attributes. Its dictionary form (:meth:`StateBody.to_dict`) is the stored
format, unchanged: a body read and written back is the same JSON object."""

from __future__ import annotations

import copy
import re
import secrets
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__
from ..config import GTMConfig
from ..errors import GTMError, InvalidParameter, StateError
from ..exact_sampling import LazyUniform, SystemBits
from ..planners import Plan, make_plan, uncached_step_plan
from ..reference import NOT_FOR_DEPLOYMENT
from ..validation import is_integer
from .certificate_record import CERTIFICATE_FIELD, certificate_of, check_certificate_record

STATUSES = ("running", "halted", "failed")
FAILURE_KINDS = (
    "mechanism_error",
    "mechanism_timeout",
    "evaluation_budget_exceeded",
    "interrupted",
    "crashed_during_step",
    "state_write_failed",
    "precision_limit_exceeded",
)


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
    if body["status"] not in STATUSES:
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


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (the state's timestamps)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Failure:
    """Why a deployment entered its terminal failed state: at step ``step``, of kind ``kind`` (one
    of :data:`FAILURE_KINDS`), with a public ``reason`` (never a secret)."""

    step: int
    kind: str
    reason: str

    def to_dict(self) -> dict:
        return {"step": self.step, "kind": self.kind, "reason": self.reason}


# the stored keys, in the order a new body writes them (the file's JSON sorts them anyway)
_FIELDS = ("deployment_id", "config", "config_sha256", "plan", "secret", "seeded", "status", "steps_done",
           "pending_step", "halted_at", "failure", "transcript", "evaluations_total", "generation",
           "created_utc", "updated_utc")


@dataclass(frozen=True)
class StateBody:
    """The authenticated body of a deployment's state file.

    ``config`` and ``plan`` are the stored dictionaries (the configuration's ``to_dict()`` and
    :func:`plan_identity`); they are copied in and out and never modified. ``eta1_bits`` is the
    secret (eta_1's drawn bits). ``transcript`` is run-length encoded, ``(("continue", k),
    ("halt", 1))``. ``gtm_version`` and ``certificate`` are omitted from the stored form when None
    (states written before they existed), and ``extra`` keeps any other stored field as written.
    """

    deployment_id: str
    config: dict
    config_sha256: str
    plan: dict
    eta1_bits: str
    seeded: bool
    status: str
    steps_done: int
    pending_step: int | None
    halted_at: int | None
    failure: Failure | None
    transcript: tuple[tuple[str, int], ...]
    evaluations_total: int
    generation: int
    created_utc: str
    updated_utc: str
    gtm_version: str | None = None
    certificate: dict | None = None
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, body: dict, where: str) -> "StateBody":
        """The value of an authenticated stored body, after :func:`validate_body`."""
        validate_body(body, where)
        f = body["failure"]
        known = set(_FIELDS) | {"gtm_version", CERTIFICATE_FIELD}
        return cls(
            deployment_id=body["deployment_id"], config=copy.deepcopy(body["config"]),
            config_sha256=body["config_sha256"], plan=dict(body["plan"]), eta1_bits=body["secret"]["eta1_bits"],
            seeded=body["seeded"], status=body["status"], steps_done=body["steps_done"],
            pending_step=body["pending_step"], halted_at=body["halted_at"],
            failure=None if f is None else Failure(f["step"], f["kind"], f["reason"]),
            transcript=tuple((sym, n) for sym, n in body["transcript"]),
            evaluations_total=body["evaluations_total"], generation=body["generation"],
            created_utc=body["created_utc"], updated_utc=body["updated_utc"],
            gtm_version=body.get("gtm_version"), certificate=certificate_of(body),
            extra={k: copy.deepcopy(v) for k, v in body.items() if k not in known},
        )

    def to_dict(self) -> dict:
        """The stored form (what the state file seals)."""
        out = {
            "deployment_id": self.deployment_id,
            "config": copy.deepcopy(self.config),
            "config_sha256": self.config_sha256,
            "plan": dict(self.plan),
            "secret": {"eta1_bits": self.eta1_bits},
            "seeded": self.seeded,
            "status": self.status,
            "steps_done": self.steps_done,
            "pending_step": self.pending_step,
            "halted_at": self.halted_at,
            "failure": None if self.failure is None else self.failure.to_dict(),
            "transcript": [[sym, n] for sym, n in self.transcript],
            "evaluations_total": self.evaluations_total,
            "generation": self.generation,
            "created_utc": self.created_utc,
            "updated_utc": self.updated_utc,
        }
        if self.gtm_version is not None:
            out["gtm_version"] = self.gtm_version
        if self.certificate is not None:
            out[CERTIFICATE_FIELD] = dict(self.certificate)
        return {**copy.deepcopy(self.extra), **out}

    # -- transitions (each returns the next body; the writer adds the generation and the time) ------
    def next_generation(self) -> "StateBody":
        """This body as the next write stores it: generation + 1, updated now."""
        return replace(self, generation=self.generation + 1, updated_utc=utc_now())

    def pending(self, t: int, eta1_bits: str) -> "StateBody":
        """The write-ahead record of step t (with eta_1's bits, which the step may have refined)."""
        return replace(self, pending_step=t, eta1_bits=eta1_bits)

    def committed(self, t: int, halted: bool, evaluations: int) -> "StateBody":
        """Step t's outcome committed: the transcript extended, the evaluations counted."""
        runs = list(self.transcript)
        if runs and runs[-1][0] == "continue" and not halted:
            runs[-1] = ("continue", runs[-1][1] + 1)
        else:
            runs.append(("halt" if halted else "continue", 1))
        return replace(self, pending_step=None, steps_done=t, status="halted" if halted else "running",
                       halted_at=t if halted else None, transcript=tuple(runs),
                       evaluations_total=self.evaluations_total + evaluations)

    def failed(self, t: int, kind: str, reason: str, eta1_bits: str) -> "StateBody":
        """The terminal failed state at step t."""
        return replace(self, status="failed", pending_step=None, eta1_bits=eta1_bits,
                       failure=Failure(t, kind, reason))


def initial_body(config: GTMConfig, plan: Plan, eta1_bits: str, seeded: bool,
                 certificate: dict | None) -> StateBody:
    """The state body of a new deployment: running, no step done, generation 1, eta_1's bits in
    its secret part; ``certificate`` (a checked record) is part of this first and only write."""
    now = utc_now()
    return StateBody(
        deployment_id=secrets.token_hex(16),  # public: names it in external logs
        config=config.to_dict(), config_sha256=config.digest(), plan=plan_identity(plan), eta1_bits=eta1_bits,
        seeded=bool(seeded), status="running", steps_done=0, pending_step=None, halted_at=None, failure=None,
        transcript=(), evaluations_total=0, generation=1, created_utc=now, updated_utc=now,
        gtm_version=__version__, certificate=None if certificate is None else dict(certificate),
    )


def body_config_and_plan(body: "StateBody", where: str, resume_note: str) -> tuple[GTMConfig, Plan]:
    """The configuration a validated state body holds and its plan, re-derived by this version of
    gtm: refused if the configuration is invalid, does not match its SHA-256, predates the budget
    policy, or plans differently now (``resume_note`` is appended to that last message)."""
    try:
        config = GTMConfig.from_dict(copy.deepcopy(body.config))
    except GTMError:
        raise StateError(f"state file {where} holds an invalid configuration") from None
    if config.digest() != body.config_sha256:
        raise StateError(f"state file {where}: configuration does not match its SHA-256")
    plan = make_plan(config)
    if "evaluation_budget" not in body.plan:
        raise StateError(f"state file {where} {OLD_BUDGET_POLICY_REFUSAL}")
    if plan_identity(plan) != body.plan:
        raise StateError(f"state file {where}: this version of gtm plans the configuration differently "
                         f"(tau1/mu1/epsilon changed){resume_note}")
    return config, plan


def status_of(path: Path, body: "StateBody", config: GTMConfig, plan: Plan) -> dict:
    """Everything public about a deployment (no eta_1, N_t, K_t or evaluation counts): the status
    of :meth:`gtm_core.deployment.Deployment.status_dict`."""
    b = body
    done = b.steps_done
    horizon = config.stream.horizon
    f = b.failure
    out = {
        "state_file": str(path),
        "deployment_id": b.deployment_id,
        "status": b.status,
        "steps_done": done,
        "next_step": None if b.status != "running" or done >= horizon else done + 1,
        "horizon": horizon,
        "horizon_reached": b.status == "running" and done >= horizon,
        "halted_at": b.halted_at,
        "failure": None if f is None else f.to_dict(),
        "transcript": [list(r) for r in b.transcript],
        "config_sha256": b.config_sha256,
        "plan": dict(b.plan),
        "privacy": plan.privacy_statement(),
        "privacy_delta": plan.privacy_delta(),
        "seeded": b.seeded,
        "note": NOT_FOR_DEPLOYMENT if b.seeded else None,
        "generation": b.generation,
        "created_utc": b.created_utc,
        "updated_utc": b.updated_utc,
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
