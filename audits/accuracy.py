"""Accuracy and cost audits of a GTM deployment against its plan.

Accuracy (Theorem 21 (1)-(2), Corollary 25): for a step t the deployment is run on a stream
that sits at the rejection threshold p_bar_i for every step i < t (so it should continue) and
then at

* p_t = p_bar_t (continuation side): a halt at t is a *Type I* error,
* p_t = p*_t (halting side): not halting at t is a *Type II* error,

and the measured conditional rates (given the run reached step t) are reported with two-sided
Clopper-Pearson intervals, next to the planned per-step failure probability beta_t and the global
beta. Theorem 21 is a *global* statement (with probability >= 1 - beta no step errs), and the bad
shared-noise event G^c (Lemma 19, probability up to beta/2) is shared by all steps, so a per-step
rate may exceed beta_t; a rate whose interval lies entirely above beta is a failure.

Cost (Theorem 21 (3), Lemma 22): on the all-continue stream of length T the total number of
evaluations is compared with sum_t lambda_max_t (the Poisson mean on the good event) and with the
per-step budgets sum_t evaluation_budget_t (e * lambda_bar_t-type bounds): the mean, the 99th
percentile and the fraction of runs above the budget sum (with its interval).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gtm_core.planners import Plan

from .statistics import cp_interval
from .targets import Target


@dataclass(frozen=True)
class StepAccuracy:
    t: int
    p_bar: float
    p_star: float
    beta_t: float
    beta: float
    type_I: float
    type_I_interval: tuple[float, float]
    type_I_reached: int
    type_II: float
    type_II_interval: tuple[float, float]
    type_II_reached: int

    @property
    def ok(self) -> bool:
        return self.type_I_interval[0] <= self.beta and self.type_II_interval[0] <= self.beta

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["ok"] = self.ok
        return d


def _clip_prob(x: float) -> float:
    return float(min(max(x, 0.0), 1.0))


def accuracy_audit(target: Target, plan: Plan, steps=(1, 2, 5, 10), n: int = 200_000, seed: int = 0,
                   alpha: float = 0.05) -> list[StepAccuracy]:
    """Measured per-step Type I / Type II rates at the thresholds, with intervals, against beta_t."""
    out = []
    for k, t in enumerate(steps):
        sps = plan.steps(range(1, t + 1))
        background = [_clip_prob(sp.continue_threshold) for sp in sps[:-1]]
        last = sps[-1]
        cont = target.sample(background + [_clip_prob(last.continue_threshold)], n, seed * 1000 + 2 * k).halt
        halt = target.sample(background + [_clip_prob(last.halt_threshold)], n, seed * 1000 + 2 * k + 1).halt
        reached_c = int(((cont == 0) | (cont >= t)).sum())
        err_I = int((cont == t).sum())
        reached_h = int(((halt == 0) | (halt >= t)).sum())
        err_II = int((halt == 0).sum())
        lo1, hi1 = cp_interval(err_I, max(reached_c, 1), alpha)
        lo2, hi2 = cp_interval(err_II, max(reached_h, 1), alpha)
        out.append(StepAccuracy(t, last.p_bar, last.p_star, last.beta_t, plan.config.gtm.beta,
                                err_I / max(reached_c, 1), (float(lo1), float(hi1)), reached_c,
                                err_II / max(reached_h, 1), (float(lo2), float(hi2)), reached_h))
    return out


@dataclass(frozen=True)
class CostAudit:
    T: int
    mean_evaluations: float
    p99_evaluations: float
    sum_lambda_max: float
    sum_budget: int
    fraction_above_budget: float
    fraction_above_budget_interval: tuple[float, float]
    runs: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def cost_audit(target: Target, plan: Plan, T: int = 10, n: int = 100_000, seed: int = 0,
               alpha: float = 0.05) -> CostAudit:
    """Total evaluations on the all-continue stream against Theorem 21(3) / Lemma 22 budgets."""
    sps = plan.steps(range(1, T + 1))
    stream = [_clip_prob(sp.continue_threshold) for sp in sps]
    s = target.sample(stream, n, seed, evaluations=True)
    ev = s.evaluations.astype(float)
    budget = int(sum(sp.evaluation_budget for sp in sps))
    above = int((ev > budget).sum())
    lo, hi = cp_interval(above, n, alpha)
    return CostAudit(T, float(ev.mean()), float(np.quantile(ev, 0.99)), float(sum(sp.lambda_max for sp in sps)),
                     budget, above / n, (float(lo), float(hi)), n)
