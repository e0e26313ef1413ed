"""Planners: turn a :class:`GTMConfig` into Algorithm 1's per-step parameters.

* ``theorem21`` - Theorem 21 (uniform pure eps-DP, beta_t/4 per error type).
* ``theorem23`` - Theorem 23 (ex-post loss eps_C [+ C_H eps_t ln(4/beta_t) at halting]).
* ``exact``     - exact-tail calibration (registered by :mod:`gtm_core.exact_calibration`).
* ``exact_noise`` - exact calibration integrated over the per-step noise eta_{2,t}
  (registered by :mod:`gtm_core.exact_noise_calibration`).

A :class:`Plan` holds the global noise parameters (tau_1, mu_1) and computes
:class:`StepPlan` values lazily (cached), so long horizons cost nothing until used.
Every number here comes from :mod:`gtm_core.formulas`.
"""

from __future__ import annotations

import functools
import importlib
import math

import numpy as np
from dataclasses import asdict, dataclass
from typing import Callable

from . import formulas as F
from .budget import budget_exceed_probability
from . import rounding as R
from .config import GTMConfig, StepSpec
from .errors import GTMError, InvalidParameter, UnsupportedConfiguration
from .validation import check_positive_int


@dataclass(frozen=True)
class StepPlan:
    """Per-step parameters of Algorithm 1 and the guarantees they carry.

    ``s = -1`` means the flipped variant: the GTM is fed the negated mechanism
    (success probability q_t = 1 - p_t) with target q*_t = 1 - p*_t.
    Thresholds ``p_star``/``p_bar`` are always in terms of the original p_t.
    """

    t: int
    s: int
    c: int
    rho: float
    tau2: float
    Lambda: float
    p_bar: float
    lambda_max: float
    eps_t: float
    p_star: float
    delta_t: float
    beta_t: float
    beta_I: float
    beta_II: float
    phi: float
    evaluation_budget: int
    budget_exceed_probability: float

    @property
    def flipped(self) -> bool:
        return self.s == -1

    @property
    def halt_threshold(self) -> float:
        """Corollary 25(1): halts (w.h.p.) whenever p_t >= p*_t + phi_t."""
        return self.p_star + self.phi

    @property
    def continue_threshold(self) -> float:
        """Corollary 25(2): continues (w.h.p.) whenever p_t <= p_bar_t - phi_t."""
        return self.p_bar - self.phi

    def to_dict(self) -> dict:
        d = asdict(self)
        d["halt_threshold"] = self.halt_threshold
        d["continue_threshold"] = self.continue_threshold
        return d


@dataclass(frozen=True)
class Plan:
    """Global parameters of one GTM run plus a lazy per-step table."""

    config: GTMConfig
    parameterization: str
    tau1: float
    mu1: float
    epsilon: float | None  # uniform pure-DP claim (None for the ex-post theorem23)

    @property
    def horizon(self) -> int:
        return self.config.stream.horizon

    def step(self, t: int) -> StepPlan:
        return _plan_step(self.config, check_positive_int("t", t))

    def steps(self, ts=None) -> list[StepPlan]:
        ts = range(1, self.horizon + 1) if ts is None else ts
        try:
            ts = list(ts)
        except TypeError:
            raise InvalidParameter(f"steps must be an iterable of step indices, got {ts!r}") from None
        return [self.step(t) for t in ts]

    def claimed_loss(self, t: int, halted: bool) -> float:
        """Privacy loss bound of a transcript ending at t (Lemma 17 (6)-(7))."""
        t = check_positive_int("t", t)
        if not isinstance(halted, (bool, np.bool_)):
            raise InvalidParameter(f"halted must be a bool, got {halted!r}")
        if self.parameterization == "theorem23":
            g = self.config.gtm
            return float(
                F.theorem23_expost_loss(halted, self.step(t).eps_t, g.epsilon_c, g.c_h, self.step(t).beta_t)
            )
        if not halted:
            return 1 / self.tau1
        return 1 / self.tau1 + 2 / self.step(t).tau2

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


# ---------------------------------------------------------------------------


def _lemma11_c(alpha: float, beta: float, gamma: float) -> int:
    """Lemma 11's integer c, exact: float64 unless within 1e-9 of a tie, then 60 digits."""
    A, B = -math.log(alpha), -math.log(beta)
    r = F.lemma11_root(alpha, beta, gamma)
    lo, hi = 2 * max(A, B), r * r
    if min(abs(lo - round(lo)), abs(hi - round(hi))) < 1e-9 * max(1.0, hi):
        return F.lemma11_threshold(alpha, beta, gamma, dps=60)
    return int(max(math.floor(lo), math.ceil(hi)))


def _direct_or_flipped(spec: StepSpec, gamma: float, Lambda: float, beta_I: float, beta_II: float):
    """Lemma 20 with the flipping rule of Theorem 21: (s, c, rho, lambda_max).

    rho is rounded in the safe direction so Lemma 20's base-rate identity holds exactly
    (rho p* >= lambda^l(c, beta^II) for s=+1; rho q* <= lambda^r(c, beta^II) for s=-1).
    """
    s = F.direction(spec.p_star, gamma, Lambda)
    if s == 1:
        c = _lemma11_c(beta_II, beta_I, gamma)  # (alpha, beta) = (beta^II, beta^I)
        rho = R.round_base_rate_above(F.base_rate_above(c, beta_II, spec.p_star), c, beta_II, spec.p_star)
        lam_max = R.round_product_up(rho, Lambda)  # an upper bound on lambda_t on G
    else:
        q_star = 1 - spec.p_star
        c = _lemma11_c(beta_I, beta_II, gamma)  # (alpha, beta) = (beta^I, beta^II)
        rho = R.round_base_rate_below(F.base_rate_below(c, beta_II, q_star), c, beta_II, q_star)
        lam_max = rho
    return s, c, rho, lam_max


def _finish(config, spec, *, s, c, rho, tau1, mu1, tau2, Lambda, lam_max, beta_t, beta_I, beta_II):
    g = config.gtm
    phi = (
        R.round_crossover_up(float(F.purification_crossover(spec.eps_t, spec.delta_t)), spec.eps_t, spec.delta_t)
        if spec.delta_t > 0
        else 0.0
    )
    # Lemma 22(1): on G, N_t is dominated by Po(lambda_bar) with lambda_bar >= ln(4/beta_t),
    # so Pr[N_t > e lambda_bar | G] <= beta_t/4 (Lemma 55). The budget is factor * lambda_bar.
    lam_bar = max(lam_max, math.log(4 / beta_t))
    budget = R.evaluation_budget(g.evaluation_budget_factor, lam_bar)
    p_exceed = budget_exceed_probability(
        budget, s=s, rho=rho, eps_t=spec.eps_t, tau1=tau1, mu1=mu1, tau2=tau2
    )
    return StepPlan(
        t=spec.t,
        s=s,
        c=c,
        rho=rho,
        tau2=tau2,
        Lambda=Lambda,
        p_bar=R.round_rejection_threshold(
            F.rejection_threshold(spec.p_star, g.gamma, Lambda), s, spec.p_star, g.gamma, Lambda
        ),
        lambda_max=lam_max,
        eps_t=spec.eps_t,
        p_star=spec.p_star,
        delta_t=spec.delta_t,
        beta_t=beta_t,
        beta_I=beta_I,
        beta_II=beta_II,
        phi=phi,
        evaluation_budget=budget,
        budget_exceed_probability=p_exceed,
    )


def theorem21_step(config: GTMConfig, t: int) -> StepPlan:
    """Theorem 21: tau_1, tau_2 from (eps, theta), beta^I = beta^II = beta_t/4, flipping rule."""
    g = config.gtm
    spec = config.step(t)
    tau1, mu1, tau2 = global_noise(config)
    beta_t = F.step_failure_probability(t, g.beta)
    beta_I = beta_II = beta_t / 4
    Lambda = R.round_noise_range(
        F.theorem21_noise_range(spec.eps_t, g.epsilon, g.theta, g.beta, beta_t),
        spec.eps_t, mu1, tau2, beta_t,
    )
    s, c, rho, lam_max = _direct_or_flipped(spec, g.gamma, Lambda, beta_I, beta_II)
    return _finish(config, spec, s=s, c=c, rho=rho, tau1=tau1, mu1=mu1, tau2=tau2, Lambda=Lambda,
                   lam_max=lam_max, beta_t=beta_t, beta_I=beta_I, beta_II=beta_II)


def theorem23_step(config: GTMConfig, t: int) -> StepPlan:
    """Theorem 23: tau_1 = 1/eps_C, tau_{2,t} = 2/(C_H eps_t ln(4/beta_t)), beta_t/6 per error type."""
    g = config.gtm
    spec = config.step(t)
    tau1, mu1, _ = global_noise(config)
    beta_t = F.step_failure_probability(t, g.beta)
    tau2 = R.round_tau2_theorem23(F.theorem23_tau2(spec.eps_t, g.c_h, beta_t), spec.eps_t, g.c_h, beta_t)
    beta_I = beta_II = beta_t / 6
    Lambda = F.theorem23_noise_range(spec.eps_t, g.epsilon_c, g.c_h, g.beta)
    if spec.eps_t > 0:
        Lambda = R.round_noise_range(Lambda, spec.eps_t, mu1, tau2, beta_t)
    s, c, rho, lam_max = _direct_or_flipped(spec, g.gamma, Lambda, beta_I, beta_II)
    return _finish(config, spec, s=s, c=c, rho=rho, tau1=tau1, mu1=mu1, tau2=tau2, Lambda=Lambda,
                   lam_max=lam_max, beta_t=beta_t, beta_I=beta_I, beta_II=beta_II)


@functools.lru_cache(maxsize=1024)
def global_noise(config: GTMConfig) -> tuple[float, float, float | None]:
    """(tau_1, mu_1, tau_2) of a configuration, rounded so the proofs' conditions hold exactly:
    1/tau_1 + 2/tau_2 <= eps (Theorem 21) or 1/tau_1 <= eps_C (Theorem 23), and
    mu_1 >= tau_1 ln(4/beta) so that Pr[eta_1 > mu_1] <= beta/4 (Lemma 19).
    tau_2 is None for theorem23, whose per-step tau_{2,t} varies."""
    g = config.gtm
    if g.parameterization == "theorem23":
        tau1 = R.round_tau1_at_least(F.theorem23_tau1(g.epsilon_c), g.epsilon_c)
        tau2 = None
    else:
        tau1, tau2 = R.round_noise_scales_theorem21(
            F.theorem21_tau1(g.epsilon, g.theta), F.theorem21_tau2(g.epsilon, g.theta), g.epsilon
        )
    mu1 = R.round_mu1(tau1 * math.log(4 / g.beta), tau1, g.beta)
    return tau1, mu1, tau2


STEP_PLANNERS: dict[str, Callable[[GTMConfig, int], StepPlan]] = {
    "theorem21": theorem21_step,
    "theorem23": theorem23_step,
}


def register_step_planner(name: str, fn: Callable[[GTMConfig, int], StepPlan]) -> None:
    """Register an additional parameterisation (used by the exact-tail calibration)."""
    STEP_PLANNERS[name] = fn
    _plan_step.cache_clear()


_OPTIONAL_PLANNERS = {"exact": "exact_calibration", "exact_noise": "exact_noise_calibration",
                      "horizon": "horizon_calibration"}


def _load_optional_planner(name: str) -> None:
    """Import the module that registers an optional parameterisation (needs python-flint)."""
    module = _OPTIONAL_PLANNERS.get(name)
    if module is not None and name not in STEP_PLANNERS:
        try:
            importlib.import_module(f".{module}", __package__)  # registers the planner
        except ImportError:
            pass


@functools.lru_cache(maxsize=200_000)
def _plan_step(config: GTMConfig, t: int) -> StepPlan:
    name = config.gtm.parameterization
    _load_optional_planner(name)
    if name not in STEP_PLANNERS:
        raise UnsupportedConfiguration(f"parameterization {name!r} has no planner available")
    return checked_step_plan(STEP_PLANNERS[name], config, t)


def checked_step_plan(planner: Callable[[GTMConfig, int], StepPlan], config: GTMConfig, t: int) -> StepPlan:
    """Run a step planner; parameters so extreme that float64 overflows (or yields a non-finite
    rate or budget) end in UnsupportedConfiguration naming the step, never in a bare
    ArithmeticError or a NaN plan."""
    try:
        sp = planner(config, t)
    except (OverflowError, ZeroDivisionError):  # also the formulas' FormulaOverflow / FormulaZeroDivision
        raise UnsupportedConfiguration(
            f"step t={t}: the noise range Lambda_t or base rate overflows float64 "
            f"(eps_t/eps too large for this beta/theta); no usable rejection threshold"
        ) from None
    except GTMError:
        raise
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise UnsupportedConfiguration(
            f"the configuration cannot be planned at step {t}: parameters too extreme for float64 "
            f"({type(exc).__name__})"
        ) from None
    for name in ("rho", "Lambda", "p_bar", "lambda_max", "budget_exceed_probability"):
        v = getattr(sp, name)
        if not (isinstance(v, (int, float)) and math.isfinite(v)):
            raise UnsupportedConfiguration(
                f"the configuration cannot be planned at step {t}: {name} is not finite ({v!r})"
            )
    return sp


def make_plan(config: GTMConfig) -> Plan:
    """The Plan for a configuration: global noise parameters and a lazy step table."""
    if not isinstance(config, GTMConfig):
        raise InvalidParameter(f"config must be a GTMConfig, got {type(config).__name__}")
    g = config.gtm
    name = g.parameterization
    _load_optional_planner(name)
    if name not in STEP_PLANNERS:
        raise UnsupportedConfiguration(f"parameterization {name!r} has no planner available")
    tau1, mu1, _ = global_noise(config)
    eps = None if name == "theorem23" else g.epsilon
    for label, v in (("tau1", tau1), ("mu1", mu1)):
        if not math.isfinite(v) or v <= 0:
            raise UnsupportedConfiguration(f"the configuration gives a non-finite {label} ({v!r})")
    plan = Plan(config=config, parameterization=name, tau1=tau1, mu1=mu1, epsilon=eps)
    plan.step(1)  # fail early on an unplannable configuration
    return plan


def check_step_index(plan: Plan, t: int) -> int:
    if isinstance(t, bool) or not isinstance(t, int) or t < 1:
        raise InvalidParameter(f"step index t must be a positive integer, got {t!r}")
    return t
