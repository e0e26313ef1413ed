"""Exact output law of Algorithm 4 (arb balls): normalisation, agreement with both samplers (chi-square
at alpha = 1e-3, fixed seeds, with a power companion), certified loss <= eps for the correct evaluator
on every searched neighbouring pair, and the exact losses of the power-suite variants."""

import statistics
from dataclasses import replace

import numpy as np
import pytest
from flint import arb, ctx
from scipy import stats

from gtm_core.blackbox import BlackBoxEvaluator, EvaluatorConfig
from gtm_core.blackbox.exact import hockey_stick, multisets, output_law, pair_loss, search_loss

ALPHA = 1e-3


def median_grid(T):
    return min(4, max(0, round(statistics.median(T)))) if T else 0


@pytest.fixture(scope="module")
def small():
    """eps = 10, beta = 0.5, Y = {0..4}: h >= 1 already for n ~ 6-8 (enumeration path)."""
    return BlackBoxEvaluator(EvaluatorConfig(10.0, 0.5, tuple([x] for x in range(5))), median_grid)


@pytest.fixture(scope="module")
def eps2():
    """eps = 2, beta = 0.1, Y = {0..4}: h crosses 0 at n ~ 22-33 (monotone path)."""
    return BlackBoxEvaluator(EvaluatorConfig(2.0, 0.1, tuple([x] for x in range(5))), median_grid,
                             depth_method="monotone")


def _chi2_pvalue(law, codes):
    p = law.floats()
    obs = np.bincount(codes, minlength=p.size)
    keep = p * codes.size >= 5
    exp = np.append(p[keep], p[~keep].sum()) * codes.size
    o = np.append(obs[keep], obs[~keep].sum())
    if exp[-1] == 0:
        exp, o = exp[:-1], o[:-1]
    return stats.chisquare(o, exp).pvalue


def test_law_is_normalised(small, eps2):
    for ev, S in ((small, (0, 1, 1, 2, 2, 3, 3, 4)), (eps2, tuple([1] * 12 + [2] * 14))):
        total = output_law(ev, S).total()
        assert total.contains(arb(1)) and total.rad() < 1e-30


def test_samplers_match_exact_law_and_power_companion(small):
    S = (0, 1, 1, 2, 2, 3, 3, 4)
    law = output_law(small, S)
    vec = small.sample(list(S), 200_000, np.random.default_rng(11))
    assert _chi2_pvalue(law, vec) > ALPHA
    rng = np.random.default_rng(12)
    lit = np.array([small.extended.index(small.run(list(S), rng)) for _ in range(20_000)])
    assert _chi2_pvalue(law, lit) > ALPHA
    broken = BlackBoxEvaluator(small.config, small.f, params=replace(small.params, em_epsilon=2 * small.params.eps0))
    assert _chi2_pvalue(law, broken.sample(list(S), 200_000, np.random.default_rng(13))) < ALPHA


def test_correct_evaluator_certified_on_every_searched_pair(small):
    res = search_loss(small, multisets(range(5), [5, 6, 7]))
    assert res.pairs > 300
    assert res.best.certified_at_most(small.params.epsilon)
    assert 1.0 < res.best.loss_upper < small.params.epsilon  # a non-trivial loss, below the claim


def test_variant_losses_at_eps2(eps2):
    S, T = tuple([1] * 26), tuple([1] * 25)
    assert pair_loss(eps2, S, T).certified_at_most(2.0)
    nonoise = BlackBoxEvaluator(eps2.config, eps2.f, params=replace(eps2.params, size_noise="none"),
                                depth_method="monotone")
    pl = pair_loss(nonoise, S, T, min_probability=1e-3)
    assert pl.certified_above(1.1 * 2.0)  # 4.56: h from the exact |S| breaks pure DP
    nouni = BlackBoxEvaluator(eps2.config, eps2.f, params=replace(eps2.params, uniform_branch=False),
                              depth_method="monotone")
    assert pair_loss(nouni, tuple([1] * 23), tuple([1] * 22), min_probability=1e-3).certified_above(10.0)


def test_laplace_size_noise_and_small_K_keep_pure_dp(eps2):
    """Finding (pinned): an untruncated Laplace(1/eps_0) size estimate is itself eps_0-DP and K only
    moves the cutoff, so these two 'broken' evaluators stay eps-DP (they break utility, not privacy)."""
    data = [tuple([a] * n) for n in range(21, 34, 3) for a in range(5)]
    for change in (dict(size_noise="laplace"), dict(K=6)):
        ev = BlackBoxEvaluator(eps2.config, eps2.f, params=replace(eps2.params, **change), depth_method="monotone")
        assert search_loss(ev, data).best.certified_at_most(2.0)


def test_hockey_stick_randomized_response():
    old = ctx.prec
    ctx.prec = 128
    try:
        e = arb(1).exp()
        P = [e / (1 + e), 1 / (1 + e)]
    finally:
        ctx.prec = old
    Q = [P[1], P[0]]
    d1 = hockey_stick(P, Q, 1.0)  # randomized response at eps = 1 is exactly (1, 0)-DP
    assert d1.contains(arb(0)) and d1.upper() < 1e-30
    d0 = hockey_stick(P, Q, 0.0)
    assert abs(float(d0.mid()) - (np.e - 1) / (np.e + 1)) < 1e-15
