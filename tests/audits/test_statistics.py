"""Clopper-Pearson bounds and the loss lower bound.

Coverage check: alpha = 0.05, seed 20261130, 4000 replications; the empirical miss rate of the
one-sided bound must be <= alpha + 3 standard errors. Power companion: a deliberately anti-
conservative bound (the point estimate) misses far more often under the same test.
"""

import math

import numpy as np
import pytest
from scipy import stats

from audits.statistics import (bonferroni, cp_interval, cp_lower, cp_upper, event_estimates, loss_lower_bound,
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
