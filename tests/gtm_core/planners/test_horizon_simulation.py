"""The horizon planner's certificate held against the simulator (slow; >= 1e5 seeded runs per stream).

Adaptive streams: while a run is alive its history is the all-continue transcript, so an analyst adapting
to the outputs picks a fixed stream (a randomising analyst a mixture of fixed streams); fixed streams,
including adversarially varying ones, therefore exercise the claim for adaptive streams.

Statistics: two-sided Clopper-Pearson intervals at confidence 1 - ALPHA, ALPHA = 1e-3, seeds below.
A failure of a run: it halts at a step with p_t <= p_bar, or it continues past a step with p_t >= p*.
Power companion: at a cell where the certificate is tight (T = 1, Type II negligible, p_bar the largest
certifiable), a claim 20% larger is refused by the certificate AND rejected by the same statistical test.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from gtm_core import make_plan
from gtm_core.planners.horizon_bound import failure_bound
from gtm_core.planners.horizon_problem import HorizonDesign, HorizonProblem, config_of
from gtm_core.planners import global_noise
from gtm_core.simulator import simulate

ALPHA = 1e-3
N = 100_000
MEDIAN = HorizonProblem(epsilon=1.0, eps_t=0.1, p_star=0.5, T=100, beta=0.05)
# the design `gtm tune` chose for the median cell at theorem21's p_bar (an input here; re-certified below)
DESIGN = HorizonDesign(s=1, c=2, rho=13.20575428, p_bar=0.00142931, theta=1.5341191128167415)


def clopper_pearson(k: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def failures(halt: np.ndarray, p: np.ndarray, p_bar: float, p_star: float) -> int:
    """Runs that halt at a step with p_t <= p_bar or continue past a step with p_t >= p*."""
    T = p.size
    low = p <= p_bar
    high = np.flatnonzero(p >= p_star)
    first_high = int(high[0]) + 1 if high.size else None
    type1 = (halt > 0) & low[np.clip(halt - 1, 0, T - 1)]
    if first_high is None:
        type2 = np.zeros(halt.size, bool)
    else:
        type2 = (halt == 0) | (halt > first_high)
    return int(np.count_nonzero(type1 | type2))


def streams(p_bar: float, p_star: float, T: int, rng: np.random.Generator) -> dict:
    mid = np.sqrt(p_bar * p_star)
    out = {
        "constant p_bar": np.full(T, p_bar),
        "constant p*": np.full(T, p_star),
        "p_bar then p* at T": np.r_[np.full(T - 1, p_bar), p_star],
        "alternating p_bar / gap": np.where(np.arange(T) % 2 == 0, p_bar, mid),
    }
    rand = rng.choice([p_bar, mid, 0.5 * p_bar], size=T)
    rand[T // 2] = p_star
    out["random below, p* at T/2"] = rand
    return out


@pytest.fixture(scope="module")
def median_plan():
    cfg = config_of(MEDIAN, DESIGN)
    return make_plan(cfg)  # raises unless the arb certificate holds


@pytest.mark.slow
def test_measured_failure_below_beta_on_adversarial_streams(median_plan):
    rng = np.random.default_rng(20261201)
    for i, (name, p) in enumerate(streams(DESIGN.p_bar, MEDIAN.p_star, MEDIAN.T, rng).items()):
        res = simulate(median_plan, p, N, np.random.default_rng(20261201 + i))
        k = failures(res.halt, p, DESIGN.p_bar, MEDIAN.p_star)
        lo, hi = clopper_pearson(k, N)
        assert hi < MEDIAN.beta, f"{name}: {k}/{N} failures, CP [{lo:.5f}, {hi:.5f}] not below beta"


def _tight_design() -> tuple[HorizonProblem, HorizonDesign]:
    """T = 1, rho large (Type II negligible), p_bar the largest the certificate accepts (bisection)."""
    problem = HorizonProblem(epsilon=1.0, eps_t=0.1, p_star=0.5, T=1, beta=0.05)
    base = dataclasses.replace(DESIGN, rho=DESIGN.rho * 4)
    tau1, mu1, tau2 = global_noise(config_of(problem, base))
    lo, hi = 1e-4, 0.4
    for _ in range(14):
        mid = (lo * hi) ** 0.5
        d = dataclasses.replace(base, p_bar=mid)
        if failure_bound(problem, d, tau1=tau1, mu1=mu1, tau2=tau2).certified:
            lo = mid
        else:
            hi = mid
    return problem, dataclasses.replace(base, p_bar=lo)


@pytest.mark.slow
def test_power_twenty_percent_overclaim_is_rejected_where_tight():
    problem, tight = _tight_design()
    cfg = config_of(problem, tight)
    tau1, mu1, tau2 = global_noise(cfg)
    b = failure_bound(problem, tight, tau1=tau1, mu1=mu1, tau2=tau2)
    assert b.certified and b.failure_upper > 0.97 * problem.beta  # tight
    over = dataclasses.replace(tight, p_bar=tight.p_bar * 1.2)
    assert not failure_bound(problem, over, tau1=tau1, mu1=mu1, tau2=tau2).certified
    plan = make_plan(cfg)
    # the honest claim is not rejected by the statistical test ...
    res = simulate(plan, [tight.p_bar], N, np.random.default_rng(7))
    k = failures(res.halt, np.array([tight.p_bar]), tight.p_bar, problem.p_star)
    assert clopper_pearson(k, N)[0] <= problem.beta
    # ... the 20% larger claim is: its measured failure rate is significantly above beta
    res = simulate(plan, [over.p_bar], N, np.random.default_rng(8))
    k = failures(res.halt, np.array([over.p_bar]), over.p_bar, problem.p_star)
    assert clopper_pearson(k, N)[0] > problem.beta, f"{k}/{N}"
