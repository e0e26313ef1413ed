"""The ``theorem21`` planner: Theorem 21 (uniform pure eps-DP, beta_t/4 per error type)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import formulas as F
from ..config import GTMConfig, StepSpec
from . import rounding as R
from .steps import StepPlan, direct_or_flipped, finish_step, global_noise


@dataclass(frozen=True)
class Theorem21Noise:
    """Theorem 21's noise at one step: the global (tau_1, mu_1, tau_2), beta_t (Definition 7) and the
    noise range Lambda_t (Lemma 19(2)), rounded in the safe direction. Shared by the planners that keep
    Theorem 21's noise (``theorem21``, ``exact_noise``)."""

    spec: StepSpec
    tau1: float
    mu1: float
    tau2: float
    beta_t: float
    Lambda: float


def theorem21_noise(config: GTMConfig, t: int) -> Theorem21Noise:
    """Theorem 21's noise at step t (see :class:`Theorem21Noise`)."""
    g = config.gtm
    spec = config.step(t)
    tau1, mu1, tau2 = global_noise(config)
    beta_t = R.round_step_failure_down(F.step_failure_probability(t, g.beta), t, g.beta)
    Lambda = R.round_noise_range(
        F.theorem21_noise_range(spec.eps_t, g.epsilon, g.theta, g.beta, beta_t),
        spec.eps_t, mu1, tau2, beta_t,
    )
    return Theorem21Noise(spec, tau1, mu1, tau2, beta_t, Lambda)


def theorem21_step(config: GTMConfig, t: int) -> StepPlan:
    """Theorem 21: tau_1, tau_2 from (eps, theta), beta^I = beta^II = beta_t/4, flipping rule."""
    g = config.gtm
    n = theorem21_noise(config, t)
    spec, tau1, mu1, tau2, beta_t, Lambda = n.spec, n.tau1, n.mu1, n.tau2, n.beta_t, n.Lambda
    beta_I = beta_II = beta_t / 4
    s, c, rho, lam_max = direct_or_flipped(spec, g.gamma, Lambda, beta_I, beta_II)
    return finish_step(config, spec, s=s, c=c, rho=rho, tau1=tau1, mu1=mu1, tau2=tau2, Lambda=Lambda,
                   lam_max=lam_max, beta_t=beta_t, beta_I=beta_I, beta_II=beta_II)
