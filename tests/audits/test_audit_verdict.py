"""The end of an audit (audits.audit_verdict): the budget assessment in the JSON."""

import pytest

from audits.gtm_audit import audit
from audits.targets import SimulatorTarget
from gtm_core import GTMConfig, make_plan


@pytest.fixture(scope="module")
def plan():
    return make_plan(GTMConfig.load("examples/default.toml"))


def test_budget_too_small_is_reported(plan):
    """4000 runs in all give at most 4000 hits on any event, so the conditional test can never exceed
    ln(4000 / -ln(0.05)) ~ 7.2: a claim of 8 cannot be refuted, and the JSON says so (warning + the best
    reachable bound). Companion: with 1e6 runs and the claim 1 the budget is meaningful, no warning."""
    r = audit(SimulatorTarget(plan), epsilon=8.0, eps_t=0.1, seconds=None, max_samples=4000, seed=0,
              progress=False, max_T=3)
    budget = r.to_dict()["search"]["budget"]
    assert not budget["meaningful"] and "budget too small" in budget["warning"]
    assert budget["best_reachable_bound"] is None or budget["best_reachable_bound"] < 8.0
    big = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=1_000_000, seed=0,
                progress=False, max_T=3)
    assert big.to_dict()["search"]["budget"]["meaningful"] and big.to_dict()["search"]["budget"]["warning"] is None
