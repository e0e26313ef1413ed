"""The reference GTM: Algorithm 1, as literal as the paper, and a driver that runs it from a Plan.

``GTM.init(tau1, mu1)`` draws the shared noise eta_1 ~ Exp(tau1) once.
``GTM.step(M_t, X_t, eps_t, tau2_t, c_t, rho_t, s_t)`` draws eta_{2,t} ~ Exp(tau2_t), forms
Z_t = s_t (mu_1 - eta_1 + eta_{2,t}), lambda_t = rho_t exp(eps_t Z_t), draws N_t ~ Po(lambda_t),
evaluates the mechanism N_t times, counts the +1 outputs K_t, and returns
a_t = s_t (halt) if s_t (K_t - c_t - 1/2) > 0, else a_t = -s_t (continue).

Evaluation budget (``[gtm] evaluation_budget``, docs/deployment.md): every step has a budget
(Lemma 22), and the planner reports an upper bound on Pr[N_t > budget]
(:attr:`StepPlan.budget_exceed_probability`). Under the default policy ``"none"`` it is reported
only: the run is Algorithm 1 and pure epsilon-DP. Under ``"refuse"``, a step whose N_t would exceed
it raises :class:`EvaluationBudgetExceeded` *before evaluating the mechanism at all*, and the GTM
enters a terminal failed state. Although the decision depends on the noise only, it is *not*
harmless: the refused runs are those with the largest lambda_t, the only ones that can halt at a
tiny p_t, and the region {N_t <= budget} is not invariant under Lemma 17's noise shift, so the
truncated mechanism is (epsilon, delta)-DP, not pure (:meth:`gtm_core.planners.Plan.privacy_delta`).
A refused run must never be retried with fresh noise (a retry is a second, unaccounted draw of the
randomness the privacy proof charges for once). With no budget, a count above
:data:`gtm_core.exact_sampling.MAX_UNBUDGETED_COUNT` (10^15 evaluations, which no deployment could
run) still fails the step: a machine limit whose probability is astronomically small.

Sampling: by default (``sampler="exact"``) every random quantity of the GTM - eta_1, eta_{2,t},
N_t, purification's flips - is drawn exactly from random bits (:mod:`gtm_core.exact_sampling`):
from the OS CSPRNG when no generator or seed is given, else from the given numpy generator's raw
bits (reproducible: not for deployment). ``sampler="float"`` keeps the float64 numpy samplers
(``Generator.exponential`` / ``poisson``), which only approximate the laws
(docs/deployment.md, "Exact sampling"); it is for simulation-speed comparisons only.

Secrets - eta_1, eta_{2,t}, Z_t, lambda_t, N_t, K_t - are held in private attributes and never
appear in ``repr``/``str`` or in error messages.

The mechanism side - outputs as +1/-1, the count K_t (:func:`gtm_core.evaluation.count_positive`),
purification and negation, the Bernoulli test mechanism - is :mod:`gtm_core.evaluation`. A step's
values (:class:`StepArguments`, :class:`PendingStep`) are :mod:`gtm_core.step_arguments`; the
rng-or-seed rule (:func:`randomness`, :func:`default_rng`) and the float path's Poisson draw are
:mod:`gtm_core.randomness`; this module re-exports the public names of both.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .errors import (
    EvaluationBudgetExceeded,
    HaltedError,
    InvalidParameter,
    MechanismError,
)
from .evaluation import BernoulliMechanism, count_positive, mechanism_for_step
from .exact_sampling import (
    BitSource,
    PrecisionLimitExceeded,
    START_PREC,
    SharedNoise,
    draw_count,
    fed_count,
    halts,
)
from .planners import Plan, StepPlan
from .randomness import NOT_FOR_DEPLOYMENT, SAMPLERS, default_rng, draw_poisson_within_budget, randomness
from .step_arguments import PendingStep, StepArguments
from .validation import check_nonnegative_int, check_positive, check_stream

__all__ = ["GTM", "GTMRun", "NOT_FOR_DEPLOYMENT", "PendingStep", "SAMPLERS", "StepArguments", "default_rng",
           "randomness", "run_reference"]


class GTM:
    """Algorithm 1, literally: ``init`` then ``step`` until it halts.

    ``rng``: a :class:`gtm_core.exact_sampling.BitSource` (exact sampling from its bits) or a
    numpy Generator (exact sampling from its raw bits, or the float64 samplers with
    ``sampler="float"``); :func:`randomness` is the rule.

    A step is check -> draw -> evaluate -> decide, always in this order and only here:
    :meth:`begin_step` checks the GTM's state and the arguments and draws the noise and N_t
    (touching no data), returning a :class:`PendingStep`; :meth:`finish_step` evaluates the
    mechanism through the caller's ``count(n)``, forms K_t and decides. :meth:`step` is the two
    in one call; a persisted deployment writes its write-ahead record between them. The GTM owns
    its terminal failed state: a refused draw (budget, precision cap) and any exception of the
    evaluation enter it, and a failed GTM never steps again.
    """

    def __init__(self, rng: np.random.Generator | BitSource, *, sampler: str = "exact"):
        if rng is None:
            raise InvalidParameter("rng must be a numpy.random.Generator, got NoneType")
        drawn, _ = randomness(rng, sampler=sampler)
        self._rng = None if isinstance(rng, BitSource) else rng  # a Generator: the float path's draws
        self._source = drawn if isinstance(drawn, BitSource) else None  # the exact path's bits
        self.sampler = sampler
        self._noise: SharedNoise | None = None  # exact path: eta_1 as a lazy real
        self._eta1: float | None = None  # float path
        self._mu1: float | None = None
        self._pending: PendingStep | None = None
        self.halted = False
        self.failed = False
        self.steps_taken = 0

    def __repr__(self) -> str:
        state = "failed" if self.failed else "halted" if self.halted else "running"
        return f"GTM(steps_taken={self.steps_taken}, state={state})"

    __str__ = __repr__

    @property
    def initialized(self) -> bool:
        return self._eta1 is not None or self._noise is not None

    def init(self, tau1: float, mu1: float) -> None:
        """GTM.Init(tau1, mu1): draw eta_1 ~ Exp(tau1) once and store it with mu1."""
        if self.initialized:
            raise HaltedError("GTM.init was already called: eta_1 must be drawn exactly once")
        tau1 = check_positive("tau1", tau1)
        self._mu1 = check_positive("mu1", mu1)
        if self._source is not None:
            self._noise = SharedNoise.draw(tau1, self._mu1, self._source)
            self._noise.eta1.enclosure(START_PREC)  # the first bits now; later steps may append
        else:
            self._eta1 = float(self._rng.exponential(tau1))

    def step(
        self,
        mechanism: Callable,
        data: Any,
        eps_t: float,
        tau2: float,
        c: int,
        rho: float,
        s: int,
        *,
        evaluation_budget: int | None = None,
    ) -> int:
        """GTM.Step(M_t, X_t, eps_t, tau2_t, c_t, rho_t, s_t) -> a_t in {-s_t, s_t}; a_t = s_t halts.

        ``mechanism`` is the mechanism Algorithm 1 is fed (K_t counts its +1 outputs):
        :meth:`begin_step` then :meth:`finish_step` with :func:`gtm_core.evaluation.count_positive`.
        """
        self._check_ready()
        arguments = StepArguments(eps_t, tau2, c, rho, s, evaluation_budget)
        if not callable(mechanism):
            raise MechanismError(f"mechanism must be callable, got {type(mechanism).__name__}")
        pending = self.begin_step(arguments)
        return self.finish_step(pending, lambda n: count_positive(mechanism, data, n))

    def begin_step(self, arguments: StepArguments) -> PendingStep:
        """Check, then draw: eta_{2,t} ~ Exp(tau2), lambda_t, N_t ~ Po(lambda_t). Touches no data.

        Refuses (HaltedError) a GTM that is not initialised, has halted, has failed or has a
        step pending. Raises :class:`EvaluationBudgetExceeded` (and enters the failed state) if
        N_t would exceed the enforced budget, and
        :class:`~gtm_core.exact_sampling.PrecisionLimitExceeded` (failed too) if a sampling
        decision needed more bits than the cap.
        """
        self._check_ready()
        if not isinstance(arguments, StepArguments):
            raise InvalidParameter(f"arguments must be StepArguments, got {type(arguments).__name__}")
        if arguments.phi > 0 and self._source is None:
            raise InvalidParameter("the float sampler purifies the mechanism (mechanism_for_step), "
                                   "not the count: phi must be 0")
        a = arguments
        if self._noise is not None:
            try:
                n = draw_count(self._noise, self._source, eps_t=a.eps_t, tau2=a.tau2, rho=a.rho,
                               s=a.s, budget=a.evaluation_budget)
            except PrecisionLimitExceeded:
                self.failed = True
                raise
        else:
            eta2 = 0.0 if math.isinf(a.tau2) else float(self._rng.exponential(a.tau2))
            z = a.s * (self._mu1 - self._eta1 + eta2)
            exponent = a.eps_t * z
            lam = a.rho * math.exp(exponent) if exponent < 700.0 else math.inf
            try:
                n = draw_poisson_within_budget(self._rng, lam, a.evaluation_budget)
            except EvaluationBudgetExceeded:  # lambda_t beyond the sampler without a budget
                self.failed = True
                raise
        self.steps_taken += 1
        if n is None:
            self.failed = True
            raise EvaluationBudgetExceeded(
                f"step {self.steps_taken} needs more than its evaluation budget of "
                f"{a.evaluation_budget} evaluations; the GTM is now in its terminal failed state"
            )
        self._pending = PendingStep(self.steps_taken, a, n)
        return self._pending

    def _check_ready(self) -> None:
        """Refuse a step on a GTM that cannot step (HaltedError)."""
        if not self.initialized:
            raise HaltedError("GTM.step called before GTM.init")
        if self.failed:
            raise HaltedError("the GTM is in its terminal failed state; no further steps")
        if self.halted:
            raise HaltedError("the GTM has halted; no further steps")
        if self._pending is not None:
            raise HaltedError(f"step {self._pending.t} is pending: finish it before the next one")

    def finish_step(self, pending: PendingStep, count: Callable[[int], int]) -> int:
        """Evaluate, then decide: K_t from ``count(N_t)`` (the caller's evaluation of the
        mechanism, returning its number of +1 outputs), then a_t = s_t (halt) if
        s_t (K_t - c_t - 1/2) > 0, else -s_t.

        The reported count is turned into K_t of the fed mechanism as the step's arguments say
        (:func:`gtm_core.exact_sampling.fed_count`: purification's exact flips, then the
        negation). Any exception of ``count`` (a mechanism fault, a timeout, an interruption)
        enters the terminal failed state and is re-raised: a step whose mechanism may have been
        evaluated is never run again.
        """
        if self._pending is None or pending is not self._pending:
            raise HaltedError("finish_step needs the step begin_step returned, once")
        self._pending = None
        a = pending.arguments
        try:
            k_raw = count(pending.evaluations)
            k = fed_count(k_raw, pending.evaluations, phi=a.phi, s=-1 if a.negate else 1,
                          source=self._source)
        except BaseException:
            self.failed = True
            raise
        if halts(k, a.c, a.s):
            self.halted = True
            return a.s
        return -a.s

    def secret_eta1(self) -> float:
        """eta_1 of the float path (tests only; a secret: never print, log or release it)."""
        if self._eta1 is None:
            raise HaltedError("GTM.init has not run on the float path; there is no float eta_1")
        return self._eta1

    def secret_eta1_bits(self) -> str:
        """eta_1's drawn bits (exact path), fixed-width hex, for the deployment's state file only
        (a secret: never print, log or release it)."""
        if self._noise is None:
            raise HaltedError("GTM.init has not run on the exact path; there are no eta_1 bits")
        return self._noise.secret_hex()

    @classmethod
    def restore_exact(cls, source: BitSource, noise: SharedNoise, *, steps_taken: int) -> "GTM":
        """A GTM whose Init already ran, with eta_1's drawn bits read back from a persisted
        deployment state (:mod:`gtm_core.deployment`; refined later, never redrawn)."""
        gtm = cls(source)
        if not isinstance(noise, SharedNoise):
            raise InvalidParameter(f"noise must be a SharedNoise, got {type(noise).__name__}")
        gtm._noise, gtm._mu1 = noise, noise.mu1
        gtm.steps_taken = check_nonnegative_int("steps_taken", steps_taken)
        return gtm

    @classmethod
    def restore(cls, rng: np.random.Generator, *, eta1: float, mu1: float,
                steps_taken: int) -> "GTM":
        """A GTM whose Init already ran, float path (tests that fix eta_1; ``sampler="float"``).

        Calling it with a fresh eta_1 would defeat the point of drawing it once. Deployments use
        :meth:`restore_exact`.
        """
        gtm = cls(rng, sampler="float")
        gtm._eta1 = float(eta1)
        gtm._mu1 = check_positive("mu1", mu1)
        gtm.steps_taken = check_nonnegative_int("steps_taken", steps_taken)
        return gtm


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------


class GTMRun:
    """Drives the reference GTM from a :class:`Plan`: step t uses ``plan.step(t)``.

    Public record: ``transcript`` (the outputs a_t as +1/-1 in the *original* orientation:
    +1 = halted, -1 = continued) and ``halted_at``. Evaluation counts N_t are recorded but are
    sensitive (they reveal the noise): read them with :meth:`evaluation_counts`.

    Args:
        plan: the plan to run (:func:`gtm_core.planners.make_plan`).
        rng: a :class:`numpy.random.Generator` (treated as reproducible), or
        seed: an integer seed (tests only: the run says "not for deployment"). With neither,
            the generator is seeded from the operating system (a deployment).

    Attributes:
        t: the index of the *next* step (1-based): 1 before the first step, k + 1 after k steps.
        transcript: list of +1 (halted) / -1 (continued), one per completed step.
        halted_at: the step at which the run halted, or None.
        halted: True once the GTM has halted (no further steps).
        failed: True once a step failed - its draw was refused (evaluation budget, precision cap)
            or its evaluation raised - (terminal; no further steps).
        seeded: True when the randomness is reproducible (not for deployment).

    Example:
        >>> import numpy as np
        >>> from gtm_core import GTMConfig, make_plan
        >>> run = GTMRun(make_plan(GTMConfig.load("examples/default.toml")), seed=0)
        >>> run.t
        1
        >>> run.step(BernoulliMechanism(0.001, np.random.default_rng(1)))   # far below p_bar: continue
        False
        >>> run.step(BernoulliMechanism(0.9, np.random.default_rng(2)))     # above p*: halt
        True
        >>> run.transcript, run.halted_at, run.t
        ([-1, 1], 2, 3)
    """

    def __init__(self, plan: Plan, rng: np.random.Generator | BitSource | None = None, *,
                 seed: int | None = None, sampler: str = "exact"):
        if not isinstance(plan, Plan):
            raise InvalidParameter(f"plan must be a gtm_core Plan, got {type(plan).__name__}")
        self.plan = plan
        drawn, self.seeded = randomness(rng, seed, sampler=sampler)
        self._rng = drawn if sampler == "float" else None  # the float path's wrappers draw from it
        gtm = GTM(drawn, sampler=sampler)
        self._gtm = gtm
        self._gtm.init(plan.tau1, plan.mu1)
        self.transcript: list[int] = []
        self._evaluations: list[int] = []
        self.halted_at: int | None = None

    def __repr__(self) -> str:
        note = f", {NOT_FOR_DEPLOYMENT}" if self.seeded else ""
        return (
            f"GTMRun(parameterization={self.plan.parameterization!r}, steps={len(self.transcript)}, "
            f"halted_at={self.halted_at}, failed={self.failed}{note})"
        )

    __str__ = __repr__

    @property
    def t(self) -> int:
        """Index of the next step (1-based)."""
        return len(self.transcript) + 1

    @property
    def halted(self) -> bool:
        """True once the GTM has halted."""
        return self._gtm.halted

    @property
    def failed(self) -> bool:
        """True once a step failed (the GTM's terminal failed state)."""
        return self._gtm.failed

    def evaluation_counts(self) -> list[int]:
        """The N_t of every completed step (sensitive: do not publish)."""
        return list(self._evaluations)

    def step(self, mechanism: Callable, data: Any = None) -> bool:
        """Run the next step on mechanism M_t (an eps_t-DP map data -> +1/-1). Returns True on halt.

        ``mechanism(data)`` must return +1/-1 (or a bool); a mechanism with a ``batch(data, n)``
        method is evaluated in one call. The step is purified and/or negated as its plan says.

        Raises:
            EvaluationBudgetExceeded: the step needed more evaluations than its budget; the run
                is now failed and must not be retried with fresh noise.
            HaltedError: the run has already halted or failed.
            MechanismError: the mechanism raised or returned something other than +1/-1.
        """
        sp: StepPlan = self.plan.step(self.t)
        if not callable(mechanism):
            raise MechanismError(f"mechanism must be callable, got {type(mechanism).__name__}")
        budget = self.plan.enforced_budget(sp)
        if self._gtm.sampler == "exact":  # the GTM purifies and flips the original M_t's count
            fed, arguments = mechanism, StepArguments.planned(sp, budget)
        else:  # the float path feeds the wrapped mechanism (its flips from the same generator)
            fed = mechanism_for_step(mechanism, sp, self._rng)
            arguments = StepArguments(sp.eps_t, sp.tau2, sp.c, sp.rho, sp.s, budget)
        pending = self._gtm.begin_step(arguments)
        a = self._gtm.finish_step(pending, lambda n: count_positive(fed, data, n))
        self._evaluations.append(pending.evaluations)
        halted = a == sp.s
        self.transcript.append(1 if halted else -1)
        if halted:
            self.halted_at = sp.t
        return halted


def run_reference(plan: Plan, p, rng: np.random.Generator, *, sampler: str = "exact") -> tuple[int, int]:
    """One run of the reference GTM on a Bernoulli stream p[0..T-1]: (outcome code, evaluations).

    The outcome code is that of the target protocol (``docs/protocol.md``): t when the run halted
    at step t, 0 when it continued through every step, and -t when step t needed more evaluations
    than its budget (:class:`EvaluationBudgetExceeded`, raised before the mechanism is evaluated):
    the run stops there, in its terminal failed state - an observable outcome, never retried.
    """
    p = check_stream("p", p)
    run = GTMRun(plan, rng, sampler=sampler)
    total = 0
    for t, pt in enumerate(p, start=1):
        try:
            halted = run.step(BernoulliMechanism(float(pt), rng))
        except EvaluationBudgetExceeded:
            return -t, total
        total += run.evaluation_counts()[-1]
        if halted:
            return t, total
    return 0, total
