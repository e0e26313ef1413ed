"""proofs.instantiate: concrete parameter identities are checked rigorously, and tampering is caught."""

import dataclasses
from pathlib import Path

import pytest

from gtm_core import GTMConfig, make_plan
from proofs.instantiate import check_plan_identities

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", ["default", "flipped", "purified", "theorem23"])
def test_example_plans_satisfy_every_instantiated_claim(name):
    plan = make_plan(GTMConfig.load(EXAMPLES / f"{name}.toml"))
    for t in (1, 2, 10, min(100, plan.horizon)):
        res = check_plan_identities(plan, t)
        assert res.ok, [(c.name, c.detail) for c in res.failed()]
        assert {c.lemma.split()[0] for c in res.claims} >= {"Lemma"}
        assert all(c.method for c in res.claims)


def _plan():
    return make_plan(GTMConfig.load(EXAMPLES / "default.toml"))


def test_threshold_one_below_the_lemma11_definition_is_caught():
    plan = _plan()
    step = plan.step(5)
    bad = check_plan_identities(plan, 5, step=dataclasses.replace(step, c=step.c - 1))
    assert not bad.ok
    assert any("c = max" in c.name for c in bad.failed())


def test_base_rate_off_by_a_part_per_million_is_caught():
    plan = _plan()
    step = plan.step(3)
    bad = check_plan_identities(plan, 3, step=dataclasses.replace(step, rho=step.rho * (1 + 1e-6)))
    assert [c.lemma for c in bad.failed()] == ["Lemma 20"]


def test_inverted_direction_is_caught():
    plan = _plan()
    step = plan.step(3)
    bad = check_plan_identities(plan, 3, step=dataclasses.replace(step, s=-step.s))
    assert not bad.ok


def test_result_serialises():
    d = check_plan_identities(_plan(), 1).to_dict()
    assert d["ok"] and d["t"] == 1 and d["claims"][0]["method"]
