"""exact_noise planner on random configurations: every step it returns is certified, keeps Theorem 21's
claimed guarantee (p_bar_t, Lambda_t, s_t, beta_t) and is never more expensive than Theorem 21's step;
a configuration it cannot certify ends in UnsupportedConfiguration, never in an uncertified step."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gtm_core import GTMConfig, make_plan
from gtm_core.planners import exact_noise as XN
from gtm_core.errors import UnsupportedConfiguration

from .strategies import log_uniform


@st.composite
def configs(draw):
    eps = draw(log_uniform(0.1, 5.0))
    g = {"epsilon": eps, "theta": draw(log_uniform(0.2, 8.0)), "gamma": draw(st.floats(1.1, 2.0)),
         "beta": draw(log_uniform(1e-6, 0.5))}
    eps_t = draw(st.one_of(st.just(0.0), log_uniform(1e-5, 0.5))) * eps
    p_star = draw(st.one_of(st.floats(0.001, 0.999), st.floats(0.9, 0.999), log_uniform(1e-3, 0.05)))
    t = draw(st.sampled_from([1, 2, 7, 100, 1000]))
    stream = {"eps_t": eps_t, "p_star": p_star, "horizon": t}
    return g, stream, t


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_every_returned_step_is_certified_with_theorem21s_guarantee(case):
    g, stream, t = case
    try:
        p21 = make_plan(GTMConfig.from_dict({"gtm": g, "stream": stream}))
        s21 = p21.step(t)
    except UnsupportedConfiguration:
        return  # theorem21 cannot plan it either
    cn = GTMConfig.from_dict({"gtm": dict(g, parameterization="exact_noise"), "stream": stream})
    try:
        sn = make_plan(cn).step(t)
    except UnsupportedConfiguration:
        return  # refused, not returned uncertified
    cert = XN.step_certificate(cn, t)
    assert cert["certified"] and (cert["c"], cert["rho"]) == (sn.c, sn.rho)
    assert (sn.p_bar, sn.Lambda, sn.s, sn.beta_t, sn.tau2) == (s21.p_bar, s21.Lambda, s21.s, s21.beta_t, s21.tau2)
    assert sn.beta_I == sn.beta_t / 2 and sn.beta_II == sn.beta_t / 4
    assert sn.c <= s21.c
