"""The deployed GTM simulator (audits.capped_target) against the exact engine's law of the deployed
mechanism (gtm_core.exact: refusals included). Statistical checks: alpha = 1e-3 each, seed stated;
power companion: the uncapped law is rejected by the same test on the capped counts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audits.capped_target import DeployedSimulatorTarget, deployed_outcomes
from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter
from gtm_core.exact import transcript_distribution

ALPHA, SEED, N = 1e-3, 7, 2_000_000
P = 1.6487e-7  # docs/deployment.md's pair, the larger stream


def plan_for(policy: str):
    return make_plan(GTMConfig.from_dict({
        "gtm": {"epsilon": 1.0, "parameterization": "theorem21", "theta": 1.0, "gamma": 2.0, "beta": 0.05,
                "evaluation_budget": policy},
        "stream": {"eps_t": 0.5, "p_star": 0.5, "horizon": 10},
    }))


def _pvalue(count: int, n: int, prob: float) -> float:
    return stats.binomtest(count, n, prob).pvalue


@pytest.fixture(scope="module")
def counts():
    out = {}
    for policy in ("refuse", "none"):
        h = DeployedSimulatorTarget(plan_for(policy)).sample([P], N, SEED).halt
        out[policy] = {code: int((h == code).sum()) for code in (-1, 0, 1)}
    return out


@pytest.fixture(scope="module")
def laws():
    return {policy: transcript_distribution(plan_for(policy), [P], dps=8) for policy in ("refuse", "none")}


def test_capped_law_matches_the_exact_engine(counts, laws):
    law, c = laws["refuse"], counts["refuse"]
    assert _pvalue(c[1], N, float(law.halt[0].value)) > ALPHA
    assert _pvalue(c[-1], N, float(law.refused[0].value)) > ALPHA
    # power companion: the uncapped law's halting probability is rejected on the capped counts
    assert _pvalue(c[1], N, float(laws["none"].halt[0].value)) < ALPHA


def test_uncapped_law_is_algorithm1_without_refusals(counts, laws):
    c = counts["none"]
    assert c[-1] == 0 and _pvalue(c[1], N, float(laws["none"].halt[0].value)) > ALPHA
    assert _pvalue(c[1], N, float(laws["refuse"].halt[0].value)) < ALPHA  # power companion


def test_outcomes_stop_at_the_first_refusal_or_halt():
    plan = make_plan(GTMConfig.load("examples/unsafe_budget.toml"))
    h = deployed_outcomes(plan, [0.9, 0.9, 0.9], 20_000, np.random.default_rng(SEED))
    assert set(np.unique(h).tolist()) <= {-3, -2, -1, 0, 1, 2, 3} and (h == -1).any() and (h == 1).any()


def test_bad_arguments_are_named():
    plan = plan_for("refuse")
    with pytest.raises(InvalidParameter, match="plan must be a gtm_core Plan"):
        DeployedSimulatorTarget("plan")
    with pytest.raises(InvalidParameter, match="exceeds the plan's horizon"):
        deployed_outcomes(plan, [0.5] * 11, 10, np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match="evaluations"):
        DeployedSimulatorTarget(plan).sample([0.5], 10, 0, evaluations=True)
