"""Algorithm 2: the chunked implementation has the closed-form output law (chi-square, alpha = 1e-3,
fixed seed) and a companion power test; the iteration cap of Lemma 34."""

import numpy as np
from scipy import stats

from gtm_core.batchtoco import params as P
from gtm_core.batchtoco.threshold_select import threshold_select

ALPHA = 1e-3


class _Scored:
    """Solution 0 scores 1 (passes tau = 0.5) w.p. q0, solution 1 w.p. q1; otherwise scores 0."""

    def __init__(self, q0, q1, rng):
        self.q0, self.q1, self.rng = q0, q1, rng

    def draw(self, n):
        u = self.rng.random(n)
        sols = np.where(u < 0.5, 0, 1)
        passes = self.rng.random(n) < np.where(sols == 0, 2 * self.q0, 2 * self.q1)
        return sols, passes.astype(float)


def _closed_form(q0, q1, xi, cap):
    r = 1 - q0 - q1
    rho = r * (1 - xi)
    f = (1 - rho**cap) / (1 - rho)
    return [q0 * f, q1 * f, 1 - (q0 + q1) * f]


def _counts(q0, q1, xi, eps0, n, seed):
    rng = np.random.default_rng(seed)
    scored = _Scored(q0, q1, rng)
    out = np.zeros(3)
    for _ in range(n):
        r = threshold_select(scored, 0.5, xi, eps0, rng, first_chunk=4)
        out[2 if r.solution is None else int(r.solution)] += 1
    return out


def test_output_law_matches_closed_form():
    q0, q1, xi, eps0 = 0.02, 0.05, 0.05, 0.5
    cap = P.threshold_select_iterations(xi, eps0)
    obs = _counts(q0, q1, xi, eps0, 20_000, seed=1)
    assert stats.chisquare(obs, np.array(_closed_form(q0, q1, xi, cap)) * 20_000).pvalue > ALPHA


def test_power_rejects_the_law_without_the_stopping_coin():
    q0, q1, xi, eps0 = 0.02, 0.05, 0.05, 0.5
    cap = P.threshold_select_iterations(xi, eps0)
    obs = _counts(q0, q1, xi, eps0, 20_000, seed=1)
    assert stats.chisquare(obs, np.array(_closed_form(q0, q1, 0.0, cap)) * 20_000).pvalue < ALPHA


class _NoStop:
    """A generator whose coins never stop the loop (random() = 1), to exercise the cap."""

    def random(self, n):
        return np.ones(n)


def test_never_more_draws_than_the_cap():
    rng = np.random.default_rng(0)
    r = threshold_select(_Scored(0.0, 0.0, rng), 0.5, 1e-3, 1.0, _NoStop())
    assert r.solution is None and r.draws == r.iterations_cap == P.threshold_select_iterations(1e-3, 1.0)
