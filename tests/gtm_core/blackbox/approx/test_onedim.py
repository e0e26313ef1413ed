"""gtm_core.blackbox.approx.onedim: Algorithm 5's recursion, q's sensitivity and quasi-concavity, the
exact law against the literal sampler (chi-square, alpha = 1e-3, fixed seeds, with a power companion),
and Theorem G.2's utility checked exactly on the law (with a failing companion at a too-small C)."""

from fractions import Fraction

import numpy as np
import pytest
from flint import arb, ctx
from scipy import stats

from gtm_core.blackbox.approx.onedim import (Algorithm5Variant, algorithm5_law, algorithm5_run, expected_levels,
                                             interval_quality, pad_quality)
from gtm_core.blackbox.approx.params import log_star, onedim_margin
from gtm_core.errors import InvalidParameter

ALPHA = 1e-3
Q0 = [0, 1, 3, 5, 6, 6, 4, 2, 1, 0, 0]


def test_levels_equal_log_star():
    """Padding to a power of two and Y' = {0..floor(log2 max Y)} give exactly log*|Y| non-trivial levels."""
    for n in range(1, 600):
        assert expected_levels(n) == log_star(n), n
    for n in (2, 3, 5, 17, 40):
        assert algorithm5_law(list(range(n)), 0.5, 0.1, 0.1, 3.0).levels == log_star(n)


def test_padding_uses_the_minimum():
    assert pad_quality([3, 1, 2]) == [3, 1, 2, 1]


def _unimodal(rng, n):
    peak = int(rng.integers(n))
    up = np.cumsum(rng.integers(0, 3, n))
    return [int(up[min(i, peak)] - (up[i] - up[peak] if i > peak else 0)) for i in range(n)]


def test_interval_quality_sensitivity_one_and_quasi_concave():
    """Proof of Theorem G.2: |q(S,j) - q(S',j)| <= 1 when |Q - Q'| <= 1 pointwise; q quasi-concave if Q is."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(2, 40))
        Q = [Fraction(int(v)) for v in rng.integers(0, 20, n)]
        Q2 = [v + int(rng.integers(-1, 2)) for v in Q]
        D = Fraction(int(rng.integers(1, 30)), 3)
        a, b = interval_quality(pad_quality(Q), D), interval_quality(pad_quality(Q2), D)
        assert all(abs(x - y) <= 1 for x, y in zip(a, b))
        U = [Fraction(v) for v in _unimodal(rng, n)]
        q = interval_quality(pad_quality(U), D)
        assert all(q[j] >= min(q[i], q[k]) for i in range(len(q)) for j in range(i, len(q)) for k in range(j, len(q)))


def test_exact_law_normalised_and_float_agrees():
    old = ctx.prec
    ctx.prec = 128
    try:
        ball = algorithm5_law(Q0, 0.9, 0.1, 0.1, 4.0, exact=True)
        total = sum(ball.probabilities, arb(0))
        assert total.contains(arb(1)) and total.rad() < 1e-30
        fl = algorithm5_law(Q0, 0.9, 0.1, 0.1, 4.0)
        assert all(b.contains(arb(f)) or abs(b.mid() - arb(f)) < 1e-12 for b, f in zip(ball.probabilities,
                                                                                   fl.probabilities))
    finally:
        ctx.prec = old


def _pvalue(p, draws):
    p = np.asarray(p, dtype=float)
    obs = np.bincount(draws, minlength=p.size)
    keep = p * len(draws) >= 5
    exp = np.append(p[keep], p[~keep].sum()) * len(draws)
    o = np.append(obs[keep], obs[~keep].sum())
    if exp[-1] == 0:
        exp, o = exp[:-1], o[:-1]
    return stats.chisquare(o, exp).pvalue


def test_literal_sampler_matches_law_and_power_companion():
    """alpha = 1e-3, seed 21; companion: the broken variant's sampler (GAP-MAX without noise) is rejected."""
    law = algorithm5_law(Q0, 3.0, 0.1, 0.1, 4.0).probabilities
    rng = np.random.default_rng(21)
    draws = [algorithm5_run(Q0, 3.0, 0.1, 0.1, 4.0, rng) for _ in range(3000)]
    assert _pvalue(law, draws) > ALPHA
    broken = Algorithm5Variant(gap_max_noise=False)
    rng = np.random.default_rng(22)
    bd = [algorithm5_run(Q0, 3.0, 0.1, 0.1, 4.0, rng, variant=broken) for _ in range(3000)]
    assert _pvalue(law, bd) < ALPHA
    assert _pvalue(algorithm5_law(Q0, 3.0, 0.1, 0.1, 4.0, variant=broken).probabilities, bd) > ALPHA


def test_theorem_g2_utility_exactly_on_the_law_and_failing_companion():
    """With Delta = Theorem G.2's bound at C = 160 the law puts >= 1 - beta on {Q >= max - Delta};
    at C = 1e-6 (Delta = 0.69, far below the bound) on unit-step quality the check fails - it can fail."""
    eps, beta, delta, n = 0.5, 0.1, 1e-6, 100
    H = log_star(n)
    Delta = onedim_margin(eps, beta, delta, H, 160)
    Q = [-abs(i - 37) * 10**7 for i in range(n)]
    law = algorithm5_law(Q, eps, beta, delta, Delta)
    assert law.regime_ok
    good = sum(p for q, p in zip(Q, law.probabilities) if q >= max(Q) - Delta)
    assert 0 < sum(q >= max(Q) - Delta for q in Q) < n and good >= 1 - beta
    tiny = onedim_margin(eps, beta, delta, H, 1e-6)
    Q1 = [-abs(i - 37) for i in range(n)]  # unit steps: noise matters at Delta = 0.69
    law2 = algorithm5_law(Q1, eps, beta, delta, tiny)
    assert sum(p for q, p in zip(Q1, law2.probabilities) if q >= max(Q1) - tiny) < 1 - beta


def test_bad_inputs_are_typed():
    with pytest.raises(InvalidParameter, match="delta"):
        algorithm5_law(Q0, 0.5, 0.1, 1.5, 2.0)
    with pytest.raises(InvalidParameter, match="level_epsilon"):
        Algorithm5Variant(level_epsilon="half")


def test_padding_scale_keeps_the_law_normalised_and_the_run_defined():
    """|Y'| in (32, 64]: the recursion's padded domain has indices j^ with 2^j^ > N; J = min(2^j^, N)
    (one block) keeps the law a probability vector and every run defined (it crashed, and the law lost
    mass, before). Law vs runs: chi-square at alpha = 0.001, seed 5, 3000 runs."""
    import numpy as np
    from scipy.stats import chisquare

    from gtm_core.blackbox.approx.onedim import algorithm5_law, algorithm5_run, scale

    assert scale(7, 64) == 64 and scale(3, 64) == 8
    Q = [min(k, 40 - k) for k in range(40)]
    law = algorithm5_law(Q, 0.5, 0.1, 0.01, 1.0).probabilities
    assert abs(sum(law) - 1) < 1e-12
    rng = np.random.default_rng(5)
    draws = np.bincount([algorithm5_run(Q, 0.5, 0.1, 0.01, 1.0, rng) for _ in range(3000)], minlength=40)
    exp = np.array(law) * 3000
    keep = exp >= 5
    obs_k, exp_k = draws[keep], exp[keep]
    if (~keep).any():
        obs_k, exp_k = np.append(obs_k, draws[~keep].sum()), np.append(exp_k, exp[~keep].sum())
    assert chisquare(obs_k, exp_k * obs_k.sum() / exp_k.sum()).pvalue > 0.001
