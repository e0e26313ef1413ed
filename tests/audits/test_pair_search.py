"""Audit pair search: every proposed pair is a pair of neighbours allowed by eps_t."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from audits import pair_search as S
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
    assert {"grid", "constant", "ramp", "mixed", "laplace"} <= fams
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


def test_grid_covers_the_probability_range_lengths_and_patterns():
    """Levels 1e-9 .. 1 - 1e-9 on the logit scale, every length up to 10, every pattern."""
    assert S.GRID_LEVELS[0] == pytest.approx(1e-9) and S.GRID_LEVELS[-1] == pytest.approx(1 - 1e-9)
    logits = np.log(np.array(S.GRID_LEVELS)) - np.log1p(-np.array(S.GRID_LEVELS))
    assert np.allclose(np.diff(logits), S.GRID_LOGIT_STEP) and S.GRID_LOGIT_STEP < 1.5
    assert S.grid_lengths(10) == list(range(1, 11))
    long = S.grid_lengths(50)
    assert long[-1] == 50 and all(b / a <= 1.3 for a, b in zip(long[9:], long[10:]))
    names = [n for n, _ in S.direction_patterns(6)]
    assert names == ["up", "down", "mixed-1", "mixed-2", "mixed-3", "mixed-4", "mixed-5", "alternating"]
    cands = S.grid_candidates(0.1, 4)
    assert all(is_neighbour(c.p, c.p_prime, 0.1, slack=1e-9) and c.p != c.p_prime for c in cands)
    assert {(c.params["T"], c.params["pattern"]) for c in cands} >= {(4, "mixed-3"), (4, "alternating"), (1, "down")}
    # the documented skips: lengths between the geometric grid points, with a reason
    cov = S.coverage(50).to_dict()
    assert cov["lengths"] == long and "11" in cov["skipped"][2]["region"] and cov["skipped"][2]["reason"]


def test_neighbour_moves_next_to_one():
    """Float rounding near p = 1 used to keep p' = p (a blind spot for p > 1 - 1e-7); the move is kept
    inside the rule by stepping back a hair instead."""
    p = 1 - 4.1610583201290297e-08
    down = S.neighbour([p], [-1], 0.1)[0]
    assert down < p and is_neighbour([p], [down], 0.1)
    assert (1 - down) / (1 - p) == pytest.approx(math.exp(0.1), rel=1e-6)


def _fine_single_step_moves(rng_seed: int = 0) -> float:
    """Share of refinements that change exactly one level by less than 2% (a step of a sharp ridge)."""
    rng = np.random.default_rng(rng_seed)
    c = S.Candidate((0.01, 0.01, 0.01, 0.12), S.neighbour((0.01, 0.01, 0.01, 0.12), [1, 1, 1, -1], 0.1), "mixed")
    single, fine = 0, 0
    for _ in range(400):
        for r in S.refine(c, 0.1, 10, rng):
            if r.T != c.T:
                continue
            changed = [abs(math.log(a / b)) for a, b in zip(r.p, c.p) if a != b]
            if len(changed) == 1:
                single += 1
                fine += changed[0] < 0.02
    return fine / single


def test_refinement_moves_at_fine_step_sizes_too():
    """Power suite: a loss that rises steeply while its event grows rare (shared-noise-sign:
    4.6 -> 7.3 as the last p goes 0.110 -> 0.118) is climbed only by steps of a few percent; with the
    coarse step alone (sigma 0.4 on the log scale) ~4% of the one-step moves are below 2%, with the three
    step sizes of REFINE_SCALES ~25%."""
    assert _fine_single_step_moves() > 0.15


def test_refinement_step_size_check_has_power(monkeypatch):
    """Companion: the coarse step alone fails the check above."""
    monkeypatch.setattr(S, "REFINE_SCALES", (1.0,))
    assert _fine_single_step_moves() < 0.15


def test_a_per_step_list_shorter_than_the_streams_is_refused():
    """No eps_t past the end of a per-step list (gtm_core.input_privacy): a search asked for longer
    streams fails with a typed error instead of guessing the later steps."""
    from gtm_core.errors import InvalidParameter

    with pytest.raises(InvalidParameter, match="eps_t has 3 per-step values, none for step t=4"):
        S.initial_candidates([0.1, 0.2, 0.05], 4)


def test_the_fine_family_is_half_a_move_apart_over_the_whole_range_and_neighbours():
    for eps in (0.1, 0.5):
        levels = S.fine_levels(eps)
        units = np.array([S.move_units(x, eps) for x in levels])
        assert levels[0] == pytest.approx(S.P_MIN) and levels[-1] == pytest.approx(S.P_MAX)
        assert np.all(np.diff(units) <= S.FINE_SPACING + 1e-9) and np.all(np.diff(units) > 0.4)
        # move_units counts largest moves: one move up is one unit (the planted suite's coordinate)
        for x in levels[::97]:
            if x < 0.99:
                assert S.move_units(S.moved_level(x, eps, 1), eps) - S.move_units(x, eps) == pytest.approx(1, abs=1e-6)
    cands = S.fine_candidates(0.5, 3)
    assert all(is_neighbour(c.p, c.p_prime, 0.5, slack=1e-9) and c.p != c.p_prime for c in cands)
    assert {c.T for c in cands} == {1, 2, 3}
    assert {c.params["pattern"] for c in cands if c.T == 3} == {"up", "mixed-1", "mixed-2", "alternating", "half-up"}


def test_the_claimed_plan_makes_the_fine_family_dense_on_longer_streams_near_its_decision_levels():
    from gtm_core import GTMConfig, make_plan

    plan = make_plan(GTMConfig.load("examples/default.toml"))
    without, with_plan = S.fine_candidates(0.5, 6), S.fine_candidates(0.5, 6, plan)
    assert max(c.T for c in without) == 3 and max(c.T for c in with_plan) == 6
    lo, hi = S.fine_region(plan, 0.5, 6)
    decisions = [S.move_units(x, 0.5) for x in S.decision_levels(plan, 6)]
    assert lo == pytest.approx(min(decisions) - S.FINE_PLAN_MARGIN) and hi == pytest.approx(max(decisions)
                                                                                           + S.FINE_PLAN_MARGIN)
    assert all(lo <= S.move_units(c.p[0], 0.5) <= hi for c in with_plan if c.T > 3 and c.params.get("swapped") is None)
    # never a skip: every short pair without the plan is still proposed with it
    assert {(c.p, c.p_prime) for c in without} <= {(c.p, c.p_prime) for c in with_plan}


def test_the_coverage_list_names_what_the_fine_family_does_not_reach_and_is_shorter():
    from gtm_core import GTMConfig, make_plan

    plan = make_plan(GTMConfig.load("examples/default.toml"))
    old = S.coverage(50).to_dict()["skipped"]  # no eps_t: the coarse grid's list
    cov = S.coverage(50, 0.1, plan).to_dict()
    assert len(cov["skipped"]) < 6 and len(cov["skipped"]) == len(old)
    narrow = cov["skipped"][1]
    assert "lengths 4-10 outside the claimed plan's decision region" in narrow["region"] and narrow["reason"]
    assert cov["fine"]["lengths_everywhere"] == [1, 2, 3] and cov["fine"]["lengths_near_plan"] == list(range(4, 11))
    blind = S.coverage(50, 0.1, None).to_dict()["skipped"][1]["region"]
    assert "lengths 4-10 (no claimed plan" in blind
