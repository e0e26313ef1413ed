"""The horizon planner step (gtm_core.planners.horizon): certified designs are planned, others refused.

Default tests use one fixed design (tests/gtm_core/planners/horizon_cases.py); every bound is
recomputed. The tuner and the simulator checks are slow (test_horizon_tune.py, test_horizon_simulation.py).
"""

from __future__ import annotations

import dataclasses

import pytest

from gtm_core import make_plan
from gtm_core.errors import UnsupportedConfiguration
from gtm_core.planners import global_noise
from gtm_core.planners.horizon import certificate, horizon_step
from gtm_core.planners.horizon_bound import FailureBound, failure_bound
from gtm_core.planners.horizon_problem import config_of

from tests.gtm_core.planners.horizon_cases import DESIGN, MEDIAN


@pytest.fixture(scope="module")
def config():
    return config_of(MEDIAN, DESIGN)


def test_certificate_holds_and_is_plannable(config):
    plan = make_plan(config)
    sp = plan.step(100)
    assert (sp.s, sp.c, sp.rho, sp.p_bar) == (DESIGN.s, DESIGN.c, DESIGN.rho, DESIGN.p_bar)
    tau1, mu1, tau2 = global_noise(config)
    b = failure_bound(MEDIAN, DESIGN, tau1=tau1, mu1=mu1, tau2=tau2)
    assert b.certified and b.failure_upper <= MEDIAN.beta
    # privacy is Lemma 17 with Theorem 21's split at the tuned theta: 1/tau1 + 2/tau2 <= eps
    assert 1 / tau1 + 2 / tau2 <= MEDIAN.epsilon * (1 + 1e-12)


def test_certificate_is_the_failure_bound_of_the_deployed_noise(config):
    """The planner's (cached) certificate is the frozen bound of the configuration's own floats."""
    tau1, mu1, tau2 = global_noise(config)
    cert = certificate(config)
    assert isinstance(cert, FailureBound)
    assert cert == failure_bound(MEDIAN, DESIGN, tau1=tau1, mu1=mu1, tau2=tau2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cert.certified = False  # a cached value cannot be edited by a caller


def test_overclaimed_p_bar_is_refused(config):
    """Power of the certificate: claiming 20x theorem21's p_bar with the same (c, rho) is refused."""
    bad = dataclasses.replace(DESIGN, p_bar=DESIGN.p_bar * 20)
    cfg = config_of(MEDIAN, bad)
    tau1, mu1, tau2 = global_noise(cfg)
    assert not failure_bound(MEDIAN, bad, tau1=tau1, mu1=mu1, tau2=tau2).certified
    with pytest.raises(UnsupportedConfiguration, match="not certified"):
        make_plan(cfg)


def test_too_small_base_rate_is_refused():
    """Type II side: a base rate 5x too small misses halts at p*; the certificate refuses it."""
    bad = dataclasses.replace(DESIGN, rho=DESIGN.rho / 5)
    with pytest.raises(UnsupportedConfiguration, match="not certified"):
        make_plan(config_of(MEDIAN, bad))


@pytest.mark.parametrize("s", [1, -1])
def test_p_bar_not_below_p_star_is_refused_in_both_directions(s):
    bad = dataclasses.replace(DESIGN, s=s, p_bar=MEDIAN.p_star)
    with pytest.raises(UnsupportedConfiguration, match="must be below p_star"):
        certificate(config_of(MEDIAN, bad))


def test_steps_beyond_the_horizon_are_not_planned(config):
    with pytest.raises(UnsupportedConfiguration, match="beyond the horizon"):
        horizon_step(config, 101)
