"""Utility measurements: the smallest-lambda computations (monotone d = 1 vs enumeration) agree, and the
sample-and-aggregate baseline returns domain points (the full table is benchmarks/bench_blackbox_utility)."""

import numpy as np

from audits.bench.blackbox_utility import load_goog, sample_and_aggregate, smallest_lambdas_1d, smallest_lambdas_enum
from gtm_core.blackbox import BlackBoxEvaluator, EvaluatorConfig, SubsetImage
from gtm_core.blackbox.functions import median_on


def test_smallest_lambda_methods_agree():
    grid = [0.0, 1.0, 2.0, 3.0, 4.0]
    f = median_on(grid, empty=0.0)
    ev = BlackBoxEvaluator(EvaluatorConfig(10.0, 0.5, tuple([x] for x in grid)), f)
    rng = np.random.default_rng(0)
    for _ in range(5):
        S = sorted(rng.integers(0, 5, size=7).astype(float).tolist())
        img = SubsetImage(S, f, ev.domain, d=1)
        assert smallest_lambdas_1d(ev, S, ev.extended) == smallest_lambdas_enum(img, ev.extended)


def test_sample_and_aggregate_and_data():
    grid = [0.0, 1.0, 2.0]
    f = median_on(grid, empty=0.0)
    out = sample_and_aggregate(f, [1.0] * 30, 5, [(x,) for x in grid], 1.0, np.random.default_rng(1), 200, 1)
    assert out.min() >= 0 and out.max() <= 2 and np.mean(out == 1) > 0.5
    data = load_goog()
    assert data.shape == (1047, 2) and np.all(np.isfinite(data))
