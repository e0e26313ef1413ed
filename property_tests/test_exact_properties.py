"""Exact engine held against Lemma 17 (the proofs' side) on random configurations and streams.

For random Theorem 21 / exact-calibrated configurations and random neighbouring streams
(log-uniform probabilities, each step's neighbour anywhere in its eps_t-neighbourhood), the
exact transcript distribution sums to one and every transcript's exact loss is within
Lemma 17's bound (6) or (7) (certified by the engine's error bound).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gtm_core import GTMConfig, make_plan
from gtm_core.exact import neighbour_interval, privacy_ratios
from gtm_core.input_privacy import InputPrivacy

from .strategies import log_uniform


@st.composite
def small_configs(draw):
    eps = draw(st.floats(0.3, 3.0))
    theta = draw(st.floats(0.3, 5.0))
    gamma = draw(st.floats(1.4, 2.0))
    beta = draw(log_uniform(1e-3, 0.2))
    eps_t = draw(log_uniform(1e-3, 0.5))
    p_star = draw(st.floats(0.05, 0.98))
    param = draw(st.sampled_from(["theorem21", "exact"]))
    return GTMConfig.from_dict(
        {
            "gtm": {"epsilon": eps, "theta": theta, "gamma": gamma, "beta": beta, "parameterization": param},
            "stream": {"eps_t": eps_t, "p_star": p_star, "horizon": 10},
        }
    )


@st.composite
def neighbouring_streams(draw, eps_t: float, T: int):
    p, q = [], []
    for _ in range(T):
        pt = draw(st.one_of(log_uniform(1e-12, 0.5), st.floats(0.5, 1 - 1e-9)))
        lo, hi = neighbour_interval(pt, eps_t)
        u = draw(st.floats(0.0, 1.0))
        lo2, hi2 = lo + (hi - lo) * 1e-9, hi - (hi - lo) * 1e-9
        p.append(pt)
        q.append(lo2 + (hi2 - lo2) * u)
    return p, q


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_exact_losses_within_lemma17(data):
    config = data.draw(small_configs())
    plan = make_plan(config)
    T = data.draw(st.integers(1, 2))
    p, q = data.draw(neighbouring_streams(InputPrivacy.from_user(config.stream.eps_t).at(1), T))
    rep = privacy_ratios(plan, p, q, dps=12)
    assert rep.dist.total().ball.contains(1) or abs(float(rep.dist.total().value) - 1) < 1e-10
    for row in rep.rows:
        if row.P.value > 0 and row.P_prime.value > 0 and math.isfinite(float(row.log_ratio)):
            assert row.ok, (row.kind, row.t, float(row.log_ratio), row.bound)
