"""Instance search: every proposed pair is a pair of neighbours allowed by eps_t."""

import importlib.util
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from audits import search as S


@given(p=st.floats(0, 1), eps=st.floats(0.001, 3), d=st.sampled_from([-1, 0, 1]), frac=st.floats(0, 1))
@settings(max_examples=300, deadline=None)
def test_neighbour_is_allowed(p, eps, d, frac):
    q = S.neighbour([p], [d], eps, fraction=frac)
    assert S.is_neighbour([p], q, eps, slack=1e-9)


def test_step_range_is_tight():
    lo, hi = S.step_range(0.01, 0.1)
    assert hi == pytest.approx(0.01 * math.exp(0.1)) and lo == pytest.approx(0.01 * math.exp(-0.1))
    lo, hi = S.step_range(0.99, 0.1)  # near 1 the (1 - p) ratio binds
    assert hi == pytest.approx(1 - 0.01 * math.exp(-0.1))


def test_is_neighbour_rejects_too_far():
    assert not S.is_neighbour([0.1], [0.1 * math.exp(0.2)], 0.1)
    assert not S.is_neighbour([0.1, 0.2], [0.1], 0.1)


def test_initial_candidates_are_neighbours_and_cover_families():
    cands = S.initial_candidates(0.1, 50)
    assert all(S.is_neighbour(c.p, c.p_prime, 0.1, slack=1e-9) for c in cands)
    fams = {c.family for c in cands}
    assert {"constant", "ramp", "mixed", "tiny", "laplace"} <= fams
    # both directions of a pair are present
    keys = {(c.p, c.p_prime) for c in cands}
    assert all((c.p_prime, c.p) in keys for c in cands)
    # the mixed family moves continuation steps one way and the final step the other
    mixed = [c for c in cands if c.family == "mixed" and not c.params.get("swapped")]
    assert all(np.sign(c.p_prime[0] - c.p[0]) == -np.sign(c.p_prime[-1] - c.p[-1]) for c in mixed)


def test_per_step_eps_and_horizon_limit():
    cands = S.initial_candidates([0.1, 0.2, 0.05], 3)
    assert all(c.T <= 3 for c in cands)
    assert all(S.is_neighbour(c.p, c.p_prime, [0.1, 0.2, 0.05], slack=1e-9) for c in cands)


def test_refine_keeps_neighbours():
    rng = np.random.default_rng(0)
    base = S.initial_candidates(0.1, 10)[:20]
    for c in base:
        for r in S.refine(c, 0.1, 10, rng):
            assert r.T <= 10 and S.is_neighbour(r.p, r.p_prime, 0.1, slack=1e-9)


def test_laplace_probability():
    assert S.laplace_probability(0.0, 0.0, 0.1) == 0.5
    assert S.laplace_probability(-10, 0.0, 0.1) == pytest.approx(0.5 * math.exp(-1))


def test_oracle_is_a_feature_check():
    assert S.exact_oracle_available() == (importlib.util.find_spec("gtm_core.exact_search") is not None)


def test_oracle_candidates_are_neighbours():
    from gtm_core import GTMConfig, make_plan

    plan = make_plan(GTMConfig.load("examples/default.toml"))
    cands = S.oracle_candidates(plan, 0.1, 10, horizon=2, seconds=3)
    if not S.exact_oracle_available():
        assert cands == []
        return
    assert cands and all(c.family == "exact-oracle" and S.is_neighbour(c.p, c.p_prime, 0.1, slack=1e-9)
                         for c in cands)
