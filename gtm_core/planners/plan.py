"""The plan of a configuration and the one registry of parameterizations.

:data:`REGISTRY` maps every name of :data:`gtm_core.config.PARAMETERIZATIONS` (the names a
configuration may give; checked below) to its :class:`Parameterization`: the step planner and
the properties other code asks about (:data:`STEP_PLANNERS` is the name -> planner view). A
:class:`Plan` holds the global noise parameters (tau_1, mu_1) and computes :class:`StepPlan`
values lazily (cached), so long horizons cost nothing until used.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

from .. import formulas as F
from ..config import PARAMETERIZATIONS, GTMConfig
from ..errors import InvalidParameter, UnsupportedConfiguration
from ..validation import check_bool, check_positive_int
from .exact_noise import exact_noise_step
from .exact_tails import exact_step
from .horizon import horizon_step
from .steps import StepPlan, checked_step_plan, global_noise
from .theorem21 import theorem21_step
from .theorem23 import theorem23_step

@dataclass(frozen=True, kw_only=True)
class Parameterization:
    """What the suite needs to know about one parameterization (read this instead of listing names).

    ``noise``: whose global noise and noise range the steps use (``"theorem21"``: tau_1, tau_2,
    Lambda_t of Theorem 21; ``"theorem23"``: tau_1 = 1/eps_C and per-step tau_{2,t}; ``"horizon"``:
    Theorem 21's tau_1, tau_2, mu_1, with Lambda_t at the nominal share beta_t = beta/T of the horizon).
    ``chernoff_thresholds``: c_t, rho_t come from Lemma 11 / Lemma 20's Chernoff thresholds (else
    from exact Poisson tails). ``ex_post``: the privacy claim is Theorem 23's ex-post loss (no
    uniform epsilon). ``in_paper``: the paper's own parameterization (else beyond the paper).
    """

    name: str
    step_planner: Callable[[GTMConfig, int], StepPlan]
    noise: str
    chernoff_thresholds: bool
    ex_post: bool
    in_paper: bool


REGISTRY: dict[str, Parameterization] = {
    p.name: p
    for p in (
        Parameterization(name="theorem21", step_planner=theorem21_step, noise="theorem21",
                         chernoff_thresholds=True, ex_post=False, in_paper=True),
        Parameterization(name="theorem23", step_planner=theorem23_step, noise="theorem23",
                         chernoff_thresholds=True, ex_post=True, in_paper=True),
        Parameterization(name="exact", step_planner=exact_step, noise="theorem21",
                         chernoff_thresholds=False, ex_post=False, in_paper=False),
        Parameterization(name="exact_noise", step_planner=exact_noise_step, noise="theorem21",
                         chernoff_thresholds=False, ex_post=False, in_paper=False),
        Parameterization(name="horizon", step_planner=horizon_step, noise="horizon",
                         chernoff_thresholds=False, ex_post=False, in_paper=False),
    )
}
if tuple(REGISTRY) != PARAMETERIZATIONS:  # one list of names: the configuration's
    raise ImportError("gtm_core.planners.REGISTRY does not match gtm_core.config.PARAMETERIZATIONS")

STEP_PLANNERS: dict[str, Callable[[GTMConfig, int], StepPlan]] = {n: p.step_planner for n, p in REGISTRY.items()}


@dataclass(frozen=True)
class Plan:
    """Global parameters of one GTM run plus a lazy per-step table.

    Build it with :func:`make_plan`. ``plan.step(t)`` is the :class:`StepPlan` of step t
    (computed on first use and cached); ``plan.steps()`` lists steps 1..horizon.

    Attributes:
        config: the configuration it was planned from.
        parameterization: the planner used.
        tau1: the scale of the shared noise eta_1 ~ Exp(tau1).
        mu1: the shift mu_1 with Pr[eta_1 > mu_1] <= beta/4 (Lemma 19).
        epsilon: the uniform pure-DP claim (None for the ex-post ``theorem23``).
    """

    config: GTMConfig
    parameterization: str
    tau1: float
    mu1: float
    epsilon: float | None  # uniform pure-DP claim (None for the ex-post theorem23)

    @property
    def horizon(self) -> int:
        return self.config.stream.horizon

    def step(self, t: int) -> StepPlan:
        """The parameters of step t (1-based; beyond the horizon only when nothing is per-step)."""
        return plan_step(self.config, check_positive_int("t", t))

    def steps(self, ts=None) -> list[StepPlan]:
        """The :class:`StepPlan` of every step in ``ts`` (default: 1..horizon)."""
        ts = range(1, self.horizon + 1) if ts is None else ts
        try:
            ts = list(ts)
        except TypeError:
            raise InvalidParameter(f"steps must be an iterable of step indices, got {ts!r}") from None
        return [self.step(t) for t in ts]

    def claimed_loss(self, t: int, halted: bool) -> float:
        """Privacy loss bound of a transcript ending at t (Lemma 17 (6)-(7))."""
        t = check_positive_int("t", t)
        halted = check_bool("halted", halted)
        if REGISTRY[self.parameterization].ex_post:
            g = self.config.gtm
            return float(
                F.theorem23_expost_loss(halted, self.step(t).eps_t, g.epsilon_c, g.c_h, self.step(t).beta_t)
            )
        if not halted:
            return 1 / self.tau1
        return 1 / self.tau1 + 2 / self.step(t).tau2

    @property
    def budget_policy(self) -> str:
        """The evaluation-budget policy of the configuration: ``"none"`` or ``"refuse"``."""
        return self.config.gtm.evaluation_budget

    def enforced_budget(self, sp: StepPlan) -> int | None:
        """The evaluation budget a run enforces at step ``sp.t``: ``sp.evaluation_budget`` under
        the ``"refuse"`` policy, None (no cap: Algorithm 1) under ``"none"``. The one place the
        policy is turned into behaviour."""
        return sp.evaluation_budget if self.budget_policy == "refuse" else None

    @property
    def pure(self) -> bool:
        """True when the deployed mechanism is Algorithm 1 itself (no budget is enforced), so its
        privacy claim is pure (delta = 0)."""
        return self.budget_policy == "none"

    def budget_stop_probability(self) -> float:
        """An upper bound on Pr[some step t <= horizon has N_t > budget_t] (union bound of the
        per-step bounds :attr:`StepPlan.budget_exceed_probability`; the noise alone decides it)."""
        return math.fsum(sp.budget_exceed_probability for sp in self.steps())

    def worst_claimed_loss(self) -> float:
        """The largest claimed loss of a transcript up to the horizon: epsilon, or for the ex-post
        ``theorem23`` the maximum of :meth:`claimed_loss` over steps and outcomes."""
        if self.epsilon is not None:
            return self.epsilon
        return max(self.claimed_loss(t, h) for t in range(1, self.horizon + 1) for h in (False, True))

    def privacy_delta(self) -> float:
        """The delta of the deployed mechanism's (epsilon, delta) claim (0 for the ``"none"`` policy).

        Under ``"refuse"`` the deployed mechanism M' agrees with Algorithm 1's M on the event E that
        no step up to the horizon exceeds its budget (E depends on the noise only, so Pr[not E] =
        delta_0 is the same on every input). For every output set S and neighbours X, X':
        Pr[M'(X) in S] <= Pr[M(X) in S] + delta_0 <= e^eps Pr[M(X') in S] + delta_0
        <= e^eps (Pr[M'(X') in S] + delta_0) + delta_0, so delta = (1 + e^eps) delta_0 with delta_0 <=
        :meth:`budget_stop_probability` (docs/deployment.md). The certificate re-derives it in arb."""
        if self.pure:
            return 0.0
        return (1.0 + math.exp(self.worst_claimed_loss())) * self.budget_stop_probability()

    def privacy_statement(self) -> str:
        """One line: the privacy claim of the deployed mechanism."""
        eps = self.worst_claimed_loss()
        kind = "ex-post " if self.epsilon is None else ""
        if self.pure:
            return f"{kind}{eps:.6g}-differentially private (pure; evaluation budget reported, not enforced)"
        return (f"({kind}{eps:.6g}, {self.privacy_delta():.3g})-differentially private (approximate: the "
                f"evaluation budget is enforced by refusal)")

    @property
    def good_event_failure(self) -> float:
        """Lemma 19(1) with c_G = 1/4: Pr[G^c] <= e^{-mu1/tau1} + beta/4 = beta/2."""
        return float(F.lemma19_good_event_failure(self.mu1, self.tau1, self.config.gtm.beta))

    def globals_dict(self) -> dict:
        return {
            "parameterization": self.parameterization,
            "tau1": self.tau1,
            "mu1": self.mu1,
            "epsilon": self.epsilon,
            "good_event_failure": self.good_event_failure,
        }


@functools.lru_cache(maxsize=200_000)
def plan_step(config: GTMConfig, t: int) -> StepPlan:
    """Step t of the configuration's plan (cached; see :func:`uncached_step_plan`)."""
    return uncached_step_plan(config, t)


def uncached_step_plan(config: GTMConfig, t: int) -> StepPlan:
    """Step t without the cache (a deployment plans each step once; the cache would grow with
    the number of steps)."""
    return checked_step_plan(REGISTRY[config.gtm.parameterization].step_planner, config, t)


def make_plan(config: GTMConfig) -> Plan:
    """The Plan for a configuration: global noise parameters and a lazy step table.

    Args:
        config: a validated :class:`~gtm_core.config.GTMConfig`; its ``parameterization`` picks
            the planner (``theorem21``, ``theorem23``, ``exact``, ``exact_noise``).

    Returns:
        Plan: tau1, mu1 and the per-step parameters (step 1 is computed at once, so an
        unplannable configuration fails here).

    Raises:
        InvalidParameter: ``config`` is not a GTMConfig.
        UnsupportedConfiguration: the configuration cannot be planned (named in the message).

    Example:
        >>> from gtm_core import GTMConfig
        >>> plan = make_plan(GTMConfig.load("examples/default.toml"))
        >>> plan.tau1, plan.step(1).c, plan.step(1).s
        (3.0, 282, 1)
    """
    if not isinstance(config, GTMConfig):
        raise InvalidParameter(f"config must be a GTMConfig, got {type(config).__name__}")
    g = config.gtm
    name = g.parameterization
    if name not in REGISTRY:  # unreachable for a validated GTMConfig
        raise UnsupportedConfiguration(f"parameterization {name!r} has no planner")
    tau1, mu1, _ = global_noise(config)
    eps = None if REGISTRY[name].ex_post else g.epsilon
    for label, v in (("tau1", tau1), ("mu1", mu1)):
        if not math.isfinite(v) or v <= 0:
            raise UnsupportedConfiguration(f"the configuration gives a non-finite {label} ({v!r})")
    plan = Plan(config=config, parameterization=name, tau1=tau1, mu1=mu1, epsilon=eps)
    plan.step(1)  # fail early on an unplannable configuration
    return plan


def check_step_index(plan: Plan, t: int) -> int:
    """A step index t of ``plan``: a positive integer."""
    return check_positive_int("step index t", t)
