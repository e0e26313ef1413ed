"""The horizon planner's values and configuration (gtm_core.planners.horizon_problem)."""

from __future__ import annotations

import pytest

from gtm_core import GTMConfig
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration
from gtm_core.planners.horizon_problem import HorizonProblem, config_of, design_of, problem_of

from tests.gtm_core.planners.horizon_cases import DESIGN, MEDIAN


@pytest.fixture(scope="module")
def config():
    return config_of(MEDIAN, DESIGN)


def test_config_round_trip_and_fields(config):
    again = GTMConfig.from_toml(config.to_toml())
    assert again == config
    assert design_of(again) == DESIGN
    assert problem_of(again) == MEDIAN
    d = config.to_dict()
    for key in ("direction", "c", "rho", "p_bar"):
        assert key in d["gtm"]


@pytest.mark.parametrize("change, message", [
    ({"direction": 0}, "direction must be 1 or -1"),
    ({"c": -1}, "c must be a non-negative integer"),
    ({"c": 2.5}, "c must be a non-negative integer"),
    ({"rho": -3.0}, "rho"),
    ({"p_bar": 1.5}, "p_bar"),
])
def test_bad_horizon_fields_are_typed_errors(config, change, message):
    d = config.to_dict()
    d["gtm"].update(change)
    with pytest.raises(InvalidParameter, match=message):
        GTMConfig.from_dict(d)


def test_horizon_fields_only_with_horizon(config):
    d = config.to_dict()
    d["gtm"]["parameterization"] = "theorem21"
    with pytest.raises(InvalidParameter, match="only used by parameterization 'horizon'"):
        GTMConfig.from_dict(d)
    d = config.to_dict()
    del d["gtm"]["rho"]
    with pytest.raises(Exception, match="rho"):
        GTMConfig.from_dict(d)


def test_design_of_refuses_other_parameterizations():
    cfg = GTMConfig.from_dict({"gtm": {"parameterization": "theorem21", "epsilon": 1.0, "theta": 1.0, "gamma": 1.5,
                                       "beta": 0.05},
                               "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 10}})
    with pytest.raises(UnsupportedConfiguration, match="not a horizon configuration"):
        design_of(cfg)


def test_unsupported_streams_are_refused(config):
    with pytest.raises(UnsupportedConfiguration, match="purification"):
        problem_of(config.with_changes(delta_t=0.01))
    with pytest.raises(UnsupportedConfiguration, match="per-step list"):
        problem_of(config.with_changes(p_star=[0.5] * 100))


@pytest.mark.parametrize("kwargs, message", [
    ({"eps_t": 1.0}, "eps_t must be below epsilon"),
    ({"T": 0}, "horizon must be a positive integer, got 0"),
    ({"T": True}, "horizon must be a positive integer"),
    ({"epsilon": float("inf")}, "epsilon must be finite, got inf"),
    ({"p_star": 1.0}, "p_star must be in \\(0, 1\\), got 1.0"),
    ({"beta": 0.0}, "beta must be in \\(0, 1\\), got 0.0"),
])
def test_problem_validation(kwargs, message):
    args = {"epsilon": 1.0, "eps_t": 0.1, "p_star": 0.5, "T": 10, **kwargs}
    with pytest.raises(InvalidParameter, match=message):
        HorizonProblem(**args)


@pytest.mark.parametrize("s, expected", [(1, 0.3), (-1, 0.7)])
def test_target_rate_is_the_count_rate_at_p_star(s, expected):
    assert HorizonProblem(epsilon=1.0, eps_t=0.1, p_star=0.3, T=1).target_rate(s) == pytest.approx(expected)
