"""The GTM audit: ``audit(target, epsilon=..., eps_t=..., seconds=...)`` and its configuration adapters.

The auditor searches neighbouring Bernoulli streams (:mod:`audits.pair_search`), compares
halting-time distributions on events (:mod:`audits.events`) and reports, at the stated
confidence, a lower bound on the deployment's privacy loss (:mod:`audits.statistics`). The
verdict is ``violation`` when the bound exceeds the claimed epsilon, else
``no-violation-found``. The three-phase engine is :mod:`audits.audit_engine`, the result
objects :mod:`audits.audit_results`.

* :class:`GTMProblem` - the engine's problem for a GTM target: candidate pairs, refinements,
  halting-time events, coverage.
* :func:`audit` - the public entry point; :func:`audit_privacy` checks eps_t once.
* :func:`claimed_epsilon`, :func:`audit_parameters` - what a configuration claims.
"""

from __future__ import annotations

import time
from typing import Sequence

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter
from gtm_core.input_privacy import InputPrivacy
from gtm_core.validation import check_positive_int

from . import pair_search
from .audit_engine import DEADLINE_GRACE_SECONDS, check_audit_budget, run_audit
from .audit_results import AuditResult, SearchCoverage
from .events import EventSpace, halting_events, outcome_codes
from .pair_search import ORACLE_ATTEMPTS_PER_SECOND, ORACLE_TIME_CAP_FACTOR
from .targets import Target

DEFAULT_MAX_T = 50  # longest stream an audit tries unless told (and a per-step eps_t allows)


class GTMProblem:
    """Neighbouring Bernoulli streams for a GTM target; outputs are halting times.

    ``eps_t`` (an :class:`~gtm_core.input_privacy.InputPrivacy` or what its ``from_user`` accepts)
    decides the neighbours; a per-step list caps the streams to its length (no eps_t is guessed
    past it), and extra candidates longer than the list are refused."""

    initial_samples = None  # the engine's default
    explore = True  # keep the best pairs by point estimate too (rare-event leaks)

    def __init__(self, target: Target, eps_t, *, max_T: int = DEFAULT_MAX_T, oracle_plan=None,
                 oracle_seconds: float = 10.0, extra_candidates=(), oracle_attempts: int | None = None,
                 map_starts=None, claimed_plan=None):
        self.target = target
        self.claimed_plan = claimed_plan  # where the fine family is densest (pair_search.fine_candidates); never a skip
        self.privacy = InputPrivacy.from_user(eps_t)
        limit = target.max_T if target.max_T is not None else max_T
        self.max_T = self.privacy.longest_stream(min(max_T, limit))
        self.oracle_plan = oracle_plan
        self.oracle_seconds = oracle_seconds
        self.oracle_attempts = oracle_attempts  # a count (reproducible) instead of the seconds, when given
        self.map_starts = map_starts  # where the exact search's starts run (an executor's map_ordered)
        self.extra = list(extra_candidates)
        steps = self.privacy.steps
        too_long = [c for c in self.extra if steps is not None and len(c.p) > steps]
        if too_long:
            raise InvalidParameter(f"extra_candidates: a pair of {len(too_long[0].p)} steps, but eps_t has "
                                   f"{steps} per-step values")
        self._events: dict[int, EventSpace] = {}

    def __getstate__(self):
        # shipped to Dask workers with every batch: the mapper (bound to the client's executor) stays here,
        # the workers only sample
        return {**self.__dict__, "map_starts": None}

    def initial_candidates(self):
        candidates = pair_search.initial_candidates(self.privacy, self.max_T, plan=self.claimed_plan)
        if self.oracle_plan is not None:
            candidates = pair_search.oracle_candidates(
                self.oracle_plan, self.privacy, self.max_T, horizon=min(3, self.max_T), seconds=self.oracle_seconds,
                max_attempts=self.oracle_attempts, map_starts=self.map_starts) + candidates
        return self.extra + candidates

    def refine(self, candidate, rng):
        return pair_search.refine(candidate, self.privacy, self.max_T, rng)

    def coverage(self) -> SearchCoverage:
        """The searched region and what is skipped, with reasons (:func:`audits.pair_search.coverage`)."""
        return pair_search.coverage(self.max_T, self.privacy, self.claimed_plan)

    def inputs(self, candidate):
        return candidate.p, candidate.p_prime

    def events(self, candidate):
        T = candidate.T
        if T not in self._events:
            self._events[T] = halting_events(T, stops=True)  # budget stops are outcomes (docs/protocol.md)
        return self._events[T]

    def sample_codes(self, inp, n, seed):
        # a budget stop (-t, docs/protocol.md) is an outcome of its own: event code T + t
        return outcome_codes(self.target.sample(list(inp), int(n), int(seed)).halt, len(inp))

    def describe_input(self, inp):
        return [float(x) for x in inp]


def audit(target: Target, *, epsilon: float, eps_t, seconds: float | None = 60.0, seed: int = 0,
          confidence: float = 0.95, progress: bool = True, max_samples: int | None = None,
          max_T: int = DEFAULT_MAX_T, oracle_plan=None, oracle_seconds: float | None = None,
          extra_candidates: Sequence = (), executor=None, claimed_plan=None, early_stop: bool = False) -> AuditResult:
    """Audit a GTM deployment for a claimed epsilon, given its inputs' privacy eps_t.

    The auditor searches pairs of neighbouring Bernoulli streams p, p' (every step's odds within
    a factor e^eps_t, in both directions), samples the target's halting times on both, and
    reports a lower bound on the privacy loss ln(Pr[E | p] / Pr[E | p']) of one pre-registered
    event E that holds with probability ``confidence``.

    Args:
        target: the deployment to audit, any :class:`audits.targets.Target`
            (:class:`~audits.targets.SimulatorTarget`, :class:`~audits.targets.ReferenceTarget`,
            :class:`~audits.targets.CallableTarget`, :class:`~audits.targets.SubprocessTarget`).
        epsilon: the output privacy the deployment claims (pure epsilon-DP); the verdict is
            ``"violation"`` when the lower bound exceeds it. A capped deployment
            (``evaluation_budget = "refuse"``) claims only (epsilon, delta): audit it with
            :func:`audits.capped_claim.audit_claim` and :func:`audits.capped_claim.privacy_claim`.
        eps_t: the privacy of the input mechanisms M_t: a number for every step, or a list
            with one number per step 1..L, or an :class:`~gtm_core.input_privacy.InputPrivacy`
            (the audit then builds streams of at most L steps, never guessing eps_t beyond the
            list); each >= 0 as in a configuration (a step with eps_t = 0 has identical
            neighbours), not all 0. It decides which streams count as neighbours.
        seconds: wall-clock budget in seconds for the whole audit (selection and estimation),
            or ``None`` to stop on ``max_samples`` only (then the result depends only on ``seed``).
        seed: seed of the audit's own generator; every request to the target carries a seed
            derived from it.
        confidence: probability that the reported lower bound is below the true loss.
        progress: show a progress bar on stderr (only drawn on a terminal by the CLI).
        max_samples: total number of runs to request from the target (None = no limit).
        max_T: longest stream (number of steps) to try (at most the length of a list ``eps_t``).
        oracle_plan: when the audited deployment is one of ours with this plan, the exact
            engine's worst-case search (:func:`gtm_core.exact.worst_case_search`) proposes
            candidate pairs first (for ``oracle_seconds``, default 10% of the
            budget).
        oracle_seconds: time given to that search.
        extra_candidates: additional candidate stream pairs to consider first.
        executor: where the runs are computed (:mod:`audits.execution`; default in-process) - the
            result does not depend on it.
        claimed_plan: the plan the deployment claims to run (``gtm audit --config``), when known: the fine
            family (:func:`audits.pair_search.fine_candidates`) is then also dense on longer streams near
            its decision levels. It decides where the search is densest, never what it skips.
        early_stop: early verdicts (:mod:`audits.early_stop`; ``gtm audit`` turns them on unless
            ``--no-early-stop``): the audit stops as soon as an interim look's bound on the witness clears the
            claim, with the same error guarantee alpha; the result's ``early_stop`` has the time to verdict.
            Off (the default here), the result is the fixed-sample test's, as before.

    Returns:
        AuditResult: ``verdict``, ``epsilon_claimed``, ``epsilon_lower_bound``, ``confidence``,
        the ``witness`` (streams, event, both probabilities and their intervals), ``samples``
        and ``seconds``; ``to_dict()`` is the JSON form of ``gtm audit --json``.

    Raises:
        InvalidParameter: a bad argument (named in the message).
        TargetError: the target crashed, hung or answered something malformed (never a verdict).

    Example:
        >>> from gtm_core import GTMConfig, make_plan
        >>> from audits.targets import SimulatorTarget
        >>> plan = make_plan(GTMConfig.load("examples/default.toml"))
        >>> result = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None,
        ...                max_samples=40_000, seed=0, progress=False)
        >>> result.verdict, result.epsilon_lower_bound <= 1.0
        ('no-violation-found', True)
    """
    privacy = check_audit_arguments(epsilon=epsilon, eps_t=eps_t, seconds=seconds, max_samples=max_samples,
                                    confidence=confidence, seed=seed, max_T=max_T)
    if seconds is not None:
        # a hard budget: no answer is awaited past it (plus a grace for the final bookkeeping)
        target.set_deadline(time.monotonic() + seconds + DEADLINE_GRACE_SECONDS)
    oracle_seconds, attempts = _oracle_effort(seconds, oracle_seconds)
    problem = GTMProblem(target, privacy, max_T=max_T, oracle_plan=oracle_plan, oracle_seconds=oracle_seconds,
                         extra_candidates=extra_candidates, oracle_attempts=attempts,
                         map_starts=None if executor is None else executor.map_ordered, claimed_plan=claimed_plan)
    return run_audit(problem, epsilon=epsilon, seconds=seconds, max_samples=max_samples, seed=seed,
                     confidence=confidence, progress=progress, target_name=target.describe(), executor=executor,
                     early_stop=early_stop)


def _oracle_effort(seconds: float | None, oracle_seconds: float | None) -> tuple[float, int | None]:
    """The exact search's effort in an audit: its seconds (default 10% of a time budget, else 10 s) and,
    with a sample budget only, an attempt count (ORACLE_ATTEMPTS_PER_SECOND per second of oracle_seconds,
    CPU time capped at ORACLE_TIME_CAP_FACTOR times it), so the proposal - and the whole audit - is a
    function of the seed wherever it runs (None: the search is timed)."""
    if oracle_seconds is None:
        oracle_seconds = 0.1 * seconds if seconds is not None else 10.0
    if seconds is not None:
        return oracle_seconds, None
    attempts = max(20, int(oracle_seconds * ORACLE_ATTEMPTS_PER_SECOND))
    return oracle_seconds * ORACLE_TIME_CAP_FACTOR, attempts


def audit_privacy(eps_t) -> InputPrivacy:
    """The inputs' privacy of an audit: :meth:`InputPrivacy.from_user` (a number or a non-empty list, every
    value checked as the configuration checks it), and not 0 at every step (neighbours would all be
    identical: nothing to audit).

    Raises:
        InvalidParameter: a bad eps_t (the message names eps_t and the value).
    """
    privacy = InputPrivacy.from_user(eps_t)
    if not privacy.any_positive:
        raise InvalidParameter(f"eps_t is 0 at every step: neighbouring streams are identical, nothing to audit "
                               f"(got {privacy.to_json()!r})")
    return privacy


def check_audit_arguments(*, epsilon: float, eps_t, seconds: float | None, max_samples: int | None,
                          confidence: float, seed: int, max_T: int) -> InputPrivacy:
    """Every argument :func:`audit` checks, checked before anything runs (``gtm audit`` calls it before
    starting the target): the budget and claim (:func:`audits.audit_engine.check_audit_budget`), eps_t
    (:func:`audit_privacy`, returned) and max_T >= 1.

    Raises:
        InvalidParameter: the first bad argument (named in the message with its value).
    """
    check_audit_budget(epsilon=epsilon, seconds=seconds, max_samples=max_samples, confidence=confidence, seed=seed)
    privacy = audit_privacy(eps_t)
    check_positive_int("max_T", max_T)
    return privacy


def claimed_epsilon(plan) -> float:
    """The privacy loss a deployment of ``plan`` claims: epsilon, or for the ex-post parameterization
    (Theorem 23) the largest claimed loss of a halting transcript up to the horizon."""
    if plan.parameterization != "theorem23":
        return float(plan.epsilon)
    return max(plan.claimed_loss(t, True) for t in range(1, plan.horizon + 1))


def audit_parameters(config: GTMConfig) -> tuple[float, InputPrivacy]:
    """(claimed epsilon, eps_t) of the deployment a configuration describes - what ``gtm audit --config``
    and the certificate's audit witness audit against."""
    return claimed_epsilon(make_plan(config)), InputPrivacy.from_user(config.stream.eps_t)
