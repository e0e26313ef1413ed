"""Instance search: every proposed pair is a pair of neighbours allowed by eps_t."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from audits import search as S
from gtm_core.neighbours import is_neighbour


@given(p=st.floats(0, 1), eps=st.floats(0.001, 3), d=st.sampled_from([-1, 0, 1]), frac=st.floats(0, 1))
@settings(max_examples=300, deadline=None)
def test_neighbour_is_allowed(p, eps, d, frac):
    q = S.neighbour([p], [d], eps, fraction=frac)
    assert is_neighbour([p], q, eps, slack=1e-9)


def test_initial_candidates_are_neighbours_and_cover_families():
    cands = S.initial_candidates(0.1, 50)
    assert all(is_neighbour(c.p, c.p_prime, 0.1, slack=1e-9) for c in cands)
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
    assert all(is_neighbour(c.p, c.p_prime, [0.1, 0.2, 0.05], slack=1e-9) for c in cands)


def test_refine_keeps_neighbours():
    rng = np.random.default_rng(0)
    base = S.initial_candidates(0.1, 10)[:20]
    for c in base:
        for r in S.refine(c, 0.1, 10, rng):
            assert r.T <= 10 and is_neighbour(r.p, r.p_prime, 0.1, slack=1e-9)


def test_laplace_family_follows_corollary_30():
    """p_t = Pr[f_t + Lap(1/eps_t) >= tau_L]: the step at the threshold has p = 1/2 exactly."""
    cands = [c for c in S.laplace_candidates(0.1, 5) if not c.params.get("swapped")]
    at_threshold = [c for c in cands if c.params["gap_h"] == 0.0]
    assert at_threshold and all(c.p[-1] == 0.5 for c in at_threshold)
    assert all(c.p[0] == pytest.approx(0.5 * math.exp(-0.1 * c.params["gap_b"])) for c in cands if c.T > 1)


def test_oracle_candidates_are_neighbours():
    from gtm_core import GTMConfig, make_plan

    plan = make_plan(GTMConfig.load("examples/default.toml"))
    cands = S.oracle_candidates(plan, 0.1, 10, horizon=2, seconds=3)
    assert cands and all(c.family == "exact-oracle" and is_neighbour(c.p, c.p_prime, 0.1, slack=1e-9)
                         for c in cands)
