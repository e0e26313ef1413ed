"""GTM_l's plans satisfy Corollary 35's conclusions on the floats actually run."""

import pytest

from gtm_core.batchtoco import params as P
from gtm_core.batchtoco.gtm_instance import InstancePlan, step_privacy_used
from gtm_core.batchtoco.params import COConfig


@pytest.mark.parametrize("level", [2, 5, 12])
def test_instance_plan_meets_corollary_35(level):
    c = COConfig()
    plan = InstancePlan(c, level)
    lam = P.noise_range_constant(c.c_1, c.c_h)
    share = plan.claimed_loss()
    assert plan.tau1 >= 1 / plan.epsilon_c  # rounded safe: 1/tau_1 <= eps(l)
    for j in (1, 2, 5, 100, 5000):
        sp = plan.step(j)
        jstar = P.planning_step(j)
        assert sp.s == 1  # Corollary 35: s_t = +1 (p* <= 1/2)
        assert sp.Lambda <= lam * (1 + 1e-12)
        assert sp.p_bar >= c.p_bar * (1 - 1e-12)  # the step's rejection threshold is at least p_bar
        assert sp.beta_t == pytest.approx(P.instance_step_failure(level, jstar, c.beta, c.c_beta), rel=1e-14)
        assert sp.eps_t == step_privacy_used(c, level, jstar)
        assert 1 / plan.tau1 + 2 / sp.tau2 <= share * (1 + 1e-12)  # exact check: proofs/co_ledger


def test_step_privacy_used_never_exceeds_the_formula():
    c = COConfig()
    for level, j in ((1, 1), (2, 3), (9, 1023)):
        assert step_privacy_used(c, level, j) < float(P.step_privacy(level, j, c.epsilon, c.beta, c.c_1, c.c_h,
                                                                     c.c_beta, dps=40))
