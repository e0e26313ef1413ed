"""Planted violations (tests of the tester): the region drawn from a seed, the planted loss, the
sampler against its law, and the deployment equal to the correct GTM away from the region.

Statistical tests: chi-square at alpha = 1e-3 with fixed seeds (5, 6); each has a companion that
rejects a wrong law on the same samples. The suite's detection rate is the benchmark
``python -m benchmarks.bench_planted`` (50 planted seeds), not a test.
"""

import math

import numpy as np
import pytest
from scipy import stats

from audits.power.planted import (LOSS_RANGE, PlantedDeployment, best_grid_candidate, move_coordinate, plant,
                                  planted_pair, true_loss)
from audits.power.distribution import halting_distribution
from audits.pair_search import neighbour
from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter
from gtm_core.simulator import simulate


@pytest.fixture(scope="module")
def plan():
    return make_plan(GTMConfig.load("examples/default.toml"))


def _pvalue(dist, codes):
    obs = np.bincount(codes, minlength=dist.size)
    keep = dist * codes.size > 5
    exp = dist[keep] / dist[keep].sum() * obs[keep].sum()
    return stats.chi2.sf(((obs[keep] - exp) ** 2 / exp).sum(), keep.sum() - 1)


def test_move_coordinate_counts_largest_neighbour_moves():
    for p in (1e-9, 1e-4, 0.2, 0.47, 0.6, 0.99, 1 - 1e-8):
        for d in (1, -1):
            q = neighbour([p], [d], 0.1)[0]
            assert float(move_coordinate(q, 0.1) - move_coordinate(p, 0.1)) == pytest.approx(d, abs=0.02)


def test_region_is_a_function_of_the_seed_and_in_range(plan):
    assert plant(plan, 4) == plant(plan, 4) and plant(plan, 4) != plant(plan, 5)
    for seed in range(12):
        r = plant(plan, seed, max_T=6)
        assert 1 <= r.T <= 6 and len(r.directions) == r.T and 0 <= r.code <= r.T
        assert LOSS_RANGE[0] <= r.loss <= LOSS_RANGE[1] and r.q_hi >= 1e-3 and 0 <= r.q_lo < r.q_hi
    with pytest.raises(InvalidParameter, match="q_min"):
        plant(plan, 0, q_min=1e-6)


@pytest.mark.parametrize("seed", [0, 25, 46])
def test_planted_pair_has_the_planted_loss_on_a_likely_event(plan, seed):
    r = plant(plan, seed)
    dep = PlantedDeployment(plan, r)
    loaded, other = planted_pair(r)
    assert true_loss(dep, loaded, other, [r.code]) == pytest.approx(r.loss, rel=1e-9)
    assert dep.law(loaded)[r.code] >= 1e-4
    # companion: the correct GTM has no such loss there (its own loss is <= eps = 1)
    g_a, g_b = halting_distribution(plan, list(loaded)), halting_distribution(plan, list(other))
    assert abs(math.log(g_a[r.code] / g_b[r.code])) <= 1.0 + 1e-6


def test_sampler_follows_the_planted_law_and_differs_from_the_gtm(plan):
    r = plant(plan, 3)  # T = 3, p ~ 0.41, alternating pattern
    dep = PlantedDeployment(plan, r)
    loaded, _ = planted_pair(r)
    codes = dep(list(loaded), 300_000, 5)
    assert _pvalue(dep.law(loaded), codes) > 1e-3
    assert _pvalue(halting_distribution(plan, list(loaded)), codes) < 1e-3  # power companion


def test_identical_to_the_gtm_away_from_the_region(plan):
    r = plant(plan, 3)
    dep = PlantedDeployment(plan, r)
    other_length = [0.3] * (r.T + 1)
    far = [1e-9] * r.T  # centre ~0.41: far below the band
    assert dep.leak_probability(other_length) == 0.0 and dep.leak_probability(far) < 1e-12
    for p in (other_length, far):
        assert np.array_equal(dep(p, 50_000, 6), simulate(plan, p, 50_000, np.random.default_rng(6)).halt)
    # companion: inside the band the output is not the GTM's
    loaded, _ = planted_pair(r)
    assert not np.array_equal(dep(list(loaded), 50_000, 6), simulate(plan, list(loaded), 50_000,
                                                                      np.random.default_rng(6)).halt)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_search_grid_reaches_every_planted_region(plan, seed):
    """No blind region for these plants: the auditor's coverage grid holds a pair whose planted-law loss
    exceeds the claim (eps = 1) on the leak event with probability >= 1e-4 (seeds 0..3: T = 6, 10, 1, 3;
    p ~ 0.63, 5e-9, 1 - 4e-8, 0.41; constant, mixed, constant, alternating)."""
    best = best_grid_candidate(PlantedDeployment(plan, plant(plan, seed)))
    assert best["loss"] > 1.2 and best["probability"] >= 1e-4


@pytest.mark.slow
def test_grid_scan_companion_finds_nothing_on_the_gtm_side(plan):
    """Power companion of the test above: with the leak switched off (q_hi = q_lo = 0) no grid pair of
    the same region exceeds the claim - the scan measures the leak, not the GTM."""
    from dataclasses import replace

    r = replace(plant(plan, 0), q_hi=0.0, q_lo=0.0)
    best = best_grid_candidate(PlantedDeployment(plan, r))
    assert best["loss"] <= 1.0 + 1e-6


def test_true_loss_gives_budget_stop_codes_probability_zero(plan):
    """A witness event of a GTM audit may hold budget-stop codes (T + t; a level-set event of codes never
    seen on either side): the planted deployment never stops, so they add nothing (this crashed the
    planted suite with an IndexError)."""
    dep = PlantedDeployment(plan, plant(plan, 8, max_T=10))
    p, pp = [0.3] * 4, list(neighbour([0.3] * 4, [1] * 4, 0.1))
    assert true_loss(dep, p, pp, [1, 5, 7]) == true_loss(dep, p, pp, [1])
    assert math.isfinite(true_loss(dep, p, pp, [1, 5, 7]))


# the narrow suite -------------------------------------------------------------------------------------

def test_narrow_regions_are_a_function_of_the_seed_and_in_their_ranges(plan):
    from audits.power.planted import NARROW_HALF_WIDTH_RANGE, NARROW_LOSS_RANGE, plant_narrow

    assert plant_narrow(plan, 4) == plant_narrow(plan, 4) and plant_narrow(plan, 4) != plant_narrow(plan, 5)
    kinds, lengths = set(), set()
    for seed in range(30):
        r = plant_narrow(plan, seed, max_T=20)
        dep = PlantedDeployment(plan, r)
        loaded, other = planted_pair(r)
        assert r.suite == "narrow" and 1 <= r.T <= 20 and len(r.directions) == r.T
        assert NARROW_HALF_WIDTH_RANGE[0] <= r.half_width <= NARROW_HALF_WIDTH_RANGE[1]
        assert NARROW_LOSS_RANGE[0] <= r.loss <= NARROW_LOSS_RANGE[1]
        # the planted pair carries the planted loss, taper included (the loaded stream is outside a band < 1 move)
        assert true_loss(dep, loaded, other, [r.code]) == pytest.approx(r.loss, rel=1e-9)
        assert 0.99e-4 <= dep.leak_probability(loaded) <= 1.01e-2
        kinds.add(r.location)
        lengths.add(r.T <= 10)
    assert kinds == {"uniform", "decision"} and lengths == {True, False}


def test_narrow_decision_locations_are_near_the_plans_decision_levels(plan):
    from audits.pair_search import decision_levels
    from audits.power.planted import DECISION_JITTER, plant_narrow

    found = 0
    for seed in range(30):
        r = plant_narrow(plan, seed, max_T=20)
        if r.location != "decision":
            continue
        found += 1
        u = float(move_coordinate(r.centre, r.eps[0]))
        gaps = [abs(float(move_coordinate(x, r.eps[0])) - u) for x in decision_levels(plan, r.T)]
        assert min(gaps) <= DECISION_JITTER + 1e-9
    assert found >= 5


def test_decision_levels_are_where_a_step_halts_about_half_the_time(plan):
    """At a decision level with both noises at their medians, Pr[K > c] for K ~ Po(lambda q) is ~1/2 (the
    Poisson median is within 1 of its mean); companion: two moves lower it is far from 1/2."""
    from scipy import stats as st

    from audits.pair_search import decision_levels

    step = plan.step(1)
    eta1, eta2 = plan.tau1 * math.log(2), step.tau2 * math.log(2)
    lam = step.rho * math.exp(step.eps_t * (plan.mu1 - eta1 + eta2))
    p = (step.c + 0.5) / lam
    assert any(abs(x / p - 1) < 1e-12 for x in decision_levels(plan, 1))
    assert abs(st.poisson.sf(step.c, lam * p) - 0.5) < 0.05
    assert st.poisson.sf(step.c, lam * p * math.exp(-2 * step.eps_t)) < 0.01
