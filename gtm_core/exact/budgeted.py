"""Exact first-step outcome law of the GTM under a "refuse" evaluation budget.

Algorithm 1 at step t draws eta_1 ~ Exp(tau_1) (shared) and eta_2 ~ Exp(tau_2), sets
Z = s (mu_1 - eta_1 + eta_2), lambda = rho exp(eps_t Z), N ~ Po(lambda), and counts the +1's
K among N evaluations of the (for s = -1: negated) Bernoulli mechanism.  The "refuse" budget
policy refuses the step when N > B, before evaluating anything.  Lemma 22 only bounds
Pr[N > B]; the truncation itself breaks pure DP, which this module measures exactly.

Thinning identity: given lambda, K ~ Po(lambda q) and L = N - K ~ Po(lambda (1 - q)) are
independent (q = p for s = +1, q = 1 - p for s = -1).  Hence

  refused = Pr[K + L > B],
  s = +1: halt = Pr[K > c, K + L <= B],   s = -1: halt = Pr[K <= c, K + L <= B],

and continue = 1 - halt - refused.  With B = None (untruncated Algorithm 1) refused = 0.

Only D = eta_2 - eta_1 matters; its density is two-sided exponential,
f(d) = e^{-d/tau_2}/(tau_1+tau_2) (d >= 0), e^{d/tau_1}/(tau_1+tau_2) (d < 0).
The outer integral over D is mpmath.quad (tanh-sinh) with split points at 0 and around the
halting (lambda q = c) and budget (lambda = B) transitions, whose width in D is
~ 1/(eps sqrt(lambda)).

Limitation: the pointwise Poisson tails are evaluated in float64 with
scipy.special (mpmath/arb incomplete gamma functions at B ~ 1e9 took seconds per node), so
results are accurate to ~1e-12 absolute, not to ``digits`` digits.  ``digits`` only sets the
quadrature's working precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath
import numpy as np
from scipy import special, stats


@dataclass(frozen=True)
class OutcomeProbabilities:
    halt: mpmath.mpf
    continue_: mpmath.mpf
    refused: mpmath.mpf


def _pointwise(lam: float, *, s: int, c: int, q: float, B):
    """(halt, continue, refused) given lambda (float64)."""
    m1, m2 = lam * q, lam * (1.0 - q)
    if B is None:
        if s == 1:
            halt = float(special.pdtrc(c, m1))
        else:
            halt = float(special.pdtr(c, m1))
        return halt, 1.0 - halt, 0.0
    refused = float(special.pdtrc(B, lam))
    accept = float(special.pdtr(B, lam))
    k = np.arange(0, min(c, B) + 1)
    pk = stats.poisson.pmf(k, m1)
    low = float(np.sum(pk * special.pdtr(B - k, m2)))  # Pr[K <= c, N <= B]
    if s == 1:
        cont = low
        if lam < B:
            # Pr[K>c] - Pr[K>c, N>B], with Pr[K>c, N>B] = refused - Pr[K<=c, N>B]
            halt = float(special.pdtrc(c, m1)) - refused + float(np.sum(pk * special.pdtrc(B - k, m2)))
        else:
            halt = accept - low
    else:
        halt = low
        cont = accept - low
    return max(halt, 0.0), max(cont, 0.0), refused


def first_step_outcome_probabilities(sp, *, tau1, mu1, p, budget=None, digits=30) -> OutcomeProbabilities:
    """Probabilities of halt / continue / budget refusal at step 1 (one draw of eta_1, eta_2)
    of Algorithm 1 with the StepPlan ``sp``; see the module docstring (thinning identity,
    Lemma 22).  ``budget=None``: untruncated (refused = 0); otherwise the integer B."""
    s, c, rho, eps, tau2 = int(sp.s), int(sp.c), float(sp.rho), float(sp.eps_t), float(sp.tau2)
    tau1, mu1, p = float(tau1), float(mu1), float(p)
    q = p if s == 1 else 1.0 - p
    B = None if budget is None else int(budget)
    lnrho = math.log(rho)
    cache: dict = {}

    def lam_of(d):
        return math.exp(min(700.0, lnrho + s * eps * (mu1 + float(d))))

    def vals(d):
        key = float(d)
        if key not in cache:
            cache[key] = _pointwise(lam_of(key), s=s, c=c, q=q, B=B)
        return cache[key]

    def dens(d):
        return mpmath.exp(-d / tau2) / (tau1 + tau2) if d >= 0 else mpmath.exp(d / tau1) / (tau1 + tau2)

    # split points: 0, and around lambda q = c+1 and lambda = B
    pts = {0.0}
    targets = [(c + 1) / q] + ([B] if B is not None else [])
    for L in targets:
        d0 = s * (math.log(L) - lnrho) / eps - mu1
        w = 1.0 / (eps * math.sqrt(max(L, 1.0)))
        for j in (0, 1, 2, 4, 8, 16, 32, 64, 200, 1000):
            pts.update({d0 - j * w, d0 + j * w})
    span = 40 * max(tau1, tau2)
    lo, hi = min(pts) - span, max(pts) + span
    pts = sorted(x for x in pts if lo <= x <= hi)
    edges = [lo] + pts + [hi]
    out = []
    with mpmath.workdps(digits):
        for j in range(3):
            f = lambda d, j=j: vals(d)[j] * dens(d)
            out.append(mpmath.quad(f, edges))
        # tails beyond [lo, hi]: their mass is e^{-40}-small relative; assign it to the limits
        left_mass = mpmath.exp(lo / tau1) * tau1 / (tau1 + tau2)
        right_mass = mpmath.exp(-hi / tau2) * tau2 / (tau1 + tau2)
        for mass, d in ((left_mass, lo), (right_mass, hi)):
            v = vals(d)
            for j in range(3):
                out[j] += mass * v[j]
    return OutcomeProbabilities(halt=out[0], continue_=out[1], refused=out[2])


def privacy_loss(a, b):
    """|ln a - ln b|."""
    return abs(mpmath.log(a) - mpmath.log(b))
