"""Accuracy and cost audits: the correct GTM passes, a deployment without the offset mu_1 fails
(its Type II rate is far above beta) - the power companion. n = 30k, seed 0, alpha = 0.05."""

import pytest

from audits.accuracy import accuracy_audit, cost_audit
from audits.power.broken import variant
from audits.targets import SimulatorTarget
from gtm_core import GTMConfig, make_plan


@pytest.fixture(scope="module")
def plan():
    return make_plan(GTMConfig.load("examples/default.toml"))


def test_correct_gtm_accuracy_and_cost(plan):
    acc = accuracy_audit(SimulatorTarget(plan), plan, steps=(1, 3), n=15_000)
    assert all(a.ok for a in acc)
    c = cost_audit(SimulatorTarget(plan), plan, T=3, n=5_000)
    assert c.mean_evaluations <= c.sum_lambda_max and c.fraction_above_budget_interval[0] == 0.0


def test_missing_offset_fails_accuracy(plan):
    acc = accuracy_audit(SimulatorTarget(plan, variant("no-offset")), plan, steps=(1,), n=15_000)
    assert not acc[0].ok and acc[0].type_II > 0.2
