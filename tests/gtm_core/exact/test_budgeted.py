"""The "refuse" evaluation budget breaks pure DP at step 1 (gtm_core.exact.budgeted)."""

from __future__ import annotations

import math

import pytest

from gtm_core import GTMConfig, make_plan
from gtm_core.exact import transcript_distribution
from gtm_core.exact.budgeted import first_step_outcome_probabilities, privacy_loss

# 1.649e-7 (the outside measurement) is NOT a neighbour: 1.649 > e^0.5 = 1.64872; use 1.6487e-7
P, P_NB = 1e-7, 1.6487e-7


@pytest.fixture(scope="module")
def setup():
    cfg = GTMConfig.from_dict({
        "gtm": {"epsilon": 1.0, "parameterization": "theorem21", "theta": 1.0, "gamma": 2.0, "beta": 0.05},
        "stream": {"eps_t": 0.5, "p_star": 0.5, "horizon": 10},
    })
    plan = make_plan(cfg)
    sp = plan.step(1)
    assert P_NB / P < math.exp(sp.eps_t)
    res = {}
    for b in (sp.evaluation_budget, None):
        for p in (P, P_NB):
            res[(b, p)] = first_step_outcome_probabilities(
                sp, tau1=plan.tau1, mu1=plan.mu1, p=p, budget=b, digits=20)
    return plan, sp, res


def test_truncation_breaks_pure_dp(setup):
    plan, sp, res = setup
    B = sp.evaluation_budget
    a, b = res[(B, P)].halt, res[(B, P_NB)].halt
    loss = float(privacy_loss(a, b))
    print(f"budgeted halt {float(a):.4e} vs {float(b):.4e}, loss {loss:.4f}")
    assert float(a) == pytest.approx(3.185e-7, rel=1e-3)
    assert float(b) == pytest.approx(3.6805e-4, rel=1e-3)
    assert loss == pytest.approx(7.0523, abs=2e-3)
    assert loss > 6.5


def test_untruncated_is_private(setup):
    plan, sp, res = setup
    a, b = res[(None, P)].halt, res[(None, P_NB)].halt
    loss = float(privacy_loss(a, b))
    print(f"untruncated halt {float(a):.4e} vs {float(b):.4e}, loss {loss:.4f}")
    assert loss == pytest.approx(0.3333, abs=2e-4)
    assert loss < 1.0
    assert res[(None, P)].refused == 0


def test_outcomes_sum_to_one(setup):
    # pointwise Poisson tails are float64 (module docstring), so 1e-10, not 25 digits
    for r in setup[2].values():
        assert abs(float(r.halt + r.continue_ + r.refused) - 1) < 1e-10


def test_untruncated_agrees_with_exact_engine(setup):
    plan, sp, res = setup
    for p in (P, P_NB):
        td = transcript_distribution(plan, [p], dps=15)
        ref = float(td.halt[0].value) if hasattr(td.halt[0], "value") else float(td.halt[0])
        assert float(res[(None, p)].halt) == pytest.approx(ref, rel=1e-9)
