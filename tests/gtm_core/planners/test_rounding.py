"""Directed rounding: the planned floats satisfy the lemmas' preconditions exactly."""

import math
from fractions import Fraction

import pytest

from gtm_core import GTMConfig, make_plan
from gtm_core.planners import rounding as R


def _plan(param="theorem21", **stream):
    g = {"gamma": 1.5, "beta": 0.05, "parameterization": param}
    if param == "theorem23":
        g.update(epsilon_c=1.0, c_h=2.0)
    else:
        g.update(epsilon=1.0, theta=1.0)
    s = {"eps_t": 0.1, "p_star": 0.5, "horizon": 200}
    s.update(stream)
    return make_plan(GTMConfig.from_dict({"gtm": g, "stream": s}))


@pytest.mark.parametrize("eps,theta", [(1.0, 1.0), (0.3, 0.7), (2.0, 3.3), (0.5, 0.2)])
def test_theorem21_privacy_identity_exact(eps, theta):
    cfg = GTMConfig.from_dict({"gtm": {"epsilon": eps, "theta": theta, "gamma": 1.5, "beta": 0.05},
                               "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 5}})
    plan = make_plan(cfg)
    total = 1 / Fraction(plan.tau1) + 2 / Fraction(plan.step(1).tau2)
    assert total <= Fraction(eps)
    assert total >= Fraction(eps) * (1 - Fraction(1, 10**14))  # rounding costs at most a few ulps


@pytest.mark.parametrize("param", ["theorem21", "theorem23"])
@pytest.mark.parametrize("p_star,eps_t", [(0.5, 0.1), (0.95, 0.01), (0.05, 0.3)])
def test_step_preconditions_hold_in_interval_arithmetic(param, p_star, eps_t):
    plan = _plan(param, p_star=p_star, eps_t=eps_t)
    for t in (1, 2, 10, 77, 200):
        sp = plan.step(t)
        with R._iv_precision():
            if sp.s == 1:
                assert R._lo(R._exact_iv(sp.rho) * R._exact_iv(sp.p_star)) >= R._hi(
                    R.iv_lambda_left(sp.c, sp.beta_II))
            else:
                assert R._hi(R._exact_iv(sp.rho) * R._exact_iv(1 - sp.p_star)) <= R._lo(
                    R.iv_lambda_right(sp.c, sp.beta_II))
        assert R.round_noise_range(sp.Lambda, sp.eps_t, plan.mu1, sp.tau2, sp.beta_t) == sp.Lambda
        assert R.round_mu1(plan.mu1, plan.tau1, plan.config.gtm.beta) == plan.mu1


def test_mutant_one_ulp_low_base_rate_is_caught():
    plan = _plan()
    sp = plan.step(1)
    # walk rho down until the rigorous check fails, then rounding must walk it back up
    rho = sp.rho
    for _ in range(64):
        rho = math.nextafter(rho, 0)
        with R._iv_precision():
            ok = R._lo(R._exact_iv(rho) * R._exact_iv(sp.p_star)) >= R._hi(R.iv_lambda_left(sp.c, sp.beta_II))
        if not ok:
            break
    assert not ok, "some float below the planned rho must violate rho p* >= lambda^l"
    assert R.round_base_rate_above(rho, sp.c, sp.beta_II, sp.p_star) > rho


def test_mutant_noise_scales_that_overspend_are_nudged():
    t1, t2 = R.round_noise_scales_theorem21(math.nextafter(3.0, 0), 3.0, 1.0)
    assert 1 / Fraction(t1) + 2 / Fraction(t2) <= 1
    assert t1 >= 3.0


def test_rejection_threshold_never_claims_more_than_the_variant_gives():
    plan = _plan(p_star=0.3)
    sp = plan.step(3)
    g = plan.config.gtm.gamma
    assert Fraction(sp.p_bar) * Fraction(g) * Fraction(sp.Lambda) <= Fraction(sp.p_star)


def test_overflowing_configuration_is_a_typed_error():
    from gtm_core.errors import UnsupportedConfiguration

    cfg = GTMConfig.from_dict({"gtm": {"epsilon": 0.1, "theta": 0.01, "gamma": 1.5, "beta": 0.05},
                               "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 5}})
    with pytest.raises(UnsupportedConfiguration, match="overflows"):
        make_plan(cfg)


# ---------------------------------------------------------------------------
# evaluation budgets beyond 2^53 (`gtm certify` on eps_t = 2 once reported a "planner
# defect" - cost.evaluation-bound failed at 129 of 1000 steps)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("lam_bar", [3.858551389804523e+34, 8.91580001858545e+26, 1e17, 12345.678, 2.0 ** 60])
def test_evaluation_budget_is_the_rigorous_ceiling_even_beyond_2_53(lam_bar):
    import math

    from flint import arb, ctx

    from gtm_core.planners.rounding import evaluation_budget

    b = evaluation_budget(math.e, lam_bar)
    old = ctx.prec
    ctx.prec = 256
    try:
        need = arb(1).exp() * arb(Fraction(lam_bar).numerator) / arb(Fraction(lam_bar).denominator)
        assert arb(b) >= need          # an upper bound: Lemma 22(1) holds with this budget
        assert arb(b - 1) < need       # and the smallest integer that is one
    finally:
        ctx.prec = old


def test_rounding_through_mpmath_ceil_was_the_defect():
    # companion: the old last line, int(mpmath.ceil(bound)), rounds the 60-digit bound to mpmath's
    # 53-bit working precision first and lands below e * lambda_bar for this step of the eps_t = 2
    # configuration; the exact ceiling does not
    import mpmath
    from flint import arb, ctx

    from gtm_core.planners.rounding import evaluation_budget

    lam_bar = 3.858551389804523e+34
    old_dps = mpmath.iv.dps
    mpmath.iv.dps = 60
    try:
        bound = (mpmath.iv.e * mpmath.iv.mpf(lam_bar)).b
    finally:
        mpmath.iv.dps = old_dps
    old_budget = int(mpmath.ceil(bound))
    prec = ctx.prec
    ctx.prec = 256
    try:
        need = arb(1).exp() * arb(int(lam_bar))  # lam_bar is an integer-valued float here
        assert arb(old_budget) < need
        assert arb(evaluation_budget(math.e, lam_bar)) >= need
    finally:
        ctx.prec = prec


def test_step_failure_rounded_below_definition7():
    """beta_2 = omega_2 beta at beta = 0.05 rounds *up* in float64; the planner's share must not
    (sum_t beta_t <= beta is what the union bound of Theorems 21/23 uses)."""
    from flint import arb

    from gtm_core import formulas as F
    from gtm_core.zeta import zeta_enclosure

    from flint import ctx

    nearest = F.step_failure_probability(2, 0.05)
    planned = R.round_step_failure_down(nearest, 2, 0.05)
    old, ctx.prec = ctx.prec, 256
    try:
        exact = arb(0.05) / (zeta_enclosure(40) * 2 * arb(4).log() ** 3)
        assert arb(nearest) > exact  # the float64 formula lands above the true share
        assert arb(planned) <= exact
        assert arb(math.nextafter(planned, 1.0)) > exact  # the largest such float: no more than needed
    finally:
        ctx.prec = old


def test_share_at_most_never_sums_above_the_total():
    total = 0.0005154639175257732  # total/6 rounds up in float64
    assert 6 * Fraction(total / 6) > Fraction(total)
    x = R.share_at_most(total, 6)
    assert 6 * Fraction(x) <= Fraction(total)
    assert x == math.nextafter(total / 6, 0.0)
    assert R.share_at_most(0.25, 4) == 0.0625  # exact splits are kept
