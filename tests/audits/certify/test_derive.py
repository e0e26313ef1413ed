"""The deterministic part (audits.certify.derive): the configuration actually certified."""

import pytest

from audits.certify.derive import effective_config
from gtm_core import GTMConfig
from gtm_core.errors import ConfigError


def _cfg(path="examples/default.toml", **changes):
    c = GTMConfig.load(path)
    return c.with_changes(**changes) if changes else c


def test_effective_config_horizon():
    base = _cfg()
    assert effective_config(base, None) is base
    assert effective_config(base, 5000).stream.horizon == 5000
    lst = GTMConfig.from_dict({"gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05},
                               "stream": {"eps_t": [0.1, 0.2, 0.1], "p_star": 0.5, "horizon": 3}})
    assert effective_config(lst, 2).stream.eps_t == (0.1, 0.2)
    with pytest.raises(ConfigError):
        effective_config(lst, 4)
    with pytest.raises(ConfigError):
        effective_config(base, 0)


def test_a_refusing_budget_gets_an_approximate_claim_and_no_pure_claim():
    from audits.certify.derive import derive
    from audits.certify.progress import Progress

    capped = derive(_cfg(evaluation_budget="refuse", horizon=20), Progress(False))
    claims = {c.id: c for c in capped.claims}
    assert claims["privacy.pure-epsilon"].status == "not-applicable"
    approx = claims["privacy.approximate"]
    assert approx.status == "pass" and approx.witness.kind == "interval-arithmetic"
    assert approx.values["delta_upper"] >= approx.values["delta_planner"] > 0
    pure = derive(_cfg(horizon=20), Progress(False))
    ids = {c.id: c for c in pure.claims}
    assert ids["privacy.pure-epsilon"].status == "pass" and "privacy.approximate" not in ids
    assert "accuracy.budget-stops" not in ids  # "none": no budget stop exists, nothing to add
    stops = claims["accuracy.budget-stops"]  # "refuse": the accuracy claim includes the budget stops
    v = stops.values
    assert stops.status == "pass" and v["accuracy_claim"] == "accuracy.failure-allocation"
    assert v["accuracy_upper"] == claims["accuracy.failure-allocation"].values["total_upper"]
    assert v["combined_upper"] >= v["accuracy_upper"] + v["budget_stop_upper"]
    assert v["combined_upper"] <= 0.05


def _horizon_refusing(factor):
    c = GTMConfig.load("examples/horizon.toml").to_dict()
    return GTMConfig.from_dict({**c, "gtm": {**c["gtm"], "evaluation_budget": "refuse",
                                             "evaluation_budget_factor": factor}})


def test_a_design_whose_union_bound_alone_fits_but_not_with_budget_stops_is_refused():
    """Planted: the horizon example (union bound 0.0486 <= beta = 0.05) enforcing a budget of 2 x
    lambda_bar_t: sum_t Pr[N_t > budget_t] ~ 0.0016 is <= beta on its own (cost.budget-exceed passes),
    but the two together exceed beta, so the certificate's accuracy claim is refused."""
    from audits.certify.derive import derive
    from audits.certify.progress import Progress

    d = derive(_horizon_refusing(2.0), Progress(False))
    claims = {c.id: c for c in d.claims}
    union = claims["accuracy.horizon-union-bound"]
    assert union.status == "pass" and union.values["failure_upper"] <= 0.05
    assert claims["cost.budget-exceed"].status == "pass"
    stops = claims["accuracy.budget-stops"]
    v = stops.values
    assert v["accuracy_claim"] == "accuracy.horizon-union-bound" and v["accuracy_upper"] == union.values["failure_upper"]
    assert v["budget_stop_upper"] <= 0.05 < v["combined_upper"]
    assert stops.status == "fail" and "stops on no budget" in stops.statement
    (r,) = d.refusals
    assert r.claim_id == "accuracy.budget-stops" and "evaluation_budget_factor >=" in r.fix
    fixed = derive(_horizon_refusing(r.fix_values["smallest_budget_factor"]), Progress(False))
    fixed_stops = next(c for c in fixed.claims if c.id == "accuracy.budget-stops")
    assert fixed_stops.status == "pass" and not fixed.refusals


# the design `gtm tune --epsilon 1 --eps-t 0.25 --p-star 0.5 --horizon 10 --max-evaluations 1e5` writes
# (eps_t/eps = 0.25): union bound 0.04864 <= beta, sum_t Pr[N_t > budget_t] 0.00181 at the default factor e
TUNED_QUARTER = {"gtm": {"parameterization": "horizon", "gamma": 1.5, "beta": 0.05, "epsilon": 1.0,
                         "theta": 1.0545918415604076, "direction": 1, "c": 134, "rho": 168.72633577718153,
                         "p_bar": 0.0005641337825089593},
                 "stream": {"eps_t": 0.25, "p_star": 0.5, "horizon": 10, "delta_t": 0.0}}


def test_a_tuned_quarter_design_is_certified_as_tuned_and_refused_when_capped():
    """The eps_t/eps = 0.25 design class whose union bound plus budget stops exceeded beta: as `gtm tune`
    writes it (evaluation_budget = "none", no budget stop exists) the union bound is the whole failure
    bound; enforcing its budget ("refuse") makes the combined 0.0505 > beta, so accuracy.budget-stops
    refuses it, with a budget factor that fixes it."""
    from audits.certify.derive import derive
    from audits.certify.progress import Progress

    tuned = derive(GTMConfig.from_dict(TUNED_QUARTER), Progress(False))
    ids = {c.id: c for c in tuned.claims}
    assert tuned.plan.budget_policy == "none" and not tuned.refusals
    assert "accuracy.budget-stops" not in ids and ids["accuracy.horizon-union-bound"].values["failure_upper"] <= 0.05
    capped_cfg = {**TUNED_QUARTER, "gtm": {**TUNED_QUARTER["gtm"], "evaluation_budget": "refuse"}}
    capped = derive(GTMConfig.from_dict(capped_cfg), Progress(False))
    stops = next(c for c in capped.claims if c.id == "accuracy.budget-stops")
    assert stops.status == "fail" and stops.values["budget_stop_upper"] <= 0.05 < stops.values["combined_upper"]
    (r,) = capped.refusals
    assert r.claim_id == "accuracy.budget-stops"
    factor = r.fix_values["smallest_budget_factor"]
    fixed = derive(GTMConfig.from_dict({**capped_cfg, "gtm": {**capped_cfg["gtm"],
                                                               "evaluation_budget_factor": factor}}), Progress(False))
    assert not fixed.refusals and next(c for c in fixed.claims if c.id == "accuracy.budget-stops").status == "pass"
