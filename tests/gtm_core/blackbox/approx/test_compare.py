"""gtm_core.blackbox.approx.compare: the closed-form lambdas agree with the evaluators' parameters, and the
crossover is where lambda_approx first drops below lambda_pure."""

import math

import mpmath
import pytest

from gtm_core.blackbox.approx.compare import crossover, lambda_approx, lambda_pure, log_star_of_exp
from gtm_core.blackbox.approx.evaluator import ApproxConfig, approx_parameters
from gtm_core.blackbox.approx.params import ApproxConstants, log_star
from gtm_core.blackbox.evaluator import pure_parameters_from


def test_log_star_of_exp_matches_integer_log_star():
    for M in (2, 3, 4, 5, 16, 17, 100, 65536, 65537, 10**6):
        assert log_star_of_exp(mpmath.log(M)) == log_star(M), M


@pytest.mark.parametrize("M,d", [(101, 1), (37, 2), (7, 1)])
def test_lambdas_match_the_evaluator_parameters(M, d):
    p = pure_parameters_from(0.9, 0.1, M, d)
    assert abs(float(lambda_pure(mpmath.log(M), d, 0.9, 0.1)) - (p.K + 2 * p.R + 1)) <= d + 1.01  # K's ceiling
    dom = tuple([i] for i in range(M)) if d == 1 else tuple((i, j) for i in range(2) for j in range(2))
    a = approx_parameters(ApproxConfig(0.9, 1e-6, 0.1, dom, ApproxConstants(C=160)), M)
    lam = float(lambda_approx(mpmath.log(M), d, 0.9, 1e-6, 0.1, 160))
    assert math.isclose(lam, (d + 1) * (a.Delta + 1) + 2 * a.R + 1, rel_tol=1e-9)


@pytest.mark.parametrize("d,C", [(1, 160.0), (2, 160.0), (1, 1e-3)])
def test_crossover_is_the_first_size_where_approx_wins(d, C):
    c = crossover(d, 0.9, 1e-6, 0.1, C)
    x = mpmath.mpf(c["lnM"])
    assert lambda_approx(x * (1 + mpmath.mpf(10) ** -6), d, 0.9, 1e-6, 0.1, C) < \
        lambda_pure(x * (1 + mpmath.mpf(10) ** -6), d, 0.9, 0.1)
    assert lambda_approx(x * (1 - mpmath.mpf(10) ** -6), d, 0.9, 1e-6, 0.1, C) > \
        lambda_pure(x * (1 - mpmath.mpf(10) ** -6), d, 0.9, 0.1)
    if C == 160.0:
        assert c["log10M"] > 1e9  # never at a runnable size


def test_direction_depth_is_a_valid_qco_quality():
    """Sensitivity 1 under adding a record, and quasi-concave along segments (random instances, seed 61)."""
    import numpy as np

    from gtm_core.blackbox.approx.compare import direction_depth, directions_3d

    rng = np.random.default_rng(61)
    D = directions_3d()
    for _ in range(50):
        P = rng.normal(size=(int(rng.integers(3, 30)), 3))
        a, b = rng.normal(size=3), rng.normal(size=3)
        extra = np.vstack([P, rng.normal(size=(1, 3))])
        assert 0 <= direction_depth(extra, a, D) - direction_depth(P, a, D) <= 1
        lo = min(direction_depth(P, a, D), direction_depth(P, b, D))
        for t in np.linspace(0, 1, 7):
            assert direction_depth(P, t * a + (1 - t) * b, D) >= lo


def test_sample_and_aggregate_d3_uses_the_direction_depth():
    """d = 3: the block outputs' direction-restricted Tukey depth scores Y; with every block returning the
    same point, that point has all the depth and the exponential mechanism at eps = 50 picks it."""
    import numpy as np

    from gtm_core.blackbox.approx.compare import sample_and_aggregate_indices

    Y = [(x, y, z) for x in (0.0, 1.0) for y in (0.0, 1.0) for z in (0.0, 1.0)]
    idx = sample_and_aggregate_indices(lambda T: Y[5], list(range(12)), 4, Y, 50.0, np.random.default_rng(0), 20, 3)
    assert (idx == 5).all()
