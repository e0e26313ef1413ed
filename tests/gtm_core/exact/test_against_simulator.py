"""The exact engine against the vectorised simulator (two independent witnesses).

G-test of the halting-time histogram of n = 10^6 simulated runs against the exact
distribution: alpha = 1e-3, fixed seeds.  Power companion: the same test rejects when
the simulated plan's eta_1 scale is perturbed by 10% (the exact side unchanged).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from gtm_core import GTMConfig, make_plan
from gtm_core.exact import transcript_distribution
from gtm_core.simulator import simulate

ALPHA = 1e-3
N_RUNS = 1_000_000


def g_test(observed: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> tuple[float, int, float]:
    """G statistic, degrees of freedom and p-value; cells with expected < min_expected are pooled."""
    n = observed.sum()
    expected = probs * n
    order = np.argsort(expected)
    obs_cells, exp_cells = [], []
    pool_o = pool_e = 0.0
    for i in order:
        pool_o += observed[i]
        pool_e += expected[i]
        if pool_e >= min_expected:
            obs_cells.append(pool_o)
            exp_cells.append(pool_e)
            pool_o = pool_e = 0.0
    if pool_e > 0 and exp_cells:
        obs_cells[-1] += pool_o
        exp_cells[-1] += pool_e
    o = np.array(obs_cells)
    e = np.array(exp_cells)
    mask = o > 0
    G = 2.0 * float(np.sum(o[mask] * np.log(o[mask] / e[mask])))
    df = len(o) - 1
    return G, df, float(stats.chi2.sf(G, df))


def _exact_probs(plan, p) -> np.ndarray:
    d = transcript_distribution(plan, p, dps=15)
    return np.array([float(v) for v in d.run_distribution()])


CASES = [
    ("examples/default.toml", [0.3, 0.02, 0.45, 0.01], 11),
    ("examples/flipped.toml", [0.93, 0.925, 0.94, 0.935], 12),
]


@pytest.mark.parametrize("path,p,seed", CASES)
def test_simulator_agrees_with_exact_distribution(path, p, seed):
    plan = make_plan(GTMConfig.load(path))
    probs = _exact_probs(plan, p)
    assert abs(probs.sum() - 1) < 1e-12
    res = simulate(plan, p, N_RUNS, np.random.default_rng(seed))
    G, df, pval = g_test(res.halting_histogram(), probs)
    assert df >= 2
    assert pval > ALPHA, f"G={G:.2f} df={df} p={pval:.2e}"


@pytest.mark.parametrize("path,p,seed", CASES)
def test_g_test_detects_a_perturbed_plan(path, p, seed):
    """Power companion: simulate with eta_1 10% too concentrated, compare with the true plan."""
    plan = make_plan(GTMConfig.load(path))
    probs = _exact_probs(plan, p)
    broken = dataclasses.replace(plan, tau1=plan.tau1 * 0.9)
    res = simulate(broken, p, N_RUNS, np.random.default_rng(seed))
    G, df, pval = g_test(res.halting_histogram(), probs)
    assert pval < ALPHA, f"G={G:.2f} df={df} p={pval:.2e}"
