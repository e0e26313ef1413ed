"""GTM_l: the GTM instance with ex-post parameters (Corollary 35) that Algorithm 3 runs
between checkpoint l-1 and checkpoint l, re-initialised at every checkpoint.

Corollary 35 is Theorem 23 with eps_C = eps(l), beta = beta_l, s_t = +1. The per-step
parameters come from the project's Theorem 23 planner
(:func:`gtm_core.planners.theorem23_step`) applied to a one-step configuration whose
input privacy is eps(l, j) (local step j), so the same code that backs ``gtm plan``
plans every step; :class:`InstancePlan` exposes them with the ``Plan`` interface
(``tau1``, ``mu1``, ``step(j)``) that the reference GTM driver and the exact engine use.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..config import GTMConfig, GTMParameters, StreamParameters
from ..planners import StepPlan, checked_step_plan, global_noise, theorem23_step
from . import params as P
from .params import COConfig


@dataclass(frozen=True)
class InstancePlan:
    """The plan of GTM_l (levels l >= 2). ``step(j)`` is cached per (config, level, j)."""

    config: COConfig
    level: int
    horizon: int | None = None

    @property
    def epsilon_c(self) -> float:
        return float(P.checkpoint_privacy(self.level, self.config.epsilon, self.config.c_1, self.config.c_h))

    @property
    def beta(self) -> float:
        return float(P.checkpoint_failure(self.level, self.config.beta, self.config.c_beta))

    def gtm_parameters(self) -> GTMParameters:
        return GTMParameters(parameterization="theorem23", gamma=self.config.gamma, beta=self.beta,
                             epsilon_c=self.epsilon_c, c_h=self.config.c_h)

    @property
    def tau1(self) -> float:
        return _noise(self.config, self.level)[0]

    @property
    def mu1(self) -> float:
        return _noise(self.config, self.level)[1]

    def step(self, j: int) -> StepPlan:
        """The plan at local step j: Theorem 23's plan of step planning_step(j) (dyadic block end)."""
        return _instance_step(self.config, self.level, P.planning_step(int(j)))

    def claimed_loss(self) -> float:
        """Corollary 35(1): (1 + C_H/C_1) eps(l)."""
        return float(P.gtm_instance_loss(self.level, self.config.epsilon, self.config.c_1, self.config.c_h))


def step_privacy_used(config: COConfig, level: int, j: int) -> float:
    """The float eps(l, j) the driver runs with: the formula rounded down by a relative 1e-14
    (far above float64's error on the formula chain), so it never exceeds the exact value and
    every Lemma 38 share holds exactly (checked in arb by :mod:`proofs.co_ledger`)."""
    return float(P.step_privacy(level, j, config.epsilon, config.beta, config.c_1, config.c_h,
                                config.c_beta)) * (1 - 1e-14)


def _step_config(config: COConfig, level: int, j: int) -> GTMConfig:
    eps_j = step_privacy_used(config, level, j)
    delta_j = float(P.step_delta(level, eps_j, config.p_bar, config.beta, config.delta, config.c_beta))
    plan = InstancePlan(config, level)
    return GTMConfig(gtm=plan.gtm_parameters(),
                     stream=StreamParameters(eps_t=eps_j, p_star=config.p_star, horizon=j, delta_t=delta_j))


@functools.lru_cache(maxsize=4096)
def _noise(config: COConfig, level: int) -> tuple[float, float]:
    tau1, mu1, _ = global_noise(_step_config(config, level, 1))
    return tau1, mu1


@functools.lru_cache(maxsize=400_000)
def _instance_step(config: COConfig, level: int, j: int) -> StepPlan:
    return checked_step_plan(theorem23_step, _step_config(config, level, j), j)


def clear_plan_cache() -> None:
    """Forget the cached GTM_l step plans (tests that patch the formulas call this)."""
    _instance_step.cache_clear()
    _noise.cache_clear()
