"""Clopper-Pearson bounds and the loss lower bound.

Coverage check: alpha = 0.05, seed 20261130, 4000 replications; the empirical miss rate of the
one-sided bound must be <= alpha + 3 standard errors. Power companion: a deliberately anti-
conservative bound (the point estimate) misses far more often under the same test.
The Poissonised conditional loss bound gets the same coverage check (seed 20261201) on Poisson
counts, with the same power companion, and must be sharper than the split bound on average.
"""

import math

import numpy as np
import pytest
from scipy import stats

from audits.statistics import (bonferroni, conditional_loss_lower_bound, cp_interval, cp_lower, cp_upper,
                               event_estimates, garwood_interval, loss_lower_bound, projected_conditional_bound,
                               projected_lower_bound, wilson_bounds)


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (17, 1000), (999, 1000)])
def test_two_sided_cp_matches_scipy(k, n):
    lo, hi = cp_interval(k, n, 0.05)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)


def test_edges():
    assert cp_lower(0, 10, 0.05) == 0.0 and cp_upper(10, 10, 0.05) == 1.0
    assert cp_upper(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100))


def _miss_rate(bound_fn, p=0.03, n=500, reps=4000, seed=20261130):
    rng = np.random.default_rng(seed)
    k = rng.binomial(n, p, reps)
    return np.mean(bound_fn(k, n) > p)


def test_cp_lower_coverage_and_power_companion():
    alpha = 0.05
    se = math.sqrt(alpha * (1 - alpha) / 4000)
    assert _miss_rate(lambda k, n: cp_lower(k, n, alpha)) <= alpha + 3 * se
    assert _miss_rate(lambda k, n: k / n) > alpha + 3 * se  # the point estimate is not a bound


def test_loss_lower_bound():
    lb = loss_lower_bound(500, 1000, 100, 1000, 0.05)
    assert lb == pytest.approx(math.log(cp_lower(500, 1000, 0.025)) - math.log(cp_upper(100, 1000, 0.025)))
    assert lb < math.log(5)
    assert loss_lower_bound(0, 1000, 5, 1000, 0.05) == -math.inf


def test_bonferroni_and_wilson():
    assert bonferroni(0.05, 10) == 0.005
    lo, hi = wilson_bounds(30, 100, 1.0)
    assert lo < 0.3 < hi


def test_projected_bound_is_monotone_in_samples():
    a = projected_lower_bound(300, 1000, 100, 1000, 10_000, 0.05)
    b = projected_lower_bound(300, 1000, 100, 1000, 1_000_000, 0.05)
    assert a < b < math.log(3)


def test_event_estimates_intervals_contain_point():
    est = event_estimates(["a", "b"], np.array([50, 10]), 1000, np.array([25, 10]), 1000, 0.05)
    for e in est:
        assert e.loss_lower <= e.loss <= e.loss_upper


def _poisson_counts(M, pa, pb, reps, seed):
    rng = np.random.default_rng(seed)
    return rng.poisson(M * pa, reps), rng.poisson(M * pb, reps)


@pytest.mark.parametrize("M,pa,pb", [(20_000, 0.01, 0.008), (2_000, 0.3, 0.3), (100_000, 1e-4, 2e-5)])
def test_conditional_bound_coverage_and_power_companion(M, pa, pb):
    alpha, reps = 0.05, 4000
    se = math.sqrt(alpha * (1 - alpha) / reps)
    ka, kb = _poisson_counts(M, pa, pb, reps, 20261201)
    truth = math.log(pa / pb)
    assert np.mean(conditional_loss_lower_bound(ka, kb, alpha) > truth) <= alpha + 3 * se
    with np.errstate(divide="ignore"):
        point = np.log(np.maximum(ka, 1e-300)) - np.log(np.maximum(kb, 1e-300))
    assert np.mean(point > truth) > alpha + 3 * se


def test_conditional_bound_formula_and_sharper_than_split():
    lo = cp_lower(300, 500, 0.05)
    assert conditional_loss_lower_bound(300, 200, 0.05) == pytest.approx(math.log(lo / (1 - lo)))
    assert conditional_loss_lower_bound(0, 10, 0.05) == -math.inf
    assert np.isfinite(conditional_loss_lower_bound(10, 0, 0.05))
    ka, kb = _poisson_counts(1_000_000, 0.01, 0.008, 200, 7)
    cond = conditional_loss_lower_bound(ka, kb, 0.05)
    split = loss_lower_bound(ka, 1_000_000, kb, 1_000_000, 0.05)
    assert np.mean(cond) > np.mean(split) + 0.01


def test_garwood_matches_poisson_quantiles():
    lo, hi = garwood_interval(10, 0.025)
    assert stats.poisson.sf(9, lo) == pytest.approx(0.025, rel=1e-9)  # Pr[K >= 10 | lo] = alpha
    assert stats.poisson.cdf(10, hi) == pytest.approx(0.025, rel=1e-9)
    assert garwood_interval(0, 0.05)[0] == 0.0


def test_projected_conditional_bound_grows_with_samples():
    a = projected_conditional_bound(300, 10_000, 100, 10_000, 10_000, 0.05)
    b = projected_conditional_bound(300, 10_000, 100, 10_000, 10_000_000, 0.05)
    assert a < b < math.log(3)
