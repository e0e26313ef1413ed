"""gtm_core.config: TOML/JSON round-trips and every validation error (typed, naming the
field and the offending value)."""

from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings

from gtm_core.config import GTMConfig, GTMParameters, StepSpec, StreamParameters
from gtm_core.errors import ConfigError, GTMError, InvalidParameter
from property_tests.strategies import configs

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")

BASE = {
    "gtm": {"epsilon": 1.0, "parameterization": "theorem21", "theta": 1.0, "gamma": 1.5,
            "beta": 0.05},
    "stream": {"eps_t": 0.1, "delta_t": 0.0, "p_star": 0.5, "horizon": 1000},
}
BASE23 = {
    "gtm": {"parameterization": "theorem23", "epsilon_c": 1.0, "c_h": 2.0, "gamma": 1.5,
            "beta": 0.05},
    "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 1000},
}


def _with(base, table, **changes):
    d = {"gtm": dict(base["gtm"]), "stream": dict(base["stream"])}
    for k, v in changes.items():
        if v is _DROP:
            d[table].pop(k, None)
        else:
            d[table][k] = v
    return d


_DROP = object()


# --- loading and round-trips ---------------------------------------------------------


@pytest.mark.parametrize("name", ["default", "flipped", "purified", "theorem23"])
def test_bundled_examples_load_and_round_trip(name):
    cfg = GTMConfig.load(os.path.join(EXAMPLES, f"{name}.toml"))
    assert GTMConfig.from_toml(cfg.to_toml()) == cfg
    assert GTMConfig.from_dict(json.loads(cfg.to_json())) == cfg
    assert cfg.source and cfg.source.endswith(f"{name}.toml")


def test_default_example_values():
    cfg = GTMConfig.load(os.path.join(EXAMPLES, "default.toml"))
    assert cfg.gtm == GTMParameters(parameterization="theorem21", gamma=1.5, beta=0.05,
                                    epsilon=1.0, theta=1.0)
    assert cfg.stream == StreamParameters(eps_t=0.1, p_star=0.5, horizon=1000, delta_t=0.0)
    assert cfg.step(7) == StepSpec(t=7, eps_t=0.1, p_star=0.5, delta_t=0.0)


def test_json_file_loads(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(BASE))
    assert GTMConfig.load(p) == GTMConfig.from_dict(BASE)


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(configs(max_horizon=10**6, max_list=8))
def test_round_trip_toml_and_json(cfg):
    assert GTMConfig.from_toml(cfg.to_toml()) == cfg
    again = GTMConfig.from_dict(json.loads(cfg.to_json()))
    assert again == cfg
    assert again.digest() == cfg.digest()
    assert hash(again) == hash(cfg)


def test_per_step_lists_round_trip_and_index_from_one():
    d = _with(BASE, "stream", horizon=3, eps_t=[0.1, 0.2, 0.0], p_star=[0.5, 0.9, 0.2])
    cfg = GTMConfig.from_dict(d)
    assert cfg.stream.eps_t == (0.1, 0.2, 0.0)
    assert cfg.step(2) == StepSpec(t=2, eps_t=0.2, p_star=0.9)
    assert GTMConfig.from_toml(cfg.to_toml()) == cfg
    with pytest.raises(InvalidParameter, match="t=4 is beyond horizon=3"):
        cfg.step(4)


def test_scalars_extend_beyond_the_horizon():
    cfg = GTMConfig.from_dict(BASE)
    assert cfg.step(5000).p_star == 0.5


def test_digest_is_canonical_and_sensitive():
    a = GTMConfig.from_dict(BASE)
    b = GTMConfig.from_dict({"stream": dict(BASE["stream"]), "gtm": dict(BASE["gtm"])})
    assert a.digest() == b.digest() and len(a.digest()) == 64
    assert a.digest() != a.with_changes(beta=0.04).digest()


def test_with_changes_revalidates():
    cfg = GTMConfig.from_dict(BASE)
    assert cfg.with_changes(gamma=2.0).gtm.gamma == 2.0
    with pytest.raises(InvalidParameter, match=r"gamma must be in \(1, 2\], got 1"):
        cfg.with_changes(gamma=1)
    with pytest.raises(InvalidParameter, match="unknown configuration field"):
        cfg.with_changes(gama=1.2)


def test_config_is_frozen():
    cfg = GTMConfig.from_dict(BASE)
    with pytest.raises(AttributeError):
        cfg.gtm.gamma = 1.2  # type: ignore[misc]


# --- every validation error ------------------------------------------------------------

# (table, key, value, error class, text that must appear: the field and the value)
BAD_VALUES = [
    ("gtm", "epsilon", 0.0, InvalidParameter, "epsilon must be > 0, got 0.0"),
    ("gtm", "epsilon", -1.0, InvalidParameter, "epsilon must be > 0, got -1.0"),
    ("gtm", "epsilon", math.nan, InvalidParameter, "epsilon must be finite, got nan"),
    ("gtm", "epsilon", math.inf, InvalidParameter, "epsilon must be finite, got inf"),
    ("gtm", "epsilon", "1.0", InvalidParameter, "epsilon must be a real number, got '1.0'"),
    ("gtm", "epsilon", True, InvalidParameter, "epsilon must be a real number, got True"),
    ("gtm", "epsilon", 10**400, InvalidParameter, "epsilon must be finite, got 1000000"),
    ("gtm", "epsilon", "x" * 500, InvalidParameter, "(502 chars)"),
    ("gtm", "theta", 0, InvalidParameter, "theta must be > 0, got 0"),
    ("gtm", "theta", -math.inf, InvalidParameter, "theta must be finite, got -inf"),
    ("gtm", "gamma", 1, InvalidParameter, "gamma must be in (1, 2], got 1"),
    ("gtm", "gamma", 1.0, InvalidParameter, "gamma must be in (1, 2], got 1.0"),
    ("gtm", "gamma", 2.5, InvalidParameter, "gamma must be in (1, 2], got 2.5"),
    ("gtm", "gamma", math.nan, InvalidParameter, "gamma must be finite, got nan"),
    ("gtm", "gamma", False, InvalidParameter, "gamma must be a real number, got False"),
    ("gtm", "beta", 0, InvalidParameter, "beta must be in (0, 1), got 0"),
    ("gtm", "beta", 1.0, InvalidParameter, "beta must be in (0, 1), got 1.0"),
    ("gtm", "beta", -0.1, InvalidParameter, "beta must be in (0, 1), got -0.1"),
    ("gtm", "beta", math.nan, InvalidParameter, "beta must be finite, got nan"),
    ("gtm", "beta", "0.05", InvalidParameter, "beta must be a real number, got '0.05'"),
    ("gtm", "parameterization", "theorem22", InvalidParameter,
     "parameterization must be one of theorem21, theorem23, exact, exact_noise, horizon, got 'theorem22'"),
    ("gtm", "parameterization", 21, InvalidParameter, "parameterization must be a string, got 21"),
    ("gtm", "evaluation_budget_factor", 0.5, InvalidParameter,
     "evaluation_budget_factor must be >= 1, got 0.5"),
    ("gtm", "epsilon_c", 1.0, InvalidParameter,
     "epsilon_c is only used by parameterization 'theorem23', got 1.0"),
    ("stream", "eps_t", -0.1, InvalidParameter, "eps_t must be >= 0, got -0.1"),
    ("stream", "eps_t", math.nan, InvalidParameter, "eps_t must be finite, got nan"),
    ("stream", "eps_t", math.inf, InvalidParameter, "eps_t must be finite, got inf"),
    ("stream", "eps_t", "0.1", InvalidParameter, "eps_t must be a real number, got '0.1'"),
    ("stream", "eps_t", {"a": 1}, InvalidParameter, "eps_t must be a real number, got {'a': 1}"),
    ("stream", "p_star", 0, InvalidParameter, "p_star must be in (0, 1), got 0"),
    ("stream", "p_star", 1.0, InvalidParameter, "p_star must be in (0, 1), got 1.0"),
    ("stream", "p_star", math.nan, InvalidParameter, "p_star must be finite, got nan"),
    ("stream", "p_star", True, InvalidParameter, "p_star must be a real number, got True"),
    ("stream", "delta_t", 1.0, InvalidParameter, "delta_t must be in [0, 1), got 1.0"),
    ("stream", "delta_t", -1e-9, InvalidParameter, "delta_t must be in [0, 1), got -1e-09"),
    ("stream", "delta_t", math.nan, InvalidParameter, "delta_t must be finite, got nan"),
    ("stream", "horizon", 0, InvalidParameter, "horizon must be a positive integer, got 0"),
    ("stream", "horizon", 10.0, InvalidParameter, "horizon must be a positive integer, got 10.0"),
    ("stream", "horizon", True, InvalidParameter, "horizon must be a positive integer, got True"),
    ("stream", "horizon", "10", InvalidParameter, "horizon must be a positive integer, got '10'"),
]


@pytest.mark.parametrize("table,key,value,error,text", BAD_VALUES,
                         ids=[f"{t}.{k}={v!r}" for t, k, v, _, _ in BAD_VALUES])
def test_bad_value_is_a_typed_error_naming_field_and_value(table, key, value, error, text):
    with pytest.raises(error) as info:
        GTMConfig.from_dict(_with(BASE, table, **{key: value}))
    assert isinstance(info.value, GTMError)
    assert text in str(info.value)
    assert "\n" not in str(info.value)


BAD23 = [
    ("epsilon_c", 0.0, "epsilon_c must be > 0, got 0.0"),
    ("epsilon_c", math.nan, "epsilon_c must be finite, got nan"),
    ("c_h", -2.0, "c_h must be > 0, got -2.0"),
    ("epsilon", 1.0, "epsilon is not used by parameterization 'theorem23' (use epsilon_c, c_h), got 1.0"),
]


@pytest.mark.parametrize("key,value,text", BAD23)
def test_theorem23_fields(key, value, text):
    with pytest.raises(InvalidParameter) as info:
        GTMConfig.from_dict(_with(BASE23, "gtm", **{key: value}))
    assert text in str(info.value)


@pytest.mark.parametrize(
    "table,key,text",
    [
        ("gtm", "gamma", "missing key [gtm].gamma"),
        ("gtm", "beta", "missing key [gtm].beta"),
        ("gtm", "epsilon", "missing key [gtm].epsilon (required by parameterization 'theorem21')"),
        ("gtm", "theta", "missing key [gtm].theta (required by parameterization 'theorem21')"),
        ("stream", "eps_t", "missing key [stream].eps_t"),
        ("stream", "p_star", "missing key [stream].p_star"),
        ("stream", "horizon", "missing key [stream].horizon"),
    ],
)
def test_missing_keys_are_config_errors(table, key, text):
    with pytest.raises(ConfigError) as info:
        GTMConfig.from_dict(_with(BASE, table, **{key: _DROP}))
    assert text in str(info.value)


@pytest.mark.parametrize("key", ["epsilon_c", "c_h"])
def test_missing_theorem23_keys(key):
    with pytest.raises(ConfigError, match=rf"missing key \[gtm\]\.{key} \(required by parameterization 'theorem23'\)"):
        GTMConfig.from_dict(_with(BASE23, "gtm", **{key: _DROP}))


def test_defaults_for_optional_keys():
    cfg = GTMConfig.from_dict(_with(BASE, "gtm", parameterization=_DROP))
    assert cfg.gtm.parameterization == "theorem21"
    cfg = GTMConfig.from_dict(_with(BASE, "stream", delta_t=_DROP))
    assert cfg.stream.delta_t == 0.0


@pytest.mark.parametrize(
    "data,text",
    [
        ({"gtm": BASE["gtm"]}, "missing table [stream]"),
        ({"stream": BASE["stream"]}, "missing table [gtm]"),
        ({**BASE, "extra": {}}, "unknown table(s) ['extra']"),
        ({"gtm": 3, "stream": BASE["stream"]}, "[gtm] must be a table, got int"),
        ([1, 2], "configuration must be a table, got list"),
        (_with(BASE, "gtm", gama=1.5), "unknown key(s) in [gtm]: gama"),
        (_with(BASE, "stream", horizn=3, pstar=0.5), "unknown key(s) in [stream]: horizn, pstar"),
    ],
)
def test_shape_errors_are_config_errors(data, text):
    with pytest.raises(ConfigError) as info:
        GTMConfig.from_dict(data)
    assert text in str(info.value)


@pytest.mark.parametrize(
    "key,value,text",
    [
        ("eps_t", [0.1, 0.2], "eps_t must be a number or a list of length horizon=3, got a list of length 2"),
        ("p_star", [0.5] * 4, "p_star must be a number or a list of length horizon=3, got a list of length 4"),
        ("delta_t", [], "delta_t must be a number or a list of length horizon=3, got a list of length 0"),
        ("eps_t", [0.1, -0.2, 0.1], "eps_t[2] must be >= 0, got -0.2"),
        ("p_star", [0.5, 0.5, 1.5], "p_star[3] must be in (0, 1), got 1.5"),
        ("p_star", [0.5, math.nan, 0.5], "p_star[2] must be finite, got nan"),
        ("delta_t", [0.0, "x", 0.0], "delta_t[2] must be a real number, got 'x'"),
    ],
)
def test_per_step_lists_are_checked(key, value, text):
    with pytest.raises(InvalidParameter) as info:
        GTMConfig.from_dict(_with(BASE, "stream", horizon=3, **{key: value}))
    assert text in str(info.value)


def test_purification_needs_positive_eps_t():
    with pytest.raises(InvalidParameter, match=r"delta_t > 0 needs eps_t > 0 .*got eps_t=0.0"):
        GTMConfig.from_dict(_with(BASE, "stream", eps_t=0.0, delta_t=1e-6))
    with pytest.raises(InvalidParameter, match="delta_t > 0 needs eps_t > 0"):
        GTMConfig.from_dict(_with(BASE, "stream", horizon=2, eps_t=[0.1, 0.0], delta_t=1e-6))


@pytest.mark.parametrize("t", [0, -1, 1.0, True, "1"])
def test_step_index_is_checked(t):
    cfg = GTMConfig.from_dict(BASE)
    with pytest.raises(InvalidParameter, match="t must be a positive integer"):
        cfg.step(t)


# --- files ---------------------------------------------------------------------------------


def test_not_toml(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[gtm\nepsilon = 1\n")
    with pytest.raises(ConfigError, match=r"not valid TOML .*bad\.toml"):
        GTMConfig.load(p)


def test_toml_nan_and_inf_literals_are_rejected(tmp_path):
    p = tmp_path / "nan.toml"
    p.write_text(GTMConfig.from_dict(BASE).to_toml().replace("gamma = 1.5", "gamma = nan"))
    with pytest.raises(InvalidParameter, match="gamma must be finite, got nan"):
        GTMConfig.load(p)
    p.write_text(GTMConfig.from_dict(BASE).to_toml().replace("beta = 0.05", "beta = inf"))
    with pytest.raises(InvalidParameter, match="beta must be finite, got inf"):
        GTMConfig.load(p)


def test_toml_bool_and_string_values_are_rejected(tmp_path):
    p = tmp_path / "types.toml"
    p.write_text(GTMConfig.from_dict(BASE).to_toml().replace("theta = 1.0", "theta = true"))
    with pytest.raises(InvalidParameter, match="theta must be a real number, got True"):
        GTMConfig.load(p)
    p.write_text(GTMConfig.from_dict(BASE).to_toml().replace("horizon = 1000", 'horizon = "1000"'))
    with pytest.raises(InvalidParameter, match="horizon must be a positive integer, got '1000'"):
        GTMConfig.load(p)


def test_not_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{nope")
    with pytest.raises(ConfigError, match="not valid JSON"):
        GTMConfig.load(p)


def test_missing_file_directory_and_binary(tmp_path):
    with pytest.raises(ConfigError, match="configuration file not found: .*nope.toml"):
        GTMConfig.load(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="configuration path is a directory"):
        GTMConfig.load(tmp_path)
    p = tmp_path / "bin.toml"
    p.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        GTMConfig.load(p)


def test_every_config_error_is_a_gtm_error_not_a_bare_exception():
    assert issubclass(ConfigError, GTMError) and issubclass(InvalidParameter, GTMError)
