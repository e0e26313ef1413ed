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
