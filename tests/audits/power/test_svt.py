"""Cross-domain check on the Sparse Vector variants (Lyu, Su, Li 2017).

Default run: the samplers agree with the numerical output laws (chi-square, alpha = 1e-3, seed 5)
and a short audit flags SVT5 but not SVT1. The full table (2e7 samples per variant) is
`python -m benchmarks.bench_svt` (slow test below).
"""

import numpy as np
import pytest
from scipy import stats

from audits.audit_engine import run_audit
from audits.power.svt import SVTProblem, first_above_distribution, make, svt3_distribution, vector_distribution


def _pvalue(dist, codes):
    obs = np.bincount(codes, minlength=dist.size)
    keep = dist * codes.size > 5
    exp = dist[keep] / dist[keep].sum() * obs[keep].sum()
    return stats.chi2.sf(((obs[keep] - exp) ** 2 / exp).sum(), keep.sum() - 1)


@pytest.mark.parametrize("name", ["SVT1", "SVT2", "SVT4"])
def test_first_above_law(name):
    m = make(name)
    q = [1, 0, 2, 1, 1, 0, 2, 1, 1, 3]
    codes = m.sample_codes(q, 60_000, np.random.default_rng(5))
    assert _pvalue(first_above_distribution(m, q), codes) > 1e-3


def test_svt3_law_and_power_companion():
    m3 = make("SVT3")
    q = [1, 0, 2, 1, 1, 0, 2, 1, 1, 3]
    codes = m3.sample_codes(q, 100_000, np.random.default_rng(5))
    assert _pvalue(svt3_distribution(m3, q), codes) > 1e-3
    shifted = m3.sample_codes([x + 1 for x in q], 100_000, np.random.default_rng(5))  # other input
    assert _pvalue(svt3_distribution(m3, q), shifted) < 1e-3


def test_vector_law_svt6_and_power_companion():
    m6, m5 = make("SVT6"), make("SVT5")
    q = [1, 0, 2, 1, 1, 0, 2, 1, 1, 3]
    codes = m6.sample_codes(q, 50_000, np.random.default_rng(5))
    assert _pvalue(vector_distribution(m6, q), codes) > 1e-3
    assert _pvalue(vector_distribution(m5, q), codes) < 1e-3


def test_svt5_flagged_svt1_not():
    r5 = run_audit(SVTProblem(make("SVT5")), epsilon=0.1, seconds=None, max_samples=3_000_000, seed=2, progress=False)
    r1 = run_audit(SVTProblem(make("SVT1")), epsilon=0.1, seconds=None, max_samples=3_000_000, seed=2, progress=False)
    assert r5.violation and r5.epsilon_lower_bound > 1.761
    assert not r1.violation


@pytest.mark.slow
def test_svt_table():
    from benchmarks.bench_svt import run

    rows = run(max_samples=20_000_000, seed=2026, write=False)
    by = {r["variant"]: r for r in rows}
    assert by["SVT1"]["lower_bound"] <= 0.1 and by["SVT2"]["lower_bound"] <= 0.1
    assert by["SVT5"]["lower_bound"] >= 1.761
