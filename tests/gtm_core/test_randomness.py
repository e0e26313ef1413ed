"""The float path's Poisson draw within a budget (gtm_core.randomness.draw_poisson_within_budget)."""

import numpy as np
import pytest

from gtm_core.errors import EvaluationBudgetExceeded
from gtm_core.randomness import draw_poisson_within_budget


def test_a_small_mean_is_numpys_poisson_draw():
    draws = [draw_poisson_within_budget(np.random.default_rng(s), 7.5, None) for s in range(5)]
    assert draws == [int(np.random.default_rng(s).poisson(7.5)) for s in range(5)]


def test_a_draw_over_the_budget_is_refused_as_none():
    # Po(50) <= 0 has probability e^-50: every seed's draw exceeds a zero budget
    assert all(draw_poisson_within_budget(np.random.default_rng(s), 50.0, 0) is None for s in range(10))
    assert draw_poisson_within_budget(np.random.default_rng(0), 50.0, 10**6) is not None


def test_a_mean_beyond_numpys_sampler_needs_a_budget():
    with pytest.raises(EvaluationBudgetExceeded, match="no budget"):
        draw_poisson_within_budget(np.random.default_rng(0), 1e16, None)
    # with a budget far below the mean the two-stage draw refuses (Pr[N <= budget] underflows to 0)
    assert draw_poisson_within_budget(np.random.default_rng(0), 1e16, 1000) is None
