"""The ``theorem21`` planner: Theorem 21 (uniform pure eps-DP, beta_t/4 per error type)."""

from __future__ import annotations

from .. import formulas as F
from ..config import GTMConfig
from . import rounding as R
from .steps import StepPlan, direct_or_flipped, finish_step, global_noise


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
    s, c, rho, lam_max = direct_or_flipped(spec, g.gamma, Lambda, beta_I, beta_II)
    return finish_step(config, spec, s=s, c=c, rho=rho, tau1=tau1, mu1=mu1, tau2=tau2, Lambda=Lambda,
                   lam_max=lam_max, beta_t=beta_t, beta_I=beta_I, beta_II=beta_II)
