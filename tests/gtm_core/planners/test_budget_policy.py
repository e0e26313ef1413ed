"""The evaluation-budget policy: "none" deploys Algorithm 1 (pure epsilon), "refuse" a hard cap
whose claim is (epsilon, delta) with delta = (1 + e^eps) sum_t Pr[N_t > B_t] (docs/deployment.md)."""

import math

import numpy as np
import pytest

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import EvaluationBudgetExceeded, InvalidParameter
from gtm_core.evaluation import BernoulliMechanism
from gtm_core.reference import GTMRun


def cfg(policy=None, **stream):
    g = {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05}
    if policy is not None:
        g["evaluation_budget"] = policy
    return GTMConfig.from_dict({"gtm": g, "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 100, **stream}})


def test_default_policy_is_none_and_pure():
    plan = make_plan(cfg())
    assert plan.budget_policy == "none" and plan.pure
    assert plan.privacy_delta() == 0.0
    assert plan.enforced_budget(plan.step(1)) is None
    assert "pure" in plan.privacy_statement()


def test_default_policy_keeps_the_config_digest():
    # configurations written before the policy existed mean "none": same canonical form, same hash
    assert cfg().digest() == cfg("none").digest()
    assert "evaluation_budget" not in cfg().to_dict()["gtm"]
    assert cfg("refuse").digest() != cfg().digest()
    assert GTMConfig.from_toml(cfg("refuse").to_toml()) == cfg("refuse")


def test_refuse_policy_claims_epsilon_delta():
    plan = make_plan(cfg("refuse"))
    assert not plan.pure
    assert plan.enforced_budget(plan.step(1)) == plan.step(1).evaluation_budget
    d0 = math.fsum(sp.budget_exceed_probability for sp in plan.steps())
    assert d0 > 0
    assert plan.privacy_delta() == pytest.approx((1 + math.e) * d0, rel=1e-12)
    assert "(1, " in plan.privacy_statement() and "approximate" in plan.privacy_statement()


def test_bad_policy_is_a_typed_error_naming_field_and_value():
    with pytest.raises(InvalidParameter, match=r"evaluation_budget must be one of .*'cap'"):
        cfg("cap")


def _runs_stopped(policy, runs=60, seed=7):
    """Runs (seeded) of a plan whose budget a Poisson count overshoots often: factor 1 and eps_t
    tiny, as examples/unsafe_budget.toml."""
    config = GTMConfig.from_dict({"gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05,
                                          "evaluation_budget_factor": 1.0, "evaluation_budget": policy},
                                  "stream": {"eps_t": 0.001, "p_star": 0.5, "horizon": 5}})
    plan = make_plan(config)
    rng = np.random.default_rng(seed)
    stopped = 0
    for _ in range(runs):
        run = GTMRun(plan, rng, sampler="float")
        try:
            for _t in range(5):
                if run.step(BernoulliMechanism(0.0, rng)):
                    break
        except EvaluationBudgetExceeded:
            stopped += 1
    return stopped


def test_refuse_enforces_the_budget_and_none_does_not():
    # companion pair: the same seeded runs stop under "refuse" (so the check has power) and never
    # under "none" (Algorithm 1 as the paper states it)
    assert _runs_stopped("refuse") > 10
    assert _runs_stopped("none") == 0
