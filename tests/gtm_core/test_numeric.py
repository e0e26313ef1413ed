"""gtm_core.numeric: backends and the one Laplace CDF."""

import math

import mpmath
import numpy as np
import pytest

from gtm_core.numeric import laplace_cdf, laplace_density


def _old_array_cdf(x, scale):  # gtm_core/baselines._laplace_cdf and audits/svt copy (pinned)
    x = np.asarray(x, dtype=float)
    return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0) / scale), 1 - 0.5 * np.exp(-np.maximum(x, 0) / scale))


def _old_rate_cdf(q, eps_1):  # gtm_core/baselines.laplace_probability (pinned)
    q = np.asarray(q, dtype=float)
    return np.where(q <= 0, 0.5 * np.exp(eps_1 * np.minimum(q, 0)), 1 - 0.5 * np.exp(-eps_1 * np.maximum(q, 0)))


def _old_scalar(f, tau_L, eps1):  # audits/search.laplace_probability (pinned)
    d = f - tau_L
    return 0.5 * math.exp(eps1 * d) if d <= 0 else 1 - 0.5 * math.exp(-eps1 * d)


X = np.concatenate([np.random.default_rng(7).normal(0, 30, 20000), [0.0, -0.0, 1e-320, -1e-320, 800.0, -800.0]])


@pytest.mark.parametrize("scale", [0.01, 1.0, 7.5, 1e6])
def test_array_form_is_bit_identical_to_the_old_copies(scale):
    assert np.array_equal(laplace_cdf(X, scale=scale), _old_array_cdf(X, scale))
    assert np.array_equal(laplace_cdf(X, rate=1 / scale), _old_rate_cdf(X, 1 / scale))
    assert float(laplace_cdf(np.asarray(X[3]), scale=scale)) == float(_old_array_cdf(X[3], scale))


@pytest.mark.parametrize("eps1", [0.05, 1.0, 3.0])
def test_scalar_form_is_bit_identical_to_the_auditor_copy(eps1):
    for x in X[:3000]:
        x = float(x)
        assert laplace_cdf(x - 0.25, rate=eps1) == _old_scalar(x, 0.25, eps1)


def test_against_mpmath():
    with mpmath.workdps(40):
        for x in (-30.0, -1.0, -1e-9, 0.0, 0.3, 2.0, 50.0):
            ref = mpmath.mpf(x) < 0 and mpmath.exp(mpmath.mpf(x) / 2) / 2 or 1 - mpmath.exp(-mpmath.mpf(x) / 2) / 2
            assert abs(laplace_cdf(x, scale=2.0) - float(ref)) <= 2e-16
    assert laplace_cdf(0.0, scale=1.0) == 0.5


def test_density_integrates_to_one():
    x = np.linspace(-60, 60, 200001)
    assert abs(np.trapezoid(laplace_density(x, scale=2.0), x) - 1) < 1e-8


def test_exactly_one_parameter():
    with pytest.raises(TypeError):
        laplace_cdf(0.0)
    with pytest.raises(TypeError):
        laplace_cdf(0.0, scale=1.0, rate=1.0)


# ---------------------------------------------------------------------------
# outward rounding and the one-dimensional searches
# ---------------------------------------------------------------------------

from flint import arb, ctx  # noqa: E402

from gtm_core.numeric import golden_section_minimum, integer_ternary_minimum, lower_float, upper_float  # noqa: E402


@pytest.mark.parametrize("text", ["1/3", "2/3", "1e-300/7", "-5/11", "123456789/1000"])
def test_outward_rounding_brackets_the_ball(text):
    num, den = text.split("/")
    old = ctx.prec
    ctx.prec = 200
    try:
        ball = arb(num) / arb(den)
        hi, lo = upper_float(ball), lower_float(ball)
        assert bool(arb(hi) >= ball.upper()) and bool(arb(lo) <= ball.lower())
        # tight: one ulp inwards is inside the ball's hull or beyond it on the other side
        assert not bool(arb(math.nextafter(hi, -math.inf)) >= ball.upper())
        assert not bool(arb(math.nextafter(lo, math.inf)) <= ball.lower())
    finally:
        ctx.prec = old


def test_outward_rounding_of_non_finite_balls():
    assert upper_float(arb("inf")) == math.inf and lower_float(arb("inf")) == -math.inf
    assert upper_float(arb("nan")) == math.inf


def test_golden_section_finds_a_unimodal_minimum_in_iterations_plus_two_evaluations():
    calls = []

    def f(x):
        calls.append(x)
        return (x - 0.3) ** 2

    x, fx = golden_section_minimum(f, -1.0, 2.0, iterations=40)
    assert x == pytest.approx(0.3, abs=1e-6) and fx == f(x)
    assert len(calls) == 43  # 40 + 2 probes, plus the check above


def test_golden_section_ten_steps_narrow_by_the_golden_ratio():
    x, _ = golden_section_minimum(lambda v: abs(v - 7.0), 0.0, 10.0)
    assert abs(x - 7.0) <= 10.0 * 0.6181 ** 10


@pytest.mark.parametrize("low, high, best", [(0, 100, 37), (0, 3, 3), (37, 37, 37), (40, 90, 40), (0, 36, 36)])
def test_integer_ternary_minimum_of_a_unimodal_function(low, high, best):
    seen = []

    def f(k):
        seen.append(k)
        return abs(k - 37)

    assert integer_ternary_minimum(f, low, high) == best
    assert len(seen) == len(set(seen))  # each integer evaluated once
