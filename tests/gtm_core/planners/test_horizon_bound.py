"""The horizon planner's rigorous failure bound (gtm_core.planners.horizon_bound) and its float mirror.

Default tests use one fixed design (tests/gtm_core/planners/horizon_cases.py); every bound is recomputed.
"""

from __future__ import annotations

import json
import math

import mpmath
import pytest

from gtm_core.exact import StepModel, step_probabilities_ball
from gtm_core.planners import global_noise
from gtm_core.planners.exact_noise import step_probabilities_float
from gtm_core.planners.horizon_bound import (
    CERT_BITS,
    FailureBound,
    expected_evaluations_per_step,
    failure_bound,
    failure_bound_float,
)
from gtm_core.planners.horizon_problem import config_of
from tests.gtm_core.planners.horizon_cases import DESIGN, MEDIAN

KEYS = ["failure_upper", "failure_ball", "beta", "certified", "panels", "U", "tail_upper", "type_I_at_eta1_0",
        "type_II_at_eta1_0", "precision_bits"]


@pytest.fixture(scope="module")
def noise():
    return global_noise(config_of(MEDIAN, DESIGN))


@pytest.fixture(scope="module")
def bound(noise):
    tau1, mu1, tau2 = noise
    return failure_bound(MEDIAN, DESIGN, tau1=tau1, mu1=mu1, tau2=tau2)


def test_bound_brackets_an_independent_quadrature(noise, bound):
    """The arb panel bound is >= the integral computed independently (mpmath quad of the float closed
    form) and not loose: the bound is an upper bound of the right quantity."""
    tau1, mu1, tau2 = noise
    sigma2 = 1 / (MEDIAN.eps_t * tau2)

    def integrand(x):
        x = float(x)
        scale = DESIGN.rho * math.exp(MEDIAN.eps_t * (mu1 - x))
        C = step_probabilities_float(1, DESIGN.c, scale * MEDIAN.p_star, sigma2)[0]
        H = step_probabilities_float(1, DESIGN.c, scale * DESIGN.p_bar, sigma2)[1]
        return min(1.0, MEDIAN.T * max(H, C)) * math.exp(-x / tau1) / tau1

    edges = [0, 2, 5, 10, 15, 20, 30, 60, 200]
    quad = float(mpmath.quad(integrand, edges))
    assert quad <= bound.failure_upper
    assert quad >= 0.8 * bound.failure_upper  # the panel bound is not loose (1% of beta + tail by design)


@pytest.mark.parametrize("s", [1, -1])
def test_monotonicity_used_by_the_panel_bound(s):
    """C(x) = continue at p* is non-decreasing and H(x) = halt at p_bar non-increasing in eta_1 = x
    (the fact the panel bound rests on), in arb on a grid, both directions."""
    p_star, p_bar = (0.5, 0.01) if s == 1 else (0.9, 0.5)
    r_C, r_H = (p_star, p_bar) if s == 1 else (1 - p_star, 1 - p_bar)
    xs = [0.25 * k for k in range(60)]
    C = [v[0] for v in step_probabilities_ball(StepModel(1, s, 7, 30.0, 0.1, 3.0, r_C), 5.0, xs, 96)]
    H = [v[1] for v in step_probabilities_ball(StepModel(1, s, 7, 30.0, 0.1, 3.0, r_H), 5.0, xs, 96)]
    for a, b in zip(C[:-1], C[1:]):
        assert not bool(b < a)
    for a, b in zip(H[:-1], H[1:]):
        assert not bool(b > a)
    assert bool(C[-1] > C[0]) and bool(H[-1] < H[0])  # and they really move


def test_float_mirror_agrees(noise, bound):
    tau1, mu1, tau2 = noise
    f = failure_bound_float(MEDIAN, DESIGN, tau1=tau1, mu1=mu1, tau2=tau2)
    assert f == pytest.approx(bound.failure_upper, rel=1e-6)


def test_finer_grid_gives_a_consistent_bound(noise, bound):
    """Halving every panel (the certify witness's grid) doubles the panels and cannot loosen the bound
    by more than the ball radii (the panel bound is monotone under refinement)."""
    tau1, mu1, tau2 = noise
    fine = failure_bound(MEDIAN, DESIGN, tau1=tau1, mu1=mu1, tau2=tau2, refine_all=True)
    assert fine.panels == 2 * bound.panels
    assert fine.certified and fine.failure_upper <= bound.failure_upper * (1 + 1e-12)


def test_serialised_form_keys_values_and_round_trip(bound):
    d = bound.to_dict()
    assert list(d) == KEYS
    assert d["U"] == bound.eta1_cutoff and d["precision_bits"] == CERT_BITS
    assert FailureBound.from_dict(json.loads(json.dumps(d))) == bound
    # the parts are consistent: the tail and the first panel's error are inside the total
    assert bound.tail_upper <= bound.failure_upper and bound.beta == MEDIAN.beta
    assert 0 <= bound.type_I_at_eta1_0 <= 1 and 0 <= bound.type_II_at_eta1_0 <= 1


def test_expected_evaluations_is_the_lemma12_moment(noise):
    """E[lambda_t] = rho e^{eps_t mu_1} sigma_1/(sigma_1+1) sigma_2/(sigma_2-1) (s = +1), recomputed in mpmath."""
    tau1, mu1, tau2 = noise
    got = expected_evaluations_per_step(MEDIAN, DESIGN, tau1=tau1, mu1=mu1, tau2=tau2)
    e = mpmath.mpf(MEDIAN.eps_t)
    s1, s2 = 1 / (e * tau1), 1 / (e * tau2)
    want = DESIGN.rho * mpmath.exp(e * mu1) * s1 / (s1 + 1) * s2 / (s2 - 1)
    assert got == pytest.approx(float(want), rel=1e-12)
