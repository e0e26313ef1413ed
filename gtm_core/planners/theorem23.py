"""The ``theorem23`` planner: Theorem 23 (ex-post loss eps_C [+ C_H eps_t ln(4/beta_t) at halting])."""

from __future__ import annotations

from .. import formulas as F
from ..config import GTMConfig
from . import rounding as R
from .steps import StepPlan, direct_or_flipped, finish_step, global_noise


def theorem23_step(config: GTMConfig, t: int) -> StepPlan:
    """Theorem 23: tau_1 = 1/eps_C, tau_{2,t} = 2/(C_H eps_t ln(4/beta_t)), beta_t/6 per error type."""
    g = config.gtm
    spec = config.step(t)
    tau1, mu1, _ = global_noise(config)
    beta_t = R.round_step_failure_down(F.step_failure_probability(t, g.beta), t, g.beta)
    tau2 = R.round_tau2_theorem23(F.theorem23_tau2(spec.eps_t, g.c_h, beta_t), spec.eps_t, g.c_h, beta_t)
    beta_I = beta_II = R.share_at_most(beta_t, 6)
    Lambda = F.theorem23_noise_range(spec.eps_t, g.epsilon_c, g.c_h, g.beta)
    if spec.eps_t > 0:
        Lambda = R.round_noise_range(Lambda, spec.eps_t, mu1, tau2, beta_t)
    s, c, rho, lam_max = direct_or_flipped(spec, g.gamma, Lambda, beta_I, beta_II)
    return finish_step(config, spec, s=s, c=c, rho=rho, tau1=tau1, mu1=mu1, tau2=tau2, Lambda=Lambda,
                   lam_max=lam_max, beta_t=beta_t, beta_I=beta_I, beta_II=beta_II)
