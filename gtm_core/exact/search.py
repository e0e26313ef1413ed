"""Worst-case privacy search over neighbouring streams (the auditor's exact oracle).

:func:`worst_case_search` maximises the *exact* privacy loss |ln(P/P')| of a
transcript over pairs of neighbouring Bernoulli streams p, p' (length 1..horizon,
every p'_t in the eps_t-neighbourhood of p_t, tiny success probabilities
allowed, neighbours moving in different directions at different steps), using
the exact engine (:func:`gtm_core.exact.transcript_distribution`) as the objective.

The search starts from the constructions that make Lemma 17 tight (continuation
steps with p_t >= p*_t shifted by e^{-s eps} so that continuing needs a large
eta_1, a final halting step with a tiny success probability shifted the other
way, so that halting is driven by the Pareto tail of eta_2), plus random
starts, and refines them by a randomised local search with shrinking steps in
(logit p, position of p' in its neighbourhood).  The best witness is
re-evaluated at higher precision before it is reported.

The starts are independent units of work (:class:`StartEvaluation`, a pure function of plan,
horizon, seed and start index) evaluated through an injected ``map_starts`` - in order here by
default, or on a cluster (``audits.execution``; this package imports nothing from ``audits``) -
and folded into the incumbent in start order, so the result does not depend on where they ran.

:func:`perturbed_plan` builds deliberately broken plans (noise scales wrong by a
factor) that keep the original privacy claim, to show the search finds the
violation.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import mpmath
import numpy as np

from ..errors import InvalidParameter, NotNeighbouring
from ..validation import check_nonnegative_int, check_positive, check_positive_int, check_real
from .arb import float_upper
from .privacy import hockey_stick_delta, hockey_stick_delta_ball
from .starts import DELTA_LAST, decode_point, delta_starts, random_start, structured_starts
from .transcripts import transcript_distribution

__all__ = ["PerturbedPlan", "perturbed_plan", "SearchResult", "worst_case_search", "exact_loss", "StartEvaluation",
           "StartOutcome", "random_start", "structured_starts", "delta_starts", "DELTA_LAST", "in_order_map"]


@dataclass(frozen=True)
class PerturbedPlan:
    """A plan whose noise scales are multiplied by factors, keeping the base plan's claims.

    ``tau1_factor = 1/3`` makes eta_1 three times too concentrated; ``tau2_factor = 1/4``
    makes every eta_{2,t} four times too small.  ``claimed_loss`` and ``epsilon`` are
    those of the base plan: the broken mechanism still *claims* them.
    """

    base: Any
    tau1_factor: float = 1.0
    tau2_factor: float = 1.0

    @property
    def tau1(self) -> float:
        return self.base.tau1 * self.tau1_factor

    @property
    def mu1(self) -> float:
        return self.base.mu1

    @property
    def epsilon(self):
        return self.base.epsilon

    @property
    def horizon(self) -> int:
        return self.base.horizon

    @property
    def pure(self) -> bool:
        """The base plan's budget policy claim (a broken variant still *claims* it)."""
        return self.base.pure

    @property
    def parameterization(self) -> str:
        return f"{self.base.parameterization}[tau1x{self.tau1_factor:g},tau2x{self.tau2_factor:g}]"

    def step(self, t: int):
        sp = self.base.step(t)
        return dataclasses.replace(sp, tau2=sp.tau2 * self.tau2_factor)

    def claimed_loss(self, t: int, halted: bool) -> float:
        return self.base.claimed_loss(t, halted)

    @property
    def budget_policy(self) -> str:
        return self.base.budget_policy

    def enforced_budget(self, sp) -> int | None:
        """The base plan's budget at step ``sp.t`` (a broken variant runs under the same policy, so the
        exact engine models its refusals too)."""
        return self.base.enforced_budget(sp)

    def worst_claimed_loss(self) -> float:
        return self.base.worst_claimed_loss()

    def privacy_delta(self) -> float:
        """The base plan's delta claim (0 for the ``"none"`` policy): still *claimed* by the broken variant."""
        return self.base.privacy_delta()


def perturbed_plan(plan, *, tau1_factor: float = 1.0, tau2_factor: float = 1.0) -> PerturbedPlan:
    for name, v in (("tau1_factor", tau1_factor), ("tau2_factor", tau2_factor)):
        check_positive(name, v)
    return PerturbedPlan(plan, float(tau1_factor), float(tau2_factor))


@dataclass(frozen=True)
class SearchResult:
    """Best pair found: witness streams, the transcript, its exact loss and the claim."""

    p: tuple[float, ...]
    p_prime: tuple[float, ...]
    transcript: str  # "halt" or "continue"
    t: int
    loss: float  # |ln(P/P')| at the final precision
    loss_error: float
    claimed: float  # plan.claimed_loss(t, halted) for that transcript
    epsilon: float | None  # the plan's uniform claim (None for ex-post plans)
    evaluations: int
    seconds: float
    seed: int
    attempts: int = 0  # candidate pairs tried (the unit of ``max_attempts``)
    complete: bool = True  # False if the time cap stopped an attempt-budgeted search early
    objective: str = "claimed"  # "epsilon" / "claimed" (a transcript's loss) or "delta"
    # objective "delta": loss is delta_eps of the pair (transcript = its direction "p||p'" or "p'||p",
    # t = the stream length), loss_error its error, claimed the plan's delta, delta_eps the eps it is
    # measured at, delta_upper the smallest float above its arb enclosure
    delta_eps: float | None = None
    delta_upper: float | None = None

    @property
    def exceeds_claim(self) -> bool:
        """True when the exact loss exceeds the claimed loss (beyond its error bound); for the delta
        objective: when the delta found certainly exceeds the delta claimed."""
        return self.loss - self.loss_error > self.claimed

    @property
    def exceeds_epsilon(self) -> bool:
        return self.epsilon is not None and self.loss - self.loss_error > self.epsilon

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["exceeds_claim"] = self.exceeds_claim
        d["exceeds_epsilon"] = self.exceeds_epsilon
        return d

    def describe(self) -> str:
        verdict = "EXCEEDS the claim" if self.exceeds_claim else "within the claim"
        if self.objective == "delta":
            return (
                f"worst pair for delta at eps={self.delta_eps:.6g} ({self.transcript}): exact delta {self.loss:.10g} "
                f"(upper bound {self.delta_upper:.10g}) vs claimed {self.claimed:.6g}: {verdict}\n"
                f"  p  = {list(self.p)}\n  p' = {list(self.p_prime)}"
            )
        return (
            f"worst transcript: {self.transcript} at t={self.t}; exact loss {self.loss:.10g} "
            f"(+-{self.loss_error:.2g}) vs claimed {self.claimed:.6g}: {verdict}\n"
            f"  p  = {list(self.p)}\n  p' = {list(self.p_prime)}"
        )


def _target(plan, t: int, kind: str, objective: str) -> float:
    """The loss a transcript is compared with: the uniform epsilon, or the per-transcript claim (a
    refusal, outside Lemma 17, against the plan's uniform claim)."""
    if objective == "epsilon":
        return float(plan.epsilon)
    if kind == "refused":
        return float(plan.worst_claimed_loss())
    return float(plan.claimed_loss(t, kind == "halt"))


def exact_loss(plan, p, q, *, dps: int = 10, objective: str = "claimed") -> tuple[float, str, int, float]:
    """The transcript maximising |ln(P/P')| - target (target: the per-transcript claim of
    Lemma 17 / the plan, or the uniform epsilon), returned as (loss, kind, t, target)."""
    d1 = transcript_distribution(plan, p, dps=dps)
    d2 = transcript_distribution(plan, q, dps=dps)
    best = (-math.inf, "continue", 1, 0.0)
    for t, kind, A, B in outcome_pairs(d1, d2):
        a, b = A.value, B.value
        if a <= 0 or b <= 0 or A.error >= a / 4 or B.error >= b / 4:
            continue
        loss = abs(float(mpmath.log(a) - mpmath.log(b)))
        claimed = _target(plan, t, kind, objective)
        if loss - claimed > best[0] - best[3]:
            best = (loss, kind, t, claimed)
    return best


def outcome_pairs(d1, d2):
    """(t, kind, P, P') of every transcript of two laws: halt and continue at each t, and under an
    enforced budget "refused" at each t."""
    for t in range(1, d1.T + 1):
        yield t, "halt", d1.halt[t - 1], d2.halt[t - 1]
        yield t, "continue", d1.cont[t - 1], d2.cont[t - 1]
        if d1.refused:
            yield t, "refused", d1.refused[t - 1], d2.refused[t - 1]


def exact_delta(plan, p, q, *, dps: int = 10) -> tuple[float, str, int, float]:
    """The hockey-stick divergence delta_eps of the pair at the plan's eps (:meth:`worst_claimed_loss`),
    the larger direction, as (delta, direction, stream length, the plan's claimed delta) - the
    "delta" objective's score, shaped like :func:`exact_loss`'s."""
    d1 = transcript_distribution(plan, p, dps=dps, max_panels=DELTA_SCORE_PANELS)
    d2 = transcript_distribution(plan, q, dps=dps, max_panels=DELTA_SCORE_PANELS)
    e = float(plan.worst_claimed_loss())
    fwd, _ = hockey_stick_delta(d1, d2, e)
    bwd, _ = hockey_stick_delta(d2, d1, e)
    delta, direction = (fwd, "p||p'") if fwd >= bwd else (bwd, "p'||p")
    return float(delta), direction, len(p), float(plan.privacy_delta())


# panels of a "delta" score's laws: a capped law at a tiny halting probability (p ~ 1e-8 at the default
# deployment) refines its eta_1 integral for many minutes (the cancellation in halt = (1 - h) - R + J);
# a search score needs no more than a few digits, and a panel left unresolved keeps its error in the ball
DELTA_SCORE_PANELS = 300

def in_order_map(fn: Callable, items: Sequence) -> list:
    """The default ``map_starts`` of :func:`worst_case_search`: ``[fn(x) for x in items]`` here."""
    return [fn(x) for x in items]


@dataclass(frozen=True)
class StartOutcome:
    """A start evaluated: the point (u, v), its score (None if the pair is not neighbouring) and the
    CPU seconds its evaluation took where it ran."""

    u: np.ndarray
    v: np.ndarray
    score: tuple | None  # (loss - target, loss, kind, t, target)
    cpu_seconds: float


@dataclass(frozen=True)
class StartEvaluation:
    """The unit of work a ``map_starts`` mapper runs: evaluate start ``(kind, index)`` of a search.

    ``kind`` is ``"structured"`` (the ``index``-th tight construction of :func:`structured_starts`) or
    ``"random"`` (:func:`random_start`). A pure function of (plan, horizon, seed, kind, index) and the
    precision: the outcome does not depend on the process that computes it. Picklable (the plan is)."""

    plan: Any
    horizon: int
    seed: int
    dps: int
    objective: str

    def point(self, kind: str, index: int) -> tuple[np.ndarray, np.ndarray]:
        if kind == "structured":
            starts = delta_starts if self.objective == "delta" else structured_starts
            return starts(self.plan, self.horizon)[index]
        return random_start(self.horizon, self.seed, index)

    def __call__(self, item: tuple[str, int]) -> StartOutcome:
        c0 = time.process_time()
        u, v = self.point(*item)
        r = score_point(self.plan, u, v, self.horizon, dps=self.dps, objective=self.objective)
        return StartOutcome(u, v, r, time.process_time() - c0)


def score_point(plan, u: np.ndarray, v: np.ndarray, horizon: int, *, dps: int, objective: str) -> tuple | None:
    """(loss - target, loss, kind, t, target) of the pair encoded by (u, v); None if it is not neighbouring."""
    eps = [float(plan.step(t).eps_t) for t in range(1, min(len(u), horizon) + 1)]
    p, q = decode_point(u, v, eps)
    try:
        if objective == "delta":
            loss, kind, t, claimed = exact_delta(plan, p, q, dps=dps)
        else:
            loss, kind, t, claimed = exact_loss(plan, p, q, dps=dps, objective=objective)
    except NotNeighbouring:
        return None
    return (loss - claimed, loss, kind, t, claimed)


class SearchState:
    """The incumbent and the budget of one running search (local to :func:`worst_case_search`).

    ``spent(share)``: has the phase ending at ``share`` of the budget used it up? CPU seconds are those
    of this process plus, for starts evaluated elsewhere, theirs; an attempt-budgeted search counts
    attempts and only records that the CPU-time cap stopped it (``capped``)."""

    def __init__(self, seconds: float, max_attempts: int | None, progress):
        self.seconds, self.max_attempts, self.progress = seconds, max_attempts, progress
        self.start = time.process_time()
        self.elsewhere = 0.0
        self.attempts = 0
        self.evals = 0
        self.capped = False
        self.best = None  # (score, u, v, loss, kind, t, claimed)

    def used(self) -> float:
        return time.process_time() - self.start + self.elsewhere

    def spent(self, share: float) -> bool:
        if self.max_attempts is None:
            return self.used() > self.seconds * share
        if self.used() > self.seconds:
            self.capped = True
            return True
        return self.attempts >= self.max_attempts * share

    def reduce(self, u, v, r) -> bool:
        """Fold one evaluated pair into the incumbent (in start order); True if it improved it."""
        self.attempts += 1
        if r is None:
            return False
        self.evals += 1
        if self.best is None or r[0] > self.best[0]:
            self.best = (r[0], u.copy(), v.copy(), r[1], r[2], r[3], r[4])
            if self.progress is not None:
                self.progress(self.evals, r[1])
            return True
        return False


def run_starts(state: SearchState, mapper, task: StartEvaluation, kind: str, available: int | None,
               share: float, check_first: bool, chunk: int) -> None:
    """Evaluate starts 0, 1, ... of ``kind`` through the mapper until the phase's budget is spent
    (attempt-budgeted: exactly as many as the budget allows) or ``available`` ones are done."""
    index = 0
    while available is None or index < available:
        if check_first and state.spent(share):
            return
        if state.max_attempts is not None:
            n = max(0, math.ceil(state.max_attempts * share) - state.attempts)
            n = max(n, 0 if check_first else 1)
        else:
            n = chunk
        n = min(n, chunk) if available is None else min(n, chunk, available - index)
        if n <= 0:
            return
        c0 = time.process_time()
        outcomes = mapper(task, [(kind, i) for i in range(index, index + n)])
        here = time.process_time() - c0
        state.elsewhere += max(0.0, sum(o.cpu_seconds for o in outcomes) - here)
        for o in outcomes:
            state.reduce(o.u, o.v, o.score)
        index += n
        if not check_first and state.spent(share):
            return


def refine(state: SearchState, plan, horizon: int, *, dps: int, objective: str, rng) -> None:
    """Local refinement of the incumbent with shrinking steps until the budget is spent (sequential:
    each step starts from the last incumbent)."""
    step = 1.0
    while state.best is not None and not state.spent(1.0):
        _, u0, v0, *_ = state.best
        u = u0 + rng.normal(0.0, step, size=u0.shape)
        v = np.clip(v0 + rng.normal(0.0, step / 2, size=v0.shape), -1, 1)
        if rng.random() < 0.3:
            v = np.sign(v) * (np.abs(v) > 0.5) + v * (np.abs(v) <= 0.5)
        if not state.reduce(u, v, score_point(plan, u, v, horizon, dps=dps, objective=objective)):
            step = max(step * 0.9, 0.02)
        else:
            step = min(step * 1.5, 2.0)


def final_loss(plan, p, q, *, dps: int, objective: str) -> dict:
    """The witness pair's worst transcript re-evaluated at ``dps`` (loss objectives)."""
    d1 = transcript_distribution(plan, p, dps=dps)
    d2 = transcript_distribution(plan, q, dps=dps)
    top = None
    for t, kind, A, B in outcome_pairs(d1, d2):
        if A.value <= 0 or B.value <= 0:
            continue
        loss = abs(mpmath.log(A.value) - mpmath.log(B.value))
        err = A.error / A.value + B.error / B.value
        target = _target(plan, t, kind, objective)
        if top is None or float(loss) - target > top[0]:
            claimed = _target(plan, t, kind, "claimed")
            top = (float(loss) - target, dict(loss=float(loss), loss_error=float(err), transcript=kind, t=t,
                                              claimed=claimed))
    assert top is not None
    return top[1]


# the final re-evaluation of a "delta" witness pair: first with the score's panel cap; only when that upper
# bound is not below DELTA_DECIDED_FRACTION x the claimed delta, again with the full panel budget (a pair
# whose delta is ~1e-20 against a claim of ~1e-3 otherwise refined its eta_1 integral for minutes - 30 000
# panels, 330 s CPU at the default deployment - to resolve digits no decision needs)
DELTA_FINAL_PANELS = (DELTA_SCORE_PANELS, 4000)
DELTA_DECIDED_FRACTION = 0.5


def final_delta(plan, p, q, *, dps: int) -> dict:
    """The witness pair's delta_eps re-evaluated at ``dps``, both directions, with its arb enclosure
    (:func:`gtm_core.exact.privacy.hockey_stick_delta_ball`): the direction with the larger upper bound.
    Panels escalate through :data:`DELTA_FINAL_PANELS` until the upper bound is at most
    :data:`DELTA_DECIDED_FRACTION` x the plan's claimed delta (or the last cap is reached); an unresolved
    panel keeps its error estimate in the ball, so a cheap evaluation only ever widens the upper bound."""
    claimed = float(plan.privacy_delta())
    e = float(plan.worst_claimed_loss())
    best = None
    for panels in DELTA_FINAL_PANELS:
        d1 = transcript_distribution(plan, p, dps=dps, max_panels=panels)
        d2 = transcript_distribution(plan, q, dps=dps, max_panels=panels)
        best = None
        for direction, a, b in (("p||p'", d1, d2), ("p'||p", d2, d1)):
            value, err = hockey_stick_delta(a, b, e)
            upper = float_upper(hockey_stick_delta_ball(a, b, e))
            if best is None or upper > best["delta_upper"]:
                best = dict(loss=float(value), loss_error=float(err), transcript=direction, t=len(p),
                            claimed=claimed, delta_eps=e, delta_upper=upper)
        if best["delta_upper"] <= DELTA_DECIDED_FRACTION * claimed:
            break
    return best


def resolve_objective(plan, objective: str | None) -> str:
    """The search objective (default: "epsilon" for a plan with a uniform epsilon, else "claimed")."""
    if objective is None:
        objective = "epsilon" if getattr(plan, "epsilon", None) is not None else "claimed"
    if objective not in ("epsilon", "claimed", "delta"):
        raise InvalidParameter(f"objective must be 'epsilon', 'claimed' or 'delta', got {objective!r}")
    if objective == "epsilon" and getattr(plan, "epsilon", None) is None:
        raise InvalidParameter("objective='epsilon' needs a plan with a uniform epsilon claim")
    return objective


def worst_case_search(
    plan,
    *,
    horizon: int = 3,
    seconds: float = 60.0,
    seed: int = 0,
    dps: int = 10,
    final_dps: int = 20,
    objective: str | None = None,
    progress=None,
    max_attempts: int | None = None,
    map_starts: Callable[[Callable, Sequence], list] | None = None,
    chunk: int = 8,
) -> SearchResult:
    """Maximise the exact loss |ln(P/P')| minus its target over neighbouring streams of length <= horizon.

    ``objective``: "epsilon" (default when the plan claims a uniform pure-DP epsilon)
    compares every transcript with epsilon; "claimed" with the per-transcript bound
    ``plan.claimed_loss(t, halted)`` (Lemma 17 (6)-(7), or Theorem 23's ex-post loss); "delta" maximises
    the hockey-stick divergence delta_eps of the pair's laws at the plan's eps minus the plan's delta
    (:meth:`Plan.privacy_delta`; the (eps, delta) claim of a capped deployment). Deterministic for a
    given ``seed`` (up to the time budget). ``progress`` is an optional callable receiving
    (evaluations, best_loss) after each improvement.

    ``max_attempts``: budget the search by candidate pairs tried instead of CPU time; the result
    then depends only on ``seed`` and ``max_attempts`` (re-runnable byte for byte), and
    ``seconds`` is only a safety cap (``complete`` is False if it stopped the search).

    ``map_starts(fn, items)``: how the starts (the structured constructions, then the random starts)
    are evaluated - ``[fn(x) for x in items]`` in order, here by default; pass e.g. a Dask executor's
    ordered map to evaluate them on a cluster. Each start is a pure function of (plan, horizon, seed,
    start index) (:class:`StartEvaluation`) and the outcomes are reduced in start order, so the result
    is the same whatever the mapper. Starts go out ``chunk`` at a time; the budget is checked between
    chunks (CPU seconds are those of this process plus, for starts evaluated elsewhere, theirs).
    """
    objective = resolve_objective(plan, objective)
    check_positive_int("horizon", horizon)
    plan_h = getattr(plan, "horizon", None)
    if plan_h is not None and horizon > plan_h:
        raise InvalidParameter(f"horizon={horizon} exceeds the plan's horizon={plan_h}")
    check_real("seconds", seconds, low=0.0, low_open=True, infinite_ok=True)
    if max_attempts is not None:
        check_positive_int("max_attempts", max_attempts)
    check_nonnegative_int("seed", seed)
    check_positive_int("chunk", chunk)
    mapper = in_order_map if map_starts is None else map_starts
    rng = np.random.default_rng(seed)  # the local refinement's stream (the starts have their own)
    state = SearchState(seconds, max_attempts, progress)
    task = StartEvaluation(plan, horizon, int(seed), dps, objective)
    starts = delta_starts if objective == "delta" else structured_starts
    run_starts(state, mapper, task, "structured", len(starts(plan, horizon)), 0.4, False, chunk)
    run_starts(state, mapper, task, "random", None, 0.55, True, chunk)
    refine(state, plan, horizon, dps=dps, objective=objective, rng=rng)
    assert state.best is not None
    _, u, v, *_ = state.best
    eps = [float(plan.step(t).eps_t) for t in range(1, len(u) + 1)]
    p, q = decode_point(u, v, eps)
    top = final_delta(plan, p, q, dps=final_dps) if objective == "delta" else \
        final_loss(plan, p, q, dps=final_dps, objective=objective)
    return SearchResult(p=tuple(p), p_prime=tuple(q), epsilon=getattr(plan, "epsilon", None),
                        evaluations=state.evals, seconds=state.used(), seed=seed, attempts=state.attempts,
                        complete=not state.capped, objective=objective, **top)
