"""Definition 36: the test mechanism's success probability and the scored mechanism's noise scale
(chi-square / binomial tests at alpha = 1e-3, fixed seeds, with power companions)."""

import mpmath
import numpy as np
from scipy import stats

from gtm_core.batchtoco.mechanisms import ScoredMechanism, TestMechanism
from gtm_core.batchtoco.problems import CoverageProblem
from gtm_core.batchtoco.witness import laplace_survival

ALPHA = 1e-3


def _setup():
    p = CoverageProblem(4, 1)
    st = p.empty_state()
    for e in [(0, 1), (0, 2), (0, 3), (1, 2)]:
        p.insert(st, e)
    return p, st


def _exact_p(p, st, eps_t, h, batch_eps=None):
    law = p.law(st, eps_t / 2 if batch_eps is None else batch_eps)
    return float(mpmath.fsum(pr * laplace_survival(h - v, 2 / mpmath.mpf(eps_t)) for _, pr, v in law))


def test_test_mechanism_success_probability():
    p, st = _setup()
    m = TestMechanism(p, st, 0.8, 2.5, np.random.default_rng(2))
    k = int(m.batch(None, 40_000).sum())
    assert m.calls == 40_000
    assert stats.binomtest(k, 40_000, _exact_p(p, st, 0.8, 2.5)).pvalue > ALPHA
    # power: the probability without the Laplace noise's contribution at a different threshold
    assert stats.binomtest(k, 40_000, _exact_p(p, st, 0.8, 3.5)).pvalue < ALPHA


def test_scored_mechanism_noise_and_unnoised_variant():
    p, st = _setup()
    q = ScoredMechanism(p, st, 0.5, np.random.default_rng(4))
    sols, scores = q.draw(20_000)
    noise = scores - np.array([p.value(st, s) for s in sols])
    assert stats.kstest(noise, stats.laplace(scale=4.0).cdf).pvalue > ALPHA
    assert stats.kstest(noise, stats.laplace(scale=2.0).cdf).pvalue < ALPHA
    raw = ScoredMechanism(p, st, 0.5, np.random.default_rng(4), noised=False)
    s2, v2 = raw.draw(50)
    assert all(v == p.value(st, s) for s, v in zip(s2, v2))
