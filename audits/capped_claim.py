"""Which privacy claim an audit tests, and the (epsilon, delta) audit of a capped GTM deployment.

A configuration's ``[gtm] evaluation_budget`` decides what its deployment claims
(docs/deployment.md, "The evaluation budget and the privacy claim"):

* ``"none"`` - Algorithm 1, pure epsilon-DP: audited by :func:`audits.gtm_audit.audit` (a lower
  bound on the privacy loss of one pre-registered halting-time event);
* ``"refuse"`` - a step whose count would exceed its budget is refused and the run fails:
  (epsilon, delta)-DP with delta = :meth:`gtm_core.planners.Plan.privacy_delta` (the one
  implementation of delta = (1 + e^eps) sum_t Pr[N_t > B_t]; the certificate's
  ``privacy.approximate`` re-derives it in arb). The outcomes - halt at t, continue through T,
  refused at t - are a finite output, so the approximate-DP test of :mod:`audits.finite`
  (:func:`audits.finite.audit_finite_delta`: a lower bound on delta(eps) >= P_A[E] - e^eps P_B[E])
  applies, on the auditor's neighbouring Bernoulli streams (:mod:`audits.pair_search`).

:func:`privacy_claim` turns a plan (and an optional forced measure) into a :class:`PrivacyClaim`;
:func:`audit_claim` runs the matching test and returns a :class:`ClaimAudit`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gtm_core.errors import InvalidParameter
from gtm_core.input_privacy import InputPrivacy
from gtm_core.planners import Plan
from gtm_core.validation import check_choice, check_half_open_unit, check_positive_int

from . import pair_search
from .audit_results import AuditResult
from .finite import DeltaAudit, FiniteTarget, audit_finite_delta
from .gtm_audit import audit, audit_privacy, claimed_epsilon
from .targets import Target

PURE, APPROXIMATE = "pure", "approximate"
LOSS, HOCKEY_STICK = "loss", "hockey-stick"  # the two tests: a lower bound on epsilon, on delta(epsilon)
CLAIM_CHOICES = ("auto", PURE, APPROXIMATE)
APPROXIMATE_MAX_T = 1  # longest stream the (epsilon, delta) search tries unless told (step 1: the largest
# per-step refusal probability of the planned budgets; longer streams add hundreds of inputs whose
# frequent-event noise outranks a rare event in a one-shot selection)
N_SELECTION = 20_000  # runs per input in the delta audit's selection phase
N_FINAL = 1_000_000  # runs per input of the chosen pair in its estimation phase (fixed in advance)


@dataclass(frozen=True)
class PrivacyClaim:
    """The claim an audit tests: pure epsilon-DP (``delta == 0``) or (epsilon, delta)-DP, why, and how.

    ``method``: ``"loss"`` - :func:`audits.gtm_audit.audit`, a lower bound on epsilon (the uncapped
    policy's pure claim); ``"hockey-stick"`` - :func:`audit_approximate`, a lower bound on delta(epsilon)
    (every claim on a capped deployment, a pure one as delta = 0: the refusals make the outcomes a
    finite output whose rare events the loss engine's successive halving drops before they are seen)."""

    measure: str  # PURE | APPROXIMATE
    epsilon: float
    delta: float
    reason: str  # e.g. 'evaluation_budget = "refuse"'
    method: str = LOSS

    def __post_init__(self):
        check_choice("measure", self.measure, (PURE, APPROXIMATE))
        check_choice("method", self.method, (LOSS, HOCKEY_STICK))
        check_half_open_unit("delta", self.delta)
        if self.measure == APPROXIMATE and self.method != HOCKEY_STICK:
            raise InvalidParameter(f"method must be {HOCKEY_STICK} for an (epsilon, delta) claim, got {self.method!r}")
        if self.measure == PURE and self.delta != 0:
            raise InvalidParameter(f"delta must be 0 for a pure claim, got {self.delta!r}")

    def statement(self) -> str:
        """One line, e.g. ``claim: (1, 0.0111)-DP because evaluation_budget = "refuse"``."""
        what = f"{self.epsilon:g}-DP (pure)" if self.measure == PURE else f"({self.epsilon:g}, {self.delta:.3g})-DP"
        return f"claim: {what} because {self.reason}"

    def to_dict(self) -> dict:
        return {"measure": self.measure, "epsilon": self.epsilon, "delta": self.delta, "reason": self.reason,
                "method": self.method, "statement": self.statement()}


def privacy_claim(plan: Plan, *, claim: str = "auto") -> PrivacyClaim:
    """The claim of the deployment ``plan`` describes (``claim="auto"``): pure epsilon under
    ``evaluation_budget = "none"``, (epsilon, :meth:`~gtm_core.planners.Plan.privacy_delta`) under
    ``"refuse"``. ``claim="pure"`` forces the pure-epsilon test on a capped plan (to see it
    violated); ``claim="approximate"`` forces the delta test (delta = 0 for an uncapped plan). The
    method (:class:`PrivacyClaim`) is the loss engine for the uncapped plan's pure claim, the
    hockey-stick test otherwise.

    Raises:
        InvalidParameter: ``claim`` is not one of ``auto``, ``pure``, ``approximate``, or the
            (epsilon, delta) claim is vacuous (delta >= 1, e.g. ``examples/unsafe_budget.toml``).
    """
    if not isinstance(plan, Plan):
        raise InvalidParameter(f"plan must be a gtm_core Plan, got {type(plan).__name__}")
    check_choice("claim", claim, CLAIM_CHOICES)
    policy = f"evaluation_budget = \"{plan.budget_policy}\""
    measure = (PURE if plan.pure else APPROXIMATE) if claim == "auto" else claim
    if measure == PURE:
        reason = policy if plan.pure else (f"the pure claim was forced (claim = \"pure\"); the configuration's "
                                          f"{policy} claims only {plan.privacy_statement()}")
        return PrivacyClaim(PURE, claimed_epsilon(plan), 0.0, reason, LOSS if plan.pure else HOCKEY_STICK)
    reason = policy if claim == "auto" else f"the (epsilon, delta) claim was forced (claim = \"approximate\"), {policy}"
    if not plan.privacy_delta() < 1:
        raise InvalidParameter(f"delta: the configuration claims {plan.privacy_statement()}; a delta >= 1 holds for "
                               f"every mechanism, so there is nothing to audit (got {plan.privacy_delta()!r})")
    return PrivacyClaim(APPROXIMATE, float(plan.worst_claimed_loss()), float(plan.privacy_delta()), reason,
                        HOCKEY_STICK)


def outcome_code(h: int) -> str:
    """The finite output code of a GTM outcome (docs/protocol.md): ``halt@t``, ``refused@t``, ``continue``."""
    return f"halt@{h}" if h > 0 else (f"refused@{-h}" if h < 0 else "continue")


class HaltingCodeTarget(FiniteTarget):
    """A GTM :class:`audits.targets.Target` seen as a finite-output target: the input is a Bernoulli
    stream (a list of probabilities), the output its outcome code (:func:`outcome_code`)."""

    def __init__(self, target: Target):
        if not isinstance(target, Target):
            raise InvalidParameter(f"target must be an audits.targets.Target, got {type(target).__name__}")
        self.target = target
        self.name = target.describe()

    def sample(self, inp, n, seed) -> Counter:
        halt = self.target.sample([float(x) for x in inp], int(n), int(seed)).halt
        codes, counts = np.unique(halt, return_counts=True)
        return Counter({outcome_code(int(h)): int(k) for h, k in zip(codes, counts)})

    def set_deadline(self, deadline):
        self.target.set_deadline(deadline)

    def close(self):
        self.target.close()


def stream_pairs(eps_t, max_T: int, extra_candidates: Sequence = ()) -> list[tuple[list, list]]:
    """The neighbouring stream pairs the (epsilon, delta) audit selects from: the caller's extra
    candidates first, then the first-round families of :func:`audits.pair_search.initial_candidates`
    up to ``max_T`` steps, each unordered pair once (the delta test examines both orders)."""
    privacy = InputPrivacy.from_user(eps_t)
    seen, out = set(), []
    for c in list(extra_candidates) + pair_search.initial_candidates(privacy, max_T):
        key = frozenset((tuple(c.p), tuple(c.p_prime)))
        if key not in seen:
            seen.add(key)
            out.append((list(c.p), list(c.p_prime)))
    return out


def audit_approximate(target: Target, *, epsilon: float, delta: float, eps_t, max_T: int = APPROXIMATE_MAX_T,
                      extra_candidates: Sequence = (), n_selection: int = N_SELECTION, n_final: int = N_FINAL,
                      seed: int = 0, confidence: float = 0.95, seconds: float | None = None) -> DeltaAudit:
    """(epsilon, delta) audit of a GTM target on neighbouring Bernoulli streams: a ``confidence``
    lower bound on delta(epsilon) (:func:`audits.finite.audit_finite_delta`), verdict ``violation``
    when it exceeds ``delta``. Pairs: :func:`stream_pairs`; ``seconds`` only shortens the selection.

    Raises:
        InvalidParameter: a bad argument (named in the message).
        TargetError: the target crashed, hung or answered something malformed.
    """
    privacy = audit_privacy(eps_t)
    limit = target.max_T if target.max_T is not None else max_T
    max_T = privacy.longest_stream(min(check_positive_int("max_T", max_T), limit))
    pairs = stream_pairs(privacy, max_T, extra_candidates)
    return audit_finite_delta(HaltingCodeTarget(target), pairs, epsilon=epsilon, delta=delta, n_selection=n_selection,
                              n_final=n_final, seed=seed, confidence=confidence, seconds=seconds,
                              penalised=True)


@dataclass(frozen=True)
class ClaimAudit:
    """An audit against a :class:`PrivacyClaim`: the pure engine's :class:`AuditResult` or the
    delta test's :class:`DeltaAudit`."""

    claim: PrivacyClaim
    result: AuditResult | DeltaAudit

    @property
    def verdict(self) -> str:
        return self.result.verdict

    @property
    def violation(self) -> bool:
        return self.result.violation

    def to_dict(self) -> dict:
        return {**self.result.to_dict(), "claim": self.claim.to_dict()}


def audit_claim(target: Target, claim: PrivacyClaim, *, eps_t, seconds: float | None = 60.0, seed: int = 0,
                confidence: float = 0.95, max_samples: int | None = None, max_T: int | None = None,
                extra_candidates: Sequence = (), progress: bool = False, executor=None) -> ClaimAudit:
    """Audit ``target`` against ``claim`` by its method: :func:`audits.gtm_audit.audit` at epsilon
    (``"loss"``), :func:`audit_approximate` at (epsilon, delta) (``"hockey-stick"``; ``max_samples``
    then sets its estimation size, a quarter per input of the chosen pair; ``executor`` and
    ``progress`` are not used there)."""
    if not isinstance(claim, PrivacyClaim):
        raise InvalidParameter(f"claim must be a PrivacyClaim, got {type(claim).__name__}")
    if claim.method == LOSS:
        kwargs = {} if max_T is None else {"max_T": max_T}
        return ClaimAudit(claim, audit(target, epsilon=claim.epsilon, eps_t=eps_t, seconds=seconds, seed=seed,
                                       confidence=confidence, progress=progress, max_samples=max_samples,
                                       extra_candidates=extra_candidates, executor=executor, **kwargs))
    n_final = N_FINAL if max_samples is None else max(100, check_positive_int("max_samples", max_samples) // 4)
    return ClaimAudit(claim, audit_approximate(
        target, epsilon=claim.epsilon, delta=claim.delta, eps_t=eps_t,
        max_T=APPROXIMATE_MAX_T if max_T is None else max_T, extra_candidates=extra_candidates,
        n_final=n_final, seed=seed, confidence=confidence, seconds=seconds))
