"""gtm_core.blackbox.approx.highdim: Algorithm 6's candidate sets and induced qualities against a brute-force
canonical extension (Remark G.1, all subsets A), the law against the literal sampler (alpha = 1e-3, seed 31,
power companion), and outputs in CH(Y)."""

from fractions import Fraction as F
from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from gtm_core.blackbox.approx.highdim import algorithm6_law, algorithm6_run, candidates, induced_quality, setup
from gtm_core.blackbox.approx.onedim import Algorithm5Variant
from gtm_core.blackbox.geometry import in_hull
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration

ALPHA = 1e-3
Y = [(F(0), F(0)), (F(2), F(0)), (F(0), F(2)), (F(2), F(2)), (F(1), F(3)), (F(3), F(1))]
QV = [1, 2, 0, 3, 1, 2]


def _slice_min_max(A, c):
    """[min, max] of x_2 over CH(A) cut by x_1 = c (None if empty), by brute force over pairs."""
    vals = [a[1] for a in A if a[0] == c]
    for a in A:
        for b in A:
            if a[0] < c < b[0]:
                vals.append(a[1] + (c - a[0]) * (b[1] - a[1]) / (b[0] - a[0]))
    return (min(vals), max(vals)) if vals else None


def _brute_Q1(y1):
    """Remark G.1 + Algorithm 6 line 8 by enumerating every non-empty A subset of Y."""
    Q = dict(zip(Y, map(F, QV)))
    best = min(Q.values())
    for k in range(1, len(Y) + 1):
        for A in combinations(Y, k):
            if min(a[0] for a in A) <= y1 <= max(a[0] for a in A):
                best = max(best, min(Q[a] for a in A))
    return best


def _brute_Q2(y1, y2):
    Q = dict(zip(Y, map(F, QV)))
    best = min(Q.values())
    for k in range(1, len(Y) + 1):
        for A in combinations(Y, k):
            if in_hull((y1, y2), list(A)):
                best = max(best, min(Q[a] for a in A))
    return best


def test_induced_quality_equals_brute_force_extension():
    Q = dict(zip(Y, map(F, QV)))
    c1 = candidates(Y, ())
    assert c1 == sorted({p[0] for p in Y})
    assert induced_quality(Y, Q, (), c1) == [_brute_Q1(v) for v in c1]
    for y1 in c1:
        c2 = candidates(Y, (y1,))
        assert induced_quality(Y, Q, (y1,), c2) == [_brute_Q2(y1, v) for v in c2]


def test_candidates_contain_every_slice_minimum():
    """Lemma G.3 property (2) for the realised prefix: min x_2 of every non-empty slice of every CH(A) is a candidate."""
    for y1 in candidates(Y, ()):
        c2 = set(candidates(Y, (y1,)))
        for k in range(1, len(Y) + 1):
            for A in combinations(Y, k):
                mm = _slice_min_max(A, y1)
                if mm is not None:
                    assert mm[0] in c2 and mm[1] in c2


def _pvalue(law, draws):
    keys = sorted(law)
    idx = {k: i for i, k in enumerate(keys)}
    p = np.array([float(law[k]) for k in keys])
    obs = np.bincount([idx[x] for x in draws], minlength=len(keys))
    keep = p * len(draws) >= 5
    exp = np.append(p[keep], p[~keep].sum()) * len(draws)
    o = np.append(obs[keep], obs[~keep].sum())
    if exp[-1] == 0:
        exp, o = exp[:-1], o[:-1]
    return stats.chisquare(o, exp).pvalue


def test_law_matches_sampler_and_power_companion():
    law = algorithm6_law(Y, QV, 0.9, 0.1, 0.1, 1e-3)
    assert abs(sum(law.values()) - 1) < 1e-12 and all(in_hull(y, Y) for y in law)
    rng = np.random.default_rng(31)
    draws = [algorithm6_run(Y, QV, 0.9, 0.1, 0.1, 1e-3, rng) for _ in range(1500)]
    assert _pvalue(law, draws) > ALPHA
    rng = np.random.default_rng(32)
    broken = Algorithm5Variant(level_epsilon="undivided", gap_max_noise=False)
    bd = [algorithm6_run(Y, QV, 0.9, 0.1, 0.1, 1e-3, rng, variant=broken) for _ in range(1500)]
    assert _pvalue(law, [b if b in law else min(law) for b in bd]) < ALPHA


def test_small_domain_is_the_exponential_mechanism():
    Y3 = [(F(0), F(0)), (F(1), F(0)), (F(0), F(1))]
    law = algorithm6_law(Y3, [0, 1, 2], 0.5, 0.1, 0.1, 160)
    w = np.exp(0.5 * np.array([0, 1, 2]) / 2)
    assert np.allclose([law[p] for p in Y3], w / w.sum())


def test_setup_and_errors():
    s = setup(Y, 0.5, 0.1, 1e-6, 160)
    assert s.d == 2 and s.H == 3 and s.Delta == s.Delta0 / 2
    with pytest.raises(InvalidParameter, match="epsilon"):
        setup(Y, 1.5, 0.1, 1e-6, 160)
    with pytest.raises(UnsupportedConfiguration, match="d="):
        setup([(F(0),) * 4, (F(1),) * 4], 0.5, 0.1, 1e-6, 160)
    with pytest.raises(InvalidParameter, match="one value per domain point"):
        algorithm6_law(Y, [1, 2], 0.5, 0.1, 0.1, 1)


def test_line_interval_3d_against_an_lp_oracle():
    """d = 3: the vertical line through (x, y) cut by CH(P), exact, against scipy's LP (float, tolerance 1e-9)."""
    from scipy.optimize import linprog

    from gtm_core.blackbox.approx.highdim import line_interval_3d

    rng = np.random.default_rng(51)
    for _ in range(40):
        P = [tuple(F(int(v)) for v in rng.integers(0, 5, 3)) for _ in range(int(rng.integers(1, 9)))]
        xy = (F(int(rng.integers(0, 9)), 2), F(int(rng.integers(0, 9)), 2))
        got = line_interval_3d(P, xy)
        A = np.array([[float(p[0]) for p in P], [float(p[1]) for p in P], [1.0] * len(P)])
        b = np.array([float(xy[0]), float(xy[1]), 1.0])
        z = np.array([float(p[2]) for p in P])
        lo = linprog(z, A_eq=A, b_eq=b, bounds=(0, None))
        if not lo.success:
            assert got is None
            continue
        hi = linprog(-z, A_eq=A, b_eq=b, bounds=(0, None))
        assert got is not None and abs(float(got[0]) - lo.fun) < 1e-9 and abs(float(got[1]) + hi.fun) < 1e-9


def test_algorithm6_runs_in_three_dimensions():
    Y3 = [(F(i), F(j), F(k)) for i in range(2) for j in range(2) for k in range(2)] + [(F(1, 2),) * 3]
    Q = [0, 1, 1, 0, 1, 0, 0, 1, 3]
    law = algorithm6_law(Y3, Q, 0.9, 0.1, 0.1, 1e-3)
    assert abs(sum(law.values()) - 1) < 1e-12 and all(len(y) == 3 for y in law)
    rng = np.random.default_rng(52)
    draws = [algorithm6_run(Y3, Q, 0.9, 0.1, 0.1, 1e-3, rng) for _ in range(200)]
    assert all(y in law for y in draws)
