"""The step-row value of a certificate (audits.certify.rows)."""

import dataclasses

import pytest

from audits.certify.rows import StepChecks, step_checks_of


def test_from_dict_reads_step_and_checks_and_round_trips():
    row = {"t": 3, "p_star": 0.5, "checks": {"a": True, "b": False, "c": None}}
    v = StepChecks.from_dict(row)
    assert v.t == 3 and v.result("a") is True and v.result("missing") is None
    assert v.fails("a", "b") and not v.fails("a", "c")
    assert v.applies("c", "a") and not v.applies("c", "missing")
    assert v.to_dict() == {"t": 3, "checks": {"a": True, "b": False, "c": None}}
    assert list(v.to_dict()["checks"]) == ["a", "b", "c"]


def test_value_is_frozen_and_detached_from_the_row():
    row = {"t": 1, "checks": {"a": True}}
    v = StepChecks.from_dict(row)
    row["checks"]["a"] = False
    assert v.result("a") is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.t = 2
    with pytest.raises(TypeError):
        v.checks["a"] = False


def test_a_row_without_checks_is_a_key_error():
    with pytest.raises(KeyError):
        step_checks_of([{"t": 1, "checks": {}}, {"t": 2}])


def test_step_design_reads_the_row_objects():
    from audits.certify.rows import StepDesign, step_designs_of
    row = {"t": 2, "s": -1, "c": 1.5, "rho": 0.01, "tau2": 3.0, "p_bar": 0.2, "eps_t": 0.1, "p_star": 0.4,
           "delta_t": 0.0, "checks": {}}
    v = StepDesign.from_dict(row)
    assert (v.t, v.s, v.c, v.rho, v.p_bar, v.p_star, v.eps_t, v.delta_t) == (2, -1, 1.5, 0.01, 0.2, 0.4, 0.1, 0.0)
    assert list(v.to_dict()) == ["t", "s", "c", "rho", "p_bar", "eps_t", "p_star", "delta_t"]
    assert step_designs_of([row]) == [v]
    with pytest.raises(KeyError):
        StepDesign.from_dict({"t": 1})


@pytest.mark.parametrize("example", ["default", "exact_noise", "flipped", "horizon", "purified", "theorem23"])
def test_step_row_round_trips_every_parameterization_to_the_same_json(example):
    import json
    from pathlib import Path

    from audits.certify.derive import derive, effective_config
    from audits.certify.rows import StepRow, step_rows_of
    from gtm_core import GTMConfig

    path = Path(__file__).resolve().parents[3] / "examples" / f"{example}.toml"
    config = GTMConfig.load(path)
    rows = derive(effective_config(config, min(config.stream.horizon, 4))).steps
    for row, v in zip(rows, step_rows_of(rows)):
        assert json.dumps({**v.to_dict(), "checks": row["checks"]}) == json.dumps(row)
        assert v == StepRow.from_dict(json.loads(json.dumps(row)))
    tails = {v.type_I_bound is None for v in step_rows_of(rows)}
    assert tails == ({True} if config.gtm.parameterization == "horizon" else {False})


def test_step_row_is_frozen_and_needs_every_field_but_the_tail_bounds():
    from audits.certify.rows import StepRow

    row = {f: 1.0 for f in StepRow.__dataclass_fields__}
    row["lambda_range"] = [0.5, "inf"]
    del row["type_I_bound"], row["type_II_bound"]
    v = StepRow.from_dict(row)
    assert v.type_I_bound is None and v.type_II_bound is None and v.lambda_range == (0.5, "inf")
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.phi = 0.0
    del row["phi"]
    with pytest.raises(KeyError):
        StepRow.from_dict(row)
