"""The black-box evaluator's witnesses held against each other on random small instances:

* the three depth computations (literal Definition 4.1, subset OR-transform, monotone d = 1) agree
  for monotone functions;
* Claims 4.2 / 4.4 (depth non-increasing in h, sensitivity 1 under removing a record);
* the exact law's pure-DP loss on random remove-one neighbours is certified <= eps (ball arithmetic)
  for random (eps, beta), and the parameter formulas' float64 values match mpmath.
"""

from __future__ import annotations

import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from gtm_core.blackbox import BlackBoxEvaluator, EvaluatorConfig, SubsetImage, cdi_depth_literal, monotone_depths_1d
from gtm_core.blackbox import params as P
from gtm_core.blackbox.exact import pair_loss

DOMAIN = [(x,) for x in range(4)]


def _median(T):
    return min(3, max(0, round(statistics.median(T)))) if T else 0


def _max(T):
    return max(T) if T else 0


def _low_quantile(T):
    return sorted(T)[len(T) // 4] if T else 0


FUNCTIONS = st.sampled_from([_median, _max, _low_quantile])
DATA = st.lists(st.integers(0, 3), min_size=1, max_size=6)


@settings(max_examples=25, deadline=None)
@given(DATA, FUNCTIONS, st.integers(1, 7))
def test_depth_methods_agree(S, f, h):
    lit = [cdi_depth_literal(S, f, h, y) for y in DOMAIN]
    assert SubsetImage(S, f, DOMAIN, d=1).depths(h, DOMAIN) == lit
    assert monotone_depths_1d(S, f, h, DOMAIN) == lit


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=9), FUNCTIONS, st.integers(1, 9), st.data())
def test_depth_claims(S, f, h, data):
    i = data.draw(st.integers(0, len(S) - 1))
    T = S[:i] + S[i + 1:]
    a, b = SubsetImage(S, f, DOMAIN, d=1), SubsetImage(T, f, DOMAIN, d=1)
    da, db = a.depths(h, DOMAIN), b.depths(h, DOMAIN)
    assert all(0 <= x - y <= 1 for x, y in zip(da, db))  # adding a record never lowers depth, by <= 1
    assert all(x >= y for x, y in zip(da, a.depths(h + 1, DOMAIN)))


@settings(max_examples=12, deadline=None)
@given(st.floats(4.0, 20.0), st.floats(0.05, 0.9), st.lists(st.integers(0, 3), min_size=3, max_size=9),
       FUNCTIONS, st.data())
def test_exact_loss_certified_at_most_eps(eps, beta, S, f, data):
    ev = BlackBoxEvaluator(EvaluatorConfig(eps, beta, tuple(DOMAIN)), f)
    i = data.draw(st.integers(0, len(S) - 1))
    T = tuple(S[:i] + S[i + 1:])
    assert pair_loss(ev, tuple(S), T).certified_at_most(eps)
    assert pair_loss(ev, T, tuple(S)).certified_at_most(eps)


@settings(max_examples=50, deadline=None)
@given(st.floats(1e-3, 50.0), st.floats(1e-6, 0.999), st.integers(2, 10**6), st.integers(1, 2))
def test_formulas_float_vs_mpmath(eps, beta, M, d):
    e0, e0m = P.eps0(eps), P.eps0(eps, dps=40)
    d0, d0m = P.delta0(eps, beta, M), P.delta0(eps, beta, M, dps=40)
    assert abs(d0 - float(d0m)) <= 1e-12 * float(d0m)
    assert abs(P.tlap_radius(e0, d0) - float(P.tlap_radius(e0m, d0m, dps=40))) <= 1e-11 * float(P.tlap_radius(e0m, d0m, dps=40))
    K, Km = P.depth_margin(eps, beta, M, d), P.depth_margin(eps, beta, M, d, dps=40)
    assert abs(K - Km) <= 1  # ceil of a float64 value may differ by one only at an integer boundary
