"""The horizon planner (gtm_core.planners.horizon): its certificate, its configuration, its refusals.

Default tests use one fixed design (an *input*: the numbers `gtm tune` chose for the median cell
eps=1, eps_t=0.1, p*=0.5, T=100, beta=0.05 at theorem21's claimed p_bar); every bound is recomputed.
The tuner itself and the simulator checks are slow (tests/gtm_core/planners/test_horizon_simulation.py).
"""

from __future__ import annotations

import dataclasses
import math

import mpmath
import pytest

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration
from gtm_core.exact import StepModel, step_probabilities_ball
from gtm_core.planners.horizon import (
    HorizonDesign,
    HorizonProblem,
    config_of,
    design_of,
    failure_bound,
    failure_bound_float,
    horizon_step,
    problem_of,
)
from gtm_core.planners import global_noise

MEDIAN = HorizonProblem(epsilon=1.0, eps_t=0.1, p_star=0.5, T=100, beta=0.05)
DESIGN = HorizonDesign(s=1, c=2, rho=13.20575428, p_bar=0.00142931, theta=1.5341191128167415)


@pytest.fixture(scope="module")
def config():
    return config_of(MEDIAN, DESIGN)


def _noise(cfg):
    return global_noise(cfg)


def test_certificate_holds_and_is_plannable(config):
    plan = make_plan(config)
    sp = plan.step(100)
    assert (sp.s, sp.c, sp.rho, sp.p_bar) == (DESIGN.s, DESIGN.c, DESIGN.rho, DESIGN.p_bar)
    tau1, mu1, tau2 = _noise(config)
    b = failure_bound(MEDIAN, DESIGN, tau1=tau1, mu1=mu1, tau2=tau2)
    assert b["certified"] and b["failure_upper"] <= MEDIAN.beta
    # privacy is Lemma 17 with Theorem 21's split at the tuned theta: 1/tau1 + 2/tau2 <= eps
    assert 1 / tau1 + 2 / tau2 <= MEDIAN.epsilon * (1 + 1e-12)


def test_bound_brackets_an_independent_quadrature(config):
    """The arb panel bound is >= the integral computed independently (mpmath quad of the float closed
    form) and the matching lower panel sum is <= it: the bound is an upper bound of the right quantity."""
    tau1, mu1, tau2 = _noise(config)
    b = failure_bound(MEDIAN, DESIGN, tau1=tau1, mu1=mu1, tau2=tau2)
    from gtm_core.planners.exact_noise import step_probabilities_float

    sigma2 = 1 / (MEDIAN.eps_t * tau2)

    def integrand(x):
        x = float(x)
        scale = DESIGN.rho * math.exp(MEDIAN.eps_t * (mu1 - x))
        C = step_probabilities_float(1, DESIGN.c, scale * MEDIAN.p_star, sigma2)[0]
        H = step_probabilities_float(1, DESIGN.c, scale * DESIGN.p_bar, sigma2)[1]
        return min(1.0, MEDIAN.T * max(H, C)) * math.exp(-x / tau1) / tau1

    edges = [0, 2, 5, 10, 15, 20, 30, 60, 200]
    quad = float(mpmath.quad(integrand, edges))
    assert quad <= b["failure_upper"]
    assert quad >= 0.8 * b["failure_upper"]  # the panel bound is not loose (1% of beta + tail by design)


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


def test_overclaimed_p_bar_is_refused(config):
    """Power of the certificate: claiming 20x theorem21's p_bar with the same (c, rho) is refused."""
    bad = dataclasses.replace(DESIGN, p_bar=DESIGN.p_bar * 20)
    cfg = config_of(MEDIAN, bad)
    tau1, mu1, tau2 = _noise(cfg)
    assert not failure_bound(MEDIAN, bad, tau1=tau1, mu1=mu1, tau2=tau2)["certified"]
    with pytest.raises(UnsupportedConfiguration, match="not certified"):
        make_plan(cfg)


def test_too_small_base_rate_is_refused():
    """Type II side: a base rate 5x too small misses halts at p*; the certificate refuses it."""
    bad = dataclasses.replace(DESIGN, rho=DESIGN.rho / 5)
    with pytest.raises(UnsupportedConfiguration, match="not certified"):
        make_plan(config_of(MEDIAN, bad))


def test_float_mirror_agrees(config):
    tau1, mu1, tau2 = _noise(config)
    b = failure_bound(MEDIAN, DESIGN, tau1=tau1, mu1=mu1, tau2=tau2)
    f = failure_bound_float(MEDIAN, DESIGN, tau1=tau1, mu1=mu1, tau2=tau2)
    assert f == pytest.approx(b["failure_upper"], rel=1e-6)


def test_steps_beyond_the_horizon_are_not_planned(config):
    with pytest.raises(UnsupportedConfiguration, match="beyond the horizon"):
        horizon_step(config, 101)


def test_config_round_trip_and_fields(config):
    again = GTMConfig.from_toml(config.to_toml())
    assert again == config
    assert design_of(again) == DESIGN
    assert problem_of(again).T == 100
    d = config.to_dict()
    for key in ("direction", "c", "rho", "p_bar"):
        assert key in d["gtm"]


@pytest.mark.parametrize("change, message", [
    ({"direction": 0}, "direction must be 1 or -1"),
    ({"c": -1}, "c must be a non-negative integer"),
    ({"c": 2.5}, "c must be a non-negative integer"),
    ({"rho": -3.0}, "rho"),
    ({"p_bar": 1.5}, "p_bar"),
])
def test_bad_horizon_fields_are_typed_errors(config, change, message):
    d = config.to_dict()
    d["gtm"].update(change)
    with pytest.raises(InvalidParameter, match=message):
        GTMConfig.from_dict(d)


def test_horizon_fields_only_with_horizon(config):
    d = config.to_dict()
    d["gtm"]["parameterization"] = "theorem21"
    with pytest.raises(InvalidParameter, match="only used by parameterization 'horizon'"):
        GTMConfig.from_dict(d)
    d = config.to_dict()
    del d["gtm"]["rho"]
    with pytest.raises(Exception, match="rho"):
        GTMConfig.from_dict(d)


def test_unsupported_streams_are_refused(config):
    with pytest.raises(UnsupportedConfiguration, match="purification"):
        problem_of(config.with_changes(delta_t=0.01))
    with pytest.raises(UnsupportedConfiguration, match="per-step list"):
        problem_of(config.with_changes(p_star=[0.5] * 100))


def test_problem_validation():
    with pytest.raises(InvalidParameter, match="eps_t must be below epsilon"):
        HorizonProblem(epsilon=1.0, eps_t=1.0, p_star=0.5, T=10)
    with pytest.raises(InvalidParameter, match="horizon"):
        HorizonProblem(epsilon=1.0, eps_t=0.1, p_star=0.5, T=0)
