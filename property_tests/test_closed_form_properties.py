"""The closed-form per-step law (gtm_core/exact/closed_form.py) held against an independent quadrature.

The reference integrates Pr[Po(m w^s) <= c] (and its complement) against the eta_2 law directly:
with v = eta_2 / tau_2 ~ Exp(1) and w = e^{v / sigma},

  s = +1:  continue = int_0^inf Q(c+1, a e^{v/sigma}) e^{-v} dv,  halt = int_0^inf P(c+1, a e^{v/sigma}) e^{-v} dv,
  s = -1:  continue = int_0^inf P(c+1, b e^{-v/sigma}) e^{-v} dv, halt = int_0^inf Q(c+1, b e^{-v/sigma}) e^{-v} dv,

by mpmath's tanh-sinh quadrature (split where the count mean crosses c+1, cut at V >= 140 with the
omitted mass <= e^-V) with mpmath's own regularised
incomplete gamma of *integer* order (no Pareto closed form, no shifted order k - sigma, no python-flint).
The two stay independent on purpose: the closed form is derived by a substitution and evaluated in arb,
the reference never uses either, so an error in the derivation or in arb's non-integer orders shows
here. Both probabilities must agree to >= 20 significant digits on a grid of designs whose
c + 1 - sigma is an integer (sigma = 4 with c = 3: order 0; c = 2: order -1; sigma = 2, c = 2: order 1),
within 4e-12 of one (tau_2 = 0.5 (1 + 2^-40)), and generic (the small-c horizon design, sigma = 2.83).
The finite sums of the module (c + 1 incomplete gammas of order k -+ sigma) are held against the
telescoped evaluator at the same grid.
"""

from __future__ import annotations

import math

import mpmath
from flint import arb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gtm_core.exact import StepModel, to_arb, working_precision
from gtm_core.exact.closed_form import (
    ClosedFormStep,
    continue_direct_sum,
    exact_sigma,
    halt_flipped_sum,
    order_ball,
)

BITS = 100  # ~30 digits asked of the closed form
MU1 = 2.25
# (s, c, rho, eps, tau2): c + 1 - sigma at 0, -1, 1, near 0, near -1, generic; both directions
DESIGNS = [
    (1, 3, 9.5, 0.5, 0.5),              # sigma = 4: order c+1-sigma = 0
    (1, 2, 6.0, 0.5, 0.5),              # sigma = 4: order -1
    (1, 2, 6.0, 0.5, 2.0),              # sigma = 2: order 1
    (1, 3, 9.5, 0.5, 0.5 * (1 + 2.0 ** -40)),   # order 4 - sigma ~ 3.6e-12
    (1, 2, 6.0, 0.5, 0.5 * (1 - 2.0 ** -40)),   # order ~ -1 - 3.6e-12
    (1, 2, 13.20575428, 0.1, 3.5341191128167417),  # the horizon example's step (order 0.17)
    (-1, 3, 9.5, 0.5, 0.5),             # sigma = 4 (orders k + sigma are integers)
    (-1, 2, 7.25, 0.375, 2.5),
    (-1, 2, 6.0, 0.5, 0.5 * (1 + 2.0 ** -40)),
]


def quadrature_law(s, c, rho, eps, tau2, r, x, dps=45):
    """(continue, halt) by direct quadrature over eta_2 (module docstring), as mpmath numbers."""
    with mpmath.workdps(dps):
        sigma = 1 / (mpmath.mpf(eps) * mpmath.mpf(tau2))
        m0 = mpmath.mpf(rho) * mpmath.mpf(r) * mpmath.exp(s * mpmath.mpf(eps) * (mpmath.mpf(MU1) - mpmath.mpf(x)))

        def mean(v):
            return m0 * mpmath.exp(s * v / sigma)

        def Q(v):
            return mpmath.gammainc(c + 1, mean(v), mpmath.inf, regularized=True) * mpmath.exp(-v)

        def P(v):
            return mpmath.gammainc(c + 1, 0, mean(v), regularized=True) * mpmath.exp(-v)

        v0 = s * sigma * mpmath.log((c + 1) / m0)  # where the count mean equals c + 1
        pts = sorted({mpmath.mpf(0), *[v0 + k * sigma for k in (-2, -1, 0, 1, 2, 4) if v0 + k * sigma > 0]})
        # beyond V both integrands are below e^-v: the omitted mass is <= e^-V < 1e-60 (V >= 140)
        pts = pts + [pts[-1] + 40, pts[-1] + 140]
        cont_f, halt_f = (Q, P) if s == 1 else (P, Q)
        return mpmath.quad(cont_f, pts), mpmath.quad(halt_f, pts)


def _mp(b: arb) -> mpmath.mpf:
    return mpmath.mpf(b.mid().str(40, radius=False))


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(design=st.sampled_from(DESIGNS), x=st.sampled_from(["0", "0.75", "2.5", "6"]),
       r=st.sampled_from([0.3, 0.05, 0.9]))
def test_closed_form_matches_eta2_quadrature(design, x, r):
    s, c, rho, eps, tau2 = design
    model = StepModel(t=1, s=s, c=c, rho=rho, eps=eps, tau2=tau2, r=to_arb(r))
    with working_precision(BITS):
        cont, halt = ClosedFormStep(model, MU1, BITS).probs(arb(x))
    assert cont.rel_accuracy_bits() > 80 and halt.rel_accuracy_bits() > 80
    q_cont, q_halt = quadrature_law(s, c, rho, eps, tau2, mpmath.mpf(r), mpmath.mpf(x))
    with mpmath.workdps(45):
        for got, ref in ((cont, q_cont), (halt, q_halt)):
            assert ref > 0
            assert abs(_mp(got) - ref) <= mpmath.mpf(10) ** -20 * ref, (design, x, r, got, ref)


@settings(max_examples=30, deadline=None)
@given(design=st.sampled_from(DESIGNS), x=st.sampled_from(["0", "1.5", "4", "9"]),
       r=st.sampled_from([0.3, 0.001, 0.7]))
def test_finite_sums_match_telescoped_form(design, x, r):
    """The positive finite sums sum_k sigma a^sigma Gamma(k - sigma, a) / k! (s = +1, continue) and
    sum_k sigma b^-sigma gamma(k + sigma, b) / k! (s = -1, halt) equal the telescoped evaluator."""
    s, c, rho, eps, tau2 = design
    model = StepModel(t=1, s=s, c=c, rho=rho, eps=eps, tau2=tau2, r=to_arb(r))
    ev = ClosedFormStep(model, MU1, BITS)
    sq = exact_sigma(eps, tau2)
    prec = 4 * BITS
    with working_precision(prec):
        cont, halt = ev.probs(arb(x))
        lm = ev.log_mean(arb(x), prec)
        sigma = order_ball(sq, prec)
        m = lm.exp()
        if s == 1:
            orders = [order_ball(k - sq, prec) for k in range(c + 1)]
            got, ref = continue_direct_sum(c, sigma, orders, m, lm), cont
        else:
            fns = [lambda k=k: order_ball(k + sq, prec) for k in range(c + 1)]
            got, ref = halt_flipped_sum(c, sigma, fns, m, lm, prec), halt
    assert got.overlaps(ref)
    rel = abs(got - ref) / ref
    assert rel.upper() < arb(10) ** -20, (design, x, r, got, ref)
    assert math.isfinite(float(got.mid()))
