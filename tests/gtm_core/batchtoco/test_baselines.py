"""The baselines' budgets compose to eps and their schedules."""

import numpy as np
import pytest

from gtm_core.batchtoco.baselines import (advanced_composition_budget, advanced_composition_total,
                                          basic_composition_budget, doubling_times, run_baseline)
from gtm_core.batchtoco.problems import CoverageProblem
from gtm_core.batchtoco.streams import bundled_stream
from gtm_core.errors import InvalidParameter


def test_budgets():
    assert basic_composition_budget(0.9, 100) == pytest.approx(0.009)
    e0 = advanced_composition_budget(0.9, 1e-6, 10_000)
    assert advanced_composition_total(e0, 1e-6, 10_000) <= 0.9
    assert advanced_composition_total(e0 * (1 + 1e-9), 1e-6, 10_000) > 0.9
    assert doubling_times(20) == [1, 2, 4, 8, 16]


def test_run_baselines():
    s = bundled_stream("florentine_families")
    for name, expected_calls in (("basic", 20), ("advanced", 20), ("doubling", 5)):
        sols, calls = run_baseline(name, CoverageProblem(15, 2), s.edges, 0.9, np.random.default_rng(0))
        assert len(sols) == 20 and sum(calls) == expected_calls
    with pytest.raises(InvalidParameter, match="baseline must be one of"):
        run_baseline("nope", CoverageProblem(15, 2), s.edges, 0.9, np.random.default_rng(0))
