"""EvaluatorConfig / PureParameters / BlackBoxEvaluator: validation with typed errors, JSON round trip,
Algorithm 4's literal structure."""

import statistics

import numpy as np
import pytest

from gtm_core.blackbox import BlackBoxEvaluator, EvaluatorConfig, check_dataset, pure_parameters
from gtm_core.blackbox.functions import median_on, snap_1d, slope_on, tukey_center_on, tukey_depth
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration


@pytest.mark.parametrize("kw,msg", [
    (dict(epsilon=0.0, beta=0.1, domain=([0], [1])), "epsilon must be > 0"),
    (dict(epsilon=float("inf"), beta=0.1, domain=([0], [1])), "epsilon must be finite, got inf"),
    (dict(epsilon=1.0, beta=1.0, domain=([0], [1])), "beta must be < 1"),
    (dict(epsilon=1.0, beta=0.0, domain=([0], [1])), "beta must be > 0"),
    (dict(epsilon=1.0, beta=0.1, domain=([0],)), "at least 2 distinct"),
    (dict(epsilon=1.0, beta=0.1, domain=([0], [float("nan")])), "non-finite"),
    (dict(epsilon=1.0, beta=0.1, domain=([0], [1, 2])), "same dimension"),
])
def test_config_errors(kw, msg):
    with pytest.raises(InvalidParameter, match=msg):
        EvaluatorConfig(**kw)


def test_config_d4_unsupported_and_roundtrip():
    with pytest.raises(UnsupportedConfiguration, match="d must be in"):
        EvaluatorConfig(1.0, 0.1, ([0, 0, 0, 0], [1, 1, 1, 1]))
    assert EvaluatorConfig(1.0, 0.1, ([0, 0, 0], [1, 1, 1])).d == 3
    c = EvaluatorConfig(1.0, 0.1, ([0], [1], [2]))
    assert EvaluatorConfig.from_dict(c.to_dict()) == c
    assert EvaluatorConfig.from_dict({"epsilon": 1.0, "beta": 0.1, "domain": [0, 1, 2]}) == c
    with pytest.raises(InvalidParameter, match="missing"):
        EvaluatorConfig.from_dict({"epsilon": 1.0})


def test_dataset_errors():
    with pytest.raises(InvalidParameter, match="empty"):
        check_dataset([])
    with pytest.raises(InvalidParameter, match="non-numeric"):
        check_dataset([1, "x"])
    with pytest.raises(InvalidParameter, match="same dimension"):
        check_dataset([[1, 2], [1]])
    with pytest.raises(InvalidParameter, match="dimension 2"):
        check_dataset([1, 2], record_dim=2)
    assert check_dataset([[1, 2]]) == [(1.0, 2.0)]


def test_parameters_match_formulas_and_locality():
    p = pure_parameters(EvaluatorConfig(1.0, 0.05, tuple([x] for x in range(64))))
    assert (p.M, p.K, p.locality) == (64, 65, 95) and p.is_algorithm4
    assert p.em_eps == p.eps0 == 0.5 and p.eta == p.beta0 == 0.025


def test_algorithm4_branches():
    cfg = EvaluatorConfig(10.0, 0.5, tuple([x] for x in range(5)))
    f = lambda T: min(4, round(statistics.median(T))) if T else 3  # noqa: E731
    ev = BlackBoxEvaluator(cfg, f)
    # a tiny dataset: h <= 0 always, so outside the uniform branch the output is f(empty) = 3
    out = ev.sample([1, 1], 50_000, np.random.default_rng(0))
    frac3 = np.mean(out == ev.extended.index((3,)))
    assert abs(frac3 - (0.75 + 0.25 / 5)) < 0.01
    bad = BlackBoxEvaluator(cfg, lambda T: 9 if not T else 1)
    with pytest.raises(InvalidParameter, match="outside the declared domain"):
        bad.empty_output()
    with pytest.raises(UnsupportedConfiguration):
        BlackBoxEvaluator(EvaluatorConfig(1.0, 0.1, ([0, 0], [1, 1])), lambda T: (0, 0)).depths([(0, 0)] * 20, 3)


def test_example_functions():
    assert snap_1d(0.26, [0, 0.25, 0.5]) == 0.25 and snap_1d(float("nan"), [1, 2]) == 1
    assert median_on([0, 1, 2])([2, 2, 0]) == 2
    assert slope_on([0, 1, 2])([(0, 0), (1, 1), (2, 2)]) == 1
    assert tukey_depth([(0, 0), (1, 0), (0, 1), (1, 1)], (0.5, 0.5)) == 2
    assert tukey_center_on([(0, 0), (1, 1)])([(1, 1), (1, 1), (0, 0)]) == (1.0, 1.0)
