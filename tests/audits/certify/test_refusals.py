"""Refusals (audits.certify.refusals): each failing claim is refused with a computed fix, and the fix is
confirmed (the smallest change that works, to the stated digits)."""

from audits.certify import certify
from audits.certify.derive import derive
from gtm_core import GTMConfig


def _cfg(path="examples/default.toml", **changes):
    c = GTMConfig.load(path)
    return c.with_changes(**changes) if changes else c


def test_vanishing_threshold_is_refused_with_a_working_fix():
    cfg = _cfg("examples/unsafe_vanishing_threshold.toml", horizon=40)
    d = derive(cfg)
    (r,) = [r for r in d.refusals if r.claim_id == "accuracy.rejection-threshold"]
    eps = r.fix_values["largest_eps_t"]
    assert 0 < eps < 0.3
    assert r.fix_values["largest_horizon"] == 1
    fixed = derive(cfg.with_changes(eps_t=eps))
    assert fixed.claims and all(c.status != "fail" for c in fixed.claims if c.id == "accuracy.rejection-threshold")
    # the fix is the smallest change (to 2 significant digits): 10 % more eps_t fails again
    assert any(c.status == "fail" for c in derive(cfg.with_changes(eps_t=eps * 1.1)).claims
               if c.id == "accuracy.rejection-threshold")


def test_purification_eating_the_gap_is_refused_with_the_largest_delta():
    cfg = _cfg("examples/unsafe_purification.toml", horizon=20)
    d = derive(cfg)
    (r,) = [r for r in d.refusals if r.claim_id == "purification.thresholds"]
    delta = r.fix_values["largest_delta_t"]
    assert 0 < delta < 1e-3
    ok = derive(cfg.with_changes(delta_t=delta))
    assert ok.claims[[c.id for c in ok.claims].index("purification.thresholds")].status == "pass"
    bad = derive(cfg.with_changes(delta_t=delta * 1.2))
    assert bad.claims[[c.id for c in bad.claims].index("purification.thresholds")].status == "fail"


def test_budget_hit_too_often_is_refused_with_the_smallest_factor():
    cfg = _cfg("examples/unsafe_budget.toml", horizon=20)
    d = derive(cfg)
    (r,) = [r for r in d.refusals if r.claim_id == "cost.budget-exceed"]
    f = r.fix_values["smallest_budget_factor"]
    assert 1 < f < 3
    claim = lambda der: next(c for c in der.claims if c.id == "cost.budget-exceed")  # noqa: E731
    assert claim(derive(cfg.with_changes(evaluation_budget_factor=f))).status == "pass"
    assert claim(derive(cfg.with_changes(evaluation_budget_factor=1 + (f - 1) * 0.9))).status == "fail"


def test_unplannable_configuration_is_refused_not_crashed():
    cfg = _cfg(eps_t=60.0, horizon=5)
    cert = certify(cfg, quick=True, seconds=1, seed=1, progress=False)
    assert cert.verdict == "refused"
    assert cert.claim("accuracy.plannable").status == "fail"
    assert "largest_eps_t" in cert.refusals[0].fix_values


def test_huge_budgets_are_no_planner_defect():
    # eps_t = 2 on the default example has budgets of 1e27..1e60; they used to be
    # rounded below e * lambda_bar at some steps (cost.evaluation-bound failed at step 4 first, the
    # refusal said "planner defect; please report it"). Now the only refusal is the real one.
    d = derive(_cfg(eps_t=2.0, horizon=25))
    assert next(c for c in d.claims if c.id == "cost.evaluation-bound").status == "pass"
    assert [r.claim_id for r in d.refusals] == ["accuracy.rejection-threshold"]
    assert all("planner defect" not in r.fix for r in d.refusals)
    assert d.refusals[0].fix_values["largest_eps_t"] > 0


def test_budget_refusal_calls_a_union_bound_above_1_a_bound():
    d = derive(_cfg("examples/unsafe_budget.toml", horizon=100))
    (r,) = [r for r in d.refusals if r.claim_id == "cost.budget-exceed"]
    assert "union bound" in r.reason and "(a bound above 1, not a probability)" in r.reason
    assert "with probability up to" not in r.reason
