"""The horizon planner's float64 search (gtm_core.planners.horizon_search): its model and its questions.

Nothing here is a certificate; the tests check that the search answers the questions it documents
(smallest ell meeting the float target, refinement never worse than the grid, grids where the needed
Pareto moment is finite) on the shared median cell (tests/gtm_core/planners/horizon_cases.py).
"""

from __future__ import annotations

import math

import pytest

from gtm_core.planners.horizon_problem import HorizonProblem, NotAchievable
from gtm_core.planners.horizon_search import (
    C_GRID,
    SEARCH_MARGIN,
    ShapeModel,
    ShapeSearch,
    cost_factor,
    log_gap,
    noise_rates,
)
from tests.gtm_core.planners.horizon_cases import DESIGN, MEDIAN

TARGET = MEDIAN.beta * (1 - SEARCH_MARGIN)


@pytest.fixture(scope="module")
def shape():
    return ShapeModel(MEDIAN, DESIGN.s, DESIGN.c, DESIGN.theta)


@pytest.fixture(scope="module")
def search():
    return ShapeSearch(MEDIAN)


def test_ell_min_is_the_smallest_ell_meeting_the_target(shape):
    kappa = log_gap(1, MEDIAN.p_star, DESIGN.p_bar)
    ell = shape.ell_min(kappa, TARGET)
    assert math.isfinite(ell)
    assert shape.failure([ell], kappa)[0] <= TARGET
    assert shape.failure([ell - 1e-3], kappa)[0] > TARGET  # bisected to 1e-7, so 1e-3 lower misses
    assert shape.ell_min(kappa, TARGET, ell_max=ell - 1e-3) == math.inf  # a budget below it: none


def test_cost_is_the_lemma12_factor_at_the_cheapest_ell(shape):
    sigma1, sigma2 = noise_rates(MEDIAN, DESIGN.theta)
    cost, ell = shape.cost(DESIGN.p_bar, TARGET)
    assert shape.factor == cost_factor(1, MEDIAN.p_star, sigma1, sigma2)
    assert cost == pytest.approx(math.exp(ell) * sigma1 / (sigma1 + 1) * sigma2 / (sigma2 - 1) / MEDIAN.p_star,
                                 rel=1e-12)


@pytest.mark.parametrize("s, sigma1, sigma2", [(1, 3.0, 1.0), (-1, 1.0, 3.0)])
def test_cost_factor_is_infinite_when_the_pareto_moment_diverges(s, sigma1, sigma2):
    assert cost_factor(s, 0.5, sigma1, sigma2) == math.inf


def test_max_p_bar_is_feasible_and_a_slightly_larger_one_is_not(shape):
    budget = 60.0
    lo, hi = MEDIAN.p_star * 1e-6, MEDIAN.p_star * (1 - 1e-6)
    pb = shape.max_p_bar(budget, TARGET, lo, hi)
    assert shape.feasible(pb, TARGET, budget)
    assert not shape.feasible(pb * math.exp(2e-4), TARGET, budget)


def test_refinement_is_never_worse_than_the_grid_winner(search):
    cost, key, ell = search.best_at(DESIGN.p_bar)
    assert key is not None and key[1] in C_GRID
    refined_cost, refined_key, refined_ell = search.refine(DESIGN.p_bar, key)
    assert refined_cost <= cost
    assert search.shape(*refined_key).cost(DESIGN.p_bar, search.target) == (refined_cost, refined_ell)


def test_theta_grids_keep_the_needed_moment_finite(search):
    assert search.thetas[1] and search.thetas[-1]
    for s, thetas in search.thetas.items():
        for theta in thetas:
            sigma1, sigma2 = noise_rates(MEDIAN, theta)
            assert (sigma2 if s == 1 else sigma1) > 1.05 * (1 - 1e-12)


def test_no_finite_cost_split_is_not_achievable():
    """eps_t close to epsilon: no theta makes the needed Pareto moment finite in either direction."""
    with pytest.raises(NotAchievable, match="no noise split"):
        ShapeSearch(HorizonProblem(epsilon=1.0, eps_t=0.99, p_star=0.5, T=10))
