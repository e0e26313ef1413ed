"""gtm_core.blackbox.approx.evaluator: Algorithm 2's parameters (pinned), its two branches, the law's
normalisation, and typed configuration errors."""

import math

import numpy as np
import pytest

from gtm_core.blackbox import params as P
from gtm_core.blackbox.approx.evaluator import ApproxConfig, ApproxEvaluator
from gtm_core.blackbox.approx.params import ApproxConstants, highdim_margin
from gtm_core.blackbox.functions import median_on
from gtm_core.errors import InvalidParameter

GRID = [0, 1, 2, 3]


def _ev(C=1e-5, eps=0.9, delta=0.1):
    cfg = ApproxConfig(eps, delta, 0.1, tuple([g] for g in GRID), ApproxConstants(C=C))
    return ApproxEvaluator(cfg, median_on(GRID, empty=0))


def test_parameters_follow_theorem_2_6_proof():
    p = _ev().params
    assert (p.eps0, p.delta0, p.beta0) == (0.45, 0.05, 0.05)
    assert p.M == 4 and p.H == 2
    assert p.Delta == highdim_margin(0.45, 0.05, 0.05, 1, 2, 1e-5)
    assert p.K == math.ceil(2 * (p.Delta + 1)) and p.R == P.tlap_radius(0.45, 0.05)
    assert p.locality == math.ceil(p.K + 2 * p.R + 1)


def test_default_constants_make_every_runnable_n_return_f_empty():
    """At C = 160 the cutoff K is astronomically large (the log* bound's constants): h <= 0 always."""
    ev = _ev(C=160)
    assert ev.params.K > 10**6
    assert ev.cutoff_law(16) == {0: pytest.approx(1.0)}
    assert ev.run([1, 2, 2], np.random.default_rng(0)) == ev.empty_point()


def test_law_is_normalised_and_has_both_branches():
    ev = _ev()
    S = [1, 2, 2, 3, 1, 2, 2, 1, 3, 2]
    ch = ev.cutoff_law(len(S))
    assert abs(sum(ch.values()) - 1) < 1e-12 and 0 in ch and max(ch) >= 1
    law = ev.law(S)
    assert abs(sum(law.values()) - 1) < 1e-12
    assert all(0 <= float(y[0]) <= 3 for y in law)


def test_config_errors_name_the_field():
    with pytest.raises(InvalidParameter, match="delta"):
        ApproxConfig(0.5, 0.0, 0.1, ([0], [1]))
    with pytest.raises(InvalidParameter, match="epsilon"):
        ApproxConfig(1.5, 0.1, 0.1, ([0], [1]))
    with pytest.raises(InvalidParameter, match="beta"):
        ApproxConfig(0.5, 0.1, 1.0, ([0], [1]))
    with pytest.raises(InvalidParameter, match="constants"):
        ApproxConfig(0.5, 0.1, 0.1, ([0], [1]), constants={"C": 1})


def test_literal_run_matches_law_and_power_companion():
    """chi-square, alpha = 1e-3, seed 41 (n = 8: fast depths); companion: a law shifted by one grid point is rejected."""
    from scipy import stats

    ev = _ev()
    S = [1, 2, 2, 3, 1, 2, 2, 1]
    law = ev.law(S)
    keys = sorted(law)
    rng = np.random.default_rng(41)
    draws = [ev.run(S, rng) for _ in range(2000)]
    obs = np.array([sum(d == k for d in draws) for k in keys])
    exp = np.array([law[k] for k in keys]) * len(draws)
    assert stats.chisquare(obs, exp).pvalue > 1e-3
    assert stats.chisquare(np.roll(obs, 1), exp).pvalue < 1e-3
    counts = ev.sample(S, 5000, np.random.default_rng(42))
    assert sum(counts.values()) == 5000


def test_d3_literal_run_matches_law_and_power_companion():
    """d = 3 (|Y| = 5, |Y~| = 9, center-3d, C = 1e-8 so that h >= 1 happens at n = 11): chi-square of 2000
    literal runs against the law (cells with expectation < 5 pooled), alpha = 1e-3, seed 43; companion:
    the same counts against the law with its two most likely outputs swapped are rejected (the law of
    another dataset is too close to this one to serve: at n = 11 the data barely moves the output)."""
    from scipy import stats

    from gtm_core.blackbox.functions import center_3d_on

    Y = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 1.0, 1.0)]
    ev = ApproxEvaluator(ApproxConfig(0.9, 0.1, 0.1, tuple(Y), ApproxConstants(C=1e-8)), center_3d_on(Y))
    S = [Y[1]] * 5 + [Y[4]] * 6
    law = ev.law(S)
    assert ev.params.d == 3 and len(law) > 9
    a, b = sorted(law, key=law.get)[-2:]
    other = law | {a: law[b], b: law[a]}
    keys = sorted(law)
    rng = np.random.default_rng(43)
    draws = [ev.run(S, rng) for _ in range(2000)]

    def pvalue(lw):
        obs = np.array([sum(d == k for d in draws) for k in keys], dtype=float)
        exp = np.array([lw.get(k, 0.0) for k in keys]) * len(draws)
        big = exp >= 5
        o, e = np.append(obs[big], obs[~big].sum()), np.append(exp[big], exp[~big].sum())
        return stats.chisquare(o, e * o.sum() / e.sum()).pvalue

    assert pvalue(law) > 1e-3
    assert pvalue(other) < 1e-3
