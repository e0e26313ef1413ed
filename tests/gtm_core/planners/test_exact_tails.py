"""Exact-tail calibration planner (gtm_core/exact_calibration.py)."""

from __future__ import annotations

import math

import pytest

from gtm_core import GTMConfig, make_plan
from gtm_core.planners import exact_tails as X

BASE = {
    "gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05},
    "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 1000},
}


def _plans(gamma=1.5, p_star=0.5, eps_t=0.1):
    d = {"gtm": dict(BASE["gtm"], gamma=gamma), "stream": dict(BASE["stream"], p_star=p_star, eps_t=eps_t)}
    c21 = GTMConfig.from_dict(d)
    cx = GTMConfig.from_dict({"gtm": dict(d["gtm"], parameterization="exact"), "stream": d["stream"]})
    return make_plan(c21), make_plan(cx), cx


def test_measured_threshold_282_to_143():
    p21, px, _ = _plans()
    assert p21.step(1).c == 282
    assert px.step(1).c == 143


@pytest.mark.parametrize("gamma", [1.25, 1.5, 2.0])
def test_at_most_0_6_of_theorem21_expected_evaluations_at_t1(gamma):
    p21, px, cx = _plans(gamma=gamma)
    ratio = X.expected_evaluations(px, 1) / X.expected_evaluations(p21, 1)
    assert ratio <= 0.6
    assert X.step_certificate(cx, 1)["certified"]


@pytest.mark.parametrize("p_star,eps_t", [(0.5, 0.1), (0.95, 0.01)])
def test_tails_certified_and_thresholds_minimal(p_star, eps_t):
    p21, px, cx = _plans(p_star=p_star, eps_t=eps_t)
    for t in (1, 10, 100):
        st = px.step(t)
        assert st.s == p21.step(t).s  # same flipping rule
        cert = X.step_certificate(cx, t)
        assert cert["type_I_certified"] and cert["type_II_certified"]
        a_l, a_r = (st.beta_II, st.beta_I) if st.s == 1 else (st.beta_I, st.beta_II)
        # c is the smallest with lambda_exact^l <= gamma lambda_exact^r
        assert X.lambda_exact_left(st.c, a_l) <= 1.5 * X.lambda_exact_right(st.c, a_r)
        assert X.lambda_exact_left(st.c - 1, a_l) > 1.5 * X.lambda_exact_right(st.c - 1, a_r)
        assert st.p_bar == p21.step(t).p_bar and st.tau2 == p21.step(t).tau2


def test_certificate_fails_on_a_mutated_rho():
    """The certificate is not vacuous: 1% less base rate breaks the Type II tail (s=+1)."""
    _, px, cx = _plans()
    st = px.step(1)
    good = X.certify_tails(st.s, st.c, st.rho, st.p_star, 1.5, st.beta_I, st.beta_II)
    bad = X.certify_tails(st.s, st.c, st.rho * 0.99, st.p_star, 1.5, st.beta_I, st.beta_II)
    assert good["certified"] and not bad["type_II_certified"]
    worse_c = X.certify_tails(st.s, st.c - 5, st.rho, st.p_star, 1.5, st.beta_I, st.beta_II)
    assert not worse_c["certified"]


def test_tail_functions_invert_the_poisson_cdf():
    from scipy import stats

    lam = X.lambda_exact_left(143, 0.01)
    assert math.isclose(stats.poisson.cdf(143, lam), 0.01, rel_tol=1e-9)
    lam = X.lambda_exact_right(143, 0.01)
    assert math.isclose(stats.poisson.sf(143, lam), 0.01, rel_tol=1e-9)
