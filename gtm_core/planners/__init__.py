"""Planners: turn a :class:`~gtm_core.config.GTMConfig` into Algorithm 1's per-step parameters.

One static registry (:data:`REGISTRY`, in :mod:`.plan`) maps every parameterization name to
its step planner and properties (:class:`Parameterization`):

* ``theorem21``   - Theorem 21 (uniform pure eps-DP, beta_t/4 per error type): :mod:`.theorem21`.
* ``theorem23``   - Theorem 23 (ex-post loss eps_C [+ C_H eps_t ln(4/beta_t) at halting]): :mod:`.theorem23`.
* ``exact``       - exact Poisson tails instead of the Chernoff thresholds: :mod:`.exact_tails`.
* ``exact_noise`` - exact calibration integrated over the per-step noise eta_{2,t}: :mod:`.exact_noise`.
* ``horizon``     - one certified union bound over the horizon inside the eta_1 integral, with the
  configuration's own (s, c, rho, p_bar), chosen by ``gtm tune``: :mod:`.horizon` (the step), with
  :mod:`.horizon_problem` (values, configuration), :mod:`.horizon_bound` (the arb certificate),
  :mod:`.horizon_search` (the float search) and :mod:`.horizon_tune` (``gtm tune``, frontier); docs/horizon.md.

Shared pieces: :mod:`.steps` (StepPlan, global noise, Lemma 11/20 helpers), :mod:`.rounding`
(safe-direction rounding of every planned float), :mod:`.budget` (probability that a step needs
more evaluations than its budget). Every number comes from :mod:`gtm_core.formulas`.
"""

from ..config import PARAMETERIZATIONS
from .budget import budget_exceed_probability, lambda_tail, pareto_ratio_tail
from .plan import (
    REGISTRY,
    STEP_PLANNERS,
    Parameterization,
    Plan,
    check_step_index,
    make_plan,
    plan_step,
    uncached_step_plan,
)
from .steps import StepPlan, checked_step_plan, direct_or_flipped, finish_step, global_noise, lemma11_c
from .theorem21 import Theorem21Noise, theorem21_noise, theorem21_step
from .theorem23 import theorem23_step


def clear_caches() -> None:
    """Forget every memoised planner result (steps, global noise, exact calibrations, horizon
    certificates and shape models): the one entry point for benchmarks that time a cold start."""
    from . import exact_noise, exact_tails, horizon, horizon_search

    plan_step.cache_clear()
    global_noise.cache_clear()
    for module in (exact_noise, exact_tails, horizon, horizon_search):
        module.clear_cache()


__all__ = [
    "PARAMETERIZATIONS",
    "clear_caches",
    "REGISTRY",
    "Parameterization",
    "STEP_PLANNERS",
    "Plan",
    "StepPlan",
    "make_plan",
    "plan_step",
    "uncached_step_plan",
    "checked_step_plan",
    "check_step_index",
    "global_noise",
    "lemma11_c",
    "direct_or_flipped",
    "finish_step",
    "theorem21_step",
    "theorem21_noise",
    "Theorem21Noise",
    "theorem23_step",
    "budget_exceed_probability",
    "lambda_tail",
    "pareto_ratio_tail",
]
