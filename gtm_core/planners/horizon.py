"""Horizon-aware certified calibration: the ``horizon`` planner (beyond the paper).

Theorem 21 spreads its failure probability over an infinite stream (beta_t = beta/(zeta t ln^3(t+2)))
and charges the shared noise eta_1 at its worst case on [0, mu_1] plus a beta/4 tail. A configuration
states its horizon T, and the deployment stops there (``gtm deploy``), so this planner certifies the
accuracy claim over steps 1..T directly:

    Pr[ some t <= T halts with p_t <= p_bar, or some t <= T with p_t >= p* continues ] <= beta     (*)

for adaptive streams, by integrating eta_1 exactly and applying the union bound over the T steps
*inside* that integral.

The mechanism is Algorithm 1 unchanged: eta_1 ~ Exp(tau_1), eta_{2,t} ~ Exp(tau_2), Z_t = s (mu_1 -
eta_1 + eta_{2,t}), N_t ~ Po(rho e^{eps_t Z_t}). Privacy is Lemma 17, which holds for every c_t, rho_t,
s_t and mu_1: 1/tau_1 + 2/tau_2 = eps with Theorem 21's split 1/tau_1 = theta eps/(theta+2),
2/tau_2 = 2 eps/(theta+2) (any theta > 0; the planner chooses it). mu_1 = tau_1 ln(4/beta) as in
Theorem 21 (it only shifts the count mean and is absorbed by rho).

Where each part lives: the values and their configuration in :mod:`.horizon_problem`; the rigorous
bound of (*) (the union bound inside the eta_1 integral, summed over monotone panels in python-flint
``arb``) in :mod:`.horizon_bound`; the float64 search for a cheap design in :mod:`.horizon_search`;
``gtm tune`` and the frontier in :mod:`.horizon_tune`. This module is the planner step: a design is
planned only if its certificate is <= beta; one that cannot be certified is refused
(:class:`UnsupportedConfiguration`), never planned.
"""

from __future__ import annotations

import functools
import math

from ..config import GTMConfig
from ..errors import UnsupportedConfiguration
from . import rounding as R
from .budget import budget_exceed_probability
from .horizon_bound import FailureBound, failure_bound
from .horizon_problem import design_of, problem_of
from .steps import StepPlan, global_noise

__all__ = [
    "certificate",
    "horizon_step",
]


@functools.lru_cache(maxsize=256)
def certificate(config: GTMConfig) -> FailureBound:
    """The rigorous failure bound of a horizon configuration (cached); see :func:`.horizon_bound.failure_bound`.
    Refuses a claimed p_bar that is not below p* (either direction)."""
    problem, design = problem_of(config), design_of(config)
    if not design.p_bar < problem.p_star:
        raise UnsupportedConfiguration(f"p_bar={design.p_bar!r} must be below p_star={problem.p_star!r}")
    tau1, mu1, tau2 = global_noise(config)
    return failure_bound(problem, design, tau1=tau1, mu1=mu1, tau2=tau2)


def horizon_step(config: GTMConfig, t: int) -> StepPlan:
    """The ``horizon`` planner: the configuration's (s, c, rho, p_bar) at every step t <= T, after the
    union bound inside the eta_1 integral is certified <= beta in arb (else UnsupportedConfiguration).

    Lambda_t, lambda_max and the evaluation budget use the nominal per-step share beta_t = beta/T
    (reporting and the budget only: the accuracy claim is the certificate's)."""
    problem, design = problem_of(config), design_of(config)
    if t > problem.T:
        raise UnsupportedConfiguration(
            f"step t={t} is beyond the horizon T={problem.T}: the horizon planner certifies steps 1..T only "
            f"(the deployment stops at its horizon)")
    cert = certificate(config)
    if not cert.certified:
        raise UnsupportedConfiguration(
            f"the horizon design is not certified: failure probability <= {cert.failure_upper:.6g} is not "
            f"<= beta = {problem.beta:g} (run `gtm tune` for a certified design)")
    g = config.gtm
    tau1, mu1, tau2 = global_noise(config)
    beta_t = problem.beta / problem.T
    Lambda = R.round_noise_range(
        math.exp(problem.eps_t * (mu1 + tau2 * math.log(4 / beta_t))), problem.eps_t, mu1, tau2, beta_t)
    lam_max = R.round_product_up(design.rho, Lambda) if design.s == 1 else design.rho
    lam_bar = max(lam_max, math.log(4 / beta_t))
    budget = R.evaluation_budget(g.evaluation_budget_factor, lam_bar)
    p_exceed = budget_exceed_probability(budget, s=design.s, rho=design.rho, eps_t=problem.eps_t, tau1=tau1,
                                         mu1=mu1, tau2=tau2)
    return StepPlan(
        t=t, s=design.s, c=design.c, rho=design.rho, tau2=tau2, Lambda=Lambda, p_bar=design.p_bar,
        lambda_max=lam_max, eps_t=problem.eps_t, p_star=problem.p_star, delta_t=0.0, beta_t=beta_t,
        beta_I=beta_t / 2, beta_II=beta_t / 2, phi=0.0, evaluation_budget=budget,
        budget_exceed_probability=p_exceed,
    )


def clear_cache() -> None:
    """Forget this module's memoised results (benchmarks that time a cold start call this)."""
    certificate.cache_clear()
